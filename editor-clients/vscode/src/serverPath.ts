// Finding the agentls binary: the `agentls.path` setting, else PATH, else the binary
// built in this repository when the extension runs from it.
import * as path from "node:path";

export const BUILD_COMMAND = "cargo build --release --bin agentls";

export type Found = { path: string; from: "setting" | "PATH" | "repository" } | { error: string };

export interface Lookup {
  configured: string;
  pathEnv: string;
  /** The extension's own directory (editor-clients/vscode in the repository). */
  extensionDir: string;
  isFile: (p: string) => boolean;
}

export function findServer(l: Lookup): Found {
  if (l.configured.trim() !== "") {
    const p = l.configured.trim();
    return l.isFile(p)
      ? { path: p, from: "setting" }
      : { error: `agentls.path is set to ${p}, which is not a file. Fix the setting, or build the server: ${BUILD_COMMAND}` };
  }
  for (const dir of l.pathEnv.split(path.delimiter)) {
    if (dir === "") continue;
    const p = path.join(dir, "agentls");
    if (l.isFile(p)) return { path: p, from: "PATH" };
  }
  for (const profile of ["release", "debug"]) {
    const p = path.resolve(l.extensionDir, "..", "..", "target", profile, "agentls");
    if (l.isFile(p)) return { path: p, from: "repository" };
  }
  return {
    error: `agentls was not found: set agentls.path, put agentls on PATH, or build it in the repository with: ${BUILD_COMMAND}`,
  };
}
