// What the semantic search quick pick shows, from an `agentls/semanticSearch` result:
// kept apart from the vscode API so the unit tests can run it.
import type { SemanticSearchResult } from "./protocol";

/** One hit as a quick pick row: the definition (or its lines), then where it is. */
export interface HitRow {
  label: string;
  description: string;
  uri: string;
  startLine: number;
  endLine: number;
}

/** `uri` relative to the workspace folder `root` (a `file://` URI, no trailing slash). */
export function relativeTo(root: string | undefined, uri: string): string {
  const path = decodeURIComponent(uri.replace(/^file:\/\//, ""));
  const base = root ? decodeURIComponent(root.replace(/^file:\/\//, "")) : undefined;
  return base && path.startsWith(`${base}/`) ? path.slice(base.length + 1) : path;
}

/** The rows of `result`, best first. */
export function hitRows(result: SemanticSearchResult, root: string | undefined): HitRow[] {
  return result.hits.map((h) => ({
    label: h.symbol ? `${h.symbol}${h.kind ? ` (${h.kind})` : ""}` : `lines ${h.startLine + 1}-${h.endLine + 1}`,
    description: `${relativeTo(root, h.uri)}:${h.startLine + 1}`,
    uri: h.uri,
    startLine: h.startLine,
    endLine: h.endLine,
  }));
}

/** How the hits were ranked, for the quick pick's title. */
export function rankingTitle(result: SemanticSearchResult): string {
  const n = result.hits.length;
  const hits = `${n} ${n === 1 ? "hit" : "hits"} among ${result.chunks} pieces of ${result.files} files`;
  if (result.ranking !== "hybrid") return `${hits}, ranked by words (no embedding model, or no vectors yet)`;
  if (result.embedded < result.chunks) return `${hits}, ranked by words and meaning (${result.embedded} of ${result.chunks} embedded so far)`;
  return `${hits}, ranked by words and meaning`;
}
