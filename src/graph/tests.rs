//! Unit tests of the graph store, analysis and planning: persistence across reopen, two
//! connections writing at once, stable ids on re-analysis, cycles in plans.

use std::collections::HashMap;

use serde_json::json;

use super::analyze::{base_type_name, extract, python_relative_module, rust_use_module};
use super::apply::{Anchor, apply, resolve};
use super::plan::{Priority, implementation_plan, next_tasks};
use super::*;
use crate::documents::Language;

fn temp_store() -> (tempfile::TempDir, GraphStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = GraphStore::open(&dir.path().join("state/graph.db")).unwrap();
    (dir, store)
}

fn add(store: &GraphStore, name: &str, status: Status) -> String {
    let mut component = NewComponent::new(name, ComponentType::Function);
    component.status = status;
    store.add_component(&component).unwrap()
}

#[test]
fn identifiers_split_on_case_and_underscores() {
    let table: [(&str, &[&str]); 6] = [
        ("ListenAndServe", &["listen", "and", "serve"]),
        ("HTTPServer", &["http", "server"]),
        ("parse_json2", &["parse", "json2"]),
        ("__init__", &["init"]),
        ("getURLPath", &["get", "url", "path"]),
        ("Reader.readRecord", &["reader", "read", "record"]),
    ];
    for (input, expected) in table {
        assert_eq!(split_identifier(input), expected.to_vec(), "{input}");
    }
}

#[test]
fn the_schema_is_versioned_and_reopening_keeps_everything() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("graph.db");
    let (a, b) = {
        let store = GraphStore::open(&path).unwrap();
        let a = add(&store, "alpha", Status::Planned);
        let b = add(&store, "beta", Status::Implemented);
        store.add_relationship(&a, &b, RelationshipType::DependsOn, &json!({"why": "test"})).unwrap();
        store.update_status(&a, Status::Partial, "half done", None).unwrap();
        (a, b)
    };
    let store = GraphStore::open(&path).unwrap();
    let conn_version: i64 = store.read(|conn| conn.query_one("PRAGMA user_version", &[])?.int(0)).unwrap();
    assert_eq!(conn_version, schema::SCHEMA_VERSION);
    let journal: String = store.read(|conn| conn.query_one("PRAGMA journal_mode", &[])?.text(0)).unwrap();
    assert_eq!(journal, "wal");
    let alpha = store.component(&a).unwrap().unwrap();
    assert_eq!((alpha.name.as_str(), alpha.status, alpha.version), ("alpha", Status::Partial, 2));
    let relationships = store.relationships_of(&a, &[]).unwrap();
    assert_eq!(relationships.len(), 1);
    assert_eq!(
        (relationships[0].target_id.as_str(), relationships[0].metadata.clone()),
        (b.as_str(), json!({"why": "test"}))
    );
    let history = store.status_history(&a).unwrap();
    let changes: Vec<_> = history.iter().map(|h| (h.old_status, h.new_status, h.notes.as_str())).collect();
    assert_eq!(changes, [(None, Status::Planned, "created"), (Some(Status::Planned), Status::Partial, "half done")]);
}

#[test]
fn a_newer_schema_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("graph.db");
    drop(GraphStore::open(&path).unwrap());
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.pragma_update(None, "user_version", 99).unwrap();
    drop(conn);
    match GraphStore::open(&path) {
        Err(GraphError::SchemaTooNew { found: 99, .. }) => {}
        other => panic!("expected SchemaTooNew, got {other:?}"),
    }
}

#[test]
fn two_connections_writing_at_once_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("graph.db");
    let first = GraphStore::open(&path).unwrap();
    let second = GraphStore::open(&path).unwrap();
    let anchor = add(&first, "anchor", Status::Planned);
    std::thread::scope(|scope| {
        for (which, store) in [("a", &first), ("b", &second)] {
            let anchor = anchor.clone();
            scope.spawn(move || {
                for n in 0..150 {
                    let id = add(store, &format!("{which}{n}"), Status::Planned);
                    store.add_relationship(&id, &anchor, RelationshipType::DependsOn, &json!({})).unwrap();
                    store.update_status(&id, Status::Partial, "", None).unwrap();
                }
            });
        }
    });
    let (components, relationships) = second.counts().unwrap();
    assert_eq!((components, relationships), (301, 300));
    let partial = first.all_components_brief().unwrap().iter().filter(|c| c.status == Status::Partial).count();
    assert_eq!(partial, 300);
}

