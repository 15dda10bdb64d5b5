"""Added latency of `edit_apply` with diagnostics (issue 17 item 2) on a warm server.

A fresh project per language (gopls: a Go module; basedpyright: a Python file); one edit warms
the server; then N edits alternate between two bodies of one function, each run with
`diagnostics: false` and with the default (diagnostics on), interleaved, over MCP with the
official Python SDK. Prints the median and p90 wall time of each and the difference.

Usage: PATH=.tools/bin:$PATH FILEPUFF_BIN=target/release/filepuff python bench/edit_diagnostics.py [N]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "e2e"))
from conftest import McpSession, _close_session  # noqa: E402

CASES = {
    "gopls": ("greet.go", {"go.mod": "module example.com/b\n\ngo 1.21\n",
                           "greet.go": 'package greet\n\nfunc Hello(name string) string {\n\treturn "hello, " + name\n}\n'},
              'return "hello, " + name', 'return "hi, " + name'),
    "basedpyright": ("prices.py", {"prices.py": "def total(prices: list[int]) -> int:\n    return sum(prices)\n"},
                     "return sum(prices)", "return sum(prices) + 0"),
}


def measure(server: str, n: int) -> None:
    file, files, a, b = CASES[server]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "project"
        root.mkdir()
        for name, text in files.items():
            (root / name).write_text(text)
        session = McpSession(root, Path(tmp) / "stderr.log").start()
        try:
            texts = [a, b]
            state = 0

            def edit(diagnostics: bool | None) -> float:
                nonlocal state
                args = {"file": file, "operation": "replace", "selector_text": texts[state],
                        "new_content": texts[1 - state]}
                if diagnostics is not None:
                    args["diagnostics"] = diagnostics
                started = time.perf_counter()
                out = session.ok("edit_apply", args)
                elapsed = time.perf_counter() - started
                state = 1 - state
                if diagnostics is None:
                    assert out["diagnostics"]["status"] == "complete", out["diagnostics"]
                return elapsed * 1000

            cold = edit(None)
            off, on = [], []
            for _ in range(n):
                off.append(edit(False))
                on.append(edit(None))

            def p90(xs):
                return sorted(xs)[int(len(xs) * 0.9) - 1]

            print(f"{server}: first edit (server started) {cold:.0f} ms; warm, n={n}: "
                  f"off median {statistics.median(off):.0f} ms (p90 {p90(off):.0f}), "
                  f"on median {statistics.median(on):.0f} ms (p90 {p90(on):.0f}), "
                  f"added {statistics.median(on) - statistics.median(off):.0f} ms")
        finally:
            _close_session(session)


if __name__ == "__main__":
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    for name in CASES:
        measure(name, count)
