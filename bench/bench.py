#!/usr/bin/env python3
"""filepuff benchmarks: ratios against a peer measured in the same run.

Run with `bench/run` (it builds the release binary and installs ripgrep). Prints:
  1. file_search vs `rg --json` on Go's standard library, one literal and one regex, through the
     CLI and through MCP (a real MCP client over stdio): median wall time, ratio filepuff / rg;
  2. file_read symbols_only on 50 real files of three languages (Go, Python, C headers): output
     bytes / file bytes, median (text block and structuredContent separately);
  3. startup: `filepuff mcp` launch to the `ping` answer, median;
  4. ast_query vs the `ast-grep` CLI (`ast-grep run -p … --json`), same pattern and files: cold
     (a fresh `filepuff query` process per run) and warm (repeated calls to one `filepuff mcp`,
     parse cache hot), ratio filepuff / ast-grep;
  5. edit_apply latency on generated 1 MB and 10 MB Go files, by text and by AST name.
`--only-query` runs 4 alone; `--no-query` skips 4 and 5.
Nothing here asserts a time: the figures go to docs/performance.md.
"""

import asyncio
import json
import os
import statistics
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

REPO = Path(__file__).resolve().parent.parent
BIN = os.environ.get("FILEPUFF_BIN", str(REPO / "target/release/filepuff"))
GOROOT_SRC = Path(subprocess.check_output(["go", "env", "GOROOT"], text=True).strip()) / "src"
RUNS = int(os.environ.get("BENCH_RUNS", "7"))

PATTERNS = [
    ("literal", "errors.New", False),
    ("regex", r"func \(\w+ \*\w+\) [A-Z]\w*\(", True),
]


def timed(cmd):
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def rg_cmd(pattern, literal):
    cmd = ["rg", "--json", "-C", "2", "--no-require-git"]
    if literal:
        cmd.append("-F")
    return cmd + ["--", pattern, str(GOROOT_SRC)]


def filepuff_cmd(pattern, literal):
    cmd = [BIN, "--root", str(GOROOT_SRC), "search", "--json", "-C", "2"]
    if literal:
        cmd.append("-F")
    return cmd + ["--", pattern]


def median_ms(samples):
    return statistics.median(samples) * 1000


def check_counts(pattern, literal):
    """The two tools must agree on what they found, or the timing compares different work."""
    out = subprocess.run(filepuff_cmd(pattern, literal), capture_output=True, text=True).stdout
    ours = json.loads(out)["total_matches"]
    rg = ["rg", "-c", "--no-require-git"] + (["-F"] if literal else []) + ["--", pattern, str(GOROOT_SRC)]
    theirs = sum(int(line.rsplit(":", 1)[1]) for line in subprocess.run(rg, capture_output=True, text=True).stdout.splitlines())
    return ours, theirs


async def mcp_search_times(pattern, literal):
    params = StdioServerParameters(command=BIN, args=["--root", str(GOROOT_SRC), "mcp"])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            args = {"pattern": pattern, "regex": not literal, "context_lines": 2}
            await session.call_tool("file_search", args)  # warm-up, as for the CLI runs
            samples = []
            for _ in range(RUNS):
                start = time.perf_counter()
                result = await session.call_tool("file_search", args)
                samples.append(time.perf_counter() - start)
                assert not result.is_error, result
            return samples


def raw_mcp_search_times(pattern, literal):
    """The server's own cost: newline-delimited JSON-RPC over stdio, no SDK on the client side."""
    proc = subprocess.Popen([BIN, "--root", str(GOROOT_SRC), "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def send(message):
        proc.stdin.write((json.dumps(message) + "\n").encode())
        proc.stdin.flush()

    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}
    send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init})
    json.loads(proc.stdout.readline())
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    args = {"pattern": pattern, "regex": not literal, "context_lines": 2}
    samples = []
    for idx in range(RUNS + 1):
        start = time.perf_counter()
        send({"jsonrpc": "2.0", "id": idx + 1, "method": "tools/call", "params": {"name": "file_search", "arguments": args}})
        reply = json.loads(proc.stdout.readline())
        if idx > 0:  # the first call is the warm-up
            samples.append(time.perf_counter() - start)
        assert not reply["result"].get("isError"), reply
    proc.stdin.close()
    proc.wait()
    return samples


