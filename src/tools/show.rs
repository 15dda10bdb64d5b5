//! `show_in_editor` (toolset `core`): an agent points the person at code. The document opens (or
//! comes to the front) in the editor behind `filepuff lsp` with the range selected, through
//! `window/showDocument` (LSP 3.16) — the editor face decides how ([`crate::engine::Editor::show`]).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::error::read_error;
use super::{ErrorCode, ToolError};
use crate::documents::position::{self, OneBased};
use crate::engine::Engine;

/// Parameters of `show_in_editor`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ShowInEditorParams {
    /// File to show (relative to the workspace root, absolute inside it, or file://).
    pub file: String,
    /// First line of the selection, 1-based (without it: the file is shown, nothing selected).
    pub line: Option<usize>,
    /// Column on `line` where the selection starts, 1-based, in characters (default 1).
    pub column: Option<usize>,
    /// Last line of the selection, 1-based, inclusive (default: `line`).
    pub end_line: Option<usize>,
    /// Column on `end_line` just after the selection, 1-based, in characters (default: the end
    /// of that line).
    pub end_column: Option<usize>,
    /// Bring the editor to the front and focus the document (default true).
    pub take_focus: Option<bool>,
}

/// Result of `show_in_editor`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ShowInEditorOutput {
    /// The file, relative to the workspace root.
    pub file: String,
    /// Whether the editor says it showed the document (`ShowDocumentResult.success`).
    pub shown: bool,
    /// The selection shown, 1-based lines, when one was asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_line: Option<usize>,
}

/// Runs `show_in_editor`.
///
/// Errors: path and read errors (1001–1107); 1105 a line past the end of the file; 8020 no
/// editor serves this agent, or it cannot show documents or did not answer.
pub fn show_in_editor(engine: &Engine, params: ShowInEditorParams) -> Result<ShowInEditorOutput, ToolError> {
    let workspace = engine.workspace();
    let resolved = workspace.resolve(&params.file)?;
    let id = resolved.id();
    let shown = resolved.relative.clone();
    let Some(editor) = engine.editor() else {
        return Err(ToolError::new(
            ErrorCode::EditorNotAvailable,
            format!("no editor serves this agent, so {shown} cannot be shown to the person"),
            "Open the workspace in an editor with the filepuff extension or plugin, and run the agent with `filepuff mcp` for that workspace (it attaches to the editor).",
        )
        .with("path", shown.as_str()));
    };
    let text = engine
        .documents()
        .text(&id, workspace.config().limits.max_file_bytes)
        .map_err(|err| read_error(err, &shown))?
        .text;
    let total = position::line_count(&text);
    let selection = match params.line {
        None => None,
        Some(line) => {
            let end_line = params.end_line.unwrap_or(line).max(line);
            if line == 0 || end_line > total {
                return Err(ToolError::new(
                    ErrorCode::LineRangePastEnd,
                    format!("{shown}: lines {line}-{end_line} are not in the file ({total} lines)"),
                    format!("Lines are 1-based; this file has {total}."),
                )
                .with("line", line)
                .with("total_lines", total));
            }
            let at = |line: usize, column: usize| {
                position::one_based_to_offset(&text, OneBased { line: line as u32, column: column.max(1) as u32 }).0
            };
            let start = at(line, params.column.unwrap_or(1));
            // Without end_column: the end of end_line (a column past the end clamps to it).
            let end = at(end_line, params.end_column.unwrap_or(usize::MAX / 2)).max(start);
            Some((start..end, line, end_line))
        }
    };
    let take_focus = params.take_focus.unwrap_or(true);
    let range = selection.as_ref().map(|(range, _, _)| range.clone());
    let shown_ok = editor.show(&id, &text, range, take_focus).map_err(|message| {
        ToolError::new(
            ErrorCode::EditorNotAvailable,
            format!("the editor could not show {shown}: {message}"),
            "Nothing was shown; the person can open the file themselves.",
        )
        .with("path", shown.as_str())
    })?;
    Ok(ShowInEditorOutput {
        file: shown,
        shown: shown_ok,
        line: selection.as_ref().map(|s| s.1),
        end_line: selection.as_ref().map(|s| s.2),
    })
}

/// Readable text of `show_in_editor`.
pub fn render_text(output: &ShowInEditorOutput) -> String {
    let what = match (output.line, output.end_line) {
        (Some(line), Some(end)) if end != line => format!("{}:{line}-{end}", output.file),
        (Some(line), _) => format!("{}:{line}", output.file),
        _ => output.file.clone(),
    };
    if output.shown { format!("shown in the editor: {what}\n") } else { format!("the editor did not show {what}\n") }
}
