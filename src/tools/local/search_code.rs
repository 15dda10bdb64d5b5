//! `localSearchCode`: Octocode's content search, on the Engine's walk and ripgrep's libraries
//! (grep-regex + grep-searcher) — the same visit as `file_search`, open buffers included.
//!
//! Files are ordered by path and paginated (`filesPerPage`, `filePageNumber`); each file shows
//! its first `matchesPerPage` matches. Every match carries a 1-based line, a 1-based column in
//! characters and `location.charOffset`/`charLength`: the match's **byte** offset in the file
//! and byte length (as ripgrep's JSON reports them, and as `localGetFileContent` takes them).

use std::collections::BTreeMap;
use std::sync::Mutex;

use grep_matcher::Matcher;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Answer, Batch, BatchOutput, ResearchFields, invalid_filter, json_len, page_count, run_batch, shown};
use crate::documents::position::{Encoding, column_in_line};
use crate::engine::Engine;
use crate::search::{self, SearchError, WalkOptions};
use crate::tools::ToolError;

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
    /// Matches shown per file, 1-100 (default 10).
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
    /// Matches in the whole search (each occurrence counts; 0 in discovery mode, which stops at
    /// each file's first match).
    pub total_matches: usize,
    /// Files with at least one match in the whole search.
    pub total_files: usize,
    /// Files read.
    pub files_searched: usize,
    pub pagination: FilePagination,
    /// Set when the output budget cut this page short (see the hints for how to continue).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

/// Paging over files.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FilePagination {
    /// 1-based.
    pub current_page: usize,
    pub total_pages: usize,
    pub files_per_page: usize,
    pub total_files: usize,
    pub has_more: bool,
}

/// A file with matches.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SearchFile {
    /// Relative to the workspace root.
    pub path: String,
    /// Matches in this file (all of them; absent in discovery mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub match_count: Option<usize>,
    /// The first matchesPerPage matches (absent in discovery mode).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub matches: Vec<SearchMatch>,
    /// Set when an open editor buffer (at this version) was searched instead of the disk.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buffer_version: Option<i32>,
}

/// One match.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SearchMatch {
    /// The matching line (with contextLines lines around it, joined by "\n"); each line cut to
    /// matchContentLength characters around the match.
    pub value: String,
    /// 1-based line of the match's start.
    pub line: u64,
    /// 1-based column of the match's start, in characters.
    pub column: u32,
    pub location: MatchLocation,
}

