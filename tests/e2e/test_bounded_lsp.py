"""Issue 17, items 1 and 2, through real language servers (gopls, basedpyright) and the official
Python MCP SDK.

1. Bounded LSP answers: references to a symbol with 1,650 uses (a Go module this test writes)
   come back in pages that each fit the output budget and whose union is exactly the list gopls
   itself gives (`gopls references`, and the CLI with a large budget); document symbols,
   workspace symbols, call hierarchy and diagnostics page the same way, the text agreeing with
   the structured content.
2. Diagnostics after every edit by default: the first edit_apply of a fresh session that
   introduces a type error reports it as introduced with status complete (the server is started
   for it); diagnostics=false reports none; a wait shorter than the server needs says timed_out.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import McpSession, _close_session, filepuff_binary
from test_lsp import TOOLS_BIN, line_of, require

FILES = 30
CALLS_PER_FUNC = 11
FUNCS_PER_FILE = 5  # 30 files x 5 callers x 11 calls = 1,650 uses
BUDGET = 40_000  # [limits] max_output_chars by default


def compact_len(value) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False))


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> Path:
    """A Go module with one function used 1,650 times from 150 callers in 30 files, a struct
    with many fields and methods, and a file with 60 type errors."""
    require("gopls")
    os.environ["PATH"] = f"{TOOLS_BIN}{os.pathsep}{os.environ.get('PATH', '')}"
    root = tmp_path_factory.mktemp("bounded") / "big"
    (root / "lib").mkdir(parents=True)
    (root / "uses").mkdir()
    (root / "broken").mkdir()
    (root / "go.mod").write_text("module example.com/big\n\ngo 1.21\n")
    fields = "\n".join(f"\tField{i:03} int" for i in range(120))
    methods = "\n".join(f"func (w *Wide) Method{i:03}() int {{ return w.Field{i:03} }}\n" for i in range(120))
    (root / "lib" / "lib.go").write_text(
        "package lib\n\n// Use returns its argument.\nfunc Use(i int) int { return i }\n\n"
        f"// Wide has many fields.\ntype Wide struct {{\n{fields}\n}}\n\n{methods}"
    )
    for f in range(FILES):
        funcs = []
        for g in range(FUNCS_PER_FILE):
            body = "".join(f"\ts += lib.Use({f * 1000 + g * 100 + c})\n" for c in range(CALLS_PER_FUNC))
            funcs.append(f"func Caller{f:02}x{g}() int {{\n\ts := 0\n{body}\treturn s\n}}\n")
        (root / "uses" / f"u{f:02}.go").write_text(
            'package uses\n\nimport "example.com/big/lib"\n\n' + "\n".join(funcs)
        )
    errors = "\n".join(f'var Bad{i:02} int = "not an int {i}"' for i in range(60))
    (root / "broken" / "broken.go").write_text(f"package broken\n\n{errors}\n")
    return root


@pytest.fixture(scope="module")
def session(big, tmp_path_factory):
    s = McpSession(big, tmp_path_factory.mktemp("mcp-bounded") / "stderr.log").start()
    yield s
    _close_session(s)


def all_pages(session: McpSession, tool: str, arguments: dict, budget: int = BUDGET) -> list[tuple[dict, str]]:
    """Every page of a paged tool, each asked from the previous one's next_offset: (structured
    content, text); each page checked against the budget and its own totals."""
    pages = []
    offset = 0
    while True:
        result = session.call(tool, {**arguments, "offset": offset})
        assert not result.is_error, result.content
        page = result.structured_content
        assert compact_len(page) <= budget, (tool, compact_len(page))
        assert page["offset"] == offset and page["returned"] >= 1
        pages.append((page, result.content[0].text))
        if page.get("next_offset") is None:
            assert not page["truncated"] and "hint" not in page
            return pages
        assert page["truncated"] and f"offset={page['next_offset']}" in page["hint"]
        assert page["next_offset"] == offset + page["returned"]
        offset = page["next_offset"]
        assert len(pages) < 500


def gopls_references(root: Path, file: Path, line: int, column: int) -> list[tuple[str, int, int]]:
    """`gopls references -d FILE:LINE:COL` (ASCII sources: byte columns are character columns)."""
    proc = subprocess.run([require("gopls"), "references", "-d", f"{file}:{line}:{column}"],
                          cwd=root, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = []
    for row in proc.stdout.split():
        path, l, span = row.rsplit(":", 2)
        out.append((str(Path(path).relative_to(root)), int(l), int(span.split("-")[0])))
    return out


def test_references_to_1650_uses_come_in_budget_sized_pages_whose_union_is_the_servers_list(session, big):
    lib = big / "lib" / "lib.go"
    line = line_of(lib, "func Use(")
    pages = all_pages(session, "find_references", {"file": "lib/lib.go", "line": line, "symbol": "Use"})
    # 1,651 references with their lines' text are about 150 KB: several pages of the default budget.
    assert len(pages) >= 3
    union = []
    for page, text in pages:
        assert page["completeness"] == "complete"
        rows = [(f["file"], r["line"], r["column"]) for f in page["files"] for r in f["references"]]
        assert len(rows) == page["returned"]
        # The text shows the same references as the structured content, and the same totals.
        shown = [ln for ln in text.splitlines() if ln.startswith("  ")]
        assert len(shown) == page["returned"]
        assert f"{page['total_references']} reference(s) in {page['total_files']} file(s)" in text
        union.extend(rows)
    total = pages[0][0]["total_references"]
    assert total == pages[0][0]["total"] == FILES * FUNCS_PER_FILE * CALLS_PER_FUNC + 1  # + the declaration
    assert pages[0][0]["total_files"] == FILES + 1
    assert len(union) == len(set(union)) == total
    assert union == sorted(union)
    assert set(union) == set(gopls_references(big, lib, line, 6))
    # The CLI with a budget large enough for all of them gives the same list in one answer.
    cli = subprocess.run([str(filepuff_binary()), "--root", str(big), "refs", f"lib/lib.go:{line}:6", "--json",
                          "--max-chars", "100000000"], capture_output=True, text=True, timeout=300)
    assert cli.returncode == 0, cli.stderr
    whole = json.loads(cli.stdout)
    assert not whole["truncated"] and whole["returned"] == total
    assert [(f["file"], r["line"], r["column"]) for f in whole["files"] for r in f["references"]] == union
    # max_results is a page size too.
    small = session.ok("find_references", {"file": "lib/lib.go", "line": line, "symbol": "Use", "max_results": 7,
                                           "offset": 100})
    rows = [(f["file"], r["line"], r["column"]) for f in small["files"] for r in f["references"]]
    assert rows == union[100:107] and small["next_offset"] == 107 and "max_results=7" in small["hint"]


def flat_symbols(symbols: list[dict], container: str | None = None) -> list[tuple[str, str, int, str | None]]:
    out = []
    for s in symbols:
        out.append((s["name"], s["kind"], s["line"], s.get("container", container)))
        out.extend(flat_symbols(s.get("children", []), s["name"]))
    return out


def test_document_and_workspace_symbols_page(session, big):
    whole = session.ok("document_symbols", {"file": "lib/lib.go", "max_chars": 10_000_000})
    expected = flat_symbols(whole["symbols"])
    assert whole["total"] == len(expected) >= 1 + 1 + 120 + 120 and not whole["truncated"]
    pages = all_pages(session, "document_symbols", {"file": "lib/lib.go", "max_chars": 4000}, budget=4000)
    assert len(pages) > 3
    union = [s for page, _ in pages for s in flat_symbols(page["symbols"])]
    assert union == expected
    # A field whose struct is on an earlier page names it.
    later_fields = [s for page, _ in pages[1:] for s in page["symbols"] if s["name"].startswith("Field")]
    assert later_fields and all(s["container"] == "Wide" for s in later_fields)
    for page, text in pages:
        assert f"page: symbols {page['offset'] + 1}-{page['offset'] + page['returned']} of {page['total']}" in text

    # workspace/symbol: the server's ranking, paged (gopls caps its own answer at 100).
    whole = session.ok("workspace_symbols", {"query": "Method", "language": "go", "max_results": 1000})
    expected = [(s["name"], s["file"], s["line"]) for s in whole["symbols"]]
    assert len(expected) == whole["total"] >= 50
    pages = all_pages(session, "workspace_symbols", {"query": "Method", "language": "go", "max_results": 15})
    assert [(s["name"], s["file"], s["line"]) for page, _ in pages for s in page["symbols"]] == expected
    assert all(page["returned"] <= 15 for page, _ in pages)


def test_call_hierarchy_and_diagnostics_page(session, big):
    lib = big / "lib" / "lib.go"
    line = line_of(lib, "func Use(")
    whole = session.ok("call_hierarchy", {"file": "lib/lib.go", "line": line, "symbol": "Use",
                                          "max_chars": 10_000_000})
    expected = [(c["name"], c["file"], c["line"], tuple(c["call_lines"])) for c in whole["calls"]]
    assert len(expected) == whole["total"] == FILES * FUNCS_PER_FILE
    pages = all_pages(session, "call_hierarchy", {"file": "lib/lib.go", "line": line, "symbol": "Use",
                                                  "max_chars": 5000}, budget=5000)
    assert [(c["name"], c["file"], c["line"], tuple(c["call_lines"])) for p, _ in pages for c in p["calls"]] == expected

    whole = session.ok("diagnostics", {"file": "broken/broken.go"})
    expected = [(d["line"], d["message"]) for d in whole["diagnostics"]]
    assert whole["total"] == len(expected) == 60 and whole["current"]
    pages = all_pages(session, "diagnostics", {"file": "broken/broken.go", "max_results": 25})
    assert [len(p["diagnostics"]) for p, _ in pages] == [25, 25, 10]
    assert [(d["line"], d["message"]) for p, _ in pages for d in p["diagnostics"]] == expected
    everywhere = all_pages(session, "diagnostics", {"max_results": 25})
    rows = [(d["file"], d["line"], d["message"]) for p, _ in everywhere for d in p["diagnostics"]]
    assert len(rows) == everywhere[0][0]["total"] and rows == sorted(rows)
    assert {(f, l, m) for f, l, m in rows if f == "broken/broken.go"} == {("broken/broken.go", l, m) for l, m in expected}


# ==== diagnostics after an edit ====================================================================

GO_GREET = 'package greet\n\n// Hello greets name.\nfunc Hello(name string) string {\n\treturn "hello, " + name\n}\n'
PY_PRICES = "def total(prices: list[int]) -> int:\n    return sum(prices)\n"


def fresh_project(tmp_path: Path, language: str, config: str = "") -> tuple[Path, dict]:
    """A new project and the edit_apply arguments that introduce a type error into it."""
    root = tmp_path / f"fresh-{language}"
    root.mkdir()
    if config:
        (root / "filepuff.toml").write_text(config)
    if language == "go":
        require("gopls")
        (root / "go.mod").write_text("module example.com/fresh\n\ngo 1.21\n")
        (root / "greet.go").write_text(GO_GREET)
        return root, {"file": "greet.go", "operation": "replace", "selector_text": 'return "hello, " + name',
                      "new_content": "return 42"}
    require("basedpyright-langserver")
    (root / "prices.py").write_text(PY_PRICES)
    return root, {"file": "prices.py", "operation": "replace", "selector_text": "return sum(prices)",
                  "new_content": 'return "none"'}


@pytest.mark.parametrize("language", ["go", "python"])
def test_first_edit_of_a_fresh_session_reports_the_type_error_it_introduces(tmp_path, language):
    os.environ["PATH"] = f"{TOOLS_BIN}{os.pathsep}{os.environ.get('PATH', '')}"
    root, edit = fresh_project(tmp_path, language)
    session = McpSession(root, tmp_path / "stderr.log").start()
    try:
        result = session.call("edit_apply", edit)
        assert not result.is_error, result.content
        out = result.structured_content
        assert out["applied"]
        d = out["diagnostics"]
        assert d["status"] == "complete" and d["current"] and "error" not in d, d
        errors = [i for i in d["introduced"] if i["severity"] == "error"]
        line = 5 if language == "go" else 2
        assert [(i["file"], i["line"]) for i in errors] == [(edit["file"], line)], d
        assert ("42" in errors[0]["message"]) if language == "go" else ("int" in errors[0]["message"])
        assert d["total_introduced"] == len(d["introduced"]) and d["resolved"] == 0
        assert "introduced" in result.content[0].text and "complete" in result.content[0].text
        # Undoing it resolves it, the server being warm now.
        undo = {**edit, "selector_text": edit["new_content"], "new_content": edit["selector_text"]}
        fixed = session.ok("edit_apply", undo)["diagnostics"]
        assert fixed["status"] == "complete" and fixed["introduced"] == [] and fixed["resolved"] == len(d["introduced"])
        # diagnostics=false: none asked, none reported.
        quiet = session.ok("edit_apply", {**edit, "diagnostics": False})
        assert quiet["applied"] and "diagnostics" not in quiet
    finally:
        _close_session(session)


def test_a_wait_shorter_than_the_server_needs_says_timed_out(tmp_path):
    os.environ["PATH"] = f"{TOOLS_BIN}{os.pathsep}{os.environ.get('PATH', '')}"
    root, edit = fresh_project(tmp_path, "go", "[lsp]\nedit_diagnostics_timeout_ms = 1\n")
    session = McpSession(root, tmp_path / "stderr.log").start()
    try:
        out = session.ok("edit_apply", edit)
        assert out["applied"] and (root / "greet.go").read_text() == GO_GREET.replace('"hello, " + name', "42")
        d = out["diagnostics"]
        assert d["status"] == "timed_out" and d["current"] is False, d
    finally:
        _close_session(session)


def test_a_language_without_an_installed_server_reports_no_diagnostics(tmp_path, filepuff_bin):
    root = tmp_path / "bare"
    root.mkdir()
    (root / "greet.go").write_text(GO_GREET)
    out = subprocess.run([str(filepuff_bin), "--root", str(root), "edit", "greet.go", "--op", "replace", "--text",
                          '"hello, "', "--content", '"hi, "', "--json"],
                         capture_output=True, text=True, env={**os.environ, "PATH": "/usr/bin:/bin"}, timeout=60)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["applied"] and "diagnostics" not in result
