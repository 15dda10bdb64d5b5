//! `file_search`: text search over the workspace (seed: filepuff API reference, "file_search").

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ToolError;
use crate::engine::Engine;
use crate::search::{self, SearchOutcome, SearchRequest};

// Named as the seed names them.
/// Parameters of `file_search`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct FileSearchParams {
    /// The search pattern (regex by default; Rust/ripgrep regex syntax).
    pub pattern: String,
    /// Files or directories to search, relative to the workspace root (default: the root).
    #[serde(default)]
    pub paths: Vec<String>,
    /// File types to search, as ripgrep names them (e.g. ["go", "ts", "py"]).
    #[serde(default)]
    pub file_types: Vec<String>,
    /// Case-insensitive search (default false).
    #[serde(default)]
    pub ignore_case: bool,
    /// Treat pattern as a regex (default true); false matches it literally.
    pub regex: Option<bool>,
    /// Lines of context before and after each match (default 2).
    pub context_lines: Option<usize>,
    /// Maximum matching lines to return (default 100); totals still count every match.
    pub max_results: Option<usize>,
    /// Matching lines to skip first, in result order (path, then line): continue a search from
    /// where a truncated result's hint says (default 0).
    #[serde(default)]
    pub offset: Option<usize>,
    /// Most characters of JSON to return (default `[limits] max_output_chars`, 40000). A large
    /// max_results does not lift it: past the budget the page ends with a hint naming the offset
    /// to continue from.
    #[serde(default)]
    pub max_chars: Option<usize>,
}

/// Result of `file_search`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct FileSearchOutput {
    pub pattern: String,
    /// Matching lines in everything searched (a line with several matches counts once).
    pub total_matches: usize,
    /// Files with at least one matching line.
    pub total_files: usize,
    /// Files searched.
    pub files_searched: usize,
    /// Matching lines returned in `files`.
    pub returned_matches: usize,
    /// Matching lines skipped before the first returned one (`offset`).
    #[serde(skip_serializing_if = "is_zero")]
    pub offset: usize,
    /// Whether matches were left out because of `max_results` or the output budget.
    pub truncated: bool,
    /// Files with returned matches, ordered by path.
    pub files: Vec<FileMatches>,
    /// How to get the rest or narrow the search, when truncated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

/// The returned matches of one file.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct FileMatches {
    /// Path relative to the workspace root.
    pub path: String,
    /// Set when an open editor buffer (at this version) was searched instead of the disk.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buffer_version: Option<i32>,
    /// Matching lines in this file, including any not returned.
    pub total_matches: usize,
    pub matches: Vec<LineMatch>,
}

/// One matching line.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct LineMatch {
    /// 1-based line number.
    pub line: u64,
    /// 1-based column of the first match, in characters.
    pub column: u32,
    /// The line, without its line break (cut at the configured length).
    pub text: String,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub text_truncated: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub before: Vec<ContextLine>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<ContextLine>,
}

/// A context line.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ContextLine {
    /// 1-based line number.
    pub line: u64,
    pub text: String,
}

