//! The thirteen graph tools on a small hand-built graph, with exact expected results.
//!
//! The project (→ = depends on, unless noted):
//!
//! ```text
//! Config        class     implemented
//! load_config   function  implemented  → Config
//! Server        class     partial      → Config
//! start_server  function  planned      → Server, calls load_config
//! Router        class     planned      → Server
//! handle        function  planned      → Router
//! ```

use serde_json::{Value, json};

use super::*;
use crate::engine::Engine;
use crate::tools::ToolError;
use crate::workspace::{Config, Workspace};

struct Project {
    _dir: tempfile::TempDir,
    engine: Engine,
    config: String,
    load_config: String,
    server: String,
    start_server: String,
    router: String,
    handle: String,
}

fn engine() -> (tempfile::TempDir, Engine) {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::new(Workspace::with_config(dir.path(), Config::default()).unwrap());
    (dir, engine)
}

fn add(engine: &Engine, name: &str, kind: &str, status: &str, description: &str, code: &str) -> String {
    let params = AddComponentParams {
        code_text: code.to_owned(),
        component_type: kind.to_owned(),
        name: name.to_owned(),
        status: Some(status.to_owned()),
        description: description.to_owned(),
        metadata: None,
    };
    add_component(engine, params).unwrap().component_id
}

fn relate(engine: &Engine, source: &str, target: &str, kind: &str) -> AddRelationshipOutput {
    let params = AddRelationshipParams {
        source_id: source.to_owned(),
        target_id: target.to_owned(),
        relationship_type: kind.to_owned(),
        metadata: None,
    };
    add_relationship(engine, params).unwrap()
}

fn project() -> Project {
    let (dir, engine) = engine();
    let config = add(&engine, "Config", "class", "implemented", "Holds the settings", "class Config:\n    port = 80\n");
    let load_config = add(
        &engine,
        "load_config",
        "function",
        "implemented",
        "Reads the configuration file",
        "def load_config(path):\n    return Config()\n",
    );
    let server = add(&engine, "Server", "class", "partial", "Accepts connections", "class Server:\n    pass\n");
    let start_server = add(&engine, "start_server", "function", "planned", "Boots the server", "");
    let router = add(&engine, "Router", "class", "planned", "Routes requests to handlers", "");
    let handle = add(&engine, "handle", "function", "planned", "Handles one request", "");
    relate(&engine, &load_config, &config, "depends_on");
    relate(&engine, &server, &config, "depends_on");
    relate(&engine, &start_server, &server, "depends_on");
    relate(&engine, &start_server, &load_config, "calls");
    relate(&engine, &router, &server, "depends_on");
    relate(&engine, &handle, &router, "depends_on");
    Project { _dir: dir, engine, config, load_config, server, start_server, router, handle }
}

fn code(err: ToolError) -> u32 {
    err.code
}

#[test]
fn add_component_and_get_component() {
    let (_dir, engine) = engine();
    let params = AddComponentParams {
        code_text: "def f():\n    pass\n".to_owned(),
        component_type: "function".to_owned(),
        name: "f".to_owned(),
        status: None,
        description: String::new(),
        metadata: Some(serde_json::from_value(json!({"owner": "me"})).unwrap()),
    };
    let added = add_component(&engine, params).unwrap();
    assert!(added.success);
    assert_eq!(added.component_id.len(), 36);
    assert_eq!(added.message, format!("Added function 'f' with ID {}", added.component_id));
    let got =
        get_component(&engine, GetComponentParams { identifier: "f".to_owned(), include_related: false }).unwrap();
    let c = &got.component;
    assert_eq!(
        (c.id.as_str(), c.name.as_str(), c.component_type.as_str(), c.status.as_str(), c.version, c.origin.as_str()),
        (added.component_id.as_str(), "f", "function", "planned", 1, "manual")
    );
    assert_eq!(c.code_text, "def f():\n    pass\n");
    assert_eq!(Value::Object(c.metadata.clone()), json!({"owner": "me"}));
    assert_eq!(c.created_at.len(), "2026-01-31T12:00:00.000Z".len());
    assert!(got.related.is_none());
    assert_eq!(got.status_history.len(), 1);
    assert_eq!(
        (got.status_history[0].new_status.as_str(), got.status_history[0].notes.as_str()),
        ("planned", "created")
    );

    let bad = AddComponentParams {
        code_text: String::new(),
        component_type: "widget".to_owned(),
        name: "w".to_owned(),
        status: None,
        description: String::new(),
        metadata: None,
    };
    assert_eq!(code(add_component(&engine, bad).unwrap_err()), 7005);
    let missing = GetComponentParams { identifier: "nope".to_owned(), include_related: false };
    assert_eq!(code(get_component(&engine, missing).unwrap_err()), 7003);
}

