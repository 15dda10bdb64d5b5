//! Graph algorithms over the stored graph: breadth-first neighbourhoods, next tasks, and
//! implementation plans (topological order in dependency groups, cycles reported).
//!
//! A *dependency* is any relationship but `contains`: `A calls/imports/inherits/implements/
//! depends_on B` means B should be implemented before A.

use std::collections::{HashMap, HashSet, VecDeque};

use super::store::{BRIEF_COLUMNS, GraphStore, component_from_row, relationships_touching};
use super::{Component, GraphError, RelationshipType, Status};

/// Most components [`GraphStore::related`] returns.
pub const MAX_RELATED: usize = 1000;

/// Which way a relationship was followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// From the relationship's source to its target.
    Outgoing,
    /// From the target back to the source.
    Incoming,
}

impl Direction {
    /// `outgoing` or `incoming`.
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Outgoing => "outgoing",
            Direction::Incoming => "incoming",
        }
    }
}

/// A component reached by [`GraphStore::related`].
#[derive(Debug, Clone)]
pub struct Related {
    /// Without its code text.
    pub component: Component,
    /// 1 for direct neighbours.
    pub depth: usize,
    pub relationship_type: RelationshipType,
    pub direction: Direction,
    /// The id of the component it was reached from.
    pub via: String,
    pub relationship_id: String,
}

impl GraphStore {
    /// Components within `depth` relationships of `id` (both directions), breadth-first; each
    /// component once, at its shortest distance, never the start itself. `types` filters the
    /// relationships followed (empty: all). At most [`MAX_RELATED`]; the flag says whether the
    /// walk stopped early.
    ///
    /// Errors: [`GraphError::NotFound`] when `id` is unknown.
    pub fn related(
        &self,
        id: &str,
        types: &[RelationshipType],
        depth: usize,
    ) -> Result<(Vec<Related>, bool), GraphError> {
        self.read(|conn| {
            if super::store::component_by_id(conn, id)?.is_none() {
                return Err(GraphError::NotFound { identifier: id.to_owned() });
            }
            let mut visited: HashSet<String> = HashSet::from([id.to_owned()]);
            let mut queue = VecDeque::from([(id.to_owned(), 0usize)]);
            let mut out = Vec::new();
            while let Some((current, level)) = queue.pop_front() {
                if level >= depth {
                    continue;
                }
                for relationship in relationships_touching(conn, &current, types)? {
                    let (next, direction) = if relationship.source_id == current {
                        (relationship.target_id.clone(), Direction::Outgoing)
                    } else {
                        (relationship.source_id.clone(), Direction::Incoming)
                    };
                    if !visited.insert(next.clone()) {
                        continue;
                    }
                    if out.len() >= MAX_RELATED {
                        return Ok((out, true));
                    }
                    let row = conn.query_one(
                        &format!("SELECT {BRIEF_COLUMNS} FROM components c WHERE c.id = ?1"),
                        &crate::graph::db::sql_params![next.as_str()],
                    )?;
                    let component = component_from_row(&row)?;
                    out.push(Related {
                        component,
                        depth: level + 1,
                        relationship_type: relationship.relationship_type,
                        direction,
                        via: current.clone(),
                        relationship_id: relationship.id.clone(),
                    });
                    queue.push_back((next, level + 1));
                }
            }
            Ok((out, false))
        })
    }
}

/// How [`next_tasks`] orders candidates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Priority {
    /// Ready components (every dependency implemented) first; then those blocking the most
    /// others; `partial` before `planned`; then by name.
    Dependencies,
    /// Smallest estimated complexity first (code lines + 5 × dependencies); ready ones first on
    /// ties; then by name.
    Complexity,
}

/// A suggested next task.
#[derive(Debug, Clone)]
pub struct Task {
    pub component: Component,
    /// Ids of dependencies not yet implemented.
    pub pending_dependencies: Vec<String>,
    pub dependencies: usize,
    /// Components that depend on this one.
    pub dependents: usize,
    /// Code lines + 5 × dependencies.
    pub complexity: usize,
}

impl Task {
    /// Whether every dependency is implemented.
    pub fn ready(&self) -> bool {
        self.pending_dependencies.is_empty()
    }
}

/// Dependencies (targets) and dependents (sources) per component id.
struct DependencyGraph<'a> {
    dependencies: HashMap<&'a str, Vec<&'a str>>,
    dependents: HashMap<&'a str, Vec<&'a str>>,
}

