//! Position-encoding translation of LSP JSON between the editor's `positionEncoding` and a
//! server's (LSP 3.17 "Position", "PositionEncodingKind").
//!
//! Messages are translated as JSON, by shape rather than by method: every `Position` object
//! (exactly the keys `line` and `character`) and the columns of a `FoldingRange`
//! (`startCharacter`/`endCharacter`) are converted against the text of the document they
//! belong to. Which document that is follows the shapes LSP uses: an object's own `uri`
//! (`Location`, `CallHierarchyItem`, `PublishDiagnosticsParams`, `ShowDocumentParams`), its
//! `textDocument.uri` (`TextDocumentEdit`, every `*Params`), a `LocationLink`'s `targetUri` for
//! its target ranges, the keys of `WorkspaceEdit.changes` and of `relatedDocuments`, the
//! `from` item of an incoming call for its `fromRanges`; everything else inherits the document
//! of the enclosing object, starting from the request's. `WorkspaceEdit.documentChanges` are
//! followed in order, so a text edit in a file created or renamed earlier in the same edit is
//! converted against the text that file has at that point. Opaque values are never touched:
//! `data` (a server's, returned to it verbatim by resolve requests) and `command`/`arguments`.
//!
//! Semantic tokens are the exception: their positions are relative, packed integers. They are
//! decoded, converted, re-mapped to the legend the editor was given, and encoded again
//! ([`semantic_tokens`]).

use std::collections::HashMap;

use ropey::Rope;
use serde_json::Value;

use crate::documents::DocumentStore;
use crate::documents::position::{self, Encoding, Position};
use crate::workspace::Workspace;

/// Converts positions from one encoding to another, reading each document's text once: the
/// editor's buffer when it is open, else the file on disk.
pub struct Translator<'a> {
    from: Encoding,
    to: Encoding,
    workspace: &'a Workspace,
    documents: &'a DocumentStore,
    texts: HashMap<String, Option<Rope>>,
}

impl<'a> Translator<'a> {
    /// A translator from `from` units to `to` units, reading documents (open buffers first) as
    /// the workspace resolves their URIs. Files over `[limits] max_file_bytes` are not read
    /// (their positions pass unchanged).
    pub fn new(from: Encoding, to: Encoding, workspace: &'a Workspace, documents: &'a DocumentStore) -> Translator<'a> {
        Translator { from, to, workspace, documents, texts: HashMap::new() }
    }

    /// Whether there is nothing to translate.
    pub fn is_identity(&self) -> bool {
        self.from == self.to
    }

    /// The text of the document at `uri`, if it is a readable file — or, inside a
    /// `documentChanges` walked so far, the text a resource operation left it with.
    pub fn text(&mut self, uri: &str) -> Option<Rope> {
        let uri = &key(uri);
        if let Some(text) = self.texts.get(uri) {
            return text.clone();
        }
        let max_bytes = self.workspace.config().limits.max_file_bytes;
        let text = url::Url::parse(uri)
            .ok()
            .and_then(|url| self.workspace.document_id_for_uri(&url).ok())
            .and_then(|id| self.documents.text(&id, max_bytes).ok())
            .map(|source| source.text);
        self.texts.insert(uri.to_owned(), text.clone());
        text
    }

    /// Translates every position in `value`; `uri` is the document positions belong to when
    /// nothing inside `value` says otherwise (the request's document).
    pub fn value(&mut self, value: &mut Value, uri: Option<&str>) {
        if !self.is_identity() {
            self.walk(value, uri);
        }
    }

    fn convert(&mut self, uri: Option<&str>, line: u64, character: u64) -> Option<u64> {
        let text = self.text(uri?)?;
        let position = Position { line: u32::try_from(line).ok()?, character: u32::try_from(character).ok()? };
        let (converted, _) = position::convert_position(&text, position, self.from, self.to);
        Some(u64::from(converted.character))
    }

    fn walk(&mut self, value: &mut Value, uri: Option<&str>) {
        match value {
            Value::Array(items) => {
                for item in items {
                    self.walk(item, uri);
                }
            }
            Value::Object(map) => {
                if map.len() == 2
                    && let (Some(line), Some(character)) =
                        (map.get("line").and_then(Value::as_u64), map.get("character").and_then(Value::as_u64))
                {
                    if let Some(converted) = self.convert(uri, line, character) {
                        map.insert("character".to_owned(), Value::from(converted));
                    }
                    return;
                }
                // FoldingRange: lines and columns as four separate fields.
                for (line_key, column_key) in [("startLine", "startCharacter"), ("endLine", "endCharacter")] {
                    if let (Some(line), Some(character)) =
                        (map.get(line_key).and_then(Value::as_u64), map.get(column_key).and_then(Value::as_u64))
                        && let Some(converted) = self.convert(uri, line, character)
                    {
                        map.insert(column_key.to_owned(), Value::from(converted));
                    }
                }
                let own = map
                    .get("uri")
                    .and_then(Value::as_str)
                    .or_else(|| map.get("textDocument").and_then(|d| d.get("uri")).and_then(Value::as_str))
                    .map(str::to_owned);
                let target = map.get("targetUri").and_then(Value::as_str).map(str::to_owned);
                let caller = map.get("from").and_then(|f| f.get("uri")).and_then(Value::as_str).map(str::to_owned);
                let here = own.as_deref().or(uri);
                for (key, child) in map.iter_mut() {
                    match key.as_str() {
                        "data" | "command" | "arguments" | "textDocument" => {}
                        "documentChanges" => self.document_changes(child),
                        "changes" | "relatedDocuments" => {
                            if let Some(by_uri) = child.as_object_mut() {
                                for (document, edits) in by_uri.iter_mut() {
                                    self.walk(edits, Some(document));
                                }
                            }
                        }
                        "targetRange" | "targetSelectionRange" => self.walk(child, target.as_deref().or(here)),
                        "originSelectionRange" => self.walk(child, uri),
                        "fromRanges" => self.walk(child, caller.as_deref().or(here)),
                        _ => self.walk(child, here),
                    }
                }
            }
            _ => {}
        }
    }
}

