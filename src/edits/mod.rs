//! Edits: a selector picks a span, an operation turns it into one text edit, validation refuses
//! edits that break the syntax, and the new text goes to whoever owns the file — the documents
//! store for an open buffer, an atomic write ([`write`]) for a file on disk.
//!
//! This module computes edits on text; it does no I/O. The rules (seed: filepuff API
//! reference, "Edit Operations"; the choices are written down in `docs/editing.md`):
//! - `new_content` is taken verbatim — no unescaping: a backslash and an `n` stay two
//!   characters. Its line breaks are written in the file's style (LF, CRLF or CR).
//! - AST insertions and replacements are re-indented to the target's indentation; text and
//!   line-range edits keep the content's own indentation.
//! - A byte order mark and the presence or absence of a final line break are kept.
//! - More than one candidate without `selector_index` is an error that lists them.
//! - For files with a grammar, an edit that adds ERROR or MISSING nodes is refused (errors that
//!   were there before do not block). JSON that parsed strictly must still parse strictly.

pub mod select;
pub mod text;
pub mod write;

use std::ops::Range;

use serde::Deserialize;

use crate::documents::{Language, position};
use crate::syntax::{self, ParsedFile, SyntaxError};
pub use select::{Candidate, Mode};
use text::LineEnding;

// The seed's `operation` values.
/// What an edit does at the selected place: replace it, insert before or after it, or delete it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Operation {
    Replace,
    InsertBefore,
    InsertAfter,
    Delete,
}

impl Operation {
    /// The seed's name (`replace`, `insert_before`, …).
    pub fn name(self) -> &'static str {
        match self {
            Operation::Replace => "replace",
            Operation::InsertBefore => "insert_before",
            Operation::InsertAfter => "insert_after",
            Operation::Delete => "delete",
        }
    }
}

/// The selector fields of `edit_preview` / `edit_apply`, without their `selector_` prefix.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selector {
    pub kind: Option<String>,
    pub name: Option<String>,
    /// 1-based.
    pub line: Option<usize>,
    /// 1-based, inclusive.
    pub line_end: Option<usize>,
    /// 0-based index among the candidates, in document order.
    pub index: Option<usize>,
    pub text: Option<String>,
    pub pattern: Option<String>,
}

/// One replacement of a byte range of the old text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextEdit {
    pub range: Range<usize>,
    pub new_text: String,
}

/// A computed, validated edit.
#[derive(Debug, Clone)]
pub struct PlannedEdit {
    pub mode: Mode,
    /// The candidate the selector chose.
    pub target: Candidate,
    /// How many candidates the selector matched.
    pub candidates: usize,
    /// The single text edit, in bytes of the old text.
    pub edit: TextEdit,
    /// The whole new text.
    pub new_text: String,
    /// Syntax errors the old text already had (they do not block the edit).
    pub preexisting_errors: usize,
    /// Whether the new text was checked by a parser.
    pub validated: bool,
    /// The new text's parse tree (an incremental reparse of the old one), for the syntax cache.
    pub new_tree: Option<std::sync::Arc<ParsedFile>>,
}

