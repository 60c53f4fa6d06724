// What the semantic search quick pick shows, from an `agentls/semanticSearch` result:
// kept apart from the vscode API so the unit tests can run it.
import type { SemanticSearchResult } from "./protocol";

/** One hit as a quick pick row: the definition (or its lines), then where it is. */
export interface HitRow {
  /** An icon only: VS Code sorts rows whose label matches the typed text first, and the
   * server's order is the ranking. Icons are left out of that matching. */
  label: string;
  /** The definition and its place. */
  description: string;
  uri: string;
  startLine: number;
  endLine: number;
}

/** The codicon for a chunk's kind. */
export function kindIcon(kind: string | null | undefined): string {
  switch (kind) {
    case "function":
      return "$(symbol-function)";
    case "method":
      return "$(symbol-method)";
    case "class":
    case "struct":
    case "impl":
    case "trait":
    case "interface":
      return "$(symbol-class)";
    case "enum":
      return "$(symbol-enum)";
    case "module":
      return "$(symbol-namespace)";
    default:
      return "$(symbol-file)";
  }
}

/** The rows of `result`, best first; `relative` shows a hit's URI relative to the workspace. */
export function hitRows(result: SemanticSearchResult, relative: (uri: string) => string): HitRow[] {
  return result.hits.map((h) => {
    const what = h.symbol ? `${h.symbol}${h.kind ? ` (${h.kind})` : ""}` : `lines ${h.startLine + 1}-${h.endLine + 1}`;
    return {
      label: kindIcon(h.symbol ? h.kind : null),
      description: `${what}  ${relative(h.uri)}:${h.startLine + 1}`,
      uri: h.uri,
      startLine: h.startLine,
      endLine: h.endLine,
    };
  });
}

/** How the hits were ranked, for the quick pick's title. */
export function rankingTitle(result: SemanticSearchResult): string {
  const n = result.hits.length;
  const hits = `${n} ${n === 1 ? "hit" : "hits"} among ${result.chunks} pieces of ${result.files} files`;
  if (result.ranking !== "hybrid") return `${hits}, ranked by words (no embedding model, or no vectors yet)`;
  const notes = [
    ...(result.model ? [result.model] : []),
    ...(result.embedded < result.chunks ? [`${result.embedded} of ${result.chunks} embedded so far`] : []),
  ];
  return `${hits}, ranked by words and meaning${notes.length ? ` (${notes.join("; ")})` : ""}`;
}
