"""Agents see what the person looks at and hear when diagnostics change (issue 17, items 3 and 6):
the `editor_state` tool and the MCP resources `filepuff://editor` and
`filepuff://diagnostics/{path}` with subscriptions, through real clients on both sides — the
official Python MCP SDK as the agent, `lsp_client.py` as a plain LSP editor (open documents only,
no focus reports), real gopls and basedpyright. Neovim's focus reports and approval prompt are in
test_neovim.py."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import REPO, McpSession
from test_attach import Editor, need, socket_path

FIXTURES = REPO / "tests" / "fixtures" / "lsp"
EDITOR = "filepuff://editor"


@pytest.fixture
def things():
    started = []
    yield started
    for thing in reversed(started):
        thing.close() if isinstance(thing, McpSession) else thing.kill()


def workspace(tmp_path: Path, language: str) -> Path:
    root = tmp_path / "ws"
    shutil.copytree(FIXTURES / language, root)
    return root


def attach(root: Path, tmp_path: Path, things: list) -> tuple[Editor, str, McpSession]:
    """A plain LSP editor with main.go open, and an agent attached to its Engine."""
    editor = Editor(root, tmp_path / "lsp.log")
    things.append(editor)
    uri = editor.open_buffer(root / "main.go")
    editor.wait_for(lambda: socket_path(root).exists(), 10, "the agent socket")
    agent = McpSession(root, tmp_path / "mcp.log").start()
    things.append(agent)
    return editor, uri, agent


def test_editor_state_of_a_plain_lsp_editor_lists_open_documents_and_says_focus_is_unknown(tmp_path, things):
    """An LSP editor without filepuff's focus reports: the agent gets the open documents (path,
    language, version, unsaved from a comparison with the disk, diagnostics counts) and `unknown`
    names the focus; the resource filepuff://editor is the same content."""
    need("gopls")
    root = workspace(tmp_path, "go")
    editor, uri, agent = attach(root, tmp_path, things)
    greet = editor.open_buffer(root / "greet" / "greet.go")
    editor.edit_buffer(greet, editor.buffers[greet][1] + "// unsaved\n")

    # The editor's notifications and the agent's call travel on different streams: wait until the
    # proxy has taken the open and the change.
    def both_seen():
        documents = {d["path"]: d for d in agent.ok("editor_state")["open_documents"]}
        return documents.get("greet/greet.go", {}).get("version") == 2

    editor.wait_for(both_seen, 10, "the editor's didOpen and didChange of greet.go")
    state = agent.ok("editor_state")
    assert state["editor_attached"] is True
    assert state["unknown"] == ["focus"] and "focus" not in state, state
    assert "does not report" in state["note"]
    documents = {d["path"]: d for d in state["open_documents"]}
    assert set(documents) == {"main.go", "greet/greet.go"} and state["total_open_documents"] == 2
    assert (documents["main.go"]["version"], documents["main.go"]["unsaved"]) == (1, False)
    assert (documents["greet/greet.go"]["version"], documents["greet/greet.go"]["unsaved"]) == (2, True)
    assert documents["main.go"]["language"] == "go"
    # gopls publishes (empty) diagnostics for the open files: counted, not guessed.
    editor.wait_for(lambda: agent.ok("editor_state")["open_documents"][0]["diagnostics"] is not None, 60,
                    "published diagnostics counted")

    assert agent.read_resource(EDITOR)["open_documents"] == agent.ok("editor_state")["open_documents"]
    listed = {str(r.uri) for r in agent.list_resources().resources}
    assert {EDITOR, "filepuff://diagnostics/main.go", "filepuff://diagnostics/greet/greet.go"} <= listed
    templates = [t.uri_template for t in agent.list_resource_templates().resource_templates]
    assert templates == ["filepuff://diagnostics/{path}"]


