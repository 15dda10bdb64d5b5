//! The grep-searcher sinks behind `localSearchCode`: [`RowSink`] collects one file's matching
//! rows (as ripgrep's JSON reports them: a row is a matching line, or the lines of one
//! multiline match) with their context, and [`FirstMatch`] only notes that a file matches and
//! stops the search there (discovery mode).

use std::collections::BTreeMap;

use grep_matcher::Matcher;
use grep_regex::RegexMatcher;
use grep_searcher::{Searcher, Sink, SinkContext, SinkMatch};

use super::search_code::{MatchLocation, SearchFile, SearchMatch};
use crate::documents::position::{self, Encoding, column_in_line};

/// What a [`RowSink`] keeps and how it cuts lines.
pub(super) struct RowSettings {
    /// Rows kept per file (`matchesPerPage`).
    pub per_file: usize,
    /// Lines of context around each kept row.
    pub context_lines: usize,
    /// Characters kept of each line in `value` (`matchContentLength`).
    pub content_length: usize,
}

/// A kept row: where its first match is.
struct Row {
    /// 1-based line of the first match's start.
    line: u64,
    /// 0-based column of the first match, in UTF-16 code units (Octocode's unit).
    column: u32,
    /// 0-based column of the first match, in characters.
    char_column: u32,
    /// Byte offset of the first match in the file, and its length in bytes.
    offset: u64,
    length: u64,
    /// Lines the row spans (1 unless a multiline match).
    span: u64,
}

/// One file's matching rows: every row, line and occurrence counted, the first `per_file` rows
/// kept with their lines and context.
pub(super) struct RowSink<'a> {
    matcher: &'a RegexMatcher,
    settings: &'a RowSettings,
    /// Matching rows in the file.
    pub rows: usize,
    /// Lines covered by matching rows.
    pub matched_lines: usize,
    /// Occurrences of the pattern (a row may hold several).
    pub occurrences: usize,
    kept: Vec<Row>,
    /// Line texts (matching and context) near kept rows.
    lines: BTreeMap<u64, String>,
}

impl<'a> RowSink<'a> {
    pub(super) fn new(matcher: &'a RegexMatcher, settings: &'a RowSettings) -> RowSink<'a> {
        RowSink {
            matcher,
            settings,
            rows: 0,
            matched_lines: 0,
            occurrences: 0,
            kept: Vec::new(),
            lines: BTreeMap::new(),
        }
    }

    /// The file's entry: counts, and the kept rows with their `value` (the row's lines with
    /// `context_lines` around them, each cut to `content_length` characters around the match).
    pub(super) fn into_file(self, path: String, buffer_version: Option<i32>) -> SearchFile {
        let settings = self.settings;
        let c = settings.context_lines as u64;
        let matches: Vec<SearchMatch> = self
            .kept
            .iter()
            .map(|row| {
                let from = row.line.saturating_sub(c).max(1);
                let to = row.line + row.span.saturating_sub(1) + c;
                let value: Vec<String> = self
                    .lines
                    .range(from..=to)
                    .map(|(&n, text)| {
                        let anchor = if n == row.line { row.char_column as usize } else { 0 };
                        cut_around(text, anchor, settings.content_length)
                    })
                    .collect();
                SearchMatch {
                    line: row.line,
                    column: row.column,
                    value: value.join("\n"),
                    location: MatchLocation { char_offset: row.offset, char_length: row.length },
                    lsp_column: position::one_based(row.char_column),
                }
            })
            .collect();
        SearchFile {
            path,
            total_match_rows: Some(self.rows),
            returned_match_rows: Some(matches.len()),
            matches,
            buffer_version,
        }
    }

    fn wants_line(&self, line: u64) -> bool {
        let c = self.settings.context_lines as u64;
        match self.kept.last() {
            Some(row) if line <= row.line + row.span.saturating_sub(1) + c => true,
            _ => self.kept.len() < self.settings.per_file,
        }
    }

    fn store_lines(&mut self, first_line: u64, bytes: &[u8]) {
        let text = String::from_utf8_lossy(bytes);
        for (idx, line_text) in position::lines(&text).enumerate() {
            let n = first_line + idx as u64;
            if self.wants_line(n) || self.kept.iter().any(|row| n >= row.line && n < row.line + row.span) {
                self.lines.insert(n, line_text.to_owned());
            }
        }
    }
}

/// Cuts `text` to `limit` characters, keeping the character at `anchor` (0-based) in view.
fn cut_around(text: &str, anchor: usize, limit: usize) -> String {
    let count = text.chars().count();
    if count <= limit {
        return text.to_owned();
    }
    let start = anchor.saturating_sub(limit / 4).min(count - limit);
    let cut: String = text.chars().skip(start).take(limit).collect();
    format!("{}{cut}{}", if start > 0 { "…" } else { "" }, if start + limit < count { "…" } else { "" })
}

impl Sink for RowSink<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _searcher: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        let bytes = mat.bytes();
        let Some(first_line) = mat.line_number() else { return Ok(true) };
        self.rows += 1;
        self.matched_lines += position::line_count_in(bytes).max(1);
        // Occurrences in the row: the non-empty matches, or 1 for a row that only empty
        // matches (`^`, `x*`) made. The row's location is its first non-empty match.
        let (mut first, mut first_empty, mut found) = (None, None, 0);
        let _ = self.matcher.find_iter(bytes, |m| {
            if m.end() > m.start() {
                first = first.or(Some((m.start(), m.end())));
                found += 1;
            } else {
                first_empty = first_empty.or(Some((m.start(), m.end())));
            }
            true
        });
        self.occurrences += found.max(1);
        if self.kept.len() < self.settings.per_file {
            let (start, end) = first.or(first_empty).unwrap_or((0, 0));
            let before = &bytes[..start];
            let line = first_line + position::count_line_breaks(before) as u64;
            let prefix = String::from_utf8_lossy(&before[position::line_start(before, before.len())..]);
            let (column, _) = column_in_line(&prefix, prefix.len(), Encoding::Utf16);
            let (char_column, _) = column_in_line(&prefix, prefix.len(), Encoding::Utf32);
            // Lines the match covers: a match ending just past a line break ends on that line.
            let span = position::line_count_in(&bytes[start..end]) as u64;
            self.kept.push(Row {
                line,
                column,
                char_column,
                offset: mat.absolute_byte_offset() + start as u64,
                length: (end - start) as u64,
                span: span.max(1),
            });
        }
        self.store_lines(first_line, bytes);
        Ok(true)
    }

    fn context(&mut self, _searcher: &Searcher, context: &SinkContext<'_>) -> Result<bool, Self::Error> {
        if let Some(line) = context.line_number()
            && self.wants_line(line)
        {
            self.store_lines(line, context.bytes());
        }
        Ok(true)
    }
}

/// Discovery mode: notes the first match and stops the file's search there.
#[derive(Default)]
pub(super) struct FirstMatch {
    pub found: bool,
}

impl Sink for FirstMatch {
    type Error = std::io::Error;

    fn matched(&mut self, _searcher: &Searcher, _mat: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        self.found = true;
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_around_keeps_the_anchor_in_view() {
        let text: String = ('a'..='z').collect();
        assert_eq!(cut_around(&text, 0, 100), text);
        assert_eq!(cut_around(&text, 0, 4), "abcd…");
        assert_eq!(cut_around(&text, 20, 4), "…tuvw…");
        assert_eq!(cut_around(&text, 25, 4), "…wxyz");
    }
}
