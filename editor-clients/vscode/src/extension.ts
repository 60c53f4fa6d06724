// The extension's entry point: finds and starts agentls, and wires the chat panel,
// review, status bar, progress and diagnostics to it.
import * as fs from "node:fs";
import * as vscode from "vscode";
import { DidChangeConfigurationNotification, type LanguageClient } from "vscode-languageclient/node";
import { ChatView } from "./chatView";
import { createClient, settings } from "./client";
import { forwardDiagnostics } from "./diagnostics";
import { NextEdits } from "./nextEdit";
import { registerProgress } from "./progress";
import { type EventParams, Methods } from "./protocol";
import { Review } from "./review";
import { searchCode } from "./search";
import { findServer } from "./serverPath";
import { Status } from "./status";

let client: LanguageClient | undefined;
const clientSubs: vscode.Disposable[] = [];

export async function activate(ctx: vscode.ExtensionContext): Promise<void> {
  const output = vscode.window.createOutputChannel("agentls");
  const status = new Status();
  const review = new Review(() => client);
  const chat = new ChatView(ctx.extensionUri, () => client, (s, running, tokens) => status.update(s.id, running, s.model, tokens));
  ctx.subscriptions.push(
    output,
    status,
    review,
    chat,
    new NextEdits(() => client),
    vscode.window.registerWebviewViewProvider(ChatView.id, chat, { webviewOptions: { retainContextWhenHidden: true } }),
    vscode.commands.registerCommand("agentls.chat.new", () => chat.newSession()),
    vscode.commands.registerCommand("agentls.chat.cancel", () => chat.cancel()),
    vscode.commands.registerCommand("agentls.chat.prompt", (text: string) => chat.prompt(text)),
    vscode.commands.registerCommand("agentls.model.select", () => chat.selectModel()),
    vscode.commands.registerCommand("agentls.sessions.show", () => chat.resume()),
    vscode.commands.registerCommand("agentls.output.show", () => output.show()),
    vscode.commands.registerCommand("agentls.search", (query?: string) => searchCode(() => client, query)),
    vscode.commands.registerCommand("agentls.server.restart", () => start()),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration("agentls") && client)
        void client.sendNotification(DidChangeConfigurationNotification.type, { settings: { agentls: settings() } });
    }),
    { dispose: () => void stop() },
  );

  async function stop(): Promise<void> {
    for (const s of clientSubs.splice(0)) s.dispose();
    const c = client;
    client = undefined;
    if (c) await c.stop().catch(() => undefined);
  }

  async function start(): Promise<void> {
    await stop();
    const found = findServer({
      configured: vscode.workspace.getConfiguration("agentls").get<string>("path", ""),
      pathEnv: process.env.PATH ?? "",
      extensionDir: ctx.extensionUri.fsPath,
      isFile: (p) => fs.statSync(p, { throwIfNoEntry: false })?.isFile() ?? false,
    });
    if ("error" in found) {
      output.appendLine(found.error);
      status.setProblem(found.error);
      void vscode.window.showErrorMessage(found.error, "Open Settings").then((a) => {
        if (a) void vscode.commands.executeCommand("workbench.action.openSettings", "agentls.path");
      });
      return;
    }
    output.appendLine(`agentls: ${found.path} (from ${found.from})`);
    status.setProblem("");
    const c = createClient(found.path, output);
    client = c;
    try {
      await c.start();
    } catch (e) {
      const msg = `agentls did not start: ${e instanceof Error ? e.message : String(e)}`;
      output.appendLine(msg);
      status.setProblem(msg);
      void vscode.window.showErrorMessage(msg);
      return;
    }
    clientSubs.push(
      registerProgress(c),
      forwardDiagnostics(c),
      // One handler per method in vscode-jsonrpc: the panel and review share it.
      c.onNotification(Methods.event, (p: EventParams) => {
        chat.onEvent(p);
        if (p.event.type === "edit") void review.onEdit(p.event.uri, p.event.diff, p.event.changeIds);
      }),
    );
    chat.attach(c);
    void review.refreshAll();
  }

  await start();
}

export async function deactivate(): Promise<void> {
  for (const s of clientSubs.splice(0)) s.dispose();
  if (client) await client.stop().catch(() => undefined);
}
