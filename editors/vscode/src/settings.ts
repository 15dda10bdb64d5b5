/**
 * The extension's own logic, free of the `vscode` module so that it is unit-tested and shared
 * with the Node integration test: settings → the `filepuff lsp` launch command, the
 * `initializationOptions` (server overrides), the document selector, and the `filepuff mcp`
 * definition for agent mode.
 */

/** One `[servers.NAME]` override of filepuff.toml (docs/configuration.md), as JSON. */
export interface ServerOverride {
  command?: string[];
  languages?: string[];
  env?: Record<string, string>;
  root_markers?: string[];
  initialization_options?: unknown;
  settings?: unknown;
  disabled?: boolean;
  position_encoding?: "utf-8" | "utf-16" | "utf-32";
}

/** One `[languages.NAME]` entry: which servers serve the language, in order. */
export interface LanguageOverride {
  servers: string[];
}

/** The `filepuff.*` settings, normalised (wrong types fall back to the defaults). */
export interface FilepuffSettings {
  /** The binary: a path, or a name looked up on PATH. */
  path: string;
  /** Arguments put before the subcommand (`filepuff ARGS lsp`). */
  extraArgs: string[];
  /** Extra environment for filepuff (and so for the language servers it starts). */
  env: Record<string, string>;
  servers: Record<string, ServerOverride>;
  languages: Record<string, LanguageOverride>;
  /** VS Code language ids; empty = derived (see {@link documentSelectorLanguages}). */
  documentSelector: string[];
  trace: "off" | "messages" | "verbose";
  mcpEnable: boolean;
}

export const DEFAULT_SETTINGS: FilepuffSettings = {
  path: "filepuff",
  extraArgs: [],
  env: {},
  servers: {},
  languages: {},
  documentSelector: [],
  trace: "off",
  mcpEnable: true,
};

/** Reads the settings through `get(key)` (VS Code's `WorkspaceConfiguration.get` of section `filepuff`). */
export function readSettings(get: (key: string) => unknown): FilepuffSettings {
  const d = DEFAULT_SETTINGS;
  const path = get("path");
  const trace = get("trace.server");
  return {
    path: typeof path === "string" && path.trim() !== "" ? path.trim() : d.path,
    extraArgs: stringArray(get("extraArgs")) ?? d.extraArgs,
    env: stringRecord(get("env")) ?? d.env,
    servers: (plainObject(get("servers")) as Record<string, ServerOverride>) ?? d.servers,
    languages: (plainObject(get("languages")) as Record<string, LanguageOverride>) ?? d.languages,
    documentSelector: stringArray(get("documentSelector")) ?? d.documentSelector,
    trace: trace === "messages" || trace === "verbose" ? trace : "off",
    mcpEnable: typeof get("mcp.enable") === "boolean" ? (get("mcp.enable") as boolean) : d.mcpEnable,
  };
}

/** A process to start: what vscode-languageclient's `Executable` and VS Code's MCP stdio definition take. */
export interface LaunchCommand {
  command: string;
  args: string[];
  /** The working directory: the workspace folder, when there is one. */
  cwd?: string;
  /** The whole environment of the child (the base environment plus `filepuff.env`). */
  env: Record<string, string>;
}

/** `filepuff [extraArgs] lsp`, run in the workspace folder. */
export function lspLaunch(
  settings: FilepuffSettings,
  workspaceFolder: string | undefined,
  baseEnv: Record<string, string | undefined> = process.env,
): LaunchCommand {
  return {
    command: settings.path,
    args: [...settings.extraArgs, "lsp"],
    cwd: workspaceFolder,
    env: mergeEnv(baseEnv, settings.env),
  };
}

/** `filepuff [extraArgs] doctor`: the servers filepuff finds, for the doctor command. */
export function doctorLaunch(
  settings: FilepuffSettings,
  workspaceFolder: string | undefined,
  json: boolean,
  baseEnv: Record<string, string | undefined> = process.env,
): LaunchCommand {
  return {
    command: settings.path,
    args: [...settings.extraArgs, "doctor", ...(json ? ["--json"] : [])],
    cwd: workspaceFolder,
    env: mergeEnv(baseEnv, settings.env),
  };
}

/**
 * The `initializationOptions` `filepuff lsp` takes (docs/lsp.md): `{servers, languages}` in the
 * shapes of filepuff.toml's tables; empty parts are left out, and `undefined` when there is
 * nothing to override (filepuff.toml and the defaults then apply).
 */
