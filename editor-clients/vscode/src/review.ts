// Review of edits that landed pending (`[agent] review = "review"`): the changes are
// decorated in the editor with accept/reject code lenses per change and for the whole
// session, and shown in VS Code's diff editor. The server keeps the changes and does
// the undo (agent/review); which changes exist, and where they are now, is asked of the
// server through its review code actions, so the client never guesses at line moves.
import * as vscode from "vscode";
import { type LanguageClient } from "vscode-languageclient/node";
import { linesOfTitle, textBefore } from "./diffText";
import { Methods, type ReviewParams, type ReviewResult } from "./protocol";

interface Change {
  session: string;
  id: number;
  lines: [number, number];
}

interface ServerCommand {
  title: string;
  command: string;
  arguments?: { session?: string; change?: number }[];
}

export const BEFORE_SCHEME = "agentls-before";

export class Review implements vscode.Disposable, vscode.CodeLensProvider, vscode.TextDocumentContentProvider {
  private readonly changes = new Map<string, Change[]>();
  private readonly before = new Map<string, string>();
  private readonly lensChanged = new vscode.EventEmitter<void>();
  readonly onDidChangeCodeLenses = this.lensChanged.event;
  private readonly beforeChanged = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.beforeChanged.event;
  private readonly deco = vscode.window.createTextEditorDecorationType({
    isWholeLine: true,
    backgroundColor: new vscode.ThemeColor("diffEditor.insertedLineBackground"),
    overviewRulerColor: new vscode.ThemeColor("editorOverviewRuler.addedForeground"),
    overviewRulerLane: vscode.OverviewRulerLane.Left,
  });
  private readonly subs: vscode.Disposable[] = [];
  private timers = new Map<string, ReturnType<typeof setTimeout>>();

  constructor(private readonly client: () => LanguageClient | undefined) {
    this.subs.push(
      vscode.languages.registerCodeLensProvider({ scheme: "file" }, this),
      vscode.workspace.registerTextDocumentContentProvider(BEFORE_SCHEME, this),
      vscode.workspace.onDidChangeTextDocument((e) => {
        const key = e.document.uri.toString();
        if (this.changes.has(key)) this.refreshSoon(key);
      }),
      vscode.window.onDidChangeVisibleTextEditors(() => this.decorateAll()),
      vscode.commands.registerCommand("agentls.review.accept", (c: Change) => this.review(c.session, "accept", c.id)),
      vscode.commands.registerCommand("agentls.review.reject", (c: Change) => this.review(c.session, "reject", c.id)),
      vscode.commands.registerCommand("agentls.review.acceptAll", (session?: string) => this.reviewAll("accept", session)),
      vscode.commands.registerCommand("agentls.review.rejectAll", (session?: string) => this.reviewAll("reject", session)),
      vscode.commands.registerCommand("agentls.review.showDiff", (uri?: string) => this.showDiff(uri)),
    );
  }

  /** An `edit` event: remember the text before it, and fetch the file's pending changes. */
  async onEdit(uri: string, diff: string, changeIds: number[]): Promise<void> {
    const doc = await vscode.workspace.openTextDocument(vscode.Uri.parse(uri));
    if (!this.before.has(uri)) this.before.set(uri, textBefore(doc.getText(), diff));
    if (changeIds.length) await this.refresh(uri);
  }

  pending(uri: string): readonly Change[] {
    return this.changes.get(uri) ?? [];
  }

  private refreshSoon(uri: string): void {
    clearTimeout(this.timers.get(uri));
    this.timers.set(uri, setTimeout(() => void this.refresh(uri), 150));
  }

