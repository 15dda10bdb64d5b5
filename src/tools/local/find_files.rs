//! `localFindFiles`: `find` over the Engine's walk — names, types, times, sizes, depth,
//! permissions — newest first, paged.
//!
//! Unlike `find`, the walk honours `.gitignore`/`.ignore`, skips hidden entries (unless
//! `[walk] hidden`) and `.git`, and does not follow symlinks. Sizes are exact bytes with
//! K = 1024 (find's `-size` rounds up to its unit; this does not). Times are compared with the
//! call's clock: `modifiedWithin: "7d"` keeps entries modified in the last 7×24 hours.

use std::time::{Duration, SystemTime};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::entries::{EntryKind, walk_entries};
use super::view_structure::name_filter;
use super::{Answer, Batch, BatchOutput, ResearchFields, invalid_filter, iso8601, json_len, page_count, run_batch};
use crate::engine::Engine;
use crate::search::WalkOptions;
use crate::tools::ToolError;

/// One `localFindFiles` query (Octocode's parameters).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FindFilesQuery {
    /// Search root, relative to the workspace root ("" = the root).
    #[serde(default)]
    pub path: String,
    /// File name glob, e.g. "*.ts" (case-sensitive).
    #[serde(default)]
    pub name: Option<String>,
    /// File name glob, case-insensitive.
    #[serde(default)]
    pub iname: Option<String>,
    /// Several name globs; an entry matching any is kept.
    #[serde(default)]
    pub names: Vec<String>,
    /// "f" file, "d" directory, "l" symlink (default: all).
    #[serde(default, rename = "type")]
    pub entry_type: Option<String>,
    /// Modified within this long: "30m", "2h", "7d" (also "s" seconds, "w" weeks).
    #[serde(default)]
    pub modified_within: Option<String>,
    /// Modified longer ago than this ("30d").
    #[serde(default)]
    pub modified_before: Option<String>,
    /// Accessed within this long ("1d").
    #[serde(default)]
    pub accessed_within: Option<String>,
    /// Larger than this: "10M", "1K", "1G", or bytes ("100"); K = 1024.
    #[serde(default)]
    pub size_greater: Option<String>,
    /// Smaller than this.
    #[serde(default)]
    pub size_less: Option<String>,
    /// Directory names (or root-relative directory paths) not to enter.
    #[serde(default)]
    pub exclude_dir: Vec<String>,
    /// Deepest level, 1-10 (the root's children are level 1).
    #[serde(default)]
    pub max_depth: Option<usize>,
    /// Shallowest level, 0-10 (0 includes the root itself; default 1).
    #[serde(default)]
    pub min_depth: Option<usize>,
    /// Entries per page, 1-100 (default 20).
    #[serde(default)]
    pub files_per_page: Option<usize>,
    /// 1-based page (default 1).
    #[serde(default)]
    pub file_page_number: Option<usize>,
    /// Show size and permissions.
    #[serde(default)]
    pub details: bool,
    /// Show modification times (default true).
    #[serde(default)]
    pub show_file_last_modified: Option<bool>,
    /// Glob on the root-relative path ("*" crosses "/", as find -path); without * ? [ a substring.
    #[serde(default)]
    pub path_pattern: Option<String>,
    /// Regex searched in the file name (Rust syntax, unanchored).
    #[serde(default)]
    pub regex: Option<String>,
    /// Only empty files (0 bytes) and empty directories.
    #[serde(default)]
    pub empty: bool,
    /// Only files with an execute bit set.
    #[serde(default)]
    pub executable: bool,
    #[serde(flatten)]
    pub research: ResearchFields,
}

/// One query's result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FindFilesResult {
    /// The search root, relative to the workspace root.
    pub path: String,
    /// This page's entries, newest first (then by path).
    pub files: Vec<FoundFile>,
    /// Matching entries on all pages.
    pub total_files: usize,
    pub pagination: super::search_code::FilePagination,
}

/// A found entry.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FoundFile {
    /// Relative to the workspace root.
    pub path: String,
    /// "file", "directory" or "symlink".
    #[serde(rename = "type")]
    pub kind: String,
    /// Bytes (with details).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Octal permission bits such as "644" (with details).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub permissions: Option<String>,
    /// ISO 8601 UTC (unless showFileLastModified is false).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub modified: Option<String>,
}

/// Runs `localFindFiles`.
///
/// Errors per query: path errors, 1101 missing, 8004 not a directory, 8005 a bad time, size,
/// type, glob or regex.
pub fn local_find_files(
    engine: &Engine,
    batch: Batch<FindFilesQuery>,
) -> Result<BatchOutput<FindFilesResult>, ToolError> {
    run_batch(engine, batch, find_one)
}

