// Drives the real `filepuff lsp` (and gopls behind it) from Node with vscode-jsonrpc, launched
// exactly as the extension launches it: the command, arguments, environment and
// initializationOptions come from src/settings.ts, and the status bar text from src/status.ts.
// Then the MCP definition the extension registers (`filepuff mcp --root FOLDER`) is started and
// must see the editor's unsaved buffer. Needs FILEPUFF_BIN and gopls on PATH (scripts/test).
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { createInterface } from "node:readline";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type MessageConnection, StreamMessageReader, StreamMessageWriter, createMessageConnection } from "vscode-jsonrpc/node";
import {
  DefinitionRequest,
  DidChangeTextDocumentNotification,
  DidOpenTextDocumentNotification,
  InitializeRequest,
  InitializedNotification,
  type Location,
  type LocationLink,
} from "vscode-languageserver-protocol";
import { initializationOptions, lspLaunch, mcpDefinition, readSettings } from "../../src/settings";
import { type StatusPayload, statusView } from "../../src/status";

const FIXTURE = resolve(__dirname, "../../../../tests/fixtures/lsp/go");
const binary = process.env.FILEPUFF_BIN;
if (!binary) throw new Error("set FILEPUFF_BIN to the filepuff binary (scripts/test does)");
const gopls = execFileSync("sh", ["-c", "command -v gopls"], { encoding: "utf8" }).trim();

// The user's settings, as VS Code would hand them to readSettings.
const settings = readSettings(
  (key) =>
    ({
      path: binary,
      env: { FILEPUFF_LOG: "info" },
      servers: { gopls: { command: [gopls], settings: { gopls: { "ui.semanticTokens": false } } } },
    })[key],
);

let root: string;
let child: ChildProcess;
let connection: MessageConnection;
let stderr = "";
const statuses: StatusPayload[] = [];

function waitFor<T>(what: string, probe: () => T | undefined, timeoutMs = 60_000): Promise<T> {
  const started = Date.now();
  return new Promise((resolvePromise, reject) => {
    const tick = () => {
      const value = probe();
      if (value !== undefined) return resolvePromise(value);
      if (Date.now() - started > timeoutMs) return reject(new Error(`timed out waiting for ${what}; filepuff stderr:\n${stderr}`));
      setTimeout(tick, 100);
    };
    tick();
  });
}

beforeAll(async () => {
  root = realpathSync(mkdtempSync(join(tmpdir(), "filepuff-vscode-")));
  cpSync(FIXTURE, root, { recursive: true });
  const launch = lspLaunch(settings, root);
  child = spawn(launch.command, launch.args, { cwd: launch.cwd, env: launch.env, stdio: ["pipe", "pipe", "pipe"] });
  child.stderr!.on("data", (chunk) => (stderr += chunk));
  connection = createMessageConnection(new StreamMessageReader(child.stdout!), new StreamMessageWriter(child.stdin!));
  connection.onNotification("filepuff/status", (payload: StatusPayload) => statuses.push(payload));
  connection.onRequest(() => null); // registerCapability, workDoneProgress/create, configuration…
  connection.listen();
});

afterAll(async () => {
  try {
    await connection.sendRequest("shutdown");
    connection.sendNotification("exit");
  } catch {
    child.kill();
  }
  await waitFor("filepuff lsp to exit", () => (child.exitCode !== null || child.signalCode !== null ? true : undefined), 20_000).catch(
    () => child.kill("SIGKILL"),
  );
  connection.dispose();
  rmSync(root, { recursive: true, force: true });
});

