// Ghost text: the server's `textDocument/inlineCompletion` (LSP 3.18). vscode-languageclient
// 9.0.1 carries the request as a proposed feature (InlineCompletionItemFeature): it
// declares the client capability, registers VS Code's InlineCompletionItemProvider when
// the server advertises `inlineCompletionProvider`, converts the items (UTF-16 ranges, the
// only encoding the library negotiates) and turns VS Code's cancellation token into
// `$/cancelRequest`. This module adds the switch: while `agentls.completion.enabled` is
// false nothing is asked. No `vscode` import, so the unit tests run it.
import type { Middleware } from "vscode-languageclient/node";

type Provide = NonNullable<Middleware["provideInlineCompletionItems"]>;

/** A middleware that passes the request on only while `enabled()` says so. */
export function inlineCompletionMiddleware(enabled: () => boolean): Pick<Middleware, "provideInlineCompletionItems"> {
  const provideInlineCompletionItems: Provide = (document, position, context, token, next) =>
    enabled() ? next(document, position, context, token) : null;
  return { provideInlineCompletionItems };
}
