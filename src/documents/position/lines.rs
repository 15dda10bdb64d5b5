//! Lines of plain text (a `&str`, or bytes that may not be UTF-8) by LSP's rule, for code that
//! holds text outside a rope: edit planning, search sinks, streamed reads, analyses.
//!
//! `\n`, `\r\n` and a lone `\r` each end a line (LSP 3.17, "Text Documents"). Line breaks are
//! ASCII, so every function here works on bytes and so on invalid UTF-8 too; offsets are byte
//! offsets. Vocabulary, as in the parent module: a *line* is a 0-based line index, a *line
//! number* a 1-based one. A final line break does not start another line (the editor's and
//! `grep -n`'s count), and empty text has no lines.

use std::ops::Range;

/// One line of a text, as byte offsets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineSpan {
    /// The line's first byte.
    pub start: usize,
    /// The end of the line's text: the offset of its line break, or the text's end.
    pub content_end: usize,
    /// Just past the line break (the next line's start); `content_end` when the line has no
    /// break (the last line of a text that does not end with one).
    pub end: usize,
}

/// The lines of a text in order; see [`line_spans`].
#[derive(Debug, Clone)]
pub struct LineSpans<'t> {
    bytes: &'t [u8],
    at: usize,
}

impl Iterator for LineSpans<'_> {
    type Item = LineSpan;

    fn next(&mut self) -> Option<LineSpan> {
        if self.at >= self.bytes.len() {
            return None;
        }
        let start = self.at;
        let content_end = line_content_end(self.bytes, start);
        let end = break_end(self.bytes, content_end);
        self.at = end;
        Some(LineSpan { start, content_end, end })
    }
}

/// Every line of `text` as a [`LineSpan`] (none for empty text).
pub fn line_spans<T: AsRef<[u8]> + ?Sized>(text: &T) -> LineSpans<'_> {
    LineSpans { bytes: text.as_ref(), at: 0 }
}

/// Every line of `text` without its line break — `str::lines` with a lone `\r` ending a line
/// too.
pub fn lines(text: &str) -> impl Iterator<Item = &str> {
    line_spans(text).map(move |span| &text[span.start..span.content_end])
}

/// The byte offset where the line holding byte `at` starts. An `at` past the end is taken as
/// the end; the `\n` of a `\r\n` belongs to the line the `\r` ends.
pub fn line_start<T: AsRef<[u8]> + ?Sized>(text: &T, at: usize) -> usize {
    let bytes = text.as_ref();
    let at = at.min(bytes.len());
    let mut before = &bytes[..at];
    // `at` on the `\n` of a `\r\n`: that break ends the line holding `at`; look before it.
    if bytes.get(at) == Some(&b'\n') && before.last() == Some(&b'\r') {
        before = &before[..at - 1];
    }
    memchr::memrchr2(b'\n', b'\r', before).map_or(0, |idx| idx + 1)
}

/// The end of the text of the line holding byte `at`: the offset of the first line break at
/// or after `at`, or the text's end. Never before `at` (clamped to the text's end).
pub fn line_content_end<T: AsRef<[u8]> + ?Sized>(text: &T, at: usize) -> usize {
    let bytes = text.as_ref();
    let at = at.min(bytes.len());
    memchr::memchr2(b'\n', b'\r', &bytes[at..]).map_or(bytes.len(), |idx| at + idx)
}

/// The byte offset just past the line break that ends the line holding `at` (the next line's
/// start), or the text's end when that line has no break.
pub fn next_line_start<T: AsRef<[u8]> + ?Sized>(text: &T, at: usize) -> usize {
    let bytes = text.as_ref();
    break_end(bytes, line_content_end(bytes, at))
}

/// Just past the line break at `content_end` (which is a break or the end of `bytes`).
fn break_end(bytes: &[u8], content_end: usize) -> usize {
    match bytes.get(content_end) {
        Some(b'\r') if bytes.get(content_end + 1) == Some(&b'\n') => content_end + 2,
        Some(_) => content_end + 1,
        None => content_end,
    }
}

/// Whether `text` ends with a line break.
pub fn ends_with_line_break<T: AsRef<[u8]> + ?Sized>(text: &T) -> bool {
    matches!(text.as_ref().last(), Some(b'\n' | b'\r'))
}

/// Line breaks in `text`: each `\n`, `\r\n` and lone `\r` counts once.
pub fn count_line_breaks<T: AsRef<[u8]> + ?Sized>(text: &T) -> usize {
    let bytes = text.as_ref();
    let feeds = memchr::memchr_iter(b'\n', bytes).count();
    let lone_returns = memchr::memchr_iter(b'\r', bytes).filter(|&idx| bytes.get(idx + 1) != Some(&b'\n')).count();
    feeds + lone_returns
}

