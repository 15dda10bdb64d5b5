"""End-to-end tests of toolsets, the Octocode-compatible `local` tools and the file `index`
tools, through the official MCP Python SDK against `filepuff mcp --toolsets ...`, on CPython's
and Go's standard libraries and on temporary trees with known sizes and mtimes. Every expected
value comes from an independent computation here (os.walk, os.stat, bytes.find, re)."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest
from conftest import McpSession, _close_session
from oracles import ast_grep_matches

LOCAL_TOOLS = {"localViewStructure", "localSearchCode", "localGetFileContent", "localFindFiles"}
INDEX_TOOLS = {"files_list", "files_search", "files_get_info"}


def _session(root: Path, log_dir: Path, toolsets: str = "core,local,index") -> McpSession:
    return McpSession(root, log_dir / "server-stderr.log", toolsets).start()


@pytest.fixture(scope="module")
def py_local(py_stdlib, tmp_path_factory):
    session = _session(py_stdlib, tmp_path_factory.mktemp("local-py"))
    yield session
    _close_session(session)


@pytest.fixture(scope="module")
def go_local(goroot_src, tmp_path_factory):
    session = _session(goroot_src, tmp_path_factory.mktemp("local-go"), "index")
    yield session
    _close_session(session)


DAY = 86400
NOW = time.time()


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """Files with known sizes and mtimes; a sub-directory, an empty directory, an executable."""
    root = tmp_path_factory.mktemp("tree")
    spec = {
        # path: (size, age in seconds, executable)
        "new.ts": (100, 3600, False),
        "old.ts": (2048, 10 * DAY, False),
        "empty.txt": (0, 2 * DAY, False),
        "big.bin": (3 * 1024 * 1024, 30 * DAY, False),
        "src/mid.py": (1500, 3 * DAY, False),
        "src/run.sh": (20, 5 * DAY, True),
        "src/deep/leaf.json": (10, 6 * 3600, False),
    }
    for rel, (size, age, executable) in spec.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x" * size)
        if executable:
            path.chmod(0o755)
    (root / "void").mkdir()
    for rel, (_, age, _) in spec.items():
        os.utime(root / rel, (NOW - age, NOW - age))
    os.utime(root / "void", (NOW - 40 * DAY, NOW - 40 * DAY))
    for d in ["src/deep", "src"]:
        os.utime(root / d, (NOW - 50 * DAY, NOW - 50 * DAY))
    return root, spec


@pytest.fixture(scope="module")
def tree_local(tree, tmp_path_factory):
    session = _session(tree[0], tmp_path_factory.mktemp("local-tree"))
    yield session
    _close_session(session)


def only(result: dict) -> dict:
    assert len(result["results"]) == 1, result
    entry = result["results"][0]
    assert entry["status"] != "error", entry
    return entry


def walk_files(root: Path, sub: str) -> list[str]:
    """Every non-hidden file under root/sub, root-relative, as the walk sees it (no ignore files here)."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root / sub):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for name in filenames:
            if not name.startswith("."):
                out.append(str(Path(dirpath, name).relative_to(root)))
    return sorted(out)


def is_text(data: bytes) -> bool:
    return b"\x00" not in data


# ---- toolsets -----------------------------------------------------------------------------------


def test_default_toolsets_hide_local_and_index_and_refuse_their_calls(py_session):
    names = {tool.name for tool in py_session.list_tools().tools}
    assert names == {"ping", "file_search", "file_read", "ast_query", "edit_preview", "edit_apply", "symbol_at",
                     "find_definition", "find_references", "hover", "document_symbols", "workspace_symbols",
                     "diagnostics", "rename_symbol", "call_hierarchy", "show_in_editor", "editor_state"}
    error, text = py_session.error("localSearchCode", {"pattern": "x", "path": ""})
    assert error["code"] == 8001 and error["name"] == "TOOLSET_DISABLED"
    assert error["context"]["toolset"] == "local" and "--toolsets" in error["remediation"]


def test_selected_toolsets_are_listed(py_local, go_local):
    names = {tool.name for tool in py_local.list_tools().tools}
    assert LOCAL_TOOLS | INDEX_TOOLS | {"file_search", "ping"} <= names
    assert {tool.name for tool in go_local.list_tools().tools} == INDEX_TOOLS