/// Runs `file_search`.
///
/// Errors: path errors (1001–1005) for `paths`, 1101 when a path does not exist,
/// 2001 for an invalid regex, 2002 for an unknown file type.
pub fn file_search(engine: &Engine, params: FileSearchParams) -> Result<FileSearchOutput, ToolError> {
    let workspace = engine.workspace();
    let config = &workspace.config().search;
    let mut paths = Vec::with_capacity(params.paths.len());
    for path in &params.paths {
        let resolved = workspace.resolve(path)?;
        if !resolved.absolute.exists() && !engine.documents().is_open(&resolved.id()) {
            return Err(super::error::read_error(
                crate::documents::ReadError::NotFound { path: resolved.absolute },
                &resolved.relative,
            ));
        }
        paths.push(resolved);
    }
    let request = SearchRequest {
        pattern: params.pattern.clone(),
        regex: params.regex.unwrap_or(true),
        ignore_case: params.ignore_case,
        paths,
        file_types: params.file_types.clone(),
        context_lines: params.context_lines.unwrap_or(config.context_lines),
        max_results: params.max_results.unwrap_or(config.max_results).saturating_add(params.offset.unwrap_or(0)),
        max_line_chars: config.max_line_chars,
    };
    let outcome = search::search(workspace, engine.documents(), &request)?;
    // max_results is a page size, never a way around the output budget: only max_chars sets it.
    let budget = params.max_chars.unwrap_or(workspace.config().limits.max_output_chars);
    Ok(output(&params, outcome, budget))
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Drops the first `offset` matching lines (in path, line order), then keeps matches while the
/// JSON stays within `budget` characters. Returns whether the budget cut anything.
fn apply_offset_and_budget(files: &mut Vec<FileMatches>, offset: usize, budget: usize) -> bool {
    let mut skip = offset;
    files.retain_mut(|file| {
        let drop = skip.min(file.matches.len());
        file.matches.drain(..drop);
        skip -= drop;
        !file.matches.is_empty()
    });
    let mut used = 400;
    let mut cut = false;
    let mut kept_files = 0;
    for file in files.iter_mut() {
        used += file.path.len() + 60;
        let mut keep = 0;
        for hit in &file.matches {
            let len = super::local::json_len(hit);
            if used.saturating_add(len) > budget && (kept_files > 0 || keep > 0) {
                cut = true;
                break;
            }
            used += len;
            keep += 1;
        }
        if cut {
            file.matches.truncate(keep);
            if keep > 0 {
                kept_files += 1;
            }
            break;
        }
        kept_files += 1;
    }
    files.truncate(kept_files);
    cut
}

fn output(params: &FileSearchParams, outcome: SearchOutcome, budget: usize) -> FileSearchOutput {
    let offset = params.offset.unwrap_or(0);
    let mut files: Vec<FileMatches> = outcome
        .files
        .into_iter()
        .map(|file| FileMatches {
            path: file.path.relative,
            buffer_version: file.buffer_version,
            total_matches: file.total_matches,
            matches: file
                .hits
                .into_iter()
                .map(|hit| LineMatch {
                    line: hit.line,
                    column: hit.column,
                    text: hit.text,
                    text_truncated: hit.text_truncated,
                    before: hit.before.into_iter().map(|c| ContextLine { line: c.line, text: c.text }).collect(),
                    after: hit.after.into_iter().map(|c| ContextLine { line: c.line, text: c.text }).collect(),
                })
                .collect(),
        })
        .collect();
    let budget_cut = apply_offset_and_budget(&mut files, offset, budget);
    let returned_matches: usize = files.iter().map(|f| f.matches.len()).sum();
    let truncated = outcome.truncated || budget_cut;
    let hint = truncated.then(|| {
        let next = offset + returned_matches;
        let last = files.last().map(|f| format!(" (the last shown is {})", f.path)).unwrap_or_default();
        let why = if budget_cut {
            format!(" (the output budget of {budget} characters was reached; max_chars sets it)")
        } else {
            String::new()
        };
        format!(
            "Showing matching lines {}-{next} of {}{why}; {} more: continue with offset={next}, or narrow the search with paths or file_types. Results are ordered by path, then line{last}.",
            offset + 1,
            outcome.total_matches,
            outcome.total_matches.saturating_sub(next),
        )
    });
    FileSearchOutput {
        pattern: params.pattern.clone(),
        total_matches: outcome.total_matches,
        total_files: outcome.total_files,
        files_searched: outcome.files_searched,
        returned_matches,
        offset,
        truncated,
        files,
        hint,
    }
}

/// The readable text form: a summary line, then per file the lines ripgrep-style
/// (`12:` a match, `11-` context, `--` between separate groups).
pub fn render_text(output: &FileSearchOutput) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} matching line{} in {} file{} ({} searched){}",
        output.total_matches,
        if output.total_matches == 1 { "" } else { "s" },
        output.total_files,
        if output.total_files == 1 { "" } else { "s" },
        output.files_searched,
        if output.truncated { format!("; showing the first {}", output.returned_matches) } else { String::new() }
    );
    for file in &output.files {
        let version = file.buffer_version.map(|v| format!(" (unsaved buffer, version {v})")).unwrap_or_default();
        let _ = writeln!(out, "\n{}{version}", file.path);
        let mut lines: std::collections::BTreeMap<u64, (char, &str, &str)> = std::collections::BTreeMap::new();
        for hit in &file.matches {
            for context in hit.before.iter().chain(&hit.after) {
                lines.entry(context.line).or_insert(('-', context.text.as_str(), ""));
            }
            lines.insert(hit.line, (':', hit.text.as_str(), if hit.text_truncated { " […]" } else { "" }));
        }
        let mut previous = None;
        for (line, (mark, text, cut)) in lines {
            if previous.is_some_and(|p: u64| line > p + 1) {
                out.push_str("--\n");
            }
            let _ = writeln!(out, "{line}{mark}{text}{cut}");
            previous = Some(line);
        }
    }
    if let Some(hint) = &output.hint {
        let _ = write!(out, "\n{hint}\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workspace::Workspace;

    #[test]
    fn a_huge_result_is_a_bounded_page_with_an_offset_to_continue() {
        let dir = tempfile::tempdir().unwrap();
        let line = format!("needle {}\n", "y".repeat(250));
        for i in 0..10 {
            std::fs::write(dir.path().join(format!("f{i}.txt")), line.repeat(100)).unwrap();
        }
        let engine = Engine::new(Workspace::with_config(dir.path(), Default::default()).unwrap());
        // An explicit, very large max_results is still bounded by the default budget.
        let params = FileSearchParams {
            pattern: "needle".to_owned(),
            max_results: Some(1_000_000),
            context_lines: Some(0),
            ..Default::default()
        };
        let first = file_search(&engine, params.clone()).unwrap();
        assert!(serde_json::to_string(&first).unwrap().len() <= 41_000);
        assert!(first.truncated && first.total_matches == 1000);
        let next = first.returned_matches;
        assert!(first.hint.as_deref().unwrap().contains(&format!("offset={next}")), "{:?}", first.hint);
        let second = file_search(&engine, FileSearchParams { offset: Some(next), ..params }).unwrap();
        let first_line = |out: &FileSearchOutput| (out.files[0].path.clone(), out.files[0].matches[0].line);
        let expected_file = next / 100;
        assert_eq!(first_line(&second), (format!("f{expected_file}.txt"), (next % 100) as u64 + 1));
    }
}
