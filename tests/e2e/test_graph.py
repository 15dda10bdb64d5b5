"""End-to-end tests of the knowledge graph toolset: `filepuff graph index` on real packages (Go's
bufio and encoding/csv, CPython's json package, copied to a temporary root) and the thirteen MCP
tools driven by the official Python MCP SDK (which also validates every structuredContent against
the tool's outputSchema).

Expected values are computed here independently of filepuff: Go declarations with go/parser
(go_outline/main.go), Python declarations and imports with `ast`, Go imports by reading the
import blocks.

Every test runs twice, against both graph stores (the `store` fixture): the embedded SQLite file
and a PostgreSQL database (a fresh one per workspace root, named in the root's filepuff.toml as
`[graph] store`) on the session's throwaway server (conftest.py `pg`, pg_server.py).

Run: .venv/bin/pytest -q tests/e2e/test_graph.py
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import threading
from collections import Counter
from pathlib import Path

import pytest

from conftest import _close_session, _open_session, filepuff_binary
from oracles import python_outline
from pg_server import PgServer

TOOLS_BIN = Path(__file__).resolve().parents[2] / ".tools" / "bin"

GO_PACKAGES = ["bufio", "encoding/csv"]
PY_PACKAGE = "json"

GO_KIND_TO_TYPE = {
    "function": "function",
    "method": "method",
    "struct": "class",
    "type": "class",
    "interface": "interface",
    "constant": "variable",
    "variable": "variable",
}
PY_KIND_TO_TYPE = {"function": "function", "method": "method", "class": "class", "constant": "variable"}


def index(root: Path, *args: str) -> dict:
    proc = run_index(root, *args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def run_index(root: Path, *args: str, path: str | None = None) -> subprocess.CompletedProcess:
    """`graph index --json` with the project's language servers on PATH (unless `path` says)."""
    env = {**os.environ, "PATH": path if path is not None else f"{TOOLS_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run(
        [str(filepuff_binary()), "--root", str(root), "graph", "index", "--json", *args],
        capture_output=True, text=True, timeout=300, env=env,
    )


