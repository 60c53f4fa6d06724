// Next-edit suggestions in the editor: after each change to the active editor's
// document (and a quiet spell) the server is asked `textDocument/copilotInlineEdit`
// (an older question withdrawn); the edits it suggests show as decorations at their
// places: the replaced text struck through, the new text after it. Tab (while they
// show) jumps to the next one, and on one applies them all as one editor edit, only
// while the document is at the version they were computed on; Escape, any change or
// another editor dismisses them. VS Code's inline completion API takes no edit away
// from the cursor outside its proposed API, hence decorations, as Copilot's NES.
import * as vscode from "vscode";
import type { LanguageClient } from "vscode-languageclient/node";
import { type CopilotInlineEditParams, type CopilotInlineEditResult, Methods } from "./protocol";
import { type Pos, type Suggestion, tabAction, usable } from "./nextEditItems";

/** Quiet time after a change before the server is asked. */
const DEBOUNCE_MS = 150;
/** The context key the Tab and Escape keybindings test. */
const VISIBLE = "agentls.nextEditVisible";

interface Shown {
  editor: vscode.TextEditor;
  version: number;
  edits: Suggestion[];
}

export class NextEdits implements vscode.Disposable {
  private readonly subs: vscode.Disposable[] = [];
  private readonly removed = vscode.window.createTextEditorDecorationType({
    textDecoration: "line-through",
    backgroundColor: new vscode.ThemeColor("diffEditor.removedTextBackground"),
  });
  private readonly added = vscode.window.createTextEditorDecorationType({
    after: { color: new vscode.ThemeColor("editorGhostText.foreground"), backgroundColor: new vscode.ThemeColor("diffEditor.insertedTextBackground") },
  });
  private shown: Shown | undefined;
  private inFlight: vscode.CancellationTokenSource | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(private readonly client: () => LanguageClient | undefined) {
    this.subs.push(
      this.removed,
      this.added,
      vscode.commands.registerCommand("agentls.nextEdit.tab", () => this.tab()),
      vscode.commands.registerCommand("agentls.nextEdit.dismiss", () => this.clear()),
      vscode.commands.registerCommand("agentls.nextEdit.request", () => this.request()),
      vscode.workspace.onDidChangeTextDocument((e) => {
        if (e.contentChanges.length === 0) return;
        this.clear();
        if (e.document === vscode.window.activeTextEditor?.document && enabled()) this.later();
      }),
      vscode.window.onDidChangeActiveTextEditor(() => this.clear()),
    );
  }

  /** The suggestions shown for the active editor, at its document's version. */
  visible(): Suggestion[] {
    const s = this.shown;
    if (!s || vscode.window.activeTextEditor !== s.editor || s.editor.document.version !== s.version) return [];
    return s.edits;
  }

  private later(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.request();
    }, DEBOUNCE_MS);
  }

  /** Asks the server for the active editor's next edits and shows them. */
  async request(): Promise<void> {
    const c = this.client();
    const editor = vscode.window.activeTextEditor;
    this.inFlight?.cancel();
    this.inFlight = undefined;
    if (!c || !editor) return;
    const doc = editor.document;
    const version = doc.version;
    const uri = c.code2ProtocolConverter.asUri(doc.uri);
    const cursor = editor.selection.active;
    const params: CopilotInlineEditParams = {
      textDocument: { uri, version },
      position: { line: cursor.line, character: cursor.character },
    };
    const source = new vscode.CancellationTokenSource();
    this.inFlight = source;
    let result: CopilotInlineEditResult | undefined;
    try {
      result = await c.sendRequest<CopilotInlineEditResult>(Methods.copilotInlineEdit, params, source.token);
    } catch {
      return;
    } finally {
      if (this.inFlight === source) this.inFlight = undefined;
      source.dispose();
    }
    if (source.token.isCancellationRequested || vscode.window.activeTextEditor !== editor || doc.version !== version) return;
    const edits = usable(result, uri, version);
    if (edits.length > 0) this.show({ editor, version, edits });
  }

  private show(s: Shown): void {
    this.shown = s;
    const range = (e: Suggestion): vscode.Range => new vscode.Range(e.start.line, e.start.character, e.end.line, e.end.character);
    s.editor.setDecorations(
      this.removed,
      s.edits.filter((e) => e.start.line !== e.end.line || e.start.character !== e.end.character).map(range),
    );
    s.editor.setDecorations(
      this.added,
      s.edits.map((e) => ({ range: new vscode.Range(e.end.line, e.end.character, e.end.line, e.end.character), renderOptions: { after: { contentText: e.text } } })),
    );
    void vscode.commands.executeCommand("setContext", VISIBLE, true);
  }

  /** Dismisses the suggestions and withdraws the question in flight. */
  clear(): void {
    this.inFlight?.cancel();
    this.inFlight = undefined;
    const s = this.shown;
    this.shown = undefined;
    if (s) {
      s.editor.setDecorations(this.removed, []);
      s.editor.setDecorations(this.added, []);
      void vscode.commands.executeCommand("setContext", VISIBLE, false);
    }
  }

  /** Tab: jump to the next suggestion, or apply them all when the cursor is on one. */
  async tab(): Promise<boolean> {
    const edits = this.visible();
    const s = this.shown;
    if (!s || edits.length === 0) {
      this.clear();
      return false;
    }
    const cursor: Pos = { line: s.editor.selection.active.line, character: s.editor.selection.active.character };
    const action = tabAction(edits, cursor);
    if (action.kind === "jump") {
      const at = new vscode.Position(action.to.line, action.to.character);
      s.editor.selection = new vscode.Selection(at, at);
      s.editor.revealRange(new vscode.Range(at, at));
      return true;
    }
    if (action.kind !== "apply") return false;
    this.clear();
    // The editor's own edit, refused by VS Code itself if the document moved on.
    if (s.editor.document.version !== s.version) return false;
    return s.editor.edit((b) => {
      for (const e of edits) b.replace(new vscode.Range(e.start.line, e.start.character, e.end.line, e.end.character), e.text);
    });
  }

  dispose(): void {
    if (this.timer) clearTimeout(this.timer);
    this.clear();
    for (const d of this.subs.splice(0)) d.dispose();
  }
}

function enabled(): boolean {
  return vscode.workspace.getConfiguration("agentls").get<boolean>("nextEdit.enabled", true);
}
