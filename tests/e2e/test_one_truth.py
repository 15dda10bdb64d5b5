"""One truth for editor and agents, with real gopls behind `filepuff lsp` (driven by the
editor-like client of test_attach.py) and agents as real MCP clients:

- a workspace reached through a symlink: the editor opens everything through the link, agents
  name the root by the link or by the real path, and every spelling is one document — agents
  read the unsaved buffer, their edit lands in the editor under the URI it opened, answers to
  the editor keep its spelling;
- an editor that sends didOpen again for an open document (a reload) has the server answer on
  the new text;
- `edit_apply` and `rename_symbol` land the same way: the same refusal shape, the same
  `[lsp] save_agent_edits` rule."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from conftest import REPO, McpSession
from test_attach import Editor, need, socket_path

FIXTURES = REPO / "tests" / "fixtures" / "lsp"


@pytest.fixture
def linked(tmp_path: Path) -> tuple[Path, Path]:
    """`real/` (the Go fixture module) and `link` → `real`."""
    real = tmp_path / "real"
    shutil.copytree(FIXTURES / "go", real)
    link = tmp_path / "link"
    os.symlink(real, link)
    return link, real.resolve()


def line_of(text: str, needle: str) -> int:
    """0-based line of the first line containing `needle`."""
    return next(i for i, line in enumerate(text.split("\n")) if needle in line)


def test_a_symlinked_root_is_one_workspace_for_editor_and_agents(linked, tmp_path, cleanup):
    need("gopls")
    link, real = linked
    editor = Editor(link, tmp_path / "lsp.log")
    cleanup.append(editor)
    main = link / "main.go"
    disk = main.read_text()
    uri = editor.open_buffer(main)
    assert uri.startswith(link.as_uri())
    unsaved = disk.replace("func main() {\n", "func main() {\n\t// unsaved line\n")
    editor.edit_buffer(uri, unsaved)
    editor.wait_for(lambda: socket_path(link).exists(), 10, "the agent socket")

    # Agents naming the root either way attach to this editor and read its buffer, whatever
    # spelling of the file they use.
    by_link = McpSession(link, tmp_path / "mcp-link.log").start()
    cleanup.append(by_link)
    by_real = McpSession(real, tmp_path / "mcp-real.log").start()
    cleanup.append(by_real)
    for session in (by_link, by_real):
        for path in ("main.go", str(link / "main.go"), str(real / "main.go"), (link / "main.go").as_uri()):
            read = session.ok("file_read", {"path": path})
            assert read["content"] == unsaved, (session.root, path)
            assert read["buffer_version"] == 2 and read["path"] == "main.go"

    # The editor's definition answer names the other file through the link (its spelling).
    line = line_of(unsaved, "greet.Hello(")
    character = unsaved.split("\n")[line].index("Hello")
    locations = editor.wait_for(
        lambda: editor.request("textDocument/definition",
                               {"textDocument": {"uri": uri}, "position": {"line": line, "character": character}}),
        60, "a definition")
    location = locations[0] if isinstance(locations, list) else locations
    assert location["uri"] == (link / "greet" / "greet.go").as_uri(), location

    # An agent's edit, given by the real path, lands in the editor's buffer under the URI the
    # editor opened; the disk under the buffer is untouched.
    out = by_real.ok("edit_apply", {"file": str(real / "main.go"), "operation": "replace",
                                    "selector_text": "// unsaved line", "new_content": "// agent line"})
    assert out["applied"] and out["written_to"] == "editor", out
    assert [c["textDocument"]["uri"] for c in editor.applied_edits[-1]["edit"]["documentChanges"]] == [uri]
    assert editor.buffers[uri][1] == unsaved.replace("// unsaved line", "// agent line")
    assert by_link.ok("file_read", {"path": "main.go"})["content"] == editor.buffers[uri][1]
    assert main.read_text() == disk

    # Diagnostics reach the editor under its spelling too.
    broken = editor.buffers[uri][1].replace("// agent line", "undefinedThing()")
    editor.edit_buffer(uri, broken)
    editor.wait_for(lambda: any("undefinedThing" in d["message"] for d in (editor.diagnostics(uri) or [])), 60,
                    "a diagnostic for the link URI")


def test_a_document_opened_again_is_reloaded_at_the_server(tmp_path, cleanup):
    need("gopls")
    root = tmp_path / "ws"
    shutil.copytree(FIXTURES / "go", root)
    editor = Editor(root, tmp_path / "lsp.log")
    cleanup.append(editor)
    main = root / "main.go"
    disk = main.read_text()
    uri = editor.open_buffer(main)
    editor.edit_buffer(uri, disk + "\n// more\n")
    editor.edit_buffer(uri, disk + "\n// more and more\n")
    # A reload: didOpen again for the open document, version back to 1, no didClose. The new
    # text calls a function defined only in it.
    reloaded = disk.replace("func main() {\n", "func main() {\n\tExtra()\n") + "\n// Extra is new.\nfunc Extra() {}\n"
    editor.open(main, "go", text=reloaded, version=1)
    editor.buffers[uri] = [1, reloaded]
    line = line_of(reloaded, "\tExtra()")
    answer = editor.wait_for(
        lambda: editor.request("textDocument/definition",
                               {"textDocument": {"uri": uri}, "position": {"line": line, "character": 2}}),
        60, "a definition of Extra from the reloaded text")
    location = answer[0] if isinstance(answer, list) else answer
    assert location["uri"] == uri and location["range"]["start"]["line"] == line_of(reloaded, "func Extra()")


def rename_and_edit(session: McpSession, greet_line: int) -> tuple[dict, dict]:
    edit = session.ok("edit_apply", {"file": "main.go", "operation": "insert_after",
                                     "selector_text": "func main() {", "new_content": "\t// agent\n"})
    rename = session.ok("rename_symbol", {"file": "greet/greet.go", "line": greet_line, "symbol": "Hello",
                                          "new_name": "Salute", "apply": True})
    return edit, rename


def test_edit_apply_and_rename_symbol_land_alike(tmp_path, cleanup):
    need("gopls")
    for save in (False, True):
        root = tmp_path / f"ws-{save}"
        shutil.copytree(FIXTURES / "go", root)
        if save:
            (root / "filepuff.toml").write_text("[lsp]\nsave_agent_edits = true\n")
        editor = Editor(root, tmp_path / f"lsp-{save}.log")
        cleanup.append(editor)
        main = root / "main.go"
        disk = main.read_text()
        uri = editor.open_buffer(main)
        editor.wait_for(lambda: socket_path(root).exists(), 10, "the agent socket")
        session = McpSession(root, tmp_path / f"mcp-{save}.log").start()
        cleanup.append(session)
        greet = root / "greet" / "greet.go"
        greet_disk = greet.read_text()
        greet_line = line_of(greet_disk, "func Hello(") + 1

        # Refused by the person: both say so the same way, and nothing changes anywhere.
        editor.refuse = "the person declined"
        edit, rename = rename_and_edit(session, greet_line)
        for out in (edit, rename):
            assert out["applied"] is False and out["editor_refused"] == "the person declined", out
        assert editor.buffers[uri] == [1, disk]
        assert main.read_text() == disk and greet.read_text() == greet_disk

        # Accepted: the open file lands in the editor (and on disk with save_agent_edits), the
        # others on disk.
        editor.refuse = None
        edit, rename = rename_and_edit(session, greet_line)
        expected = "editor+disk" if save else "editor"
        assert edit["applied"] and edit["written_to"] == expected, edit
        written = {f["file"]: f["written_to"] for f in rename["files"]}
        assert rename["applied"] and written == {"main.go": expected, "greet/greet.go": "disk"}, rename
        buffer = editor.buffers[uri][1]
        assert "\t// agent\n" in buffer and "Salute(" in buffer and "Hello(" not in buffer
        assert main.read_text() == (buffer if save else disk)
        assert "func Salute(" in greet.read_text()
        for thing in (session, editor):
            cleanup.remove(thing)
        session.close()
        editor.kill()


def test_an_edit_the_editor_says_it_applied_but_never_changed_is_not_reported_applied(tmp_path, cleanup):
    """Neovim answers `applied: true` to an edit made against an older version of its buffer and
    drops it: without the editor's didChange, the agent is told nothing is known to have
    changed, not "applied"."""
    need("gopls")
    root = tmp_path / "ws"
    shutil.copytree(FIXTURES / "go", root)
    editor = Editor(root, tmp_path / "lsp.log")
    cleanup.append(editor)
    main = root / "main.go"
    uri = editor.open_buffer(main)
    editor.handlers["workspace/applyEdit"] = lambda params: {"applied": True}
    editor.wait_for(lambda: socket_path(root).exists(), 10, "the agent socket")
    session = McpSession(root, tmp_path / "mcp.log").start()
    cleanup.append(session)
    out = session.ok("edit_apply", {"file": "main.go", "operation": "insert_after",
                                    "selector_text": "func main() {", "new_content": "\t// agent\n"})
    assert out["applied"] is False and "did not change" in out["editor_refused"], out
    assert session.ok("file_read", {"path": "main.go"})["content"] == editor.buffers[uri][1]


def test_python_through_a_symlinked_root_and_a_reload_with_basedpyright(tmp_path, cleanup):
    """The same with basedpyright: the editor's spelling through the link, an agent's read and
    definition by the real path, and a re-sent didOpen whose new text the server answers on."""
    need("basedpyright-langserver")
    real = tmp_path / "real"
    shutil.copytree(FIXTURES / "py", real)
    link = tmp_path / "link"
    os.symlink(real, link)
    editor = Editor(link, tmp_path / "lsp.log")
    cleanup.append(editor)
    checkout = link / "shop" / "checkout.py"
    disk = checkout.read_text()
    uri = editor.open(checkout, "python", text=disk)
    editor.buffers[uri] = [1, disk]
    unsaved = disk.replace("    cart = Cart()\n", "    cart = Cart()  # unsaved\n")
    editor.edit_buffer(uri, unsaved)
    editor.wait_for(lambda: socket_path(link).exists(), 10, "the agent socket")
    agent = McpSession(real.resolve(), tmp_path / "mcp.log").start()
    cleanup.append(agent)
    assert agent.ok("file_read", {"path": str(real.resolve() / "shop" / "checkout.py")})["content"] == unsaved
    line = line_of(unsaved, "cart = Cart()") + 1
    found = agent.ok("find_definition", {"file": "shop/checkout.py", "line": line, "symbol": "Cart"})
    assert [d["file"] for d in found["definitions"]] == ["shop/cart.py"], found

    at = {"line": line - 1, "character": unsaved.split("\n")[line - 1].index("Cart")}
    answer = editor.wait_for(
        lambda: editor.request("textDocument/definition", {"textDocument": {"uri": uri}, "position": at}), 60,
        "a definition")
    location = answer[0] if isinstance(answer, list) else answer
    assert location.get("uri", location.get("targetUri")) == (link / "shop" / "cart.py").as_uri(), location

    # A reload without didClose: the server answers on the new text.
    reloaded = unsaved + "\n\ndef extra() -> int:\n    return 1\n\n\nvalue = extra()\n"
    editor.open(checkout, "python", text=reloaded, version=1)
    editor.buffers[uri] = [1, reloaded]
    call = line_of(reloaded, "value = extra()")
    answer = editor.wait_for(
        lambda: editor.request("textDocument/definition",
                               {"textDocument": {"uri": uri}, "position": {"line": call, "character": 9}}),
        60, "a definition of extra from the reloaded text")
    location = answer[0] if isinstance(answer, list) else answer
    target = location.get("range", location.get("targetSelectionRange"))
    assert location.get("uri", location.get("targetUri")) == uri and target["start"]["line"] == line_of(reloaded, "def extra(")
