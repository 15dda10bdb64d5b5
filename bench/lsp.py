#!/usr/bin/env python3
"""find_definition / find_references / hover through `filepuff mcp` vs the same language server
spoken to directly, same queries, same run, interleaved: gopls on golang.org/x/tools (a real
module, 300+ packages), basedpyright on CPython's `json` package, clangd on the C fixture (a line
with emoji and CJK before the identifier). Run with `bench/run lsp [gopls|basedpyright|clangd|cclsp]`
(or directly after scripts/install-language-servers and a release build).

The direct harness is a minimal LSP client over stdio (Content-Length framing): initialize,
didOpen, wait until hover answers, then time warm requests. filepuff is driven with
newline-delimited JSON-RPC (no SDK cost). Each request is timed from its write to the arrival of
its answer's last byte, before this client decodes it: decoding is the client's cost (an SDK's),
and it grows with the answer — filepuff's references answer carries each location's line text
and a readable rendering besides (both decode times are printed). Printed per server: p50 and
p90 of each, the added latency p50 (filepuff minus direct) — the figure the target (≤ 0.5 ms) is about — the ratio,
filepuff's own CPU per call (mean; the added latency also counts waking its threads), and
whether filepuff's references total equals the server's (exit status 1 when not).
"""

import json
import re
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from corpora import GO_ENV, go_mod_download, go_packages, gopls_tools_module, writable_copy

REPO = Path(__file__).resolve().parent.parent
BIN = os.environ.get("FILEPUFF_BIN", str(REPO / "target/release/filepuff"))
TOOLS = REPO / ".tools" / "bin"
RUNS = int(os.environ.get("BENCH_RUNS", "200"))


class Lsp:
    def __init__(self, command, root, env=None):
        self.proc = subprocess.Popen(command, cwd=root, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env)
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
        body = self.proc.stdout.read(length)
        self.received, self.raw = time.perf_counter(), body
        return json.loads(body)

    def request(self, method, params):
        self.next_id += 1
        my_id = self.next_id
        self.send({"jsonrpc": "2.0", "id": my_id, "method": method, "params": params})
        while True:
            message = self.read()
            if message.get("id") == my_id and "method" not in message:
                return message
            if "method" in message and "id" in message:  # a server->client request
                result = None
                if message["method"] == "workspace/configuration":
                    result = [None for _ in message["params"].get("items", [])]
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": result})
            elif message.get("method") != "textDocument/publishDiagnostics":
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
            line = self.proc.stdout.readline()
            self.received, self.raw = time.perf_counter(), line
            message = json.loads(line)
            if message.get("id") == self.next_id:
                return message

    def call(self, tool, arguments):
        reply = self.request("tools/call", {"name": tool, "arguments": arguments})
        assert not reply["result"].get("isError"), reply
        return reply["result"]["structuredContent"]


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def process_cpu(pid):
    """Seconds of CPU (user + system, all threads) process `pid` has used: /proc/PID/stat, in
    clock ticks (10 ms), so only a mean over many requests means anything. The added latency
    counts wake-ups too; this is filepuff's own work."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def decode_us(raw, runs=100):
    """Mean µs this client's `json.loads` takes for `raw`: the client's cost, left out of the
    timings (each is taken when the answer's last byte arrives)."""
    start = time.perf_counter()
    for _ in range(runs):
        json.loads(raw)
    return (time.perf_counter() - start) / runs * 1e6


def pct(samples, q):
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))] * 1000


def locate(root, file, needle, token):
    """(0-based line, UTF-16 column, 1-based line, 1-based character column) of `token` on the
    first line of `file` holding `needle`."""
    lines = (root / file).read_text().splitlines()
    line = next(i for i, text in enumerate(lines) if needle in text)
    chars = lines[line].index(token, lines[line].index(needle))
    utf16 = len(lines[line][:chars].encode("utf-16-le")) // 2
    return line, utf16, line + 1, chars + 1


