//! [`Engine::commit`]: the one way an edit lands (DESIGN.md "Data flow", path 2).
//!
//! Every edit tool (`edit_apply`, `rename_symbol`, and any later one) computes byte edits on the
//! text it read — an open document's buffer at some version, or the file on disk — and hands
//! them here. Where they go is decided once:
//! - **open in the editor** (`filepuff lsp` attached): one versioned `workspace/applyEdit` for
//!   all open documents of the commit, an ordinary undoable edit there; the editor's `didChange`
//!   brings the text back into the documents store. With `[lsp] save_agent_edits` the new text
//!   is also written to disk. A refusal is [`CommitOutcome::Refused`], never an error;
//! - **open buffer without an editor**: the buffer, if still at the version read;
//! - **on disk**: locked (`flock`, in path order so two commits cannot deadlock), re-read and
//!   checked unchanged, staged to fsync'd temporary files, and renamed into place only after
//!   every other part of the commit succeeded; the servers are told.
//!
//! All files of a commit land or none: everything that can fail is checked before the first
//! rename, and a refusal by the editor leaves the disk untouched.

use std::path::Path;

use ropey::Rope;

use super::{BufferEdit, EditorAnswer, Engine};
use crate::documents::{ByteEdit, Language};
use crate::edits::write::{LockedFile, WriteError};
use crate::workspace::DocumentId;

/// `editor_refused` of a confirmed edit the editor did not apply without saying why. VS Code
/// gives no reason, and its refactor preview answers the same whether the person discarded the
/// change or clicked Apply without ticking it (a change needing confirmation starts unticked
/// there), so this does not claim the person declined it.
const NOT_APPLIED: &str =
    "the editor did not apply the edit (the person discarded it, or did not tick it before Apply)";

/// Whether the person approves an edit before it lands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Approval {
    /// It lands as the module documentation says (an edit of an open document is an ordinary,
    /// undoable edit in the editor).
    Direct,
    /// Every file of it goes to the editor as one `WorkspaceEdit` whose change annotation needs
    /// the person's confirmation (LSP 3.16 `ChangeAnnotation.needsConfirmation`; VS Code shows
    /// its refactor preview, the Neovim plugin a diff and a question); it lands — in the
    /// editor's buffers, and on disk with `[lsp] save_agent_edits` — only if they accept.
    /// Without an editor that supports change annotations it is refused, never applied
    /// unconfirmed.
    Confirm,
}

/// What an edit was computed on.
#[derive(Debug)]
pub enum Base {
    /// An open document's buffer at `version` (its text then).
    Buffer { version: i32, text: Rope },
    /// The file on disk, as read earlier without a lock: the commit locks it and checks it is
    /// still this text.
    Disk { text: String },
    /// The file on disk, read under a lock held since ([`Engine::edit_base`]): edits of one
    /// file by several agents or processes take turns instead of failing as stale.
    Locked { file: Box<LockedFile>, text: String },
}

impl Base {
    /// The text the edit is computed on.
    pub fn text(&self) -> Rope {
        match self {
            Base::Buffer { text, .. } => text.clone(),
            Base::Disk { text } | Base::Locked { text, .. } => Rope::from_str(text),
        }
    }

    /// The buffer's version, for an open document.
    pub fn version(&self) -> Option<i32> {
        match self {
            Base::Buffer { version, .. } => Some(*version),
            _ => None,
        }
    }
}

/// One file's part of a commit.
#[derive(Debug)]
pub struct FileEdit {
    pub id: DocumentId,
    /// The file as the caller shows it (root-relative), for errors.
    pub shown: String,
    pub base: Base,
    /// Non-overlapping byte ranges of the base text and their new text, in any order.
    pub edits: Vec<ByteEdit>,
}

/// Where one file's edit landed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Landing {
    /// The editor applied it (`workspace/applyEdit`); `version` is the buffer's version after
    /// its `didChange`, `saved` whether `[lsp] save_agent_edits` also wrote it to disk.
    Editor { version: Option<i32>, saved: bool },
    /// The open buffer (no editor attached), now at `version`.
    Buffer { version: i32 },
    /// The file on disk.
    Disk,
}

