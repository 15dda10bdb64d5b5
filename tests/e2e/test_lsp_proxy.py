"""`filepuff lsp` driven by an editor-like LSP client (lsp_client.py) in front of real language
servers: gopls, basedpyright, ruff and clangd, from scripts/install-language-servers.

Every test works on a private copy of a fixture, edits it without saving, and checks answers
against positions computed here independently (Python's own UTF-8/UTF-16 arithmetic)."""

from __future__ import annotations

import os
import shutil
import signal
import time
from pathlib import Path

import pytest

from conftest import REPO, filepuff_binary
from lsp_client import LspClient, LspError, children, column, process_name, range_

FIXTURES = REPO / "tests" / "fixtures" / "lsp"


def need(*programs: str) -> None:
    missing = [p for p in programs if shutil.which(p) is None]
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)} (scripts/install-language-servers)")


@pytest.fixture
def workspace(tmp_path: Path):
    def make(*names: str, config: str | None = None) -> Path:
        root = tmp_path / "ws"
        root.mkdir(exist_ok=True)
        for name in names:
            shutil.copytree(FIXTURES / name, root / name if len(names) > 1 else root, dirs_exist_ok=True)
        if config is not None:
            (root / "filepuff.toml").write_text(config)
        return root

    return make


@pytest.fixture
def editor(tmp_path: Path):
    clients: list[LspClient] = []

    def start(root: Path, encodings: list[str] | None = None) -> LspClient:
        log = open(tmp_path / f"filepuff-lsp-{len(clients)}.log", "w")
        client = LspClient([str(filepuff_binary()), "lsp"], root, env={"FILEPUFF_LOG": "info"}, stderr=log)
        clients.append(client)
        client.init_result = client.initialize(root, encodings)
        return client

    yield start
    for client in clients:
        client.kill()


def status(client: LspClient) -> dict:
    return client.request("filepuff/status")


def server(client: LspClient, name: str) -> dict:
    return next(s for s in status(client)["servers"] if s["name"] == name)


def at(text: str, needle: str, encoding: str, occurrence: int = 0) -> dict:
    """The LSP position of the `occurrence`-th `needle` in `text`, in `encoding` units."""
    index = -1
    for _ in range(occurrence + 1):
        index = text.index(needle, index + 1)
    line = text.count("\n", 0, index)
    line_start = text.rfind("\n", 0, index) + 1
    line_text = text[line_start:text.find("\n", index) if "\n" in text[index:] else len(text)]
    return {"line": line, "character": column(line_text, index - line_start, encoding)}


def apply(text: str, start: dict, end: dict, new: str, encoding: str) -> str:
    """Applies one LSP change to `text` the way a server does."""
    lines = text.split("\n")

    def offset(position: dict) -> int:
        before = sum(len(l) + 1 for l in lines[: position["line"]])
        line = lines[position["line"]]
        units = 0
        for i, ch in enumerate(line):
            if units >= position["character"]:
                return before + i
            units += column(ch, 1, encoding)
        return before + len(line)

    return text[: offset(start)] + new + text[offset(end):]


# ---- Go: unsaved text, every common request, across encodings -----------------------------------

