-- Next-edit suggestions: the server's `textDocument/copilotInlineEdit` (the method
-- Copilot's language server answers, so sidekick.nvim works against agentls too).
--
-- After an edit in normal mode, or on leaving insert mode, the plugin asks the server
-- what the edit implies elsewhere (the rest of a rename, the calls of a function that
-- gained a parameter) and shows each suggested edit at its place: the text it replaces
-- highlighted (`AgentlsNextEditDelete`), the new text as inline virtual text
-- (`AgentlsNextEditAdd`). In normal mode `<Tab>` jumps to the first suggestion after the
-- cursor (else the first one), and on a suggestion applies them all, as text edits to
-- the buffer, only while the buffer is at the version the server computed them on.
-- `<Esc>` dismisses them; any change to the buffer clears them.
local M = {}

local protocol = require("agentls.protocol")
local util = require("agentls.lsp_util")

local METHOD = protocol.methods.copilotInlineEdit

M.ns = vim.api.nvim_create_namespace("agentls_next_edit")

-- The shown suggestions: { buf, version, enc, edits = { { text, srow, scol, erow, ecol } } }.
local shown = nil
-- The request in flight: { client, id }.
local pending = nil
-- Bumped by every request and every clear: an answer is for the latest request only.
local generation = 0

local function cancel()
  local p = pending
  pending = nil
  util.cancel(p)
end

--- Dismisses the suggestions and withdraws the request in flight.
function M.clear()
  generation = generation + 1
  cancel()
  if shown and vim.api.nvim_buf_is_valid(shown.buf) then
    vim.api.nvim_buf_clear_namespace(shown.buf, M.ns, 0, -1)
  end
  shown = nil
end

--- The suggestions shown for the current buffer at its current version (a list of
--- { text, srow, scol, erow, ecol }, 0-based rows, byte columns), or nil.
function M.get()
  if not shown or shown.buf ~= vim.api.nvim_get_current_buf() then
    return nil
  end
  if vim.lsp.util.buf_versions[shown.buf] ~= shown.version then
    return nil
  end
  return shown.edits
end

local function draw()
  local s = shown
  vim.api.nvim_buf_clear_namespace(s.buf, M.ns, 0, -1)
  for _, e in ipairs(s.edits) do
    if e.srow ~= e.erow or e.scol ~= e.ecol then
      vim.api.nvim_buf_set_extmark(s.buf, M.ns, e.srow, e.scol, {
        end_row = e.erow,
        end_col = e.ecol,
        hl_group = "AgentlsNextEditDelete",
        priority = 200,
      })
    end
    local lines = vim.split(e.text, "\n", { plain = true })
    local opts = { priority = 200, hl_mode = "combine" }
    if lines[1] ~= "" then
      opts.virt_text = { { lines[1], "AgentlsNextEditAdd" } }
      opts.virt_text_pos = "inline"
    end
    if #lines > 1 then
      opts.virt_lines = {}
      for i = 2, #lines do
        table.insert(opts.virt_lines, { { lines[i], "AgentlsNextEditAdd" } })
      end
    end
    if opts.virt_text or opts.virt_lines then
      vim.api.nvim_buf_set_extmark(s.buf, M.ns, e.erow, e.ecol, opts)
    end
  end
end

-- Shows an answer for `buf` (named `uri`), asked at `version`.
local function show(buf, uri, version, enc, result)
  local edits = {}
  for _, e in ipairs(type(result) == "table" and result.edits or {}) do
    local doc = e.textDocument or {}
    -- Edits of other documents (the calls in other files) are left out here.
    if doc.uri == uri and doc.version == version and e.range and type(e.text) == "string" then
      local r = e.range
      table.insert(edits, {
        text = e.text,
        range = r,
        srow = r.start.line,
        scol = util.byte_col(util.line_at(buf, r.start.line), r.start.character, enc),
        erow = r["end"].line,
        ecol = util.byte_col(util.line_at(buf, r["end"].line), r["end"].character, enc),
      })
    end
  end
  if #edits == 0 then
    return
  end
  shown = { buf = buf, version = version, enc = enc, edits = edits }
  draw()
end

