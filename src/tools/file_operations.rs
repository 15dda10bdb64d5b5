//! A server's `WorkspaceEdit` with resource operations (LSP 3.17 `CreateFile`, `RenameFile`,
//! `DeleteFile` in `documentChanges`), played in order on the files' texts, for the edit tools
//! (`rename_symbol`).
//!
//! Each operation and text edit acts on the state the ones before it left (LSP 3.17
//! "WorkspaceEdit": "executed in the order in which they are provided"): a created file is empty
//! (`overwrite`) or kept (`ignoreIfExists`), a renamed file carries its text to the new URI, a
//! deleted one is gone, and a text edit's positions (the server's encoding) are converted against
//! its file's text at that point. What cannot be done is refused before anything is written,
//! with the operation named: a URI outside the workspace, a file open in the editor or in the
//! store (its buffer is the truth; renaming or deleting it is the editor's to do), a directory
//! (operations on directories are not applied), a create or rename onto an existing file
//! without `overwrite` or `ignoreIfExists`, a rename or delete of a missing file without
//! `ignoreIfNotExists`, a text edit in a file that does not exist then. The result is each
//! file's final state ([`DiskChange`]), landed by [`Engine::commit_disk_changes`].

use std::collections::BTreeMap;

use lsp_types::{DocumentChangeOperation, DocumentChanges, OneOf, ResourceOp, TextEdit, Url, WorkspaceEdit};
use ropey::Rope;

use super::{ErrorCode, ToolError, error::read_error};
use crate::documents;
use crate::documents::position::Encoding;
use crate::engine::{DiskChange, Engine};
use crate::workspace::DocumentId;

/// Whether `edit` holds a resource operation.
pub(crate) fn has_operations(edit: &WorkspaceEdit) -> bool {
    matches!(&edit.document_changes, Some(DocumentChanges::Operations(ops))
        if ops.iter().any(|op| matches!(op, DocumentChangeOperation::Op(_))))
}

/// One file touched by the edit.
#[derive(Debug)]
pub(crate) struct Touched {
    pub id: DocumentId,
    /// Root-relative.
    pub shown: String,
    /// Its text before the edit (`None`: it did not exist).
    pub before: Option<String>,
    /// Its text after (`None`: it does not exist then).
    pub after: Option<String>,
    /// Text edits applied to it.
    pub edits: usize,
}

/// The edit played through: the files in path order, and one line per resource operation
/// (`create a.go`, `rename a.go -> b.go`, `delete a.go`, with `(skipped: …)` for one an option
/// made a no-op).
#[derive(Debug)]
pub(crate) struct Played {
    pub files: Vec<Touched>,
    pub operations: Vec<String>,
}

impl Played {
    /// The files that change, as [`DiskChange`]s.
    pub(crate) fn disk_changes(&self) -> Vec<DiskChange> {
        let change = |f: &Touched| {
            let (id, shown) = (f.id.clone(), f.shown.clone());
            match (&f.before, &f.after) {
                _ if f.before == f.after => None,
                (before, Some(text)) => {
                    Some(DiskChange::Write { id, shown, before: before.clone(), text: text.clone() })
                }
                (Some(before), None) => Some(DiskChange::Remove { id, shown, before: before.clone() }),
                (None, None) => None,
            }
        };
        self.files.iter().filter_map(change).collect()
    }
}

/// Plays `edit` (see the module documentation); positions are in `encoding` units.
///
/// Errors: 1001 and path errors for a URI outside the workspace, read errors (5011 not UTF-8,
/// too large, …), 5014 for a file open in the editor, 4006 (`LspServerError`) for an operation
/// or edit that cannot be done, naming it. Nothing is written.
pub(crate) fn play(engine: &Engine, edit: WorkspaceEdit, encoding: Encoding) -> Result<Played, ToolError> {
    let mut state = State { engine, files: BTreeMap::new(), operations: Vec::new() };
    if let Some(changes) = edit.changes {
        for (uri, edits) in changes {
            state.text_edit(&uri, &edits, encoding)?;
        }
    }
    let ops = match edit.document_changes {
        Some(DocumentChanges::Operations(ops)) => ops,
        Some(DocumentChanges::Edits(docs)) => docs.into_iter().map(DocumentChangeOperation::Edit).collect(),
        None => Vec::new(),
    };
    for op in ops {
        match op {
            DocumentChangeOperation::Edit(doc) => {
                let edits: Vec<TextEdit> = doc.edits.into_iter().map(plain).collect();
                state.text_edit(&doc.text_document.uri, &edits, encoding)?;
            }
            DocumentChangeOperation::Op(ResourceOp::Create(create)) => {
                let (overwrite, ignore_if_exists) =
                    create.options.map_or((None, None), |o| (o.overwrite, o.ignore_if_exists));
                let shown = state.load(&create.uri)?;
                let exists = state.after(&shown).is_some();
                let line = format!("create {shown}");
                if exists && overwrite != Some(true) {
                    if ignore_if_exists == Some(true) {
                        state.operations.push(format!("{line} (skipped: it exists)"));
                        continue;
                    }
                    return Err(refused(&line, "the file exists and neither overwrite nor ignoreIfExists is set"));
                }
                state.set(&shown, Some(String::new()));
                state.operations.push(line);
            }
            DocumentChangeOperation::Op(ResourceOp::Rename(rename)) => {
                let (overwrite, ignore_if_exists) =
                    rename.options.map_or((None, None), |o| (o.overwrite, o.ignore_if_exists));
                let old = state.load(&rename.old_uri)?;
                let new = state.load(&rename.new_uri)?;
                let line = format!("rename {old} -> {new}");
                if old == new {
                    state.operations.push(format!("{line} (skipped: the same file)"));
                    continue;
                }
                let Some(text) = state.after(&old) else {
                    return Err(refused(&line, "the file to rename does not exist"));
                };
                if state.after(&new).is_some() && overwrite != Some(true) {
                    if ignore_if_exists == Some(true) {
                        state.operations.push(format!("{line} (skipped: the target exists)"));
                        continue;
                    }
                    return Err(refused(&line, "the target exists and neither overwrite nor ignoreIfExists is set"));
                }
                state.set(&new, Some(text));
                state.set(&old, None);
                state.operations.push(line);
            }
            DocumentChangeOperation::Op(ResourceOp::Delete(delete)) => {
                let ignore_if_not_exists = delete.options.and_then(|o| o.ignore_if_not_exists);
                let shown = state.load(&delete.uri)?;
                let line = format!("delete {shown}");
                if state.after(&shown).is_none() {
                    if ignore_if_not_exists == Some(true) {
                        state.operations.push(format!("{line} (skipped: it does not exist)"));
                        continue;
                    }
                    return Err(refused(&line, "the file does not exist and ignoreIfNotExists is not set"));
                }
                state.set(&shown, None);
                state.operations.push(line);
            }
        }
    }
    Ok(Played { files: state.files.into_values().collect(), operations: state.operations })
}

