//! Syntax: tree-sitter parse trees (through ast-grep's bundled grammars), a parse cache, and
//! symbol outlines.
//!
//! Only the grammars of the languages filepuff serves are compiled in (see `Cargo.toml`). TOML
//! has no bundled grammar: it is detected but not parsed. Vue files use the HTML grammar.

pub mod outline;
pub mod pattern;

use parking_lot::Mutex;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

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
    /// Declared last, so dropped after the tree: gives a big tree's memory back to the system.
    _release: ReleaseOnDrop,
}

/// Source bytes from which a parse tree is big enough (~30 MB and more by [`estimated_bytes`])
/// that its memory is handed back to the system when it is dropped.
const RELEASE_FROM_BYTES: usize = 1 << 20;

/// Calls glibc's `malloc_trim` when dropped, if `big`. tree-sitter allocates a tree as millions
/// of small blocks; freed, they stay in the allocator's arenas (one per thread that parsed),
/// and the process keeps the memory of trees long evicted — three 5 MB minified files, parsed
/// on three tool threads, kept over 1 GB resident with one tree cached. Trimming after a big
/// tree dies returns those pages.
struct ReleaseOnDrop {
    big: bool,
}

impl ReleaseOnDrop {
    fn for_text(bytes: usize) -> ReleaseOnDrop {
        ReleaseOnDrop { big: bytes >= RELEASE_FROM_BYTES }
    }
}

impl Drop for ReleaseOnDrop {
    fn drop(&mut self) {
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        if self.big {
            // SAFETY: malloc_trim only returns free memory of the allocator to the system.
            unsafe {
                libc::malloc_trim(0);
            }
        }
    }
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
    Some(ParsedFile { language, tree, text: text.clone(), _release: ReleaseOnDrop::for_text(source.len()) })
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
    let release = ReleaseOnDrop::for_text(text.len_bytes());
    Some(ParsedFile { language: parsed.language, tree, text, _release: release })
}

/// Parse trees by path, reused while the text is unchanged (keyed by a content hash, so a
/// buffer edit or a disk change is a miss). Bounded by an estimate of the memory the trees keep
/// ([`estimated_bytes`]), least recently used out first; a tree larger than the whole budget is
/// returned but not kept.
///
/// A structural search over a tree larger than the budget parses its files in walk order, and
/// the next search over it does the same: least-recently-used alone would evict each tree
/// before the next search reaches it, so a repeated search would never hit. Such searches run
/// as a [`Sweep`] instead ([`SyntaxCache::sweep`], [`SyntaxCache::parse_in`]): a sweep's tree
/// may evict only trees no sweep has used since the previous sweep began, so a repeated sweep
/// keeps the trees that fit and finds them again, and a sweep over other files takes their
/// place from its second pass on.
#[derive(Debug)]
pub struct SyntaxCache {
    entries: DashMap<PathBuf, CacheEntry>,
    /// Estimated bytes all entries may keep.
    budget: usize,
    /// Estimated bytes the entries keep now; changed only under `writing`.
    used: AtomicUsize,
    /// Held while entries are added or removed, so `used` stays their sum.
    writing: Mutex<()>,
    /// Counts parses and inserts: an entry's `last_used` is a tick of it.
    clock: AtomicU64,
    /// The tick the latest sweep began at.
    last_sweep: AtomicU64,
}

/// One search over many files ([`SyntaxCache::sweep`]): its trees may evict only entries not
/// used since the sweep before it began.
#[derive(Debug)]
pub struct Sweep {
    /// Entries last used before this tick may be evicted for this sweep's trees.
    evict_before: u64,
    /// Set once nothing could be evicted for this sweep: later trees of it are not offered.
    full: std::sync::atomic::AtomicBool,
}

#[derive(Debug)]
struct CacheEntry {
    key: (Language, u64, usize),
    parsed: Arc<ParsedFile>,
    /// [`estimated_bytes`] of `parsed`.
    bytes: usize,
    last_used: AtomicU64,
}

