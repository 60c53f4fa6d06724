// What the review shows of the server's pending changes (`agent/listChanges`): line
// spans and summaries, without a vscode import so that it is unit-tested. The server
// says where each change is now; the client never guesses at line moves.
import type { PendingChange } from "./protocol";

export interface ReviewChange {
  session: string;
  id: number;
  /** 0-based first and last line of the agent's text now. */
  lines: [number, number];
  /** `+2 −1 (replace)`. */
  summary: string;
}

/** The 0-based first and last line the change's ranges cover; undefined when the user rewrote them. */
export function linesOf(c: PendingChange): [number, number] | undefined {
  const first = c.ranges[0];
  const last = c.ranges[c.ranges.length - 1];
  if (!first || !last) return undefined;
  // A range that ends at the start of a line (a whole inserted line) does not reach into it.
  const end = last.end.character === 0 && last.end.line > last.start.line ? last.end.line - 1 : last.end.line;
  return [first.start.line, Math.max(first.start.line, end)];
}

/** `+2 −1 (replace)`: lines added and removed, and the kind. */
export function summaryOf(c: PendingChange): string {
  const counts = [c.linesAdded ? `+${c.linesAdded}` : "", c.linesRemoved ? `−${c.linesRemoved}` : ""].filter(Boolean);
  return `${counts.join(" ") || "±0"} (${c.kind})`;
}

/**
 * The changes that can be shown (the user has not rewritten their lines), by document
 * under `key(uri)`, in the server's order (by position).
 */
export function byDocument(changes: readonly PendingChange[], key: (uri: string) => string = (u) => u): Map<string, ReviewChange[]> {
  const out = new Map<string, ReviewChange[]>();
  for (const c of changes) {
    const lines = linesOf(c);
    if (!lines) continue;
    const k = key(c.uri);
    const list = out.get(k) ?? [];
    list.push({ session: c.session, id: c.id, lines, summary: summaryOf(c) });
    out.set(k, list);
  }
  return out;
}