struct State<'a> {
    engine: &'a Engine,
    /// By root-relative path (path order).
    files: BTreeMap<String, Touched>,
    operations: Vec<String>,
}

impl State<'_> {
    /// Reads `uri` into the state once; returns its root-relative path.
    fn load(&mut self, uri: &Url) -> Result<String, ToolError> {
        let workspace = self.engine.workspace();
        let resolved = workspace.resolve_uri(uri).map_err(|err| {
            ToolError::from(err)
                .with("detail", "the server's edit reaches a file outside the workspace; nothing was changed")
        })?;
        let shown = resolved.relative.clone();
        if self.files.contains_key(&shown) {
            return Ok(shown);
        }
        let id = resolved.id();
        if self.engine.documents().is_open(&id) {
            return Err(ToolError::new(
                ErrorCode::EditEditorUnavailable,
                format!(
                    "the server's edit creates, renames or deletes files, and {shown} is open; such an edit is applied \
                     only to files that are not open"
                ),
                "Nothing was changed. Close the file and run the tool again, or make the change in the editor.",
            )
            .with("path", shown));
        }
        if id.path().is_dir() {
            return Err(refused(&shown, "it is a directory; operations on directories are not applied"));
        }
        let before = if id.path().exists() {
            let source = self
                .engine
                .documents()
                .text(&id, workspace.config().limits.max_file_bytes)
                .map_err(|err| read_error(err, &shown))?;
            Some(source.text.to_string())
        } else {
            None
        };
        self.files.insert(shown.clone(), Touched { id, shown: shown.clone(), after: before.clone(), before, edits: 0 });
        Ok(shown)
    }

    /// The text of a loaded file at this point of the edit (`None`: it does not exist).
    fn after(&self, shown: &str) -> Option<String> {
        self.files.get(shown).and_then(|f| f.after.clone())
    }

    fn set(&mut self, shown: &str, text: Option<String>) {
        if let Some(file) = self.files.get_mut(shown) {
            file.after = text;
        }
    }

    fn text_edit(&mut self, uri: &Url, edits: &[TextEdit], encoding: Encoding) -> Result<(), ToolError> {
        let shown = self.load(uri)?;
        let Some(file) = self.files.get_mut(&shown) else {
            return Err(ToolError::internal(format!("{shown} was not loaded")));
        };
        let Some(text) = &file.after else {
            return Err(refused(&format!("edit {shown}"), "the file does not exist at that point of the edit"));
        };
        let rope = Rope::from_str(text);
        let byte_edits = super::rename::byte_edits(&rope, edits, encoding);
        let new = documents::apply_edits(&rope, &byte_edits)
            .map_err(|reason| refused(&format!("edit {shown}"), &format!("the edits do not fit its text: {reason}")))?;
        file.after = Some(new);
        file.edits += edits.len();
        Ok(())
    }
}

fn plain(edit: OneOf<TextEdit, lsp_types::AnnotatedTextEdit>) -> TextEdit {
    match edit {
        OneOf::Left(edit) => edit,
        OneOf::Right(annotated) => annotated.text_edit,
    }
}

fn refused(what: &str, why: &str) -> ToolError {
    ToolError::new(
        ErrorCode::LspServerError,
        format!("the server's edit cannot be applied: {what}: {why}"),
        "Nothing was changed. Check the files the server's edit names, or report it to the server's maintainers.",
    )
    .with("operation", what.to_owned())
}
