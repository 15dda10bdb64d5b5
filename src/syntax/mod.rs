//! Syntax: tree-sitter parse trees (through ast-grep's bundled grammars), a parse cache, and
//! symbol outlines.
//!
//! Only the grammars of the languages filepuff serves are compiled in (see `Cargo.toml`). TOML
//! has no bundled grammar: it is detected but not parsed. Vue files use the HTML grammar.

pub mod outline;
pub mod pattern;

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use ast_grep_core::AstGrep;
use ast_grep_core::tree_sitter::StrDoc;
use ast_grep_language::SupportLang;
use dashmap::DashMap;
use ropey::Rope;

use crate::documents::Language;

pub use outline::{Symbol, SymbolKind};

/// A parse tree of one text, with the text it was parsed from.
pub struct ParsedFile {
    pub language: Language,
    pub tree: AstGrep<StrDoc<SupportLang>>,
    /// The same text as a rope, for line numbers (the position module works on ropes).
    pub text: Rope,
}

impl std::fmt::Debug for ParsedFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParsedFile").field("language", &self.language).field("bytes", &self.text.len_bytes()).finish()
    }
}

/// The bundled grammar for `language`, if there is one.
pub fn grammar(language: Language) -> Option<SupportLang> {
    Some(match language {
        Language::Go => SupportLang::Go,
        Language::TypeScript => SupportLang::TypeScript,
        Language::Tsx => SupportLang::Tsx,
        Language::JavaScript => SupportLang::JavaScript,
        Language::Python => SupportLang::Python,
        Language::C => SupportLang::C,
        Language::Cpp => SupportLang::Cpp,
        Language::Rust => SupportLang::Rust,
        Language::Html | Language::Vue => SupportLang::Html,
        Language::Elixir => SupportLang::Elixir,
        Language::Json => SupportLang::Json,
        Language::Yaml => SupportLang::Yaml,
        Language::Markdown => SupportLang::Markdown,
        Language::Shell => SupportLang::Bash,
        Language::Toml => return None,
    })
}

/// Parses `text` as `language`. `None` when the language has no grammar or tree-sitter gives up
/// (it only does on cancellation or an ABI mismatch; syntax errors still yield a tree).
pub fn parse(language: Language, text: &Rope) -> Option<ParsedFile> {
    let grammar = grammar(language)?;
    let source = text.to_string();
    let tree = AstGrep::try_new(&source, grammar).ok()?;
    Some(ParsedFile { language, tree, text: text.clone() })
}

/// A syntax error tree-sitter recovered from: an `ERROR` node (text it could not fit) or a
/// `MISSING` node (a token it had to assume, such as a closing brace).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    /// Byte range in the parsed text (empty for a MISSING node).
    pub range: std::ops::Range<usize>,
    /// True for a MISSING node; its `kind` is the assumed token (`}`, `)`, `identifier`).
    pub missing: bool,
    /// `ERROR`, or the kind of the missing node.
    pub kind: String,
}

/// Every ERROR and MISSING node of `parsed`, in document order. Only subtrees that contain an
/// error are entered, so a clean file costs one check.
pub fn syntax_errors(parsed: &ParsedFile) -> Vec<SyntaxError> {
    let mut out = Vec::new();
    let root = parsed.tree.root();
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        if node.is_missing() {
            out.push(SyntaxError { range: node.range(), missing: true, kind: node.kind().into_owned() });
            continue;
        }
        if node.is_error() {
            out.push(SyntaxError { range: node.range(), missing: false, kind: "ERROR".to_owned() });
            continue;
        }
        if node.get_inner_node().has_error() {
            let children: Vec<_> = node.children().collect();
            stack.extend(children.into_iter().rev());
        }
    }
    out
}

/// The tree of `parsed`'s text after replacing `range` (bytes) with `new_text`, reparsed
/// incrementally from the old tree (tree-sitter reuses every subtree the edit did not touch;
/// the result is the tree a fresh parse would give). `None` when the reparse fails.
pub fn reparse_edited(parsed: &ParsedFile, range: std::ops::Range<usize>, new_text: &str) -> Option<ParsedFile> {
    let mut tree = parsed.tree.clone();
    let edit = ast_grep_core::source::Edit {
        position: range.start,
        deleted_length: range.end - range.start,
        inserted_text: new_text.as_bytes().to_vec(),
    };
    tree.edit(edit).ok()?;
    let text = Rope::from_str(tree.get_text());
    Some(ParsedFile { language: parsed.language, tree, text })
}