#[test]
fn find_by_name_reports_ambiguity_and_falls_back_to_case_insensitive() {
    let (_dir, store) = temp_store();
    let one = add(&store, "Render", Status::Planned);
    add(&store, "draw", Status::Planned);
    add(&store, "draw", Status::Planned);
    assert_eq!(store.find_component("Render").unwrap().id, one);
    assert_eq!(store.find_component("render").unwrap().id, one);
    match store.find_component("draw") {
        Err(GraphError::Ambiguous { count: 2, candidates, .. }) => assert_eq!(candidates.len(), 2),
        other => panic!("expected Ambiguous, got {other:?}"),
    }
    assert!(matches!(store.find_component("nothing"), Err(GraphError::NotFound { .. })));
}

#[test]
fn search_ranks_name_hits_over_code_hits() {
    let (_dir, store) = temp_store();
    let mut server = NewComponent::new("HttpServer", ComponentType::Class);
    server.description = "Accepts connections".to_owned();
    let server = store.add_component(&server).unwrap();
    let mut user = NewComponent::new("start", ComponentType::Function);
    user.code_text = "s := server.New()".to_owned();
    let user = store.add_component(&user).unwrap();
    let mut unrelated = NewComponent::new("parse_flags", ComponentType::Function);
    unrelated.description = "Reads the command line".to_owned();
    store.add_component(&unrelated).unwrap();
    let hits: Vec<String> = store.search("server", &[], 10).unwrap().into_iter().map(|h| h.component.id).collect();
    assert_eq!(hits, [server.clone(), user]);
    let classes: Vec<String> =
        store.search("server", &[ComponentType::Class], 10).unwrap().into_iter().map(|h| h.component.id).collect();
    assert_eq!(classes, [server]);
    assert!(store.search("  --  ", &[], 10).unwrap().is_empty());
    assert_eq!(store.search("command line", &[], 10).unwrap()[0].component.name, "parse_flags");
}

#[test]
fn plans_order_dependencies_first_and_report_cycles() {
    let (_dir, store) = temp_store();
    let base = add(&store, "base", Status::Implemented);
    let a = add(&store, "a", Status::Planned);
    let b = add(&store, "b", Status::Planned);
    let c = add(&store, "c", Status::Planned);
    let d = add(&store, "d", Status::Partial);
    // a -> base (done); b -> a; c -> b; b -> c (cycle b<->c); d -> c.
    for (source, target) in [(&a, &base), (&b, &a), (&c, &b), (&b, &c), (&d, &c)] {
        store.add_relationship(source, target, RelationshipType::DependsOn, &json!({})).unwrap();
    }
    let components = store.all_components_brief().unwrap();
    let edges = store.all_edges().unwrap();
    let plan = implementation_plan(&components, &edges, None, 1);
    assert_eq!(plan.groups, vec![vec![a.clone()], vec![b.clone(), c.clone()], vec![d.clone()]]);
    assert_eq!(plan.cycles, vec![vec![b.clone(), c.clone()]]);
    assert_eq!(plan.ordered, vec![a.clone(), b.clone(), c.clone(), d.clone()]);
    // Only d, with one level of dependencies: d and c (c's own dependencies stay out).
    let plan = implementation_plan(&components, &edges, Some(std::slice::from_ref(&d)), 1);
    assert_eq!(plan.groups, vec![vec![c.clone()], vec![d.clone()]]);
    assert!(plan.cycles.is_empty());
    // A self-dependency is a cycle too.
    let e = add(&store, "e", Status::Planned);
    store.add_relationship(&e, &e, RelationshipType::DependsOn, &json!({})).unwrap();
    let plan = implementation_plan(&store.all_components_brief().unwrap(), &store.all_edges().unwrap(), None, 1);
    assert!(plan.cycles.contains(&vec![e.clone()]));

    let tasks = next_tasks(&components, &edges, &HashMap::new(), Priority::Dependencies, 10);
    let order: Vec<(&str, usize)> =
        tasks.iter().map(|t| (t.component.name.as_str(), t.pending_dependencies.len())).collect();
    assert_eq!(order, [("a", 0), ("c", 1), ("d", 1), ("b", 2)]);
}

