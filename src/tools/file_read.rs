//! `file_read`: a file's text by line range, with an optional symbol outline (seed: filepuff
//! API reference, "file_read").

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{ErrorCode, ToolError, error::read_error};
use crate::documents::{self, Origin, position};
use crate::engine::Engine;
use crate::syntax::{self, Symbol};

// Named as the seed names them.
/// Parameters of `file_read`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct FileReadParams {
    /// Path to the file, relative to the workspace root (or absolute inside it, or a file:// URI).
    pub path: String,
    /// First line to return (1-based, default 1).
    pub line_start: Option<usize>,
    /// Last line to return (1-based, inclusive; default the last line). Clamped to the file's end.
    pub line_end: Option<usize>,
    /// Include the symbol outline (functions, methods, classes, types, …) with 1-based lines.
    #[serde(default)]
    pub include_ast: bool,
    /// Return only the symbol outline, no content (token-efficient). Implies include_ast.
    #[serde(default)]
    pub symbols_only: bool,
    /// Maximum lines to return, applied after line_start/line_end (default 2000); the result
    /// says where to continue.
    pub max_lines: Option<usize>,
    /// Character column (1-based) of line_start to start from (default 1): continues a line
    /// cut by the output budget (next_column_start).
    pub column_start: Option<usize>,
    /// Most characters of content to return (default 100000, `[read] max_chars`); the outline
    /// gets the same budget. A cut result says where to continue.
    pub max_chars: Option<usize>,
    /// Top-level outline symbols to skip: continues an outline cut by the budget
    /// (next_symbols_offset).
    pub symbols_offset: Option<usize>,
}

/// Result of `file_read`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct FileReadOutput {
    /// Path relative to the workspace root.
    pub path: String,
    /// Detected language (`go`, `python`, …), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    /// `buffer` when an open editor buffer was read, else `disk`.
    pub source: String,
    /// The buffer's version when `source` is `buffer`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buffer_version: Option<i32>,
    /// Lines in the file (a final line break does not start a new line).
    pub total_lines: usize,
    /// Hash of the whole current text (`sha256:…` of its UTF-8 bytes); pass it to edit_apply
    /// as `expected_hash` to refuse the edit if the file changes in between.
    pub content_hash: String,
    /// First returned line (1-based); absent with symbols_only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line_start: Option<usize>,
    /// Last returned line (1-based, inclusive); absent with symbols_only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line_end: Option<usize>,
    /// The returned lines, line breaks as in the file; absent with symbols_only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// Whether max_lines or the output budget (max_chars) cut the requested range.
    pub truncated: bool,
    /// Where to continue reading when truncated (pass as line_start).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_line_start: Option<usize>,
    /// When the budget cut a line in the middle: the character column (1-based) of
    /// next_line_start to continue from (pass as column_start).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_column_start: Option<usize>,
    /// The symbol outline, when include_ast or symbols_only (names over 200 characters cut
    /// with `…`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub symbols: Option<Vec<SymbolInfo>>,
    /// When the budget cut the outline: the symbols_offset that continues it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_symbols_offset: Option<usize>,
    /// Facts worth knowing about this read (clamped range, invalid UTF-8, no outline support).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// One symbol of the outline.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SymbolInfo {
    pub name: String,
    /// function, method, class, struct, interface, trait, impl, type, enum, constant, variable,
    /// macro, module, heading or key.
    pub kind: String,
    /// Receiver type of a Go method, class of an out-of-line C++ method, trait of a Rust impl.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    /// 1-based first line.
    pub start_line: usize,
    /// 1-based last line, inclusive.
    pub end_line: usize,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<SymbolInfo>,
}

/// Characters of a symbol's name or container kept in the outline.
const MAX_SYMBOL_NAME_CHARS: usize = 200;