#[test]
fn get_component_with_related_lists_both_directions() {
    let p = project();
    let got =
        get_component(&p.engine, GetComponentParams { identifier: p.server.clone(), include_related: true }).unwrap();
    let related: Vec<(&str, &str, &str)> = got
        .related
        .as_ref()
        .unwrap()
        .iter()
        .map(|r| (r.relationship_type.as_str(), r.direction.as_str(), r.component.name.as_str()))
        .collect();
    assert_eq!(
        related,
        [
            ("depends_on", "outgoing", "Config"),
            ("depends_on", "incoming", "start_server"),
            ("depends_on", "incoming", "Router")
        ]
    );
    // The same name twice is ambiguous.
    add(&p.engine, "Config", "variable", "planned", "", "");
    let err = get_component(&p.engine, GetComponentParams { identifier: "Config".to_owned(), include_related: false })
        .unwrap_err();
    assert_eq!(err.code, 7004);
    assert_eq!(err.context["count"], json!(2));
}

#[test]
fn update_component_bumps_the_version_once_and_records_status() {
    let p = project();
    let params = UpdateComponentParams {
        component_id: p.router.clone(),
        code_text: Some("class Router:\n    routes = {}\n".to_owned()),
        status: Some("partial".to_owned()),
        description: Some("Routes requests".to_owned()),
        expected_version: Some(1),
    };
    let out = update_component(&p.engine, params).unwrap();
    assert_eq!((out.message.clone(), out.version), (format!("Updated component {}", p.router), 2));
    let got =
        get_component(&p.engine, GetComponentParams { identifier: p.router.clone(), include_related: false }).unwrap();
    assert_eq!(got.component.code_text, "class Router:\n    routes = {}\n");
    assert_eq!((got.component.status.as_str(), got.component.description.as_str()), ("partial", "Routes requests"));
    let history: Vec<(Option<&str>, &str, &str)> =
        got.status_history.iter().map(|h| (h.old_status.as_deref(), h.new_status.as_str(), h.notes.as_str())).collect();
    assert_eq!(history, [(None, "planned", "created"), (Some("planned"), "partial", "update_component")]);
    let nothing = UpdateComponentParams {
        component_id: p.router.clone(),
        code_text: None,
        status: None,
        description: None,
        expected_version: None,
    };
    assert_eq!(update_component(&p.engine, nothing).unwrap().version, 2);
    let unknown = UpdateComponentParams {
        component_id: "x".to_owned(),
        code_text: Some(String::new()),
        status: None,
        description: None,
        expected_version: None,
    };
    assert_eq!(code(update_component(&p.engine, unknown).unwrap_err()), 7003);
    let stale = UpdateComponentParams {
        component_id: p.router.clone(),
        code_text: None,
        status: None,
        description: Some("based on version 1".to_owned()),
        expected_version: Some(1),
    };
    assert_eq!(code(update_component(&p.engine, stale).unwrap_err()), 7008);
}

