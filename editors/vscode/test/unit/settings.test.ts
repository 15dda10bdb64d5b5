// Settings → the server launch, initializationOptions, document selector and MCP definition.
import { describe, expect, it } from "vitest";
import {
  DEFAULT_SETTINGS,
  documentSelectorLanguages,
  doctorLaunch,
  initializationOptions,
  launchFailure,
  lspLaunch,
  mcpDefinition,
  readSettings,
} from "../../src/settings";

const from = (values: Record<string, unknown>) => readSettings((key) => values[key]);

describe("readSettings", () => {
  it("falls back to the defaults for unset or mistyped values", () => {
    expect(from({})).toEqual(DEFAULT_SETTINGS);
    expect(
      from({ path: "  ", extraArgs: ["ok", 3], env: { A: 1 }, servers: [], languages: "x", "trace.server": "loud", "mcp.enable": "no" }),
    ).toEqual(DEFAULT_SETTINGS);
  });

  it("keeps well-typed values", () => {
    const s = from({
      path: "/opt/filepuff ",
      extraArgs: ["--root", "/w"],
      env: { FILEPUFF_LOG: "debug" },
      servers: { gopls: { command: ["/opt/gopls"] } },
      languages: { python: { servers: ["basedpyright", "ruff"] } },
      documentSelector: ["go"],
      "trace.server": "verbose",
      "mcp.enable": false,
    });
    expect(s.path).toBe("/opt/filepuff");
    expect(s.extraArgs).toEqual(["--root", "/w"]);
    expect(s.trace).toBe("verbose");
    expect(s.mcpEnable).toBe(false);
    expect(s.servers.gopls.command).toEqual(["/opt/gopls"]);
  });
});

describe("lspLaunch", () => {
  it("runs `filepuff ARGS lsp` in the folder with the merged environment", () => {
    const s = from({ path: "/bin/fp", extraArgs: ["--root", "/w"], env: { FILEPUFF_LOG: "info", PATH: "/tools" } });
    expect(lspLaunch(s, "/w", { PATH: "/usr/bin", HOME: "/h", GONE: undefined })).toEqual({
      command: "/bin/fp",
      args: ["--root", "/w", "lsp"],
      cwd: "/w",
      env: { PATH: "/tools", HOME: "/h", FILEPUFF_LOG: "info" },
    });
  });

  it("defaults to `filepuff lsp` on PATH", () => {
    const launch = lspLaunch(DEFAULT_SETTINGS, undefined, {});
    expect([launch.command, ...launch.args]).toEqual(["filepuff", "lsp"]);
    expect(launch.cwd).toBeUndefined();
  });

  it("asks doctor for JSON only when told", () => {
    expect(doctorLaunch(DEFAULT_SETTINGS, "/w", true, {}).args).toEqual(["doctor", "--json"]);
    expect(doctorLaunch(from({ extraArgs: ["--root", "/x"] }), "/w", false, {}).args).toEqual(["--root", "/x", "doctor"]);
  });
});

describe("initializationOptions", () => {
  it("is undefined without overrides, so filepuff.toml applies", () => {
    expect(initializationOptions(DEFAULT_SETTINGS)).toBeUndefined();
  });

  it("passes servers and languages in filepuff.toml's shapes, leaving out empty parts", () => {
    const servers = { gopls: { command: ["/opt/gopls"], settings: { gopls: { staticcheck: true } } } };
    expect(initializationOptions(from({ servers }))).toEqual({ servers });
    const languages = { python: { servers: ["basedpyright", "ruff"] } };
    expect(initializationOptions(from({ servers, languages }))).toEqual({ servers, languages });
  });
});

describe("documentSelectorLanguages", () => {
  it("uses the setting when given", () => {
    expect(documentSelectorLanguages(from({ documentSelector: ["rust", "go", "go"] }), undefined)).toEqual(["go", "rust"]);
  });

  it("without doctor, serves filepuff's default languages as VS Code ids", () => {
    expect(documentSelectorLanguages(DEFAULT_SETTINGS, undefined)).toEqual([
      "c", "cpp", "go", "javascript", "javascriptreact", "python", "typescript", "typescriptreact",
    ]);
  });

  it("with doctor, serves what the installed servers serve plus the overrides' languages", () => {
    const doctor = [
      { name: "gopls", languages: ["go"], serves: ["go"] },
      { name: "pyright", languages: ["python"], serves: [] },
      { name: "tsls", languages: ["typescript", "tsx"], serves: ["tsx"] },
    ];
    const s = from({
      servers: { zls: { command: ["zls"], languages: ["zig"] }, off: { languages: ["cobol"], disabled: true } },
      languages: { python: { servers: ["ruff"] } },
    });
    expect(documentSelectorLanguages(s, doctor)).toEqual(["go", "python", "typescriptreact", "zig"]);
  });
});

describe("mcpDefinition", () => {
  it("runs `filepuff mcp --root FOLDER` in the folder, so it attaches to the editor's Engine", () => {
    const s = from({ path: "/bin/fp", extraArgs: ["--ignored-for-mcp"], env: { PATH: "/tools" } });
    expect(mcpDefinition(s, { name: "proj", path: "/w/proj" })).toEqual({
      label: "filepuff (proj)",
      command: "/bin/fp",
      args: ["mcp", "--root", "/w/proj"],
      cwd: "/w/proj",
      env: { PATH: "/tools" },
    });
  });
});

describe("launchFailure", () => {
  const enoent = Object.assign(new Error("spawn filepuff ENOENT"), { code: "ENOENT", syscall: "spawn filepuff" });

  it("says that in a remote window filepuff.path goes in the Remote settings", () => {
    const message = launchFailure("starting filepuff lsp", "filepuff", enoent, { remoteName: "ssh-remote" });
    expect(message).toBe(
      'starting filepuff lsp failed: "filepuff" was not found (spawn ENOENT). Set filepuff.path to the full path of the ' +
        'filepuff binary in the Remote settings of this ssh-remote window ("Preferences: Open Remote Settings"): VS Code ' +
        "ignores filepuff.path from User settings in a remote window, since it names a program on the remote machine.",
    );
  });

  it("points a local window at User or Workspace settings or PATH", () => {
    const message = launchFailure("starting filepuff lsp", "/opt/fp", enoent, { remoteName: undefined });
    expect(message).toContain('"/opt/fp" was not found (spawn ENOENT)');
    expect(message).toContain("in your User or Workspace settings, or put filepuff on PATH.");
    expect(message).not.toContain("Remote");
  });

  it("recognises ENOENT in an execFile error's text (doctor) and passes other errors through", () => {
    const doctor = new Error("spawn filepuff ENOENT\n");
    expect(launchFailure("filepuff doctor", "filepuff", doctor, { remoteName: "wsl" })).toContain("Remote settings of this wsl window");
    expect(launchFailure("filepuff doctor", "filepuff", new Error("exit 2: bad config"), { remoteName: "wsl" })).toBe(
      "filepuff doctor failed: exit 2: bad config",
    );
    expect(launchFailure("x", "filepuff", "EACCES", { remoteName: undefined })).toBe("x failed: EACCES");
  });
});
