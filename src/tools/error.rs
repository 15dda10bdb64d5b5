//! Structured tool errors: a stable numeric code, a message, context and a remediation.
//!
//! Codes are grouped in ranges by area and never reused; `docs/ERROR_CODES.md` lists every one
//! (a test checks that the document and [`ErrorCode::ALL`] agree).
//!
//! | range | area |
//! |---|---|
//! | 1000–1099 | workspace: paths, URIs, root, configuration |
//! | 1100–1199 | files: reading, ranges |
//! | 2000–2099 | search |
//! | 3000–3099 | parse (syntax) |
//! | 4000–4099 | LSP (language servers) |
//! | 5000–5099 | edit |
//! | 6000–6099 | query (structural patterns) |
//! | 7000–7099 | graph |
//! | 8000–8099 | toolsets, the local (Octocode) tools and the file index |
//! | 9000–9099 | internal |

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::documents::ReadError;
use crate::search::SearchError;
use crate::workspace::WorkspaceError;

/// Every error code filepuff returns. The discriminant is the wire code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCode {
    PathOutsideRoot = 1001,
    PathSymlinkEscape = 1002,
    PathInvalid = 1003,
    UriUnsupportedScheme = 1004,
    UriInvalid = 1005,
    RootInvalid = 1006,
    ConfigInvalid = 1007,
    ParamsInvalid = 1008,
    FileNotFound = 1101,
    FileIsDirectory = 1102,
    FileBinary = 1103,
    FileTooLarge = 1104,
    LineRangePastEnd = 1105,
    LineRangeInvalid = 1106,
    FileUnreadable = 1107,
    SearchInvalidRegex = 2001,
    SearchUnknownFileType = 2002,
    SearchInvalidGlob = 2003,
    ParseLanguageUnsupported = 3001,
    ParseUnknownNodeKind = 3002,
    LspNoServer = 4001,
    LspNotInstalled = 4002,
    LspStartFailed = 4003,
    LspCrashed = 4004,
    LspTimeout = 4005,
    LspServerError = 4006,
    LspBadPosition = 4007,
    EditNoSelector = 5001,
    EditSelectorConflict = 5002,
    EditContentMissing = 5003,
    EditNotCode = 5004,
    EditSelectorRegexInvalid = 5005,
    EditNoMatch = 5006,
    EditAmbiguous = 5007,
    EditIndexOutOfRange = 5008,
    EditSyntaxError = 5009,
    EditStale = 5010,
    EditNotUtf8 = 5011,
    EditWriteFailed = 5012,
    EditBufferChanged = 5013,
    EditEditorUnavailable = 5014,
    EditFileReadOnly = 5015,
    QueryPatternInvalid = 6001,
    QueryLanguageUnknown = 6002,
    QueryNameRegexInvalid = 6003,
    GraphStoreUnavailable = 7001,
    GraphSchemaTooNew = 7002,
    GraphComponentNotFound = 7003,
    GraphNameAmbiguous = 7004,
    GraphValueInvalid = 7005,
    GraphStoreBusy = 7006,
    GraphStoreFailed = 7007,
    GraphVersionConflict = 7008,
    ToolsetDisabled = 8001,
    LocalBatchInvalid = 8002,
    LocalStrategyConflict = 8003,
    LocalNotADirectory = 8004,
    LocalFilterInvalid = 8005,
    IndexPathNotFound = 8010,
    IndexUnavailable = 8011,
    IndexQueryEmpty = 8012,
    EditorNotAvailable = 8020,
    Internal = 9001,
}

