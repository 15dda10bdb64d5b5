//! Property tests (proptest) of position translation over LSP shapes: documents of random text
//! (ASCII, é, 日, 😀, tabs; `\n`, `\r\n` and lone `\r` line breaks) and random trees of
//! Locations, LocationLinks, WorkspaceEdits, DocumentSymbols, FoldingRanges, incoming calls,
//! diagnostics and opaque `data`/`command` values. Each tree is rendered in two encodings with
//! columns computed here, independently of `documents::position`; translating the one must give
//! the other. Semantic tokens likewise; and arbitrary out-of-range input must not panic.

use std::collections::BTreeMap;

use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;

const ENCODINGS: [Encoding; 3] = [Encoding::Utf8, Encoding::Utf16, Encoding::Utf32];

/// A document: its lines (characters) and the text they make.
#[derive(Debug, Clone)]
struct Doc {
    lines: Vec<Vec<char>>,
    text: String,
}

fn doc() -> impl Strategy<Value = Doc> {
    let line = prop::collection::vec(prop::sample::select(vec!['a', 'b', ' ', '\t', 'é', '日', '😀']), 0..8);
    let brk = prop::sample::select(vec!["\n", "\r\n", "\r"]);
    prop::collection::vec((line, brk), 1..5).prop_map(|parts| {
        let mut breaks: Vec<&str> = parts.iter().map(|(_, b)| *b).collect();
        // A lone CR before an empty line ending in LF would read as one CRLF.
        for i in 0..breaks.len().saturating_sub(1) {
            if breaks[i] == "\r" && parts[i + 1].0.is_empty() && breaks[i + 1] == "\n" {
                breaks[i + 1] = "\r\n";
            }
        }
        let mut text = String::new();
        for (i, (line, _)) in parts.iter().enumerate() {
            text.extend(line.iter());
            if i + 1 < parts.len() {
                text.push_str(breaks[i]);
            }
        }
        Doc { lines: parts.into_iter().map(|(line, _)| line).collect(), text }
    })
}

/// A position as raw numbers, reduced onto a document when rendered.
type P = (u16, u16);
type R = (P, P);

#[derive(Debug, Clone)]
enum Node {
    Location { doc: usize, range: R },
    Link { target: usize, target_range: R, selection: R, origin: R },
    Changes { edits: Vec<(usize, R)> },
    Symbol { range: R, selection: R, children: Vec<Node> },
    Folding { start: P, end: P },
    Incoming { from: usize, item: R, from_ranges: Vec<R> },
    Opaque { at: P },
    Diagnostic { range: R, related: Vec<(usize, R)> },
}

fn node() -> impl Strategy<Value = Node> {
    let p = || (any::<u16>(), any::<u16>());
    let r = move || (p(), p());
    let d = || 0usize..3;
    let leaf = prop_oneof![
        (d(), r()).prop_map(|(doc, range)| Node::Location { doc, range }),
        (d(), r(), r(), r()).prop_map(|(target, target_range, selection, origin)| Node::Link {
            target,
            target_range,
            selection,
            origin
        }),
        prop::collection::vec((d(), r()), 0..4).prop_map(|edits| Node::Changes { edits }),
        (p(), p()).prop_map(|(start, end)| Node::Folding { start, end }),
        (d(), r(), prop::collection::vec(r(), 0..3)).prop_map(|(from, item, from_ranges)| Node::Incoming {
            from,
            item,
            from_ranges
        }),
        p().prop_map(|at| Node::Opaque { at }),
        (r(), prop::collection::vec((d(), r()), 0..3)).prop_map(|(range, related)| Node::Diagnostic { range, related }),
    ];
    leaf.prop_recursive(3, 24, 4, move |inner| {
        (r(), r(), prop::collection::vec(inner, 0..4)).prop_map(|(range, selection, children)| Node::Symbol {
            range,
            selection,
            children,
        })
    })
}

fn uri(doc: usize) -> String {
    format!("file:///w/d{doc}.go")
}

/// Columns of the first `k` characters of `line` in `encoding`, counted here.
fn units(line: &[char], k: usize, encoding: Encoding) -> usize {
    line[..k]
        .iter()
        .map(|c| match encoding {
            Encoding::Utf8 => c.len_utf8(),
            Encoding::Utf16 => c.len_utf16(),
            Encoding::Utf32 => 1,
        })
        .sum()
}

