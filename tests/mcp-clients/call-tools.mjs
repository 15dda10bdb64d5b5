// The TypeScript SDK's client calling filepuff's tools, validating each result's
// structuredContent against the tool's outputSchema with ajv (JSON Schema 2020-12, strict mode,
// formats checked): the SDK does so in callTool when it has the tool's outputSchema from
// tools/list, and throws on a mismatch. Each input schema is compiled by the same strict ajv.
//
// Usage: node call-tools.mjs CALLS.json stdio FILEPUFF ROOT
//        node call-tools.mjs CALLS.json http URL TOKEN_FILE
// CALLS.json: [{"tool": NAME, "arguments": {...}}, ...]; an argument string "${TOOL.FIELD}" is
// replaced by FIELD of the structuredContent of the last call of TOOL. Prints one JSON object: the tools
// listed ({name, outputSchema: bool, inputSchemaError}) and each call's outcome
// ({tool, ok, isError, error, structured: [keys]}).
import { readFileSync } from "node:fs";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

const [callsFile, kind, target, extra] = process.argv.slice(2);
const calls = JSON.parse(readFileSync(callsFile, "utf8"));

const ajv = new Ajv2020({ strict: true, allErrors: true });
addFormats.default(ajv);

const transport =
  kind === "stdio"
    ? new StdioClientTransport({ command: target, args: ["mcp", "--root", extra], stderr: "inherit" })
    : new StreamableHTTPClientTransport(new URL(target), {
        requestInit: { headers: { Authorization: `Bearer ${readFileSync(extra, "utf8").trim()}` } },
      });
const client = new Client(
  { name: "filepuff-call-tools", version: "1.0.0" },
  { jsonSchemaValidator: new AjvJsonSchemaValidator(ajv) },
);
await client.connect(transport);

const tools = [];
let cursor;
do {
  const page = await client.listTools({ cursor });
  for (const tool of page.tools) {
    let inputSchemaError = null;
    try {
      ajv.compile(tool.inputSchema);
    } catch (err) {
      inputSchemaError = String(err.message ?? err);
    }
    tools.push({ name: tool.name, outputSchema: tool.outputSchema !== undefined, inputSchemaError });
  }
  cursor = page.nextCursor;
} while (cursor);

/** The structuredContent of the last call of each tool. */
const structured = new Map();

function resolve(value) {
  if (typeof value === "string") {
    const found = /^\$\{(\w+)\.(\w+)\}$/.exec(value);
    return found ? structured.get(found[1])?.[found[2]] : value;
  }
  if (Array.isArray(value)) return value.map(resolve);
  if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolve(v)]));
  return value;
}

const results = [];
for (const call of calls) {
  const { tool } = call;
  const args = resolve(call.arguments ?? {});
  try {
    const result = await client.callTool({ name: tool, arguments: args }, undefined, { timeout: 120000 });
    if (result.structuredContent) structured.set(tool, result.structuredContent);
    const text = (result.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
    results.push({
      tool,
      ok: true,
      isError: result.isError === true,
      error: result.isError ? text.slice(0, 2000) : null,
      structured: result.structuredContent ? Object.keys(result.structuredContent).sort() : null,
    });
  } catch (err) {
    results.push({ tool, ok: false, isError: null, error: String(err.message ?? err), structured: null });
  }
}
await client.close();
console.log(JSON.stringify({ tools, calls: results }));
