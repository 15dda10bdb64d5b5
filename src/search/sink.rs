//! The grep-searcher sink for one file: counts every matching line, keeps the first hits with
//! their context.

use std::collections::BTreeMap;
use std::ops::Bound::{self, Excluded, Included};

use grep_matcher::Matcher;
use grep_regex::RegexMatcher;
use grep_searcher::{Searcher, Sink, SinkContext, SinkMatch};

use super::{ContextLine, Hit, SearchRequest};
use crate::documents::position::{self, Encoding, column_in_line};

pub(super) struct FileSink<'m> {
    matcher: &'m RegexMatcher,
    context_lines: u64,
    max_line_chars: usize,
    keep: usize,
    total: usize,
    /// Kept matching lines: (line, column, text, cut).
    matches: Vec<(u64, u32, String, bool)>,
    /// Every line seen (matching or context) near kept hits, by line number.
    lines: BTreeMap<u64, String>,
}

impl<'m> FileSink<'m> {
    pub(super) fn new(matcher: &'m RegexMatcher, request: &SearchRequest, keep: usize) -> FileSink<'m> {
        FileSink {
            matcher,
            context_lines: request.context_lines as u64,
            max_line_chars: request.max_line_chars,
            keep,
            total: 0,
            matches: Vec::new(),
            lines: BTreeMap::new(),
        }
    }

    pub(super) fn total_matches(&self) -> usize {
        self.total
    }

    /// The kept hits with their context lines (a line shared by two hits appears in both).
    pub(super) fn into_hits(self) -> Vec<Hit> {
        let n = self.context_lines;
        let lines = &self.lines;
        let around = |range: (Bound<u64>, Bound<u64>)| -> Vec<ContextLine> {
            if n == 0 {
                return Vec::new();
            }
            lines.range(range).map(|(&line, text)| ContextLine { line, text: text.clone() }).collect()
        };
        self.matches
            .iter()
            .map(|&(line, column, ref text, cut)| Hit {
                line,
                column,
                text: text.clone(),
                text_truncated: cut,
                // The `n` lines before and after the hit's own line.
                before: around((Included(line.saturating_sub(n)), Excluded(line))),
                after: around((Excluded(line), Included(line.saturating_add(n)))),
            })
            .collect()
    }

    fn wants_context_for(&self, line: u64) -> bool {
        // Context after a kept hit, or before the hit that may still be kept.
        match self.matches.last() {
            Some((last, ..)) if line <= last + self.context_lines => true,
            _ => self.matches.len() < self.keep,
        }
    }

    fn cut(&self, text: &str) -> (String, bool) {
        let text = text.trim_end_matches(['\n', '\r']);
        match position::byte_of_char(text, self.max_line_chars) {
            Some(byte) => (text[..byte].to_owned(), true),
            None => (text.to_owned(), false),
        }
    }
}

impl Sink for FileSink<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _searcher: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        self.total += 1;
        let Some(line) = mat.line_number() else { return Ok(true) };
        if self.matches.len() >= self.keep {
            // Keep counting; a matching line can still be context of the last kept hit.
            if self.wants_context_for(line) {
                let (text, _) = self.cut(&String::from_utf8_lossy(mat.bytes()));
                self.lines.insert(line, text);
            }
            return Ok(true);
        }
        let bytes = mat.bytes();
        let first = self.matcher.find(bytes).ok().flatten().map_or(0, |m| m.start());
        // Count the column in the text we return: invalid UTF-8 before the match becomes one
        // U+FFFD per bad sequence there, so convert the prefix the same way.
        let prefix = String::from_utf8_lossy(&bytes[..first.min(bytes.len())]);
        let (column, _) = column_in_line(&prefix, prefix.len(), Encoding::Utf32);
        let text = String::from_utf8_lossy(bytes);
        let (text, cut) = self.cut(&text);
        self.lines.insert(line, text.clone());
        self.matches.push((line, position::one_based(column), text, cut));
        Ok(true)
    }

    fn context(&mut self, _searcher: &Searcher, context: &SinkContext<'_>) -> Result<bool, Self::Error> {
        let Some(line) = context.line_number() else { return Ok(true) };
        if self.wants_context_for(line) {
            let (text, _) = self.cut(&String::from_utf8_lossy(context.bytes()));
            self.lines.insert(line, text);
        }
        Ok(true)
    }
}
