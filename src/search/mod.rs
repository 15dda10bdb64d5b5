//! Text search over the workspace walk, in process, with ripgrep's own libraries.
//!
//! The walk is `ignore`'s parallel walker (`.gitignore`, `.ignore`, hidden files, file types as
//! ripgrep names them); matching is `grep-regex` + `grep-searcher`. Open documents are searched
//! in their live text instead of the disk's, and unsaved buffers of files that do not exist on
//! disk yet are searched too.
//!
//! Counting follows `grep -c`: a line with several matches counts once. Results are ordered by
//! path, then line, so the first `max_results` are the same on every run whatever the thread
//! interleaving; totals always cover the whole walk.

mod bounded;
mod sink;
mod stream;
pub mod structural;
mod visit;
mod walk;

pub use stream::{DiskText, is_binary};
pub use visit::{
    Accept, FileText, SourceText, VisitStats, for_each_file, for_each_source, for_each_stream, for_each_text,
};
pub(crate) use walk::walk_roots;
pub(crate) use walk::walk_with;
pub use walk::{WalkOptions, workspace_languages};

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder};
use ignore::types::{Types, TypesBuilder};

use crate::documents::DocumentStore;
use crate::workspace::{ResolvedPath, Workspace};

/// What to search for and where. Paths are already resolved by the workspace.
#[derive(Debug, Clone)]
pub struct SearchRequest {
    pub pattern: String,
    /// `false` matches `pattern` literally.
    pub regex: bool,
    pub ignore_case: bool,
    /// Files or directories to search; the root when empty.
    pub paths: Vec<ResolvedPath>,
    /// ripgrep file type names (`go`, `ts`, `py`, …) or language names (`typescript`, …).
    pub file_types: Vec<String>,
    /// Lines of context before and after each matching line.
    pub context_lines: usize,
    /// Matching lines to return; the walk still counts every match.
    pub max_results: usize,
    /// Longest line text returned, in characters.
    pub max_line_chars: usize,
}

/// The result of a search.
#[derive(Debug, Clone, Default)]
pub struct SearchOutcome {
    /// Files with returned hits, ordered by path.
    pub files: Vec<FileHits>,
    /// Matching lines in the whole walk.
    pub total_matches: usize,
    /// Files with at least one matching line in the whole walk.
    pub total_files: usize,
    /// Files searched (walk entries plus open buffers).
    pub files_searched: usize,
    /// Whether hits were left out because of `max_results`.
    pub truncated: bool,
}

/// The returned hits of one file.
#[derive(Debug, Clone)]
pub struct FileHits {
    pub path: ResolvedPath,
    /// The editor buffer's version when the live buffer was searched instead of the disk.
    pub buffer_version: Option<i32>,
    /// Matching lines in this file (all of them, even those not returned).
    pub total_matches: usize,
    pub hits: Vec<Hit>,
}

/// One matching line.
#[derive(Debug, Clone)]
pub struct Hit {
    /// 1-based line number.
    pub line: u64,
    /// 1-based column of the first match on the line, in characters.
    pub column: u32,
    /// The line's text without its line break, cut to `max_line_chars` characters.
    pub text: String,
    /// Whether `text` was cut.
    pub text_truncated: bool,
    pub before: Vec<ContextLine>,
    pub after: Vec<ContextLine>,
}

/// A line of context around a hit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextLine {
    /// 1-based line number.
    pub line: u64,
    pub text: String,
}

/// Why a search could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SearchError {
    #[error("invalid regular expression {pattern:?}: {message}")]
    InvalidRegex { pattern: String, message: String },
    #[error("unknown file type {name:?}")]
    UnknownFileType { name: String, known: Vec<String> },
    /// A glob of the call (include/exclude globs, excluded directories) or an entry of
    /// `[walk] exclude` is not valid; the same error for every walk.
    #[error("invalid glob {glob:?}: {message}")]
    InvalidGlob { glob: String, message: String },
}

/// Runs a search over the workspace, with open documents overriding the disk.
pub fn search(
    workspace: &Workspace,
    documents: &DocumentStore,
    request: &SearchRequest,
) -> Result<SearchOutcome, SearchError> {
    let matcher = build_matcher(request)?;
    let types = build_types(&request.file_types)?;
    let roots = walk_roots(workspace, &request.paths);

    let collector = Collector::new(request.max_results);
    let stats = visit::for_each_text(
        workspace,
        documents,
        &roots,
        Some(types),
        &WalkOptions::default(),
        || build_searcher(request.context_lines),
        |searcher, path, buffer_version, bytes| {
            let mut file_sink = sink::FileSink::new(&matcher, request, collector.keep_limit());
            if searcher.search_slice(&matcher, bytes, &mut file_sink).is_ok()
                && file_sink.total_matches() > 0
                && let Some(resolved) = workspace.resolved_from_walk(path)
            {
                collector.add(resolved, buffer_version, file_sink);
            }
            true
        },
    )?;

    let mut outcome = collector.finish();
    outcome.files_searched = stats.files_visited;
    Ok(outcome)
}

