-- Ghost text: the server's `textDocument/inlineCompletion` (LSP 3.18) while typing.
--
-- Neovim 0.12 and newer have it built in (`vim.lsp.inline_completion`): the plugin turns
-- that on for agentls and maps the accept key to it. Before 0.12 the plugin draws it
-- itself: after each change in insert mode it asks the server (the server debounces;
-- a newer change cancels the request in flight with $/cancelRequest), and shows the
-- suggestion as an extmark at the cursor, its first line inline (`virt_text`), the rest
-- as virtual lines below (`virt_lines`). The accept key inserts it; leaving insert mode,
-- moving the cursor or leaving the buffer clears it.
local M = {}

local protocol = require("agentls.protocol")
local util = require("agentls.lsp_util")

-- The method, as the generated protocol module names it.
local METHOD = protocol.methods.inlineCompletion
-- InlineCompletionTriggerKind.Automatic: asked while typing, not by a command.
local AUTOMATIC = 2

M.ns = vim.api.nvim_create_namespace("agentls_ghost")

-- The shown suggestion: { buf, row, col (0-based, bytes: where the cursor was),
-- tick (b:changedtick), items = { { text, srow, scol, erow, ecol } }, index }.
local shown = nil
-- The request in flight: { client, id, buf }.
local pending = nil
-- Bumped by every request and every clear: an answer is for the latest request only.
local generation = 0

--- Whether this Neovim has the built-in inline completion (0.12+).
function M.builtin()
  return vim.lsp.inline_completion ~= nil and vim.lsp.inline_completion.enable ~= nil
end

local function cancel()
  local p = pending
  pending = nil
  util.cancel(p)
end

--- Clears the ghost text and withdraws the request in flight.
function M.clear()
  generation = generation + 1
  cancel()
  if shown and vim.api.nvim_buf_is_valid(shown.buf) then
    vim.api.nvim_buf_clear_namespace(shown.buf, M.ns, 0, -1)
  end
  shown = nil
end

--- Whether a suggestion shows in the current buffer at the cursor.
function M.visible()
  if not shown or shown.buf ~= vim.api.nvim_get_current_buf() then
    return false
  end
  local cur = vim.api.nvim_win_get_cursor(0)
  return cur[1] - 1 == shown.row and cur[2] == shown.col and vim.b[shown.buf].changedtick == shown.tick
end

