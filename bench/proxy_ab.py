#!/usr/bin/env python3
"""Two `filepuff lsp` builds side by side in front of one kind of server, interleaved request by
request with the server spoken to directly and through `bench/relay.c`: the before/after check
for a change to the editor proxy's forwarding path, where this machine's drift (wake-up cost,
load) is larger than the change.

    bench/proxy_ab.py BEFORE_BIN AFTER_BIN [--runs 2000] [--server clangd|gopls]

Each path has its own server process on one copy of the fixture (`tests/fixtures/lsp/c` or
`go`); hover and definition alternate, and each path goes first equally often. Printed: added
p50 and p99 (path minus direct, µs) for the relay and both builds, and each build's CPU per
request (user + system, all its threads, from /proc) and context switches per request.
"""

import argparse
import os
import tempfile
import time
from pathlib import Path

import proxy as P

SERVERS = {
    "clangd": ("clangd", "c", "main.c", "c", [{"line": 4, "character": 30}, {"line": 5, "character": 20}]),
    "gopls": ("gopls", "go", "main.go", "go", [{"line": 9, "character": 20}, {"line": 10, "character": 34}]),
}


def cpu_seconds(pid):
    """(user, system) CPU seconds of process `pid`, all threads."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def context_switches(pid):
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        for line in Path(f"/proc/{pid}/task/{task}/status").read_text().splitlines():
            if "ctxt_switches" in line:
                total += int(line.split()[1])
    return total


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--server", choices=sorted(SERVERS), default="clangd")
    args = parser.parse_args()
    server, fixture, file, language, positions = SERVERS[args.server]
    command = [str(P.TOOLS / server)]
    relay = P.build_relay()
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        root = P.writable_copy(P.REPO / "tests" / "fixtures" / "lsp" / fixture, Path(tmp) / "ws")
        paths = {"direct": P.Lsp(command, root), "before": P.Lsp([args.before, "lsp"], root),
                 "after": P.Lsp([args.after, "lsp"], root)}
        if relay:
            paths["relay"] = P.Lsp([relay, *command], root)
        uri = (root / file).as_uri()
        for client in paths.values():
            P.open_when_ready(client, root, file, language, positions[0], server)
        builds = ("before", "after")
        cpu0 = {b: cpu_seconds(paths[b].proc.pid) for b in builds}
        switches0 = {b: context_switches(paths[b].proc.pid) for b in builds}
        times = {label: [] for label in paths}
        order = list(paths.items())
        warm = 50
        for i in range(args.runs + warm):
            params = {"textDocument": {"uri": uri}, "position": positions[i % len(positions)]}
            method = ("textDocument/hover", "textDocument/definition")[i % 2]
            turn = i % len(order)
            for label, client in order[turn:] + order[:turn]:
                start = time.perf_counter()
                client.request(method, params)
                if i >= warm:
                    times[label].append((time.perf_counter() - start) * 1e6)
        total = args.runs + warm
        for build in builds:
            pid = paths[build].proc.pid
            (u0, s0), (u1, s1) = cpu0[build], cpu_seconds(pid)
            print(f"{build:6}  CPU per request {(u1 - u0) / total * 1e6:.0f} µs user + {(s1 - s0) / total * 1e6:.0f} µs "
                  f"system, {(context_switches(pid) - switches0[build]) / total:.1f} context switches")
        for client in paths.values():
            client.close()
    d50, d99 = P.percentile(times["direct"], 0.5), P.percentile(times["direct"], 0.99)
    print(f"{server} {args.runs} hover/definition, direct p50 {d50:.0f} µs, p99 {d99:.0f} µs")
    for label in ("relay", *builds):
        if label in times:
            p50, p99 = P.percentile(times[label], 0.5), P.percentile(times[label], 0.99)
            print(f"  {label:6}  added p50 {p50 - d50:6.0f} µs   p99 {p99 - d99:6.0f} µs")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