impl ErrorCode {
    /// Every code, in numeric order.
    pub const ALL: [ErrorCode; 63] = [
        ErrorCode::PathOutsideRoot,
        ErrorCode::PathSymlinkEscape,
        ErrorCode::PathInvalid,
        ErrorCode::UriUnsupportedScheme,
        ErrorCode::UriInvalid,
        ErrorCode::RootInvalid,
        ErrorCode::ConfigInvalid,
        ErrorCode::ParamsInvalid,
        ErrorCode::FileNotFound,
        ErrorCode::FileIsDirectory,
        ErrorCode::FileBinary,
        ErrorCode::FileTooLarge,
        ErrorCode::LineRangePastEnd,
        ErrorCode::LineRangeInvalid,
        ErrorCode::FileUnreadable,
        ErrorCode::SearchInvalidRegex,
        ErrorCode::SearchUnknownFileType,
        ErrorCode::SearchInvalidGlob,
        ErrorCode::ParseLanguageUnsupported,
        ErrorCode::ParseUnknownNodeKind,
        ErrorCode::LspNoServer,
        ErrorCode::LspNotInstalled,
        ErrorCode::LspStartFailed,
        ErrorCode::LspCrashed,
        ErrorCode::LspTimeout,
        ErrorCode::LspServerError,
        ErrorCode::LspBadPosition,
        ErrorCode::EditNoSelector,
        ErrorCode::EditSelectorConflict,
        ErrorCode::EditContentMissing,
        ErrorCode::EditNotCode,
        ErrorCode::EditSelectorRegexInvalid,
        ErrorCode::EditNoMatch,
        ErrorCode::EditAmbiguous,
        ErrorCode::EditIndexOutOfRange,
        ErrorCode::EditSyntaxError,
        ErrorCode::EditStale,
        ErrorCode::EditNotUtf8,
        ErrorCode::EditWriteFailed,
        ErrorCode::EditBufferChanged,
        ErrorCode::EditEditorUnavailable,
        ErrorCode::EditFileReadOnly,
        ErrorCode::QueryPatternInvalid,
        ErrorCode::QueryLanguageUnknown,
        ErrorCode::QueryNameRegexInvalid,
        ErrorCode::GraphStoreUnavailable,
        ErrorCode::GraphSchemaTooNew,
        ErrorCode::GraphComponentNotFound,
        ErrorCode::GraphNameAmbiguous,
        ErrorCode::GraphValueInvalid,
        ErrorCode::GraphStoreBusy,
        ErrorCode::GraphStoreFailed,
        ErrorCode::GraphVersionConflict,
        ErrorCode::ToolsetDisabled,
        ErrorCode::LocalBatchInvalid,
        ErrorCode::LocalStrategyConflict,
        ErrorCode::LocalNotADirectory,
        ErrorCode::LocalFilterInvalid,
        ErrorCode::IndexPathNotFound,
        ErrorCode::IndexUnavailable,
        ErrorCode::IndexQueryEmpty,
        ErrorCode::EditorNotAvailable,
        ErrorCode::Internal,
    ];

    /// The numeric wire code.
    pub fn code(self) -> u32 {
        self as u32
    }