GO_WAVE = 'func Wave(s string) string { return "👋" + s }\n'


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16"])
def test_go_requests_answer_for_unsaved_text(workspace, editor, encoding):
    need("gopls")
    root = workspace("go")
    client = editor(root, [encoding] if encoding == "utf-16" else ["utf-8", "utf-16"])
    assert client.init_result["capabilities"]["positionEncoding"] == encoding
    assert client.init_result["serverInfo"]["name"] == "filepuff"
    main = root / "main.go"
    disk = main.read_text()
    uri = client.open(main, "go")
    text = disk

    # 1. Append a function (unsaved); 2. after the emoji on line 10, call it instead of Hello.
    end = {"line": text.count("\n"), "character": 0}
    client.change(uri, 2, [{"range": {"start": end, "end": end}, "text": GO_WAVE}])
    text = text + GO_WAVE
    call = 'greet.Hello("x")'
    start = at(text, call, encoding)
    stop = {"line": start["line"], "character": start["character"] + len(call)}
    client.change(uri, 3, [{"range": {"start": start, "end": stop}, "text": 'Wave("x")'}])
    text = apply(text, start, stop, 'Wave("x")', encoding)
    assert main.read_text() == disk, "nothing is saved"

    # The proxy's encoding is the editor's; gopls speaks UTF-16: utf-8 editors are translated.
    assert server(client, "gopls")["positionEncoding"] == "utf-16"

    use = at(text, "Wave(\"x\")", encoding)
    decl = at(text, "Wave(s string)", encoding)
    asked = client.request_async("textDocument/definition", {"textDocument": {"uri": uri}, "position": use})
    definition = client.response(asked)["result"]
    locations = definition if isinstance(definition, list) else [definition]
    assert locations[0]["uri"] == uri
    assert locations[0]["range"]["start"] == decl
    # With nothing to translate (gopls speaks the utf-16 editor's encoding), the answer is
    # gopls's own JSON text, passed on unparsed: a Location's members in gopls's order, "uri"
    # first. Translated for the utf-8 editor, it is rebuilt, members in sorted order.
    body = client.response_bodies.pop(asked)
    passed_on = body.index(b'"uri"') < body.index(b'"range"')
    assert passed_on == (encoding == "utf-16"), body

    hover = client.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": use})
    assert "func Wave(s string) string" in hover["contents"]["value"]
    assert hover["range"]["start"] == use

    refs = client.request("textDocument/references", {
        "textDocument": {"uri": uri}, "position": decl, "context": {"includeDeclaration": True}})
    assert sorted((r["range"]["start"]["line"], r["range"]["start"]["character"]) for r in refs) == sorted(
        [(decl["line"], decl["character"]), (use["line"], use["character"])])

    symbols = client.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}})
    assert {"main", "Wave"} <= {s["name"] for s in symbols}

    # Completion after `greet.` on a new, unsaved line.
    line = text.count("\n") - 1  # the Wave line; insert before it
    client.change(uri, 4, [{"range": range_(line, 0, line, 0), "text": "var _ = greet.\n"}])
    text = apply(text, {"line": line, "character": 0}, {"line": line, "character": 0}, "var _ = greet.\n", encoding)
    completion = client.request("textDocument/completion", {
        "textDocument": {"uri": uri}, "position": {"line": line, "character": len("var _ = greet.")},
        "context": {"triggerKind": 2, "triggerCharacter": "."}})
    items = completion["items"] if isinstance(completion, dict) else completion
    assert {"Hello", "Shout"} <= {i["label"] for i in items}

    # Diagnostics arrive for the unsaved text (the dangling `greet.`), for version 4.
    published = client.wait_notification(
        "textDocument/publishDiagnostics",
        lambda p: p["uri"] == uri and p.get("version") == 4 and p["diagnostics"], timeout=60)
    assert any(d["range"]["start"]["line"] == line for d in published["diagnostics"])
    assert main.read_text() == disk

    # gopls's loading progress reached the editor under a token renamed for it.
    created = [r["params"]["token"] for r in client.server_requests if r["method"] == "window/workDoneProgress/create"]
    assert created and all(str(t).startswith("filepuff/") for t in created)
    progress = client.wait_notification("$/progress", lambda p: p["token"] in created and p["value"]["kind"] == "begin")
    assert progress["value"]["title"]


def test_unknown_methods_pass_through_and_encodings_translate_to_clangd(workspace, editor):
    """The editor speaks UTF-16; clangd is told to speak UTF-8 (`position_encoding`)."""
    need("clangd")
    root = workspace("c", config='[servers.clangd]\nposition_encoding = "utf-8"\n')
    client = editor(root, ["utf-16"])
    assert client.init_result["capabilities"]["positionEncoding"] == "utf-16"
    assert server(client, "clangd")["positionEncoding"] == "utf-8"
    main = root / "main.c"
    text = main.read_text()
    uri = client.open(main, "c")
    # After the emoji and the CJK characters: `total` in `int total = add(1, 2);`.
    use = at(text, "add(1, 2)", "utf-16")
    definition = client.request("textDocument/definition", {"textDocument": {"uri": uri}, "position": use})
    locations = definition if isinstance(definition, list) else [definition]
    header = (root / "util.h").read_text()
    assert locations[0]["uri"].endswith("/util.h")
    assert locations[0]["range"]["start"] == at(header, "add", "utf-16")
    # An unsaved edit on the emoji line: a comment with a non-BMP character before `int total`.
    decl = at(text, "int total", "utf-16")
    client.change(uri, 2, [{"range": {"start": decl, "end": decl}, "text": "/*🎉*/ "}])
    text = apply(text, decl, decl, "/*🎉*/ ", "utf-16")
    refs = client.request("textDocument/references", {
        "textDocument": {"uri": uri}, "position": at(text, "total", "utf-16", 1),
        "context": {"includeDeclaration": True}})
    assert sorted((r["range"]["start"]["line"], r["range"]["start"]["character"]) for r in refs) == sorted(
        (at(text, "total", "utf-16", i)["line"], at(text, "total", "utf-16", i)["character"]) for i in (0, 1))
    highlights = client.request("textDocument/documentHighlight", {
        "textDocument": {"uri": uri}, "position": at(text, "total", "utf-16")})
    assert {h["range"]["start"]["character"] for h in highlights} == {
        at(text, "total", "utf-16", i)["character"] for i in (0, 1)}
    # clangd's own extension, unknown to filepuff, round-trips.
    other = client.request("textDocument/switchSourceHeader", {"uri": (root / "util.c").as_uri()})
    assert other == (root / "util.h").as_uri()


