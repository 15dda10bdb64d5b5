//! The `local` toolset: Octocode's local tools (`localViewStructure`, `localSearchCode`,
//! `localGetFileContent`, `localFindFiles`) with their camelCase parameters and response fields,
//! over the Engine's walk, search and documents (open buffers win over the disk).
//!
//! Every tool takes either one query's fields at the top level or `queries`: up to
//! [`MAX_QUERIES`] queries run concurrently, each answered by its own entry in `results` with a
//! `status` (`hasResults`, `empty`, `error`) and `hints`. A failing query in a batch is an
//! `error` entry, not a failed call; a single (unbatched) query that fails is a failed call with
//! the structured error. `mainResearchGoal`, `researchGoal`, `reasoning` and `id` are accepted
//! and not echoed.

mod entries;
mod find_files;
mod get_file_content;
mod search_code;
mod search_sink;
mod view_structure;

use std::borrow::Cow;
use std::time::{SystemTime, UNIX_EPOCH};

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use super::{ErrorCode, ToolError};
use crate::engine::Engine;
use crate::workspace::ResolvedPath;

pub use find_files::{FindFilesQuery, FindFilesResult, local_find_files};
pub use get_file_content::{GetFileContentQuery, GetFileContentResult, local_get_file_content};
pub use search_code::{SearchCodeQuery, SearchCodeResult, local_search_code};
pub use view_structure::{ViewStructureQuery, ViewStructureResult, local_view_structure};

/// Queries one call may carry.
pub const MAX_QUERIES: usize = 5;

/// The fields Octocode requires on every query for its own bookkeeping; accepted, ignored.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResearchFields {
    /// Accepted and ignored (Octocode's research bookkeeping).
    #[serde(default)]
    pub main_research_goal: Option<String>,
    /// Accepted and ignored.
    #[serde(default)]
    pub research_goal: Option<String>,
    /// Accepted and ignored.
    #[serde(default)]
    pub reasoning: Option<String>,
    /// A client's query id, a string or a number: answered back as the result's `id`.
    #[serde(default)]
    #[schemars(schema_with = "query_id_schema")]
    pub id: Option<Value>,
}

/// One call's queries: the top-level fields as one query, or `queries` (1–5).
#[derive(Debug, Clone)]
pub struct Batch<Q> {
    /// Each query, or why its fields did not parse.
    pub queries: Vec<Result<Q, String>>,
    /// Each query's `id` as given (a string or number), else `q1`, `q2`, … by position.
    pub ids: Vec<String>,
    /// Whether the call used `queries` (errors then become entries, not a failed call).
    pub batched: bool,
}

impl<Q> Batch<Q> {
    /// One unbatched query.
    pub fn single(query: Q) -> Batch<Q> {
        Batch { queries: vec![Ok(query)], ids: vec!["q1".to_owned()], batched: false }
    }
}

/// The schema of a query's `id`: a string, a number or null — declared, so that strict clients
/// (the MCP Inspector's `--strict`) do not see a schema that constrains nothing.
fn query_id_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "anyOf": [{ "type": "string" }, { "type": "number" }, { "type": "null" }] })
}

/// A query object's `id` as text, else `q<position>`.
fn query_id(query: &Value, position: usize) -> String {
    match query.get("id") {
        Some(Value::String(id)) => id.clone(),
        Some(Value::Number(id)) => id.to_string(),
        _ => format!("q{}", position + 1),
    }
}

impl<'de, Q: DeserializeOwned> Deserialize<'de> for Batch<Q> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut object = Map::<String, Value>::deserialize(deserializer)?;
        match object.remove("queries") {
            None | Some(Value::Null) => {
                let object = Value::Object(object);
                let ids = vec![query_id(&object, 0)];
                let query = Q::deserialize(object).map_err(D::Error::custom)?;
                Ok(Batch { queries: vec![Ok(query)], ids, batched: false })
            }
            Some(Value::Array(items)) => Ok(Batch {
                ids: items.iter().enumerate().map(|(idx, item)| query_id(item, idx)).collect(),
                queries: items.into_iter().map(|item| Q::deserialize(item).map_err(|err| err.to_string())).collect(),
                batched: true,
            }),
            Some(_) => Err(D::Error::custom("`queries` must be an array of query objects")),
        }
    }
}

