// Next-edit suggestions, the parts that need no editor: which edits of the server's
// `textDocument/copilotInlineEdit` answer still fit the document, and what Tab does
// with them (jump to the next one, or apply them all when the cursor is on one). No
// `vscode` import, so the unit tests run it.
import type { CopilotInlineEditResult } from "./protocol";

/** A position: 0-based line, UTF-16 column (the encoding vscode-languageclient uses). */
export interface Pos {
  line: number;
  character: number;
}

/** One suggested edit: replace `start..end` with `text`. */
export interface Suggestion {
  start: Pos;
  end: Pos;
  text: string;
}

/** What Tab does. */
export type TabAction = { kind: "jump"; to: Pos } | { kind: "apply" } | { kind: "none" };

function before(a: Pos, b: Pos): boolean {
  return a.line < b.line || (a.line === b.line && a.character < b.character);
}

/** The edits of `result` for `uri` at `version`, in document order; the rest left out. */
export function usable(result: CopilotInlineEditResult | null | undefined, uri: string, version: number): Suggestion[] {
  const out: Suggestion[] = [];
  for (const e of result?.edits ?? []) {
    if (e.textDocument.uri !== uri || e.textDocument.version !== version) continue;
    out.push({ start: e.range.start, end: e.range.end, text: e.text });
  }
  return out.sort((a, b) => (before(a.start, b.start) ? -1 : before(b.start, a.start) ? 1 : 0));
}

/** Tab at `cursor`: on a suggestion (its range, ends included) apply them all; else jump
 * to the first one after the cursor, or the first one. */
export function tabAction(edits: Suggestion[], cursor: Pos): TabAction {
  const first = edits[0];
  if (!first) return { kind: "none" };
  if (edits.some((e) => !before(cursor, e.start) && !before(e.end, cursor))) return { kind: "apply" };
  const next = edits.find((e) => before(cursor, e.start)) ?? first;
  return { kind: "jump", to: next.start };
}
