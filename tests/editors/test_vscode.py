"""The VS Code extension inside a real VS Code: the built editors/vscode .vsix installed into
code-server (VS Code's workbench served to a browser), a Go module opened with auth off on
127.0.0.1, and the workbench driven as a person would — keys and the mouse — by headless
Chromium (Debian's) through Playwright for Python.

Checks, in order: the extension installs; the status bar says gopls is ready; hovering a symbol
after an emoji shows gopls's text; F12 lands on the definition's line and column; typing an error
puts it in the Problems panel and deleting it clears it; an agent's edit through `filepuff mcp`
(attached to the editor's filepuff over the Unix socket) appears in the unsaved buffer, Ctrl+Z
undoes it and the agent then reads the undone buffer; VS Code lists the extension's MCP server.

Screenshots go to target/editor-tests/vscode/ (FILEPUFF_ARTIFACTS overrides target/editor-tests),
one per step, so a failure can be looked at. Installed by scripts/install-code-server; run by
scripts/test-editors (which .ci/run calls). Under FILEPUFF_CI a missing code-server, Chromium or
Playwright fails instead of skipping.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "e2e"))
from conftest import McpSession, filepuff_binary  # noqa: E402  (the e2e suite's MCP client)



def pinned(name: str) -> str:
    """A version pinned in scripts/install-code-server (`NAME=VERSION`)."""
    script = (REPO / "scripts" / "install-code-server").read_text()
    return next(line.split("=", 1)[1] for line in script.splitlines() if line.startswith(f"{name}="))


CODE_SERVER_VERSION, NODE_VERSION = pinned("CODE_SERVER_VERSION"), pinned("NODE_VERSION")
# Where scripts/install-code-server puts it (the same default, the same override).
CODE_SERVER = Path(os.environ.get("FILEPUFF_CODE_SERVER_DIR") or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
                   / "filepuff" / f"code-server-{CODE_SERVER_VERSION}-node-{NODE_VERSION}")
NODE = CODE_SERVER / "node" / "bin" / "node"
ENTRY = CODE_SERVER / "node_modules" / "code-server" / "out" / "node" / "entry.js"
VSIX = Path(os.environ.get("FILEPUFF_VSIX") or REPO / "editors" / "vscode" / "filepuff.vsix")
ARTIFACTS = Path(os.environ.get("FILEPUFF_ARTIFACTS") or REPO / "target" / "editor-tests") / "vscode"
FIXTURE = REPO / "tests" / "fixtures" / "conformance" / "go"
WAIT = 90.0  # seconds for anything the language server does (gopls's first load on a loaded machine)


def missing(what: str) -> None:
    message = f"not installed: {what} (scripts/install-code-server)"
    if os.environ.get("FILEPUFF_CI"):
        pytest.fail(f"FILEPUFF_CI is set and {message}")
    pytest.skip(message)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop_group(process: subprocess.Popen) -> None:
    """SIGTERM to `process`'s whole process group, SIGKILL to what is left after 20 s."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        process.wait(20)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


def wait_until(predicate, timeout: float, what: str, interval: float = 0.25):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what} (last: {last!r})")


