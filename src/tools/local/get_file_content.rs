//! `localGetFileContent`: one file's text by one strategy — `matchString` (with context),
//! `startLine`/`endLine`, `charOffset`/`charLength` (bytes), or `fullContent` — read through the
//! Engine's documents, so an open editor buffer's unsaved text is what is returned.
//!
//! Lines are 1-based and broken at `\n`, `\r\n` and a lone `\r` (as everywhere in filepuff);
//! a final line break does not start a new line. Byte windows never split a UTF-8 character:
//! both ends move back to a character boundary, and `nextCharOffset` is where the next window
//! starts, so consecutive windows tile the file exactly.

use std::borrow::Cow;

use regex::RegexBuilder;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Answer, Batch, BatchOutput, ResearchFields, invalid_filter, run_batch};
use crate::documents::{Origin, ReadError, position};
use crate::engine::Engine;
use crate::tools::error::read_error;
use crate::tools::{ErrorCode, ToolError};

/// One `localGetFileContent` query (Octocode's parameters). Choose one strategy.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GetFileContentQuery {
    /// File path, relative to the workspace root.
    pub path: String,
    /// Strategy 1: text (or regex) to find; every matching line is shown with context.
    #[serde(default)]
    pub match_string: Option<String>,
    /// Lines of context around each matching line, 1-50 (default 5).
    #[serde(default)]
    pub match_string_context_lines: Option<usize>,
    /// matchString is a regex (Rust syntax) rather than literal text.
    #[serde(default)]
    pub match_string_is_regex: bool,
    /// Match matchString's case exactly (default false).
    #[serde(default)]
    pub match_string_case_sensitive: bool,
    /// Strategy 2: BYTE offset where the window starts (default 0).
    #[serde(default)]
    pub char_offset: Option<usize>,
    /// BYTES to read (1000-4000 recommended; capped by the output budget).
    #[serde(default)]
    pub char_length: Option<usize>,
    /// Strategy 3: first line (1-based, default 1).
    #[serde(default)]
    pub start_line: Option<usize>,
    /// Last line (1-based, inclusive; default the last line).
    #[serde(default)]
    pub end_line: Option<usize>,
    /// Strategy 4: the whole file (small files; a larger one returns its first window).
    #[serde(default)]
    pub full_content: bool,
    #[serde(flatten)]
    pub research: ResearchFields,
}

/// One query's result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GetFileContentResult {
    /// Relative to the workspace root.
    pub path: String,
    /// The requested text. With matchString, the slices joined by a line "..." between slices.
    pub content: String,
    /// Lines in the whole file.
    pub total_lines: usize,
    /// Bytes in the whole file (UTF-8).
    pub total_bytes: usize,
    /// First line shown (1-based), for line and whole-file reads.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_line: Option<usize>,
    /// Last line shown (1-based, inclusive).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_line: Option<usize>,
    /// Whether content is less than the whole file.
    pub is_partial: bool,
    /// matchString: matching lines in the whole file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub match_count: Option<usize>,
    /// matchString: the matching lines shown (1-based).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub matched_lines: Vec<usize>,
    /// matchString: the slices shown, as 1-based inclusive line ranges.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub match_ranges: Vec<LineRange>,
    /// Byte-window reads: where the window is and where the next one starts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pagination: Option<CharPagination>,
    /// Set when an open editor buffer (at this version) was read instead of the disk.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buffer_version: Option<i32>,
}

/// A 1-based inclusive line range (Octocode's `{start, end}`).
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
pub struct LineRange {
    /// First line, 1-based.
    pub start: usize,
    /// Last line, 1-based, inclusive.
    pub end: usize,
}

/// A byte window (Octocode names these char*, but they count bytes).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CharPagination {
    /// Byte offset of the window's start.
    pub char_offset: usize,
    /// Bytes in the window.
    pub char_length: usize,
    /// Bytes in the file.
    pub total_chars: usize,
    pub has_more: bool,
    /// Byte offset of the next window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_char_offset: Option<usize>,
}

/// Runs `localGetFileContent`.
///
/// Errors per query: path errors (1001–1005), 1101–1104 and 1107 from reading, 1105/1106 for a
/// bad line range, 8003 for more than one strategy, 2001 for an invalid matchString regex.
pub fn local_get_file_content(
    engine: &Engine,
    batch: Batch<GetFileContentQuery>,
) -> Result<BatchOutput<GetFileContentResult>, ToolError> {
    run_batch(engine, batch, read_one)
}

