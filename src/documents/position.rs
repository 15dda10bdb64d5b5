//! Position conversion: the only place where byte offsets, characters, UTF-16 code units and
//! 0-/1-based lines and columns are converted into one another.
//!
//! Inside the Engine every location is a **byte offset** into UTF-8 text (what tree-sitter and
//! the grep crates use). At the edges:
//! - LSP speaks [`Position`]: a 0-based line and a 0-based column counted in the code units of
//!   the negotiated `positionEncoding` (LSP 3.17, "Position" and "PositionEncodingKind"; UTF-16
//!   when nothing was negotiated);
//! - MCP tools and the CLI speak 1-based lines and 1-based columns counted in characters
//!   (Unicode scalar values, i.e. UTF-32 code units), see [`OneBased`].
//!
//! Line breaks are `\n`, `\r\n` and `\r`, as LSP defines them (ropey is built with `cr_lines`
//! and without Unicode line breaks for exactly this reason).
//!
//! Vocabulary: a *line* or *column* is 0-based (an index), a *line number* or *column number*
//! 1-based; [`one_based`] and [`zero_based`] turn one into the other. Plain text held outside a
//! rope (a `&str` or bytes) has its own helpers in the `lines` submodule, re-exported here:
//! [`LineIndex`], [`line_spans`], [`lines`], [`line_start`], [`count_line_breaks`], … .
//!
//! Offsets and positions from servers and agents are untrusted: conversions never panic; they
//! clamp to the nearest valid location and say so with [`Fidelity::Clamped`]. The clamps follow
//! LSP 3.17 "Position": a column past the end of its line means the end of the line (the line
//! break is not part of the line); a line past the end of the text means the end of the text.

use std::borrow::Cow;
use std::ops::Range;

use ropey::{Rope, RopeSlice};

mod lines;

pub use lines::{
    LineIndex, LineSpan, LineSpans, complete_lines_end, count_line_breaks, ends_with_line_break, line_content_end,
    line_count_in, line_spans, line_start, lines, lone_cr_to_lf, next_line_start,
};

/// The code unit in which columns are counted (LSP's `PositionEncodingKind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// Bytes of UTF-8 (`"utf-8"`).
    Utf8,
    /// UTF-16 code units (`"utf-16"`, LSP's mandatory default).
    Utf16,
    /// Unicode scalar values (`"utf-32"`), i.e. characters.
    Utf32,
}

impl Encoding {
    /// The LSP `PositionEncodingKind` string.
    pub fn lsp_name(self) -> &'static str {
        match self {
            Encoding::Utf8 => "utf-8",
            Encoding::Utf16 => "utf-16",
            Encoding::Utf32 => "utf-32",
        }
    }

    /// Parses an LSP `PositionEncodingKind` string.
    pub fn from_lsp_name(name: &str) -> Option<Encoding> {
        match name {
            "utf-8" => Some(Encoding::Utf8),
            "utf-16" => Some(Encoding::Utf16),
            "utf-32" => Some(Encoding::Utf32),
            _ => None,
        }
    }

    /// Code units that `ch` occupies in this encoding.
    fn units(self, ch: char) -> usize {
        match self {
            Encoding::Utf8 => ch.len_utf8(),
            Encoding::Utf16 => ch.len_utf16(),
            Encoding::Utf32 => 1,
        }
    }
}

/// Whether a conversion landed exactly or had to clamp an out-of-range input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fidelity {
    Exact,
    /// The input pointed past a line's end, past the text's end, or inside a character's
    /// encoding; the result is the nearest valid location before it.
    Clamped,
}

impl Fidelity {
    fn and(self, other: Fidelity) -> Fidelity {
        if self == Fidelity::Exact { other } else { Fidelity::Clamped }
    }
}

/// A 0-based line and a 0-based column in code units of some [`Encoding`] (LSP's `Position`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Position {
    pub line: u32,
    pub character: u32,
}

