"""Issue 20 item 3: completion passes the protocol through (LSP 3.17 `CompletionList.itemDefaults`).

Stand-in servers (fake_lsp.py, speaking UTF-16) answer completion with scripted lists in front
of a UTF-8 editor (lsp_client.py): `itemDefaults` stay for an editor that declared them, are
applied to each server's own items when two servers' lists are merged, `isIncomplete` survives
the merge, and `completionItem/resolve` reaches the server that made the item with exactly the
`data` it would have had without the proxy (the item's own, the default's, or none)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from conftest import filepuff_binary
from lsp_client import LspClient

FAKE = Path(__file__).with_name("fake_lsp.py")
LINE = 'func f() { _ = "é" + ab }'
MAIN_GO = f"package main\n\n{LINE}\n"
# "ab" on line 2: its UTF-16 and UTF-8 columns differ by one ("é" is 1 unit and 2 bytes).
AB_UTF16 = LINE.index("ab")
AB_UTF8 = len(LINE[: LINE.index("ab")].encode())
DEFAULTS_DATA = {"d": 1, "nested": [1, "x"]}


def utf16_range() -> dict:
    return {"start": {"line": 2, "character": AB_UTF16}, "end": {"line": 2, "character": AB_UTF16 + 2}}


def utf8_range() -> dict:
    return {"start": {"line": 2, "character": AB_UTF8}, "end": {"line": 2, "character": AB_UTF8 + 2}}


LIST_A = {"isIncomplete": False,
          "itemDefaults": {"editRange": utf16_range(), "data": DEFAULTS_DATA, "insertTextFormat": 2},
          "items": [{"label": "ab1"}, {"label": "ab2", "data": {"own": 2}}, {"label": "ab3", "textEditText": "ab3()"}]}
LIST_B = {"isIncomplete": True, "items": [{"label": "from_b"}]}


def editor_capabilities(item_defaults: list[str]) -> dict:
    return {
        "general": {"positionEncodings": ["utf-8", "utf-16"]},
        "textDocument": {"completion": {"completionItem": {"snippetSupport": True},
                                        "completionList": {"itemDefaults": item_defaults}}},
    }


def fake_workspace(tmp_path: Path, lists: dict[str, object]) -> tuple[Path, dict[str, Path]]:
    """main.go served by one stand-in server per entry of `lists` (its completion answer), in
    that order; returns the root and each server's message log."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "main.go").write_text(MAIN_GO)
    caps = tmp_path / "caps.json"
    caps.write_text(json.dumps({"completionProvider": {"resolveProvider": True}}))
    config = f'[languages.go]\nservers = {json.dumps(list(lists))}\n'
    logs = {}
    for name, answer in lists.items():
        results = tmp_path / f"{name}-results.json"
        results.write_text(json.dumps({"textDocument/completion": answer, "completionItem/resolve": "$echo"}))
        logs[name] = tmp_path / f"{name}.log"
        env = {"FAKE_LSP_LOG": str(logs[name]), "FAKE_LSP_RESULTS": str(results), "FAKE_LSP_CAPS_FILE": str(caps)}
        env_toml = ", ".join(f"{k} = {json.dumps(v)}" for k, v in env.items())
        config += (f"[servers.{name}]\ncommand = [{json.dumps(sys.executable)}, {json.dumps(str(FAKE))}]\n"
                   f'languages = ["go"]\nenv = {{ {env_toml} }}\n')
    (root / "filepuff.toml").write_text(config)
    return root, logs


@pytest.fixture
def editor(tmp_path: Path):
    clients: list[LspClient] = []

    def start(root: Path, item_defaults: list[str]) -> LspClient:
        log = open(tmp_path / "filepuff-lsp.log", "w")
        client = LspClient([str(filepuff_binary()), "lsp"], root, env={"FILEPUFF_LOG": "info"}, stderr=log)
        clients.append(client)
        result = client.initialize(root, capabilities=editor_capabilities(item_defaults))
        assert result["capabilities"]["positionEncoding"] == "utf-8"
        return client

    yield start
    for client in clients:
        client.kill()


