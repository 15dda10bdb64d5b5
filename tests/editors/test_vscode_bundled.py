"""The platform-specific .vsix (scripts/package-vsix: the extension with the binary under test as
its bin/filepuff) inside code-server, with no `filepuff.path` set anywhere and no filepuff on
PATH: the extension must run the binary it carries, reach "gopls ready" in the status bar, and
name that binary in the status bar's tooltip (editors/vscode/src/binary.ts).

The .vsix is built from FILEPUFF_BIN by the fixture, or taken from FILEPUFF_VSIX_PLATFORM.
Screenshots: target/editor-tests/vscode-bundled/. One code-server start, about a minute.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from test_vscode import ARTIFACTS, REPO, WAIT, filepuff_binary, require_editor_tools, wait_until, workbench


@pytest.fixture(scope="module")
def bundled(tmp_path_factory):
    require_editor_tools(None)
    tmp = tmp_path_factory.mktemp("vscode-bundled")
    vsix = os.environ.get("FILEPUFF_VSIX_PLATFORM")
    if not vsix:
        packed = subprocess.run([str(REPO / "scripts" / "package-vsix"), "--binary", str(filepuff_binary()),
                                 "--out-dir", str(tmp / "packages")], capture_output=True, text=True, timeout=600)
        assert packed.returncode == 0, packed.stderr
        vsix = packed.stdout.strip()
    assert Path(vsix).name.startswith("filepuff-linux-"), vsix
    with workbench(tmp, Path(vsix), ARTIFACTS.parent / "vscode-bundled", filepuff_on_path=False) as bench:
        yield bench


def test_the_platform_vsix_runs_the_binary_it_carries(bundled):
    # No filepuff.path anywhere, and no filepuff on the PATH it would search.
    for settings in (bundled.root.parent / "user-data").glob("*/settings.json"):
        assert "filepuff.path" not in settings.read_text(), settings
    carried = next(bundled.extensions.glob("filepuff.filepuff-*/bin/filepuff"))
    assert os.access(carried, os.X_OK) and carried.stat().st_size == filepuff_binary().stat().st_size
    assert all(not (Path(d) / "filepuff").exists() for d in bundled.env["PATH"].split(os.pathsep) if d)

    bundled.open_file("main.go")

    def ready():
        item = next((i for i in bundled.status_items() if "filepuff" in i["text"]), None)
        return item if item and item["text"] == "filepuff: gopls" and "codicon-check" in item["html"] else None

    item = wait_until(ready, WAIT, "the status bar to say `filepuff: gopls` with the ready icon")
    bundled.shot("01-status-ready")
    # The tooltip, as a person sees it: hover the item. The status bar may still be settling (an
    # item appearing beside ours moves it), so the mouse can rest on a neighbour — "No Problems" —
    # instead: a person would move away and back onto the item, and so does the test, every 5 s.
    def tooltip():
        bundled.page.mouse.move(5, 5)
        bundled.page.hover(f"[id='{item['id']}']")
        try:
            return wait_until(lambda: bundled.page.evaluate("""() => {
                const hover = document.querySelector('.workbench-hover, .monaco-hover:not(.hidden)');
                return hover && hover.innerText.includes('binary:') ? hover.innerText : null;
            }""") or None, 5, "the status bar item's tooltip")
        except Exception:  # nothing, or a neighbour's tooltip, shown yet
            return None

    tooltip = wait_until(tooltip, 60, "the status bar item's tooltip naming the binary", interval=0.5)
    bundled.shot("02-status-tooltip")
    assert f"binary: {carried} (bundled with the extension)" in tooltip, tooltip
    assert "gopls: ready" in tooltip, tooltip
