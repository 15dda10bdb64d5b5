"""Fixtures for filepuff's end-to-end tests: the real binary, driven over stdio by the official
MCP Python SDK (`mcp.client.stdio.stdio_client` + `mcp.client.session.ClientSession`).

Sessions are session-scoped and few: one server over GOROOT/src, one over CPython's standard
library, one over a small temporary workspace. Each runs its asyncio loop on a thread of its own
so the tests themselves stay plain synchronous functions.

Environment:
    FILEPUFF_BIN  the filepuff binary (default: <repo>/target/debug/filepuff)
    GOROOT        Go's root (default: `go env GOROOT`); the Go tests skip without one
    FILEPUFF_CI   set (by .ci/run): a test skipped because something it needs is missing — a
                  language server, Neovim, a corpus — fails instead, so CI cannot go green by
                  silently testing less
"""

from __future__ import annotations

import asyncio
import json
import concurrent.futures
import os
import shutil
import subprocess
import sysconfig
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

import mcp.types as types

REPO = Path(__file__).resolve().parents[2]
CALL_TIMEOUT = 60.0

# Skip reasons that mean "something the test needs is missing" (not "this case does not apply").
MISSING = ("not installed", "is not available", "are not available", "no Go toolchain")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Under FILEPUFF_CI, a skip for a missing program or corpus is a failure."""
    outcome = yield
    report = outcome.get_result()
    if os.environ.get("FILEPUFF_CI") and report.skipped and isinstance(report.longrepr, tuple):
        reason = str(report.longrepr[2])
        if any(marker in reason for marker in MISSING):
            report.outcome = "failed"
            report.longrepr = f"FILEPUFF_CI is set and the test was skipped: {reason}"


def filepuff_binary() -> Path:
    path = Path(os.environ.get("FILEPUFF_BIN") or REPO / "target" / "debug" / "filepuff")
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise RuntimeError(f"filepuff binary not found at {path}: build it (cargo build) or set FILEPUFF_BIN")
    return path


class ToolCallFailed(AssertionError):
    pass


class McpSession:
    """One `filepuff mcp --root ROOT [--toolsets T]` process and an initialized ClientSession."""

    def __init__(self, root: Path, stderr_log: Path, toolsets: str | None = None, extra_args: list[str] | None = None,
                 env: dict[str, str] | None = None):
        self.root = root
        self.stderr_log = stderr_log
        self.toolsets = toolsets
        self.extra_args = extra_args or []
        self.env = env or {}
        self.initialize_result: types.InitializeResult | None = None
        self._session: ClientSession | None = None
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=f"mcp {root}", daemon=True)
        self._stop: asyncio.Event | None = None
        self._runner: concurrent.futures.Future | None = None
        # The server's notifications (`notifications/resources/updated`, …), in arrival order.
        self.notifications: list[types.ServerNotification] = []

    # -- lifecycle --

    def start(self) -> McpSession:
        self._thread.start()
        ready: concurrent.futures.Future = concurrent.futures.Future()
        self._runner = asyncio.run_coroutine_threadsafe(self._serve(ready), self._loop)
        try:
            ready.result(timeout=30)
        except BaseException:
            self.close()
            raise
        return self

    async def _serve(self, ready: concurrent.futures.Future) -> None:
        self._stop = asyncio.Event()
        params = StdioServerParameters(
            command=str(filepuff_binary()),
            args=["mcp", "--root", str(self.root)] + (["--toolsets", self.toolsets] if self.toolsets else [])
            + self.extra_args,
            cwd=str(self.root),
            env={"RUST_BACKTRACE": "1", **self.env},
        )
        try:
            with open(self.stderr_log, "w") as errlog:
                async with stdio_client(params, errlog=errlog) as (read, write):
                    async with ClientSession(read, write, message_handler=self._on_message) as session:
                        self.initialize_result = await session.initialize()
                        self._session = session
                        ready.set_result(None)
                        await self._stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            raise

    async def _on_message(self, message) -> None:
        if not isinstance(message, Exception):
            self.notifications.append(message)

    def close(self) -> None:
        if self._runner is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
            try:
                self._runner.result(timeout=20)
            except BaseException:
                pass
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
        if not self._loop.is_running():
            self._loop.close()

    def server_stderr(self) -> str:
        try:
            return self.stderr_log.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    # -- calls --

    def _run(self, coro) -> Any:
        assert self._session is not None, "session not started"
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout=CALL_TIMEOUT + 10)

    def list_tools(self) -> types.ListToolsResult:
        return self._run(self._session.list_tools())

    # -- resources --

    def list_resources(self) -> types.ListResourcesResult:
        return self._run(self._session.list_resources())

    def list_resource_templates(self) -> types.ListResourceTemplatesResult:
        return self._run(self._session.list_resource_templates())

    def read_resource(self, uri: str) -> Any:
        """The JSON content of a filepuff resource."""
        result = self._run(self._session.read_resource(uri))
        (content,) = result.contents
        assert content.mime_type == "application/json", content
        return json.loads(content.text)

    def subscribe(self, uri: str) -> None:
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # resources/subscribe is the 2025-11-25 way, which filepuff speaks
            self._run(self._session.subscribe_resource(uri))

    def updates(self, uri: str) -> int:
        """How many `notifications/resources/updated` for `uri` arrived so far."""
        return sum(1 for n in list(self.notifications)
                   if isinstance(n, types.ResourceUpdatedNotification) and str(n.params.uri) == uri)

    def wait_updated(self, uri: str, after: int, timeout: float = 60) -> int:
        """Waits until more than `after` updates of `uri` arrived; returns how many."""
        deadline = time.monotonic() + timeout
        while self.updates(uri) <= after:
            assert time.monotonic() < deadline, f"no notifications/resources/updated for {uri} in {timeout} s"
            time.sleep(0.05)
        return self.updates(uri)

    def call(self, tool: str, arguments: dict[str, Any] | None = None) -> types.CallToolResult:
        # call_tool also validates structuredContent against the tool's outputSchema.
        return self._run(self._session.call_tool(tool, arguments or {}, read_timeout_seconds=CALL_TIMEOUT))

    def call_concurrently(self, calls: list[tuple[str, dict[str, Any]]]) -> list[types.CallToolResult]:
        """Sends all the calls at once (in flight together on the one connection); results in order."""

        async def gather():
            return await asyncio.gather(
                *(self._session.call_tool(tool, args, read_timeout_seconds=CALL_TIMEOUT) for tool, args in calls)
            )

        return self._run(gather())

    def ok(self, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        """Calls a tool that must succeed; returns its structuredContent."""
        result = self.call(tool, arguments)
        if result.is_error:
            raise ToolCallFailed(f"{tool}({arguments}) failed: {result.content}")
        assert isinstance(result.structured_content, dict), result
        return result.structured_content

    def error(self, tool: str, arguments: dict[str, Any] | None = None) -> tuple[dict[str, Any], str]:
        """Calls a tool that must fail; returns (the structured error, the readable text).

        An error result carries no structuredContent (it would not match the tool's
        outputSchema); its last text block is the structured error as JSON."""
        result = self.call(tool, arguments)
        assert result.is_error, f"{tool}({arguments}) unexpectedly succeeded: {result.structured_content}"
        return structured_error(result)


def structured_error(result: types.CallToolResult) -> tuple[dict[str, Any], str]:
    """(the structured error, the readable text) of an isError result."""
    assert result.structured_content is None, "error results must not carry structuredContent"
    texts = [block.text for block in result.content if isinstance(block, types.TextContent)]
    assert len(texts) == 2, texts
    error = json.loads(texts[-1])
    assert {"code", "name", "message", "context", "remediation"} <= set(error), error
    return error, texts[0]


@pytest.fixture
def cleanup():
    """Things a test started (MCP sessions, editor-like LSP clients), stopped after it in reverse
    order: sessions closed, clients killed."""
    things = []
    yield things
    for thing in reversed(things):
        if isinstance(thing, McpSession):
            thing.close()
        else:
            thing.kill()


def _open_session(root: Path, log_dir: Path, toolsets: str | None = None) -> McpSession:
    return McpSession(root, log_dir / "server-stderr.log", toolsets).start()


def _close_session(session: McpSession) -> None:
    session.close()
    stderr = session.server_stderr()
    assert "panicked" not in stderr, f"filepuff panicked during the session:\n{stderr}"


# ---- corpora ------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def filepuff_bin() -> Path:
    return filepuff_binary()


@pytest.fixture(scope="session")
def pg(tmp_path_factory):
    """A PostgreSQL server of this test session (pg_server.py): initdb + pg_ctl on a free
    loopback port, data directory under the session's temp dir, password authentication;
    stopped at the end. Skips without PostgreSQL — a failure under FILEPUFF_CI."""
    from pg_server import PgServer, bin_dir

    if bin_dir() is None:
        pytest.skip("PostgreSQL is not installed (initdb not found; scripts/setup-test-env installs it)")
    server = PgServer(tmp_path_factory.mktemp("postgres")).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def goroot_src() -> Path:
    goroot = os.environ.get("GOROOT")
    if not goroot and shutil.which("go"):
        goroot = subprocess.run(["go", "env", "GOROOT"], capture_output=True, text=True, check=True).stdout.strip()
    if not goroot or not (Path(goroot) / "src" / "net" / "http" / "server.go").is_file():
        pytest.skip("Go's standard library (GOROOT/src) is not available")
    return Path(goroot, "src").resolve()


@pytest.fixture(scope="session")
def py_stdlib() -> Path:
    stdlib = Path(sysconfig.get_paths()["stdlib"]).resolve()
    if not (stdlib / "json" / "decoder.py").is_file():
        pytest.skip("CPython's standard library sources are not available")
    return stdlib


@pytest.fixture(scope="session")
def go_outline_bin(tmp_path_factory) -> Path:
    """tests/e2e/go_outline built with the local Go toolchain (cached by Go's build cache)."""
    if not shutil.which("go"):
        pytest.skip("no Go toolchain to build the go/parser oracle")
    out = tmp_path_factory.mktemp("go_outline") / "go_outline"
    source = Path(__file__).parent / "go_outline"
    env = {**os.environ, "GOTOOLCHAIN": "local", "GOFLAGS": ""}
    proc = subprocess.run(
        ["go", "build", "-o", str(out), "main.go"], cwd=source, capture_output=True, text=True, env=env
    )
    assert proc.returncode == 0, f"building the Go oracle failed:\n{proc.stderr}"
    return out


# ---- sessions -----------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def go_session(goroot_src, tmp_path_factory):
    session = _open_session(goroot_src, tmp_path_factory.mktemp("mcp-go"))
    yield session
    _close_session(session)


@pytest.fixture(scope="session")
def py_session(py_stdlib, tmp_path_factory):
    session = _open_session(py_stdlib, tmp_path_factory.mktemp("mcp-py"))
    yield session
    _close_session(session)


MARKER = "filepuff-e2e-marker"
SIZE_LIMIT = 1000


@dataclass
class Workspace:
    """A small workspace with a neighbour directory outside it.

    root/
      filepuff.toml          [limits] max_file_bytes = SIZE_LIMIT
      .gitignore             ignored.txt
      hello.txt              seven short lines, the marker on line 4
      sub/nested.txt         the marker on line 2
      ignored.txt            marker (git-ignored)
      .hidden.txt            marker (hidden)
      cr.txt                 a lone CR inside its first line
      latin1.txt             one Latin-1 (invalid UTF-8) line
      bin.dat                marker after a NUL byte
      big.txt                marker, over SIZE_LIMIT bytes
      link -> ../outside     a directory symlink leaving the root
      evil.txt -> ../outside/secret.txt
    outside/secret.txt       marker (outside the root)
    """

    root: Path
    outside: Path
    files: dict[str, Path] = field(default_factory=dict)

    def path(self, rel: str) -> Path:
        return self.root / rel


def _make_workspace(base: Path) -> Workspace:
    root = base / "ws"
    outside = base / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "sub").mkdir()
    write = {
        "filepuff.toml": f"[limits]\nmax_file_bytes = {SIZE_LIMIT}\n",
        ".gitignore": "ignored.txt\n",
        "hello.txt": "".join(
            f"{line}\n" for line in ["alpha", "bravo", "charlie", f"delta {MARKER}", "echo", "foxtrot", "golf"]
        ),
        "sub/nested.txt": f"one\ntwo {MARKER}\nthree\n",
        "ignored.txt": f"{MARKER} ignored\n",
        ".hidden.txt": f"{MARKER} hidden\n",
    }
    ws = Workspace(root=root, outside=outside)
    for rel, text in write.items():
        (root / rel).write_text(text)
        ws.files[rel] = root / rel
    # A lone CR inside a line (grep and ripgrep split lines on LF only) and Latin-1 bytes.
    (root / "cr.txt").write_bytes(b"first part\rsecond part\nthird line\n")
    (root / "latin1.txt").write_bytes("caf\u00e9 cr\u00e8me br\u00fbl\u00e9e: dessert\n".encode("latin-1"))
    (root / "bin.dat").write_bytes(b"\x7fELF\x00\x01\x02" + f"\n{MARKER} binary\n".encode())
    (root / "big.txt").write_text((f"{MARKER} big\n" + "x" * 70 + "\n") * 60)
    assert (root / "big.txt").stat().st_size > SIZE_LIMIT
    (outside / "secret.txt").write_text(f"{MARKER} secret outside the root\n")
    os.symlink("../outside", root / "link")
    os.symlink("../outside/secret.txt", root / "evil.txt")
    if shutil.which("git"):
        # A real repository, so .gitignore applies whether or not filepuff requires git for it.
        subprocess.run(["git", "init", "-q", str(root)], check=True, capture_output=True)
    return ws


@pytest.fixture(scope="session")
def workspace(tmp_path_factory) -> Workspace:
    return _make_workspace(tmp_path_factory.mktemp("workspace"))


@pytest.fixture(scope="session")
def ws_session(workspace, tmp_path_factory):
    session = _open_session(workspace.root, tmp_path_factory.mktemp("mcp-ws"))
    yield session
    _close_session(session)
