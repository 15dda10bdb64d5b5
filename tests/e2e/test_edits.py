"""ast_query, edit_preview and edit_apply end to end: the real binary over MCP (official Python SDK)
and its CLI, checked against independent oracles — the `ast-grep` CLI (PyPI `ast-grep-cli`) on the
same files, `gofmt`, Python's `ast`, `sha256sum`-style hashing — and against the seed system's
known flaws: non-atomic writes, an in-process-only lock, syntax errors collected but not refused,
unescaped `new_content`, and ambiguous selectors silently taking match 0.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import McpSession, _close_session, filepuff_binary
from oracles import ast_grep_matches

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def filepuff_matches(session: McpSession, pattern: str, lang: str, paths: list[str]) -> tuple[set, dict]:
    """Every match, page after page: the output budget cuts a page however large max_results is,
    and the page's notes name the offset of the next."""
    args = {"pattern": pattern, "language": lang, "paths": paths, "max_results": 100000}
    first = session.ok("ast_query", args)
    matches = list(first["matches"])
    page = first
    while page["truncated"]:
        offset = len(matches)
        assert any(f"continue with offset={offset}" in note for note in page["notes"]), page["notes"]
        page = session.ok("ast_query", {**args, "offset": offset})
        assert page["matches"], "a cut page promised more"
        matches.extend(page["matches"])
    assert first["total_matches"] == len(matches)
    return {(m["file"], m["start_line"], m["start_column"]) for m in matches}, {**first, "matches": matches}


# ==== ast_query against the ast-grep CLI ==========================================================


@pytest.mark.parametrize("package", ["net/http", "encoding/json", "os"])
def test_go_functions_returning_error_equal_ast_grep(go_session, goroot_src, package):
    pattern = "func $NAME($$$ARGS) error"
    ours, out = filepuff_matches(go_session, pattern, "go", [package])
    theirs = ast_grep_matches(goroot_src, pattern, "go", [package])
    assert ours == theirs
    assert len(ours) > 5
    # The prefilter skipped files without `func`/`error` but lost nothing.
    assert out["files_parsed"] < out["files_scanned"]
    first = out["matches"][0]
    assert first["captures"]["NAME"]["text"] == first["name"]
    assert first["text"].startswith("func " + first["name"] + "(")
    assert isinstance(first["multi_captures"].get("ARGS", []), list)


def test_go_name_and_kind_filters(go_session, goroot_src):
    pattern = "func $NAME($$$ARGS) error"
    everything, _ = filepuff_matches(go_session, pattern, "go", ["net/http"])
    out = go_session.ok("ast_query", {"pattern": pattern, "language": "go", "paths": ["net/http"],
                                      "name_matches": "^[A-Z]", "max_results": 1000})
    assert {m["name"] for m in out["matches"]} and all(m["name"][0].isupper() for m in out["matches"])
    assert out["total_matches"] < len(everything)
    exact = go_session.ok("ast_query", {"pattern": pattern, "language": "go", "paths": ["net/http"],
                                        "name_exact": "ListenAndServe"})
    assert [(m["file"], m["name"]) for m in exact["matches"]] == [("net/http/server.go", "ListenAndServe")]
    kinds = go_session.ok("ast_query", {"pattern": "func ($R $T) $NAME($$$ARGS) error", "language": "go",
                                        "paths": ["net/http/server.go"], "kind_in": ["method_declaration"]})
    assert kinds["total_matches"] > 0 and {m["kind"] for m in kinds["matches"]} == {"method_declaration"}


def test_python_classes_equal_ast_grep_and_ast(py_session, py_stdlib):
    pattern = "class $NAME($$$BASES): $$$BODY"
    ours, out = filepuff_matches(py_session, pattern, "python", ["json", "asyncio"])
    theirs = ast_grep_matches(py_stdlib, pattern, "python", ["json", "asyncio"])
    assert ours == theirs
    # Independent count with Python's own parser: classes with a parenthesised base list.
    expected = set()
    for path in sorted((py_stdlib / "json").rglob("*.py")) + sorted((py_stdlib / "asyncio").rglob("*.py")):
        source = path.read_text()
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ClassDef):
                header = source.splitlines()[node.lineno - 1]
                if "(" in header.split(":")[0]:
                    expected.add((str(path.relative_to(py_stdlib)), node.lineno, node.col_offset + 1))
    # Decorated classes start at `class`, as ast-grep and ast both say.
    assert ours == expected


