// The status-bar item: running / idle, the model, tokens of the session.
import * as vscode from "vscode";

export class Status implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem("agentls.status", vscode.StatusBarAlignment.Right, 100);
  private running = new Set<string>();
  private model = "";
  private tokens = 0;
  private problem = "";

  constructor() {
    this.item.name = "agentls";
    this.item.command = "agentls.chat.focus";
    this.render();
    this.item.show();
  }

  setProblem(p: string): void {
    this.problem = p;
    this.render();
  }

  update(session: string, running: boolean, model?: string, tokens?: number): void {
    if (running) this.running.add(session);
    else this.running.delete(session);
    if (model) this.model = model;
    if (tokens !== undefined) this.tokens = tokens;
    void vscode.commands.executeCommand("setContext", "agentls.running", this.running.size > 0);
    this.render();
  }

  private render(): void {
    if (this.problem) {
      this.item.text = "$(error) agentls";
      this.item.tooltip = this.problem;
      this.item.command = "agentls.output.show";
      return;
    }
    this.item.command = "agentls.chat.focus";
    const tok = this.tokens >= 1000 ? `${(this.tokens / 1000).toFixed(1)}k` : String(this.tokens);
    const state = this.running.size ? "$(sync~spin) running" : "$(hubot) idle";
    this.item.text = `${state}${this.model ? " · " + this.model : ""} · ${tok} tok`;
    this.item.tooltip = "agentls: open the chat panel";
  }

  dispose(): void {
    this.item.dispose();
  }
}