/// Parse trees by path, reused while the text is unchanged (keyed by a content hash, so a
/// buffer edit or a disk change is a miss). Bounded: the least recently used entry goes first.
#[derive(Debug)]
pub struct SyntaxCache {
    entries: DashMap<PathBuf, CacheEntry>,
    capacity: usize,
    clock: AtomicU64,
}

#[derive(Debug)]
struct CacheEntry {
    key: (Language, u64, usize),
    parsed: Arc<ParsedFile>,
    last_used: AtomicU64,
}

impl SyntaxCache {
    /// A cache holding at most `capacity` parse trees.
    pub fn new(capacity: usize) -> SyntaxCache {
        SyntaxCache { entries: DashMap::new(), capacity: capacity.max(1), clock: AtomicU64::new(0) }
    }

    /// The parse tree of `text` (the current content of `path`), from the cache or fresh.
    pub fn parse(&self, path: &Path, language: Language, text: &Rope) -> Option<Arc<ParsedFile>> {
        let key = (language, content_hash(text), text.len_bytes());
        let now = self.clock.fetch_add(1, Ordering::Relaxed);
        if let Some(entry) = self.entries.get(path)
            && entry.key == key
        {
            entry.last_used.store(now, Ordering::Relaxed);
            return Some(entry.parsed.clone());
        }
        let parsed = Arc::new(parse(language, text)?);
        if self.entries.len() >= self.capacity && !self.entries.contains_key(path) {
            self.evict_oldest();
        }
        self.entries
            .insert(path.to_path_buf(), CacheEntry { key, parsed: parsed.clone(), last_used: AtomicU64::new(now) });
        Some(parsed)
    }

    /// Stores a tree computed elsewhere (an incremental reparse after an edit) as the tree of
    /// `path`'s current text, so the next parse of that text is a hit.
    pub fn insert(&self, path: &Path, parsed: Arc<ParsedFile>) {
        let key = (parsed.language, content_hash(&parsed.text), parsed.text.len_bytes());
        let now = self.clock.fetch_add(1, Ordering::Relaxed);
        if self.entries.len() >= self.capacity && !self.entries.contains_key(path) {
            self.evict_oldest();
        }
        self.entries.insert(path.to_path_buf(), CacheEntry { key, parsed, last_used: AtomicU64::new(now) });
    }

    /// Number of cached trees.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the cache is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn evict_oldest(&self) {
        let oldest = self
            .entries
            .iter()
            .min_by_key(|entry| entry.last_used.load(Ordering::Relaxed))
            .map(|entry| entry.key().clone());
        if let Some(path) = oldest {
            self.entries.remove(&path);
        }
    }
}

fn content_hash(text: &Rope) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    for chunk in text.chunks() {
        chunk.hash(&mut hasher);
    }
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn incremental_reparse_equals_a_fresh_parse() {
        let old = Rope::from_str("package a\n\nfunc A() {}\n\nfunc B() {}\n");
        let parsed = parse(Language::Go, &old).unwrap();
        let start = old.to_string().find("func B").unwrap();
        let edited = reparse_edited(&parsed, start..start + 11, "func B() {").unwrap();
        assert_eq!(edited.text.to_string(), "package a\n\nfunc A() {}\n\nfunc B() {\n");
        let fresh = parse(Language::Go, &edited.text).unwrap();
        assert_eq!(syntax_errors(&edited), syntax_errors(&fresh));
        assert!(!syntax_errors(&edited).is_empty());
        assert_eq!(edited.tree.root().get_inner_node().to_sexp(), fresh.tree.root().get_inner_node().to_sexp());
    }

    #[test]
    fn cache_hits_until_the_text_changes_and_stays_bounded() {
        let cache = SyntaxCache::new(2);
        let path = Path::new("/w/a.go");
        let v1 = Rope::from_str("package a\nfunc A() {}\n");
        let first = cache.parse(path, Language::Go, &v1).unwrap();
        let again = cache.parse(path, Language::Go, &v1).unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        let v2 = Rope::from_str("package a\nfunc B() {}\n");
        let changed = cache.parse(path, Language::Go, &v2).unwrap();
        assert!(!Arc::ptr_eq(&first, &changed));
        cache.parse(Path::new("/w/b.go"), Language::Go, &v1).unwrap();
        cache.parse(Path::new("/w/c.go"), Language::Go, &v1).unwrap();
        assert_eq!(cache.len(), 2);
        assert!(cache.parse(Path::new("/w/x.toml"), Language::Toml, &v1).is_none());
    }
}
