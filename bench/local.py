#!/usr/bin/env python3
"""Benchmarks of the `local` and `index` toolsets, through a real MCP client (the official Python
SDK over stdio), printed as figures for docs/performance.md. Nothing here asserts a time.

1. localSearchCode: filepuff vs Octocode's own (npm `octocode-mcp` with ENABLE_LOCAL=true and
   its native `@octocodeai/octocode-engine-linux-x64-gnu`), same queries on Go's standard
   library, both servers up in the same run, calls interleaved; median wall time per call and
   the ratio filepuff / Octocode (target <= 0.9).
2. The file index over a generated 100k-file tree: the first files_list (walk + index build),
   files_search and files_list medians, and the server's RSS before and after the build.

Usage: bench/local.py [--octocode DIR] [--baseline BIN]   (DIR holds node_modules/octocode-mcp;
default $OCTOCODE_DIR or /tmp/octo). Install it with:
    npm install --prefix DIR octocode-mcp @octocodeai/octocode-engine-linux-x64-gnu
--baseline BIN adds a second filepuff binary (e.g. a build of the previous commit) to the same
interleaved run, so that a change is compared with Octocode and with the old build at once.
"""

import argparse
import asyncio
import contextlib
import os
import statistics
import subprocess
import time
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

REPO = Path(__file__).resolve().parent.parent
BIN = os.environ.get("FILEPUFF_BIN", str(REPO / "target/release/filepuff"))
GOROOT_SRC = Path(subprocess.check_output(["go", "env", "GOROOT"], text=True).strip()) / "src"
RUNS = int(os.environ.get("BENCH_RUNS", "9"))
TREE = Path(os.environ.get("BENCH_TREE", "/tmp/filepuff-bench-100k"))

# (name, filepuff query, Octocode 16 query): the same search in each tool's vocabulary.
QUERIES = [
    (
        "literal errors.New",
        {"pattern": "errors.New", "fixedString": True},
        {"searchText": "errors.New", "regex": "fixed"},
    ),
    (
        "regex method decl",
        {"pattern": r"func \(\w+ \*\w+\) [A-Z]\w*\("},
        {"searchText": r"func \(\w+ \*\w+\) [A-Z]\w*\("},
    ),
    (
        "discovery ListenAndServe",
        {"pattern": "ListenAndServe", "filesOnly": True},
        {"searchText": "ListenAndServe", "mode": "discovery"},
    ),
]
PAGE = {"filesPerPage": 20, "matchesPerPage": 10}
RESEARCH = {"mainResearchGoal": "benchmark", "researchGoal": "benchmark", "reasoning": "benchmark"}


class Server:
    """One MCP server process and its session, driven from the caller's event loop."""

    def __init__(self, name, params):
        self.name = name
        self.params = params
        self._cm = None
        self.session = None

    async def __aenter__(self):
        self._cm = stdio_client(self.params, errlog=open(os.devnull, "w"))
        read, write = await self._cm.__aenter__()
        self._session_cm = ClientSession(read, write)
        self.session = await self._session_cm.__aenter__()
        await self.session.initialize()
        return self

    async def __aexit__(self, *exc):
        await self._session_cm.__aexit__(*exc)
        await self._cm.__aexit__(*exc)

    async def timed_call(self, tool, args):
        start = time.perf_counter()
        result = await self.session.call_tool(tool, args, read_timeout_seconds=120)
        elapsed = time.perf_counter() - start
        return elapsed, result


def filepuff_params(root, toolsets, binary=BIN):
    return StdioServerParameters(command=binary, args=["mcp", "--root", str(root), "--toolsets", toolsets], cwd=str(root))


def octocode_params(octocode_dir, root):
    entry = Path(octocode_dir) / "node_modules/octocode-mcp/dist/index.js"
    # ALLOWED_PATHS: Octocode refuses paths outside $HOME otherwise. OCTOCODE_CACHE_TTL_MS=0: no
    # result cache, so every call searches (as filepuff does).
    env = {
        **os.environ,
        "ENABLE_LOCAL": "true",
        "WORKSPACE_ROOT": str(root),
        "ALLOWED_PATHS": str(root),
        "OCTOCODE_CACHE_TTL_MS": os.environ.get("OCTOCODE_CACHE_TTL_MS", "0"),
    }
    return StdioServerParameters(command="node", args=[str(entry)], env=env, cwd=str(root))


def files_found(result):
    entry = (result.structured_content or {}).get("results", [{}])[0]
    data = entry.get("data") or {}
    return len(data.get("files", [])), data.get("pagination", {}).get("totalFiles")


