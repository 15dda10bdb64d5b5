/**
 * The status bar's view of a `filepuff/status` payload (docs/lsp.md): which backends run and in
 * what state — ready, indexing (busy) or crashed (exited). No `vscode` import: unit-tested.
 */

/** One backend in `filepuff/status`. */
export interface ServerStatus {
  name: string;
  version?: string | null;
  root?: string | null;
  pid?: number | null;
  positionEncoding?: string | null;
  state: "ready" | "busy" | "exited" | string;
  documents?: number;
}

/** The `filepuff/status` notification's params, and the request's result. */
export interface StatusPayload {
  positionEncoding?: string;
  servers: ServerStatus[];
}

export type Severity = "ready" | "indexing" | "crashed" | "idle";

/** What the status bar item shows: its text (with a codicon), tooltip and overall state. */
export interface StatusView {
  text: string;
  tooltip: string;
  severity: Severity;
}

/** A backend's state in the words the user sees. */
export function stateLabel(state: string): Severity | string {
  switch (state) {
    case "ready":
      return "ready";
    case "busy":
      return "indexing";
    case "exited":
      return "crashed";
    default:
      return state;
  }
}

/**
 * Maps a payload to the status bar: the worst state wins (crashed, then indexing, then ready).
 * `binary` (binary.ts's `binaryDescription`) is the tooltip's last line: which filepuff runs.
 */
export function statusView(payload: StatusPayload, binary?: string): StatusView {
  const tail = binary ? [binary] : [];
  const servers = payload.servers ?? [];
  if (servers.length === 0) {
    return { text: "$(circle-outline) filepuff", tooltip: ["filepuff: no language server running yet", ...tail].join("\n"), severity: "idle" };
  }
  const crashed = servers.filter((s) => s.state === "exited");
  const busy = servers.filter((s) => s.state === "busy");
  const severity: Severity = crashed.length > 0 ? "crashed" : busy.length > 0 ? "indexing" : "ready";
  const icon = { crashed: "$(error)", indexing: "$(sync~spin)", ready: "$(check)", idle: "$(circle-outline)" }[severity];
  const names = servers.map((s) => (s.state === "ready" ? s.name : `${s.name} (${stateLabel(s.state)})`));
  const lines = servers.map((s) => {
    const parts = [stateLabel(s.state)];
    if (s.version) parts.push(s.version);
    if (s.documents !== undefined) parts.push(`${s.documents} document${s.documents === 1 ? "" : "s"}`);
    if (s.positionEncoding) parts.push(s.positionEncoding);
    if (s.pid) parts.push(`pid ${s.pid}`);
    return `${s.name}: ${parts.join(", ")}`;
  });
  const header = `filepuff lsp${payload.positionEncoding ? ` (editor encoding ${payload.positionEncoding})` : ""}`;
  return { text: `${icon} filepuff: ${names.join(", ")}`, tooltip: [header, ...lines, ...tail].join("\n"), severity };
}
