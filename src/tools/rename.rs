//! `rename_symbol`: the language server's `textDocument/rename` as a previewed, validated,
//! all-files-or-none edit (beyond the seed; the `lsp` toolset).
//!
//! The server's `WorkspaceEdit` (`changes` or `documentChanges` with text edits) is converted
//! from the server's encoding to byte ranges of each file's current text. One that also
//! creates, renames or deletes files is played in order and landed on disk as a whole
//! (`super::file_operations`, `Engine::commit_disk_changes`). With `apply: false` (the default) the result is a
//! unified diff. With `apply: true`, the byte edits land through [`Engine::commit`], as every
//! edit tool's do: documents open in the editor through one `workspace/applyEdit` (undoable
//! there; `[lsp] save_agent_edits` honoured), other open buffers in the store, files on disk
//! locked, checked unchanged and replaced atomically — all files or none. A refusal by the
//! editor is `applied: false` with `editor_refused`, as for `edit_apply`.

use std::collections::BTreeMap;

use lsp_types::request::Rename;
use lsp_types::{DocumentChanges, OneOf, RenameParams, TextEdit, Url, WorkspaceEdit};
use ropey::Rope;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::edit_diagnostics::{self, EditDiagnostics};
use super::lsp::{AnswerInfo, PositionParams, Target, request_timeout};
use super::{ErrorCode, ToolError, error::read_error};
use crate::documents::position::{self, Encoding};
use crate::documents::{self, ByteEdit, Language};
use crate::engine::{Approval, Base, CommitOutcome, Engine, FileEdit};
use crate::workspace::DocumentId;

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
    /// With `apply`: have the person confirm the rename in their editor first (one edit with a
    /// change annotation that needs confirmation, LSP 3.16, every file included); the result's
    /// `confirmation` says `accepted` or `declined`. Needs an attached editor that supports
    /// change annotations. Default false.
    #[serde(default)]
    pub confirm: bool,
    /// With `apply`: ask the language server for the diagnostics of the renamed files (the
    /// first 10 in path order) before and after, as `edit_apply` does (default true when the
    /// language has an installed server; false never asks).
    #[serde(default)]
    pub diagnostics: Option<bool>,
}

/// Result of `rename_symbol`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RenameSymbolOutput {
    /// Every file the rename touches, in path order, with its number of edits.
    pub files: Vec<RenamedFile>,
    pub total_edits: usize,
    /// Unified diff of every file (3 lines of context), bounded by `[limits] max_output_chars`:
    /// lines over 2000 characters are cut with a marker, and past the budget a last line says how
    /// many lines were left out (the rename itself is whole).
    pub diff: String,
    pub applied: bool,
    /// Why the editor did not apply the rename, when some of the files are open in an editor
    /// behind `filepuff lsp` and it answered `applied: false` (then `applied` is false and no
    /// file changed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub editor_refused: Option<String>,
    /// With `confirm`: `accepted` or `declined`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confirmation: Option<String>,
    /// The files the server's edit creates, renames or deletes, in its order (`create a.go`,
    /// `rename a.go -> b.go`, `delete a.go`; `(skipped: …)` when an option made one a no-op).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub operations: Vec<String>,
    /// After an applied rename: introduced, pre-existing and resolved diagnostics of the renamed
    /// files, with `status` `complete`, `timed_out` or `unavailable` (see `edit_apply`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diagnostics: Option<EditDiagnostics>,
    #[serde(flatten)]
    pub answer: AnswerInfo,
}

/// One file of a rename.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RenamedFile {
    pub file: String,
    pub edits: usize,
    /// Where it landed once applied: `editor`, `editor+disk`, `buffer` or `disk` (as
    /// `edit_apply`'s `written_to`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub written_to: Option<String>,
    /// Content hash after the rename.
    pub new_hash: String,
}

/// A file's planned new text.
struct Planned {
    id: DocumentId,
    relative: String,
    old: String,
    new: String,
    /// The byte edits of `old` that make `new`.
    byte_edits: Vec<ByteEdit>,
    edits: usize,
    buffer_version: Option<i32>,
    /// The buffer's text when it is open.
    buffer_text: Option<Rope>,
}