describe("filepuff lsp launched as the extension launches it", () => {
  const mainUri = () => pathToFileURL(join(root, "main.go")).href;
  let unsaved = "";

  it("initializes with the extension's initializationOptions", async () => {
    const result = await connection.sendRequest(InitializeRequest.type, {
      processId: process.pid,
      rootUri: pathToFileURL(root).href,
      workspaceFolders: [{ uri: pathToFileURL(root).href, name: "ws" }],
      capabilities: { general: { positionEncodings: ["utf-16"] }, window: { workDoneProgress: true } },
      initializationOptions: initializationOptions(settings),
    });
    expect(result.capabilities.definitionProvider).toBeTruthy();
    await connection.sendNotification(InitializedNotification.type, {});
  });

  it("reports gopls in filepuff/status, which the status bar shows", async () => {
    const payload = await connection.sendRequest<StatusPayload>("filepuff/status");
    expect(payload.positionEncoding).toBe("utf-16");
    const server = payload.servers.find((s) => s.name === "gopls");
    expect(server?.pid).toBeGreaterThan(0);
    // The override's command is the one running.
    expect(readFileSync(`/proc/${server!.pid}/cmdline`, "utf8").split("\0")[0]).toBe(gopls);
    const view = statusView(payload);
    expect(view.text).toMatch(/filepuff: gopls/);
    expect(view.tooltip).toContain(`pid ${server!.pid}`);
  });

  it("answers a definition from gopls at a UTF-16 position in an unsaved buffer", async () => {
    const disk = readFileSync(join(root, "main.go"), "utf8");
    unsaved = "// unsaved 👋 line from the editor\n" + disk;
    await connection.sendNotification(DidOpenTextDocumentNotification.type, {
      textDocument: { uri: mainUri(), languageId: "go", version: 1, text: disk },
    });
    await connection.sendNotification(DidChangeTextDocumentNotification.type, {
      textDocument: { uri: mainUri(), version: 2 },
      contentChanges: [{ text: unsaved }],
    });
    const lines = unsaved.split("\n");
    const line = lines.findIndex((l) => l.includes("greet.Shout("));
    const character = lines[line].indexOf("Hello") + 1; // JS indices are UTF-16 units, as LSP's
    let found: Location | undefined;
    const deadline = Date.now() + 60_000;
    // gopls may still be loading the module: ask until it answers with a location.
    while (found === undefined && Date.now() < deadline) {
      const answer = await connection.sendRequest(DefinitionRequest.type, {
        textDocument: { uri: mainUri() },
        position: { line, character },
      });
      found = asLocations(answer)[0];
      if (found === undefined) await new Promise((r) => setTimeout(r, 250));
    }
    expect(found, `no definition; filepuff stderr:\n${stderr}`).toBeDefined();
    expect(found!.uri).toBe(pathToFileURL(join(root, "greet", "greet.go")).href);
    const greet = readFileSync(join(root, "greet", "greet.go"), "utf8").split("\n");
    const hello = greet.indexOf("func Hello(name string) string {");
    expect(found!.range.start).toEqual({ line: hello, character: "func ".length });
    expect(found!.range.end).toEqual({ line: hello, character: "func Hello".length });
  });

  it("registers an MCP server that attaches to this Engine and sees the unsaved buffer", async () => {
    const definition = mcpDefinition(settings, { name: "ws", path: root });
    const mcp = spawn(definition.command, definition.args, {
      cwd: definition.cwd,
      env: { ...process.env, ...definition.env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let mcpStderr = "";
    mcp.stderr!.on("data", (chunk) => (mcpStderr += chunk));
    const replies = new Map<number, { result?: Record<string, unknown>; error?: unknown }>();
    createInterface({ input: mcp.stdout! }).on("line", (line) => {
      const message = JSON.parse(line);
      if (typeof message.id === "number") replies.set(message.id, message);
    });
    const call = async (id: number, method: string, params: unknown) => {
      mcp.stdin!.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
      return waitFor(`MCP ${method}; filepuff mcp stderr:\n${mcpStderr}`, () => replies.get(id), 30_000);
    };
    try {
      const init = await call(1, "initialize", {
        protocolVersion: "2025-06-18",
        capabilities: {},
        clientInfo: { name: "filepuff-vscode-test", version: "0" },
      });
      expect(init.error).toBeUndefined();
      mcp.stdin!.write(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) + "\n");
      const read = await call(2, "tools/call", { name: "file_read", arguments: { path: "main.go" } });
      const content = (read.result?.structuredContent as { content?: string; buffer_version?: number }) ?? {};
      expect(content.content).toBe(unsaved);
      expect(content.buffer_version).toBe(2);
    } finally {
      mcp.kill();
    }
  });
});

function asLocations(answer: Location | Location[] | LocationLink[] | null): Location[] {
  if (answer === null) return [];
  const list = Array.isArray(answer) ? answer : [answer];
  return list.map((item) =>
    "targetUri" in item ? { uri: item.targetUri, range: item.targetSelectionRange } : item,
  );
}
