//! `editor_state` (toolset `core`): what the person has open and is looking at, for an agent
//! attached to their editor — the open documents (path, language, version, unsaved or not,
//! diagnostics counts) and the focused document with cursor, selection and visible range where
//! the editor reports them (`filepuff/editorFocus`, see [`crate::engine::editor_state`]). What
//! could not be known is named in `unknown`, never guessed. Also the content of the MCP
//! resource `filepuff://editor`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ToolError;
use crate::documents::Language;
use crate::documents::position::OneBased;
use crate::engine::{EditorFocus, Engine, editor_state::unsaved};
use crate::workspace::DocumentId;

/// Parameters of `editor_state`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct EditorStateParams {
    /// At most this many open documents are listed (default 100; the focused one first, then
    /// by path); `total_open_documents` counts them all.
    pub max_documents: Option<usize>,
}

/// Result of `editor_state`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct EditorStateOutput {
    /// Whether an editor serves this agent (it is attached to the editor's `filepuff lsp`).
    pub editor_attached: bool,
    /// The documents the editor has open (the focused one first, then by path).
    pub open_documents: Vec<OpenDocument>,
    pub total_open_documents: usize,
    /// What the person is looking at; absent when the editor did not say (see `unknown`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub focus: Option<FocusInfo>,
    /// Fields that could not be known, e.g. `focus` (the editor does not report it: a plain LSP
    /// editor), `focus.cursor`, `focus.visible_range`, `open_documents` (no editor).
    pub unknown: Vec<String>,
    /// Why something is unknown, for the agent to tell the person.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One open document.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct OpenDocument {
    /// Relative to the workspace root (absolute for a file outside it).
    pub path: String,
    /// The LSP language identifier the editor gave.
    pub language: String,
    /// The editor's version of the buffer (LSP document version).
    pub version: i32,
    /// Whether the buffer differs from the file on disk (true also for a file not on disk);
    /// null when the disk could not be read to compare.
    pub unsaved: Option<bool>,
    /// The diagnostics the language servers last published for it; null when none published.
    pub diagnostics: Option<DiagnosticCounts>,
}

/// Diagnostics counts by severity.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DiagnosticCounts {
    pub errors: usize,
    pub warnings: usize,
    pub information: usize,
    pub hints: usize,
}

/// What the person is looking at.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct FocusInfo {
    /// The focused file (as `open_documents` spells it); null when no file has the focus.
    pub path: Option<String>,
    /// The editor's version of the document the positions were reported for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<i32>,
    /// The cursor: 1-based line, 1-based column in characters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cursor: Option<TextPosition>,
    /// The primary selection (end exclusive); absent when nothing is selected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selection: Option<TextRange>,
    /// The part of the document on screen (end exclusive).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub visible_range: Option<TextRange>,
    /// Some reported positions were outside the text and were clamped to it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub clamped: bool,
}

/// A position: 1-based line, 1-based column in characters.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
pub struct TextPosition {
    pub line: u32,
    pub column: u32,
}

/// A range of positions (1-based lines, character columns; the end is exclusive).
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
pub struct TextRange {
    pub start: TextPosition,
    pub end: TextPosition,
}

const DEFAULT_MAX_DOCUMENTS: usize = 100;

fn text_position(at: OneBased) -> TextPosition {
    TextPosition { line: at.line, column: at.column }
}

fn span((start, end): (OneBased, OneBased)) -> TextRange {
    TextRange { start: text_position(start), end: text_position(end) }
}