#[test]
fn add_relationship_is_idempotent_per_source_target_type() {
    let p = project();
    let first = relate(&p.engine, &p.handle, &p.server, "calls");
    assert!(first.created);
    assert_eq!(first.message, format!("Added calls relationship from {} to {}", p.handle, p.server));
    let again = relate(&p.engine, &p.handle, &p.server, "calls");
    assert_eq!((again.relationship_id.as_str(), again.created), (first.relationship_id.as_str(), false));
    let params = AddRelationshipParams {
        source_id: p.handle.clone(),
        target_id: "missing".to_owned(),
        relationship_type: "calls".to_owned(),
        metadata: None,
    };
    assert_eq!(code(add_relationship(&p.engine, params).unwrap_err()), 7003);
    let params = AddRelationshipParams {
        source_id: p.handle.clone(),
        target_id: p.server.clone(),
        relationship_type: "likes".to_owned(),
        metadata: None,
    };
    assert_eq!(code(add_relationship(&p.engine, params).unwrap_err()), 7005);
}

#[test]
fn find_related_components_is_breadth_first_without_revisits() {
    let p = project();
    let params = |depth, types: &[&str]| FindRelatedParams {
        component_id: p.config.clone(),
        relationship_types: types.iter().map(|t| (*t).to_owned()).collect(),
        depth: Some(depth),
    };
    let one = find_related_components(&p.engine, params(1, &[])).unwrap();
    let got: Vec<(&str, usize, &str, &str)> = one
        .related_components
        .iter()
        .map(|r| (r.component.name.as_str(), r.depth, r.relationship_type.as_str(), r.direction.as_str()))
        .collect();
    assert_eq!(got, [("load_config", 1, "depends_on", "incoming"), ("Server", 1, "depends_on", "incoming")]);
    let two = find_related_components(&p.engine, params(2, &[])).unwrap();
    let got: Vec<(&str, usize, &str)> =
        two.related_components.iter().map(|r| (r.component.name.as_str(), r.depth, r.via.as_str())).collect();
    assert_eq!(
        got,
        [
            ("load_config", 1, p.config.as_str()),
            ("Server", 1, p.config.as_str()),
            ("start_server", 2, p.load_config.as_str()),
            ("Router", 2, p.server.as_str()),
        ]
    );
    let all = find_related_components(&p.engine, params(10, &[])).unwrap();
    assert_eq!(all.count, 5, "every other component once");
    let only_calls = find_related_components(&p.engine, params(3, &["calls"])).unwrap();
    assert_eq!(only_calls.count, 0);
    assert_eq!(code(find_related_components(&p.engine, params(0, &[])).unwrap_err()), 7005);
}

#[test]
fn search_code_ranks_and_filters() {
    let p = project();
    let search = |query: &str, types: &[&str], limit| {
        let params = SearchCodeParams {
            query: query.to_owned(),
            component_types: types.iter().map(|t| (*t).to_owned()).collect(),
            limit,
        };
        search_code(&p.engine, params).unwrap().matches.iter().map(|m| m.component.name.clone()).collect::<Vec<_>>()
    };
    assert_eq!(search("loadConfig", &[], None), ["load_config", "Config"]);
    assert_eq!(search("server", &["class"], None), ["Server"]);
    assert_eq!(search("server", &[], Some(1)), ["start_server"]);
    assert_eq!(search("request", &[], None), ["handle", "Router"]);
    assert!(search("zebra", &[], None).is_empty());
    let out = search_code(&p.engine, SearchCodeParams { query: "config".into(), component_types: vec![], limit: None })
        .unwrap();
    assert_eq!(out.count, out.matches.len());
    assert!(out.matches.windows(2).all(|w| w[0].score >= w[1].score));
    assert_eq!(out.matches[0].signature, "class Config:");
}

