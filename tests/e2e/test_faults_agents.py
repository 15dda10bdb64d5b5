"""Issue 16, the agent, file and HTTP side: peers that misbehave on purpose, and what filepuff
must do about them (answer, bound, refuse — never exit, hang, leak or grow).

The MCP cases speak JSON lines to `filepuff mcp` directly (a raw client: malformed input and
messages out of order are the point, which an SDK would not send); the HTTP cases open sockets
to `filepuff serve --http` under a low file-descriptor limit. Each test is named after the
defect it guards (issue 16, items 5-11). Figures (attempts, failures, memory after) are printed
with the prefix `FAULTS:`; run with `-s` to see them.
"""

from __future__ import annotations

import json
import os
import re
import resource
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from conftest import filepuff_binary

INITIALIZE = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "faults", "version": "0"}}}


def figure(name: str, **values: Any) -> None:
    print(f"FAULTS: {name}: " + ", ".join(f"{k}={v}" for k, v in values.items()), flush=True)


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class RawMcp:
    """`filepuff mcp --root ROOT` spoken to line by line (`--standalone` unless `bridge`: then
    through the bridge that would attach to an editor, here serving standalone behind it)."""

    def __init__(self, root: Path, log: Path, toolsets: str | None = None, bridge: bool = False):
        args = [str(filepuff_binary()), "mcp", "--root", str(root)] + ([] if bridge else ["--standalone"])
        if toolsets:
            args += ["--toolsets", toolsets]
        self.log = log
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=open(log, "w"),
                                     cwd=root)
        self.lines: list[dict] = []
        self.cond = threading.Condition()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.next_id = 100

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            try:
                message = json.loads(raw)
            except ValueError:
                message = {"unparsable": raw.decode(errors="replace")}
            with self.cond:
                self.lines.append(message)
                self.cond.notify_all()
        with self.cond:
            self.cond.notify_all()

    def send_raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, message: dict) -> None:
        self.send_raw((json.dumps(message) + "\n").encode())

    def wait_for(self, predicate, timeout: float = 60.0) -> dict:
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for message in self.lines:
                    if predicate(message):
                        self.lines.remove(message)
                        return message
                left = deadline - time.monotonic()
                if left <= 0 or (self.proc.poll() is not None and not any(predicate(m) for m in self.lines)):
                    raise AssertionError(f"no such message; exit={self.proc.poll()}, got {self.lines[-5:]}, "
                                         f"stderr: {self.log.read_text()[-2000:]}")
                self.cond.wait(min(left, 0.5))

    def request(self, method: str, params: dict | None = None, timeout: float = 60.0) -> dict:
        self.next_id += 1
        ident = self.next_id
        message = {"jsonrpc": "2.0", "id": ident, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return self.wait_for(lambda m: m.get("id") == ident and "method" not in m, timeout)

    def initialize(self) -> None:
        self.send(INITIALIZE)
        answer = self.wait_for(lambda m: m.get("id") == 0)
        assert "result" in answer, answer
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def call(self, tool: str, arguments: dict, timeout: float = 60.0) -> tuple[dict, int]:
        """(the tools/call result, the size of its JSON line in bytes)."""
        answer = self.request("tools/call", {"name": tool, "arguments": arguments}, timeout)
        assert "result" in answer, answer
        return answer["result"], len(json.dumps(answer))

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        assert "panicked" not in self.log.read_text(errors="replace")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "hello.py").write_text("def greet(name):\n    return f'hi {name}'\n")
    return root


@pytest.fixture
def mcp(workspace: Path, tmp_path: Path):
    session = RawMcp(workspace, tmp_path / "mcp.log")
    yield session
    session.close()


def error_of(result: dict) -> dict:
    assert result.get("isError"), result
    return json.loads(result["content"][-1]["text"])


# ==== 10, 11: the MCP stdio session ============================================================


