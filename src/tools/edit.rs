//! `edit_preview` and `edit_apply` (seed: filepuff API reference, "Edit Operations"), plus the
//! stale-edit guard `expected_hash`.
//!
//! The edit is computed by [`crate::edits::plan`] on the text [`Engine::edit_base`] gives (the
//! open buffer, else the disk under a lock) and lands through [`Engine::commit`], which decides
//! where: the editor (`workspace/applyEdit`), the open buffer, or an atomic disk write.

use ropey::Rope;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::edit_diagnostics::{self, EditDiagnostics};
use super::{ErrorCode, ToolError, error::read_error};
use crate::documents::{self, ByteEdit, Language};
use crate::edits::write::WriteError;
use crate::edits::{self, CandidateSummary, EditError, Operation, PlannedEdit, Selector, SyntaxErrorSummary};
use crate::engine::{Approval, CommitError, CommitOutcome, Engine, FileEdit, Landing};

// Named as the seed names them, plus `expected_hash`.
/// Parameters of `edit_preview` and `edit_apply`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct EditParams {
    /// Path to the file to edit (relative to the workspace root, absolute inside it, or file://).
    pub file: String,
    /// replace, insert_before, insert_after or delete.
    pub operation: Operation,
    /// The new text, verbatim (no unescaping). Required for replace and insert_*; its line breaks
    /// are written in the file's style. AST insertions and replacements are re-indented to the
    /// target's indentation.
    pub new_content: Option<String>,
    /// AST node kind (tree-sitter) of the declaration, e.g. function_declaration,
    /// class_definition; a Python method is a function_definition, a TS/JS method a
    /// method_definition, a Go method a method_declaration. Code files only.
    pub selector_kind: Option<String>,
    /// Declared name of the target: function, method, class, type, key; by its own name (`m`)
    /// or qualified by its class, receiver, namespace or impl type (`A.m`, `Server.Hello`,
    /// `ns::T::f`). Code files only.
    pub selector_name: Option<String>,
    /// 1-based line. AST mode: the target starts on (else contains) this line. Text mode: first
    /// line of the range (alone: the whole line; with selector_text/pattern: matches on it).
    pub selector_line: Option<usize>,
    /// 0-based index of the match to use when the selector matches several; without it,
    /// several matches are an error listing them.
    pub selector_index: Option<usize>,
    /// Last line (1-based, inclusive) of a line range; with selector_line.
    pub selector_line_end: Option<usize>,
    /// Exact text to match (text mode).
    pub selector_text: Option<String>,
    /// Regex to match (text mode; Rust regex syntax, `^`/`$` match at line boundaries).
    pub selector_pattern: Option<String>,
    /// Refuse the edit unless the file's current content hash is this (`sha256:…`, from
    /// file_read or an earlier preview).
    pub expected_hash: Option<String>,
    /// edit_apply: have the person confirm the edit in their editor first (the edit goes to the
    /// editor behind `filepuff lsp` with a change annotation that needs confirmation, LSP 3.16);
    /// the result's `confirmation` says `accepted` or `declined`. Needs an attached editor that
    /// supports change annotations; otherwise an error, never an unconfirmed edit. Default false.
    pub confirm: Option<bool>,
    /// edit_apply: ask the file's language server for diagnostics of the text before and after
    /// the edit and split them into introduced, pre-existing and resolved (default true for a
    /// file whose language has an installed server: the server is started if needed, each wait
    /// bounded by `[lsp] edit_diagnostics_timeout_ms`; false never asks).
    pub diagnostics: Option<bool>,
}