/// A 1-based line and a 1-based column in characters: the unit of MCP tools and the CLI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OneBased {
    pub line: u32,
    pub column: u32,
}

impl OneBased {
    /// The 0-based [`Position`] in [`Encoding::Utf32`]; `None` when line or column is 0.
    pub fn to_position(self) -> Option<Position> {
        Some(Position { line: self.line.checked_sub(1)?, character: self.column.checked_sub(1)? })
    }

    /// The 1-based form of a [`Position`] counted in [`Encoding::Utf32`].
    pub fn from_position(position: Position) -> OneBased {
        OneBased { line: position.line.saturating_add(1), column: position.character.saturating_add(1) }
    }
}

/// An unsigned type lines and columns are counted in: `u32` (LSP), `u64` (grep), `usize`.
pub trait LineOrColumn: Copy {
    #[doc(hidden)]
    fn plus_one(self) -> Self;
    #[doc(hidden)]
    fn minus_one(self) -> Option<Self>;
}

macro_rules! line_or_column {
    ($($t:ty),*) => {$(
        impl LineOrColumn for $t {
            fn plus_one(self) -> Self {
                self.saturating_add(1)
            }
            fn minus_one(self) -> Option<Self> {
                self.checked_sub(1)
            }
        }
    )*};
}
line_or_column!(u32, u64, usize);

/// The 1-based number of a 0-based line or column (saturating at the type's maximum).
pub fn one_based<T: LineOrColumn>(index: T) -> T {
    index.plus_one()
}

/// The 0-based index of a 1-based line or column number; `None` for 0, which numbers nothing.
pub fn zero_based<T: LineOrColumn>(number: T) -> Option<T> {
    number.minus_one()
}

/// The 1-based form of a [`Position`] whose text is not at hand (a location a server gave in
/// a file outside the root): the line is exact; the column stays counted in the position's own
/// code units, which equals characters only on lines where the encodings agree (ASCII).
pub fn one_based_without_text(position: Position) -> OneBased {
    OneBased::from_position(position)
}

/// Number of lines as an editor shows them: a final line break does not start a new line, and
/// empty text has 0 lines. (`ropey` counts the empty line after a final break; `wc -l` counts
/// breaks; this counts what `grep -n` can number.)
pub fn line_count(text: &Rope) -> usize {
    let lines = text.len_lines();
    if text.len_bytes() == 0 {
        0
    } else if rope_ends_with_line_break(text) {
        lines - 1
    } else {
        lines
    }
}

fn rope_ends_with_line_break(text: &Rope) -> bool {
    // `Rope::byte` descends the tree once; a `Bytes` iterator would also allocate its stack.
    let n = text.len_bytes();
    n > 0 && matches!(text.byte(n - 1), b'\n' | b'\r')
}

/// The text of 0-based line `line` without its line break, or `None` past the end.
///
/// A line that lies within one chunk of the rope (nearly every line: chunks hold about 1 KB)
/// is returned as a slice of that chunk's `&str`, which is cheaper to build and to walk than
/// a slice of the tree (`Rope::line` measures the slice's chunks as it builds it).
pub fn line_text(text: &Rope, line: usize) -> Option<RopeSlice<'_>> {
    Some(match rope_line(text, line)? {
        RopeLine::Chunk(within) => RopeSlice::from(within),
        RopeLine::Slice(slice) => slice,
    })
}

/// [`line_text`] as a string: borrowed from the rope's chunk when the line lies within one,
/// else copied out of the tree. With the text's [`LineStarts`], the line is found by its
/// bytes, without counting line breaks in the rope.
fn line_str<'a>(text: &'a Rope, lines: Option<&LineStarts>, line: usize) -> Option<Cow<'a, str>> {
    let found = match lines {
        Some(lines) => lines.line(text, line)?,
        None => rope_line(text, line)?,
    };
    Some(match found {
        RopeLine::Chunk(within) => Cow::Borrowed(within),
        RopeLine::Slice(slice) => Cow::Owned(slice.to_string()),
    })
}

