//! Structural search: one compiled [`StructuralQuery`] over the workspace walk.
//!
//! Files of the query's language are read in parallel; a file lacking one of the pattern's
//! literal tokens is skipped before it is parsed (see [`StructuralQuery::may_match`]); the rest
//! are parsed through the Engine's syntax cache, so a second query over the same files reuses
//! their trees. Open documents are searched in their live text. Results are ordered by path and
//! position and cut at `max_results`; totals cover the whole walk.

use std::collections::HashSet;
use std::io::Read;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use ignore::WalkState;
use ropey::Rope;

use super::bounded::{BoundedByPath, Items};
use super::{SearchError, build_walk, resolve_walked, walk_roots};
use crate::documents::{BINARY_PROBE_BYTES, Language, position};
use crate::engine::Engine;
use crate::syntax::pattern::{RawMatch, StructuralQuery};
use crate::workspace::{DocumentId, ResolvedPath};

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

/// Runs `request` over the workspace of `engine`.
///
/// Errors: [`SearchError::InvalidGlob`] from the `[walk] exclude` configuration.
pub fn search(engine: &Engine, request: &StructuralRequest<'_>) -> Result<StructuralOutcome, SearchError> {
    let workspace = engine.workspace();
    let config = workspace.config();
    let language = request.query.language();
    let roots = walk_roots(workspace, &request.paths);
    let walk = build_walk(workspace, &roots, None)?;
    let documents = engine.documents();
    let open_paths: HashSet<PathBuf> = documents.open_ids().iter().map(|id| id.path().to_path_buf()).collect();
    let collector = Collector {
        files: BoundedByPath::new(request.max_results),
        total_matches: AtomicUsize::new(0),
        files_matched: AtomicUsize::new(0),
    };
    let scanned = AtomicUsize::new(0);
    let parsed_count = AtomicUsize::new(0);
    // The call's cancellation (MCP `notifications/cancelled`), checked before each file.
    let cancel = crate::cancel::CancelFlag::current();

    walk.build_parallel().run(|| {
        let collector = &collector;
        let open_paths = &open_paths;
        let scanned = &scanned;
        let parsed_count = &parsed_count;
        let cancel = &cancel;
        let mut buffer = Vec::new();
        Box::new(move |entry| {
            if cancel.is_cancelled() {
                return WalkState::Quit;
            }
            let Ok(entry) = entry else { return WalkState::Continue };
            if !entry.file_type().is_some_and(|t| t.is_file()) || Language::from_path(entry.path()) != Some(language) {
                return WalkState::Continue;
            }
            let Some(resolved) = resolve_walked(workspace, entry.path(), config.walk.follow_symlinks) else {
                return WalkState::Continue;
            };
            if open_paths.contains(&resolved.absolute) {
                return WalkState::Continue;
            }
            if entry.metadata().is_ok_and(|m| m.len() > config.limits.max_file_bytes) {
                return WalkState::Continue;
            }
            scanned.fetch_add(1, Ordering::Relaxed);
            buffer.clear();
            // Opened without following a symlink or blocking, checked on the descriptor; never
            // read past the size limit (the file may have grown since the walk's stat).
            let Some(file) = super::open_walked(workspace, &resolved.absolute) else { return WalkState::Continue };
            let limit = config.limits.max_file_bytes;
            if file.take(limit + 1).read_to_end(&mut buffer).is_err() || buffer.len() as u64 > limit {
                return WalkState::Continue;
            }
            if !request.query.may_match(&buffer)
                || memchr::memchr(0, &buffer[..buffer.len().min(BINARY_PROBE_BYTES)]).is_some()
            {
                return WalkState::Continue;
            }
            parsed_count.fetch_add(1, Ordering::Relaxed);
            let text = Rope::from_str(&String::from_utf8_lossy(&buffer));
            search_text(engine, request, resolved, None, text, collector);
            WalkState::Continue
        })
    });

    // Open buffers of the language inside the searched paths, in their live text.
    for path in open_paths {
        if cancel.is_cancelled() {
            break;
        }
        if !roots.iter().any(|root| path.starts_with(root)) {
            continue;
        }
        let Some(document) = documents.get(&DocumentId::from_canonical(&path)) else { continue };
        let doc_language = Language::from_name(&document.language_id).or_else(|| Language::from_path(&path));
        if doc_language != Some(language) {
            continue;
        }
        let Some(resolved) = workspace.resolved_from_walk(&path) else { continue };
        scanned.fetch_add(1, Ordering::Relaxed);
        let mut bytes = document.text.to_string().into_bytes();
        position::lone_cr_to_lf(&mut bytes);
        if !request.query.may_match(&bytes) {
            continue;
        }
        parsed_count.fetch_add(1, Ordering::Relaxed);
        search_text(engine, request, resolved, Some(document.version), document.text, &collector);
    }

    let mut outcome = collector.finish();
    outcome.files_scanned = scanned.into_inner();
    outcome.files_parsed = parsed_count.into_inner();
    Ok(outcome)
}

fn search_text(
    engine: &Engine,
    request: &StructuralRequest<'_>,
    path: ResolvedPath,
    buffer_version: Option<i32>,
    text: Rope,
    collector: &Collector,
) {
    let Some(parsed) = engine.syntax().parse(&path.absolute, request.query.language(), &text) else { return };
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