--- Asks the server for the next edits of the current buffer.
function M.request()
  M.clear()
  local buf = vim.api.nvim_get_current_buf()
  local client = require("agentls").client()
  if not client or not vim.lsp.buf_is_attached(buf, client.id) then
    return
  end
  local enc = client.offset_encoding or "utf-16"
  local cur = vim.api.nvim_win_get_cursor(0)
  local row = cur[1] - 1
  local version = vim.lsp.util.buf_versions[buf]
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(buf), version = version },
    position = { line = row, character = vim.lsp.util.character_offset(buf, row, cur[2], enc) },
  }
  local mine = generation
  local handler = function(err, result)
    if mine ~= generation then
      return
    end
    pending = nil
    if err or not result or not vim.api.nvim_buf_is_valid(buf) then
      return
    end
    if vim.lsp.util.buf_versions[buf] ~= version then
      return
    end
    show(buf, params.textDocument.uri, version, enc, result)
  end
  local id = util.request(client, METHOD, params, handler, buf)
  if id then
    pending = { client = client, id = id }
  end
end

-- The suggestion under the cursor, and the one to jump to (the first after the cursor,
-- else the first).
local function place(edits)
  local cur = vim.api.nvim_win_get_cursor(0)
  local row, col = cur[1] - 1, cur[2]
  local here, next_one
  for _, e in ipairs(edits) do
    local after_start = row > e.srow or (row == e.srow and col >= e.scol)
    local before_end = row < e.erow or (row == e.erow and col <= math.max(e.ecol, e.scol))
    if after_start and before_end then
      here = here or e
    end
    if not next_one and (e.srow > row or (e.srow == row and e.scol > col)) then
      next_one = next_one or e
    end
  end
  return here, next_one or edits[1]
end

--- Jumps to the next suggestion; true when it moved the cursor.
function M.jump()
  local edits = M.get()
  if not edits then
    return false
  end
  local here, target = place(edits)
  if here then
    return false
  end
  vim.cmd("normal! m'")
  vim.api.nvim_win_set_cursor(0, { target.srow + 1, target.scol })
  return true
end

--- Applies every shown suggestion to the buffer (text edits, while the buffer is at
--- their version); the cursor goes to the end of the one it was on. True when applied.
function M.apply()
  local edits = M.get()
  if not edits then
    return false
  end
  local s = shown
  local here = place(edits) or edits[1]
  local text_edits = {}
  for _, e in ipairs(edits) do
    table.insert(text_edits, { range = e.range, newText = e.text })
  end
  M.clear()
  -- Where the cursor goes: the end of `here` once every edit before it moved it.
  local shift = 0
  for _, e in ipairs(edits) do
    if e.srow == here.srow and e.scol < here.scol and e.srow == e.erow and not e.text:find("\n") then
      shift = shift + #e.text - (e.ecol - e.scol)
    end
  end
  vim.lsp.util.apply_text_edits(text_edits, s.buf, s.enc)
  if not here.text:find("\n") and here.srow == here.erow then
    local col = here.scol + shift + #here.text
    pcall(vim.api.nvim_win_set_cursor, 0, { here.srow + 1, math.max(col - 1, 0) })
  end
  return true
end

--- `<Tab>`: jump to the suggestion, or apply it when the cursor is on one.
function M.tab()
  return M.jump() or M.apply()
end

function M._key(name)
  if name == "tab" then
    M.tab()
  else
    M.clear()
  end
end

local function map(key, name, desc)
  if not key or key == "" then
    return
  end
  vim.keymap.set("n", key, function()
    if M.get() then
      return "<Cmd>lua require('agentls.next_edit')._key('" .. name .. "')<CR>"
    end
    return key
  end, { expr = true, replace_keycodes = true, desc = "agentls: " .. desc })
end

--- Turns next-edit suggestions on (called by setup{} unless `next_edit.enabled` is false).
function M.setup(cfg)
  vim.api.nvim_set_hl(0, "AgentlsNextEditDelete", { link = "DiffDelete", default = true })
  vim.api.nvim_set_hl(0, "AgentlsNextEditAdd", { link = "DiffAdd", default = true })
  local group = vim.api.nvim_create_augroup("agentls_next_edit", { clear = true })
  if cfg.auto then
    local timer = nil
    local function later()
      if timer then
        timer:stop()
      end
      timer = vim.defer_fn(function()
        timer = nil
        if vim.api.nvim_get_mode().mode:sub(1, 1) == "n" then
          M.request()
        end
      end, cfg.debounce_ms or 100)
    end
    vim.api.nvim_create_autocmd({ "InsertLeave", "TextChanged" }, { group = group, callback = later })
  end
  vim.api.nvim_create_autocmd({ "TextChangedI", "TextChanged", "BufLeave" }, {
    group = group,
    callback = function()
      if shown and not M.get() then
        M.clear()
      end
    end,
  })
  map(cfg.jump, "tab", "jump to the next edit, or apply it")
  map(cfg.dismiss, "dismiss", "dismiss the next edits")
end

return M
