"""An agent in the loop with the person, inside a real VS Code (docs/agents.md, "In the loop with
the person"): the built .vsix in code-server, driven by headless Chromium as in test_vscode.py,
and an agent — `filepuff mcp` started in the same workspace, spoken to with the official Python
MCP SDK (the e2e suite's McpSession) — attached to the editor's filepuff over its Unix socket.

Checks, in order: the agent is attached and sees the editor's open main.go; it sees where the
person put the cursor (after an emoji and CJK: columns are characters) and what they selected, from
the extension's `filepuff/editorFocus` reports (debounced 150 ms), and a subscriber to
filepuff://editor is told; `show_in_editor` brings shapes.go to the front with the asked range
selected, and the agent's `editor_state` then follows; an `edit_apply` with `confirm: true` opens
VS Code's refactor preview with the change unticked (VS Code's way with changes that need
confirmation), changes nothing until the person ticks it and clicks Apply, then lands in the
unsaved buffer (not the disk) and the agent hears `accepted`; the same with Discard leaves the
buffer as it was and the agent hears `declined`.

Screenshots: target/editor-tests/vscode-agent/. One code-server start, about a minute more.
"""

from __future__ import annotations

import concurrent.futures

import pytest

from test_vscode import ARTIFACTS, VSIX, WAIT, McpSession, wait_until, workbench
from test_attach import socket_path  # noqa: E402  (tests/e2e, put on sys.path by test_vscode)
from test_neovim import wait_state  # noqa: E402

EDITOR = "filepuff://editor"
FOCUS_WAIT = 30.0  # seconds for a focus report (150 ms debounce) to reach the agent on a loaded machine


@pytest.fixture(scope="module")
def vscode(tmp_path_factory):
    with workbench(tmp_path_factory.mktemp("vscode-agent"), VSIX, ARTIFACTS.parent / "vscode-agent",
                   filepuff_on_path=True) as bench:
        yield bench


@pytest.fixture(scope="module")
def agent(vscode, tmp_path_factory):
    """`filepuff mcp` for the workspace, started once the editor's filepuff serves agents."""
    vscode.open_file("main.go")
    wait_until(lambda: socket_path(vscode.root).exists(), WAIT, f"the editor's agent socket {socket_path(vscode.root)}")
    log = tmp_path_factory.mktemp("vscode-agent-mcp") / "mcp.log"
    session = McpSession(vscode.root, log, env={k: vscode.env[k] for k in ("PATH", "FILEPUFF_LOG")})
    session.start()
    try:
        yield session
    finally:
        session.close()
        (ARTIFACTS.parent / "vscode-agent" / "mcp.log").write_text(session.server_stderr())


def lines_of(vscode, relative: str) -> list[str]:
    return (vscode.root / relative).read_text().split("\n")


def test_the_agent_is_attached_to_vscode_and_sees_its_open_document(vscode, agent):
    # The extension's didOpen and its first focus report (sent once its client has started) are
    # separate messages: wait for both, main.go open and in focus, with nothing left unknown.
    state = wait_state(agent, lambda s: any(d["path"] == "main.go" for d in s["open_documents"])
                       and (s.get("focus") or {}).get("path") == "main.go" and s["unknown"] == [],
                       "main.go open and in focus, nothing unknown", timeout=FOCUS_WAIT)
    assert state["editor_attached"] is True, state
    assert "note" not in state, state
    document = next(d for d in state["open_documents"] if d["path"] == "main.go")
    assert (document["language"], document["unsaved"]) == ("go", False), document