fn read_one(
    engine: &Engine,
    query: &GetFileContentQuery,
    budget: usize,
) -> Result<Answer<GetFileContentResult>, ToolError> {
    let strategies = [
        ("matchString", query.match_string.is_some()),
        ("startLine/endLine", query.start_line.is_some() || query.end_line.is_some()),
        ("charOffset/charLength", query.char_offset.is_some() || query.char_length.is_some()),
        ("fullContent", query.full_content),
    ];
    let chosen: Vec<&str> = strategies.iter().filter(|(_, on)| *on).map(|(name, _)| *name).collect();
    if chosen.len() > 1 {
        return Err(ToolError::new(
            ErrorCode::LocalStrategyConflict,
            format!("choose one reading strategy; got {}", chosen.join(", ")),
            "Send matchString, or startLine/endLine, or charOffset/charLength, or fullContent — one per query (use queries for several).",
        )
        .with("strategies", chosen.join(", ")));
    }
    let resolved = super::resolve(engine, &query.path)?;
    let shown = super::shown(&resolved);
    let limits = &engine.workspace().config().limits;
    let source = engine.documents().text(&resolved.id(), limits.max_file_bytes).map_err(|err| match err {
        ReadError::IsDirectory { .. } => ToolError::new(
            ErrorCode::FileIsDirectory,
            format!("{shown} is a directory, not a file"),
            "Use localViewStructure to see inside a directory.",
        )
        .with("path", shown.clone()),
        other => read_error(other, &shown),
    })?;
    let text = source.text.to_string();
    let buffer_version = match source.origin {
        Origin::Buffer { version } => Some(version),
        Origin::Disk { .. } => None,
    };
    // Byte offsets count the file as stored. The text differs from it only where invalid UTF-8
    // was replaced (U+FFFD is 3 bytes), so only then are the raw bytes read again.
    let raw: Cow<'_, [u8]> = match source.origin {
        Origin::Disk { lossy: true, .. } => Cow::Owned(
            crate::documents::read_bytes(&resolved.absolute, limits.max_file_bytes, Some(engine.workspace().root()))
                .map_err(|err| read_error(err, &shown))?
                .0,
        ),
        _ => Cow::Borrowed(text.as_bytes()),
    };
    let lines = line_spans(&text);
    let mut result = GetFileContentResult {
        path: shown.clone(),
        content: String::new(),
        total_lines: lines.len(),
        total_bytes: raw.len(),
        start_line: None,
        end_line: None,
        is_partial: false,
        match_count: None,
        matched_lines: Vec::new(),
        match_ranges: Vec::new(),
        pagination: None,
        buffer_version,
    };
    let mut hints = Vec::new();
    let budget = budget.max(1000);
    if let Some(needle) = &query.match_string {
        let has = by_match(&text, &lines, needle, query, budget, &mut result, &mut hints)?;
        return Ok(Answer { data: result, has_results: has, hints });
    }
    if query.start_line.is_some() || query.end_line.is_some() {
        by_lines(&text, &lines, query.start_line.unwrap_or(1), query.end_line, budget, &mut result, &mut hints)?;
        return Ok(Answer { has_results: !result.content.is_empty(), data: result, hints });
    }
    if query.char_offset.is_none() && query.char_length.is_none() && raw.len() <= budget {
        // fullContent, or no strategy on a file small enough to return whole.
        result.content = text;
        if !lines.is_empty() {
            result.start_line = Some(1);
            result.end_line = Some(lines.len());
        }
        return Ok(Answer { has_results: !result.content.is_empty(), data: result, hints });
    }
    let offset = query.char_offset.unwrap_or(0);
    let requested = query.char_length.unwrap_or(budget);
    if requested > budget {
        hints.push(format!("charLength {requested} is over the output budget; {budget} bytes returned."));
    }
    if query.char_offset.is_none() && query.char_length.is_none() {
        hints.push(format!(
            "The file is {} bytes, over the output budget: this is its first window. Prefer matchString, or page with charOffset/charLength.",
            raw.len()
        ));
    }
    by_window(&raw, offset, requested.min(budget), &mut result, &mut hints);
    Ok(Answer { has_results: !result.content.is_empty(), data: result, hints })
}

/// Each line's byte span: (start, end without the break, end with the break).
fn line_spans(text: &str) -> Vec<(usize, usize, usize)> {
    position::line_spans(text).map(|line| (line.start, line.content_end, line.end)).collect()
}

