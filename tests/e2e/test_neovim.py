"""The Neovim plugin (editors/neovim) in Debian's real Neovim, headless: `require("filepuff").setup()`
starts `filepuff lsp` for a Go file in a copy of the fixture module, a definition request comes
back from gopls through it, and after an unsaved change an agent's `filepuff mcp` (the Python MCP
SDK, run with the config :FilepuffMcpConfig prints) reads the unsaved text from Neovim's Engine."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from conftest import REPO, McpSession, filepuff_binary

FIXTURES = REPO / "tests" / "fixtures" / "lsp"


def test_neovim_plugin_serves_definitions_and_hands_agents_its_unsaved_buffer(tmp_path):
    for program in ("nvim", "gopls"):
        if shutil.which(program) is None:
            pytest.skip(f"not installed: {program} (scripts/setup-test-env, scripts/install-language-servers)")
    root = tmp_path / "ws"
    shutil.copytree(FIXTURES / "go", root)
    root = root.resolve()
    out, done = tmp_path / "result.json", tmp_path / "done"
    env = dict(os.environ, FILEPUFF_BIN=str(filepuff_binary()), FILEPUFF_PLUGIN=str(REPO / "editors" / "neovim"),
               FILEPUFF_TEST_FILE=str(root / "main.go"), FILEPUFF_TEST_OUT=str(out), FILEPUFF_TEST_DONE=str(done),
               XDG_STATE_HOME=str(tmp_path / "state"), XDG_DATA_HOME=str(tmp_path / "data"))
    log = open(tmp_path / "nvim.log", "w")
    nvim = subprocess.Popen(["nvim", "--headless", "--clean", "-c", f"luafile {REPO / 'tests' / 'e2e' / 'nvim_driver.lua'}"],
                            cwd=root, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    session = None
    try:
        deadline = time.monotonic() + 120
        while not out.exists():
            assert nvim.poll() is None, f"nvim exited {nvim.returncode}: {(tmp_path / 'nvim.log').read_text()}"
            assert time.monotonic() < deadline, "nvim reported nothing in 120 s"
            time.sleep(0.1)
        result = json.loads(out.read_text())
        assert "error" not in result, result["error"]

        # The definition of greet.Hello, asked at a position after emoji (UTF-16 on the wire).
        greet = (root / "greet" / "greet.go").read_text().split("\n")
        hello = greet.index("func Hello(name string) string {")
        assert result["location"] == {
            "uri": (root / "greet" / "greet.go").as_uri(),
            "range": {"start": {"line": hello, "character": 5}, "end": {"line": hello, "character": 10}},
        }
        line = (root / "main.go").read_text().split("\n")[result["position"]["line"]]
        assert line.startswith("\t/* 😀 日本語 */")
        assert result["position"]["character"] == len(line[: line.index("Hello") + 1].encode("utf-16-le")) // 2
        assert result["root"] == str(root)
        assert any("gopls" in l and "serves: go" in l for l in result["doctor"]), result["doctor"]

        # :FilepuffMcpConfig names `filepuff mcp --root ROOT`; an agent run with it sees the unsaved line.
        config = result["mcp"]["mcpServers"]["filepuff"]
        assert config == {"command": str(filepuff_binary()), "args": ["mcp", "--root", str(root)]}
        assert json.loads(result["mcp_command_output"].strip()) == result["mcp"]
        unsaved = result["text"]
        assert unsaved.startswith("// unsaved from neovim 👋\n") and unsaved != (root / "main.go").read_text()
        session = McpSession(root, tmp_path / "mcp.log").start()
        read = session.ok("file_read", {"path": "main.go"})
        assert read["content"] == unsaved
        assert read["buffer_version"] >= 2
        assert not (root / "main.go").read_text().startswith("// unsaved")
    finally:
        if session is not None:
            session.close()
        done.touch()
        try:
            nvim.wait(timeout=30)
        except subprocess.TimeoutExpired:
            nvim.kill()
            nvim.wait()
        log.close()
    assert nvim.returncode == 0, (tmp_path / "nvim.log").read_text()
