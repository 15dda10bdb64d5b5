//! `localSearchCode`: Octocode's content search, on the Engine's walk and ripgrep's libraries
//! (grep-regex + grep-searcher) — the same visit as `file_search`, open buffers included.
//!
//! Files are ordered by path and paginated (`filesPerPage`, `filePageNumber`); each file shows
//! its first `matchesPerPage` matching rows (a row is what ripgrep's JSON calls a match: a
//! matching line, or the lines of one multiline match), counted as Octocode counts them
//! (`totalMatchRows`, `returnedMatchRows`). A row is placed at its first match: a 1-based
//! line, a 0-based column in UTF-16 code units (Octocode's) and `location.charOffset`/
//! `charLength`, the match's **byte** offset and length in the file as stored (the seed: "BYTE
//! offsets"; a UTF-8 BOM counts, unlike in ripgrep's JSON), which `localGetFileContent` takes
//! back as its own `charOffset`. Paths are relative to the workspace root, so a result's path
//! is the next query's `path`.

use parking_lot::Mutex;
use std::collections::BTreeMap;

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::search_sink::{FirstMatch, RowSettings, RowSink};
use super::{Answer, Batch, BatchOutput, ResearchFields, invalid_filter, json_len, page_count, run_batch, shown};
use crate::engine::Engine;
use crate::search::{self, FileText, SearchError, WalkOptions};
use crate::tools::ToolError;
use crate::workspace::ResolvedPath;

/// One `localSearchCode` query (Octocode's parameters).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SearchCodeQuery {
    /// Search pattern: a regex (Rust/ripgrep syntax) unless fixedString.
    #[serde(default)]
    pub pattern: Option<String>,
    /// The same as pattern (the name current Octocode releases use); pattern wins if both.
    #[serde(default)]
    pub search_text: Option<String>,
    /// Search root: a directory or file, relative to the workspace root ("" = the root).
    #[serde(default)]
    pub path: String,
    /// Discovery mode: list matching files only (fast; stops at each file's first match).
    #[serde(default)]
    pub files_only: bool,
    /// ripgrep file type ("ts", "py", "go", ...).
    #[serde(default, rename = "type")]
    pub file_type: Option<String>,
    /// Globs a file must match (e.g. "*.py", "src/**").
    #[serde(default)]
    pub include: Vec<String>,
    /// Globs to exclude (e.g. "*.test.ts").
    #[serde(default)]
    pub exclude: Vec<String>,
    /// Directory names (or root-relative directory paths) to skip.
    #[serde(default)]
    pub exclude_dir: Vec<String>,
    /// Also search files that .gitignore/.ignore exclude (e.g. inside node_modules).
    #[serde(default)]
    pub no_ignore: bool,
    /// Matching rows shown per file, 1-100 (default 10).
    #[serde(default)]
    pub matches_per_page: Option<usize>,
    /// Files per page, 1-20 (default 10).
    #[serde(default)]
    pub files_per_page: Option<usize>,
    /// 1-based page of files (default 1).
    #[serde(default)]
    pub file_page_number: Option<usize>,
    /// Lines of context around each match (default 0; 3 in mode "detailed").
    #[serde(default)]
    pub context_lines: Option<usize>,
    /// Match case exactly.
    #[serde(default)]
    pub case_sensitive: bool,
    /// Ignore case.
    #[serde(default)]
    pub case_insensitive: bool,
    /// Case-sensitive only if the pattern has an uppercase letter (default true).
    #[serde(default)]
    pub smart_case: Option<bool>,
    /// Match whole words only.
    #[serde(default)]
    pub whole_word: bool,
    /// Let the pattern match across lines (`.` matches line breaks too).
    #[serde(default)]
    pub multiline: bool,
    /// Treat the pattern as a literal string.
    #[serde(default)]
    pub fixed_string: bool,
    /// "discovery" (= filesOnly), "paginated" (default) or "detailed" (3 context lines).
    #[serde(default)]
    pub mode: Option<String>,
    /// Longest match text returned per line, in characters (default 200).
    #[serde(default)]
    pub match_content_length: Option<usize>,
    #[serde(flatten)]
    pub research: ResearchFields,
}

/// One query's result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SearchCodeResult {
    /// The search root as given, relative to the workspace root.
    pub path: String,
    /// Files on this page, ordered by path.
    pub files: Vec<SearchFile>,
    pub stats: SearchStats,
    pub pagination: FilePagination,
    /// Set when the output budget cut this page short (see the hints for how to continue).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