fn by_lines(
    text: &str,
    lines: &[(usize, usize, usize)],
    start: usize,
    end: Option<usize>,
    budget: usize,
    result: &mut GetFileContentResult,
    hints: &mut Vec<String>,
) -> Result<(), ToolError> {
    let total = lines.len();
    if start == 0 || end.is_some_and(|end| end < start) {
        return Err(ToolError::new(
            ErrorCode::LineRangeInvalid,
            format!("invalid line range {start}..{}", end.map_or("end".to_owned(), |e| e.to_string())),
            "Lines are 1-based and endLine must not be before startLine.",
        )
        .with("start_line", start));
    }
    if start > total.max(1) || (total == 0 && start > 1) {
        return Err(ToolError::new(
            ErrorCode::LineRangePastEnd,
            format!("startLine {start} is past the end of {} ({total} lines)", result.path),
            format!("Give a startLine between 1 and {total}."),
        )
        .with("start_line", start)
        .with("total_lines", total));
    }
    if total == 0 {
        return Ok(());
    }
    let wanted_end = end.unwrap_or(total).min(total);
    if end.is_some_and(|end| end > total) {
        hints.push(format!("endLine {} is past the end; the file has {total} lines.", end.unwrap_or(0)));
    }
    let first_byte = lines[start - 1].0;
    if lines[start - 1].1 - first_byte > budget {
        // One line over the budget (minified code): its first window, continued by bytes.
        by_window(text.as_bytes(), first_byte, budget, result, hints);
        result.start_line = Some(start);
        result.end_line = Some(start);
        hints.insert(
            0,
            format!("Line {start} alone is over the output budget ({budget} bytes): this is its first window."),
        );
        return Ok(());
    }
    let mut last = start;
    while last < wanted_end && lines[last].1 - first_byte <= budget {
        last += 1;
    }
    // `last` is the last line (1-based) whose end is within budget, at least `start`.
    result.content = text[first_byte..lines[last - 1].1].to_owned();
    result.start_line = Some(start);
    result.end_line = Some(last);
    result.is_partial = start > 1 || last < total;
    if last < wanted_end {
        hints.push(format!(
            "Output budget reached at line {last}: {} more lines requested; continue with startLine={}{}.",
            wanted_end - last,
            last + 1,
            end.map(|e| format!(", endLine={e}")).unwrap_or_default()
        ));
    }
    hints.push(format!(
        "Line numbers are 1-based (lines {start}-{last}): use them as the line of find_definition, find_references or symbol_at."
    ));
    Ok(())
}

fn by_window(bytes: &[u8], offset: usize, length: usize, result: &mut GetFileContentResult, hints: &mut Vec<String>) {
    let total = bytes.len();
    let start = floor_boundary(bytes, offset.min(total));
    let mut end = floor_boundary(bytes, offset.saturating_add(length).min(total));
    if end <= start && start < total {
        end = ceil_boundary(bytes, start + 1);
    }
    result.content = String::from_utf8_lossy(&bytes[start..end]).into_owned();
    result.is_partial = start > 0 || end < total;
    let has_more = end < total;
    result.pagination = Some(CharPagination {
        char_offset: start,
        char_length: end - start,
        total_chars: total,
        has_more,
        next_char_offset: has_more.then_some(end),
    });
    if start != offset.min(total) {
        hints.push(format!("charOffset {offset} is inside a UTF-8 character; the window starts at byte {start}."));
    }
    if has_more {
        hints.push(format!(
            "{} more bytes: continue with charOffset={end}, charLength={}.",
            total - end,
            length.max(1)
        ));
    }
    if offset > total {
        hints.push(format!("charOffset {offset} is past the end of the file ({total} bytes)."));
    }
}

/// Whether a window may start or end at `idx`: not on a UTF-8 continuation byte (in valid
/// UTF-8, exactly the character boundaries; in invalid bytes, at most 3 steps from any byte).
fn is_boundary(bytes: &[u8], idx: usize) -> bool {
    idx == 0
        || idx >= bytes.len()
        || bytes[idx] & 0xC0 != 0x80
        || bytes[idx.saturating_sub(3)..idx].iter().all(|b| b & 0xC0 == 0x80)
}

fn floor_boundary(bytes: &[u8], mut idx: usize) -> usize {
    while !is_boundary(bytes, idx) {
        idx -= 1;
    }
    idx
}

fn ceil_boundary(bytes: &[u8], mut idx: usize) -> usize {
    while !is_boundary(bytes, idx) {
        idx += 1;
    }
    idx.min(bytes.len())
}

