//! Selectors: which span of a file an edit targets.
//!
//! Three modes, chosen by which selector fields are set (seed: filepuff API reference,
//! `edit_preview`):
//! - **AST** (`selector_kind` and/or `selector_name`, narrowed by `selector_line`): syntax
//!   nodes of the file's tree-sitter tree. A name matches a declaration's declared name
//!   (functions, methods — also as `Type.method` —, classes, types, constants, keys), found
//!   through the symbol outline; the target is the whole declaration as written (with its
//!   decorators, `export`, Go's `type`/`const` keyword when it declares one name).
//! - **text** (`selector_text` exact, or `selector_pattern` regex; `selector_line` and
//!   `selector_line_end` narrow to matches starting on those lines): non-overlapping matches.
//! - **lines** (`selector_line` alone, or with `selector_line_end`): whole lines.
//!
//! More than one candidate without `selector_index` is an error listing them all.

use std::ops::Range;

use ast_grep_core::Node;
use ast_grep_core::tree_sitter::StrDoc;
use ast_grep_language::SupportLang;

use super::{EditError, Selector, text};
use crate::documents::Language;
use crate::syntax::{ParsedFile, Symbol, outline, pattern};

type SyntaxNode<'r> = Node<'r, StrDoc<SupportLang>>;

/// How a selector picks its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Ast,
    Text,
    Lines,
}

impl Mode {
    /// `ast`, `text` or `lines`.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Ast => "ast",
            Mode::Text => "text",
            Mode::Lines => "lines",
        }
    }
}

/// One span a selector matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// Byte range of the node, match or lines.
    pub range: Range<usize>,
    /// Start of the comments and attributes directly above a node (no blank line between), which
    /// insert_before goes above and delete removes with it. Equals `range.start` otherwise.
    pub leading_start: usize,
    /// 1-based first and last line of `range`.
    pub start_line: usize,
    pub end_line: usize,
    /// Node kind (AST mode).
    pub kind: Option<String>,
    /// Declared name (AST mode, when the node declares one).
    pub name: Option<String>,
}

/// Which mode `selector` asks for.
///
/// Errors: [`EditError::NoSelector`]; [`EditError::SelectorConflict`] when text and AST
/// selectors are mixed, or both `selector_text` and `selector_pattern` are set.
pub fn mode(selector: &Selector) -> Result<Mode, EditError> {
    let ast = selector.kind.is_some() || selector.name.is_some();
    let textual = selector.text.is_some() || selector.pattern.is_some();
    if selector.text.is_some() && selector.pattern.is_some() {
        return Err(EditError::SelectorConflict("give selector_text or selector_pattern, not both".to_owned()));
    }
    if ast && textual {
        return Err(EditError::SelectorConflict(
            "AST selectors (selector_kind, selector_name) and text selectors (selector_text, selector_pattern) cannot be combined".to_owned(),
        ));
    }
    if selector.line_end.is_some() && selector.line.is_none() {
        return Err(EditError::SelectorConflict("selector_line_end needs selector_line".to_owned()));
    }
    if ast && selector.line_end.is_some() {
        return Err(EditError::SelectorConflict(
            "selector_line_end is for text and line selections; AST mode narrows with selector_line only".to_owned(),
        ));
    }
    if let (Some(start), Some(end)) = (selector.line, selector.line_end)
        && end < start
    {
        return Err(EditError::SelectorConflict(format!("selector_line_end {end} is before selector_line {start}")));
    }
    if selector.line == Some(0) {
        return Err(EditError::SelectorConflict("selector_line is 1-based; 0 is not a line".to_owned()));
    }
    Ok(if ast {
        Mode::Ast
    } else if textual {
        Mode::Text
    } else if selector.line.is_some() {
        Mode::Lines
    } else {
        return Err(EditError::NoSelector);
    })
}

/// Lines of `text` (1-based) for a byte offset.
pub struct LineIndex<'t> {
    text: &'t str,
    /// Byte offset of each line's start.
    starts: Vec<usize>,
}

