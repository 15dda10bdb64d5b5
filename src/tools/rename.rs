//! `rename_symbol`: the language server's `textDocument/rename` as a previewed, validated,
//! all-files-or-none edit (beyond the seed; the `lsp` toolset).
//!
//! The server's `WorkspaceEdit` (`changes` or `documentChanges` with text edits; filepuff does
//! not advertise file create/rename/delete operations) is converted from the server's encoding
//! to byte ranges of each file's current text. With `apply: false` (the default) the result is a
//! unified diff. With `apply: true`, files open in the editor are edited in their buffers and
//! files on disk are locked (in path order, so two renames cannot deadlock), re-read and checked
//! unchanged, staged to temporary files (fsync'd), and only then renamed into place — a failure
//! before the renames leaves every file as it was.

use std::collections::BTreeMap;
use std::path::PathBuf;

use lsp_types::request::Rename;
use lsp_types::{DocumentChanges, OneOf, RenameParams, TextEdit, Url, WorkDoneProgressParams, WorkspaceEdit};
use ropey::Rope;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::lsp::{AnswerInfo, PositionParams, Target, request_timeout};
use super::{ErrorCode, ToolError, error::read_error};
use crate::documents::position::{self, Encoding};
use crate::documents::{self, Language};
use crate::edits::write::{LockedFile, WriteError};
use crate::engine::{BufferEdit, EditorAnswer, Engine};

/// Parameters of `rename_symbol`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct RenameSymbolParams {
    #[serde(flatten)]
    pub position: PositionParams,
    /// The new name.
    pub new_name: String,
    /// Write the change (default false: preview only).
    #[serde(default)]
    pub apply: bool,
}

/// Result of `rename_symbol`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RenameSymbolOutput {
    /// Every file the rename touches, in path order, with its number of edits.
    pub files: Vec<RenamedFile>,
    pub total_edits: usize,
    /// Unified diff of every file (3 lines of context).
    pub diff: String,
    pub applied: bool,
    #[serde(flatten)]
    pub answer: AnswerInfo,
}

/// One file of a rename.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RenamedFile {
    pub file: String,
    pub edits: usize,
    /// `disk` or `buffer` once applied.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub written_to: Option<String>,
    /// Content hash after the rename.
    pub new_hash: String,
}

/// A file's planned new text.
struct Planned {
    absolute: PathBuf,
    relative: String,
    old: String,
    new: String,
    edits: usize,
    buffer_version: Option<i32>,
}

/// Runs `rename_symbol`.
///
/// Errors: as `find_definition` (4001–4007, path and read errors); 4006 when the server refuses
/// the rename (not a renameable symbol, an invalid name); 1001 when the server's edit reaches
/// outside the workspace; 5010 when a file changed between the server's answer and the write;
/// 5012 when a write fails (nothing was renamed into place).
pub fn rename_symbol(engine: &Engine, params: RenameSymbolParams) -> Result<RenameSymbolOutput, ToolError> {
    let target = Target::resolve(engine, &params.position)?;
    let timeout = request_timeout(engine);
    let new_name = params.new_name.clone();
    let (edit, answer, encoding) = target.ask(engine, true, move |client, position| {
        let params = RenameParams {
            text_document_position: position,
            new_name: new_name.clone(),
            work_done_progress_params: WorkDoneProgressParams::default(),
        };
        async move { client.request::<Rename>(params, timeout).await }
    })?;
    let edits = edit.map(text_edits).unwrap_or_default();
    let mut planned = Vec::new();
    for (uri, edits) in edits {
        planned.push(plan_file(engine, &uri, &edits, encoding)?);
    }
    let mut diff = String::new();
    for file in &planned {
        let text_diff = similar::TextDiff::from_lines(&file.old, &file.new);
        let unified = text_diff
            .unified_diff()
            .context_radius(3)
            .header(&format!("a/{}", file.relative), &format!("b/{}", file.relative))
            .to_string();
        diff.push_str(&unified);
    }
    let mut files: Vec<RenamedFile> = planned
        .iter()
        .map(|f| RenamedFile {
            file: f.relative.clone(),
            edits: f.edits,
            written_to: None,
            new_hash: documents::content_hash(f.new.as_bytes()),
        })
        .collect();
    let total_edits = planned.iter().map(|f| f.edits).sum();
    if params.apply && !planned.is_empty() {
        apply(engine, &planned, &mut files)?;
    }
    Ok(RenameSymbolOutput { files, total_edits, diff, applied: params.apply && !planned.is_empty(), answer })
}