def test_filepuff_tools_lists_every_tool_with_its_toolset(filepuff_bin, py_stdlib):
    import subprocess

    out = subprocess.run(
        [str(filepuff_bin), "tools", "--root", str(py_stdlib), "--toolsets", "core,index"],
        capture_output=True, text=True, check=True,
    ).stdout
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines() if line and not line.startswith("served")}
    assert rows["localSearchCode"][:2] == ["local", "disabled"]
    assert rows["files_search"][:2] == ["index", "enabled"]
    assert rows["analyze_code"][:2] == ["graph", "disabled"]
    assert len(rows) == 37


# ---- localSearchCode ----------------------------------------------------------------------------


def search_oracle(root: Path, sub: str, pattern: bytes):
    """Per file: byte offsets of each (non-overlapping) occurrence of a literal."""
    found = {}
    for rel in walk_files(root, sub):
        data = (root / rel).read_bytes()
        if not is_text(data):
            continue
        offsets = [m.start() for m in re.finditer(re.escape(pattern), data)]
        if offsets:
            found[rel] = offsets
    return found


def rows_of(raw: bytes, offsets: list[int]) -> list[tuple[int, int, int]]:
    """Octocode's rows: one per matching line, at its first occurrence — (1-based line, 0-based
    column in UTF-16 code units, byte offset)."""
    rows = {}
    for off in offsets:
        line = raw[:off].count(b"\n") + 1
        if line not in rows:
            start = raw.rfind(b"\n", 0, off) + 1
            column = len(raw[start:off].decode("utf-8", "replace").encode("utf-16-le")) // 2
            rows[line] = (line, column, off)
    return sorted(rows.values())