impl<'t> LineIndex<'t> {
    /// Indexes `text` by LSP's line rule.
    pub fn new(text: &'t str) -> LineIndex<'t> {
        let mut starts = vec![0];
        let mut at = 0;
        while text::line_content_end(text, at) < text.len() {
            at = text::next_line_start(text, at);
            starts.push(at);
            if at >= text.len() {
                break;
            }
        }
        LineIndex { text, starts }
    }

    /// The 1-based line holding byte `offset`.
    pub fn line_of(&self, offset: usize) -> usize {
        self.starts.partition_point(|start| *start <= offset).max(1)
    }

    /// The last line of a range (its end is exclusive; an end just past a line break belongs to
    /// the line before).
    pub fn last_line_of(&self, range: &Range<usize>) -> usize {
        self.line_of(range.end.saturating_sub(1).max(range.start))
    }

    /// Lines as an editor shows them (a final line break does not start a new line).
    pub fn count(&self) -> usize {
        if self.text.is_empty() {
            0
        } else if text::ends_with_break(self.text) {
            self.starts.len() - 1
        } else {
            self.starts.len()
        }
    }

    /// Byte offset where 1-based `line` starts.
    pub fn start_of(&self, line: usize) -> usize {
        self.starts.get(line - 1).copied().unwrap_or(self.text.len())
    }

    /// The text of the line holding `offset`, without its break, cut to `max` characters.
    pub fn excerpt(&self, offset: usize, max: usize) -> String {
        let start = text::line_start(self.text, offset);
        let end = text::line_content_end(self.text, start);
        let line = self.text[start..end].trim();
        match line.char_indices().nth(max) {
            Some((cut, _)) => format!("{}…", &line[..cut]),
            None => line.to_owned(),
        }
    }
}

/// Every candidate `selector` matches in `source`, in document order.
///
/// `parsed` is the file's tree (required in AST mode). Errors: [`EditError::NotCode`] for AST
/// selectors on a file without a grammar or outline; [`EditError::UnknownKind`];
/// [`EditError::InvalidRegex`]; [`EditError::LinePastEnd`].
pub fn candidates(
    source: &str,
    lines: &LineIndex<'_>,
    language: Option<Language>,
    parsed: Option<&ParsedFile>,
    selector: &Selector,
    mode: Mode,
) -> Result<Vec<Candidate>, EditError> {
    match mode {
        Mode::Lines => {
            let total = lines.count();
            let start = selector.line.unwrap_or(1);
            let end = selector.line_end.unwrap_or(start);
            if start > total.max(1) {
                return Err(EditError::LinePastEnd { line: start, total });
            }
            if end > total.max(1) {
                return Err(EditError::LinePastEnd { line: end, total });
            }
            let range = lines.start_of(start)..lines.start_of(end + 1);
            Ok(vec![Candidate {
                leading_start: range.start,
                range,
                start_line: start,
                end_line: end,
                kind: None,
                name: None,
            }])
        }
        Mode::Text => {
            let spans = text_matches(source, selector)?;
            let (from, to) = match (selector.line, selector.line_end) {
                (Some(line), end) => (line, end.unwrap_or(line)),
                (None, _) => (1, usize::MAX),
            };
            Ok(spans
                .into_iter()
                .map(|range| Candidate {
                    leading_start: range.start,
                    start_line: lines.line_of(range.start),
                    end_line: lines.last_line_of(&range),
                    range,
                    kind: None,
                    name: None,
                })
                .filter(|c| c.start_line >= from && c.start_line <= to)
                .collect())
        }
        Mode::Ast => {
            let (Some(language), Some(parsed)) = (language, parsed) else {
                return Err(EditError::NotCode { language: language.map(|l| l.name()) });
            };
            if let Some(kind) = &selector.kind {
                pattern::check_kind(language, kind).map_err(|err| {
                    let suggestions = match err {
                        pattern::QueryError::UnknownKind { suggestions, .. } => suggestions,
                        _ => Vec::new(),
                    };
                    EditError::UnknownKind { kind: kind.clone(), language: language.name(), suggestions }
                })?;
            }
            if selector.name.is_some() && !outline::supports(language) {
                return Err(EditError::NotCode { language: Some(language.name()) });
            }
            let mut found = ast_candidates(source, lines, language, parsed, selector);
            if let Some(line) = selector.line {
                let on_line: Vec<Candidate> = found.iter().filter(|c| c.start_line == line).cloned().collect();
                found = if on_line.is_empty() {
                    found.into_iter().filter(|c| c.start_line <= line && line <= c.end_line).collect()
                } else {
                    on_line
                };
            }
            Ok(found)
        }
    }
}

fn text_matches(source: &str, selector: &Selector) -> Result<Vec<Range<usize>>, EditError> {
    if let Some(needle) = &selector.text {
        if needle.is_empty() {
            return Err(EditError::SelectorConflict("selector_text is empty".to_owned()));
        }
        let finder = memchr::memmem::Finder::new(needle.as_bytes());
        let mut out = Vec::new();
        let mut from = 0;
        while let Some(at) = finder.find(&source.as_bytes()[from..]) {
            out.push(from + at..from + at + needle.len());
            from += at + needle.len();
        }
        return Ok(out);
    }
    let pattern = selector.pattern.as_deref().unwrap_or_default();
    let regex = regex::RegexBuilder::new(pattern)
        .multi_line(true)
        .size_limit(16 << 20)
        .build()
        .map_err(|err| EditError::InvalidRegex { pattern: pattern.to_owned(), message: err.to_string() })?;
    Ok(regex.find_iter(source).filter(|m| !m.is_empty()).map(|m| m.range()).collect())
}

fn ast_candidates(
    source: &str,
    lines: &LineIndex<'_>,
    language: Language,
    parsed: &ParsedFile,
    selector: &Selector,
) -> Vec<Candidate> {
    let root = parsed.tree.root();
    let mut out: Vec<Candidate> = Vec::new();
    if let Some(name) = &selector.name {
        let outline = outline::outline(parsed);
        let mut symbols = Vec::new();
        flatten(&outline, None, &mut symbols);
        for (symbol, parent) in symbols {
            if !name_matches(name, symbol, parent) {
                continue;
            }
            let Some(node) = node_at(&root, &symbol.byte_range) else { continue };
            let chain = declaration_chain(node);
            let chosen = match &selector.kind {
                Some(kind) => chain.into_iter().find(|n| n.kind() == kind.as_str()),
                None => chain.into_iter().last(),
            };
            if let Some(node) = chosen {
                let candidate = candidate(source, lines, language, &node, Some(symbol.name.clone()));
                if !out.iter().any(|c| c.range == candidate.range) {
                    out.push(candidate);
                }
            }
        }
    } else if let Some(kind) = &selector.kind {
        for node in root.dfs() {
            if node.is_named() && node.kind() == kind.as_str() {
                let name = pattern::declared_name(&node);
                out.push(candidate(source, lines, language, &node, name));
            }
        }
    }
    out.sort_by_key(|c| (c.range.start, std::cmp::Reverse(c.range.end)));
    out
}

/// Outline symbols, depth first, each with its parent's name.
fn flatten<'s>(symbols: &'s [Symbol], parent: Option<&'s str>, out: &mut Vec<(&'s Symbol, Option<&'s str>)>) {
    for symbol in symbols {
        out.push((symbol, parent));
        flatten(&symbol.children, Some(&symbol.name), out);
    }
}

