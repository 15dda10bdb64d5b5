#!/usr/bin/env python3
"""Knowledge-graph benchmark: `filepuff graph index` on real code of >= 500 files, database size,
and search latency over MCP, with the seed system's approach (the whole graph as one JSON file
rewritten on every change, substring search) measured on the same data for comparison.

Run with `bench/run graph` (it builds the release binary) or directly:
    FILEPUFF_BIN=target/release/filepuff .venv/bin/python bench/graph.py
Corpora (copied to a temporary directory, never written in place):
  go:     $(go env GOROOT)/src/net and src/go (Go standard library, ~600 files)
  python: CPython's standard library without test/ and site-packages (~870 files)
Prints Markdown tables; nothing here asserts a time (the figures go to docs/performance.md).
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
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

REPO = Path(__file__).resolve().parent.parent
BIN = os.environ.get("FILEPUFF_BIN", str(REPO / "target/release/filepuff"))
QUERIES = 100
SEED = 0


def corpora(tmp: Path):
    goroot = Path(subprocess.check_output(["go", "env", "GOROOT"], text=True).strip()) / "src"
    go = tmp / "go"
    for package in ["net", "go"]:
        shutil.copytree(goroot / package, go / package, ignore=shutil.ignore_patterns("testdata"))
    py = tmp / "python"
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    shutil.copytree(stdlib, py / "Lib", ignore=shutil.ignore_patterns("test", "site-packages", "__pycache__", "idlelib", "*.pyc"))
    return [("Go net + go (stdlib)", go, "*.go"), ("CPython Lib (no tests)", py, "*.py")]


def index(root: Path) -> tuple[float, dict]:
    start = time.perf_counter()
    out = subprocess.run([BIN, "--root", str(root), "graph", "index", "--json"], capture_output=True, text=True, check=True)
    return time.perf_counter() - start, json.loads(out.stdout)


def db_bytes(root: Path) -> int:
    db = root / ".filepuff" / "graph.db"
    # Fold the WAL into the main file so the size is the data's, not the log's.
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return sum(p.stat().st_size for p in db.parent.glob("graph.db*"))


def corpus_bytes(root: Path, pattern: str) -> tuple[int, int]:
    files = [p for p in root.rglob(pattern) if ".filepuff" not in p.parts]
    return len(files), sum(p.stat().st_size for p in files)


def queries(root: Path) -> list[str]:
    """100 queries from the graph's own names: 50 identifiers as written, 50 as split words."""
    with sqlite3.connect(root / ".filepuff" / "graph.db") as conn:
        names = [r[0] for r in conn.execute(
            "SELECT name FROM components WHERE type IN ('function', 'method', 'class') AND length(name) > 5 ORDER BY seq")]
    rng = random.Random(SEED)
    picked = rng.sample(names, QUERIES)
    split = lambda n: " ".join(w.lower() for w in re.findall(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])", n))
    return picked[: QUERIES // 2] + [split(n) or n for n in picked[QUERIES // 2:]]


async def mcp_latencies(root: Path, qs: list[str]) -> tuple[list[float], list[float], list[float]]:
    params = StdioServerParameters(command=BIN, args=["mcp", "--root", str(root)], cwd=str(root))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            await session.call_tool("search_code", {"query": "warm up"})
            search = []
            for q in qs:
                start = time.perf_counter()
                result = await session.call_tool("search_code", {"query": q, "limit": 10})
                search.append(time.perf_counter() - start)
                assert not result.is_error, result.content
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
            return search, update, context


def seed_approach(root: Path, qs: list[str]) -> tuple[int, float, list[float]]:
    """The seed system's storage and fallback search on the same graph: every component and
    relationship as one JSON document rewritten on each change; search = substring scan."""
    with sqlite3.connect(root / ".filepuff" / "graph.db") as conn:
        conn.row_factory = sqlite3.Row
        nodes = [dict(r) for r in conn.execute(
            "SELECT id, name, type, status, description, code_text, created_at, last_modified, version, metadata FROM components")]
        edges = [dict(r) for r in conn.execute("SELECT source_id, target_id, type, metadata FROM relationships")]
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


def main():
    if not Path(BIN).is_file():
        sys.exit(f"no filepuff binary at {BIN}: cargo build --release")
    with tempfile.TemporaryDirectory(prefix="filepuff-graph-bench-") as tmp:
        rows_index, rows_search, rows_seed = [], [], []
        for label, root, pattern in corpora(Path(tmp)):
            files, size = corpus_bytes(root, pattern)
            cold, report = index(root)
            warm, again = index(root)
            db = db_bytes(root)
            rows_index.append(
                f"| {label} | {files} | {size / 1e6:.1f} | {report['files_analyzed']} | {report['total_components']} | "
                f"{report['total_relationships']} | {cold:.2f} | {warm:.2f} | {db / 1e6:.1f} | {db / size:.2f} |")
            qs = queries(root)
            search, update, context = asyncio.run(mcp_latencies(root, qs))
            rows_search.append(
                f"| {label} | {ms(statistics.median(search))} | {ms(pct(search, 90))} | {ms(statistics.median(update))} | "
                f"{ms(statistics.median(context))} |")
            seed_size, seed_write, seed_search = seed_approach(root, qs)
            rows_seed.append(
                f"| {label} | {seed_size / 1e6:.1f} | {ms(seed_write)} | {ms(statistics.median(seed_search))} | "
                f"{ms(statistics.median(update))} | {ms(statistics.median(search))} |")
        print("## graph index (release build, fresh database, then again unchanged)")
        print("| corpus | files | MB | analysed | components | relationships | index s | re-index s | DB MB | DB / source |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        print("\n".join(rows_index))
        print()
        print(f"## MCP round trips over stdio (official Python SDK), {QUERIES} search queries")
        print("| corpus | search_code p50 ms | p90 ms | update_status p50 ms | prepare_context p50 ms (4000 tokens) |")
        print("|---|---|---|---|---|")
        print("\n".join(rows_search))
        print()
        print("## the seed system's approach on the same graph (JSON file rewritten per change, substring search, in Python)")
        print("| corpus | JSON MB | rewrite per change ms | substring search p50 ms | filepuff update_status p50 ms | filepuff search_code p50 ms |")
        print("|---|---|---|---|---|---|")
        print("\n".join(rows_seed))


if __name__ == "__main__":
    main()