# ---- Several languages, several servers -----------------------------------------------------------

def test_two_languages_route_to_their_servers_and_workspace_symbols_merge(workspace, editor):
    need("gopls", "basedpyright-langserver")
    root = workspace("go", "py")
    client = editor(root)
    names = {s["name"] for s in status(client)["servers"]}
    assert {"gopls", "basedpyright"} <= names
    go_uri = client.open(root / "go" / "main.go", "go")
    py_text = (root / "py" / "shop" / "cart.py").read_text()
    py_uri = client.open(root / "py" / "shop" / "cart.py", "python")
    go_hover = client.request("textDocument/hover", {"textDocument": {"uri": go_uri}, "position": {"line": 9, "character": 20}})
    assert "func greet.Hello" in go_hover["contents"]["value"]
    py_hover = client.request("textDocument/hover", {"textDocument": {"uri": py_uri}, "position": at(py_text, "total", "utf-16")})
    assert "def total" in str(py_hover["contents"])
    # Ask until both servers have indexed enough to answer.
    def merged():
        symbols = client.request("workspace/symbol", {"query": "Hello"}) or []
        symbols += client.request("workspace/symbol", {"query": "Cart"}) or []
        uris = {s["location"]["uri"] for s in symbols}
        return any(u.endswith(".go") for u in uris) and any(u.endswith(".py") for u in uris)
    deadline = time.monotonic() + 60
    while not merged():
        assert time.monotonic() < deadline, "workspace/symbol never held both languages"
        time.sleep(0.5)


def test_a_typescript_definition_asked_right_after_the_open_comes_from_the_project(workspace, editor):
    """typescript-language-server's default answers from a syntax-only tsserver while the project
    loads: a definition through an import landed on the import line itself (CI's failure of
    test_lsp.py's TypeScript definition, every time through the proxy). filepuff turns that off."""
    need("typescript-language-server")
    root = workspace("ts")
    client = editor(root)
    square = root / "src" / "square.ts"
    text = square.read_text()
    uri = client.open(square, "typescript")
    answer = client.request("textDocument/definition", {
        "textDocument": {"uri": uri}, "position": at(text, "describe(new", "utf-16")})
    assert [(Path(a["uri"].removeprefix("file://")).name, a["range"]["start"]["line"]) for a in answer] == [
        ("shape.ts", 4)]


def test_two_servers_for_one_language_merge_their_diagnostics(workspace, editor):
    need("basedpyright-langserver", "ruff")
    root = workspace("py", config='[languages.python]\nservers = ["basedpyright", "ruff"]\n')
    client = editor(root)
    assert {"basedpyright", "ruff"} <= {s["name"] for s in status(client)["servers"]}
    path = root / "shop" / "broken.py"
    text = "import os\n\n\ndef f() -> int:\n    return 'not an int'\n"
    path.write_text("")
    uri = client.open(path, "python", text="")
    client.change(uri, 2, [{"range": range_(0, 0, 0, 0), "text": text}])

    def both():
        diagnostics = client.diagnostics(uri) or []
        sources = {str(d.get("source", "")).lower() for d in diagnostics}
        return diagnostics if {"basedpyright", "ruff"} <= sources else None

    diagnostics = client.wait_for(both, 90, "diagnostics from basedpyright and ruff in one publish")
    by_source = {str(d.get("source")).lower(): d for d in diagnostics}
    assert by_source["ruff"]["range"]["start"]["line"] == 0  # F401 `os` imported but unused
    assert any(d["range"]["start"]["line"] == 4 for d in diagnostics if str(d.get("source")).lower() == "basedpyright")
    # Completion is merged too: one list.
    completion = client.request("textDocument/completion", {"textDocument": {"uri": uri}, "position": {"line": 4, "character": 11}})
    assert isinstance(completion, (dict, list))


# ---- Robustness ----------------------------------------------------------------------------------