/// Runs `rename_symbol`.
///
/// Errors: as `find_definition` (4001–4007, path and read errors); 4006 when the server refuses
/// the rename (not a renameable symbol, an invalid name); 1001 when the server's edit reaches
/// outside the workspace; 5010 when a file changed between the server's answer and the write;
/// 5013 when an open buffer did; 5014 when the editor holds a file but cannot take edits; 5015
/// when a file is read-only; 5012 when a write fails (nothing was renamed into place). A refusal
/// by the editor is not an error: `applied: false` with `editor_refused`.
pub fn rename_symbol(engine: &Engine, params: RenameSymbolParams) -> Result<RenameSymbolOutput, ToolError> {
    let target = Target::resolve(engine, &params.position)?;
    let old_name = target.identifier();
    let timeout = request_timeout(engine);
    let new_name = params.new_name.clone();
    let (edit, answer, encoding) =
        target.ask(engine, "textDocument/rename", crate::backends::Needs::Index, move |client, position| {
            let params = RenameParams {
                text_document_position: position,
                new_name: new_name.clone(),
                work_done_progress_params: client.work_done(),
            };
            async move { client.request::<Rename>(params, timeout).await }
        })?;
    if let Some(edit) = edit.as_ref().filter(|e| super::file_operations::has_operations(e)) {
        return with_file_operations(engine, &params, edit.clone(), encoding, answer);
    }
    let edits = edit.map(text_edits).unwrap_or_default();
    let mut planned = Vec::new();
    for (uri, edits) in edits {
        planned.push(plan_file(engine, &uri, &edits, encoding)?);
    }
    // One output budget for the diffs of all files: the rename itself is never cut.
    let mut bounded = super::diff::BoundedDiff::new(
        engine.workspace().config().limits.max_output_chars,
        super::diff::DIFF_LINE_CHARS,
    );
    for file in &planned {
        bounded.add(&file.old, &file.new, &file.relative);
    }
    let diff = bounded.finish().text;
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
    let mut applied = false;
    let mut editor_refused = None;
    let mut confirmation = None;
    let mut diagnostics = None;
    if params.apply && !planned.is_empty() {
        // Diagnostics of the texts the rename was computed on, then (below) of the renamed ones.
        let language = target.language();
        let mut watched: Vec<edit_diagnostics::File> =
            if edit_diagnostics::wanted(engine, Some(language), params.diagnostics) {
                planned
                    .iter()
                    .take(edit_diagnostics::MAX_FILES)
                    .map(|file| edit_diagnostics::File {
                        id: file.id.clone(),
                        shown: file.relative.clone(),
                        language: Language::from_path(file.id.path()).unwrap_or(language),
                    })
                    .collect()
            } else {
                Vec::new()
            };
        let gates = edit_diagnostics::gates(watched.iter().map(|file| &file.id));
        let skipped = !watched.is_empty() && gates.is_none();
        if skipped {
            watched.clear();
        }
        let started = std::time::Instant::now();
        let before: Vec<edit_diagnostics::Snapshot> = watched
            .iter()
            .zip(&planned)
            .map(|(file, planned)| edit_diagnostics::snapshot(engine, file, &Rope::from_str(&planned.old)))
            .collect();
        // The person's decision on a confirmed rename is not part of the time spent asking.
        let asked_before = started.elapsed();
        let new_texts: Vec<String> = planned.iter().take(watched.len()).map(|file| file.new.clone()).collect();
        let commit: Vec<FileEdit> = planned
            .into_iter()
            .map(|file| FileEdit {
                id: file.id,
                shown: file.relative,
                base: match (file.buffer_version, file.buffer_text) {
                    (Some(version), Some(text)) => Base::Buffer { version, text },
                    _ => Base::Disk { text: file.old },
                },
                edits: file.byte_edits,
            })
            .collect();
        let approval = if params.confirm { Approval::Confirm } else { Approval::Direct };
        match engine.commit("filepuff: rename", commit, approval).map_err(super::edit::commit_error)? {
            CommitOutcome::Applied(landings) => {
                applied = true;
                confirmation = params.confirm.then(|| "accepted".to_owned());
                for (file, landing) in files.iter_mut().zip(landings) {
                    file.written_to = Some(landing.name().to_owned());
                }
                if skipped {
                    diagnostics = Some(edit_diagnostics::skipped());
                }
                if !watched.is_empty() {
                    let started = std::time::Instant::now();
                    // An open document holds what the editor applied (read by `snapshots_after`).
                    let renamed: Vec<(edit_diagnostics::File, Rope)> =
                        watched.iter().cloned().zip(new_texts.iter().map(|new| Rope::from_str(new))).collect();
                    let after = edit_diagnostics::snapshots_after(
                        engine,
                        &renamed,
                        &before,
                        Some((&old_name, &params.new_name)),
                    );
                    let pairs = before.into_iter().zip(after).collect();
                    diagnostics = Some(edit_diagnostics::compare(
                        engine,
                        pairs,
                        watched.len(),
                        asked_before + started.elapsed(),
                        Some((&old_name, &params.new_name)),
                    ));
                }
            }
            CommitOutcome::Refused { reason } => {
                editor_refused = Some(reason);
                confirmation = params.confirm.then(|| "declined".to_owned());
            }
        }
    }
    Ok(RenameSymbolOutput {
        files,
        total_edits,
        diff,
        applied,
        editor_refused,
        confirmation,
        operations: Vec::new(),
        diagnostics,
        answer,
    })
}

