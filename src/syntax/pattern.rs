//! Structural patterns: ast-grep pattern syntax (`$NAME`, `$$$ARGS`, `$_`) compiled once per
//! query and matched against cached parse trees, plus the literal-token prefilter that lets a
//! walk skip files that cannot match without parsing them.
//!
//! Matching is ast-grep-core's, with its default `smart` strictness: every node of the pattern
//! must be matched; unnamed nodes of the candidate (punctuation the pattern leaves out) may be
//! skipped. Under that rule each terminal of the pattern appears in the matched code (a named
//! terminal with its text, an unnamed one as a token of its kind, whose text *is* its kind), so
//! a file lacking any word-like terminal of the pattern cannot hold a match: that is the
//! prefilter ([`StructuralQuery::may_match`]).

use std::ops::Range;

use ast_grep_core::matcher::{PatternNode, kind_utils};
use ast_grep_core::meta_var::MetaVariable;
use ast_grep_core::tree_sitter::{LanguageExt, StrDoc};
use ast_grep_core::{Language as _, Node, Pattern};
use ast_grep_language::SupportLang;

use super::{ParsedFile, grammar};
use crate::documents::Language;

type SyntaxNode<'r> = Node<'r, StrDoc<SupportLang>>;

/// The languages structural queries accept, by the names tools take.
pub fn query_languages() -> Vec<&'static str> {
    Language::ALL
        .into_iter()
        .filter(|lang| grammar(*lang).is_some() && *lang != Language::Vue)
        .map(|l| l.name())
        .collect()
}

/// Why a query could not be compiled.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum QueryError {
    #[error("unknown language {name:?}")]
    UnknownLanguage { name: String },
    #[error("invalid pattern {pattern:?} for {language}: {message}")]
    InvalidPattern { pattern: String, language: &'static str, message: String },
    #[error("{kind:?} is not a node kind of the {language} grammar")]
    UnknownKind { kind: String, language: &'static str, suggestions: Vec<String> },
}

/// A compiled pattern for one language.
#[derive(Clone)]
pub struct StructuralQuery {
    language: Language,
    pattern: Pattern,
    /// Word-like terminals of the pattern, longest first (the rarest, usually).
    literals: Vec<String>,
    /// Named single captures (`$NAME`), in pattern order.
    singles: Vec<String>,
    /// Named multi captures (`$$$ARGS`), in pattern order.
    multis: Vec<String>,
    /// Whether the pattern tree holds ERROR nodes (tree-sitter could not parse it cleanly).
    has_errors: bool,
}

impl std::fmt::Debug for StructuralQuery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StructuralQuery")
            .field("language", &self.language)
            .field("literals", &self.literals)
            .field("singles", &self.singles)
            .field("multis", &self.multis)
            .finish()
    }
}

/// A node captured by a `$$$X` variable: its byte range and text.
pub type CapturedNode = (Range<usize>, String);

/// One match of a pattern in one parsed file. Ranges are byte offsets into the parsed text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawMatch {
    pub range: Range<usize>,
    /// The matched node's kind (`function_declaration`, …).
    pub kind: String,
    /// The name used by name filters: the `$NAME` capture if the pattern has one, else the
    /// node's declared name (see [`declared_name`]).
    pub name: Option<String>,
    /// `$X` captures: name, range, text.
    pub captures: Vec<(String, Range<usize>, String)>,
    /// `$$$X` captures: name and the named nodes captured (punctuation such as `,` left out).
    pub multi_captures: Vec<(String, Vec<CapturedNode>)>,
}