/// The text edits of a WorkspaceEdit by document, in path order.
fn text_edits(edit: WorkspaceEdit) -> BTreeMap<Url, Vec<TextEdit>> {
    let mut out: BTreeMap<Url, Vec<TextEdit>> = BTreeMap::new();
    if let Some(changes) = edit.changes {
        for (uri, edits) in changes {
            out.entry(uri).or_default().extend(edits);
        }
    }
    match edit.document_changes {
        Some(DocumentChanges::Edits(docs)) => {
            for doc in docs {
                out.entry(doc.text_document.uri).or_default().extend(doc.edits.into_iter().map(plain));
            }
        }
        Some(DocumentChanges::Operations(ops)) => {
            for op in ops {
                if let lsp_types::DocumentChangeOperation::Edit(doc) = op {
                    out.entry(doc.text_document.uri).or_default().extend(doc.edits.into_iter().map(plain));
                }
            }
        }
        None => {}
    }
    out
}

fn plain(edit: OneOf<TextEdit, lsp_types::AnnotatedTextEdit>) -> TextEdit {
    match edit {
        OneOf::Left(edit) => edit,
        OneOf::Right(annotated) => annotated.text_edit,
    }
}

fn plan_file(engine: &Engine, uri: &Url, edits: &[TextEdit], encoding: Encoding) -> Result<Planned, ToolError> {
    let workspace = engine.workspace();
    let resolved = workspace.resolve_uri(uri).map_err(|err| {
        ToolError::from(err)
            .with("detail", "the server's rename reaches a file outside the workspace; nothing was changed")
    })?;
    let source = engine
        .documents()
        .text(&resolved.absolute, workspace.config().limits.max_file_bytes)
        .map_err(|err| read_error(err, &resolved.relative))?;
    let buffer_version = match source.origin {
        documents::Origin::Buffer { version } => Some(version),
        documents::Origin::Disk { .. } => None,
    };
    let rope: &Rope = &source.text;
    let old = rope.to_string();
    let mut ranges: Vec<(usize, usize, &str)> = edits
        .iter()
        .map(|edit| {
            let convert = |p: lsp_types::Position| {
                position::position_to_offset(
                    rope,
                    position::Position { line: p.line, character: p.character },
                    encoding,
                )
                .0
            };
            (convert(edit.range.start), convert(edit.range.end), edit.new_text.as_str())
        })
        .collect();
    // Apply from the end so earlier offsets stay valid; overlapping edits are a server bug.
    ranges.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)));
    let mut new = old.clone();
    let mut floor = usize::MAX;
    for (start, end, text) in &ranges {
        if *end > floor {
            return Err(ToolError::new(
                ErrorCode::LspServerError,
                format!("the server's rename has overlapping edits in {}", resolved.relative),
                "Report it to the server's maintainers; nothing was changed.",
            ));
        }
        new.replace_range(*start..*end, text);
        floor = *start;
    }
    Ok(Planned {
        absolute: resolved.absolute,
        relative: resolved.relative,
        old,
        new,
        edits: edits.len(),
        buffer_version,
    })
}

