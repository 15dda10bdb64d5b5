"""`filepuff serve --http`: MCP over Streamable HTTP, driven by the Python SDK's streamable HTTP
client; and its guards (bearer token, Origin, loopback), probed with plain HTTP requests."""

from __future__ import annotations

import asyncio
import json
import re
import stat
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

from conftest import filepuff_binary

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "probe", "version": "0"}}}


@pytest.fixture
def server(tmp_path: Path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "hello.py").write_text("def greet(name):\n    return f'hi {name}'\n")
    log = tmp_path / "serve.log"
    proc = subprocess.Popen([str(filepuff_binary()), "--root", str(root), "serve", "--http", "127.0.0.1:0"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=open(log, "w"))
    deadline = time.monotonic() + 30
    while True:
        found = re.search(r"on (http://\S+/mcp); bearer token in (\S+)", log.read_text())
        if found:
            break
        assert proc.poll() is None, log.read_text()
        assert time.monotonic() < deadline, "no start line"
        time.sleep(0.05)
    url, token_file = found.group(1), Path(found.group(2))
    yield url, token_file, root
    proc.kill()
    proc.wait()


def post(url: str, headers: dict[str, str]) -> int:
    request = urllib.request.Request(url, data=json.dumps(INITIALIZE).encode(), method="POST", headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as err:
        return err.code


def test_the_token_origin_and_loopback_guards(server):
    url, token_file, _ = server
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    token = token_file.read_text().strip()
    assert re.fullmatch(r"[0-9a-f]{64}", token)
    assert url.startswith("http://127.0.0.1:")
    assert post(url, {}) == 401
    assert post(url, {"Authorization": "Bearer " + "0" * 64}) == 401
    assert post(url, {"Authorization": f"Bearer {token}", "Origin": "http://evil.example"}) == 403
    assert post(url, {"Authorization": f"Bearer {token}"}) == 200
    port = url.split(":")[2].split("/")[0]
    assert post(url, {"Authorization": f"Bearer {token}", "Origin": f"http://localhost:{port}"}) == 200


def test_a_real_mcp_client_calls_tools_over_http(server):
    url, token_file, root = server
    token = token_file.read_text().strip()

    async def run():
        client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        async with streamable_http_client(url, http_client=client) as (read, write, *_):
            async with ClientSession(read, write) as session:
                await session.initialize()
                names = {t.name for t in (await session.list_tools()).tools}
                assert {"file_read", "file_search", "ast_query"} <= names
                result = await session.call_tool("file_read", {"path": "hello.py"})
                assert not result.is_error
                return result.structured_content

    out = asyncio.run(run())
    assert out["content"] == (root / "hello.py").read_text()


def test_non_loopback_needs_allow_remote(tmp_path):
    proc = subprocess.run([str(filepuff_binary()), "--root", str(tmp_path), "serve", "--http", "0.0.0.0:0"],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2
    assert "not a loopback address" in proc.stderr and "--allow-remote" in proc.stderr


def http_call(url: str, method: str, headers: dict[str, str], body: dict | None = None) -> tuple[int, dict, bytes]:
    """(status, headers, body) of one plain HTTP request."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read()


def test_delete_ends_a_session_as_the_sdks_expect(server, caplog):
    """MCP 2025-11-25 "Transports", Session Management: `DELETE` with the session's id ends it —
    200 OK with no body, as the TypeScript SDK's server answers (rmcp answered 202, which the
    Python SDK logged as "Session termination failed: 202") — and every later request naming it
    is 404 Not Found, a second DELETE included. The Python SDK's client ends its session with
    no complaint."""
    url, token_file, _ = server
    auth = {"Authorization": f"Bearer {token_file.read_text().strip()}"}

    status, headers, _ = http_call(url, "POST", auth, INITIALIZE)
    assert status == 200
    session = {k.lower(): v for k, v in headers.items()}["mcp-session-id"]
    named = {**auth, "Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}
    assert http_call(url, "POST", named, {"jsonrpc": "2.0", "method": "notifications/initialized"})[0] == 202
    assert http_call(url, "DELETE", named)[:3:2] == (200, b"")
    assert http_call(url, "DELETE", named)[0] == 404
    status, _, body = http_call(url, "POST", named, {"jsonrpc": "2.0", "id": 2, "method": "ping"})
    assert status == 404, body
    assert http_call(url, "DELETE", {**auth, "Mcp-Session-Id": "no-such-session"})[0] == 404

    async def run():
        client = create_mcp_http_client(headers=auth)
        async with streamable_http_client(url, http_client=client) as (read, write, *_):
            async with ClientSession(read, write) as sdk_session:
                await sdk_session.initialize()
                assert not (await sdk_session.call_tool("ping", {})).is_error

    with caplog.at_level("DEBUG", logger="mcp"):
        asyncio.run(run())
    complaints = [r.getMessage() for r in caplog.records if "termination" in r.getMessage().lower()]
    assert complaints == [], complaints