/// Runs `editor_state`. Never fails: without an editor, the result says so (`editor_attached:
/// false`, everything in `unknown`).
pub fn editor_state(engine: &Engine, params: EditorStateParams) -> Result<EditorStateOutput, ToolError> {
    let workspace = engine.workspace();
    let shown = |id: &DocumentId| workspace.relative(id).unwrap_or_else(|| id.path().display().to_string());
    if engine.editor().is_none() {
        return Ok(EditorStateOutput {
            editor_attached: false,
            open_documents: Vec::new(),
            total_open_documents: 0,
            focus: None,
            unknown: vec!["open_documents".to_owned(), "focus".to_owned()],
            note: Some(
                "no editor serves this agent: run it with `filepuff mcp` for the workspace an editor has open \
                 with filepuff (it attaches to the editor's session)"
                    .to_owned(),
            ),
        });
    }
    let focus = engine.editor_focus();
    let focused = match &focus {
        EditorFocus::Document(focus) => Some(focus.id.clone()),
        _ => None,
    };
    let mut ids = engine.documents().open_ids();
    // The focused document first, then by path.
    ids.sort_by_key(|id| (Some(id) != focused.as_ref(), id.clone()));
    let total = ids.len();
    let max_bytes = workspace.config().limits.max_file_bytes;
    let open_documents: Vec<OpenDocument> = ids
        .iter()
        .take(params.max_documents.unwrap_or(DEFAULT_MAX_DOCUMENTS))
        .filter_map(|id| {
            let document = engine.documents().get(id)?;
            let language = Language::from_name(&document.language_id).or_else(|| Language::from_path(id.path()));
            let disk = crate::documents::load_from_disk(id.path(), max_bytes, Some(workspace.root()));
            Some(OpenDocument {
                path: shown(id),
                language: document.language_id.clone(),
                version: document.version,
                unsaved: unsaved(&document.text, disk),
                diagnostics: engine.backends().published_counts(id, language).map(|c| DiagnosticCounts {
                    errors: c.errors,
                    warnings: c.warnings,
                    information: c.information,
                    hints: c.hints,
                }),
            })
        })
        .collect();
    let mut unknown = Vec::new();
    let mut note = None;
    let focus = match focus {
        EditorFocus::Unreported => {
            unknown.push("focus".to_owned());
            note = Some(
                "the editor does not report what the person is looking at (a plain LSP editor; the filepuff \
                 VS Code extension and Neovim plugin do): only its open documents are known"
                    .to_owned(),
            );
            None
        }
        EditorFocus::NoDocument => Some(FocusInfo {
            path: None,
            version: None,
            cursor: None,
            selection: None,
            visible_range: None,
            clamped: false,
        }),
        EditorFocus::Document(focus) => {
            if focus.cursor.is_none() {
                unknown.push("focus.cursor".to_owned());
            }
            if focus.visible_range.is_none() {
                unknown.push("focus.visible_range".to_owned());
            }
            Some(FocusInfo {
                path: Some(shown(&focus.id)),
                version: focus.version,
                cursor: focus.cursor.map(text_position),
                selection: focus.selection.map(span),
                visible_range: focus.visible_range.map(span),
                clamped: focus.clamped,
            })
        }
    };
    Ok(EditorStateOutput { editor_attached: true, open_documents, total_open_documents: total, focus, unknown, note })
}

/// Readable text of `editor_state`.
pub fn render_text(output: &EditorStateOutput) -> String {
    let mut text = String::new();
    if !output.editor_attached {
        text.push_str("no editor attached\n");
    }
    if let Some(focus) = &output.focus {
        match &focus.path {
            None => text.push_str("focus: no file\n"),
            Some(path) => {
                text.push_str(&format!("focus: {path}"));
                if let Some(cursor) = focus.cursor {
                    text.push_str(&format!(":{}:{}", cursor.line, cursor.column));
                }
                text.push('\n');
                if let Some(selection) = focus.selection {
                    text.push_str(&format!(
                        "  selection {}:{}-{}:{}\n",
                        selection.start.line, selection.start.column, selection.end.line, selection.end.column
                    ));
                }
                if let Some(visible) = focus.visible_range {
                    text.push_str(&format!("  visible lines {}-{}\n", visible.start.line, visible.end.line));
                }
            }
        }
    }
    if output.editor_attached {
        text.push_str(&format!("open documents ({}):\n", output.total_open_documents));
    }
    for document in &output.open_documents {
        let unsaved = match document.unsaved {
            Some(true) => " unsaved",
            Some(false) => "",
            None => " (unsaved unknown)",
        };
        let diagnostics = document
            .diagnostics
            .as_ref()
            .map(|d| format!(", {} errors, {} warnings", d.errors, d.warnings))
            .unwrap_or_default();
        text.push_str(&format!(
            "  {} ({}, version {}){unsaved}{diagnostics}\n",
            document.path, document.language, document.version
        ));
    }
    if output.open_documents.len() < output.total_open_documents {
        text.push_str(&format!(
            "  … {} more (max_documents)\n",
            output.total_open_documents - output.open_documents.len()
        ));
    }
    if !output.unknown.is_empty() {
        text.push_str(&format!("unknown: {}\n", output.unknown.join(", ")));
    }
    if let Some(note) = &output.note {
        text.push_str(&format!("note: {note}\n"));
    }
    text
}
