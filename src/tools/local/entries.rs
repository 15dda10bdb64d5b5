//! Directory entries under a root, from the Engine's walk (ignore files, hidden files, `[walk]`
//! excludes, `.git` skipped), with their metadata: what `localViewStructure` and
//! `localFindFiles` list.

use parking_lot::Mutex;
use std::path::PathBuf;
use std::time::SystemTime;

use ignore::WalkState;

use crate::engine::Engine;
use crate::search::{SearchError, WalkOptions};
use crate::workspace::ResolvedPath;

/// What an entry is. Symlinks are not followed, so a link is a `Symlink` whatever it points to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EntryKind {
    File,
    Directory,
    Symlink,
}

impl EntryKind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            EntryKind::File => "file",
            EntryKind::Directory => "directory",
            EntryKind::Symlink => "symlink",
        }
    }
}

/// One walked entry.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    /// Relative to the workspace root, `/`-separated.
    pub relative: String,
    pub absolute: PathBuf,
    /// The last path component.
    pub name: String,
    pub kind: EntryKind,
    /// Levels below the walk root (its children are depth 1).
    pub depth: usize,
    /// Bytes (of the link itself for a symlink).
    pub size: u64,
    pub modified: Option<SystemTime>,
    pub accessed: Option<SystemTime>,
    /// Unix permission bits.
    pub mode: u32,
}

/// Every entry below `root` down to `options.max_depth`, the root itself excluded, unordered.
pub(crate) fn walk_entries(
    engine: &Engine,
    root: &ResolvedPath,
    options: &WalkOptions,
) -> Result<Vec<Entry>, SearchError> {
    let workspace = engine.workspace();
    let walk = crate::search::walk_with(workspace, std::slice::from_ref(&root.absolute), None, options)?;
    let out = Mutex::new(Vec::new());
    // The call's cancellation (MCP `notifications/cancelled`), checked before each entry.
    let cancel = crate::cancel::CancelFlag::current();
    walk.build_parallel().run(|| {
        let (out, cancel) = (&out, &cancel);
        Box::new(move |entry| {
            if cancel.is_cancelled() {
                return WalkState::Quit;
            }
            let Ok(entry) = entry else { return WalkState::Continue };
            if entry.depth() == 0 {
                return WalkState::Continue;
            }
            let Some(file_type) = entry.file_type() else { return WalkState::Continue };
            let kind = if file_type.is_symlink() {
                EntryKind::Symlink
            } else if file_type.is_dir() {
                EntryKind::Directory
            } else {
                EntryKind::File
            };
            let Some(resolved) = workspace.resolved_from_walk(entry.path()) else { return WalkState::Continue };
            let meta = entry.metadata().ok();
            use std::os::unix::fs::PermissionsExt;
            let walked = Entry {
                name: entry.file_name().to_string_lossy().into_owned(),
                relative: resolved.relative,
                absolute: resolved.absolute,
                kind,
                depth: entry.depth(),
                size: meta.as_ref().map_or(0, |m| m.len()),
                modified: meta.as_ref().and_then(|m| m.modified().ok()),
                accessed: meta.as_ref().and_then(|m| m.accessed().ok()),
                mode: meta.as_ref().map_or(0, |m| m.permissions().mode()),
            };
            out.lock().push(walked);
            WalkState::Continue
        })
    });
    Ok(out.into_inner())
}

/// The extension without its dot, lower-cased (`""` when none; a leading dot is not one).
pub(crate) fn extension_of(name: &str) -> String {
    match name.rfind('.') {
        Some(0) | None => String::new(),
        Some(idx) => name[idx + 1..].to_ascii_lowercase(),
    }
}
