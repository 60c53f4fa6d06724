import { describe, expect, it } from "vitest";
import { tabAction, usable } from "../src/nextEditItems";

const doc = { uri: "file:///ws/main.rs", version: 7 };
const edit = (line: number, from: number, to: number, text: string, textDocument = doc) => ({
  range: { start: { line, character: from }, end: { line, character: to } },
  text,
  textDocument,
});

describe("next-edit suggestions", () => {
  it("keeps the edits for this document at this version, in document order", () => {
    const result = {
      edits: [edit(4, 12, 17, "total"), edit(2, 17, 22, "total"), edit(3, 1, 2, "x", { ...doc, version: 6 }), edit(1, 0, 0, "y", { uri: "file:///ws/other.rs", version: 7 })],
    };
    expect(usable(result, doc.uri, doc.version).map((e) => e.start.line)).toEqual([2, 4]);
    expect(usable(null, doc.uri, doc.version)).toEqual([]);
  });
  it("Tab jumps to the next suggestion after the cursor, wraps to the first, and applies on one", () => {
    const edits = usable({ edits: [edit(2, 17, 22, "total"), edit(4, 12, 17, "total")] }, doc.uri, doc.version);
    expect(tabAction(edits, { line: 1, character: 12 })).toEqual({ kind: "jump", to: { line: 2, character: 17 } });
    expect(tabAction(edits, { line: 3, character: 0 })).toEqual({ kind: "jump", to: { line: 4, character: 12 } });
    expect(tabAction(edits, { line: 9, character: 0 })).toEqual({ kind: "jump", to: { line: 2, character: 17 } });
    expect(tabAction(edits, { line: 2, character: 17 })).toEqual({ kind: "apply" });
    expect(tabAction(edits, { line: 4, character: 17 })).toEqual({ kind: "apply" });
    expect(tabAction([], { line: 0, character: 0 })).toEqual({ kind: "none" });
  });
});
