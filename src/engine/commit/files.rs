//! [`Engine::commit_disk_changes`]: the disk half of a `WorkspaceEdit` with resource operations
//! (LSP 3.17 `CreateFile`, `RenameFile`, `DeleteFile` in `documentChanges`).
//!
//! The caller plays the edit's operations and text edits in order on the texts it read and
//! hands over each file's final state: written with a text, or removed. Landing it is one
//! step, as for [`Engine::commit`]: files open in the store are refused (their buffer is the
//! truth, and a rename or delete of an open document is the editor's to make); every existing
//! file is locked in path order and checked unchanged, every new text staged beside its file
//! (missing parent directories are created then); only after all of that succeeded are the
//! staged files renamed into place — a new file without replacing one that appeared meanwhile —
//! and then the removed files unlinked, so a renamed file's text exists under its new name
//! before the old name goes.

use std::path::Path;

use ropey::Rope;

use super::{CommitError, Landing};
use crate::documents::Language;
use crate::edits::write::{LockedFile, WriteError};
use crate::engine::Engine;
use crate::workspace::DocumentId;

/// One file's final state after an ordered edit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiskChange {
    /// `id` is to hold `text`; `before` is its text when the edit was planned (`None`: the
    /// file did not exist).
    Write { id: DocumentId, shown: String, before: Option<String>, text: String },
    /// `id` is to be removed; `before` is its text when the edit was planned.
    Remove { id: DocumentId, shown: String, before: String },
}

impl DiskChange {
    fn id(&self) -> &DocumentId {
        match self {
            DiskChange::Write { id, .. } | DiskChange::Remove { id, .. } => id,
        }
    }

    fn shown(&self) -> &str {
        match self {
            DiskChange::Write { shown, .. } | DiskChange::Remove { shown, .. } => shown,
        }
    }
}

/// A checked change, holding what landing it needs.
enum Ready {
    Replace { lock: LockedFile, temp: tempfile::NamedTempFile },
    Create { temp: tempfile::NamedTempFile },
    Remove { lock: LockedFile },
}

impl Engine {
    /// Lands `changes` on disk (see the module documentation); one [`Landing::Disk`] per
    /// change, in order. Blocks on file locks: call it from a tool's thread.
    ///
    /// Errors: [`CommitError::BufferChanged`] when a file is open (nothing changed);
    /// [`CommitError::Stale`] when a file's text is not `before`, or a file to be created
    /// exists now (nothing changed); [`CommitError::Write`] when locking, reading or staging
    /// fails (nothing changed) or, rarely, when a rename into place or an unlink fails (the
    /// changes before it in path order landed).
    pub fn commit_disk_changes(&self, changes: &[DiskChange]) -> Result<Vec<Landing>, CommitError> {
        let max_bytes = self.workspace.config().limits.max_file_bytes;
        let root = self.workspace.root();
        let mut order: Vec<usize> = (0..changes.len()).collect();
        order.sort_by(|a, b| changes[*a].id().cmp(changes[*b].id()));
        let mut ready = Vec::with_capacity(changes.len());
        for index in order {
            let change = &changes[index];
            let shown = change.shown().to_owned();
            let id = change.id();
            if self.documents.is_open(id) {
                let current = self.documents.get(id).map(|d| d.version);
                return Err(CommitError::BufferChanged { shown, expected: None, current });
            }
            let write = |source| CommitError::Write { shown: shown.clone(), source };
            let locked = |before: &str| -> Result<LockedFile, CommitError> {
                let mut lock = LockedFile::open(id.path(), max_bytes, Some(root)).map_err(write)?;
                if lock.read_text(max_bytes).map_err(write)? != before {
                    return Err(CommitError::Stale { shown: shown.clone() });
                }
                Ok(lock)
            };
            let step = match change {
                DiskChange::Write { before: Some(before), text, .. } => {
                    let lock = locked(before)?;
                    let temp = lock.stage(text.as_bytes()).map_err(write)?;
                    Ready::Replace { lock, temp }
                }
                DiskChange::Write { before: None, text, .. } => {
                    if std::fs::symlink_metadata(id.path()).is_ok() {
                        return Err(CommitError::Stale { shown });
                    }
                    Ready::Create { temp: stage_new(id.path(), text).map_err(write)? }
                }
                DiskChange::Remove { before, .. } => Ready::Remove { lock: locked(before)? },
            };
            ready.push((index, step));
        }
        // Writes first, then removals: a renamed file's text exists under its new name before
        // the old name goes.
        ready.sort_by_key(|(_, step)| matches!(step, Ready::Remove { .. }));
        let mut landed = Vec::with_capacity(ready.len());
        for (index, step) in ready {
            let change = &changes[index];
            let path = change.id().path();
            let write = |source| CommitError::Write { shown: change.shown().to_owned(), source };
            let io = |source: std::io::Error| write(WriteError::Io { path: path.to_path_buf(), source });
            match step {
                Ready::Replace { lock, temp } => lock.commit(temp).map_err(write)?,
                Ready::Create { temp } => {
                    temp.persist_noclobber(path).map_err(|err| io(err.error))?;
                    sync_dir(path).map_err(io)?;
                }
                Ready::Remove { lock } => {
                    std::fs::remove_file(path).map_err(io)?;
                    drop(lock);
                    sync_dir(path).map_err(io)?;
                }
            }
            if let DiskChange::Write { text, .. } = change
                && let Some(language) = Language::from_path(path)
            {
                self.backends.file_changed(path, language, &Rope::from_str(text));
            }
            landed.push(change.id().clone());
        }
        self.emit(crate::engine::EngineEvent::Committed(landed));
        Ok(vec![Landing::Disk; changes.len()])
    }
}

/// `text` durable in a temporary file beside `path` (a file that does not exist yet), its
/// parent directories created.
fn stage_new(path: &Path, text: &str) -> Result<tempfile::NamedTempFile, WriteError> {
    use std::io::Write;
    let io = |source: std::io::Error| WriteError::Io { path: path.to_path_buf(), source };
    let dir = path.parent().ok_or_else(|| io(std::io::Error::other("no parent directory")))?;
    std::fs::create_dir_all(dir).map_err(io)?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut temp =
        tempfile::Builder::new().prefix(&format!(".{name}.")).suffix(".filepuff-tmp").tempfile_in(dir).map_err(io)?;
    temp.write_all(text.as_bytes()).map_err(io)?;
    // A temporary file is 0600; a created source file is readable by others, as an editor's.
    temp.as_file().set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o644)).map_err(io)?;
    temp.as_file().sync_all().map_err(io)?;
    Ok(temp)
}

fn sync_dir(path: &Path) -> std::io::Result<()> {
    match path.parent() {
        Some(dir) => std::fs::File::open(dir)?.sync_all(),
        None => Ok(()),
    }
}