/// `rename_symbol` for an edit with resource operations ([`super::file_operations`]): played in
/// order, previewed as a diff of every file (a created file from empty, a removed one to
/// empty), and with `apply` landed on disk through [`Engine::commit_disk_changes`]. Files open
/// in the editor are refused, as is `confirm` (the person's confirmation goes through the
/// editor); diagnostics are not compared.
fn with_file_operations(
    engine: &Engine,
    params: &RenameSymbolParams,
    edit: WorkspaceEdit,
    encoding: Encoding,
    answer: AnswerInfo,
) -> Result<RenameSymbolOutput, ToolError> {
    let played = super::file_operations::play(engine, edit, encoding)?;
    let mut bounded = super::diff::BoundedDiff::new(
        engine.workspace().config().limits.max_output_chars,
        super::diff::DIFF_LINE_CHARS,
    );
    let changed: Vec<&super::file_operations::Touched> = played.files.iter().filter(|f| f.before != f.after).collect();
    for file in &changed {
        bounded.add(file.before.as_deref().unwrap_or(""), file.after.as_deref().unwrap_or(""), &file.shown);
    }
    let mut files: Vec<RenamedFile> = changed
        .iter()
        .map(|f| RenamedFile {
            file: f.shown.clone(),
            edits: f.edits,
            written_to: None,
            new_hash: documents::content_hash(f.after.as_deref().unwrap_or("").as_bytes()),
        })
        .collect();
    let mut applied = false;
    if params.apply {
        if params.confirm {
            return Err(ToolError::new(
                ErrorCode::EditEditorUnavailable,
                "confirm: true is not available for a rename that also creates, renames or deletes files",
                "Nothing changed. Leave out confirm to apply it directly, or make the rename in the editor.",
            ));
        }
        let landings = engine.commit_disk_changes(&played.disk_changes()).map_err(super::edit::commit_error)?;
        for (file, landing) in files.iter_mut().zip(landings) {
            file.written_to = Some(landing.name().to_owned());
        }
        applied = true;
    }
    Ok(RenameSymbolOutput {
        total_edits: files.iter().map(|f| f.edits).sum(),
        files,
        diff: bounded.finish().text,
        applied,
        editor_refused: None,
        confirmation: None,
        operations: played.operations,
        diagnostics: None,
        answer,
    })
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
    let id = resolved.id();
    let source = engine
        .documents()
        .text(&id, workspace.config().limits.max_file_bytes)
        .map_err(|err| read_error(err, &resolved.relative))?;
    let buffer_version = match source.origin {
        documents::Origin::Buffer { version } => Some(version),
        documents::Origin::Disk { .. } => None,
    };
    let rope: &Rope = &source.text;
    let old = rope.to_string();
    let byte_edits = byte_edits(rope, edits, encoding);
    // Overlapping edits are a server bug.
    let new = documents::apply_edits(rope, &byte_edits).map_err(|reason| {
        ToolError::new(
            ErrorCode::LspServerError,
            format!("the server's rename does not fit {}: {reason}", resolved.relative),
            "Report it to the server's maintainers; nothing was changed.",
        )
    })?;
    Ok(Planned {
        id,
        relative: resolved.relative,
        old,
        new,
        byte_edits,
        edits: edits.len(),
        buffer_version,
        buffer_text: buffer_version.map(|_| source.text.clone()),
    })
}

/// Readable text: the files, then the diff.
pub fn render_text(output: &RenameSymbolOutput) -> String {
    let mut out = String::new();
    let state = match (&output.editor_refused, output.applied) {
        (Some(reason), _) => format!("NOT applied: the editor refused the rename ({reason})"),
        (None, true) => "applied".to_owned(),
        (None, false) => "preview (not written; apply it with apply: true, or --apply in the CLI)".to_owned(),
    };
    out.push_str(&format!("rename: {} edit(s) in {} file(s), {state}\n", output.total_edits, output.files.len()));
    for file in &output.files {
        out.push_str(&format!("  {} ({})\n", file.file, file.edits));
    }
    for operation in &output.operations {
        out.push_str(&format!("  {operation}\n"));
    }
    if let Some(diagnostics) = &output.diagnostics {
        edit_diagnostics::render(&mut out, diagnostics);
    }
    out.push_str(&output.diff);
    out
}