impl<Q: JsonSchema> JsonSchema for Batch<Q> {
    fn schema_name() -> Cow<'static, str> {
        format!("Batch_{}", Q::schema_name()).into()
    }

    fn json_schema(_generator: &mut SchemaGenerator) -> Schema {
        let settings = schemars::generate::SchemaSettings::draft2020_12().with(|s| s.inline_subschemas = true);
        let query = settings.into_generator().into_root_schema_for::<Q>();
        let mut query = query.to_value();
        if let Some(object) = query.as_object_mut() {
            object.remove("$schema");
            object.remove("title");
        }
        let mut properties = query.get("properties").and_then(Value::as_object).cloned().unwrap_or_default();
        let description = query.get("description").cloned();
        properties.insert(
            "queries".to_owned(),
            serde_json::json!({
                "type": "array",
                "minItems": 1,
                "maxItems": MAX_QUERIES,
                "description": "Up to 5 queries run concurrently; each gets its own entry in results. Without it, the top-level fields are one query.",
                "items": query,
            }),
        );
        let mut schema = serde_json::json!({ "type": "object", "properties": properties });
        if let (Some(object), Some(description)) = (schema.as_object_mut(), description) {
            object.insert("description".to_owned(), description);
        }
        Schema::try_from(schema).unwrap_or_default()
    }
}

/// How one query went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum QueryStatus {
    HasResults,
    Empty,
    Error,
}

/// The answer to one query.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct QueryResult<R> {
    /// The query's `id`, or `q1`, `q2`, … by position (as Octocode answers).
    pub id: String,
    /// `hasResults`, `empty` or `error`.
    pub status: QueryStatus,
    /// The tool's result (absent on error).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<R>,
    /// The structured error (only with `status: error`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ToolError>,
    /// What to do next: the next page, how to refine, which line to hand an LSP tool.
    pub hints: Vec<String>,
}

/// The result of a local tool: one entry per query, in query order.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct BatchOutput<R> {
    pub results: Vec<QueryResult<R>>,
}

/// What one query produced: the data, whether it found anything, and hints.
pub(crate) struct Answer<R> {
    pub data: R,
    pub has_results: bool,
    pub hints: Vec<String>,
}

/// Runs each query (concurrently when there are several) with `budget` characters each.
pub(crate) fn run_batch<Q, R>(
    engine: &Engine,
    batch: Batch<Q>,
    one: fn(&Engine, &Q, usize) -> Result<Answer<R>, ToolError>,
) -> Result<BatchOutput<R>, ToolError>
where
    Q: Sync,
    R: Send,
{
    let n = batch.queries.len();
    if n == 0 || n > MAX_QUERIES {
        return Err(ToolError::new(
            ErrorCode::LocalBatchInvalid,
            format!("`queries` holds {n} queries; 1 to {MAX_QUERIES} are accepted per call"),
            "Split the work into calls of at most 5 queries.",
        )
        .with("queries", n));
    }
    let budget = engine.workspace().config().limits.max_output_chars / n;
    let run_one = |query: &Result<Q, String>| match query {
        Ok(query) => one(engine, query, budget),
        Err(detail) => Err(ToolError::invalid_params(detail)),
    };
    let outcomes: Vec<Result<Answer<R>, ToolError>> = if n == 1 {
        vec![run_one(&batch.queries[0])]
    } else {
        // The queries' threads share the call's cancellation (MCP `notifications/cancelled`).
        let cancel = crate::cancel::CancelFlag::current();
        std::thread::scope(|scope| {
            let handles: Vec<_> = batch
                .queries
                .iter()
                .map(|query| {
                    let cancel = cancel.clone();
                    scope.spawn(move || cancel.scope(|| run_one(query)))
                })
                .collect();
            handles
                .into_iter()
                .map(|handle| handle.join().unwrap_or_else(|_| Err(ToolError::internal("a query's worker panicked"))))
                .collect()
        })
    };
    let mut results = Vec::with_capacity(n);
    for (idx, outcome) in outcomes.into_iter().enumerate() {
        let id = batch.ids.get(idx).cloned().unwrap_or_else(|| format!("q{}", idx + 1));
        match outcome {
            Ok(answer) => results.push(QueryResult {
                id,
                status: if answer.has_results { QueryStatus::HasResults } else { QueryStatus::Empty },
                data: Some(answer.data),
                error: None,
                hints: answer.hints,
            }),
            Err(err) if !batch.batched => return Err(err),
            Err(err) => {
                let hints = vec![err.remediation.clone()];
                results.push(QueryResult { id, status: QueryStatus::Error, data: None, error: Some(err), hints });
            }
        }
    }
    Ok(BatchOutput { results })
}