def test_search_code_counts_pages_and_byte_offsets_match_an_independent_scan(py_local, py_stdlib):
    expected = search_oracle(py_stdlib, "email", b"import")
    files = sorted(expected)
    rows = {rel: rows_of((py_stdlib / rel).read_bytes(), offsets) for rel, offsets in expected.items()}
    page2 = only(
        py_local.ok(
            "localSearchCode",
            {"pattern": "import", "path": "email", "fixedString": True, "filesPerPage": 5, "filePageNumber": 2,
             "matchesPerPage": 3, "researchGoal": "g", "reasoning": "r"},
        )
    )
    data = page2["data"]
    assert data["stats"] == {
        "totalOccurrences": sum(len(v) for v in expected.values()),
        "matchedLines": sum(len(v) for v in rows.values()),
        "filesMatched": len(expected),
        "filesSearched": len(walk_files(py_stdlib, "email")),
    }
    assert [f["path"] for f in data["files"]] == files[5:10]
    pagination = data["pagination"]
    assert pagination == {
        "currentPage": 2, "totalPages": -(-len(files) // 5), "filesPerPage": 5, "totalFiles": len(files),
        "totalMatches": sum(len(v) for v in rows.values()), "hasMore": len(files) > 10,
    }
    for f in data["files"]:
        assert f["totalMatchRows"] == len(rows[f["path"]])
        assert f["returnedMatchRows"] == len(f["matches"]) == min(3, len(rows[f["path"]]))
        assert [(m["line"], m["column"], m["location"]["charOffset"]) for m in f["matches"]] == rows[f["path"]][:3]
        lines = (py_stdlib / f["path"]).read_bytes().decode("utf-8", "replace").split("\n")
        for m in f["matches"]:
            assert m["location"]["charLength"] == 6
            text = lines[m["line"] - 1].rstrip("\r")
            assert m["value"] == text if len(text) <= 200 else "import" in m["value"]
    assert "researchGoal" not in json.dumps(page2)
    assert any("filePageNumber=3" in h for h in page2["hints"]) == (len(files) > 10)
    first = data["files"][0]
    line = first["matches"][0]["line"]
    text = (py_stdlib / first["path"]).read_bytes().decode("utf-8", "replace").split("\n")[line - 1]
    lsp_column = text.index("import") + 1
    assert any(f"{first['path']} line {line} column {lsp_column}" in h for h in page2["hints"]), page2["hints"]


def test_search_code_offsets_and_columns_on_unusual_bytes(tmp_path, tmp_path_factory):
    """A BOM, CRLF, a lone CR, characters outside the BMP, invalid UTF-8: byte offsets count the
    file as stored and localGetFileContent's window at that offset is the match."""
    files = {
        "bom.py": b"\xef\xbb\xbf# target\nx = 'target'\n",
        "crlf.txt": "x\r\n\U0001F600\U0001F600target\r\n\ttarget and target\r\n".encode(),
        "lone_cr.txt": b"old mac\rline target\r",
        "latin1.txt": b"caf\xe9 target \xff target\n",
    }
    for name, raw in files.items():
        (tmp_path / name).write_bytes(raw)
    session = _session(tmp_path, tmp_path_factory.mktemp("local-odd"), "local")
    try:
        data = only(session.ok("localSearchCode", {"pattern": "target", "path": ""}))["data"]
        assert [f["path"] for f in data["files"]] == sorted(files)
        for f in data["files"]:
            raw = files[f["path"]]
            # Line breaks as filepuff counts them: LF, CRLF and a lone CR.
            offsets = [m.start() for m in re.finditer(b"target", raw)]
            normalised = re.sub(b"\r(?!\n)", b"\n", raw)
            assert [(m["line"], m["column"], m["location"]["charOffset"]) for m in f["matches"]] == rows_of(normalised, offsets)
            for m in f["matches"]:
                window = only(session.ok("localGetFileContent", {
                    "path": f["path"], "charOffset": m["location"]["charOffset"], "charLength": m["location"]["charLength"],
                }))["data"]
                assert window["content"] == "target"
                assert window["pagination"]["totalChars"] == len(raw)
    finally:
        _close_session(session)


def test_discovery_mode_lists_the_files_grep_l_would(py_local, py_stdlib):
    expected = sorted(search_oracle(py_stdlib, "json", b"def "))
    data = only(py_local.ok("localSearchCode", {"pattern": "def ", "path": "json", "filesOnly": True, "filesPerPage": 20}))["data"]
    assert [f["path"] for f in data["files"]] == expected
    assert all(set(f) == {"path"} for f in data["files"])
    assert data["stats"]["filesMatched"] == len(expected) and "totalOccurrences" not in data["stats"]
    assert "totalMatches" not in data["pagination"]
    same = only(py_local.ok("localSearchCode", {"pattern": "def ", "path": "json", "mode": "discovery", "filesPerPage": 20}))["data"]
    assert same["files"] == data["files"]


def test_smart_case_whole_word_and_type_filter(py_local, py_stdlib):
    def count(pattern: str, flags=0, suffix=".py"):
        total = 0
        for rel in walk_files(py_stdlib, "json"):
            if rel.endswith(suffix):
                total += len(re.findall(pattern, (py_stdlib / rel).read_text(), flags))
        return total

    smart_lower = only(py_local.ok("localSearchCode", {"pattern": "decoder", "path": "json", "type": "py"}))["data"]
    assert smart_lower["stats"]["totalOccurrences"] == count("decoder", re.IGNORECASE)
    smart_upper = only(py_local.ok("localSearchCode", {"pattern": "Decoder", "path": "json", "type": "py"}))["data"]
    assert smart_upper["stats"]["totalOccurrences"] == count("Decoder")
    word = only(py_local.ok("localSearchCode", {"pattern": "s", "path": "json", "type": "py", "wholeWord": True, "caseSensitive": True}))["data"]
    assert word["stats"]["totalOccurrences"] == count(r"\bs\b")


def test_a_batch_of_five_with_one_failure_answers_all_five(py_local):
    out = py_local.ok(
        "localSearchCode",
        {"queries": [
            {"pattern": "JSONDecodeError", "path": "json"},
            {"pattern": "(unclosed", "path": "json"},
            {"pattern": "scanstring", "path": "json", "filesOnly": True},
            {"pattern": "zzz_not_there_zzz", "path": "json"},
            {"searchText": "make_scanner", "path": "json/scanner.py"},
        ]},
    )
    statuses = [r["status"] for r in out["results"]]
    assert statuses == ["hasResults", "error", "hasResults", "empty", "hasResults"]
    assert [r["id"] for r in out["results"]] == ["q1", "q2", "q3", "q4", "q5"]
    assert out["results"][1]["error"]["code"] == 2001
    assert out["results"][4]["data"]["files"][0]["path"] == "json/scanner.py"


def test_a_query_that_would_return_200k_characters_is_bounded_with_a_continuation(py_local, py_stdlib):
    result = py_local.call(
        "localSearchCode",
        {"pattern": "e", "path": "email", "filesPerPage": 20, "matchesPerPage": 100, "contextLines": 3},
    )
    assert not result.is_error
    size = len(json.dumps(result.structured_content))
    assert size < 45_000, size
    entry = result.structured_content["results"][0]
    assert entry["data"]["truncated"] is True
    assert any("Output budget" in h and "filePageNumber=" in h for h in entry["hints"])


# ---- localGetFileContent ------------------------------------------------------------------------


def test_get_file_content_windows_lines_and_matches(py_local, py_stdlib):
    raw = (py_stdlib / "json/decoder.py").read_bytes()
    window = only(py_local.ok("localGetFileContent", {"path": "json/decoder.py", "charOffset": 1000, "charLength": 500}))["data"]
    assert window["content"].encode() == raw[1000:1500]
    assert window["pagination"] == {"charOffset": 1000, "charLength": 500, "totalChars": len(raw), "hasMore": True, "nextCharOffset": 1500}

    lines = raw.decode().split("\n")
    ranged = only(py_local.ok("localGetFileContent", {"path": "json/decoder.py", "startLine": 10, "endLine": 20}))["data"]
    assert ranged["content"] == "\n".join(lines[9:20])
    assert (ranged["startLine"], ranged["endLine"], ranged["totalLines"]) == (10, 20, raw.count(b"\n"))

    matched = only(py_local.ok("localGetFileContent", {"path": "json/decoder.py", "matchString": "def raw_decode", "matchStringContextLines": 2}))
    expected_lines = [i + 1 for i, line in enumerate(lines) if "def raw_decode" in line]
    assert matched["data"]["matchedLines"] == expected_lines
    n = expected_lines[0]
    assert matched["data"]["content"] == "\n".join(lines[n - 3:n + 2])


def test_get_file_content_errors(py_local):
    error, _ = py_local.error("localGetFileContent", {"path": "json/decoder.py", "startLine": 1, "fullContent": True})
    assert error["code"] == 8003
    error, _ = py_local.error("localGetFileContent", {"path": "json"})
    assert error["code"] == 1102
    error, _ = py_local.error("localGetFileContent", {"path": "json/nope.py"})
    assert error["code"] == 1101


# ---- localViewStructure -------------------------------------------------------------------------


def test_view_structure_depth_sizes_and_sorts(py_local, py_stdlib):
    names = sorted(n for n in os.listdir(py_stdlib / "json") if not n.startswith("."))
    data = only(py_local.ok("localViewStructure", {"path": "json", "details": True}))["data"]
    assert [e["name"] for e in data["entries"]] == names
    for e in data["entries"]:
        st = os.stat(py_stdlib / e["path"])
        if e["type"] == "file":
            assert e["size"] == st.st_size
    by_size = only(py_local.ok("localViewStructure", {"path": "json", "filesOnly": True, "sortBy": "size", "summary": True}))["data"]
    files = [n for n in names if (py_stdlib / "json" / n).is_file()]
    sizes = sorted(files, key=lambda n: (-(py_stdlib / "json" / n).stat().st_size, n))
    assert [e["name"] for e in by_size["entries"]] == sizes
    assert by_size["summary"]["totalSize"] == sum((py_stdlib / "json" / n).stat().st_size for n in files)

    deep = only(py_local.ok("localViewStructure", {"path": "email", "depth": 2, "entriesPerPage": 7, "entryPageNumber": 3}))["data"]
    everything = []
    for dirpath, dirnames, filenames in os.walk(py_stdlib / "email"):
        depth = len(Path(dirpath).relative_to(py_stdlib / "email").parts)
        if depth >= 2:
            dirnames[:] = []
            continue
        for name in dirnames + filenames:
            if not name.startswith("."):
                everything.append(str(Path(dirpath, name).relative_to(py_stdlib)))
    everything.sort()
    assert deep["totalEntries"] == len(everything)
    assert [e["path"] for e in deep["entries"]] == everything[14:21]


# ---- localFindFiles -----------------------------------------------------------------------------


def test_find_files_times_sizes_and_order(tree_local, tree):
    root, spec = tree

    def find(**query):
        data = only(tree_local.ok("localFindFiles", {"path": "", **query}))["data"]
        return [f["path"] for f in data["files"]]

    recent = sorted((p for p, (_, age, _) in spec.items() if age < 7 * DAY), key=lambda p: spec[p][1])
    assert find(type="f", modifiedWithin="7d") == recent
    assert find(type="f", modifiedBefore="7d") == sorted((p for p, (_, age, _) in spec.items() if age > 7 * DAY), key=lambda p: spec[p][1])
    assert find(type="f", sizeGreater="1K") == sorted((p for p, (s, _, _) in spec.items() if s > 1024), key=lambda p: spec[p][1])
    assert find(type="f", sizeLess="100") == sorted((p for p, (s, _, _) in spec.items() if s < 100), key=lambda p: spec[p][1])
    assert find(sizeGreater="2M") == ["big.bin"]
    assert sorted(find(empty=True)) == ["empty.txt", "void"]
    assert find(executable=True) == ["src/run.sh"]
    assert find(name="*.ts") == ["new.ts", "old.ts"]
    assert find(names=["*.json", "*.py"]) == ["src/deep/leaf.json", "src/mid.py"]
    assert find(type="d") == ["void", "src", "src/deep"]
    assert find(type="f", maxDepth=1, minDepth=1) == sorted((p for p in spec if "/" not in p), key=lambda p: spec[p][1])
    assert find(regex="^(mid|leaf)\\.") == ["src/deep/leaf.json", "src/mid.py"]
    assert find(pathPattern="src/*/*.json") == ["src/deep/leaf.json"]
    assert find(type="f", excludeDir=["deep"]) == sorted((p for p in spec if "deep" not in p), key=lambda p: spec[p][1])

    page = only(tree_local.ok("localFindFiles", {"path": "", "type": "f", "filesPerPage": 3, "filePageNumber": 2, "details": True}))
    by_age = sorted(spec, key=lambda p: spec[p][1])
    assert [f["path"] for f in page["data"]["files"]] == by_age[3:6]
    for f in page["data"]["files"]:
        st = os.stat(root / f["path"])
        assert f["size"] == st.st_size
        assert f["permissions"] == format(st.st_mode & 0o7777, "o")
        assert f["modified"] == time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(st.st_mtime)))
    error, _ = tree_local.error("localFindFiles", {"path": "", "sizeGreater": "10X"})
    assert error["code"] == 8005