/// Runs `file_read`.
///
/// Output is bounded by `max_chars` (default `[read] max_chars`): the content stops at the
/// last whole line that fits, or, when the first line alone is longer, inside it
/// (`next_column_start`); the outline stops at the last top-level symbol that fits
/// (`next_symbols_offset`).
///
/// Errors: path errors (1001–1005); 1101 not found; 1102 a directory; 1103 binary; 1104 over
/// the size limit; 1105 line_start past the end; 1106 an invalid range (0, or end before start,
/// or column_start/max_chars 0).
pub fn file_read(engine: &Engine, params: FileReadParams) -> Result<FileReadOutput, ToolError> {
    let workspace = engine.workspace();
    let resolved = workspace.resolve(&params.path)?;
    let max_bytes = workspace.config().limits.max_file_bytes;
    let budget = params.max_chars.unwrap_or(workspace.config().read.max_chars);
    if budget == 0 || params.column_start == Some(0) {
        return Err(ToolError::new(
            ErrorCode::LineRangeInvalid,
            "max_chars and column_start must be at least 1",
            "Columns are 1-based; leave max_chars out for the default budget.",
        )
        .with("path", resolved.relative.as_str()));
    }
    let source =
        engine.documents().text(&resolved.id(), max_bytes).map_err(|err| read_error(err, &resolved.relative))?;
    let text = &source.text;
    let total_lines = position::line_count(text);
    let mut notes = Vec::new();

    let (source_name, buffer_version) = match source.origin {
        Origin::Buffer { version } => ("buffer", Some(version)),
        Origin::Disk { lossy, .. } => {
            if lossy {
                notes.push("the file is not valid UTF-8; invalid bytes are shown as U+FFFD".to_owned());
            }
            ("disk", None)
        }
    };

    let symbols_only = params.symbols_only;
    let include_ast = params.include_ast || symbols_only;
    let mut next_symbols_offset = None;
    let symbols = include_ast.then(|| {
        let language = source.language;
        match language.and_then(|lang| engine.syntax().parse(&resolved.absolute, lang, text)) {
            Some(parsed) if syntax::outline::supports(parsed.language) => {
                if syntax::outline::has_syntax_errors(&parsed) {
                    notes.push("the parser found syntax errors; the outline may be incomplete".to_owned());
                }
                let all: Vec<SymbolInfo> = syntax::outline::outline(&parsed).iter().map(symbol_info).collect();
                let (kept, next) = bound_outline(all, params.symbols_offset.unwrap_or(0), budget, &mut notes);
                next_symbols_offset = next;
                kept
            }
            _ => {
                let name = language.map_or("unknown", |l| l.name());
                notes.push(format!("no symbol outline for language {name}"));
                Vec::new()
            }
        }
    });

    let mut output = FileReadOutput {
        path: resolved.relative.clone(),
        language: source.language.map(|l| l.name().to_owned()),
        source: source_name.to_owned(),
        buffer_version,
        total_lines,
        content_hash: documents::rope_hash(text),
        line_start: None,
        line_end: None,
        content: None,
        truncated: false,
        next_line_start: None,
        next_column_start: None,
        symbols,
        next_symbols_offset,
        notes,
    };
    if symbols_only {
        return Ok(output);
    }

    let range_error = |message: String| {
        ToolError::new(
            ErrorCode::LineRangeInvalid,
            message,
            "Lines are 1-based and line_end must not be before line_start.",
        )
        .with("path", resolved.relative.as_str())
        .with("total_lines", total_lines)
    };
    let line_start = params.line_start.unwrap_or(1);
    if line_start == 0 {
        return Err(range_error("line_start must be at least 1 (lines are 1-based)".to_owned()));
    }
    if let Some(end) = params.line_end
        && end < line_start
    {
        return Err(range_error(format!("line_end {end} is before line_start {line_start}")));
    }
    if params.max_lines == Some(0) {
        return Err(ToolError::new(
            ErrorCode::LineRangeInvalid,
            "max_lines must be at least 1",
            "Leave max_lines out for the default (2000 lines), or give a positive number.",
        )
        .with("path", resolved.relative.as_str()));
    }
    if line_start > total_lines.max(1) {
        return Err(ToolError::new(
            ErrorCode::LineRangePastEnd,
            format!("line_start {line_start} is past the end of {} ({total_lines} lines)", resolved.relative),
            format!("Pick line_start between 1 and {}.", total_lines.max(1)),
        )
        .with("path", resolved.relative.as_str())
        .with("line_start", line_start)
        .with("total_lines", total_lines));
    }
    let mut line_end = params.line_end.unwrap_or(total_lines).min(total_lines).max(line_start.min(total_lines));
    if params.line_end.is_some_and(|end| end > total_lines) {
        output.notes.push(format!("line_end clamped to the last line, {total_lines}"));
    }
    let max_lines = params.max_lines.unwrap_or(workspace.config().read.default_max_lines);
    if total_lines > 0 && line_end - line_start + 1 > max_lines {
        line_end = line_start + max_lines - 1;
        output.truncated = true;
        output.next_line_start = Some(line_end + 1);
    }
    let content = if total_lines == 0 {
        String::new()
    } else {
        let window = position::read_window(text, line_start, params.column_start, line_end, budget);
        if window.column_clamped {
            let column = params.column_start.unwrap_or_default();
            output.notes.push(format!("column_start {column} is past the end of line {line_start}"));
        }
        line_end = window.last_line;
        match window.cut {
            None => {}
            Some(position::WindowCut::BeforeLine(next)) => {
                output.truncated = true;
                output.next_line_start = Some(next);
            }
            Some(position::WindowCut::InLine { column, taken, line_chars }) => {
                output.truncated = true;
                output.next_line_start = Some(line_start);
                output.next_column_start = Some(column);
                output.notes.push(format!(
                    "line {line_start} is {line_chars} characters long: cut after character {taken} by the output budget \
                     (max_chars {budget}); continue with line_start={line_start}, column_start={column}"
                ));
            }
        }
        text.byte_slice(window.bytes).to_string()
    };
    output.line_start = Some(line_start);
    output.line_end = Some(line_end);
    output.content = Some(content);
    Ok(output)
}