/// Where a match is, in bytes.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MatchLocation {
    /// Byte offset of the match's start from the start of the file.
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
    if !root.absolute.exists() && !engine.documents().is_open(&root.absolute) {
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
    let settings = SinkSettings { files_only, per_file, context_lines, content_length };
    let stats = search::for_each_text(
        workspace,
        engine.documents(),
        std::slice::from_ref(&root.absolute),
        types,
        &options,
        || build_searcher(context_lines, query.multiline),
        |searcher, resolved, buffer_version, bytes| {
            let mut sink = MatchSink::new(&matcher, &settings);
            if searcher.search_slice(&matcher, bytes, &mut sink).is_ok() && sink.total > 0 {
                let file = sink.into_file(resolved.relative.clone(), buffer_version);
                let mut collected = collector.lock().unwrap_or_else(|e| e.into_inner());
                collected.add(file, keep_files);
            }
            true
        },
    )?;
    let collected = collector.into_inner().unwrap_or_else(|e| e.into_inner());
    let total_files = collected.total_files;
    let total_pages = page_count(total_files, files_per_page);
    let mut files: Vec<SearchFile> = collected.kept.into_values().skip((page - 1) * files_per_page).collect();
    files.truncate(files_per_page);

    // The output budget: keep whole files while they fit, then cut the last one's matches.
    let mut hints = Vec::new();
    let mut used = 300;
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
    if let Some(file) = kept.iter().find(|f| f.match_count.unwrap_or(0) > f.matches.len()) {
        hints.push(format!(
            "{} has {} matches, {} shown: raise matchesPerPage (max 100), or read around them with localGetFileContent (path={:?}, matchString).",
            file.path,
            file.match_count.unwrap_or(0),
            file.matches.len(),
            file.path
        ));
    }
    if let Some((file, first)) = kept.iter().find_map(|f| f.matches.first().map(|m| (f, m))) {
        hints.push(format!(
            "Lines and columns are 1-based: use line {} column {} of {} as the line/column of find_definition, find_references or symbol_at.",
            first.line, first.column, file.path
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
    let data = SearchCodeResult {
        path: shown(&root),
        files: kept,
        total_matches: collected.total_matches,
        total_files,
        files_searched: stats.files_visited,
        pagination: FilePagination { current_page: page, total_pages, files_per_page, total_files, has_more },
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

fn build_searcher(context_lines: usize, multiline: bool) -> Searcher {
    SearcherBuilder::new()
        .line_number(true)
        .multi_line(multiline)
        .before_context(context_lines)
        .after_context(context_lines)
        .binary_detection(BinaryDetection::quit(b'\x00'))
        .build()
}

/// Files with matches, the first `keep` by path kept whole, totals over all.
#[derive(Default)]
struct Collected {
    kept: BTreeMap<String, SearchFile>,
    total_files: usize,
    total_matches: usize,
}

impl Collected {
    fn add(&mut self, file: SearchFile, keep: usize) {
        self.total_files += 1;
        self.total_matches += file.match_count.unwrap_or(0);
        self.kept.insert(file.path.clone(), file);
        while self.kept.len() > keep {
            self.kept.pop_last();
        }
    }
}

struct SinkSettings {
    files_only: bool,
    per_file: usize,
    context_lines: usize,
    content_length: usize,
}

/// Collects one file's matches: every occurrence counted, the first `per_file` kept with their
/// lines and context.
struct MatchSink<'a> {
    matcher: &'a RegexMatcher,
    settings: &'a SinkSettings,
    total: usize,
    /// Kept matches: (line, column, byte offset, byte length, lines of the match).
    kept: Vec<(u64, u32, u64, u64, u64)>,
    /// Line texts (matching and context) near kept matches.
    lines: BTreeMap<u64, String>,
}

impl<'a> MatchSink<'a> {
    fn new(matcher: &'a RegexMatcher, settings: &'a SinkSettings) -> MatchSink<'a> {
        MatchSink { matcher, settings, total: 0, kept: Vec::new(), lines: BTreeMap::new() }
    }

    fn into_file(self, path: String, buffer_version: Option<i32>) -> SearchFile {
        let settings = self.settings;
        if settings.files_only {
            return SearchFile { path, match_count: None, matches: Vec::new(), buffer_version };
        }
        let c = settings.context_lines as u64;
        let matches = self
            .kept
            .iter()
            .map(|&(line, column, offset, length, span)| {
                let from = line.saturating_sub(c).max(1);
                let to = line + span.saturating_sub(1) + c;
                let value: Vec<String> = self
                    .lines
                    .range(from..=to)
                    .map(|(&n, text)| {
                        let anchor = if n == line { column as usize - 1 } else { 0 };
                        cut_around(text, anchor, settings.content_length)
                    })
                    .collect();
                SearchMatch {
                    value: value.join("\n"),
                    line,
                    column,
                    location: MatchLocation { char_offset: offset, char_length: length },
                }
            })
            .collect();
        SearchFile { path, match_count: Some(self.total), matches, buffer_version }
    }

    fn wants_line(&self, line: u64) -> bool {
        let c = self.settings.context_lines as u64;
        match self.kept.last() {
            Some(&(last, _, _, _, span)) if line <= last + span.saturating_sub(1) + c => true,
            _ => self.kept.len() < self.settings.per_file,
        }
    }

    fn store_lines(&mut self, first_line: u64, bytes: &[u8]) {
        let text = String::from_utf8_lossy(bytes);
        for (idx, line_text) in text.split_inclusive('\n').enumerate() {
            let n = first_line + idx as u64;
            if self.wants_line(n) || self.kept.iter().any(|k| n >= k.0 && n < k.0 + k.4) {
                self.lines.insert(n, line_text.trim_end_matches(['\n', '\r']).to_owned());
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

impl Sink for MatchSink<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _searcher: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        let bytes = mat.bytes();
        let Some(first_line) = mat.line_number() else { return Ok(true) };
        if self.settings.files_only {
            self.total += 1;
            return Ok(false);
        }
        let base = mat.absolute_byte_offset();
        let mut found = Vec::new();
        let _ = self.matcher.find_iter(bytes, |m| {
            if m.end() > m.start() || found.is_empty() {
                found.push((m.start(), m.end()));
            }
            true
        });
        for (start, end) in found {
            self.total += 1;
            if self.kept.len() >= self.settings.per_file {
                continue;
            }
            let before = &bytes[..start];
            let line = first_line + memchr::memchr_iter(b'\n', before).count() as u64;
            let line_start = memchr::memrchr(b'\n', before).map_or(0, |i| i + 1);
            let prefix = String::from_utf8_lossy(&before[line_start..]);
            let (column, _) = column_in_line(&prefix, prefix.len(), Encoding::Utf32);
            let span = 1 + memchr::memchr_iter(b'\n', &bytes[start..end.max(start)]).count() as u64
                - u64::from(end > start && bytes[end - 1] == b'\n');
            self.kept.push((line, column + 1, base + start as u64, (end - start) as u64, span.max(1)));
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
