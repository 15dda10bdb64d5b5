"""Issue 20: several servers for one language (`[languages.python] servers = ["ruff",
"basedpyright"]`, a linter listed first), and requests that are cancelled.

- Routing (item 1): the editor's hover and definition and the agent's `find_definition` and
  `hover` are answered by basedpyright, the type checker, whatever the list's order; the result
  of an MCP tool names the server that answered. `[languages.python] navigation = ["ruff"]`
  makes ruff the one asked.
- Cancellation (item 6, with tests/e2e/fake_lsp.py, which never answers a definition): an
  editor's `$/cancelRequest` and an agent's `notifications/cancelled` reach the server as
  `$/cancelRequest` within a second, and the server is not restarted."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import McpSession, filepuff_binary
from lsp_client import LspClient

FAKE = Path(__file__).with_name("fake_lsp.py")
# `total` is defined on line 1 and used on line 5 (0-based 4), column 11.
SOURCE = "def total(prices: list[int]) -> int:\n    return sum(prices)\n\n\nresult = total([1, 2])\n"
AT_USE = {"line": 4, "character": 11}


def need(*programs: str) -> None:
    missing = [p for p in programs if shutil.which(p) is None]
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)} (scripts/install-language-servers)")


def python_root(tmp_path: Path, extra: str = "") -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "pyproject.toml").write_text('[project]\nname = "shop"\nversion = "0"\n')
    (root / "shop.py").write_text(SOURCE)
    (root / "filepuff.toml").write_text(f'[languages.python]\nservers = ["ruff", "basedpyright"]\n{extra}')
    return root


def editor(root: Path, tmp_path: Path) -> LspClient:
    log = open(tmp_path / "filepuff-lsp.log", "w")
    client = LspClient([str(filepuff_binary()), "lsp"], root, env={"FILEPUFF_LOG": "info"}, stderr=log)
    client.initialize(root)
    return client


def hover_text(hover: dict | None) -> str:
    if not hover:
        return ""
    contents = hover["contents"]
    return contents["value"] if isinstance(contents, dict) else json.dumps(contents)


def wait_answer(request, what: str, timeout: float = 90):
    """Asks until the answer is not empty (basedpyright answers null while it loads)."""
    deadline = time.monotonic() + timeout
    while True:
        answer = request()
        if answer:
            return answer
        assert time.monotonic() < deadline, f"{what} stayed empty for {timeout} s"
        time.sleep(0.5)


def test_issue_20_the_type_checker_answers_navigation_though_a_linter_is_listed_first(tmp_path):
    need("basedpyright-langserver", "ruff")
    root = python_root(tmp_path)
    client = editor(root, tmp_path)
    try:
        uri = client.open(root / "shop.py", "python")
        at = {"textDocument": {"uri": uri}, "position": AT_USE}
        hover = wait_answer(lambda: client.request("textDocument/hover", at), "hover")
        assert "total" in hover_text(hover) and "int" in hover_text(hover), hover
        definition = wait_answer(lambda: client.request("textDocument/definition", at), "definition")
        [target] = definition if isinstance(definition, list) else [definition]
        assert target.get("uri", target.get("targetUri")) == uri
        start = (target.get("range") or target["targetSelectionRange"])["start"]
        assert start["line"] == 0, definition
    finally:
        client.kill()

    session = McpSession(root, tmp_path / "mcp.log").start()
    try:
        found = session.ok("find_definition", {"file": "shop.py", "line": 5, "symbol": "total"})
        assert found["server"].startswith("basedpyright"), found
        assert [(d["file"], d["line"]) for d in found["definitions"]] == [("shop.py", 1)], found
        hover = session.ok("hover", {"file": "shop.py", "line": 5, "symbol": "total"})
        assert hover["server"].startswith("basedpyright"), hover
        assert "total" in json.dumps(hover), hover
    finally:
        session.close()


def test_issue_20_navigation_config_chooses_the_server(tmp_path):
    need("basedpyright-langserver", "ruff")
    root = python_root(tmp_path, 'navigation = ["ruff"]\n')
    session = McpSession(root, tmp_path / "mcp.log").start()
    try:
        # ruff alone is asked: it offers no definition, so its own answer (an error) comes back.
        result = session.call("find_definition", {"file": "shop.py", "line": 5, "symbol": "total"})
        assert result.is_error, result.structured_content
        error = json.loads(result.content[-1].text)
        assert "ruff" in json.dumps(error), error
    finally:
        session.close()


def test_diagnostics_of_a_file_merge_every_servers_report(tmp_path):
    """The type checker's and the linter's diagnostics of one file, as the editor shows them
    (found by a fresh user: the per-file call gave basedpyright's alone)."""
    need("basedpyright-langserver", "ruff")
    root = python_root(tmp_path)
    (root / "app.py").write_text("import os\n\n\ndef f() -> int:\n    return 1\n")
    session = McpSession(root, tmp_path / "mcp.log").start()
    try:
        def report():
            out = session.ok("diagnostics", {"file": "app.py"})
            sources = {d.get("source") for d in out["diagnostics"]}
            return out if {"basedpyright", "Ruff"} <= sources else None

        out = wait_answer(report, "diagnostics from both servers", timeout=120)
        assert "basedpyright" in out["server"] and "ruff" in out["server"].lower(), out["server"]
        codes = {(d.get("source"), d.get("code")) for d in out["diagnostics"]}
        assert ("Ruff", "F401") in codes, codes
        assert [d["line"] for d in out["diagnostics"]] == sorted(d["line"] for d in out["diagnostics"])
        cli = subprocess.run([str(filepuff_binary()), "--root", str(root), "diag", "app.py"], capture_output=True,
                             text=True, timeout=120)
        assert "[Ruff]" in cli.stdout and "[basedpyright]" in cli.stdout, cli.stdout + cli.stderr
    finally:
        session.close()


# ---- cancellation --------------------------------------------------------------------------------

MAIN_GO = "package main\n\nfunc main() { helper() }\n\nfunc helper() {}\n"


def fake_root(tmp_path: Path) -> tuple[Path, Path]:
    """main.go served by fake_lsp.py, which never answers textDocument/definition."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "main.go").write_text(MAIN_GO)
    log = tmp_path / "fake.log"
    (root / "filepuff.toml").write_text(
        "[lsp]\nrequest_timeout_ms = 20000\n"
        f"[servers.fake]\ncommand = [{json.dumps(sys.executable)}, {json.dumps(str(FAKE))}]\n"
        f'languages = ["go"]\nenv = {{ FAKE_LSP_LOG = {json.dumps(str(log))} }}\n'
    )
    return root, log


def messages(log: Path) -> list[dict]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def wait_message(log: Path, match, timeout: float, what: str) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        for message in messages(log):
            if match(message):
                return message
        assert time.monotonic() < deadline, f"no {what} within {timeout} s: {messages(log)}"
        time.sleep(0.02)


def is_definition(message: dict) -> bool:
    return message.get("method") == "textDocument/definition"


def cancels(message: dict, definition: dict) -> bool:
    return message.get("method") == "$/cancelRequest" and message["params"]["id"] == definition["id"]


def test_issue_20_an_editor_cancel_reaches_the_server_at_once(tmp_path):
    root, log = fake_root(tmp_path)
    client = editor(root, tmp_path)
    try:
        uri = client.open(root / "main.go", "go")
        request = client.request_async("textDocument/definition",
                                       {"textDocument": {"uri": uri}, "position": {"line": 2, "character": 14}})
        definition = wait_message(log, is_definition, 30, "definition at the server")
        sent = time.time()
        client.notify("$/cancelRequest", {"id": request})
        cancel = wait_message(log, lambda m: cancels(m, definition), 5, "$/cancelRequest at the server")
        print(f"editor cancel reached the server after {cancel['t'] - sent:.3f} s")
        assert cancel["t"] - sent < 1.0, cancel["t"] - sent
        error = client.response(request, 10).get("error")
        assert error and error["code"] == -32800, error  # RequestCancelled
        time.sleep(0.5)
        assert sum(1 for m in messages(log) if m.get("method") == "initialize") == 1, "the server was restarted"
        assert sum(1 for m in messages(log) if is_definition(m)) == 1, "the cancelled request was sent again"
    finally:
        client.kill()


def test_issue_20_an_agent_cancel_reaches_the_server_at_once(tmp_path):
    root, log = fake_root(tmp_path)
    session = McpSession(root, tmp_path / "mcp.log").start()
    try:
        async def call_then_cancel():
            call = asyncio.ensure_future(session._session.call_tool(
                "find_definition", {"file": "main.go", "line": 3, "symbol": "helper"}))
            definition = await asyncio.to_thread(wait_message, log, is_definition, 30, "definition at the server")
            sent = time.time()
            # Abandoning the call makes the MCP SDK send `notifications/cancelled` for it.
            call.cancel()
            cancel = await asyncio.to_thread(wait_message, log, lambda m: cancels(m, definition), 5,
                                             "$/cancelRequest at the server")
            return cancel["t"] - sent

        delay = session._run(call_then_cancel())
        print(f"agent cancel reached the server after {delay:.3f} s")
        assert delay < 1.0, delay
        time.sleep(1.0)
        assert sum(1 for m in messages(log) if m.get("method") == "initialize") == 1, "the server was restarted"
        assert sum(1 for m in messages(log) if is_definition(m)) == 1, "the cancelled request was sent again"
        assert not session.call("ping", {}).is_error
    finally:
        session.close()


# ---- progress of a fanned-out request ------------------------------------------------------------

def test_issue_20_a_fanned_out_request_shows_one_piece_of_work_on_the_editor_token(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "main.go").write_text(MAIN_GO)
    servers = "".join(
        f"[servers.{name}]\ncommand = [{json.dumps(sys.executable)}, {json.dumps(str(FAKE))}]\n"
        f'languages = ["go"]\nenv = {{ FAKE_LSP_SYMBOLS = "1" }}\n'
        for name in ("fake1", "fake2"))
    (root / "filepuff.toml").write_text(f'{servers}[languages.go]\nservers = ["fake1", "fake2"]\n')
    client = editor(root, tmp_path)
    try:
        client.open(root / "main.go", "go")
        client.wait_for(lambda: len(client.request("filepuff/status")["servers"]) == 2, 30, "both servers running")
        symbols = client.request("workspace/symbol", {"query": "fake", "workDoneToken": "editor-token-1"})
        assert len({s["name"] for s in symbols}) == 2, symbols  # both servers answered
        # Each server saw a token of its own, never the editor's.
        time.sleep(0.3)
        on_token = [n["params"] for n in client.notifications
                    if n["method"] == "$/progress" and n["params"]["token"] == "editor-token-1"]
        kinds = [p["value"]["kind"] for p in on_token]
        assert kinds[0] == "begin" and kinds[-1] == "end", kinds
        assert kinds.count("begin") == 1 and kinds.count("end") == 1, kinds
        assert kinds.count("report") == 3, kinds  # two reports, and the second server's begin
        assert not [n for n in client.notifications
                    if n["method"] == "$/progress" and str(n["params"]["token"]).startswith("filepuff/fan/")]
    finally:
        client.kill()