fn by_match(
    text: &str,
    lines: &[(usize, usize, usize)],
    needle: &str,
    query: &GetFileContentQuery,
    budget: usize,
    result: &mut GetFileContentResult,
    hints: &mut Vec<String>,
) -> Result<bool, ToolError> {
    if needle.is_empty() {
        return Err(invalid_filter("matchString", needle, "non-empty text"));
    }
    let pattern = if query.match_string_is_regex { needle.to_owned() } else { regex::escape(needle) };
    let regex =
        RegexBuilder::new(&pattern).case_insensitive(!query.match_string_case_sensitive).build().map_err(|err| {
            ToolError::from(crate::search::SearchError::InvalidRegex {
                pattern: needle.to_owned(),
                message: err.to_string(),
            })
        })?;
    let context = query.match_string_context_lines.unwrap_or(5).clamp(1, 50);
    let matching: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, (start, end, _))| regex.is_match(&text[*start..*end]))
        .map(|(idx, _)| idx + 1)
        .collect();
    result.match_count = Some(matching.len());
    result.is_partial = true;
    if matching.is_empty() {
        hints.push(format!(
            "{needle:?} is not in {}{}. Try matchStringIsRegex, a shorter string, or localSearchCode to find the file.",
            result.path,
            if query.match_string_case_sensitive { " (case-sensitive)" } else { "" }
        ));
        return Ok(false);
    }
    // Merge overlapping or touching windows.
    let mut ranges: Vec<(usize, usize, Vec<usize>)> = Vec::new();
    for &line in &matching {
        let from = line.saturating_sub(context).max(1);
        let to = (line + context).min(lines.len());
        match ranges.last_mut() {
            Some(last) if from <= last.1 + 1 => {
                last.1 = last.1.max(to);
                last.2.push(line);
            }
            _ => ranges.push((from, to, vec![line])),
        }
    }
    let total_ranges = ranges.len();
    let (first_from, first_to, _) = &ranges[0];
    if lines[first_to - 1].1 - lines[first_from - 1].0 > budget {
        // The first match's lines alone are over the budget (minified code): a window around
        // the match, continued by bytes.
        let line = &lines[matching[0] - 1];
        let at = regex.find(&text[line.0..line.1]).map_or(line.0, |m| line.0 + m.start());
        by_window(text.as_bytes(), at.saturating_sub(budget / 3).max(line.0), budget, result, hints);
        result.match_ranges.push(LineRange { start: matching[0], end: matching[0] });
        result.matched_lines.push(matching[0]);
        hints.insert(
            0,
            format!(
                "Line {} is over the output budget ({budget} bytes): this is a window around its first match; {} matching lines in all.",
                matching[0],
                matching.len()
            ),
        );
        return Ok(true);
    }
    let mut parts = Vec::new();
    let mut used = 0;
    for (from, to, in_range) in ranges {
        let slice = &text[lines[from - 1].0..lines[to - 1].1];
        if used + slice.len() > budget && !parts.is_empty() {
            break;
        }
        used += slice.len() + 5;
        parts.push(slice.to_owned());
        result.match_ranges.push(LineRange { start: from, end: to });
        result.matched_lines.extend(in_range);
    }
    result.content = parts.join("\n...\n");
    if result.content.len() > budget {
        let cut = floor_boundary(result.content.as_bytes(), budget);
        result.content.truncate(cut);
        hints.push(format!("The slice was cut at the output budget ({budget} bytes); lower matchStringContextLines."));
    }
    let shown = result.matched_lines.len();
    hints.push(format!(
        "Found {} matching line{} ({}), ±{context} lines of context each.",
        matching.len(),
        if matching.len() == 1 { "" } else { "s" },
        compact_lines(&result.matched_lines)
    ));
    if result.match_ranges.len() < total_ranges {
        let next = matching[shown];
        hints.push(format!(
            "Output budget reached: {} more matching lines from line {next}; read them with startLine={}, or narrow matchString.",
            matching.len() - shown,
            next.saturating_sub(context).max(1)
        ));
    }
    hints.push(
        "Matching line numbers are 1-based: use them as the line of find_definition, find_references or symbol_at."
            .to_owned(),
    );
    Ok(true)
}

fn compact_lines(lines: &[usize]) -> String {
    let shown: Vec<String> = lines.iter().take(10).map(|l| l.to_string()).collect();
    let more = if lines.len() > 10 { format!(" and {} more", lines.len() - 10) } else { String::new() };
    format!("lines {}{more}", shown.join(", "))
}