/// Result of `edit_preview` and `edit_apply`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct EditOutput {
    /// Path relative to the workspace root.
    pub file: String,
    pub operation: String,
    /// How the selector worked: ast, text or lines.
    pub mode: String,
    /// Whether the edit was written (always false for a preview, and when nothing changed).
    pub applied: bool,
    /// Whether the new content differs from the old.
    pub changed: bool,
    /// The span the selector chose.
    pub target: EditTarget,
    /// Unified diff of the change (3 lines of context), bounded by `[limits] max_output_chars`:
    /// lines over 2000 characters are cut with a marker saying how many characters were left
    /// out, and past the budget a last line says how many lines were (the edit is whole).
    pub diff: String,
    /// Whether the diff was cut (see `diff`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub diff_truncated: bool,
    /// Content hash before the edit (`sha256:…`).
    pub old_hash: String,
    /// Content hash after the edit (the would-be hash for a preview).
    pub new_hash: String,
    /// Where an applied edit went: `disk`; `editor` (a document open in the editor behind
    /// `filepuff lsp`, changed through `workspace/applyEdit`; `editor+disk` when
    /// `[lsp] save_agent_edits` also saved it); `buffer` (an open document without an editor).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub written_to: Option<String>,
    /// The document's new version when an open buffer was edited.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buffer_version: Option<i32>,
    /// `passed` when a parser checked the new text, `not_checked` for files without a grammar.
    pub validation: String,
    /// Syntax errors the file already had (they do not block an edit).
    pub preexisting_syntax_errors: usize,
    pub lines_added: usize,
    pub lines_removed: usize,
    /// The language server's view after an applied edit (see the `diagnostics` parameter);
    /// its `status` says `complete`, `timed_out` or `unavailable`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diagnostics: Option<EditDiagnostics>,
    /// With `confirm`: `accepted` or `declined` (then `editor_refused` holds the editor's reason).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confirmation: Option<String>,
    /// Why the editor did not apply the edit, when the file is open in an editor behind
    /// `filepuff lsp` and it answered `applied: false` (then `applied` is false and nothing
    /// changed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub editor_refused: Option<String>,
}

/// Where an edit lands: 1-based lines of the chosen candidate.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct EditTarget {
    pub start_line: usize,
    pub end_line: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// How many candidates the selector matched.
    pub candidates: usize,
}

/// Runs `edit_preview`: the diff and would-be hash; nothing is written.
///
/// Errors: as [`edit_apply`], except that nothing is ever written.
pub fn edit_preview(engine: &Engine, params: EditParams) -> Result<EditOutput, ToolError> {
    run(engine, params, false)
}

/// Runs `edit_apply`.
///
/// Errors: path errors (1001–1005); 1101 not found, 1102 directory, 1103 binary, 1104 too
/// large; 1105 a selector line past the end; 3002 unknown selector_kind; 5001–5015 (see
/// `docs/ERROR_CODES.md`): no or conflicting selectors, missing content, no match, ambiguous
/// match, index out of range, new syntax errors, stale hash, invalid UTF-8, write failure, a
/// buffer that changed meanwhile, a read-only file. A refused edit writes nothing.
pub fn edit_apply(engine: &Engine, params: EditParams) -> Result<EditOutput, ToolError> {
    run(engine, params, true)
}

