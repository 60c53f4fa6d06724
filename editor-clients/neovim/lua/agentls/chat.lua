-- The chat window: a markdown buffer the agent's events stream into. Tool calls are
-- folded sections (a header line, their arguments and result inside the fold).
local config = require("agentls.config")
local methods = require("agentls.protocol").methods

local M = {}

-- The chat buffer, the session it shows, and where each running tool's section starts.
local chat = { buf = nil, session = nil, model = nil, tools = {}, in_text = false }

local function agentls()
  return require("agentls")
end

local function buf_valid()
  return chat.buf and vim.api.nvim_buf_is_valid(chat.buf)
end

local function ensure_buf()
  if buf_valid() then
    return chat.buf
  end
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(buf, "agentls://chat")
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].bufhidden = "hide"
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = "markdown"
  vim.keymap.set("n", "q", "<cmd>close<cr>", { buffer = buf, desc = "agentls: close the chat" })
  vim.keymap.set("n", "<C-c>", function()
    M.cancel()
  end, { buffer = buf, desc = "agentls: cancel the run" })
  chat.buf = buf
  return buf
end

local function chat_win()
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_buf(win) == chat.buf then
      return win
    end
  end
end

--- Opens (or focuses) the chat window.
function M.open()
  local buf = ensure_buf()
  local win = chat_win()
  if win then
    return win
  end
  local opts = config.get().chat
  local from = vim.api.nvim_get_current_win()
  if opts.layout == "float" then
    local width = math.min(opts.width, vim.o.columns - 4)
    local height = math.max(10, vim.o.lines - 6)
    win = vim.api.nvim_open_win(buf, false, {
      relative = "editor",
      width = width,
      height = height,
      row = 1,
      col = vim.o.columns - width - 2,
      border = "rounded",
      title = " agentls ",
    })
  else
    vim.cmd(opts.layout == "split" and "botright split" or "botright vsplit")
    win = vim.api.nvim_get_current_win()
    vim.api.nvim_win_set_buf(win, buf)
    if opts.layout ~= "split" then
      vim.api.nvim_win_set_width(win, opts.width)
    end
    vim.api.nvim_set_current_win(from)
  end
  vim.wo[win].wrap = true
  vim.wo[win].linebreak = true
  vim.wo[win].foldmethod = "manual"
  vim.wo[win].foldenable = true
  return win
end

local function line_count()
  return vim.api.nvim_buf_line_count(chat.buf)
end

local function append(lines)
  ensure_buf()
  local n = line_count()
  local first = vim.api.nvim_buf_get_lines(chat.buf, 0, 1, false)[1]
  if n == 1 and first == "" then
    vim.api.nvim_buf_set_lines(chat.buf, 0, 1, false, lines)
  else
    vim.api.nvim_buf_set_lines(chat.buf, n, n, false, lines)
  end
  chat.in_text = false
  local win = chat_win()
  if win then
    vim.api.nvim_win_set_cursor(win, { line_count(), 0 })
  end
end

-- Streamed text goes onto the last line, splitting at newlines.
local function append_text(text)
  ensure_buf()
  if not chat.in_text then
    append({ "" })
    chat.in_text = true
  end
  local n = line_count()
  local last = vim.api.nvim_buf_get_lines(chat.buf, n - 1, n, false)[1] or ""
  local pieces = vim.split(last .. text, "\n", { plain = true })
  vim.api.nvim_buf_set_lines(chat.buf, n - 1, n, false, pieces)
  local win = chat_win()
  if win then
    vim.api.nvim_win_set_cursor(win, { line_count(), 0 })
  end
end

local function fold(first, last)
  local win = chat_win()
  if not win or last <= first then
    return
  end
  vim.api.nvim_win_call(win, function()
    vim.cmd(("%d,%dfold"):format(first, last))
  end)
end

local function short(value, max)
  local s = type(value) == "string" and value or vim.json.encode(value)
  s = s:gsub("\n", " ")
  if #s > max then
    s = s:sub(1, max) .. "…"
  end
  return s
end

--- Renders one agent/event of the session the chat shows.
function M.on_event(params)
  if params.session ~= chat.session or not buf_valid() then
    return
  end
  local e = params.event
  if e.type == "textDelta" then
    append_text(e.text or "")
  elseif e.type == "toolStarted" then
    chat.tools[e.id] = { line = line_count() + 1, name = e.name }
    append({
      ("▸ %s %s"):format(e.name, short(e.arguments or {}, 60)),
      "  arguments: " .. short(e.arguments or {}, 400),
    })
  elseif e.type == "toolOutput" then
    local lines = vim.split(e.text or "", "\n", { trimempty = true })
    for i, l in ipairs(lines) do
      lines[i] = "  │ " .. l
    end
    if #lines > 0 then
      append(lines)
    end
  elseif e.type == "toolFinished" then
    local tool = chat.tools[e.id]
    -- A command that ran and exited non-zero failed too, though the tool worked.
    local verdict = e.error and ("failed (" .. e.error .. ")") or (e.failed and "failed (exited non-zero)" or "ok")
    append({ ("  %s · %s · %d ms"):format(verdict, short(e.summary or "", 300), e.ms or 0) })
    if tool then
      local header = ("▾ %s %s · %s"):format(e.name, verdict, short(e.summary or "", 50))
      vim.api.nvim_buf_set_lines(chat.buf, tool.line - 1, tool.line, false, { header })
      fold(tool.line, line_count())
      chat.tools[e.id] = nil
    end
  elseif e.type == "plan" then
    local lines = { "Plan:" }
    for _, item in ipairs(e.items or {}) do
      local box = item.status == "completed" and "[x]" or (item.status == "in_progress" and "[~]" or "[ ]")
      table.insert(lines, ("- %s %s"):format(box, item.text))
    end
    append(lines)
  elseif e.type == "edit" then
    local pending = e.changeIds and #e.changeIds > 0
    append({
      ("✎ %s%s"):format(
        vim.fn.fnamemodify(vim.uri_to_fname(e.uri), ":~:."),
        pending and " (pending review: :AgentAccept / :AgentReject)" or ""
      ),
    })
  elseif e.type == "approval" then
    local answer = e.granted == nil and "asking…" or (e.granted and "allowed" or "denied")
    append({ ("? %s: %s"):format(e.what or "", answer) })
  elseif e.type == "usage" then
    if (e.input or 0) + (e.output or 0) == 0 then
      return
    end
    append({ ("_tokens: %d in (%d cached), %d out_"):format(e.input or 0, e.cachedInput or 0, e.output or 0) })
  elseif e.type == "error" then
    append({ ("! %s: %s"):format(e.class or "error", short(e.message or "", 300)) })
  elseif e.type == "finished" then
    append({ ("_%s · %d step(s) · %.1f s_"):format(e.status, e.steps or 0, (e.wallMs or 0) / 1000), "" })
  end
