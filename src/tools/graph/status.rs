//! Status and planning tools: `get_project_status`, `find_next_tasks` and
//! `get_implementation_plan`.

use std::collections::{BTreeMap, HashMap};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{ComponentBrief, graph_error, invalid_number, invalid_value, parse_component_type, parse_status, store};
use crate::engine::Engine;
use crate::graph::plan::{self, Priority};
use crate::graph::{Component, Status};
use crate::tools::ToolError;

/// Components listed in a project status at most (the counts cover all).
const MAX_LISTED: usize = 200;
/// Most tasks `find_next_tasks` returns.
const MAX_TASKS: usize = 100;
/// Deepest dependency expansion of `get_implementation_plan`.
const MAX_PLAN_DEPTH: usize = 20;

/// `filters` of `get_project_status`; every given filter must hold.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StatusFilters {
    /// Only this component type (also accepted as `type`).
    #[serde(alias = "type")]
    pub component_type: Option<String>,
    /// Only this status.
    pub status: Option<String>,
    /// Only components in this file or under this directory (workspace-relative).
    pub file_path: Option<String>,
    /// Only components whose name contains this text (case-insensitive).
    pub name: Option<String>,
}

/// Parameters of `get_project_status`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ProjectStatusParams {
    /// Filters to apply to components.
    #[serde(default)]
    pub filters: Option<StatusFilters>,
    /// Group the counts by type, status, file or language.
    pub grouping: Option<String>,
}

/// Counts of one set of components.
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct StatusCounts {
    pub total_components: usize,
    /// planned, partial and implemented, each present (0 when none).
    pub status_counts: BTreeMap<String, usize>,
    /// (implemented + partial / 2) / total × 100, one decimal; 0 for no components.
    pub implementation_percentage: f64,
}

/// The `status` object of `get_project_status`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ProjectStatus {
    #[serde(flatten)]
    pub counts: StatusCounts,
    /// The matching components, in file and line order (at most 200).
    pub components: Vec<ComponentBrief>,
    /// Matching components not listed.
    pub components_omitted: usize,
    /// Counts per group, when grouping was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub groups: Option<BTreeMap<String, StatusCounts>>,
}

/// Result of `get_project_status`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ProjectStatusOutput {
    pub success: bool,
    pub status: ProjectStatus,
}

fn counts<'a>(components: impl Iterator<Item = &'a Component>) -> StatusCounts {
    let mut status_counts: BTreeMap<String, usize> = Status::ALL.iter().map(|s| (s.as_str().to_owned(), 0)).collect();
    let mut total = 0;
    let mut weighted = 0.0;
    for component in components {
        total += 1;
        *status_counts.entry(component.status.as_str().to_owned()).or_default() += 1;
        weighted += match component.status {
            Status::Implemented => 1.0,
            Status::Partial => 0.5,
            Status::Planned => 0.0,
        };
    }
    let percentage = if total == 0 { 0.0 } else { (weighted / total as f64 * 1000.0).round() / 10.0 };
    StatusCounts { total_components: total, status_counts, implementation_percentage: percentage }
}

/// Runs `get_project_status`.
///
/// Errors: 7005 an unknown grouping, type or status filter; store failures.
pub fn get_project_status(engine: &Engine, params: ProjectStatusParams) -> Result<ProjectStatusOutput, ToolError> {
    let filters = params.filters.unwrap_or_default();
    let component_type = filters.component_type.as_deref().map(parse_component_type).transpose()?;
    let status = filters.status.as_deref().map(|s| parse_status("filters.status", s)).transpose()?;
    let grouping = params.grouping.as_deref().map(str::trim).filter(|g| !g.is_empty()).map(str::to_ascii_lowercase);
    const GROUPINGS: [&str; 4] = ["type", "status", "file", "language"];
    if let Some(grouping) = &grouping
        && !GROUPINGS.contains(&grouping.as_str())
    {
        return Err(invalid_value("grouping", grouping, &GROUPINGS));
    }
    let store = store(engine)?;
    let all = store.all_components_brief().map_err(|err| graph_error(err, engine))?;
    let path_filter = filters.file_path.as_deref().map(|p| p.trim_end_matches('/').to_owned());
    let name_filter = filters.name.as_deref().map(str::to_lowercase);
    let matching: Vec<&Component> = all
        .iter()
        .filter(|c| component_type.is_none_or(|t| c.component_type == t))
        .filter(|c| status.is_none_or(|s| c.status == s))
        .filter(|c| {
            path_filter.as_deref().is_none_or(|p| {
                c.file_path.as_deref().is_some_and(|f| p.is_empty() || f == p || f.starts_with(&format!("{p}/")))
            })
        })
        .filter(|c| name_filter.as_deref().is_none_or(|n| c.qualified_name.to_lowercase().contains(n)))
        .collect();
    let groups = grouping.map(|grouping| {
        let mut by_key: BTreeMap<String, Vec<&Component>> = BTreeMap::new();
        for c in &matching {
            let key = match grouping.as_str() {
                "type" => c.component_type.as_str().to_owned(),
                "status" => c.status.as_str().to_owned(),
                "file" => c.file_path.clone().unwrap_or_else(|| "(no file)".to_owned()),
                _ => c.language.clone().unwrap_or_else(|| "(unknown)".to_owned()),
            };
            by_key.entry(key).or_default().push(c);
        }
        by_key.into_iter().map(|(key, members)| (key, counts(members.into_iter()))).collect()
    });
    let components: Vec<ComponentBrief> = matching.iter().take(MAX_LISTED).map(|c| ComponentBrief::from(*c)).collect();
    Ok(ProjectStatusOutput {
        success: true,
        status: ProjectStatus {
            counts: counts(matching.iter().copied()),
            components_omitted: matching.len() - components.len(),
            components,
            groups,
        },
    })
}

