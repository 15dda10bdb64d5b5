// The TypeScript SDK's client over stdio against any command that serves MCP (the installed
// npm package through `npx -y filepuff mcp`, tests/e2e/test_packaging.py): initialize, list
// the tools, call file_search for a pattern.
//
// Usage: node stdio-session.mjs CWD PATTERN COMMAND [ARGS...]
// Prints one JSON object: {server: {name, version}, tools: [names], text: file_search's text}.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [cwd, pattern, command, ...args] = process.argv.slice(2);
const transport = new StdioClientTransport({ command, args, cwd, env: process.env, stderr: "inherit" });
const client = new Client({ name: "filepuff-stdio-session", version: "1.0.0" });
await client.connect(transport);
const { tools } = await client.listTools();
const result = await client.callTool({ name: "file_search", arguments: { pattern } });
if (result.isError) {
  throw new Error(`file_search failed: ${JSON.stringify(result.content)}`);
}
const text = result.content.filter((c) => c.type === "text").map((c) => c.text).join("");
console.log(JSON.stringify({ server: client.getServerVersion(), tools: tools.map((t) => t.name), text }));
await client.close();
