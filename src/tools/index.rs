//! The `index` toolset: `files_list`, `files_search`, `files_get_info` over the Engine's file
//! index (seed: file-index tools). Paths are root-relative; results are objects wrapping the
//! seed's arrays (`files`, `results`), since MCP structured content must be an object.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::local::iso8601;
use super::{ErrorCode, ToolError};
use crate::engine::Engine;
use crate::index::{EntryKind, FileIndex, IndexEntry, meta};
use crate::search::SearchError;

/// Parameters of `files_list`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FilesListParams {
    /// Only entries under this directory, at any depth (e.g. "src/lib").
    #[serde(default)]
    pub directory: Option<String>,
    /// Only files with this extension (".ts" or "ts").
    #[serde(default)]
    pub extension: Option<String>,
    /// Only files of this language ("typescript", "yaml", "python", ...).
    #[serde(default)]
    pub language: Option<String>,
    /// Substring of the path (case-insensitive).
    #[serde(default)]
    pub filter: Option<String>,
    /// Maximum entries (default 50, at most 1000; the output budget may return fewer).
    #[serde(default)]
    pub limit: Option<usize>,
    /// Entries to skip first (continue a listing with the offset a hint gives).
    #[serde(default)]
    pub offset: Option<usize>,
}

/// One indexed file or directory.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileEntry {
    /// Relative to the workspace root.
    pub file_path: String,
    /// "file" or "directory".
    pub kind: String,
    pub file_name: String,
    /// With the dot (".go"); "" for none.
    pub extension: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    pub mime_type: String,
    /// Bytes; for a directory the sum of its files' sizes.
    pub size: u64,
    /// Files under a directory at any depth (0 for a file).
    pub file_count: u64,
}

/// Result of `files_list`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FilesListOutput {
    /// In path order.
    pub files: Vec<FileEntry>,
    /// Entries matching the filters.
    pub total: usize,
    pub offset: usize,
    pub has_more: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

/// Parameters of `files_search`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FilesSearchParams {
    /// Words from the path or name ("http server", "json decoder").
    pub query: String,
    /// Maximum results (default 10, at most 100).
    #[serde(default, rename = "topK")]
    pub top_k: Option<usize>,
    /// Minimum score, 0-1 (default 0.3); see docs/tools.md for what the score is.
    #[serde(default)]
    pub min_score: Option<f64>,
}

/// One ranked file.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileHit {
    pub file_path: String,
    pub file_name: String,
    pub extension: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    pub size: u64,
    /// 0-1: IDF-weighted share of the query's words found in the path (lexical, not semantic).
    pub score: f64,
}

/// Result of `files_search`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FilesSearchOutput {
    /// Best first.
    pub results: Vec<FileHit>,
    /// Files scoring at least minScore.
    pub total: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

/// Parameters of `files_get_info`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FilesGetInfoParams {
    /// File or directory path relative to the workspace root (e.g. "src/lib/embedder.ts").
    pub file_path: String,
}

/// Result of `files_get_info`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileInfo {
    #[serde(flatten)]
    pub entry: FileEntry,
    /// The parent directory, root-relative ("" for the root).
    pub directory: String,
    /// Last modification, ISO 8601 UTC.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mtime: Option<String>,
}

fn index(engine: &Engine) -> Result<std::sync::Arc<FileIndex>, ToolError> {
    engine.file_index().map_err(|err| match err {
        // The same error every walk gives for an invalid `[walk] exclude` entry.
        SearchError::InvalidGlob { .. } => ToolError::from(err),
        _ => ToolError::new(
            ErrorCode::IndexUnavailable,
            format!("the file index cannot be built: {err}"),
            "Check [walk] exclude in filepuff.toml and the root's permissions.",
        ),
    })
}

fn entry_json(path: &str, entry: &IndexEntry) -> FileEntry {
    let name = path.rsplit('/').next().unwrap_or(path).to_owned();
    let is_dir = entry.kind == EntryKind::Directory;
    FileEntry {
        file_path: path.to_owned(),
        kind: if is_dir { "directory" } else { "file" }.to_owned(),
        extension: if is_dir {
            String::new()
        } else {
            meta::extension(&name).map(|e| format!(".{e}")).unwrap_or_default()
        },
        language: if is_dir { None } else { meta::language(path).map(str::to_owned) },
        mime_type: meta::mime_type(path, is_dir),
        file_name: name,
        size: entry.size,
        file_count: entry.file_count,
    }
}

fn not_indexed(field: &str, path: &str) -> ToolError {
    ToolError::new(
        ErrorCode::IndexPathNotFound,
        format!("{field} {path:?} is not in the file index"),
        "It does not exist, or the walk skips it (.gitignore, hidden, [walk] exclude). List the parent with files_list or search with files_search.",
    )
    .with(field, path)
}

/// Normalises a client path to the index's form (root-relative, no leading `./` or `/`).
fn index_path(engine: &Engine, path: &str) -> Result<String, ToolError> {
    let trimmed = path.trim();
    if trimmed.is_empty() || trimmed == "." || trimmed == "/" {
        return Ok(String::new());
    }
    Ok(engine.workspace().resolve(trimmed)?.relative)
}