/// Writes every planned file: buffers in the documents store; disk files locked, checked,
/// staged, then committed.
fn apply(engine: &Engine, planned: &[Planned], files: &mut [RenamedFile]) -> Result<(), ToolError> {
    let workspace = engine.workspace();
    let max_bytes = workspace.config().limits.max_file_bytes;
    let write_error = |err: WriteError, shown: &str| match err {
        WriteError::Read(err) => read_error(err, shown),
        other => {
            ToolError::new(ErrorCode::EditWriteFailed, format!("{shown}: {other}"), "Nothing was renamed into place.")
                .with("path", shown)
        }
    };
    // Lock and check every disk file first (path order: no deadlock between two renames).
    let mut locked = Vec::new();
    for file in planned.iter().filter(|f| f.buffer_version.is_none()) {
        let mut lock = LockedFile::open(&file.absolute, max_bytes).map_err(|e| write_error(e, &file.relative))?;
        let now = lock.read_text(max_bytes).map_err(|e| write_error(e, &file.relative))?;
        if now != file.old {
            return Err(ToolError::new(
                ErrorCode::EditStale,
                format!("{} changed while the rename was computed", file.relative),
                "Run rename_symbol again; nothing was changed.",
            )
            .with("path", file.relative.as_str()));
        }
        locked.push((file, lock));
    }
    for file in planned.iter().filter(|f| f.buffer_version.is_some()) {
        if engine.documents().get(&file.absolute).map(|d| d.version) != file.buffer_version {
            return Err(ToolError::new(
                ErrorCode::EditBufferChanged,
                format!("the open buffer of {} changed during the rename", file.relative),
                "Run rename_symbol again; nothing was changed.",
            ));
        }
    }
    let mut staged = Vec::new();
    for (file, lock) in &locked {
        staged.push(lock.stage(file.new.as_bytes()).map_err(|e| write_error(e, &file.relative))?);
    }
    // Open documents go through the editor when one is attached — before any disk file is
    // renamed into place, so a refusal leaves everything as it was (the staged files are
    // dropped).
    let buffers: Vec<&Planned> = planned.iter().filter(|f| f.buffer_version.is_some()).collect();
    let editor = engine.editor().filter(|_| !buffers.is_empty());
    if let Some(editor) = editor {
        let edits: Vec<BufferEdit> = buffers
            .iter()
            .map(|f| BufferEdit {
                path: f.absolute.clone(),
                version: f.buffer_version.unwrap_or_default(),
                old_text: Rope::from_str(&f.old),
                new_text: f.new.clone(),
            })
            .collect();
        let shown = buffers.iter().map(|f| f.relative.as_str()).collect::<Vec<_>>().join(", ");
        match editor
            .apply("filepuff: rename", &edits)
            .map_err(|message| super::edit::editor_unavailable(&shown, message))?
        {
            EditorAnswer::Applied => {}
            EditorAnswer::Refused { reason } => {
                return Err(ToolError::new(
                    ErrorCode::EditEditorUnavailable,
                    format!(
                        "the editor did not apply the rename to {shown}: {}",
                        reason.unwrap_or_else(|| "no reason given".to_owned())
                    ),
                    "Nothing was renamed. Retry, or save and close those files in the editor.",
                ));
            }
        }
    }
    for ((file, lock), temp) in locked.iter().zip(staged) {
        lock.commit(temp).map_err(|e| write_error(e, &file.relative))?;
    }
    drop(locked);
    for (file, out) in planned.iter().zip(files.iter_mut()) {
        match file.buffer_version {
            Some(_) if editor.is_some() => out.written_to = Some("editor".to_owned()),
            Some(version) => {
                engine.documents().replace_if_version(&file.absolute, version, &file.new).map_err(|_| {
                    ToolError::new(
                        ErrorCode::EditBufferChanged,
                        format!("the open buffer of {} changed during the rename", file.relative),
                        "Run rename_symbol again.",
                    )
                })?;
                out.written_to = Some("buffer".to_owned());
            }
            None => {
                out.written_to = Some("disk".to_owned());
                if let Some(language) = Language::from_path(&file.absolute) {
                    engine.backends().file_changed(&file.absolute, language, &Rope::from_str(&file.new));
                }
            }
        }
    }
    Ok(())
}

/// Readable text: the files, then the diff.
pub fn render_text(output: &RenameSymbolOutput) -> String {
    let mut out = String::new();
    let state = if output.applied { "applied" } else { "preview (not written; pass apply=true)" };
    out.push_str(&format!("rename: {} edit(s) in {} file(s), {state}\n", output.total_edits, output.files.len()));
    for file in &output.files {
        out.push_str(&format!("  {} ({})\n", file.file, file.edits));
    }
    out.push_str(&output.diff);
    out
}