#[test]
fn next_tasks_put_ready_components_first_then_blockers() {
    let (_dir, store) = temp_store();
    let done = add(&store, "done", Status::Implemented);
    let ready = add(&store, "ready", Status::Planned);
    let blocker = add(&store, "blocker", Status::Planned);
    let waiting = add(&store, "waiting", Status::Partial);
    let also = add(&store, "also_waiting", Status::Planned);
    for (source, target) in [(&ready, &done), (&waiting, &blocker), (&also, &blocker), (&waiting, &done)] {
        store.add_relationship(source, target, RelationshipType::DependsOn, &json!({})).unwrap();
    }
    let components = store.all_components_brief().unwrap();
    let edges = store.all_edges().unwrap();
    let tasks = next_tasks(&components, &edges, &HashMap::new(), Priority::Dependencies, 10);
    let names: Vec<&str> = tasks.iter().map(|t| t.component.name.as_str()).collect();
    // blocker (ready, 2 dependents), ready (ready, 0), waiting (partial) before also_waiting.
    assert_eq!(names, ["blocker", "ready", "waiting", "also_waiting"]);
    let lines = HashMap::from([(ready.clone(), 40), (blocker.clone(), 3)]);
    let tasks = next_tasks(&components, &edges, &lines, Priority::Complexity, 2);
    let names: Vec<(&str, usize)> = tasks.iter().map(|t| (t.component.name.as_str(), t.complexity)).collect();
    assert_eq!(names, [("blocker", 3), ("also_waiting", 5)]);
}

fn parsed(language: Language, text: &str) -> crate::syntax::ParsedFile {
    crate::syntax::parse(language, &ropey::Rope::from_str(text)).unwrap()
}

const PY_V1: &str = r#""""A module."""
import os
from .sibling import thing

LIMIT = 3

class Base:
    pass

class Child(Base):
    """A child."""

    def run(self):
        return helper()

def helper():
    return os.getcwd()
"#;

#[test]
fn python_analysis_extracts_members_imports_bases_and_calls() {
    let analysis = extract(&parsed(Language::Python, PY_V1), "pkg/mod.py");
    let names: Vec<(&str, ComponentType, Option<usize>)> =
        analysis.symbols.iter().map(|s| (s.qualified_name.as_str(), s.component_type, s.parent)).collect();
    assert_eq!(
        names,
        [
            ("LIMIT", ComponentType::Variable, None),
            ("Base", ComponentType::Class, None),
            ("Child", ComponentType::Class, None),
            ("Child.run", ComponentType::Method, Some(2)),
            ("helper", ComponentType::Function, None),
        ]
    );
    assert_eq!(analysis.description, "A module.");
    assert_eq!(analysis.symbols[2].description, "A child.");
    assert_eq!(analysis.symbols[3].signature, "def run(self):");
    assert_eq!(analysis.imports, ["os", "pkg.sibling"]);
    let links: Vec<(String, RelationshipType)> =
        analysis.links.iter().map(|l| (l.target_name.clone(), l.relationship_type)).collect();
    assert_eq!(
        links,
        [
            ("Base".to_owned(), RelationshipType::Inherits),
            ("helper".to_owned(), RelationshipType::Calls),
            ("getcwd".to_owned(), RelationshipType::Calls)
        ]
    );
}

