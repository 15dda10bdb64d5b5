//! Graph management tools: `add_component`, `update_component`, `add_relationship`,
//! `get_component` and `update_status`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{
    ComponentBrief, ComponentInfo, graph_error, parse_component_type, parse_relationship_type, parse_status, store,
};
use crate::engine::Engine;
use crate::graph::{ComponentChanges, NewComponent, Status};
use crate::tools::ToolError;

/// Parameters of `add_component`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct AddComponentParams {
    /// The component's code (may be empty for a planned component).
    pub code_text: String,
    /// file, class, function, method, variable, module or interface.
    pub component_type: String,
    /// The component's name.
    pub name: String,
    /// planned (default), partial or implemented.
    pub status: Option<String>,
    /// What the component is for (searched by search_code). Default "".
    #[serde(default)]
    pub description: String,
    /// Free-form JSON object stored with the component.
    pub metadata: Option<Map<String, Value>>,
}

/// Result of `add_component`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct AddComponentOutput {
    pub success: bool,
    /// The new component's id (a UUID).
    pub component_id: String,
    pub message: String,
}

/// Runs `add_component`.
///
/// Errors: 7005 an unknown component_type or status; 7001/7006/7007 store failures.
pub fn add_component(engine: &Engine, params: AddComponentParams) -> Result<AddComponentOutput, ToolError> {
    let component_type = parse_component_type(&params.component_type)?;
    let status = match params.status.as_deref() {
        Some(status) => parse_status("status", status)?,
        None => Status::Planned,
    };
    let store = store(engine)?;
    let mut component = NewComponent::new(&params.name, component_type);
    component.status = status;
    component.description = params.description;
    component.code_text = params.code_text;
    component.metadata = Value::Object(params.metadata.unwrap_or_default());
    let id = store.add_component(&component).map_err(|err| graph_error(err, engine))?;
    Ok(AddComponentOutput {
        success: true,
        message: format!("Added {} '{}' with ID {id}", component_type.as_str(), params.name),
        component_id: id,
    })
}

/// Renders `add_component`.
pub fn render_add_component(output: &AddComponentOutput) -> String {
    format!("{}\n", output.message)
}

/// Parameters of `update_component`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct UpdateComponentParams {
    /// ID of the component to update.
    pub component_id: String,
    /// New code text.
    pub code_text: Option<String>,
    /// New status: planned, partial or implemented (recorded in the status history).
    pub status: Option<String>,
    /// New description.
    pub description: Option<String>,
    /// The component's version this change is based on (from get_component): refused with
    /// 7008 GRAPH_VERSION_CONFLICT if someone changed it since. Omit for an unconditional change.
    #[serde(default)]
    pub expected_version: Option<i64>,
}

/// Result of `update_component`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct UpdateComponentOutput {
    pub success: bool,
    pub message: String,
    /// The version after the update (unchanged when nothing was given to change).
    pub version: i64,
}

/// Runs `update_component`: changes the given fields and bumps the version once.
///
/// Errors: 7003 unknown id; 7005 an unknown status; store failures.
pub fn update_component(engine: &Engine, params: UpdateComponentParams) -> Result<UpdateComponentOutput, ToolError> {
    let status = params.status.as_deref().map(|s| parse_status("status", s)).transpose()?;
    let store = store(engine)?;
    let id = params.component_id.as_str();
    if params.code_text.is_none() && params.description.is_none() && status.is_none() {
        let component = store
            .component(id)
            .map_err(|err| graph_error(err, engine))?
            .ok_or_else(|| graph_error(crate::graph::GraphError::NotFound { identifier: id.to_owned() }, engine))?;
        return Ok(UpdateComponentOutput {
            success: true,
            message: format!("Nothing to update for component {}", component.id),
            version: component.version,
        });
    }
    let changes = ComponentChanges {
        code_text: params.code_text,
        status,
        description: params.description,
        expected_version: params.expected_version,
    };
    let component = store.update_component(id, &changes, "update_component").map_err(|err| graph_error(err, engine))?;
    Ok(UpdateComponentOutput {
        success: true,
        message: format!("Updated component {}", component.id),
        version: component.version,
    })
}