impl Translator<'_> {
    /// A `WorkspaceEdit.documentChanges` in order (LSP 3.17 "WorkspaceEdit": operations are
    /// executed in the order given): the positions of a text document edit are converted against
    /// the text its document has at that point — a file created earlier in the same edit is
    /// empty (unless it existed and `ignoreIfExists` kept it), a renamed file holds the old
    /// file's text under its new URI, a deleted one has none. Directories renamed or deleted
    /// are not followed: positions in files beneath them are converted against the disk.
    fn document_changes(&mut self, changes: &mut Value) {
        let Some(changes) = changes.as_array_mut() else { return };
        for change in changes {
            let uri = |key: &str| change.get(key).and_then(Value::as_str).map(str::to_owned);
            let option =
                |name: &str| change.pointer(&format!("/options/{name}")).and_then(Value::as_bool) == Some(true);
            match change.get("kind").and_then(Value::as_str) {
                Some("create") => {
                    let Some(uri) = uri("uri") else { continue };
                    let kept = self.text(&uri).is_some() && !option("overwrite") && option("ignoreIfExists");
                    if !kept {
                        self.texts.insert(key(&uri), Some(Rope::new()));
                    }
                }
                Some("rename") => {
                    let (Some(old), Some(new)) = (uri("oldUri"), uri("newUri")) else { continue };
                    let kept = self.text(&new).is_some() && !option("overwrite") && option("ignoreIfExists");
                    if !kept {
                        let text = self.text(&old);
                        self.texts.insert(key(&new), text);
                        self.texts.insert(key(&old), None);
                    }
                }
                Some("delete") => {
                    if let Some(uri) = uri("uri") {
                        self.texts.insert(key(&uri), None);
                    }
                }
                _ => self.walk(change, None),
            }
        }
    }
}

/// One spelling per URI for the text cache (`file:///a%20b` and `file:///a b` alike).
fn key(uri: &str) -> String {
    url::Url::parse(uri).map_or_else(|_| uri.to_owned(), String::from)
}

/// How a server's semantic-token legend maps onto the legend the editor was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LegendMap {
    /// The editor's token-type index of each of the server's, `None` when the editor's legend
    /// lacks it (such tokens are dropped).
    pub types: Vec<Option<u32>>,
    /// The editor's modifier bit of each of the server's.
    pub modifiers: Vec<Option<u32>>,
}

impl LegendMap {
    /// The map from a server `legend` (`SemanticTokensLegend` JSON) to the editor's `union`.
    pub fn new(legend: &Value, union: &Value) -> LegendMap {
        let names = |value: &Value, key: &str| -> Vec<String> {
            value
                .get(key)
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
                .unwrap_or_default()
        };
        let index = |all: &[String], name: &String| all.iter().position(|n| n == name).map(|i| i as u32);
        let (union_types, union_modifiers) = (names(union, "tokenTypes"), names(union, "tokenModifiers"));
        LegendMap {
            types: names(legend, "tokenTypes").iter().map(|t| index(&union_types, t)).collect(),
            modifiers: names(legend, "tokenModifiers").iter().map(|m| index(&union_modifiers, m)).collect(),
        }
    }

