"""A minimal language server for supervision, lifecycle and fault tests: answers initialize and
shutdown, never answers textDocument/definition (unless told to), and appends every message it
receives (as JSON lines, tagged with its pid) to the file named by FAKE_LSP_LOG (if set).

Configured by environment variables (set them in `[servers.NAME] env` of filepuff.toml):

    FAKE_LSP_LOG            append every received message here, as JSON lines with "pid" and "t"
                            (seconds since the epoch)
    FAKE_LSP_ENCODING       the positionEncoding it claims (default utf-16)
    FAKE_LSP_INIT_DELAY_MS  wait this long before answering initialize (a slow server)
    FAKE_LSP_CAPS_FILE      a JSON file of capabilities merged over the defaults, read at each
                            initialize (so a restarted server can offer something else)
    FAKE_LSP_ANSWER         "1": answer textDocument/definition (the document's first line) and
                            textDocument/hover ("fake hover from PID"), and any other request it
                            does not know with MethodNotFound
    FAKE_LSP_FAULT          misbehave once the trigger (below) arrives:
                              huge_frame   declare `Content-Length: 99999999999`, then send a few
                                           bytes and keep the pipe open
                              no_newline   write FAKE_LSP_BYTES (default 300 MB) of "x" without a
                                           line break, then keep the pipe open
                              garbage      write junk lines, a bad Content-Length and a body that
                                           is not JSON, then go on as usual (answering the
                                           request when FAKE_LSP_ANSWER is set)
                              exit         exit at once (status 3)
    FAKE_LSP_PROGRESS       "1": at `initialized`, ask the client `window/workDoneProgress/create`
                            (token "fake-setup", as gopls does for "Setting up workspace"); when
                            it is answered without an error, send $/progress begin, report, end
    FAKE_LSP_SYMBOLS        "1": offer workspace/symbol and answer it with one symbol, `fake_PID`;
                            with a `workDoneToken` in the request, first send $/progress begin
                            (title "fake PID"), report and end on that token
    FAKE_LSP_RESULTS        a JSON file {METHOD: RESULT}: a request for METHOD is answered with
                            RESULT (read at each request); the RESULT "$echo" answers the
                            request's params. The key "$applyEdit" holds a WorkspaceEdit: at
                            `workspace/executeCommand` the server first sends it to the client
                            as `workspace/applyEdit` (id "fake-apply"), then answers null
    FAKE_LSP_FAULT_ON       the trigger: "initialized" (the notification after initialize) or
                            "request" (the first textDocument/definition; the default)
"""

import json
import os
import sys
import time


def read_message():
    length = None
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            return None
        line = line.strip()
        if not line:
            break
        name, _, value = line.partition(b":")
        if name.lower() == b"content-length":
            length = int(value)
    return json.loads(sys.stdin.buffer.read(length))


def write(data):
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def send(message):
    body = json.dumps(message).encode()
    write(b"Content-Length: %d\r\n\r\n" % len(body) + body)


def hold():
    """Keeps the process (and its pipes) alive without answering, until filepuff ends it."""
    while True:
        time.sleep(1)


def misbehave(fault):
    if fault == "huge_frame":
        write(b"Content-Length: 99999999999\r\n\r\n{\"jsonrpc\":\"2.0\",")
        hold()
    elif fault == "no_newline":
        left = int(os.environ.get("FAKE_LSP_BYTES", str(300 << 20)))
        chunk = b"x" * (1 << 20)
        try:
            while left > 0:
                write(chunk[:left])
                left -= len(chunk)
        except BrokenPipeError:
            os._exit(0)
        hold()
    elif fault == "garbage":
        write(b"\x00\xff binary junk \x80\x81\r\nnot a header\r\n")
        write(b"Content-Length: abc\r\n\r\n{}")
        body = b"{this is not json"
        write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    elif fault == "exit":
        os._exit(3)


PROGRESS_CREATE_ID = "fake-progress-create"
PROGRESS_TOKEN = "fake-setup"


def send_progress():
    for value in ({"kind": "begin", "title": "Setting up workspace", "message": "loading"},
                  {"kind": "report", "message": "3/7 packages", "percentage": 42},
                  {"kind": "end", "message": "done"}):
        send({"jsonrpc": "2.0", "method": "$/progress", "params": {"token": PROGRESS_TOKEN, "value": value}})