impl StructuralQuery {
    /// Compiles `pattern` for `language`.
    ///
    /// Errors: [`QueryError::UnknownLanguage`] when the language has no bundled grammar;
    /// [`QueryError::InvalidPattern`] when tree-sitter cannot make one node of the pattern (empty,
    /// several top-level nodes, a bare `$$$X`, or an unparseable root).
    pub fn new(pattern: &str, language: Language) -> Result<StructuralQuery, QueryError> {
        let Some(grammar) = grammar(language) else {
            return Err(QueryError::UnknownLanguage { name: language.name().to_owned() });
        };
        let invalid = |message: String| QueryError::InvalidPattern {
            pattern: pattern.to_owned(),
            language: language.name(),
            message,
        };
        if pattern.trim().is_empty() {
            return Err(invalid("the pattern is empty".to_owned()));
        }
        let compiled = Pattern::try_new(pattern, grammar).map_err(|err| invalid(err.to_string()))?;
        if compiled.has_error() {
            return Err(invalid(
                "tree-sitter cannot parse the pattern as one node of the language; write it as complete code (for example a whole function header or statement)".to_owned(),
            ));
        }
        if let Some(missing) = missing_token(pattern, grammar) {
            // ast-grep drops the token tree-sitter made up, and what is left (`func $NAME(`)
            // matches far more than was written: every function.
            return Err(invalid(format!(
                "the pattern is incomplete: tree-sitter had to supply a missing `{missing}`; write it as complete code (for example a whole function header or statement)"
            )));
        }
        let mut walk = PatternWalk::default();
        walk.visit(&compiled.node);
        let mut literals = walk.literals;
        literals.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        literals.dedup();
        Ok(StructuralQuery {
            language,
            pattern: compiled,
            literals,
            singles: walk.singles,
            multis: walk.multis,
            has_errors: walk.has_errors,
        })
    }

    /// The language the pattern was compiled for.
    pub fn language(&self) -> Language {
        self.language
    }

    /// The word-like literal tokens every match contains, longest first.
    pub fn literals(&self) -> &[String] {
        &self.literals
    }

    /// Whether tree-sitter recovered from errors while parsing the pattern (it still matches,
    /// but perhaps not as meant).
    pub fn pattern_has_errors(&self) -> bool {
        self.has_errors
    }

    /// The prefilter: false when `text` lacks one of the pattern's literal tokens, so it cannot
    /// hold a match. True otherwise (the file must then be parsed to know).
    pub fn may_match(&self, text: &[u8]) -> bool {
        self.literals.iter().all(|literal| memchr::memmem::find(text, literal.as_bytes()).is_some())
    }

    /// Every match in `parsed`, in document order (nested matches included, as ast-grep reports
    /// them).
    pub fn find(&self, parsed: &ParsedFile) -> Vec<RawMatch> {
        let root = parsed.tree.root();
        root.find_all(&self.pattern)
            .map(|found| {
                let env = found.get_env();
                let captures: Vec<(String, Range<usize>, String)> = self
                    .singles
                    .iter()
                    .filter_map(|name| {
                        let node = env.get_match(name)?;
                        Some((name.clone(), node.range(), node.text().into_owned()))
                    })
                    .collect();
                let multi_captures = self
                    .multis
                    .iter()
                    .map(|name| {
                        let nodes = env
                            .get_multiple_matches(name)
                            .into_iter()
                            .filter(|node| node.is_named())
                            .map(|node| (node.range(), node.text().into_owned()))
                            .collect();
                        (name.clone(), nodes)
                    })
                    .collect();
                let node = found.get_node();
                let name = captures
                    .iter()
                    .find(|(capture, _, _)| capture == "NAME")
                    .map(|(_, _, text)| text.clone())
                    .or_else(|| declared_name(node));
                RawMatch { range: node.range(), kind: node.kind().into_owned(), name, captures, multi_captures }
            })
            .collect()
    }
}

#[derive(Default)]
struct PatternWalk {
    literals: Vec<String>,
    singles: Vec<String>,
    multis: Vec<String>,
    has_errors: bool,
    /// Depth of enclosing ERROR nodes: their kind matches any kind, so terminals below prove
    /// nothing about the candidate's text.
    in_error: usize,
}

impl PatternWalk {
    fn visit(&mut self, node: &PatternNode) {
        match node {
            PatternNode::MetaVar { meta_var } => match meta_var {
                MetaVariable::Capture(name, _) if !self.singles.contains(name) => self.singles.push(name.clone()),
                MetaVariable::MultiCapture(name) if !self.multis.contains(name) => self.multis.push(name.clone()),
                _ => {}
            },
            PatternNode::Terminal { text, kind_id, .. } => {
                if kind_utils::is_error_kind(*kind_id) {
                    self.has_errors = true;
                } else if self.in_error == 0 && is_word(text) {
                    self.literals.push(text.clone());
                }
            }
            PatternNode::Internal { kind_id, children } => {
                let error = kind_utils::is_error_kind(*kind_id);
                self.has_errors |= error;
                self.in_error += usize::from(error);
                for child in children {
                    self.visit(child);
                }
                self.in_error -= usize::from(error);
            }
        }
    }
}

