// The agent/* protocol as the extension uses it: method names, the capability and the
// types, all generated from protocol/schema.json (src/protocol.generated.ts, `npm run gen`).
import type { ProtocolTypes } from "./protocol.generated";

export { CAPABILITY, Methods, VERSION } from "./protocol.generated";
export type {
  CancelResult,
  Change as PendingChange,
  CopilotInlineEditParams,
  CopilotInlineEditResult,
  Event,
  EventParams,
  GetTranscriptResult,
  ListChangesParams,
  ListChangesResult,
  ListModelsResult,
  ListSessionsResult,
  Message,
  ModelInfo,
  Part,
  PlanItem,
  PromptParams,
  ReviewParams,
  ReviewResult,
  SemanticSearchParams,
  SemanticSearchResult,
  SessionInfo,
  Started,
  TaskArgs,
} from "./protocol.generated";

/** An LSP diagnostic as `agent/diagnostics` carries it (severity 1 = error … 4 = hint). */
export interface AgentDiagnostic {
  range: { start: { line: number; character: number }; end: { line: number; character: number } };
  severity?: 1 | 2 | 3 | 4;
  code?: string | number;
  source?: string;
  message: string;
}

/**
 * `agent/diagnostics` params: the schema's type (protocol/schema.json carries the method);
 * the fallback only matters for an older schema.
 */
export type DiagnosticsParams = ProtocolTypes extends { "agent/diagnostics.Params": infer P }
  ? P
  : { uri: string; version: number | null; diagnostics: AgentDiagnostic[] };
