// The editor's diagnostics as `agent/diagnostics` carries them (no vscode import, so the
// mapping is unit-tested).
import type { AgentDiagnostic } from "./protocol";

export interface EditorDiagnostic {
  range: { start: { line: number; character: number }; end: { line: number; character: number } };
  /** vscode.DiagnosticSeverity: 0 error, 1 warning, 2 information, 3 hint. */
  severity: number;
  code?: string | number | { value: string | number } | undefined;
  source?: string | undefined;
  message: string;
}

export function toAgentDiagnostic(d: EditorDiagnostic): AgentDiagnostic {
  const out: AgentDiagnostic = {
    range: {
      start: { line: d.range.start.line, character: d.range.start.character },
      end: { line: d.range.end.line, character: d.range.end.character },
    },
    severity: (Math.min(Math.max(d.severity, 0), 3) + 1) as 1 | 2 | 3 | 4,
    message: d.message,
  };
  const code = typeof d.code === "object" && d.code !== null ? d.code.value : d.code;
  if (code !== undefined) out.code = code;
  if (d.source) out.source = d.source;
  return out;
}