#[test]
fn update_status_returns_the_old_status_and_keeps_notes() {
    let p = project();
    let params = UpdateStatusParams {
        component_id: p.server.clone(),
        new_status: "implemented".to_owned(),
        notes: "accepts TLS too".to_owned(),
        expected_version: None,
    };
    let out = update_status(&p.engine, params).unwrap();
    assert_eq!(
        (out.message.as_str(), out.old_status.as_str(), out.new_status.as_str()),
        (format!("Updated status of {} to implemented", p.server).as_str(), "partial", "implemented")
    );
    let got =
        get_component(&p.engine, GetComponentParams { identifier: p.server.clone(), include_related: false }).unwrap();
    assert_eq!(got.component.version, 2);
    assert_eq!(got.status_history.last().unwrap().notes, "accepts TLS too");
    let bad = UpdateStatusParams {
        component_id: p.server.clone(),
        new_status: "done".to_owned(),
        notes: String::new(),
        expected_version: None,
    };
    assert_eq!(code(update_status(&p.engine, bad).unwrap_err()), 7005);
}

#[test]
fn a_status_change_based_on_a_stale_version_is_refused() {
    let p = project();
    let change = |expected_version| UpdateStatusParams {
        component_id: p.server.clone(),
        new_status: "implemented".to_owned(),
        notes: String::new(),
        expected_version: Some(expected_version),
    };
    // Version 1 when read; someone else's change made it 2.
    update_status(&p.engine, change(1)).unwrap();
    let stale = update_status(&p.engine, change(1)).unwrap_err();
    assert_eq!(code(stale.clone()), 7008);
    assert_eq!(stale.context["current_version"], 2);
    let got =
        get_component(&p.engine, GetComponentParams { identifier: p.server.clone(), include_related: false }).unwrap();
    assert_eq!((got.component.version, got.status_history.len()), (2, 2), "the refused change wrote nothing");
    update_status(&p.engine, change(2)).unwrap();
}

#[test]
fn get_project_status_counts_filters_and_groups() {
    let p = project();
    let status = |filters: Option<StatusFilters>, grouping: Option<&str>| {
        get_project_status(&p.engine, ProjectStatusParams { filters, grouping: grouping.map(str::to_owned) })
            .unwrap()
            .status
    };
    let all = status(None, None);
    assert_eq!(all.counts.total_components, 6);
    assert_eq!(
        all.counts.status_counts,
        [("implemented".to_owned(), 2), ("partial".to_owned(), 1), ("planned".to_owned(), 3)].into_iter().collect()
    );
    assert_eq!(all.counts.implementation_percentage, 41.7);
    assert_eq!(all.components.len(), 6);
    let classes = status(Some(StatusFilters { component_type: Some("class".into()), ..Default::default() }), None);
    assert_eq!(classes.counts.total_components, 3);
    assert_eq!(classes.counts.implementation_percentage, 50.0);
    let grouped = status(None, Some("type")).groups.unwrap();
    assert_eq!(grouped.keys().collect::<Vec<_>>(), ["class", "function"]);
    assert_eq!(grouped["function"].total_components, 3);
    assert_eq!(grouped["function"].implementation_percentage, 33.3);
    let named = status(Some(StatusFilters { name: Some("SERVER".into()), ..Default::default() }), None);
    assert_eq!(named.components.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["Server", "start_server"]);
    let err = get_project_status(&p.engine, ProjectStatusParams { filters: None, grouping: Some("colour".into()) });
    assert_eq!(code(err.unwrap_err()), 7005);
}