# ---- index --------------------------------------------------------------------------------------


def test_files_search_ranks_the_obvious_files_first(py_local, go_local):
    py = py_local.ok("files_search", {"query": "json decoder"})
    assert "json/decoder.py" in [r["filePath"] for r in py["results"][:3]], py["results"][:5]
    go = go_local.ok("files_search", {"query": "http server"})
    assert "net/http/server.go" in [r["filePath"] for r in go["results"][:3]], go["results"][:5]
    assert all(0 <= r["score"] <= 1 for r in go["results"])
    assert [r["score"] for r in go["results"]] == sorted((r["score"] for r in go["results"]), reverse=True)
    strict = go_local.ok("files_search", {"query": "http server", "minScore": 0.95, "topK": 100})
    assert all(r["score"] >= 0.95 for r in strict["results"]) and len(strict["results"]) < len(go["results"]) + 100
    loose = go_local.ok("files_search", {"query": "http server", "minScore": 0.0, "topK": 100})
    assert loose["total"] > strict["total"]
    error, _ = go_local.error("files_search", {"query": "  ./ "})
    assert error["code"] == 8012


def test_files_list_and_info_match_os_walk_and_stat(py_local, py_stdlib):
    expected = []
    for dirpath, dirnames, filenames in os.walk(py_stdlib / "email"):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for name in dirnames + [f for f in filenames if not f.startswith(".")]:
            expected.append(str(Path(dirpath, name).relative_to(py_stdlib)))
    expected.sort()
    listed = py_local.ok("files_list", {"directory": "email", "limit": 1000})
    assert listed["total"] == len(expected)
    assert [f["filePath"] for f in listed["files"]] == expected
    py_files = [p for p in expected if p.endswith(".py")]
    by_lang = py_local.ok("files_list", {"directory": "email", "language": "python", "limit": 5})
    assert by_lang["total"] == len(py_files) and [f["filePath"] for f in by_lang["files"]] == py_files[:5]
    assert by_lang["hasMore"] and "offset=5" in by_lang["hint"]
    by_ext = py_local.ok("files_list", {"directory": "email", "extension": ".py", "offset": 5, "limit": 5})
    assert [f["filePath"] for f in by_ext["files"]] == py_files[5:10]

    info = py_local.ok("files_get_info", {"filePath": "json/decoder.py"})
    st = os.stat(py_stdlib / "json/decoder.py")
    assert info == {
        "filePath": "json/decoder.py", "kind": "file", "fileName": "decoder.py", "directory": "json",
        "extension": ".py", "language": "python", "mimeType": info["mimeType"], "size": st.st_size, "fileCount": 0,
        "mtime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(st.st_mtime))),
    }
    assert info["mimeType"] == "text/x-python"
    json_dir = py_local.ok("files_get_info", {"filePath": "json"})
    under = walk_files(py_stdlib, "json")
    assert (json_dir["kind"], json_dir["fileCount"]) == ("directory", len(under))
    assert json_dir["size"] == sum(os.stat(py_stdlib / p).st_size for p in under)
    error, _ = py_local.error("files_list", {"directory": "no/such/dir"})
    assert error["code"] == 8010
    error, _ = py_local.error("files_get_info", {"filePath": "json/nope.py"})
    assert error["code"] == 8010


