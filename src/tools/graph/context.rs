//! Context assembly under a token budget: `prepare_context` and `continue_implementation`.
//!
//! Each candidate component is offered in three forms, richest first: full (code and
//! description), summary (signature + first paragraph of the description), name only (an entry
//! of `summaries`). Candidates are taken in priority order and each gets the richest form that
//! still fits; what fits in no form is listed in `omitted`. The budget covers the `context`
//! object serialised as compact JSON, counted with [`crate::graph::budget`] (`cl100k_base`);
//! after the greedy pass the whole object is counted exactly and the last additions are dropped
//! until it fits, so `token_count <= max_tokens` always holds.

use std::collections::HashSet;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::{first_paragraph, graph_error, invalid_number, signature_of, store};
use crate::engine::Engine;
use crate::graph::budget::{TOKENIZER, count_json_tokens};
use crate::graph::plan::Direction;
use crate::graph::{Component, ComponentType, GraphStore, Status};
use crate::tools::{ErrorCode, ToolError};

/// Largest budget accepted.
const MAX_BUDGET: usize = 200_000;
/// Search hits used as primary components when none are given.
const SEARCH_PRIMARIES: usize = 5;
/// Neighbours considered per call (the budget decides how many make it in).
const MAX_CANDIDATES: usize = 300;
/// Omitted ids listed (the count covers all).
const MAX_OMITTED_LISTED: usize = 50;

/// One component offered to the context.
struct Candidate {
    id: String,
    /// (slot, value) of the full form, if this candidate may be given in full.
    full: Option<(&'static str, Value)>,
    /// (slot, value) of the summary form, if allowed.
    summary: Option<(&'static str, Value)>,
    /// The name-only form (`summaries[id]`).
    name: String,
}

/// What the assembler produced.
struct Assembled {
    context: Map<String, Value>,
    token_count: usize,
    omitted: Vec<String>,
}

/// Greedy fill of `slots` (arrays in `base`) and the `summaries` map under `max_tokens`.
fn assemble(
    mut base: Map<String, Value>,
    candidates: Vec<Candidate>,
    max_tokens: usize,
) -> Result<Assembled, ToolError> {
    base.insert("summaries".to_owned(), Value::Object(Map::new()));
    let mut used = count_json_tokens(&Value::Object(base.clone()));
    if used > max_tokens {
        return Err(ToolError::new(
            ErrorCode::GraphValueInvalid,
            format!("max_tokens {max_tokens} is too small: the empty context alone takes {used} tokens"),
            format!(
                "Pass max_tokens of at least {used} (more to leave room for components), or a shorter task_description."
            ),
        )
        .with("parameter", "max_tokens")
        .with("value", max_tokens)
        .with("min", used));
    }
    // (slot, id) in the order added, for trimming.
    let mut added: Vec<(&'static str, String)> = Vec::new();
    let mut omitted = Vec::new();
    for candidate in candidates {
        let mut placed = false;
        for (slot, value) in [candidate.full, candidate.summary].into_iter().flatten() {
            let cost = count_json_tokens(&value) + 1;
            if used + cost <= max_tokens {
                match base.get_mut(slot) {
                    Some(Value::Array(items)) => items.push(value),
                    Some(single) => *single = value,
                    None => {}
                }
                used += cost;
                added.push((slot, candidate.id.clone()));
                placed = true;
                break;
            }
        }
        if placed {
            continue;
        }
        let entry = json!({ candidate.id.clone(): candidate.name.clone() });
        let cost = count_json_tokens(&entry);
        if used + cost <= max_tokens {
            if let Some(Value::Object(summaries)) = base.get_mut("summaries") {
                summaries.insert(candidate.id.clone(), Value::String(candidate.name));
            }
            used += cost;
            added.push(("summaries", candidate.id));
        } else {
            omitted.push(candidate.id);
        }
    }
    // Exact count of the whole object; drop the latest additions until it fits.
    let mut token_count = count_json_tokens(&Value::Object(base.clone()));
    while token_count > max_tokens {
        let Some((slot, id)) = added.pop() else { break };
        match base.get_mut(slot) {
            Some(Value::Object(map)) if slot == "summaries" => {
                map.remove(&id);
            }
            Some(Value::Array(items)) => {
                items.pop();
            }
            Some(single) => *single = Value::Null,
            None => {}
        }
        omitted.push(id);
        token_count = count_json_tokens(&Value::Object(base.clone()));
    }
    Ok(Assembled { context: base, token_count, omitted })
}

fn full_form(c: &Component, extra: Option<(&str, Value)>) -> Value {
    let mut value = json!({
        "id": c.id,
        "name": c.qualified_name,
        "type": c.component_type.as_str(),
        "status": c.status.as_str(),
    });
    if let Some(path) = &c.file_path {
        value["file_path"] = json!(path);
        if let (Some(start), Some(end)) = (c.start_line, c.end_line) {
            value["lines"] = json!(format!("{start}-{end}"));
        }
    }
    if !c.description.is_empty() {
        value["description"] = json!(c.description);
    }
    value["code_text"] = json!(c.code_text);
    if let Some((key, extra)) = extra {
        value[key] = extra;
    }
    value
}

fn summary_form(c: &Component, relation: Option<String>) -> Value {
    let mut value = json!({
        "id": c.id,
        "name": c.qualified_name,
        "type": c.component_type.as_str(),
        "status": c.status.as_str(),
    });
    let signature = signature_of(c);
    if !signature.is_empty() {
        value["signature"] = json!(signature);
    }
    let doc = first_paragraph(&c.description);
    if !doc.is_empty() {
        value["description"] = json!(doc);
    }
    if let Some(relation) = relation {
        value["relationship"] = json!(relation);
    }
    value
}

fn name_form(c: &Component) -> String {
    format!("{} {}", c.component_type.as_str(), c.qualified_name)
}

fn check_budget(max_tokens: Option<usize>) -> Result<usize, ToolError> {
    let max_tokens = max_tokens.unwrap_or(4000);
    if !(1..=MAX_BUDGET).contains(&max_tokens) {
        return Err(invalid_number("max_tokens", max_tokens, 1, MAX_BUDGET));
    }
    Ok(max_tokens)
}

/// What a context left out.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Omitted {
    /// Components that fit in no form.
    pub count: usize,
    /// Their ids (the first 50).
    pub ids: Vec<String>,
}

impl Omitted {
    fn new(ids: Vec<String>) -> Omitted {
        Omitted { count: ids.len(), ids: ids.into_iter().take(MAX_OMITTED_LISTED).collect() }
    }
}

/// Parameters of `prepare_context`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct PrepareContextParams {
    /// Description of the task.
    pub task_description: String,
    /// Component IDs (or exact names) known to be relevant; default: the 5 best search_code
    /// matches for task_description.
    #[serde(default)]
    pub relevant_components: Vec<String>,
    /// Maximum tokens for the context (cl100k_base count of the `context` object as compact
    /// JSON), 1–200000 (default 4000).
    pub max_tokens: Option<usize>,
}

/// Result of `prepare_context`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PrepareContextOutput {
    pub success: bool,
    /// task_description; primary_components (full: code and description); related_components
    /// (summaries: signature, description, relationship); summaries (id → "type name").
    pub context: Map<String, Value>,
    pub primary_count: usize,
    pub related_count: usize,
    pub summary_count: usize,
    /// Tokens of `context` (compact JSON) in `tokenizer`; never more than max_tokens.
    pub token_count: usize,
    pub max_tokens: usize,
    pub tokenizer: String,
    pub omitted: Omitted,
}