    /// The stable symbolic name (`FILE_NOT_FOUND`, …).
    pub fn name(self) -> &'static str {
        match self {
            ErrorCode::PathOutsideRoot => "PATH_OUTSIDE_ROOT",
            ErrorCode::PathSymlinkEscape => "PATH_SYMLINK_ESCAPE",
            ErrorCode::PathInvalid => "PATH_INVALID",
            ErrorCode::UriUnsupportedScheme => "URI_UNSUPPORTED_SCHEME",
            ErrorCode::UriInvalid => "URI_INVALID",
            ErrorCode::RootInvalid => "ROOT_INVALID",
            ErrorCode::ConfigInvalid => "CONFIG_INVALID",
            ErrorCode::ParamsInvalid => "PARAMS_INVALID",
            ErrorCode::FileNotFound => "FILE_NOT_FOUND",
            ErrorCode::FileIsDirectory => "FILE_IS_DIRECTORY",
            ErrorCode::FileBinary => "FILE_BINARY",
            ErrorCode::FileTooLarge => "FILE_TOO_LARGE",
            ErrorCode::LineRangePastEnd => "LINE_RANGE_PAST_END",
            ErrorCode::LineRangeInvalid => "LINE_RANGE_INVALID",
            ErrorCode::FileUnreadable => "FILE_UNREADABLE",
            ErrorCode::SearchInvalidRegex => "SEARCH_INVALID_REGEX",
            ErrorCode::SearchUnknownFileType => "SEARCH_UNKNOWN_FILE_TYPE",
            ErrorCode::SearchInvalidGlob => "SEARCH_INVALID_GLOB",
            ErrorCode::ParseLanguageUnsupported => "PARSE_LANGUAGE_UNSUPPORTED",
            ErrorCode::ParseUnknownNodeKind => "PARSE_UNKNOWN_NODE_KIND",
            ErrorCode::LspNoServer => "LSP_NO_SERVER",
            ErrorCode::LspNotInstalled => "LSP_NOT_INSTALLED",
            ErrorCode::LspStartFailed => "LSP_START_FAILED",
            ErrorCode::LspCrashed => "LSP_CRASHED",
            ErrorCode::LspTimeout => "LSP_TIMEOUT",
            ErrorCode::LspServerError => "LSP_SERVER_ERROR",
            ErrorCode::LspBadPosition => "LSP_BAD_POSITION",
            ErrorCode::EditNoSelector => "EDIT_NO_SELECTOR",
            ErrorCode::EditSelectorConflict => "EDIT_SELECTOR_CONFLICT",
            ErrorCode::EditContentMissing => "EDIT_CONTENT_MISSING",
            ErrorCode::EditNotCode => "EDIT_NOT_CODE",
            ErrorCode::EditSelectorRegexInvalid => "EDIT_SELECTOR_REGEX_INVALID",
            ErrorCode::EditNoMatch => "EDIT_NO_MATCH",
            ErrorCode::EditAmbiguous => "EDIT_AMBIGUOUS",
            ErrorCode::EditIndexOutOfRange => "EDIT_INDEX_OUT_OF_RANGE",
            ErrorCode::EditSyntaxError => "EDIT_SYNTAX_ERROR",
            ErrorCode::EditStale => "EDIT_STALE",
            ErrorCode::EditNotUtf8 => "EDIT_NOT_UTF8",
            ErrorCode::EditWriteFailed => "EDIT_WRITE_FAILED",
            ErrorCode::EditBufferChanged => "EDIT_BUFFER_CHANGED",
            ErrorCode::EditEditorUnavailable => "EDIT_EDITOR_UNAVAILABLE",
            ErrorCode::EditFileReadOnly => "EDIT_FILE_READ_ONLY",
            ErrorCode::QueryPatternInvalid => "QUERY_PATTERN_INVALID",
            ErrorCode::QueryLanguageUnknown => "QUERY_LANGUAGE_UNKNOWN",
            ErrorCode::QueryNameRegexInvalid => "QUERY_NAME_REGEX_INVALID",
            ErrorCode::GraphStoreUnavailable => "GRAPH_STORE_UNAVAILABLE",
            ErrorCode::GraphSchemaTooNew => "GRAPH_SCHEMA_TOO_NEW",
            ErrorCode::GraphComponentNotFound => "GRAPH_COMPONENT_NOT_FOUND",
            ErrorCode::GraphNameAmbiguous => "GRAPH_NAME_AMBIGUOUS",
            ErrorCode::GraphValueInvalid => "GRAPH_VALUE_INVALID",
            ErrorCode::GraphStoreBusy => "GRAPH_STORE_BUSY",
            ErrorCode::GraphStoreFailed => "GRAPH_STORE_FAILED",
            ErrorCode::GraphVersionConflict => "GRAPH_VERSION_CONFLICT",
            ErrorCode::ToolsetDisabled => "TOOLSET_DISABLED",
            ErrorCode::LocalBatchInvalid => "LOCAL_BATCH_INVALID",
            ErrorCode::LocalStrategyConflict => "LOCAL_STRATEGY_CONFLICT",
            ErrorCode::LocalNotADirectory => "LOCAL_NOT_A_DIRECTORY",
            ErrorCode::LocalFilterInvalid => "LOCAL_FILTER_INVALID",
            ErrorCode::IndexPathNotFound => "INDEX_PATH_NOT_FOUND",
            ErrorCode::IndexUnavailable => "INDEX_UNAVAILABLE",
            ErrorCode::IndexQueryEmpty => "INDEX_QUERY_EMPTY",
            ErrorCode::EditorNotAvailable => "EDITOR_NOT_AVAILABLE",
            ErrorCode::Internal => "INTERNAL",
        }
    }
}