def test_messages_before_initialize_do_not_end_the_session(mcp):
    mcp.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    mcp.send({"jsonrpc": "2.0", "id": 41, "result": {}})
    mcp.send({"jsonrpc": "2.0", "id": 42, "error": {"code": -1, "message": "x"}})
    mcp.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}})
    pong = mcp.request("ping")
    assert pong["result"] == {}
    mcp.initialize()
    tools = mcp.request("tools/list")
    assert any(t["name"] == "file_read" for t in tools["result"]["tools"])
    assert mcp.proc.poll() is None


def test_a_malformed_line_gets_a_parse_error_and_the_session_goes_on(mcp):
    mcp.initialize()
    sent = 0
    for bad in [b"{not json\n", b"\x00\x01\x02\n", b'{"jsonrpc": "2.0", "id": 5, "method": \n', b"[1,\n"]:
        mcp.send_raw(bad)
        sent += 1
        answer = mcp.wait_for(lambda m: m.get("error", {}).get("code") == -32700, timeout=10)
        assert "id" in answer and answer["id"] is None, answer
    mcp.send_raw(b'{"jsonrpc":"2.0","id":"s","method":"tools/call","params":7}\n')
    invalid = mcp.wait_for(lambda m: m.get("id") == "s", timeout=10)
    assert invalid["error"]["code"] == -32600
    assert mcp.request("ping")["result"] == {}
    figure("malformed lines", attempts=sent + 1, failures=0)


@pytest.mark.parametrize("bridge", [False, True], ids=["standalone", "bridge"])
def test_an_oversized_or_non_utf8_line_is_answered_and_the_session_goes_on(workspace: Path, tmp_path: Path, bridge):
    """Lines over 16 MiB are dropped unread (-32600, id null) without the process holding them;
    bytes that are not UTF-8 are a parse error — on both of `filepuff mcp`'s stdio paths."""
    session = RawMcp(workspace, tmp_path / "mcp.log", bridge=bridge)
    try:
        session.initialize()
        before = rss_mb(session.proc.pid)
        chunk = b"x" * (1 << 20)
        session.send_raw(b'{"jsonrpc":"2.0","id":"big","method":"ping","params":{"pad":"')
        for _ in range(40):
            session.send_raw(chunk)
        session.send_raw(b'"}}\n')
        oversized = session.wait_for(lambda m: m.get("error", {}).get("code") == -32600, timeout=30)
        assert oversized["id"] is None and "over 16777216 bytes" in oversized["error"]["message"], oversized
        grown = rss_mb(session.proc.pid) - before
        assert grown < 30, f"RSS grew {grown:.0f} MiB reading a 40 MiB line"
        session.send_raw(b'{"jsonrpc":"2.0","id":"u","method":"ping","params":{"s":"\xff\xfe"}}\n')
        bad = session.wait_for(lambda m: m.get("error", {}).get("code") == -32700, timeout=10)
        assert bad["id"] is None, bad
        assert session.request("ping")["result"] == {}
        result, _ = session.call("file_read", {"path": "hello.py"})
        assert "def greet" in json.dumps(result)
        figure("oversized line", path="bridge" if bridge else "standalone", rss_growth_mib=round(grown, 1))
    finally:
        session.close()


def test_tools_list_with_an_invalid_cursor_is_invalid_params(mcp):
    mcp.initialize()
    answer = mcp.request("tools/list", {"cursor": "not-a-cursor"})
    assert answer.get("error", {}).get("code") == -32602, answer
    assert "result" in mcp.request("tools/list")


