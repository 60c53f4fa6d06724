// Review of edits that landed pending (`[agent] review = "review"`): the changes are
// decorated in the editor with accept/reject code lenses per change and for the whole
// session, and shown in VS Code's diff editor. The server keeps the changes and does
// the undo (agent/review, by change id); which changes exist, and where they are now, is
// asked of the server (agent/listChanges), so the client never guesses at line moves.
import * as vscode from "vscode";
import { type LanguageClient } from "vscode-languageclient/node";
import { textBefore } from "./diffText";
import { type ListChangesParams, type ListChangesResult, Methods, type ReviewParams, type ReviewResult } from "./protocol";
import { type ReviewChange as Change, byDocument } from "./reviewItems";

/** The key of a document: its URI as VS Code writes it (the server may escape differently). */
function key(uri: string): string {
  return vscode.Uri.parse(uri).toString();
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
    const k = key(uri);
    if (!this.before.has(k)) this.before.set(k, textBefore(doc.getText(), diff));
    if (changeIds.length) await this.refresh(k);
  }

  pending(uri: string): readonly Change[] {
    return this.changes.get(key(uri)) ?? [];
  }

  private refreshSoon(uri: string): void {
    clearTimeout(this.timers.get(uri));
    this.timers.set(uri, setTimeout(() => void this.refresh(uri), 150));
  }

  private async listChanges(params: ListChangesParams): Promise<Map<string, Change[]> | undefined> {
    const client = this.client();
    if (!client) return undefined;
    const r = await client.sendRequest<ListChangesResult>(Methods.listChanges, params);
    return byDocument(r.changes, key);
  }

  /** Asks the server which changes are pending in `uri` and where they are now. */
  async refresh(uri: string): Promise<void> {
    const k = key(uri);
    const found = await this.listChanges({ uri });
    if (!found) return;
    this.show(k, [...found.values()].flat());
    this.changed();
  }

  /** Asks the server for every pending change (after a start: saved sessions keep theirs). */
  async refreshAll(): Promise<void> {
    const found = await this.listChanges({});
    if (!found) return;
    for (const k of new Set([...this.changes.keys(), ...found.keys()])) this.show(k, found.get(k) ?? []);
    this.changed();
  }

  private show(k: string, found: Change[]): void {
    if (found.length) this.changes.set(k, found);
    else {
      this.changes.delete(k);
      this.before.delete(k);
    }
  }

  private changed(): void {
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
        new vscode.CodeLens(r, { title: "✓ Accept change", tooltip: c.summary, command: "agentls.review.accept", arguments: [c] }),
        new vscode.CodeLens(r, { title: "✗ Reject change", tooltip: c.summary, command: "agentls.review.reject", arguments: [c] }),
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
    const target = (uri && key(uri)) ?? vscode.window.activeTextEditor?.document.uri.toString() ?? [...this.before.keys()][0];
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