/// The first closing bracket tree-sitter had to insert (a MISSING `)`, `]` or `}`) to parse
/// `pattern`, with its metavariables spelt as ast-grep spells them for `grammar` (`$` is `µ` in
/// Go, for example): a pattern left open. Other missing tokens are not counted: a metavariable
/// standing for statements (`{ $$$ }` in C) parses as an expression missing its `;`.
fn missing_token(pattern: &str, grammar: SupportLang) -> Option<String> {
    let source = grammar.pre_process_pattern(pattern);
    let root = grammar.ast_grep(source);
    let missing = root.root().dfs().find(|node| node.is_missing() && matches!(&*node.kind(), ")" | "]" | "}"))?;
    Some(missing.kind().into_owned())
}

/// A token worth scanning for: at least two characters, identifier characters only (keywords,
/// identifiers, type names). Punctuation is everywhere and would filter nothing.
fn is_word(text: &str) -> bool {
    text.len() >= 2 && text.chars().all(|c| c.is_alphanumeric() || c == '_')
}

/// The name a declaration node declares: its `name` field (functions, methods, classes, types,
/// Go specs), or for C/C++ definitions the identifier inside the declarator chain. `None` for
/// nodes that declare nothing.
pub fn declared_name(node: &SyntaxNode<'_>) -> Option<String> {
    if let Some(name) = node.field("name") {
        return Some(name.text().into_owned());
    }
    // C and C++: function_definition > declarator: function_declarator > declarator: identifier
    // (possibly through pointer_declarator / reference_declarator / qualified_identifier).
    let mut current = node.field("declarator")?;
    for _ in 0..8 {
        match current.kind().as_ref() {
            "identifier" | "field_identifier" | "type_identifier" | "destructor_name" | "operator_name" => {
                return Some(current.text().into_owned());
            }
            "qualified_identifier" => {
                let name = current.field("name")?;
                if name.kind() == "identifier" || name.kind() == "destructor_name" || name.kind() == "operator_name" {
                    return Some(name.text().into_owned());
                }
                current = name;
            }
            _ => current = current.field("declarator")?,
        }
    }
    None
}

/// Checks that `kind` is a named node kind of `language`'s grammar.
///
/// Errors: [`QueryError::UnknownKind`] with up to five close kind names as suggestions;
/// [`QueryError::UnknownLanguage`] when the language has no grammar.
pub fn check_kind(language: Language, kind: &str) -> Result<(), QueryError> {
    let Some(grammar) = grammar(language) else {
        return Err(QueryError::UnknownLanguage { name: language.name().to_owned() });
    };
    let ts = grammar.get_ts_language();
    if ts.id_for_node_kind(kind, true) != 0 || kind == "ERROR" {
        return Ok(());
    }
    let mut kinds: Vec<(usize, String)> = (0..ts.node_kind_count() as u16)
        .filter(|id| ts.node_kind_is_named(*id) && ts.node_kind_is_visible(*id))
        .filter_map(|id| ts.node_kind_for_id(id))
        .map(|name| (distance(kind, name), name.to_owned()))
        .collect();
    kinds.sort();
    kinds.dedup_by(|a, b| a.1 == b.1);
    let suggestions = kinds.into_iter().take(5).map(|(_, name)| name).collect();
    Err(QueryError::UnknownKind { kind: kind.to_owned(), language: language.name(), suggestions })
}

/// A small edit distance for suggestions: Levenshtein over bytes, with a bonus for substrings.
fn distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        current[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != cb);
            current[j + 1] = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        std::mem::swap(&mut previous, &mut current);
    }
    let contained = memchr::memmem::find(b, a).is_some() || memchr::memmem::find(a, b).is_some();
    previous[b.len()].saturating_sub(if contained { b.len().min(a.len()) } else { 0 })
}

#[cfg(test)]
mod tests {
    use ropey::Rope;

    use super::*;
    use crate::syntax::parse;

    fn matches(pattern: &str, language: Language, source: &str) -> Vec<RawMatch> {
        let query = StructuralQuery::new(pattern, language).unwrap();
        let parsed = parse(language, &Rope::from_str(source)).unwrap();
        query.find(&parsed)
    }