def test_the_index_follows_changes_on_disk(tree_local, tree):
    root, _ = tree
    assert tree_local.ok("files_list", {"filter": "fresh"})["total"] == 0
    (root / "src" / "fresh_module.py").write_text("x = 1\n")
    deadline = time.time() + 10
    while time.time() < deadline:
        found = tree_local.ok("files_list", {"filter": "fresh"})
        if found["total"] == 1:
            break
        time.sleep(0.1)
    assert [f["filePath"] for f in found["files"]] == ["src/fresh_module.py"]
    assert tree_local.ok("files_get_info", {"filePath": "src"})["fileCount"] == 4
    (root / "src" / "fresh_module.py").unlink()


def test_file_search_default_call_is_bounded_and_continues_with_offset(py_session, py_stdlib):
    first = py_session.call("file_search", {"pattern": "e", "paths": ["email"], "context_lines": 10})
    assert not first.is_error
    size = len(json.dumps(first.structured_content))
    assert size < 45_000, size
    data = first.structured_content
    assert data["truncated"] is True
    shown = data["returned_matches"]
    assert f"offset={shown}" in data["hint"]
    second = py_session.ok("file_search", {"pattern": "e", "paths": ["email"], "context_lines": 10, "offset": shown})
    assert second["offset"] == shown
    last = data["files"][-1]
    following = second["files"][0]
    # The second page starts right after the first page's last line (same file, or the next one).
    if following["path"] == last["path"]:
        assert following["matches"][0]["line"] > last["matches"][-1]["line"]
    else:
        assert following["path"] > last["path"]