fn build_matcher(request: &SearchRequest) -> Result<RegexMatcher, SearchError> {
    RegexMatcherBuilder::new()
        .case_insensitive(request.ignore_case)
        .fixed_strings(!request.regex)
        .line_terminator(Some(b'\n'))
        .build(&request.pattern)
        .map_err(|err| SearchError::InvalidRegex { pattern: request.pattern.clone(), message: err.to_string() })
}

fn build_searcher(context_lines: usize) -> Searcher {
    SearcherBuilder::new()
        .line_number(true)
        .before_context(context_lines)
        .after_context(context_lines)
        .binary_detection(BinaryDetection::quit(b'\x00'))
        .build()
}

/// Language names agents use for ripgrep type names.
const TYPE_ALIASES: &[(&str, &str)] = &[
    ("typescript", "ts"),
    ("tsx", "ts"),
    ("javascript", "js"),
    ("jsx", "js"),
    ("python", "py"),
    ("golang", "go"),
    ("c++", "cpp"),
    ("shell", "sh"),
    ("bash", "sh"),
    ("rs", "rust"),
    ("yml", "yaml"),
    ("md", "markdown"),
];

/// ripgrep's file types (`ignore`'s defaults), selected by name.
pub(crate) fn build_types(names: &[String]) -> Result<Types, SearchError> {
    let mut builder = TypesBuilder::new();
    builder.add_defaults();
    let known: Vec<String> = builder.definitions().into_iter().map(|d| d.name().to_owned()).collect();
    for name in names {
        let lower = name.to_ascii_lowercase();
        let name_or_alias = TYPE_ALIASES.iter().find(|(alias, _)| *alias == lower).map_or(lower.as_str(), |(_, rg)| rg);
        if !known.iter().any(|k| k == name_or_alias) {
            return Err(SearchError::UnknownFileType { name: name.clone(), known });
        }
        builder.select(name_or_alias);
    }
    builder.build().map_err(|err| SearchError::UnknownFileType { name: err.to_string(), known: Vec::new() })
}

/// Opens a file the walk found (`path` under the root, symlinks resolved) for reading, as
/// [`crate::workspace::open::open_regular`] does: `None` when it is no longer a regular file
/// really under the root, or cannot be opened.
pub(crate) fn open_walked(workspace: &Workspace, path: &Path) -> Option<std::fs::File> {
    crate::workspace::open::open_regular(path, Some(workspace.root())).ok().map(|(file, _)| file)
}

/// Gathers per-file results from the walker threads, keeping only what can still be returned.
struct Collector {
    max_results: usize,
    files: bounded::BoundedByPath<FileHits>,
    total_matches: AtomicUsize,
    total_files: AtomicUsize,
}

impl bounded::Items for FileHits {
    fn len(&self) -> usize {
        self.hits.len()
    }
    fn truncate(&mut self, n: usize) {
        self.hits.truncate(n);
    }
}

impl Collector {
    fn new(max_results: usize) -> Collector {
        Collector {
            max_results,
            files: bounded::BoundedByPath::new(max_results),
            total_matches: AtomicUsize::new(0),
            total_files: AtomicUsize::new(0),
        }
    }

    /// Hits one file needs to keep: no file can contribute more than `max_results`.
    fn keep_limit(&self) -> usize {
        self.max_results
    }

    fn add(&self, path: ResolvedPath, buffer_version: Option<i32>, file: sink::FileSink<'_>) {
        if file.total_matches() == 0 {
            return;
        }
        let total = file.total_matches();
        let hits = file.into_hits();
        self.total_matches.fetch_add(total, Ordering::Relaxed);
        self.total_files.fetch_add(1, Ordering::Relaxed);
        let partial = hits.len() < total;
        let relative = path.relative.clone();
        self.files.add(relative, FileHits { path, buffer_version, total_matches: total, hits }, partial);
    }

    fn finish(self) -> SearchOutcome {
        let (files, truncated) = self.files.finish();
        SearchOutcome {
            files,
            total_matches: self.total_matches.into_inner(),
            total_files: self.total_files.into_inner(),
            files_searched: 0,
            truncated,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_paths_are_walked_once() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
        std::fs::write(dir.path().join("a/b/x.go"), "package b\n").unwrap();
        let workspace = Workspace::with_config(dir.path(), Default::default()).unwrap();
        let paths: Vec<ResolvedPath> =
            ["a/b/x.go", "a", "a/b", "a"].iter().map(|p| workspace.resolve(p).unwrap()).collect();
        assert_eq!(walk_roots(&workspace, &paths), vec![workspace.root().join("a")]);
    }
}