def require(program: str) -> str:
    found = shutil.which(program, path=f"{TOOLS_BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    if not found:
        pytest.skip(f"{program} is not installed (scripts/install-language-servers)")
    return found


# ---- stores -------------------------------------------------------------------------------------


class Store:
    """Which graph store a root uses, and raw SQL reads of it for checks the tools do not show."""

    def __init__(self, kind: str, server: PgServer | None):
        self.kind = kind
        self.server = server

    def attach(self, root: Path) -> Path:
        """Points `root` at this store (PostgreSQL: a fresh database in its filepuff.toml)."""
        if self.server is not None:
            url = self.server.new_database()
            (root / "filepuff.toml").write_text(f'[graph]\nstore = "{url}"\n')
            ROOT_DATABASE[root] = url.rsplit("/", 1)[1]
        ROOT_STORE[root] = self
        return root

    def rows(self, root: Path, sql: str, params: tuple = ()) -> list[tuple]:
        """Rows of `sql` (`?` placeholders; PostgreSQL values come back as text)."""
        if self.server is None:
            import sqlite3
            with sqlite3.connect(root / ".filepuff" / "graph.db") as conn:
                return conn.execute(sql, params).fetchall()
        for value in params:
            sql = sql.replace("?", "'" + str(value).replace("'", "''") + "'", 1)
        out = self.server.psql(sql, database=ROOT_DATABASE[root])
        return [tuple(line.split("\t")) for line in out.splitlines()]


ROOT_STORE: dict[Path, Store] = {}
ROOT_DATABASE: dict[Path, str] = {}


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def store(request) -> Store:
    if request.param == "postgres":
        return Store("postgres", request.getfixturevalue("pg"))
    return Store("sqlite", None)


# ---- corpora ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def go_root(goroot_src, tmp_path_factory, store) -> Path:
    root = store.attach(tmp_path_factory.mktemp("graph-go"))
    for package in GO_PACKAGES:
        shutil.copytree(goroot_src / package, root / package, ignore=shutil.ignore_patterns("testdata"))
    return root


@pytest.fixture(scope="module")
def py_root(py_stdlib, tmp_path_factory, store) -> Path:
    root = store.attach(tmp_path_factory.mktemp("graph-py"))
    shutil.copytree(py_stdlib / PY_PACKAGE, root / PY_PACKAGE, ignore=shutil.ignore_patterns("__pycache__"))
    return root


@pytest.fixture(scope="module")
def go_indexed(go_root) -> dict:
    return index(go_root)


@pytest.fixture(scope="module")
def py_indexed(py_root) -> dict:
    return index(py_root)


@pytest.fixture(scope="module")
def go_graph(go_root, go_indexed, tmp_path_factory):
    session = _open_session(go_root, tmp_path_factory.mktemp("mcp-graph-go"), toolsets="core,graph")
    yield session
    _close_session(session)


@pytest.fixture(scope="module")
def py_graph(py_root, py_indexed, tmp_path_factory):
    session = _open_session(py_root, tmp_path_factory.mktemp("mcp-graph-py"), toolsets="core,graph")
    yield session
    _close_session(session)


# ---- oracles ------------------------------------------------------------------------------------


def go_files(root: Path) -> list[Path]:
    return sorted(root.rglob("*.go"))


def go_expected_types(root: Path, go_outline_bin: Path) -> Counter:
    counts: Counter = Counter()
    for path in go_files(root):
        out = subprocess.run([str(go_outline_bin), str(path)], capture_output=True, text=True, check=True).stdout
        for symbol in json.loads(out):
            if symbol["name"] != "_":
                counts[GO_KIND_TO_TYPE[symbol["kind"]]] += 1
    counts["file"] = len(go_files(root))
    return counts


def go_imports(path: Path) -> set[str]:
    """Import paths of one Go file, read from its import declarations."""
    text = path.read_text()
    imports: set[str] = set()
    for block in re.findall(r"^import \((.*?)^\)", text, re.S | re.M):
        imports.update(re.findall(r'^\s*(?:[\w.]+\s+)?"([^"]+)"', block, re.M))
    imports.update(re.findall(r'^import\s+(?:[\w.]+\s+)?"([^"]+)"', text, re.M))
    return imports


def py_expected_types(root: Path) -> Counter:
    counts: Counter = Counter()

    def add(symbols):
        for symbol in symbols:
            counts[PY_KIND_TO_TYPE[symbol["kind"]]] += 1
            add(symbol.get("children", []))

    files = sorted(root.rglob("*.py"))
    for path in files:
        add(python_outline(path.read_text()))
    counts["file"] = len(files)
    return counts


def py_imports(path: Path, relative: str) -> set[str]:
    """Modules one Python file imports (anywhere in it), relative imports resolved to the package."""
    package = relative.split("/")[:-1]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                out.add(".".join(base + ([node.module] if node.module else [])))
            else:
                out.add(node.module)
    return out


# ---- helpers ------------------------------------------------------------------------------------


def type_counts(session) -> Counter:
    status = session.ok("get_project_status", {"grouping": "type"})["status"]
    return Counter({key: group["total_components"] for key, group in status["groups"].items()})


def component_in(session, file_path: str, name: str, kind: str) -> dict:
    status = session.ok(
        "get_project_status", {"filters": {"file_path": file_path, "type": kind, "name": name}}
    )["status"]
    [match] = [c for c in status["components"] if c["name"] == name]
    return match


def related(session, component_id: str) -> list[dict]:
    return session.ok("get_component", {"identifier": component_id, "include_related": True})["related"]


# ==== indexing real packages =====================================================================


def test_go_index_counts_match_go_parser(go_root, go_indexed, go_graph, go_outline_bin):
    expected = go_expected_types(go_root, go_outline_bin)
    assert go_indexed["files_analyzed"] == len(go_files(go_root))
    assert go_indexed["files_skipped"] == 0
    actual = type_counts(go_graph)
    modules = actual.pop("module")
    assert actual == expected
    all_imports = set().union(*(go_imports(p) for p in go_files(go_root)))
    assert modules == len(all_imports)
    assert go_indexed["total_components"] == sum(expected.values()) + modules


def test_go_method_is_contained_in_its_type_in_its_own_package(go_graph):
    for package, file in [("encoding/csv", "encoding/csv/reader.go"), ("bufio", "bufio/bufio.go")]:
        method = component_in(go_graph, file, "Reader.Read", "method")
        reader = component_in(go_graph, file, "Reader", "class")
        containers = [
            r["component"] for r in related(go_graph, method["id"])
            if r["relationship_type"] == "contains" and r["direction"] == "incoming"
        ]
        assert [c["id"] for c in containers] == [reader["id"]], package


def test_go_imports_match_the_import_blocks(go_root, go_graph):
    for path in go_files(go_root):
        relative = path.relative_to(go_root).as_posix()
        file = component_in(go_graph, relative, relative, "file")
        imported = {
            r["component"]["name"] for r in related(go_graph, file["id"])
            if r["relationship_type"] == "imports"
        }
        assert imported == go_imports(path), relative
    # The known one, spelled out.
    reader = component_in(go_graph, "encoding/csv/reader.go", "encoding/csv/reader.go", "file")
    assert "bufio" in {r["component"]["name"] for r in related(go_graph, reader["id"])}


def test_go_calls_come_from_gopls(go_indexed, go_graph):
    """gopls is on PATH (scripts/test): `graph index` (default --calls auto) takes every Go file's
    calls from it, none from syntax."""
    require("gopls")
    [go] = [c for c in go_indexed["calls"] if c["language"] == "go"]
    assert (go["server"], go["syntax_files"]) == ("gopls", 0) and go["lsp_files"] > 0
    assert go_indexed["total_calls_syntax"] == 0
    read = component_in(go_graph, "encoding/csv/reader.go", "Reader.Read", "method")
    calls = [r for r in related(go_graph, read["id"]) if r["relationship_type"] == "calls"
             and r["direction"] == "outgoing"]
    assert calls and all(r["metadata"] == {"source": "lsp", "server": "gopls"} for r in calls)
    assert "Reader.readRecord" in {r["component"]["name"] for r in calls}


def test_python_index_counts_and_imports_match_ast(py_root, py_indexed, py_graph):
    expected = py_expected_types(py_root)
    actual = type_counts(py_graph)
    modules = actual.pop("module")
    assert actual == expected
    all_imports: set[str] = set()
    for path in sorted(py_root.rglob("*.py")):
        relative = path.relative_to(py_root).as_posix()
        want = py_imports(path, relative)
        all_imports |= want
        file = component_in(py_graph, relative, relative, "file")
        got = {r["component"]["name"] for r in related(py_graph, file["id"]) if r["relationship_type"] == "imports"}
        assert got == want, relative
    assert modules == len(all_imports)
    decoder = component_in(py_graph, "json/decoder.py", "json/decoder.py", "file")
    assert "re" in {r["component"]["name"] for r in related(py_graph, decoder["id"])}


def test_python_method_is_contained_in_its_class_and_inherits(py_graph):
    decode = component_in(py_graph, "json/decoder.py", "JSONDecoder.decode", "method")
    decoder = component_in(py_graph, "json/decoder.py", "JSONDecoder", "class")
    containers = [r["component"]["id"] for r in related(py_graph, decode["id"])
                  if r["relationship_type"] == "contains" and r["direction"] == "incoming"]
    assert containers == [decoder["id"]]
    error = component_in(py_graph, "json/decoder.py", "JSONDecodeError", "class")
    bases = [r["component"]["name"] for r in related(py_graph, error["id"]) if r["relationship_type"] == "inherits"]
    # `class JSONDecodeError(ValueError)`: ValueError is a builtin, not in the graph.
    assert bases == []
    got = py_graph.ok("get_component", {"identifier": decode["id"]})["component"]
    assert got["code_text"].lstrip().startswith("def decode(self, s")
    assert got["description"].startswith("Return the Python representation")


def test_reindexing_is_stable_and_updates_in_place(py_root, py_indexed, py_graph):
    before = py_graph.ok("search_code", {"query": "raw_decode", "component_types": ["method"]})["matches"][0]
    again = index(py_root)
    assert again["components_added"] == 0 and again["components_removed"] == 0
    assert again["total_components"] == py_indexed["total_components"]
    scanner = py_root / "json" / "scanner.py"
    original = scanner.read_text()
    try:
        scanner.write_text(original + "\n\ndef added_later():\n    return 1\n")
        changed = index(py_root)
        assert (changed["components_added"], changed["components_removed"]) == (1, 0)
        assert changed["total_components"] == py_indexed["total_components"] + 1
    finally:
        scanner.write_text(original)
        restored = index(py_root)
        assert restored["components_removed"] == 1
    after = py_graph.ok("search_code", {"query": "raw_decode", "component_types": ["method"]})["matches"][0]
    assert after["id"] == before["id"]


def test_search_and_context_on_a_real_package(go_graph):
    matches = go_graph.ok("search_code", {"query": "ReadRune", "component_types": ["method"], "limit": 3})["matches"]
    assert matches[0]["name"] == "Reader.ReadRune"
    assert matches[0]["file_path"] == "bufio/bufio.go"
    for max_tokens in (150, 600, 2500):
        out = go_graph.ok("prepare_context", {"task_description": "parse quoted CSV fields", "max_tokens": max_tokens})
        assert out["token_count"] <= max_tokens
        assert out["tokenizer"] == "cl100k_base"
        assert out["primary_count"] + out["related_count"] + out["summary_count"] >= 1
    cont = go_graph.ok("continue_implementation", {"component_id": matches[0]["id"], "max_tokens": 800})
    assert cont["token_count"] <= 800
    assert cont["context"]["component"]["name"] == "Reader.ReadRune"


# ==== the tools over MCP, persistence, concurrency =================================================


@pytest.fixture()
def empty_root(tmp_path, store) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return store.attach(root)


def log_dir(tmp_path: Path, name: str) -> Path:
    path = tmp_path / "logs" / name
    path.mkdir(parents=True)
    return path


def test_every_tool_over_mcp_and_persistence_across_restart(empty_root, tmp_path, store):
    first = _open_session(empty_root, log_dir(tmp_path, "first"), toolsets="core,graph")
    try:
        a = first.ok("add_component", {"code_text": "", "component_type": "function", "name": "parse",
                                       "description": "Parses input"})["component_id"]
        b = first.ok("add_component", {"code_text": "", "component_type": "function", "name": "emit",
                                       "status": "implemented"})["component_id"]
        c = first.ok("add_component", {"code_text": "", "component_type": "class", "name": "Pipeline"})["component_id"]
        assert first.ok("add_relationship", {"source_id": a, "target_id": b,
                                             "relationship_type": "depends_on"})["created"] is True
        first.ok("add_relationship", {"source_id": c, "target_id": a, "relationship_type": "depends_on"})
        first.ok("add_relationship", {"source_id": a, "target_id": c, "relationship_type": "calls"})
        assert first.ok("update_component", {"component_id": a, "code_text": "def parse(): ..."})["version"] == 2
        assert first.ok("update_status", {"component_id": c, "new_status": "partial", "notes": "half"})["old_status"] == "planned"
        assert [m["id"] for m in first.ok("search_code", {"query": "input"})["matches"]] == [a]
        assert first.ok("find_related_components", {"component_id": b, "depth": 2})["count"] == 2
        status = first.ok("get_project_status", {})["status"]
        assert (status["total_components"], status["implementation_percentage"]) == (3, 50.0)
        tasks = first.ok("find_next_tasks", {"priority_type": "dependencies"})["tasks"]
        assert [t["name"] for t in tasks] == ["Pipeline", "parse"]
        plan = first.ok("get_implementation_plan", {})["plan"]
        assert plan["has_cycles"] is True
        assert sorted(plan["cycles"][0]["names"]) == ["Pipeline", "parse"]
        ctx = first.ok("prepare_context", {"task_description": "parse", "relevant_components": [a], "max_tokens": 500})
        assert ctx["primary_count"] == 1 and ctx["token_count"] <= 500
        assert first.ok("continue_implementation", {"component_id": a})["context"]["component"]["id"] == a
        analyzed = first.ok("analyze_code", {"code_text": "def helper():\n    return 1\n", "file_path": "lib/helper.py"})
        assert [x["name"] for x in analyzed["components"]] == ["helper"]
        err, _ = first.error("get_component", {"identifier": "missing"})
        assert (err["code"], err["name"]) == (7003, "GRAPH_COMPONENT_NOT_FOUND")
        err, _ = first.error("update_status", {"component_id": a, "new_status": "done"})
        assert err["code"] == 7005
    finally:
        _close_session(first)
    # The graph is where the store says: nothing local on PostgreSQL.
    assert (empty_root / ".filepuff" / "graph.db").is_file() == (store.kind == "sqlite")

    second = _open_session(empty_root, log_dir(tmp_path, "second"), toolsets="core,graph")
    try:
        got = second.ok("get_component", {"identifier": a, "include_related": True})
        assert (got["component"]["name"], got["component"]["version"], got["component"]["code_text"]) == (
            "parse", 2, "def parse(): ...")
        assert {r["relationship_type"] for r in got["related"]} == {"depends_on", "calls"}
        history = second.ok("get_component", {"identifier": c})["status_history"]
        assert [(h.get("old_status"), h["new_status"], h["notes"]) for h in history] == [
            (None, "planned", "created"), ("planned", "partial", "half")]
        assert second.ok("get_project_status", {})["status"]["total_components"] == 5  # + file and helper
    finally:
        _close_session(second)


def test_two_processes_writing_concurrently_lose_nothing(empty_root, tmp_path):
    sessions = [_open_session(empty_root, log_dir(tmp_path, f"s{n}"), toolsets="core,graph") for n in range(2)]
    try:
        per_session = 40
        results: dict[int, list] = {}

        def write(n: int):
            calls = [("add_component", {"code_text": f"x = {i}", "component_type": "variable",
                                        "name": f"v{n}_{i}"}) for i in range(per_session)]
            results[n] = sessions[n].call_concurrently(calls)

        threads = [threading.Thread(target=write, args=(n,)) for n in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for n in range(2):
            assert not any(r.is_error for r in results[n]), [r.content for r in results[n] if r.is_error]
        for session in sessions:
            status = session.ok("get_project_status", {"filters": {"type": "variable"}})["status"]
            assert status["total_components"] == 2 * per_session
        names = {c["name"] for c in sessions[0].ok("get_project_status", {})["status"]["components"]}
        assert names == {f"v{n}_{i}" for n in range(2) for i in range(per_session)}
    finally:
        for session in sessions:
            _close_session(session)


def test_four_processes_fifty_mutations_each_lose_no_update_and_duplicate_nothing(empty_root, tmp_path):
    """4 filepuff processes x 50 concurrent mutations on one graph: status changes of one shared
    component (read-modify-write of its version), the same relationships added by everyone, and
    new components. Every change is counted once; nothing is duplicated."""
    processes, per_process = 4, 50
    sessions = [_open_session(empty_root, log_dir(tmp_path, f"p{n}"), toolsets="core,graph") for n in range(processes)]
    try:
        shared = sessions[0].ok("add_component", {"code_text": "", "component_type": "class", "name": "Shared"})["component_id"]
        targets = [sessions[0].ok("add_component", {"code_text": "", "component_type": "function",
                                                    "name": f"t{k}"})["component_id"] for k in range(5)]
        results: dict[int, list] = {}

        def mutate(n: int):
            calls = []
            for i in range(per_process):
                if i % 2 == 0:
                    status = ["planned", "partial", "implemented"][i % 3]
                    calls.append(("update_status", {"component_id": shared, "new_status": status, "notes": f"p{n} #{i}"}))
                elif i % 4 == 1:
                    calls.append(("add_relationship", {"source_id": shared, "target_id": targets[i % 5],
                                                       "relationship_type": "depends_on"}))
                else:
                    calls.append(("add_component", {"code_text": "", "component_type": "variable", "name": f"v{n}_{i}"}))
            results[n] = sessions[n].call_concurrently(calls)

        threads = [threading.Thread(target=mutate, args=(n,)) for n in range(processes)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for n in range(processes):
            assert not any(r.is_error for r in results[n]), [r.content for r in results[n] if r.is_error]
        status_changes = processes * len(range(0, per_process, 2))
        got = sessions[1].ok("get_component", {"identifier": shared, "include_related": True})
        assert got["component"]["version"] == 1 + status_changes, "a status change was lost"
        assert len(got["status_history"]) == 1 + status_changes
        notes = [h["notes"] for h in got["status_history"][1:]]
        assert len(set(notes)) == status_changes
        outgoing = [r for r in got["related"] if r["direction"] == "outgoing"]
        assert sorted(r["component"]["name"] for r in outgoing) == [f"t{k}" for k in range(5)], "a duplicate relationship"
        variables = sessions[2].ok("get_project_status", {"filters": {"type": "variable"}})["status"]["total_components"]
        assert variables == processes * sum(1 for i in range(per_process) if i % 2 == 1 and i % 4 != 1)
    finally:
        for session in sessions:
            _close_session(session)


def test_a_status_change_based_on_a_stale_version_is_refused(empty_root, tmp_path):
    """Two agents read version 1; the first one's change wins, the second one's is refused with
    7008 and writes nothing (like expected_hash for edits)."""
    session = _open_session(empty_root, log_dir(tmp_path, "stale"), toolsets="core,graph")
    try:
        cid = session.ok("add_component", {"code_text": "", "component_type": "function", "name": "f"})["component_id"]
        version = session.ok("get_component", {"identifier": cid})["component"]["version"]
        session.ok("update_status", {"component_id": cid, "new_status": "partial", "expected_version": version})
        err, _ = session.error("update_status", {"component_id": cid, "new_status": "implemented",
                                                 "expected_version": version})
        assert (err["code"], err["name"]) == (7008, "GRAPH_VERSION_CONFLICT")
        assert (err["context"]["expected_version"], err["context"]["current_version"]) == (version, version + 1)
        err, _ = session.error("update_component", {"component_id": cid, "description": "x", "expected_version": version})
        assert err["code"] == 7008
        got = session.ok("get_component", {"identifier": cid})
        assert (got["component"]["status"], got["component"]["version"], len(got["status_history"])) == ("partial", 2, 2)
    finally:
        _close_session(session)


def test_two_index_runs_at_once_make_one_graph(py_stdlib, tmp_path, store):
    root = tmp_path / "project"
    shutil.copytree(py_stdlib / PY_PACKAGE, root / PY_PACKAGE, ignore=shutil.ignore_patterns("__pycache__"))
    store.attach(root)
    env = {**os.environ, "PATH": f"{TOOLS_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    command = [str(filepuff_binary()), "--root", str(root), "graph", "index", "--json", "--calls", "syntax"]
    runs = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
            for _ in range(2)]
    outputs = [run.communicate(timeout=300) for run in runs]
    for run, (out, err) in zip(runs, outputs):
        assert run.returncode == 0, err
    alone = index(root, "--calls", "syntax")
    assert (alone["components_added"], alone["components_removed"]) == (0, 0), "the concurrent runs left work undone"
    for out, _ in outputs:
        report = json.loads(out)
        assert report["total_components"] <= alone["total_components"]
    [(components,)] = graph_rows(root, "SELECT count(*) FROM components")
    [(unique,)] = graph_rows(root, "SELECT count(DISTINCT stable_key) FROM components")
    assert int(components) == int(unique) == alone["total_components"], "a duplicate component"


def test_cli_graph_subcommands(py_root, py_indexed):
    def cli(*args):
        return subprocess.run([str(filepuff_binary()), "--root", str(py_root), "graph", *args],
                              capture_output=True, text=True, timeout=60)

    found = cli("search", "raw_decode", "-t", "method", "--json")
    assert found.returncode == 0, found.stderr
    [first, *_] = json.loads(found.stdout)["matches"]
    assert (first["name"], first["file_path"]) == ("JSONDecoder.raw_decode", "json/decoder.py")
    assert cli("search", "zzzqqq").returncode == 1
    shown = cli("show", first["id"], "--json")
    assert json.loads(shown.stdout)["component"]["qualified_name"] == "JSONDecoder.raw_decode"
    missing = cli("show", "no-such-component", "--json")
    assert missing.returncode == 2
    assert json.loads(missing.stderr)["code"] == 7003
    status = json.loads(cli("status", "--grouping", "status", "--json").stdout)["status"]
    assert status["total_components"] == py_indexed["total_components"]
    assert "0 component(s) in 0 step(s)" in cli("plan").stdout
    outside = subprocess.run([str(filepuff_binary()), "--root", str(py_root), "graph", "index", "../elsewhere"],
                             capture_output=True, text=True, timeout=60)
    assert outside.returncode == 2 and "1001" in outside.stderr


# ==== calls from language servers ==================================================================
#
# A module of two packages in two directories. `run` (cmd/app) calls util.Shout and the method
# util.Greeter.Greet; cmd/app also declares a Shout of its own that nobody calls, so a name-based
# match in the caller's directory (what syntax can do) points at the wrong function and only the
# server's answer points at the right one.

GO_MODULE = {
    "go.mod": "module example.com/app\n\ngo 1.22\n",
    "util/text.go": """package util

import "strings"

// Shout upper-cases s.
func Shout(s string) string {
	return strings.ToUpper(s) + suffix()
}

func suffix() string { return "!" }

// Greeter greets.
type Greeter struct{ Name string }

// Greet says hello.
func (g *Greeter) Greet() string {
	return Shout("hello " + g.Name)
}
""",
    "cmd/app/main.go": """package main

import (
	"fmt"

	"example.com/app/util"
)

func main() {
	fmt.Println(run("x"))
}

func run(name string) string {
	g := &util.Greeter{Name: name}
	return g.Greet() + util.Shout(name)
}
""",
    "cmd/app/local.go": """package main

// Shout is a decoy with util.Shout's name.
func Shout(s string) string { return s }
""",
}

PY_PROJECT = {
    "pyproject.toml": "[project]\nname = 'app'\nversion = '0'\n",
    "lib/__init__.py": "",
    "lib/text.py": "def shout(s):\n    return s.upper() + bang()\n\n\ndef bang():\n    return '!'\n",
    "app/__init__.py": "",
    "app/main.py": "from lib.text import shout\n\n\ndef run(name):\n    return shout(name)\n",
    "app/local.py": "def shout(s):\n    return s\n",
}

LSP = {"source": "lsp"}
SYNTAX = {"approximate": True, "source": "syntax"}


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def graph_rows(root: Path, sql: str, params: tuple = ()) -> list[tuple]:
    return ROOT_STORE[root].rows(root, sql, params)


def calls_of(root: Path, file_path: str, qualified_name: str) -> list[tuple[str, str, dict]]:
    """(callee file, callee qualified name, metadata) of the component's outgoing calls, read
    with the CLI (`graph show`), sorted."""
    status = subprocess.run([str(filepuff_binary()), "--root", str(root), "graph", "show", "--json",
                             component_id(root, file_path, qualified_name)], capture_output=True, text=True, check=True)
    related = json.loads(status.stdout)["related"]
    return sorted(
        (r["component"]["file_path"], r["component"]["name"], r["metadata"]) for r in related
        if r["relationship_type"] == "calls" and r["direction"] == "outgoing"
    )


def component_id(root: Path, file_path: str, qualified_name: str) -> str:
    [(found,)] = graph_rows(root, "SELECT id FROM components WHERE file_path = ? AND qualified_name = ?",
                            (file_path, qualified_name))
    return found


def calls_rows(root: Path) -> list[tuple]:
    """Every calls relationship as (uid, source seq, target seq, metadata)."""
    uid = "hex(uid)" if ROOT_STORE[root].kind == "sqlite" else "upper(encode(uid, 'hex'))"
    return sorted(graph_rows(root, f"SELECT {uid}, source, target, metadata FROM relationships WHERE type = 1"))


def language_calls(report: dict, language: str) -> dict:
    [found] = [c for c in report["calls"] if c["language"] == language]
    return found


def test_go_calls_across_packages_come_from_gopls_and_reindexing_keeps_them(tmp_path, store):
    require("gopls")
    root = store.attach(write_tree(tmp_path / "mod", GO_MODULE))
    first = index(root)
    go = language_calls(first, "go")
    assert (go["server"], go["lsp_files"], go["syntax_files"]) == ("gopls", 3, 0)
    gopls = {**LSP, "server": "gopls"}
    assert calls_of(root, "cmd/app/main.go", "run") == [
        ("util/text.go", "Greeter.Greet", gopls), ("util/text.go", "Shout", gopls)]
    assert calls_of(root, "util/text.go", "Greeter.Greet") == [("util/text.go", "Shout", gopls)]
    assert calls_of(root, "util/text.go", "Shout") == [("util/text.go", "suffix", gopls)]
    assert calls_of(root, "cmd/app/main.go", "main") == [("cmd/app/main.go", "run", gopls)]
    assert (first["total_calls_lsp"], first["total_calls_syntax"]) == (5, 0)

    # Unchanged: nothing added, the same relationships (same ids), none duplicated.
    before = calls_rows(root)
    again = index(root)
    assert (again["components_added"], again["components_removed"]) == (0, 0)
    assert (again["total_components"], again["total_relationships"]) == (first["total_components"], first["total_relationships"])
    assert calls_rows(root) == before

    # One file changed: only its calls are asked again; the others' stay as they were.
    main = root / "cmd/app/main.go"
    main.write_text(main.read_text() + "\nfunc twice(s string) string { return util.Shout(util.Shout(s)) }\n")
    changed = index(root)
    assert (changed["components_added"], changed["components_removed"]) == (1, 0)
    assert calls_of(root, "cmd/app/main.go", "twice") == [("util/text.go", "Shout", gopls)]
    assert changed["total_calls_lsp"] == 6 and changed["total_calls_syntax"] == 0
    rows = calls_rows(root)
    assert len(rows) == len({(r[1], r[2]) for r in rows}) == 6
    util = {seq for (seq,) in graph_rows(root, "SELECT seq FROM components WHERE file_path = 'util/text.go'")}
    kept = [r for r in before if r[1] in util]
    assert len(kept) == 2 and set(kept) <= set(rows), "the unchanged file's calls were kept, not recreated"


def test_syntax_calls_are_approximate_and_replaced_by_the_servers(tmp_path, store):
    require("gopls")
    root = store.attach(write_tree(tmp_path / "mod", GO_MODULE))
    syntax = index(root, "--calls", "syntax")
    go = language_calls(syntax, "go")
    assert (go.get("server"), go["lsp_files"], go["syntax_files"], go["note"]) == (None, 0, 3, "--calls syntax")
    # By name, in the caller's directory: the decoy, and not the method on another package's type.
    assert calls_of(root, "cmd/app/main.go", "run") == [("cmd/app/local.go", "Shout", SYNTAX)]
    assert calls_of(root, "util/text.go", "Greeter.Greet") == [("util/text.go", "Shout", SYNTAX)]
    assert (syntax["total_calls_lsp"], syntax["total_calls_syntax"]) == (0, 4)
    # The same store indexed again with the server: every syntax call is replaced.
    lsp = index(root, "--calls", "lsp")
    assert (lsp["total_calls_lsp"], lsp["total_calls_syntax"]) == (5, 0)
    assert calls_of(root, "cmd/app/main.go", "run")[1][:2] == ("util/text.go", "Shout")
    assert lsp["total_components"] == syntax["total_components"]


def test_calls_lsp_without_the_server_is_an_error_with_syntax_calls_written(tmp_path, store):
    root = store.attach(write_tree(tmp_path / "mod", GO_MODULE))
    proc = run_index(root, "--calls", "lsp", path="/usr/bin:/bin")
    assert proc.returncode == 2, proc.stderr
    assert "--calls lsp" in proc.stderr and "gopls" in proc.stderr
    report = json.loads(proc.stdout)
    go = language_calls(report, "go")
    assert go["failed"] is True and go["syntax_files"] == 3 and "gopls" in go["note"]
    assert report["total_calls_syntax"] == 4
    auto = run_index(root, path="/usr/bin:/bin")
    assert auto.returncode == 0, auto.stderr
    assert "failed" not in language_calls(json.loads(auto.stdout), "go")


def test_python_calls_across_packages_come_from_basedpyright(tmp_path, store):
    require("basedpyright-langserver")
    root = store.attach(write_tree(tmp_path / "py", PY_PROJECT))
    report = index(root)
    python = language_calls(report, "python")
    assert (python["server"], python["lsp_files"], python["syntax_files"]) == ("basedpyright", 3, 0), python
    server = {**LSP, "server": "basedpyright"}
    assert calls_of(root, "app/main.py", "run") == [("lib/text.py", "shout", server)]
    assert calls_of(root, "lib/text.py", "shout") == [("lib/text.py", "bang", server)]
    assert report["total_calls_syntax"] == 0


def test_analyze_code_takes_calls_from_the_server_when_the_code_is_the_files(tmp_path, store):
    require("gopls")
    root = store.attach(write_tree(tmp_path / "mod", GO_MODULE))
    index(root, "--calls", "syntax")
    main = (root / "cmd/app/main.go").read_text()
    env_path = f"{TOOLS_BIN}{os.pathsep}{os.environ.get('PATH', '')}"
    old_path = os.environ["PATH"]
    os.environ["PATH"] = env_path  # the MCP server inherits it
    try:
        session = _open_session(root, log_dir(tmp_path, "analyze"), toolsets="core,graph")
    finally:
        os.environ["PATH"] = old_path
    try:
        out = session.ok("analyze_code", {"code_text": main, "file_path": "cmd/app/main.go"})
        assert out["calls"] == {"source": "lsp", "server": "gopls"}
        gopls = {**LSP, "server": "gopls"}
        assert calls_of(root, "cmd/app/main.go", "run") == [
            ("util/text.go", "Greeter.Greet", gopls), ("util/text.go", "Shout", gopls)]
        edited = main.replace("util.Shout(name)", "Shout(name)")
        out = session.ok("analyze_code", {"code_text": edited, "file_path": "cmd/app/main.go"})
        assert out["calls"]["source"] == "syntax" and "current text" in out["calls"]["note"]
        assert calls_of(root, "cmd/app/main.go", "run") == [("cmd/app/local.go", "Shout", SYNTAX)]
    finally:
        _close_session(session)


# ---- migration and secrets (SQLite -> PostgreSQL; not parametrized) ------------------------------

MIGRATE_QUERIES = ["decode json", "scanner", "circular reference", "raw_decode", "whitespace", "iterencode",
                   "command line tool", "separators", "array", "float"]


def test_migrate_copies_a_real_graph_to_postgres_with_equal_counts_and_search(py_stdlib, tmp_path, pg):
    """CPython's json package indexed into SQLite, plus manual components with a status history
    and a manual relationship, copied with `graph migrate --to`: every table's count is equal,
    ids, times, metadata and history come over unchanged, search_code's top results agree, and
    re-indexing the copy changes nothing. The URL's password appears in no output."""
    lite = tmp_path / "lite"
    shutil.copytree(py_stdlib / PY_PACKAGE, lite / PY_PACKAGE, ignore=shutil.ignore_patterns("__pycache__"))
    indexed = index(lite, "--calls", "syntax")
    session = _open_session(lite, log_dir(tmp_path, "lite"), toolsets="core,graph")
    try:
        planned = session.ok("add_component", {"code_text": "def plan(): ...", "component_type": "function",
                                               "name": "plan_it", "description": "a plan"})["component_id"]
        session.ok("update_status", {"component_id": planned, "new_status": "partial", "notes": "started"})
        loads = session.ok("get_component", {"identifier": "loads"})["component"]["id"]
        session.ok("add_relationship", {"source_id": planned, "target_id": loads, "relationship_type": "depends_on",
                                        "metadata": {"why": "parses"}})
        before = {cid: session.ok("get_component", {"identifier": cid, "include_related": True}) for cid in (planned, loads)}
    finally:
        _close_session(session)

    url = pg.new_database("migrate")
    outputs = []
    migrated = subprocess.run([str(filepuff_binary()), "--root", str(lite), "graph", "migrate", "--json", "--to", url],
                              capture_output=True, text=True, timeout=300)
    outputs += [migrated.stdout, migrated.stderr]
    assert migrated.returncode == 0, migrated.stderr
    report = json.loads(migrated.stdout)
    assert report["verified"] is True and "***" in report["to"]
    counts = {t["table"]: (t["source"], t["target"]) for t in report["tables"]}
    assert counts["components"] == (indexed["total_components"] + 1,) * 2
    assert counts["relationships"] == (indexed["total_relationships"] + 1,) * 2
    assert counts["status_history"] == (2, 2) and counts["sources"][0] == counts["sources"][1] > 0
    again = subprocess.run([str(filepuff_binary()), "--root", str(lite), "graph", "migrate", "--to", url],
                           capture_output=True, text=True, timeout=300)
    outputs += [again.stdout, again.stderr]
    assert again.returncode == 2 and "not empty" in again.stderr, "a second copy into the same database is refused"

    # The copy, used as a team would: another checkout pointing at the database.
    shared = tmp_path / "shared"
    shutil.copytree(py_stdlib / PY_PACKAGE, shared / PY_PACKAGE, ignore=shutil.ignore_patterns("__pycache__"))
    (shared / "filepuff.toml").write_text(f'[graph]\nstore = "{url}"\n')
    session = _open_session(shared, log_dir(tmp_path, "shared"), toolsets="core,graph")
    try:
        for cid, old in before.items():
            new = session.ok("get_component", {"identifier": cid, "include_related": True})
            assert new["component"] == old["component"] and new["status_history"] == old["status_history"]
            assert sorted(map(json.dumps, new["related"])) == sorted(map(json.dumps, old["related"]))
        doctor = subprocess.run([str(filepuff_binary()), "--root", str(shared), "doctor"], capture_output=True,
                                text=True, timeout=120)
        outputs += [doctor.stdout, doctor.stderr]
        assert "graph store: postgres" in doctor.stdout and "reachable" in doctor.stdout
        outputs.append(session.server_stderr())
    finally:
        _close_session(session)
    lite_session = _open_session(lite, log_dir(tmp_path, "lite2"), toolsets="core,graph")
    shared_session = _open_session(shared, log_dir(tmp_path, "shared2"), toolsets="core,graph")
    try:
        overlaps = []
        for query in MIGRATE_QUERIES:
            a = [m["id"] for m in lite_session.ok("search_code", {"query": query, "limit": 10})["matches"]]
            b = [m["id"] for m in shared_session.ok("search_code", {"query": query, "limit": 10})["matches"]]
            assert a[0] == b[0], f"{query!r}: first hit {a[0]} on SQLite, {b[0]} on PostgreSQL"
            overlaps.append(len(set(a) & set(b)) / max(len(a), len(b)))
        # Two ranking functions (BM25 and idf x ts_rank_cd): the same first hits, most of the top 10.
        assert sum(overlaps) / len(overlaps) >= 0.8, overlaps
    finally:
        _close_session(lite_session)
        _close_session(shared_session)
    reindexed = subprocess.run([str(filepuff_binary()), "--root", str(shared), "graph", "index", "--json",
                                "--calls", "syntax"], capture_output=True, text=True, timeout=300)
    outputs += [reindexed.stdout, reindexed.stderr]
    assert reindexed.returncode == 0, reindexed.stderr
    assert (json.loads(reindexed.stdout)["components_added"], json.loads(reindexed.stdout)["components_removed"]) == (0, 0)
    for text in outputs:
        assert pg.password not in text


def test_the_password_never_appears_in_errors_or_doctor(tmp_path, pg):
    root = tmp_path / "root"
    root.mkdir()
    wrong = pg.url("postgres").replace(pg.password, "Wr0ngSecret-" + pg.password[-6:])
    secret = "Wr0ngSecret-" + pg.password[-6:]
    outputs = []
    for url in (wrong, f"postgres://postgres:{secret}@127.0.0.1:1/none"):
        env = {**os.environ, "FILEPUFF_GRAPH_URL": url, "RUST_LOG": "debug"}
        for args in (["graph", "status", "--json"], ["graph", "search", "x"], ["doctor"]):
            done = subprocess.run([str(filepuff_binary()), "--root", str(root), *args], capture_output=True, text=True,
                                  timeout=120, env=env)
            outputs.append((args, url, done.stdout + done.stderr))
            if args == ["doctor"]:
                assert done.returncode == 2, ("an unreachable graph store is an error", done.stdout)
    for args, url, text in outputs:
        assert secret not in text, (args, text)
    doctor = [text for args, _, text in outputs if args == ["doctor"]]
    assert "password authentication failed" in doctor[0] and "***" in doctor[0]
    assert "Connection refused" in doctor[1]
    status = [text for args, _, text in outputs if args[:2] == ["graph", "status"]]
    assert '"code": 7001' in status[0]


def test_sslmode_require_connects_over_tls_and_verifies_the_certificate(tmp_path):
    """A server that accepts only TLS: `sslmode=require` with the CA as `sslrootcert` connects
    (and `graph index` works over it); without the CA the certificate is not trusted and the
    connection is refused; without sslmode the server refuses the plain connection."""
    from pg_server import bin_dir
    if bin_dir() is None:
        pytest.skip("PostgreSQL is not installed (initdb not found; scripts/setup-test-env installs it)")
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed (the test CA)")
    server = PgServer(tmp_path / "tls-server", tls=True).start()
    try:
        database = server.new_database("tls")
        root = tmp_path / "root"
        (root / "pkg").mkdir(parents=True)
        (root / "pkg" / "a.py").write_text("def f():\n    return g()\n\ndef g():\n    return 1\n")

        def graph_index(url: str) -> subprocess.CompletedProcess:
            env = {**os.environ, "FILEPUFF_GRAPH_URL": url}
            return subprocess.run([str(filepuff_binary()), "--root", str(root), "graph", "index", "--json", "--calls",
                                   "syntax"], capture_output=True, text=True, timeout=120, env=env)

        trusted = graph_index(f"{database}?sslmode=require&sslrootcert={server.ca_cert}")
        assert trusted.returncode == 0, trusted.stderr
        assert json.loads(trusted.stdout)["total_components"] == 3
        assert server.psql("SELECT count(*) FROM components", database=database.rsplit("/", 1)[1]).strip() == "3"
        untrusted = graph_index(f"{database}?sslmode=require")
        assert untrusted.returncode == 2 and "7001" in untrusted.stderr
        assert "certificate" in untrusted.stderr.lower(), untrusted.stderr
        plain = graph_index(database)
        assert plain.returncode == 2 and "no pg_hba.conf entry" in plain.stderr, plain.stderr
        for done in (trusted, untrusted, plain):
            assert server.password not in done.stdout + done.stderr
    finally:
        server.stop()


def test_a_server_gone_during_a_session_is_unavailable_not_busy(tmp_path):
    """PostgreSQL stopped while `filepuff mcp` runs: the graph tools say the store is unreachable
    (7001, the server's reason, no password) — a fresh user was told 7006 "locked by another
    writer" with a hint to retry. `graph migrate` refuses a workspace with no SQLite graph (it
    used to create an empty one and report success) and a target that is not empty (7007 with
    the count and its own remediation)."""
    from pg_server import bin_dir
    if bin_dir() is None:
        pytest.skip("PostgreSQL is not installed (initdb not found; scripts/setup-test-env installs it)")
    server = PgServer(tmp_path / "server").start()
    try:
        url = server.new_database("gone")
        root = tmp_path / "root"
        (root / "pkg").mkdir(parents=True)
        (root / "pkg" / "a.py").write_text("def f():\n    return g()\n\ndef g():\n    return 1\n")
        (root / "filepuff.toml").write_text(f'[graph]\nstore = "{url}"\n')

        # Nothing to migrate yet: refused, and no SQLite graph made on the way.
        nothing = subprocess.run([str(filepuff_binary()), "--root", str(root), "graph", "migrate", "--json", "--to", url],
                                 capture_output=True, text=True, timeout=120)
        assert nothing.returncode == 2 and '"code": 7001' in nothing.stderr, nothing.stderr
        assert "no SQLite graph" in nothing.stderr and not (root / ".filepuff" / "graph.db").exists()

        session = _open_session(root, log_dir(tmp_path, "gone"), toolsets="core,graph")
        try:
            added = session.ok("add_component", {"code_text": "def h(): ...", "component_type": "function",
                                                 "name": "h", "description": "kept"})
            assert added["component_id"]
            server.stop()
            error, text = session.error("search_code", {"query": "kept"})
            assert error["code"] == 7001, error
            assert "lost the connection" in error["message"] and "***" in error["context"]["path"], error
            assert "PostgreSQL" in error["remediation"] and "writable" not in error["remediation"], error
            assert server.password not in text + json.dumps(error)
        finally:
            _close_session(session)

        # Into a graph that holds components: refused with the count.
        server.resume()
        lite = tmp_path / "lite"
        (lite / "pkg").mkdir(parents=True)
        (lite / "pkg" / "b.py").write_text("def b():\n    return 2\n")
        index(lite, "--calls", "syntax")
        full = subprocess.run([str(filepuff_binary()), "--root", str(lite), "graph", "migrate", "--json", "--to", url],
                              capture_output=True, text=True, timeout=120)
        assert full.returncode == 2 and '"code": 7007' in full.stderr, full.stderr
        assert '"components": 1' in full.stderr and "createdb" in full.stderr, full.stderr
        assert server.password not in full.stdout + full.stderr
    finally:
        server.stop()