def test_the_config_file_chooses_toolsets_and_the_flag_wins(tmp_path):
    root = tmp_path / "cfg"
    root.mkdir()
    (root / "filepuff.toml").write_text('[mcp]\ntoolsets = ["index", "local"]\n')
    (root / "a.txt").write_text("hello\n")
    from_config = McpSession(root, tmp_path / "config.log").start()
    try:
        assert {t.name for t in from_config.list_tools().tools} == LOCAL_TOOLS | INDEX_TOOLS
        error, _ = from_config.error("file_search", {"pattern": "hello"})
        assert error["code"] == 8001 and error["context"]["toolset"] == "core"
    finally:
        _close_session(from_config)
    from_flag = _session(root, tmp_path, "core")
    try:
        assert "file_search" in {t.name for t in from_flag.list_tools().tools}
        assert "files_list" not in {t.name for t in from_flag.list_tools().tools}
    finally:
        _close_session(from_flag)


def test_ast_query_pages_are_bounded_and_continue_with_offset(go_session, goroot_src):
    pattern = "func ($R $T) $NAME($$$ARGS) { $$$BODY }"
    # ast-grep's matches in filepuff's order (file, then position).
    expected = sorted(ast_grep_matches(goroot_src, pattern, "go", ["net/http"]))
    key = lambda m: (m["file"], m["start_line"], m["start_column"])
    for max_results in [None, 1_000_000]:
        args = {"pattern": pattern, "language": "go", "paths": ["net/http"]}
        if max_results:
            args["max_results"] = max_results  # a page size, not a way around the budget
        first = go_session.call("ast_query", args)
        assert not first.is_error
        assert len(json.dumps(first.structured_content, separators=(",", ":"), ensure_ascii=False)) <= 40_000
        data = first.structured_content
        assert data["truncated"] is True and data["total_matches"] == len(expected) > len(data["matches"])
        shown = len(data["matches"])
        assert [key(m) for m in data["matches"]] == expected[:shown]
        assert any(f"output budget (40000 characters) reached: showing {shown} matches; continue with offset={shown}" in note
                   for note in data["notes"]), data["notes"]
        second = go_session.ok("ast_query", {**args, "offset": shown, "max_results": 5})
        assert [key(m) for m in second["matches"]] == expected[shown:shown + 5]