/// Resolves a query's `path`; `""` and `"."` are the root.
pub(crate) fn resolve(engine: &Engine, path: &str) -> Result<ResolvedPath, ToolError> {
    let path = path.trim();
    let path = if path.is_empty() { "." } else { path };
    Ok(engine.workspace().resolve(path)?)
}

/// Resolves a directory to walk: it must exist and be a directory (8004 otherwise).
pub(crate) fn resolve_dir(engine: &Engine, path: &str) -> Result<ResolvedPath, ToolError> {
    let resolved = resolve(engine, path)?;
    match std::fs::metadata(&resolved.absolute) {
        Ok(meta) if meta.is_dir() => Ok(resolved),
        Ok(_) => Err(ToolError::new(
            ErrorCode::LocalNotADirectory,
            format!("{} is a file, not a directory", shown(&resolved)),
            "Give its directory, or read the file with localGetFileContent.",
        )
        .with("path", shown(&resolved))),
        Err(_) => Err(super::error::read_error(
            crate::documents::ReadError::NotFound { path: resolved.absolute.clone() },
            &shown(&resolved),
        )),
    }
}

/// A path as results show it: relative to the root, `.` for the root itself.
pub(crate) fn shown(path: &ResolvedPath) -> String {
    if path.relative.is_empty() { ".".to_owned() } else { path.relative.clone() }
}

/// An invalid filter value (8005).
pub(crate) fn invalid_filter(field: &str, value: &str, accepted: &str) -> ToolError {
    ToolError::new(
        ErrorCode::LocalFilterInvalid,
        format!("invalid {field} {value:?}: expected {accepted}"),
        format!("Fix {field}: {accepted}."),
    )
    .with("field", field)
    .with("value", value)
}

/// The length of `value` as JSON, in characters (bytes for ASCII): what the budget counts.
pub fn json_len<T: Serialize>(value: &T) -> usize {
    /// Counts the bytes written, keeps none: the page rule measures every item this way.
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    serde_json::to_writer(&mut count, value).map_or(0, |()| count.0)
}

/// Pages: (number of pages, whether there is a page after `page`); `page` is 1-based.
pub(crate) fn page_count(total: usize, per_page: usize) -> usize {
    total.div_ceil(per_page.max(1)).max(1)
}

/// `SystemTime` as ISO 8601 UTC with seconds (`2024-05-01T12:00:00Z`).
pub fn iso8601(time: SystemTime) -> String {
    let secs = time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// The readable text form of any local tool's result: each query's status, hints and data as
/// indented JSON (the data is already compact and named like Octocode's).
pub fn render_text<R: Serialize>(output: &BatchOutput<R>) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    for (idx, result) in output.results.iter().enumerate() {
        let status = match result.status {
            QueryStatus::HasResults => "hasResults",
            QueryStatus::Empty => "empty",
            QueryStatus::Error => "error",
        };
        if output.results.len() > 1 {
            let _ = writeln!(out, "## query {} — {status}", idx + 1);
        } else {
            let _ = writeln!(out, "status: {status}");
        }
        if let Some(err) = &result.error {
            let _ = writeln!(out, "{err}");
        }
        if let Some(data) = &result.data {
            let _ = writeln!(out, "{}", serde_json::to_string(data).unwrap_or_default());
        }
        for hint in &result.hints {
            let _ = writeln!(out, "hint: {hint}");
        }
    }
    out
}

#[cfg(test)]
mod tests;
