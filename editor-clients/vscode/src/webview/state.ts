// The chat panel's state and how each message from the extension changes it. Pure, so
// the panel's behaviour is unit-tested without a browser.
import type { Event, GetTranscriptResult, ModelInfo, PlanItem, SessionInfo } from "../protocol";

export type Item =
  | { kind: "text"; text: string }
  | {
      kind: "tool";
      id: string;
      name: string;
      arguments: string;
      output: string;
      summary?: string;
      error?: string;
      ms?: number;
      done: boolean;
    }
  | { kind: "edit"; uri: string; diff: string; changeIds: number[] }
  | { kind: "approval"; what: string; granted?: boolean; askId?: number; actions?: string[] }
  | { kind: "error"; message: string }
  | { kind: "note"; text: string };

export interface Usage {
  input: number;
  cachedInput: number;
  output: number;
}

export interface Turn {
  prompt: string;
  model: string;
  items: Item[];
  usage: Usage;
  finished?: { status: string; message: string; steps: number; wallMs: number };
  /** Bumped on every change, so the view re-renders only turns that changed. */
  rev: number;
}

export interface PanelState {
  session?: SessionInfo;
  turns: Turn[];
  plan: PlanItem[];
  models: ModelInfo[];
  model: string;
  running: boolean;
  lastSeq: number;
  error?: string;
}

export type ToPanel =
  | { type: "session"; info: SessionInfo }
  | { type: "event"; session: string; seq: number; event: Event; t: number }
  | { type: "models"; models: ModelInfo[]; current: string }
  | { type: "userPrompt"; text: string }
  | { type: "transcript"; result: GetTranscriptResult }
  | { type: "approvalAsk"; askId: number; message: string; actions: string[] }
  | { type: "approvalDone"; askId: number; answer?: string }
  | { type: "error"; message: string }
  | { type: "metrics"; panelReadyMs: number };

export type FromPanel =
  | { type: "ready" }
  | { type: "prompt"; text: string }
  | { type: "cancel" }
  | { type: "newSession" }
  | { type: "resume" }
  | { type: "setModel"; model: string }
  | { type: "approve"; askId: number; answer: string }
  | { type: "copy"; text: string }
  | { type: "insert"; text: string }
  | { type: "openFile"; uri: string }
  | { type: "showDiff"; uri: string }
  | { type: "rendered"; firstTokenMs?: number; deltas: number; frames: number; lagMs: number };

export function initialState(): PanelState {
  return { turns: [], plan: [], models: [], model: "", running: false, lastSeq: 0 };
}

function currentTurn(s: PanelState): Turn {
  let t = s.turns[s.turns.length - 1];
  if (!t) {
    t = { prompt: "", model: s.model, items: [], usage: { input: 0, cachedInput: 0, output: 0 }, rev: 0 };
    s.turns.push(t);
  }
  t.rev++;
  return t;
}

function newTurn(s: PanelState, prompt: string): void {
  s.turns.push({ prompt, model: s.model, items: [], usage: { input: 0, cachedInput: 0, output: 0 }, rev: 1 });
}

function tool(t: Turn, id: string) {
  for (let i = t.items.length - 1; i >= 0; i--) {
    const it = t.items[i];
    if (it && it.kind === "tool" && it.id === id) return it;
  }
  return undefined;
}