/// A tool failure as clients see it (MCP `structuredContent` of an `isError` result, the CLI's
/// `--json` error output).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ToolError {
    /// Stable numeric code; see `docs/ERROR_CODES.md`.
    pub code: u32,
    /// Stable symbolic name of the code (`FILE_NOT_FOUND`).
    pub name: String,
    /// What went wrong, in one sentence.
    pub message: String,
    /// The inputs and facts behind the error (path, pattern, limits, …).
    pub context: Map<String, Value>,
    /// What to do about it.
    pub remediation: String,
}

impl ToolError {
    /// A new error with an empty context.
    pub fn new(code: ErrorCode, message: impl Into<String>, remediation: impl Into<String>) -> ToolError {
        ToolError {
            code: code.code(),
            name: code.name().to_owned(),
            message: message.into(),
            context: Map::new(),
            remediation: remediation.into(),
        }
    }

    /// Adds one context field.
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> ToolError {
        self.context.insert(key.to_owned(), value.into());
        self
    }

    /// An unexpected failure (a panic in a tool, a worker that died).
    pub fn internal(message: impl Into<String>) -> ToolError {
        ToolError::new(
            ErrorCode::Internal,
            message,
            "This is a bug in filepuff; please report it with the input that caused it.",
        )
    }

    /// Arguments that do not fit the tool's input schema (a missing or mistyped field).
    pub fn invalid_params(detail: &str) -> ToolError {
        ToolError::new(
            ErrorCode::ParamsInvalid,
            format!("invalid arguments: {detail}"),
            "Check the arguments against the tool's inputSchema (tools/list): names, types and required fields.",
        )
        .with("detail", detail)
    }

    /// The JSON form (what `structuredContent` carries).
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or_else(|_| json!({ "code": self.code, "message": self.message }))
    }
}

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "error {} {}: {}", self.code, self.name, self.message)?;
        if !self.remediation.is_empty() {
            write!(f, "\n  hint: {}", self.remediation)?;
        }
        Ok(())
    }
}

impl From<WorkspaceError> for ToolError {
    fn from(err: WorkspaceError) -> ToolError {
        let message = err.to_string();
        match err {
            WorkspaceError::OutsideRoot { input, root } => ToolError::new(
                ErrorCode::PathOutsideRoot,
                message,
                "Give a path relative to the workspace root, or an absolute path inside it.",
            )
            .with("path", input)
            .with("root", root.display().to_string()),
            WorkspaceError::SymlinkEscape { input, target, root } => ToolError::new(
                ErrorCode::PathSymlinkEscape,
                message,
                "This path leads outside the workspace through a symlink; filepuff does not follow it. Use the real location inside the root, or start filepuff with a root that contains the target.",
            )
            .with("path", input)
            .with("target", target.display().to_string())
            .with("root", root.display().to_string()),
            WorkspaceError::InvalidPath { input, .. } => {
                ToolError::new(ErrorCode::PathInvalid, message, "Give a non-empty path without NUL bytes.")
                    .with("path", input)
            }
            WorkspaceError::UnsupportedScheme { input, scheme } => ToolError::new(
                ErrorCode::UriUnsupportedScheme,
                message,
                "Give a file path, or a file:// URI.",
            )
            .with("uri", input)
            .with("scheme", scheme),
            WorkspaceError::InvalidUri { input, .. } => ToolError::new(
                ErrorCode::UriInvalid,
                message,
                "Use file:///absolute/path (percent-encoded, no host, query or fragment), or a plain path.",
            )
            .with("uri", input),
            WorkspaceError::InvalidRoot { root, .. } => ToolError::new(
                ErrorCode::RootInvalid,
                message,
                "Pass an existing directory with --root.",
            )
            .with("root", root.display().to_string()),
            WorkspaceError::Config(err) => ToolError::new(
                ErrorCode::ConfigInvalid,
                message,
                "Fix filepuff.toml; every key is described in docs/configuration.md.",
            )
            .with("path", err.path.display().to_string()),
        }
    }
}