def compare(label, command, root, language, cases, env=None):
    """The same definition / references / hover, sent to the server directly (minimal LSP client)
    and through `filepuff mcp` (raw JSON-RPC, its own instance of the server), RUNS warm requests
    each, in the same run. `cases` maps a request to (file, needle, token)."""
    at = {name: (file, *locate(root, file, needle, token)) for name, (file, needle, token) in cases.items()}
    full_env = {**os.environ, **(env or {})}
    lsp = Lsp(command, root, env=full_env)
    lsp.request("initialize", {"processId": os.getpid(), "rootUri": root.as_uri(),
                               "capabilities": {"general": {"positionEncodings": ["utf-16"]},
                                                "textDocument": {"hover": {"contentFormat": ["markdown"]}},
                                                "workspace": {"configuration": True}},
                               "workspaceFolders": [{"uri": root.as_uri(), "name": root.name}]})
    lsp.notify("initialized", {})
    for file in sorted({file for file, *_ in at.values()}):
        lsp.notify("textDocument/didOpen", {"textDocument": {"uri": (root / file).as_uri(), "languageId": language,
                                                             "version": 1, "text": (root / file).read_text()}})

    def params(name):
        file, line, utf16, _, _ = at[name]
        out = {"textDocument": {"uri": (root / file).as_uri()}, "position": {"line": line, "character": utf16}}
        if name == "references":
            out["context"] = {"includeDeclaration": True}
        return out

    methods = {"definition": "textDocument/definition", "references": "textDocument/references",
               "hover": "textDocument/hover"}
    deadline = time.monotonic() + 180
    while not (lsp.request("textDocument/hover", params("hover")).get("result")):
        if time.monotonic() > deadline:
            sys.exit(f"{label}: no hover answer from the server in 180 s")
        time.sleep(0.2)
    mcp = RawMcp(root, env=env)
    tools = {"definition": "find_definition", "references": "find_references", "hover": "hover"}

    def arguments(name):
        file, _, _, line, column = at[name]
        return {"file": file, "line": line, "column": column}

    direct = {name: [] for name in methods}
    ours = {name: [] for name in methods}
    cpu = {name: 0.0 for name in methods}
    answers, raw = {}, {}
    for i in range(RUNS + 20):
        for name in methods:
            # Interleaved, so both paths see the same load.
            start = time.perf_counter()
            reply = lsp.request(methods[name], params(name))
            if i >= 20:
                direct[name].append(lsp.received - start)
            before = process_cpu(mcp.proc.pid)
            start = time.perf_counter()
            out = mcp.call(tools[name], arguments(name))
            if i >= 20:
                ours[name].append(mcp.received - start)
                cpu[name] += process_cpu(mcp.proc.pid) - before
            answers[name] = (reply.get("result"), out)
            raw[name] = (lsp.raw, mcp.raw)
    lsp.request("shutdown", None)
    lsp.notify("exit", None)
    lsp.proc.wait(timeout=20)
    mcp.proc.stdin.close()
    mcp.proc.wait(timeout=20)

    refs_direct = len(answers["references"][0] or [])
    refs_ours = answers["references"][1].get("total_references")
    print(f"### {label}")
    print("| request | direct p50 ms | direct p90 ms | filepuff p50 ms | filepuff p90 ms | added p50 ms | ratio p50 "
          "| filepuff CPU ms/call |")
    print("|---|---|---|---|---|---|---|---|")
    for name in methods:
        d50, d90 = pct(direct[name], 0.5), pct(direct[name], 0.9)
        f50, f90 = pct(ours[name], 0.5), pct(ours[name], 0.9)
        print("| %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |"
              % (name, d50, d90, f50, f90, f50 - d50, f50 / d50, cpu[name] / len(ours[name]) * 1e3))
    print()
    print(f"references: direct {refs_direct}, filepuff {refs_ours} "
          f"(completeness: {answers['references'][1].get('completeness')})")
    if refs_direct:
        # What a references answer adds over a one-location answer (definition), per location:
        # the canonical file, character columns and line text each location carries.
        added = {name: pct(ours[name], 0.5) - pct(direct[name], 0.5) for name in ("references", "definition")}
        print(f"references added beyond definition's, per location: "
              f"{(added['references'] - added['definition']) / refs_direct * 1000:.1f} µs")
    direct_bytes, ours_bytes = raw["references"]
    print(f"references answer: direct {len(direct_bytes)} bytes, decoded by this client in {decode_us(direct_bytes):.0f} µs; "
          f"filepuff {len(ours_bytes)} bytes, {decode_us(ours_bytes):.0f} µs (not counted above)")
    print()
    return refs_direct == refs_ours