/// Runs `prepare_context`.
///
/// Errors: 7003/7004 an unknown or ambiguous relevant component; 7005 a budget outside
/// 1–200000 or too small for the empty context; store failures.
pub fn prepare_context(engine: &Engine, params: PrepareContextParams) -> Result<PrepareContextOutput, ToolError> {
    let max_tokens = check_budget(params.max_tokens)?;
    let store = store(engine)?;
    let mut primaries: Vec<Component> = Vec::new();
    for identifier in &params.relevant_components {
        let component = store.find_component(identifier).map_err(|err| graph_error(err, engine))?;
        if !primaries.iter().any(|p| p.id == component.id) {
            primaries.push(component);
        }
    }
    let search_hits = store
        .search(&params.task_description, &[], SEARCH_PRIMARIES)
        .map_err(|err| graph_error(err, engine))?
        .into_iter()
        .map(|hit| hit.component);
    let mut extra_related = Vec::new();
    if primaries.is_empty() {
        // Search hits come without their code; primaries are given in full.
        for hit in search_hits {
            if let Some(component) = store.component(&hit.id).map_err(|err| graph_error(err, engine))? {
                primaries.push(component);
            }
        }
    } else {
        extra_related.extend(search_hits);
    }
    let mut seen: HashSet<String> = primaries.iter().map(|p| p.id.clone()).collect();
    let mut candidates: Vec<Candidate> = primaries
        .iter()
        .map(|c| Candidate {
            id: c.id.clone(),
            full: Some(("primary_components", full_form(c, None))),
            summary: Some(("related_components", summary_form(c, Some("primary".to_owned())))),
            name: name_form(c),
        })
        .collect();
    let mut related = Vec::new();
    for primary in &primaries {
        related.extend(neighbours(engine, &store, &primary.id, &mut seen)?);
    }
    for hit in extra_related {
        if seen.insert(hit.id.clone()) {
            related.push((with_signature(engine, &store, hit)?, "search match".to_owned()));
        }
    }
    candidates.extend(related.into_iter().take(MAX_CANDIDATES).map(|(c, relation)| Candidate {
        id: c.id.clone(),
        full: None,
        summary: Some(("related_components", summary_form(&c, Some(relation)))),
        name: name_form(&c),
    }));
    let mut base = Map::new();
    base.insert("task_description".to_owned(), json!(params.task_description));
    base.insert("primary_components".to_owned(), json!([]));
    base.insert("related_components".to_owned(), json!([]));
    let assembled = assemble(base, candidates, max_tokens)?;
    let len = |key: &str| match assembled.context.get(key) {
        Some(Value::Array(items)) => items.len(),
        Some(Value::Object(map)) => map.len(),
        _ => 0,
    };
    Ok(PrepareContextOutput {
        success: true,
        primary_count: len("primary_components"),
        related_count: len("related_components"),
        summary_count: len("summaries"),
        token_count: assembled.token_count,
        max_tokens,
        tokenizer: TOKENIZER.to_owned(),
        omitted: Omitted::new(assembled.omitted),
        context: assembled.context,
    })
}