def test_c_and_cpp_function_definitions_equal_ast_grep(go_session, goroot_src, tmp_path):
    pattern = "$RET $NAME($$$ARGS) { $$$BODY }"
    ours, out = filepuff_matches(go_session, pattern, "c", ["runtime/cgo"])
    theirs = ast_grep_matches(goroot_src, pattern, "c", ["runtime/cgo"])
    assert ours == theirs and len(ours) > 5

    # C++: `{ $$$BODY }` after a declarator parses as an initializer list (a declaration) in
    # tree-sitter-cpp, for ast-grep and filepuff alike; patterns with a statement in the body parse
    # as function_definition.
    root = FIXTURES / "query"
    session = McpSession(root, tmp_path / "stderr.log").start()
    try:
        for pattern, expected in [
            ("$RET $NAME($$$ARGS) { $$$BODY; }", {"grow", "Box_reset"}),
            ("$RET $NAME($$$ARGS) { return $X; }", {"add", "area", "size"}),
        ]:
            ours, out = filepuff_matches(session, pattern, "cpp", ["."])
            theirs = ast_grep_matches(root, pattern, "cpp", ["."])
            assert {(Path(f).name, line, col) for f, line, col in ours} == {
                (Path(f).name, line, col) for f, line, col in theirs
            }
            assert {m["name"] for m in out["matches"]} == expected
    finally:
        _close_session(session)


def test_invalid_pattern_and_language_are_typed_errors(go_session):
    err, text = go_session.error("ast_query", {"pattern": "func $NAME(", "language": "cobol"})
    assert err["code"] == 6002 and "go" in err["remediation"] and "python" in err["remediation"]
    err, _ = go_session.error("ast_query", {"pattern": "$$$ARGS", "language": "go"})
    assert err["code"] == 6001
    err, _ = go_session.error("ast_query", {"pattern": "func $N()", "language": "go", "kind_in": ["function_decl"]})
    assert err["code"] == 3002 and "function_declaration" in err["context"]["suggestions"]
    err, _ = go_session.error("ast_query", {"pattern": "func $N()", "language": "go", "name_matches": "("})
    assert err["code"] == 6003


# ==== edits ========================================================================================


@pytest.fixture(scope="module")
def edit_root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("edits")


@pytest.fixture(scope="module")
def edit_session(edit_root, tmp_path_factory):
    session = McpSession(edit_root, tmp_path_factory.mktemp("mcp-edits") / "stderr.log").start()
    yield session
    _close_session(session)


