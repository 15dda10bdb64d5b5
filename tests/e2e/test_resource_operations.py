"""Issue 20 item 5: resource operations (`CreateFile`, `RenameFile`, `DeleteFile`) in a
`WorkspaceEdit.documentChanges`.

A stand-in server (fake_lsp.py) speaking UTF-16 sends a RenameFile followed by a text edit in
the renamed file — in its rename answer and in a server→client `workspace/applyEdit` — to a
UTF-8 editor (lsp_client.py): the edit's columns arrive in UTF-8, converted against the text
the renamed file has at that point (the old file's), although the new file does not exist on
disk yet."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from conftest import McpSession, filepuff_binary
from lsp_client import LspClient

FAKE = Path(__file__).with_name("fake_lsp.py")
LINE = 'var s = "😀é" + x'
OLD_GO = f"package main\n\n{LINE}\n"
X_UTF16 = len(LINE[: LINE.index("x")].encode("utf-16-le")) // 2
X_UTF8 = len(LINE[: LINE.index("x")].encode())


def edit_in_renamed_file(root: Path, character: int) -> dict:
    """RenameFile old.go → new.go, then `x` (at `character`) replaced in new.go, then a new
    file created and written."""
    new = (root / "new.go").as_uri()
    made = (root / "made.go").as_uri()
    at = {"line": 2, "character": character}
    return {"documentChanges": [
        {"kind": "rename", "oldUri": (root / "old.go").as_uri(), "newUri": new},
        {"textDocument": {"uri": new, "version": None},
         "edits": [{"range": {"start": at, "end": {"line": 2, "character": character + 1}}, "newText": "ü"}]},
        {"kind": "create", "uri": made},
        {"textDocument": {"uri": made, "version": None},
         "edits": [{"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
                    "newText": "package main // ü\n"}]},
    ]}


def fake_workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "old.go").write_text(OLD_GO)
    edit = edit_in_renamed_file(root, X_UTF16)
    caps = tmp_path / "caps.json"
    caps.write_text(json.dumps({"renameProvider": True, "executeCommandProvider": {"commands": ["fake.move"]}}))
    results = tmp_path / "results.json"
    results.write_text(json.dumps({"textDocument/rename": edit, "workspace/executeCommand": None,
                                   "$applyEdit": edit}))
    env = {"FAKE_LSP_LOG": str(tmp_path / "fake.log"), "FAKE_LSP_RESULTS": str(results),
           "FAKE_LSP_CAPS_FILE": str(caps)}
    env_toml = ", ".join(f"{k} = {json.dumps(v)}" for k, v in env.items())
    (root / "filepuff.toml").write_text(
        f"[servers.fake]\ncommand = [{json.dumps(sys.executable)}, {json.dumps(str(FAKE))}]\n"
        f'languages = ["go"]\nenv = {{ {env_toml} }}\n')
    return root


@pytest.fixture
def editor(tmp_path: Path):
    clients: list[LspClient] = []

    def start(root: Path) -> LspClient:
        log = open(tmp_path / "filepuff-lsp.log", "w")
        client = LspClient([str(filepuff_binary()), "lsp"], root, env={"FILEPUFF_LOG": "info"}, stderr=log)
        clients.append(client)
        client.handlers["workspace/applyEdit"] = lambda params: {"applied": True}
        result = client.initialize(root, capabilities={
            "general": {"positionEncodings": ["utf-8", "utf-16"]},
            "workspace": {"applyEdit": True, "workspaceEdit": {
                "documentChanges": True, "resourceOperations": ["create", "rename", "delete"]}},
        })
        assert result["capabilities"]["positionEncoding"] == "utf-8"
        return client

    yield start
    for client in clients:
        client.kill()


def test_rename_answer_translates_positions_in_the_renamed_file(tmp_path, editor):
    root = fake_workspace(tmp_path)
    client = editor(root)
    uri = client.open(root / "old.go", "go")
    answer = client.request("textDocument/rename", {
        "textDocument": {"uri": uri}, "position": {"line": 2, "character": X_UTF8}, "newName": "y"})
    assert answer == edit_in_renamed_file(root, X_UTF8)


def test_server_apply_edit_translates_positions_in_the_renamed_file(tmp_path, editor):
    root = fake_workspace(tmp_path)
    client = editor(root)
    client.open(root / "old.go", "go")
    client.request("workspace/executeCommand", {"command": "fake.move", "arguments": []})
    request = client.wait_for(
        lambda: next((r for r in client.server_requests if r["method"] == "workspace/applyEdit"), None), 30,
        "the server's workspace/applyEdit")
    assert request["params"]["edit"] == edit_in_renamed_file(root, X_UTF8)


# ---- rename_symbol applied to disk (the MCP face, standalone) -----------------------------------

def rename_args(apply: bool) -> dict:
    return {"file": "old.go", "line": 3, "symbol": "x", "new_name": "y", "apply": apply}


def test_rename_symbol_applies_resource_operations_in_order_on_disk(tmp_path):
    root = fake_workspace(tmp_path)
    session = McpSession(root, tmp_path / "mcp-stderr.log", "core,lsp").start()
    try:
        preview = session.ok("rename_symbol", rename_args(False))
        assert preview["operations"] == ["rename old.go -> new.go", "create made.go"]
        assert preview["applied"] is False
        assert (root / "old.go").read_text() == OLD_GO and not (root / "new.go").exists()
        out = session.ok("rename_symbol", rename_args(True))
        assert out["applied"] is True
        assert {f["file"]: f["written_to"] for f in out["files"]} == {
            "made.go": "disk", "new.go": "disk", "old.go": "disk"}
        assert not (root / "old.go").exists()
        # The edit's UTF-16 column, converted against old.go's text now under new.go.
        assert (root / "new.go").read_text() == OLD_GO.replace("+ x", "+ ü")
        assert (root / "made.go").read_text() == "package main // ü\n"
    finally:
        session.close()


def test_rename_symbol_refuses_what_cannot_be_done_and_changes_nothing(tmp_path):
    root = fake_workspace(tmp_path)
    (root / "made.go").write_text("package main // mine\n")
    session = McpSession(root, tmp_path / "mcp-stderr.log", "core,lsp").start()
    try:
        error, text = session.error("rename_symbol", rename_args(True))
        assert error["context"]["operation"] == "create made.go", error
        assert "exists" in error["message"], error
        assert (root / "old.go").read_text() == OLD_GO
        assert not (root / "new.go").exists()
        assert (root / "made.go").read_text() == "package main // mine\n"
    finally:
        session.close()
