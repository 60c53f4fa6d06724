import { describe, expect, it } from "vitest";
import { parseContext } from "../src/context";
import { toAgentDiagnostic } from "../src/diagnosticsMap";
import { textBefore } from "../src/diffText";
import { inlineCompletionMiddleware } from "../src/inlineCompletion";
import type { PendingChange } from "../src/protocol";
import { byDocument, linesOf, summaryOf } from "../src/reviewItems";
import { hitRows, kindIcon, rankingTitle } from "../src/searchItems";
import { BUILD_COMMAND, findServer } from "../src/serverPath";
import { toServerSettings } from "../src/settings";
import { renderMarkdown } from "../src/webview/markdown";

describe("finding agentls", () => {
  const base = { configured: "", pathEnv: "/usr/bin:/opt/x/bin", extensionDir: "/repo/editor-clients/vscode" };
  it("prefers the setting, then PATH, then the repository's release and debug builds", () => {
    expect(findServer({ ...base, configured: "/a/agentls", isFile: () => true })).toEqual({ path: "/a/agentls", from: "setting" });
    expect(findServer({ ...base, isFile: (p) => p === "/opt/x/bin/agentls" })).toEqual({ path: "/opt/x/bin/agentls", from: "PATH" });
    const repo = (p: string) => p === "/repo/target/debug/agentls" || p === "/repo/target/release/agentls";
    expect(findServer({ ...base, isFile: repo })).toEqual({ path: "/repo/target/release/agentls", from: "repository" });
  });
  it("says how to build it when it is nowhere", () => {
    const r = findServer({ ...base, isFile: () => false });
    expect("error" in r && r.error).toContain(BUILD_COMMAND);
    const bad = findServer({ ...base, configured: "/nope", isFile: () => false });
    expect("error" in bad && bad.error).toContain("agentls.path");
  });
});

describe("settings for the server", () => {
  it("maps agentls.* to the server's snake_case [agent] keys, leaving out unset ones", () => {
    const values: Record<string, unknown> = { model: "fast", review: "review", approvalTimeoutSecs: 30, maxSteps: 7 };
    expect(toServerSettings((k) => values[k])).toEqual({ agent: { model: "fast", review: "review", approval_timeout_secs: 30, max_steps: 7 } });
    expect(toServerSettings(() => undefined)).toEqual({ agent: {} });
  });
  it("sends completion.enabled only to turn ghost text off, so VS Code's default leaves the server's config alone", () => {
    expect(toServerSettings((k) => (k === "completion.enabled" ? false : undefined))).toEqual({ agent: {}, completion: { enabled: false } });
    expect(toServerSettings((k) => (k === "completion.enabled" ? true : undefined))).toEqual({ agent: {} });
  });
});

describe("inline completion", () => {
  // Stand-ins for VS Code's objects: the middleware only passes them on.
  const doc = { uri: "file:///w/a.rs" } as never;
  const pos = { line: 1, character: 4 } as never;
  const ctx = { triggerKind: 1 } as never;
  const token = { isCancellationRequested: false } as never;
  it("asks the server while enabled, with VS Code's own arguments, and nothing while disabled", async () => {
    let on = true;
    const calls: unknown[][] = [];
    const next = (...args: unknown[]) => {
      calls.push(args);
      return [{ insertText: "x" }] as never;
    };
    const { provideInlineCompletionItems } = inlineCompletionMiddleware(() => on);
    expect(await provideInlineCompletionItems!.call(undefined, doc, pos, ctx, token, next)).toEqual([{ insertText: "x" }]);
    expect(calls).toEqual([[doc, pos, ctx, token]]);
    on = false;
    expect(await provideInlineCompletionItems!.call(undefined, doc, pos, ctx, token, next)).toBeNull();
    expect(calls).toHaveLength(1);
  });
});

describe("diagnostics", () => {
  it("maps VS Code severities (0-3) to LSP (1-4) and unwraps code objects", () => {
    const d = toAgentDiagnostic({
      range: { start: { line: 1, character: 2 }, end: { line: 1, character: 5 } },
      severity: 1,
      code: { value: "E0308" },
      source: "rustc",
      message: "mismatched types",
    });
    expect(d).toEqual({
      range: { start: { line: 1, character: 2 }, end: { line: 1, character: 5 } },
      severity: 2,
      code: "E0308",
      source: "rustc",
      message: "mismatched types",
    });
  });
});

describe("review diffs", () => {
  it("restores the text before an edit from the text after it and its diff", () => {
    const before = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\n";
    const after = "a\nB\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\nm\n";
    const diff = "--- x\n+++ x\n@@ -1,4 +1,4 @@\n a\n-b\n+B\n c\n d\n@@ -10,3 +10,4 @@\n j\n k\n l\n+m\n";
    expect(textBefore(after, diff)).toBe(before);
  });
});

