// The prompt box's context references: `@file` (the active file), `@path/to/file`
// (a workspace file) and `#selection` (the active selection).

export interface ContextRefs {
  activeFile: boolean;
  selection: boolean;
  paths: string[];
}

export function parseContext(text: string): ContextRefs {
  const refs: ContextRefs = { activeFile: false, selection: false, paths: [] };
  for (const m of text.matchAll(/(^|\s)([@#])([\w./-]+)/g)) {
    const [sigil, word] = [m[2], m[3] ?? ""];
    if (sigil === "#" && word === "selection") refs.selection = true;
    else if (sigil === "@" && word === "file") refs.activeFile = true;
    else if (sigil === "@" && /[./]/.test(word)) refs.paths.push(word.replace(/[.,]$/, ""));
  }
  return refs;
}