/// Parses "30m", "2h", "7d", "1w", "45s" (a bare number is days, as find's -mtime).
pub(crate) fn parse_duration(field: &str, text: &str) -> Result<Duration, ToolError> {
    let accepted = "a number with s, m, h, d or w, such as \"30m\", \"2h\" or \"7d\"";
    let text = text.trim();
    let (number, unit) = text.split_at(text.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(text.len()));
    let value: f64 = number.parse().map_err(|_| invalid_filter(field, text, accepted))?;
    let seconds = match unit.trim().to_ascii_lowercase().as_str() {
        "s" | "sec" | "secs" => 1.0,
        "m" | "min" | "mins" => 60.0,
        "h" | "hr" | "hrs" | "hour" | "hours" => 3600.0,
        "" | "d" | "day" | "days" => 86_400.0,
        "w" | "week" | "weeks" => 604_800.0,
        _ => return Err(invalid_filter(field, text, accepted)),
    };
    Ok(Duration::from_secs_f64(value * seconds))
}

/// Parses "10M", "1K", "1.5G", "100" (bytes), "10MB", "10k"; K = 1024.
pub(crate) fn parse_size(field: &str, text: &str) -> Result<u64, ToolError> {
    let accepted = "a number with an optional K, M or G suffix (K = 1024 bytes), such as \"100K\" or \"10M\"";
    let text = text.trim();
    let (number, unit) = text.split_at(text.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(text.len()));
    let value: f64 = number.parse().map_err(|_| invalid_filter(field, text, accepted))?;
    let factor = match unit.trim().to_ascii_uppercase().trim_end_matches('B').trim_end_matches('I') {
        "" | "C" => 1.0,
        "K" => 1024.0,
        "M" => 1024.0 * 1024.0,
        "G" => 1024.0 * 1024.0 * 1024.0,
        _ => return Err(invalid_filter(field, text, accepted)),
    };
    Ok((value * factor) as u64)
}

