//! The graph toolset (seed: persistent-code API reference): thirteen tools over the Engine's
//! knowledge graph ([`crate::graph`]). This module holds the wire types they share and the
//! mapping of graph errors to tool errors (codes 7000–7099).

mod analyze;
mod components;
mod context;
mod navigate;
mod status;

pub use analyze::{AnalyzeCodeOutput, AnalyzeCodeParams, analyze_code};
pub use components::{
    AddComponentOutput, AddComponentParams, AddRelationshipOutput, AddRelationshipParams, GetComponentOutput,
    GetComponentParams, RelationshipInfo, StatusChangeInfo, UpdateComponentOutput, UpdateComponentParams,
    UpdateStatusOutput, UpdateStatusParams, add_component, add_relationship, get_component, update_component,
    update_status,
};
pub use context::{
    ContinueImplementationOutput, ContinueImplementationParams, PrepareContextOutput, PrepareContextParams,
    continue_implementation, prepare_context,
};
pub use navigate::{
    FindRelatedOutput, FindRelatedParams, RelatedInfo, SearchCodeOutput, SearchCodeParams, SearchMatch,
    find_related_components, search_code,
};
pub use status::{
    FindNextTasksOutput, FindNextTasksParams, ImplementationPlanOutput, ImplementationPlanParams, ProjectStatusOutput,
    ProjectStatusParams, StatusFilters, find_next_tasks, get_implementation_plan, get_project_status,
};

/// Text renderers of the graph tools.
pub mod render {
    pub use super::analyze::render_text as analyze_code;
    pub use super::components::{
        render_add_component as add_component, render_add_relationship as add_relationship,
        render_get_component as get_component, render_update_component as update_component,
        render_update_status as update_status,
    };
    pub use super::context::{
        render_continue_implementation as continue_implementation, render_prepare_context as prepare_context,
    };
    pub use super::navigate::{render_find_related as find_related_components, render_search_code as search_code};
    pub use super::status::{
        render_find_next_tasks as find_next_tasks, render_implementation_plan as get_implementation_plan,
        render_project_status as get_project_status,
    };
}

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};

use super::{ErrorCode, ToolError};
use crate::engine::Engine;
use crate::graph::{Component, ComponentType, GraphError, GraphStore, RelationshipType, Status};

/// A component with everything stored about it (`get_component`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ComponentInfo {
    /// UUID.
    pub id: String,
    pub name: String,
    /// `Class.method` for members; the name otherwise.
    pub qualified_name: String,
    /// file, class, function, method, variable, module or interface.
    #[serde(rename = "type")]
    pub component_type: String,
    /// planned, partial or implemented.
    pub status: String,
    pub description: String,
    pub code_text: String,
    /// Workspace-relative path, when the component comes from (or was placed in) a file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file_path: Option<String>,
    /// 1-based first line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_line: Option<u32>,
    /// 1-based last line, inclusive.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_line: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    /// ISO 8601 UTC.
    pub created_at: String,
    /// ISO 8601 UTC.
    pub last_modified: String,
    /// 1 at creation, +1 per change.
    pub version: i64,
    /// Free-form; analysed components carry `kind` (the outline kind) and `signature`.
    pub metadata: Map<String, Value>,
    /// `manual` (a tool call added it) or `analysis` (extracted from code).
    pub origin: String,
}

impl From<&Component> for ComponentInfo {
    fn from(c: &Component) -> ComponentInfo {
        ComponentInfo {
            id: c.id.clone(),
            name: c.name.clone(),
            qualified_name: c.qualified_name.clone(),
            component_type: c.component_type.as_str().to_owned(),
            status: c.status.as_str().to_owned(),
            description: c.description.clone(),
            code_text: c.code_text.clone(),
            file_path: c.file_path.clone(),
            start_line: c.start_line,
            end_line: c.end_line,
            language: c.language.clone(),
            created_at: c.created_at.clone(),
            last_modified: c.last_modified.clone(),
            version: c.version,
            metadata: metadata_map(&c.metadata),
            origin: c.origin.clone(),
        }
    }
}

