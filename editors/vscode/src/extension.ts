/**
 * The VS Code face: starts `filepuff lsp` with vscode-languageclient, shows `filepuff/status` in
 * the status bar, reports what the person looks at (`filepuff/editorFocus`, focus.ts), offers restart / doctor / log commands, and registers `filepuff mcp` for the
 * workspace folder as an MCP server so agent mode attaches to the same Engine. The decisions
 * (launch command, initializationOptions, selector, status text, MCP definition, which binary)
 * live in settings.ts, status.ts and binary.ts.
 */

import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import { LanguageClient, type LanguageClientOptions, type ServerOptions } from "vscode-languageclient/node";
import {
  type DoctorEntry,
  type FilepuffSettings,
  documentSelectorLanguages,
  doctorLaunch,
  initializationOptions,
  launchFailure,
  lspLaunch,
  mcpDefinition,
  readSettings,
} from "./settings";
import { EDITOR_FOCUS, type EditorLike, FocusReporter, focusParams } from "./focus";
import { type StatusPayload, statusView } from "./status";
import { type ResolvedBinary, binaryDescription, resolveBinary } from "./binary";

let client: LanguageClient | undefined;
let statusItem: vscode.StatusBarItem;
let output: vscode.OutputChannel;
/** What the person looks at, reported to filepuff for agents (`filepuff/editorFocus`). */
let focus: FocusReporter | undefined;
let servedLanguages: string[] = [];
/** The extension's directory: a platform-specific .vsix carries the binary in its `bin/`. */
let extensionPath = "";
/** The binary the last `settings()` resolved, named in the status bar's tooltip. */
let binary: ResolvedBinary = { command: "filepuff", source: "PATH" };

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  extensionPath = context.extensionPath;
  output = vscode.window.createOutputChannel("filepuff");
  statusItem = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 0);
  statusItem.command = "filepuff.openLog";
  context.subscriptions.push(output, statusItem);

  context.subscriptions.push(
    vscode.commands.registerCommand("filepuff.restart", async () => {
      await stopClient();
      await startClient();
    }),
    vscode.commands.registerCommand("filepuff.doctor", () => showDoctor()),
    vscode.commands.registerCommand("filepuff.openLog", () => output.show(true)),
    vscode.workspace.onDidChangeConfiguration(async (event) => {
      if (event.affectsConfiguration("filepuff") && !event.affectsConfiguration("filepuff.trace")) {
        await stopClient();
        await startClient();
      }
    }),
  );
  registerMcp(context);
  focus = new FocusReporter(
    () => focusParams(asEditorLike(vscode.window.activeTextEditor), (language) => servedLanguages.includes(language)),
    (params) => void client?.sendNotification(EDITOR_FOCUS, params).catch(() => undefined),
  );
  const changed = () => focus?.schedule();
  context.subscriptions.push(
    vscode.window.onDidChangeActiveTextEditor(changed),
    vscode.window.onDidChangeTextEditorSelection(changed),
    vscode.window.onDidChangeTextEditorVisibleRanges(changed),
    // An edit that leaves the cursor where it was still changes the focus's version.
    vscode.workspace.onDidChangeTextDocument((event) => {
      if (event.document === vscode.window.activeTextEditor?.document) changed();
    }),
  );
  await startClient();
}

export async function deactivate(): Promise<void> {
  await stopClient();
}

/** The settings, with `path` the binary resolved as binary.ts says (setting, bundled, PATH). */
function settings(): FilepuffSettings {
  const config = vscode.workspace.getConfiguration("filepuff");
  const read = readSettings((key) => config.get(key));
  const setting = config.get("path");
  binary = resolveBinary({
    setting: typeof setting === "string" ? setting.trim() : undefined,
    bundled: path.join(extensionPath, "bin", process.platform === "win32" ? "filepuff.exe" : "filepuff"),
    pathVariable: read.env.PATH ?? process.env.PATH,
    isExecutable,
    delimiter: path.delimiter,
  });
  return { ...read, path: binary.command };
}

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

function workspaceFolder(): vscode.WorkspaceFolder | undefined {
  return vscode.workspace.workspaceFolders?.[0];
}

