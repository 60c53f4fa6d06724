-- Generated from protocol/schema.json by agentls-protocol (lua_module): do not edit;
-- run `UPDATE_SCHEMA=1 cargo test -p agentls-protocol`.
return {
  capability = "agent",
  version = 1,
  methods = {
    cancel = "agent/cancel",
    compact = "agent/compact",
    copilotInlineEdit = "textDocument/copilotInlineEdit",
    diagnostics = "agent/diagnostics",
    event = "agent/event",
    getTranscript = "agent/getTranscript",
    inlineCompletion = "textDocument/inlineCompletion",
    listChanges = "agent/listChanges",
    listModels = "agent/listModels",
    listSessions = "agent/listSessions",
    newSession = "agent/newSession",
    prompt = "agent/prompt",
    review = "agent/review",
    semanticSearch = "agentls/semanticSearch",
    setModel = "agent/setModel",
    viewFileText = "agentls/viewFileText",
  },
}
