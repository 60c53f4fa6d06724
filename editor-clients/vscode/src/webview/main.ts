// The chat panel's script (runs in the webview). Messages from the extension change the
// state at once; the DOM is rebuilt at most once per animation frame, and only for the
// turns that changed, so a fast stream costs one render per frame.
import { escapeHtml, renderMarkdown } from "./markdown";
import { type FromPanel, type Item, type PanelState, type ToPanel, type Turn, initialState, reduce, totalTokens } from "./state";

declare function acquireVsCodeApi(): { postMessage(m: FromPanel): void };
const vscode = acquireVsCodeApi();
const post = (m: FromPanel) => vscode.postMessage(m);

const state: PanelState = initialState();
const rendered = new Map<number, { rev: number; el: HTMLElement }>();
let scheduled = false;
// Figures for the end-to-end test, kept on <body data-*>.
let pendingFirstToken: number | undefined;
let deltas = 0;
let frames = 0;
// The longest wait of a text delta for its render: the panel keeps up while this stays
// near one frame.
let oldestUnrendered: number | undefined;
const lags: number[] = [];

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

function toolCard(i: Extract<Item, { kind: "tool" }>): string {
  const status = !i.done ? "running" : i.error ? `failed (${escapeHtml(i.error)})` : "ok";
  const time = i.ms !== undefined ? `${Math.round(i.ms)} ms` : "";
  return (
    `<details class="tool ${i.done ? (i.error ? "err" : "ok") : "run"}" data-tool="${escapeHtml(i.name)}">` +
    `<summary><span class="tool-name">${escapeHtml(i.name)}</span> <span class="tool-status">${status}</span> <span class="tool-time">${time}</span>` +
    `<div class="tool-summary">${escapeHtml(i.summary ?? "")}</div></summary>` +
    `<pre class="tool-args">${escapeHtml(i.arguments)}</pre>` +
    (i.output ? `<pre class="tool-out">${escapeHtml(i.output.slice(-4000))}</pre>` : "") +
    `</details>`
  );
}