/// (line, character index) of `p` reduced onto `doc`.
fn place(doc: &Doc, (line, character): P) -> (usize, usize) {
    let line = line as usize % doc.lines.len();
    (line, character as usize % (doc.lines[line].len() + 1))
}

struct Render<'a> {
    docs: &'a [Doc],
    encoding: Encoding,
    /// The encoding opaque values were made in (never translated).
    opaque: Encoding,
}

impl Render<'_> {
    fn position(&self, doc: usize, p: P, encoding: Encoding) -> Value {
        let (line, k) = place(&self.docs[doc], p);
        json!({ "line": line, "character": units(&self.docs[doc].lines[line], k, encoding) })
    }

    fn range(&self, doc: usize, (start, end): R) -> Value {
        json!({ "start": self.position(doc, start, self.encoding), "end": self.position(doc, end, self.encoding) })
    }

    fn node(&self, node: &Node) -> Value {
        match node {
            Node::Location { doc, range } => json!({ "uri": uri(*doc), "range": self.range(*doc, *range) }),
            Node::Link { target, target_range, selection, origin } => json!({
                "targetUri": uri(*target),
                "targetRange": self.range(*target, *target_range),
                "targetSelectionRange": self.range(*target, *selection),
                "originSelectionRange": self.range(0, *origin),
            }),
            Node::Changes { edits } => {
                let mut changes: BTreeMap<String, Vec<Value>> = BTreeMap::new();
                for (doc, range) in edits {
                    changes
                        .entry(uri(*doc))
                        .or_default()
                        .push(json!({ "range": self.range(*doc, *range), "newText": "x" }));
                }
                json!({ "changes": changes })
            }
            Node::Symbol { range, selection, children } => json!({
                "name": "s",
                "kind": 12,
                "range": self.range(0, *range),
                "selectionRange": self.range(0, *selection),
                "children": children.iter().map(|c| self.node(c)).collect::<Vec<_>>(),
            }),
            Node::Folding { start, end } => {
                let (a, b) = (self.position(0, *start, self.encoding), self.position(0, *end, self.encoding));
                json!({ "startLine": a["line"], "startCharacter": a["character"], "endLine": b["line"], "endCharacter": b["character"], "kind": "region" })
            }
            Node::Incoming { from, item, from_ranges } => json!({
                "from": { "uri": uri(*from), "name": "f", "kind": 12, "range": self.range(*from, *item), "selectionRange": self.range(*from, *item) },
                "fromRanges": from_ranges.iter().map(|r| self.range(*from, *r)).collect::<Vec<_>>(),
            }),
            Node::Opaque { at } => json!({
                "title": "t",
                "data": self.position(0, *at, self.opaque),
                "command": { "title": "c", "command": "c", "arguments": [self.position(0, *at, self.opaque)] },
            }),
            Node::Diagnostic { range, related } => json!({
                "range": self.range(0, *range),
                "message": "m",
                "relatedInformation": related.iter().map(|(doc, r)| json!({
                    "location": { "uri": uri(*doc), "range": self.range(*doc, *r) }, "message": "m"
                })).collect::<Vec<_>>(),
            }),
        }
    }
}

/// A workspace and a store holding `docs` open as `/w/dN.go`.
fn world(docs: &[Doc]) -> (tempfile::TempDir, Workspace, DocumentStore) {
    let dir = tempfile::tempdir().unwrap();
    let workspace = Workspace::with_config(dir.path(), Default::default()).unwrap();
    let store = DocumentStore::new();
    for (i, doc) in docs.iter().enumerate() {
        let id = crate::workspace::DocumentId::from_canonical(std::path::Path::new(&format!("/w/d{i}.go")));
        store.open(id, &doc.text, 1, "go".into());
    }
    (dir, workspace, store)
}

/// A token as (line, start character index, length in characters, type, modifiers), in order.
type Token = (usize, usize, usize, u32, u32);