impl SyntaxCache {
    /// A cache whose trees keep at most `budget` bytes by [`estimated_bytes`].
    pub fn new(budget: usize) -> SyntaxCache {
        SyntaxCache {
            entries: DashMap::new(),
            budget,
            used: AtomicUsize::new(0),
            writing: Mutex::new(()),
            clock: AtomicU64::new(0),
            last_sweep: AtomicU64::new(0),
        }
    }

    /// Begins a sweep: a search that parses many files ([`SyntaxCache::parse_in`]).
    pub fn sweep(&self) -> Sweep {
        let now = self.clock.fetch_add(1, Ordering::Relaxed);
        let previous = self.last_sweep.swap(now, Ordering::Relaxed);
        Sweep { evict_before: previous, full: std::sync::atomic::AtomicBool::new(false) }
    }

    /// [`SyntaxCache::parse`] for a file of `sweep`: a tree parsed here is kept when the budget
    /// has room for it, or when entries last used before the previous sweep began can make it.
    pub fn parse_in(&self, sweep: &Sweep, path: &Path, language: Language, text: &Rope) -> Option<Arc<ParsedFile>> {
        self.parse_with(Some(sweep), path, language, text)
    }

    /// The parse tree of `text` (the current content of `path`), from the cache or fresh.
    pub fn parse(&self, path: &Path, language: Language, text: &Rope) -> Option<Arc<ParsedFile>> {
        self.parse_with(None, path, language, text)
    }

    fn parse_with(
        &self,
        sweep: Option<&Sweep>,
        path: &Path,
        language: Language,
        text: &Rope,
    ) -> Option<Arc<ParsedFile>> {
        if self.budget == 0 {
            return parse(language, text).map(Arc::new);
        }
        let key = (language, content_hash(text), text.len_bytes());
        let now = self.clock.fetch_add(1, Ordering::Relaxed);
        if let Some(entry) = self.entries.get(path)
            && entry.key == key
        {
            entry.last_used.store(now, Ordering::Relaxed);
            return Some(entry.parsed.clone());
        }
        let parsed = Arc::new(parse(language, text)?);
        self.store(path, key, parsed.clone(), now, sweep);
        Some(parsed)
    }

    /// Stores a tree computed elsewhere (an incremental reparse after an edit) as the tree of
    /// `path`'s current text, so the next parse of that text is a hit.
    pub fn insert(&self, path: &Path, parsed: Arc<ParsedFile>) {
        let key = (parsed.language, content_hash(&parsed.text), parsed.text.len_bytes());
        let now = self.clock.fetch_add(1, Ordering::Relaxed);
        self.store(path, key, parsed, now, None);
    }

