import { describe, expect, it } from "vitest";
import type { Event, SessionInfo } from "../src/protocol";
import { applyEvent, fromTranscript, initialState, reduce, totalTokens } from "../src/webview/state";

const info: SessionInfo = { id: "s1", title: "", model: "fast", mode: "agent", status: "idle", pendingChanges: 0 };

function started() {
  const s = initialState();
  reduce(s, { type: "session", info });
  reduce(s, { type: "userPrompt", text: "add a test" });
  return s;
}

function feed(s: ReturnType<typeof initialState>, events: Event[], session = "s1") {
  events.forEach((e) => applyEvent(s, session, s.lastSeq + 1, e));
}

describe("panel state", () => {
  it("joins streamed text deltas into one answer and keeps tool cards between them", () => {
    const s = started();
    feed(s, [
      { type: "status", status: "running", model: "fast" },
      { type: "textDelta", text: "Let me " },
      { type: "textDelta", text: "look." },
      { type: "toolStarted", id: "c1", name: "read_file", arguments: { path: "src/lib.rs" } },
      { type: "toolOutput", id: "c1", stream: "stdout", text: "fn x" },
      { type: "toolFinished", id: "c1", name: "read_file", summary: "read 3 lines", ms: 4 },
      { type: "textDelta", text: "Done." },
    ]);
    const items = s.turns[0]!.items;
    expect(items.map((i) => i.kind)).toEqual(["text", "tool", "text"]);
    expect(items[0]).toMatchObject({ text: "Let me look." });
    expect(items[1]).toMatchObject({ name: "read_file", summary: "read 3 lines", ms: 4, done: true, output: "fn x" });
    expect(s.running).toBe(true);
  });

  it("shows a command that exited non-zero as failed", () => {
    const s = started();
    feed(s, [
      { type: "toolStarted", id: "c1", name: "run_command", arguments: { command: "cargo test" } },
      { type: "toolFinished", id: "c1", name: "run_command", summary: "$ cargo test → exit code 101", failed: true, ms: 9 },
      { type: "toolStarted", id: "c2", name: "run_command", arguments: { command: "cargo test" } },
      { type: "toolFinished", id: "c2", name: "run_command", summary: "$ cargo test → exit code 0", ms: 9 },
    ]);
    const [bad, good] = s.turns[0]!.items;
    expect(bad).toMatchObject({ done: true, error: "exited non-zero" });
    expect(good).toMatchObject({ done: true });
    expect(good).not.toHaveProperty("error");
  });

  it("ignores events of other sessions and repeated sequence numbers", () => {
    const s = started();
    applyEvent(s, "s1", 1, { type: "textDelta", text: "a" });
    applyEvent(s, "s1", 1, { type: "textDelta", text: "a" });
    applyEvent(s, "other", 2, { type: "textDelta", text: "b" });
    expect(s.turns[0]!.items).toEqual([{ kind: "text", text: "a" }]);
  });

  it("sums usage per turn and ends the run on finished", () => {
    const s = started();
    feed(s, [
      { type: "status", status: "running", model: "fast" },
      { type: "usage", input: 100, cachedInput: 50, output: 10 },
      { type: "usage", input: 120, cachedInput: 100, output: 5 },
      { type: "finished", status: "cancelled", message: "cancelled by the user", steps: 2, wallMs: 30, tokens: [220, 150, 15] },
    ]);
    const t = s.turns[0]!;
    expect(t.usage).toEqual({ input: 220, cachedInput: 150, output: 15 });
    expect(t.finished?.status).toBe("cancelled");
    expect(s.running).toBe(false);
    expect(totalTokens(s)).toBe(235);
    // No text was streamed: the reason shows as the answer.
    expect(t.items).toContainEqual({ kind: "text", text: "cancelled by the user" });
  });

  it("shows the plan as the latest checklist and the model switch from status events", () => {
    const s = started();
    feed(s, [
      { type: "plan", items: [{ text: "read", status: "completed" }, { text: "edit", status: "in_progress" }] },
      { type: "status", status: "running", model: "strong" },
    ]);
    expect(s.plan.map((p) => p.status)).toEqual(["completed", "in_progress"]);
    expect(s.model).toBe("strong");
    expect(s.turns[0]!.model).toBe("strong");
  });

  it("records an approval asked through the panel and its answer", () => {
    const s = started();
    reduce(s, { type: "approvalAsk", askId: 7, message: "Run `cargo test`?", actions: ["Allow", "Deny"] });
    reduce(s, { type: "approvalDone", askId: 7, answer: "Deny" });
    expect(s.turns[0]!.items[0]).toMatchObject({ kind: "approval", what: "Run `cargo test`?", granted: false });
  });

  it("joins the approval event and the approval request into one card", () => {
    const s = started();
    feed(s, [{ type: "approval", what: "run `deploy`" }]);
    reduce(s, { type: "approvalAsk", askId: 1, message: "agentls wants to run `deploy`. Allow?", actions: ["Allow", "Deny"] });
    reduce(s, { type: "approvalDone", askId: 1, answer: "Allow" });
    feed(s, [{ type: "approval", what: "run `deploy`", granted: true }]);
    const cards = s.turns[0]!.items.filter((i) => i.kind === "approval");
    expect(cards).toEqual([{ kind: "approval", what: "run `deploy`", askId: 1, granted: true, actions: undefined }]);
  });

  it("a new session clears the turns; the same session keeps them", () => {
    const s = started();
    reduce(s, { type: "session", info: { ...info, model: "strong" } });
    expect(s.turns).toHaveLength(1);
    reduce(s, { type: "session", info: { ...info, id: "s2" } });
    expect(s.turns).toHaveLength(0);
  });

  it("rebuilds turns from a transcript, pairing tool results with their calls", () => {
    const s = initialState();
    fromTranscript(s, {
      session: { ...info, title: "t", status: "done" },
      messages: [
        { role: "user", parts: [{ type: "text", text: "what is add?" }] },
        { role: "assistant", parts: [{ type: "toolCall", id: "c1", name: "read_file", arguments: "{}" }] },
        { role: "tool", parts: [{ type: "toolResult", callId: "c1", content: "\npub fn add\nmore", isError: false }] },
        { role: "assistant", parts: [{ type: "text", text: "It adds." }] },
      ],
    });
    expect(s.turns).toHaveLength(1);
    expect(s.turns[0]!.prompt).toBe("what is add?");
    expect(s.turns[0]!.items).toMatchObject([{ kind: "tool", summary: "pub fn add" }, { kind: "text", text: "It adds." }]);
    // The next run's events show in the resumed session.
    reduce(s, { type: "userPrompt", text: "and sub?" });
    applyEvent(s, "s1", 1, { type: "textDelta", text: "Again." });
    expect(s.turns[1]!.items).toEqual([{ kind: "text", text: "Again." }]);
  });
});