end

local function prompt_now(text, context)
  append({ "", "## You", text, "", "## agentls" })
  local params = { session = chat.session, text = text, context = context }
  agentls().request(methods.prompt, params, function(err)
    if err then
      append({ "! " .. (err.message or "the prompt failed") })
    end
  end)
end

--- Sends `text` (with an optional `{ uri, range }` context) in the chat's session,
--- creating one first.
function M.send(text, context)
  M.open()
  if chat.session then
    prompt_now(text, context)
    return
  end
  local params = chat.model and { model = chat.model } or vim.empty_dict()
  agentls().request(methods.newSession, params, function(err, info)
    if err or not info then
      append({ "! " .. ((err and err.message) or "no session") })
      return
    end
    chat.session = info.id
    agentls().state.session = info.id
    agentls().state.model = info.model
    prompt_now(text, context)
  end)
end

--- `:Agent [text]`: the text, with `@file` as the current file and a visual range as
--- the selection.
function M.command(opts)
  local text = opts.args
  if text == "" then
    M.open()
    return
  end
  local context
  local buf = vim.api.nvim_get_current_buf()
  if buf ~= chat.buf and vim.api.nvim_buf_get_name(buf) ~= "" then
    local uri = vim.uri_from_bufnr(buf)
    if opts.range and opts.range > 0 then
      local last = vim.api.nvim_buf_get_lines(buf, opts.line2 - 1, opts.line2, false)[1] or ""
      context = {
        uri = uri,
        range = {
          start = { line = opts.line1 - 1, character = 0 },
          ["end"] = { line = opts.line2 - 1, character = #last },
        },
      }
    elseif text:find("@file", 1, true) then
      context = { uri = uri }
    end
  end
  M.send(text, context)
end

--- Cancels the chat's running session.
function M.cancel()
  if not chat.session then
    return
  end
  agentls().request(methods.cancel, { session = chat.session }, function(err, r)
    if not err and r and r.cancelled then
      append({ "_cancelling…_" })
    end
  end)
end

--- Starts a new session on the next prompt.
function M.new()
  chat.session = nil
  if buf_valid() then
    vim.api.nvim_buf_set_lines(chat.buf, 0, -1, false, {})
  end
end

--- Picks the model (mid-chat too: the next run goes to it).
function M.pick_model()
  agentls().request(methods.listModels, nil, function(err, r)
    if err or not r then
      return
    end
    local names = {}
    for _, m in ipairs(r.models or {}) do
      table.insert(names, m.name)
    end
    vim.ui.select(names, { prompt = "agentls model" }, function(choice)
      if not choice then
        return
      end
      chat.model = choice
      if chat.session then
        agentls().request(methods.setModel, { session = chat.session, model = choice }, function(e2, info)
          if not e2 and info then
            agentls().state.model = info.model
            append({ "_model: " .. info.model .. "_" })
          end
        end)
      end
    end)
  end)
end

local function render_transcript(t)
  M.open()
  vim.api.nvim_buf_set_lines(chat.buf, 0, -1, false, {})
  for _, m in ipairs(t.messages or {}) do
    local lines = {}
    for _, p in ipairs(m.parts or {}) do
      if p.type == "text" and p.text then
        vim.list_extend(lines, vim.split(p.text, "\n"))
      elseif p.type == "toolCall" then
        table.insert(lines, "▸ " .. (p.name or "tool"))
      elseif p.type == "toolResult" then
        table.insert(lines, "  " .. short(p.content or p.text or "", 200))
      end
    end
    local head = m.role == "user" and "## You" or (m.role == "assistant" and "## agentls" or nil)
    if head then
      append({ "", head })
    end
    if #lines > 0 then
      append(lines)
    end
  end
end

--- Lists the sessions and resumes the one picked, from its transcript.
function M.sessions()
  agentls().request(methods.listSessions, nil, function(err, r)
    if err or not r then
      return
    end
    local list = r.sessions or {}
    vim.ui.select(list, {
      prompt = "agentls sessions",
      format_item = function(s)
        return ("%s  [%s, %s]"):format(s.title ~= "" and s.title or s.id, s.status, s.model)
      end,
    }, function(choice)
      if not choice then
        return
      end
      agentls().request(methods.getTranscript, { session = choice.id }, function(e2, t)
        if e2 or not t then
          return
        end
        chat.session = choice.id
        agentls().state.session = choice.id
        render_transcript(t)
      end)
    end)
  end)
end

--- The chat's session id (tests, statusline).
function M.session()
  return chat.session
end

--- The chat buffer, if open.
function M.buf()
  return buf_valid() and chat.buf or nil
end

return M