    /// Number of cached trees.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the cache is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Estimated bytes the cached trees keep (at most the budget).
    pub fn estimated_bytes(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// Keeps `parsed` as `path`'s tree (replacing an older one), then evicts the least recently
    /// used others until the budget holds — for a tree of `sweep`, only those it may evict
    /// ([`Sweep`]), and when they do not make room the tree is not kept. A tree over the whole
    /// budget replaces nothing and is not kept.
    fn store(
        &self,
        path: &Path,
        key: (Language, u64, usize),
        parsed: Arc<ParsedFile>,
        now: u64,
        sweep: Option<&Sweep>,
    ) {
        let bytes = estimated_bytes(&parsed);
        if sweep.is_some_and(|sweep| sweep.full.load(Ordering::Relaxed)) {
            return;
        }
        let _writing = self.writing.lock();
        if let Some((_, old)) = self.entries.remove(path) {
            self.used.fetch_sub(old.bytes, Ordering::Relaxed);
        }
        if bytes > self.budget {
            return;
        }
        let evict_before = sweep.map_or(u64::MAX, |sweep| sweep.evict_before);
        while self.used.load(Ordering::Relaxed) + bytes > self.budget && self.evict_oldest(evict_before) {}
        if self.used.load(Ordering::Relaxed) + bytes > self.budget {
            if let Some(sweep) = sweep {
                sweep.full.store(true, Ordering::Relaxed);
            }
            return;
        }
        self.used.fetch_add(bytes, Ordering::Relaxed);
        self.entries.insert(path.to_path_buf(), CacheEntry { key, parsed, bytes, last_used: AtomicU64::new(now) });
    }

    /// Removes the least recently used entry if it was last used before the tick
    /// `evict_before`; false when there is none such. Call under `writing`.
    fn evict_oldest(&self, evict_before: u64) -> bool {
        let oldest = self
            .entries
            .iter()
            .map(|entry| (entry.last_used.load(Ordering::Relaxed), entry))
            .filter(|(used, _)| *used < evict_before)
            .min_by_key(|(used, _)| *used)
            .map(|(_, entry)| entry.key().clone());
        let Some(path) = oldest else { return false };
        if let Some((_, old)) = self.entries.remove(&path) {
            self.used.fetch_sub(old.bytes, Ordering::Relaxed);
        }
        true
    }
}

/// Estimated heap bytes per node of a parse tree (tree-sitter's visible-descendant count, O(1)
/// to read), in [`estimated_bytes`].
pub const TREE_BYTES_PER_NODE: usize = 80;

/// Estimated heap bytes per source byte of a [`ParsedFile`] (the source the tree holds, the
/// rope, and tree-sitter's memory that grows with text rather than with visible nodes), in
/// [`estimated_bytes`].
pub const TREE_BYTES_PER_SOURCE_BYTE: usize = 14;

/// What `parsed` keeps in memory, in bytes, estimated as `14 × source bytes + 80 × nodes`.
/// tree-sitter has no measure of its own; the factors were fitted to the heap (glibc
/// `mallinfo2`) a parse kept for eight files — Go (`net/http/server.go`, the 1.9 MB
/// `rewriteAMD64.go`), Python (`typing.py`), C (`stdio.h`), Rust (`regex-syntax`'s parser),
/// JavaScript (`typescript.js`, 9.1 MB, and its 3.6 MB minified form), an 8.8 MB JSON file —
/// which kept 17–58 bytes per source byte (the minified file the most) or 72–204 bytes per
/// visible node; this estimate is within 0.7–1.45× of each. See `measure_parse_memory`.
pub fn estimated_bytes(parsed: &ParsedFile) -> usize {
    let nodes = parsed.tree.root().get_inner_node().descendant_count();
    parsed.text.len_bytes() * TREE_BYTES_PER_SOURCE_BYTE + nodes * TREE_BYTES_PER_NODE
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
        let one = estimated_bytes(&parse(Language::Go, &Rope::from_str("package a\nfunc A() {}\n")).unwrap());
        let cache = SyntaxCache::new(2 * one);
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
        assert!(cache.estimated_bytes() <= 2 * one);
        assert!(cache.parse(Path::new("/w/x.toml"), Language::Toml, &v1).is_none());
    }

    /// Sweeps over more files than the budget holds: a repeated sweep finds the trees that fit
    /// (least-recently-used alone would have evicted each before the next sweep reached it),
    /// and a sweep over other files takes their place from its second pass on.
    #[test]
    fn repeated_sweeps_keep_the_trees_that_fit() {
        let text = Rope::from_str("package a\nfunc A() {}\n");
        let one = estimated_bytes(&parse(Language::Go, &text).unwrap());
        let cache = SyntaxCache::new(2 * one);
        let paths: Vec<PathBuf> = (0..7).map(|i| PathBuf::from(format!("/w/{i}.go"))).collect();
        let pass = |files: &[PathBuf]| {
            let sweep = cache.sweep();
            files.iter().map(|path| cache.parse_in(&sweep, path, Language::Go, &text).unwrap()).collect::<Vec<_>>()
        };
        let cached = |files: &[PathBuf]| files.iter().filter(|p| cache.entries.contains_key(p.as_path())).count();
        let (first, others) = paths.split_at(4);
        let one_pass = pass(first);
        assert_eq!(cached(first), 2, "the budget holds two trees");
        for _ in 0..3 {
            let again = pass(first);
            let hits = one_pass.iter().zip(&again).filter(|(a, b)| Arc::ptr_eq(a, b)).count();
            assert_eq!(hits, 2, "a repeated sweep finds the two trees it kept");
        }
        assert!(cache.estimated_bytes() <= 2 * one);

        // Files the last sweep used are not evicted by the next sweep's first pass…
        pass(others);
        assert_eq!((cached(first), cached(others)), (2, 0));
        // … but by its second, and they then stay.
        pass(others);
        assert_eq!((cached(first), cached(others)), (0, 2));
        pass(others);
        assert_eq!(cached(others), 2);

        // Without sweeps (one file at a time), the least recently used goes, as before.
        for path in first {
            cache.parse(path, Language::Go, &text).unwrap();
        }
        assert_eq!((cached(&first[..2]), cached(&first[2..])), (0, 2));
    }

