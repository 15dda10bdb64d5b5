//! `localViewStructure`: a directory's tree down to `depth` levels, filtered, sorted and paged,
//! from the Engine's walk (`.gitignore` honoured, dotfiles only with `hidden`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::entries::{Entry, EntryKind, extension_of, walk_entries};
use super::{Answer, Batch, BatchOutput, ResearchFields, invalid_filter, iso8601, json_len, page_count, run_batch};
use crate::engine::Engine;
use crate::search::WalkOptions;
use crate::tools::ToolError;

/// One `localViewStructure` query (Octocode's parameters).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ViewStructureQuery {
    /// Directory, relative to the workspace root ("" = the root).
    #[serde(default)]
    pub path: String,
    /// Levels to show, 1-5 (default 1: the directory's children).
    #[serde(default)]
    pub depth: Option<usize>,
    /// Entries per page, 1-100 (default 20).
    #[serde(default)]
    pub entries_per_page: Option<usize>,
    /// 1-based page (default 1).
    #[serde(default)]
    pub entry_page_number: Option<usize>,
    /// Show file sizes (bytes).
    #[serde(default)]
    pub details: bool,
    /// Include dotfiles and dot-directories.
    #[serde(default)]
    pub hidden: bool,
    /// Only files with these extensions ("ts" or ".ts"); directories are still listed.
    #[serde(default)]
    pub extensions: Vec<String>,
    /// Only entries whose name matches: a glob if it has * ? or [, else a case-insensitive substring.
    #[serde(default)]
    pub pattern: Option<String>,
    /// Only regular files (no directories, no symlinks).
    #[serde(default)]
    pub files_only: bool,
    /// Only directories.
    #[serde(default)]
    pub directories_only: bool,
    /// "name" (path order, default), "size" (largest first), "time" (newest first), "extension".
    #[serde(default)]
    pub sort_by: Option<String>,
    /// Include totals of files, directories and bytes over every matching entry.
    #[serde(default)]
    pub summary: bool,
    /// Show each entry's modification time (ISO 8601 UTC).
    #[serde(default)]
    pub show_file_last_modified: bool,
    #[serde(flatten)]
    pub research: ResearchFields,
}

/// One query's result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ViewStructureResult {
    /// The directory shown, relative to the workspace root ("." for the root).
    pub path: String,
    pub entries: Vec<StructureEntry>,
    /// Matching entries on all pages.
    pub total_entries: usize,
    pub pagination: EntryPagination,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<StructureSummary>,
}

/// An entry.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StructureEntry {
    /// Relative to the workspace root.
    pub path: String,
    pub name: String,
    /// "file", "directory" or "symlink".
    #[serde(rename = "type")]
    pub kind: String,
    /// 1 for the directory's children, 2 below them, ...
    pub depth: usize,
    /// Bytes (files, with details).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// ISO 8601 UTC (with showFileLastModified).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub modified: Option<String>,
}

/// Paging over entries.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EntryPagination {
    pub current_page: usize,
    pub total_pages: usize,
    pub entries_per_page: usize,
    pub total_entries: usize,
    pub has_more: bool,
}

/// Totals over every matching entry (all pages).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StructureSummary {
    pub total_files: usize,
    pub total_directories: usize,
    /// Bytes in the matching files.
    pub total_size: u64,
}

/// Runs `localViewStructure`.
///
/// Errors per query: path errors (1001–1005), 1101 missing, 8004 not a directory, 8005 a bad
/// sortBy or pattern.
pub fn local_view_structure(
    engine: &Engine,
    batch: Batch<ViewStructureQuery>,
) -> Result<BatchOutput<ViewStructureResult>, ToolError> {
    run_batch(engine, batch, view_one)
}

/// A name filter: a glob (with * ? [) or a case-insensitive substring.
pub(crate) fn name_filter(field: &str, pattern: &str, case_insensitive: bool) -> Result<NameFilter, ToolError> {
    if pattern.contains(['*', '?', '[']) {
        let glob = globset::GlobBuilder::new(pattern)
            .case_insensitive(case_insensitive)
            .literal_separator(false)
            .build()
            .map_err(|err| invalid_filter(field, pattern, &format!("a glob such as *.ts ({err})")))?;
        Ok(NameFilter::Glob(glob.compile_matcher()))
    } else {
        Ok(NameFilter::Substring(pattern.to_lowercase()))
    }
}

/// See [`name_filter`].
pub(crate) enum NameFilter {
    Glob(globset::GlobMatcher),
    Substring(String),
}

impl NameFilter {
    pub(crate) fn matches(&self, name: &str) -> bool {
        match self {
            NameFilter::Glob(glob) => glob.is_match(name),
            NameFilter::Substring(needle) => name.to_lowercase().contains(needle.as_str()),
        }
    }
}

