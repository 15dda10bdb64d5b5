//! `ast_query`: structural search with ast-grep patterns (seed: filepuff API reference,
//! "ast_query").

use std::collections::BTreeMap;
use std::ops::Range;

use ropey::Rope;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{ErrorCode, ToolError};
use crate::documents::{Language, position};
use crate::engine::Engine;
use crate::search::structural::{self, StructuralRequest};
use crate::syntax::pattern::{self, QueryError, RawMatch, StructuralQuery};

/// Matches returned by default (the seed's default).
pub const DEFAULT_MAX_RESULTS: usize = 100;
/// Longest matched text returned, in characters; longer matches are cut (`text_truncated`).
pub const MAX_MATCH_TEXT_CHARS: usize = 1000;

// Named as the seed names them.
/// Parameters of `ast_query`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct AstQueryParams {
    /// ast-grep pattern: code with `$NAME` (one node), `$$$ARGS` (zero or more nodes) and `$_`
    /// (any node, not captured). Example: `func $NAME($$$ARGS) error`.
    pub pattern: String,
    /// go, typescript, tsx, javascript, python, c, cpp, rust, html, elixir, json, yaml, markdown
    /// or shell (aliases such as ts, js, py, c++, golang are accepted).
    pub language: String,
    /// Files or directories to search (default: the workspace root).
    #[serde(default)]
    pub paths: Vec<String>,
    /// Regex the name must match: the `$NAME` capture, or the matched node's declared name.
    pub name_matches: Option<String>,
    /// Exact name (the `$NAME` capture, or the node's declared name).
    pub name_exact: Option<String>,
    /// Node kinds to keep (tree-sitter kinds such as function_declaration, class_definition).
    #[serde(default)]
    pub kind_in: Vec<String>,
    /// Matches to return (default 100); totals count all. The output budget (`[limits]
    /// max_output_chars`) still applies: past it the page ends with a note naming the offset.
    pub max_results: Option<usize>,
    /// Matches to skip first, in result order (file, then position), to continue a cut result.
    #[serde(default)]
    pub offset: Option<usize>,
}

/// Result of `ast_query`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct AstQueryOutput {
    pub language: String,
    pub pattern: String,
    /// Matches ordered by file, then position.
    pub matches: Vec<AstMatch>,
    /// Matches in the whole search (after filters), returned or not.
    pub total_matches: usize,
    /// Files with at least one match.
    pub files_matched: usize,
    /// Files of the language searched.
    pub files_scanned: usize,
    /// Files parsed: the others lacked one of the pattern's literal tokens and were skipped.
    pub files_parsed: usize,
    /// Whether max_results or the output budget cut the list.
    pub truncated: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// One match. Lines and columns are 1-based; columns count characters; `end_*` points just
/// past the last character (exclusive, like an LSP range).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct AstMatch {
    /// Path relative to the workspace root.
    pub file: String,
    pub start_line: usize,
    pub start_column: usize,
    pub end_line: usize,
    pub end_column: usize,
    /// The matched node's kind.
    pub kind: String,
    /// The `$NAME` capture, or the node's declared name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The matched text, cut to 1000 characters.
    pub text: String,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub text_truncated: bool,
    /// `$X` captures by name.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub captures: BTreeMap<String, Capture>,
    /// `$$$X` captures by name: the captured nodes, punctuation left out.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub multi_captures: BTreeMap<String, Vec<Capture>>,
    /// The editor buffer's version when an open buffer was searched.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buffer_version: Option<i32>,
}

/// A captured node.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Capture {
    pub text: String,
    pub start_line: usize,
    pub start_column: usize,
    pub end_line: usize,
    pub end_column: usize,
}

