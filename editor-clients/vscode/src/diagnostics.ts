// Forwards the editor's diagnostics to the agent: one agent/diagnostics notification per
// file whose diagnostics changed (an empty list clears), debounced.
import * as vscode from "vscode";
import type { LanguageClient } from "vscode-languageclient/node";
import { toAgentDiagnostic } from "./diagnosticsMap";
import { type DiagnosticsParams, Methods } from "./protocol";

export function forwardDiagnostics(client: LanguageClient): vscode.Disposable {
  const pending = new Set<string>();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const flush = () => {
    timer = undefined;
    for (const key of pending) {
      const uri = vscode.Uri.parse(key);
      const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === key);
      const params: DiagnosticsParams = {
        uri: key,
        version: doc ? doc.version : null,
        // The server's own diagnostics (if it ever publishes some) do not go back to it.
        diagnostics: vscode.languages
          .getDiagnostics(uri)
          .filter((d) => d.source !== "agentls")
          .map(toAgentDiagnostic),
      };
      void client.sendNotification(Methods.diagnostics, params);
    }
    pending.clear();
  };
  return vscode.languages.onDidChangeDiagnostics((e) => {
    if (!vscode.workspace.getConfiguration("agentls").get<boolean>("forwardDiagnostics", true)) return;
    for (const uri of e.uris) if (uri.scheme === "file") pending.add(uri.toString());
    if (pending.size && !timer) timer = setTimeout(flush, 150);
  });
}