/// Runs `files_list`. Errors: 8010 for an unknown directory, path errors (1001–1005).
pub fn files_list(engine: &Engine, params: FilesListParams) -> Result<FilesListOutput, ToolError> {
    let index = index(engine)?;
    let directory = match &params.directory {
        Some(dir) => index_path(engine, dir)?,
        None => String::new(),
    };
    if !directory.is_empty() && index.get(&directory).is_none_or(|e| e.kind != EntryKind::Directory) {
        return Err(not_indexed("directory", &directory));
    }
    let extension =
        params.extension.as_deref().map(|e| e.trim_start_matches('.').to_ascii_lowercase()).filter(|e| !e.is_empty());
    let language = params.language.as_deref().map(str::to_ascii_lowercase).filter(|l| !l.is_empty());
    let filter = params.filter.as_deref().map(str::to_lowercase).filter(|f| !f.is_empty());
    let limit = params.limit.unwrap_or(50).clamp(1, 1000);
    let offset = params.offset.unwrap_or(0);
    let budget = engine.workspace().config().limits.max_output_chars;
    let mut files = Vec::new();
    let mut total = 0;
    let mut used = 200;
    let mut budget_hit = false;
    index.for_each_under(&directory, |path, entry| {
        let is_file = entry.kind == EntryKind::File;
        if extension.as_ref().is_some_and(|want| {
            !is_file
                || meta::extension(path.rsplit('/').next().unwrap_or(path))
                    .is_none_or(|e| !e.eq_ignore_ascii_case(want))
        }) {
            return true;
        }
        if language.as_ref().is_some_and(|want| !is_file || meta::language(path) != Some(want.as_str())) {
            return true;
        }
        if filter.as_ref().is_some_and(|f| !path.to_lowercase().contains(f.as_str())) {
            return true;
        }
        total += 1;
        if total > offset && files.len() < limit && !budget_hit {
            let item = entry_json(path, entry);
            used += super::local::json_len(&item);
            if used > budget && !files.is_empty() {
                budget_hit = true;
            } else {
                files.push(item);
            }
        }
        true
    });
    let next = offset + files.len();
    let has_more = next < total;
    let hint = has_more.then(|| {
        format!(
            "{} more entries{}: continue with offset={next}.",
            total - next,
            if budget_hit { " (the output budget cut this page)" } else { "" }
        )
    });
    Ok(FilesListOutput { files, total, offset, has_more, hint })
}

/// Runs `files_search`. Errors: 8012 for a query without a searchable term.
pub fn files_search(engine: &Engine, params: FilesSearchParams) -> Result<FilesSearchOutput, ToolError> {
    let index = index(engine)?;
    let top_k = params.top_k.unwrap_or(10).clamp(1, 100);
    let min_score = params.min_score.unwrap_or(0.3);
    let Some(hits) = index.search(&params.query) else {
        return Err(ToolError::new(
            ErrorCode::IndexQueryEmpty,
            format!("the query {:?} has no searchable word", params.query),
            "Give words from the path or file name, such as \"http server\".",
        )
        .with("query", params.query.clone()));
    };
    let above: Vec<_> = hits.into_iter().filter(|h| h.score >= min_score).collect();
    let total = above.len();
    let results: Vec<FileHit> = above
        .into_iter()
        .take(top_k)
        .map(|hit| {
            let entry = entry_json(&hit.path, &hit.entry);
            FileHit {
                file_path: entry.file_path,
                file_name: entry.file_name,
                extension: entry.extension,
                language: entry.language,
                size: entry.size,
                score: (hit.score * 10_000.0).round() / 10_000.0,
            }
        })
        .collect();
    let hint = if total > results.len() {
        Some(format!("{} more files score at least {min_score}: raise topK or add words.", total - results.len()))
    } else if total == 0 {
        Some(format!("No file scores at least {min_score}: lower minScore, or try other words."))
    } else {
        None
    };
    Ok(FilesSearchOutput { results, total, hint })
}

/// Runs `files_get_info`. Errors: 8010 for a path not in the index, path errors (1001–1005).
pub fn files_get_info(engine: &Engine, params: FilesGetInfoParams) -> Result<FileInfo, ToolError> {
    let index = index(engine)?;
    let path = index_path(engine, &params.file_path)?;
    let (entry, mtime) = if path.is_empty() {
        let (files, _, bytes) = index.totals();
        let mtime = std::fs::metadata(engine.workspace().root()).ok().and_then(|m| m.modified().ok());
        (IndexEntry { kind: EntryKind::Directory, size: bytes, modified: mtime, file_count: files }, mtime)
    } else {
        let entry = index.get(&path).ok_or_else(|| not_indexed("filePath", &path))?;
        let mtime = entry.modified;
        (entry, mtime)
    };
    let directory = path.rsplit_once('/').map(|(dir, _)| dir.to_owned()).unwrap_or_default();
    Ok(FileInfo { entry: entry_json(&path, &entry), directory, mtime: mtime.map(iso8601) })
}

/// Text form of `files_list`.
pub fn render_list(output: &FilesListOutput) -> String {
    let mut out = format!("{} entries (showing {} from offset {})\n", output.total, output.files.len(), output.offset);
    for file in &output.files {
        if file.kind == "directory" {
            out.push_str(&format!("{}/  ({} files)\n", file.file_path, file.file_count));
        } else {
            out.push_str(&format!(
                "{}  {} B  {}\n",
                file.file_path,
                file.size,
                file.language.as_deref().unwrap_or("-")
            ));
        }
    }
    if let Some(hint) = &output.hint {
        out.push_str(&format!("\n{hint}\n"));
    }
    out
}

/// Text form of `files_search`.
pub fn render_search(output: &FilesSearchOutput) -> String {
    let mut out = String::new();
    for hit in &output.results {
        out.push_str(&format!("{:.3}  {}\n", hit.score, hit.file_path));
    }
    if let Some(hint) = &output.hint {
        out.push_str(&format!("\n{hint}\n"));
    }
    out
}

/// Text form of `files_get_info`.
pub fn render_info(output: &FileInfo) -> String {
    serde_json::to_string_pretty(output).unwrap_or_default() + "\n"
}
