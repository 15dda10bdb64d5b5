//! Text helpers for edits: the file's line-ending style, indentation, and re-indenting inserted
//! content. Line boundaries (LSP's rule: `\n`, `\r\n` and a lone `\r` end a line) come from
//! `documents::position`.
//!
//! All offsets are byte offsets into a `&str` and always fall on character boundaries.

use crate::documents::position;

/// A file's line-ending style, from its first line break (LF when it has none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineEnding {
    Lf,
    CrLf,
    Cr,
}

impl LineEnding {
    /// The style of `text`'s first line break; [`LineEnding::Lf`] for text without one.
    pub fn detect(text: &str) -> LineEnding {
        // The first line's break, empty when the text has none.
        match &text[position::line_content_end(text, 0)..position::next_line_start(text, 0)] {
            "\r\n" => LineEnding::CrLf,
            "\r" => LineEnding::Cr,
            _ => LineEnding::Lf,
        }
    }

    /// The line break itself.
    pub fn as_str(self) -> &'static str {
        match self {
            LineEnding::Lf => "\n",
            LineEnding::CrLf => "\r\n",
            LineEnding::Cr => "\r",
        }
    }

    /// `content` with every line break (`\r\n`, `\n`, lone `\r`) written in this style. Nothing
    /// else changes: a backslash followed by `n` is two characters and stays two characters.
    pub fn apply(self, content: &str) -> String {
        let mut out = String::with_capacity(content.len() + content.len() / 16);
        let mut chars = content.char_indices().peekable();
        while let Some((_, c)) = chars.next() {
            match c {
                '\r' => {
                    if matches!(chars.peek(), Some((_, '\n'))) {
                        chars.next();
                    }
                    out.push_str(self.as_str());
                }
                '\n' => out.push_str(self.as_str()),
                other => out.push(other),
            }
        }
        out
    }
}

/// Length in bytes of a UTF-8 byte order mark at the start of `text` (0 or 3).
pub fn bom_len(text: &str) -> usize {
    if text.starts_with('\u{feff}') { 3 } else { 0 }
}

/// Whether only spaces and tabs (and a BOM on the first line) come before `at` on its line.
pub fn starts_line(text: &str, at: usize) -> bool {
    let start = position::line_start(text, at).max(bom_len(text).min(at));
    text[start..at].bytes().all(|b| b == b' ' || b == b'\t')
}

/// Whether only spaces and tabs come after `at` on its line.
pub fn ends_line(text: &str, at: usize) -> bool {
    text[at..position::line_content_end(text, at)].bytes().all(|b| b == b' ' || b == b'\t')
}

/// The leading spaces and tabs of the line holding `at` (after a BOM on the first line).
pub fn indentation(text: &str, at: usize) -> &str {
    let start = position::line_start(text, at);
    let start = if start == 0 { bom_len(text) } else { start };
    let rest = &text[start..];
    let len = rest.bytes().take_while(|b| *b == b' ' || *b == b'\t').count();
    &rest[..len]
}

/// Whether the line holding `at` is blank (spaces and tabs only).
pub fn is_blank_line(text: &str, at: usize) -> bool {
    let start = position::line_start(text, at);
    text[start..position::line_content_end(text, at)].bytes().all(|b| b == b' ' || b == b'\t')
}

/// `content` without one trailing line break (`\r\n`, `\n` or `\r`).
pub fn strip_one_break(content: &str) -> &str {
    content
        .strip_suffix("\r\n")
        .or_else(|| content.strip_suffix('\n'))
        .or_else(|| content.strip_suffix('\r'))
        .unwrap_or(content)
}

/// Re-indents `content` for a place whose lines are indented by `indent`.
///
/// The common leading whitespace of the non-blank lines is removed, then `indent` is put before
/// each non-blank line — except the first when `indent_first` is false (the first line then
/// continues a line that is already indented, as when replacing a node in place). Blank lines
/// stay empty. Line breaks come out as `\n`; callers apply the file's [`LineEnding`].
pub fn reindent(content: &str, indent: &str, indent_first: bool) -> String {
    let normalised = LineEnding::Lf.apply(content);
    let lines: Vec<&str> = normalised.split('\n').collect();
    let common = lines
        .iter()
        .filter(|line| !line.trim().is_empty())
        .map(|line| line.bytes().take_while(|b| *b == b' ' || *b == b'\t').count())
        .min()
        .unwrap_or(0);
    let mut out = String::with_capacity(normalised.len() + lines.len() * indent.len());
    for (i, line) in lines.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        if line.trim().is_empty() {
            continue;
        }
        // Lines may share less than `common` bytes of *the same* whitespace (tabs vs spaces);
        // only strip what is whitespace.
        let strip = line.bytes().take(common).take_while(|b| *b == b' ' || *b == b'\t').count();
        if i > 0 || indent_first {
            out.push_str(indent);
        }
        out.push_str(&line[strip..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_endings_are_detected_and_applied() {
        assert_eq!(LineEnding::detect("a\r\nb\n"), LineEnding::CrLf);
        assert_eq!(LineEnding::detect("a\nb\r\n"), LineEnding::Lf);
        assert_eq!(LineEnding::detect("a\rb"), LineEnding::Cr);
        assert_eq!(LineEnding::detect("none"), LineEnding::Lf);
        assert_eq!(LineEnding::CrLf.apply("a\nb\r\nc\rd\\n"), "a\r\nb\r\nc\r\nd\\n");
        assert_eq!(LineEnding::Lf.apply("x\r\n"), "x\n");
    }

    #[test]
    fn indentation_and_reindent() {
        let text = "\u{feff}x\n\tif a {\n\t\tb()\n";
        assert_eq!(indentation(text, 0), "");
        assert_eq!(indentation(text, 6), "\t");
        assert!(starts_line(text, 3));
        assert!(starts_line(text, 6));
        assert!(!starts_line(text, 7));
        assert!(ends_line(text, 4));
        assert_eq!(reindent("def f(self):\n    return 1", "    ", true), "    def f(self):\n        return 1");
        assert_eq!(reindent("    def f(self):\n\n        return 1\n", "  ", false), "def f(self):\n\n      return 1\n");
        assert_eq!(reindent("x", "\t", true), "\tx");
    }
}