/// Direct neighbours of `id` not seen yet, with how they relate (`calls →`, `← contains`).
/// A component listed without its code, made fit for a summary: analysed components carry their
/// signature in metadata; others (manual ones) are read in full when listed without their code,
/// since their signature is their code's first line. (Reading analysed code means inflating its
/// file's source: not for a summary.)
fn with_signature(engine: &Engine, store: &GraphStore, brief: Component) -> Result<Component, ToolError> {
    if brief.metadata.get("signature").is_some() || !brief.code_text.is_empty() {
        return Ok(brief);
    }
    Ok(store.component(&brief.id).map_err(|err| graph_error(err, engine))?.unwrap_or(brief))
}

fn neighbours(
    engine: &Engine,
    store: &GraphStore,
    id: &str,
    seen: &mut HashSet<String>,
) -> Result<Vec<(Component, String)>, ToolError> {
    let (related, _) = store.related(id, &[], 1).map_err(|err| graph_error(err, engine))?;
    let mut out = Vec::new();
    for r in related {
        if !seen.insert(r.component.id.clone()) {
            continue;
        }
        let relation = match r.direction {
            Direction::Outgoing => format!("{} ->", r.relationship_type.as_str()),
            Direction::Incoming => format!("<- {}", r.relationship_type.as_str()),
        };
        out.push((with_signature(engine, store, r.component)?, relation));
    }
    Ok(out)
}

/// Renders `prepare_context`: the context as pretty JSON after a one-line header.
pub fn render_prepare_context(output: &PrepareContextOutput) -> String {
    format!(
        "context: {} primary, {} related, {} names; {} of {} tokens ({}); {} omitted\n{}\n",
        output.primary_count,
        output.related_count,
        output.summary_count,
        output.token_count,
        output.max_tokens,
        output.tokenizer,
        output.omitted.count,
        serde_json::to_string_pretty(&output.context).unwrap_or_default()
    )
}

/// Parameters of `continue_implementation`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ContinueImplementationParams {
    /// ID of the component to continue implementing.
    pub component_id: String,
    /// Maximum tokens for the context (cl100k_base, compact JSON of `context`), 1–200000
    /// (default 4000).
    pub max_tokens: Option<usize>,
}

/// Result of `continue_implementation`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ContinueImplementationOutput {
    pub success: bool,
    /// component (full, or a summary when its code alone is over the budget); dependencies
    /// (what it uses: summaries); dependents (what uses it: summaries);
    /// related_implementations (implemented code nearby, in full); summaries (id → "type
    /// name").
    pub context: Map<String, Value>,
    pub token_count: usize,
    pub max_tokens: usize,
    pub tokenizer: String,
    pub omitted: Omitted,
}

