#!/usr/bin/env python3
"""find_definition / find_references through `filepuff mcp` vs the same language server spoken to
directly, same queries, same run. Run with `bench/run lsp` (or directly after
scripts/install-language-servers and a release build).

The direct harness is a minimal LSP client over stdio (Content-Length framing): initialize,
didOpen, wait until the server has published diagnostics for the file, then time warm requests.
filepuff is driven with newline-delimited JSON-RPC (no SDK cost). Printed: p50 and p90 of each,
and the added latency p50 (filepuff minus direct) — the figure the target (≤ 0.5 ms) is about.
"""

import json
import re
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BIN = os.environ.get("FILEPUFF_BIN", str(REPO / "target/release/filepuff"))
TOOLS = REPO / ".tools" / "bin"
RUNS = int(os.environ.get("BENCH_RUNS", "200"))


class Lsp:
    def __init__(self, command, root):
        self.proc = subprocess.Popen(command, cwd=root, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        self.next_id = 0
        self.notifications = []

    def send(self, message):
        body = json.dumps(message).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def read(self):
        length = None
        while True:
            line = self.proc.stdout.readline().strip()
            if not line:
                break
            name, _, value = line.partition(b":")
            if name.lower() == b"content-length":
                length = int(value)
        return json.loads(self.proc.stdout.read(length))

    def request(self, method, params):
        self.next_id += 1
        my_id = self.next_id
        self.send({"jsonrpc": "2.0", "id": my_id, "method": method, "params": params})
        while True:
            message = self.read()
            if message.get("id") == my_id and "method" not in message:
                return message
            if "method" in message and "id" in message:  # a server->client request: answer null
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
            else:
                self.notifications.append(message)

    def notify(self, method, params):
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def wait_for(self, predicate, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(predicate(n) for n in self.notifications):
                return True
            message = self.read()
            if "method" in message and "id" in message:
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
            else:
                self.notifications.append(message)
        return False


class RawMcp:
    def __init__(self, root, command=None, env=None):
        env = {**os.environ, "PATH": f"{TOOLS}{os.pathsep}{os.environ.get('PATH', '')}", **(env or {})}
        command = command or [BIN, "--root", str(root), "mcp"]
        self.proc = subprocess.Popen(command, cwd=root, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env)
        self.next_id = 0
        init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}
        self.request("initialize", init)
        self.proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        self.proc.stdin.flush()

    def request(self, method, params):
        self.next_id += 1
        self.proc.stdin.write((json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method,
                                           "params": params}) + "\n").encode())
        self.proc.stdin.flush()
        while True:
            message = json.loads(self.proc.stdout.readline())
            if message.get("id") == self.next_id:
                return message

    def call(self, tool, arguments):
        reply = self.request("tools/call", {"name": tool, "arguments": arguments})
        assert not reply["result"].get("isError"), reply
        return reply["result"]["structuredContent"]


def pct(samples, q):
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))] * 1000