/// Runs `ast_query`.
///
/// Errors: 6001 invalid pattern; 6002 unknown language (the message lists the valid ones);
/// 6003 invalid name_matches regex; 3002 a kind_in entry that is not a node kind of the
/// language; path errors (1001–1005) and 1101 for a path that does not exist.
pub fn ast_query(engine: &Engine, params: AstQueryParams) -> Result<AstQueryOutput, ToolError> {
    let valid = pattern::query_languages().join(", ");
    let language = Language::from_name(params.language.trim())
        .filter(|l| pattern::query_languages().contains(&l.name()))
        .ok_or_else(|| {
            ToolError::new(
                ErrorCode::QueryLanguageUnknown,
                format!("unknown language {:?} for ast_query", params.language),
                format!("Use one of: {valid}."),
            )
            .with("language", params.language.as_str())
        })?;
    let query = StructuralQuery::new(&params.pattern, language).map_err(query_error)?;
    for kind in &params.kind_in {
        pattern::check_kind(language, kind).map_err(query_error)?;
    }
    let name_regex = params
        .name_matches
        .as_deref()
        .map(|re| {
            regex::Regex::new(re).map_err(|err| {
                ToolError::new(
                    ErrorCode::QueryNameRegexInvalid,
                    format!("invalid name_matches regex {re:?}"),
                    "Fix the regular expression (Rust regex syntax), or use name_exact.",
                )
                .with("name_matches", re)
                .with("detail", err.to_string())
            })
        })
        .transpose()?;
    let workspace = engine.workspace();
    let mut paths = Vec::new();
    for path in &params.paths {
        let resolved = workspace.resolve(path)?;
        if !resolved.absolute.exists() && !engine.documents().is_open(&resolved.id()) {
            return Err(ToolError::new(
                ErrorCode::FileNotFound,
                format!("path not found: {}", resolved.relative),
                "Check the path (relative to the workspace root), or leave paths out to search the whole root.",
            )
            .with("path", resolved.relative.as_str()));
        }
        paths.push(resolved);
    }
    let keep = |m: &RawMatch| {
        (params.kind_in.is_empty() || params.kind_in.contains(&m.kind))
            && params.name_exact.as_ref().is_none_or(|exact| m.name.as_ref() == Some(exact))
            && name_regex.as_ref().is_none_or(|re| m.name.as_deref().is_some_and(|name| re.is_match(name)))
    };
    let offset = params.offset.unwrap_or(0);
    let max_results = params.max_results.unwrap_or(DEFAULT_MAX_RESULTS).saturating_add(offset);
    let request = StructuralRequest { query: &query, paths, keep: &keep, max_results };
    let outcome = structural::search(engine, &request)?;

    let mut notes = Vec::new();
    if query.pattern_has_errors() {
        notes.push("tree-sitter recovered from errors while parsing the pattern; matches may not be what you meant — write the pattern as complete code".to_owned());
    }
    let matches = outcome
        .files
        .iter()
        .flat_map(|file| {
            file.matches.iter().map(move |m| {
                let (start_line, start_column, end_line, end_column) = span(&file.text, &m.range);
                let (text, text_truncated) = bounded_slice(&file.text, &m.range);
                AstMatch {
                    file: file.path.relative.clone(),
                    start_line,
                    start_column,
                    end_line,
                    end_column,
                    kind: m.kind.clone(),
                    name: m.name.clone(),
                    text,
                    text_truncated,
                    captures: m
                        .captures
                        .iter()
                        .map(|(name, range, _)| (name.clone(), capture(&file.text, range)))
                        .collect(),
                    multi_captures: m
                        .multi_captures
                        .iter()
                        .map(|(name, nodes)| {
                            (name.clone(), nodes.iter().map(|(range, _)| capture(&file.text, range)).collect())
                        })
                        .collect(),
                    buffer_version: file.buffer_version,
                }
            })
        })
        .collect::<Vec<AstMatch>>();
    let mut matches: Vec<AstMatch> = matches.into_iter().skip(offset).collect();
    let mut truncated = outcome.truncated;
    // The output budget applies whatever max_results says: it is a page size, not a way around
    // the budget.
    let budget = engine.workspace().config().limits.max_output_chars;
    let mut used = 500;
    let keep = matches
        .iter()
        .take_while(|m| {
            used += super::local::json_len(m);
            used <= budget
        })
        .count()
        .max(1)
        .min(matches.len());
    if keep < matches.len() {
        matches.truncate(keep);
        truncated = true;
        notes.push(format!(
            "output budget ({budget} characters) reached: showing {keep} matches; continue with offset={}",
            offset + keep
        ));
    }
    if truncated && offset + matches.len() < outcome.total_matches {
        notes.push(format!(
            "{} more matches: continue with offset={}, or narrow paths",
            outcome.total_matches - offset - matches.len(),
            offset + matches.len()
        ));
    }
    Ok(AstQueryOutput {
        language: language.name().to_owned(),
        pattern: params.pattern,
        matches,
        total_matches: outcome.total_matches,
        files_matched: outcome.files_matched,
        files_scanned: outcome.files_scanned,
        files_parsed: outcome.files_parsed,
        truncated,
        notes,
    })
}