/// Counts over the whole search (Octocode's `stats`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SearchStats {
    /// Occurrences of the pattern in every matching file (absent in discovery mode, which
    /// stops reading each file at its first match).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_occurrences: Option<usize>,
    /// Lines holding a match, or part of a multiline match (absent in discovery mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matched_lines: Option<usize>,
    /// Files with at least one match.
    pub files_matched: usize,
    /// Files read.
    pub files_searched: usize,
}

/// Paging over files.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FilePagination {
    /// 1-based.
    pub current_page: usize,
    pub total_pages: usize,
    pub files_per_page: usize,
    /// Files with at least one match (localFindFiles: files found).
    pub total_files: usize,
    /// localSearchCode: matching rows in every file (absent in discovery mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_matches: Option<usize>,
    pub has_more: bool,
}

/// A file with matches.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SearchFile {
    /// Relative to the workspace root (usable as the `path` of the next query).
    pub path: String,
    /// Matching rows in this file, all of them: a row is a matching line, or the lines of one
    /// multiline match (absent in discovery mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_match_rows: Option<usize>,
    /// Rows returned in `matches` (at most matchesPerPage; fewer when the output budget cut).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub returned_match_rows: Option<usize>,
    /// The first rows, one entry each (absent in discovery mode).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub matches: Vec<SearchMatch>,
    /// Set when an open editor buffer (at this version) was searched instead of the disk.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buffer_version: Option<i32>,
}

/// One matching row, placed at its first match.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SearchMatch {
    /// 1-based line of the first match's start.
    pub line: u64,
    /// 0-based column of the first match's start, in UTF-16 code units (as Octocode's).
    pub column: u32,
    /// The row's lines (with contextLines lines around them, joined by "\n"); each line cut to
    /// matchContentLength characters around the match.
    pub value: String,
    pub location: MatchLocation,
    /// 1-based column in characters: the unit of find_definition and the other core tools.
    #[serde(skip)]
    pub lsp_column: u32,
}

/// Where the row's first match is, in bytes of the file as stored.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MatchLocation {
    /// Byte offset of the match's start from the start of the file (a BOM counts).
    pub char_offset: u64,
    /// Length of the match in bytes.
    pub char_length: u64,
}

/// Runs `localSearchCode`.
///
/// Errors per query: path errors (1001–1005), 1101 for a missing path, 2001 invalid regex,
/// 2002 unknown type, 2003 invalid glob, 8005 an unknown mode, 1008 no pattern.
pub fn local_search_code(
    engine: &Engine,
    batch: Batch<SearchCodeQuery>,
) -> Result<BatchOutput<SearchCodeResult>, ToolError> {
    run_batch(engine, batch, search_one)
}

const DEFAULT_MATCHES_PER_PAGE: usize = 10;
const MAX_MATCHES_PER_PAGE: usize = 100;
const DEFAULT_FILES_PER_PAGE: usize = 10;
const MAX_FILES_PER_PAGE: usize = 20;
const DEFAULT_MATCH_CONTENT_LENGTH: usize = 200;

