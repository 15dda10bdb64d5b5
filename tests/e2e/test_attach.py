"""Agents attached to the editor's Engine: `filepuff lsp` (driven by the editor-like client in
lsp_client.py) serves MCP on its per-workspace Unix socket; a real MCP client (the Python SDK)
runs `filepuff mcp`, which bridges to it. The agent sees the editor's unsaved text, shares its
gopls, and its edits to open documents reach the editor as `workspace/applyEdit`."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import stat
import time
from pathlib import Path

import pytest

from conftest import REPO, McpSession, filepuff_binary
from lsp_client import LspClient, children, process_name

FIXTURES = REPO / "tests" / "fixtures" / "lsp"
WAVE = 'func Wave(s string) string { return "👋" + s }\n'


def need(*programs: str) -> None:
    missing = [p for p in programs if shutil.which(p) is None]
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)} (scripts/install-language-servers)")


def socket_path(root: Path) -> Path:
    uid = os.getuid()
    run = Path(f"/run/user/{uid}")
    base = run / "filepuff" if run.is_dir() and run.stat().st_uid == uid else Path(f"/tmp/filepuff-{uid}")
    return base / (hashlib.sha256(os.fsencode(os.path.realpath(root))).hexdigest()[:16] + ".sock")


class Editor(LspClient):
    """An editor holding buffers: it applies `workspace/applyEdit` to them and sends didChange."""

    def __init__(self, root: Path, log: Path):
        super().__init__([str(filepuff_binary()), "lsp"], root, env={"FILEPUFF_LOG": "info"}, stderr=open(log, "w"))
        self.buffers: dict[str, list] = {}  # uri -> [version, text]
        self.refuse: str | None = None
        self.applied_edits: list[dict] = []
        self.handlers["workspace/applyEdit"] = self._apply_edit
        self.init_result = self.initialize(root, ["utf-16"])

    def open_buffer(self, path: Path, text: str | None = None) -> str:
        text = path.read_text() if text is None else text
        uri = self.open(path, "go", text=text)
        self.buffers[uri] = [1, text]
        return uri

    def edit_buffer(self, uri: str, text: str) -> None:
        version = self.buffers[uri][0] + 1
        self.buffers[uri] = [version, text]
        self.change(uri, version, [{"text": text}])

    def _apply_edit(self, params: dict) -> dict:
        self.applied_edits.append(params)
        if self.refuse is not None:
            return {"applied": False, "failureReason": self.refuse}
        for change in params["edit"]["documentChanges"]:
            uri = change["textDocument"]["uri"]
            version, text = self.buffers[uri]
            assert change["textDocument"]["version"] == version, "the edit names the buffer's version"
            for edit in change["edits"]:
                text = replace_range(text, edit["range"], edit["newText"])
            self.edit_buffer(uri, text)
        return {"applied": True}


def replace_range(text: str, rng: dict, new: str) -> str:
    lines = text.split("\n")

    def offset(pos):
        line = lines[pos["line"]] if pos["line"] < len(lines) else ""
        units, i = 0, 0
        while i < len(line) and units < pos["character"]:
            units += 2 if ord(line[i]) > 0xFFFF else 1
            i += 1
        return sum(len(l) + 1 for l in lines[: pos["line"]]) + i

    return text[: offset(rng["start"])] + new + text[offset(rng["end"]):]


@pytest.fixture
def go_root(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    shutil.copytree(FIXTURES / "go", root)
    return root


def mcp_pid(root: Path) -> int:
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmd = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"mcp" in cmd and os.fsencode(str(root)) in cmd:
                return int(entry)
    raise AssertionError("no filepuff mcp process")


def test_agents_see_unsaved_buffers_and_share_the_editors_servers(go_root, tmp_path, cleanup):
    need("gopls")
    editor = Editor(go_root, tmp_path / "lsp.log")
    cleanup.append(editor)
    main = go_root / "main.go"
    disk = main.read_text()
    uri = editor.open_buffer(main)
    unsaved = disk.replace("func main() {\n", 'func main() {\n\t_ = Wave("z")\n') + WAVE
    editor.edit_buffer(uri, unsaved)
    sock = socket_path(go_root)
    editor.wait_for(lambda: sock.exists(), 10, "the socket")
    assert stat.S_IMODE(sock.stat().st_mode) == 0o600
    assert stat.S_IMODE(sock.parent.stat().st_mode) == 0o700

    session = McpSession(go_root, tmp_path / "mcp.log").start()
    cleanup.append(session)
    read = session.ok("file_read", {"path": "main.go"})
    assert read["content"] == unsaved and read["buffer_version"] == 2
    found = session.ok("file_search", {"pattern": "Wave\\(", "regex": True})
    assert [(f["path"], f["buffer_version"]) for f in found["files"]] == [("main.go", 2)]
    assert found["total_matches"] == 2
    query = session.ok("ast_query", {"pattern": "func Wave($$$A) string { $$$B }", "language": "go"})
    assert [m["file"] for m in query["matches"]] == ["main.go"]
    line = unsaved.split("\n").index('\t_ = Wave("z")') + 1
    definition = session.ok("find_definition", {"file": "main.go", "line": line, "symbol": "Wave"})
    assert definition["definitions"][0]["line"] == unsaved.split("\n").index(WAVE.rstrip("\n")) + 1
    assert main.read_text() == disk
    # One gopls, the editor's: the agent's filepuff started none.
    gopls = [p for p in children(editor.proc.pid) if process_name(p) == "gopls"]
    assert len(gopls) == 1
    assert not [p for p in children(mcp_pid(go_root)) if process_name(p) == "gopls"]


def test_agent_edits_to_open_documents_go_through_the_editor(go_root, tmp_path, cleanup):
    need("gopls")
    editor = Editor(go_root, tmp_path / "lsp.log")
    cleanup.append(editor)
    main = go_root / "main.go"
    disk = main.read_text()
    uri = editor.open_buffer(main)
    unsaved = disk + "\n// unsaved note 😀\n"
    editor.edit_buffer(uri, unsaved)
    editor.wait_for(lambda: socket_path(go_root).exists(), 10, "the socket")
    session = McpSession(go_root, tmp_path / "mcp.log").start()
    cleanup.append(session)

    applied = session.ok("edit_apply", {"file": "main.go", "operation": "replace",
                                        "selector_text": "unsaved note", "new_content": "agent note"})
    assert applied["applied"] and applied["written_to"] == "editor"
    assert len(editor.applied_edits) == 1
    merged = unsaved.replace("unsaved note", "agent note")
    assert editor.buffers[uri][1] == merged
    assert session.ok("file_read", {"path": "main.go"})["content"] == merged
    assert main.read_text() == disk, "the disk is untouched"

    editor.refuse = "the user declined"
    refused = session.ok("edit_apply", {"file": "main.go", "operation": "replace",
                                        "selector_text": "agent note", "new_content": "other note"})
    assert not refused["applied"] and refused["editor_refused"] == "the user declined"
    assert session.ok("file_read", {"path": "main.go"})["content"] == merged
    assert main.read_text() == disk


def test_rename_goes_through_the_editor_for_open_files_and_to_disk_for_the_rest(go_root, tmp_path, cleanup):
    need("gopls")
    (go_root / "greet" / "twice.go").write_text(
        'package greet\n\n// Twice greets name twice.\nfunc Twice(name string) string {\n\treturn Hello(name) + " " + Hello(name)\n}\n')
    editor = Editor(go_root, tmp_path / "lsp.log")
    cleanup.append(editor)
    main = go_root / "main.go"
    disk_main = main.read_text()
    uri = editor.open_buffer(main)
    editor.wait_for(lambda: socket_path(go_root).exists(), 10, "the socket")
    session = McpSession(go_root, tmp_path / "mcp.log").start()
    cleanup.append(session)
    greet = go_root / "greet" / "greet.go"
    line = greet.read_text().split("\n").index("func Hello(name string) string {") + 1
    out = session.ok("rename_symbol", {"file": "greet/greet.go", "line": line, "symbol": "Hello",
                                       "new_name": "Salute", "apply": True})
    written = {f["file"]: f["written_to"] for f in out["files"]}
    assert written == {"main.go": "editor", "greet/greet.go": "disk", "greet/twice.go": "disk"}
    assert "Salute(" in editor.buffers[uri][1] and "Hello(" not in editor.buffers[uri][1]
    assert main.read_text() == disk_main, "the open file is the editor's to save"
    for rel in ("greet/greet.go", "greet/twice.go"):
        text = (go_root / rel).read_text()
        assert "Salute(" in text and "Hello(" not in text


def test_editor_exit_stale_socket_and_two_roots(go_root, tmp_path, cleanup):
    need("gopls")
    editor = Editor(go_root, tmp_path / "lsp1.log")
    cleanup.append(editor)
    main = go_root / "main.go"
    disk = main.read_text()
    uri = editor.open_buffer(main)
    editor.edit_buffer(uri, disk + "// unsaved\n")
    sock = socket_path(go_root)
    editor.wait_for(lambda: sock.exists(), 10, "the socket")
    session = McpSession(go_root, tmp_path / "mcp.log").start()
    cleanup.append(session)
    assert session.ok("file_read", {"path": "main.go"})["content"].endswith("// unsaved\n")

    os.kill(editor.proc.pid, signal.SIGKILL)
    editor.proc.wait()
    assert sock.exists(), "kill -9 leaves the socket file behind"
    # The agent goes on, standalone: the disk's text now.
    deadline = time.monotonic() + 20
    while True:
        result = session.call("file_read", {"path": "main.go"})
        if not result.is_error:
            assert result.structured_content["content"] == disk
            break
        assert time.monotonic() < deadline, result
        time.sleep(0.2)

    # A new editor on the same root cleans the stale socket up and serves again.
    second = Editor(go_root, tmp_path / "lsp2.log")
    cleanup.append(second)
    second.wait_for(lambda: sock.exists() and _accepts(sock), 10, "a live socket")
    other_root = tmp_path / "other"
    shutil.copytree(FIXTURES / "go", other_root)
    third = Editor(other_root, tmp_path / "lsp3.log")
    cleanup.append(third)
    other_sock = socket_path(other_root)
    third.wait_for(lambda: other_sock.exists(), 10, "the second root's socket")
    assert other_sock != sock and _accepts(other_sock)
    second.shutdown()
    assert not sock.exists(), "a clean exit removes the socket"


def _accepts(path: Path) -> bool:
    import socket

    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(str(path))
        return True
    except OSError:
        return False
    finally:
        s.close()


def test_save_agent_edits_also_saves_what_the_editor_applied(go_root, tmp_path, cleanup):
    need("gopls")
    (go_root / "filepuff.toml").write_text("[lsp]\nsave_agent_edits = true\n")
    editor = Editor(go_root, tmp_path / "lsp.log")
    cleanup.append(editor)
    main = go_root / "main.go"
    uri = editor.open_buffer(main)
    unsaved = main.read_text() + "// unsaved note\n"
    editor.edit_buffer(uri, unsaved)
    editor.wait_for(lambda: socket_path(go_root).exists(), 10, "the socket")
    session = McpSession(go_root, tmp_path / "mcp.log").start()
    cleanup.append(session)
    out = session.ok("edit_apply", {"file": "main.go", "operation": "replace",
                                    "selector_text": "unsaved note", "new_content": "saved note"})
    assert out["applied"] and out["written_to"] == "editor+disk"
    merged = unsaved.replace("unsaved note", "saved note")
    assert editor.buffers[uri][1] == merged and main.read_text() == merged


def test_an_agents_requests_put_no_progress_before_the_person(tmp_path, cleanup):
    """basedpyright reports work-done progress around each `textDocument/references`. An agent's
    requests carry filepuff's own `workDoneToken`, so the server reports on it instead of asking
    `window/workDoneProgress/create` first (a round trip per request, which the editor used to be
    asked and see a spinner for): the editor is asked to create no progress for them and hears
    none of theirs."""
    need("basedpyright-langserver")
    root = tmp_path / "py"
    shutil.copytree(FIXTURES / "py", root)
    editor = Editor(root, tmp_path / "lsp.log")
    cleanup.append(editor)
    cart = root / "shop" / "cart.py"
    editor.open(cart, "python")
    editor.wait_for(lambda: socket_path(root).exists(), 10, "the agent socket")
    agent = McpSession(root, tmp_path / "mcp.log").start()
    cleanup.append(agent)
    line = next(i for i, text in enumerate(cart.read_text().splitlines(), 1) if "class Cart" in text)
    ask = {"file": "shop/cart.py", "line": line, "symbol": "Cart"}
    assert agent.ok("find_references", ask)["completeness"] == "complete"

    def creates() -> int:
        return sum(1 for r in editor.server_requests if r["method"] == "window/workDoneProgress/create")

    before = creates()
    for _ in range(5):
        out = agent.ok("find_references", ask)
        assert out["completeness"] == "complete" and out["total_references"] >= 2, out
    assert creates() == before, [r for r in editor.server_requests if r["method"] == "window/workDoneProgress/create"]
    ours = [n for n in editor.notifications
            if n["method"] == "$/progress" and "/ask/" in str(n["params"]["token"])]
    assert ours == []