describe("review items from agent/listChanges", () => {
  const at = (l1: number, c1: number, l2: number, c2: number) => ({ start: { line: l1, character: c1 }, end: { line: l2, character: c2 } });
  const change = (over: Partial<PendingChange>): PendingChange => ({
    id: 1,
    session: "s",
    uri: "file:///w/a.rs",
    version: 3,
    ranges: [at(1, 4, 1, 9)],
    kind: "replace",
    linesAdded: 1,
    linesRemoved: 1,
    ...over,
  });
  it("spans the lines of the change's ranges; a whole inserted line does not reach into the next", () => {
    expect(linesOf(change({}))).toEqual([1, 1]);
    expect(linesOf(change({ ranges: [at(2, 0, 4, 0)] }))).toEqual([2, 3]);
    expect(linesOf(change({ ranges: [at(2, 3, 2, 5), at(4, 0, 4, 2)] }))).toEqual([2, 4]);
    // A deletion: an empty range, one line.
    expect(linesOf(change({ ranges: [at(5, 0, 5, 0)] }))).toEqual([5, 5]);
    // The user rewrote the lines: nothing to show.
    expect(linesOf(change({ ranges: [] }))).toBeUndefined();
  });
  it("summarises lines added and removed", () => {
    expect(summaryOf(change({}))).toBe("+1 −1 (replace)");
    expect(summaryOf(change({ kind: "insert", linesAdded: 2, linesRemoved: 0 }))).toBe("+2 (insert)");
    expect(summaryOf(change({ kind: "delete", linesAdded: 0, linesRemoved: 3 }))).toBe("−3 (delete)");
  });
  it("groups the changes that can be shown by document, keeping the server's order", () => {
    const m = byDocument(
      [change({ id: 1 }), change({ id: 2, uri: "file:///w/b.rs" }), change({ id: 3, ranges: [at(7, 0, 8, 0)] }), change({ id: 4, ranges: [] })],
      (u) => u.toUpperCase(),
    );
    expect([...m.keys()]).toEqual(["FILE:///W/A.RS", "FILE:///W/B.RS"]);
    expect(m.get("FILE:///W/A.RS")?.map((c) => [c.id, c.lines])).toEqual([
      [1, [1, 1]],
      [3, [7, 7]],
    ]);
  });
});

describe("prompt context", () => {
  it("finds @file, #selection and workspace paths", () => {
    expect(parseContext("explain #selection please")).toEqual({ activeFile: false, selection: true, paths: [] });
    expect(parseContext("fix @file and @src/lib.rs.")).toEqual({ activeFile: true, selection: false, paths: ["src/lib.rs"] });
    expect(parseContext("mail a@b")).toEqual({ activeFile: false, selection: false, paths: [] });
  });
});

describe("markdown", () => {
  it("escapes model text and renders code blocks with copy and insert", () => {
    const html = renderMarkdown("Use `x<y>`:\n```rust\nfn a() {}\n```\n- one\n- **two**");
    expect(html).toContain("<code>x&lt;y&gt;</code>");
    expect(html).toContain('<pre><code>fn a() {}</code></pre>');
    expect(html).toContain('data-act="copy"');
    expect(html).toContain("<li><strong>two</strong></li>");
    expect(renderMarkdown("<script>alert(1)</script>")).not.toContain("<script>");
  });
});

describe("semantic search rows", () => {
  const hit = { uri: "file:///ws/src/up.rs", startLine: 4, endLine: 9, score: 0.03 };
  const result = { hits: [{ ...hit, symbol: "retry_upload", kind: "function" }, { ...hit, uri: "file:///ws/a.md", startLine: 0, endLine: 2 }], chunks: 40, embedded: 40, files: 7, ranking: "hybrid" };
  const relative = (uri: string) => uri.replace("file:///ws/", "");
  it("labels rows with an icon only, so the typed text reorders nothing, and names the definition or the lines with the place", () => {
    expect(hitRows(result, relative)).toEqual([
      { label: "$(symbol-function)", description: "retry_upload (function)  src/up.rs:5", uri: hit.uri, startLine: 4, endLine: 9 },
      { label: "$(symbol-file)", description: "lines 1-3  a.md:1", uri: "file:///ws/a.md", startLine: 0, endLine: 2 },
    ]);
    expect(kindIcon("method")).toBe("$(symbol-method)");
    expect(kindIcon("class")).toBe("$(symbol-class)");
  });
  it("says how the hits were ranked", () => {
    expect(rankingTitle(result)).toBe("2 hits among 40 pieces of 7 files, ranked by words and meaning");
    expect(rankingTitle({ ...result, embedded: 10 })).toBe("2 hits among 40 pieces of 7 files, ranked by words and meaning (10 of 40 embedded so far)");
    // The model whose vectors ranked: the static ones until the whole model takes over.
    expect(rankingTitle({ ...result, model: "minilm-l6-v2-full-1" })).toBe("2 hits among 40 pieces of 7 files, ranked by words and meaning (minilm-l6-v2-full-1)");
    expect(rankingTitle({ ...result, embedded: 10, model: "minilm-l6-v2-static-1" })).toBe("2 hits among 40 pieces of 7 files, ranked by words and meaning (minilm-l6-v2-static-1; 10 of 40 embedded so far)");
    expect(rankingTitle({ ...result, hits: result.hits.slice(1), ranking: "lexical" })).toBe("1 hit among 40 pieces of 7 files, ranked by words (no embedding model, or no vectors yet)");
  });
});