/// Where each line of one text starts: byte offsets (`u32`), the first 0, one more after each
/// line break (LF, CR, CRLF: the rope's `cr_lines` breaks), so as many as `Rope::len_lines`.
/// Built once for a text that is read often and never changes (a file's text as the disk
/// cache keeps it, `documents/disk_cache.rs`): 4 bytes a line, and a line's bytes are then two
/// loads, where [`rope_line`] counts the breaks of a chunk (about 2,500 instructions a line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineStarts {
    starts: Box<[u32]>,
    len: u32,
}

impl LineStarts {
    /// The line starts of `text`; `None` for a text of 4 GiB or more (offsets past `u32`).
    pub fn of(text: &Rope) -> Option<LineStarts> {
        let len = u32::try_from(text.len_bytes()).ok()?;
        let mut starts = Vec::with_capacity(text.len_lines());
        starts.push(0u32);
        let mut offset = 0usize;
        // A CR ending the chunk before: its line starts after an LF that begins this one.
        let mut cr_before = false;
        for chunk in text.chunks() {
            let bytes = chunk.as_bytes();
            let mut from = 0;
            if cr_before && bytes.first() == Some(&b'\n') {
                *starts.last_mut().expect("a start per break") += 1;
                from = 1;
            }
            cr_before = false;
            for at in memchr::memchr2_iter(b'\n', b'\r', &bytes[from..]).map(|at| at + from) {
                if bytes[at] == b'\r' && bytes.get(at + 1) == Some(&b'\n') {
                    continue; // The LF after it ends the break.
                }
                cr_before = bytes[at] == b'\r' && at + 1 == bytes.len();
                starts.push((offset + at + 1) as u32);
            }
            offset += bytes.len();
        }
        Some(LineStarts { starts: starts.into_boxed_slice(), len })
    }

    /// Bytes this index holds (for a cache's byte bound).
    pub fn heap_bytes(&self) -> usize {
        self.starts.len() * std::mem::size_of::<u32>()
    }

    /// Number of lines (`Rope::len_lines` of the text it was built from).
    pub fn len(&self) -> usize {
        self.starts.len()
    }

    /// Always false: a text has at least one line.
    pub fn is_empty(&self) -> bool {
        self.starts.is_empty()
    }

    /// 0-based `line` of `text` (the text this index was built from) without its break, as
    /// [`rope_line`] finds it.
    fn line<'a>(&self, text: &'a Rope, line: usize) -> Option<RopeLine<'a>> {
        let start = *self.starts.get(line)? as usize;
        let next = self.starts.get(line + 1).map(|&next| next as usize);
        // One descent of the tree; the line and its break are nearly always in that chunk.
        let (chunk, chunk_start, _, _) = text.chunk_at_byte(start);
        let chunk_end = chunk_start + chunk.len();
        if start >= chunk_start {
            let within = |end: usize| RopeLine::Chunk(&chunk[start - chunk_start..end - chunk_start]);
            match next {
                Some(next) if next <= chunk_end => {
                    let bytes = chunk.as_bytes();
                    // The break before the next line: LF or CR at `next - 1`, CRLF one byte earlier.
                    let crlf = next >= start + 2
                        && bytes[next - 1 - chunk_start] == b'\n'
                        && bytes[next - 2 - chunk_start] == b'\r';
                    return Some(within(next - 1 - usize::from(crlf)));
                }
                None if chunk_end == self.len as usize => return Some(within(chunk_end)),
                _ => {}
            }
        }
        let end = match next {
            Some(next) => {
                let crlf = next >= start + 2 && text.byte(next - 1) == b'\n' && text.byte(next - 2) == b'\r';
                next - 1 - usize::from(crlf)
            }
            None => self.len as usize,
        };
        Some(RopeLine::Slice(text.byte_slice(start..end)))
    }
}