#[test]
fn find_next_tasks_by_dependencies_and_by_complexity() {
    let p = project();
    let tasks = |priority: &str, limit| {
        let params = FindNextTasksParams { priority_type: Some(priority.to_owned()), limit };
        find_next_tasks(&p.engine, params).unwrap().tasks
    };
    let by_deps = tasks("dependencies", None);
    let got: Vec<(&str, bool, usize)> =
        by_deps.iter().map(|t| (t.component.name.as_str(), t.ready, t.dependents)).collect();
    assert_eq!(got, [("Server", true, 2), ("Router", false, 1), ("handle", false, 0), ("start_server", false, 0)]);
    assert_eq!(by_deps[0].reason, "ready: all 1 dependencies implemented; 2 component(s) depend on it");
    assert_eq!(by_deps[1].pending_dependencies, std::slice::from_ref(&p.server));
    let by_size = tasks("complexity", Some(2));
    let got: Vec<(&str, usize)> = by_size.iter().map(|t| (t.component.name.as_str(), t.complexity)).collect();
    // Router and handle: no code, one dependency (5); Server: 2 lines + 5.
    assert_eq!(got, [("Router", 5), ("handle", 5)]);
    let err = find_next_tasks(&p.engine, FindNextTasksParams { priority_type: Some("random".into()), limit: None });
    assert_eq!(code(err.unwrap_err()), 7005);
}

#[test]
fn get_implementation_plan_orders_groups_and_reports_cycles() {
    let p = project();
    let plan = |ids: Option<Vec<String>>, depth| {
        get_implementation_plan(&p.engine, ImplementationPlanParams { component_ids: ids, dependencies_depth: depth })
            .unwrap()
            .plan
    };
    let all = plan(None, None);
    assert_eq!(
        all.dependency_groups,
        [
            ("group_1".to_owned(), vec![p.server.clone()]),
            ("group_2".to_owned(), vec![p.router.clone(), p.start_server.clone()]),
            ("group_3".to_owned(), vec![p.handle.clone()]),
        ]
        .into_iter()
        .collect()
    );
    let names: Vec<&str> = all.ordered_components.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["Server", "Router", "start_server", "handle"]);
    assert_eq!(all.implementation_steps[1].description, "Implement group 2: Router, start_server");
    assert!(!all.has_cycles);
    // handle only, one level: handle and Router.
    let some = plan(Some(vec![p.handle.clone()]), Some(1));
    assert_eq!(some.ordered_components.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["Router", "handle"]);
    // A cycle: Server depends on handle.
    relate(&p.engine, &p.server, &p.handle, "depends_on");
    let cyclic = plan(None, None);
    assert!(cyclic.has_cycles);
    assert_eq!(cyclic.cycles.len(), 1);
    assert_eq!(cyclic.cycles[0].names, ["Router", "Server", "handle"]);
    assert_eq!(cyclic.dependency_groups.len(), 2);
    assert_eq!(cyclic.ordered_components.len(), 4);
    assert!(cyclic.implementation_steps[0].description.contains("dependency cycle"));
    let err = get_implementation_plan(
        &p.engine,
        ImplementationPlanParams { component_ids: Some(vec!["missing".into()]), dependencies_depth: None },
    );
    assert_eq!(code(err.unwrap_err()), 7003);
}

#[test]
fn prepare_context_puts_primaries_in_full_and_never_exceeds_the_budget() {
    let p = project();
    let params = |max_tokens| PrepareContextParams {
        task_description: "add TLS".to_owned(),
        relevant_components: vec![p.load_config.clone()],
        max_tokens,
    };
    let out = prepare_context(&p.engine, params(None)).unwrap();
    assert_eq!((out.primary_count, out.related_count, out.summary_count, out.omitted.count), (1, 2, 0, 0));
    assert_eq!((out.max_tokens, out.tokenizer.as_str()), (4000, "cl100k_base"));
    let primary = &out.context["primary_components"][0];
    assert_eq!(primary["code_text"], json!("def load_config(path):\n    return Config()\n"));
    let related: Vec<(&str, &str)> = out.context["related_components"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["name"].as_str().unwrap(), r["relationship"].as_str().unwrap()))
        .collect();
    assert_eq!(related, [("Config", "depends_on ->"), ("start_server", "<- calls")]);
    assert_eq!(out.token_count, crate::graph::budget::count_json_tokens(&Value::Object(out.context.clone())));
    // Every budget is honoured; small ones degrade to summaries, names, then omissions.
    let mut saw_degraded = false;
    for max in (30..=out.token_count + 5).step_by(3) {
        match prepare_context(&p.engine, params(Some(max))) {
            Ok(small) => {
                assert!(small.token_count <= max, "{} > {max}", small.token_count);
                assert_eq!(small.primary_count + small.related_count + small.summary_count + small.omitted.count, 3);
                saw_degraded |= small.primary_count == 0 && small.related_count + small.summary_count > 0;
            }
            Err(err) => assert_eq!(err.code, 7005, "{max}"),
        }
    }
    assert!(saw_degraded);
    assert_eq!(code(prepare_context(&p.engine, params(Some(5))).unwrap_err()), 7005);
    // Without relevant components, the best search matches are the primaries.
    let searched = prepare_context(
        &p.engine,
        PrepareContextParams {
            task_description: "route requests".into(),
            relevant_components: vec![],
            max_tokens: None,
        },
    )
    .unwrap();
    let primaries: Vec<&str> = searched.context["primary_components"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(primaries, ["Router", "handle"]);
}