def test_cancellation_stops_the_tools_work(goroot_src: Path, tmp_path: Path):
    session = RawMcp(goroot_src, tmp_path / "cancel.log")
    try:
        session.initialize()
        pid = session.proc.pid
        attempts, burnt = 0, []
        for tool, arguments in [
            ("ast_query", {"pattern": "func $NAME($$$ARGS) error", "language": "go", "max_results": 5}),
            ("file_search", {"pattern": r"\w+\s*\(\s*\w+\s*,\s*\w+\s*\)\s*\{", "max_results": 5}),
        ]:
            session.next_id += 1
            ident = session.next_id
            session.send({"jsonrpc": "2.0", "id": ident, "method": "tools/call",
                          "params": {"name": tool, "arguments": arguments}})
            time.sleep(1.0)
            session.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                          "params": {"requestId": ident, "reason": "test"}})
            time.sleep(0.5)
            before = cpu_seconds(pid)
            time.sleep(3.0)
            burnt.append(round(cpu_seconds(pid) - before, 2))
            attempts += 1
            assert session.request("ping", timeout=30)["result"] == {}
        figure("cancellation", attempts=attempts, cpu_seconds_after_cancel=burnt, rss_mb_after=round(rss_mb(pid)))
        assert all(b < 0.8 for b in burnt), f"CPU-seconds used in the 3 s after a cancellation: {burnt}"
    finally:
        session.close()


# ==== 7: output bounds on long lines ============================================================


@pytest.fixture
def one_line_js(workspace: Path) -> Path:
    path = workspace / "huge.min.js"
    pieces, size, i = [], 0, 0
    while size < 15_000_000:
        piece = f"var v{i}=function(a){{return a+{i}}};"
        pieces.append(piece)
        size += len(piece)
        i += 1
    path.write_text("".join(pieces))
    return path


def test_reads_of_a_huge_one_line_file_are_bounded_and_continue(mcp, one_line_js: Path):
    mcp.initialize()
    text = one_line_js.read_text()
    result, size = mcp.call("file_read", {"path": one_line_js.name})
    out = result["structuredContent"]
    assert size < 400_000, f"file_read answered {size} bytes"
    assert out["truncated"] and out["next_line_start"] == 1
    column = out["next_column_start"]
    assert out["content"] == text[: column - 1]
    more, size2 = mcp.call("file_read", {"path": one_line_js.name, "column_start": column, "max_chars": 5000})
    assert size2 < 30_000
    assert more["structuredContent"]["content"] == text[column - 1 : column - 1 + 5000]

    outline, size3 = mcp.call("file_read", {"path": one_line_js.name, "symbols_only": True}, timeout=120)
    assert size3 < 400_000, f"symbols_only answered {size3} bytes"
    offset = outline["structuredContent"]["next_symbols_offset"]
    assert outline["structuredContent"]["symbols"][0]["name"] == "v0"
    rest, _ = mcp.call("file_read", {"path": one_line_js.name, "symbols_only": True, "symbols_offset": offset})
    assert rest["structuredContent"]["symbols"][0]["name"] == f"v{offset}"

    preview, size4 = mcp.call("edit_preview", {"file": one_line_js.name, "operation": "replace",
                                               "selector_text": "var v7=", "new_content": "var w7="}, timeout=120)
    assert size4 < 200_000, f"edit_preview answered {size4} bytes"
    assert preview["structuredContent"]["diff_truncated"] is True
    assert "characters of this line left out" in preview["structuredContent"]["diff"]
    figure("long lines", attempts=5, failures=0, bytes=[size, size2, size3, size4],
           rss_mb_after=round(rss_mb(mcp.proc.pid)))


# ==== 6: the parse cache is bounded by bytes ====================================================


def test_the_parse_cache_is_bounded_by_bytes_not_count(mcp, workspace: Path):
    mcp.initialize()
    for n in range(3):
        pieces, size, i = [], 0, 0
        while size < 5_000_000:
            piece = f"function f{n}_{i}(a,b){{return a*b+{i}}}var x{i}=f{n}_{i}(1,2),y{i}=[1,2,3].map(function(q){{return q+x{i}}});"
            pieces.append(piece)
            size += len(piece)
            i += 1
        (workspace / f"m{n}.min.js").write_text("".join(pieces))
    peak = 0.0
    for n in range(3):
        result, _ = mcp.call("file_read", {"path": f"m{n}.min.js", "symbols_only": True, "max_chars": 1000},
                             timeout=180)
        assert result["structuredContent"]["symbols"]
        peak = max(peak, rss_mb(mcp.proc.pid))
    after = rss_mb(mcp.proc.pid)
    figure("parse cache", attempts=3, failures=0, rss_mb_peak=round(peak), rss_mb_after=round(after))
    # Unbounded by bytes, the three trees kept ~1.5 GB; the default budget is 512 MiB.
    assert after < 1000, f"RSS after three 5 MB minified files: {after:.0f} MB"