/// `range` of `text`, cut to [`MAX_MATCH_TEXT_CHARS`] characters; true when cut.
fn bounded_slice(text: &Rope, range: &Range<usize>) -> (String, bool) {
    let (bytes, cut) = position::char_limited(text, range, MAX_MATCH_TEXT_CHARS);
    (text.byte_slice(bytes).to_string(), cut)
}

fn span(text: &Rope, range: &Range<usize>) -> (usize, usize, usize, usize) {
    let (start, _) = position::offset_to_one_based(text, range.start);
    let (end, _) = position::offset_to_one_based(text, range.end);
    (start.line as usize, start.column as usize, end.line as usize, end.column as usize)
}

fn capture(text: &Rope, range: &Range<usize>) -> Capture {
    let (start_line, start_column, end_line, end_column) = span(text, range);
    Capture { text: bounded_slice(text, range).0, start_line, start_column, end_line, end_column }
}

fn query_error(err: QueryError) -> ToolError {
    let message = err.to_string();
    match err {
        QueryError::UnknownLanguage { name } => ToolError::new(
            ErrorCode::QueryLanguageUnknown,
            message,
            format!("Use one of: {}.", pattern::query_languages().join(", ")),
        )
        .with("language", name),
        QueryError::InvalidPattern { pattern, language, message: detail } => ToolError::new(
            ErrorCode::QueryPatternInvalid,
            format!("invalid {language} pattern: {detail}"),
            "Write the pattern as one piece of valid code with $NAME / $$$ARGS / $_ placeholders, e.g. `func $NAME($$$ARGS) error` (Go) or `class $NAME: $$$BODY` (Python).",
        )
        .with("pattern", pattern)
        .with("language", language),
        QueryError::UnknownKind { kind, language, suggestions } => ToolError::new(
            ErrorCode::ParseUnknownNodeKind,
            message,
            if suggestions.is_empty() {
                "Use a tree-sitter node kind of the language.".to_owned()
            } else {
                format!("Close node kinds: {}.", suggestions.join(", "))
            },
        )
        .with("kind", kind)
        .with("language", language)
        .with("suggestions", suggestions),
    }
}

/// A capture's first line, and `… (+N lines)` when it has more: the text view shows one line
/// of each capture and must not pass a three-statement body off as one statement.
fn first_line_marked(text: &str) -> String {
    let mut lines = text.lines();
    let first = lines.next().unwrap_or_default();
    match lines.count() {
        0 => first.to_owned(),
        more => format!("{first} … (+{more} line{})", if more == 1 { "" } else { "s" }),
    }
}

/// Readable text: `file:line:col kind name` and the first line of each match (its captures'
/// first lines, marked when they have more), then totals.
pub fn render_text(output: &AstQueryOutput) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    for m in &output.matches {
        let name = m.name.as_deref().map(|n| format!(" {n}")).unwrap_or_default();
        let first = m.text.lines().next().unwrap_or_default();
        let _ = writeln!(
            out,
            "{}:{}:{}-{}:{} {}{name}",
            m.file, m.start_line, m.start_column, m.end_line, m.end_column, m.kind
        );
        let _ = writeln!(out, "    {first}");
        for (capture, value) in &m.captures {
            if capture != "NAME" {
                let _ = writeln!(out, "    ${capture} = {}", first_line_marked(&value.text));
            }
        }
        for (capture, values) in &m.multi_captures {
            let texts: Vec<String> = values.iter().map(|v| first_line_marked(&v.text)).collect();
            let _ = writeln!(out, "    $$${capture} = [{}]", texts.join(", "));
        }
    }
    let _ = write!(
        out,
        "{} match(es) in {} file(s); {} {} file(s) scanned, {} parsed",
        output.total_matches, output.files_matched, output.files_scanned, output.language, output.files_parsed
    );
    if output.truncated {
        let _ = write!(out, "; showing {} (continue with offset, see the notes)", output.matches.len());
    }
    out.push('\n');
    for note in &output.notes {
        let _ = writeln!(out, "note: {note}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::first_line_marked;

    #[test]
    fn a_capture_of_several_lines_says_so() {
        assert_eq!(first_line_marked("x := 1"), "x := 1");
        assert_eq!(first_line_marked("x := 1\nreturn x"), "x := 1 … (+1 line)");
        assert_eq!(first_line_marked("a\nb\nc\n"), "a … (+2 lines)");
        assert_eq!(first_line_marked(""), "");
    }
}
