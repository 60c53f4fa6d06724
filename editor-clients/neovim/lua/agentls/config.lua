-- The plugin's options: defaults, merged with what setup{} is given.
local M = {}

local defaults = {
  -- The server: `agentls` on PATH, or a path to the binary.
  cmd = { "agentls" },
  -- What marks a workspace root; the current directory when none is found.
  root_markers = { ".git", "agentls.toml", "Cargo.toml", "pyproject.toml", "package.json", "go.mod" },
  -- Sent as initializationOptions (the server's config keys, as in config.toml).
  -- `agent.review = "review"` makes agent edits land pending, for :AgentAccept/:AgentReject.
  settings = {},
  chat = {
    -- "vsplit" (right), "split" (below) or "float".
    layout = "vsplit",
    width = 70,
  },
  -- Forward the editor's diagnostics (every source) to the agent (agent/diagnostics).
  forward_diagnostics = true,
  -- LspProgress of agent runs as vim.notify messages.
  notify_progress = true,
  -- Ghost text from the server (textDocument/inlineCompletion) while typing.
  completion = {
    -- false: no ghost text, and the server is told (`completion.enabled = false`).
    enabled = true,
    -- Insert-mode keys; each acts only while a suggestion shows, else does what it
    -- did before. false: no mapping (call require("agentls.complete").accept() yourself).
    accept = "<Tab>",
    next = "<M-]>",
    prev = "<M-[>",
  },
  -- Next-edit suggestions (textDocument/copilotInlineEdit): the rest of a rename, the
  -- calls of a function that gained a parameter.
  next_edit = {
    enabled = true,
    -- Ask after a change in normal mode and on leaving insert mode (else only through
    -- :AgentNextEdit or require("agentls.next_edit").request()).
    auto = true,
    -- Milliseconds of quiet before asking.
    debounce_ms = 100,
    -- Normal-mode keys; each acts only while suggestions show, else does what it did.
    jump = "<Tab>",
    dismiss = "<Esc>",
  },
}

local current = vim.deepcopy(defaults)

function M.set(opts)
  current = vim.tbl_deep_extend("force", vim.deepcopy(defaults), opts or {})
  if type(current.cmd) == "string" then
    current.cmd = { current.cmd }
  end
end

function M.get()
  return current
end

return M