-- The items of an answer that fit the buffer: each as what replaces which range, kept
-- only when its range is on the cursor's line around the cursor and the text from the
-- range's start to the cursor is how the item begins (the ghost text is the rest).
-- Snippet items (`insertText` as a StringValue) are left out: agentls sends plain text.
local function fitting(result, buf, row, col, enc)
  local items = type(result) == "table" and (result.items or result) or {}
  local line = util.line_at(buf, row)
  local out = {}
  for _, item in ipairs(items) do
    local text = type(item) == "table" and item.insertText or nil
    if type(text) == "string" and text ~= "" then
      local srow, scol, erow, ecol = row, col, row, col
      local r = item.range
      if type(r) == "table" and r.start and r["end"] then
        srow, erow = r.start.line, r["end"].line
        scol = util.byte_col(line, r.start.character, enc)
        ecol = util.byte_col(line, r["end"].character, enc)
      end
      if srow == row and erow == row and scol <= col and ecol >= col then
        local typed = line:sub(scol + 1, col)
        if text:sub(1, #typed) == typed and #text > #typed then
          table.insert(out, { text = text, typed = #typed, srow = srow, scol = scol, erow = erow, ecol = ecol })
        end
      end
    end
  end
  return out
end

local function draw()
  local s = shown
  if not s then
    return
  end
  vim.api.nvim_buf_clear_namespace(s.buf, M.ns, 0, -1)
  local item = s.items[s.index]
  local ghost = item.text:sub(item.typed + 1)
  -- Tabs as the buffer shows them: virtual text does not expand them.
  local tab = string.rep(" ", vim.bo[s.buf].tabstop)
  local lines = vim.split(ghost:gsub("\t", tab), "\n", { plain = true })
  local opts = { hl_mode = "combine", priority = 200 }
  if lines[1] ~= "" then
    opts.virt_text = { { lines[1], "AgentlsGhostText" } }
    opts.virt_text_pos = "inline"
  end
  if #lines > 1 then
    opts.virt_lines = {}
    for i = 2, #lines do
      table.insert(opts.virt_lines, { { lines[i], "AgentlsGhostText" } })
    end
  end
  vim.api.nvim_buf_set_extmark(s.buf, M.ns, s.row, s.col, opts)
end

--- The ghost text now shown ("" when none), for tests and statuslines.
function M.text()
  if not shown then
    return ""
  end
  local item = shown.items[shown.index]
  return item.text:sub(item.typed + 1)
end

--- Asks the server for a suggestion at the cursor of the current window (insert mode).
function M.request()
  M.clear()
  local buf = vim.api.nvim_get_current_buf()
  local client = require("agentls").client()
  if not client or not vim.lsp.buf_is_attached(buf, client.id) then
    return
  end
  local caps = client.server_capabilities or {}
  if not caps.inlineCompletionProvider then
    return
  end
  local cur = vim.api.nvim_win_get_cursor(0)
  local row, col = cur[1] - 1, cur[2]
  local enc = client.offset_encoding or "utf-16"
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(buf) },
    position = { line = row, character = vim.lsp.util.character_offset(buf, row, col, enc) },
    context = { triggerKind = AUTOMATIC },
  }
  local tick = vim.b[buf].changedtick
  local mine = generation
  local handler = function(err, result)
    if mine ~= generation then
      return
    end
    pending = nil
    if err or not result then
      return
    end
    -- Only where it was asked: same buffer, text, cursor, and still typing.
    local now = vim.api.nvim_win_get_cursor(0)
    if
      vim.api.nvim_get_current_buf() ~= buf
      or vim.b[buf].changedtick ~= tick
      or now[1] - 1 ~= row
      or now[2] ~= col
      or vim.api.nvim_get_mode().mode:sub(1, 1) ~= "i"
    then
      return
    end
    local items = fitting(result, buf, row, col, enc)
    if #items == 0 then
      return
    end
    shown = { buf = buf, row = row, col = col, tick = tick, items = items, index = 1 }
    draw()
  end
  local id = util.request(client, METHOD, params, handler, buf)
  if id then
    pending = { client = client, id = id, buf = buf }
  end
end

--- Inserts the shown suggestion and puts the cursor after it; false when none shows.
function M.accept()
  if not M.visible() then
    return false
  end
  local s = shown
  local item = s.items[s.index]
  M.clear()
  local lines = vim.split(item.text, "\n", { plain = true })
  vim.api.nvim_buf_set_text(s.buf, item.srow, item.scol, item.erow, item.ecol, lines)
  local last = lines[#lines]
  local row = item.srow + #lines - 1
  local col = (#lines == 1 and item.scol or 0) + #last
  vim.api.nvim_win_set_cursor(0, { row + 1, col })
  return true
end

--- Shows the next (`step` 1) or previous (-1) suggestion when the server gave several.
function M.cycle(step)
  if not M.visible() or #shown.items < 2 then
    return false
  end
  shown.index = (shown.index - 1 + step) % #shown.items + 1
  draw()
  return true
end

-- What the keys do: with the plugin's ghost text, and with Neovim's own (0.12+). Each
-- returns whether it acted.
local actions = {
  accept = M.accept,
  next = function()
    return M.cycle(1)
  end,
  prev = function()
    return M.cycle(-1)
  end,
}
local builtin_actions = {
  accept = function()
    return vim.lsp.inline_completion.get()
  end,
  next = function()
    vim.lsp.inline_completion.select({ count = 1 })
    return true
  end,
  prev = function()
    vim.lsp.inline_completion.select({ count = -1 })
    return true
  end,
}
local descriptions = { accept = "accept the suggestion", next = "next suggestion", prev = "previous suggestion" }

-- An insert-mode key: its action when a suggestion shows, else the key itself.
local function map(key, name)
  if not key or key == "" then
    return
  end
  vim.keymap.set("i", key, function()
    if M.builtin() then
      return builtin_actions[name]() and "" or key
    end
    if M.visible() then
      -- Run outside the expression, where the buffer may change.
      return "<Cmd>lua require('agentls.complete')._key('" .. name .. "')<CR>"
    end
    return key
  end, { expr = true, replace_keycodes = true, desc = "agentls: " .. descriptions[name] })
end

function M._key(name)
  actions[name]()
end

local function setup_builtin()
  vim.api.nvim_create_autocmd("LspAttach", {
    group = vim.api.nvim_create_augroup("agentls_complete", { clear = true }),
    callback = function(ev)
      local client = vim.lsp.get_client_by_id(ev.data.client_id)
      if client and client.name == "agentls" then
        vim.lsp.inline_completion.enable(true, { bufnr = ev.buf, client_id = client.id })
      end
    end,
  })
end

local function setup_extmarks()
  local group = vim.api.nvim_create_augroup("agentls_complete", { clear = true })
  vim.api.nvim_create_autocmd("TextChangedI", {
    group = group,
    callback = function()
      M.request()
    end,
  })
  vim.api.nvim_create_autocmd("CursorMovedI", {
    group = group,
    callback = function()
      if shown and not M.visible() then
        M.clear()
      end
    end,
  })
  vim.api.nvim_create_autocmd({ "InsertLeave", "BufLeave" }, {
    group = group,
    callback = function()
      M.clear()
    end,
  })
end

--- Turns ghost text on (called by setup{} unless `completion.enabled` is false).
function M.setup(cfg)
  vim.api.nvim_set_hl(0, "AgentlsGhostText", { link = "Comment", default = true })
  if M.builtin() then
    setup_builtin()
  else
    setup_extmarks()
  end
  map(cfg.accept, "accept")
  map(cfg.next, "next")
  map(cfg.prev, "prev")
end

return M