/// `Hello` matches a symbol named `Hello`; `Server.Serve`, `Server::Serve` and
/// `(*Server).Serve` match method `Serve` whose container (receiver, class, impl) is `Server`.
fn name_matches(wanted: &str, symbol: &Symbol, parent: Option<&str>) -> bool {
    if wanted == symbol.name {
        return true;
    }
    let Some((owner, member)) = wanted.rsplit_once("::").or_else(|| wanted.rsplit_once('.')) else {
        return false;
    };
    if member != symbol.name {
        return false;
    }
    let owner = owner.trim_start_matches("(*").trim_start_matches('(').trim_end_matches(')').trim_start_matches('*');
    let container = symbol.container.as_deref().map(|c| c.trim_start_matches('*'));
    container == Some(owner) || parent == Some(owner)
}

/// The named node spanning exactly `range` (the deepest such node; the outline's symbols are
/// named nodes).
fn node_at<'r>(root: &SyntaxNode<'r>, range: &Range<usize>) -> Option<SyntaxNode<'r>> {
    let mut current = root.clone();
    loop {
        if current.range() == *range && current.is_named() && current.kind() != root.kind() {
            return Some(current);
        }
        let next = current.children().find(|child| {
            let r = child.range();
            r.start <= range.start && range.end <= r.end && r.start != r.end
        });
        current = next?;
    }
}

