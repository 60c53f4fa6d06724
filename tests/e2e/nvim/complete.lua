-- Drives the plugin's ghost text (editor-clients/neovim, lua/agentls/complete.lua) in a
-- real headless Neovim as a user would: keys go through Neovim's input (nvim_feedkeys,
-- mappings applied), so insert mode, its autocommands and the <Tab> mapping run as
-- when typed. The steps run in a coroutine that yields to the event loop between keys,
-- the loop that processes typed keys. Results go to $OUT, one `key=value` per line.
local D = dofile(debug.getinfo(1, "S").source:sub(2):match("(.*/)") .. "driver.lua")
local out, finish, wait, keys = D.out, D.finish, D.wait, D.keys

D.run(function()
  local root = vim.env.WS
  vim.opt.rtp:prepend(vim.env.PLUGIN)
  vim.cmd("runtime plugin/agentls.lua")
  local agentls = require("agentls")
  agentls.setup({ cmd = { vim.env.AGENTLS_BIN } })
  local complete = require("agentls.complete")
  vim.cmd("cd " .. root)
  vim.cmd("edit " .. root .. "/src/lib.rs")
  local buf = vim.api.nvim_get_current_buf()
  wait("agentls to attach", 15000, function()
    local c = agentls.client()
    return c ~= nil and c.initialized and vim.lsp.buf_is_attached(buf, c.id)
  end)
  local client = agentls.client()
  out.builtin = complete.builtin()
  out.provider = client.server_capabilities.inlineCompletionProvider == true
  out.client_capability = client.config.capabilities.textDocument.inlineCompletion ~= nil
  out.tab_mapped = vim.fn.maparg("<Tab>", "i") ~= ""

  -- Requests and their cancellations, as Neovim's LSP client saw them.
  local requests, cancels = 0, 0
  vim.api.nvim_create_autocmd("LspRequest", {
    callback = function(ev)
      local r = ev.data.request
      if ev.data.client_id == client.id and r.method == "textDocument/inlineCompletion" then
        if r.type == "pending" then
          requests = requests + 1
        elseif r.type == "cancel" then
          cancels = cancels + 1
        end
      end
    end,
  })
  local function marks()
    return vim.api.nvim_buf_get_extmarks(buf, complete.ns, 0, -1, { details = true })
  end
  local function text()
    return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
  end

  -- 1. Type a line key by key at the end of the file; each key asks again and withdraws
  -- the question in flight (the server waits debounce_ms for a pause).
  keys("Go")
  for ch in ("pub fn mul(a: i32, "):gmatch(".") do
    -- The next key once the last one's request is out.
    local before = requests
    keys(ch == " " and "<Space>" or ch)
    wait("the request for " .. ch, 5000, function()
      return requests > before
    end)
  end
  wait("the ghost text", 20000, function()
    return complete.visible()
  end)
  out.typed_requests = requests
  out.typed_cancels = cancels
  out.ghost = complete.text()
  local m = marks()
  out.marks = #m
  local d = m[1] and m[1][4] or {}
  out.mark_at = m[1] and (m[1][2] .. ":" .. m[1][3]) or ""
  out.virt_text = d.virt_text and d.virt_text[1][1] or ""
  out.virt_text_pos = d.virt_text_pos or ""
  local vl = {}
  for _, l in ipairs(d.virt_lines or {}) do
    table.insert(vl, l[1][1])
  end
  out.virt_lines = table.concat(vl, "\\n")
  out.hl = d.virt_text and d.virt_text[1][2] or ""

  -- 2. <Tab> accepts: the text lands, the cursor after it, still in insert mode.
  keys("<Tab>")
  wait("the accepted text", 5000, function()
    return text():find("a * b", 1, true) ~= nil
  end)
  out.after_accept = text()
  local cur = vim.api.nvim_win_get_cursor(0)
  out.cursor_after_accept = cur[1] .. ":" .. cur[2]
  out.mode_after_accept = vim.api.nvim_get_mode().mode

  -- 3. Leaving insert mode clears what shows; without ghost text <Tab> is a tab.
  keys("<Esc>")
  wait("normal mode", 5000, function()
    return vim.api.nvim_get_mode().mode == "n"
  end)
  out.marks_after_esc = #marks()
  -- (Rust's ftplugin sets expandtab: the tab is spaces.)
  keys("o")
  keys("<Tab>")
  wait("a tab", 5000, function()
    return vim.api.nvim_get_current_line():match("^%s+$") ~= nil
  end)
  out.plain_tab = vim.api.nvim_get_current_line():match("^%s+$") ~= nil

  -- 4. Moving the cursor clears the ghost text.
  keys("<BS>")
  keys("x")
  wait("ghost text again", 20000, function()
    return complete.visible()
  end)
  out.marks_before_move = #marks()
  keys("<Left>")
  wait("the ghost text cleared", 5000, function()
    return #marks() == 0
  end)
  out.marks_after_move = #marks()
  out.visible_after_move = complete.visible()
  keys("<Esc>")
  -- Back to the accepted text only, and save.
  vim.cmd("normal! Gdd")
  vim.cmd("write")
  out.saved = text()
  vim.cmd("checkhealth agentls")
  out.health = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  finish()
end)