fn run(engine: &Engine, params: EditParams, apply: bool) -> Result<EditOutput, ToolError> {
    let workspace = engine.workspace();
    let resolved = workspace.resolve(&params.file)?;
    let id = resolved.id();
    let shown = resolved.relative.clone();
    let selector = Selector {
        kind: params.selector_kind.clone(),
        name: params.selector_name.clone(),
        line: params.selector_line,
        line_end: params.selector_line_end,
        index: params.selector_index,
        text: params.selector_text.clone(),
        pattern: params.selector_pattern.clone(),
    };

    let language = match engine.documents().get(&id) {
        Some(document) => Language::from_name(&document.language_id).or_else(|| Language::from_path(id.path())),
        None => Language::from_path(id.path()),
    };
    // Diagnostics before the edit, asked on the text as it is now, before the file's lock is
    // taken (a cold server's start is not spent holding it); the gate keeps this process's other
    // edits of the file out until the "after" answer.
    let wanted = language.filter(|&l| apply && edit_diagnostics::wanted(engine, Some(l), params.diagnostics));
    let gate = wanted.and_then(|_| edit_diagnostics::gates([&id]));
    let skipped = wanted.is_some() && gate.is_none();
    let diagnosed = wanted.filter(|_| gate.is_some());
    let started = std::time::Instant::now();
    let watched = diagnosed.map(|language| edit_diagnostics::File { id: id.clone(), shown: shown.clone(), language });
    let limits = workspace.config().limits.max_file_bytes;
    let mut before = match &watched {
        Some(file) => engine
            .documents()
            .text(&id, limits)
            .ok()
            .map(|source| (source.text.clone(), edit_diagnostics::snapshot(engine, file, &source.text))),
        None => None,
    };

    // The text the edit is computed on (the Engine decides: the open buffer, else the disk under
    // a lock held until the commit).
    let base = engine.edit_base(&id, &shown).map_err(commit_error)?;
    let rope = base.text();
    let source = rope.to_string();
    let old_hash = documents::content_hash(source.as_bytes());
    check_hash(&params, &old_hash, &shown)?;
    let parsed = language.and_then(|l| engine.syntax().parse(id.path(), l, &rope));
    let planned =
        edits::plan(&source, language, parsed.as_deref(), params.operation, params.new_content.as_deref(), &selector)
            .map_err(|err| edit_error(err, &shown))?;
    let budget = workspace.config().limits.max_output_chars;
    let mut output = output(&shown, &params, &source, &planned, old_hash, budget);
    if !(apply && output.changed) {
        return Ok(output);
    }
    // Another process changed the file between the two reads: ask again about the text edited.
    if let Some(file) = &watched
        && before.as_ref().is_none_or(|(text, _)| *text != rope)
    {
        before = Some((rope.clone(), edit_diagnostics::snapshot(engine, file, &rope)));
    }
    let edit = FileEdit {
        id: id.clone(),
        shown: shown.clone(),
        base,
        edits: vec![ByteEdit { range: planned.edit.range.clone(), text: planned.edit.new_text.clone() }],
    };
    let label = format!("filepuff: {} in {shown}", output.operation);
    let confirm = params.confirm.unwrap_or(false);
    let approval = if confirm { Approval::Confirm } else { Approval::Direct };
    // What asking took so far: the person's decision on a confirmed edit is not part of it.
    let asked_before = started.elapsed();
    match engine.commit(&label, vec![edit], approval).map_err(commit_error)? {
        CommitOutcome::Refused { reason } => {
            output.editor_refused = Some(reason);
            output.confirmation = confirm.then(|| "declined".to_owned());
        }
        CommitOutcome::Applied(landings) => {
            output.confirmation = confirm.then(|| "accepted".to_owned());
            let landing = landings.into_iter().next().unwrap_or(Landing::Disk);
            output.applied = true;
            output.written_to = Some(landing.name().to_owned());
            output.buffer_version = landing.version();
            if let Some(tree) = planned.new_tree {
                engine.syntax().insert(id.path(), tree);
            }
            if skipped {
                output.diagnostics = Some(edit_diagnostics::skipped());
            }
            if let (Some(file), Some((_, before))) = (&watched, before) {
                // An open document holds what the editor applied; a file on disk the new text.
                let started = std::time::Instant::now();
                let after_text = match engine.documents().get(&id) {
                    Some(document) => document.text,
                    None => Rope::from_str(&planned.new_text),
                };
                let after = edit_diagnostics::snapshot(engine, file, &after_text);
                output.diagnostics = Some(edit_diagnostics::compare(
                    engine,
                    vec![(before, after)],
                    1,
                    asked_before + started.elapsed(),
                    None,
                ));
            }
        }
    }
    Ok(output)
}

/// The tool error for a commit that was not made (nothing changed).
pub(crate) fn commit_error(err: CommitError) -> ToolError {
    match err {
        CommitError::Stale { shown } => ToolError::new(
            ErrorCode::EditStale,
            format!("{shown} changed on disk while the edit was computed"),
            "Run the tool again; it will be computed on the file's new text. Nothing was changed.",
        )
        .with("path", shown),
        CommitError::BufferChanged { shown, expected, current } => ToolError::new(
            ErrorCode::EditBufferChanged,
            format!("the open buffer of {shown} changed while the edit was computed"),
            "Retry the edit; it will be computed on the buffer's new text. Nothing was changed.",
        )
        .with("path", shown)
        .with("expected_version", expected)
        .with("current_version", current),
        CommitError::InvalidEdit { shown, reason } => {
            ToolError::internal(format!("an edit of {shown} did not fit its text: {reason}")).with("path", shown)
        }
        CommitError::EditorUnavailable { shown, message } => editor_unavailable(&shown, message),
        CommitError::NoEditorToConfirm { shown } => ToolError::new(
            ErrorCode::EditEditorUnavailable,
            format!("confirm: true asks the person in their editor, and no editor is attached (editing {shown})"),
            "Nothing changed. Run `filepuff mcp` without --standalone while the person's editor runs `filepuff lsp` \
             on this workspace, or leave out confirm to apply the edit directly.",
        )
        .with("path", shown),
        CommitError::Write { shown, source } => write_error(source, &shown),
    }
}

