#!/usr/bin/env python3
"""Two filepuff builds side by side on one language-server call, interleaved call by call, so
both pay the same machine at the same moment: the before/after check for a change to the ask
path, where the machine's own drift (wake-up cost, load) is larger than the change.

    bench/ab.py BEFORE_BIN AFTER_BIN [--tool find_references] [--calls 400] [--server gopls]

Each build runs its own `filepuff mcp` (and so its own language server) on its own copy of the
corpus: gopls on golang.org/x/tools (`find_references` of `packages.Load`: 148 locations in 45
files), or basedpyright on CPython's `json` package. Both are first asked until the answer is
`complete`, then warmed with 30 calls. Printed per build: p50 and p90 of the whole call (write
to answer line, newline-delimited JSON-RPC, no SDK), filepuff's CPU per call (mean, from /proc:
all its threads, the language server not counted), its context switches per call by thread
name, and the answer line's size in bytes; then whether the two builds' last answers carry the
same `structuredContent` (exit status 1 when not).
"""

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import lsp  # noqa: E402
from corpora import GO_ENV, go_mod_download, gopls_tools_module, writable_copy  # noqa: E402

CASES = {
    "gopls": {
        "find_definition": ("go/types/objectpath/main.go", "packages.Load(", "Load"),
        "find_references": ("go/packages/packages.go", "func Load(", "Load"),
        "hover": ("go/types/objectpath/main.go", "packages.Load(", "Load"),
        "symbol_at": ("go/types/objectpath/main.go", "packages.Load(", "Load"),
    },
    "basedpyright": {
        "find_definition": ("json/__init__.py", "_default_decoder = JSONDecoder(", "JSONDecoder"),
        "find_references": ("json/decoder.py", "class JSONDecodeError(", "JSONDecodeError"),
        "hover": ("json/__init__.py", "_default_decoder = JSONDecoder(", "JSONDecoder"),
        "symbol_at": ("json/__init__.py", "_default_decoder = JSONDecoder(", "JSONDecoder"),
    },
}


def switches(pid):
    """Context switches (voluntary and not) so far, summed per thread name."""
    total = {}
    for status in Path(f"/proc/{pid}/task").glob("*/status"):
        try:
            fields = dict(line.split(":\t", 1) for line in status.read_text().splitlines() if ":\t" in line)
        except OSError:
            continue
        name = fields["Name"].strip()
        count = int(fields["voluntary_ctxt_switches"]) + int(fields["nonvoluntary_ctxt_switches"])
        total[name] = total.get(name, 0) + count
    return total


def corpus(server, tmp):
    if server == "gopls":
        root = writable_copy(gopls_tools_module(), tmp / "xtools")
        go_mod_download(root)
        return root, GO_ENV
    root = tmp / "pyjson"
    shutil.copytree(Path(json.__file__).parent, root / "json", ignore=shutil.ignore_patterns("__pycache__"))
    return root, None


def start(binary, root, env, tool, args):
    mcp = lsp.RawMcp(root, command=[binary, "--root", str(root), "mcp"], env=env)
    deadline = time.time() + 300
    while True:
        reply = mcp.request("tools/call", {"name": tool, "arguments": args})["result"]
        if not reply.get("isError") and reply["structuredContent"].get("completeness") == "complete":
            break
        if time.time() > deadline:
            sys.exit(f"{binary}: no complete answer in 300 s: {reply}")
        time.sleep(0.5)
    for _ in range(30):
        mcp.call(tool, args)
    return mcp


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--tool", default="find_references", choices=sorted(CASES["gopls"]))
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--server", default="gopls", choices=sorted(CASES))
    options = parser.parse_args()
    os.environ["PATH"] = f"{lsp.TOOLS}:{os.environ['PATH']}"
    binaries = [options.before, options.after]
    with tempfile.TemporaryDirectory() as tmp:
        sessions = []
        for index, binary in enumerate(binaries):
            root, env = corpus(options.server, Path(tmp) / str(index))
            file, needle, token = CASES[options.server][options.tool]
            _, _, line, column = lsp.locate(root, file, needle, token)
            args = {"file": file, "line": line, "column": column}
            sessions.append((start(binary, root, env, options.tool, args), args))
        times = [[] for _ in binaries]
        sizes = [0 for _ in binaries]
        last = [None for _ in binaries]
        cpu_before = [lsp.process_cpu(m.proc.pid) for m, _ in sessions]
        switches_before = [switches(m.proc.pid) for m, _ in sessions]
        for _ in range(options.calls):
            for index, (mcp, args) in enumerate(sessions):
                mcp.next_id += 1
                request = {"jsonrpc": "2.0", "id": mcp.next_id, "method": "tools/call",
                           "params": {"name": options.tool, "arguments": args}}
                mcp.proc.stdin.write((json.dumps(request) + "\n").encode())
                mcp.proc.stdin.flush()
                started = time.perf_counter()
                answer = mcp.proc.stdout.readline()
                times[index].append(time.perf_counter() - started)
                sizes[index] = len(answer)
                last[index] = answer
        cpu_after = [lsp.process_cpu(m.proc.pid) for m, _ in sessions]
        switches_after = [switches(m.proc.pid) for m, _ in sessions]
        print(f"{options.tool} on {options.server}, {options.calls} calls each, load {os.getloadavg()[0]:.2f}")
        for index, binary in enumerate(binaries):
            ordered = sorted(times[index])
            cpu = (cpu_after[index] - cpu_before[index]) / options.calls
            per_thread = {name: round((count - switches_before[index].get(name, 0)) / options.calls, 2)
                          for name, count in switches_after[index].items()}
            print(f"{binary}: p50 {statistics.median(ordered) * 1e3:.3f} ms, "
                  f"p90 {ordered[int(len(ordered) * 0.9)] * 1e3:.3f} ms, CPU/call {cpu * 1e3:.3f} ms, "
                  f"answer {sizes[index]} bytes, switches/call {per_thread}")
        structured = [json.loads(answer)["result"].get("structuredContent") for answer in last]
        same = structured[0] == structured[1]
        print(f"same structuredContent: {'yes' if same else 'NO'}")
        if not same:
            for key in sorted(set(structured[0] or {}) | set(structured[1] or {})):
                values = [(content or {}).get(key) for content in structured]
                if values[0] != values[1]:
                    print(f"  {key}: {json.dumps(values[0])[:300]}\n  {' ' * len(key)}  {json.dumps(values[1])[:300]}")
        for mcp, _ in sessions:
            mcp.proc.stdin.close()
            mcp.proc.wait(timeout=20)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