function item(i: Item): string {
  switch (i.kind) {
    case "text":
      return `<div class="answer">${renderMarkdown(i.text)}</div>`;
    case "tool":
      return toolCard(i);
    case "edit": {
      const file = decodeURIComponent(i.uri.replace(/^file:\/\//, ""));
      const review = i.changeIds.length ? ` — ${i.changeIds.length} change(s) to review` : "";
      return (
        `<div class="edit"><a href="#" data-open="${escapeHtml(i.uri)}">${escapeHtml(file)}</a>${review} ` +
        `<button data-diff="${escapeHtml(i.uri)}">Diff</button></div>`
      );
    }
    case "approval": {
      const verdict = i.granted === undefined ? "waiting" : i.granted ? "allowed" : "denied";
      const buttons = (i.actions ?? [])
        .map((a) => `<button class="approve" data-ask="${i.askId}" data-answer="${escapeHtml(a)}">${escapeHtml(a)}</button>`)
        .join("");
      return `<div class="approval"><span>Approval: ${escapeHtml(i.what)}</span> <em>${verdict}</em> ${buttons}</div>`;
    }
    case "error":
      return `<div class="error">${escapeHtml(i.message)}</div>`;
    case "note":
      return `<div class="note">${escapeHtml(i.text)}</div>`;
  }
}

function turnHtml(t: Turn): string {
  const u = t.usage;
  const usage = u.input || u.output ? `${u.input} in (${u.cachedInput} cached) · ${u.output} out` : "";
  const fin = t.finished ? ` · ${t.finished.status} in ${(t.finished.wallMs / 1000).toFixed(1)} s` : "";
  return (
    (t.prompt ? `<div class="prompt">${escapeHtml(t.prompt)}</div>` : "") +
    t.items.map(item).join("") +
    `<div class="usage">${escapeHtml(t.model)}${usage ? " · " + usage : ""}${fin}</div>`
  );
}

function render(): void {
  scheduled = false;
  frames++;
  const box = $("turns");
  state.turns.forEach((t, n) => {
    let r = rendered.get(n);
    if (!r) {
      const el = document.createElement("div");
      el.className = "turn";
      box.appendChild(el);
      r = { rev: -1, el };
      rendered.set(n, r);
    }
    if (r.rev !== t.rev) {
      r.el.innerHTML = turnHtml(t);
      r.rev = t.rev;
    }
  });
  for (const [n, r] of rendered)
    if (n >= state.turns.length) {
      r.el.remove();
      rendered.delete(n);
    }
  $("plan").innerHTML = state.plan.length
    ? `<div class="plan-title">Plan</div>` +
      state.plan
        .map((p) => `<label class="plan-${p.status}"><input type="checkbox" disabled ${p.status === "completed" ? "checked" : ""}> ${escapeHtml(p.text)}</label>`)
        .join("")
    : "";
  const models = $<HTMLSelectElement>("model");
  const names = state.models.map((m) => m.name).join("\n");
  if (models.dataset.names !== names) {
    models.innerHTML = state.models.map((m) => `<option value="${escapeHtml(m.name)}">${escapeHtml(m.name)} (${escapeHtml(m.model)})</option>`).join("");
    models.dataset.names = names;
  }
  if (state.model && models.value !== state.model) models.value = state.model;
  $("status").textContent = state.session
    ? `${state.running ? "running" : state.session.status} · ${totalTokens(state)} tokens`
    : "no session";
  $("error").textContent = state.error ?? "";
  $<HTMLButtonElement>("cancel").disabled = !state.running;
  document.body.dataset.running = String(state.running);
  if (pendingFirstToken !== undefined) {
    document.body.dataset.firstTokenMs = String(Date.now() - pendingFirstToken);
    pendingFirstToken = undefined;
  }
  document.body.dataset.deltas = String(deltas);
  document.body.dataset.frames = String(frames);
  if (oldestUnrendered !== undefined) {
    if (lags.length < 10000) lags.push(Date.now() - oldestUnrendered);
    oldestUnrendered = undefined;
    const sorted = [...lags].sort((a, b) => a - b);
    const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
    document.body.dataset.lagMs = `${at(0.5)}/${at(0.95)}/${at(1)}`;
  }
  box.scrollTop = box.scrollHeight;
}

function schedule(): void {
  if (scheduled) return;
  scheduled = true;
  requestAnimationFrame(render);
}

window.addEventListener("message", (ev: MessageEvent<ToPanel>) => {
  const m = ev.data;
  if (m.type === "event" && m.event.type === "textDelta") {
    deltas++;
    oldestUnrendered ??= m.t;
    const t = state.turns[state.turns.length - 1];
    if (t && !t.items.some((i) => i.kind === "text")) pendingFirstToken = m.t;
  }
  if (m.type === "metrics") document.body.dataset.panelReadyMs = String(m.panelReadyMs);
  if (m.type === "session" || m.type === "transcript") {
    for (const r of rendered.values()) r.el.remove();
    rendered.clear();
  }
  reduce(state, m);
  schedule();
});

function send(): void {
  const box = $<HTMLTextAreaElement>("input");
  const text = box.value.trim();
  if (!text) return;
  box.value = "";
  post({ type: "prompt", text });
}

document.addEventListener("click", (ev) => {
  const el = ev.target as HTMLElement;
  const act = el.dataset.act;
  if (act === "copy" || act === "insert") {
    const code = el.closest(".code")?.querySelector("code")?.textContent ?? "";
    post({ type: act, text: code });
  } else if (el.dataset.open) {
    ev.preventDefault();
    post({ type: "openFile", uri: el.dataset.open });
  } else if (el.dataset.diff) {
    post({ type: "showDiff", uri: el.dataset.diff });
  } else if (el.dataset.ask && el.dataset.answer) {
    post({ type: "approve", askId: Number(el.dataset.ask), answer: el.dataset.answer });
  }
});
$("send").addEventListener("click", send);
$("cancel").addEventListener("click", () => post({ type: "cancel" }));
$("new").addEventListener("click", () => post({ type: "newSession" }));
$("resume").addEventListener("click", () => post({ type: "resume" }));
$<HTMLSelectElement>("model").addEventListener("change", (ev) => post({ type: "setModel", model: (ev.target as HTMLSelectElement).value }));
$("input").addEventListener("keydown", (ev) => {
  if (ev.key === "Enter" && !ev.shiftKey) {
    ev.preventDefault();
    send();
  }
});
render();
post({ type: "ready" });
