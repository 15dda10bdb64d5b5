"""Server lifecycle the editor and the agents can rely on:

- a language server that answers `initialize` after `filepuff lsp` answered the editor has its
  features registered with `client/registerCapability` (or, for an editor without dynamic
  registration, one `window/showMessage` naming what is missing), and again after it restarts
  with other capabilities;
- a restarted `filepuff lsp` (the editor's restart command starts the new one while the old one
  still runs) takes the agents' socket over when the old one exits, and an attached
  `filepuff mcp` re-attaches to it; a standalone one attaches when an editor appears;
- an agent served from disk while an editor runs for its root says so in every result.

Only fake_lsp.py and plain-text buffers: no real language server is needed."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import McpSession, filepuff_binary, structured_error
from lsp_client import LspClient
from test_attach import socket_path

FAKE = Path(__file__).with_name("fake_lsp.py")


def editor_capabilities(dynamic: bool) -> dict:
    return {
        "general": {"positionEncodings": ["utf-16"]},
        "workspace": {"applyEdit": True, "configuration": True, "workspaceFolders": True,
                      "workspaceEdit": {"documentChanges": True}},
        "textDocument": {
            "synchronization": {"didSave": True, "dynamicRegistration": dynamic},
            "hover": {"dynamicRegistration": dynamic, "contentFormat": ["plaintext"]},
            "definition": {"dynamicRegistration": dynamic},
            "references": {"dynamicRegistration": dynamic},
        },
        "window": {"workDoneProgress": True},
    }


class Editor(LspClient):
    """An editor-like client of `filepuff lsp` holding plain-text buffers."""

    def __init__(self, root: Path, log: Path, dynamic: bool = True):
        super().__init__([str(filepuff_binary()), "lsp"], root, env={"FILEPUFF_LOG": "info"}, stderr=open(log, "w"))
        self.log = log
        self.init_result = self.initialize(root, capabilities=editor_capabilities(dynamic))

    def open_buffer(self, path: Path, text: str, language_id: str = "plaintext") -> str:
        return self.open(path, language_id, text=text)

    def requests_of(self, method: str) -> list[dict]:
        return [r for r in self.server_requests if r["method"] == method]


def socket_owner(path: Path) -> int | None:
    """The pid of the process accepting on the Unix socket `path` (SO_PEERCRED), or None."""
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(str(path))
        pid, _uid, _gid = struct.unpack("3i", s.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                           struct.calcsize("3i")))
        return pid
    except OSError:
        return None
    finally:
        s.close()


# ---- servers that start after initialize -----------------------------------------------------


def fake_workspace(tmp_path: Path, delay_ms: int, capabilities: dict) -> tuple[Path, Path]:
    """A Go workspace served by fake_lsp.py only, answering initialize after `delay_ms` while
    filepuff waits 300 ms; returns (root, the fake's capabilities file)."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "main.go").write_text("package main\n\nfunc main() {}\n")
    caps = tmp_path / "caps.json"
    caps.write_text(json.dumps(capabilities))
    (root / "filepuff.toml").write_text(
        "[lsp]\nrequest_timeout_ms = 20000\ninitialize_wait_ms = 300\n\n"
        f"[servers.fake]\ncommand = [{json.dumps(sys.executable)}, {json.dumps(str(FAKE))}]\n"
        'languages = ["go"]\n'
        f'env = {{ FAKE_LSP_INIT_DELAY_MS = "{delay_ms}", FAKE_LSP_ANSWER = "1", '
        f"FAKE_LSP_CAPS_FILE = {json.dumps(str(caps))} }}\n"
    )
    return root, caps


def registrations(editor: Editor, after: int = 0) -> dict[str, dict]:
    found = {}
    for request in editor.requests_of("client/registerCapability")[after:]:
        for registration in request["params"]["registrations"]:
            found[registration["method"]] = registration
    return found


def test_a_server_slower_than_initialize_is_registered_then_answers(tmp_path, cleanup):
    root, caps = fake_workspace(tmp_path, 1500, {"hoverProvider": True})
    started = time.monotonic()
    editor = Editor(root, tmp_path / "lsp.log")
    cleanup.append(editor)
    answered = time.monotonic() - started
    advertised = editor.init_result["capabilities"]
    assert "definitionProvider" not in advertised and "hoverProvider" not in advertised, advertised
    assert answered < 1.4, f"filepuff answered initialize after the wait ({answered:.2f} s), not after the fake"

    editor.wait_for(lambda: "textDocument/hover" in registrations(editor), 20, "the late registrations")
    registered = time.monotonic() - started
    late = registrations(editor)
    assert set(late) == {"textDocument/definition", "textDocument/hover"}, late
    for registration in late.values():
        assert registration["registerOptions"]["documentSelector"] == [{"language": "go"}]
        assert registration["id"].startswith("filepuff/")

    main = root / "main.go"
    uri = editor.open_buffer(main, main.read_text(), "go")
    position = {"textDocument": {"uri": uri}, "position": {"line": 2, "character": 6}}
    definition = editor.request("textDocument/definition", position, timeout=20)
    assert definition == [{"uri": uri, "range": {"start": {"line": 0, "character": 0},
                                                   "end": {"line": 0, "character": 4}}}]
    first_pid = editor.request("filepuff/status")["servers"][0]["pid"]
    hover = editor.request("textDocument/hover", position, timeout=20)
    assert hover["contents"]["value"] == f"fake hover from {first_pid}"
    print(f"\ninitialize answered after {answered * 1000:.0f} ms; "
          f"registrations arrived {registered * 1000:.0f} ms after start")

    # It crashes and comes back offering references instead of hover: the old registrations
    # are removed, the new set registered.
    caps.write_text(json.dumps({"referencesProvider": True}))
    requests_before = len(editor.requests_of("client/registerCapability"))
    os.kill(first_pid, signal.SIGKILL)
    editor.wait_for(lambda: registrations(editor, requests_before), 30, "the restarted server's registrations")
    [unregistration] = editor.requests_of("client/unregisterCapability")
    assert {u["id"] for u in unregistration["params"]["unregisterations"]} == {r["id"] for r in late.values()}
    again = registrations(editor, requests_before)
    assert set(again) == {"textDocument/definition", "textDocument/references"}, again
    second_pid = editor.request("filepuff/status")["servers"][0]["pid"]
    assert second_pid != first_pid
    definition = editor.request("textDocument/definition", position, timeout=20)
    assert definition[0]["uri"] == uri


def test_an_editor_without_dynamic_registration_is_told_what_is_missing(tmp_path, cleanup):
    root, _ = fake_workspace(tmp_path, 1500, {"hoverProvider": True})
    editor = Editor(root, tmp_path / "lsp.log", dynamic=False)
    cleanup.append(editor)
    assert "hoverProvider" not in editor.init_result["capabilities"]
    shown = editor.wait_notification("window/showMessage", lambda p: "fake" in p["message"], timeout=20)
    assert shown["type"] == 2
    message = shown["message"]
    assert "definition, hover" in message and "started after the editor's initialize" in message, message
    assert "restarted" in message and "initialize_wait_ms" in message, message
    assert not editor.requests_of("client/registerCapability")
    # Once: another start of the server with the same features says nothing new.
    time.sleep(0.5)
    assert len([n for n in editor.notifications if n["method"] == "window/showMessage"]) == 1


# ---- the agents' socket across an editor's restart --------------------------------------------


def text_workspace(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "ws"
    root.mkdir()
    notes = root / "notes.txt"
    notes.write_text("on disk\n")
    return root, notes


@pytest.mark.parametrize("stop", ["exit", "kill"])
def test_a_restarted_editor_server_takes_the_socket_and_the_agent_over(tmp_path, cleanup, stop):
    root, notes = text_workspace(tmp_path)
    sock = socket_path(root)
    first = Editor(root, tmp_path / "lsp-a.log")
    cleanup.append(first)
    first.wait_for(lambda: socket_owner(sock) == first.proc.pid, 10, "A owns the socket")
    first.open_buffer(notes, "A's unsaved text\n")
    agent = McpSession(root, tmp_path / "mcp.log").start()
    cleanup.append(agent)
    assert agent.ok("file_read", {"path": "notes.txt"})["content"] == "A's unsaved text\n"

    # The editor's restart: the new server starts while the old one still runs.
    second = Editor(root, tmp_path / "lsp-b.log")
    cleanup.append(second)
    second.open_buffer(notes, "B's unsaved text\n")
    status = second.request("filepuff/status")["agents"]
    assert status["serving"] is False
    assert status["root"] == str(Path(root).resolve()), status
    time.sleep(0.5)
    assert socket_owner(sock) == first.proc.pid, "the live owner keeps the socket"
    assert agent.ok("file_read", {"path": "notes.txt"})["content"] == "A's unsaved text\n"

    if stop == "exit":
        first.shutdown()
    else:
        os.kill(first.proc.pid, signal.SIGKILL)
        first.proc.wait()
    exited = time.monotonic()
    while socket_owner(sock) != second.proc.pid:
        assert time.monotonic() - exited < 10, "B did not take the socket over"
        time.sleep(0.01)
    takeover = time.monotonic() - exited
    read = agent.ok("file_read", {"path": "notes.txt"})
    served = time.monotonic() - exited
    assert read["content"] == "B's unsaved text\n" and read["source"] == "buffer"
    assert "source" not in agent.ok("file_search", {"pattern": "unsaved", "regex": False}), "attached: no disk note"
    assert second.request("filepuff/status")["agents"]["serving"] is True
    assert stat.S_IMODE(sock.stat().st_mode) == 0o600
    assert stat.S_IMODE(sock.parent.stat().st_mode) == 0o700
    print(f"\n[{stop}] B took the socket over {takeover * 1000:.0f} ms after A ended; "
          f"the agent's next call was answered by B {served * 1000:.0f} ms after A ended")
    assert takeover < 2.0
    log = (tmp_path / "lsp-b.log").read_text()
    assert "takes the socket over when it exits" in log and "taken over from pid" in log, log
    second.shutdown()
    assert not sock.exists(), "a clean exit removes the socket"


def test_an_agent_never_reads_the_disk_under_a_restarted_editors_buffer(tmp_path, cleanup):
    """The restart as Neovim's :FilepuffRestart does it: the old server ends first, then the new
    one starts, and the editor opens its buffers on it only after `initialize`. The new server
    serves agents only once the editor has opened its documents again: in between, the agent
    waits — it never reads (or edits) the disk under the person's unsaved buffer."""
    root, notes = text_workspace(tmp_path)
    sock = socket_path(root)
    first = Editor(root, tmp_path / "lsp-a.log")
    cleanup.append(first)
    first.wait_for(lambda: socket_owner(sock) == first.proc.pid, 10, "A owns the socket")
    first.open_buffer(notes, "unsaved\n")
    agent = McpSession(root, tmp_path / "mcp.log").start()
    cleanup.append(agent)
    assert agent.ok("file_read", {"path": "notes.txt"})["content"] == "unsaved\n"

    first.shutdown()
    second = LspClient([str(filepuff_binary()), "lsp"], root, env={"FILEPUFF_LOG": "info"},
                       stderr=open(tmp_path / "lsp-b.log", "w"))
    cleanup.append(second)
    second.request("initialize", {"processId": os.getpid(), "rootUri": root.as_uri(),
                                  "capabilities": editor_capabilities(True)}, timeout=60)
    def editor_catches_up():
        # The editor gets round to `initialized` and its buffers well after `initialize`.
        second.notify("initialized", {})
        second.open(notes, "plaintext", text="unsaved\n")

    import threading
    threading.Timer(0.6, editor_catches_up).start()
    reads = []
    started = time.monotonic()
    while time.monotonic() - started < 3.0:
        result = agent.call("file_read", {"path": "notes.txt"})
        if not result.is_error:
            reads.append((round(time.monotonic() - started, 2), result.structured_content["content"]))
    assert reads and {content for _, content in reads} == {"unsaved\n"}, f"reads during the restart: {reads}"


def test_a_standalone_agent_attaches_when_an_editor_starts(tmp_path, cleanup):
    root, notes = text_workspace(tmp_path)
    agent = McpSession(root, tmp_path / "mcp.log").start()
    cleanup.append(agent)
    plain = agent.call("file_search", {"pattern": "disk", "regex": False})
    assert "source" not in plain.structured_content and "Note:" not in plain.content[0].text, "no editor: no note"
    assert agent.ok("file_read", {"path": "notes.txt"})["content"] == "on disk\n"

    editor = Editor(root, tmp_path / "lsp.log")
    cleanup.append(editor)
    editor.wait_for(lambda: socket_owner(socket_path(root)) == editor.proc.pid, 10, "the editor's socket")
    editor.open_buffer(notes, "the editor's unsaved text\n")
    read = agent.ok("file_read", {"path": "notes.txt"})
    assert read["content"] == "the editor's unsaved text\n" and read["source"] == "buffer"


def test_an_agent_served_from_disk_while_an_editor_runs_says_so(tmp_path, cleanup):
    root, notes = text_workspace(tmp_path)
    editor = Editor(root, tmp_path / "lsp.log")
    cleanup.append(editor)
    editor.open_buffer(notes, "unsaved\n")
    agent = McpSession(root, tmp_path / "mcp.log", extra_args=["--standalone"]).start()
    cleanup.append(agent)

    read = agent.call("file_read", {"path": "notes.txt"})
    assert not read.is_error
    assert read.structured_content["content"] == "on disk\n" and read.structured_content["source"] == "disk"
    # file_read's own `source` is `disk` for any unopened file: `editor_note` says the editor
    # could not be asked.
    assert "unsaved buffers are not visible" in read.structured_content["editor_note"]
    note = read.content[0].text
    assert f"filepuff lsp (pid {editor.proc.pid})" in note and "unsaved buffers are not visible" in note, note
    assert "--standalone" in note, note
    found = agent.call("file_search", {"pattern": "disk", "regex": False})
    assert found.structured_content["source"] == "disk" and "unsaved buffers are not visible" in found.content[0].text
    failed = agent.call("file_read", {"path": "missing.txt"})
    error, text = structured_error(failed)
    assert error["source"] == "disk" and "unsaved buffers are not visible" in text

    # The CLI reads the disk too, and says so on stderr (stdout stays the tool's output).
    cli = subprocess.run([str(filepuff_binary()), "--root", str(root), "read", "notes.txt"], capture_output=True,
                         text=True, timeout=60)
    assert cli.returncode == 0 and "on disk" in cli.stdout and "unsaved buffers" not in cli.stdout, cli
    assert f"note: served from the files on disk: an editor's filepuff lsp (pid {editor.proc.pid})" in cli.stderr
    assert "this command is not attached to it (the CLI runs on its own)" in cli.stderr, cli.stderr

    editor.shutdown()
    quiet = subprocess.run([str(filepuff_binary()), "--root", str(root), "read", "notes.txt"], capture_output=True,
                           text=True, timeout=60)
    assert quiet.returncode == 0 and "note:" not in quiet.stderr, quiet.stderr
    after = agent.call("file_search", {"pattern": "disk", "regex": False})
    assert "source" not in after.structured_content and "Note:" not in after.content[0].text, "no editor: no note"
    assert "editor_note" not in after.structured_content


def test_a_sigtermed_editor_server_removes_its_socket_and_presence(tmp_path, cleanup):
    root, notes = text_workspace(tmp_path)
    sock = socket_path(root)
    editor = Editor(root, tmp_path / "lsp.log")
    cleanup.append(editor)
    editor.wait_for(lambda: socket_owner(sock) == editor.proc.pid, 10, "the editor's socket")
    presence = sock.parent / f"{sock.stem}.{editor.proc.pid}.editor"
    assert presence.exists()
    editor.proc.send_signal(signal.SIGTERM)
    assert editor.proc.wait(timeout=10) == 0
    assert not sock.exists() and not presence.exists()


# ---- server requests at the editor's `initialized` ----------------------------------------------


def test_progress_created_at_initialized_reaches_an_editor_that_registers_its_handler_late(tmp_path, cleanup):
    """Issue 18: gopls asks `window/workDoneProgress/create` as soon as it is initialized; VS Code
    (vscode-languageclient) registers its handler only after sending `initialized`, and answered
    the forwarded request -32601, so the "Setting up workspace" progress never showed. The fake
    server asks at `initialized` too; this editor refuses the method until 300 ms after its own
    `initialized`. filepuff holds the request until the editor's `initialized` and asks again
    while the editor settles: the server's create is answered, and begin, report and end reach
    the editor under the token it was asked to create."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "main.go").write_text("package main\n\nfunc main() {}\n")
    log = tmp_path / "fake.log"
    (root / "filepuff.toml").write_text(
        f"[servers.fake]\ncommand = [{json.dumps(sys.executable)}, {json.dumps(str(FAKE))}]\n"
        f'languages = ["go"]\nenv = {{ FAKE_LSP_PROGRESS = "1", FAKE_LSP_LOG = {json.dumps(str(log))} }}\n')
    editor = LspClient([str(filepuff_binary()), "lsp"], root, env={"FILEPUFF_LOG": "info"},
                       stderr=open(tmp_path / "lsp.log", "w"))
    cleanup.append(editor)
    create = editor.handlers.pop("window/workDoneProgress/create")
    editor.initialize(root, capabilities=editor_capabilities(dynamic=True))
    time.sleep(0.3)
    editor.handlers["window/workDoneProgress/create"] = create  # the handler, registered late
    editor.open(root / "main.go", "go")

    def progress() -> list[dict]:
        return [n["params"] for n in editor.notifications if n["method"] == "$/progress"]

    editor.wait_for(lambda: any(p["value"]["kind"] == "end" for p in progress()), 20, "the server's progress")
    creates = [r for r in editor.server_requests if r["method"] == "window/workDoneProgress/create"]
    tokens = {r["params"]["token"] for r in creates}
    assert len(tokens) == 1, creates
    [token] = tokens
    assert [(p["token"], p["value"]["kind"]) for p in progress()] == [
        (token, "begin"), (token, "report"), (token, "end")]
    assert [p["value"].get("percentage") for p in progress()] == [None, 42, None]
    answers = [json.loads(line) for line in log.read_text().splitlines()
               if json.loads(line).get("id") == "fake-progress-create" and "method" not in json.loads(line)]
    assert [("error" in a, a.get("result")) for a in answers] == [(False, None)], answers