/// A server's `TextEdit`s of `rope` (positions in `encoding`) as byte edits; a range whose end
/// comes before its start is empty at its start.
pub(super) fn byte_edits(rope: &Rope, edits: &[TextEdit], encoding: Encoding) -> Vec<ByteEdit> {
    let convert = |p: lsp_types::Position| {
        position::position_to_offset(rope, position::Position { line: p.line, character: p.character }, encoding).0
    };
    edits
        .iter()
        .map(|edit| {
            let (start, end) = (convert(edit.range.start), convert(edit.range.end));
            ByteEdit { range: start..end.max(start), text: edit.new_text.clone() }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::fake_lsp::{FakeServer, Reply, Script};
    use crate::workspace::Workspace;
    use serde_json::{Value, json};
    use std::sync::Arc;
    use std::time::Duration;

    /// A rename across two files, with a server that diagnoses each file as its change arrives
    /// (as gopls does): the caller `a.go` is diagnosed `undefined: Salute` before the server has
    /// `b.go`'s change that renames the function, then again, corrected, once it has. The
    /// rename reports the corrected list: nothing introduced. Taken at the first publish for
    /// the new version, it reported the stale error as introduced.
    #[test]
    fn a_rename_across_files_reports_the_lists_of_a_quiet_moment() {
        let script = Script::new(json!({"renameProvider": true})).on("textDocument/rename", |_, params| {
            let b = params["textDocument"]["uri"].as_str().unwrap().to_owned();
            let a = b.replace("/b.go", "/a.go");
            let range = |line: u32, start: u32| {
                json!({"start": {"line": line, "character": start}, "end": {"line": line, "character": start + 5}})
            };
            Reply::Result(json!({"changes": {
                a: [{"range": range(2, 14), "newText": "Salute"}],
                b: [{"range": range(2, 5), "newText": "Salute"}],
            }}))
        });
        let fake = FakeServer::register(script);
        let dir = fake.go_workspace(&[
            ("a.go", "package main\n\nfunc main() { Hello() }\n"),
            ("b.go", "package main\n\nfunc Hello() {}\n"),
        ]);
        let engine = Arc::new(Engine::new(Workspace::open(dir.path()).unwrap()));
        let uri = |name: &str| engine.workspace().resolve(name).unwrap().id().uri().to_string();
        let (a, b) = (uri("a.go"), uri("b.go"));
        let renaming = {
            let engine = engine.clone();
            std::thread::spawn(move || {
                let position =
                    PositionParams { file: "b.go".to_owned(), line: 3, column: Some(6), symbol: Some("Hello".into()) };
                let params = RenameSymbolParams {
                    position,
                    new_name: "Salute".to_owned(),
                    apply: true,
                    confirm: false,
                    diagnostics: Some(true),
                };
                rename_symbol(&engine, params)
            })
        };
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            let server = fake.instance(0).await;
            let version_of = |uri: &str, above: i64| {
                let uri = uri.to_owned();
                move |log: &crate::tests::fake_lsp::Log| {
                    log.documents.get(&uri).map(|d| d.version).filter(|version| *version > above)
                }
            };
            let publish = |uri: &str, version: i64, diagnostics: Value| {
                server.notify(
                    "textDocument/publishDiagnostics",
                    json!({"uri": uri, "version": version, "diagnostics": diagnostics}),
                );
            };
            // Before the rename: both files clean.
            for uri in [&a, &b] {
                let version = server.wait_for("the file before the rename", version_of(uri, 0)).await;
                publish(uri, version, json!([]));
            }
            let a_after = server.wait_for("a.go renamed", version_of(&a, 1)).await;
            let undefined = json!([{
                "range": {"start": {"line": 2, "character": 14}, "end": {"line": 2, "character": 20}},
                "severity": 1, "source": "compiler", "message": "undefined: Salute"
            }]);
            publish(&a, a_after, undefined);
            let b_after = server.wait_for("b.go renamed", version_of(&b, 1)).await;
            publish(&b, b_after, json!([]));
            tokio::time::sleep(Duration::from_millis(100)).await;
            publish(&a, a_after, json!([]));
        });
        let output = renaming.join().unwrap().unwrap();
        assert!(output.applied, "{output:?}");
        let diagnostics = output.diagnostics.unwrap();
        assert_eq!((diagnostics.status.as_str(), diagnostics.files_checked), ("complete", 2), "{diagnostics:?}");
        assert!(diagnostics.introduced.is_empty(), "{diagnostics:?}");
        engine.backends().stop_all();
    }
}
