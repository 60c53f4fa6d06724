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
  const relative = (uri: string): string => vscode.workspace.asRelativePath(vscode.Uri.parse(uri), false);
  const pick = vscode.window.createQuickPick<Item>();
  pick.placeholder = "Find code by what it does, e.g. where do we retry failed uploads";
  // The rows' labels are icons: nothing the user types matches them, so VS Code neither
  // hides nor reorders the server's ranking.
  pick.matchOnDescription = false;
  pick.matchOnDetail = false;
  let asked = 0;
  let inFlight: vscode.CancellationTokenSource | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const ask = async (query: string): Promise<void> => {
    const mine = ++asked;
    // An older question is withdrawn: the server stops working on it.
    inFlight?.cancel();
    inFlight = undefined;
    if (!query.trim()) {
      pick.items = [];
      pick.title = undefined;
      pick.busy = false;
      return;
    }
    const source = new vscode.CancellationTokenSource();
    inFlight = source;
    pick.busy = true;
    try {
      const params: SemanticSearchParams = { query, limit: LIMIT };
      const result = await c.sendRequest<SemanticSearchResult>(Methods.semanticSearch, params, source.token);
      if (mine !== asked) return;
      pick.items = hitRows(result, relative).map((row) => ({ label: row.label, description: row.description, alwaysShow: true, row }));
      pick.title = rankingTitle(result);
    } catch (e) {
      if (mine !== asked) return;
      pick.items = [];
      pick.title = `agentls: ${e instanceof Error ? e.message : String(e)}`;
    } finally {
      source.dispose();
      if (mine === asked) {
        pick.busy = false;
        inFlight = undefined;
      }
    }
  };
  pick.onDidChangeValue((value) => {
    if (timer) clearTimeout(timer);
    // Rows of an older question are not what Enter should open meanwhile.
    pick.busy = true;
    timer = setTimeout(() => void ask(value), DEBOUNCE_MS);
  });
  pick.onDidAccept(async () => {
    if (pick.busy) return;
    const item = pick.selectedItems[0] ?? pick.activeItems[0];
    if (!item) return;
    pick.hide();
    try {
      const doc = await vscode.workspace.openTextDocument(vscode.Uri.parse(item.row.uri));
      const at = new vscode.Range(item.row.startLine, 0, item.row.startLine, 0);
      const editor = await vscode.window.showTextDocument(doc, { selection: at });
      editor.revealRange(new vscode.Range(item.row.startLine, 0, item.row.endLine, 0), vscode.TextEditorRevealType.InCenterIfOutsideViewport);
    } catch (e) {
      void vscode.window.showErrorMessage(`agentls: cannot open ${item.row.uri}: ${e instanceof Error ? e.message : String(e)}`);
    }
  });
  pick.onDidHide(() => {
    if (timer) clearTimeout(timer);
    inFlight?.cancel();
    pick.dispose();
  });
  pick.show();
  // Setting the value fires onDidChangeValue, which asks.
  if (typeof initial === "string" && initial.trim()) pick.value = initial;
}