/// Renders `update_component`.
pub fn render_update_component(output: &UpdateComponentOutput) -> String {
    format!("{} (version {})\n", output.message, output.version)
}

/// Parameters of `add_relationship`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct AddRelationshipParams {
    /// ID of the source component.
    pub source_id: String,
    /// ID of the target component.
    pub target_id: String,
    /// imports, calls, inherits, contains, depends_on or implements. "A depends_on B" means B
    /// comes first in plans.
    pub relationship_type: String,
    /// Free-form JSON object stored with the relationship.
    pub metadata: Option<Map<String, Value>>,
}

/// Result of `add_relationship`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct AddRelationshipOutput {
    pub success: bool,
    pub relationship_id: String,
    pub message: String,
    /// false when the same source, target and type already existed (its metadata was replaced).
    pub created: bool,
}

/// Runs `add_relationship`.
///
/// Errors: 7003 unknown source or target; 7005 an unknown relationship_type; store failures.
pub fn add_relationship(engine: &Engine, params: AddRelationshipParams) -> Result<AddRelationshipOutput, ToolError> {
    let kind = parse_relationship_type(&params.relationship_type)?;
    let store = store(engine)?;
    let metadata = Value::Object(params.metadata.unwrap_or_default());
    let (id, created) = store
        .add_relationship(&params.source_id, &params.target_id, kind, &metadata)
        .map_err(|err| graph_error(err, engine))?;
    Ok(AddRelationshipOutput {
        success: true,
        message: format!("Added {} relationship from {} to {}", kind.as_str(), params.source_id, params.target_id),
        relationship_id: id,
        created,
    })
}

/// Renders `add_relationship`.
pub fn render_add_relationship(output: &AddRelationshipOutput) -> String {
    let note = if output.created { "" } else { " (it already existed; metadata replaced)" };
    format!("{} with ID {}{note}\n", output.message, output.relationship_id)
}

/// Parameters of `get_component`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct GetComponentParams {
    /// Component ID, or its exact name (a name several components share is an error listing
    /// their ids).
    pub identifier: String,
    /// Include the directly related components (both directions). Default false.
    #[serde(default)]
    pub include_related: bool,
}

/// A relationship seen from one of its ends.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RelationshipInfo {
    pub relationship_id: String,
    pub relationship_type: String,
    /// outgoing (this component is the source) or incoming.
    pub direction: String,
    pub metadata: Map<String, Value>,
    /// The component at the other end.
    pub component: ComponentBrief,
}

/// One status change.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct StatusChangeInfo {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_status: Option<String>,
    pub new_status: String,
    pub notes: String,
    /// ISO 8601 UTC.
    pub changed_at: String,
}

/// Result of `get_component`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct GetComponentOutput {
    pub success: bool,
    pub component: ComponentInfo,
    /// Status changes, oldest first (the first is the creation).
    pub status_history: Vec<StatusChangeInfo>,
    /// Direct relationships, when include_related.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub related: Option<Vec<RelationshipInfo>>,
}

