// filepuff.path, the bundled binary, PATH: which one runs, and the tooltip line saying so.
import { describe, expect, it } from "vitest";
import { binaryDescription, resolveBinary } from "../../src/binary";

const probe = (setting: string | undefined, executables: string[], pathVariable = "/usr/local/bin:/usr/bin") => ({
  setting,
  bundled: "/ext/filepuff-0.1.0-linux-x64/bin/filepuff",
  pathVariable,
  isExecutable: (path: string) => executables.includes(path),
  delimiter: ":",
});

describe("resolveBinary", () => {
  it.each([
    // setting, executables, expected
    ["/opt/fp", ["/ext/filepuff-0.1.0-linux-x64/bin/filepuff", "/usr/bin/filepuff"], { command: "/opt/fp", source: "setting" }],
    [undefined, ["/ext/filepuff-0.1.0-linux-x64/bin/filepuff", "/usr/bin/filepuff"],
      { command: "/ext/filepuff-0.1.0-linux-x64/bin/filepuff", source: "bundled" }],
    ["", ["/usr/bin/filepuff"], { command: "/usr/bin/filepuff", source: "PATH" }],
    [undefined, ["/usr/local/bin/filepuff", "/usr/bin/filepuff"], { command: "/usr/local/bin/filepuff", source: "PATH" }],
    [undefined, [], { command: "filepuff", source: "PATH" }],
  ])("setting %j with %j → %j", (setting, executables, expected) => {
    expect(resolveBinary(probe(setting, executables))).toEqual(expected);
  });

  it("skips empty PATH entries and trailing slashes", () => {
    expect(resolveBinary(probe(undefined, ["/tools/filepuff"], "::/tools/"))).toEqual({ command: "/tools/filepuff", source: "PATH" });
  });
});

describe("binaryDescription", () => {
  it("names the binary and its source", () => {
    expect(binaryDescription({ command: "/opt/fp", source: "setting" })).toBe("binary: /opt/fp (from the filepuff.path setting)");
    expect(binaryDescription({ command: "/e/bin/filepuff", source: "bundled" })).toBe("binary: /e/bin/filepuff (bundled with the extension)");
    expect(binaryDescription({ command: "/usr/bin/filepuff", source: "PATH" })).toBe("binary: /usr/bin/filepuff (found on PATH)");
    expect(binaryDescription({ command: "filepuff", source: "PATH" })).toMatch(/not found there/);
  });
});