/// Where a line's text (without its break) lies in a rope.
enum RopeLine<'a> {
    /// Within one chunk.
    Chunk(&'a str),
    /// Across chunks.
    Slice(RopeSlice<'a>),
}

/// One descent of the tree to the chunk holding the line's start (as `Rope::line_to_byte`
/// finds it: the chunk of the line break before the line, then the breaks within it, counted
/// as the rope counts them); its end is the first line break (LF, CR: the rope's `cr_lines`
/// breaks) after it in the same chunk, or the text's end when the chunk is the last. A line
/// whose break before it ends a chunk starts in the next one, found by a second descent.
fn rope_line(text: &Rope, line: usize) -> Option<RopeLine<'_>> {
    if line >= text.len_lines() {
        return None;
    }
    let (chunk, chunk_start, _, chunk_line) = text.chunk_at_line_break(line);
    let within = ropey::str_utils::line_to_byte_idx(chunk, line - chunk_line);
    let (chunk, chunk_start, start) = if within < chunk.len() {
        (chunk, chunk_start, chunk_start + within)
    } else {
        let start = chunk_start + within;
        let (next, next_start, _, _) = text.chunk_at_byte(start);
        (next, next_start, start)
    };
    let rest = &chunk[start - chunk_start..];
    if let Some(end) = memchr::memchr2(b'\n', b'\r', rest.as_bytes()) {
        return Some(RopeLine::Chunk(&rest[..end]));
    }
    if chunk_start + chunk.len() == text.len_bytes() {
        // The text's last line, with no break after it.
        return Some(RopeLine::Chunk(rest));
    }
    let slice = text.byte_slice(start..text.line_to_byte(line + 1));
    Some(RopeLine::Slice(slice.byte_slice(..slice.len_bytes() - line_break_len(slice))))
}

/// Byte length of the line break (0, 1 or 2) at the end of a line slice.
fn line_break_len(line: RopeSlice<'_>) -> usize {
    let n = line.len_bytes();
    let byte = |back: usize| n.checked_sub(back).map(|i| line.byte(i));
    match (byte(1), byte(2)) {
        (Some(b'\n'), Some(b'\r')) => 2,
        (Some(b'\n' | b'\r'), _) => 1,
        _ => 0,
    }
}

/// The first and last 1-based line numbers of the byte range `range` of `text`. The end is
/// exclusive: a range ending just past a line break ends on the line before it; an empty
/// range is on its start's line. Offsets past the end clamp to the end.
pub fn line_numbers(text: &Rope, range: &Range<usize>) -> (usize, usize) {
    let len = text.len_bytes();
    let first = text.byte_to_line(range.start.min(len));
    let last = text.byte_to_line(range.end.saturating_sub(1).max(range.start).min(len));
    (first + 1, last + 1)
}

/// The byte offset where 0-based `line` of `text` starts; the text's end past the last line.
pub fn line_to_offset(text: &Rope, line: usize) -> usize {
    if line >= text.len_lines() { text.len_bytes() } else { text.line_to_byte(line) }
}

/// The bytes of 1-based lines `first..=last` of `text`, the last one's line break included;
/// clamped to the text (line number 0 is taken as 1).
pub fn line_numbers_to_bytes(text: &Rope, first: usize, last: usize) -> Range<usize> {
    let start = line_to_offset(text, first.saturating_sub(1));
    start..line_to_offset(text, last).max(start)
}

/// The byte offset of the character `chars` characters into `text` — where a cut to `chars`
/// characters ends — or `None` when `text` has no more than `chars` characters.
pub fn byte_of_char(text: &str, chars: usize) -> Option<usize> {
    text.char_indices().nth(chars).map(|(byte, _)| byte)
}