/// A component in a listing: no code, no timestamps.
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct ComponentBrief {
    pub id: String,
    pub name: String,
    #[serde(rename = "type")]
    pub component_type: String,
    pub status: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file_path: Option<String>,
    /// 1-based first line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_line: Option<u32>,
    /// 1-based last line, inclusive.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_line: Option<u32>,
}

impl From<&Component> for ComponentBrief {
    fn from(c: &Component) -> ComponentBrief {
        ComponentBrief {
            id: c.id.clone(),
            name: c.qualified_name.clone(),
            component_type: c.component_type.as_str().to_owned(),
            status: c.status.as_str().to_owned(),
            description: first_paragraph(&c.description),
            file_path: c.file_path.clone(),
            start_line: c.start_line,
            end_line: c.end_line,
        }
    }
}

fn metadata_map(value: &Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    }
}

/// The first paragraph of a description, at most 300 characters.
pub(crate) fn first_paragraph(text: &str) -> String {
    let paragraph = text.split("\n\n").next().unwrap_or("").trim();
    match crate::documents::position::byte_of_char(paragraph, 300) {
        Some(idx) => format!("{}…", &paragraph[..idx]),
        None => paragraph.to_owned(),
    }
}

/// A component's one-line signature: the analysed header, else the first code line.
pub(crate) fn signature_of(c: &Component) -> String {
    if let Some(signature) = c.metadata.get("signature").and_then(Value::as_str) {
        return signature.to_owned();
    }
    c.code_text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("").chars().take(300).collect()
}

/// The Engine's graph store as a tool error on failure.
pub(crate) fn store(engine: &Engine) -> Result<Arc<GraphStore>, ToolError> {
    engine.graph().map_err(|err| graph_error(err, engine))
}

/// Maps a graph failure to its tool error (codes 7001–7007; a walk error keeps its search code).
pub fn graph_error(err: GraphError, engine: &Engine) -> ToolError {
    let message = err.to_string();
    match err {
        GraphError::Open { path, message: detail } => {
            let remediation = if path.to_string_lossy().starts_with("postgres") {
                "The PostgreSQL graph store ([graph] store or FILEPUFF_GRAPH_URL) could not be reached or refused the login: check that the server runs and accepts connections from here, the user, password and database in the URL, and context.detail (the server's own reason)."
            } else {
                "Check that the directory of [graph] path (filepuff.toml) is writable and that the file is a filepuff graph database (the default is .filepuff/graph.db under the root)."
            };
            ToolError::new(ErrorCode::GraphStoreUnavailable, message, remediation)
                .with("path", path.display().to_string())
                .with("detail", detail)
        }
        GraphError::NotEmpty { target, components } => ToolError::new(
            ErrorCode::GraphStoreFailed,
            message,
            "`filepuff graph migrate` copies into an empty graph only: create a new database (createdb) and give its URL, or empty this one's filepuff tables first.",
        )
        .with("path", target)
        .with("components", components),
        GraphError::SchemaTooNew { path, found, supported } => ToolError::new(
            ErrorCode::GraphSchemaTooNew,
            message,
            "A newer filepuff wrote this graph; upgrade filepuff, or point [graph] path at another file.",
        )
        .with("path", path.display().to_string())
        .with("found_version", found)
        .with("supported_version", supported),
        GraphError::NotFound { identifier } => ToolError::new(
            ErrorCode::GraphComponentNotFound,
            message,
            "Use an id returned by add_component, search_code or get_component (or an exact name with get_component).",
        )
        .with("identifier", identifier),
        GraphError::Ambiguous { name, count, candidates } => {
            let listed: Vec<String> = candidates
                .iter()
                .take(5)
                .map(|c| {
                    let place = match (&c.file_path, c.start_line) {
                        (Some(path), Some(line)) => format!(" at {path}:{line}"),
                        _ => String::new(),
                    };
                    format!("{} ({} {}{place})", c.id, c.component_type.as_str(), c.qualified_name)
                })
                .collect();
            let more = if count > listed.len() { ", …" } else { "" };
            let message = format!("{message}: {}{more}", listed.join(", "));
            let candidates: Vec<Value> = candidates
                .iter()
                .map(|c| serde_json::to_value(ComponentBrief::from(c)).unwrap_or(Value::Null))
                .collect();
            ToolError::new(
                ErrorCode::GraphNameAmbiguous,
                message,
                "Several components share this name; call again with one of the ids in context.candidates.",
            )
            .with("name", name)
            .with("count", count)
            .with("candidates", candidates)
        }
        GraphError::Busy { message: detail } => ToolError::new(
            ErrorCode::GraphStoreBusy,
            message,
            "SQLite: another filepuff process held the graph's write lock too long; PostgreSQL: this process's connections stayed busy (or row locks were held). Retry the call.",
        )
        .with("path", graph_path_text(engine))
        .with("detail", detail),
        GraphError::Walk(err) => ToolError::from(err),
        GraphError::VersionConflict { id, expected, current } => ToolError::new(
            ErrorCode::GraphVersionConflict,
            message,
            "Someone changed the component since you read it: get_component again, decide, and retry with its version.",
        )
        .with("component_id", id)
        .with("expected_version", expected)
        .with("current_version", current),
        GraphError::Storage { message: detail } => ToolError::new(
            ErrorCode::GraphStoreFailed,
            message,
            "The graph database reported a failure (SQLite: disk full, I/O error, corruption; PostgreSQL: the server's message in context.detail); check the store at context.path.",
        )
        .with("path", graph_path_text(engine))
        .with("detail", detail),
    }
}

