#!/usr/bin/env python3
"""`filepuff lsp` overhead: the same hover/definition requests to gopls and clangd, sent to the
server directly and through `filepuff lsp`, interleaved in the same run; and the proxy's memory
with 1,000 open documents. Run with `bench/run proxy` (release build, servers installed).

Printed: p50 and p99 of each path and the added latency (proxy minus direct) at p50 and p99 —
the figures the targets (≤ 100 µs p50, ≤ 1 ms p99) are about — and, as a third path in the same
run, the server behind `bench/relay.c` (compiled here with `cc`; it copies bytes both ways and
parses nothing): the floor any process in between pays on this machine, which tells a slow
machine from a slow proxy. Then the proxy's RSS before and
after opening 1,000 CPython standard-library files (served by ruff, so the server's work stays
small and the figure is filepuff's own), and an agent's MCP `tools/call` through the editor's
socket (`filepuff mcp` attached) vs a standalone `filepuff mcp`: `file_read` of the open
document and `ping`, p50.
"""

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

from corpora import GO_ENV, go_mod_download, go_packages, gopls_tools_module, writable_copy

REPO = Path(__file__).resolve().parent.parent
BIN = os.environ.get("FILEPUFF_BIN", str(REPO / "target/release/filepuff"))
TOOLS = REPO / ".tools" / "bin"
RUNS = int(os.environ.get("BENCH_RUNS", "1000"))


def build_relay() -> str | None:
    """bench/relay.c compiled into a temp dir, or None (with a printed reason) without `cc`."""
    cc = shutil.which("cc")
    if not cc:
        print("no cc: the C relay (the floor) is not measured")
        return None
    out = Path(tempfile.mkdtemp(prefix="filepuff-relay-")) / "relay"
    subprocess.run([cc, "-O2", "-o", str(out), str(REPO / "bench" / "relay.c")], check=True)
    return str(out)


RELAY = None


class Lsp:
    """A minimal synchronous LSP client (no threads: timing noise stays low)."""

    def __init__(self, command, root, extra_env=None):
        env = {**os.environ, "PATH": f"{TOOLS}:{os.environ['PATH']}", **(extra_env or {})}
        self.proc = subprocess.Popen(command, cwd=root, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env)
        self.next_id = 0

    def send(self, message):
        body = json.dumps(message).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def read(self):
        length = None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("server exited")
            line = line.strip()
            if not line:
                if length is None:
                    continue
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
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result")
            if "method" in message and "id" in message:
                result = None
                if message["method"] == "workspace/configuration":
                    result = [None for _ in message["params"].get("items", [])]
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": result})

    def notify(self, method, params):
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def initialize(self, root):
        self.request("initialize", {
            "processId": os.getpid(), "rootUri": root.as_uri(),
            "workspaceFolders": [{"uri": root.as_uri(), "name": "bench"}],
            "capabilities": {"general": {"positionEncodings": ["utf-16"]},
                             "textDocument": {"hover": {"contentFormat": ["markdown"]}},
                             "workspace": {"configuration": True}}})
        self.notify("initialized", {})

    def close(self):
        try:
            self.request("shutdown", None)
            self.notify("exit", None)
            self.proc.wait(timeout=10)
        except Exception:  # noqa: BLE001
            self.proc.kill()


def open_when_ready(client, root, file, language, position, name):
    """Initializes `client`, opens `file` (relative to `root`) and asks hover at `position` until
    the server answers with something (at most 60 s)."""
    uri = (root / file).as_uri()
    client.initialize(root)
    client.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": language, "version": 1, "text": (root / file).read_text()}})
    deadline = time.monotonic() + 60
    while not client.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": position}):
        if time.monotonic() > deadline:
            raise RuntimeError(f"{name} never answered hover")
        time.sleep(0.2)


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, round((len(values) - 1) * p))]