def test_the_agent_sees_the_persons_cursor_and_selection(vscode, agent):
    vscode.open_file("main.go")
    agent.subscribe(EDITOR)
    updates = agent.updates(EDITOR)
    # Line 10 is `\t/* 😀 日本 */ sq := shapes.NewSquare(2)`: the emoji is two UTF-16 units in VS
    # Code and one character for the agent.
    line = lines_of(vscode, "main.go")[9]
    column = line.index("NewSquare") + 1
    vscode.cursor_to("main.go", 10, "NewSquare")
    state = wait_state(agent, lambda s: s.get("focus", {}).get("path") == "main.go"
                       and s["focus"].get("cursor") == {"line": 10, "column": column},
                       f"the cursor on NewSquare (line 10, column {column}; VS Code says {vscode.cursor()!r})",
                       timeout=FOCUS_WAIT)
    vscode.shot("01-cursor")
    focus = state["focus"]
    assert "selection" not in focus, focus
    visible = focus["visible_range"]
    assert visible["start"]["line"] == 1 and visible["end"]["line"] >= 12, focus
    agent.wait_updated(EDITOR, updates, timeout=FOCUS_WAIT)

    # The person selects the name, as they would: Shift+Right over its nine characters.
    for _ in "NewSquare":
        vscode.page.keyboard.press("Shift+ArrowRight")
    wait_until(lambda: "(9 selected)" in vscode.cursor(), 10, f"NewSquare selected ({vscode.cursor()!r})")
    expected = {"start": {"line": 10, "column": column}, "end": {"line": 10, "column": column + 9}}
    state = wait_state(agent, lambda s: s.get("focus", {}).get("selection") == expected,
                       f"the selection of NewSquare {expected}", timeout=FOCUS_WAIT)
    vscode.shot("02-selection")
    assert state["focus"]["cursor"] == {"line": 10, "column": column + 9}, state["focus"]
    assert state["focus"]["path"] == "main.go", state["focus"]
    vscode.page.keyboard.press("ArrowLeft")


def test_show_in_editor_brings_the_file_to_the_front_with_the_range_selected(vscode, agent):
    vscode.open_file("main.go")
    # `func NewSquare(side float64) Square {` is line 15 of shapes.go: select the name.
    line = lines_of(vscode, "shapes/shapes.go")[14]
    start = line.index("NewSquare") + 1
    out = agent.ok("show_in_editor", {"file": "shapes/shapes.go", "line": 15, "column": start,
                                      "end_column": start + len("NewSquare")})
    assert out == {"file": "shapes/shapes.go", "shown": True, "line": 15, "end_line": 15}, out
    wait_until(lambda: vscode.active_tab() == "shapes.go", WAIT, f"shapes.go in front (tab {vscode.active_tab()!r})")
    wait_until(lambda: any(l.startswith("func NewSquare(side float64) Square {") for l in vscode.editor_lines()), 30,
               "shapes.go's NewSquare on screen")
    # No tabs on that line: VS Code's column is the character's. The selection ends after the name.
    wait_until(lambda: vscode.cursor() == f"Ln 15, Col {start + 9} (9 selected)", 30,
               f"NewSquare selected on line 15 ({vscode.cursor()!r})")
    vscode.shot("03-shown")
    # What the person now looks at is what the agent pointed at.
    state = wait_state(agent, lambda s: s.get("focus", {}).get("path") == "shapes/shapes.go"
                       and s["focus"].get("selection") == {"start": {"line": 15, "column": start},
                                                           "end": {"line": 15, "column": start + 9}},
                       "the focus on shapes.go's NewSquare", timeout=FOCUS_WAIT)
    assert any(d["path"] == "shapes/shapes.go" for d in state["open_documents"]), state


def refactor_preview(vscode) -> dict | None:
    """VS Code's refactor preview (the bulk edit pane), when it shows an edit: its buttons and
    the rows of its tree (files, then their changes) and whether each row's box is ticked."""
    return vscode.page.evaluate("""() => {
        const pane = document.querySelector('.bulk-edit-panel');
        if (!pane || pane.dataset.state !== 'data' || !pane.offsetParent) return null;
        const buttons = Array.from(pane.querySelectorAll('.buttons .monaco-button')).map(b => b.textContent.trim());
        const rows = Array.from(pane.querySelectorAll('.monaco-list-row')).map(r => ({
            text: r.getAttribute('aria-label') || r.textContent,
            checked: r.querySelector('.edit-checkbox')?.getAttribute('aria-checked') === 'true'}));
        return rows.length ? {buttons, rows} : null;
    }""")