/// Renders `get_project_status`.
pub fn render_project_status(output: &ProjectStatusOutput) -> String {
    use std::fmt::Write;
    let status = &output.status;
    let line = |c: &StatusCounts| {
        format!(
            "{} components: {} implemented, {} partial, {} planned ({:.1}% implemented)",
            c.total_components,
            c.status_counts.get("implemented").unwrap_or(&0),
            c.status_counts.get("partial").unwrap_or(&0),
            c.status_counts.get("planned").unwrap_or(&0),
            c.implementation_percentage
        )
    };
    let mut out = format!("{}\n", line(&status.counts));
    if let Some(groups) = &status.groups {
        for (key, counts) in groups {
            let _ = writeln!(out, "  {key}: {}", line(counts));
        }
    }
    for c in &status.components {
        let _ = writeln!(out, "  {} {} [{}] {}", c.component_type, c.name, c.status, c.id);
    }
    if status.components_omitted > 0 {
        let _ = writeln!(out, "  … {} more not listed", status.components_omitted);
    }
    out
}

/// Parameters of `find_next_tasks`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct FindNextTasksParams {
    /// dependencies (default): components whose dependencies are implemented first, then those
    /// blocking the most others; complexity: the smallest first (code lines + 5 × dependencies).
    pub priority_type: Option<String>,
    /// Maximum number of tasks, 1–100 (default 5).
    pub limit: Option<usize>,
}

/// A suggested task.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TaskInfo {
    #[serde(flatten)]
    pub component: ComponentBrief,
    /// Every dependency is implemented.
    pub ready: bool,
    /// Ids of the dependencies not implemented yet.
    pub pending_dependencies: Vec<String>,
    /// Components depending on this one.
    pub dependents: usize,
    /// Code lines + 5 × dependencies.
    pub complexity: usize,
    /// Why it is suggested, in words.
    pub reason: String,
}

/// Result of `find_next_tasks`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct FindNextTasksOutput {
    pub success: bool,
    pub tasks: Vec<TaskInfo>,
    pub count: usize,
}

/// Runs `find_next_tasks` over the components not yet implemented.
///
/// Errors: 7005 an unknown priority_type or a limit outside 1–100; store failures.
pub fn find_next_tasks(engine: &Engine, params: FindNextTasksParams) -> Result<FindNextTasksOutput, ToolError> {
    let priority = match params.priority_type.as_deref().map(str::trim).unwrap_or("dependencies") {
        p if p.eq_ignore_ascii_case("dependencies") => Priority::Dependencies,
        p if p.eq_ignore_ascii_case("complexity") => Priority::Complexity,
        other => return Err(invalid_value("priority_type", other, &["dependencies", "complexity"])),
    };
    let limit = params.limit.unwrap_or(5);
    if !(1..=MAX_TASKS).contains(&limit) {
        return Err(invalid_number("limit", limit, 1, MAX_TASKS));
    }
    let store = store(engine)?;
    let components = store.all_components_brief().map_err(|err| graph_error(err, engine))?;
    let edges = store.all_edges().map_err(|err| graph_error(err, engine))?;
    let lines = store.code_lines().map_err(|err| graph_error(err, engine))?;
    let tasks: Vec<TaskInfo> = plan::next_tasks(&components, &edges, &lines, priority, limit)
        .into_iter()
        .map(|task| {
            let mut reason = if task.ready() {
                format!("ready: all {} dependencies implemented", task.dependencies)
            } else {
                format!("waiting on {} of {} dependencies", task.pending_dependencies.len(), task.dependencies)
            };
            if task.dependents > 0 {
                reason.push_str(&format!("; {} component(s) depend on it", task.dependents));
            }
            if priority == Priority::Complexity {
                reason.push_str(&format!("; complexity {}", task.complexity));
            }
            TaskInfo {
                component: ComponentBrief::from(&task.component),
                ready: task.ready(),
                pending_dependencies: task.pending_dependencies.clone(),
                dependents: task.dependents,
                complexity: task.complexity,
                reason,
            }
        })
        .collect();
    Ok(FindNextTasksOutput { success: true, count: tasks.len(), tasks })
}

