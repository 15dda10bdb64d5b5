// The VS Code extension's selection reports: filepuff/editorFocus params and their debounce.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { type EditorLike, type FocusParams, FocusReporter, focusParams } from "../../src/focus";

const at = (line: number, character: number) => ({ line, character });

function editor(overrides: Partial<EditorLike> = {}): EditorLike {
  return {
    document: { uri: "file:///w/main.go", version: 4, languageId: "go" },
    selection: { start: at(10, 8), end: at(10, 8), active: at(10, 8), isEmpty: true },
    visibleRanges: [{ start: at(0, 0), end: at(40, 3) }],
    ...overrides,
  };
}

const servesGo = (language: string) => language === "go";

describe("focusParams", () => {
  it("reports the document, the cursor and the visible range, and no selection when it is empty", () => {
    expect(focusParams(editor(), servesGo)).toEqual({
      textDocument: { uri: "file:///w/main.go", version: 4 },
      cursor: at(10, 8),
      selection: null,
      visibleRange: { start: at(0, 0), end: at(40, 3) },
    });
  });

  it("reports a selection made backwards with the cursor at its active end", () => {
    const backwards = editor({ selection: { start: at(3, 2), end: at(5, 7), active: at(3, 2), isEmpty: false } });
    const params = focusParams(backwards, servesGo);
    expect(params.selection).toEqual({ start: at(3, 2), end: at(5, 7) });
    expect(params.cursor).toEqual(at(3, 2));
  });

  it("says no document for no editor, an untitled one, or a language filepuff does not serve", () => {
    expect(focusParams(undefined, servesGo)).toEqual({ textDocument: null });
    expect(focusParams(editor({ document: { uri: "untitled:1", version: 1, languageId: "go", isUntitled: true } }), servesGo))
      .toEqual({ textDocument: null });
    expect(focusParams(editor({ document: { uri: "file:///w/a.md", version: 1, languageId: "markdown" } }), servesGo))
      .toEqual({ textDocument: null });
  });

  it("has no visible range when the editor reports none", () => {
    expect(focusParams(editor({ visibleRanges: [] }), servesGo).visibleRange).toBeNull();
  });
});

describe("FocusReporter", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it("sends one report after a burst of changes, and nothing when the focus did not change", () => {
    let current: FocusParams = focusParams(editor(), servesGo);
    const sent: FocusParams[] = [];
    const reporter = new FocusReporter(() => current, (params) => sent.push(params), 150);
    for (let character = 1; character <= 5; character++) {
      current = focusParams(editor({ selection: { start: at(1, character), end: at(1, character), active: at(1, character), isEmpty: true } }), servesGo);
      reporter.schedule();
      vi.advanceTimersByTime(100);
    }
    expect(sent).toEqual([]);
    vi.advanceTimersByTime(50);
    expect(sent.map((p) => p.cursor)).toEqual([at(1, 5)]);
    reporter.schedule();
    vi.advanceTimersByTime(150);
    expect(sent).toHaveLength(1);
    current = { textDocument: null };
    reporter.schedule();
    vi.advanceTimersByTime(150);
    expect(sent.at(-1)).toEqual({ textDocument: null });
  });

  it("reports again after reset (a new session), and drops a pending report", () => {
    const sent: FocusParams[] = [];
    const reporter = new FocusReporter(() => focusParams(editor(), servesGo), (params) => sent.push(params), 150);
    reporter.flush();
    reporter.schedule();
    reporter.reset();
    vi.advanceTimersByTime(500);
    expect(sent).toHaveLength(1);
    reporter.flush();
    expect(sent).toHaveLength(2);
  });
});