/// Lines in `text` as an editor shows them: a final line break does not start a new line, and
/// empty text has 0 lines. (The rope form is [`super::line_count`].)
pub fn line_count_in<T: AsRef<[u8]> + ?Sized>(text: &T) -> usize {
    let bytes = text.as_ref();
    count_line_breaks(bytes) + usize::from(!bytes.is_empty() && !ends_with_line_break(bytes))
}

/// Turns each lone `\r` (one not followed by `\n`) into `\n`, in place.
///
/// For consumers that only know `\n` as a line terminator (grep-searcher): afterwards they
/// count lines as LSP does. Every byte offset stays where it was, and the text of each line is
/// the same as [`lines`] gives for the original.
pub fn lone_cr_to_lf(bytes: &mut [u8]) {
    let mut from = 0;
    while let Some(idx) = memchr::memchr(b'\r', &bytes[from..]) {
        let at = from + idx;
        if bytes.get(at + 1) != Some(&b'\n') {
            bytes[at] = b'\n';
        }
        from = at + 1;
    }
}

/// For text read in pieces: the end of the last line of `bytes` whose break is certain — just
/// past its last line break, except that a `\r` as the very last byte may be the first half of
/// a `\r\n` whose `\n` is still unread, so it does not count. `None` when no break is certain.
pub fn complete_lines_end(bytes: &[u8]) -> Option<usize> {
    let mut search = bytes;
    if search.last() == Some(&b'\r') {
        search = &search[..search.len() - 1];
    }
    memchr::memrchr2(b'\n', b'\r', search).map(|idx| idx + 1)
}

/// The start of every line of a `&str`, for many offset → line lookups on one text (O(log n)
/// each after one O(n) pass), by LSP's line rule.
#[derive(Debug, Clone)]
pub struct LineIndex<'t> {
    text: &'t str,
    /// Byte offset of each line's start; `starts[0] == 0`. For text ending with a line break
    /// the last entry is the text's end (the empty line an editor does not count).
    starts: Vec<usize>,
}

impl<'t> LineIndex<'t> {
    /// Indexes `text`.
    pub fn new(text: &'t str) -> LineIndex<'t> {
        let mut starts = Vec::with_capacity(text.len() / 32 + 1);
        starts.push(0);
        // Each line break starts a line; the end of a last line without one does not.
        starts.extend(line_spans(text).filter(|span| span.end > span.content_end).map(|span| span.end));
        LineIndex { text, starts }
    }

    /// The indexed text.
    pub fn text(&self) -> &'t str {
        self.text
    }

    /// The 0-based line holding byte `offset` (an offset past the end is on the last line).
    pub fn line(&self, offset: usize) -> usize {
        self.starts.partition_point(|start| *start <= offset).saturating_sub(1)
    }

    /// The 1-based line number holding byte `offset`.
    pub fn line_number(&self, offset: usize) -> usize {
        self.line(offset) + 1
    }

    /// The first and last 1-based line numbers of the byte range `range` (its end is
    /// exclusive: a range ending just past a line break ends on the line before; an empty
    /// range is on its start's line).
    pub fn line_numbers(&self, range: &Range<usize>) -> (usize, usize) {
        let last_byte = range.end.saturating_sub(1).max(range.start);
        (self.line_number(range.start), self.line_number(last_byte))
    }

    /// Lines as an editor shows them (see [`line_count_in`]).
    pub fn line_count(&self) -> usize {
        if self.text.is_empty() {
            0
        } else if ends_with_line_break(self.text) {
            self.starts.len() - 1
        } else {
            self.starts.len()
        }
    }

    /// The byte offset where 0-based `line` starts; the text's end past the last line.
    pub fn line_start(&self, line: usize) -> usize {
        self.starts.get(line).copied().unwrap_or(self.text.len())
    }

    /// The byte offset where 1-based line `number` starts (0 is taken as 1); the text's end
    /// past the last line.
    pub fn line_number_start(&self, number: usize) -> usize {
        self.line_start(number.saturating_sub(1))
    }

    /// The bytes of 1-based lines `first..=last`, the last one's line break included; clamped
    /// to the text (0 is taken as 1).
    pub fn line_numbers_to_bytes(&self, first: usize, last: usize) -> Range<usize> {
        let start = self.line_number_start(first);
        start..self.line_start(last).max(start)
    }

    /// The 1-based line and 1-based character column of byte `offset` (the MCP/CLI unit), as
    /// [`super::offset_to_one_based`] gives it for a rope: an offset past the end clamps to the
    /// end, one inside a character to its start.
    pub fn one_based(&self, offset: usize) -> (super::OneBased, super::Fidelity) {
        let line = self.line(offset);
        let start = self.line_start(line).min(self.text.len());
        let (column, fidelity) =
            super::column_in_line(&self.text[start..], offset - start.min(offset), super::Encoding::Utf32);
        let fidelity = if offset > self.text.len() { super::Fidelity::Clamped } else { fidelity };
        (super::OneBased::from_position(super::Position { line: super::to_u32(line), character: column }), fidelity)
    }
}
