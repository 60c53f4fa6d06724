-- Drives the Neovim plugin (editor-clients/neovim) in a real, headless Neovim 0.11 as a
-- user would: setup{}, a file opened, :Agent prompts, :AgentAccept/:AgentReject,
-- :AgentCancel, a file opened later, another server's diagnostics, :AgentSearch. The model turns are
-- queued by the Rust test in the order the steps run. Results go to $OUT, one
-- `key=value` per line; $CHAT gets the chat window's text at the end.
local out = {}
local function finish()
  local lines = {}
  for k, v in pairs(out) do
    table.insert(lines, k .. "=" .. tostring(v):gsub("\n", "|"))
  end
  table.sort(lines)
  vim.fn.writefile(lines, vim.env.OUT)
  vim.cmd("qa!")
end

local function wait(what, ms, fn)
  if not vim.wait(ms, fn, 20) then
    error("timed out waiting for " .. what)
  end
end

local ok, err = pcall(function()
  local root = vim.env.WS
  vim.opt.rtp:prepend(vim.env.PLUGIN)
  vim.cmd("runtime plugin/agentls.lua")
  local agentls = require("agentls")
  agentls.setup({ cmd = { vim.env.AGENTLS_BIN }, settings = { agent = { review = "review" } } })
  vim.cmd("cd " .. root)

  vim.cmd("edit " .. root .. "/src/lib.rs")
  local lib = vim.api.nvim_get_current_buf()
  wait("agentls to attach", 15000, function()
    local c = agentls.client()
    return c ~= nil and c.initialized and #vim.lsp.get_clients({ bufnr = lib, name = "agentls" }) == 1
  end)
  local client = agentls.client()
  out.document_changes = client.capabilities.workspace.workspaceEdit.documentChanges == true
  out.debounce = client.flags.debounce_text_changes
  out.agent_capability = client.capabilities.experimental.agent.version

  local chat = require("agentls.chat")
  local function chat_text()
    local buf = chat.buf()
    return buf and table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n") or ""
  end
  local function finished_runs()
    local _, n = chat_text():gsub("\n_[a-zA-Z]+ · %d+ step", "")
    return n
  end

  -- 1. A chat round trip: a tool call (folded), then the streamed answer.
  vim.cmd("Agent what does add do? @file")
  wait("the answer", 20000, function()
    return chat_text():find("It adds nothing yet.", 1, true) ~= nil and finished_runs() == 1
  end)
  local cbuf = chat.buf()
  local lines = vim.api.nvim_buf_get_lines(cbuf, 0, -1, false)
  for i, l in ipairs(lines) do
    if l:find("^▾ read_file") then
      out.tool_header = l
      local win = vim.fn.bufwinid(cbuf)
      out.tool_folded = vim.api.nvim_win_call(win, function()
        return vim.fn.foldclosed(i) == i
      end)
    end
  end
  out.chat_filetype = vim.bo[cbuf].filetype

  -- 2. Review: the edit lands pending and marked; :AgentReject under the cursor undoes it.
  vim.cmd("Agent implement add")
  local review = require("agentls.review")
  local function marks()
    return #vim.api.nvim_buf_get_extmarks(lib, review.ns, 0, -1, {})
  end
  wait("the pending edit", 20000, function()
    local text = table.concat(vim.api.nvim_buf_get_lines(lib, 0, -1, false), "\n")
    return text:find("a + b", 1, true) ~= nil and marks() > 0 and finished_runs() == 2
  end)
  out.marks_pending = marks()
  -- What :AgentReject reads: the pending change and where it is now (agent/listChanges).
  local function list(params)
    local listed
    review.list(params, function(changes)
      listed = changes
    end)
    wait("the pending changes", 5000, function()
      return listed ~= nil
    end)
    return listed
  end
  local listed = list({ uri = vim.uri_from_bufnr(lib) })
  out.listed_count = #listed
  if listed[1] then
    local c = listed[1]
    local first, last = review.lines(c)
    out.listed_lines = first .. "-" .. last
    out.listed_kind = ("%s +%d -%d"):format(c.kind, c.linesAdded, c.linesRemoved)
    out.listed_version_current = c.version == vim.lsp.util.buf_versions[lib]
  end
  vim.api.nvim_set_current_buf(lib)
  vim.api.nvim_win_set_cursor(0, { 2, 0 })
  vim.cmd("AgentReject")
  wait("the rejection", 10000, function()
    local text = table.concat(vim.api.nvim_buf_get_lines(lib, 0, -1, false), "\n")
    return text:find("todo!()", 1, true) ~= nil and marks() == 0
  end)
  out.after_reject = table.concat(vim.api.nvim_buf_get_lines(lib, 0, -1, false), "|")

  -- 3. Again, accepted for the whole session this time.
  vim.cmd("Agent implement add again")
  wait("the second pending edit", 20000, function()
    local text = table.concat(vim.api.nvim_buf_get_lines(lib, 0, -1, false), "\n")
    return text:find("a + b", 1, true) ~= nil and marks() > 0 and finished_runs() == 3
  end)
  vim.cmd("AgentAcceptAll")
  wait("the acceptance", 10000, function()
    return marks() == 0
  end)
  out.after_accept = table.concat(vim.api.nvim_buf_get_lines(lib, 0, -1, false), "|")
  local pending
  agentls.request(require("agentls.protocol").methods.listSessions, nil, function(_, r)
    pending = r.sessions[1].pendingChanges
  end)
  wait("the session list", 5000, function()
    return pending ~= nil
  end)
  out.pending_after_accept = pending
  out.listed_after_accept = #list({})

  -- 4. Cancel a slow run.
  vim.cmd("Agent take your time")
  wait("the slow run to start", 20000, function()
    return chat_text():find("Thinking", 1, true) ~= nil
  end)
  out.status_running = agentls.status()
  vim.cmd("AgentCancel")
  wait("the cancellation", 20000, function()
    return chat_text():find("_cancelled · ", 1, true) ~= nil
  end)

  -- 5. A file opened later is attached too.
  vim.cmd("edit " .. root .. "/src/other.rs")
  local other = vim.api.nvim_get_current_buf()
  wait("attach to a file opened later", 10000, function()
    return #vim.lsp.get_clients({ bufnr = other, name = "agentls" }) == 1
  end)
  out.later_attached = true

  -- 6. Another server's diagnostics reach the agent's diagnostics tool.
  local foreign = vim.api.nvim_create_namespace("another_server")
  vim.diagnostic.set(foreign, lib, {
    { lnum = 0, col = 7, message = "mismatched types from another server", severity = 1, source = "rustc-elsewhere" },
  })
  vim.wait(600, function()
    return false
  end, 50)
  vim.cmd("Agent any errors in src/lib.rs?")
  wait("the diagnostics run", 20000, function()
    return chat_text():find("One error.", 1, true) ~= nil
  end)

  vim.fn.writefile(vim.api.nvim_buf_get_lines(chat.buf(), 0, -1, false), vim.env.CHAT)

  -- 7. The pickers, with vim.ui.select answering its first item.
  vim.ui.select = function(items, _, on_choice)
    on_choice(items[1])
  end
  vim.cmd("AgentModel")
  wait("the model switch", 5000, function()
    return chat_text():find("_model: fixture_", 1, true) ~= nil
  end)
  vim.cmd("AgentSessions")
  wait("a resumed transcript", 5000, function()
    local text = chat_text()
    return text:find("## You", 1, true) ~= nil and text:find("_model: fixture_", 1, true) == nil
  end)
  out.resumed = true

  -- 8. :AgentSearch: hits in the quickfix list, which opens; a bad glob is an error.
  vim.fn.setqflist({}, " ", { title = "before" })
  vim.cmd("AgentSearch where do we retry uploads that failed")
  wait("the search's quickfix list", 10000, function()
    return vim.fn.getqflist({ title = 0 }).title ~= "before"
  end)
  local qf = vim.fn.getqflist({ title = 0, items = 0 })
  out.search_title = qf.title
  local first = qf.items[1]
  out.search_first = first and (vim.api.nvim_buf_get_name(first.bufnr) .. ":" .. first.lnum .. " " .. first.text) or ""
  out.search_qf_open = vim.fn.getqflist({ winid = 0 }).winid ~= 0
  -- The title of a hybrid answer names the model (no model is set up in this test).
  out.search_title_model = require("agentls.search").title(
    "q",
    { ranking = "hybrid", model = "minilm-l6-v2-full-1", hits = { {} }, embedded = 3, chunks = 4 }
  )
  local notified = {}
  local notify = vim.notify
  vim.notify = function(msg, level)
    table.insert(notified, msg)
    notify(msg, level)
  end
  require("agentls.search").search("retry", { path = "[[" })
  wait("the bad glob's error", 10000, function()
    return #notified > 0
  end)
  vim.notify = notify
  out.search_bad_glob = notified[1]

  out.status_end = agentls.status()
  vim.cmd("checkhealth agentls")
  out.health = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
end)
if not ok then
  out.error = tostring(err)
end
finish()