#[test]
fn reanalysis_updates_in_place_and_removes_what_vanished() {
    let (_dir, store) = temp_store();
    let write = |text: &str| {
        let analysis = extract(&parsed(Language::Python, text), "pkg/mod.py");
        store
            .write(|tx| {
                let applied = apply(tx, &analysis, Anchor::File, None)?;
                let resolved = resolve(tx, &applied.pending)?;
                Ok((applied, resolved))
            })
            .unwrap()
    };
    let (first, resolved) = write(PY_V1);
    assert_eq!((first.counts.added, first.counts.removed), (6, 0));
    // contains ×5 (file→LIMIT, Base, Child, helper; Child→run), imports ×2; then inherits and
    // one call (getcwd is not in the graph).
    assert_eq!((first.counts.relationships, resolved), (7, 2));
    let (again, _) = write(PY_V1);
    assert_eq!((again.counts.added, again.counts.updated, again.counts.unchanged), (0, 0, 6));
    assert_eq!(again.symbol_ids, first.symbol_ids);
    let v2 = PY_V1.replace("def helper():\n    return os.getcwd()\n", "def other():\n    pass\n");
    let (third, _) = write(&v2);
    assert_eq!((third.counts.added, third.counts.removed), (1, 1));
    assert_eq!(third.symbol_ids[..3], first.symbol_ids[..3]);
    let run = store.component(&first.symbol_ids[3]).unwrap().unwrap();
    assert_eq!(run.version, 1, "Child.run's code did not change");
    // helper is gone, and with it the call edge.
    assert!(store.component(&first.symbol_ids[4]).unwrap().is_none());
    let calls = store.relationships_of(&run.id, &[RelationshipType::Calls]).unwrap();
    assert!(calls.is_empty());
    let (components, _) = store.counts().unwrap();
    assert_eq!(components, 6 + 2, "file, 5 symbols, 2 modules");
}

#[test]
fn calls_from_a_member_prefer_members_of_the_same_class() {
    let (_dir, store) = temp_store();
    let text = "class A:\n    def run(self):\n        self.helper()\n    def helper(self):\n        pass\n\n\
                class B:\n    def run(self):\n        self.helper()\n    def helper(self):\n        pass\n";
    let analysis = extract(&parsed(Language::Python, text), "two.py");
    store
        .write(|tx| {
            let applied = apply(tx, &analysis, Anchor::File, None)?;
            resolve(tx, &applied.pending)
        })
        .unwrap();
    for class in ["A", "B"] {
        let run = store.find_component(&format!("{class}.run")).unwrap();
        let calls = store.relationships_of(&run.id, &[RelationshipType::Calls]).unwrap();
        let targets: Vec<String> =
            calls.iter().map(|r| store.component(&r.target_id).unwrap().unwrap().qualified_name).collect();
        assert_eq!(targets, [format!("{class}.helper")]);
    }
}

const GO_TYPES: &str = "package shapes\n\n// Shape is a shape.\ntype Shape struct{ w int }\n";
const GO_METHODS: &str = "package shapes\n\nimport \"fmt\"\n\n// Area computes.\nfunc (s *Shape) Area() int { return s.w }\n\nfunc Print(s *Shape) { fmt.Println(s.Area()) }\n";

#[test]
fn go_methods_are_contained_by_their_receiver_type_across_files() {
    let (_dir, store) = temp_store();
    let types = extract(&parsed(Language::Go, GO_TYPES), "shapes/types.go");
    let methods = extract(&parsed(Language::Go, GO_METHODS), "shapes/methods.go");
    assert_eq!(methods.symbols[0].qualified_name, "Shape.Area");
    assert_eq!(methods.symbols[0].receiver.as_deref(), Some("Shape"));
    assert_eq!(methods.symbols[0].description, "Area computes.");
    assert_eq!(types.symbols[0].description, "Shape is a shape.");
    store
        .write(|tx| {
            let mut pending = apply(tx, &types, Anchor::File, None)?.pending;
            pending.extend(apply(tx, &methods, Anchor::File, None)?.pending);
            resolve(tx, &pending)
        })
        .unwrap();
    let shape = store.find_component("Shape").unwrap();
    let area = store.find_component("Shape.Area").unwrap();
    let print = store.find_component("Print").unwrap();
    let contains = store.relationships_of(&shape.id, &[RelationshipType::Contains]).unwrap();
    assert!(contains.iter().any(|r| r.source_id == shape.id && r.target_id == area.id));
    let calls = store.relationships_of(&print.id, &[RelationshipType::Calls]).unwrap();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].target_id, area.id);
    assert_eq!(calls[0].metadata, json!({"approximate": true, "source": "syntax"}));
    let fmt = store.find_component("fmt").unwrap();
    assert_eq!(fmt.component_type, ComponentType::Module);
}