/// Runs `get_component`.
///
/// Errors: 7003 unknown id or name; 7004 a name several components share; store failures.
pub fn get_component(engine: &Engine, params: GetComponentParams) -> Result<GetComponentOutput, ToolError> {
    let store = store(engine)?;
    let component = store.find_component(&params.identifier).map_err(|err| graph_error(err, engine))?;
    let history = store.status_history(&component.id).map_err(|err| graph_error(err, engine))?;
    let related = if params.include_related {
        let mut out = Vec::new();
        for relationship in store.relationships_of(&component.id, &[]).map_err(|err| graph_error(err, engine))? {
            let (other, direction) = if relationship.source_id == component.id {
                (&relationship.target_id, "outgoing")
            } else {
                (&relationship.source_id, "incoming")
            };
            let Some(other) = store.component(other).map_err(|err| graph_error(err, engine))? else { continue };
            out.push(RelationshipInfo {
                relationship_id: relationship.id.clone(),
                relationship_type: relationship.relationship_type.as_str().to_owned(),
                direction: direction.to_owned(),
                metadata: match &relationship.metadata {
                    Value::Object(map) => map.clone(),
                    _ => Map::new(),
                },
                component: ComponentBrief::from(&other),
            });
        }
        Some(out)
    } else {
        None
    };
    Ok(GetComponentOutput {
        success: true,
        component: ComponentInfo::from(&component),
        status_history: history
            .into_iter()
            .map(|h| StatusChangeInfo {
                old_status: h.old_status.map(|s| s.as_str().to_owned()),
                new_status: h.new_status.as_str().to_owned(),
                notes: h.notes,
                changed_at: h.changed_at,
            })
            .collect(),
        related,
    })
}

/// Renders `get_component`: header, location, description, code, relationships.
pub fn render_get_component(output: &GetComponentOutput) -> String {
    use std::fmt::Write;
    let c = &output.component;
    let mut out = format!("{} {} [{}] v{} id {}\n", c.component_type, c.qualified_name, c.status, c.version, c.id);
    if let Some(path) = &c.file_path {
        let _ = writeln!(out, "at {path}:{}-{}", c.start_line.unwrap_or(0), c.end_line.unwrap_or(0));
    }
    if !c.description.is_empty() {
        let _ = writeln!(out, "{}", c.description);
    }
    if !c.code_text.is_empty() {
        let _ = writeln!(out, "---\n{}\n---", c.code_text.trim_end());
    }
    if let Some(related) = &output.related {
        let _ = writeln!(out, "related ({}):", related.len());
        for r in related {
            let arrow = if r.direction == "outgoing" { "->" } else { "<-" };
            let _ = writeln!(
                out,
                "  {arrow} {} {} {} [{}] {}",
                r.relationship_type, r.component.component_type, r.component.name, r.component.status, r.component.id
            );
        }
    }
    out
}

/// Parameters of `update_status`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct UpdateStatusParams {
    /// ID of the component.
    pub component_id: String,
    /// planned, partial or implemented.
    pub new_status: String,
    /// Notes about the change, kept in the status history. Default "".
    #[serde(default)]
    pub notes: String,
    /// The component's version this change is based on (from get_component): refused with
    /// 7008 GRAPH_VERSION_CONFLICT if someone changed it since. Omit for an unconditional change.
    #[serde(default)]
    pub expected_version: Option<i64>,
}

/// Result of `update_status`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct UpdateStatusOutput {
    pub success: bool,
    pub message: String,
    pub old_status: String,
    pub new_status: String,
}

/// Runs `update_status` (bumps the version; records the change and notes in the history).
///
/// Errors: 7003 unknown id; 7005 an unknown status; 7008 a stale `expected_version`; store
/// failures.
pub fn update_status(engine: &Engine, params: UpdateStatusParams) -> Result<UpdateStatusOutput, ToolError> {
    let status = parse_status("new_status", &params.new_status)?;
    let store = store(engine)?;
    let old = store
        .update_status(&params.component_id, status, &params.notes, params.expected_version)
        .map_err(|err| graph_error(err, engine))?;
    Ok(UpdateStatusOutput {
        success: true,
        message: format!("Updated status of {} to {}", params.component_id, status.as_str()),
        old_status: old.as_str().to_owned(),
        new_status: status.as_str().to_owned(),
    })
}

/// Renders `update_status`.
pub fn render_update_status(output: &UpdateStatusOutput) -> String {
    format!("{} (was {})\n", output.message, output.old_status)
}
