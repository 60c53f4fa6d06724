// Reading a unified diff (as agent/event `edit` carries it) back into the text before
// the edit, for the diff editor. Pure.

interface Hunk {
  newStart: number; // 0-based
  newCount: number;
  oldLines: string[];
}

export function parseHunks(diff: string): Hunk[] {
  const hunks: Hunk[] = [];
  let cur: Hunk | undefined;
  for (const line of diff.split("\n")) {
    const h = /^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@/.exec(line);
    if (h) {
      const count = h[2] === undefined ? 1 : Number(h[2]);
      // A hunk of zero new lines starts *after* line N.
      const start = count === 0 ? Number(h[1]) : Number(h[1]) - 1;
      cur = { newStart: start, newCount: count, oldLines: [] };
      hunks.push(cur);
      continue;
    }
    if (!cur || line.startsWith("---") || line.startsWith("+++")) continue;
    if (line.startsWith("-") || line.startsWith(" ")) cur.oldLines.push(line.slice(1));
  }
  return hunks;
}

/** The text before the edit, from the text right after it and the edit's diff. */
export function textBefore(after: string, diff: string): string {
  const lines = after.split("\n");
  for (const h of parseHunks(diff).reverse()) lines.splice(h.newStart, h.newCount, ...h.oldLines);
  return lines.join("\n");
}