fn view_one(
    engine: &Engine,
    query: &ViewStructureQuery,
    budget: usize,
) -> Result<Answer<ViewStructureResult>, ToolError> {
    let root = super::resolve_dir(engine, &query.path)?;
    let depth = query.depth.unwrap_or(1).clamp(1, 5);
    let per_page = query.entries_per_page.unwrap_or(20).clamp(1, 100);
    let page = query.entry_page_number.unwrap_or(1).max(1);
    let sort_by = query.sort_by.as_deref().unwrap_or("name");
    if !matches!(sort_by, "name" | "size" | "time" | "extension") {
        return Err(invalid_filter("sortBy", sort_by, "\"name\", \"size\", \"time\" or \"extension\""));
    }
    let pattern =
        query.pattern.as_deref().filter(|p| !p.is_empty()).map(|p| name_filter("pattern", p, true)).transpose()?;
    let extensions: Vec<String> = query
        .extensions
        .iter()
        .map(|e| e.trim_start_matches('.').to_ascii_lowercase())
        .filter(|e| !e.is_empty())
        .collect();
    let options = WalkOptions { hidden: query.hidden.then_some(true), max_depth: Some(depth), ..Default::default() };
    let mut entries: Vec<Entry> = walk_entries(engine, &root, &options)?
        .into_iter()
        .filter(|e| !(query.files_only && e.kind != EntryKind::File))
        .filter(|e| !(query.directories_only && e.kind != EntryKind::Directory))
        .filter(|e| pattern.as_ref().is_none_or(|p| p.matches(&e.name)))
        .filter(|e| {
            extensions.is_empty() || e.kind == EntryKind::Directory || extensions.contains(&extension_of(&e.name))
        })
        .collect();
    match sort_by {
        "size" => entries.sort_by(|a, b| b.size.cmp(&a.size).then_with(|| a.relative.cmp(&b.relative))),
        "time" => entries.sort_by(|a, b| b.modified.cmp(&a.modified).then_with(|| a.relative.cmp(&b.relative))),
        "extension" => entries.sort_by(|a, b| {
            extension_of(&a.name).cmp(&extension_of(&b.name)).then_with(|| a.relative.cmp(&b.relative))
        }),
        _ => entries.sort_by(|a, b| a.relative.cmp(&b.relative)),
    }
    let total = entries.len();
    let summary = query.summary.then(|| StructureSummary {
        total_files: entries.iter().filter(|e| e.kind == EntryKind::File).count(),
        total_directories: entries.iter().filter(|e| e.kind == EntryKind::Directory).count(),
        total_size: entries.iter().filter(|e| e.kind == EntryKind::File).map(|e| e.size).sum(),
    });
    let total_pages = page_count(total, per_page);
    let mut shown = Vec::new();
    let mut used = 400;
    let mut cut_at = None;
    for (idx, entry) in entries.iter().enumerate().skip((page - 1) * per_page).take(per_page) {
        let item = StructureEntry {
            path: entry.relative.clone(),
            name: entry.name.clone(),
            kind: entry.kind.name().to_owned(),
            depth: entry.depth,
            size: (query.details && entry.kind == EntryKind::File).then_some(entry.size),
            modified: query.show_file_last_modified.then(|| entry.modified.map(iso8601)).flatten(),
        };
        used += json_len(&item);
        if used > budget && !shown.is_empty() {
            cut_at = Some(idx);
            break;
        }
        shown.push(item);
    }
    let mut hints = Vec::new();
    if let Some(idx) = cut_at {
        hints.push(format!(
            "Output budget ({budget} characters) reached after {} entries of this page; continue with entriesPerPage=1, entryPageNumber={} (entry number {} in this order), or fewer details.",
            shown.len(),
            idx + 1,
            idx + 1
        ));
    }
    let has_more = page < total_pages;
    if has_more {
        hints.push(format!(
            "{} more entries: continue with entryPageNumber={} (entriesPerPage={per_page}).",
            total.saturating_sub(page * per_page),
            page + 1
        ));
    }
    if total == 0 {
        hints.push("Nothing matches here: loosen the filters, try hidden=true, or a greater depth.".to_owned());
    } else if depth < 5 && shown.iter().any(|e| e.kind == "directory" && e.depth == depth) {
        hints.push(format!("Drill into a directory with path=<it> or depth={}.", depth + 1));
    }
    let data = ViewStructureResult {
        path: super::shown(&root),
        entries: shown,
        total_entries: total,
        pagination: EntryPagination {
            current_page: page,
            total_pages,
            entries_per_page: per_page,
            total_entries: total,
            has_more,
        },
        summary,
    };
    Ok(Answer { has_results: total > 0, data, hints })
}