export function initializationOptions(
  settings: FilepuffSettings,
): { servers?: Record<string, ServerOverride>; languages?: Record<string, LanguageOverride> } | undefined {
  const options: { servers?: Record<string, ServerOverride>; languages?: Record<string, LanguageOverride> } = {};
  if (Object.keys(settings.servers).length > 0) options.servers = settings.servers;
  if (Object.keys(settings.languages).length > 0) options.languages = settings.languages;
  return Object.keys(options).length > 0 ? options : undefined;
}

/** filepuff's language names → VS Code language ids. */
const VSCODE_LANGUAGE_IDS: Record<string, string[]> = {
  go: ["go"],
  python: ["python"],
  c: ["c"],
  cpp: ["cpp"],
  typescript: ["typescript"],
  tsx: ["typescriptreact"],
  javascript: ["javascript", "javascriptreact"],
  rust: ["rust"],
  elixir: ["elixir"],
};

/** The languages filepuff serves when nothing tells otherwise (its default servers' languages). */
export const DEFAULT_LANGUAGES = ["go", "python", "c", "cpp", "typescript", "tsx", "javascript"];

/** One entry of `filepuff doctor --json`. */
export interface DoctorEntry {
  name: string;
  languages: string[];
  serves: string[];
  disabled?: boolean;
}

/**
 * The VS Code language ids of the document selector: `filepuff.documentSelector` when set;
 * else the languages the installed servers serve (`doctor`, when it ran), plus the languages
 * named by the overrides; else filepuff's default languages. Sorted, without duplicates.
 */
export function documentSelectorLanguages(settings: FilepuffSettings, doctor: DoctorEntry[] | undefined): string[] {
  if (settings.documentSelector.length > 0) return unique(settings.documentSelector);
  const languages: string[] = doctor ? doctor.flatMap((entry) => entry.serves) : [...DEFAULT_LANGUAGES];
  for (const server of Object.values(settings.servers)) {
    if (server.disabled !== true) languages.push(...(server.languages ?? []));
  }
  languages.push(...Object.keys(settings.languages));
  return unique(languages.flatMap((language) => VSCODE_LANGUAGE_IDS[language] ?? [language]));
}

/** What VS Code's `McpStdioServerDefinition` is made of. */
export interface McpDefinition {
  label: string;
  command: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
}

/**
 * `filepuff mcp --root FOLDER` for one workspace folder: run in the same root as the editor's
 * `filepuff lsp`, it attaches to that Engine over the per-workspace socket (the editor's unsaved
 * buffers, the same language servers) and serves on its own when no editor does.
 */
export function mcpDefinition(settings: FilepuffSettings, folder: { name: string; path: string }): McpDefinition {
  return {
    label: `filepuff (${folder.name})`,
    command: settings.path,
    args: ["mcp", "--root", folder.path],
    cwd: folder.path,
    env: { ...settings.env },
  };
}

function mergeEnv(base: Record<string, string | undefined>, extra: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(base)) if (value !== undefined) env[key] = value;
  return { ...env, ...extra };
}

function unique(items: string[]): string[] {
  return [...new Set(items)].sort();
}

function stringArray(value: unknown): string[] | undefined {
  return Array.isArray(value) && value.every((item) => typeof item === "string") ? value : undefined;
}

function plainObject(value: unknown): Record<string, unknown> | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

function stringRecord(value: unknown): Record<string, string> | undefined {
  const object = plainObject(value);
  if (object === undefined) return undefined;
  return Object.values(object).every((item) => typeof item === "string") ? (object as Record<string, string>) : undefined;
}

/** Where filepuff runs: the window's remote (VS Code's `env.remoteName`, e.g. "ssh-remote",
 * "wsl", "dev-container"), undefined for a local window. */
export interface LaunchPlace {
  remoteName: string | undefined;
}

/**
 * What to tell the person when running `command` failed: for a program that was not found
 * (`spawn … ENOENT`), where `filepuff.path` must be set. In a remote window that is the Remote
 * settings: the setting is machine-overridable, and VS Code ignores machine settings from User
 * settings in a remote window (they name programs on another machine), so a path set there has
 * no effect and PATH on the remote is searched instead.
 */
export function launchFailure(what: string, command: string, error: unknown, place: LaunchPlace): string {
  const code = (error as { code?: unknown } | null)?.code;
  const text = error instanceof Error ? error.message : String(error);
  if (code !== "ENOENT" && !/\bENOENT\b/.test(text)) return `${what} failed: ${text}`;
  const where =
    place.remoteName !== undefined
      ? `in the Remote settings of this ${place.remoteName} window ("Preferences: Open Remote Settings"): ` +
        "VS Code ignores filepuff.path from User settings in a remote window, since it names a program on the remote machine"
      : "in your User or Workspace settings, or put filepuff on PATH";
  return `${what} failed: "${command}" was not found (spawn ENOENT). Set filepuff.path to the full path of the filepuff binary ${where}.`;
}
