//! Structural search: one compiled [`StructuralQuery`] over the workspace walk.
//!
//! A visitor of the workspace walk (`visit.rs`): files of the query's language are read in
//! parallel, as written; a file lacking one of the pattern's literal tokens is skipped before
//! it is parsed (see [`StructuralQuery::may_match`]); the rest are parsed through the Engine's
//! syntax cache, so a second query over the same files reuses their trees. Open documents are searched in their live text. Results are ordered by path and
//! position and cut at `max_results`; totals cover the whole walk.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use ropey::Rope;

use super::bounded::{BoundedByPath, Items};
use super::{SearchError, SourceText, for_each_source, walk_roots};
use crate::documents::{BINARY_PROBE_BYTES, Language, position};
use crate::engine::Engine;
use crate::syntax::pattern::{RawMatch, StructuralQuery};
use crate::workspace::ResolvedPath;

/// A structural search request. Paths are already resolved by the workspace.
pub struct StructuralRequest<'q> {
    pub query: &'q StructuralQuery,
    /// Files or directories; the root when empty.
    pub paths: Vec<ResolvedPath>,
    /// Keeps a match when it returns true (name and kind filters).
    pub keep: &'q (dyn Fn(&RawMatch) -> bool + Sync),
    pub max_results: usize,
}

/// The matches of one file, with the text they index into.
#[derive(Debug, Clone)]
pub struct FileMatches {
    pub path: ResolvedPath,
    /// The open buffer's version when the live buffer was searched.
    pub buffer_version: Option<i32>,
    pub text: Rope,
    pub matches: Vec<RawMatch>,
}

/// The result of a structural search.
#[derive(Debug, Default)]
pub struct StructuralOutcome {
    /// Files with returned matches, by path.
    pub files: Vec<FileMatches>,
    /// Matches in the whole walk (after filters).
    pub total_matches: usize,
    /// Files with at least one match.
    pub files_matched: usize,
    /// Files of the language the walk met (open buffers included).
    pub files_scanned: usize,
    /// Files that passed the literal prefilter and were parsed.
    pub files_parsed: usize,
    /// Whether matches were left out because of `max_results`.
    pub truncated: bool,
}

/// Runs `request` over the workspace of `engine`: a visitor of the workspace walk
/// ([`super::for_each_source`]) that takes the files of the query's language.
///
/// Errors: [`SearchError::InvalidGlob`] from the `[walk] exclude` configuration.
pub fn search(engine: &Engine, request: &StructuralRequest<'_>) -> Result<StructuralOutcome, SearchError> {
    let workspace = engine.workspace();
    let language = request.query.language();
    let roots = walk_roots(workspace, &request.paths);
    let collector = Collector {
        files: BoundedByPath::new(request.max_results),
        total_matches: AtomicUsize::new(0),
        files_matched: AtomicUsize::new(0),
    };
    let parsed_count = AtomicUsize::new(0);
    // Trees of a search over more files than the cache holds must not evict one another.
    let sweep = engine.syntax().sweep();
    // An open buffer's language is the one its editor gave, else its file name's.
    let of_language = |path: &Path, language_id: Option<&str>| {
        language_id.and_then(Language::from_name).or_else(|| Language::from_path(path)) == Some(language)
    };
    let stats = for_each_source(workspace, engine.documents(), &roots, &of_language, |path, buffer_version, text| {
        let Some(resolved) = workspace.resolved_from_walk(path) else { return true };
        let text = match text {
            SourceText::Disk(bytes) => {
                if !request.query.may_match(bytes)
                    || memchr::memchr(0, &bytes[..bytes.len().min(BINARY_PROBE_BYTES)]).is_some()
                {
                    return true;
                }
                Rope::from_str(&String::from_utf8_lossy(bytes))
            }
            SourceText::Buffer(rope) => {
                let mut bytes = rope.to_string().into_bytes();
                position::lone_cr_to_lf(&mut bytes);
                if !request.query.may_match(&bytes) {
                    return true;
                }
                rope.clone()
            }
        };
        parsed_count.fetch_add(1, Ordering::Relaxed);
        search_text(engine, request, &sweep, resolved, buffer_version, text, &collector);
        true
    })?;

    let mut outcome = collector.finish();
    outcome.files_scanned = stats.files_visited;
    outcome.files_parsed = parsed_count.into_inner();
    Ok(outcome)
}

fn search_text(
    engine: &Engine,
    request: &StructuralRequest<'_>,
    sweep: &crate::syntax::Sweep,
    path: ResolvedPath,
    buffer_version: Option<i32>,
    text: Rope,
    collector: &Collector,
) {
    let Some(parsed) = engine.syntax().parse_in(sweep, &path.absolute, request.query.language(), &text) else {
        return;
    };
    let matches: Vec<RawMatch> = request.query.find(&parsed).into_iter().filter(|m| (request.keep)(m)).collect();
    if !matches.is_empty() {
        collector.add(FileMatches { path, buffer_version, text: parsed.text.clone(), matches });
    }
}

struct Collector {
    files: BoundedByPath<FileMatches>,
    total_matches: AtomicUsize,
    files_matched: AtomicUsize,
}

impl Items for FileMatches {
    fn len(&self) -> usize {
        self.matches.len()
    }
    fn truncate(&mut self, n: usize) {
        self.matches.truncate(n);
    }
}

impl Collector {
    fn add(&self, file: FileMatches) {
        self.total_matches.fetch_add(file.matches.len(), Ordering::Relaxed);
        self.files_matched.fetch_add(1, Ordering::Relaxed);
        self.files.add(file.path.relative.clone(), file, false);
    }

    fn finish(self) -> StructuralOutcome {
        let (files, truncated) = self.files.finish();
        StructuralOutcome {
            files,
            total_matches: self.total_matches.into_inner(),
            files_matched: self.files_matched.into_inner(),
            files_scanned: 0,
            files_parsed: 0,
            truncated,
        }
    }
}