/// The node and the wrappers around it that belong to the same declaration, innermost first:
/// Python's `decorated_definition`, JS/TS `export_statement` and one-declarator
/// `lexical_declaration`, C++ `template_declaration`, Go's one-spec `type`/`const`/`var`
/// declarations.
fn declaration_chain(node: SyntaxNode<'_>) -> Vec<SyntaxNode<'_>> {
    // Start from the innermost declaration, whichever level the outline named.
    let mut node = node;
    loop {
        let inner = match node.kind().as_ref() {
            "decorated_definition" => node.field("definition"),
            "export_statement" => node.field("declaration"),
            "template_declaration" | "ambient_declaration" => node.named_children().last(),
            _ => None,
        };
        match inner {
            Some(inner) => node = inner,
            None => break,
        }
    }
    let mut chain = vec![node];
    loop {
        let current = chain.last().expect("chain starts non-empty");
        let Some(parent) = current.parent() else { break };
        let kind = parent.kind();
        let single = || parent.named_children().filter(|c| !c.kind().contains("comment")).count() == 1;
        let wraps = match kind.as_ref() {
            "decorated_definition" | "export_statement" | "ambient_declaration" | "template_declaration" => true,
            "type_declaration"
            | "const_declaration"
            | "var_declaration"
            | "lexical_declaration"
            | "variable_declaration" => single(),
            k if k.ends_with("_spec_list") => single(),
            _ => false,
        };
        if !wraps {
            break;
        }
        chain.push(parent);
    }
    chain
}

fn candidate(
    source: &str,
    lines: &LineIndex<'_>,
    language: Language,
    node: &SyntaxNode<'_>,
    name: Option<String>,
) -> Candidate {
    let range = node.range();
    Candidate {
        leading_start: leading_start(source, language, node),
        start_line: lines.line_of(range.start),
        end_line: lines.last_line_of(&range),
        range,
        kind: Some(node.kind().into_owned()),
        name,
    }
}

/// Where the comments and attributes directly above `node` begin: previous siblings that are
/// comments (or Rust `#[...]` attributes), each on its own lines, with no blank line between
/// them and the node.
fn leading_start(source: &str, language: Language, node: &SyntaxNode<'_>) -> usize {
    let mut start = node.range().start;
    if !text::starts_line(source, start) {
        return start;
    }
    let mut previous = node.prev();
    while let Some(sibling) = previous {
        let kind = sibling.kind();
        let attached = kind.contains("comment") || (language == Language::Rust && kind == "attribute_item");
        if !attached {
            break;
        }
        let range = sibling.range();
        // The sibling must end on the line just above `start` and begin its own line.
        let gap = &source[range.end..text::line_start(source, start)];
        let one_break = matches!(gap.trim_matches([' ', '\t']), "\n" | "\r\n" | "\r");
        if !one_break || !text::starts_line(source, range.start) {
            break;
        }
        start = range.start;
        previous = sibling.prev();
    }
    start
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_index_counts_like_an_editor() {
        let index = LineIndex::new("a\r\nb\rc\n");
        assert_eq!(index.count(), 3);
        assert_eq!(index.line_of(0), 1);
        assert_eq!(index.line_of(3), 2);
        assert_eq!(index.line_of(5), 3);
        assert_eq!(index.start_of(3), 5);
        assert_eq!(index.start_of(4), 7);
        let index = LineIndex::new("x\ny");
        assert_eq!(index.count(), 2);
        assert_eq!(index.start_of(3), 3);
        assert_eq!(LineIndex::new("").count(), 0);
    }

    #[test]
    fn qualified_names() {
        let symbol = |name: &str, container: Option<&str>| Symbol {
            name: name.into(),
            kind: crate::syntax::SymbolKind::Method,
            container: container.map(Into::into),
            start_line: 1,
            end_line: 1,
            byte_range: 0..1,
            children: Vec::new(),
        };
        let serve = symbol("Serve", Some("*Server"));
        assert!(name_matches("Serve", &serve, None));
        assert!(name_matches("Server.Serve", &serve, None));
        assert!(name_matches("(*Server).Serve", &serve, None));
        assert!(!name_matches("Client.Serve", &serve, None));
        let method = symbol("run", None);
        assert!(name_matches("Worker.run", &method, Some("Worker")));
        assert!(name_matches("Worker::run", &method, Some("Worker")));
    }
}