def test_search_code_globs_excluded_dirs_and_multiline(py_local, py_stdlib):
    files = [
        p for p in walk_files(py_stdlib, "email")
        if p.endswith(".py") and not Path(p).name.startswith("_") and "/mime/" not in p
    ]
    # smartCase: a lower-case pattern matches case-insensitively.
    expected = {p: len(re.findall(rb"(?i)return", (py_stdlib / p).read_bytes())) for p in files}
    expected = {p: n for p, n in expected.items() if n}
    data = only(py_local.ok(
        "localSearchCode",
        {"pattern": "return", "path": "email", "include": ["*.py"], "exclude": ["_*"], "excludeDir": ["mime"],
         "filesPerPage": 20, "matchesPerPage": 1},
    ))["data"]
    assert data["pagination"]["totalFiles"] == data["stats"]["filesMatched"] == len(expected)
    assert data["stats"]["totalOccurrences"] == sum(expected.values())
    assert [f["path"] for f in data["files"]] == sorted(expected)[:20]

    raw = (py_stdlib / "json/decoder.py").read_bytes()
    pattern = r'raw_decode\(self, s, idx=0\):\n\s+"""Decode'
    [m] = list(re.finditer(pattern.encode(), raw))
    multi = only(py_local.ok("localSearchCode", {"pattern": pattern, "path": "json/decoder.py", "multiline": True}))["data"]
    [hit] = multi["files"][0]["matches"]
    assert hit["location"] == {"charOffset": m.start(), "charLength": m.end() - m.start()}
    assert hit["line"] == raw[: m.start()].count(b"\n") + 1
    assert multi["files"][0]["totalMatchRows"] == 1
    assert multi["stats"]["matchedLines"] == m.group().count(b"\n") + 1
    assert hit["value"].split("\n")[1].strip().startswith('"""Decode')


def test_ignored_and_hidden_files_need_no_ignore_and_hidden(workspace, tmp_path_factory):
    from conftest import MARKER

    session = _session(workspace.root, tmp_path_factory.mktemp("local-ws"), "local")
    try:
        default = only(session.ok("localSearchCode", {"pattern": MARKER, "path": "", "filesOnly": True}))["data"]
        paths = [f["path"] for f in default["files"]]
        assert "ignored.txt" not in paths and ".hidden.txt" not in paths and "hello.txt" in paths
        no_ignore = only(session.ok("localSearchCode", {"pattern": MARKER, "path": "", "filesOnly": True, "noIgnore": True}))["data"]
        assert "ignored.txt" in [f["path"] for f in no_ignore["files"]]
        names = [e["name"] for e in only(session.ok("localViewStructure", {"path": ""}))["data"]["entries"]]
        hidden = [e["name"] for e in only(session.ok("localViewStructure", {"path": "", "hidden": True}))["data"]["entries"]]
        assert ".hidden.txt" not in names and ".hidden.txt" in hidden and ".git" not in hidden
        listed = sorted(
            n for n in os.listdir(workspace.root)
            if not n.startswith(".") and n != "ignored.txt"
        )
        assert names == listed
        txt = [e["name"] for e in only(session.ok("localViewStructure", {"path": "", "extensions": ["txt"], "filesOnly": True, "pattern": "*l*"}))["data"]["entries"]]
        assert txt == sorted(n for n in listed if n.endswith(".txt") and "l" in n and (workspace.root / n).is_file() and not (workspace.root / n).is_symlink())
    finally:
        _close_session(session)
