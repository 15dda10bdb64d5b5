"""symbol_at, find_definition and find_references through real language servers — gopls, clangd,
basedpyright and typescript-language-server, installed by scripts/install-language-servers into
.tools/bin — driven over MCP with the official Python SDK. Expected values come from the fixture
sources themselves (grep for the declaration line) and from `gopls references` run on the command
line; lines with emoji and CJK before the identifier check the encoding each server negotiated.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import McpSession, _close_session

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "lsp"
TOOLS_BIN = Path(__file__).resolve().parents[2] / ".tools" / "bin"


def require(program: str) -> str:
    found = shutil.which(program, path=f"{TOOLS_BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    if not found:
        pytest.skip(f"{program} is not installed (scripts/install-language-servers)")
    return found


def line_of(path: Path, needle: str) -> int:
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if needle in line:
            return number
    raise AssertionError(f"{needle!r} not in {path}")


def column_of(path: Path, line: int, needle: str, nth: int = 0) -> int:
    """1-based column in characters (what filepuff speaks) of the nth occurrence of needle."""
    text = path.read_text().splitlines()[line - 1]
    at = -1
    for _ in range(nth + 1):
        at = text.index(needle, at + 1)
    return at + 1


@pytest.fixture(scope="module")
def projects(tmp_path_factory) -> Path:
    """A copy of the fixture projects (servers write caches; clangd needs absolute paths)."""
    root = tmp_path_factory.mktemp("lsp") / "projects"
    shutil.copytree(FIXTURES, root)
    c = root / "c"
    commands = [
        {"directory": str(c), "file": str(c / name), "arguments": ["cc", "-std=c11", "-I.", "-c", name]}
        for name in ["main.c", "util.c"]
    ]
    (c / "compile_commands.json").write_text(json.dumps(commands))
    return root


@pytest.fixture(scope="module")
def session(projects, tmp_path_factory):
    for program in ["gopls", "clangd", "basedpyright-langserver", "typescript-language-server"]:
        require(program)
    os.environ["PATH"] = f"{TOOLS_BIN}{os.pathsep}{os.environ.get('PATH', '')}"
    s = McpSession(projects, tmp_path_factory.mktemp("mcp-lsp") / "stderr.log").start()
    yield s
    _close_session(s)


# ==== definitions ==================================================================================


def test_go_definition_across_packages_with_emoji_before(session, projects):
    main = projects / "go" / "main.go"
    line = line_of(main, "😀")
    out = session.ok("find_definition", {"file": "go/main.go", "line": line,
                                         "column": column_of(main, line, "Hello")})
    greet = projects / "go" / "greet" / "greet.go"
    [d] = out["definitions"]
    assert (d["file"], d["line"], d["column"]) == ("go/greet/greet.go", line_of(greet, "func Hello("), 6)
    assert "func Hello(name string) string {" in d["preview"]
    assert out["completeness"] == "complete" and out["server"].startswith("gopls")


def test_c_definition_with_compile_commands(session, projects):
    main = projects / "c" / "main.c"
    line = line_of(main, "😀")
    out = session.ok("find_definition", {"file": "c/main.c", "line": line, "symbol": "add"})
    assert out["column"] == column_of(main, line, "add")
    # With compile_commands.json, clangd's index knows the body in util.c (not only the
    # prototype in util.h): filepuff waited for its background indexing to finish.
    assert [(d["file"], d["line"]) for d in out["definitions"]] == [
        ("c/util.c", line_of(projects / "c" / "util.c", "int add("))]
    assert out["server"].startswith("clangd") and out["completeness"] == "complete"


def test_python_method_across_modules(session, projects):
    checkout = projects / "py" / "shop" / "checkout.py"
    line = line_of(checkout, "cart.total()")
    out = session.ok("find_definition", {"file": "py/shop/checkout.py", "line": line, "symbol": "total"})
    [d] = out["definitions"]
    cart = projects / "py" / "shop" / "cart.py"
    assert (d["file"], d["line"], d["column"]) == ("py/shop/cart.py", line_of(cart, "def total"), 9)
    assert out["server"].startswith("basedpyright")


def test_typescript_definition_through_an_import(session, projects):
    square = projects / "ts" / "src" / "square.ts"
    line = line_of(square, "😀")
    out = session.ok("find_definition", {"file": "ts/src/square.ts", "line": line, "symbol": "describe"})
    shape = projects / "ts" / "src" / "shape.ts"
    assert [(d["file"], d["line"], d["column"]) for d in out["definitions"]] == [
        ("ts/src/shape.ts", line_of(shape, "export function describe"), 17)
    ]


# ==== references ==================================================================================


def gopls_references(projects: Path, file: Path, line: int, column: int) -> set[tuple[str, int, int]]:
    """`gopls references -d FILE:LINE:COL` (columns in bytes there; converted to characters)."""
    byte_col = len(file.read_text().splitlines()[line - 1][: column - 1].encode()) + 1
    proc = subprocess.run([require("gopls"), "references", "-d", f"{file}:{line}:{byte_col}"],
                          cwd=file.parent, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = set()
    for row in proc.stdout.split():
        path, l, span = row.rsplit(":", 2)
        start = int(span.split("-")[0])
        text = Path(path).read_text().splitlines()[int(l) - 1]
        chars = len(text.encode()[: start - 1].decode()) + 1
        out.add((str(Path(path).relative_to(projects)), int(l), chars))
    return out


def test_go_references_equal_gopls_cli(session, projects):
    greet = projects / "go" / "greet" / "greet.go"
    line = line_of(greet, "func Hello(")
    out = session.ok("find_references", {"file": "go/greet/greet.go", "line": line, "symbol": "Hello"})
    ours = {(f["file"], r["line"], r["column"]) for f in out["files"] for r in f["references"]}
    assert ours == gopls_references(projects, greet, line, 6)
    assert out["total_references"] == 4 and out["completeness"] == "complete"
    without = session.ok("find_references", {"file": "go/greet/greet.go", "line": line, "symbol": "Hello",
                                             "include_declaration": False})
    assert without["total_references"] == 3


def test_typescript_references_span_files(session, projects):
    out = session.ok("find_references", {"file": "ts/src/shape.ts", "line": 1, "symbol": "Shape"})
    assert {f["file"] for f in out["files"]} == {"ts/src/shape.ts", "ts/src/square.ts"}
    assert out["completeness"] == "complete"


def test_symbol_at_has_hover_and_definition(session, projects):
    out = session.ok("symbol_at", {"file": "go/main.go", "line": line_of(projects / "go" / "main.go", "world"),
                                   "symbol": "Hello"})
    assert out["symbol"] == "Hello"
    assert "func greet.Hello(name string) string" in out["hover"] and "Hello greets name." in out["hover"]
    assert [(d["file"], d["line"]) for d in out["definitions"]] == [
        ("go/greet/greet.go", line_of(projects / "go" / "greet" / "greet.go", "func Hello("))]


def test_bad_positions_are_typed(session, projects):
    err, _ = session.error("find_definition", {"file": "go/main.go", "line": 999, "column": 1})
    assert err["code"] == 4007
    err, _ = session.error("find_definition", {"file": "go/main.go", "line": 1, "symbol": "Nope"})
    assert err["code"] == 4007
    err, _ = session.error("find_definition", {"file": "go/main.go", "line": 1})
    assert err["code"] == 4007


def test_missing_server_falls_back_to_tree_sitter_or_names_the_command(projects, tmp_path, filepuff_bin):
    """Without gopls on PATH: a name-based answer marked approximate, naming the server to
    install. With a server the user configured but did not install: a typed error."""
    env = {**os.environ, "PATH": "/usr/bin:/bin"}
    main = projects / "go" / "main.go"
    proc = subprocess.run([str(filepuff_bin), "--root", str(projects), "def", f"go/main.go:{line_of(main, 'world')}",
                           "--symbol", "Hello", "--json"], capture_output=True, text=True, env=env, check=True)
    out = json.loads(proc.stdout)
    assert out["approximate"] is True and out["completeness"] == "approximate"
    assert "gopls" in out["note"] and "go install" in out["note"]
    greet = projects / "go" / "greet" / "greet.go"
    assert [(d["file"], d["line"]) for d in out["definitions"]] == [("go/greet/greet.go", line_of(greet, "func Hello("))]
    refs = subprocess.run([str(filepuff_bin), "--root", str(projects), "refs", f"go/greet/greet.go:{line_of(greet, 'func Hello(')}",
                           "--symbol", "Hello", "--json"], capture_output=True, text=True, env=env, check=True)
    got = {(f["file"], r["line"]) for f in json.loads(refs.stdout)["files"] for r in f["references"]}
    assert {("go/main.go", line_of(main, "world")), ("go/greet/greet.go", line_of(greet, "func Hello("))} <= got

    configured = tmp_path / "configured"
    shutil.copytree(FIXTURES / "go", configured)
    (configured / "filepuff.toml").write_text('[servers.gopls]\ncommand = ["gopls-not-installed-here"]\n')
    proc = subprocess.run([str(filepuff_bin), "--root", str(configured), "def", "main.go:10", "--symbol", "Hello",
                           "--json"], capture_output=True, text=True, env=env)
    assert proc.returncode == 2
    err = json.loads(proc.stderr[proc.stderr.index("{"):])
    assert err["code"] == 4002 and err["context"]["command"] == "gopls-not-installed-here"
    assert "go install" in err["remediation"]


def test_killed_server_is_restarted(session, projects):
    greet = projects / "go" / "greet" / "greet.go"
    args = {"file": "go/main.go", "line": line_of(projects / "go" / "main.go", "world"), "symbol": "Hello"}
    session.ok("find_definition", args)
    pids = subprocess.run(["pgrep", "-f", str(TOOLS_BIN / "gopls")], capture_output=True, text=True).stdout.split()
    pids += subprocess.run(["pgrep", "-x", "gopls"], capture_output=True, text=True).stdout.split()
    assert pids, "no gopls process"
    for pid in set(pids):
        os.kill(int(pid), signal.SIGKILL)
    time.sleep(0.2)
    start = time.monotonic()
    out = session.ok("find_definition", args)
    assert out["restarted"] is True
    assert out["definitions"][0]["line"] == line_of(greet, "func Hello(")
    assert time.monotonic() - start < 10


def test_listenandserve_call_in_goroot_resolves_to_its_func_line(go_session, goroot_src):
    """A real package: a call of http.ListenAndServe in net/http examples resolves to the func line
    in net/http/server.go, and references of it include that call."""
    require("gopls")
    doc = goroot_src / "net" / "http" / "example_test.go"
    line = line_of(doc, "http.ListenAndServe(")
    out = go_session.ok("find_definition", {"file": "net/http/example_test.go", "line": line, "symbol": "ListenAndServe"})
    server = goroot_src / "net" / "http" / "server.go"
    assert [(d["file"], d["line"], d["column"]) for d in out["definitions"]] == [
        ("net/http/server.go", line_of(server, "func ListenAndServe("), 6)
    ]
    refs = go_session.ok("find_references", {"file": "net/http/server.go", "line": line_of(server, "func ListenAndServe("),
                                             "symbol": "ListenAndServe", "include_declaration": False})
    assert ("net/http/example_test.go", line) in {(f["file"], r["line"]) for f in refs["files"] for r in f["references"]}
    # gopls may still be loading all of std when [lsp] ready_timeout_ms runs out: then the answer
    # must say so rather than pass for complete.
    assert refs["completeness"] in ("complete", "timed_out")


def test_servers_see_edits_written_to_disk(session, projects):
    """After edit_apply shifts a function down, a definition request from another file lands on
    its new line: the edit told gopls (didChange / didChangeWatchedFiles)."""
    main_args = {"file": "go/main.go", "line": line_of(projects / "go" / "main.go", "world"), "symbol": "Hello"}
    before = session.ok("find_definition", main_args)["definitions"][0]["line"]
    session.ok("edit_apply", {"file": "go/greet/greet.go", "operation": "insert_before", "selector_name": "Hello",
                              "new_content": "// Wave waves.\nfunc Wave() string {\n\treturn \"wave\"\n}\n"})
    greet = projects / "go" / "greet" / "greet.go"
    after = session.ok("find_definition", main_args)["definitions"][0]
    assert after["line"] == line_of(greet, "func Hello(") == before + 4


def test_doctor_reports_installed_versions_and_missing_servers(filepuff_bin, projects):
    env = {**os.environ, "PATH": f"{TOOLS_BIN}{os.pathsep}/usr/bin:/bin"}
    out = subprocess.run([str(filepuff_bin), "--root", str(projects), "doctor", "--json"], capture_output=True,
                         text=True, env=env, check=True)
    reports = {r["name"]: r for r in json.loads(out.stdout)}
    pinned = Path(__file__).resolve().parents[2] / "scripts" / "install-language-servers"
    versions = dict(line.split("=", 1) for line in pinned.read_text().splitlines()
                    if line.endswith(tuple("0123456789")) and "_VERSION=" in line)
    assert reports["gopls"]["version"].endswith(versions["GOPLS_VERSION"]) and reports["gopls"]["serves"] == ["go"]
    assert versions["CLANGD_VERSION"] in reports["clangd"]["version"] and reports["clangd"]["serves"] == ["c", "cpp"]
    assert versions["BASEDPYRIGHT_VERSION"] in reports["basedpyright"]["version"]
    assert reports["basedpyright"]["serves"] == ["python"] and reports["pyright"]["serves"] == []
    assert reports["typescript-language-server"]["version"] == versions["TS_LS_VERSION"]
    bare = subprocess.run([str(filepuff_bin), "--root", str(projects), "doctor", "--json"], capture_output=True,
                          text=True, env={**os.environ, "PATH": "/usr/bin:/bin"}, check=True)
    gopls = {r["name"]: r for r in json.loads(bare.stdout)}["gopls"]
    assert gopls["path"] is None and gopls["serves"] == [] and "go install" in gopls["install_hint"]
    assert "unusable" not in gopls


def test_doctor_names_a_broken_symlink_on_path(filepuff_bin, projects, tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "gopls").symlink_to(tmp_path / "moved" / "gopls")
    (bin_dir / "clangd").write_text("#!/bin/sh\n")
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}/usr/bin:/bin"}
    out = subprocess.run([str(filepuff_bin), "--root", str(projects), "doctor", "--json"], capture_output=True,
                         text=True, env=env, check=True)
    reports = {r["name"]: r for r in json.loads(out.stdout)}
    assert reports["gopls"]["path"] is None
    assert reports["gopls"]["unusable"] == f"{bin_dir / 'gopls'} -> {tmp_path / 'moved' / 'gopls'} is a broken symlink"
    assert reports["clangd"]["unusable"] == f"{bin_dir / 'clangd'} is not executable"
    text = subprocess.run([str(filepuff_bin), "--root", str(projects), "doctor"], capture_output=True, text=True,
                          env=env, check=True).stdout
    assert f"missing: {bin_dir / 'gopls'} -> {tmp_path / 'moved' / 'gopls'} is a broken symlink — install:" in text


def test_edit_diagnostics_introduced_then_cleared(session, projects):
    greet = projects / "go" / "greet" / "greet.go"
    broke = session.ok("edit_apply", {"file": "go/greet/greet.go", "operation": "replace",
                                      "selector_text": 'return "hello, " + name', "new_content": "return 42",
                                      "diagnostics": True})
    d = broke["diagnostics"]
    assert "error" not in d
    assert [(i["line"], i["severity"]) for i in d["introduced"]] == [(line_of(greet, "return 42"), "error")]
    assert "42" in d["introduced"][0]["message"] and d["current"] is True
    direct = session.ok("diagnostics", {"file": "go/greet/greet.go"})
    assert [x["message"] for x in direct["diagnostics"]] == [d["introduced"][0]["message"]] and direct["current"]
    everywhere = session.ok("diagnostics", {})
    assert ("go/greet/greet.go", d["introduced"][0]["line"]) in {(x["file"], x["line"]) for x in everywhere["diagnostics"]}
    fixed = session.ok("edit_apply", {"file": "go/greet/greet.go", "operation": "replace",
                                      "selector_text": "return 42", "new_content": 'return "hello, " + name'})
    # The server is running, so diagnostics come by default; the fix clears the error.
    assert fixed["diagnostics"]["introduced"] == [] and fixed["diagnostics"]["resolved"] == 1
    assert session.ok("diagnostics", {"file": "go/greet/greet.go"})["diagnostics"] == []
    assert "go/greet/greet.go" not in {x["file"] for x in session.ok("diagnostics", {})["diagnostics"]}


def test_hung_server_gets_cancel_then_restart_then_typed_timeout(tmp_path, filepuff_bin):
    """A server that never answers: the request is cancelled with its own id, the server is
    restarted and the request retried once, then the error is a typed timeout."""
    import sys

    root = tmp_path / "hung"
    root.mkdir()
    (root / "main.go").write_text("package main\n\nfunc main() { main() }\n")
    log = tmp_path / "fake.log"
    fake = Path(__file__).with_name("fake_lsp.py")
    (root / "filepuff.toml").write_text(
        "[lsp]\nrequest_timeout_ms = 1500\nready_timeout_ms = 500\n\n"
        f"[servers.fake]\ncommand = [{json.dumps(sys.executable)}, {json.dumps(str(fake))}]\n"
        f"languages = [\"go\"]\nenv = {{ FAKE_LSP_LOG = {json.dumps(str(log))} }}\n"
    )
    proc = subprocess.run([str(filepuff_bin), "--root", str(root), "def", "main.go:3", "--symbol", "main", "--json"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stdout
    err = json.loads(proc.stderr[proc.stderr.index("\n{") + 1:] if not proc.stderr.startswith("{") else proc.stderr)
    assert err["code"] == 4005 and err["context"]["method"] == "textDocument/definition"
    messages = [json.loads(line) for line in log.read_text().splitlines()]
    pids = sorted({m["pid"] for m in messages})
    assert len(pids) == 2, "the hung server was restarted once"
    for pid in pids:
        mine = [m for m in messages if m["pid"] == pid]
        [definition] = [m for m in mine if m.get("method") == "textDocument/definition"]
        cancels = [m for m in mine if m.get("method") == "$/cancelRequest"]
        assert [c["params"]["id"] for c in cancels][:1] == [definition["id"]]


def rename_session(tmp_path: Path, name: str, text: str) -> tuple[Path, McpSession, dict]:
    """The Go fixture with `greet/NAME` holding `text`, an MCP session on it, and the
    rename_symbol arguments that rename `Hello` to `Salute`."""
    require("gopls")
    root = tmp_path / "rename"
    shutil.copytree(FIXTURES / "go", root)
    (root / "greet" / name).write_text(text)
    os.environ["PATH"] = f"{TOOLS_BIN}{os.pathsep}{os.environ.get('PATH', '')}"
    s = McpSession(root, tmp_path / "stderr.log").start()
    args = {"file": "greet/greet.go", "line": line_of(root / "greet" / "greet.go", "func Hello("), "symbol": "Hello",
            "new_name": "Salute"}
    return root, s, args


def test_rename_across_three_files_applies_and_builds(tmp_path):
    root, s, args = rename_session(tmp_path, "twice.go",
        'package greet\n\n// Twice greets name twice.\nfunc Twice(name string) string {\n\treturn Hello(name) + " " + Hello(name)\n}\n')
    try:
        before = {p: p.read_bytes() for p in root.rglob("*.go")}
        preview = s.ok("rename_symbol", args)
        assert [(f["file"], f["edits"]) for f in preview["files"]] == [
            ("greet/greet.go", 3), ("greet/twice.go", 2), ("main.go", 2)]
        assert not preview["applied"] and {p: p.read_bytes() for p in root.rglob("*.go")} == before
        applied = s.ok("rename_symbol", {**args, "apply": True})
        assert applied["applied"] and [f["written_to"] for f in applied["files"]] == ["disk"] * 3
        # The callers' lists are taken once gopls has every file's change (a caller diagnosed
        # before the renamed function's file arrived would read `undefined: Salute`).
        diagnostics = applied["diagnostics"]
        assert diagnostics["status"] == "complete" and diagnostics["files_checked"] == 3, diagnostics
        assert diagnostics["introduced"] == [] and diagnostics["resolved"] == 0, diagnostics
    finally:
        _close_session(s)
    for rel in ["greet/greet.go", "greet/twice.go", "main.go"]:
        text = (root / rel).read_text()
        assert "Salute(" in text and "Hello(" not in text, rel
    env = {**os.environ, "GOFLAGS": "-mod=mod", "GOTOOLCHAIN": "local"}
    for cmd in (["go", "build", "./..."], ["go", "vet", "./..."]):
        proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True, env=env)
        assert proc.returncode == 0, proc.stderr


def test_rename_reports_the_diagnostics_of_the_renamed_files(tmp_path):
    """rename_symbol with apply asks gopls for the diagnostics of the file it changes, before and
    after: errors that were there stay `pre_existing` — also one whose message names the renamed
    symbol, and so changed with it — and nothing is `introduced` or `resolved`. (A rename
    across files: the test above.)"""
    root, s, args = rename_session(
        tmp_path, "broken.go", 'package greet\n\nvar _ int = "x"\n\nfunc wave(n string) string { return n }\n\nvar _ = wave(1)\n')
    broken = root / "greet" / "broken.go"
    try:
        args = {**args, "file": "greet/broken.go", "line": line_of(broken, "func wave("), "symbol": "wave",
                "new_name": "salute", "apply": True}
        applied = s.ok("rename_symbol", args)
    finally:
        _close_session(s)
    assert applied["applied"], applied
    assert "salute(1)" in broken.read_text() and "wave" not in broken.read_text()
    diagnostics = applied["diagnostics"]
    assert diagnostics["status"] == "complete" and diagnostics["current"], diagnostics
    assert diagnostics["files_checked"] == 1, diagnostics
    assert diagnostics["introduced"] == [] and diagnostics["resolved"] == 0, diagnostics
    messages = sorted(d["message"] for d in diagnostics["pre_existing"])
    assert len(messages) == 2 and all(d["file"] == "greet/broken.go" for d in diagnostics["pre_existing"]), diagnostics
    assert any("salute" in m for m in messages), messages


def test_hover_symbols_workspace_symbols_and_calls(session, projects):
    greet = projects / "go" / "greet" / "greet.go"
    hello_line = line_of(greet, "func Hello(")
    hover = session.ok("hover", {"file": "go/greet/greet.go", "line": hello_line, "symbol": "Hello"})
    assert hover["symbol"] == "Hello" and "func Hello(name string) string" in hover["hover"]
    symbols = session.ok("document_symbols", {"file": "py/shop/cart.py"})
    [cart] = symbols["symbols"]
    assert (cart["name"], cart["kind"], cart["line"]) == ("Cart", "class", line_of(projects / "py/shop/cart.py", "class Cart"))
    assert [c["name"] for c in cart["children"] if c["kind"] == "method"] == ["__init__", "add", "total"]
    found = session.ok("workspace_symbols", {"query": "Shout", "language": "go"})
    assert ("Shout", "function", "go/greet/greet.go", line_of(greet, "func Shout(")) in {
        (s["name"], s["kind"], s["file"], s["line"]) for s in found["symbols"]}
    incoming = session.ok("call_hierarchy", {"file": "go/greet/greet.go", "line": hello_line, "symbol": "Hello"})
    main = projects / "go" / "main.go"
    assert {(c["name"], c["file"], tuple(c["call_lines"])) for c in incoming["calls"]} == {
        ("Shout", "go/greet/greet.go", (line_of(greet, "strings.ToUpper(Hello"),)),
        ("main", "go/main.go", (line_of(main, "world"), line_of(main, "😀"))),
    }
    outgoing = session.ok("call_hierarchy", {"file": "go/greet/greet.go", "line": line_of(greet, "func Shout("),
                                             "symbol": "Shout", "direction": "outgoing"})
    assert {c["name"] for c in outgoing["calls"]} == {"ToUpper", "Hello"}
    assert any(c.get("outside_root") for c in outgoing["calls"] if c["name"] == "ToUpper")


def test_changes_on_disk_behind_filepuffs_back_reach_the_server(session, projects):
    """Another program rewrites a file the server has open: the watcher closes it there and
    sends didChangeWatchedFiles, so an answer asked from *another* file reflects the disk."""
    greet = projects / "go" / "greet" / "greet.go"
    main = projects / "go" / "main.go"
    # greet.go is now open in gopls (synced as a request's target).
    session.ok("find_definition", {"file": "go/greet/greet.go", "line": line_of(greet, "ToUpper(Hello"), "symbol": "Hello"})
    from_main = {"file": "go/main.go", "line": line_of(main, "world"), "symbol": "Hello"}
    before = session.ok("find_definition", from_main)["definitions"][0]["line"]
    greet.write_text(greet.read_text().replace("// Hello greets name.", "// Padding.\n// Padding.\n// Hello greets name."))
    deadline = time.monotonic() + 5
    while True:
        line = session.ok("find_definition", from_main)["definitions"][0]["line"]
        if line == before + 2 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert line == before + 2 == line_of(greet, "func Hello(")


def test_typescript_interface_method_references_include_its_implementation(session, projects):
    shape = projects / "ts" / "src" / "shape.ts"
    square = projects / "ts" / "src" / "square.ts"
    out = session.ok("find_references", {"file": "ts/src/shape.ts", "line": line_of(shape, "area(): number;"),
                                         "symbol": "area"})
    assert {(f["file"], r["line"]) for f in out["files"] for r in f["references"]} == {
        ("ts/src/shape.ts", line_of(shape, "area(): number;")),
        ("ts/src/shape.ts", line_of(shape, "shape.area()")),
        ("ts/src/square.ts", line_of(square, "area(): number {")),
    }