impl Landing {
    /// `editor`, `editor+disk`, `buffer` or `disk`: the `written_to` of tool results.
    pub fn name(&self) -> &'static str {
        match self {
            Landing::Editor { saved: false, .. } => "editor",
            Landing::Editor { saved: true, .. } => "editor+disk",
            Landing::Buffer { .. } => "buffer",
            Landing::Disk => "disk",
        }
    }

    /// The buffer's version after the edit, for a document that is open.
    pub fn version(&self) -> Option<i32> {
        match self {
            Landing::Editor { version, .. } => *version,
            Landing::Buffer { version } => Some(*version),
            Landing::Disk => None,
        }
    }
}

/// What [`Engine::commit`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommitOutcome {
    /// Every file landed; one [`Landing`] per [`FileEdit`], in order.
    Applied(Vec<Landing>),
    /// The editor answered `applied: false` (with its `failureReason`, when it gave one).
    /// Nothing changed anywhere.
    Refused { reason: String },
}

/// Why a commit was not made. Nothing changed anywhere when one is returned, except for
/// [`CommitError::Write`] during the final renames (the files before it in path order were
/// replaced; each file is whole, old or new).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CommitError {
    /// The file on disk is not the text the edit was computed on.
    #[error("{shown} changed on disk since it was read")]
    Stale { shown: String },
    /// The open buffer moved on since it was read (or was closed, or opened in the editor).
    #[error("the open buffer of {shown} changed while the edit was computed")]
    BufferChanged { shown: String, expected: Option<i32>, current: Option<i32> },
    /// The edits do not fit the text (overlapping, outside it, splitting a character).
    #[error("invalid edit of {shown}: {reason}")]
    InvalidEdit { shown: String, reason: String },
    /// The editor holds the document but cannot take edits (no `workspace/applyEdit`, gone,
    /// no answer in time).
    #[error("{shown} is open in the editor, which cannot take the edit: {message}")]
    EditorUnavailable { shown: String, message: String },
    /// [`Approval::Confirm`] without an editor to ask the person in (a standalone session, or
    /// no `filepuff lsp` serving this workspace).
    #[error("no editor is attached to ask the person about the edit of {shown}")]
    NoEditorToConfirm { shown: String },
    /// Locking, reading, staging or replacing a file failed.
    #[error("{shown}: {source}")]
    Write { shown: String, source: WriteError },
}

impl Engine {
    /// What an edit of `id` is computed on: the open buffer when the document is open (the
    /// editor's truth, unsaved text included), else the file on disk, read as text under an
    /// exclusive lock that [`Engine::commit`] releases.
    ///
    /// Errors: [`CommitError::Write`] (not found, a directory, binary, too large, not UTF-8,
    /// cannot be locked).
    pub fn edit_base(&self, id: &DocumentId, shown: &str) -> Result<Base, CommitError> {
        if let Some(document) = self.documents.get(id) {
            return Ok(Base::Buffer { version: document.version, text: document.text });
        }
        let max_bytes = self.workspace.config().limits.max_file_bytes;
        let write = |source| CommitError::Write { shown: shown.to_owned(), source };
        let mut file = LockedFile::open(id.path(), max_bytes, Some(self.workspace.root())).map_err(write)?;
        let text = file.read_text(max_bytes).map_err(write)?;
        Ok(Base::Locked { file: Box::new(file), text })
    }