    /// Whether every index maps to itself.
    pub fn is_identity(&self) -> bool {
        let same = |v: &[Option<u32>]| v.iter().enumerate().all(|(i, m)| *m == Some(i as u32));
        same(&self.types) && same(&self.modifiers)
    }

    fn modifiers(&self, bits: u32) -> u32 {
        let mut out = 0;
        for (bit, mapped) in self.modifiers.iter().enumerate().take(32) {
            if bits & (1 << bit) != 0
                && let Some(to) = mapped
                && *to < 32
            {
                out |= 1 << to;
            }
        }
        out
    }
}

/// Rewrites a `SemanticTokens` result (its `data`: 5 integers per token, relative line and
/// start, length, type, modifiers — LSP 3.17 "Semantic Tokens") for the editor: columns and
/// lengths from `from` to `to` units over `text`, types and modifiers through `legend`.
/// Tokens whose type the editor's legend lacks are dropped. Returns false when `result` has no
/// `data` array (a delta, or null).
pub fn semantic_tokens(result: &mut Value, text: &Rope, from: Encoding, to: Encoding, legend: &LegendMap) -> bool {
    let Some(data) = result.get_mut("data").and_then(Value::as_array_mut) else { return false };
    let numbers: Vec<u32> = data.iter().map(|v| v.as_u64().unwrap_or(0) as u32).collect();
    let mut out: Vec<Value> = Vec::with_capacity(numbers.len());
    let (mut line, mut start) = (0u32, 0u32);
    let (mut last_line, mut last_start) = (0u32, 0u32);
    for token in numbers.chunks_exact(5) {
        let [delta_line, delta_start, length, kind, modifiers] = [token[0], token[1], token[2], token[3], token[4]];
        line = line.saturating_add(delta_line);
        start = if delta_line == 0 { start.saturating_add(delta_start) } else { delta_start };
        let Some(Some(kind)) = legend.types.get(kind as usize).copied() else { continue };
        let (begin, _) = position::convert_position(text, Position { line, character: start }, from, to);
        let (end, _) =
            position::convert_position(text, Position { line, character: start.saturating_add(length) }, from, to);
        let relative_start =
            if line == last_line { begin.character - last_start.min(begin.character) } else { begin.character };
        out.extend([
            Value::from(line - last_line),
            Value::from(relative_start),
            Value::from(end.character.saturating_sub(begin.character)),
            Value::from(kind),
            Value::from(legend.modifiers(modifiers)),
        ]);
        (last_line, last_start) = (line, begin.character);
    }
    *data = out;
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn id(path: &str) -> crate::workspace::DocumentId {
        crate::workspace::DocumentId::from_canonical(std::path::Path::new(path))
    }

    /// Issue 20 item 5: a RenameFile followed by text edits in the new file.
    #[test]
    fn document_changes_follow_resource_operations_in_order() {
        let store = DocumentStore::new();
        let dir = tempfile::tempdir().unwrap();
        let workspace = Workspace::with_config(dir.path(), Default::default()).unwrap();
        store.open(id("/w/b.go"), "é = x\n", 1, "go".into());
        store.open(id("/w/kept.go"), "ü = 1\n", 1, "go".into());
        let mut translator = Translator::new(Encoding::Utf8, Encoding::Utf16, &workspace, &store);
        let at = |uri: &str, character: u32| {
            json!({ "textDocument": { "uri": uri, "version": null }, "edits": [
                { "range": { "start": { "line": 0, "character": character }, "end": { "line": 0, "character": character } }, "newText": "y" } ] })
        };
        let mut edit = json!({ "documentChanges": [
            { "kind": "rename", "oldUri": "file:///w/b.go", "newUri": "file:///w/c.go" },
            at("file:///w/c.go", 5),
            at("file:///w/b.go", 5),
            { "kind": "create", "uri": "file:///w/kept.go", "options": { "ignoreIfExists": true } },
            at("file:///w/kept.go", 5),
            { "kind": "create", "uri": "file:///w/new.go" },
            at("file:///w/new.go", 0),
            { "kind": "rename", "oldUri": "file:///w/c.go", "newUri": "file:///w/./d.go" },
            at("file:///w/d.go", 5),
            { "kind": "delete", "uri": "file:///w/d.go" },
            at("file:///w/d.go", 5),
        ] });
        translator.value(&mut edit, None);
        let column = |i: usize| edit["documentChanges"][i]["edits"][0]["range"]["start"]["character"].clone();
        // `x` after "é = " is byte 5, UTF-16 column 4: in c.go, which holds b.go's text.
        assert_eq!(column(1), 4);
        // b.go is gone after the rename: nothing to convert against.
        assert_eq!(column(2), 5);
        // kept.go existed and ignoreIfExists kept its text.
        assert_eq!(column(4), 4);
        assert_eq!(column(6), 0);
        assert_eq!(column(8), 4);
        assert_eq!(column(10), 5);
    }

    #[test]
    fn positions_follow_their_documents() {
        let store = DocumentStore::new();
        let dir = tempfile::tempdir().unwrap();
        let workspace = Workspace::with_config(dir.path(), Default::default()).unwrap();
        store.open(id("/w/a.go"), "s := \"😀\" + x\n", 1, "go".into());
        store.open(id("/w/b.go"), "é = x\n", 1, "go".into());
        let mut translator = Translator::new(Encoding::Utf8, Encoding::Utf16, &workspace, &store);
        // `x` is at byte 16 of a.go (UTF-16 column 13) and byte 5 of b.go (column 4).
        let mut value = json!({
            "textDocument": { "uri": "file:///w/a.go" },
            "position": { "line": 0, "character": 16 },
            "locations": [
                { "uri": "file:///w/b.go", "range": { "start": { "line": 0, "character": 5 }, "end": { "line": 0, "character": 6 } } },
                { "targetUri": "file:///w/b.go", "targetRange": { "start": { "line": 0, "character": 5 }, "end": { "line": 0, "character": 6 } },
                  "originSelectionRange": { "start": { "line": 0, "character": 16 }, "end": { "line": 0, "character": 17 } } }
            ],
            "edit": { "changes": { "file:///w/b.go": [ { "range": { "start": { "line": 0, "character": 5 }, "end": { "line": 0, "character": 5 } }, "newText": "y" } ] } },
            "data": { "line": 0, "character": 16 }
        });
        translator.value(&mut value, Some("file:///w/a.go"));
        assert_eq!(value["position"]["character"], 13);
        assert_eq!(value["locations"][0]["range"]["start"]["character"], 4);
        assert_eq!(value["locations"][1]["targetRange"]["start"]["character"], 4);
        assert_eq!(value["locations"][1]["originSelectionRange"]["start"]["character"], 13);
        assert_eq!(value["edit"]["changes"]["file:///w/b.go"][0]["range"]["end"]["character"], 4);
        assert_eq!(value["data"]["character"], 16, "opaque data is never translated");
    }

    #[test]
    fn incoming_call_ranges_belong_to_the_caller() {
        let store = DocumentStore::new();
        let dir = tempfile::tempdir().unwrap();
        let workspace = Workspace::with_config(dir.path(), Default::default()).unwrap();
        store.open(id("/w/callee.go"), "f()\n", 1, "go".into());
        store.open(id("/w/caller.go"), "😀😀 f()\n", 1, "go".into());
        let mut translator = Translator::new(Encoding::Utf16, Encoding::Utf8, &workspace, &store);
        let mut value = json!([{
            "from": { "uri": "file:///w/caller.go", "range": { "start": { "line": 0, "character": 5 }, "end": { "line": 0, "character": 6 } } },
            "fromRanges": [ { "start": { "line": 0, "character": 5 }, "end": { "line": 0, "character": 6 } } ]
        }]);
        translator.value(&mut value, Some("file:///w/callee.go"));
        assert_eq!(value[0]["fromRanges"][0]["start"]["character"], 9);
        assert_eq!(value[0]["from"]["range"]["start"]["character"], 9);
    }

    #[test]
    fn semantic_tokens_are_reencoded_and_remapped() {
        // Line 0: `😀 ab cd` — tokens `ab` (UTF-16 col 3, len 2) and `cd` (col 6, len 2).
        let text = Rope::from_str("😀 ab cd\nef\n");
        let server_legend = json!({ "tokenTypes": ["variable", "keyword"], "tokenModifiers": ["a", "b"] });
        let union = json!({ "tokenTypes": ["keyword", "function", "variable"], "tokenModifiers": ["b", "a"] });
        let legend = LegendMap::new(&server_legend, &union);
        assert!(!legend.is_identity());
        let mut result = json!({ "data": [0, 3, 2, 0, 1,  0, 3, 2, 1, 2,  1, 0, 2, 0, 3] });
        assert!(semantic_tokens(&mut result, &text, Encoding::Utf16, Encoding::Utf8, &legend));
        // In UTF-8 `ab` starts at byte 5 and `cd` at byte 8.
        assert_eq!(result["data"], json!([0, 5, 2, 2, 2, 0, 3, 2, 0, 1, 1, 0, 2, 2, 3]));
    }
}

#[cfg(test)]
mod proptests;
