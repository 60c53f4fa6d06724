// The language client: agentls over stdio, with the agent/* capability declared.
import * as vscode from "vscode";
import {
  type ClientCapabilities,
  type FeatureState,
  LanguageClient,
  type LanguageClientOptions,
  type ServerOptions,
  type StaticFeature,
  TransportKind,
} from "vscode-languageclient/node";
// Not re-exported by the package's entry point in 9.0.1 (it is a proposed feature there).
import { InlineCompletionItemFeature } from "vscode-languageclient/lib/common/inlineCompletion";
import { inlineCompletionMiddleware } from "./inlineCompletion";
import { CAPABILITY, VERSION } from "./protocol";
import { toServerSettings } from "./settings";

/** Declares `experimental.agent` (the server sends agent/event only to clients that do). */
class AgentCapability implements StaticFeature {
  constructor(private readonly reviewInPanel: boolean) {}
  getState(): FeatureState {
    return { kind: "static" };
  }
  fillClientCapabilities(caps: ClientCapabilities): void {
    caps.experimental = { ...(caps.experimental ?? {}), [CAPABILITY]: { version: VERSION } };
    // With change annotations the server lets VS Code confirm each review edit before it
    // lands (the refactor preview), and nothing stays pending for the panel's review.
    if (this.reviewInPanel && caps.workspace?.workspaceEdit) {
      delete caps.workspace.workspaceEdit.changeAnnotationSupport;
    }
  }
  initialize(): void {}
  clear(): void {}
  dispose(): void {}
}

export function settings() {
  const c = vscode.workspace.getConfiguration("agentls");
  return toServerSettings((k) => c.get(k));
}

export function createClient(serverPath: string, output: vscode.OutputChannel): LanguageClient {
  const cfg = vscode.workspace.getConfiguration("agentls");
  const serverOptions: ServerOptions = {
    command: serverPath,
    transport: TransportKind.stdio,
    options: { env: { ...process.env, AGENTLS_LOG: cfg.get<string>("log", "info") } },
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [{ scheme: "file" }, { scheme: "untitled" }],
    outputChannel: output,
    initializationOptions: settings(),
    // The server reads its settings from initializationOptions and didChangeConfiguration;
    // extension.ts sends the latter when agentls.* changes.
    // Ghost text: read at each request, so turning it off takes effect at once.
    middleware: inlineCompletionMiddleware(() => vscode.workspace.getConfiguration("agentls").get<boolean>("completion.enabled", true)),
  };
  const client = new LanguageClient("agentls", "agentls", serverOptions, clientOptions);
  client.registerFeature(new AgentCapability(cfg.get<string>("reviewIn", "panel") === "panel"));
  // textDocument/inlineCompletion: the provider is registered once the server advertises it.
  client.registerFeature(new InlineCompletionItemFeature(client));
  return client;
}