/// The tool error for an editor that cannot take an edit.
pub(crate) fn editor_unavailable(shown: &str, message: String) -> ToolError {
    ToolError::new(
        ErrorCode::EditEditorUnavailable,
        format!("{shown} is open in the editor, which cannot take the edit: {message}"),
        "Nothing changed. Retry, or save and close the file in the editor first.",
    )
    .with("path", shown)
}

fn check_hash(params: &EditParams, current: &str, shown: &str) -> Result<(), ToolError> {
    match &params.expected_hash {
        Some(expected) if !expected.trim().eq_ignore_ascii_case(current) => Err(ToolError::new(
            ErrorCode::EditStale,
            format!("{shown} changed since expected_hash was taken"),
            "Read the file again (file_read returns content_hash), check that the edit still applies, and retry with the current hash.",
        )
        .with("path", shown)
        .with("expected_hash", expected.as_str())
        .with("current_hash", current)),
        _ => Ok(()),
    }
}

fn output(
    shown: &str,
    params: &EditParams,
    source: &str,
    planned: &PlannedEdit,
    old_hash: String,
    budget: usize,
) -> EditOutput {
    let diff = similar::TextDiff::from_lines(source, planned.new_text.as_str());
    let (mut added, mut removed) = (0, 0);
    for change in diff.iter_all_changes() {
        match change.tag() {
            similar::ChangeTag::Insert => added += 1,
            similar::ChangeTag::Delete => removed += 1,
            similar::ChangeTag::Equal => {}
        }
    }
    let mut bounded = super::diff::BoundedDiff::new(budget, super::diff::DIFF_LINE_CHARS);
    bounded.add_diff(&diff, shown);
    let unified = bounded.finish();
    let changed = planned.new_text != source;
    EditOutput {
        file: shown.to_owned(),
        operation: params.operation.name().to_owned(),
        mode: planned.mode.name().to_owned(),
        applied: false,
        changed,
        target: EditTarget {
            start_line: planned.target.start_line,
            end_line: planned.target.end_line,
            kind: planned.target.kind.clone(),
            name: planned.target.name.clone(),
            candidates: planned.candidates,
        },
        diff: unified.text,
        diff_truncated: unified.truncated,
        new_hash: if changed { documents::content_hash(planned.new_text.as_bytes()) } else { old_hash.clone() },
        old_hash,
        written_to: None,
        buffer_version: None,
        validation: if planned.validated { "passed" } else { "not_checked" }.to_owned(),
        preexisting_syntax_errors: planned.preexisting_errors,
        lines_added: added,
        lines_removed: removed,
        diagnostics: None,
        confirmation: None,
        editor_refused: None,
    }
}

fn candidates_json(candidates: &[CandidateSummary]) -> serde_json::Value {
    serde_json::to_value(candidates).unwrap_or_default()
}

fn syntax_json(errors: &[SyntaxErrorSummary]) -> serde_json::Value {
    serde_json::to_value(errors).unwrap_or_default()
}

/// The candidates as lines of a message (the text an agent reads), at most 20.
fn list_candidates(candidates: &[CandidateSummary]) -> String {
    let mut out = String::new();
    for c in candidates.iter().take(20) {
        let what = match (&c.kind, &c.name) {
            (Some(kind), Some(name)) => format!(" {kind} {name}"),
            (Some(kind), None) => format!(" {kind}"),
            _ => String::new(),
        };
        out.push_str(&format!("\n  [{}] line {}-{}{what}: {}", c.index, c.start_line, c.end_line, c.excerpt));
    }
    if candidates.len() > 20 {
        out.push_str(&format!("\n  … and {} more", candidates.len() - 20));
    }
    out
}

