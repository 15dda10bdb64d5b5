"""A minimal language server for supervision tests: answers initialize and shutdown, never
answers textDocument/definition, and appends every message it receives (as JSON lines, tagged
with its pid) to the file named by FAKE_LSP_LOG (if set). FAKE_LSP_ENCODING sets the
positionEncoding it claims (default utf-16)."""

import json
import os
import sys


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
            send({"jsonrpc": "2.0", "id": message["id"], "result": {
                "capabilities": {"definitionProvider": True,
                                 "positionEncoding": os.environ.get("FAKE_LSP_ENCODING", "utf-16"),
                                 "textDocumentSync": 2},
                "serverInfo": {"name": "fake", "version": "1"}}})
        elif method == "shutdown":
            send({"jsonrpc": "2.0", "id": message["id"], "result": None})
        elif method == "exit":
            return


if __name__ == "__main__":
    main()
