//! Selectors: which span of a file an edit targets.
//!
//! Three modes, chosen by which selector fields are set (seed: filepuff API reference,
//! `edit_preview`):
//! - **AST** (`selector_kind` and/or `selector_name`, narrowed by `selector_line`): syntax
//!   nodes of the file's tree-sitter tree. A name matches a declaration (function, method,
//!   class, type, constant, key; found through the symbol outline) by its own name (`m`) or by
//!   a qualified name whose last part is that name and whose other parts end the scope it is
//!   declared in: enclosing classes, namespaces, modules and `impl` types, and a method's own
//!   receiver or scope (`A.m`, Go `Server.Serve` for `func (s *Server) Serve`, C++ `T::f` and
//!   `ns::T::f` for `void ns::T::f()` or a member of `namespace ns { struct T {…} }`, Rust
//!   `T::f` for an `impl T` item; `.` and `::` are interchangeable). Without `selector_kind`
//!   the target is the whole declaration as written (with its decorators, `export`, C++
//!   `template<…>`, Go's `type`/`const` keyword when it declares one name); `selector_kind`
//!   picks the node of that kind among the declaration and those wrappers (Python
//!   `function_definition` without its decorators). A candidate's kind is that node's kind and
//!   its name is the qualified name (`::` in C, C++ and Rust, `.` elsewhere).
//! - **text** (`selector_text` exact, or `selector_pattern` regex; `selector_line` and
//!   `selector_line_end` narrow to matches starting on those lines): non-overlapping matches.
//! - **lines** (`selector_line` alone, or with `selector_line_end`): whole lines.
//!
//! More than one candidate without `selector_index` is an error listing them all.

use std::collections::HashMap;
use std::ops::Range;

use ast_grep_core::Node;
use ast_grep_core::tree_sitter::StrDoc;
use ast_grep_language::SupportLang;

use super::{EditError, Selector, text};
use crate::documents::Language;
use crate::documents::position::{self, LineIndex};
use crate::syntax::{ParsedFile, Symbol, SymbolKind, outline, pattern};

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
    /// Node kind (AST mode): the declaration's own node kind (`function_definition`,
    /// `method_declaration`, or a wrapper such as `decorated_definition` when the target
    /// includes it), never a body.
    pub kind: Option<String>,
    /// Declared name (AST mode, when the node declares one), qualified by its scope as a
    /// selector_name can give it: `A.m`, `Server.Hello`, `ns::T::f`.
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

