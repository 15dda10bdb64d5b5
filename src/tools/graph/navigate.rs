//! Retrieval and navigation tools: `find_related_components` (breadth-first over relationships)
//! and `search_code` (FTS5/BM25 ranked search).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{
    ComponentBrief, graph_error, invalid_number, parse_component_type, parse_relationship_type, signature_of, store,
};
use crate::engine::Engine;
use crate::tools::ToolError;

/// Deepest traversal `find_related_components` accepts.
const MAX_DEPTH: usize = 10;
/// Most results `search_code` returns in one call.
const MAX_LIMIT: usize = 200;

/// Parameters of `find_related_components`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct FindRelatedParams {
    /// ID of the component to start from.
    pub component_id: String,
    /// Relationship types to follow (imports, calls, inherits, contains, depends_on,
    /// implements); default all.
    #[serde(default)]
    pub relationship_types: Vec<String>,
    /// How many levels of relationships to traverse, 1–10 (default 1).
    pub depth: Option<usize>,
}

/// A component reached from the start.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RelatedInfo {
    #[serde(flatten)]
    pub component: ComponentBrief,
    /// 1 for direct neighbours.
    pub depth: usize,
    /// The relationship followed to reach it.
    pub relationship_type: String,
    /// outgoing (followed from source to target) or incoming.
    pub direction: String,
    /// The id of the component it was reached from.
    pub via: String,
}

/// Result of `find_related_components`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct FindRelatedOutput {
    pub success: bool,
    /// Breadth-first order: all of depth 1, then depth 2, …; each component once.
    pub related_components: Vec<RelatedInfo>,
    pub count: usize,
    /// Whether the walk stopped at its cap (1000 components).
    pub truncated: bool,
}

/// Runs `find_related_components`: breadth-first over relationships in both directions, no
/// component visited twice (cycles are not re-entered).
///
/// Errors: 7003 unknown id; 7005 an unknown relationship type or a depth outside 1–10.
pub fn find_related_components(engine: &Engine, params: FindRelatedParams) -> Result<FindRelatedOutput, ToolError> {
    let depth = params.depth.unwrap_or(1);
    if !(1..=MAX_DEPTH).contains(&depth) {
        return Err(invalid_number("depth", depth, 1, MAX_DEPTH));
    }
    let types = params.relationship_types.iter().map(|t| parse_relationship_type(t)).collect::<Result<Vec<_>, _>>()?;
    let store = store(engine)?;
    let (related, truncated) =
        store.related(&params.component_id, &types, depth).map_err(|err| graph_error(err, engine))?;
    let related_components: Vec<RelatedInfo> = related
        .iter()
        .map(|r| RelatedInfo {
            component: ComponentBrief::from(&r.component),
            depth: r.depth,
            relationship_type: r.relationship_type.as_str().to_owned(),
            direction: r.direction.as_str().to_owned(),
            via: r.via.clone(),
        })
        .collect();
    Ok(FindRelatedOutput { success: true, count: related_components.len(), related_components, truncated })
}

/// Renders `find_related_components`.
pub fn render_find_related(output: &FindRelatedOutput) -> String {
    use std::fmt::Write;
    let mut out = format!("{} related component(s)\n", output.count);
    for r in &output.related_components {
        let arrow = if r.direction == "outgoing" { "->" } else { "<-" };
        let _ = writeln!(
            out,
            "{:indent$}{arrow} {} {} {} [{}] {}",
            "",
            r.relationship_type,
            r.component.component_type,
            r.component.name,
            r.component.status,
            r.component.id,
            indent = r.depth * 2
        );
    }
    if output.truncated {
        out.push_str("[truncated at 1000 components]\n");
    }
    out
}

/// Parameters of `search_code`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct SearchCodeParams {
    /// Search query: words, identifiers (camelCase and snake_case are split), phrases.
    pub query: String,
    /// Component types to search (file, class, function, method, variable, module,
    /// interface); default all.
    #[serde(default)]
    pub component_types: Vec<String>,
    /// Maximum number of results, 1–200 (default 10).
    pub limit: Option<usize>,
}

/// One search result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SearchMatch {
    #[serde(flatten)]
    pub component: ComponentBrief,
    /// The declaration's header (or first code line).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub signature: String,
    /// BM25 relevance, higher is better (comparable within one query only).
    pub score: f64,
}

/// Result of `search_code`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SearchCodeOutput {
    pub success: bool,
    /// Best first.
    pub matches: Vec<SearchMatch>,
    pub count: usize,
}

/// Runs `search_code`: FTS5 BM25 over names (split), descriptions and code; see docs/graph.md.
///
/// Errors: 7005 an unknown component type or a limit outside 1–200; store failures.
pub fn search_code(engine: &Engine, params: SearchCodeParams) -> Result<SearchCodeOutput, ToolError> {
    let limit = params.limit.unwrap_or(10);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(invalid_number("limit", limit, 1, MAX_LIMIT));
    }
    let types = params.component_types.iter().map(|t| parse_component_type(t)).collect::<Result<Vec<_>, _>>()?;
    let store = store(engine)?;
    let hits = store.search(&params.query, &types, limit).map_err(|err| graph_error(err, engine))?;
    let matches: Vec<SearchMatch> = hits
        .iter()
        .map(|hit| SearchMatch {
            component: ComponentBrief::from(&hit.component),
            signature: signature_of(&hit.component),
            score: hit.score,
        })
        .collect();
    Ok(SearchCodeOutput { success: true, count: matches.len(), matches })
}

/// Renders `search_code`.
pub fn render_search_code(output: &SearchCodeOutput) -> String {
    use std::fmt::Write;
    let mut out = format!("{} match(es)\n", output.count);
    for m in &output.matches {
        let location = match (&m.component.file_path, m.component.start_line) {
            (Some(path), Some(line)) => format!(" {path}:{line}"),
            (Some(path), None) => format!(" {path}"),
            _ => String::new(),
        };
        let _ = writeln!(
            out,
            "{:.3} {} {} [{}]{location} {}",
            m.score, m.component.component_type, m.component.name, m.component.status, m.component.id
        );
        if !m.signature.is_empty() {
            let _ = writeln!(out, "      {}", m.signature);
        }
    }
    out
}
