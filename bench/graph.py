#!/usr/bin/env python3
"""Knowledge-graph benchmark: `filepuff graph index` on real code of >= 500 files, with `calls`
by name (`--calls syntax`) and from the language server (`--calls lsp`), database size, and
search latency and quality over MCP, with the seed system's approach (the whole graph as one
JSON file rewritten on every change, substring search) measured on the same data for comparison.

Run with `bench/run graph` (it builds the release binary and installs the language servers) or
directly:
    PATH=$PWD/.tools/bin:$PATH FILEPUFF_BIN=target/release/filepuff .venv/bin/python bench/graph.py
Corpora (copied to a temporary directory, never written in place):
  go:     $(go env GOROOT)/src/net and src/go (Go standard library, ~600 files; no go.mod, so
          gopls makes an ad-hoc view per directory: --calls lsp only with BENCH_LSP_STDLIB=1)
  x/tools: golang.org/x/tools at the version gopls (.tools/bin) was built from, out of the Go
          module cache (~830 files, a module: calls across its packages resolve)
  python: CPython's standard library without test/ and site-packages (~870 files)
`--calls lsp` runs on the Go corpora only unless BENCH_LSP_PYTHON=1 (basedpyright over all of
CPython's Lib takes long on 2 cores). Prints Markdown tables; nothing here asserts a time (the
figures go to docs/performance.md).
"""

import asyncio
import json
import os
import random
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
import zlib
from pathlib import Path

from corpora import GO_ENV, gopls_tools_module, writable_copy

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

REPO = Path(__file__).resolve().parent.parent
BIN = os.environ.get("FILEPUFF_BIN", str(REPO / "target/release/filepuff"))
QUERIES = 100
SEED = 0


def corpora(tmp: Path):
    """(label, root, file pattern, whether to run --calls lsp)."""
    goroot = Path(subprocess.check_output(["go", "env", "GOROOT"], text=True).strip()) / "src"
    go = tmp / "go"
    for package in ["net", "go"]:
        shutil.copytree(goroot / package, go / package, ignore=shutil.ignore_patterns("testdata"))
    # No go.mod: gopls makes an ad-hoc view per directory (a load per directory, calls into other
    # std packages leave the root), which is not what a project looks like: --calls lsp on x/tools.
    out = [("Go net + go (stdlib)", go, "*.go", os.environ.get("BENCH_LSP_STDLIB") == "1")]
    tools = gopls_tools_module()
    if tools:
        copy = writable_copy(tools, tmp / "xtools")
        out.append((f"golang.org/x/tools {tools.name.split('@')[1][:7]} (module)", copy, "*.go", True))
    py = tmp / "python"
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    shutil.copytree(stdlib, py / "Lib", ignore=shutil.ignore_patterns("test", "site-packages", "__pycache__", "idlelib", "*.pyc"))
    out.append(("CPython Lib (no tests)", py, "*.py", os.environ.get("BENCH_LSP_PYTHON") == "1"))
    return out


def index(root: Path, calls: str) -> tuple[float, dict]:
    start = time.perf_counter()
    out = subprocess.run([BIN, "--root", str(root), "graph", "index", "--json", "--calls", calls],
                         capture_output=True, text=True, env={**os.environ, **GO_ENV})
    if out.returncode not in (0, 2):  # 2: some file's calls fell back to syntax (reported)
        raise RuntimeError(out.stderr)
    return time.perf_counter() - start, json.loads(out.stdout)


def fresh(root: Path) -> None:
    shutil.rmtree(root / ".filepuff", ignore_errors=True)


def db_bytes(root: Path) -> int:
    db = root / ".filepuff" / "graph.db"
    # Fold the WAL into the main file so the size is the data's, not the log's.
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return sum(p.stat().st_size for p in db.parent.glob("graph.db*"))


def corpus_bytes(root: Path, pattern: str) -> tuple[int, int]:
    files = [p for p in root.rglob(pattern) if ".filepuff" not in p.parts]
    return len(files), sum(p.stat().st_size for p in files)