def main():
    if not Path(BIN).exists():
        sys.exit("build the release binary first (bench/run does)")
    which = lambda name: shutil.which(name, path=f"{TOOLS}{os.pathsep}{os.environ.get('PATH', '')}")  # noqa: E731
    only = set(sys.argv[1:])
    print(f"filepuff {BIN}; {RUNS} warm requests of each kind per server, interleaved with the direct ones; "
          f"load average before: {os.getloadavg()[0]:.1f}")
    print()
    complete = True
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        tools = gopls_tools_module()
        if tools and (not only or "gopls" in only):
            root = writable_copy(tools, tmp / "xtools")
            go_mod_download(root)
            packages = go_packages(root)
            complete &= compare(f"gopls on golang.org/x/tools ({packages} packages)", [which("gopls")], root, "go", {
                "definition": ("go/types/objectpath/main.go", "packages.Load(", "Load"),
                "references": ("go/packages/packages.go", "func Load(", "Load"),
                "hover": ("go/types/objectpath/main.go", "packages.Load(", "Load"),
            }, env=GO_ENV)
        if not only or "basedpyright" in only:
            root = tmp / "pyjson"
            shutil.copytree(Path(json.__file__).parent, root / "json", ignore=shutil.ignore_patterns("__pycache__"))
            complete &= compare("basedpyright on CPython's json package", [which("basedpyright-langserver"), "--stdio"],
                                root, "python", {
                                    "definition": ("json/__init__.py", "_default_decoder = JSONDecoder(", "JSONDecoder"),
                                    "references": ("json/decoder.py", "class JSONDecodeError(", "JSONDecodeError"),
                                    "hover": ("json/__init__.py", "_default_decoder = JSONDecoder(", "JSONDecoder"),
                                })
        if not only or "clangd" in only:
            root = tmp / "c"
            shutil.copytree(REPO / "tests" / "fixtures" / "lsp" / "c", root)
            complete &= compare("clangd on tests/fixtures/lsp/c (after emoji and CJK)", [which("clangd")], root, "c", {
                "definition": ("main.c", "int total = add(", "add"),
                "references": ("util.h", "int add(", "add"),
                "hover": ("main.c", "int total = add(", "add"),
            })
        if not only or "cclsp" in only:
            root = tmp / "go"
            shutil.copytree(REPO / "tests" / "fixtures" / "lsp" / "go", root)
            greet = root / "greet" / "greet.go"
            gline = next(i for i, l in enumerate(greet.read_text().splitlines()) if "func Hello(" in l)
            peer = bench_cclsp(root, gline)
            if peer:
                print("## peer: cclsp %s (npm) with gopls on tests/fixtures/lsp/go, through MCP (warm, %d runs)"
                      % (peer["version"], PEER_RUNS))
                print("| tool | p50 ms | p90 ms | references found |")
                print("|---|---|---|---|")
                print("| cclsp find_references | %.2f | %.2f | %s |" % (pct(peer["references"], 0.5),
                                                                   pct(peer["references"], 0.9), peer["found"]))
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    if not complete:
        sys.exit("filepuff's references differ from the server's")


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