/// Why an edit was refused. Nothing is written when one is returned.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EditError {
    #[error("no selector: give selector_kind/selector_name, selector_text, selector_pattern or selector_line")]
    NoSelector,
    #[error("conflicting selectors: {0}")]
    SelectorConflict(String),
    #[error("{operation} needs new_content")]
    ContentMissing { operation: &'static str },
    #[error("AST selectors need a code file with a grammar (this file's language: {})", language.unwrap_or("unknown"))]
    NotCode { language: Option<&'static str> },
    #[error("{kind:?} is not a node kind of the {language} grammar")]
    UnknownKind { kind: String, language: &'static str, suggestions: Vec<String> },
    #[error("invalid selector_pattern {pattern:?}: {message}")]
    InvalidRegex { pattern: String, message: String },
    #[error("line {line} is past the end of the file ({total} lines)")]
    LinePastEnd { line: usize, total: usize },
    #[error("the selector matched nothing")]
    NoMatch,
    #[error("the selector matched {} places; pass selector_index (0-based) to pick one", candidates.len())]
    Ambiguous { candidates: Vec<CandidateSummary> },
    #[error("selector_index {index} is out of range: the selector matched {}", candidates.len())]
    IndexOutOfRange { index: usize, candidates: Vec<CandidateSummary> },
    #[error("the edit would introduce {} syntax error(s)", errors.len())]
    Syntax { errors: Vec<SyntaxErrorSummary>, language: &'static str },
}

/// A candidate as an error lists it.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct CandidateSummary {
    /// 0-based; pass as selector_index.
    pub index: usize,
    /// 1-based first and last line.
    pub start_line: usize,
    pub end_line: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The first line of the candidate, trimmed and cut to 120 characters.
    pub excerpt: String,
}

/// A new syntax error, 1-based line and column (characters) in the new text.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct SyntaxErrorSummary {
    pub line: usize,
    pub column: usize,
    /// `ERROR`, or `MISSING <token>`.
    pub kind: String,
    /// The line, trimmed and cut to 120 characters.
    pub excerpt: String,
}

/// Computes and validates an edit of `source`.
///
/// `parsed` is `source`'s parse tree when its language has a grammar (AST selectors need it;
/// validation uses it). Errors: every [`EditError`] but [`EditError::Syntax`] comes from the
/// request; [`EditError::Syntax`] when the new text has syntax errors the old did not.
pub fn plan(
    source: &str,
    language: Option<Language>,
    parsed: Option<&ParsedFile>,
    operation: Operation,
    new_content: Option<&str>,
    selector: &Selector,
) -> Result<PlannedEdit, EditError> {
    let mode = select::mode(selector)?;
    let content = match (operation, new_content) {
        (Operation::Delete, _) => "",
        (_, Some(content)) => content,
        (op, None) => return Err(EditError::ContentMissing { operation: op.name() }),
    };
    let lines = position::LineIndex::new(source);
    let found = select::candidates(source, &lines, language, parsed, selector, mode)?;
    let summaries = || summarise(&found, source);
    let target = match (found.len(), selector.index) {
        (0, _) => return Err(EditError::NoMatch),
        (_, Some(index)) if index >= found.len() => {
            return Err(EditError::IndexOutOfRange { index, candidates: summaries() });
        }
        (_, Some(index)) => found[index].clone(),
        (1, None) => found[0].clone(),
        (_, None) => return Err(EditError::Ambiguous { candidates: summaries() }),
    };
    let eol = LineEnding::detect(source);
    let edit = compute(source, mode, operation, content, &target, eol);
    let mut new_text = String::with_capacity(source.len() + edit.new_text.len());
    new_text.push_str(&source[..edit.range.start]);
    new_text.push_str(&edit.new_text);
    new_text.push_str(&source[edit.range.end..]);
    let new_tree =
        parsed.and_then(|old| syntax::reparse_edited(old, edit.range.clone(), &edit.new_text)).map(std::sync::Arc::new);
    let (validated, preexisting_errors) = validate(source, &new_text, language, parsed, new_tree.as_deref(), &edit)?;
    Ok(PlannedEdit { mode, target, candidates: found.len(), edit, new_text, preexisting_errors, validated, new_tree })
}

fn summarise(found: &[Candidate], source: &str) -> Vec<CandidateSummary> {
    found
        .iter()
        .enumerate()
        .map(|(index, c)| CandidateSummary {
            index,
            start_line: c.start_line,
            end_line: c.end_line,
            kind: c.kind.clone(),
            name: c.name.clone(),
            excerpt: select::excerpt(source, c.range.start, 120),
        })
        .collect()
}

/// Turns an operation on a target into one text edit.
fn compute(
    source: &str,
    mode: Mode,
    operation: Operation,
    content: &str,
    target: &Candidate,
    eol: LineEnding,
) -> TextEdit {
    let bom = text::bom_len(source);
    let edit = match mode {
        Mode::Text => {
            let content = eol.apply(content);
            match operation {
                Operation::Replace => TextEdit { range: target.range.clone(), new_text: content },
                Operation::InsertBefore => {
                    TextEdit { range: target.range.start..target.range.start, new_text: content }
                }
                Operation::InsertAfter => TextEdit { range: target.range.end..target.range.end, new_text: content },
                Operation::Delete => TextEdit { range: target.range.clone(), new_text: String::new() },
            }
        }
        Mode::Lines => lines_edit(source, operation, content, &target.range, eol),
        Mode::Ast => ast_edit(source, operation, content, target, eol),
    };
    // Never move or split the byte order mark.
    let clamp = |at: usize| if at < bom { bom } else { at };
    TextEdit { range: clamp(edit.range.start)..clamp(edit.range.end), new_text: edit.new_text }
}

/// Whole-line edits: `range` runs from a line start to the next line's start (or the end).
fn lines_edit(source: &str, operation: Operation, content: &str, range: &Range<usize>, eol: LineEnding) -> TextEdit {
    let content = eol.apply(content);
    let ends_file_without_break = range.end == source.len() && !position::ends_with_line_break(source);
    let with_break = |content: String| {
        if position::ends_with_line_break(&content) { content } else { content + eol.as_str() }
    };
    match operation {
        Operation::Replace if content.is_empty() => lines_edit(source, Operation::Delete, "", range, eol),
        Operation::Replace => {
            let new_text =
                if ends_file_without_break { text::strip_one_break(&content).to_owned() } else { with_break(content) };
            TextEdit { range: range.clone(), new_text }
        }
        Operation::InsertBefore => TextEdit { range: range.start..range.start, new_text: with_break(content) },
        Operation::InsertAfter if ends_file_without_break => TextEdit {
            range: range.end..range.end,
            new_text: format!("{}{}", eol.as_str(), text::strip_one_break(&content)),
        },
        Operation::InsertAfter => TextEdit { range: range.end..range.end, new_text: with_break(content) },
        Operation::Delete => TextEdit { range: whole_line_deletion(source, range.clone()), new_text: String::new() },
    }
}

/// A deletion of whole lines that keeps the file's final-newline state: deleting the last
/// lines of a file without a final break also removes the break before them.
fn whole_line_deletion(source: &str, range: Range<usize>) -> Range<usize> {
    if range.end == source.len() && !position::ends_with_line_break(source) && range.start > 0 {
        let before = &source[..range.start];
        let cut = if before.ends_with("\r\n") { 2 } else { 1 };
        return range.start - cut..range.end;
    }
    range
}

/// AST edits, re-indented to the target's line.
fn ast_edit(source: &str, operation: Operation, content: &str, target: &Candidate, eol: LineEnding) -> TextEdit {
    let node = &target.range;
    let indent = text::indentation(source, node.start).to_owned();
    let content = text::strip_one_break(content);
    match operation {
        Operation::Replace => {
            TextEdit { range: node.clone(), new_text: eol.apply(&text::reindent(content, &indent, false)) }
        }
        Operation::InsertBefore => {
            let at = target.leading_start;
            if text::starts_line(source, at) {
                let line = position::line_start(source, at);
                let new_text = format!("{}{}", eol.apply(&text::reindent(content, &indent, true)), eol.as_str());
                TextEdit { range: line..line, new_text }
            } else {
                let new_text =
                    format!("{}{}{indent}", eol.apply(&text::reindent(content, &indent, false)), eol.as_str());
                TextEdit { range: at..at, new_text }
            }
        }
        Operation::InsertAfter => {
            let body = eol.apply(&text::reindent(content, &indent, true));
            if text::ends_line(source, node.end) {
                let at = position::line_content_end(source, node.end);
                TextEdit { range: at..at, new_text: format!("{}{body}", eol.as_str()) }
            } else {
                // Code follows on the same line: it moves to a line of its own after the insert.
                let rest = source[node.end..].len() - source[node.end..].trim_start_matches([' ', '\t']).len();
                TextEdit { range: node.end..node.end + rest, new_text: format!("{0}{body}{0}{indent}", eol.as_str()) }
            }
        }
        Operation::Delete => {
            let start = target.leading_start;
            if text::starts_line(source, start) && text::ends_line(source, node.end) {
                let first = position::line_start(source, start);
                let mut end = position::next_line_start(source, node.end);
                // Between two blank lines (or at the file's start), take one blank line along.
                let blank_before = first == 0 || text::is_blank_line(source, first - 1);
                if blank_before && end < source.len() && text::is_blank_line(source, end) {
                    end = position::next_line_start(source, end);
                }
                TextEdit { range: whole_line_deletion(source, first..end), new_text: String::new() }
            } else {
                TextEdit { range: start..node.end, new_text: String::new() }
            }
        }
    }
}

/// Parses the new text and compares its syntax errors with the old text's. Returns whether a
/// parser checked the text and how many errors the old text had.
fn validate(
    source: &str,
    new_text: &str,
    language: Option<Language>,
    parsed: Option<&ParsedFile>,
    new_tree: Option<&ParsedFile>,
    edit: &TextEdit,
) -> Result<(bool, usize), EditError> {
    let Some(language) = language else { return Ok((false, 0)) };
    if language == Language::Json
        && serde_json::from_str::<serde::de::IgnoredAny>(source).is_ok()
        && let Err(err) = serde_json::from_str::<serde::de::IgnoredAny>(new_text)
    {
        // serde_json numbers lines by `\n` only and columns in bytes; reported as it gives
        // them (JSON text rarely holds a lone `\r`), the excerpt from that line.
        let lines = position::LineIndex::new(new_text);
        let line = err.line().max(1);
        let start = lines.line_number_start(line.min(lines.line_count().max(1)));
        return Err(EditError::Syntax {
            errors: vec![SyntaxErrorSummary {
                line,
                column: err.column().max(1),
                kind: format!("JSON: {err}"),
                excerpt: select::excerpt(new_text, start, 120),
            }],
            language: language.name(),
        });
    }
    let (Some(old_tree), Some(new_tree)) = (parsed, new_tree) else { return Ok((false, 0)) };
    let before = syntax::syntax_errors(old_tree);
    let after = syntax::syntax_errors(new_tree);
    if after.is_empty() {
        return Ok((true, before.len()));
    }
    // Where each old error sits in the new text: unchanged before the edit, shifted after it,
    // gone inside it.
    let delta = edit.new_text.len() as isize - (edit.range.end - edit.range.start) as isize;
    let moved: Vec<SyntaxError> = before
        .iter()
        .filter_map(|e| {
            if e.range.end <= edit.range.start {
                Some(e.clone())
            } else if e.range.start >= edit.range.end {
                let shift = |at: usize| (at as isize + delta) as usize;
                Some(SyntaxError { range: shift(e.range.start)..shift(e.range.end), ..e.clone() })
            } else {
                None
            }
        })
        .collect();
    let new_errors: Vec<&SyntaxError> = after
        .iter()
        .filter(|e| {
            !moved.iter().any(|old| {
                old.kind == e.kind
                    && old.missing == e.missing
                    && (old.range == e.range || (old.range.start < e.range.end && e.range.start < old.range.end))
            })
        })
        .collect();
    if new_errors.is_empty() {
        return Ok((true, before.len()));
    }
    let lines = position::LineIndex::new(new_text);
    let errors = new_errors
        .into_iter()
        .take(20)
        .map(|e| {
            let (at, _) = lines.one_based(e.range.start);
            SyntaxErrorSummary {
                line: at.line as usize,
                column: at.column as usize,
                kind: if e.missing { format!("MISSING {}", e.kind) } else { e.kind.clone() },
                excerpt: select::excerpt(new_text, e.range.start, 120),
            }
        })
        .collect();
    Err(EditError::Syntax { errors, language: language.name() })
}

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;
