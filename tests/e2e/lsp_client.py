"""An editor-like LSP client for end-to-end tests of `filepuff lsp` (and of real servers run
directly, for comparisons): JSON-RPC over a child process's stdio, a reader thread, blocking
requests with timeouts, recorded notifications, and answers to the server's own requests the way
an editor gives them (applyEdit applied to the client's buffers, configuration, registrations,
progress tokens)."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Callable


class LspError(Exception):
    def __init__(self, error: dict):
        super().__init__(f"{error.get('code')}: {error.get('message')}")
        self.code = error.get("code")
        self.message = error.get("message")


class LspClient:
    def __init__(self, command: list[str], cwd: Path, env: dict[str, str] | None = None, stderr=None):
        self.proc = subprocess.Popen(
            command,
            cwd=str(cwd),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr if stderr is not None else subprocess.DEVNULL,
            env={**os.environ, **(env or {})},
        )
        self._next_id = 1
        self._lock = threading.Condition()
        self._responses: dict[Any, dict] = {}
        self.notifications: list[dict] = []
        self.server_requests: list[dict] = []
        # Error responses without an id (answers to messages that could not be parsed).
        self.orphan_errors: list[dict] = []
        # Each response's body as it came, by id (the JSON text, before parsing).
        self.response_bodies: dict[Any, bytes] = {}
        # How the "editor" answers requests from the server, by method.
        self.handlers: dict[str, Callable[[dict], Any]] = {
            "workspace/configuration": lambda p: [None for _ in p.get("items", [])],
            "client/registerCapability": lambda p: None,
            "client/unregisterCapability": lambda p: None,
            "window/workDoneProgress/create": lambda p: None,
            "workspace/applyEdit": lambda p: {"applied": True},
            "window/showMessageRequest": lambda p: None,
            "workspace/semanticTokens/refresh": lambda p: None,
            "workspace/inlayHint/refresh": lambda p: None,
            "workspace/codeLens/refresh": lambda p: None,
            "workspace/diagnostic/refresh": lambda p: None,
        }
        self._write_lock = threading.Lock()
        self._reader = threading.Thread(target=self._read_loop, daemon=True)
        self._reader.start()

    # -- wire --

    def send_raw(self, data: bytes) -> None:
        with self._write_lock:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()

    def _send(self, message: dict) -> None:
        body = json.dumps(message).encode()
        self.send_raw(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def _read_message(self) -> dict | None:
        length = None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                return None
            line = line.strip()
            if not line:
                if length is None:
                    continue
                break
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        body = self.proc.stdout.read(length)
        message = json.loads(body)
        if isinstance(message, dict) and "id" in message and "method" not in message:
            with self._lock:
                self.response_bodies[message["id"]] = body
        return message

    def _read_loop(self) -> None:
        while True:
            try:
                message = self._read_message()
            except (ValueError, OSError):
                message = None
            if message is None:
                with self._lock:
                    self._lock.notify_all()
                return
            if "method" in message and "id" in message:
                self._answer(message)
            elif "method" in message:
                with self._lock:
                    self.notifications.append(message)
                    self._lock.notify_all()
            else:
                with self._lock:
                    if message.get("id") is None:
                        self.orphan_errors.append(message)
                    else:
                        self._responses[message.get("id")] = message
                    self._lock.notify_all()

    def _answer(self, message: dict) -> None:
        with self._lock:
            self.server_requests.append(message)
            self._lock.notify_all()
        handler = self.handlers.get(message["method"])
        if handler is None:
            self._send({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "unhandled"}})
            return
        try:
            result = handler(message.get("params") or {})
        except Exception as err:  # noqa: BLE001 - reported to the server
            self._send({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32603, "message": str(err)}})
            return
        self._send({"jsonrpc": "2.0", "id": message["id"], "result": result})

    # -- API --

    def request_async(self, method: str, params: Any = None) -> int:
        with self._lock:
            request_id = self._next_id
            self._next_id += 1
        message = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self._send(message)
        return request_id

    def response(self, request_id: Any, timeout: float = 60.0) -> dict:
        deadline = time.monotonic() + timeout
        with self._lock:
            while request_id not in self._responses:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"no response to request {request_id}")
                if self.proc.poll() is not None and request_id not in self._responses:
                    raise RuntimeError(f"server exited with {self.proc.returncode}")
                self._lock.wait(min(remaining, 0.5))
            return self._responses.pop(request_id)

    def request(self, method: str, params: Any = None, timeout: float = 60.0) -> Any:
        answer = self.response(self.request_async(method, params), timeout)
        if "error" in answer:
            raise LspError(answer["error"])
        return answer.get("result")

    def notify(self, method: str, params: Any = None) -> None:
        message = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self._send(message)

    def wait_for(self, predicate: Callable[[], Any], timeout: float = 60.0, what: str = "condition") -> Any:
        deadline = time.monotonic() + timeout
        with self._lock:
            while True:
                value = predicate()
                if value:
                    return value
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"timed out waiting for {what}")
                self._lock.wait(min(remaining, 0.25))

    def wait_notification(self, method: str, match: Callable[[dict], bool] = lambda p: True, timeout: float = 60.0,
                          after: int = 0) -> dict:
        def find():
            for message in self.notifications[after:]:
                if message["method"] == method and match(message.get("params") or {}):
                    return message["params"]
            return None

        return self.wait_for(find, timeout, f"{method}")

    def diagnostics(self, uri: str) -> list[dict] | None:
        """The latest published diagnostics of `uri`, or None if none were published."""
        with self._lock:
            for message in reversed(self.notifications):
                if message["method"] == "textDocument/publishDiagnostics" and message["params"]["uri"] == uri:
                    return message["params"]["diagnostics"]
        return None

    def initialize(self, root: Path, encodings: list[str] | None = None, capabilities: dict | None = None,
                   options: dict | None = None) -> dict:
        caps = capabilities or {
            "general": {"positionEncodings": encodings or ["utf-16"]},
            "workspace": {"applyEdit": True, "configuration": True, "workspaceFolders": True,
                          "workspaceEdit": {"documentChanges": True}},
            "textDocument": {
                "synchronization": {"didSave": True, "dynamicRegistration": True},
                "hover": {"contentFormat": ["markdown", "plaintext"]},
                "completion": {"completionItem": {"snippetSupport": False}},
                "definition": {"linkSupport": False},
                "documentSymbol": {"hierarchicalDocumentSymbolSupport": True},
                "publishDiagnostics": {"versionSupport": True},
                "semanticTokens": {"requests": {"full": {"delta": True}, "range": True},
                                    "tokenTypes": [], "tokenModifiers": [], "formats": ["relative"]},
            },
            "window": {"workDoneProgress": True},
        }
        result = self.request("initialize", {
            **({"initializationOptions": options} if options is not None else {}),
            "processId": os.getpid(),
            "rootUri": root.as_uri(),
            "workspaceFolders": [{"uri": root.as_uri(), "name": root.name}],
            "capabilities": caps,
        }, timeout=120)
        self.notify("initialized", {})
        return result

    def open(self, path: Path, language_id: str, text: str | None = None, version: int = 1) -> str:
        uri = path.as_uri()
        self.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": language_id, "version": version,
            "text": path.read_text() if text is None else text}})
        return uri

    def change(self, uri: str, version: int, changes: list[dict]) -> None:
        self.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                               "contentChanges": changes})

    def shutdown(self, timeout: float = 30.0) -> int:
        try:
            self.request("shutdown", None, timeout=timeout)
            self.notify("exit")
        except (OSError, RuntimeError, TimeoutError, LspError):
            pass
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()

    def kill(self) -> None:
        """Ends the session: `exit` first (so filepuff removes its socket and stops its servers),
        then SIGKILL if it is still running after 2 s."""
        if self.proc.poll() is None:
            try:
                self.notify("exit")
                self.proc.wait(timeout=2)
            except (OSError, ValueError, subprocess.TimeoutExpired):
                pass
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def range_(l1: int, c1: int, l2: int, c2: int) -> dict:
    return {"start": {"line": l1, "character": c1}, "end": {"line": l2, "character": c2}}


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def column(line: str, index: int, encoding: str) -> int:
    """The column of character index `index` of `line` in `encoding` units."""
    head = line[:index]
    if encoding == "utf-8":
        return len(head.encode())
    if encoding == "utf-16":
        return utf16_len(head)
    return len(head)


def children(pid: int) -> list[int]:
    """Direct child processes of `pid` (from /proc)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            out.append(int(entry))
    return out


def process_name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""