#[test]
fn continue_implementation_gathers_dependencies_and_dependents() {
    let p = project();
    let out = continue_implementation(
        &p.engine,
        ContinueImplementationParams { component_id: p.start_server.clone(), max_tokens: None },
    )
    .unwrap();
    assert_eq!(out.context["component"]["name"], json!("start_server"));
    let dependencies: Vec<&str> =
        out.context["dependencies"].as_array().unwrap().iter().map(|d| d["name"].as_str().unwrap()).collect();
    assert_eq!(dependencies, ["Server"]);
    let implementations: Vec<&str> = out.context["related_implementations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap())
        .collect();
    assert_eq!(implementations, ["load_config"]);
    assert_eq!(out.context["dependents"], json!([]));
    assert!(out.token_count <= 4000 && out.omitted.count == 0);
    let router = continue_implementation(
        &p.engine,
        ContinueImplementationParams { component_id: p.router.clone(), max_tokens: Some(4000) },
    )
    .unwrap();
    let dependents: Vec<&str> =
        router.context["dependents"].as_array().unwrap().iter().map(|d| d["name"].as_str().unwrap()).collect();
    assert_eq!(dependents, ["handle"]);
    for max in [40, 60, 80, 120] {
        if let Ok(small) = continue_implementation(
            &p.engine,
            ContinueImplementationParams { component_id: p.start_server.clone(), max_tokens: Some(max) },
        ) {
            assert!(small.token_count <= max);
        }
    }
    let err =
        continue_implementation(&p.engine, ContinueImplementationParams { component_id: "x".into(), max_tokens: None });
    assert_eq!(code(err.unwrap_err()), 7003);
}

const GO_FILE: &str = "package shop\n\nimport \"fmt\"\n\ntype Cart struct{ items []string }\n\nfunc (c *Cart) Add(item string) { c.items = append(c.items, item); report(item) }\n\nfunc report(item string) { fmt.Println(item) }\n";

#[test]
fn analyze_code_extracts_and_reanalysis_keeps_ids() {
    let (_dir, engine) = engine();
    let params = |code: &str| AnalyzeCodeParams {
        code_text: code.to_owned(),
        file_path: Some("shop/cart.go".to_owned()),
        component_id: None,
        language: None,
    };
    let first = analyze_code(&engine, params(GO_FILE)).unwrap();
    assert_eq!(first.language, "go");
    assert_eq!(first.message, "Successfully analyzed and updated knowledge graph");
    assert_eq!((first.component.name.as_str(), first.component.component_type.as_str()), ("shop/cart.go", "file"));
    let names: Vec<(&str, &str)> =
        first.components.iter().map(|c| (c.name.as_str(), c.component_type.as_str())).collect();
    assert_eq!(names, [("Cart", "class"), ("Cart.Add", "method"), ("report", "function")]);
    // contains: file→Cart, file→report, Cart→Cart.Add; imports fmt; calls Add→report.
    assert_eq!((first.components_added, first.relationships), (4, 5));
    let cart = get_component(&engine, GetComponentParams { identifier: "Cart".into(), include_related: true }).unwrap();
    let cart_related = cart.related.unwrap();
    let related: Vec<(&str, &str, &str)> = cart_related
        .iter()
        .map(|r| (r.relationship_type.as_str(), r.direction.as_str(), r.component.name.as_str()))
        .collect();
    assert_eq!(related, [("contains", "incoming", "shop/cart.go"), ("contains", "outgoing", "Cart.Add")]);
    let add_method =
        get_component(&engine, GetComponentParams { identifier: "Cart.Add".into(), include_related: true }).unwrap();
    let call = add_method.related.unwrap().into_iter().find(|r| r.relationship_type == "calls").unwrap();
    assert_eq!(Value::Object(call.metadata), json!({"approximate": true, "source": "syntax"}));

    let again = analyze_code(&engine, params(&GO_FILE.replace("fmt.Println(item)", "fmt.Print(item)"))).unwrap();
    assert_eq!(again.component_id, first.component_id);
    assert_eq!((again.components_added, again.components_updated, again.components_removed), (0, 1, 0));
    assert_eq!(
        again.components.iter().map(|c| c.id.clone()).collect::<Vec<_>>(),
        first.components.iter().map(|c| c.id.clone()).collect::<Vec<_>>()
    );
    let report =
        get_component(&engine, GetComponentParams { identifier: "report".into(), include_related: false }).unwrap();
    assert_eq!(report.component.version, 2);

    // Anchored on an existing component: its code is replaced and the declarations become members.
    let planned = add(&engine, "Widget", "class", "planned", "", "");
    let anchored = analyze_code(
        &engine,
        AnalyzeCodeParams {
            code_text: "class Widget:\n    def draw(self):\n        pass\n".to_owned(),
            file_path: None,
            component_id: Some(planned.clone()),
            language: None,
        },
    )
    .unwrap();
    assert_eq!((anchored.component_id.as_str(), anchored.language.as_str()), (planned.as_str(), "python"));
    assert_eq!(anchored.components.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["Widget", "Widget.draw"]);
    let widget =
        get_component(&engine, GetComponentParams { identifier: planned.clone(), include_related: false }).unwrap();
    assert_eq!(widget.component.version, 2);

    let outside = AnalyzeCodeParams {
        code_text: String::new(),
        file_path: Some("../x.py".into()),
        component_id: None,
        language: None,
    };
    assert_eq!(code(analyze_code(&engine, outside).unwrap_err()), 1001);
    let markdown = AnalyzeCodeParams {
        code_text: "# hi".into(),
        file_path: None,
        component_id: None,
        language: Some("markdown".into()),
    };
    assert_eq!(code(analyze_code(&engine, markdown).unwrap_err()), 3001);
}

#[test]
fn an_unwritable_store_is_a_structured_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("not-a-dir"), "x").unwrap();
    let config: Config = Config::parse("[graph]\npath = \"not-a-dir/graph.db\"\n").unwrap();
    let engine = Engine::new(Workspace::with_config(dir.path(), config).unwrap());
    let err =
        search_code(&engine, SearchCodeParams { query: "x".into(), component_types: vec![], limit: None }).unwrap_err();
    assert_eq!((err.code, err.name.as_str()), (7001, "GRAPH_STORE_UNAVAILABLE"));
    // A repository's filepuff.toml cannot place the database outside the root.
    let config: Config = Config::parse("[graph]\npath = \"../outside.db\"\n").unwrap();
    let engine = Engine::new(Workspace::with_config(dir.path(), config).unwrap());
    let err =
        search_code(&engine, SearchCodeParams { query: "x".into(), component_types: vec![], limit: None }).unwrap_err();
    assert_eq!(err.code, 7001);
    assert!(err.message.contains("inside the workspace root"), "{}", err.message);
    assert!(!dir.path().parent().unwrap().join("outside.db").exists());
}