def queries(root: Path) -> tuple[list[str], list[str]]:
    """100 queries from the graph's own names: 50 identifiers as written, 50 as split words; and
    the id of the component each was made from (search quality: where it ranks)."""
    with sqlite3.connect(root / ".filepuff" / "graph.db") as conn:
        names = [r for r in conn.execute(
            "SELECT name, id FROM components WHERE type IN ('function', 'method', 'class') AND length(name) > 5 ORDER BY seq")]
    rng = random.Random(SEED)
    picked = rng.sample(names, QUERIES)
    split = lambda n: " ".join(w.lower() for w in re.findall(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])", n))
    texts = [n for n, _ in picked[: QUERIES // 2]] + [split(n) or n for n, _ in picked[QUERIES // 2:]]
    return texts, [i for _, i in picked]


async def mcp_latencies(root: Path, qs: list[str], wanted: list[str]) -> tuple[list[float], list[float], list[float], list[int]]:
    params = StdioServerParameters(command=BIN, args=["mcp", "--root", str(root), "--toolsets", "core,graph"], cwd=str(root))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            await session.call_tool("search_code", {"query": "warm up"})
            search, ranks = [], []
            for q, want in zip(qs, wanted):
                start = time.perf_counter()
                result = await session.call_tool("search_code", {"query": q, "limit": 10})
                search.append(time.perf_counter() - start)
                assert not result.is_error, result.content
                ids = [m["id"] for m in result.structured_content["matches"]]
                ranks.append(ids.index(want) + 1 if want in ids else 0)
            ids = [m["id"] for m in (await session.call_tool("search_code", {"query": qs[0], "limit": 10})).structured_content["matches"]]
            update = []
            for n in range(20):
                start = time.perf_counter()
                await session.call_tool("update_status", {"component_id": ids[n % len(ids)], "new_status": "implemented", "notes": "bench"})
                update.append(time.perf_counter() - start)
            context = []
            for q in qs[:20]:
                start = time.perf_counter()
                await session.call_tool("prepare_context", {"task_description": q, "max_tokens": 4000})
                context.append(time.perf_counter() - start)
            return search, update, context, ranks


def seed_approach(root: Path, qs: list[str]) -> tuple[int, float, list[float]]:
    """The seed system's storage and fallback search on the same graph: every component and
    relationship as one JSON document rewritten on each change; search = substring scan."""
    with sqlite3.connect(root / ".filepuff" / "graph.db") as conn:
        conn.row_factory = sqlite3.Row
        # Analysed code is a byte range of its file's stored (raw-deflated) text: cut it out.
        sources = {r["source_seq"]: zlib.decompress(r["deflated"], -15) for r in conn.execute(
            "SELECT source_seq, deflated FROM sources")}
        nodes = []
        for r in conn.execute(
                "SELECT id, name, type, status, description, code_text, created_at, last_modified, version, metadata, "
                "source_seq, start_byte, end_byte FROM components"):
            node = dict(r)
            seq, start, end = node.pop("source_seq"), node.pop("start_byte"), node.pop("end_byte")
            if seq is not None:
                node["code_text"] = sources[seq][start:end].decode("utf-8", "replace")
            nodes.append(node)
        edges = [dict(r) for r in conn.execute(
            "SELECT s.id AS source_id, t.id AS target_id, r.type, r.metadata FROM relationships r "
            "JOIN components s ON s.seq = r.source JOIN components t ON t.seq = r.target")]
    path = root / "seed-graph.json"
    writes = []
    for _ in range(5):
        start = time.perf_counter()
        with open(path, "w") as f:
            json.dump({"nodes": nodes, "links": edges}, f)
        writes.append(time.perf_counter() - start)
    size = path.stat().st_size
    searches = []
    for q in qs:
        start = time.perf_counter()
        ql = q.lower()
        hits = [n for n in nodes if ql in n["name"].lower() or ql in n["description"].lower() or ql in n["code_text"].lower()]
        hits[:10]
        searches.append(time.perf_counter() - start)
    path.unlink()
    return size, statistics.median(writes), searches


def ms(x: float) -> str:
    return f"{x * 1000:.1f}"


def pct(samples: list[float], p: float) -> float:
    s = sorted(samples)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def calls_cell(report: dict) -> str:
    return f"{report['total_calls_lsp']} / {report['total_calls_syntax']}"


def main():
    if not Path(BIN).is_file():
        sys.exit(f"no filepuff binary at {BIN}: cargo build --release")
    with tempfile.TemporaryDirectory(prefix="filepuff-graph-bench-") as tmp:
        rows_index, rows_lsp, rows_search, rows_seed = [], [], [], []
        for label, root, pattern, lsp in corpora(Path(tmp)):
            files, size = corpus_bytes(root, pattern)
            cold, report = index(root, "syntax")
            warm, again = index(root, "syntax")
            db = db_bytes(root)
            rows_index.append(
                f"| {label} | {files} | {size / 1e6:.1f} | {report['files_analyzed']} | {report['total_components']} | "
                f"{report['total_relationships']} | {cold:.2f} | {warm:.2f} | {db / 1e6:.1f} | {db / size:.2f} |")
            qs, wanted = queries(root)
            search, update, context, ranks = asyncio.run(mcp_latencies(root, qs, wanted))
            mrr = sum(1 / r for r in ranks if r) / len(ranks)
            top1 = sum(1 for r in ranks if r == 1)
            rows_search.append(
                f"| {label} | {ms(statistics.median(search))} | {ms(pct(search, 90))} | {top1} | {mrr:.3f} | "
                f"{ms(statistics.median(update))} | {ms(statistics.median(context))} |")
            seed_size, seed_write, seed_search = seed_approach(root, qs)
            rows_seed.append(
                f"| {label} | {seed_size / 1e6:.1f} | {ms(seed_write)} | {ms(statistics.median(seed_search))} | "
                f"{ms(statistics.median(update))} | {ms(statistics.median(search))} |")
            if lsp:
                fresh(root)
                lsp_cold, lsp_report = index(root, "lsp")
                lsp_warm, _ = index(root, "lsp")
                lsp_db = db_bytes(root)
                per_language = "; ".join(
                    f"{c['language']}: {c['lsp_files']} from {c.get('server', '-')}, {c['syntax_files']} by name"
                    for c in lsp_report["calls"] if c["lsp_files"] + c["syntax_files"])
                rows_lsp.append(
                    f"| {label} | {cold:.2f} | {lsp_cold:.2f} | {lsp_warm:.2f} | {calls_cell(report)} | "
                    f"{calls_cell(lsp_report)} | {lsp_report['total_relationships']} | {lsp_db / 1e6:.1f} | {per_language} |")
        print("## graph index --calls syntax (release build, fresh database, then again unchanged)")
        print("| corpus | files | MB | analysed | components | relationships | index s | re-index s | DB MB | DB / source |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        print("\n".join(rows_index))
        print()
        print("## graph index --calls lsp (fresh database, then again unchanged) vs --calls syntax")
        print("| corpus | syntax index s | lsp index s | lsp re-index s | calls lsp / syntax (--calls syntax) | calls lsp / syntax (--calls lsp) | relationships | DB MB | files |")
        print("|---|---|---|---|---|---|---|---|---|")
        print("\n".join(rows_lsp))
        print()
        print(f"## MCP round trips over stdio (official Python SDK), {QUERIES} search queries")
        print("| corpus | search_code p50 ms | p90 ms | sampled component first (of 100) | MRR@10 | update_status p50 ms | prepare_context p50 ms (4000 tokens) |")
        print("|---|---|---|---|---|---|---|")
        print("\n".join(rows_search))
        print()
        print("## the seed system's approach on the same graph (JSON file rewritten per change, substring search, in Python)")
        print("| corpus | JSON MB | rewrite per change ms | substring search p50 ms | filepuff update_status p50 ms | filepuff search_code p50 ms |")
        print("|---|---|---|---|---|---|")
        print("\n".join(rows_seed))


if __name__ == "__main__":
    main()