#[test]
fn names_and_module_paths_normalise() {
    assert_eq!(base_type_name("*Server"), "Server");
    assert_eq!(base_type_name("Set[T]"), "Set");
    assert_eq!(base_type_name("fmt::Display"), "Display");
    assert_eq!(base_type_name("Vec<T>"), "Vec");
    assert_eq!(python_relative_module("json/decoder.py", ".scanner"), "json.scanner");
    assert_eq!(python_relative_module("a/b/c.py", ".."), "a");
    assert_eq!(rust_use_module("std::collections::HashMap"), "std::collections");
    assert_eq!(rust_use_module("crate::graph::{a, b}"), "crate::graph");
    assert_eq!(rust_use_module("serde::Serialize as S"), "serde");
    assert_eq!(rust_use_module("anyhow"), "anyhow");
}

#[test]
fn other_languages_yield_bases_and_implementations() {
    let ts = extract(
        &parsed(Language::TypeScript, "import { x } from './x';\nclass A extends B implements C { run() { go(); } }\n"),
        "a.ts",
    );
    let links: Vec<(&str, RelationshipType)> =
        ts.links.iter().map(|l| (l.target_name.as_str(), l.relationship_type)).collect();
    assert_eq!(
        links,
        [("B", RelationshipType::Inherits), ("C", RelationshipType::Implements), ("go", RelationshipType::Calls)]
    );
    assert_eq!(ts.imports, ["./x"]);
    let rust = extract(
        &parsed(Language::Rust, "use std::fmt;\nstruct S;\nimpl fmt::Display for S {\n    fn fmt(&self) {}\n}\n"),
        "s.rs",
    );
    let symbols: Vec<(&str, Option<&str>)> =
        rust.symbols.iter().map(|s| (s.qualified_name.as_str(), s.receiver.as_deref())).collect();
    assert_eq!(symbols, [("S", None), ("S.fmt", Some("S"))]);
    assert_eq!(rust.links[0].target_name, "Display");
    assert_eq!(rust.imports, ["std"]);
    let cpp = extract(&parsed(Language::Cpp, "#include <vector>\nclass D : public Base { void f(); };\n"), "d.cpp");
    assert_eq!(cpp.imports, ["vector"]);
    assert_eq!(cpp.links[0].target_name, "Base");
}

#[test]
fn token_counts_are_real_bpe_counts() {
    assert_eq!(budget::count_tokens(""), 0);
    assert_eq!(budget::count_tokens("hello world"), 2);
    let code = "fn main() { println!(\"hi\"); }";
    let n = budget::count_tokens(code);
    assert!(n > 5 && n < code.len(), "{n}");
}

#[test]
fn analysed_code_is_read_back_from_its_file_source_and_kept_calls_survive_unchanged_text() {
    let (_dir, store) = temp_store();
    let write = |text: &str, keep: Option<&str>| {
        let analysis = extract(&parsed(Language::Python, text), "pkg/mod.py");
        store.write(|tx| apply(tx, &analysis, Anchor::File, keep)).unwrap()
    };
    let first = write(PY_V1, Some("basedpyright"));
    assert!(!first.kept_calls, "nothing came from a server yet");
    let child = store.find_component("Child").unwrap();
    let run = store.find_component("Child.run").unwrap();
    // The class's code holds its method's; each is its own range of the one stored text.
    assert!(child.code_text.starts_with("class Child(Base):") && child.code_text.contains(&run.code_text));
    assert!(run.code_text.starts_with("def run(self):"));
    let (stored_code, sources): (i64, i64) = store
        .read(|conn| {
            let row = conn.query_one(
                "SELECT (SELECT sum(length(code_text)) FROM components), (SELECT count(*) FROM sources)",
                &[],
            )?;
            Ok((row.int(0)?, row.int(1)?))
        })
        .unwrap();
    assert_eq!((stored_code, sources), (0, 1));
    assert_eq!(store.search("getcwd", &[], 5).unwrap()[0].component.name, "helper", "code is still searched");

    store.write(|tx| super::source::set_calls_from(tx, "pkg/mod.py", "lsp:basedpyright")).unwrap();
    assert!(write(PY_V1, Some("basedpyright")).kept_calls);
    assert!(!write(PY_V1, Some("pyright")).kept_calls, "another server's calls are not kept");
    store.write(|tx| super::source::set_calls_from(tx, "pkg/mod.py", "lsp:basedpyright")).unwrap();
    let changed = PY_V1.replace("return os.getcwd()", "return os.getcwd() + '/'");
    let third = write(&changed, Some("basedpyright"));
    assert!(!third.kept_calls, "changed text is asked about again");
    assert_eq!(third.counts.updated, 1, "helper changed");
    assert!(store.find_component("helper").unwrap().code_text.ends_with("+ '/'"));
    assert_eq!(store.find_component("Child.run").unwrap().code_text, run.code_text);
}

