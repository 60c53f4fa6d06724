// Runs started from code actions report through $/progress. vscode-languageclient shows
// work-done progress in the status bar only, without a cancel button; this handler
// shows cancellable progress (agent runs) as a notification with Cancel instead (cancel: window/workDoneProgress/cancel).
import * as vscode from "vscode";
import {
  type LanguageClient,
  WorkDoneProgress,
  WorkDoneProgressCancelNotification,
  WorkDoneProgressCreateRequest,
  type WorkDoneProgressBegin,
  type WorkDoneProgressReport,
  type WorkDoneProgressEnd,
} from "vscode-languageclient/node";

export function registerProgress(client: LanguageClient): vscode.Disposable {
  const subs: vscode.Disposable[] = [];
  subs.push(
    client.onRequest(WorkDoneProgressCreateRequest.type, ({ token }) => {
      let done: () => void = () => {};
      let reporter: vscode.Progress<{ message?: string }> | undefined;
      const finished = new Promise<void>((r) => (done = r));
      const sub = client.onProgress(WorkDoneProgress.type, token, (v: WorkDoneProgressBegin | WorkDoneProgressReport | WorkDoneProgressEnd) => {
        if (v.kind === "begin") {
          void vscode.window.withProgress(
            // Agent runs are cancellable: a notification with Cancel. Other progress
            // (indexing) stays in the status bar, as vscode-languageclient shows it.
            v.cancellable
              ? { location: vscode.ProgressLocation.Notification, title: v.title, cancellable: true }
              : { location: vscode.ProgressLocation.Window, title: v.title },
            (progress, cancel) => {
              reporter = progress;
              if (v.message) progress.report({ message: v.message });
              cancel.onCancellationRequested(() => void client.sendNotification(WorkDoneProgressCancelNotification.type, { token }));
              return finished;
            },
          );
        } else if (v.kind === "report") {
          reporter?.report({ message: v.message ?? "" });
        } else {
          if (v.message) void vscode.window.setStatusBarMessage(`agentls: ${v.message}`, 5000);
          sub.dispose();
          done();
        }
      });
    }),
  );
  return vscode.Disposable.from(...subs);
}