    #[test]
    fn go_functions_returning_error_with_captures() {
        let source = "package p\n\nfunc A(x int, y string) error { return nil }\nfunc B() int { return 0 }\nfunc (s *S) C() error { return nil }\nfunc D() error { return nil }\n";
        let found = matches("func $NAME($$$ARGS) error", Language::Go, source);
        let names: Vec<_> = found.iter().map(|m| m.name.clone().unwrap()).collect();
        assert_eq!(names, ["A", "D"]);
        assert_eq!(found[0].kind, "function_declaration");
        assert_eq!(found[0].captures[0].0, "NAME");
        assert_eq!(&source[found[0].captures[0].1.clone()], "A");
        let args: Vec<_> = found[0].multi_captures[0].1.iter().map(|(_, text)| text.as_str()).collect();
        assert_eq!(args, ["x int", "y string"]);
        assert!(found[1].multi_captures[0].1.is_empty());
    }

    #[test]
    fn literals_drive_the_prefilter() {
        let query = StructuralQuery::new("func $NAME($$$ARGS) error", Language::Go).unwrap();
        assert_eq!(query.literals(), ["error", "func"]);
        assert!(query.may_match(b"func f() error {}"));
        assert!(!query.may_match(b"func f() int {}"));
        let python = StructuralQuery::new("class $NAME: $$$BODY", Language::Python).unwrap();
        assert_eq!(python.literals(), ["class"]);
    }

    #[test]
    fn python_classes_and_c_definitions() {
        let found = matches(
            "class $NAME: $$$BODY",
            Language::Python,
            "class A:\n    x = 1\n\nclass B(Base):\n    pass\n\nclass C:\n    def f(self): pass\n",
        );
        // `class $NAME:` has no superclass list, so B does not match (ast-grep's rule too).
        let names: Vec<_> = found.iter().map(|m| m.name.clone().unwrap()).collect();
        assert_eq!(names, ["A", "C"]);

        let found = matches(
            "$RET $NAME($$$ARGS) { $$$BODY }",
            Language::C,
            "int add(int a, int b) { return a + b; }\nstatic void nop(void) { }\nint proto(int);\n",
        );
        let names: Vec<_> = found.iter().map(|m| m.name.clone().unwrap()).collect();
        assert_eq!(names, ["add"]);
    }

    #[test]
    fn names_come_from_declarators_without_a_name_capture() {
        let found = matches("int $F(int a, int b) { $$$ }", Language::C, "int add(int a, int b) { return a + b; }\n");
        assert_eq!(found[0].name.as_deref(), Some("add"));
        let found = matches("$$$ void $X::run() { $$$ }", Language::Cpp, "void Server::run() { }\n");
        assert!(found.is_empty() || found[0].name.is_some());
    }

    #[test]
    fn invalid_patterns_and_kinds_are_typed() {
        assert!(matches!(StructuralQuery::new("", Language::Go), Err(QueryError::InvalidPattern { .. })));
        assert!(matches!(StructuralQuery::new("$$$A", Language::Go), Err(QueryError::InvalidPattern { .. })));
        // Left open: ast-grep would drop the missing `)` and match every function.
        for (open, language) in
            [("func $NAME(", Language::Go), ("def $F($$$A", Language::Python), ("foo($A, [$B", Language::JavaScript)]
        {
            let err = StructuralQuery::new(open, language).unwrap_err();
            assert!(matches!(err, QueryError::InvalidPattern { .. }), "{open}: {err}");
            // Parsed without an ERROR node: refused for the bracket tree-sitter made up.
            if language == Language::Go {
                assert!(err.to_string().contains("missing `)`"), "{open}: {err}");
            }
        }
        for complete in ["func $NAME($$$ARGS) error", "func $N($$$A) { $$$B }", "if $C { $$$ }"] {
            StructuralQuery::new(complete, Language::Go).unwrap_or_else(|err| panic!("{complete}: {err}"));
        }
        assert!(matches!(StructuralQuery::new("x", Language::Toml), Err(QueryError::UnknownLanguage { .. })));
        check_kind(Language::Go, "function_declaration").unwrap();
        match check_kind(Language::Go, "function_decl") {
            Err(QueryError::UnknownKind { suggestions, .. }) => {
                assert_eq!(suggestions[0], "function_declaration", "{suggestions:?}")
            }
            other => panic!("{other:?}"),
        }
    }
}