class Workbench:
    """The code-server process, the browser page showing it, and helpers that act as a person."""

    def __init__(self, page, root: Path, shots: Path):
        self.page = page
        self.root = root
        self.shots = shots

    def shot(self, name: str) -> Path:
        path = self.shots / f"{name}.png"
        self.page.screenshot(path=str(path))
        return path

    # ---- reading the screen ----------------------------------------------------------------
    def editor_lines(self) -> list[str]:
        """The active editor's visible lines, top to bottom (as rendered: no hidden text)."""
        lines = self.page.evaluate("""() => {
            const e = document.querySelector('.part.editor .editor-instance .monaco-editor .view-lines');
            if (!e) return null;
            return Array.from(e.children).sort((a, b) => parseFloat(a.style.top) - parseFloat(b.style.top))
                .map(l => l.textContent);
        }""")
        return [l.replace("\u00a0", " ") for l in lines] if lines else []

    def active_tab(self) -> str:
        """The active editor's file name, from the window title (`NAME - FOLDER - code-server`;
        a dirty editor's title starts with a dot)."""
        return self.page.title().split(" - ")[0].lstrip("● ")

    def status_items(self) -> list[dict]:
        return self.page.evaluate("""() => Array.from(document.querySelectorAll('.part.statusbar .statusbar-item'))
            .map(i => ({id: i.id, text: (i.textContent || '').trim(), label: i.querySelector('a')?.getAttribute('aria-label') || '',
                        html: i.innerHTML}))""")

    def focus(self) -> str:
        """What has the keyboard focus: the element's tag and classes, and whether it is inside the
        editor part (where a person's typing goes into the active editor)."""
        return self.page.evaluate("""() => {
            const a = document.activeElement;
            if (!a) return 'nothing';
            const where = a.closest('.part.editor .monaco-editor') ? 'editor' : 'elsewhere';
            return `${where}: ${a.tagName.toLowerCase()}.${String(a.className).split(' ').join('.')}`;
        }""")

    def type_in_editor(self, text: str) -> None:
        """Types `text` as a person would, once the active editor has the keyboard focus."""
        wait_until(lambda: self.focus().startswith("editor:"), 10, f"the editor to have the focus ({self.focus()})")
        self.page.keyboard.type(text, delay=20)

    def cursor(self) -> str:
        """The status bar's selection indicator, e.g. `Ln 15, Col 6`."""
        item = next((i for i in self.status_items() if i["id"] == "status.editor.selection"), None)
        return item["text"] if item else ""

    def word_center(self, word: str, line_contains: str) -> tuple[float, float]:
        """Screen coordinates of the middle of `word` on the first visible line holding `line_contains`."""
        point = self.page.evaluate("""([word, needle]) => {
            const e = document.querySelector('.part.editor .editor-instance .monaco-editor .view-lines');
            for (const line of e.children) {
                const text = line.textContent.replace(/\\u00a0/g, ' ');
                if (!text.includes(needle)) continue;
                const walker = document.createTreeWalker(line, NodeFilter.SHOW_TEXT);
                let at = text.indexOf(word), seen = 0, node;
                while ((node = walker.nextNode())) {
                    const len = node.textContent.length;
                    if (at < seen + len) {
                        const range = document.createRange();
                        range.setStart(node, at - seen);
                        range.setEnd(node, Math.min(len, at - seen + word.length));
                        const r = range.getBoundingClientRect();
                        return [r.left + r.width / 2, r.top + r.height / 2];
                    }
                    seen += len;
                }
            }
            return null;
        }""", [word, line_contains])
        assert point, f"{word!r} is not on a visible line with {line_contains!r}: {self.editor_lines()}"
        return point[0], point[1]

    # ---- acting ------------------------------------------------------------------------------
    def command(self, title: str) -> None:
        """Runs a command from the command palette (F1), as typed by a person."""
        self.page.keyboard.press("F1")
        self.page.wait_for_selector(".quick-input-widget input", state="visible")
        self.page.keyboard.type(title)
        self.page.wait_for_function(
            """(title) => {
                const row = document.querySelector('.quick-input-list .monaco-list-row.focused');
                return row && (row.getAttribute('aria-label') || '').includes(title);
            }""", arg=title)
        self.page.keyboard.press("Enter")

    def open_file(self, relative: str) -> None:
        """Opens `relative` with Quick Open (Ctrl+P), pressing Enter only once the highlighted
        row is that file."""
        name = relative.rsplit("/", 1)[-1]
        if self.active_tab() == name:
            self.page.keyboard.press("Escape")
            return
        self.page.keyboard.press("Control+P")
        self.page.wait_for_selector(".quick-input-widget input", state="visible")
        self.page.keyboard.type(relative)
        self.page.wait_for_function(
            """(name) => {
                const row = document.querySelector('.quick-input-list .monaco-list-row.focused');
                return row && (row.getAttribute('aria-label') || '').startsWith(name);
            }""", arg=name)
        self.page.keyboard.press("Enter")
        wait_until(lambda: (self.active_tab(), len(self.editor_lines())) if self.active_tab() != name
                   or not self.editor_lines() else True, 30, f"{relative} in the editor")

    def cursor_to(self, name: str, line: int, text: str) -> None:
        """Puts the cursor at the start of the first `text` at or after 1-based `line`, by keys:
        Go to Line (Ctrl+G), then Find (Ctrl+F), which selects the match as it is typed."""
        self.page.keyboard.press("Escape")
        self.page.keyboard.press("Control+G")
        self.page.wait_for_selector(".quick-input-widget input", state="visible")
        self.page.keyboard.type(str(line))
        self.page.keyboard.press("Enter")
        wait_until(lambda: self.cursor().startswith(f"Ln {line},"), 10, f"the cursor on line {line}")
        # Ctrl+F goes to whatever has the focus: from the Problems panel (just opened), to its own
        # filter box. The focus reaches the editor after the go-to-line input closes.
        wait_until(lambda: self.focus().startswith("editor:"), 10, f"the focus in the editor ({self.focus()})")
        self.page.keyboard.press("Control+F")
        self.page.wait_for_selector(".find-widget.visible textarea, .find-widget.visible input", state="visible")
        self.page.keyboard.press("Control+A")
        self.page.keyboard.type(text)
        wait_until(lambda: self.cursor().startswith(f"Ln {line},") and "selected" in self.cursor(), 10,
                   f"{text!r} selected on line {line}")
        self.page.keyboard.press("Escape")
        # Keys pressed before the find widget has handed the focus back go to the widget (Enter
        # there finds the next match) and the match stays selected: the next typing replaces it.
        wait_until(lambda: self.focus().startswith("editor:") and not self.page.is_visible(".find-widget.visible"),
                   10, f"the find widget to close ({self.focus()})")
        self.page.keyboard.press("ArrowLeft")
        wait_until(lambda: self.cursor().startswith(f"Ln {line},") and "selected" not in self.cursor(), 10,
                   f"the selection on line {line} to collapse ({self.cursor()!r})")
        assert self.active_tab() == name, f"the cursor moved in {self.active_tab()!r}, not {name!r}"


