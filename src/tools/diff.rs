//! Unified diffs for tool results, bounded by the output budget: an edit of a 15 MB one-line
//! file must not answer with two 15 MB lines.
//!
//! [`BoundedDiff`] receives the diff as `similar` formats it (3 lines of context) and keeps at
//! most `line_chars` characters of each line (the rest replaced by a marker saying how many
//! were left out) and at most `budget` characters in all; past the budget it only counts what
//! it leaves out, and [`BoundedDiff::finish`] ends the text with a line saying how much that
//! was. The edit itself is never affected: only its description is cut.

use std::fmt::Write;

/// Characters of one diff line kept before it is cut.
pub const DIFF_LINE_CHARS: usize = 2000;

/// A unified diff being written within a character budget (see the module docs).
#[derive(Debug)]
pub struct BoundedDiff {
    text: String,
    /// Characters in `text`.
    kept: usize,
    budget: usize,
    line_chars: usize,
    /// Characters of the current line seen so far (kept or not).
    line_seen: usize,
    /// Characters of the current line left out by the per-line cut.
    line_cut: usize,
    /// Whether the budget is used up: from then on lines are only counted.
    full: bool,
    /// Whether some line was cut.
    cut_any: bool,
    omitted_lines: usize,
    omitted_chars: usize,
}

/// What [`BoundedDiff::finish`] returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FinishedDiff {
    /// The diff, with markers where lines were cut and a last line when the budget cut it.
    pub text: String,
    /// Whether anything was left out (a line cut, or lines past the budget).
    pub truncated: bool,
}

impl BoundedDiff {
    /// A diff of at most `budget` characters (plus the closing marker), lines cut at
    /// `line_chars` characters.
    pub fn new(budget: usize, line_chars: usize) -> BoundedDiff {
        BoundedDiff {
            text: String::new(),
            kept: 0,
            budget,
            line_chars: line_chars.max(1),
            line_seen: 0,
            line_cut: 0,
            full: false,
            cut_any: false,
            omitted_lines: 0,
            omitted_chars: 0,
        }
    }

    /// Appends the unified diff of `old` → `new` (3 lines of context), headed `a/{shown}` and
    /// `b/{shown}`.
    pub fn add(&mut self, old: &str, new: &str, shown: &str) {
        self.add_diff(&similar::TextDiff::from_lines(old, new), shown);
    }

    /// Appends `diff` (a line diff) as [`BoundedDiff::add`] does.
    pub fn add_diff(&mut self, diff: &similar::TextDiff<'_, '_, str>, shown: &str) {
        let mut unified = diff.unified_diff();
        unified.context_radius(3).header(&format!("a/{shown}"), &format!("b/{shown}"));
        let _ = write!(self, "{unified}");
    }

    /// The text, ending with `… [diff cut at the output budget: N more lines (M characters)
    /// left out]` when the budget cut it.
    pub fn finish(mut self) -> FinishedDiff {
        if self.line_seen > 0 {
            self.end_line();
        }
        let truncated = self.full || self.cut_any;
        if self.omitted_lines > 0 {
            let _ = writeln!(
                self.text,
                "… [diff cut at the output budget: {} more lines ({} characters) left out; the edit itself is whole]",
                self.omitted_lines, self.omitted_chars
            );
        }
        FinishedDiff { text: self.text, truncated }
    }

    fn end_line(&mut self) {
        if self.full {
            self.omitted_lines += 1;
        } else {
            if self.line_cut > 0 {
                let marker = format!("… [{} characters of this line left out]", self.line_cut);
                self.kept += marker.chars().count();
                self.text.push_str(&marker);
                self.cut_any = true;
            }
            self.text.push('\n');
            self.kept += 1;
        }
        self.line_seen = 0;
        self.line_cut = 0;
    }
}

impl Write for BoundedDiff {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let mut rest = s;
        while !rest.is_empty() {
            let (piece, newline) = match rest.find('\n') {
                Some(at) => (&rest[..at], true),
                None => (rest, false),
            };
            rest = if newline { &rest[piece.len() + 1..] } else { "" };
            if self.line_seen == 0 && !self.full && self.kept >= self.budget {
                self.full = true;
            }
            let chars = piece.chars().count();
            if self.full {
                self.omitted_chars += chars + usize::from(newline);
            } else {
                let room = self.line_chars.saturating_sub(self.line_seen);
                if chars <= room {
                    self.text.push_str(piece);
                    self.kept += chars;
                } else {
                    let cut = crate::documents::position::byte_of_char(piece, room).unwrap_or(piece.len());
                    self.text.push_str(&piece[..cut]);
                    self.kept += room;
                    self.line_cut += chars - room;
                }
            }
            self.line_seen += chars;
            if newline {
                // An empty line still counts as a line seen.
                self.line_seen = self.line_seen.max(1);
                self.end_line();
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_diffs_are_whole() {
        let mut diff = BoundedDiff::new(10_000, 100);
        diff.add("a\nb\nc\n", "a\nB\nc\n", "f.txt");
        let done = diff.finish();
        assert_eq!(done.text, "--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n");
        assert!(!done.truncated);
    }

    /// Issue 16: a preview of an edit of a 15 MB one-line file was 63 MB over MCP.
    #[test]
    fn a_diff_of_a_huge_line_is_bounded() {
        let old = "x".repeat(1_000_000) + "\n";
        let new = "y".repeat(1_000_000) + "\n";
        let mut diff = BoundedDiff::new(5_000, 2_000);
        diff.add(&old, &new, "min.js");
        let done = diff.finish();
        assert!(done.truncated);
        assert!(done.text.chars().count() < 5_000 + 2 * 2_100, "{}", done.text.len());
        assert!(done.text.contains("-xxx") && done.text.contains("… [998001 characters of this line left out]"));
    }

    #[test]
    fn the_budget_cuts_whole_lines_and_says_how_many() {
        let old: String = (0..1000).map(|i| format!("line {i}\n")).collect();
        let new: String = (0..1000).map(|i| format!("LINE {i}\n")).collect();
        let mut diff = BoundedDiff::new(1_000, 2_000);
        diff.add(&old, &new, "f.txt");
        let done = diff.finish();
        assert!(done.truncated);
        let last = done.text.lines().last().unwrap();
        assert!(last.starts_with("… [diff cut at the output budget: "), "{last}");
        assert!(done.text.chars().count() < 1_200);
        let kept = done.text.lines().count() - 1;
        let left: usize = last.split(": ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
        assert_eq!(kept + left, 2 + 1 + 2000, "every line is either kept or counted");
    }
}
