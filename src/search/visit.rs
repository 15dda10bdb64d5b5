//! The one walk-and-read loop behind text searches: every file under the roots (the workspace's
//! walk plus per-call options), read from disk — or from its open editor buffer, which wins —
//! handed to a visitor on the walker's threads, whole or as a stream the visitor reads as far
//! as it needs.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use ignore::WalkState;
use ignore::overrides::{Override, OverrideBuilder};
use ignore::types::Types;

use super::stream::{DiskText, read_whole};
use super::{SearchError, build_walk};
use crate::documents::{DocumentStore, position};
use crate::workspace::{DocumentId, Workspace};

/// Per-call changes to the workspace's walk (`[walk]` in `filepuff.toml`).
#[derive(Debug, Clone, Default)]
pub struct WalkOptions {
    /// Do not honour `.gitignore`, `.ignore` and git's exclude files (ripgrep `--no-ignore`).
    pub no_ignore: bool,
    /// Visit hidden files; `None` keeps `[walk] hidden`.
    pub hidden: Option<bool>,
    /// ripgrep-style globs relative to the workspace root: `pat` keeps only matching files
    /// (directories are still entered), `!pat` excludes.
    pub globs: Vec<String>,
    /// Directory names (or root-relative directory paths) not to enter.
    pub exclude_dirs: Vec<String>,
    /// Deepest level visited below each root (the root is depth 0); `None` for no limit.
    pub max_depth: Option<usize>,
}

impl WalkOptions {
    /// The override globs (`[walk] exclude`, then this call's globs and excluded directories).
    pub(crate) fn overrides(&self, workspace: &Workspace) -> Result<Override, SearchError> {
        let mut builder = OverrideBuilder::new(workspace.root());
        let invalid = |glob: &str, err: ignore::Error| SearchError::InvalidGlob {
            glob: glob.to_owned(),
            message: err.to_string(),
        };
        for glob in &workspace.config().walk.exclude {
            builder.add(&format!("!{glob}")).map_err(|err| invalid(glob, err))?;
        }
        for glob in &self.globs {
            builder.add(glob).map_err(|err| invalid(glob, err))?;
        }
        for dir in &self.exclude_dirs {
            let dir = dir.trim_matches('/');
            if dir.is_empty() {
                continue;
            }
            builder.add(&format!("!{dir}/")).map_err(|err| invalid(dir, err))?;
        }
        builder.build().map_err(|err| invalid("", err))
    }
}

/// Builds the walker over `roots` with the workspace's settings changed by `options`.
pub(crate) fn walk_with(
    workspace: &Workspace,
    roots: &[PathBuf],
    types: Option<Types>,
    options: &WalkOptions,
) -> Result<ignore::WalkBuilder, SearchError> {
    let mut walk = build_walk(workspace, roots, types)?;
    walk.overrides(options.overrides(workspace)?);
    if options.no_ignore {
        walk.git_ignore(false).git_global(false).git_exclude(false).ignore(false).parents(false);
    }
    if let Some(hidden) = options.hidden {
        walk.hidden(!hidden);
    }
    walk.max_depth(options.max_depth);
    Ok(walk)
}

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

/// Hands every text file under `roots`, read whole, to `visit`, on the walker's threads.
///
/// `init` makes one state per thread (a searcher, buffers); `visit` gets it with the file's
/// absolute path (inside the workspace: `Workspace::resolved_from_walk` makes the relative form,
/// for the files the visitor keeps), the open buffer's version when the live text is given
/// instead of the disk's, and the bytes. Files over `[limits] max_file_bytes` are skipped. Open
/// buffers inside the roots that pass the types and globs are visited whether or not the file
/// exists on disk. Returning `false` from `visit` stops the walk early.
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
    visit_files(workspace, documents, roots, types, options, false, init, |state, path, version, text| match text {
        FileText::Whole(bytes) => visit(state, path, version, bytes),
        FileText::Stream(_) => unreachable!("visit_files streams only when asked to"),
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
    visit_files(workspace, documents, roots, types, options, true, init, visit)
}

#[allow(clippy::too_many_arguments)] // the two public faces above keep the list readable
fn visit_files<S, I, V>(
    workspace: &Workspace,
    documents: &DocumentStore,
    roots: &[PathBuf],
    types: Option<Types>,
    options: &WalkOptions,
    stream: bool,
    init: I,
    visit: V,
) -> Result<VisitStats, SearchError>
where
    S: Send,
    I: Fn() -> S + Sync,
    V: Fn(&mut S, &Path, Option<i32>, FileText<'_, '_>) -> bool + Sync,
{
    let config = workspace.config();
    let walk = walk_with(workspace, roots, types.clone(), options)?;
    let overrides = options.overrides(workspace)?;
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
                visited_open.lock().unwrap_or_else(|e| e.into_inner()).insert(path.to_path_buf());
                return WalkState::Continue;
            }
            // Opened without following a symlink or blocking on a FIFO, and checked on the
            // descriptor: the entry may have been swapped since the walk saw it.
            let Some(file) = super::open_walked(workspace, path) else { return WalkState::Continue };
            let keep_going = if stream {
                let mut text = DiskText::new(file, &mut buffer, limit);
                let keep_going = visit(&mut state, path, None, FileText::Stream(&mut text));
                if !text.too_large() {
                    files_visited.fetch_add(1, Ordering::Relaxed);
                }
                keep_going
            } else {
                // No stat per file: a file over the limit shows when reading it.
                let Ok(Some(len)) = read_whole(file, &mut buffer, limit) else { return WalkState::Continue };
                files_visited.fetch_add(1, Ordering::Relaxed);
                visit(&mut state, path, None, FileText::Whole(&buffer[..len]))
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
        let walked = visited_open.lock().unwrap_or_else(|e| e.into_inner()).contains(&path);
        if !walked && !buffer_in_scope(&path, roots, types.as_ref(), &overrides, options) {
            continue;
        }
        let Some(document) = documents.get(&DocumentId::from_canonical(&path)) else { continue };
        files_visited.fetch_add(1, Ordering::Relaxed);
        let mut text = document.text.to_string().into_bytes();
        position::lone_cr_to_lf(&mut text);
        if !visit(&mut state, &path, Some(document.version), FileText::Whole(&text)) {
            break;
        }
    }
    Ok(VisitStats { files_visited: files_visited.into_inner() })
}

/// Whether an open buffer the walk did not meet (its file is not on disk) belongs to this walk.
fn buffer_in_scope(
    path: &std::path::Path,
    roots: &[PathBuf],
    types: Option<&Types>,
    overrides: &Override,
    options: &WalkOptions,
) -> bool {
    let Some(root) = roots.iter().find(|root| path.starts_with(root)) else { return false };
    if let Some(max_depth) = options.max_depth
        && path.strip_prefix(root).map_or(0, |rest| rest.components().count()) > max_depth
    {
        return false;
    }
    types.is_none_or(|types| !types.matched(path, false).is_ignore()) && !overrides.matched(path, false).is_ignore()
}