def require_editor_tools(vsix: Path | None) -> str:
    """Chromium's path, once code-server, Playwright, gopls (and the .vsix, when named) are there."""
    if not (NODE.is_file() and ENTRY.is_file()):
        missing(f"code-server in {CODE_SERVER}")
    chromium = shutil.which("chromium")
    if chromium is None:
        missing("chromium (Debian's)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing("playwright (PyPI, tests/e2e/requirements.txt)")
    if vsix is not None and not vsix.is_file():
        missing(f"the extension package {vsix} (cd editors/vscode && npm run build && npm run package)")
    if shutil.which("gopls") is None:
        missing("gopls (scripts/install-language-servers)")
    return chromium


@contextlib.contextmanager
def workbench(tmp: Path, vsix: Path, shots: Path, filepuff_on_path: bool):
    """code-server with `vsix` installed, a copy of the Go fixture open, and a browser on it.

    With `filepuff_on_path`, the binary under test is `filepuff.path` and on PATH; without, no
    `filepuff.path` is set anywhere and PATH holds only the language servers: the extension
    must find the binary it carries.
    """
    from playwright.sync_api import sync_playwright

    chromium = require_editor_tools(vsix)
    shutil.rmtree(shots, ignore_errors=True)
    shots.mkdir(parents=True)
    root = tmp / "ws"
    shutil.copytree(FIXTURE, root)
    # The built binary as `filepuff`, then the language servers, on the PATH of `filepuff lsp` and
    # `filepuff mcp`. The extension host does not inherit code-server's PATH (VS Code's server
    # takes the environment of a login shell), so it goes in through the settings.
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    (bin_dir / "filepuff").symlink_to(filepuff_binary())
    path = os.pathsep.join(([str(bin_dir)] if filepuff_on_path else [])
                           + [str(REPO / ".tools" / "bin"), os.environ.get("PATH", "")])
    env = {**os.environ, "PATH": path, "XDG_CONFIG_HOME": str(tmp / "config"), "XDG_DATA_HOME": str(tmp / "data"),
           "FILEPUFF_LOG": "info"}
    user_data = tmp / "user-data"
    extensions = tmp / "extensions"
    (user_data / "User").mkdir(parents=True)
    (user_data / "Machine").mkdir(parents=True)
    # In a remote window (code-server's is one) VS Code reads `filepuff.path`, a machine-overridable
    # setting, from the remote machine's settings, not the User's (docs/editors.md).
    machine = {"filepuff.env": {"PATH": path, "FILEPUFF_LOG": "info"}}
    if filepuff_on_path:
        machine["filepuff.path"] = str(bin_dir / "filepuff")
    (user_data / "Machine" / "settings.json").write_text(json.dumps(machine, indent=2))
    (user_data / "User" / "settings.json").write_text(json.dumps({
        "security.workspace.trust.enabled": False,
        "workbench.startupEditor": "none",
        "workbench.tips.enabled": False,
        "telemetry.telemetryLevel": "off",
        "extensions.autoCheckUpdates": False,
        "extensions.autoUpdate": False,
        "update.mode": "none",
        "files.autoSave": "off",
        "editor.hover.delay": 300,
        "window.commandCenter": False,
        # Pop-ups that take keys a test types are not what these tests check: no suggest widget
        # while typing, no parameter hints, no inlay hints inside the rendered lines.
        "editor.quickSuggestions": {"other": "off", "comments": "off", "strings": "off"},
        "editor.suggestOnTriggerCharacters": False,
        "editor.parameterHints.enabled": False,
        "editor.inlayHints.enabled": "off",
    }, indent=2))
    base = [str(NODE), str(ENTRY), "--user-data-dir", str(user_data), "--extensions-dir", str(extensions)]

    installed = subprocess.run(base + ["--install-extension", str(vsix)], env=env, capture_output=True,
                               text=True, timeout=180)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    listed = subprocess.run(base + ["--list-extensions", "--show-versions"], env=env, capture_output=True,
                            text=True, timeout=120)
    version = json.loads((REPO / "editors" / "vscode" / "package.json").read_text())["version"]

    port = free_port()
    log = open(shots / "code-server.log", "w")
    server = subprocess.Popen(base + ["--auth", "none", "--bind-addr", f"127.0.0.1:{port}", "--disable-telemetry",
                                      "--disable-update-check", "--disable-workspace-trust",
                                      "--disable-getting-started-override", str(root)],
                              env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def healthy() -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as response:
                return response.status == 200
        except OSError:
            return False

    playwright = browser = None
    try:
        wait_until(lambda: healthy() or server.poll() is not None, 120, "code-server to listen")
        assert server.poll() is None, (shots / "code-server.log").read_text()
        playwright = sync_playwright().start()
        browser = playwright.chromium.launch(executable_path=chromium, headless=True,
                                             args=["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1400, "height": 860})
        page.set_default_timeout(60_000)
        page.goto(f"http://127.0.0.1:{port}/?folder={root}")
        page.wait_for_selector(".monaco-workbench .part.statusbar", timeout=120_000)
        bench = Workbench(page, root, shots)
        bench.env = env
        bench.listed_extensions = listed.stdout.split()
        bench.version = version
        bench.extensions = extensions
        yield bench
        bench.shot("zz-last")
    finally:
        if browser is not None:
            browser.close()
        if playwright is not None:
            playwright.stop()
        # code-server's children (the extension host, filepuff lsp under it) are in its process
        # group (start_new_session): stop them all, not only the leader — an extension host
        # outliving its server stayed behind for hours.
        stop_group(server)
        log.close()
        # VS Code's own logs (the extension host's, the filepuff output channel) go with the shots.
        shutil.copytree(user_data / "logs", shots / "logs", dirs_exist_ok=True)


@pytest.fixture(scope="module")
def vscode(tmp_path_factory):
    """The universal .vsix (no binary inside), the binary under test named by filepuff.path."""
    with workbench(tmp_path_factory.mktemp("vscode"), VSIX, ARTIFACTS, filepuff_on_path=True) as bench:
        yield bench


def test_the_vsix_installs(vscode):
    assert f"filepuff.filepuff@{vscode.version}" in vscode.listed_extensions, vscode.listed_extensions


def test_the_status_bar_says_gopls_is_ready(vscode):
    vscode.open_file("main.go")

    def ready():
        item = next((i for i in vscode.status_items() if "filepuff" in i["text"]), None)
        return item if item and item["text"] == "filepuff: gopls" and "codicon-check" in item["html"] else None

    item = wait_until(ready, WAIT, "the status bar to say `filepuff: gopls` with the ready icon")
    vscode.shot("01-status-ready")
    assert item["text"] == "filepuff: gopls"


def test_hover_after_an_emoji_shows_goplss_text(vscode):
    vscode.open_file("main.go")
    x, y = vscode.word_center("NewSquare", "😀")

    def hovered():
        # One mouse rest asks once; an empty answer (gopls still loading the package) shows no
        # hover at all. A person moves the mouse away and back: so does the test, every 5 s.
        vscode.page.mouse.move(x - 40, y + 200)
        vscode.page.mouse.move(x, y)
        try:
            hover = vscode.page.wait_for_selector(".monaco-hover .hover-contents", state="visible", timeout=5_000)
        except Exception:  # playwright's TimeoutError: nothing shown yet
            return None
        try:
            wait_until(lambda: "NewSquare makes" in hover.inner_text(), 5, "gopls's hover text")
        except Exception:  # not gopls's text yet, or the hover went away (a detached element)
            return None
        return hover

    hover = wait_until(hovered, WAIT, "gopls's hover over NewSquare", interval=0.5)
    vscode.shot("02-hover")
    lines = [line.strip() for line in hover.inner_text().splitlines() if line.strip()]
    assert lines == ["func shapes.NewSquare(side float64) shapes.Square", "NewSquare makes a Square of side side.",
                     "shapes.NewSquare on pkg.go.dev"], lines
    vscode.page.keyboard.press("Escape")
    vscode.page.mouse.move(5, 5)  # off the editor, so no hover or Ctrl+hover link follows


def test_f12_goes_to_the_definition(vscode):
    vscode.open_file("main.go")
    vscode.cursor_to("main.go", 10, "NewSquare")
    vscode.page.keyboard.press("F12")
    wait_until(lambda: vscode.active_tab() == "shapes.go", WAIT, "F12 to open shapes.go")
    # `func NewSquare(` is on line 15; gopls puts the cursor on the name, column 6.
    wait_until(lambda: vscode.cursor() == "Ln 15, Col 6", 10, "the cursor on NewSquare's name")
    vscode.shot("03-f12")


def test_a_typed_error_shows_in_problems_and_clears(vscode):
    vscode.open_file("main.go")
    vscode.cursor_to("main.go", 11, "Println")
    vscode.page.keyboard.press("End")
    vscode.page.keyboard.press("Enter")
    wait_until(lambda: vscode.cursor().startswith("Ln 12,"), 10, f"a new line 12 ({vscode.cursor()!r})")
    vscode.type_in_editor("var unused int")
    # The workbench renders typed text asynchronously: wait for the line, in main.go.
    try:
        wait_until(lambda: vscode.active_tab() == "main.go"
                   and any(l.strip() == "var unused int" for l in vscode.editor_lines()), WAIT,
                   "the typed line rendered in main.go")
    except AssertionError as e:
        vscode.shot("04-typed-line-missing")
        raise AssertionError(f"{e}; tab {vscode.active_tab()!r}, focus {vscode.focus()!r}, cursor {vscode.cursor()!r}, "
                             f"lines {vscode.editor_lines()!r}") from None
    vscode.page.keyboard.press("Control+Shift+M")

    def problem_rows():
        return vscode.page.evaluate("""() => Array.from(document.querySelectorAll('.markers-panel .monaco-list-row'))
            .map(r => r.getAttribute('aria-label') || r.textContent)""")

    rows = wait_until(lambda: [r for r in problem_rows() if "declared and not used: unused" in r], WAIT,
                      "gopls's error in the Problems panel")
    vscode.shot("04-problems")
    assert len(rows) == 1, problem_rows()
    # Deleting the line (Ctrl+Shift+K) takes the error away again.
    vscode.cursor_to("main.go", 12, "var unused int")
    vscode.page.keyboard.press("Control+Shift+K")
    wait_until(lambda: not [r for r in problem_rows() if "declared and not used" in r], WAIT,
               "the error to leave the Problems panel")
    vscode.shot("05-problems-cleared")


def test_an_agents_edit_shows_in_the_editor_and_ctrl_z_undoes_it(vscode, tmp_path):
    vscode.open_file("main.go")
    disk = (vscode.root / "main.go").read_text()
    agent = McpSession(vscode.root, tmp_path / "mcp.log", env={k: vscode.env[k] for k in ("PATH", "FILEPUFF_LOG")})
    agent.start()
    try:
        out = agent.ok("edit_apply", {"file": "main.go", "operation": "replace",
                                      "selector_text": "shapes.NewSquare(2)", "new_content": "shapes.NewSquare(7)"})
        assert out["applied"] is True and out["written_to"] == "editor", out
        wait_until(lambda: any("sq := shapes.NewSquare(7)" in l for l in vscode.editor_lines()), WAIT,
                   "the agent's edit in the editor")
        vscode.shot("06-agent-edit")
        assert (vscode.root / "main.go").read_text() == disk  # the person's to save
        vscode.cursor_to("main.go", 11, "Println")
        vscode.page.keyboard.press("Control+Z")
        wait_until(lambda: any("sq := shapes.NewSquare(2)" in l for l in vscode.editor_lines()), 30,
                   "Ctrl+Z to undo the agent's edit")
        vscode.shot("07-agent-edit-undone")
        # The agent reads the editor's buffer, undone.
        read = wait_until(lambda: (r := agent.ok("file_read", {"path": "main.go"})) and
                          "NewSquare(2)" in json.dumps(r) and r, 30, "the agent to read the undone buffer")
        assert "NewSquare(7)" not in json.dumps(read)
    finally:
        agent.close()


def test_vscode_lists_the_mcp_server(vscode):
    vscode.command("MCP: List Servers")
    rows = wait_until(lambda: vscode.page.evaluate("""() => Array.from(document.querySelectorAll('.quick-input-list .monaco-list-row'))
        .map(r => r.getAttribute('aria-label') || r.textContent)""") or None, 30, "the MCP servers list")
    vscode.shot("08-mcp-servers")
    assert any(r.startswith("filepuff (ws)") for r in rows), rows
    vscode.page.keyboard.press("Escape")