/// The text of the line holding byte `offset`, without its break, trimmed and cut to `max`
/// characters (an ellipsis marks the cut).
pub fn excerpt(text: &str, offset: usize, max: usize) -> String {
    let start = position::line_start(text, offset);
    let end = position::line_content_end(text, start);
    let line = text[start..end].trim();
    match position::byte_of_char(line, max) {
        Some(cut) => format!("{}…", &line[..cut]),
        None => line.to_owned(),
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
            let total = lines.line_count();
            let start = selector.line.unwrap_or(1);
            let end = selector.line_end.unwrap_or(start);
            if start > total.max(1) {
                return Err(EditError::LinePastEnd { line: start, total });
            }
            if end > total.max(1) {
                return Err(EditError::LinePastEnd { line: end, total });
            }
            let range = lines.line_numbers_to_bytes(start, end);
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
                .map(|range| {
                    let (start_line, end_line) = lines.line_numbers(&range);
                    Candidate { leading_start: range.start, start_line, end_line, range, kind: None, name: None }
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
    let outline = outline::outline(parsed);
    let mut symbols = Vec::new();
    flatten(&outline, &[], language, &mut symbols);
    let separator = separator(language);
    let mut out: Vec<Candidate> = Vec::new();
    if let Some(name) = &selector.name {
        for qualified in &symbols {
            if !name_matches(name, qualified) {
                continue;
            }
            let symbol = qualified.symbol;
            let Some(node) = node_at(&root, &symbol.byte_range, &symbol.node_kind) else { continue };
            let chain = declaration_chain(node);
            let chosen = match &selector.kind {
                Some(kind) => chain.into_iter().find(|n| n.kind() == kind.as_str()),
                None => chain.into_iter().last(),
            };
            if let Some(node) = chosen {
                let candidate = candidate(source, lines, language, &node, Some(qualified.display(separator)));
                if !out.iter().any(|c| c.range == candidate.range) {
                    out.push(candidate);
                }
            }
        }
    } else if let Some(kind) = &selector.kind {
        // A kind can match thousands of nodes (`identifier`): find declarations by a map.
        let declarations: HashMap<(Range<usize>, &str), &Qualified<'_>> =
            symbols.iter().map(|q| ((q.symbol.byte_range.clone(), q.symbol.node_kind.as_str()), q)).collect();
        for node in root.dfs() {
            if node.is_named() && node.kind() == kind.as_str() {
                let name = qualified_name_of(&node, &declarations, separator).or_else(|| pattern::declared_name(&node));
                out.push(candidate(source, lines, language, &node, name));
            }
        }
    }
    out.sort_by_key(|c| (c.range.start, std::cmp::Reverse(c.range.end)));
    out
}

/// An outline symbol and the names that qualify it.
struct Qualified<'s> {
    symbol: &'s Symbol,
    /// The enclosing declarations' names, outermost first, then a method's own receiver or scope
    /// (Go `(s *Server)`, C++ `ns::T::f`), each reduced to a bare name (`*Server` → `Server`,
    /// `Set[T]` → `Set`, `Foo<T>` → `Foo`). Empty at the top level.
    scope: Vec<String>,
}

impl Qualified<'_> {
    /// `A.m`, `Server.Hello`, `ns::T::f`: the scope and the name joined by `separator`.
    fn display(&self, separator: &str) -> String {
        let mut out = String::new();
        for part in &self.scope {
            out.push_str(part);
            out.push_str(separator);
        }
        out.push_str(&self.symbol.name);
        out
    }
}

/// How `language` writes a qualified name: `::` in C, C++ and Rust, `.` elsewhere.
fn separator(language: Language) -> &'static str {
    match language {
        Language::C | Language::Cpp | Language::Rust => "::",
        _ => ".",
    }
}

/// Outline symbols, depth first, each with its scope. Markdown headings are not scopes (a
/// heading's name is its own title only).
fn flatten<'s>(symbols: &'s [Symbol], scope: &[String], language: Language, out: &mut Vec<Qualified<'s>>) {
    for symbol in symbols {
        let mut own = scope.to_vec();
        // A method's container is its receiver or scope; an impl's is its trait, not a scope.
        if symbol.kind != SymbolKind::Impl
            && let Some(container) = &symbol.container
        {
            own.extend(path_parts(container).iter().map(|part| bare_name(part)).filter(|part| !part.is_empty()));
        }
        let mut inner = own.clone();
        if language != Language::Markdown && symbol.name != "(anonymous)" {
            inner.extend(path_parts(&symbol.name).iter().map(|part| bare_name(part)).filter(|part| !part.is_empty()));
        }
        out.push(Qualified { symbol, scope: own });
        flatten(&symbol.children, &inner, language, out);
    }
}

/// `a.b::c` → `a`, `b`, `c`: splits at `.` and `::` outside brackets (`Map<a::B>::get` →
/// `Map<a::B>`, `get`; `(*Server).Serve` → `(*Server)`, `Serve`).
fn path_parts(path: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    let bytes = path.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'(' | b'[' | b'<' | b'{' => depth += 1,
            b')' | b']' | b'>' | b'}' => depth = depth.saturating_sub(1),
            b'.' if depth == 0 => {
                parts.push(&path[start..at]);
                start = at + 1;
            }
            b':' if depth == 0 && bytes.get(at + 1) == Some(&b':') => {
                parts.push(&path[start..at]);
                start = at + 2;
                at += 1;
            }
            _ => {}
        }
        at += 1;
    }
    parts.push(&path[start..]);
    parts
}

/// A type as a scope name: `(*Server)` → `Server`, `Set[T]` → `Set`, `Foo<T>` → `Foo`.
fn bare_name(part: &str) -> String {
    let part = part.trim_matches(|c: char| matches!(c, '(' | ')' | '*' | '&') || c.is_whitespace());
    let part = part.split(['[', '<', '(']).next().unwrap_or(part);
    part.trim().to_owned()
}

