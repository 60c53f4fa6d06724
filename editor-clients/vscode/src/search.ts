// "Agent: Search Code by Meaning": a quick pick that asks `agentls/semanticSearch` as
// you type and opens the chosen hit.
import * as vscode from "vscode";
import type { LanguageClient } from "vscode-languageclient/node";
import { Methods, type SemanticSearchParams, type SemanticSearchResult } from "./protocol";
import { type HitRow, hitRows, rankingTitle } from "./searchItems";

/** Quiet time after a keystroke before the server is asked. */
const DEBOUNCE_MS = 150;
/** Hits asked for. */
const LIMIT = 30;

type Item = vscode.QuickPickItem & { row: HitRow };

export function searchCode(client: () => LanguageClient | undefined, initial?: string): void {
  const c = client();
  if (!c) {
    void vscode.window.showWarningMessage("agentls is not running: semantic search needs it (Agent: Restart Server).");
    return;
  }
  const root = vscode.workspace.workspaceFolders?.[0]?.uri.toString();
  const pick = vscode.window.createQuickPick<Item>();
  pick.placeholder = "Find code by what it does, e.g. where do we retry failed uploads";
  pick.matchOnDescription = false;
  let asked = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const ask = async (query: string): Promise<void> => {
    const mine = ++asked;
    if (!query.trim()) {
      pick.items = [];
      pick.title = undefined;
      return;
    }
    pick.busy = true;
    try {
      const params: SemanticSearchParams = { query, limit: LIMIT };
      const result = await c.sendRequest<SemanticSearchResult>(Methods.semanticSearch, params);
      if (mine !== asked) return;
      // alwaysShow: the server ranked them; the quick pick must not filter by label.
      pick.items = hitRows(result, root).map((row) => ({ label: row.label, description: row.description, alwaysShow: true, row }));
      pick.title = rankingTitle(result);
    } catch (e) {
      if (mine !== asked) return;
      pick.items = [];
      pick.title = `agentls: ${e instanceof Error ? e.message : String(e)}`;
    } finally {
      if (mine === asked) pick.busy = false;
    }
  };
  pick.onDidChangeValue((value) => {
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => void ask(value), DEBOUNCE_MS);
  });
  pick.onDidAccept(async () => {
    const item = pick.selectedItems[0] ?? pick.activeItems[0];
    if (!item) return;
    pick.hide();
    const doc = await vscode.workspace.openTextDocument(vscode.Uri.parse(item.row.uri));
    const at = new vscode.Range(item.row.startLine, 0, item.row.startLine, 0);
    const editor = await vscode.window.showTextDocument(doc, { selection: at });
    editor.revealRange(new vscode.Range(item.row.startLine, 0, item.row.endLine, 0), vscode.TextEditorRevealType.InCenterIfOutsideViewport);
  });
  pick.onDidHide(() => {
    if (timer) clearTimeout(timer);
    pick.dispose();
  });
  pick.show();
  if (typeof initial === "string" && initial.trim()) {
    pick.value = initial;
    void ask(initial);
  }
}