# ==== 8: read-only files ========================================================================


def test_edit_apply_refuses_a_read_only_file(mcp, workspace: Path):
    path = workspace / "ro.py"
    path.write_text("x = 1\n")
    path.chmod(0o444)
    mcp.initialize()
    result, _ = mcp.call("edit_apply", {"file": "ro.py", "operation": "replace", "selector_text": "x = 1",
                                        "new_content": "x = 2"})
    err = error_of(result)
    assert (err["code"], err["name"]) == (5015, "EDIT_FILE_READ_ONLY"), err
    assert path.read_text() == "x = 1\n"
    assert path.stat().st_mode & 0o777 == 0o444
    # The preview still works: reading is allowed.
    preview, _ = mcp.call("edit_preview", {"file": "ro.py", "operation": "replace", "selector_text": "x = 1",
                                           "new_content": "x = 2"})
    assert not preview.get("isError")


# ==== 9: check-then-open races ==================================================================


def flipper(target: Path, make_other, stop: threading.Event) -> None:
    """Swaps `target` between a regular file and what `make_other(path)` creates, atomically."""
    regular = target.with_name(target.name + ".regular")
    other = target.with_name(target.name + ".other")
    while not stop.is_set():
        regular.write_text("inside\n")
        os.replace(regular, target)
        if other.exists() or other.is_symlink():
            other.unlink()
        make_other(other)
        os.replace(other, target)


def flip_while_calling(mcp, target: Path, make_other, calls: list[tuple[str, dict]], rounds: int) -> tuple[int, int, int]:
    """Calls `calls` `rounds` times while `target` flips; (attempts, leaks, hangs)."""
    stop = threading.Event()
    thread = threading.Thread(target=flipper, args=(target, make_other, stop))
    thread.start()
    attempts = leaks = hangs = 0
    try:
        for _ in range(rounds):
            for tool, arguments in calls:
                attempts += 1
                try:
                    result, _ = mcp.call(tool, arguments, timeout=15)
                except AssertionError:
                    hangs += 1
                    continue
                if "TOP-SECRET" in json.dumps(result):
                    leaks += 1
    finally:
        stop.set()
        thread.join()
    return attempts, leaks, hangs


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    path = outside / "secret.txt"
    path.write_text("TOP-SECRET-CONTENT\n")
    return path


def test_a_path_flipping_to_a_symlink_outside_never_leaks_its_target(workspace: Path, secret: Path, tmp_path: Path):
    calls = [
        ("file_read", {"path": "flip.txt"}),
        # The pattern must not name the secret: the result echoes it.
        ("file_search", {"pattern": "CONTENT|inside", "context_lines": 0}),
        ("edit_preview", {"file": "flip.txt", "operation": "replace", "selector_text": "inside", "new_content": "x"}),
        ("localGetFileContent", {"path": "flip.txt"}),
    ]
    session = RawMcp(workspace, tmp_path / "mcp.log", toolsets="core,local")
    try:
        session.initialize()
        attempts, leaks, hangs = flip_while_calling(session, workspace / "flip.txt", lambda p: p.symlink_to(secret),
                                                    calls, 400)
        figure("path flipping to a symlink", attempts=attempts, leaks=leaks, hangs=hangs,
               rss_mb_after=round(rss_mb(session.proc.pid)))
        assert (leaks, hangs) == (0, 0)
    finally:
        session.close()


