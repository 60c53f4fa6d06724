// Bundles the extension (Node, CommonJS, `vscode` external) and the chat panel's
// script (browser, IIFE) with esbuild.
import { build } from "esbuild";

const common = { bundle: true, sourcemap: false, minify: false, logLevel: "warning", target: "es2022" };
await build({
  ...common,
  entryPoints: ["src/extension.ts"],
  outfile: "dist/extension.js",
  platform: "node",
  format: "cjs",
  external: ["vscode"],
});
await build({
  ...common,
  entryPoints: ["src/webview/main.ts"],
  outfile: "dist/webview.js",
  platform: "browser",
  format: "iife",
});