def bench_search():
    print("## file_search vs rg --json (Go standard library: %s)" % GOROOT_SRC)
    print("MCP raw = JSON-RPC over stdio to a running `filepuff mcp`; MCP SDK = the same through the")
    print("official Python SDK's ClientSession (which also validates structuredContent client-side).")
    print()
    print("| query | CLI ms | MCP raw ms | MCP SDK ms | rg --json ms | CLI / rg | MCP raw / rg | MCP SDK / rg | matches (filepuff / rg) |")
    print("|---|---|---|---|---|---|---|---|---|")
    rows = []
    for name, pattern, is_regex in PATTERNS:
        literal = not is_regex
        ours, theirs = check_counts(pattern, literal)
        timed(rg_cmd(pattern, literal))  # warm the page cache for both
        timed(filepuff_cmd(pattern, literal))
        cli, rg = [], []
        for _ in range(RUNS):  # interleaved, so drift hits both equally
            cli.append(timed(filepuff_cmd(pattern, literal)))
            rg.append(timed(rg_cmd(pattern, literal)))
        raw = raw_mcp_search_times(pattern, literal)
        sdk = asyncio.run(mcp_search_times(pattern, literal))
        c, r, k, g = median_ms(cli), median_ms(raw), median_ms(sdk), median_ms(rg)
        rows.append((name, c, r, k, g))
        print(
            "| %s `%s` | %.0f | %.0f | %.0f | %.0f | %.2f | %.2f | %.2f | %d / %d |"
            % (name, pattern.replace("|", "\\|"), c, r, k, g, c / g, r / g, k / g, ours, theirs)
        )
    return rows


def outline_corpus():
    """50 real files: 17 Go, 17 Python, 16 C headers; over 2 KiB, first by sorted path."""

    def pick(paths, n):
        chosen = [p for p in sorted(paths) if p.stat().st_size > 2048]
        return chosen[:n]

    go = pick([p for p in (GOROOT_SRC / "net/http").glob("*.go") if not p.name.endswith("_test.go")], 17)
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    py = pick(stdlib.glob("*.py"), 17)
    c = pick(Path("/usr/include").glob("*.h"), 16)
    return go + py + c


async def outline_ratios(files):
    text_ratios, json_ratios = [], []
    per_language = {}
    params = StdioServerParameters(command=BIN, args=["--root", "/", "mcp"])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            for path in files:
                result = await session.call_tool("file_read", {"path": str(path), "symbols_only": True})
                assert not result.is_error, (path, result)
                size = path.stat().st_size
                text_bytes = sum(len(block.text.encode()) for block in result.content)
                json_bytes = len(json.dumps(result.structured_content, separators=(",", ":")).encode())
                text_ratios.append(text_bytes / size)
                json_ratios.append(json_bytes / size)
                per_language.setdefault(path.suffix, []).append(text_bytes / size)
    return text_ratios, json_ratios, per_language


def bench_outline():
    files = outline_corpus()
    text, structured, per_language = asyncio.run(outline_ratios(files))
    print()
    print("## file_read symbols_only: output bytes / file bytes (%d files)" % len(files))
    print("| measure | median | p90 | max |")
    print("|---|---|---|---|")
    for name, ratios in [("text block", text), ("structuredContent (compact JSON)", structured)]:
        ratios = sorted(ratios)
        p90 = ratios[int(len(ratios) * 0.9) - 1]
        print("| %s | %.3f | %.3f | %.3f |" % (name, statistics.median(ratios), p90, ratios[-1]))
    for suffix, ratios in sorted(per_language.items()):
        print("| text block, %s files (%d) | %.3f | | |" % (suffix, len(ratios), statistics.median(ratios)))
    return statistics.median(text)


async def one_startup():
    start = time.perf_counter()
    params = StdioServerParameters(command=BIN, args=["--root", str(REPO), "mcp"])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("ping", {})
            elapsed = time.perf_counter() - start
            assert result.content[0].text == "pong"
            return elapsed


def bench_startup():
    samples = [asyncio.run(one_startup()) for _ in range(RUNS)]
    print()
    print("## startup: `filepuff mcp` launch to the ping answer (initialize + tools/call)")
    print("| median ms | min ms | max ms |")
    print("|---|---|---|")
    print("| %.1f | %.1f | %.1f |" % (median_ms(samples), min(samples) * 1000, max(samples) * 1000))


QUERIES = [
    ("net", "func $NAME($$$ARGS) error", "net"),
    ("net", "fmt.Errorf($FMT, $$$ARGS)", "net"),
    ("all", "func $NAME($$$ARGS) error", "."),
]


def ast_grep_bin():
    return str(Path(sys.executable).parent / "ast-grep")


def ast_grep_cmd(pattern, path):
    return [ast_grep_bin(), "run", "-p", pattern, "--lang", "go", "--json=compact", path]


def query_cmd(pattern, path):
    return [BIN, "--root", str(GOROOT_SRC), "query", pattern, "--lang", "go", "-m", "100000", "--json", path]


def timed_in(cmd, cwd):
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, cwd=cwd)
    return time.perf_counter() - start