def scripted_results():
    path = os.environ.get("FAKE_LSP_RESULTS")
    if not path:
        return {}
    with open(path) as results:
        return json.load(results)


def main():
    log = open(os.environ["FAKE_LSP_LOG"], "a") if os.environ.get("FAKE_LSP_LOG") else None
    fault = os.environ.get("FAKE_LSP_FAULT")
    trigger = os.environ.get("FAKE_LSP_FAULT_ON", "request")
    answer = os.environ.get("FAKE_LSP_ANSWER") == "1"
    while True:
        message = read_message()
        if message is None:
            return
        if log is not None:
            log.write(json.dumps({"pid": os.getpid(), "t": time.time(), **message}) + "\n")
            log.flush()
        method = message.get("method")
        scripted = scripted_results()
        if method is not None and "id" in message and method in scripted:
            if method == "workspace/executeCommand" and "$applyEdit" in scripted:
                send({"jsonrpc": "2.0", "id": "fake-apply", "method": "workspace/applyEdit",
                      "params": {"label": "fake", "edit": scripted["$applyEdit"]}})
            result = scripted[method]
            send({"jsonrpc": "2.0", "id": message["id"],
                  "result": message.get("params") if result == "$echo" else result})
        elif method == "initialize":
            time.sleep(int(os.environ.get("FAKE_LSP_INIT_DELAY_MS", "0")) / 1000)
            capabilities = {"definitionProvider": True,
                            "positionEncoding": os.environ.get("FAKE_LSP_ENCODING", "utf-16"),
                            "textDocumentSync": 2}
            if os.environ.get("FAKE_LSP_SYMBOLS") == "1":
                capabilities["workspaceSymbolProvider"] = True
            if os.environ.get("FAKE_LSP_CAPS_FILE"):
                with open(os.environ["FAKE_LSP_CAPS_FILE"]) as caps:
                    capabilities.update(json.load(caps))
            send({"jsonrpc": "2.0", "id": message["id"], "result": {
                "capabilities": capabilities,
                "serverInfo": {"name": "fake", "version": "1"}}})
        elif method == "initialized" and fault and trigger == "initialized":
            misbehave(fault)
        elif method == "initialized" and os.environ.get("FAKE_LSP_PROGRESS") == "1":
            send({"jsonrpc": "2.0", "id": PROGRESS_CREATE_ID, "method": "window/workDoneProgress/create",
                  "params": {"token": PROGRESS_TOKEN}})
        elif method is None and message.get("id") == PROGRESS_CREATE_ID:
            # Like gopls: a refused create means no progress for this work (the answer is logged).
            if "error" not in message:
                send_progress()
        elif method == "textDocument/definition":
            if fault and trigger == "request":
                misbehave(fault)
            if answer:
                uri = message["params"]["textDocument"]["uri"]
                send({"jsonrpc": "2.0", "id": message["id"], "result": [
                    {"uri": uri, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 4}}}]})
        elif answer and method == "textDocument/hover":
            send({"jsonrpc": "2.0", "id": message["id"], "result": {
                "contents": {"kind": "plaintext", "value": f"fake hover from {os.getpid()}"}}})
        elif method == "workspace/symbol" and os.environ.get("FAKE_LSP_SYMBOLS") == "1":
            token = message["params"].get("workDoneToken")
            if token is not None:
                for value in ({"kind": "begin", "title": f"fake {os.getpid()}"},
                              {"kind": "report", "message": "searching"},
                              {"kind": "end"}):
                    send({"jsonrpc": "2.0", "method": "$/progress", "params": {"token": token, "value": value}})
            send({"jsonrpc": "2.0", "id": message["id"], "result": [{
                "name": f"fake_{os.getpid()}", "kind": 12,
                "location": {"uri": "file:///nowhere.go", "range": {"start": {"line": 0, "character": 0},
                                                                   "end": {"line": 0, "character": 1}}}}]})
        elif method == "shutdown":
            send({"jsonrpc": "2.0", "id": message["id"], "result": None})
        elif method == "exit":
            return
        elif answer and "id" in message and method is not None:
            send({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": f"no {method}"}})


if __name__ == "__main__":
    main()