/// The longest start of the byte range `range` of `text` that holds at most `max_chars`
/// characters, and whether that cut anything. `range` is clamped to the text and to
/// character boundaries.
pub fn char_limited(text: &Rope, range: &Range<usize>, max_chars: usize) -> (Range<usize>, bool) {
    let len = text.len_bytes();
    let start = text.byte_to_char(range.start.min(len));
    let end = text.byte_to_char(range.end.min(len)).max(start);
    let cut = end - start > max_chars;
    let end = if cut { start + max_chars } else { end };
    (text.char_to_byte(start)..text.char_to_byte(end), cut)
}

/// The text of 0-based `line` without its break, trimmed; when it holds more than `max_chars`
/// characters (minified code), a window of `max_chars` characters around the 1-based character
/// column `column` (a third of the window before it), with `…` where it was cut. `None` past the
/// end of the text.
pub fn line_excerpt(text: &Rope, line: usize, column: usize, max_chars: usize) -> Option<String> {
    Some(excerpt_of(&line_str(text, None, line)?, column, max_chars))
}

/// [`line_excerpt`] of a line already looked up (without its break).
fn excerpt_of(line: &str, column: usize, max_chars: usize) -> String {
    // No more bytes than `max_chars` is no more characters either.
    let chars = if line.len() <= max_chars { line.len() } else { line.chars().count() };
    if chars <= max_chars {
        return line.trim().to_owned();
    }
    let start = column.saturating_sub(1).min(chars).saturating_sub(max_chars / 3);
    let end = (start + max_chars).min(chars);
    let byte_of = |char_index: usize| line.char_indices().nth(char_index).map_or(line.len(), |(byte, _)| byte);
    let window = &line[byte_of(start)..byte_of(end)];
    let before = if start > 0 { "…" } else { "" };
    let after = if end < chars { "…" } else { "" };
    format!("{before}{}{after}", window.trim())
}

/// The 0-based lines `lines` in order (those past the end of the text left out): each line's
/// first `max_chars` characters without its break, and whether the line was longer. One
/// descent of the rope to the first line, then the lines one after the other (a preview's
/// seven lines cost one lookup, not seven).
pub fn line_prefixes(
    text: &Rope,
    lines: Range<usize>,
    max_chars: usize,
) -> impl Iterator<Item = (RopeSlice<'_>, bool)> {
    let first = lines.start.min(text.len_lines());
    text.lines_at(first).take(lines.end.saturating_sub(first)).map(move |line| {
        let line = line.byte_slice(..line.len_bytes() - line_break_len(line));
        if line.len_chars() > max_chars { (line.slice(..max_chars), true) } else { (line, false) }
    })
}

/// What [`read_window`] took from a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    /// The bytes taken.
    pub bytes: Range<usize>,
    /// The 1-based number of the last line the bytes reach into: the requested last line
    /// unless the budget cut the read.
    pub last_line: usize,
    /// Whether the requested start column was past the end of its line (the read then starts
    /// at the line's end, as LSP clamps a column).
    pub column_clamped: bool,
    /// Where the character budget cut the read; `None` when all requested lines fit.
    pub cut: Option<WindowCut>,
}

/// Where [`read_window`]'s budget ended a read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WindowCut {
    /// Before a whole line: the read continues at this 1-based line.
    BeforeLine(usize),
    /// Inside the first line, which alone was over the budget: the read continues at 1-based
    /// character `column` of it, after `taken` of its `line_chars` characters.
    InLine { column: usize, taken: usize, line_chars: usize },
}