def test_editor_state_without_an_editor_says_nothing_is_known(tmp_path, things):
    root = workspace(tmp_path, "go")
    agent = McpSession(root, tmp_path / "mcp.log").start()
    things.append(agent)
    state = agent.ok("editor_state")
    assert (state["editor_attached"], state["open_documents"], state["unknown"]) == (
        False, [], ["open_documents", "focus"])
    capabilities = agent.initialize_result.capabilities.resources
    assert capabilities is not None and capabilities.subscribe is True


def test_subscribers_to_the_editor_hear_when_the_editor_opens_a_document(tmp_path, things):
    need("gopls")
    root = workspace(tmp_path, "go")
    editor, _, agent = attach(root, tmp_path, things)
    agent.subscribe(EDITOR)
    before = agent.updates(EDITOR)
    editor.open_buffer(root / "greet" / "greet.go")
    agent.wait_updated(EDITOR, before, timeout=30)
    paths = [d["path"] for d in agent.read_resource(EDITOR)["open_documents"]]
    assert sorted(paths) == ["greet/greet.go", "main.go"]


GO_ERROR = {"file": "main.go", "operation": "replace", "selector_text": 'greet.Hello("world")',
            "new_content": "greet.Hello(42)"}
PY_ERROR = {"file": "shop/cart.py", "operation": "replace", "selector_text": "return sum(self.items)",
            "new_content": 'return sum(self.items) + "x"'}


@pytest.mark.parametrize("server, language, edit", [("gopls", "go", GO_ERROR), ("basedpyright", "py", PY_ERROR)],
                         ids=["gopls", "basedpyright"])
def test_standalone_agent_hears_that_its_edit_introduced_an_error(tmp_path, things, server, language, edit):
    """No editor: the agent reads a file's diagnostics resource (none), subscribes, makes an edit
    that introduces a type error, gets notifications/resources/updated for it and reads the
    error."""
    need(server)
    root = workspace(tmp_path, language)
    agent = McpSession(root, tmp_path / "mcp.log").start()
    things.append(agent)
    uri = f"filepuff://diagnostics/{edit['file']}"
    errors = lambda content: [d for d in content["diagnostics"] if d["severity"] == "error"]  # noqa: E731
    assert errors(agent.read_resource(uri)) == []
    agent.subscribe(uri)
    before = agent.updates(uri)
    applied = agent.ok("edit_apply", edit)
    assert applied["applied"], applied
    agent.wait_updated(uri, before, timeout=90)
    after = agent.read_resource(uri)
    assert errors(after), after
    line = next(i for i, text in enumerate((root / edit["file"]).read_text().split("\n"), 1)
                if edit["new_content"] in text)
    assert any(d["line"] == line for d in errors(after)), after
    assert uri in {str(r.uri) for r in agent.list_resources().resources}


def test_attached_agent_hears_diagnostics_change_in_the_editors_buffer(tmp_path, things):
    """Attached: the agent's edit lands in the editor's buffer; gopls publishes for the new
    text; the subscriber is told, and a second, identical publication tells it nothing new."""
    need("gopls")
    root = workspace(tmp_path, "go")
    editor, uri, agent = attach(root, tmp_path, things)
    resource = "filepuff://diagnostics/main.go"
    agent.subscribe(resource)
    before = agent.updates(resource)
    applied = agent.ok("edit_apply", GO_ERROR)
    assert applied["applied"] and applied.get("written_to") == "editor", applied
    count = agent.wait_updated(resource, before, timeout=90)
    assert [d for d in agent.read_resource(resource)["diagnostics"] if d["severity"] == "error"]
    # The editor's own typing that fixes it: told again.
    text = editor.buffers[uri][1].replace("greet.Hello(42)", 'greet.Hello("again")')
    editor.edit_buffer(uri, text)
    agent.wait_updated(resource, count, timeout=90)
    assert [d for d in agent.read_resource(resource)["diagnostics"] if d["severity"] == "error"] == []