/// Renders `find_next_tasks`.
pub fn render_find_next_tasks(output: &FindNextTasksOutput) -> String {
    use std::fmt::Write;
    let mut out = format!("{} task(s)\n", output.count);
    for (idx, t) in output.tasks.iter().enumerate() {
        let _ = writeln!(
            out,
            "{}. {} {} [{}] {} — {}",
            idx + 1,
            t.component.component_type,
            t.component.name,
            t.component.status,
            t.component.id,
            t.reason
        );
    }
    out
}

/// Parameters of `get_implementation_plan`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ImplementationPlanParams {
    /// Component IDs to plan; default every component not yet implemented.
    pub component_ids: Option<Vec<String>>,
    /// How many levels of unimplemented dependencies of component_ids to pull in, 0–20
    /// (default 1).
    pub dependencies_depth: Option<usize>,
}

/// One step of a plan.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PlanStep {
    /// 1-based.
    pub step: usize,
    pub description: String,
    /// Component ids of this step.
    pub components: Vec<String>,
}

/// A dependency cycle.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CycleInfo {
    pub component_ids: Vec<String>,
    pub names: Vec<String>,
}

/// The `plan` object.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Plan {
    /// Every planned component, dependencies before dependents.
    pub ordered_components: Vec<ComponentBrief>,
    /// `group_1`, `group_2`, …: component ids; a group depends only on earlier groups (and on
    /// itself when it holds a cycle).
    pub dependency_groups: BTreeMap<String, Vec<String>>,
    pub implementation_steps: Vec<PlanStep>,
    /// Dependency cycles found (their members are planned together, in one group).
    pub cycles: Vec<CycleInfo>,
    pub has_cycles: bool,
}

/// Result of `get_implementation_plan`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ImplementationPlanOutput {
    pub success: bool,
    pub plan: Plan,
}

/// Runs `get_implementation_plan`: topological order in dependency groups (Tarjan-condensed, so
/// a cycle is reported and planned as one unit, never looped on).
///
/// Errors: 7003 an unknown id in component_ids; 7005 a depth outside 0–20; store failures.
pub fn get_implementation_plan(
    engine: &Engine,
    params: ImplementationPlanParams,
) -> Result<ImplementationPlanOutput, ToolError> {
    let depth = params.dependencies_depth.unwrap_or(1);
    if depth > MAX_PLAN_DEPTH {
        return Err(invalid_number("dependencies_depth", depth, 0, MAX_PLAN_DEPTH));
    }
    let store = store(engine)?;
    let components = store.all_components_brief().map_err(|err| graph_error(err, engine))?;
    let by_id: HashMap<&str, &Component> = components.iter().map(|c| (c.id.as_str(), c)).collect();
    if let Some(ids) = &params.component_ids
        && let Some(unknown) = ids.iter().find(|id| !by_id.contains_key(id.as_str()))
    {
        return Err(graph_error(crate::graph::GraphError::NotFound { identifier: unknown.clone() }, engine));
    }
    let edges = store.all_edges().map_err(|err| graph_error(err, engine))?;
    let planned = plan::implementation_plan(&components, &edges, params.component_ids.as_deref(), depth);
    let name = |id: &str| by_id.get(id).map_or_else(String::new, |c| c.qualified_name.clone());
    let cycle_members: Vec<&Vec<String>> = planned.cycles.iter().collect();
    let steps = planned
        .groups
        .iter()
        .enumerate()
        .map(|(idx, group)| {
            let names: Vec<String> = group.iter().map(|id| name(id)).collect();
            let in_cycle = cycle_members.iter().any(|cycle| group.iter().any(|id| cycle.contains(id)));
            let note = if in_cycle { " (includes a dependency cycle: implement its members together)" } else { "" };
            PlanStep {
                step: idx + 1,
                description: format!("Implement group {}: {}{note}", idx + 1, names.join(", ")),
                components: group.clone(),
            }
        })
        .collect();
    let plan = Plan {
        ordered_components: planned
            .ordered
            .iter()
            .filter_map(|id| by_id.get(id.as_str()))
            .map(|c| ComponentBrief::from(*c))
            .collect(),
        dependency_groups: planned
            .groups
            .iter()
            .enumerate()
            .map(|(idx, group)| (format!("group_{}", idx + 1), group.clone()))
            .collect(),
        implementation_steps: steps,
        has_cycles: !planned.cycles.is_empty(),
        cycles: planned
            .cycles
            .iter()
            .map(|cycle| CycleInfo { names: cycle.iter().map(|id| name(id)).collect(), component_ids: cycle.clone() })
            .collect(),
    };
    Ok(ImplementationPlanOutput { success: true, plan })
}

/// Renders `get_implementation_plan`.
pub fn render_implementation_plan(output: &ImplementationPlanOutput) -> String {
    use std::fmt::Write;
    let plan = &output.plan;
    let mut out =
        format!("{} component(s) in {} step(s)\n", plan.ordered_components.len(), plan.implementation_steps.len());
    for step in &plan.implementation_steps {
        let _ = writeln!(out, "{}. {}", step.step, step.description);
    }
    for cycle in &plan.cycles {
        let _ = writeln!(out, "cycle: {}", cycle.names.join(" <-> "));
    }
    out
}