def overhead(name, command, source, file, language, positions, env=None):
    """`positions` are LSP positions (0-based, UTF-16) or (needle, token) pairs located in `file`."""
    with tempfile.TemporaryDirectory() as tmp:
        root = writable_copy(source, Path(tmp) / "ws")
        if env == GO_ENV:
            go_mod_download(root)
        lines = (root / file).read_text().splitlines()

        def lsp_position(spec):
            if isinstance(spec, dict):
                return spec
            needle, token = spec
            line = next(i for i, text in enumerate(lines) if needle in text)
            chars = lines[line].index(token, lines[line].index(needle))
            return {"line": line, "character": len(lines[line][:chars].encode("utf-16-le")) // 2}

        positions = [lsp_position(spec) for spec in positions]
        paths = {"direct": Lsp(command, root, env), "proxy": Lsp([BIN, "lsp"], root, env)}
        if RELAY:
            paths["relay"] = Lsp([RELAY, *command], root, env)
        uri = (root / file).as_uri()
        for client in paths.values():
            open_when_ready(client, root, file, language, positions[0], name)
        times = {label: [] for label in paths}
        methods = ["textDocument/hover", "textDocument/definition"]
        order = list(paths.items())
        for i in range(RUNS + 50):
            params = {"textDocument": {"uri": uri}, "position": positions[i % len(positions)]}
            method = methods[i % 2]
            # Each path goes first, second and last equally often.
            turn = i % len(order)
            for label, client in order[turn:] + order[:turn]:
                start = time.perf_counter()
                client.request(method, params)
                if i >= 50:
                    times[label].append((time.perf_counter() - start) * 1e6)
        for client in paths.values():
            client.close()
    d50, d99 = percentile(times["direct"], 0.5), percentile(times["direct"], 0.99)
    p50, p99 = percentile(times["proxy"], 0.5), percentile(times["proxy"], 0.99)
    print(f"{name} {RUNS} hover/definition   direct p50 {d50:8.0f} µs  p99 {d99:8.0f} µs   "
          f"proxy p50 {p50:8.0f} µs  p99 {p99:8.0f} µs   added p50 {p50 - d50:6.0f} µs  p99 {p99 - d99:6.0f} µs")
    if "relay" in times:
        r50, r99 = percentile(times["relay"], 0.5), percentile(times["relay"], 0.99)
        print(f"{' ' * len(name)}   C relay (the floor)   p50 {r50:8.0f} µs  p99 {r99:8.0f} µs   "
              f"added p50 {r50 - d50:6.0f} µs  p99 {r99 - d99:6.0f} µs   proxy minus relay p50 {p50 - r50:6.0f} µs")


def rss_kib(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def memory(count=1000):
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(p for p in stdlib.rglob("*.py") if "site-packages" not in p.parts)[:count]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "filepuff.toml").write_text('[languages.python]\nservers = ["ruff"]\n')
        proxy = Lsp([BIN, "lsp"], root)
        proxy.initialize(root)
        proxy.request("filepuff/status", None)
        before = rss_kib(proxy.proc.pid)
        total = 0
        for i, path in enumerate(files):
            text = path.read_text(errors="replace")
            total += len(text.encode())
            proxy.notify("textDocument/didOpen", {"textDocument": {
                "uri": path.as_uri(), "languageId": "python", "version": 1, "text": text}})
        status = proxy.request("filepuff/status", None)
        after = rss_kib(proxy.proc.pid)
        documents = sum(s["documents"] for s in status["servers"])
        proxy.close()
    print(f"memory  {len(files)} open documents ({total / 2**20:.1f} MB of text, {documents} synced to ruff): "
          f"RSS {before / 1024:.1f} MB before, {after / 1024:.1f} MB after (+{(after - before) / 1024:.1f} MB)")


class Mcp:
    """A minimal MCP stdio client (newline-delimited JSON-RPC), synchronous."""

    def __init__(self, args, root):
        env = {**os.environ, "PATH": f"{TOOLS}:{os.environ['PATH']}"}
        self.proc = subprocess.Popen([BIN, *args], cwd=root, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env)
        self.next_id = 0
        self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                    "clientInfo": {"name": "bench", "version": "0"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message):
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method, params):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            message = json.loads(self.proc.stdout.readline())
            if message.get("id") == self.next_id:
                if "error" in message or message.get("result", {}).get("isError"):
                    raise RuntimeError(f"{method}: {message}")
                return message["result"]

    def close(self):
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def attached(runs=500):
    """An agent's tools/call through the editor's socket vs a standalone `filepuff mcp`."""
    import threading
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        shutil.copytree(REPO / "tests" / "fixtures" / "lsp" / "go", root)
        editor = Lsp([BIN, "lsp"], root)
        editor.initialize(root)
        text = (root / "main.go").read_text() + "// unsaved\n"
        editor.notify("textDocument/didOpen", {"textDocument": {
            "uri": (root / "main.go").as_uri(), "languageId": "go", "version": 1, "text": text}})
        editor.request("filepuff/status", None)
        threading.Thread(target=lambda: editor.proc.stdout.read(), daemon=True).start()  # drain
        socket_mcp = Mcp(["mcp", "--root", str(root)], root)
        standalone = Mcp(["mcp", "--standalone", "--root", str(root)], root)
        read = socket_mcp.request("tools/call", {"name": "file_read", "arguments": {"path": "main.go"}})
        assert read["structuredContent"]["content"] == text, "the socket session sees the unsaved text"
        times = {"socket read": [], "standalone read": [], "socket ping": [], "standalone ping": []}
        for i in range(runs + 20):
            for label, client in (("socket", socket_mcp), ("standalone", standalone)):
                for tool, args in (("file_read", {"path": "main.go"}), ("ping", {})):
                    start = time.perf_counter()
                    client.request("tools/call", {"name": tool, "arguments": args})
                    if i >= 20:
                        times[f"{label} {'read' if tool == 'file_read' else 'ping'}"].append(
                            (time.perf_counter() - start) * 1e6)
        socket_mcp.close()
        standalone.close()
        editor.proc.kill()
    p50 = {k: percentile(v, 0.5) for k, v in times.items()}
    print(f"agent   {runs} file_read of an open document: through the editor's socket p50 {p50['socket read']:.0f} µs, "
          f"standalone (disk) p50 {p50['standalone read']:.0f} µs, ratio {p50['socket read'] / p50['standalone read']:.2f}; "
          f"tools/call ping p50 {p50['socket ping']:.0f} µs over the socket, {p50['standalone ping']:.0f} µs standalone")


