-- Commands of the agentls plugin. They act once `require("agentls").setup{}` has run.
if vim.g.loaded_agentls then
  return
end
vim.g.loaded_agentls = true

local function chat()
  return require("agentls.chat")
end
local function review()
  return require("agentls.review")
end
local function search()
  return require("agentls.search")
end

local cmd = vim.api.nvim_create_user_command
cmd("Agent", function(opts)
  chat().command(opts)
end, { nargs = "*", range = true, desc = "agentls: open the chat, or send a prompt (@file, a range)" })
cmd("AgentCancel", function()
  chat().cancel()
end, { desc = "agentls: cancel the chat's run" })
cmd("AgentNew", function()
  chat().new()
end, { desc = "agentls: start a new session" })
cmd("AgentModel", function()
  chat().pick_model()
end, { desc = "agentls: pick the model" })
cmd("AgentSessions", function()
  chat().sessions()
end, { desc = "agentls: resume a session" })
cmd("AgentAccept", function()
  review().at_cursor("accept")
end, { desc = "agentls: accept the change under the cursor" })
cmd("AgentReject", function()
  review().at_cursor("reject")
end, { desc = "agentls: reject the change under the cursor" })
cmd("AgentAcceptAll", function()
  review().all("accept")
end, { desc = "agentls: accept every pending change of the session" })
cmd("AgentRejectAll", function()
  review().all("reject")
end, { desc = "agentls: reject every pending change of the session" })
cmd("AgentSearch", function(opts)
  search().search(opts.args)
end, { nargs = "+", desc = "agentls: find code by what it does (semantic search) into the quickfix list" })
cmd("AgentNextEdit", function()
  require("agentls.next_edit").request()
end, { desc = "agentls: suggest the edits that follow from the last one (<Tab> jumps, <Tab> applies)" })
