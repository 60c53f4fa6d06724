// The chat panel (a webview view): sessions, prompts with context, the streamed run,
// model switching, resuming, and approvals answered from the panel.
import * as vscode from "vscode";
import { type LanguageClient, ShowMessageRequest, type ShowMessageRequestParams } from "vscode-languageclient/node";
import { parseContext } from "./context";
import {
  type EventParams,
  type GetTranscriptResult,
  type ListModelsResult,
  type ListSessionsResult,
  Methods,
  type PromptParams,
  type SessionInfo,
} from "./protocol";
import type { FromPanel, ToPanel } from "./webview/state";

export class ChatView implements vscode.WebviewViewProvider, vscode.Disposable {
  static readonly id = "agentls.chat";
  private view?: vscode.WebviewView;
  private session?: SessionInfo;
  private queue: ToPanel[] = [];
  private ready = false;
  private resolvedAt = 0;
  private nextAsk = 1;
  private readonly asks = new Map<number, (answer: string | undefined) => void>();
  private readonly tokens = new Map<string, number>();
  private readonly subs: vscode.Disposable[] = [];

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly client: () => LanguageClient | undefined,
    private readonly onSession: (s: SessionInfo, running: boolean, tokens?: number) => void,
  ) {}

  /** Called once the client started: answers approval requests (agent/event comes through onEvent). */
  attach(client: LanguageClient): void {
    this.subs.push(
      client.onRequest(ShowMessageRequest.type, (p: ShowMessageRequestParams) => this.ask(p)),
    );
    void this.loadModels();
  }

  resolveWebviewView(view: vscode.WebviewView): void {
    this.resolvedAt = Date.now();
    this.view = view;
    this.ready = false;
    const media = vscode.Uri.joinPath(this.extensionUri, "media");
    const dist = vscode.Uri.joinPath(this.extensionUri, "dist");
    view.webview.options = { enableScripts: true, localResourceRoots: [media, dist] };
    const nonce = Math.random().toString(36).slice(2) + Date.now().toString(36);
    const css = view.webview.asWebviewUri(vscode.Uri.joinPath(media, "chat.css"));
    const js = view.webview.asWebviewUri(vscode.Uri.joinPath(dist, "webview.js"));
    view.webview.html = `<!DOCTYPE html><html><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src ${view.webview.cspSource}; script-src 'nonce-${nonce}';">
<link rel="stylesheet" href="${css}"></head><body>
<div id="bar"><button id="new" title="New session">New</button><button id="resume" title="Resume a session">Sessions</button>
<select id="model" title="Model"></select><button id="cancel" title="Cancel the run">Cancel</button></div>
<div id="status"></div><div id="error"></div><div id="plan"></div><div id="turns"></div>
<div id="compose"><textarea id="input" placeholder="Ask the agent (@file, @path/to/file, #selection)"></textarea><button id="send">Send</button></div>
<script nonce="${nonce}" src="${js}"></script></body></html>`;
    view.webview.onDidReceiveMessage((m: FromPanel) => void this.onMessage(m).catch((e) => this.post({ type: "error", message: String(e?.message ?? e) })));
    view.onDidDispose(() => {
      this.view = undefined;
      this.ready = false;
    });
  }

  private post(m: ToPanel): void {
    if (this.view && this.ready) void this.view.webview.postMessage(m);
    else this.queue.push(m);
  }

  onEvent(p: EventParams): void {
    const e = p.event;
    if (e.type === "usage") this.tokens.set(p.session, (this.tokens.get(p.session) ?? 0) + e.input + e.output);
    if (e.type === "status" || e.type === "finished") {
      const running = e.type === "status" && e.status === "running";
      const model = e.type === "status" ? e.model : (this.session?.model ?? "");
      this.onSession({ ...(this.session ?? { id: p.session, title: "", mode: "agent", pendingChanges: 0 }), id: p.session, model, status: running ? "running" : e.status }, running, this.tokens.get(p.session));
    }
    if (p.session === this.session?.id) this.post({ type: "event", session: p.session, seq: p.seq, event: e, t: Date.now() });
  }

  /**
   * window/showMessageRequest: answered from the panel's buttons, and from a notification
   * too when the panel is not in view (a notification answered in the panel would stay
   * on screen, asking still: VS Code cannot take one back).
   */
  private ask(p: ShowMessageRequestParams): Promise<{ title: string } | null> {
    const actions = (p.actions ?? []).map((a) => a.title);
    const askId = this.nextAsk++;
    return new Promise((resolve) => {
      const finish = (answer: string | undefined) => {
        if (!this.asks.has(askId)) return;
        this.asks.delete(askId);
        this.post({ type: "approvalDone", askId, answer });
        resolve(answer ? { title: answer } : null);
      };
      this.asks.set(askId, finish);
      this.post({ type: "approvalAsk", askId, message: p.message, actions });
      if (this.view?.visible) return;
      const show = p.type === 1 ? vscode.window.showErrorMessage : p.type === 2 ? vscode.window.showWarningMessage : vscode.window.showInformationMessage;
      void show(p.message, ...actions).then((a) => finish(a));
    });
  }

  private async loadModels(): Promise<void> {
    const client = this.client();
    if (!client) return;
    const r = await client.sendRequest<ListModelsResult>(Methods.listModels);
    this.post({ type: "models", models: r.models, current: r.default ?? r.models[0]?.name ?? "" });
  }

  async newSession(): Promise<SessionInfo | undefined> {
    const client = this.client();
    if (!client) return undefined;
    const model = vscode.workspace.getConfiguration("agentls").get<string>("model", "");
    const info = await client.sendRequest<SessionInfo>(Methods.newSession, model ? { model } : {});
    this.session = info;
    this.post({ type: "session", info });
    this.onSession(info, false, 0);
    return info;
  }

  private context(text: string): PromptParams["context"] {
    const refs = parseContext(text);
    const ed = vscode.window.activeTextEditor;
    if (refs.selection && ed) {
      const s = ed.selection;
      return {
        uri: ed.document.uri.toString(),
        version: ed.document.version,
        range: { start: { line: s.start.line, character: s.start.character }, end: { line: s.end.line, character: s.end.character } },
      };
    }
    if (refs.activeFile && ed) return { uri: ed.document.uri.toString(), version: ed.document.version };
    const folder = vscode.workspace.workspaceFolders?.[0];
    const first = refs.paths[0];
    if (first && folder) return { uri: vscode.Uri.joinPath(folder.uri, first).toString() };
    return undefined;
  }

  async prompt(text: string): Promise<void> {
    const client = this.client();
    if (!client) throw new Error("the agentls server is not running");
    const session = this.session ?? (await this.newSession());
    if (!session) return;
    const params: PromptParams = { session: session.id, text };
    const context = this.context(text);
    if (context) params.context = context;
    this.post({ type: "userPrompt", text });
    const info = await client.sendRequest<SessionInfo>(Methods.prompt, params);
    this.session = info;
  }

  async cancel(): Promise<void> {
    const client = this.client();
    if (client && this.session) await client.sendRequest(Methods.cancel, { session: this.session.id });
  }

  async setModel(model: string): Promise<void> {
    const client = this.client();
    if (!client) return;
    const session = this.session ?? (await this.newSession());
    if (!session) return;
    const info = await client.sendRequest<SessionInfo>(Methods.setModel, { session: session.id, model });
    this.session = info;
    this.post({ type: "session", info });
    this.onSession(info, info.status === "running", this.tokens.get(info.id));
  }

  async selectModel(): Promise<void> {
    const client = this.client();
    if (!client) return;
    const r = await client.sendRequest<ListModelsResult>(Methods.listModels);
    const pick = await vscode.window.showQuickPick(
      r.models.map((m) => ({ label: m.name, description: `${m.model} (${m.wire})` })),
      { placeHolder: "Model for this session" },
    );
    if (pick) await this.setModel(pick.label);
  }

  async resume(id?: string): Promise<void> {
    const client = this.client();
    if (!client) return;
    let target = id;
    if (!target) {
      const r = await client.sendRequest<ListSessionsResult>(Methods.listSessions);
      const pick = await vscode.window.showQuickPick(
        r.sessions.map((s) => ({ label: s.title || "(untitled)", description: `${s.model} · ${s.status}`, id: s.id })),
        { placeHolder: "Session to resume" },
      );
      target = pick?.id;
    }
    if (!target) return;
    const t = await client.sendRequest<GetTranscriptResult>(Methods.getTranscript, { session: target });
    this.session = t.session;
    this.post({ type: "transcript", result: t });
  }

  private async onMessage(m: FromPanel): Promise<void> {
    switch (m.type) {
      case "ready":
        this.ready = true;
        for (const q of this.queue.splice(0)) void this.view?.webview.postMessage(q);
        void this.view?.webview.postMessage({ type: "metrics", panelReadyMs: Date.now() - this.resolvedAt } satisfies ToPanel);
        if (this.session) void this.view?.webview.postMessage({ type: "session", info: this.session } satisfies ToPanel);
        void this.loadModels();
        break;
      case "prompt":
        await this.prompt(m.text);
        break;
      case "cancel":
        await this.cancel();
        break;
      case "newSession":
        await this.newSession();
        break;
      case "resume":
        await this.resume();
        break;
      case "setModel":
        await this.setModel(m.model);
        break;
      case "approve":
        this.asks.get(m.askId)?.(m.answer);
        break;
      case "copy":
        await vscode.env.clipboard.writeText(m.text);
        break;
      case "insert": {
        const ed = vscode.window.activeTextEditor;
        if (ed) await ed.edit((b) => b.replace(ed.selection, m.text));
        break;
      }
      case "openFile":
        await vscode.window.showTextDocument(vscode.Uri.parse(m.uri));
        break;
      case "showDiff":
        await vscode.commands.executeCommand("agentls.review.showDiff", m.uri);
        break;
      case "rendered":
        break;
    }
  }

  dispose(): void {
    for (const s of this.subs) s.dispose();
  }
}