/// Whether selector name `wanted` names `qualified`: its own name (`m`), or a qualified name
/// whose last part is the name and whose other parts end its scope (`A.m`, `Outer.A.m`,
/// `Server.Serve`, `(*Server).Serve`, `T::f`, `ns::T::f`).
fn name_matches(wanted: &str, qualified: &Qualified<'_>) -> bool {
    let name = &qualified.symbol.name;
    if wanted == name {
        return true;
    }
    let parts = path_parts(wanted);
    let Some((member, owners)) = parts.split_last() else { return false };
    if owners.is_empty() || member.trim() != name {
        return false;
    }
    let owners: Vec<String> = owners.iter().map(|part| bare_name(part)).filter(|part| !part.is_empty()).collect();
    !owners.is_empty() && qualified.scope.ends_with(&owners)
}

/// The qualified name of the declaration `node` is (or wraps, or is wrapped by), from the
/// outline's declarations by node range and kind.
fn qualified_name_of(
    node: &SyntaxNode<'_>,
    declarations: &HashMap<(Range<usize>, &str), &Qualified<'_>>,
    separator: &str,
) -> Option<String> {
    declaration_chain(node.clone())
        .iter()
        .find_map(|n| declarations.get(&(n.range(), n.kind().as_ref())).map(|q| q.display(separator)))
}

/// The named node of kind `kind` spanning exactly `range` (an outline symbol's node; its
/// parent may span the same bytes, as a Python class body holding one method does).
fn node_at<'r>(root: &SyntaxNode<'r>, range: &Range<usize>, kind: &str) -> Option<SyntaxNode<'r>> {
    let mut current = root.clone();
    loop {
        if current.range() == *range && current.is_named() && current.kind() == kind {
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
    let (start_line, end_line) = lines.line_numbers(&range);
    Candidate {
        leading_start: leading_start(source, language, node),
        start_line,
        end_line,
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
        let gap = &source[range.end..position::line_start(source, start)];
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
    fn qualified_names() {
        let symbol = |name: &str, container: Option<&str>| Symbol {
            name: name.into(),
            kind: SymbolKind::Method,
            container: container.map(Into::into),
            start_line: 1,
            end_line: 1,
            byte_range: 0..1,
            node_kind: "method_declaration".into(),
            children: Vec::new(),
        };
        let qualify = |symbol: &Symbol, scope: &[&str]| {
            let mut out = Vec::new();
            let parents: Vec<String> = scope.iter().map(|s| s.to_string()).collect();
            flatten(std::slice::from_ref(symbol), &parents, Language::Go, &mut out);
            out.remove(0).scope
        };
        let serve = symbol("Serve", Some("*Server"));
        let go = Qualified { symbol: &serve, scope: qualify(&serve, &[]) };
        assert_eq!(go.display("."), "Server.Serve");
        for wanted in ["Serve", "Server.Serve", "(*Server).Serve", "(Server).Serve", "Server::Serve"] {
            assert!(name_matches(wanted, &go), "{wanted}");
        }
        for wanted in ["Client.Serve", "Server.Other", ".Serve", "Serve.Server", "pkg.Other.Serve"] {
            assert!(!name_matches(wanted, &go), "{wanted}");
        }
        let generic = symbol("Has", Some("Set[T]"));
        let generic = Qualified { symbol: &generic, scope: qualify(&generic, &[]) };
        assert!(name_matches("Set.Has", &generic) && name_matches("Set[T].Has", &generic));
        // C++: an out-of-line definition inside a namespace block, by any suffix of its path.
        let f = symbol("f", Some("T<int>"));
        let cpp = Qualified { symbol: &f, scope: qualify(&f, &["outer", "ns"]) };
        assert_eq!(cpp.display("::"), "outer::ns::T::f");
        for wanted in ["f", "T::f", "ns::T::f", "outer::ns::T::f", "T<int>::f", "ns.T.f"] {
            assert!(name_matches(wanted, &cpp), "{wanted}");
        }
        for wanted in ["ns::f", "U::f", "other::ns::T::f", "T::g"] {
            assert!(!name_matches(wanted, &cpp), "{wanted}");
        }
        assert_eq!(path_parts("Map<a::B>::get"), ["Map<a::B>", "get"]);
        assert_eq!(path_parts("(*Server).Serve"), ["(*Server)", "Serve"]);
    }
}
