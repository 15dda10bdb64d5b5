// Serves `filepuff mcp` (stdio) to an HTTP-only MCP client, so the conformance suite's
// lifecycle scenarios (initialize, ping, tools/list) check filepuff's stdio face: each HTTP
// session (the TypeScript SDK's Streamable HTTP server transport) gets its own
// `filepuff mcp --root ROOT` child (the SDK's stdio client transport), and JSON-RPC messages are
// passed both ways unchanged. HTTP-level scenarios (SSE, DNS rebinding) would test the SDK here,
// not filepuff; they run against `filepuff serve --http` instead.
//
// Usage: node stdio-bridge.mjs FILEPUFF ROOT — prints `bridge: http://127.0.0.1:PORT/mcp`.
import { randomUUID } from "node:crypto";
import http from "node:http";

import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";

const [filepuff, root] = process.argv.slice(2);
if (!filepuff || !root) throw new Error("usage: stdio-bridge.mjs FILEPUFF ROOT");

/** Live sessions: Mcp-Session-Id → the HTTP transport. */
const sessions = new Map();

async function newSession() {
  const child = new StdioClientTransport({ command: filepuff, args: ["mcp", "--root", root], stderr: "inherit" });
  const front = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    onsessioninitialized: (id) => sessions.set(id, front),
  });
  front.onmessage = (message) => child.send(message).catch((err) => console.error(`bridge: to filepuff: ${err}`));
  child.onmessage = (message) => front.send(message).catch((err) => console.error(`bridge: to the client: ${err}`));
  front.onclose = () => {
    if (front.sessionId) sessions.delete(front.sessionId);
    child.close();
  };
  child.onclose = () => front.close();
  await child.start();
  await front.start();
  return front;
}

const server = http.createServer(async (request, response) => {
  try {
    const id = request.headers["mcp-session-id"];
    const front = id ? sessions.get(id) : await newSession();
    if (!front) {
      response.writeHead(404).end();
      return;
    }
    await front.handleRequest(request, response);
  } catch (err) {
    console.error(`bridge: ${err}`);
    if (!response.headersSent) response.writeHead(500).end();
  }
});
server.listen(0, "127.0.0.1", () => {
  console.log(`bridge: http://127.0.0.1:${server.address().port}/mcp`);
});