def main():
    if not Path(BIN).exists():
        sys.exit("build the release binary first (bench/run does)")
    gopls = shutil.which("gopls", path=f"{TOOLS}{os.pathsep}{os.environ.get('PATH', '')}")
    if not gopls:
        sys.exit("gopls is not installed: scripts/install-language-servers")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "go"
        shutil.copytree(REPO / "tests" / "fixtures" / "lsp" / "go", root)
        main_go = root / "main.go"
        text = main_go.read_text()
        line = next(i for i, l in enumerate(text.splitlines()) if "world" in l)
        col = text.splitlines()[line].index("Hello")
        greet = root / "greet" / "greet.go"
        gline = next(i for i, l in enumerate(greet.read_text().splitlines()) if "func Hello(" in l)

        # Direct: gopls over stdio.
        lsp = Lsp([gopls], root)
        lsp.request("initialize", {"processId": os.getpid(), "rootUri": root.as_uri(), "capabilities": {},
                                   "workspaceFolders": [{"uri": root.as_uri(), "name": "go"}]})
        lsp.notify("initialized", {})
        for path in (main_go, greet):
            lsp.notify("textDocument/didOpen", {"textDocument": {"uri": path.as_uri(), "languageId": "go", "version": 1,
                                                                 "text": path.read_text()}})
        lsp.wait_for(lambda n: n.get("method") == "textDocument/publishDiagnostics")
        def_params = {"textDocument": {"uri": main_go.as_uri()}, "position": {"line": line, "character": col}}
        ref_params = {"textDocument": {"uri": greet.as_uri()}, "position": {"line": gline, "character": 5},
                      "context": {"includeDeclaration": True}}
        direct = {"definition": [], "references": []}
        for _ in range(20):
            lsp.request("textDocument/definition", def_params)
            lsp.request("textDocument/references", ref_params)
        for _ in range(RUNS):
            start = time.perf_counter()
            lsp.request("textDocument/definition", def_params)
            direct["definition"].append(time.perf_counter() - start)
            start = time.perf_counter()
            answer = lsp.request("textDocument/references", ref_params)
            direct["references"].append(time.perf_counter() - start)
        direct_refs = len(answer["result"])
        lsp.request("shutdown", None)
        lsp.notify("exit", None)
        lsp.proc.wait(timeout=10)

        # filepuff mcp with its own gopls.
        mcp = RawMcp(root)
        def_args = {"file": "main.go", "line": line + 1, "column": col + 1}
        ref_args = {"file": "greet/greet.go", "line": gline + 1, "column": 6}
        ours = {"definition": [], "references": []}
        for _ in range(20):
            mcp.call("find_definition", def_args)
            mcp.call("find_references", ref_args)
        for _ in range(RUNS):
            start = time.perf_counter()
            mcp.call("find_definition", def_args)
            ours["definition"].append(time.perf_counter() - start)
            start = time.perf_counter()
            out = mcp.call("find_references", ref_args)
            ours["references"].append(time.perf_counter() - start)
        our_refs = out["total_references"]
        completeness = out["completeness"]
        mcp.proc.stdin.close()
        mcp.proc.wait(timeout=20)

        peer = bench_cclsp(root, gline)

    print("## find_definition / find_references: filepuff mcp vs gopls directly (warm, %d runs each)" % RUNS)
    print("| request | direct p50 ms | direct p90 ms | filepuff p50 ms | filepuff p90 ms | added p50 ms |")
    print("|---|---|---|---|---|---|")
    for name in ("definition", "references"):
        d50, d90 = pct(direct[name], 0.5), pct(direct[name], 0.9)
        f50, f90 = pct(ours[name], 0.5), pct(ours[name], 0.9)
        print("| %s | %.2f | %.2f | %.2f | %.2f | %.2f |" % (name, d50, d90, f50, f90, f50 - d50))
    print()
    print("references found: direct %d, filepuff %d (completeness: %s)" % (direct_refs, our_refs, completeness))
    if peer:
        print()
        print("## peer: cclsp %s (npm) on the same gopls and query, through MCP (warm, %d runs)" % (peer["version"], PEER_RUNS))
        print("| tool | p50 ms | p90 ms | references found |")
        print("|---|---|---|---|")
        print("| cclsp find_references | %.2f | %.2f | %s |" % (pct(peer["references"], 0.5), pct(peer["references"], 0.9),
                                                           peer["found"]))
        print("| filepuff find_references | %.2f | %.2f | %d |" % (pct(ours["references"], 0.5),
                                                              pct(ours["references"], 0.9), our_refs))


PEER_RUNS = 30
CCLSP = REPO / ".tools" / "bench" / "node_modules" / ".bin" / "cclsp"


def bench_cclsp(root, gline):
    """cclsp (npm, installed by bench/run into .tools/bench) with gopls: find_references by name."""
    if not CCLSP.exists():
        print("(cclsp not installed: bench/run installs it into .tools/bench; skipped)", file=sys.stderr)
        return None
    gopls = shutil.which("gopls", path=f"{TOOLS}{os.pathsep}{os.environ.get('PATH', '')}")
    config = root / "cclsp.json"
    config.write_text(json.dumps({"servers": [{"extensions": ["go"], "command": [gopls], "rootDir": str(root)}]}))
    mcp = RawMcp(root, command=[str(CCLSP)], env={"CCLSP_CONFIG_PATH": str(config)})
    args = {"file_path": str(root / "greet" / "greet.go"), "symbol_name": "Hello", "include_declaration": True}
    samples, text = [], ""
    for i in range(PEER_RUNS + 5):
        start = time.perf_counter()
        reply = mcp.request("tools/call", {"name": "find_references", "arguments": args})
        if i >= 5:
            samples.append(time.perf_counter() - start)
        text = "".join(block.get("text", "") for block in reply.get("result", {}).get("content", []))
    mcp.proc.stdin.close()
    try:
        mcp.proc.wait(timeout=5)
    except subprocess.TimeoutExpired:  # cclsp keeps running after stdin closes
        mcp.proc.kill()
    print("cclsp answer:", text[:400], file=sys.stderr)
    found = sum(1 for line in text.splitlines() if re.fullmatch(r"\S+\.go:\d+:\d+", line.strip()))
    version = json.loads((CCLSP.parent.parent / "cclsp" / "package.json").read_text())["version"]
    return {"references": samples, "found": found, "version": version}


if __name__ == "__main__":
    main()