/// Lines `first..=last` (1-based, `first <= last`, both clamped to the text) of `text`, the last
/// one's break included, starting at 1-based character `column` of `first` (`None` or 1: the
/// line's start) and holding at most `max_chars` characters: the budget stops the read before
/// the first line that does not fit, or inside `first` when even it does not.
pub fn read_window(text: &Rope, first: usize, column: Option<usize>, last: usize, max_chars: usize) -> Window {
    let first_index = first.saturating_sub(1);
    let (start, column_clamped) = match column {
        Some(column) if column > 1 => {
            let at = OneBased { line: to_u32(first), column: to_u32(column) };
            let (offset, fidelity) = one_based_to_offset(text, at);
            (offset, fidelity == Fidelity::Clamped)
        }
        _ => (line_to_offset(text, first_index), false),
    };
    let end = line_to_offset(text, last).max(start);
    let (start_char, end_char) = (text.byte_to_char(start), text.byte_to_char(end));
    if end_char - start_char <= max_chars {
        return Window { bytes: start..end, last_line: last, column_clamped, cut: None };
    }
    let cut_char = start_char + max_chars;
    let cut_line = text.char_to_line(cut_char);
    if cut_line > first_index {
        // Some whole lines fit: stop before the one the budget ends in.
        let end = text.line_to_byte(cut_line);
        return Window {
            bytes: start..end,
            last_line: cut_line,
            column_clamped,
            cut: Some(WindowCut::BeforeLine(cut_line + 1)),
        };
    }
    let cut_byte = text.char_to_byte(cut_char);
    let (at, _) = offset_to_one_based(text, cut_byte);
    let line_chars = line_text(text, first_index).map_or(0, |line| line.len_chars());
    let column = at.column as usize;
    Window {
        bytes: start..cut_byte,
        last_line: first,
        column_clamped,
        cut: Some(WindowCut::InLine { column, taken: column - 1, line_chars }),
    }
}

/// The column just after `text` written from `column`, both counted in characters (`text`
/// holds no line break): the exclusive end column of a name that starts at `column`.
pub fn column_after(column: usize, text: &str) -> usize {
    column + text.chars().count()
}

/// Whether byte `offset` is a character boundary of `text` (its end included).
pub fn is_char_boundary(text: &Rope, offset: usize) -> bool {
    let len = text.len_bytes();
    offset == len || (offset < len && !is_continuation(text.byte(offset)))
}

/// The character index of byte `offset` (ropey's editing API counts characters); an offset
/// past the end is the end, one inside a character that character.
pub fn offset_to_char(text: &Rope, offset: usize) -> usize {
    text.byte_to_char(offset.min(text.len_bytes()))
}

/// Converts a byte offset into a [`Position`] in `encoding`.
///
/// An offset past the end clamps to the end; an offset inside a character clamps to its start.
pub fn offset_to_position(text: &Rope, offset: usize, encoding: Encoding) -> (Position, Fidelity) {
    let (offset, fidelity) = clamp_offset(text, offset);
    let line = text.byte_to_line(offset);
    let line_start = text.line_to_byte(line);
    let column = units_between(text, line_start, offset, encoding);
    (Position { line: to_u32(line), character: to_u32(column) }, fidelity)
}

/// Converts a [`Position`] in `encoding` into a byte offset.
///
/// A line past the end clamps to the end of the text; a column past the line's end clamps to
/// the end of the line (before its break); a column inside a character clamps to its start.
pub fn position_to_offset(text: &Rope, position: Position, encoding: Encoding) -> (usize, Fidelity) {
    let line = position.line as usize;
    let Some(line_slice) = line_text(text, line) else {
        return (text.len_bytes(), Fidelity::Clamped);
    };
    let line_start = text.line_to_byte(line);
    let (byte, fidelity) = byte_of_column_in(line_slice.chars(), position.character as usize, encoding);
    (line_start + byte, fidelity)
}

/// Re-expresses a [`Position`] counted in `from` units as one counted in `to` units, on the
/// same line of `text` (a proxy translating between an editor's and a server's
/// `positionEncoding`). Costs the length of the line.
///
/// A column inside a character or past the line's end clamps as in [`position_to_offset`]; a
/// line past the end of the text is returned unchanged, marked [`Fidelity::Clamped`].
pub fn convert_position(text: &Rope, position: Position, from: Encoding, to: Encoding) -> (Position, Fidelity) {
    if from == to {
        return (position, Fidelity::Exact);
    }
    let Some(line) = line_str(text, None, position.line as usize) else {
        return (position, Fidelity::Clamped);
    };
    let (byte, fidelity) = byte_of_column_in(line.chars(), position.character as usize, from);
    let (units, _) = column_in_line(&line, byte, to);
    (Position { line: position.line, character: units }, fidelity)
}