#[test]
fn a_store_of_schema_version_1_migrates_without_losing_anything() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("graph.db");
    {
        let mut conn = rusqlite::Connection::open(&path).unwrap();
        schema::migrate_to(&mut conn, 1).unwrap();
        conn.execute_batch(
            "INSERT INTO components (id, name, qualified_name, type, status, description, code_text, file_path, dir, \
             start_line, end_line, language, created_at, last_modified, version, metadata, origin, stable_key, name_terms) \
             VALUES \
             ('11111111-1111-4111-8111-111111111111', 'parse', 'parse', 'function', 'partial', 'Parses tokens', \
              'def parse(): return lexer()', 'a.py', '', 1, 1, 'python', '2026-01-01T00:00:00.000Z', \
              '2026-01-02T00:00:00.000Z', 3, '{\"kind\":\"function\"}', 'analysis', 'a.py::parse', 'parse'), \
             ('22222222-2222-4222-8222-222222222222', 'lexer', 'lexer', 'function', 'planned', '', '', NULL, NULL, \
              NULL, NULL, NULL, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z', 1, '{}', 'manual', NULL, 'lexer'); \
             INSERT INTO relationships (id, source_id, target_id, type, metadata, origin, created_at) VALUES \
             ('33333333-3333-4333-8333-333333333333', '11111111-1111-4111-8111-111111111111', \
              '22222222-2222-4222-8222-222222222222', 'calls', '{\"approximate\":true,\"source\":\"syntax\"}', \
              'analysis', '2026-01-03T04:05:06.789Z'), \
             ('44444444-4444-4444-8444-444444444444', '22222222-2222-4222-8222-222222222222', \
              '11111111-1111-4111-8111-111111111111', 'depends_on', '{}', 'manual', '2026-01-04T00:00:00.000Z');",
        )
        .unwrap();
    }
    let store = GraphStore::open(&path).unwrap();
    let parse = store.component("11111111-1111-4111-8111-111111111111").unwrap().unwrap();
    assert_eq!(
        (parse.code_text.as_str(), parse.description.as_str(), parse.version, parse.status),
        ("def parse(): return lexer()", "Parses tokens", 3, Status::Partial)
    );
    assert_eq!(parse.last_modified, "2026-01-02T00:00:00.000Z");
    let relationships = store.relationships_of(&parse.id, &[]).unwrap();
    let seen: Vec<(&str, RelationshipType, &str, serde_json::Value, &str)> = relationships
        .iter()
        .map(|r| (r.id.as_str(), r.relationship_type, r.origin.as_str(), r.metadata.clone(), r.created_at.as_str()))
        .collect();
    assert_eq!(
        seen,
        [
            (
                "33333333-3333-4333-8333-333333333333",
                RelationshipType::Calls,
                "analysis",
                json!({"approximate": true, "source": "syntax"}),
                "2026-01-03T04:05:06.789Z"
            ),
            (
                "44444444-4444-4444-8444-444444444444",
                RelationshipType::DependsOn,
                "manual",
                json!({}),
                "2026-01-04T00:00:00.000Z"
            ),
        ]
    );
    // The search index was rebuilt from the old rows: name, description and code all match.
    for query in ["parse", "tokens", "lexer"] {
        let names: Vec<String> = store.search(query, &[], 5).unwrap().into_iter().map(|h| h.component.name).collect();
        assert!(names.contains(&"parse".to_owned()), "{query}: {names:?}");
    }
    // Adding the same relationship again finds the migrated one.
    let (id, created) = store
        .add_relationship(&parse.id, "22222222-2222-4222-8222-222222222222", RelationshipType::Calls, &json!({}))
        .unwrap();
    assert_eq!((id.as_str(), created), ("33333333-3333-4333-8333-333333333333", false));
    assert_eq!(store.counts().unwrap(), (2, 2));
}
