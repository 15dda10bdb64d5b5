/**
 * What the person is looking at, for agents: the `filepuff/editorFocus` notification (docs/lsp.md)
 * built from the active text editor — its document, cursor (the primary selection's active end),
 * selection and first visible range — and sent debounced, only when it changed. VS Code counts
 * `Position.character` in UTF-16 code units, which is the encoding vscode-languageclient
 * negotiates, so positions go out as they are. No `vscode` import: unit-tested.
 */

/** The notification's method. */
export const EDITOR_FOCUS = "filepuff/editorFocus";

/** An LSP position (0-based line, UTF-16 character). */
export interface LspPosition {
  line: number;
  character: number;
}

/** An LSP range. */
export interface LspRange {
  start: LspPosition;
  end: LspPosition;
}

/** The parts of a `vscode.TextEditor` a report is made of. */
export interface EditorLike {
  document: { uri: string; version: number; languageId: string; isUntitled?: boolean };
  selection: { start: LspPosition; end: LspPosition; active: LspPosition; isEmpty: boolean };
  visibleRanges: readonly LspRange[];
}

/** The `filepuff/editorFocus` params. */
export interface FocusParams {
  textDocument: { uri: string; version: number } | null;
  cursor?: LspPosition;
  selection?: LspRange | null;
  visibleRange?: LspRange | null;
}

const position = (p: LspPosition): LspPosition => ({ line: p.line, character: p.character });

/**
 * The report for `editor` (undefined: no text editor has the focus). A document filepuff does
 * not serve (`served` says which language ids it serves) or an untitled one is reported as no
 * document: agents can only be pointed at files filepuff has.
 */
export function focusParams(editor: EditorLike | undefined, served: (languageId: string) => boolean): FocusParams {
  if (editor === undefined || editor.document.isUntitled || !served(editor.document.languageId)) {
    return { textDocument: null };
  }
  const { selection } = editor;
  const visible = editor.visibleRanges[0];
  return {
    textDocument: { uri: editor.document.uri, version: editor.document.version },
    cursor: position(selection.active),
    selection: selection.isEmpty ? null : { start: position(selection.start), end: position(selection.end) },
    visibleRange: visible ? { start: position(visible.start), end: position(visible.end) } : null,
  };
}

/** Timer functions, injectable for tests. */
export interface Timers {
  set(callback: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

const realTimers: Timers = {
  set: (callback, ms) => setTimeout(callback, ms),
  clear: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

/**
 * Sends the focus `debounceMs` after the last change, and only when it differs from the last
 * report sent (cursor moves while typing become one report).
 */
export class FocusReporter {
  private pending: unknown = undefined;
  private last: string | undefined = undefined;

  constructor(
    private readonly current: () => FocusParams,
    private readonly send: (params: FocusParams) => void,
    private readonly debounceMs = 150,
    private readonly timers: Timers = realTimers,
  ) {}

  /** Something changed: report after the quiet period. */
  schedule(): void {
    if (this.pending !== undefined) this.timers.clear(this.pending);
    this.pending = this.timers.set(() => {
      this.pending = undefined;
      this.flush();
    }, this.debounceMs);
  }

  /** Reports now if the focus changed since the last report. */
  flush(): void {
    const params = this.current();
    const key = JSON.stringify(params);
    if (key === this.last) return;
    this.last = key;
    this.send(params);
  }

  /** Forgets the last report (a new session must get the next one) and any pending one. */
  reset(): void {
    if (this.pending !== undefined) this.timers.clear(this.pending);
    this.pending = undefined;
    this.last = undefined;
  }
}