  /** Asks the server which changes are pending in `uri` and where they are now. */
  async refresh(uri: string): Promise<void> {
    const client = this.client();
    if (!client) return;
    const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri);
    const lines = doc ? doc.lineCount : 1_000_000;
    const actions = (await client.sendRequest("textDocument/codeAction", {
      textDocument: { uri },
      range: { start: { line: 0, character: 0 }, end: { line: lines, character: 0 } },
      context: { diagnostics: [] },
    })) as (ServerCommand | { title: string; command?: ServerCommand })[] | null;
    const found: Change[] = [];
    for (const a of actions ?? []) {
      const cmd: ServerCommand | undefined = typeof a.command === "string" ? (a as ServerCommand) : (a.command as ServerCommand | undefined);
      const arg = cmd?.arguments?.[0];
      const at = linesOfTitle(a.title);
      if (cmd?.command === "agentls.accept" && arg?.session && arg.change !== undefined && at)
        found.push({ session: arg.session, id: arg.change, lines: at });
    }
    if (found.length) this.changes.set(uri, found);
    else {
      this.changes.delete(uri);
      this.before.delete(uri);
    }
    this.decorateAll();
    this.lensChanged.fire();
  }

  private decorateAll(): void {
    for (const ed of vscode.window.visibleTextEditors) {
      const cs = this.changes.get(ed.document.uri.toString()) ?? [];
      ed.setDecorations(
        this.deco,
        cs.map((c) => new vscode.Range(c.lines[0], 0, c.lines[1], 0)),
      );
    }
  }

  provideCodeLenses(doc: vscode.TextDocument): vscode.CodeLens[] {
    const cs = this.changes.get(doc.uri.toString()) ?? [];
    const out: vscode.CodeLens[] = [];
    cs.forEach((c, n) => {
      const r = new vscode.Range(c.lines[0], 0, c.lines[0], 0);
      out.push(
        new vscode.CodeLens(r, { title: "✓ Accept change", command: "agentls.review.accept", arguments: [c] }),
        new vscode.CodeLens(r, { title: "✗ Reject change", command: "agentls.review.reject", arguments: [c] }),
      );
      if (n === 0) {
        out.push(
          new vscode.CodeLens(r, { title: "Accept all", command: "agentls.review.acceptAll", arguments: [c.session] }),
          new vscode.CodeLens(r, { title: "Reject all", command: "agentls.review.rejectAll", arguments: [c.session] }),
          new vscode.CodeLens(r, { title: "Diff", command: "agentls.review.showDiff", arguments: [doc.uri.toString()] }),
        );
      }
    });
    return out;
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.before.get(uri.query) ?? "";
  }

  async showDiff(uri?: string): Promise<void> {
    const target = uri ?? vscode.window.activeTextEditor?.document.uri.toString() ?? [...this.before.keys()][0];
    if (!target) return;
    const file = vscode.Uri.parse(target);
    const left = vscode.Uri.from({ scheme: BEFORE_SCHEME, path: file.path, query: target });
    this.beforeChanged.fire(left);
    await vscode.commands.executeCommand("vscode.diff", left, file, `${vscode.workspace.asRelativePath(file)} (agent changes)`);
  }

  async review(session: string, action: "accept" | "reject", change?: number): Promise<ReviewResult | undefined> {
    const client = this.client();
    if (!client) return undefined;
    const params: ReviewParams = { session, action };
    if (change !== undefined) params.change = change;
    const result = await client.sendRequest<ReviewResult>(Methods.review, params);
    for (const [id, reason] of result.failed) void vscode.window.showWarningMessage(`agentls: change ${id} was not ${action}ed: ${reason}`);
    await Promise.all([...this.changes.keys()].map((u) => this.refresh(u)));
    return result;
  }

  private async reviewAll(action: "accept" | "reject", session?: string): Promise<void> {
    const sessions = new Set<string>();
    if (session) sessions.add(session);
    else for (const cs of this.changes.values()) for (const c of cs) sessions.add(c.session);
    for (const s of sessions) await this.review(s, action);
  }

  dispose(): void {
    for (const s of this.subs) s.dispose();
    this.deco.dispose();
  }
}