impl<'a> DependencyGraph<'a> {
    fn new(edges: &'a [(String, String, RelationshipType)]) -> DependencyGraph<'a> {
        let mut dependencies: HashMap<&str, Vec<&str>> = HashMap::new();
        let mut dependents: HashMap<&str, Vec<&str>> = HashMap::new();
        for (source, target, kind) in edges {
            if !kind.is_dependency() {
                continue;
            }
            let deps = dependencies.entry(source.as_str()).or_default();
            if !deps.contains(&target.as_str()) {
                deps.push(target.as_str());
                if source != target {
                    dependents.entry(target.as_str()).or_default().push(source.as_str());
                }
            }
        }
        DependencyGraph { dependencies, dependents }
    }

    fn dependencies_of(&self, id: &str) -> &[&'a str] {
        self.dependencies.get(id).map_or(&[], Vec::as_slice)
    }
}

/// The `limit` components (not yet implemented) to work on next, ordered by `priority`.
/// `code_lengths` are code sizes in bytes by id; lines are estimated from them when the brief
/// components carry no code.
pub fn next_tasks(
    components: &[Component],
    edges: &[(String, String, RelationshipType)],
    code_lines: &HashMap<String, usize>,
    priority: Priority,
    limit: usize,
) -> Vec<Task> {
    let graph = DependencyGraph::new(edges);
    let status: HashMap<&str, Status> = components.iter().map(|c| (c.id.as_str(), c.status)).collect();
    let mut tasks: Vec<Task> = components
        .iter()
        .filter(|c| c.status != Status::Implemented)
        .map(|c| {
            let deps: Vec<&str> = graph.dependencies_of(&c.id).iter().copied().filter(|d| *d != c.id).collect();
            let pending: Vec<String> = deps
                .iter()
                .filter(|d| status.get(*d).is_some_and(|s| *s != Status::Implemented))
                .map(|d| (*d).to_owned())
                .collect();
            let lines = code_lines.get(&c.id).copied().unwrap_or(0);
            Task {
                component: c.clone(),
                pending_dependencies: pending,
                dependencies: deps.len(),
                dependents: graph.dependents.get(c.id.as_str()).map_or(0, Vec::len),
                complexity: lines + 5 * deps.len(),
            }
        })
        .collect();
    let status_rank = |s: Status| if s == Status::Partial { 0 } else { 1 };
    match priority {
        Priority::Dependencies => tasks.sort_by(|a, b| {
            a.pending_dependencies
                .len()
                .cmp(&b.pending_dependencies.len())
                .then(b.dependents.cmp(&a.dependents))
                .then(status_rank(a.component.status).cmp(&status_rank(b.component.status)))
                .then(a.component.name.cmp(&b.component.name))
                .then(a.component.id.cmp(&b.component.id))
        }),
        Priority::Complexity => tasks.sort_by(|a, b| {
            a.complexity
                .cmp(&b.complexity)
                .then(a.pending_dependencies.len().cmp(&b.pending_dependencies.len()))
                .then(a.component.name.cmp(&b.component.name))
                .then(a.component.id.cmp(&b.component.id))
        }),
    }
    tasks.truncate(limit);
    tasks
}

/// An implementation plan.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// Every planned id, dependencies before dependents.
    pub ordered: Vec<String>,
    /// Groups in order; a group's members depend only on earlier groups (or on each other,
    /// when they form a cycle).
    pub groups: Vec<Vec<String>>,
    /// Dependency cycles among the planned components, each as its member ids (sorted by name).
    pub cycles: Vec<Vec<String>>,
}