fn edit_error(err: EditError, shown: &str) -> ToolError {
    let mut message = format!("{shown}: {err}");
    match &err {
        EditError::Ambiguous { candidates } | EditError::IndexOutOfRange { candidates, .. } => {
            message.push_str(&list_candidates(candidates));
        }
        EditError::Syntax { errors, .. } => {
            for e in errors.iter().take(5) {
                message.push_str(&format!("\n  line {}, column {}: {} near `{}`", e.line, e.column, e.kind, e.excerpt));
            }
        }
        _ => {}
    }
    match err {
        EditError::NoSelector => ToolError::new(
            ErrorCode::EditNoSelector,
            message,
            "Select the target: selector_name/selector_kind (code), selector_text, selector_pattern, or selector_line (+ selector_line_end).",
        ),
        EditError::SelectorConflict(detail) => ToolError::new(
            ErrorCode::EditSelectorConflict,
            message,
            "Use one selection mode: AST (selector_kind/selector_name, + selector_line), text (selector_text or selector_pattern, + lines), or a line range.",
        )
        .with("detail", detail),
        EditError::ContentMissing { operation } => ToolError::new(
            ErrorCode::EditContentMissing,
            message,
            "Pass new_content (the text to write; use delete to remove the target).",
        )
        .with("operation", operation),
        EditError::NotCode { language } => ToolError::new(
            ErrorCode::EditNotCode,
            message,
            "Use selector_text, selector_pattern or selector_line for this file.",
        )
        .with("language", language.unwrap_or("unknown")),
        EditError::UnknownKind { kind, language, suggestions } => ToolError::new(
            ErrorCode::ParseUnknownNodeKind,
            message,
            if suggestions.is_empty() {
                "Use a tree-sitter node kind of the file's language.".to_owned()
            } else {
                format!("Close node kinds: {}.", suggestions.join(", "))
            },
        )
        .with("kind", kind)
        .with("language", language)
        .with("suggestions", suggestions),
        EditError::InvalidRegex { pattern, message: detail } => ToolError::new(
            ErrorCode::EditSelectorRegexInvalid,
            message,
            "Fix selector_pattern (Rust regex syntax), or use selector_text for an exact match.",
        )
        .with("selector_pattern", pattern)
        .with("detail", detail),
        EditError::LinePastEnd { line, total } => ToolError::new(
            ErrorCode::LineRangePastEnd,
            message,
            format!("Lines are 1-based; this file has {total}."),
        )
        .with("line", line)
        .with("total_lines", total),
        EditError::NoMatch => ToolError::new(
            ErrorCode::EditNoMatch,
            message,
            "Check the selector against the current text (file_read; for names, file_read with include_ast lists the declarations).",
        ),
        EditError::Ambiguous { candidates } => ToolError::new(
            ErrorCode::EditAmbiguous,
            message,
            "Pick one with selector_index (0-based, from the candidates listed in context), give the candidate's qualified name as selector_name (`A.m`, `ns::T::f`), or narrow with selector_line / selector_kind.",
        )
        .with("candidates", candidates_json(&candidates)),
        EditError::IndexOutOfRange { index, candidates } => ToolError::new(
            ErrorCode::EditIndexOutOfRange,
            message,
            format!("selector_index is 0-based: use 0 to {}.", candidates.len().saturating_sub(1)),
        )
        .with("selector_index", index)
        .with("candidates", candidates_json(&candidates)),
        EditError::Syntax { errors, language } => ToolError::new(
            ErrorCode::EditSyntaxError,
            message,
            "Fix new_content so the file still parses (the positions are in the would-be new text); the file was not changed.",
        )
        .with("language", language)
        .with("errors", syntax_json(&errors)),
    }
}