fn graph_path_text(engine: &Engine) -> String {
    engine.graph_location()
}

/// A parameter outside its allowed values.
pub(crate) fn invalid_value(parameter: &str, value: &str, allowed: &[&str]) -> ToolError {
    ToolError::new(
        ErrorCode::GraphValueInvalid,
        format!("{parameter} {value:?} is not one of {}", allowed.join(", ")),
        format!("Pass one of: {}.", allowed.join(", ")),
    )
    .with("parameter", parameter)
    .with("value", value)
    .with("allowed", allowed.iter().map(|s| Value::from(*s)).collect::<Vec<_>>())
}

/// A numeric parameter outside its range.
pub(crate) fn invalid_number(parameter: &str, value: usize, min: usize, max: usize) -> ToolError {
    ToolError::new(
        ErrorCode::GraphValueInvalid,
        format!("{parameter} {value} is outside {min}..={max}"),
        format!("Pass {parameter} between {min} and {max}."),
    )
    .with("parameter", parameter)
    .with("value", value)
    .with("min", min)
    .with("max", max)
}

pub(crate) fn parse_component_type(text: &str) -> Result<ComponentType, ToolError> {
    ComponentType::parse(text).ok_or_else(|| {
        let allowed: Vec<&str> = ComponentType::ALL.iter().map(|t| t.as_str()).collect();
        invalid_value("component_type", text, &allowed)
    })
}

pub(crate) fn parse_status(parameter: &str, text: &str) -> Result<Status, ToolError> {
    Status::parse(text).ok_or_else(|| {
        let allowed: Vec<&str> = Status::ALL.iter().map(|s| s.as_str()).collect();
        invalid_value(parameter, text, &allowed)
    })
}

pub(crate) fn parse_relationship_type(text: &str) -> Result<RelationshipType, ToolError> {
    RelationshipType::parse(text).ok_or_else(|| {
        let allowed: Vec<&str> = RelationshipType::ALL.iter().map(|t| t.as_str()).collect();
        invalid_value("relationship_type", text, &allowed)
    })
}

#[cfg(test)]
mod tests;
