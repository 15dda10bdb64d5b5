"""End-to-end tests: the real `filepuff` binary over MCP stdio (official Python SDK) and its CLI,
on real corpora (Go's and CPython's standard libraries) and on a small temporary workspace.

Every expected value is computed here independently of filepuff: with grep, Python's `re` and
`ast`, Go's `go/parser` (go_outline/main.go), or by reading the files. Nothing is copied from
filepuff's own output.

Run: .venv/bin/pytest -q tests/e2e
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

import mcp.types as types
from conftest import structured_error, MARKER, SIZE_LIMIT, filepuff_binary
from oracles import (
    expected_search,
    file_lines,
    first_line_after,
    grep_count_lines,
    grep_line_numbers,
    grep_recursive_counts,
    lines_with_ends,
    normalise_symbols,
    python_outline,
    snapshot,
    walk_files,
    without_hint,
)

SERVER_GO = "net/http/server.go"

# Exported methods on a (pointer) receiver; written so that Python's re, GNU grep -E and Rust's
# regex read it the same way.
METHOD_REGEX = r"^func \([a-z]+ \*?[A-Z][A-Za-z0-9_]*\) [A-Z]"
LITERAL_WITH_METACHARS = "w.Header().Set("


@dataclass(frozen=True)
class Signature:
    literal: str  # `func (s *Server) ListenAndServe() error`, receiver as this Go version names it
    regex: str  # the same, escaped as a regex
    line: int  # its line in net/http/server.go, by grep


@pytest.fixture(scope="module")
def sig(goroot_src) -> Signature:
    """The real signature of (*Server).ListenAndServe, found with grep (the receiver's name varies)."""
    proc = subprocess.run(
        ["grep", "-nE", r"^func \([a-z]+ \*Server\) ListenAndServe\(\) error", str(goroot_src / SERVER_GO)],
        capture_output=True, text=True, check=True,
    )
    [hit] = proc.stdout.splitlines()
    line, _, text = hit.partition(":")
    literal = text.removesuffix(" {")
    return Signature(literal=literal, regex=re.escape(literal).replace("\\ ", " "), line=int(line))


# ==== protocol basics ============================================================================


def test_initialize_and_ping(go_session):
    init = go_session.initialize_result
    assert init is not None and init.server_info.name == "filepuff"
    assert init.capabilities.tools is not None

    result = go_session.call("ping")
    assert not result.is_error
    assert [(b.type, b.text) for b in result.content if isinstance(b, types.TextContent)] == [("text", "pong")]


def test_tools_list_has_the_seed_tools_with_schemas(go_session):
    tools = {tool.name: tool for tool in go_session.list_tools().tools}
    assert {"ping", "file_search", "file_read"} <= set(tools)
    for tool in tools.values():
        assert tool.input_schema.get("type") == "object", tool.name
        assert tool.description, tool.name

    search = tools["file_search"]
    assert set(search.input_schema["properties"]) >= {
        "pattern", "paths", "file_types", "ignore_case", "regex", "context_lines", "max_results",
    }
    assert search.input_schema.get("required") == ["pattern"]
    assert search.output_schema is not None and search.output_schema.get("type") == "object"
    assert set(search.output_schema["properties"]) >= {
        "pattern", "total_matches", "total_files", "files_searched", "returned_matches", "truncated", "files", "hint",
    }

    read = tools["file_read"]
    assert set(read.input_schema["properties"]) >= {
        "path", "line_start", "line_end", "include_ast", "symbols_only", "max_lines",
    }
    assert read.input_schema.get("required") == ["path"]
    assert read.output_schema is not None and read.output_schema.get("type") == "object"
    assert set(read.output_schema["properties"]) >= {
        "path", "language", "source", "total_lines", "line_start", "line_end", "content", "truncated",
        "next_line_start", "symbols", "notes",
    }


# ==== file_search over GOROOT/src ================================================================


def test_search_signature_over_goroot(go_session, goroot_src, sig):
    server_go = goroot_src / SERVER_GO
    line_no = sig.line
    lines = file_lines(server_go)
    everywhere = grep_recursive_counts(goroot_src, sig.literal, fixed=True)
    assert everywhere.get(SERVER_GO) == 1

    result = go_session.ok("file_search", {"pattern": sig.regex})

    assert result["pattern"] == sig.regex
    assert result["total_matches"] == sum(everywhere.values())
    assert result["total_files"] == len(everywhere)
    assert result["truncated"] is False and "hint" not in result
    assert result["files_searched"] == len(walk_files(goroot_src))
    assert [f["path"] for f in result["files"]] == sorted(everywhere)
    by_path = {f["path"]: f for f in result["files"]}
    [match] = by_path[SERVER_GO]["matches"]
    assert by_path[SERVER_GO]["total_matches"] == 1
    assert match["line"] == line_no
    assert match["text"] == lines[line_no - 1]
    assert match["column"] == lines[line_no - 1].index(sig.literal) + 1
    assert match["before"] == [{"line": n, "text": lines[n - 1]} for n in (line_no - 2, line_no - 1)]
    assert match["after"] == [{"line": n, "text": lines[n - 1]} for n in (line_no + 1, line_no + 2)]
    assert "text_truncated" not in match


def test_search_literal_mode_and_context_variants(go_session, goroot_src, sig):
    server_go = goroot_src / SERVER_GO
    line_no = sig.line
    lines = file_lines(server_go)

    # regex=false: the signature's parentheses and '*' are plain text.
    literal = go_session.ok("file_search", {"pattern": sig.literal, "regex": False, "paths": ["net/http"]})
    assert [(f["path"], [m["line"] for m in f["matches"]]) for f in literal["files"]] == [(SERVER_GO, [line_no])]

    # A match that does not start the line: the column counts characters up to it.
    needle = "ListenAndServe() error"
    no_context = go_session.ok(
        "file_search", {"pattern": needle, "regex": False, "paths": [SERVER_GO], "context_lines": 0}
    )
    hits = [m for f in no_context["files"] for m in f["matches"]]
    expected_lines = grep_line_numbers(server_go, needle)
    assert [m["line"] for m in hits] == expected_lines
    for m in hits:
        assert m["column"] == lines[m["line"] - 1].index(needle) + 1
        assert "before" not in m and "after" not in m

    wide = go_session.ok("file_search", {"pattern": sig.regex, "paths": [SERVER_GO], "context_lines": 5})
    [match] = wide["files"][0]["matches"]
    assert match["before"] == [{"line": n, "text": lines[n - 1]} for n in range(line_no - 5, line_no)]
    assert match["after"] == [{"line": n, "text": lines[n - 1]} for n in range(line_no + 1, line_no + 6)]


OUTPUT_BUDGET = 40_000  # [limits] max_output_chars, the default


def compact_len(result: dict) -> int:
    """Characters of the result as the server counts its budget: compact JSON, UTF-8 text."""
    return len(json.dumps(result, separators=(",", ":"), ensure_ascii=False))


def search_every_page(session, args: dict) -> tuple[list[dict], list[dict]]:
    """file_search from offset 0, following each cut page's hint to the next offset, until a
    page is complete. Each page must be within the output budget and name its continuation.
    Returns the pages and every file's matches merged across pages (a file may be split)."""
    pages = []
    offset = 0
    while True:
        page = session.ok("file_search", {**args, "offset": offset})
        assert compact_len(page) <= OUTPUT_BUDGET, compact_len(page)
        pages.append(page)
        if not page["truncated"]:
            assert "hint" not in page
            break
        assert page["returned_matches"] > 0
        offset += page["returned_matches"]
        assert f"continue with offset={offset}" in page["hint"], page["hint"]
    merged: dict[str, dict] = {}
    for page in pages:
        for f in page["files"]:
            entry = merged.setdefault(f["path"], {"path": f["path"], "total_matches": f["total_matches"], "matches": []})
            entry["matches"].extend(f["matches"])
    return pages, list(merged.values())


@pytest.mark.parametrize(
    ("pattern", "regex", "ignore_case"),
    [
        pytest.param(LITERAL_WITH_METACHARS, False, False, id="literal"),
        pytest.param(METHOD_REGEX, True, False, id="regex"),
        pytest.param("content-type", True, True, id="ignore-case"),
    ],
)
def test_search_counts_and_matches_in_net_http(go_session, goroot_src, pattern, regex, ignore_case):
    files = walk_files(goroot_src, "net/http", (".go",))
    expected = expected_search(
        goroot_src, files, pattern, regex=regex, ignore_case=ignore_case, max_results=1_000_000
    )
    grep_counts = grep_recursive_counts(
        goroot_src, pattern, ["net/http"], fixed=not regex, ignore_case=ignore_case, include="*.go"
    )
    # The two oracles agree with each other before either judges filepuff.
    assert {f["path"]: f["total_matches"] for f in expected["files"]} == grep_counts
    assert expected["total_matches"] > 10

    # An explicit, very large max_results does not lift the output budget: the answer is a
    # bounded page whose hint says where to continue, and the pages together are everything.
    args = {
        "pattern": pattern, "regex": regex, "ignore_case": ignore_case, "paths": ["net/http"],
        "file_types": ["go"], "max_results": 1_000_000,
    }
    pages, every_file = search_every_page(go_session, args)
    first = pages[0]
    assert first["total_matches"] == sum(grep_counts.values())
    assert first["total_files"] == len(grep_counts)
    assert first["files_searched"] == len(files)
    returned = first["returned_matches"]
    assert without_hint(first) == expected_search(
        goroot_src, files, pattern, regex=regex, ignore_case=ignore_case, max_results=returned
    )
    assert every_file == expected["files"]
    for page in pages:
        assert (page["total_matches"], page["total_files"]) == (expected["total_matches"], expected["total_files"])


def test_an_explicit_max_results_of_a_million_returns_a_budgeted_page(go_session, goroot_src):
    """The regression: max_results=1000000 used to switch the output budget off (200k+ chars)."""
    files = walk_files(goroot_src, "net/http", (".go",))
    args = {"pattern": "err", "paths": ["net/http"], "file_types": ["go"], "max_results": 1_000_000}
    full = expected_search(goroot_src, files, "err", max_results=1_000_000)
    assert compact_len(full) > 5 * OUTPUT_BUDGET
    page = go_session.ok("file_search", args)
    assert compact_len(page) <= OUTPUT_BUDGET
    returned = page["returned_matches"]
    assert page["truncated"] is True and 0 < returned < full["total_matches"]
    assert without_hint(page) == expected_search(goroot_src, files, "err", max_results=returned)
    assert f"{full['total_matches'] - returned} more: continue with offset={returned}" in page["hint"]
    assert "output budget of 40000 characters" in page["hint"]
    # The hint's offset continues exactly where the page stopped.
    following = go_session.ok("file_search", {**args, "offset": returned, "max_chars": 5000})
    flat = [(f["path"], m) for f in full["files"] for m in f["matches"]]
    assert [(f["path"], m) for f in following["files"] for m in f["matches"]] == flat[returned:returned + following["returned_matches"]]


def test_search_max_results_truncates_in_path_order(go_session, goroot_src):
    files = walk_files(goroot_src, "net/http", (".go",))
    full = expected_search(goroot_src, files, METHOD_REGEX, max_results=1_000_000)
    first_file_hits = full["files"][0]["total_matches"]
    args = {"pattern": METHOD_REGEX, "paths": ["net/http"], "file_types": ["go"]}

    for limit in sorted({1, 7, first_file_hits, first_file_hits + 1}):
        result = go_session.ok("file_search", {**args, "max_results": limit})
        expected = expected_search(goroot_src, files, METHOD_REGEX, max_results=limit)
        assert without_hint(result) == expected, f"max_results={limit}"
        assert result["returned_matches"] == limit
        assert result["truncated"] is True
        assert result["total_matches"] == full["total_matches"]
        assert isinstance(result.get("hint"), str) and result["hint"]

    # Default max_results is 100.
    default = go_session.ok("file_search", args)
    assert without_hint(default) == expected_search(goroot_src, files, METHOD_REGEX)
    assert default["returned_matches"] == min(100, full["total_matches"])


def test_search_is_sorted_and_deterministic(go_session):
    args = {"pattern": r"\bTODO\b", "file_types": ["go"], "max_results": 300}
    first = go_session.ok("file_search", args)
    second = go_session.ok("file_search", args)
    assert first == second
    paths = [f["path"] for f in first["files"]]
    assert paths == sorted(paths) and len(paths) == len(set(paths))
    for f in first["files"]:
        lines = [m["line"] for m in f["matches"]]
        assert lines == sorted(lines)
        assert "\\" not in f["path"] and not f["path"].startswith("/")


def test_search_columns_count_characters_not_bytes(go_session, goroot_src):
    files = walk_files(goroot_src, "strings", (".go",))
    pattern = "hello|world"
    expected = expected_search(goroot_src, files, pattern, ignore_case=True, max_results=1_000_000)
    non_ascii_before_match = [
        m for f in expected["files"] for m in f["matches"] if not m["text"][: m["column"] - 1].isascii()
    ]
    assert non_ascii_before_match, "the corpus should have a match after non-ASCII text"
    pages, every_file = search_every_page(
        go_session, {"pattern": pattern, "ignore_case": True, "paths": ["strings"], "file_types": ["go"]}
    )
    assert every_file == expected["files"]
    assert pages[0]["total_matches"] == expected["total_matches"]


def test_search_cuts_long_lines(go_session, goroot_src):
    files = walk_files(goroot_src, "net/http", (".go",))
    expected = expected_search(goroot_src, files, ".{400}", max_results=1_000_000)
    assert any(m.get("text_truncated") for f in expected["files"] for m in f["matches"])
    # max_chars sets the budget explicitly: this one asks for everything in one answer.
    result = go_session.ok(
        "file_search",
        {"pattern": ".{400}", "paths": ["net/http"], "file_types": ["go"], "max_results": 1_000_000, "max_chars": 10_000_000},
    )
    assert result == expected


@pytest.mark.parametrize("pattern", ["ListenAndServe", "sync.Mutex", "TODO"])
def test_search_totals_over_all_of_goroot(go_session, goroot_src, pattern):
    counts = grep_recursive_counts(goroot_src, pattern, fixed=True)
    result = go_session.ok("file_search", {"pattern": pattern, "regex": False, "max_results": 5})
    assert result["total_matches"] == sum(counts.values())
    assert result["total_files"] == len(counts)
    # The first files in path order, each with its own full count.
    shown = [f["path"] for f in result["files"]]
    assert shown == sorted(counts)[: len(shown)]
    for f in result["files"]:
        assert f["total_matches"] == counts[f["path"]]


def test_search_overlapping_paths_count_each_file_once(go_session, goroot_src):
    """A file named twice (directly and through its directory) is one file with its matches once."""
    pattern = r"ListenAndServe\("
    counts = grep_recursive_counts(goroot_src, pattern, ["net/http"], include="*.go")
    base = {"pattern": pattern, "file_types": ["go"], "max_results": 1000}
    alone = go_session.ok("file_search", {**base, "paths": ["net/http"]})
    overlapping = go_session.ok("file_search", {**base, "paths": ["net/http", SERVER_GO]})
    assert alone["total_matches"] == sum(counts.values())
    assert [f["path"] for f in overlapping["files"]] == sorted(counts)
    # Internal consistency: nothing was truncated, so the per-file totals add up to the totals.
    assert sum(f["total_matches"] for f in overlapping["files"]) == overlapping["total_matches"]
    assert len(overlapping["files"]) == overlapping["total_files"]
    assert overlapping["total_matches"] == sum(counts.values())


# ==== file_read over GOROOT/src ==================================================================


def test_read_go_symbols_listenandserve_and_server(go_session, goroot_src, sig):
    lines = file_lines(goroot_src / SERVER_GO)
    sig_line = sig.line
    [type_line] = grep_line_numbers(goroot_src / SERVER_GO, "type Server struct {")

    result = go_session.ok("file_read", {"path": SERVER_GO, "symbols_only": True})
    assert result["path"] == SERVER_GO
    assert result["language"] == "go"
    assert result["source"] == "disk"
    assert result["total_lines"] == grep_count_lines(goroot_src / SERVER_GO)
    assert "content" not in result

    symbols = result["symbols"]
    [method] = [s for s in symbols if s["name"] == "ListenAndServe" and s.get("container") == "*Server"]
    assert method["kind"] == "method"
    assert method["start_line"] == sig_line
    assert method["end_line"] == first_line_after(lines, sig_line, "}")

    [func] = [s for s in symbols if s["name"] == "ListenAndServe" and "container" not in s]
    assert func["kind"] == "function"
    assert func["start_line"] == grep_line_numbers(goroot_src / SERVER_GO, "func ListenAndServe(")[0]

    [server] = [s for s in symbols if s["name"] == "Server"]
    assert server["kind"] == "struct"
    assert server["start_line"] == type_line
    assert server["end_line"] == first_line_after(lines, type_line, "}")


def test_read_line_ranges_return_exactly_those_lines(go_session, goroot_src, sig):
    path = goroot_src / SERVER_GO
    with_ends = lines_with_ends(path)
    total = grep_count_lines(path)
    sig_line = sig.line

    for start, end in [(1, 1), (sig_line, sig_line + 13), (total - 4, total), (total, total)]:
        result = go_session.ok("file_read", {"path": SERVER_GO, "line_start": start, "line_end": end})
        assert (result["line_start"], result["line_end"]) == (start, end)
        assert result["content"] == "".join(with_ends[start - 1 : end])
        assert result["total_lines"] == total
        assert result["truncated"] is False and "next_line_start" not in result
        assert "symbols" not in result

    # include_ast: the content and the outline together.
    both = go_session.ok("file_read", {"path": SERVER_GO, "line_start": 3, "line_end": 5, "include_ast": True})
    assert both["content"] == "".join(with_ends[2:5])
    assert any(s["name"] == "Server" for s in both["symbols"])


def test_read_max_lines_and_clamping(go_session, goroot_src):
    path = goroot_src / SERVER_GO
    with_ends = lines_with_ends(path)
    total = grep_count_lines(path)

    cut = go_session.ok("file_read", {"path": SERVER_GO, "line_start": 10, "max_lines": 5})
    assert (cut["line_start"], cut["line_end"]) == (10, 14)
    assert cut["truncated"] is True and cut["next_line_start"] == 15
    assert cut["content"] == "".join(with_ends[9:14])

    default = go_session.ok("file_read", {"path": SERVER_GO})
    assert default["line_end"] == min(total, 2000)
    assert default["truncated"] is (total > 2000)
    assert default["content"] == "".join(with_ends[: min(total, 2000)])

    clamped = go_session.ok("file_read", {"path": SERVER_GO, "line_start": total - 1, "line_end": total + 50})
    assert (clamped["line_start"], clamped["line_end"]) == (total - 1, total)
    assert clamped["content"] == "".join(with_ends[total - 2 :])
    assert clamped.get("notes"), "clamping line_end should be noted"


def test_read_accepts_absolute_paths_and_file_uris_inside_root(go_session, goroot_src):
    path = goroot_src / SERVER_GO
    expected = "".join(lines_with_ends(path)[:3])
    for given in [str(path), path.as_uri(), "net/http/../http/./server.go"]:
        result = go_session.ok("file_read", {"path": given, "line_end": 3})
        assert result["path"] == SERVER_GO, given
        assert result["content"] == expected, given


GO_OUTLINE_FILES = [
    SERVER_GO,
    "net/http/request.go",
    "go/ast/ast.go",
    "sort/sort.go",
    "slices/sort.go",
    "container/list/list.go",
    "sync/map.go",
    "os/file.go",
    "internal/types/testdata/fixedbugs/issue39754.go",  # CRLF line endings, a generic receiver
]


@pytest.mark.parametrize("rel", GO_OUTLINE_FILES)
def test_go_outline_matches_go_parser(go_session, goroot_src, go_outline_bin, rel):
    if not (goroot_src / rel).is_file():
        pytest.skip(f"{rel} is not in this Go version")
    proc = subprocess.run([str(go_outline_bin), str(goroot_src / rel)], capture_output=True, text=True, check=True)
    expected = json.loads(proc.stdout)
    assert expected, rel
    result = go_session.ok("file_read", {"path": rel, "symbols_only": True})
    got = normalise_symbols(result["symbols"], ("name", "kind", "container", "start_line", "end_line"))
    assert got == expected


def test_crlf_file_lines_and_matches(go_session, goroot_src):
    rel = "internal/types/testdata/fixedbugs/issue39754.go"
    path = goroot_src / rel
    if not path.is_file():
        pytest.skip(f"{rel} is not in this Go version")
    raw = path.read_bytes()
    assert raw.count(b"\r\n") == raw.count(b"\n") > 0, "expected a CRLF file"

    read = go_session.ok("file_read", {"path": rel})
    assert read["total_lines"] == grep_count_lines(path)
    assert read["content"] == raw.decode("utf-8")  # line breaks as in the file

    lines = file_lines(path)
    search = go_session.ok("file_search", {"pattern": "func ", "paths": [rel], "context_lines": 1})
    expected_lines = grep_line_numbers(path, "func ")
    matches = search["files"][0]["matches"]
    assert [m["line"] for m in matches] == expected_lines
    for m in matches:
        assert m["text"] == lines[m["line"] - 1].rstrip("\r")  # shown without the CR
        for ctx in m.get("before", []) + m.get("after", []):
            assert ctx["text"] == lines[ctx["line"] - 1].rstrip("\r")


def test_concurrent_calls_each_get_their_own_answer(go_session, sig):
    calls = [
        ("file_search", {"pattern": sig.regex, "paths": ["net/http"]}),
        ("file_read", {"path": SERVER_GO, "line_start": 100, "line_end": 120}),
        ("file_search", {"pattern": "TODO", "file_types": ["go"], "paths": ["net"], "max_results": 20}),
        ("file_read", {"path": "sort/sort.go", "symbols_only": True}),
        ("file_read", {"path": "no/such/file.go"}),
        ("file_search", {"pattern": METHOD_REGEX, "paths": ["net/http"], "max_results": 3}),
        ("ping", {}),
        ("file_read", {"path": "go/ast/ast.go", "include_ast": True, "max_lines": 50}),
    ]
    sequential = [go_session.call(tool, args) for tool, args in calls]
    concurrent = go_session.call_concurrently(calls)
    for (tool, args), one, many in zip(calls, sequential, concurrent):
        assert (many.is_error, many.structured_content) == (one.is_error, one.structured_content), (tool, args)
        assert [b.text for b in many.content] == [b.text for b in one.content]
    assert concurrent[4].is_error and structured_error(concurrent[4])[0]["code"] == 1101


# ==== file_read over CPython's standard library ===================================================


def test_python_methods_are_children_of_their_class(py_session, py_stdlib):
    source = (py_stdlib / "json" / "decoder.py").read_text(encoding="utf-8")
    [cls] = [n for n in ast.parse(source).body if isinstance(n, ast.ClassDef) and n.name == "JSONDecoder"]
    methods = [n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    assert methods and not any(m.decorator_list for m in methods)

    result = py_session.ok("file_read", {"path": "json/decoder.py", "symbols_only": True})
    assert result["language"] == "python"
    [symbol] = [s for s in result["symbols"] if s["name"] == "JSONDecoder"]
    assert symbol["kind"] == "class"
    assert symbol["start_line"] == cls.lineno
    children = symbol["children"]
    assert [c["kind"] for c in children] == ["method"] * len(methods)
    assert [(c["name"], c["start_line"]) for c in children] == [(m.name, m.lineno) for m in methods]
    # End lines: ast's end_lineno, stretched over trailing comments still indented in the body.
    [oracle] = [s for s in python_outline(source) if s["name"] == "JSONDecoder"]
    assert [c["end_line"] for c in children] == [c["end_line"] for c in oracle["children"]]
    assert all(c["end_line"] >= m.end_lineno for c, m in zip(children, methods))
    # Methods live under their class only.
    assert not [s for s in result["symbols"] if s["kind"] == "method"]


PYTHON_OUTLINE_FILES = [
    "json/decoder.py",  # plain classes and functions, constants
    "asyncio/queues.py",  # async methods, a decorated method
    "textwrap.py",  # methods ending in indented comments
    "os.py",  # definitions inside module-level if/try blocks
    "tempfile.py",  # decorated functions and methods
]


@pytest.mark.parametrize("rel", PYTHON_OUTLINE_FILES)
def test_python_outline_matches_ast(py_session, py_stdlib, rel):
    source = (py_stdlib / rel).read_text(encoding="utf-8")
    expected = python_outline(source)
    assert expected
    result = py_session.ok("file_read", {"path": rel, "symbols_only": True})
    got = normalise_symbols(result["symbols"], ("name", "kind", "container", "start_line", "end_line"))
    assert got == expected


def test_search_column_after_invalid_utf8_in_stdlib(py_session, py_stdlib):
    """Columns count the characters of the text returned, also when invalid UTF-8 precedes the match."""
    rel = "test/encoded_modules/module_iso_8859_1.py"
    if not (py_stdlib / rel).is_file():
        pytest.skip(f"{rel} is not in this Python's standard library")
    lines = file_lines(py_stdlib / rel)
    [line_no] = grep_line_numbers(py_stdlib / rel, "cette")
    assert not lines[line_no - 1].isascii()

    result = py_session.ok("file_search", {"pattern": "cette", "paths": [rel], "context_lines": 0})
    [match] = result["files"][0]["matches"]
    assert match["line"] == line_no
    assert match["text"] == lines[line_no - 1]
    assert match["column"] == lines[line_no - 1].index("cette") + 1


# ==== bad input on a temporary workspace ==========================================================


def _secret(ws) -> str:
    return os.path.realpath(ws.outside / "secret.txt")


BAD_INPUTS = [
    # (id, tool, arguments(ws), code, name, expected context subset(ws))
    ("missing-file", "file_read", lambda ws: {"path": "missing.txt"}, 1101, "FILE_NOT_FOUND",
     lambda ws: {"path": "missing.txt"}),
    ("missing-search-path", "file_search", lambda ws: {"pattern": "x", "paths": ["missing-dir"]}, 1101,
     "FILE_NOT_FOUND", lambda ws: {"path": "missing-dir"}),
    ("directory", "file_read", lambda ws: {"path": "sub"}, 1102, "FILE_IS_DIRECTORY", lambda ws: {"path": "sub"}),
    ("binary", "file_read", lambda ws: {"path": "bin.dat"}, 1103, "FILE_BINARY",
     lambda ws: {"path": "bin.dat", "nul_offset": ws.path("bin.dat").read_bytes().index(b"\0")}),
    ("too-large", "file_read", lambda ws: {"path": "big.txt"}, 1104, "FILE_TOO_LARGE",
     lambda ws: {"path": "big.txt", "size_bytes": ws.path("big.txt").stat().st_size, "limit_bytes": SIZE_LIMIT}),
    ("missing-argument", "file_search", lambda ws: {}, 1008, "PARAMS_INVALID", lambda ws: {}),
    ("mistyped-argument", "file_search", lambda ws: {"pattern": "x", "max_results": "ten"}, 1008,
     "PARAMS_INVALID", lambda ws: {}),
    ("mistyped-path", "file_read", lambda ws: {"path": 7}, 1008, "PARAMS_INVALID", lambda ws: {}),
    ("invalid-regex", "file_search", lambda ws: {"pattern": "(unclosed"}, 2001, "SEARCH_INVALID_REGEX",
     lambda ws: {"pattern": "(unclosed"}),
    ("regex-with-newline", "file_search", lambda ws: {"pattern": "a\\nb"}, 2001, "SEARCH_INVALID_REGEX",
     lambda ws: {"pattern": "a\\nb"}),
    ("unknown-file-type", "file_search", lambda ws: {"pattern": "x", "file_types": ["nosuchtype"]}, 2002,
     "SEARCH_UNKNOWN_FILE_TYPE", lambda ws: {"file_type": "nosuchtype"}),
    ("line-start-past-end", "file_read",
     lambda ws: {"path": "hello.txt", "line_start": grep_count_lines(ws.path("hello.txt")) + 1}, 1105,
     "LINE_RANGE_PAST_END",
     lambda ws: {"path": "hello.txt", "total_lines": grep_count_lines(ws.path("hello.txt")),
                 "line_start": grep_count_lines(ws.path("hello.txt")) + 1}),
    ("line-end-before-start", "file_read", lambda ws: {"path": "hello.txt", "line_start": 3, "line_end": 2}, 1106,
     "LINE_RANGE_INVALID", lambda ws: {"path": "hello.txt"}),
    ("line-start-zero", "file_read", lambda ws: {"path": "hello.txt", "line_start": 0}, 1106,
     "LINE_RANGE_INVALID", lambda ws: {"path": "hello.txt"}),
    ("max-lines-zero", "file_read", lambda ws: {"path": "hello.txt", "max_lines": 0}, 1106,
     "LINE_RANGE_INVALID", lambda ws: {"path": "hello.txt"}),
    ("dotdot", "file_read", lambda ws: {"path": "../x"}, 1001, "PATH_OUTSIDE_ROOT", lambda ws: {"path": "../x"}),
    ("dotdot-existing", "file_read", lambda ws: {"path": "../outside/secret.txt"}, 1001, "PATH_OUTSIDE_ROOT",
     lambda ws: {"path": "../outside/secret.txt"}),
    ("nested-dotdot", "file_read", lambda ws: {"path": "sub/../../outside/secret.txt"}, 1001,
     "PATH_OUTSIDE_ROOT", lambda ws: {}),
    ("absolute-outside", "file_read", lambda ws: {"path": _secret(ws)}, 1001, "PATH_OUTSIDE_ROOT",
     lambda ws: {"path": _secret(ws)}),
    ("absolute-etc-passwd", "file_read", lambda ws: {"path": "/etc/passwd"}, 1001, "PATH_OUTSIDE_ROOT",
     lambda ws: {"path": "/etc/passwd"}),
    ("file-uri-outside", "file_read", lambda ws: {"path": Path(_secret(ws)).as_uri()}, 1001, "PATH_OUTSIDE_ROOT",
     lambda ws: {}),
    ("search-outside", "file_search", lambda ws: {"pattern": MARKER, "paths": ["../outside"]}, 1001,
     "PATH_OUTSIDE_ROOT", lambda ws: {}),
    ("symlinked-dir-escape", "file_read", lambda ws: {"path": "link/secret.txt"}, 1002, "PATH_SYMLINK_ESCAPE",
     lambda ws: {"path": "link/secret.txt", "target": _secret(ws)}),
    ("symlinked-file-escape", "file_read", lambda ws: {"path": "evil.txt"}, 1002, "PATH_SYMLINK_ESCAPE",
     lambda ws: {"path": "evil.txt", "target": _secret(ws)}),
    ("search-through-symlink", "file_search", lambda ws: {"pattern": MARKER, "paths": ["link"]}, 1002,
     "PATH_SYMLINK_ESCAPE", lambda ws: {"path": "link"}),
    ("http-uri", "file_read", lambda ws: {"path": "http://example.com/hello.txt"}, 1004, "URI_UNSUPPORTED_SCHEME",
     lambda ws: {"scheme": "http"}),
    ("remote-file-uri", "file_read", lambda ws: {"path": "file://remote.example/etc/passwd"}, 1005, "URI_INVALID",
     lambda ws: {}),
    ("empty-path", "file_read", lambda ws: {"path": ""}, 1003, "PATH_INVALID", lambda ws: {}),
    ("nul-in-path", "file_read", lambda ws: {"path": "hello\x00.txt"}, 1003, "PATH_INVALID", lambda ws: {}),
]


@pytest.mark.parametrize(("tool", "make_args", "code", "name", "make_context"),
                         [pytest.param(*case[1:], id=case[0]) for case in BAD_INPUTS])
def test_bad_input_gives_its_error_code_and_changes_nothing(ws_session, workspace, tool, make_args, code, name,
                                                            make_context):
    before = snapshot(workspace.root, workspace.outside)
    args = make_args(workspace)
    error, text = ws_session.error(tool, args)
    after = snapshot(workspace.root, workspace.outside)
    assert after == before, "a failing call changed the disk"

    assert error["code"] == code, error
    assert error["name"] == name
    assert isinstance(error["message"], str) and error["message"]
    assert isinstance(error["remediation"], str) and error["remediation"]
    assert isinstance(error["context"], dict)
    expected_context = make_context(workspace)
    assert {k: error["context"].get(k) for k in expected_context} == expected_context
    assert text.startswith(f"error {code} {name}")
    # Nothing from outside the root leaks into the answer.
    assert "secret outside the root" not in text + json.dumps(error)


def test_server_still_answers_after_bad_input(ws_session, workspace):
    for case in BAD_INPUTS:
        error, _ = ws_session.error(case[1], case[2](workspace))
        assert error["code"] == case[3]
    result = ws_session.call("ping")
    assert not result.is_error and result.content[0].text == "pong"
    read = ws_session.ok("file_read", {"path": "hello.txt"})
    assert read["content"] == workspace.path("hello.txt").read_text()


def test_walk_skips_ignored_hidden_binary_large_and_outside_files(ws_session, workspace):
    root = workspace.root
    result = ws_session.ok("file_search", {"pattern": MARKER})
    expected_files = {
        rel: grep_line_numbers(root / rel, MARKER) for rel in ("hello.txt", "sub/nested.txt")
    }
    got = {f["path"]: [m["line"] for m in f["matches"]] for f in result["files"]}
    assert got == expected_files
    assert result["total_matches"] == sum(len(v) for v in expected_files.values())
    assert result["total_files"] == len(expected_files)
    # Searched: every visible, not ignored, regular file within the size limit (binary included).
    searchable = [
        rel for rel in walk_files(root)
        if rel != "ignored.txt" and (root / rel).stat().st_size <= SIZE_LIMIT
    ]
    assert result["files_searched"] == len(searchable)


def lsp_lines(path: Path) -> list[str]:
    """Lines as LSP 3.17 counts them: LF, CRLF and a lone CR each end a line (not grep's rule)."""
    return re.split(r"\r\n|\r|\n", path.read_bytes().decode())[:-1] if path.read_bytes() else []


def test_read_and_search_agree_on_lone_cr_line_breaks(ws_session, workspace):
    """A lone CR is a line break (LSP's rule, which the Engine uses everywhere): file_search
    numbers lines as file_read does, so a reported line reads back as the matched text."""
    path = workspace.path("cr.txt")
    lines = lsp_lines(path)
    line_no = next(idx + 1 for idx, line in enumerate(lines) if "second part" in line)
    assert line_no == 2  # grep -n would say 1: "first part\rsecond part" is one line to grep
    search = ws_session.ok("file_search", {"pattern": "second part", "paths": ["cr.txt"], "context_lines": 1})
    [match] = search["files"][0]["matches"]
    assert match["line"] == line_no
    assert match["text"] == lines[line_no - 1]
    assert [c["text"] for c in match["before"]] == [lines[line_no - 2]]
    assert [c["text"] for c in match["after"]] == [lines[line_no]]

    read = ws_session.ok("file_read", {"path": "cr.txt", "line_start": line_no, "line_end": line_no})
    assert read["content"].rstrip("\r\n") == lines[line_no - 1]
    whole = ws_session.ok("file_read", {"path": "cr.txt"})
    assert whole["total_lines"] == len(lines)


def test_search_column_after_invalid_utf8(ws_session, workspace):
    path = workspace.path("latin1.txt")
    [line] = file_lines(path)
    search = ws_session.ok("file_search", {"pattern": "dessert", "paths": ["latin1.txt"]})
    [match] = search["files"][0]["matches"]
    assert match["text"] == line
    assert match["column"] == line.index("dessert") + 1

    read = ws_session.ok("file_read", {"path": "latin1.txt"})
    assert read["content"] == line + "\n"
    assert any("UTF-8" in note for note in read.get("notes", []))


# ==== the CLI =====================================================================================


def run_cli(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(filepuff_binary()), "--root", str(root), *args], capture_output=True, text=True, timeout=120
    )


def test_cli_search_exit_codes(goroot_src, sig):
    found = run_cli(goroot_src, "search", sig.regex, "net/http")
    assert found.returncode == 0, found.stderr
    line_no = sig.line
    line_text = file_lines(goroot_src / SERVER_GO)[line_no - 1]
    assert f"{line_no}:{line_text}" in found.stdout.splitlines()

    absent = "filepuff-e2e-[0-9]{4}-no-such-text"
    assert grep_recursive_counts(goroot_src, absent, ["net/http"]) == {}
    none = run_cli(goroot_src, "search", absent, "net/http", "--json")
    assert none.returncode == 1, none.stderr
    assert json.loads(none.stdout)["total_matches"] == 0

    bad = run_cli(goroot_src, "search", "(unclosed", "net/http")
    assert bad.returncode == 2
    assert bad.stdout == ""
    assert "2001" in bad.stderr and "SEARCH_INVALID_REGEX" in bad.stderr

    bad_json = run_cli(goroot_src, "search", "(unclosed", "net/http", "--json")
    assert bad_json.returncode == 2
    assert json.loads(bad_json.stderr)["code"] == 2001

    missing = run_cli(goroot_src, "read", "net/http/no-such-file.go")
    assert missing.returncode == 2 and "1101" in missing.stderr


def test_cli_json_equals_mcp_structured_content(go_session, goroot_src, sig):
    cli = run_cli(goroot_src, "search", sig.regex, "--json")
    assert cli.returncode == 0, cli.stderr
    assert json.loads(cli.stdout) == go_session.ok("file_search", {"pattern": sig.regex})

    cli = run_cli(goroot_src, "search", "-F", "-i", "-t", "go", "-C", "1", "-m", "9", "content-type", "net/http", "--json")
    assert cli.returncode == 0, cli.stderr
    assert json.loads(cli.stdout) == go_session.ok(
        "file_search",
        {"pattern": "content-type", "regex": False, "ignore_case": True, "file_types": ["go"], "context_lines": 1,
         "max_results": 9, "paths": ["net/http"]},
    )

    cli = run_cli(goroot_src, "read", SERVER_GO, "--symbols-only", "--json")
    assert cli.returncode == 0, cli.stderr
    assert json.loads(cli.stdout) == go_session.ok("file_read", {"path": SERVER_GO, "symbols_only": True})

    cli = run_cli(goroot_src, "read", SERVER_GO, "--start", "20", "--end", "30", "--json")
    assert json.loads(cli.stdout) == go_session.ok("file_read", {"path": SERVER_GO, "line_start": 20, "line_end": 30})

    cli = run_cli(goroot_src, "search", "(unclosed", "--json")
    error, _ = go_session.error("file_search", {"pattern": "(unclosed"})
    assert json.loads(cli.stderr) == error


def test_cli_refuses_an_invalid_config(tmp_path):
    (tmp_path / "filepuff.toml").write_text("[limits]\nmax_file_byte = 10\n")
    (tmp_path / "a.txt").write_text("hello\n")
    result = run_cli(tmp_path, "search", "hello")
    assert result.returncode == 2
    assert "1007" in result.stderr and "CONFIG_INVALID" in result.stderr


def test_numeric_and_boolean_strings_are_accepted_as_clients_send_them(go_session):
    """The MCP Inspector's CLI sends `line_end=3` as the string "3" for optional integers."""
    as_text = go_session.ok("file_read", {"path": "sort/sort.go", "line_start": "2", "line_end": "3",
                                          "include_ast": "false"})
    as_numbers = go_session.ok("file_read", {"path": "sort/sort.go", "line_start": 2, "line_end": 3})
    assert as_text == as_numbers and (as_text["line_start"], as_text["line_end"]) == (2, 3)
    err, _ = go_session.error("file_read", {"path": "sort/sort.go", "line_start": "two"})
    assert err["code"] == 1008


def test_published_schemas_have_only_standard_formats(go_session):
    for tool in go_session.list_tools().tools:
        for schema in (tool.input_schema, tool.output_schema or {}):
            assert '"format": "uint' not in json.dumps(schema), tool.name
