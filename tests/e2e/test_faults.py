"""Misbehaving peers (issue 16, "Every peer is untrusted"), driven through both faces:
`filepuff lsp` (lsp_client.py, an editor) and `filepuff mcp` (conftest's McpSession, an agent).

The language server is tests/e2e/fake_lsp.py, configured per test through `[servers.fake] env`:
a huge declared frame, output without a line break, a crash loop (initialize, then exit), a
hang, garbage. The editor side gets malformed JSON-RPC. Whatever the peer does, the filepuff
process survives, its memory stays bounded, requests end with a typed error, and crash loops
are held to at most 10 starts in 30 s before the server is reported broken."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from conftest import McpSession, _close_session, filepuff_binary
from lsp_client import LspClient, LspError, children

FAKE = Path(__file__).with_name("fake_lsp.py")
MAIN_GO = "package main\n\nfunc main() { helper() }\n\nfunc helper() {}\n"
# The position of `helper()` in main.go's line 3 (0-based line 2, character 14).
AT_HELPER = {"line": 2, "character": 14}
# Peak resident memory allowed to filepuff while a server writes 300 MB without a line break.
MEMORY_LIMIT_MB = 200


def fake_root(tmp_path: Path, fault: str | None = None, on: str = "request", answer: bool = False,
              lsp: str = "request_timeout_ms = 3000\n", **env: str) -> tuple[Path, Path]:
    """A workspace with main.go served by fake_lsp.py (as `go`); returns (root, the fake's log)."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "main.go").write_text(MAIN_GO)
    log = tmp_path / "fake.log"
    settings = {"FAKE_LSP_LOG": str(log), **env}
    if fault:
        settings |= {"FAKE_LSP_FAULT": fault, "FAKE_LSP_FAULT_ON": on}
    if answer:
        settings["FAKE_LSP_ANSWER"] = "1"
    env_toml = ", ".join(f"{k} = {json.dumps(v)}" for k, v in settings.items())
    (root / "filepuff.toml").write_text(
        f"[lsp]\n{lsp}\n"
        f"[servers.fake]\ncommand = [{json.dumps(sys.executable)}, {json.dumps(str(FAKE))}]\n"
        f'languages = ["go"]\nenv = {{ {env_toml} }}\n'
    )
    return root, log


def starts(log: Path) -> list[float]:
    """When each fake server process received `initialize` (seconds since the epoch)."""
    if not log.exists():
        return []
    messages = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    return [m["t"] for m in messages if m.get("method") == "initialize"]


def most_in_window(times: list[float], window: float = 30.0) -> int:
    """The largest number of `times` within any `window` seconds."""
    times = sorted(times)
    return max((sum(1 for u in times[i:] if u - t < window) for i, t in enumerate(times)), default=0)


def peak_rss_mb(pid: int) -> float:
    """The peak resident set size of `pid` (VmHWM), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmHWM for {pid}")


# ---- the two faces ------------------------------------------------------------------------------


class Editor:
    """`filepuff lsp` with an editor in front: main.go open."""

    def __init__(self, root: Path, tmp_path: Path):
        self.stderr = open(tmp_path / "filepuff-lsp.log", "w")
        self.client = LspClient([str(filepuff_binary()), "lsp"], root, env={"FILEPUFF_LOG": "info"},
                                stderr=self.stderr)
        self.client.initialize(root)
        self.uri = self.client.open(root / "main.go", "go")
        self.pid = self.client.proc.pid

    def definition(self, timeout: float = 60) -> tuple[str, object]:
        """("ok", result) or ("error", the error object)."""
        try:
            return "ok", self.client.request("textDocument/definition",
                                             {"textDocument": {"uri": self.uri}, "position": AT_HELPER}, timeout)
        except LspError as err:
            return "error", {"code": err.code, "message": err.message}

    def alive(self) -> bool:
        if self.client.proc.poll() is not None:
            return False
        return isinstance(self.client.request("filepuff/status", timeout=20), dict)

    def close(self) -> None:
        self.client.kill()
        self.stderr.close()


class Agent:
    """`filepuff mcp` with an agent in front."""

    def __init__(self, root: Path, tmp_path: Path):
        before = set(children(os.getpid()))
        self.session = McpSession(root, tmp_path / "filepuff-mcp.log").start()
        binary = str(filepuff_binary().resolve())
        [self.pid] = [p for p in set(children(os.getpid())) - before if os.path.realpath(f"/proc/{p}/exe") == binary]

    def definition(self, timeout: float = 60) -> tuple[str, object]:
        result = self.session.call("find_definition", {"file": "main.go", "line": 3, "symbol": "helper"})
        if result.is_error:
            return "error", json.loads(result.content[-1].text)
        return "ok", result.structured_content

    def alive(self) -> bool:
        return Path(f"/proc/{self.pid}").exists() and not self.session.call("ping").is_error

    def close(self) -> None:
        _close_session(self.session)


FACES = {"lsp": Editor, "mcp": Agent}


@pytest.fixture(params=sorted(FACES))
def face(request, tmp_path):
    opened = []

    def start(root: Path):
        opened.append(FACES[request.param](root, tmp_path))
        return opened[-1]

    start.name = request.param
    yield start
    for one in opened:
        one.close()


def assert_typed_server_error(face_name: str, outcome: tuple[str, object], codes: set) -> dict:
    kind, error = outcome
    assert kind == "error", f"expected an error, got {error}"
    if face_name == "mcp":
        assert error["code"] in codes and error["context"].get("server") == "fake", error
    else:
        assert error["code"] == -32803 and "fake" in error["message"], error
    return error


# ---- misbehaving servers ------------------------------------------------------------------------


def test_huge_declared_frame_from_a_server_is_a_typed_error_not_an_abort(tmp_path, face):
    """Issue 16 (1): `Content-Length: 99999999999` made async-lsp allocate it: SIGABRT."""
    root, log = fake_root(tmp_path, "huge_frame")
    peer = face(root)
    error = assert_typed_server_error(face.name, peer.definition(), {4004})
    assert "Content-Length" in error["message"] or "Content-Length" in json.dumps(error), error
    assert peer.alive()
    print(f"{face.name}: Content-Length 99999999999: peak RSS {peak_rss_mb(peer.pid):.0f} MiB")
    assert peak_rss_mb(peer.pid) < MEMORY_LIMIT_MB


def test_output_without_a_line_break_keeps_memory_bounded(tmp_path, face):
    """Issue 16 (1): 600 MB without a line break grew filepuff to ~630 MB."""
    root, log = fake_root(tmp_path, "no_newline")
    peer = face(root)
    assert_typed_server_error(face.name, peer.definition(), {4004})
    assert peer.alive()
    print(f"{face.name}: 300 MB without a line break: peak RSS {peak_rss_mb(peer.pid):.0f} MiB")
    assert peak_rss_mb(peer.pid) < MEMORY_LIMIT_MB, f"peak RSS {peak_rss_mb(peer.pid):.0f} MiB"


def test_crash_loop_is_held_to_ten_starts_in_30_s_then_broken(tmp_path, face):
    """Issue 16 (4): a server that initializes and then exits was restarted 237 times in 30 s."""
    root, log = fake_root(tmp_path, "exit", on="initialized", lsp="request_timeout_ms = 3000\nbroken_cooldown_secs = 600\n")
    began = time.monotonic()
    peer = face(root)
    broken = None
    while time.monotonic() - began < 45 and broken is None:
        assert len(starts(log)) <= 10, f"{len(starts(log))} starts in {time.monotonic() - began:.1f} s"
        if face.name == "lsp":
            servers = peer.client.request("filepuff/status")["servers"]
            broken = next((s for s in servers if s["name"] == "fake" and s["state"] == "broken"), None)
            time.sleep(0.2)
        else:
            kind, error = peer.definition()
            assert kind == "error", error
            if error["context"].get("broken"):
                broken = error
    assert broken is not None, f"not reported broken after {len(starts(log))} starts"
    count = len(starts(log))
    print(f"{face.name}: crash loop: {count} starts in {max(starts(log)) - min(starts(log)):.1f} s, then broken")
    assert 2 <= count <= 10 and most_in_window(starts(log)) <= 10
    # Broken until the cool-down: no more starts, requests fail at once with a typed error.
    time.sleep(2)
    outcome = peer.definition()
    assert len(starts(log)) == count
    error = assert_typed_server_error(face.name, outcome, {4004})
    assert "broken" in error["message"], error
    assert peer.alive()
    if face.name == "lsp":
        shown = [n for n in peer.client.notifications if n["method"] == "window/showMessage"
                 and "fake" in n["params"]["message"] and "broken" in n["params"]["message"]]
        assert len(shown) == 1, shown
        # An explicit restart starts it again.
        peer.client.request("filepuff/restart", {"server": "fake"})
        peer.client.wait_for(lambda: len(starts(log)) > count, 20, "a start after filepuff/restart")


def test_broken_server_starts_again_after_the_cool_down(tmp_path, face):
    root, log = fake_root(tmp_path, "exit", on="initialized", lsp="request_timeout_ms = 3000\nbroken_cooldown_secs = 1\n")
    peer = face(root)
    deadline = time.monotonic() + 45
    while True:
        assert time.monotonic() < deadline, "never reported broken"
        kind, error = peer.definition()
        if "broken" in json.dumps(error):
            break
        time.sleep(0.3)
    count = len(starts(log))
    time.sleep(1.5)
    peer.definition()
    assert len(starts(log)) > count, "the cool-down passed: the server is tried again"


def test_hung_server_requests_time_out_with_a_typed_error(tmp_path, face):
    root, log = fake_root(tmp_path, lsp="request_timeout_ms = 1500\nready_timeout_ms = 500\n")
    peer = face(root)
    began = time.monotonic()
    error = assert_typed_server_error(face.name, peer.definition(timeout=20), {4005})
    assert time.monotonic() - began < 15
    assert "1500" in json.dumps(error), error
    assert peer.alive()


def test_garbage_output_never_ends_the_session(tmp_path, face):
    root, log = fake_root(tmp_path, "garbage", answer=True)
    peer = face(root)
    kind, answer = peer.definition()
    if kind == "error":
        assert_typed_server_error(face.name, (kind, answer), {4004})
    assert peer.alive()
    assert peak_rss_mb(peer.pid) < MEMORY_LIMIT_MB


# ---- a misbehaving editor -----------------------------------------------------------------------


def frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


def test_malformed_json_rpc_from_the_editor_never_ends_the_session(tmp_path):
    """Issue 16 (3): `filepuff lsp` exited on messages its frame check let through and async-lsp
    rejected: `jsonrpc` missing or not "2.0", a float or 64-bit response id, an `error` that is
    not an object (and duplicate keys, which async-lsp refuses too)."""
    root, _ = fake_root(tmp_path)
    peer = Editor(root, tmp_path)
    try:
        client = peer.client
        requests = [
            (b'{"id":901,"method":"filepuff/status"}', 901),                      # no jsonrpc
            (b'{"jsonrpc":"1.0","id":902,"method":"filepuff/status"}', 902),     # not 2.0
            (b'{"jsonrpc":"2.0","id":903.5,"method":"filepuff/status"}', 903.5),  # float id
            (b'{"jsonrpc":"2.0","id":9000000000,"method":"filepuff/status"}', 9000000000),
            (b'{"jsonrpc":"2.0","jsonrpc":"2.0","id":904,"method":"filepuff/status"}', 904),
        ]
        responses = [
            b'{"jsonrpc":"2.0","id":1.5,"result":null}',
            b'{"jsonrpc":"2.0","id":9000000000,"result":null}',
            b'{"jsonrpc":"2.0","id":7,"error":"boom"}',
            b'{"jsonrpc":"2.0","id":8,"error":{"code":1.5,"message":"x"}}',
            b'{"jsonrpc":"2.0","id":9,"error":{"message":"no code"}}',
            b'{"id":10,"result":null}',
            b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}',
        ]
        for body, _ in requests:
            client.send_raw(frame(body))
            assert peer.alive(), body
        for body in responses:
            client.send_raw(frame(body))
            assert peer.alive(), body
        for _, request_id in requests:
            assert client.response(request_id, 10)["error"]["code"] == -32600
        assert client.orphan_errors == [], "responses are dropped, never answered"
        assert peer.definition(timeout=20)[0] in ("ok", "error")
        assert client.shutdown() == 0
    finally:
        peer.close()


def fuzzed_frames(count: int, seed: int):
    """`count` frames of JSON-RPC-like garbage (seeded): valid messages with keys dropped,
    duplicated or given values of the wrong type, broken JSON, bad headers, stray bytes. Never
    `exit`, `shutdown` or a declared length the editor guard would skip the rest of the stream
    for."""
    import random

    rng = random.Random(seed)
    # Ids far from the test client's own (1, 2, 3, …), whose answers it would take for its own.
    values = ['"2.0"', '"1.0"', "2.0", "null", "100001", "-1", "2147483648", "9000000000", "1.5", "1e400", '"s"',
              "true", "{}", "[]", '{"code":1,"message":"m"}', '{"code":1.5}', '"\\ud800"', '{"a":' * 3 + "1" + "}" * 3]
    methods = ['"filepuff/status"', '"textDocument/hover"', '"$/cancelRequest"', '"foo/bar"', '"workspace/symbol"',
               '"textDocument/didChange"', '"initialized"', "5", "null"]
    keys = ["jsonrpc", "id", "method", "params", "result", "error", "x"]
    templates = [
        [("jsonrpc", '"2.0"'), ("id", "100007"), ("method", '"filepuff/status"')],
        [("jsonrpc", '"2.0"'), ("id", '"a"'), ("method", '"foo/bar"'), ("params", "{}")],
        [("jsonrpc", '"2.0"'), ("method", '"textDocument/didChange"'), ("params", "{}")],
        [("jsonrpc", '"2.0"'), ("id", "100003"), ("result", "null")],
        [("jsonrpc", '"2.0"'), ("id", "100004"), ("error", '{"code":-32601,"message":"m"}')],
    ]
    for _ in range(count):
        if rng.random() < 0.5:
            # A valid message, then at most one change: a key dropped, doubled or re-valued.
            pairs = list(rng.choice(templates))
            change = rng.randrange(4)
            at = rng.randrange(len(pairs))
            key = pairs[at][0]
            if change == 1:
                del pairs[at]
            elif change == 2:
                pairs.append(pairs[at])
            elif change == 3:
                pairs[at] = (key, rng.choice(methods if key == "method" else values))
        else:
            pairs = []
            for _ in range(rng.randrange(0, 7)):
                key = rng.choice(keys)
                pairs.append((key, rng.choice(methods if key == "method" else values)))
        body = ("{" + ",".join(f'"{k}":{v}' for k, v in pairs) + "}").encode()
        mutation = rng.randrange(10)
        if mutation == 0:
            body = body[: rng.randrange(len(body) + 1)]
        elif mutation == 1:
            body = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 40)))
        header = b"Content-Length: %d\r\n\r\n" % len(body)
        if mutation == 2:
            header = rng.choice([b"Content-Length: abc\r\n\r\n", b"Content-Type: x\r\n\r\n", b"\r\n",
                                 b"Content-Length: %d\r\n\r\n" % (len(body) + rng.randrange(-3, 4))])
        if mutation == 3:
            yield bytes(rng.randrange(32, 127) for _ in range(rng.randrange(1, 80))) + b"\n"
            continue
        yield header + body


def test_fuzzed_editor_frames_never_end_the_session(tmp_path):
    """A bounded fuzz run of the editor face (FAULT_FRAMES frames, default 1500; seed
    FAULT_SEED): the session survives, answers afterwards, and its memory stays bounded."""
    count = int(os.environ.get("FAULT_FRAMES", "1500"))
    seed = int(os.environ.get("FAULT_SEED", "16"))
    root, _ = fake_root(tmp_path, answer=True)
    peer = Editor(root, tmp_path)
    try:
        # A frame that declared more than it sent takes the next bytes as the rest of its body:
        # a line of padding ends it before each check, then the stream resynchronises.
        padding = b"\r\n" + b" " * 64 + b"\r\n"
        for i, data in enumerate(fuzzed_frames(count, seed)):
            peer.client.send_raw(data)
            if i % 250 == 0:
                peer.client.send_raw(padding)
                assert peer.alive(), f"ended after frame {i}"
        peer.client.send_raw(padding)
        assert peer.alive()
        assert peer.definition(timeout=20)[0] == "ok"
        rss = peak_rss_mb(peer.pid)
        print(f"fuzzed editor frames: {count} sent (seed {seed}), session alive, peak RSS {rss:.0f} MiB")
        assert rss < MEMORY_LIMIT_MB
        assert peer.client.shutdown() == 0
    finally:
        peer.close()
