"""A minimal language server for supervision tests: answers initialize and shutdown, never
answers textDocument/definition, and appends every message it receives (as JSON lines, tagged
with its pid) to the file named by FAKE_LSP_LOG (if set). FAKE_LSP_ENCODING sets the
positionEncoding it claims (default utf-16).

Options (environment):
    FAKE_LSP_INIT_DELAY_MS  wait this long before answering initialize (a slow server)
    FAKE_LSP_CAPS_FILE      a JSON file of capabilities merged over the defaults, read at each
                            initialize (so a restarted server can offer something else)
    FAKE_LSP_ANSWER         when set, answer textDocument/definition (the document's first
                            line) and textDocument/hover ("fake hover from PID")"""

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


def send(message):
    body = json.dumps(message).encode()
    sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    sys.stdout.buffer.flush()


def main():
    log = open(os.environ["FAKE_LSP_LOG"], "a") if os.environ.get("FAKE_LSP_LOG") else None
    while True:
        message = read_message()
        if message is None:
            return
        if log is not None:
            log.write(json.dumps({"pid": os.getpid(), **message}) + "\n")
            log.flush()
        method = message.get("method")
        if method == "initialize":
            time.sleep(int(os.environ.get("FAKE_LSP_INIT_DELAY_MS", "0")) / 1000)
            capabilities = {"definitionProvider": True,
                            "positionEncoding": os.environ.get("FAKE_LSP_ENCODING", "utf-16"),
                            "textDocumentSync": 2}
            if os.environ.get("FAKE_LSP_CAPS_FILE"):
                with open(os.environ["FAKE_LSP_CAPS_FILE"]) as caps:
                    capabilities.update(json.load(caps))
            send({"jsonrpc": "2.0", "id": message["id"], "result": {
                "capabilities": capabilities,
                "serverInfo": {"name": "fake", "version": "1"}}})
        elif os.environ.get("FAKE_LSP_ANSWER") and method == "textDocument/definition":
            uri = message["params"]["textDocument"]["uri"]
            send({"jsonrpc": "2.0", "id": message["id"], "result": [
                {"uri": uri, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 4}}}]})
        elif os.environ.get("FAKE_LSP_ANSWER") and method == "textDocument/hover":
            send({"jsonrpc": "2.0", "id": message["id"], "result": {
                "contents": {"kind": "plaintext", "value": f"fake hover from {os.getpid()}"}}})
        elif method == "shutdown":
            send({"jsonrpc": "2.0", "id": message["id"], "result": None})
        elif method == "exit":
            return


if __name__ == "__main__":
    main()