/** Applies one agent/event to the state. Events of another session, or already seen, are ignored. */
export function applyEvent(s: PanelState, session: string, seq: number, e: Event): void {
  if (!s.session || s.session.id !== session || seq <= s.lastSeq) return;
  s.lastSeq = seq;
  const t = currentTurn(s);
  const last = t.items[t.items.length - 1];
  switch (e.type) {
    case "status":
      s.running = e.status === "running";
      s.model = e.model;
      t.model = e.model;
      s.session = { ...s.session, status: e.status, model: e.model };
      break;
    case "step":
      break;
    case "textDelta":
      if (last && last.kind === "text") last.text += e.text;
      else t.items.push({ kind: "text", text: e.text });
      break;
    case "thinkingDelta":
      break;
    case "toolStarted":
      t.items.push({ kind: "tool", id: e.id, name: e.name, arguments: JSON.stringify(e.arguments), output: "", done: false });
      break;
    case "toolOutput": {
      const c = tool(t, e.id);
      if (c) c.output += e.text;
      break;
    }
    case "toolFinished": {
      const c = tool(t, e.id);
      if (c) {
        c.done = true;
        c.summary = e.summary;
        c.ms = e.ms;
        if (e.error) c.error = e.error;
        // The command ran and exited non-zero: a failure the card must show as one.
        else if (e.failed) c.error = "exited non-zero";
      }
      break;
    }
    case "plan":
      s.plan = e.items;
      break;
    case "edit":
      t.items.push({ kind: "edit", uri: e.uri, diff: e.diff, changeIds: e.changeIds });
      break;
    case "approval": {
      // One card per approval: the event and the request (approvalAsk) may come in either order.
      const open = [...t.items].reverse().find((i) => i.kind === "approval" && i.granted === undefined);
      const answered = [...t.items].reverse().find((i) => i.kind === "approval");
      if (open && open.kind === "approval") {
        if (e.granted !== undefined && e.granted !== null) open.granted = e.granted;
      } else if (answered && answered.kind === "approval" && e.granted !== undefined && e.granted !== null) {
        // The verdict of the approval answered in the panel.
        answered.granted = e.granted;
      } else {
        const item: Item = { kind: "approval", what: e.what };
        if (e.granted !== undefined && e.granted !== null) item.granted = e.granted;
        t.items.push(item);
      }
      break;
    }
    case "routed":
      t.items.push({ kind: "note", text: `routed to ${e.model}: ${e.reason}` });
      break;
    case "usage":
      t.usage.input += e.input;
      t.usage.cachedInput += e.cachedInput;
      t.usage.output += e.output;
      break;
    case "compacted":
      t.items.push({ kind: "note", text: `context compacted: ${e.masked} outputs masked, ${e.summarized} messages summarized` });
      break;
    case "error":
      t.items.push({ kind: "error", message: `${e.class}: ${e.message}` });
      break;
    case "finished":
      s.running = false;
      t.finished = { status: e.status, message: e.message, steps: e.steps, wallMs: e.wallMs };
      s.session = { ...s.session, status: e.status };
      // The answer streamed as text deltas; a run that stopped early says why here.
      if (!t.items.some((i) => i.kind === "text") && e.message) t.items.push({ kind: "text", text: e.message });
      break;
  }
}

function shortResult(content: string): string {
  const line = content.split("\n").find((l) => l.trim() !== "") ?? "";
  return line.length > 120 ? `${line.slice(0, 117)}...` : line;
}

/** Rebuilds the turns of a resumed session from its transcript. */
export function fromTranscript(s: PanelState, r: GetTranscriptResult): void {
  s.session = r.session;
  s.model = r.session.model;
  s.running = r.session.status === "running";
  s.turns = [];
  s.plan = [];
  // The transcript is as of the end of the last run: every event from now on is newer.
  s.lastSeq = 0;
  for (const m of r.messages) {
    if (m.role === "user") {
      const text = m.parts.map((p) => (p.type === "text" ? p.text : "")).join("");
      if (s.turns.length > 0 && text === "") continue;
      newTurn(s, text);
      continue;
    }
    const t = currentTurn(s);
    for (const p of m.parts) {
      if (p.type === "text") t.items.push({ kind: "text", text: p.text });
      else if (p.type === "toolCall")
        t.items.push({ kind: "tool", id: p.id, name: p.name, arguments: p.arguments, output: "", done: true });
      else {
        const c = tool(t, p.callId);
        if (c) {
          c.summary = shortResult(p.content);
          if (p.isError) c.error = "error";
        }
      }
    }
  }
}

export function reduce(s: PanelState, m: ToPanel): void {
  switch (m.type) {
    case "session":
      if (!s.session || s.session.id !== m.info.id) {
        s.turns = [];
        s.plan = [];
        s.lastSeq = 0;
      }
      s.session = m.info;
      s.model = m.info.model;
      s.running = m.info.status === "running";
      break;
    case "event":
      applyEvent(s, m.session, m.seq, m.event);
      break;
    case "models":
      s.models = m.models;
      if (!s.model) s.model = m.current;
      break;
    case "userPrompt":
      newTurn(s, m.text);
      s.running = true;
      s.error = undefined;
      break;
    case "transcript":
      fromTranscript(s, m.result);
      break;
    case "approvalAsk": {
      const t = currentTurn(s);
      const open = [...t.items].reverse().find((i) => i.kind === "approval" && i.granted === undefined && i.askId === undefined);
      if (open && open.kind === "approval") {
        open.askId = m.askId;
        open.actions = m.actions;
      } else t.items.push({ kind: "approval", what: m.message, askId: m.askId, actions: m.actions });
      break;
    }
    case "approvalDone": {
      for (const t of s.turns)
        for (const i of t.items)
          if (i.kind === "approval" && i.askId === m.askId) {
            i.granted = m.answer === "Allow";
            i.actions = undefined;
            t.rev++;
          }
      break;
    }
    case "error":
      s.error = m.message;
      s.running = false;
      break;
    case "metrics":
      break;
  }
}

/** Total tokens of the session so far (sum of turns). */
export function totalTokens(s: PanelState): number {
  return s.turns.reduce((n, t) => n + t.usage.input + t.usage.output, 0);
}