class RawMcp:
    """`filepuff mcp` driven with newline-delimited JSON-RPC (no SDK cost on the client side)."""

    def __init__(self, root):
        self.proc = subprocess.Popen([BIN, "--root", str(root), "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.next_id = 0
        init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}
        self.request("initialize", init)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message):
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()

    def request(self, method, params):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return json.loads(self.proc.stdout.readline())

    def call(self, tool, arguments):
        start = time.perf_counter()
        reply = self.request("tools/call", {"name": tool, "arguments": arguments})
        elapsed = time.perf_counter() - start
        assert not reply["result"].get("isError"), reply
        return elapsed, reply["result"]["structuredContent"]

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def bench_query():
    print()
    print("## ast_query vs ast-grep CLI %s (Go standard library)" % subprocess.check_output(
        [ast_grep_bin(), "--version"], text=True).strip())
    print("cold = a new `filepuff query` process per run (empty parse cache); warm = repeated tools/call")
    print("on one `filepuff mcp` (parse cache hot for files that passed the literal prefilter).")
    print()
    print("| corpus | pattern | ast-grep ms | filepuff cold ms | filepuff warm ms | cold / ast-grep | warm / ast-grep | matches (filepuff / ast-grep) | files parsed / scanned |")
    print("|---|---|---|---|---|---|---|---|---|")
    rows = []
    for corpus, pattern, path in QUERIES:
        theirs = len(json.loads(subprocess.run(ast_grep_cmd(pattern, path), cwd=GOROOT_SRC, capture_output=True, text=True).stdout or "[]"))
        out = json.loads(subprocess.run(query_cmd(pattern, path), capture_output=True, text=True).stdout)
        cold, peer = [], []
        runs = RUNS if corpus != "all" else max(3, RUNS // 2)
        for _ in range(runs):
            cold.append(timed(query_cmd(pattern, path)))
            peer.append(timed_in(ast_grep_cmd(pattern, path), GOROOT_SRC))
        server = RawMcp(GOROOT_SRC)
        args = {"pattern": pattern, "language": "go", "paths": [path], "max_results": 100000}
        server.call("ast_query", args)
        warm = [server.call("ast_query", args)[0] for _ in range(runs)]
        server.close()
        a, c, w = median_ms(peer), median_ms(cold), median_ms(warm)
        rows.append((corpus, pattern, a, c, w))
        print("| %s | `%s` | %.0f | %.0f | %.0f | %.2f | %.2f | %d / %d | %d / %d |" % (
            "GOROOT/src" if path == "." else path + "/", pattern.replace("|", "\\|"), a, c, w, c / a, w / a,
            out["total_matches"], theirs, out["files_parsed"], out["files_scanned"]))
    return rows


def go_file_of(size):
    body = []
    n = 0
    while sum(map(len, body)) < size:
        body.append("// F%d is generated.\nfunc F%d(x int) (int, error) {\n\tif x < 0 {\n\t\treturn 0, nil\n\t}\n\treturn x * %d, nil\n}\n\n" % (n, n, n))
        n += 1
    return "package gen\n\n" + "".join(body), n


def bench_edit():
    import tempfile

    print()
    print("## edit_apply latency (MCP raw, median of %d)" % RUNS)
    print("| file | by text (ms) | by AST name (ms) |")
    print("|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        server = RawMcp(root)
        for label, size in [("1 MB", 1 << 20), ("10 MB", 10 << 20)]:
            text, n = go_file_of(size)
            name = "gen_%s.go" % label.replace(" ", "")
            (root / name).write_text(text)
            mid = n // 2
            by_text, by_name = [], []
            for i in range(RUNS):
                t, _ = server.call("edit_apply", {"file": name, "operation": "replace",
                                                  "selector_text": "return x * %d, nil" % mid if i % 2 == 0 else "return x * -%d, nil" % mid,
                                                  "new_content": "return x * -%d, nil" % mid if i % 2 == 0 else "return x * %d, nil" % mid})
                by_text.append(t)
                t, _ = server.call("edit_apply", {"file": name, "operation": "replace", "selector_name": "F%d" % (mid + 1),
                                                  "new_content": "func F%d(x int) (int, error) {\n\treturn x + %d, nil\n}" % (mid + 1, i)})
                by_name.append(t)
            print("| %s (%d bytes) | %.0f | %.0f |" % (label, len(text), median_ms(by_text), median_ms(by_name)))
        server.close()


def main():
    if not Path(BIN).exists():
        sys.exit("build the release binary first (bench/run does)")
    print("filepuff %s, %d runs each, %d CPUs" % (BIN, RUNS, os.cpu_count()))
    print()
    if "--only-query" in sys.argv:
        bench_query()
        return
    bench_search()
    bench_outline()
    bench_startup()
    if "--no-query" not in sys.argv:
        bench_query()
        bench_edit()


if __name__ == "__main__":
    main()