async def bench_search(octocode_dir, baseline=None):
    print(f"== localSearchCode on {GOROOT_SRC}: median of {RUNS} calls after one warm-up, interleaved")
    entry = Path(octocode_dir) / "node_modules/octocode-mcp/dist/index.js"
    if not entry.is_file():
        print(f"   Octocode not installed at {octocode_dir}: skipped (see the docstring)")
        return
    async with contextlib.AsyncExitStack() as stack:
        fp = await stack.enter_async_context(Server("filepuff", filepuff_params(GOROOT_SRC, "local")))
        oc = await stack.enter_async_context(Server("octocode", octocode_params(octocode_dir, GOROOT_SRC)))
        base = None
        if baseline:
            base = await stack.enter_async_context(Server("baseline", filepuff_params(GOROOT_SRC, "local", baseline)))
        header = f"   {'query':<28} {'filepuff':>10} {'octocode':>10} {'ratio':>7}"
        if base:
            header += f" {'baseline':>10} {'ratio':>7}"
        print(header + "  files (page/total) fp | oc")
        for name, fp_query, oc_query in QUERIES:
            fp_args = {"queries": [{**RESEARCH, **PAGE, "path": "", **fp_query}]}
            oc_args = {"queries": [{**RESEARCH, **PAGE, "path": str(GOROOT_SRC), **oc_query}]}
            servers = [(fp, fp_args), (oc, oc_args)] + ([(base, fp_args)] if base else [])
            last = {}
            for server, args in servers:
                _, last[server.name] = await server.timed_call("localSearchCode", args)
            times = {server.name: [] for server, _ in servers}
            for _ in range(RUNS):
                for server, args in servers:
                    t, last[server.name] = await server.timed_call("localSearchCode", args)
                    times[server.name].append(t)
            median = {name: statistics.median(ts) for name, ts in times.items()}
            line = (
                f"   {name:<28} {median['filepuff'] * 1000:>8.1f}ms {median['octocode'] * 1000:>8.1f}ms"
                f" {median['filepuff'] / median['octocode']:>7.2f}"
            )
            if base:
                line += f" {median['baseline'] * 1000:>8.1f}ms {median['baseline'] / median['octocode']:>7.2f}"
            print(
                line
                + f"  {files_found(last['filepuff'])} | {files_found(last['octocode'])}"
                + ("  (octocode error)" if last["octocode"].is_error else "")
            )


def make_tree(n_files=100_000):
    """A 100k-file tree whose paths come from Go's and CPython's standard libraries."""
    marker = TREE / ".complete"
    if marker.exists():
        return
    sources = []
    for base in [GOROOT_SRC, Path(subprocess.check_output(["python3", "-c", "import sysconfig;print(sysconfig.get_paths()['stdlib'])"], text=True).strip())]:
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = [d for d in dirnames if not d.startswith(".") and d != "__pycache__"]
            rel = Path(dirpath).relative_to(base)
            sources.extend(str(rel / f) for f in filenames if not f.startswith("."))
    made = 0
    copy = 0
    while made < n_files:
        for rel in sources:
            if made >= n_files:
                break
            path = TREE / f"copy{copy}" / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"x" * (made % 4096))
            made += 1
        copy += 1
    marker.write_text(str(made))


def rss_kib(root):
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if cmdline and cmdline[0].endswith(b"filepuff") and str(root).encode() in cmdline:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    return None


async def bench_index():
    make_tree()
    n = sum(1 for _ in TREE.rglob("*") if _.is_file()) - 1
    print(f"== file index over {TREE} ({n} files)")
    async with Server("filepuff", filepuff_params(TREE, "index")) as fp:
        before = rss_kib(TREE)
        build, result = await fp.timed_call("files_list", {"limit": 10})
        after = rss_kib(TREE)
        print(f"   first files_list (walk + build + watches): {build * 1000:.0f} ms, total entries {result.structured_content['total']}")
        print(f"   RSS: {before / 1024:.1f} MiB before, {after / 1024:.1f} MiB after the build")
        for tool, args in [
            ("files_search", {"query": "http server"}),
            ("files_search", {"query": "json decoder", "topK": 10}),
            ("files_list", {"directory": "copy3/net/http", "limit": 50}),
            ("files_list", {"language": "python", "limit": 50}),
        ]:
            times = []
            for _ in range(RUNS):
                t, result = await fp.timed_call(tool, args)
                times.append(t)
            top = ""
            if tool == "files_search":
                top = " top: " + ", ".join(r["filePath"] for r in result.structured_content["results"][:2])
            print(f"   {tool} {args}: median {statistics.median(times) * 1000:.1f} ms{top}")
        print(f"   RSS after queries: {rss_kib(TREE) / 1024:.1f} MiB")
        # A change on disk: the watcher marks the directory dirty; the next call rescans it and
        # updates counts and terms in place before answering.
        times = []
        for i in range(RUNS):
            fresh = TREE / "copy1" / "net" / f"bench_fresh_{i}.go"
            fresh.write_text("package net\n")
            await asyncio.sleep(0.2)
            t, result = await fp.timed_call("files_search", {"query": f"bench fresh {i}"})
            times.append(t)
            fresh.unlink()
            assert result.structured_content["results"][0]["filePath"].endswith(f"bench_fresh_{i}.go"), result
        print(f"   files_search right after a file was created (rescan + in-place update): median {statistics.median(times) * 1000:.0f} ms")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--octocode", default=os.environ.get("OCTOCODE_DIR", "/tmp/octo"))
    parser.add_argument("--skip-index", action="store_true")
    parser.add_argument("--skip-search", action="store_true")
    parser.add_argument("--baseline", help="a second filepuff binary to time in the same run")
    args = parser.parse_args()
    if not args.skip_search:
        asyncio.run(bench_search(args.octocode, args.baseline))
    if not args.skip_index:
        asyncio.run(bench_index())


if __name__ == "__main__":
    main()