/// Converts a read error, showing `shown` (the workspace-relative path) rather than the
/// absolute one.
pub fn read_error(err: ReadError, shown: &str) -> ToolError {
    match err {
        ReadError::NotFound { .. } => ToolError::new(
            ErrorCode::FileNotFound,
            format!("file not found: {shown}"),
            "Check the path (it is relative to the workspace root); file_search or a directory listing can find the right one.",
        )
        .with("path", shown),
        ReadError::IsDirectory { .. } => ToolError::new(
            ErrorCode::FileIsDirectory,
            format!("{shown} is a directory, not a file"),
            "Give a file path; use file_search with paths=[this directory] to look inside it.",
        )
        .with("path", shown),
        ReadError::NotRegularFile { .. } => ToolError::new(
            ErrorCode::FileUnreadable,
            format!("{shown} is not a regular file"),
            "Only regular files can be read.",
        )
        .with("path", shown),
        ReadError::Binary { offset, .. } => ToolError::new(
            ErrorCode::FileBinary,
            format!("{shown} looks binary (NUL byte at offset {offset})"),
            "filepuff reads text files only.",
        )
        .with("path", shown)
        .with("nul_offset", offset),
        ReadError::TooLarge { size, limit, .. } => ToolError::new(
            ErrorCode::FileTooLarge,
            format!("{shown} is {size} bytes, over the limit of {limit} bytes"),
            "Raise [limits] max_file_bytes in filepuff.toml (file_search skips files over the same limit).",
        )
        .with("path", shown)
        .with("size_bytes", size)
        .with("limit_bytes", limit),
        ReadError::Io { source, .. } => ToolError::new(
            ErrorCode::FileUnreadable,
            format!("cannot read {shown}: {source}"),
            "Check the file's permissions.",
        )
        .with("path", shown),
        ReadError::Escaped { real, .. } => ToolError::new(
            ErrorCode::PathSymlinkEscape,
            format!("{shown} leads outside the workspace root through a symlink (to {})", real.display()),
            "A directory on the path is (or just became) a symlink leading out of the root; use the real location inside the root.",
        )
        .with("path", shown)
        .with("target", real.display().to_string()),
    }
}

impl From<SearchError> for ToolError {
    fn from(err: SearchError) -> ToolError {
        let message = err.to_string();
        match err {
            SearchError::InvalidRegex { pattern, message: detail } => ToolError::new(
                ErrorCode::SearchInvalidRegex,
                message,
                "Fix the regular expression (Rust regex syntax, like ripgrep's), or search for the text literally (regex=false; -F in the CLI).",
            )
            .with("pattern", pattern)
            .with("detail", detail),
            SearchError::UnknownFileType { name, known } => {
                let sample: Vec<&str> = ["go", "ts", "js", "py", "c", "cpp", "rust", "java", "md", "json", "yaml", "sh"]
                    .into_iter()
                    .filter(|n| known.iter().any(|k| k == n))
                    .collect();
                ToolError::new(
                    ErrorCode::SearchUnknownFileType,
                    message,
                    format!("Use ripgrep's type names, for example {}; `rg --type-list` lists all {}.", sample.join(", "), known.len()),
                )
                .with("file_type", name)
            }
            SearchError::InvalidGlob { glob, message: detail } => ToolError::new(
                ErrorCode::SearchInvalidGlob,
                message,
                "Fix the glob (the call's include/exclude/excludeDir globs, or [walk] exclude in filepuff.toml).",
            )
            .with("glob", glob)
            .with("detail", detail),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_in_their_ranges_and_documented() {
        let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/ERROR_CODES.md")).unwrap();
        let mut seen = std::collections::HashSet::new();
        for code in ErrorCode::ALL {
            assert!(seen.insert(code.code()), "duplicate {}", code.code());
            assert!((1000..10000).contains(&code.code()));
            let row = format!("| {} | `{}` |", code.code(), code.name());
            assert!(doc.contains(&row), "docs/ERROR_CODES.md lacks the row {row:?}");
        }
    }
}