/// Converts a 1-based line and character column (the MCP/CLI unit) into a byte offset.
///
/// Line or column 0 clamps to 1. See [`position_to_offset`] for the other clamps.
pub fn one_based_to_offset(text: &Rope, at: OneBased) -> (usize, Fidelity) {
    let position = Position { line: at.line.saturating_sub(1), character: at.column.saturating_sub(1) };
    let fidelity = if at.line == 0 || at.column == 0 { Fidelity::Clamped } else { Fidelity::Exact };
    let (offset, inner) = position_to_offset(text, position, Encoding::Utf32);
    (offset, fidelity.and(inner))
}

/// Converts a byte offset into a 1-based line and character column (the MCP/CLI unit).
pub fn offset_to_one_based(text: &Rope, offset: usize) -> (OneBased, Fidelity) {
    let (position, fidelity) = offset_to_position(text, offset, Encoding::Utf32);
    (OneBased::from_position(position), fidelity)
}

/// Converts a [`Position`] counted in `encoding` units (a location from a server) into the
/// 1-based line and character column (the MCP/CLI unit), looking the line up once.
///
/// Same result and clamps as [`position_to_offset`] followed by [`offset_to_one_based`]: a
/// column inside a character or past the line's end clamps, a line past the end of the text
/// gives the end of the text, both marked [`Fidelity::Clamped`].
pub fn position_to_one_based(text: &Rope, position: Position, encoding: Encoding) -> (OneBased, Fidelity) {
    let Some(line) = line_str(text, None, position.line as usize) else {
        let (at, _) = offset_to_one_based(text, text.len_bytes());
        return (at, Fidelity::Clamped);
    };
    let (column, fidelity) = char_of_column(&line, position.character as usize, encoding);
    (OneBased::from_position(Position { line: position.line, character: to_u32(column) }), fidelity)
}

/// A server's range (`start` and `end` counted in `encoding` units) as 1-based lines and
/// character columns, with the [`line_excerpt`] of its start's line at its start's column:
/// what a location shows an agent. The start's line is looked up once, and serves the end too
/// when the range is on one line (nearly every location a server sends). Same answers and
/// clamps as [`position_to_one_based`] of each end and [`line_excerpt`] at the start.
pub fn range_to_one_based(
    text: &Rope,
    start: Position,
    end: Position,
    encoding: Encoding,
    max_chars: usize,
) -> (OneBased, OneBased, Option<String>) {
    range_to_one_based_in(text, None, start, end, encoding, max_chars)
}

/// [`range_to_one_based`], with the text's [`LineStarts`] when it has them (the same answer,
/// found without counting line breaks).
pub fn range_to_one_based_in(
    text: &Rope,
    lines: Option<&LineStarts>,
    start: Position,
    end: Position,
    encoding: Encoding,
    max_chars: usize,
) -> (OneBased, OneBased, Option<String>) {
    let Some(line) = line_str(text, lines, start.line as usize) else {
        // Past the end of the text: both ends clamp there.
        let first = position_to_one_based(text, start, encoding).0;
        let excerpt =
            zero_based(first.line as usize).and_then(|l| line_excerpt(text, l, first.column as usize, max_chars));
        return (first, position_to_one_based(text, end, encoding).0, excerpt);
    };
    let on_line = |at: Position| {
        let (column, _) = char_of_column(&line, at.character as usize, encoding);
        OneBased::from_position(Position { line: at.line, character: to_u32(column) })
    };
    let first = on_line(start);
    let last = if end.line == start.line { on_line(end) } else { position_to_one_based(text, end, encoding).0 };
    (first, last, Some(excerpt_of(&line, first.column as usize, max_chars)))
}