def test_a_path_flipping_to_a_fifo_never_hangs_a_call(mcp, workspace: Path):
    mcp.initialize()
    calls = [
        ("file_read", {"path": "fifo.txt"}),
        ("file_search", {"pattern": "inside", "context_lines": 0}),
        ("edit_preview", {"file": "fifo.txt", "operation": "replace", "selector_text": "inside", "new_content": "x"}),
    ]
    attempts, leaks, hangs = flip_while_calling(mcp, workspace / "fifo.txt", lambda p: os.mkfifo(p), calls, 200)
    figure("path flipping to a FIFO", attempts=attempts, hangs=hangs, rss_mb_after=round(rss_mb(mcp.proc.pid)))
    assert hangs == 0


# ==== 5: serve --http ===========================================================================


def start_http(root: Path, log: Path, nofile: int | None = None) -> tuple[subprocess.Popen, str, Path]:
    def limit():
        if nofile:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    proc = subprocess.Popen([str(filepuff_binary()), "--root", str(root), "serve", "--http", "127.0.0.1:0"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=open(log, "w"),
                            preexec_fn=limit)
    deadline = time.monotonic() + 30
    while True:
        found = re.search(r"on (http://\S+/mcp); bearer token in (\S+)", log.read_text())
        if found:
            return proc, found.group(1), Path(found.group(2))
        assert proc.poll() is None, log.read_text()
        assert time.monotonic() < deadline, "no start line"
        time.sleep(0.05)


def post_initialize(url: str, token: str) -> int:
    request = urllib.request.Request(url, data=json.dumps(INITIALIZE).encode(), method="POST", headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        "Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as err:
        return err.code


def test_idle_connections_under_a_low_fd_limit_do_not_stop_serve_http(workspace: Path, tmp_path: Path):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1300:
        pytest.skip(f"needs 1300 file descriptors, the hard limit is {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1300), hard))
    proc, url, token_file = start_http(workspace, tmp_path / "serve.log", nofile=1024)
    port = int(url.split(":")[2].split("/")[0])
    sockets = []
    try:
        for _ in range(1100):
            sock = socket.socket()
            sock.setblocking(False)
            sock.connect_ex(("127.0.0.1", port))
            sockets.append(sock)
        time.sleep(3)
        alive = proc.poll() is None
        figure("idle connections", attempts=len(sockets), server_alive=alive, rss_mb=round(rss_mb(proc.pid)) if alive else 0)
        assert alive, f"serve --http exited ({proc.returncode}): {(tmp_path / 'serve.log').read_text()[-1000:]}"
    finally:
        for sock in sockets:
            sock.close()
    try:
        assert post_initialize(url, token_file.read_text().strip()) == 200
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait()


def test_slow_header_bytes_are_cut_off_by_the_header_timeout(workspace: Path, tmp_path: Path):
    proc, url, _ = start_http(workspace, tmp_path / "serve.log")
    port = int(url.split(":")[2].split("/")[0])
    try:
        sock = socket.create_connection(("127.0.0.1", port))
        sock.settimeout(0.5)
        started = time.monotonic()
        closed_after = None
        for byte in b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 100:
            try:
                sock.sendall(bytes([byte]))
                if sock.recv(1024) == b"":
                    closed_after = time.monotonic() - started
                    break
            except socket.timeout:
                pass
            except OSError:
                closed_after = time.monotonic() - started
                break
            if time.monotonic() - started > 25:
                break
            time.sleep(1.5)
        sock.close()
        figure("slow header", seconds_until_closed=closed_after and round(closed_after, 1))
        assert closed_after is not None and closed_after < 20, "a byte every 1.5 s kept the connection open"
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_signal_removes_the_token_file(workspace: Path, tmp_path: Path, signum):
    proc, _, token_file = start_http(workspace, tmp_path / "serve.log")
    assert token_file.exists()
    proc.send_signal(signum)
    assert proc.wait(timeout=20) == 0
    assert not token_file.exists()
