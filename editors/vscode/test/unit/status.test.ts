// filepuff/status payloads → the status bar's text, tooltip and state.
import { describe, expect, it } from "vitest";
import { stateLabel, statusView } from "../../src/status";

const gopls = { name: "gopls", version: "v0.23.0", pid: 41, positionEncoding: "utf-16", state: "ready", documents: 1 };

describe("statusView", () => {
  it("shows idle without servers", () => {
    expect(statusView({ servers: [] })).toMatchObject({ severity: "idle", text: "$(circle-outline) filepuff" });
  });

  it("lists ready servers with their details in the tooltip", () => {
    const view = statusView({ positionEncoding: "utf-8", servers: [gopls, { ...gopls, name: "ruff", documents: 2, pid: null }] });
    expect(view.severity).toBe("ready");
    expect(view.text).toBe("$(check) filepuff: gopls, ruff");
    expect(view.tooltip).toBe(
      "filepuff lsp (editor encoding utf-8)\ngopls: ready, v0.23.0, 1 document, utf-16, pid 41\nruff: ready, v0.23.0, 2 documents, utf-16",
    );
  });

  it("shows busy servers as indexing, and crashed ones win over everything", () => {
    const busy = statusView({ servers: [gopls, { ...gopls, name: "clangd", state: "busy" }] });
    expect(busy).toMatchObject({ severity: "indexing", text: "$(sync~spin) filepuff: gopls, clangd (indexing)" });
    const crashed = statusView({ servers: [{ ...gopls, state: "busy" }, { ...gopls, name: "clangd", state: "exited" }] });
    expect(crashed).toMatchObject({ severity: "crashed", text: "$(error) filepuff: gopls (indexing), clangd (crashed)" });
  });

  it("ends the tooltip with the binary's line", () => {
    const line = "binary: /e/bin/filepuff (bundled with the extension)";
    expect(statusView({ servers: [gopls] }, line).tooltip.split("\n").at(-1)).toBe(line);
    expect(statusView({ servers: [] }, line).tooltip).toBe(`filepuff: no language server running yet\n${line}`);
  });

  it("passes unknown states through", () => {
    expect(stateLabel("starting")).toBe("starting");
    expect(statusView({ servers: [{ name: "x", state: "starting" }] }).text).toBe("$(check) filepuff: x (starting)");
  });
});