fn search_one(engine: &Engine, query: &SearchCodeQuery, budget: usize) -> Result<Answer<SearchCodeResult>, ToolError> {
    let pattern =
        query.pattern.as_deref().or(query.search_text.as_deref()).filter(|p| !p.is_empty()).ok_or_else(|| {
            ToolError::invalid_params("`pattern` (or `searchText`) is required and must not be empty")
        })?;
    let files_only = match query.mode.as_deref() {
        None | Some("paginated") | Some("detailed") => query.files_only,
        Some("discovery") => true,
        Some(other) => return Err(invalid_filter("mode", other, "\"discovery\", \"paginated\" or \"detailed\"")),
    };
    let context_lines =
        query.context_lines.unwrap_or(if query.mode.as_deref() == Some("detailed") { 3 } else { 0 }).min(50);
    let per_file = query.matches_per_page.unwrap_or(DEFAULT_MATCHES_PER_PAGE).clamp(1, MAX_MATCHES_PER_PAGE);
    let files_per_page = query.files_per_page.unwrap_or(DEFAULT_FILES_PER_PAGE).clamp(1, MAX_FILES_PER_PAGE);
    let page = query.file_page_number.unwrap_or(1).max(1);
    let content_length = query.match_content_length.unwrap_or(DEFAULT_MATCH_CONTENT_LENGTH).max(1);

    let workspace = engine.workspace();
    let root = super::resolve(engine, &query.path)?;
    if !root.absolute.exists() && !engine.documents().is_open(&root.id()) {
        return Err(crate::tools::error::read_error(
            crate::documents::ReadError::NotFound { path: root.absolute.clone() },
            &shown(&root),
        ));
    }
    let matcher = build_matcher(pattern, query)?;
    let types = match &query.file_type {
        Some(name) if !name.is_empty() => Some(search::build_types(std::slice::from_ref(name))?),
        _ => None,
    };
    let mut globs: Vec<String> = query.include.clone();
    globs.extend(query.exclude.iter().map(|glob| format!("!{glob}")));
    let options = WalkOptions {
        no_ignore: query.no_ignore,
        globs,
        exclude_dirs: query.exclude_dir.clone(),
        ..Default::default()
    };
    let keep_files = page * files_per_page;
    let collector = Mutex::new(Collected::default());
    let settings = RowSettings { per_file, context_lines, content_length };
    let roots = std::slice::from_ref(&root.absolute);
    let documents = engine.documents();
    let found = |buffer_version, resolved: ResolvedPath| SearchFile {
        path: resolved.relative,
        total_match_rows: None,
        returned_match_rows: None,
        matches: Vec::new(),
        buffer_version,
    };
    // Each thread has its own searcher and matcher (a matcher's regex cache is per owner).
    let stats = if files_only && !query.multiline {
        // Discovery reads each file in pieces and stops at its first match.
        search::for_each_stream(
            workspace,
            documents,
            roots,
            types,
            &options,
            || (discovery_searcher(false), matcher.clone()),
            |(searcher, matcher), path, buffer_version, text| {
                if has_match(searcher, matcher, text)
                    && let Some(resolved) = workspace.resolved_from_walk(path)
                {
                    collector.lock().add(found(buffer_version, resolved), keep_files);
                }
                true
            },
        )?
    } else if files_only {
        // A multiline match may span any lines: search whole files, still stopping at the first.
        search::for_each_text(
            workspace,
            documents,
            roots,
            types,
            &options,
            || (discovery_searcher(true), matcher.clone()),
            |(searcher, matcher), path, buffer_version, bytes| {
                if has_match(searcher, matcher, FileText::Whole(bytes))
                    && let Some(resolved) = workspace.resolved_from_walk(path)
                {
                    collector.lock().add(found(buffer_version, resolved), keep_files);
                }
                true
            },
        )?
    } else {
        search::for_each_text(
            workspace,
            documents,
            roots,
            types,
            &options,
            || (content_searcher(context_lines, query.multiline), matcher.clone()),
            |(searcher, matcher), path, buffer_version, bytes| {
                let mut sink = RowSink::new(matcher, &settings);
                if searcher.search_slice(&*matcher, bytes, &mut sink).is_ok()
                    && sink.rows > 0
                    && let Some(resolved) = workspace.resolved_from_walk(path)
                {
                    let (rows, matched_lines, occurrences) = (sink.rows, sink.matched_lines, sink.occurrences);
                    let file = sink.into_file(resolved.relative, buffer_version);
                    let mut collected = collector.lock();
                    collected.rows += rows;
                    collected.matched_lines += matched_lines;
                    collected.occurrences += occurrences;
                    collected.add(file, keep_files);
                }
                true
            },
        )?
    };
    let collected = collector.into_inner();
    let total_files = collected.files;
    let total_pages = page_count(total_files, files_per_page);
    let mut files: Vec<SearchFile> = collected.kept.into_values().skip((page - 1) * files_per_page).collect();
    files.truncate(files_per_page);

    // The output budget: keep whole files while they fit, then cut the last one's rows.
    let mut hints = Vec::new();
    let mut used = 400;
    let mut kept = Vec::with_capacity(files.len());
    let shown_on_page = files.len();
    let mut truncated = false;
    for mut file in files {
        let len = json_len(&file);
        if used + len <= budget {
            used += len;
            kept.push(file);
            continue;
        }
        truncated = true;
        while !file.matches.is_empty() && used + json_len(&file) > budget {
            file.matches.pop();
            file.returned_match_rows = Some(file.matches.len());
        }
        if !file.matches.is_empty() {
            kept.push(file);
        }
        break;
    }
    if truncated {
        let first_missing = (page - 1) * files_per_page + kept.len() + 1;
        hints.push(format!(
            "Output budget ({budget} characters) reached: showing {} of the {shown_on_page} files of this page. Continue with filesPerPage=1, filePageNumber={first_missing} (file number {first_missing} in path order), or lower matchesPerPage/contextLines/matchContentLength.",
            kept.len()
        ));
    }
    let has_more = page < total_pages;
    if has_more {
        hints.push(format!(
            "{} more files: continue with filePageNumber={} (filesPerPage={files_per_page}).",
            total_files.saturating_sub(page * files_per_page),
            page + 1
        ));
    }
    if let Some(file) = kept.iter().find(|f| f.total_match_rows.unwrap_or(0) > f.matches.len()) {
        hints.push(format!(
            "{} has {} matching rows, {} shown: raise matchesPerPage (max 100), or read around them with localGetFileContent (path={:?}, matchString).",
            file.path,
            file.total_match_rows.unwrap_or(0),
            file.matches.len(),
            file.path
        ));
    }
    if let Some((file, first)) = kept.iter().find_map(|f| f.matches.first().map(|m| (f, m))) {
        hints.push(format!(
            "Lines are 1-based, columns 0-based UTF-16 units (Octocode's). For find_definition, find_references or symbol_at (1-based character columns) the first match is {} line {} column {}.",
            file.path, first.line, first.lsp_column
        ));
    }
    if total_files == 0 {
        hints.push(
            "No matches: try a semantic variant, caseInsensitive, fewer filters, or noIgnore=true for ignored directories."
                .to_owned(),
        );
    } else if total_files > 100 {
        hints.push("Many files match: narrow with path, type, include/exclude or excludeDir.".to_owned());
    }
    let counted = |n: usize| (!files_only).then_some(n);
    let data = SearchCodeResult {
        path: shown(&root),
        files: kept,
        stats: SearchStats {
            total_occurrences: counted(collected.occurrences),
            matched_lines: counted(collected.matched_lines),
            files_matched: total_files,
            files_searched: stats.files_visited,
        },
        pagination: FilePagination {
            current_page: page,
            total_pages,
            files_per_page,
            total_files,
            total_matches: counted(collected.rows),
            has_more,
        },
        truncated,
    };
    Ok(Answer { has_results: total_files > 0, data, hints })
}