fn find_one(engine: &Engine, query: &FindFilesQuery, budget: usize) -> Result<Answer<FindFilesResult>, ToolError> {
    let root = super::resolve_dir(engine, &query.path)?;
    let kind = match query.entry_type.as_deref() {
        None | Some("") => None,
        Some("f") => Some(EntryKind::File),
        Some("d") => Some(EntryKind::Directory),
        Some("l") => Some(EntryKind::Symlink),
        Some(other) => return Err(invalid_filter("type", other, "\"f\", \"d\" or \"l\"")),
    };
    let mut name_globs = Vec::new();
    for (field, pattern, insensitive) in query
        .name
        .iter()
        .map(|n| ("name", n, false))
        .chain(query.iname.iter().map(|n| ("iname", n, true)))
        .chain(query.names.iter().map(|n| ("names", n, false)))
    {
        let glob = globset::GlobBuilder::new(pattern)
            .case_insensitive(insensitive)
            .build()
            .map_err(|err| invalid_filter(field, pattern, &format!("a glob such as *.ts ({err})")))?;
        name_globs.push(glob.compile_matcher());
    }
    let path_pattern = query
        .path_pattern
        .as_deref()
        .filter(|p| !p.is_empty())
        .map(|p| name_filter("pathPattern", p, false))
        .transpose()?;
    let regex = query
        .regex
        .as_deref()
        .map(|r| regex::Regex::new(r).map_err(|err| invalid_filter("regex", r, &format!("a Rust regex ({err})"))))
        .transpose()?;
    let now = SystemTime::now();
    let since = |field: &str, value: &Option<String>| -> Result<Option<SystemTime>, ToolError> {
        value
            .as_deref()
            .map(|v| parse_duration(field, v).map(|d| now.checked_sub(d).unwrap_or(SystemTime::UNIX_EPOCH)))
            .transpose()
    };
    let modified_after = since("modifiedWithin", &query.modified_within)?;
    let modified_before = since("modifiedBefore", &query.modified_before)?;
    let accessed_after = since("accessedWithin", &query.accessed_within)?;
    let size_greater = query.size_greater.as_deref().map(|s| parse_size("sizeGreater", s)).transpose()?;
    let size_less = query.size_less.as_deref().map(|s| parse_size("sizeLess", s)).transpose()?;
    let min_depth = query.min_depth.unwrap_or(1).min(10);
    let max_depth = query.max_depth.map(|d| d.clamp(1, 10));
    let per_page = query.files_per_page.unwrap_or(20).clamp(1, 100);
    let page = query.file_page_number.unwrap_or(1).max(1);
    let show_modified = query.show_file_last_modified.unwrap_or(true);

    let options = WalkOptions { exclude_dirs: query.exclude_dir.clone(), max_depth, ..Default::default() };
    let mut entries = walk_entries(engine, &root, &options)?;
    if min_depth == 0
        && let Ok(meta) = std::fs::symlink_metadata(&root.absolute)
    {
        use std::os::unix::fs::PermissionsExt;
        entries.push(super::entries::Entry {
            relative: super::shown(&root),
            absolute: root.absolute.clone(),
            name: root.absolute.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
            kind: EntryKind::Directory,
            depth: 0,
            size: meta.len(),
            modified: meta.modified().ok(),
            accessed: meta.accessed().ok(),
            mode: meta.permissions().mode(),
        });
    }
    entries.retain(|e| {
        e.depth >= min_depth
            && kind.is_none_or(|k| e.kind == k)
            && (name_globs.is_empty() || name_globs.iter().any(|g| g.is_match(&e.name)))
            && path_pattern.as_ref().is_none_or(|p| p.matches(&e.relative))
            && regex.as_ref().is_none_or(|r| r.is_match(&e.name))
            && modified_after.is_none_or(|t| e.modified.is_some_and(|m| m >= t))
            && modified_before.is_none_or(|t| e.modified.is_some_and(|m| m < t))
            && accessed_after.is_none_or(|t| e.accessed.is_some_and(|a| a >= t))
            && size_greater.is_none_or(|s| e.kind == EntryKind::File && e.size > s)
            && size_less.is_none_or(|s| e.kind == EntryKind::File && e.size < s)
            && (!query.executable || (e.kind == EntryKind::File && e.mode & 0o111 != 0))
            && (!query.empty || is_empty(e))
    });
    entries.sort_by(|a, b| b.modified.cmp(&a.modified).then_with(|| a.relative.cmp(&b.relative)));
    let total = entries.len();
    let total_pages = page_count(total, per_page);
    let mut files = Vec::new();
    let mut used = 300;
    let mut cut_at = None;
    for (idx, entry) in entries.iter().enumerate().skip((page - 1) * per_page).take(per_page) {
        let item = FoundFile {
            path: entry.relative.clone(),
            kind: entry.kind.name().to_owned(),
            size: query.details.then_some(entry.size),
            permissions: query.details.then(|| format!("{:o}", entry.mode & 0o7777)),
            modified: if show_modified { entry.modified.map(iso8601) } else { None },
        };
        used += json_len(&item);
        if used > budget && !files.is_empty() {
            cut_at = Some(idx);
            break;
        }
        files.push(item);
    }
    let mut hints = Vec::new();
    if let Some(idx) = cut_at {
        hints.push(format!(
            "Output budget ({budget} characters) reached after {} entries of this page; continue with filesPerPage=1, filePageNumber={} (entry number {} in this order).",
            files.len(),
            idx + 1,
            idx + 1
        ));
    }
    let has_more = page < total_pages;
    if has_more {
        hints.push(format!(
            "{} more entries: continue with filePageNumber={} (filesPerPage={per_page}).",
            total.saturating_sub(page * per_page),
            page + 1
        ));
    }
    if total == 0 {
        hints.push("Nothing matches: loosen the name, time or size filters, or raise maxDepth.".to_owned());
    } else {
        hints.push("Read a found file with localGetFileContent, or search inside with localSearchCode.".to_owned());
    }
    let data = FindFilesResult {
        path: super::shown(&root),
        files,
        total_files: total,
        pagination: super::search_code::FilePagination {
            current_page: page,
            total_pages,
            files_per_page: per_page,
            total_files: total,
            total_matches: None,
            has_more,
        },
    };
    Ok(Answer { has_results: total > 0, data, hints })
}

fn is_empty(entry: &super::entries::Entry) -> bool {
    match entry.kind {
        EntryKind::File => entry.size == 0,
        EntryKind::Directory => std::fs::read_dir(&entry.absolute).is_ok_and(|mut dir| dir.next().is_none()),
        EntryKind::Symlink => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_sizes() {
        assert_eq!(parse_duration("t", "30m").unwrap(), Duration::from_secs(1800));
        assert_eq!(parse_duration("t", "2h").unwrap(), Duration::from_secs(7200));
        assert_eq!(parse_duration("t", "7d").unwrap(), Duration::from_secs(7 * 86_400));
        assert_eq!(parse_duration("t", "1w").unwrap(), Duration::from_secs(604_800));
        assert!(parse_duration("t", "7y").is_err() && parse_duration("t", "d").is_err());
        assert_eq!(parse_size("s", "10M").unwrap(), 10 * 1024 * 1024);
        assert_eq!(parse_size("s", "1K").unwrap(), 1024);
        assert_eq!(parse_size("s", "1.5k").unwrap(), 1536);
        assert_eq!(parse_size("s", "100").unwrap(), 100);
        assert_eq!(parse_size("s", "2GB").unwrap(), 2 * 1024 * 1024 * 1024);
        assert!(parse_size("s", "10X").is_err());
    }
}