def propose(vscode, agent, pool, old: str, new: str):
    """The agent's edit_apply of main.go with confirm: true, in flight until the person decides;
    returns the call once VS Code's refactor preview shows it."""
    call = pool.submit(agent.call, "edit_apply", {"file": "main.go", "operation": "replace",
                                                  "selector_text": old, "new_content": new,
                                                  "confirm": True})

    def shown():
        assert not call.done(), f"edit_apply returned before the person decided: {call.result()}"
        return refactor_preview(vscode)

    preview = wait_until(shown, WAIT, "VS Code's refactor preview of the agent's edit")
    assert preview["buttons"][:2] == ["Apply", "Discard"], preview
    assert any("main.go" in row["text"] for row in preview["rows"]), preview
    # VS Code leaves a change that needs confirmation unticked: Apply alone applies nothing.
    assert not any(row["checked"] for row in preview["rows"]), preview
    return call


def click_in_preview(vscode, label: str) -> None:
    vscode.page.locator(".bulk-edit-panel .buttons .monaco-button", has_text=label).first.click()


def main_go_on_screen(vscode) -> list[str]:
    vscode.open_file("main.go")
    return vscode.editor_lines()


def test_an_edit_the_person_applies_in_the_refactor_preview(vscode, agent):
    disk = (vscode.root / "main.go").read_text()
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        call = propose(vscode, agent, pool, "shapes.NewSquare(2)", "shapes.NewSquare(5)")
        vscode.shot("04-preview")
        # Nothing changes before the person decides.
        assert agent.ok("file_read", {"path": "main.go"})["content"] == disk
        # The person ticks main.go (and so its one change), then clicks Apply.
        vscode.page.locator(".bulk-edit-panel .monaco-list-row .edit-checkbox").first.click()
        wait_until(lambda: (p := refactor_preview(vscode)) and all(row["checked"] for row in p["rows"]), 10,
                   f"main.go's change ticked in the refactor preview ({refactor_preview(vscode)})")
        click_in_preview(vscode, "Apply")
        result = call.result(timeout=60)
    assert not result.is_error, result.content
    structured = result.structured_content or {}
    assert structured.get("confirmation") == "accepted", structured
    assert structured.get("written_to") == "editor", structured
    wait_until(lambda: refactor_preview(vscode) is None, 30, "the refactor preview to close")
    wait_until(lambda: any("sq := shapes.NewSquare(5)" in l for l in main_go_on_screen(vscode)), 30,
               "the applied edit in main.go's buffer")
    vscode.shot("05-applied")
    assert (vscode.root / "main.go").read_text() == disk, "the person's to save, not the agent's"
    assert agent.ok("file_read", {"path": "main.go"})["content"] == disk.replace("NewSquare(2)", "NewSquare(5)")


def test_an_edit_the_person_discards_in_the_refactor_preview(vscode, agent):
    before = agent.ok("file_read", {"path": "main.go"})["content"]
    assert "shapes.NewSquare(5)" in before  # the applied edit of the test above
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        call = propose(vscode, agent, pool, "shapes.NewSquare(5)", "shapes.NewSquare(9)")
        click_in_preview(vscode, "Discard")
        result = call.result(timeout=60)
    assert not result.is_error, result.content
    structured = result.structured_content or {}
    assert (structured.get("confirmation"), structured.get("applied")) == ("declined", False), structured
    assert structured.get("editor_refused"), structured  # VS Code gives no reason: filepuff's own
    wait_until(lambda: refactor_preview(vscode) is None, 30, "the refactor preview to close")
    lines = main_go_on_screen(vscode)
    vscode.shot("06-discarded")
    assert any("sq := shapes.NewSquare(5)" in l for l in lines) and not any("NewSquare(9)" in l for l in lines), lines
    assert agent.ok("file_read", {"path": "main.go"})["content"] == before
    assert "NewSquare(2)" in (vscode.root / "main.go").read_text(), "nothing is saved"