/// The top-level symbols of `all` from `offset` on that fit in `budget` characters (of JSON,
/// estimated), at least one; the first one's members are cut when it alone is over. Returns
/// them and the offset that continues the outline when it was cut, with a note.
fn bound_outline(
    all: Vec<SymbolInfo>,
    offset: usize,
    budget: usize,
    notes: &mut Vec<String>,
) -> (Vec<SymbolInfo>, Option<usize>) {
    let total = all.len();
    let mut kept = Vec::new();
    let mut used = 0;
    for mut symbol in all.into_iter().skip(offset) {
        let cost = symbol_chars(&symbol);
        if used + cost > budget {
            if kept.is_empty() {
                let (shown, members) = (symbol.children.len(), count_symbols(&symbol.children));
                cut_members(&mut symbol, budget);
                notes.push(format!(
                    "the outline of {} ({} members) was cut to fit the output budget: read lines {}-{} with include_ast for the rest",
                    symbol.name, members.max(shown), symbol.start_line, symbol.end_line
                ));
                kept.push(symbol);
            }
            break;
        }
        used += cost;
        kept.push(symbol);
    }
    let next = offset + kept.len();
    if next < total {
        notes.push(format!(
            "outline cut by the output budget: top-level symbols {}-{next} of {total}; continue with symbols_offset={next}",
            offset + 1
        ));
        return (kept, Some(next));
    }
    (kept, None)
}

/// Estimated characters of `symbol` as JSON, members included.
fn symbol_chars(symbol: &SymbolInfo) -> usize {
    let own = 90 + symbol.name.len() + symbol.kind.len() + symbol.container.as_ref().map_or(0, |c| c.len() + 14);
    own + symbol.children.iter().map(symbol_chars).sum::<usize>()
}

fn count_symbols(symbols: &[SymbolInfo]) -> usize {
    symbols.iter().map(|s| 1 + count_symbols(&s.children)).sum()
}

/// Drops `symbol`'s members from the end until it fits in `budget`.
fn cut_members(symbol: &mut SymbolInfo, budget: usize) {
    let mut used = symbol_chars(symbol);
    while used > budget {
        let Some(last) = symbol.children.pop() else { break };
        used -= symbol_chars(&last);
    }
}

/// `text` cut to [`MAX_SYMBOL_NAME_CHARS`] characters, with `…` when cut.
fn bounded_name(text: &str) -> String {
    match position::byte_of_char(text, MAX_SYMBOL_NAME_CHARS) {
        Some(at) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

fn symbol_info(symbol: &Symbol) -> SymbolInfo {
    SymbolInfo {
        name: bounded_name(&symbol.name),
        kind: symbol.kind.name().to_owned(),
        container: symbol.container.as_deref().map(bounded_name),
        start_line: symbol.start_line,
        end_line: symbol.end_line,
        children: symbol.children.iter().map(symbol_info).collect(),
    }
}

/// The readable text form: a header, numbered lines (`cat -n` style), the outline, notes.
pub fn render_text(output: &FileReadOutput) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let language = output.language.as_deref().unwrap_or("text");
    let version = output.buffer_version.map(|v| format!(", unsaved buffer v{v}")).unwrap_or_default();
    match (output.line_start, output.line_end) {
        (Some(start), Some(end)) => {
            let _ = writeln!(
                out,
                "{} ({language}, {} lines{version}) lines {start}-{end}",
                output.path, output.total_lines
            );
        }
        _ => {
            let _ = writeln!(out, "{} ({language}, {} lines{version})", output.path, output.total_lines);
        }
    }
    if let (Some(content), Some(start)) = (&output.content, output.line_start) {
        let width = output.line_end.unwrap_or(start).to_string().len();
        for (idx, line) in position::lines(content).enumerate() {
            let _ = writeln!(out, "{:>width$}\t{line}", start + idx);
        }
    }
    if let (Some(line), Some(column)) = (output.next_line_start, output.next_column_start) {
        let _ = writeln!(
            out,
            "[line {line} cut by the output budget; continue with line_start={line}, column_start={column}]"
        );
    } else if output.truncated
        && let Some(next) = output.next_line_start
    {
        let _ = writeln!(
            out,
            "[truncated: showing lines {}-{} of {}; continue with line_start={next}]",
            output.line_start.unwrap_or(1),
            output.line_end.unwrap_or(0),
            output.total_lines
        );
    }
    if let Some(symbols) = &output.symbols {
        let _ = writeln!(out, "symbols:");
        write_symbols(&mut out, symbols, 1);
    }
    for note in &output.notes {
        let _ = writeln!(out, "note: {note}");
    }
    out
}

fn write_symbols(out: &mut String, symbols: &[SymbolInfo], depth: usize) {
    use std::fmt::Write;
    for symbol in symbols {
        let container = symbol.container.as_deref().map(|c| format!(" ({c})")).unwrap_or_default();
        let _ = writeln!(
            out,
            "{:indent$}{}-{} {} {}{container}",
            "",
            symbol.start_line,
            symbol.end_line,
            symbol.kind,
            symbol.name,
            indent = depth * 2
        );
        write_symbols(out, &symbol.children, depth + 1);
    }
}