async function startClient(): Promise<void> {
  const current = settings();
  const folder = workspaceFolder()?.uri.fsPath;
  const launch = lspLaunch(current, folder);
  const serverOptions: ServerOptions = {
    command: launch.command,
    args: launch.args,
    options: { cwd: launch.cwd, env: launch.env },
  };
  const languages = documentSelectorLanguages(current, await doctorReport(current, folder));
  servedLanguages = languages;
  const clientOptions: LanguageClientOptions = {
    documentSelector: languages.map((language) => ({ scheme: "file", language })),
    initializationOptions: initializationOptions(current),
    outputChannel: output,
  };
  // The client id "filepuff" makes vscode-languageclient read `filepuff.trace.server`.
  client = new LanguageClient("filepuff", "filepuff", serverOptions, clientOptions);
  client.onNotification("filepuff/status", (payload: StatusPayload) => showStatus(payload));
  statusItem.text = "$(loading~spin) filepuff";
  statusItem.tooltip = `starting ${launch.command} ${launch.args.join(" ")}\n${binaryDescription(binary)}`;
  output.appendLine(binaryDescription(binary));
  statusItem.show();
  try {
    await client.start();
    showStatus(await client.sendRequest<StatusPayload>("filepuff/status"));
    // The new session knows nothing of the focus yet.
    focus?.reset();
    focus?.flush();
  } catch (error) {
    const message = launchFailure("starting filepuff lsp", launch.command, error, { remoteName: vscode.env.remoteName });
    statusItem.text = "$(error) filepuff";
    statusItem.tooltip = `${message}\n${binaryDescription(binary)}`;
    output.appendLine(message);
    void vscode.window.showErrorMessage(message);
  }
}

/** The parts of a text editor a focus report is made of; URIs as the language client sends them. */
function asEditorLike(editor: vscode.TextEditor | undefined): EditorLike | undefined {
  if (editor === undefined) return undefined;
  const uri = client ? client.code2ProtocolConverter.asUri(editor.document.uri) : editor.document.uri.toString();
  return {
    document: {
      uri,
      version: editor.document.version,
      languageId: editor.document.languageId,
      isUntitled: editor.document.isUntitled || editor.document.uri.scheme !== "file",
    },
    selection: editor.selection,
    visibleRanges: editor.visibleRanges,
  };
}

async function stopClient(): Promise<void> {
  const running = client;
  client = undefined;
  if (running) await running.stop().catch((error) => output.appendLine(`stopping filepuff lsp: ${String(error)}`));
}

function showStatus(payload: StatusPayload): void {
  const view = statusView(payload, binaryDescription(binary));
  statusItem.text = view.text;
  statusItem.tooltip = view.tooltip;
  statusItem.backgroundColor =
    view.severity === "crashed" ? new vscode.ThemeColor("statusBarItem.errorBackground") : undefined;
  statusItem.show();
}

/** Runs `launch`; rejects when it cannot be started or exits with a status other than 0, with
 * what it printed on stdout kept as the error's `stdout` (a report that ends in an error). */
function run(launch: { command: string; args: string[]; cwd?: string; env: Record<string, string> }): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(launch.command, launch.args, { cwd: launch.cwd, env: launch.env, timeout: 30_000 }, (error, stdout, stderr) =>
      error ? reject(Object.assign(new Error(`${error.message}\n${stderr}`), { stdout })) : resolve(stdout),
    );
  });
}

async function doctorReport(current: FilepuffSettings, folder: string | undefined): Promise<DoctorEntry[] | undefined> {
  if (current.documentSelector.length > 0) return undefined;
  try {
    return JSON.parse(await run(doctorLaunch(current, folder, true))) as DoctorEntry[];
  } catch (error) {
    const launch = doctorLaunch(current, folder, true);
    const message = launchFailure("filepuff doctor --json", launch.command, error, { remoteName: vscode.env.remoteName });
    output.appendLine(`${message} Serving the default languages.`);
    return undefined;
  }
}

async function showDoctor(): Promise<void> {
  const launch = doctorLaunch(settings(), workspaceFolder()?.uri.fsPath, false);
  output.appendLine(`$ ${launch.command} ${launch.args.join(" ")}`);
  try {
    output.appendLine(await run(launch));
  } catch (error) {
    // Exit status 2 after a whole report: the graph store cannot be used (the report says why).
    const report = (error as { stdout?: string }).stdout;
    if (report) output.appendLine(report);
    output.appendLine(launchFailure("filepuff doctor", launch.command, error, { remoteName: vscode.env.remoteName }));
  }
  output.show(true);
}

function registerMcp(context: vscode.ExtensionContext): void {
  // The MCP server definition provider API arrived in VS Code 1.101.
  if (typeof vscode.lm?.registerMcpServerDefinitionProvider !== "function") return;
  const changed = new vscode.EventEmitter<void>();
  context.subscriptions.push(
    changed,
    vscode.workspace.onDidChangeWorkspaceFolders(() => changed.fire()),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration("filepuff")) changed.fire();
    }),
    vscode.lm.registerMcpServerDefinitionProvider("filepuff.mcp", {
      onDidChangeMcpServerDefinitions: changed.event,
      provideMcpServerDefinitions: () => {
        const current = settings();
        const folder = workspaceFolder();
        if (!current.mcpEnable || folder === undefined) return [];
        const definition = mcpDefinition(current, { name: folder.name, path: folder.uri.fsPath });
        const server = new vscode.McpStdioServerDefinition(definition.label, definition.command, definition.args, definition.env);
        server.cwd = vscode.Uri.file(definition.cwd);
        return [server];
      },
    }),
  );
}