fn build_matcher(pattern: &str, query: &SearchCodeQuery) -> Result<RegexMatcher, ToolError> {
    let mut builder = RegexMatcherBuilder::new();
    if query.case_sensitive {
        builder.case_insensitive(false);
    } else if query.case_insensitive {
        builder.case_insensitive(true);
    } else {
        builder.case_smart(query.smart_case.unwrap_or(true));
    }
    builder.fixed_strings(query.fixed_string).word(query.whole_word);
    if query.multiline {
        builder.multi_line(true).dot_matches_new_line(true);
    } else {
        builder.line_terminator(Some(b'\n'));
    }
    builder.build(pattern).map_err(|err| {
        ToolError::from(SearchError::InvalidRegex { pattern: pattern.to_owned(), message: err.to_string() })
    })
}

/// A searcher over the bytes as stored: no BOM sniffing (a UTF-8 BOM stays in the offsets, as
/// `localGetFileContent` counts them); binary files (a NUL byte) are skipped.
fn content_searcher(context_lines: usize, multiline: bool) -> Searcher {
    SearcherBuilder::new()
        .line_number(true)
        .multi_line(multiline)
        .before_context(context_lines)
        .after_context(context_lines)
        .bom_sniffing(false)
        .binary_detection(BinaryDetection::quit(b'\x00'))
        .build()
}

/// Discovery's searcher: no line numbers, no context, and no binary detection of its own —
/// [`has_match`] applies the slice rule to the whole text, not to each piece of it.
fn discovery_searcher(multiline: bool) -> Searcher {
    SearcherBuilder::new()
        .line_number(false)
        .multi_line(multiline)
        .bom_sniffing(false)
        .binary_detection(BinaryDetection::none())
        .build()
}

/// Whether `text` has a match: a disk file is searched piece by piece (whole lines), and no
/// piece is read after the one holding the first match. Binary text never matches, as in
/// `search_slice` with a quit byte: a NUL byte in the first 64 KiB.
fn has_match(searcher: &mut Searcher, matcher: &RegexMatcher, text: FileText<'_, '_>) -> bool {
    let mut sink = FirstMatch::default();
    match text {
        FileText::Whole(bytes) => {
            if !search::is_binary(bytes) {
                let _ = searcher.search_slice(matcher, bytes, &mut sink);
            }
        }
        FileText::Stream(text) => {
            while let Ok(Some(lines)) = text.next_lines() {
                if searcher.search_slice(matcher, lines, &mut sink).is_err() || sink.found {
                    break;
                }
            }
        }
    }
    sink.found
}

/// Files with matches, the first `keep` by path kept whole, totals over all.
#[derive(Default)]
struct Collected {
    kept: BTreeMap<String, SearchFile>,
    files: usize,
    rows: usize,
    matched_lines: usize,
    occurrences: usize,
}

impl Collected {
    fn add(&mut self, file: SearchFile, keep: usize) {
        self.files += 1;
        if self.kept.len() >= keep && self.kept.last_key_value().is_some_and(|(last, _)| *last < file.path) {
            return;
        }
        self.kept.insert(file.path.clone(), file);
        while self.kept.len() > keep {
            self.kept.pop_last();
        }
    }
}
