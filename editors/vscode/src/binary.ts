/**
 * Which filepuff binary the extension runs, and how to say so: `filepuff.path` when the person
 * set it, else the binary bundled in a platform-specific .vsix (`bin/filepuff` under the
 * extension, scripts/package-vsix), else `filepuff` found on PATH — the order rust-analyzer's
 * and ruff's extensions use. No `vscode` import: unit-tested.
 */

/** Where the binary came from, in resolution order. */
export type BinarySource = "setting" | "bundled" | "PATH";

/** The binary to run: `command` is a path, or for an unresolved PATH lookup the bare name. */
export interface ResolvedBinary {
  command: string;
  source: BinarySource;
}

/** What resolution needs from the outside, injected so tests need no files. */
export interface BinaryProbe {
  /** `filepuff.path` as the person set it (trimmed); undefined or "" when not set anywhere. */
  setting: string | undefined;
  /** The bundled binary's path (`<extension>/bin/filepuff`, `.exe` on Windows). */
  bundled: string;
  /** The PATH the binary would be searched on (the launch environment's). */
  pathVariable: string | undefined;
  /** Whether a file exists there and may be executed. */
  isExecutable: (path: string) => boolean;
  /** PATH's separator (`:`; `;` on Windows). */
  delimiter: string;
}

/** Resolves the binary: setting, then bundled, then PATH (its full path when found there). */
export function resolveBinary(probe: BinaryProbe): ResolvedBinary {
  if (probe.setting !== undefined && probe.setting !== "") return { command: probe.setting, source: "setting" };
  if (probe.isExecutable(probe.bundled)) return { command: probe.bundled, source: "bundled" };
  const name = probe.bundled.endsWith(".exe") ? "filepuff.exe" : "filepuff";
  for (const dir of (probe.pathVariable ?? "").split(probe.delimiter)) {
    if (dir === "") continue;
    const candidate = `${dir.replace(/[\\/]+$/, "")}/${name}`;
    if (probe.isExecutable(candidate)) return { command: candidate, source: "PATH" };
  }
  return { command: "filepuff", source: "PATH" };
}

/** The tooltip line naming the binary and where it came from. */
export function binaryDescription(binary: ResolvedBinary): string {
  switch (binary.source) {
    case "setting":
      return `binary: ${binary.command} (from the filepuff.path setting)`;
    case "bundled":
      return `binary: ${binary.command} (bundled with the extension)`;
    case "PATH":
      return binary.command.includes("/")
        ? `binary: ${binary.command} (found on PATH)`
        : `binary: ${binary.command} (looked up on PATH; not found there when the extension started)`;
  }
}
