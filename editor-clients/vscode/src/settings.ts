// The agentls.* settings as the server reads them (crates/host/src/config.rs: the client's
// initializationOptions and workspace/didChangeConfiguration layers, snake_case keys).

export type Get = (key: string) => unknown;

export interface ServerSettings {
  agent: { model?: string; review?: string; approval_timeout_secs?: number; max_steps?: number };
  /** `[completion]`: only `enabled = false`, sent when the user turned ghost text off; on,
   * the server's own config decides (a VS Code default must not override the user's file). */
  completion?: { enabled: false };
}

export function toServerSettings(get: Get): ServerSettings {
  const agent: ServerSettings["agent"] = {};
  const model = get("model");
  if (typeof model === "string" && model !== "") agent.model = model;
  const review = get("review");
  if (review === "direct" || review === "review") agent.review = review;
  const timeout = get("approvalTimeoutSecs");
  if (typeof timeout === "number" && timeout > 0) agent.approval_timeout_secs = Math.floor(timeout);
  const steps = get("maxSteps");
  if (typeof steps === "number" && steps > 0) agent.max_steps = Math.floor(steps);
  const out: ServerSettings = { agent };
  if (get("completion.enabled") === false) out.completion = { enabled: false };
  return out;
}