    /// Lands `edits` (see the module documentation), labelled `label` in the editor's undo
    /// history. Blocks (file locks, the editor's answer): call it from a tool's thread.
    ///
    /// Errors: [`CommitError`]; a refusal by the editor is `Ok(CommitOutcome::Refused)`.
    pub fn commit(&self, label: &str, edits: Vec<FileEdit>, approval: Approval) -> Result<CommitOutcome, CommitError> {
        let max_bytes = self.workspace.config().limits.max_file_bytes;
        // The new text of every file, checked against its base first.
        let mut new_texts = Vec::with_capacity(edits.len());
        for file in &edits {
            new_texts.push(
                crate::documents::apply_edits(&file.base.text(), &file.edits)
                    .map_err(|reason| CommitError::InvalidEdit { shown: file.shown.clone(), reason })?,
            );
        }
        let mut landings: Vec<Option<Landing>> = vec![None; edits.len()];
        let mut buffers = Vec::new();
        let mut disk = Vec::new();
        for (index, file) in edits.into_iter().enumerate() {
            match file.base {
                Base::Buffer { version, text } => {
                    buffers.push((index, file.id, file.shown, version, text, file.edits));
                }
                Base::Disk { text } => disk.push((index, file.id, file.shown, None, text, file.edits)),
                Base::Locked { file: lock, text } => {
                    disk.push((index, file.id, file.shown, Some(lock), text, file.edits));
                }
            }
        }

        // Disk files: locked in path order (those locked already stay so), checked unchanged,
        // staged.
        disk.sort_by(|a, b| a.1.cmp(&b.1));
        let mut staged = Vec::with_capacity(disk.len());
        for (index, id, shown, lock, text, edits) in disk {
            if self.documents.is_open(&id) {
                // Opened in the editor since it was read: its buffer is the truth now.
                let current = self.documents.get(&id).map(|d| d.version);
                return Err(CommitError::BufferChanged { shown, expected: None, current });
            }
            let write = |source| CommitError::Write { shown: shown.clone(), source };
            let lock = match lock {
                Some(lock) => *lock,
                None => {
                    let mut lock =
                        LockedFile::open(id.path(), max_bytes, Some(self.workspace.root())).map_err(write)?;
                    if lock.read_text(max_bytes).map_err(write)? != text {
                        return Err(CommitError::Stale { shown });
                    }
                    lock
                }
            };
            let temp = lock.stage(new_texts[index].as_bytes()).map_err(write)?;
            staged.push(Staged { index, id, shown, lock, temp, text, edits });
        }

        // Open documents: still at the version read?
        for (_, id, shown, version, _, _) in &buffers {
            let current = self.documents.get(id).map(|d| d.version);
            if current != Some(*version) {
                return Err(CommitError::BufferChanged { shown: shown.clone(), expected: Some(*version), current });
            }
        }

        if approval == Approval::Confirm {
            return self.commit_confirmed(label, buffers, staged, &new_texts);
        }
        let committed: Vec<DocumentId> =
            buffers.iter().map(|b| b.1.clone()).chain(staged.iter().map(|s| s.id.clone())).collect();

        if !buffers.is_empty() {
            match self.editor() {
                Some(editor) => {
                    let request: Vec<BufferEdit> = buffers
                        .iter()
                        .map(|(_, id, _, version, text, edits)| BufferEdit {
                            id: id.clone(),
                            version: Some(*version),
                            before: text.clone(),
                            edits: edits.clone(),
                        })
                        .collect();
                    let shown = buffers.iter().map(|b| b.2.as_str()).collect::<Vec<_>>().join(", ");
                    // Before any disk file is renamed into place: a refusal leaves everything
                    // as it was (the staged files are dropped).
                    match editor.apply(label, &request, Approval::Direct) {
                        Err(message) => return Err(CommitError::EditorUnavailable { shown, message }),
                        Ok(EditorAnswer::Refused { reason }) => {
                            return Ok(CommitOutcome::Refused {
                                reason: reason.unwrap_or_else(|| "the editor did not apply the edit".to_owned()),
                            });
                        }
                        Ok(EditorAnswer::Applied) => {}
                    }
                    let save = self.workspace.config().lsp.save_agent_edits;
                    for (index, id, shown, _, _, _) in &buffers {
                        if save {
                            save_text(id.path(), &new_texts[*index], max_bytes, self.workspace.root())
                                .map_err(|source| CommitError::Write { shown: shown.clone(), source })?;
                        }
                        let version = self.documents.get(id).map(|d| d.version);
                        landings[*index] = Some(Landing::Editor { version, saved: save });
                    }
                }
                None => {
                    for (index, id, shown, version, _, edits) in &buffers {
                        let change = self.documents.edit(id, *version, edits).map_err(|err| match err {
                            crate::documents::ChangeError::InvalidEdit { reason, .. } => {
                                CommitError::InvalidEdit { shown: shown.clone(), reason }
                            }
                            _ => CommitError::BufferChanged {
                                shown: shown.clone(),
                                expected: Some(*version),
                                current: self.documents.get(id).map(|d| d.version),
                            },
                        })?;
                        self.backends.document_changed(id, &change);
                        landings[*index] = Some(Landing::Buffer { version: change.version });
                    }
                }
            }
        }

        for Staged { index, id, shown, lock, temp, .. } in staged {
            lock.commit(temp).map_err(|source| CommitError::Write { shown, source })?;
            drop(lock);
            if let Some(language) = Language::from_path(id.path()) {
                self.backends.file_changed(id.path(), language, &Rope::from_str(&new_texts[index]));
            }
            landings[index] = Some(Landing::Disk);
        }
        self.emit(super::EngineEvent::Committed(committed));
        Ok(CommitOutcome::Applied(landings.into_iter().map(|l| l.unwrap_or(Landing::Disk)).collect()))
    }
}