def test_malformed_frames_get_json_rpc_errors_and_the_session_continues(workspace, editor):
    need("gopls")
    root = workspace("go")
    client = editor(root)
    uri = client.open(root / "main.go", "go")
    client.send_raw(b"Content-Length: nope\r\n\r\n{}")
    client.send_raw(b"Content-Length: 9\r\n\r\n{invalid}")
    body = b'{"jsonrpc":"2.0","id":{"x":1},"method":1}'
    client.send_raw(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    client.wait_for(lambda: len(client.orphan_errors) >= 3, 10, "three error responses")
    assert [e["error"]["code"] for e in client.orphan_errors] == [-32700, -32700, -32600]
    with pytest.raises(LspError) as unknown:
        client.request("filepuff/noSuchMethod", {"x": 1})
    assert unknown.value.code == -32601
    with pytest.raises(LspError):
        client.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": "nowhere"})
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri}})  # wrong params: logged
    hover = client.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 9, "character": 20}})
    assert "func greet.Hello" in hover["contents"]["value"]


def test_cancel_request_answers_request_cancelled(workspace, editor):
    need("gopls")
    root = workspace("go")
    client = editor(root)
    uri = client.open(root / "main.go", "go")
    request_id = client.request_async("textDocument/references", {
        "textDocument": {"uri": uri}, "position": {"line": 9, "character": 20}, "context": {"includeDeclaration": True}})
    client.notify("$/cancelRequest", {"id": request_id})
    answer = client.response(request_id)
    # Either the cancellation won (-32800) or the answer was already on its way.
    assert "result" in answer or answer["error"]["code"] == -32800
    hover = client.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 9, "character": 20}})
    assert hover is not None


def test_a_killed_server_is_restarted_and_resynced(workspace, editor):
    need("gopls")
    root = workspace("go")
    client = editor(root)
    main = root / "main.go"
    text = main.read_text()
    uri = client.open(main, "go")
    end = {"line": text.count("\n"), "character": 0}
    client.change(uri, 2, [{"range": {"start": end, "end": end}, "text": GO_WAVE}])
    text += GO_WAVE
    # The status notification (for an editor's status bar) came after initialize.
    client.wait_notification("filepuff/status", lambda p: any(s["name"] == "gopls" for s in p["servers"]))
    first = server(client, "gopls")["pid"]
    os.kill(first, signal.SIGKILL)
    client.wait_notification("filepuff/status", lambda p: any(
        s["name"] == "gopls" and s["state"] == "exited" for s in p["servers"]), timeout=30)
    client.wait_notification("window/logMessage", lambda p: "restarted" in p["message"], timeout=60)
    client.wait_notification("filepuff/status", lambda p: any(
        s["name"] == "gopls" and s["pid"] != first and s["state"] != "exited" for s in p["servers"]), timeout=30)
    second = server(client, "gopls")
    assert second["pid"] != first and second["state"] != "exited"
    # The new gopls has the unsaved text: Wave resolves.
    client.change(uri, 3, [{"range": range_(9, 0, 9, 0), "text": '\t_ = Wave("y")\n'}])
    text = apply(text, {"line": 9, "character": 0}, {"line": 9, "character": 0}, '\t_ = Wave("y")\n', "utf-16")
    definition = client.request("textDocument/definition", {"textDocument": {"uri": uri}, "position": at(text, "Wave(\"y\")", "utf-16")})
    locations = definition if isinstance(definition, list) else [definition]
    assert locations[0]["range"]["start"] == at(text, "Wave(s string)", "utf-16")


def test_shutdown_and_exit_leave_no_child_process(workspace, editor):
    need("gopls", "basedpyright-langserver")
    root = workspace("go", "py")
    client = editor(root)
    pids = [s["pid"] for s in status(client)["servers"]]
    assert len(pids) >= 2 and all(process_name(p) for p in pids)
    assert set(pids) <= set(children(client.proc.pid))
    assert client.shutdown() == 0
    deadline = time.monotonic() + 10
    while any(process_name(p) for p in pids):
        assert time.monotonic() < deadline, f"left running: {[p for p in pids if process_name(p)]}"
        time.sleep(0.1)


def test_initialization_options_override_the_configuration(workspace, tmp_path):
    """The editor packages pass server overrides as initializationOptions."""
    need("clangd")
    root = workspace("c", config='[servers.clangd]\nposition_encoding = "utf-32"\n')
    client = LspClient([str(filepuff_binary()), "lsp"], root, stderr=open(tmp_path / "lsp.log", "w"))
    try:
        client.initialize(root, ["utf-16"], options={"servers": {"clangd": {"position_encoding": "utf-8"}}})
        assert server(client, "clangd")["positionEncoding"] == "utf-8"
    finally:
        client.kill()
    bad = LspClient([str(filepuff_binary()), "lsp"], root, stderr=open(tmp_path / "lsp2.log", "w"))
    try:
        with pytest.raises(LspError) as err:
            bad.initialize(root, ["utf-16"], options={"servrs": {}})
        assert err.value.code == -32602 and "servrs" in err.value.message
    finally:
        bad.kill()
