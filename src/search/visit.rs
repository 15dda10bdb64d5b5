//! The one walk-and-read loop: every file under the roots (the workspace's walk plus per-call
//! options, see `walk.rs`), read from disk — or from its open editor buffer, which wins —
//! handed to a visitor on the walker's threads. Text searches take files whole or as a stream
//! of whole lines ([`for_each_text`], [`for_each_stream`]; lone `\r` made `\n`), structural
//! search takes them as written ([`for_each_source`]), the graph index takes only their paths
//! ([`for_each_file`]).

use parking_lot::Mutex;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use ignore::WalkState;
use ignore::overrides::Override;
use ignore::types::Types;
use ropey::Rope;

use super::SearchError;
use super::stream::{DiskText, read_whole};
use super::walk::{Exclude, WalkOptions, walk_with};
use crate::documents::{DocumentStore, position};
use crate::workspace::{DocumentId, Workspace};

/// What a visit saw.
#[derive(Debug, Clone, Copy, Default)]
pub struct VisitStats {
    /// Files handed to the visitor (disk files plus open buffers).
    pub files_visited: usize,
}

/// A file's text as a [`for_each_stream`] visitor gets it, lone `\r` turned into `\n` either
/// way (offsets kept).
pub enum FileText<'t, 'b> {
    /// All of it at once: an open editor buffer's text.
    Whole(&'t [u8]),
    /// A file on disk, handed out in pieces of whole lines as the visitor asks for them.
    Stream(&'t mut DiskText<'b>),
}

/// A file's text as a [`for_each_source`] visitor gets it: as written, line breaks untouched.
pub enum SourceText<'t> {
    /// A file on disk, read whole (not checked for binary content; may be invalid UTF-8).
    Disk(&'t [u8]),
    /// An open editor buffer's live text.
    Buffer(&'t Rope),
}

/// Which files a [`for_each_source`] or [`for_each_file`] visit sees, besides the walk's own
/// rules: a file's path and, for an open buffer, the language id its editor gave. Asked before
/// a disk file is read.
pub type Accept<'a> = &'a (dyn Fn(&Path, Option<&str>) -> bool + Sync);

/// Hands every text file under `roots`, read whole, to `visit`, on the walker's threads.
///
/// `init` makes one state per thread (a searcher, buffers); `visit` gets it with the file's
/// absolute path (inside the workspace: `Workspace::resolved_from_walk` makes the relative form,
/// for the files the visitor keeps), the open buffer's version when the live text is given
/// instead of the disk's, and the bytes. Files over `[limits] max_file_bytes` are skipped. Open
/// buffers inside the roots that pass the types and globs are visited whether or not the file
/// exists on disk. Returning `false` from `visit` stops the walk early.
///
/// Errors: [`SearchError::InvalidGlob`] from `[walk] exclude` or `options`.
pub fn for_each_text<S, I, V>(
    workspace: &Workspace,
    documents: &DocumentStore,
    roots: &[PathBuf],
    types: Option<Types>,
    options: &WalkOptions,
    init: I,
    visit: V,
) -> Result<VisitStats, SearchError>
where
    S: Send,
    I: Fn() -> S + Sync,
    V: Fn(&mut S, &Path, Option<i32>, &[u8]) -> bool + Sync,
{
    let scope = Scope { roots, types, options, accept: None };
    visit_files(workspace, documents, &scope, Reading::Whole, init, |state, path, version, item| match item {
        Item::Text(FileText::Whole(bytes)) => visit(state, path, version, bytes),
        _ => unreachable!("Reading::Whole hands out whole texts"),
    })
}

/// [`for_each_text`] for visitors that may not need a whole file (a search that stops at a
/// file's first match): a disk file comes as a [`DiskText`] to read piece by piece, refused at
/// once when binary (a NUL byte in its first 64 KiB) or over the size limit.
pub fn for_each_stream<S, I, V>(
    workspace: &Workspace,
    documents: &DocumentStore,
    roots: &[PathBuf],
    types: Option<Types>,
    options: &WalkOptions,
    init: I,
    visit: V,
) -> Result<VisitStats, SearchError>
where
    S: Send,
    I: Fn() -> S + Sync,
    V: Fn(&mut S, &Path, Option<i32>, FileText<'_, '_>) -> bool + Sync,
{
    let scope = Scope { roots, types, options, accept: None };
    visit_files(workspace, documents, &scope, Reading::Stream, init, |state, path, version, item| match item {
        Item::Text(text) => visit(state, path, version, text),
        _ => unreachable!("Reading::Stream hands out texts"),
    })
}

/// Hands every file under `roots` that `accept` takes, as written ([`SourceText`]: a disk
/// file's bytes, or an open buffer's rope), to `visit` on the walker's threads — what a parser
/// needs. Otherwise as [`for_each_text`], with the workspace's walk unchanged.
pub fn for_each_source<V>(
    workspace: &Workspace,
    documents: &DocumentStore,
    roots: &[PathBuf],
    accept: Accept<'_>,
    visit: V,
) -> Result<VisitStats, SearchError>
where
    V: Fn(&Path, Option<i32>, SourceText<'_>) -> bool + Sync,
{
    let options = WalkOptions::default();
    let scope = Scope { roots, types: None, options: &options, accept: Some(accept) };
    visit_files(
        workspace,
        documents,
        &scope,
        Reading::Source,
        || (),
        |_, path, version, item| match item {
            Item::Source(text) => visit(path, version, text),
            _ => unreachable!("Reading::Source hands out sources"),
        },
    )
}

/// Hands the path of every file under `roots` that `accept` takes to `visit`, on the walker's
/// threads, without reading it: the disk files of the walk and the open buffers in scope
/// (with their version; the visitor reads them through the documents store). Otherwise as
/// [`for_each_text`], with the workspace's walk unchanged.
pub fn for_each_file<V>(
    workspace: &Workspace,
    documents: &DocumentStore,
    roots: &[PathBuf],
    accept: Accept<'_>,
    visit: V,
) -> Result<VisitStats, SearchError>
where
    V: Fn(&Path, Option<i32>) -> bool + Sync,
{
    let options = WalkOptions::default();
    let scope = Scope { roots, types: None, options: &options, accept: Some(accept) };
    visit_files(workspace, documents, &scope, Reading::Nothing, || (), |_, path, version, _| visit(path, version))
}

/// Which files a visit sees.
struct Scope<'a> {
    roots: &'a [PathBuf],
    types: Option<Types>,
    options: &'a WalkOptions,
    accept: Option<Accept<'a>>,
}

/// How a visit reads each file.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reading {
    /// Whole, lone `\r` made `\n` ([`FileText::Whole`]).
    Whole,
    /// Disk files in pieces of whole lines ([`FileText::Stream`]), buffers whole.
    Stream,
    /// As written ([`SourceText`]).
    Source,
    /// Not at all ([`Item::Unread`]).
    Nothing,
}

/// What the inner visitor gets, by [`Reading`].
enum Item<'t, 'b> {
    Text(FileText<'t, 'b>),
    Source(SourceText<'t>),
    Unread,
}

fn visit_files<S, I, V>(
    workspace: &Workspace,
    documents: &DocumentStore,
    scope: &Scope<'_>,
    reading: Reading,
    init: I,
    visit: V,
) -> Result<VisitStats, SearchError>
where
    S: Send,
    I: Fn() -> S + Sync,
    V: Fn(&mut S, &Path, Option<i32>, Item<'_, '_>) -> bool + Sync,
{
    let config = workspace.config();
    let walk = walk_with(workspace, scope.roots, scope.types.clone(), scope.options)?;
    let overrides = scope.options.overrides(workspace)?;
    let exclude = Exclude::new(workspace)?;
    let open_paths: HashSet<PathBuf> = documents.open_ids().iter().map(|id| id.path().to_path_buf()).collect();
    let visited_open: Mutex<HashSet<PathBuf>> = Mutex::new(HashSet::new());
    let files_visited = AtomicUsize::new(0);
    let stop = std::sync::atomic::AtomicBool::new(false);
    let limit = config.limits.max_file_bytes;
    // The call's cancellation (MCP `notifications/cancelled`), checked before each file.
    let cancel = crate::cancel::CancelFlag::current();

    walk.build_parallel().run(|| {
        let mut state = init();
        let mut buffer = Vec::new();
        let (open_paths, visited_open, files_visited, stop, visit, cancel) =
            (&open_paths, &visited_open, &files_visited, &stop, &visit, &cancel);
        Box::new(move |entry| {
            if stop.load(Ordering::Relaxed) || cancel.is_cancelled() {
                return WalkState::Quit;
            }
            let Ok(entry) = entry else { return WalkState::Continue };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            // A followed link may lead outside the root: the sandbox decides, on the real path.
            let canonical;
            let path = if config.walk.follow_symlinks {
                let Ok(real) = entry.path().canonicalize() else { return WalkState::Continue };
                if !real.starts_with(workspace.root()) {
                    return WalkState::Continue;
                }
                canonical = real;
                canonical.as_path()
            } else {
                entry.path()
            };
            if !open_paths.is_empty() && open_paths.contains(path) {
                visited_open.lock().insert(path.to_path_buf());
                return WalkState::Continue;
            }
            if scope.accept.is_some_and(|accept| !accept(path, None)) {
                return WalkState::Continue;
            }
            let keep_going = match reading {
                Reading::Nothing => {
                    files_visited.fetch_add(1, Ordering::Relaxed);
                    visit(&mut state, path, None, Item::Unread)
                }
                Reading::Stream => {
                    // Opened without following a symlink or blocking on a FIFO, and checked on
                    // the descriptor: the entry may have been swapped since the walk saw it.
                    let Some(file) = super::open_walked(workspace, path) else { return WalkState::Continue };
                    let mut text = DiskText::new(file, &mut buffer, limit);
                    let keep_going = visit(&mut state, path, None, Item::Text(FileText::Stream(&mut text)));
                    if !text.too_large() {
                        files_visited.fetch_add(1, Ordering::Relaxed);
                    }
                    keep_going
                }
                Reading::Whole | Reading::Source => {
                    let Some(file) = super::open_walked(workspace, path) else { return WalkState::Continue };
                    // No stat per file: a file over the limit shows when reading it.
                    let normalise = reading == Reading::Whole;
                    let Ok(Some(len)) = read_whole(file, &mut buffer, limit, normalise) else {
                        return WalkState::Continue;
                    };
                    files_visited.fetch_add(1, Ordering::Relaxed);
                    let item = if normalise {
                        Item::Text(FileText::Whole(&buffer[..len]))
                    } else {
                        Item::Source(SourceText::Disk(&buffer[..len]))
                    };
                    visit(&mut state, path, None, item)
                }
            };
            if !keep_going {
                stop.store(true, Ordering::Relaxed);
                return WalkState::Quit;
            }
            WalkState::Continue
        })
    });

    let mut state = init();
    let mut open: Vec<PathBuf> = open_paths.into_iter().collect();
    open.sort();
    for path in open {
        if stop.load(Ordering::Relaxed) || cancel.is_cancelled() {
            break;
        }
        let walked = visited_open.lock().contains(&path);
        if !walked && !buffer_in_scope(&path, scope, &overrides, &exclude) {
            continue;
        }
        let Some(document) = documents.get(&DocumentId::from_canonical(&path)) else { continue };
        if scope.accept.is_some_and(|accept| !accept(&path, Some(&document.language_id))) {
            continue;
        }
        files_visited.fetch_add(1, Ordering::Relaxed);
        let keep_going = match reading {
            Reading::Nothing => visit(&mut state, &path, Some(document.version), Item::Unread),
            Reading::Source => {
                visit(&mut state, &path, Some(document.version), Item::Source(SourceText::Buffer(&document.text)))
            }
            Reading::Whole | Reading::Stream => {
                let mut text = document.text.to_string().into_bytes();
                position::lone_cr_to_lf(&mut text);
                visit(&mut state, &path, Some(document.version), Item::Text(FileText::Whole(&text)))
            }
        };
        if !keep_going {
            break;
        }
    }
    Ok(VisitStats { files_visited: files_visited.into_inner() })
}

/// Whether an open buffer the walk did not meet (its file is not on disk) belongs to this walk:
/// under a root, within the depth, of the types, past the globs and `[walk] exclude`.
fn buffer_in_scope(path: &Path, scope: &Scope<'_>, overrides: &Override, exclude: &Exclude) -> bool {
    let Some(root) = scope.roots.iter().find(|root| path.starts_with(root)) else { return false };
    if let Some(max_depth) = scope.options.max_depth
        && path.strip_prefix(root).map_or(0, |rest| rest.components().count()) > max_depth
    {
        return false;
    }
    scope.types.as_ref().is_none_or(|types| !types.matched(path, false).is_ignore())
        && !overrides.matched(path, false).is_ignore()
        && !exclude.excludes_below(root, path)
}