def main():
    if not Path(BIN).exists():
        sys.exit(f"{BIN} missing: cargo build --release")
    global RELAY
    print(f"load average before: {os.getloadavg()[0]:.1f}")
    RELAY = build_relay()
    fixtures = REPO / "tests" / "fixtures" / "lsp"
    tools = gopls_tools_module()
    if tools:
        packages = go_packages(tools)
        # Local identifiers: gopls answers in ~0.2 ms, so the proxy's cost is resolvable (the
        # target row). Then cross-package ones: gopls takes ~10 ms with a p99 spread of ±2 ms,
        # which hides anything the proxy adds; printed so the two are not mistaken for each other.
        for kind, positions in (("local identifiers", [("exitcode = 1", "exitcode"), ("pkgs, err := packages.Load(", "cfg")]),
                                ("cross-package", [("packages.Load(", "Load"), ("packages.Load(", "packages")])):
            overhead(f"gopls on golang.org/x/tools ({packages} packages), {kind}", [str(TOOLS / "gopls")], tools,
                     "go/types/objectpath/main.go", "go", positions, env=GO_ENV)
    overhead("gopls on tests/fixtures/lsp/go", [str(TOOLS / "gopls")], fixtures / "go", "main.go", "go",
             [{"line": 9, "character": 20}, {"line": 10, "character": 34}])
    overhead("clangd on tests/fixtures/lsp/c", [str(TOOLS / "clangd")], fixtures / "c", "main.c", "c",
             [{"line": 4, "character": 30}, {"line": 5, "character": 20}])
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    memory()
    attached()


if __name__ == "__main__":
    main()