    /// Issue 16: three 5 MB minified files kept 1.48 GB, the cache being bounded by count.
    #[test]
    fn the_parse_cache_is_bounded_by_bytes_not_count() {
        // A "minified" file: one long line of many small statements.
        let minified = Rope::from_str(&"var a=b+c*d,e=[1,2,3];f(a,e);".repeat(20_000));
        let big = estimated_bytes(&parse(Language::JavaScript, &minified).unwrap());
        assert!(big > 14 * minified.len_bytes(), "{big}");
        let cache = SyntaxCache::new(big * 2 + big / 2);
        for name in ["/w/a.min.js", "/w/b.min.js", "/w/c.min.js"] {
            assert!(cache.parse(Path::new(name), Language::JavaScript, &minified).is_some());
            assert!(cache.estimated_bytes() <= big * 2 + big / 2);
        }
        assert_eq!(cache.len(), 2, "the least recently used tree went");
        assert!(cache.entries.get(Path::new("/w/a.min.js")).is_none());
        // A tree over the whole budget is parsed and returned, but not kept.
        let small = SyntaxCache::new(big / 2);
        assert!(small.parse(Path::new("/w/a.min.js"), Language::JavaScript, &minified).is_some());
        assert_eq!((small.len(), small.estimated_bytes()), (0, 0));
    }

    /// The measurement behind [`TREE_BYTES_PER_NODE`] and [`TREE_BYTES_PER_SOURCE_BYTE`]: the
    /// heap a parsed file keeps (tree-sitter's C allocations and ours, through glibc's
    /// `mallinfo2`), against its source bytes and its tree's node count.
    /// `FILEPUFF_MEASURE_FILES=a.go:b.min.js cargo test measure_parse_memory -- --ignored --nocapture`
    #[test]
    #[ignore = "a measurement, run by hand"]
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn measure_parse_memory() {
        fn allocated() -> usize {
            // SAFETY: mallinfo2 only reads the allocator's counters.
            let info = unsafe { libc::mallinfo2() };
            info.uordblks + info.hblkhd
        }
        let files = std::env::var("FILEPUFF_MEASURE_FILES").unwrap_or_default();
        for path in files.split(':').filter(|p| !p.is_empty()) {
            let source = std::fs::read_to_string(path).unwrap();
            let language = Language::from_path(Path::new(path)).unwrap();
            let before = allocated();
            let text = Rope::from_str(&source);
            let parsed = parse(language, &text).unwrap();
            drop(text);
            let kept = allocated().saturating_sub(before);
            let bytes = parsed.text.len_bytes();
            let nodes = parsed.tree.root().get_inner_node().descendant_count();
            let estimate = estimated_bytes(&parsed);
            println!(
                "{path}: {bytes} B, {nodes} nodes, kept {kept} B = {:.1}/byte, {:.1}/node; estimate {estimate} B ({:.2}x)",
                kept as f64 / bytes as f64,
                kept as f64 / nodes as f64,
                estimate as f64 / kept as f64,
            );
        }
    }
}