/// Plans the components in `include` (default: every component not implemented) plus their
/// unimplemented dependencies up to `depth` levels. Cycles are condensed (Tarjan's strongly
/// connected components), placed as one unit and reported; the plan never loops.
pub fn implementation_plan(
    components: &[Component],
    edges: &[(String, String, RelationshipType)],
    include: Option<&[String]>,
    depth: usize,
) -> Plan {
    let graph = DependencyGraph::new(edges);
    let by_id: HashMap<&str, &Component> = components.iter().map(|c| (c.id.as_str(), c)).collect();
    let pending = |id: &str| by_id.get(id).is_some_and(|c| c.status != Status::Implemented);
    let mut set: Vec<&str> = Vec::new();
    let mut in_set: HashSet<&str> = HashSet::new();
    match include {
        Some(ids) => {
            let mut frontier: Vec<&str> = Vec::new();
            for id in ids {
                if let Some(component) = by_id.get(id.as_str())
                    && in_set.insert(component.id.as_str())
                {
                    set.push(component.id.as_str());
                    frontier.push(component.id.as_str());
                }
            }
            for _ in 0..depth {
                let mut next = Vec::new();
                for id in frontier {
                    for dep in graph.dependencies_of(id) {
                        if pending(dep) && in_set.insert(dep) {
                            set.push(dep);
                            next.push(*dep);
                        }
                    }
                }
                frontier = next;
            }
        }
        None => {
            for component in components.iter().filter(|c| c.status != Status::Implemented) {
                in_set.insert(component.id.as_str());
                set.push(component.id.as_str());
            }
        }
    }
    let name = |id: &str| by_id.get(id).map_or("", |c| c.name.as_str());
    let index: HashMap<&str, usize> = set.iter().enumerate().map(|(i, id)| (*id, i)).collect();
    let successors: Vec<Vec<usize>> =
        set.iter().map(|id| graph.dependencies_of(id).iter().filter_map(|d| index.get(d).copied()).collect()).collect();
    let components_of = strongly_connected(&successors);
    let mut scc_of = vec![0; set.len()];
    for (scc, members) in components_of.iter().enumerate() {
        for &member in members {
            scc_of[member] = scc;
        }
    }
    // Level of each SCC: 0 when it depends on nothing planned, else 1 + the deepest dependency.
    // Tarjan emits SCCs dependencies-first, so one pass in that order suffices.
    let mut level = vec![0usize; components_of.len()];
    for (scc, members) in components_of.iter().enumerate() {
        let mut deepest = None;
        for &member in members {
            for &dep in &successors[member] {
                let dep_scc = scc_of[dep];
                if dep_scc != scc {
                    deepest = Some(deepest.map_or(level[dep_scc], |d: usize| d.max(level[dep_scc])));
                }
            }
        }
        level[scc] = deepest.map_or(0, |d| d + 1);
    }
    let group_count = level.iter().max().map_or(0, |m| m + 1);
    let mut groups: Vec<Vec<String>> = vec![Vec::new(); group_count];
    for (scc, members) in components_of.iter().enumerate() {
        for &member in members {
            groups[level[scc]].push(set[member].to_owned());
        }
    }
    for group in &mut groups {
        group.sort_by(|a, b| name(a).cmp(name(b)).then(a.cmp(b)));
    }
    let mut cycles: Vec<Vec<String>> = components_of
        .iter()
        .filter(|members| members.len() > 1 || successors[members[0]].contains(&members[0]))
        .map(|members| {
            let mut ids: Vec<String> = members.iter().map(|&m| set[m].to_owned()).collect();
            ids.sort_by(|a, b| name(a).cmp(name(b)).then(a.cmp(b)));
            ids
        })
        .collect();
    cycles.sort();
    Plan { ordered: groups.iter().flatten().cloned().collect(), groups, cycles }
}

/// Tarjan's strongly connected components, iteratively (no recursion on deep graphs). Emits
/// components in reverse topological order of the condensation: a component comes after every
/// component it has edges to.
fn strongly_connected(successors: &[Vec<usize>]) -> Vec<Vec<usize>> {
    const UNVISITED: usize = usize::MAX;
    let n = successors.len();
    let mut index = vec![UNVISITED; n];
    let mut lowlink = vec![0; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut out = Vec::new();
    let mut counter = 0;
    for start in 0..n {
        if index[start] != UNVISITED {
            continue;
        }
        // (node, next successor position)
        let mut call: Vec<(usize, usize)> = vec![(start, 0)];
        index[start] = counter;
        lowlink[start] = counter;
        counter += 1;
        stack.push(start);
        on_stack[start] = true;
        while let Some(&mut (node, ref mut pos)) = call.last_mut() {
            if let Some(&next) = successors[node].get(*pos) {
                *pos += 1;
                if index[next] == UNVISITED {
                    index[next] = counter;
                    lowlink[next] = counter;
                    counter += 1;
                    stack.push(next);
                    on_stack[next] = true;
                    call.push((next, 0));
                } else if on_stack[next] {
                    lowlink[node] = lowlink[node].min(index[next]);
                }
                continue;
            }
            call.pop();
            if let Some(&(parent, _)) = call.last() {
                lowlink[parent] = lowlink[parent].min(lowlink[node]);
            }
            if lowlink[node] == index[node] {
                let mut members = Vec::new();
                while let Some(member) = stack.pop() {
                    on_stack[member] = false;
                    members.push(member);
                    if member == node {
                        break;
                    }
                }
                members.sort_unstable();
                out.push(members);
            }
        }
    }
    out
}