/// A disk file of a commit, checked and staged, under its lock.
struct Staged {
    index: usize,
    id: DocumentId,
    shown: String,
    lock: LockedFile,
    temp: tempfile::NamedTempFile,
    /// The text the edits were computed on (checked unchanged under the lock).
    text: String,
    edits: Vec<ByteEdit>,
}

/// An open document's part of a commit: (index, id, shown, version read, text read, edits).
type BufferPart = (usize, DocumentId, String, i32, Rope, Vec<ByteEdit>);

impl Engine {
    /// The [`Approval::Confirm`] part of [`Engine::commit`]: every file (checked already; the
    /// disk ones under their locks) goes to the editor in one annotated edit. The locks are
    /// released before the person decides (which can take minutes): once they accept, the
    /// editor's buffers hold the result (and the disk too with `[lsp] save_agent_edits`).
    fn commit_confirmed(
        &self,
        label: &str,
        buffers: Vec<BufferPart>,
        staged: Vec<Staged>,
        new_texts: &[String],
    ) -> Result<CommitOutcome, CommitError> {
        let max_bytes = self.workspace.config().limits.max_file_bytes;
        let all: Vec<&str> =
            buffers.iter().map(|b| b.2.as_str()).chain(staged.iter().map(|s| s.shown.as_str())).collect();
        let Some(editor) = self.editor() else {
            return Err(CommitError::NoEditorToConfirm { shown: all.join(", ") });
        };
        let shown = all.join(", ");
        let mut files: Vec<(usize, DocumentId, String)> = Vec::new();
        let mut request = Vec::new();
        for (index, id, file, version, text, edits) in buffers {
            request.push(BufferEdit { id: id.clone(), version: Some(version), before: text, edits });
            files.push((index, id, file));
        }
        for Staged { index, id, shown, lock, temp, text, edits } in staged {
            drop((temp, lock));
            request.push(BufferEdit { id: id.clone(), version: None, before: Rope::from_str(&text), edits });
            files.push((index, id, shown));
        }
        match editor.apply(label, &request, Approval::Confirm) {
            Err(message) => return Err(CommitError::EditorUnavailable { shown, message }),
            Ok(EditorAnswer::Refused { reason }) => {
                return Ok(CommitOutcome::Refused { reason: reason.unwrap_or_else(|| NOT_APPLIED.to_owned()) });
            }
            Ok(EditorAnswer::Applied) => {}
        }
        let save = self.workspace.config().lsp.save_agent_edits;
        let mut landings = vec![Landing::Disk; new_texts.len()];
        for (index, id, file) in files {
            if save {
                save_text(id.path(), &new_texts[index], max_bytes, self.workspace.root())
                    .map_err(|source| CommitError::Write { shown: file, source })?;
            }
            let version = self.documents.get(&id).map(|d| d.version);
            landings[index] = Landing::Editor { version, saved: save };
        }
        Ok(CommitOutcome::Applied(landings))
    }
}

/// Writes `text` to `path` atomically under its lock (`[lsp] save_agent_edits`).
fn save_text(path: &Path, text: &str, max_bytes: u64, root: &Path) -> Result<(), WriteError> {
    LockedFile::open(path, max_bytes, Some(root))?.replace(text.as_bytes())
}

mod files;

pub use files::DiskChange;

#[cfg(test)]
mod tests;