/// Runs `continue_implementation`.
///
/// Errors: 7003 unknown id; 7005 a budget outside 1–200000 or too small; store failures.
pub fn continue_implementation(
    engine: &Engine,
    params: ContinueImplementationParams,
) -> Result<ContinueImplementationOutput, ToolError> {
    let max_tokens = check_budget(params.max_tokens)?;
    let store = store(engine)?;
    let component =
        store.component(&params.component_id).map_err(|err| graph_error(err, engine))?.ok_or_else(|| {
            graph_error(crate::graph::GraphError::NotFound { identifier: params.component_id.clone() }, engine)
        })?;
    let mut candidates = vec![Candidate {
        id: component.id.clone(),
        full: Some(("component", full_form(&component, None))),
        summary: Some(("component", summary_form(&component, None))),
        name: name_form(&component),
    }];
    let mut seen: HashSet<String> = HashSet::from([component.id.clone()]);
    let relationships = store.relationships_of(&component.id, &[]).map_err(|err| graph_error(err, engine))?;
    let mut dependencies = Vec::new();
    let mut dependents = Vec::new();
    let mut nearby = Vec::new();
    for r in relationships {
        let outgoing = r.source_id == component.id;
        let other_id = if outgoing { &r.target_id } else { &r.source_id };
        if !seen.insert(other_id.clone()) {
            continue;
        }
        let Some(other) = store.component(other_id).map_err(|err| graph_error(err, engine))? else { continue };
        let kind = r.relationship_type;
        if kind.is_dependency() && outgoing {
            dependencies.push((other, format!("{} ->", kind.as_str())));
        } else if kind.is_dependency() {
            dependents.push((other, format!("<- {}", kind.as_str())));
        } else {
            nearby.push((other, if outgoing { "contains ->".to_owned() } else { "<- contains".to_owned() }));
        }
    }
    // Implemented code nearby: members/containers, then components of the same type in the same
    // file. Implemented dependencies are offered in full too (their summary is the fallback).
    let has_code = |c: &Component| {
        c.status == Status::Implemented && c.component_type != ComponentType::Module && !c.code_text.is_empty()
    };
    let mut related_implementations: Vec<Component> =
        nearby.iter().map(|(c, _)| c).filter(|c| has_code(c)).cloned().collect();
    if let Some(path) = &component.file_path {
        for c in store.all_components_brief().map_err(|err| graph_error(err, engine))? {
            if c.file_path.as_deref() == Some(path)
                && c.component_type == component.component_type
                && c.status == Status::Implemented
                && seen.insert(c.id.clone())
                && let Some(full) = store.component(&c.id).map_err(|err| graph_error(err, engine))?
            {
                related_implementations.push(full);
            }
        }
    }
    for (c, relation) in dependencies.iter().take(MAX_CANDIDATES) {
        candidates.push(Candidate {
            id: c.id.clone(),
            full: has_code(c)
                .then(|| ("related_implementations", full_form(c, Some(("relationship", json!(relation)))))),
            summary: Some(("dependencies", summary_form(c, Some(relation.clone())))),
            name: name_form(c),
        });
    }
    let implemented_ids: HashSet<String> = related_implementations.iter().map(|c| c.id.clone()).collect();
    for c in related_implementations.iter().take(MAX_CANDIDATES) {
        candidates.push(Candidate {
            id: c.id.clone(),
            full: Some(("related_implementations", full_form(c, None))),
            summary: None,
            name: name_form(c),
        });
    }
    for (c, relation) in dependents.iter().chain(nearby.iter()).take(MAX_CANDIDATES) {
        if implemented_ids.contains(&c.id) {
            continue;
        }
        candidates.push(Candidate {
            id: c.id.clone(),
            full: None,
            summary: Some(("dependents", summary_form(c, Some(relation.clone())))),
            name: name_form(c),
        });
    }
    let mut base = Map::new();
    base.insert("component".to_owned(), Value::Null);
    base.insert("dependencies".to_owned(), json!([]));
    base.insert("dependents".to_owned(), json!([]));
    base.insert("related_implementations".to_owned(), json!([]));
    let assembled = assemble(base, candidates, max_tokens)?;
    let context = assembled.context;
    let token_count = assembled.token_count;
    Ok(ContinueImplementationOutput {
        success: true,
        token_count,
        max_tokens,
        tokenizer: TOKENIZER.to_owned(),
        omitted: Omitted::new(assembled.omitted),
        context,
    })
}

/// Renders `continue_implementation`.
pub fn render_continue_implementation(output: &ContinueImplementationOutput) -> String {
    format!(
        "context: {} of {} tokens ({}); {} omitted\n{}\n",
        output.token_count,
        output.max_tokens,
        output.tokenizer,
        output.omitted.count,
        serde_json::to_string_pretty(&output.context).unwrap_or_default()
    )
}