def complete(client: LspClient, root: Path) -> dict:
    uri = client.open(root / "main.go", "go")
    return client.request("textDocument/completion", {
        "textDocument": {"uri": uri}, "position": {"line": 2, "character": AB_UTF8 + 2}})


def resolved_at(log: Path) -> list[dict]:
    """The items the server received in `completionItem/resolve`, in order."""
    messages = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    return [m["params"] for m in messages if m.get("method") == "completionItem/resolve"]


def with_defaults(item: dict, defaults: dict) -> dict:
    """What an LSP 3.17 editor resolves: the item with the list's `data` default applied."""
    return item if "data" in item or "data" not in defaults else {**item, "data": defaults["data"]}


def test_one_servers_item_defaults_pass_and_resolve_gets_the_default_data(tmp_path, editor):
    root, logs = fake_workspace(tmp_path, {"fakea": LIST_A})
    client = editor(root, ["editRange", "data"])
    answer = complete(client, root)
    defaults = answer["itemDefaults"]
    # Kept as the editor declared them, translated to its encoding; insertTextFormat (not
    # declared) is applied to the items instead.
    assert set(defaults) == {"editRange", "data"}
    assert defaults["editRange"] == utf8_range()
    assert all(item["insertTextFormat"] == 2 for item in answer["items"])
    by_label = {item["label"]: item for item in answer["items"]}
    assert "data" not in by_label["ab1"], "an item relying on itemDefaults.data must not get data of its own"
    for label in ("ab1", "ab2"):
        client.request("completionItem/resolve", with_defaults(by_label[label], defaults))
    received = resolved_at(logs["fakea"])
    assert [r["label"] for r in received] == ["ab1", "ab2"]
    assert received[0]["data"] == DEFAULTS_DATA
    assert received[1]["data"] == {"own": 2}


def test_two_servers_lists_merge_with_each_servers_defaults_applied(tmp_path, editor):
    root, logs = fake_workspace(tmp_path, {"fakea": LIST_A, "fakeb": LIST_B})
    client = editor(root, ["editRange", "data", "insertTextFormat"])
    answer = complete(client, root)
    assert answer["isIncomplete"] is True
    assert "itemDefaults" not in answer
    by_label = {item["label"]: item for item in answer["items"]}
    assert set(by_label) == {"ab1", "ab2", "ab3", "from_b"}
    assert by_label["ab1"]["textEdit"] == {"range": utf8_range(), "newText": "ab1"}
    assert by_label["ab3"]["textEdit"] == {"range": utf8_range(), "newText": "ab3()"}
    assert by_label["ab1"]["insertTextFormat"] == 2
    assert "textEdit" not in by_label["from_b"] and "insertTextFormat" not in by_label["from_b"]
    for label in ("ab1", "ab2", "from_b"):
        client.request("completionItem/resolve", by_label[label])
    received_a, received_b = resolved_at(logs["fakea"]), resolved_at(logs["fakeb"])
    assert [(r["label"], r["data"]) for r in received_a] == [("ab1", DEFAULTS_DATA), ("ab2", {"own": 2})]
    assert [r["label"] for r in received_b] == ["from_b"]
    assert "data" not in received_b[0], "an item without data reaches its server without data"


def test_only_one_server_answering_keeps_its_list_whole(tmp_path, editor):
    root, _ = fake_workspace(tmp_path, {"fakea": LIST_A, "fakeb": None})
    client = editor(root, ["editRange", "data", "insertTextFormat"])
    answer = complete(client, root)
    assert answer["isIncomplete"] is False
    assert answer["itemDefaults"]["editRange"] == utf8_range()
    assert answer["itemDefaults"]["insertTextFormat"] == 2
    assert [item["label"] for item in answer["items"]] == ["ab1", "ab2", "ab3"]
