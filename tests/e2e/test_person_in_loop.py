"""Agents in the loop with the person, through `filepuff lsp` and an editor-like LSP client that
declares what VS Code declares (change annotations, window/showDocument): an agent points the
person at code (`show_in_editor`), and proposes edits the person accepts or declines
(`confirm: true` on `edit_apply` and `rename_symbol`)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import REPO, McpSession
from test_attach import Editor, need, socket_path

FIXTURES = REPO / "tests" / "fixtures" / "lsp"


class PersonsEditor(Editor):
    """An editor whose person answers: `decision` is what they say to an edit that needs
    confirmation (True accept, False decline); `shown` records showDocument requests."""

    def __init__(self, root: Path, log: Path, annotations: bool = True):
        self.decision = True
        self.shown: list[dict] = []
        self.versions_sent: list[list] = []
        self.annotations = annotations
        super().__init__(root, log)
        self.handlers["window/showDocument"] = self._show

    def initialize(self, root, encodings=None, capabilities=None, options=None):
        caps = {
            "general": {"positionEncodings": encodings or ["utf-16"]},
            "workspace": {"applyEdit": True, "configuration": True, "workspaceFolders": True,
                          "workspaceEdit": {"documentChanges": True,
                                            **({"changeAnnotationSupport": {"groupsOnLabel": True}}
                                               if self.annotations else {})}},
            "textDocument": {"synchronization": {"didSave": True}},
            "window": {"workDoneProgress": True, "showDocument": {"support": True}},
        }
        return super().initialize(root, encodings, caps, options)

    def _show(self, params: dict) -> dict:
        self.shown.append(params)
        return {"success": True}

    def _apply_edit(self, params: dict) -> dict:
        self.versions_sent.append([c["textDocument"]["version"] for c in params["edit"].get("documentChanges", [])])
        annotations = params["edit"].get("changeAnnotations", {})
        if any(a.get("needsConfirmation") for a in annotations.values()) and not self.decision:
            self.applied_edits.append(params)
            return {"applied": False, "failureReason": "the person declined"}
        # Files the editor did not have open arrive with version null: open them first.
        for change in params["edit"]["documentChanges"]:
            uri = change["textDocument"]["uri"]
            if change["textDocument"]["version"] is None and uri not in self.buffers:
                self.open_buffer(Path(uri[len("file://"):]))
                change["textDocument"]["version"] = 1
        return super()._apply_edit(params)


@pytest.fixture
def workspace(tmp_path: Path):
    root = tmp_path / "ws"
    shutil.copytree(FIXTURES / "go", root)
    things = []
    yield root, tmp_path, things
    for thing in reversed(things):
        thing.close() if isinstance(thing, McpSession) else thing.kill()


def start(root: Path, tmp_path: Path, things: list, **kwargs) -> tuple[PersonsEditor, str, McpSession]:
    editor = PersonsEditor(root, tmp_path / "lsp.log", **kwargs)
    things.append(editor)
    uri = editor.open_buffer(root / "main.go")
    editor.wait_for(lambda: socket_path(root).exists(), 10, "the agent socket")
    agent = McpSession(root, tmp_path / "mcp.log").start()
    things.append(agent)
    return editor, uri, agent


def test_show_in_editor_selects_the_range_in_the_editors_units(workspace):
    need("gopls")
    root, tmp_path, things = workspace
    editor, uri, agent = start(root, tmp_path, things)
    text = (root / "main.go").read_text()
    line = next(i for i, l in enumerate(text.split("\n")) if "😀" in l)
    column = text.split("\n")[line].index("fmt") + 1  # 1-based characters
    out = agent.ok("show_in_editor", {"file": "main.go", "line": line + 1, "column": column,
                                      "end_column": column + 3})
    assert out == {"file": "main.go", "shown": True, "line": line + 1, "end_line": line + 1}
    shown = editor.shown[-1]
    prefix = text.split("\n")[line][: column - 1]
    units = len(prefix.encode("utf-16-le")) // 2  # the emoji is 2 UTF-16 units
    assert shown["uri"] == uri and shown["takeFocus"] is True
    assert shown["selection"] == {"start": {"line": line, "character": units},
                                  "end": {"line": line, "character": units + 3}}
    # A standalone agent has no editor to show anything in.
    alone = McpSession(root, tmp_path / "alone.log", extra_args=["--standalone"]).start()
    things.append(alone)
    error, _ = alone.error("show_in_editor", {"file": "main.go"})
    assert error["code"] == 8020 and error["name"] == "EDITOR_NOT_AVAILABLE"
    # Nor anyone to confirm an edit with: said as such, and nothing changes.
    before = (root / "main.go").read_text()
    error, _ = alone.error("edit_apply", {"file": "main.go", "operation": "replace", "selector_text": "world",
                                          "new_content": "there", "confirm": True})
    assert error["code"] == 5014 and "no editor is attached" in error["message"], error
    assert "--standalone" in error["remediation"] and (root / "main.go").read_text() == before


def test_the_person_accepts_or_declines_an_agents_edit(workspace):
    need("gopls")
    root, tmp_path, things = workspace
    editor, uri, agent = start(root, tmp_path, things)
    disk = (root / "main.go").read_text()
    args = {"file": "main.go", "operation": "insert_after", "selector_text": "func main() {",
            "new_content": "\t// proposed\n", "confirm": True}

    editor.decision = False
    declined = agent.ok("edit_apply", args)
    assert declined["applied"] is False and declined["confirmation"] == "declined", declined
    assert declined["editor_refused"] == "the person declined"
    annotated = editor.applied_edits[-1]["edit"]
    (annotation,) = annotated["changeAnnotations"].values()
    assert annotation["needsConfirmation"] is True
    assert all(e["annotationId"] in annotated["changeAnnotations"]
               for c in annotated["documentChanges"] for e in c["edits"])
    assert editor.buffers[uri] == [1, disk]

    editor.decision = True
    accepted = agent.ok("edit_apply", args)
    assert accepted["applied"] and accepted["confirmation"] == "accepted" and accepted["written_to"] == "editor"
    assert "\t// proposed\n" in editor.buffers[uri][1]

    # A rename the person accepts lands in the editor for every file, the closed ones included
    # (they arrive unversioned and open in the editor); the disk is the person's to save.
    greet = root / "greet" / "greet.go"
    greet_disk = greet.read_text()
    line = greet_disk.split("\n").index("func Hello(name string) string {") + 1
    rename = agent.ok("rename_symbol", {"file": "greet/greet.go", "line": line, "symbol": "Hello",
                                         "new_name": "Salute", "apply": True, "confirm": True})
    assert rename["applied"] and rename["confirmation"] == "accepted", rename
    assert {f["written_to"] for f in rename["files"]} == {"editor"}
    assert sorted(editor.versions_sent[-1], key=str) == [2, None], "the closed file went to the editor unversioned"
    assert "Salute(" in editor.buffers[greet.as_uri()][1] and greet.read_text() == greet_disk


def test_an_editor_without_change_annotations_gets_no_unconfirmed_edit(workspace):
    need("gopls")
    root, tmp_path, things = workspace
    editor, uri, agent = start(root, tmp_path, things, annotations=False)
    error, _ = agent.error("edit_apply", {"file": "main.go", "operation": "insert_after", "selector_text": "func main() {",
                                          "new_content": "\t// proposed\n", "confirm": True})
    assert error["code"] == 5014 and "changeAnnotationSupport" in error["message"]
    assert editor.applied_edits == [] and editor.buffers[uri][0] == 1