fn write_error(err: WriteError, shown: &str) -> ToolError {
    match err {
        WriteError::Read(err) => read_error(err, shown),
        WriteError::NotUtf8 { offset, .. } => ToolError::new(
            ErrorCode::EditNotUtf8,
            format!("{shown} is not valid UTF-8 (first invalid byte at offset {offset})"),
            "filepuff edits UTF-8 text only; convert the file first.",
        )
        .with("path", shown)
        .with("offset", offset),
        WriteError::ReadOnly { mode, .. } => ToolError::new(
            ErrorCode::EditFileReadOnly,
            format!("{shown} is read-only (mode {mode:o}); it was not changed"),
            "Make the file writable (chmod u+w) if it is meant to be edited; read-only files are never replaced.",
        )
        .with("path", shown)
        .with("mode", format!("{mode:o}")),
        WriteError::Io { source, .. } => ToolError::new(
            ErrorCode::EditWriteFailed,
            format!("cannot write {shown}: {source}"),
            "Check the file's and its directory's permissions and free space; the file was left unchanged.",
        )
        .with("path", shown)
        .with("detail", source.to_string()),
    }
}

/// Readable text: what changed where, then the diff.
pub fn render_text(output: &EditOutput) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let what = match (output.applied, output.changed, &output.editor_refused) {
        (true, _, _) => format!("applied to {}", output.written_to.as_deref().unwrap_or("disk")),
        (false, _, Some(reason)) => format!("NOT applied: the editor refused the edit ({reason})"),
        (false, false, None) => "no change".to_owned(),
        (false, true, None) => "preview (not written)".to_owned(),
    };
    let target = match (&output.target.kind, &output.target.name) {
        (Some(kind), Some(name)) => format!("{kind} {name}, "),
        (Some(kind), None) => format!("{kind}, "),
        _ => String::new(),
    };
    let _ = writeln!(
        out,
        "{} {} ({} mode, {target}lines {}-{}): {what}; +{} -{} lines; syntax {}",
        output.operation,
        output.file,
        output.mode,
        output.target.start_line,
        output.target.end_line,
        output.lines_added,
        output.lines_removed,
        output.validation.replace('_', " ")
    );
    let _ = writeln!(out, "hash: {} -> {}", output.old_hash, output.new_hash);
    if let Some(diagnostics) = &output.diagnostics {
        edit_diagnostics::render(&mut out, diagnostics);
    }
    out.push_str(&output.diff);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::{AstQueryParams, ast_query};
    use crate::workspace::{DocumentId, Workspace};

    fn params(file: &str) -> EditParams {
        EditParams {
            file: file.to_owned(),
            operation: Operation::Replace,
            new_content: Some("func B() {}".to_owned()),
            selector_kind: None,
            selector_name: Some("A".to_owned()),
            selector_line: None,
            selector_index: None,
            selector_line_end: None,
            selector_text: None,
            selector_pattern: None,
            expected_hash: None,
            confirm: None,
            diagnostics: None,
        }
    }

    #[test]
    fn open_buffers_are_edited_in_the_store_not_on_disk() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.go"), "package a\n\nfunc A() {}\n").unwrap();
        let engine = Engine::new(Workspace::with_config(dir.path(), Default::default()).unwrap());
        let path = engine.workspace().resolve("a.go").unwrap().absolute;
        let unsaved = "package a\n\n// unsaved\nfunc A() {}\n";
        engine.documents().open(DocumentId::from_canonical(&path), unsaved, 7, "go".to_owned());

        // ast_query sees the unsaved text.
        let found = ast_query(
            &engine,
            AstQueryParams { pattern: "func $NAME() {}".into(), language: "go".into(), ..AstQueryParams::default() },
        )
        .unwrap();
        assert_eq!(found.matches[0].start_line, 4);
        assert_eq!(found.matches[0].buffer_version, Some(7));

        let stale = EditParams { expected_hash: Some(documents::content_hash(b"package a\n")), ..params("a.go") };
        assert_eq!(edit_apply(&engine, stale).unwrap_err().code, 5010);
        let preview = edit_preview(&engine, params("a.go")).unwrap();
        assert_eq!(preview.old_hash, documents::content_hash(unsaved.as_bytes()));
        let applied = edit_apply(&engine, params("a.go")).unwrap();
        assert_eq!((applied.written_to.as_deref(), applied.buffer_version), (Some("buffer"), Some(8)));
        assert_eq!(applied.new_hash, preview.new_hash);
        let document = engine.documents().get(&DocumentId::from_canonical(&path)).unwrap();
        assert_eq!(document.text.to_string(), "package a\n\n// unsaved\nfunc B() {}\n");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "package a\n\nfunc A() {}\n");
    }
}