def write(root: Path, rel: str, data: str | bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_bytes(data.encode())
    return path


GO_SERVER = """package server

import "fmt"

// Hello greets.
func Hello() {
\tfmt.Println("hello")
}

type Server struct{ name string }

// Hello on a server.
func (s *Server) Hello() {
\tfmt.Println(s.name)
}

func Other() int { return 1 }
"""


def gofmt_clean(path: Path) -> bool:
    if not shutil.which("gofmt"):
        pytest.skip("gofmt is not installed")
    proc = subprocess.run(["gofmt", "-l", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr  # non-zero: it does not parse
    return proc.stdout.strip() == ""


def test_replace_go_function_by_name_stays_gofmt_clean(edit_session, edit_root):
    path = write(edit_root, "go/server.go", GO_SERVER)
    assert gofmt_clean(path)
    preview = edit_session.ok("edit_preview", {
        "file": "go/server.go", "operation": "replace", "selector_kind": "function_declaration",
        "selector_name": "Hello", "new_content": 'func Hello() {\n\tfmt.Println("new hello")\n}',
    })
    assert not preview["applied"] and path.read_text() == GO_SERVER
    assert "-\tfmt.Println(\"hello\")\n+\tfmt.Println(\"new hello\")" in preview["diff"]
    assert preview["target"] == {"start_line": 6, "end_line": 8, "kind": "function_declaration", "name": "Hello",
                                 "candidates": 1}
    applied = edit_session.ok("edit_apply", {
        "file": "go/server.go", "operation": "replace", "selector_kind": "function_declaration",
        "selector_name": "Hello", "new_content": 'func Hello() {\n\tfmt.Println("new hello")\n}',
        "expected_hash": preview["old_hash"],
    })
    assert applied["applied"] and applied["written_to"] == "disk"
    assert applied["new_hash"] == preview["new_hash"] == "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
    assert path.read_text() == GO_SERVER.replace('fmt.Println("hello")', 'fmt.Println("new hello")')
    assert gofmt_clean(path)
    # The method by its receiver-qualified name, re-indented from unindented content.
    edit_session.ok("edit_apply", {
        "file": "go/server.go", "operation": "replace", "selector_name": "Server.Hello",
        "new_content": "func (s *Server) Hello() {\nfmt.Println(\"server\", s.name)\n}",
    })
    text = path.read_text()
    assert 'func (s *Server) Hello() {\nfmt.Println("server", s.name)\n}' in text  # Go bodies: content as given
    subprocess.run(["gofmt", "-w", str(path)], check=True)
    assert gofmt_clean(path)


def test_file_read_hash_and_stale_guard(edit_session, edit_root):
    path = write(edit_root, "notes.md", "# Notes\n\n## Installation\n\nstep one\n")
    read = edit_session.ok("file_read", {"path": "notes.md"})
    assert read["content_hash"] == "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
    path.write_text("# Notes\n\n## Installation\n\nstep one\nstep two\n")  # someone else edits
    err, text = edit_session.error("edit_apply", {
        "file": "notes.md", "operation": "replace", "selector_text": "## Installation",
        "new_content": "## Getting Started", "expected_hash": read["content_hash"],
    })
    assert err["code"] == 5010 and err["name"] == "EDIT_STALE"
    assert err["context"]["current_hash"] == "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
    assert path.read_text().endswith("step two\n")
    ok = edit_session.ok("edit_apply", {
        "file": "notes.md", "operation": "replace", "selector_text": "## Installation",
        "new_content": "## Getting Started", "expected_hash": err["context"]["current_hash"],
    })
    assert ok["mode"] == "text" and path.read_text() == "# Notes\n\n## Getting Started\n\nstep one\nstep two\n"


def test_regex_and_line_range_edits(edit_session, edit_root):
    path = write(edit_root, "package.json", '{\n  "name": "demo",\n  "version": "1.4.2",\n  "private": true\n}\n')
    edit_session.ok("edit_apply", {
        "file": "package.json", "operation": "replace", "selector_pattern": r'"version":\s*"[^"]+"',
        "new_content": '"version": "2.0.0"',
    })
    assert json.loads(path.read_text())["version"] == "2.0.0"
    cfg = write(edit_root, "config.yaml", "app: demo\ndatabase:\n  host: localhost\n  port: 1\nlog: info\n")
    out = edit_session.ok("edit_apply", {
        "file": "config.yaml", "operation": "replace", "selector_line": 2, "selector_line_end": 4,
        "new_content": "database:\n  host: production.db.example.com\n  port: 5432",
    })
    assert out["mode"] == "lines" and out["target"]["start_line"] == 2 and out["target"]["end_line"] == 4
    assert cfg.read_text() == "app: demo\ndatabase:\n  host: production.db.example.com\n  port: 5432\nlog: info\n"
    # JSON that parsed must still parse.
    err, _ = edit_session.error("edit_apply", {"file": "package.json", "operation": "delete", "selector_text": "}"})
    assert err["code"] == 5009
    assert json.loads(path.read_text())["version"] == "2.0.0"


PY_CLASS = '''class Greeter:
    """Says things."""

    def first(self):
        return "first"

    def last(self):
        return "last"
'''


def test_python_insertions_match_the_method_indentation(edit_session, edit_root):
    path = write(edit_root, "py/greeter.py", PY_CLASS)
    edit_session.ok("edit_apply", {"file": "py/greeter.py", "operation": "insert_after", "selector_name": "first",
                                   "new_content": "\ndef second(self):\n    return 'second'\n"})
    edit_session.ok("edit_apply", {"file": "py/greeter.py", "operation": "insert_before",
                                   "selector_name": "Greeter.first",
                                   "new_content": "def zeroth(self):\n    return 'zeroth'\n"})
    text = path.read_text()
    tree = ast.parse(text)
    cls = tree.body[0]
    assert [f.name for f in cls.body if isinstance(f, ast.FunctionDef)] == ["zeroth", "first", "second", "last"]
    assert "    def second(self):\n        return 'second'\n" in text
    assert "    def zeroth(self):\n        return 'zeroth'\n    def first(self):" in text
    # delete a node: the method goes, the class still parses
    edit_session.ok("edit_apply", {"file": "py/greeter.py", "operation": "delete", "selector_name": "zeroth"})
    cls = ast.parse(path.read_text()).body[0]
    assert [f.name for f in cls.body if isinstance(f, ast.FunctionDef)] == ["first", "second", "last"]


def test_crlf_file_keeps_crlf(edit_session, edit_root):
    path = write(edit_root, "crlf/win.go", GO_SERVER.replace("\n", "\r\n"))
    edit_session.ok("edit_apply", {"file": "crlf/win.go", "operation": "insert_after", "selector_name": "Other",
                                   "new_content": "func Added() int {\n\treturn 2\n}\n"})
    data = path.read_bytes()
    assert b"func Added() int {\r\n\treturn 2\r\n}\r\n" in data
    assert data.count(b"\n") == data.count(b"\r\n")
    assert data.endswith(b"}\r\n")


def test_literal_backslash_sequences_survive(edit_session, edit_root):
    """Seed flaw: literal \\n, \\t and \\" in new_content were unescaped, corrupting string literals."""
    path = write(edit_root, "esc/strings.go", 'package esc\n\nvar s = "x"\n')
    content = r'"line1\nline2\t\"quoted\""'
    edit_session.ok("edit_apply", {"file": "esc/strings.go", "operation": "replace", "selector_text": '"x"',
                                   "new_content": content})
    assert path.read_text() == 'package esc\n\nvar s = ' + content + '\n'
    assert gofmt_clean(path)


def test_ambiguous_selector_is_an_error_listing_candidates(edit_session, edit_root):
    """Seed flaw: an ambiguous selector silently took match 0."""
    path = write(edit_root, "amb/server.go", GO_SERVER)
    err, text = edit_session.error("edit_apply", {"file": "amb/server.go", "operation": "delete",
                                                  "selector_name": "Hello"})
    assert err["code"] == 5007
    candidates = err["context"]["candidates"]
    assert [(c["index"], c["start_line"], c["kind"], c["excerpt"]) for c in candidates] == [
        (0, 6, "function_declaration", "func Hello() {"),
        (1, 13, "method_declaration", "func (s *Server) Hello() {"),
    ]
    assert "[1] line 13-15 method_declaration Server.Hello" in text
    assert path.read_text() == GO_SERVER
    err, _ = edit_session.error("edit_apply", {"file": "amb/server.go", "operation": "delete",
                                               "selector_name": "Hello", "selector_index": 2})
    assert err["code"] == 5008 and len(err["context"]["candidates"]) == 2
    edit_session.ok("edit_apply", {"file": "amb/server.go", "operation": "delete", "selector_name": "Hello",
                                   "selector_index": 1})
    assert "(s *Server) Hello" not in path.read_text() and "// Hello on a server." not in path.read_text()
    assert gofmt_clean(path)


# Member selectors, one file per language: two types A and B each declare member `m`
# (Go: `M`), beside a free function of that name. `candidates` are the qualified names the
# declaration kind + own name lists (A's, B's, then the free function's where it has the same
# kind); `b` is B's member by a qualified name.
MEMBER_CASES = [
    pytest.param({
        "file": "members/shapes.py", "kind": "function_definition", "member": "m",
        "source": 'class A:\n    def m(self):\n        return "a"\n\n\nclass B:\n    def m(self):\n        return "b"\n\n\n'
                  'def m():\n    return "free"\n',
        "candidates": ["A.m", "B.m", "m"], "b": "B.m", "b_lines": (7, 8),
        "new_content": 'def m(self):\n    return "B"',
    }, id="python"),
    pytest.param({
        "file": "members/shapes.ts", "kind": "method_definition", "member": "m",
        "source": 'export class A {\n  m(): string {\n    return "a";\n  }\n}\n\nnamespace ns {\n  export class B {\n'
                  '    m(): string {\n      return "b";\n    }\n  }\n}\n\nexport function m(): string {\n  return "free";\n}\n',
        "candidates": ["A.m", "ns.B.m"], "b": "ns.B.m", "b_lines": (9, 11),
        "new_content": 'm(): string {\n  return "B";\n}',
    }, id="typescript"),
    pytest.param({
        "file": "members/shapes.js", "kind": "method_definition", "member": "m",
        "source": 'class A {\n  m() {\n    return "a";\n  }\n}\n\nclass B {\n  m() {\n    return "b";\n  }\n}\n\n'
                  'function m() {\n  return "free";\n}\n\nmodule.exports = { A, B, m };\n',
        "candidates": ["A.m", "B.m"], "b": "B.m", "b_lines": (8, 10),
        "new_content": 'm() {\n  return "B";\n}',
    }, id="javascript"),
    pytest.param({
        "file": "members/shapes.go", "kind": "method_declaration", "member": "M",
        "source": 'package members\n\ntype A struct{}\n\ntype B struct{}\n\nfunc (a *A) M() string {\n\treturn "a"\n}\n\n'
                  'func (b B) M() string {\n\treturn "b"\n}\n\nfunc M() string { return "free" }\n',
        "candidates": ["A.M", "B.M"], "b": "B.M", "b_lines": (11, 13),
        "new_content": 'func (b B) M() string {\n\treturn "B"\n}',
    }, id="go"),
    pytest.param({
        # A's member is defined in its class, B's out of line as `shapes::B::m`.
        "file": "members/shapes.cpp", "kind": "function_definition", "member": "m",
        "source": 'namespace shapes {\nstruct A {\n  const char* m() { return "a"; }\n};\nstruct B {\n  const char* m();\n};\n'
                  '}  // namespace shapes\n\nconst char* shapes::B::m() {\n  return "b";\n}\n\n'
                  'const char* m() { return "free"; }\n',
        "candidates": ["shapes::A::m", "shapes::B::m", "m"], "b": "B::m", "b_lines": (10, 12),
        "new_content": 'const char* shapes::B::m() {\n  return "B";\n}',
    }, id="cpp"),
    pytest.param({
        "file": "members/shapes.rs", "kind": "function_item", "member": "m",
        "source": 'pub struct A;\npub struct B;\n\nimpl A {\n    pub fn m(&self) -> &str {\n        "a"\n    }\n}\n\n'
                  'impl B {\n    pub fn m(&self) -> &str {\n        "b"\n    }\n}\n\npub fn m() -> &\'static str {\n    "free"\n}\n',
        "candidates": ["A::m", "B::m", "m"], "b": "B.m", "b_lines": (11, 13),
        "new_content": 'pub fn m(&self) -> &str {\n    "B"\n}',
    }, id="rust"),
]


@pytest.mark.parametrize("case", MEMBER_CASES)
def test_member_selectors_by_kind_and_name(edit_session, edit_root, case):
    """The issue: selector_kind + selector_name found nothing for a method, and a qualified name
    alone reported the class body (`block`) as the target's kind."""
    path = write(edit_root, case["file"], case["source"])
    kind, file = case["kind"], case["file"]
    base = {"file": file, "operation": "replace", "new_content": case["new_content"]}

    # Kind + own name: every declaration of that kind, named qualified.
    err, text = edit_session.error("edit_preview", {**base, "selector_kind": kind, "selector_name": case["member"]})
    assert err["code"] == 5007, err
    listed = [(c["index"], c["kind"], c["name"]) for c in err["context"]["candidates"]]
    assert listed == [(i, kind, name) for i, name in enumerate(case["candidates"])]
    for name in case["candidates"]:
        assert f"{kind} {name}:" in text

    # The first candidate's qualified name alone: that declaration, reported by its own kind.
    comment = "# first" if file.endswith(".py") else "// first"
    first = edit_session.ok("edit_preview", {"file": file, "operation": "insert_before", "new_content": comment,
                                             "selector_name": case["candidates"][0]})
    assert first["target"]["kind"] == kind and first["target"]["name"] == case["candidates"][0]
    assert first["target"]["candidates"] == 1

    # selector_index and a qualified name pick the same member.
    by_index = edit_session.ok("edit_preview", {**base, "selector_kind": kind, "selector_name": case["member"],
                                                "selector_index": 1})
    applied = edit_session.ok("edit_apply", {**base, "selector_kind": kind, "selector_name": case["b"],
                                             "expected_hash": by_index["old_hash"]})
    assert applied["applied"] and applied["written_to"] == "disk"
    assert applied["target"] == {"start_line": case["b_lines"][0], "end_line": case["b_lines"][1], "kind": kind,
                                 "name": case["candidates"][1], "candidates": 1}
    assert (by_index["target"]["start_line"], by_index["target"]["end_line"]) == case["b_lines"]
    assert by_index["diff"] == applied["diff"] and by_index["new_hash"] == applied["new_hash"]
    expected = case["source"].replace('"b"', '"B"')
    assert path.read_text() == expected
    if file.endswith(".py"):
        tree = ast.parse(expected)
        b = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "B")
        assert ast.unparse(b.body[0]).endswith("return 'B'")
    if file.endswith(".go"):
        assert gofmt_clean(path)


def test_cpp_declaration_and_definition_share_a_qualified_name(edit_session, edit_root):
    """`B::m` names both the in-class declaration and the out-of-line definition: an error that
    lists both, resolved by selector_kind."""
    source = ('namespace shapes {\nstruct B {\n  const char* m();\n};\n}  // namespace shapes\n\n'
              'const char* shapes::B::m() {\n  return "b";\n}\n')
    write(edit_root, "members/decl.cpp", source)
    err, _ = edit_session.error("edit_preview", {"file": "members/decl.cpp", "operation": "delete",
                                                 "selector_name": "shapes::B::m"})
    assert err["code"] == 5007
    assert [(c["kind"], c["name"], c["start_line"]) for c in err["context"]["candidates"]] == [
        ("field_declaration", "shapes::B::m", 3), ("function_definition", "shapes::B::m", 7)]
    out = edit_session.ok("edit_preview", {"file": "members/decl.cpp", "operation": "delete",
                                           "selector_kind": "function_definition", "selector_name": "B.m"})
    assert out["target"]["kind"] == "function_definition" and out["target"]["start_line"] == 7


def test_syntax_breaking_edit_is_refused_byte_identical(edit_session, edit_root):
    """Seed flaw: syntax errors after an edit were collected but never refused."""
    path = write(edit_root, "broken/server.go", GO_SERVER)
    before = path.read_bytes()
    mtime = path.stat().st_mtime_ns
    err, text = edit_session.error("edit_apply", {"file": "broken/server.go", "operation": "replace",
                                                  "selector_name": "Other", "new_content": "func Other() int {"})
    assert err["code"] == 5009 and err["context"]["errors"]
    assert all(e["line"] >= 17 for e in err["context"]["errors"])
    assert path.read_bytes() == before and path.stat().st_mtime_ns == mtime
    assert not list(path.parent.glob(".*.filepuff-tmp"))


def test_bad_edit_inputs_are_typed(edit_session, edit_root):
    write(edit_root, "bad/a.txt", "alpha\nbeta\n")
    write(edit_root, "bad/latin1.txt", "caf\u00e9\n".encode("latin-1"))
    write(edit_root, "bad/bin.dat", b"\x00\x01binary")
    cases = [
        ({"file": "bad/a.txt", "operation": "delete"}, 5001),
        ({"file": "bad/a.txt", "operation": "replace", "selector_text": "alpha"}, 5003),
        ({"file": "bad/a.txt", "operation": "delete", "selector_name": "alpha"}, 5004),
        ({"file": "bad/a.txt", "operation": "delete", "selector_text": "gamma"}, 5006),
        ({"file": "bad/a.txt", "operation": "delete", "selector_pattern": "("}, 5005),
        ({"file": "bad/a.txt", "operation": "delete", "selector_line": 9}, 1105),
        ({"file": "bad/latin1.txt", "operation": "delete", "selector_line": 1}, 5011),
        ({"file": "bad/bin.dat", "operation": "delete", "selector_line": 1}, 1103),
        ({"file": "bad", "operation": "delete", "selector_line": 1}, 1102),
        ({"file": "../outside.txt", "operation": "delete", "selector_line": 1}, 1001),
        ({"file": "bad/a.txt", "operation": "rename", "selector_line": 1}, 1008),
    ]
    for args, code in cases:
        err, _ = edit_session.error("edit_apply", args)
        assert err["code"] == code, (args, err)
    assert (edit_root / "bad/a.txt").read_text() == "alpha\nbeta\n"


# ==== concurrency and crash safety ===================================================================


def test_twenty_concurrent_insertions_from_two_processes_all_land(edit_root, tmp_path):
    """Seed flaw: the file lock was an in-process mutex only."""
    path = write(edit_root, "conc/many.py", "class Many:\n    def anchor(self):\n        return 0\n")
    sessions = [McpSession(edit_root, tmp_path / f"stderr{i}.log").start() for i in range(2)]
    try:
        import concurrent.futures

        def burst(session: McpSession, start: int):
            calls = [("edit_apply", {"file": "conc/many.py", "operation": "insert_after", "selector_name": "anchor",
                                     "new_content": f"def m{i}(self):\n    return {i}"}) for i in range(start, start + 10)]
            return session.call_concurrently(calls)

        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            results = list(pool.map(burst, sessions, [0, 10]))
    finally:
        for session in sessions:
            _close_session(session)
    for batch in results:
        for result in batch:
            assert not result.is_error, result.structured_content
    cls = ast.parse(path.read_text()).body[0]
    names = {f.name for f in cls.body if isinstance(f, ast.FunctionDef)}
    assert names == {"anchor"} | {f"m{i}" for i in range(20)}


def test_killed_between_write_and_rename_leaves_old_or_new(edit_root, filepuff_bin):
    """Seed flaw: writes were a plain overwrite. Kill filepuff after the temp file is durable."""
    old = "def value():\n    return 'old'\n" * 200
    path = write(edit_root, "crash/victim.py", old)
    marker = edit_root / "crash-marker"
    env = {**os.environ, "FILEPUFF_TEST_HOLD_BEFORE_RENAME": str(marker)}
    proc = subprocess.Popen(
        [str(filepuff_bin), "--root", str(edit_root), "edit", "crash/victim.py", "--op", "replace",
         "--text", "'old'", "--index", "0", "--content", "'new'"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marker.exists(), proc.stderr.read().decode() if proc.poll() is not None else "no marker"
        temp = Path(marker.read_text())
        assert temp.parent == path.parent and temp.name.startswith(".victim.py.")
        assert temp.read_text() == old.replace("'old'", "'new'", 1)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert path.read_text() == old  # the old content, whole
    ast.parse(path.read_text())
    # The next edit of the file removes the leftover and lands whole.
    out = subprocess.run(
        [str(filepuff_bin), "--root", str(edit_root), "edit", "crash/victim.py", "--op", "replace",
         "--text", "'old'", "--index", "0", "--content", "'new'", "--json"],
        capture_output=True, text=True, check=True,
    )
    assert json.loads(out.stdout)["applied"]
    assert not temp.exists()
    assert path.read_text() == old.replace("'old'", "'new'", 1)


def test_cli_query_and_dry_run(edit_root, filepuff_bin):
    path = write(edit_root, "cli/server.go", GO_SERVER)
    out = subprocess.run([str(filepuff_bin), "--root", str(edit_root), "query", "func $NAME() int { $$$ }",
                          "--lang", "go", "cli", "--json"], capture_output=True, text=True, check=True)
    assert [m["name"] for m in json.loads(out.stdout)["matches"]] == ["Other"]
    none = subprocess.run([str(filepuff_bin), "--root", str(edit_root), "query", "func Missing()", "--lang", "go",
                           "cli"], capture_output=True, text=True)
    assert none.returncode == 1
    dry = subprocess.run([str(filepuff_bin), "--root", str(edit_root), "edit", "cli/server.go", "--op", "delete",
                          "--name", "Other", "--dry-run"], capture_output=True, text=True, check=True)
    assert "-func Other() int { return 1 }" in dry.stdout and path.read_text() == GO_SERVER