fn encode_tokens(doc: &Doc, tokens: &[Token], encoding: Encoding) -> Value {
    let mut data = Vec::new();
    let (mut last_line, mut last_start) = (0, 0);
    for &(line, k, length, kind, modifiers) in tokens {
        let start = units(&doc.lines[line], k, encoding);
        let end = units(&doc.lines[line], k + length, encoding);
        let relative = if line == last_line { start - last_start } else { start };
        data.extend([line - last_line, relative, end - start, kind as usize, modifiers as usize]);
        (last_line, last_start) = (line, start);
    }
    json!({ "data": data })
}

/// `default` cases, or `PROPTEST_CASES` for a longer run.
fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(default)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(256)))]

    /// Translating a tree of LSP shapes from one encoding gives exactly the tree rendered in
    /// the other; opaque values stay as they were.
    #[test]
    fn shapes_translate_to_what_the_other_encoding_says(
        docs in prop::collection::vec(doc(), 3),
        nodes in prop::collection::vec(node(), 1..5),
        from in prop::sample::select(ENCODINGS.to_vec()),
        to in prop::sample::select(ENCODINGS.to_vec()),
    ) {
        let (_dir, workspace, store) = world(&docs);
        let render = |encoding| Render { docs: &docs, encoding, opaque: from };
        let mut value = Value::Array(nodes.iter().map(|n| render(from).node(n)).collect());
        let expected = Value::Array(nodes.iter().map(|n| render(to).node(n)).collect());
        Translator::new(from, to, &workspace, &store).value(&mut value, Some(&uri(0)));
        prop_assert_eq!(value, expected);
    }

    /// Positions from a server are untrusted: any numbers, any lines, unknown documents —
    /// no panic, and nothing but columns changes.
    #[test]
    fn out_of_range_positions_never_panic(
        docs in prop::collection::vec(doc(), 3),
        positions in prop::collection::vec((0usize..5, any::<u64>(), any::<u64>()), 1..12),
        from in prop::sample::select(ENCODINGS.to_vec()),
        to in prop::sample::select(ENCODINGS.to_vec()),
    ) {
        let (_dir, workspace, store) = world(&docs);
        let locations: Vec<Value> = positions.iter().map(|(doc, line, character)| json!({
            "uri": uri(*doc),
            "range": { "start": { "line": line, "character": character }, "end": { "line": line % 7, "character": character % 9 } },
        })).collect();
        let mut value = Value::Array(locations.clone());
        Translator::new(from, to, &workspace, &store).value(&mut value, Some(&uri(0)));
        for (before, after) in locations.iter().zip(value.as_array().unwrap()) {
            prop_assert_eq!(&before["uri"], &after["uri"]);
            prop_assert_eq!(&before["range"]["start"]["line"], &after["range"]["start"]["line"]);
            prop_assert!(after["range"]["end"]["character"].is_u64());
        }
    }

    /// Semantic tokens (relative, packed) re-encode exactly; arbitrary data never panics.
    #[test]
    fn semantic_tokens_reencode_exactly(
        doc in doc(),
        raw in prop::collection::vec((any::<u16>(), any::<u16>(), any::<u16>(), 0u32..3, 0u32..4), 0..12),
        junk in prop::collection::vec(any::<u64>(), 0..23),
        from in prop::sample::select(ENCODINGS.to_vec()),
        to in prop::sample::select(ENCODINGS.to_vec()),
    ) {
        let mut tokens: Vec<Token> = raw.iter().map(|&(line, start, length, kind, modifiers)| {
            let line = line as usize % doc.lines.len();
            let chars = doc.lines[line].len();
            let k = start as usize % (chars + 1);
            (line, k, length as usize % (chars - k + 1), kind, modifiers)
        }).collect();
        tokens.sort();
        let legend = json!({ "tokenTypes": ["a", "b", "c"], "tokenModifiers": ["x", "y"] });
        let map = LegendMap::new(&legend, &legend);
        let text = Rope::from_str(&doc.text);
        let mut value = encode_tokens(&doc, &tokens, from);
        prop_assert!(semantic_tokens(&mut value, &text, from, to, &map));
        prop_assert_eq!(value, encode_tokens(&doc, &tokens, to));
        let mut garbage = json!({ "data": junk });
        semantic_tokens(&mut garbage, &text, from, to, &map);
        prop_assert_eq!(garbage["data"].as_array().unwrap().len() % 5, 0);
    }
}