/// The 0-based column, in `encoding` units, of byte `byte` within one line of text.
///
/// For callers that hold a line as a string (the search module). A byte past the line's end
/// clamps to the end; a byte inside a character clamps to its start.
pub fn column_in_line(line: &str, byte: usize, encoding: Encoding) -> (u32, Fidelity) {
    let mut fidelity = Fidelity::Exact;
    let mut end = byte;
    if end > line.len() {
        end = line.len();
        fidelity = Fidelity::Clamped;
    }
    while !line.is_char_boundary(end) {
        end -= 1;
        fidelity = Fidelity::Clamped;
    }
    let head = &line[..end];
    let column = match encoding {
        Encoding::Utf8 => head.len(),
        Encoding::Utf16 => head.encode_utf16().count(),
        Encoding::Utf32 => head.chars().count(),
    };
    (to_u32(column), fidelity)
}

/// The byte index within one line of the 0-based `column` counted in `encoding` units.
pub fn byte_in_line(line: &str, column: u32, encoding: Encoding) -> (usize, Fidelity) {
    let line = line.trim_end_matches(['\n', '\r']);
    byte_of_column_in(line.chars(), column as usize, encoding)
}

/// The 0-based character index within `line` (without its break) of its 0-based `column`
/// counted in `encoding` units, clamped as [`byte_of_column_in`] clamps. A prefix of ASCII,
/// where every encoding counts one unit per byte, is not walked.
fn char_of_column(line: &str, column: usize, encoding: Encoding) -> (usize, Fidelity) {
    let ascii = column.min(line.len());
    if line.as_bytes()[..ascii].is_ascii() {
        // Either the column, or past the end of an all-ASCII line: its end.
        return (ascii, if ascii == column { Fidelity::Exact } else { Fidelity::Clamped });
    }
    let (byte, fidelity) = byte_of_column_in(line.chars(), column, encoding);
    (line[..byte].chars().count(), fidelity)
}

fn byte_of_column_in(chars: impl Iterator<Item = char>, column: usize, encoding: Encoding) -> (usize, Fidelity) {
    let mut units = 0;
    let mut byte = 0;
    for ch in chars {
        if units == column {
            return (byte, Fidelity::Exact);
        }
        let next = units + encoding.units(ch);
        if next > column {
            // `column` points inside this character's encoding.
            return (byte, Fidelity::Clamped);
        }
        units = next;
        byte += ch.len_utf8();
    }
    let fidelity = if units == column { Fidelity::Exact } else { Fidelity::Clamped };
    (byte, fidelity)
}

fn clamp_offset(text: &Rope, offset: usize) -> (usize, Fidelity) {
    let len = text.len_bytes();
    if offset > len {
        return (len, Fidelity::Clamped);
    }
    // Walk back to a character boundary: a boundary byte is not a UTF-8 continuation byte.
    let mut at = offset;
    let mut fidelity = Fidelity::Exact;
    while at < len && at > 0 && is_continuation(text.byte(at)) {
        at -= 1;
        fidelity = Fidelity::Clamped;
    }
    (at, fidelity)
}

fn is_continuation(byte: u8) -> bool {
    byte & 0b1100_0000 == 0b1000_0000
}

fn units_between(text: &Rope, start: usize, end: usize, encoding: Encoding) -> usize {
    match encoding {
        Encoding::Utf8 => end - start,
        Encoding::Utf32 => text.byte_to_char(end) - text.byte_to_char(start),
        Encoding::Utf16 => {
            let (start, end) = (text.byte_to_char(start), text.byte_to_char(end));
            text.char_to_utf16_cu(end) - text.char_to_utf16_cu(start)
        }
    }
}

fn to_u32(value: usize) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests;
