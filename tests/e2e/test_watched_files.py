"""Issue 20 item 2: servers' `workspace/didChangeWatchedFiles` registrations are honoured.

A configuration file changed on disk (go.mod, pyrightconfig.json) reaches the servers that
registered a watcher for it, so their diagnostics follow — in the editor face (`filepuff lsp`)
and for agents (`filepuff mcp`'s `diagnostics`). Real gopls and basedpyright; each test works on
a private workspace written here."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from conftest import McpSession, filepuff_binary
from lsp_client import LspClient

GO_MAIN = 'package main\n\nimport "fmt"\n\nfunc main() {\n\tfor i := range 10 {\n\t\tfmt.Println(i)\n\t}\n}\n'
PY_MAIN = "def f() -> int:\n    return 'not an int'\n"
REQUIRES = "requires go1.22"


def need(*programs: str) -> None:
    missing = [p for p in programs if shutil.which(p) is None]
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)} (scripts/install-language-servers)")


def go_workspace(root: Path) -> Path:
    root.mkdir()
    (root / "go.mod").write_text("module example.com/w\n\ngo 1.21\n")
    (root / "main.go").write_text(GO_MAIN)
    return root


def py_workspace(root: Path) -> Path:
    root.mkdir()
    (root / "pyrightconfig.json").write_text('{ "typeCheckingMode": "standard" }\n')
    (root / "main.py").write_text(PY_MAIN)
    return root


@pytest.fixture
def editor(tmp_path: Path):
    clients: list[LspClient] = []

    def start(root: Path) -> LspClient:
        log = open(tmp_path / f"filepuff-lsp-{len(clients)}.log", "w")
        client = LspClient([str(filepuff_binary()), "lsp"], root, env={"FILEPUFF_LOG": "debug"}, stderr=log)
        clients.append(client)
        client.initialize(root, ["utf-8"])
        return client

    yield start
    for client in clients:
        client.kill()


def messages(diagnostics: list[dict] | None) -> list[str]:
    return [d["message"] for d in diagnostics or []]


def test_go_mod_raised_to_go_1_22_clears_requires_go1_22_in_the_editor(tmp_path, editor):
    need("gopls", "go")
    root = go_workspace(tmp_path / "ws")
    client = editor(root)
    uri = client.open(root / "main.go", "go")
    client.wait_for(lambda: any(REQUIRES in m for m in messages(client.diagnostics(uri))), 90,
                    f"gopls reporting {REQUIRES!r} under go 1.21")
    (root / "go.mod").write_text("module example.com/w\n\ngo 1.22\n")
    started = time.monotonic()
    client.wait_for(lambda: client.diagnostics(uri) is not None
                    and not any(REQUIRES in m for m in messages(client.diagnostics(uri))), 30,
                    f"{REQUIRES!r} cleared after go.mod says go 1.22")
    print(f"cleared {time.monotonic() - started:.2f} s after go.mod was written")


def test_go_mod_raised_to_go_1_22_clears_requires_go1_22_for_agents(tmp_path):
    need("gopls", "go")
    root = go_workspace(tmp_path / "ws")
    session = McpSession(root, tmp_path / "mcp-stderr.log", "core,lsp").start()
    try:
        def listed() -> list[str]:
            return [d["message"] for d in session.ok("diagnostics", {"file": "main.go"})["diagnostics"]]

        deadline = time.monotonic() + 90
        while not any(REQUIRES in m for m in listed()):
            assert time.monotonic() < deadline, f"no {REQUIRES!r} from gopls under go 1.21"
            time.sleep(0.5)
        (root / "go.mod").write_text("module example.com/w\n\ngo 1.22\n")
        deadline = time.monotonic() + 30
        while True:
            found = listed()
            if not any(REQUIRES in m for m in found):
                break
            assert time.monotonic() < deadline, f"{REQUIRES!r} still reported after go.mod says go 1.22: {found}"
            time.sleep(0.5)
    finally:
        session.close()


def test_pyrightconfig_type_checking_off_clears_type_errors(tmp_path, editor):
    need("basedpyright-langserver")
    root = py_workspace(tmp_path / "ws")
    client = editor(root)
    uri = client.open(root / "main.py", "python")
    client.wait_for(lambda: any("not an int" in m or "str" in m for m in messages(client.diagnostics(uri))), 90,
                    "basedpyright reporting the return type error")
    (root / "pyrightconfig.json").write_text('{ "typeCheckingMode": "off" }\n')
    client.wait_for(lambda: client.diagnostics(uri) == [], 30,
                    "no diagnostics after pyrightconfig.json says typeCheckingMode off")


def test_files_nobody_registered_for_are_not_sent(tmp_path, editor):
    """gopls registers for Go files and go.mod/go.sum/go.work: a README change reaches nobody,
    while go.mod's does (the log names what was registered and sent)."""
    need("gopls", "go")
    root = go_workspace(tmp_path / "ws")
    client = editor(root)
    uri = client.open(root / "main.go", "go")
    client.wait_for(lambda: any(REQUIRES in m for m in messages(client.diagnostics(uri))), 90, "gopls ready")
    log = tmp_path / "filepuff-lsp-0.log"
    assert "watched files registered" in log.read_text(), "gopls registered no watcher"
    (root / "README.md").write_text("hello\n")
    (root / "go.mod").write_text("module example.com/w\n\ngo 1.22\n")
    client.wait_for(lambda: "go.mod" in sent_changes(log), 30, "go.mod sent to gopls")
    assert "README.md" not in sent_changes(log)


def sent_changes(log: Path) -> str:
    return "\n".join(line for line in log.read_text().splitlines() if "didChangeWatchedFiles sent" in line)
