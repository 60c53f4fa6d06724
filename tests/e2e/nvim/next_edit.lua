-- Drives the plugin's next-edit suggestions (editor-clients/neovim,
-- lua/agentls/next_edit.lua) in a real headless Neovim as a user would: keys go through
-- Neovim's input (nvim_feedkeys, mappings applied). A rename typed with `ciw`, the
-- suggestions at the uses, <Tab> to jump, <Tab> to apply; then a parameter added,
-- <Esc> to dismiss, :AgentNextEdit to ask again, <Tab> <Tab>; then more typing, and the
-- file written. Results go to $OUT, one `key=value` per line.
local D = dofile(debug.getinfo(1, "S").source:sub(2):match("(.*/)") .. "driver.lua")
local out, finish, wait, keys = D.out, D.finish, D.wait, D.keys

D.run(function()
  local root = vim.env.WS
  vim.opt.rtp:prepend(vim.env.PLUGIN)
  vim.cmd("runtime plugin/agentls.lua")
  local agentls = require("agentls")
  agentls.setup({ cmd = { vim.env.AGENTLS_BIN } })
  local next_edit = require("agentls.next_edit")
  vim.cmd("cd " .. root)
  vim.cmd("edit " .. root .. "/src/lib.rs")
  local buf = vim.api.nvim_get_current_buf()
  wait("agentls to attach", 15000, function()
    local c = agentls.client()
    return c ~= nil and c.initialized and vim.lsp.buf_is_attached(buf, c.id)
  end)
  out.tab_mapped = vim.fn.maparg("<Tab>", "n") ~= ""
  local function text()
    return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
  end
  local function cursor()
    local c = vim.api.nvim_win_get_cursor(0)
    return (c[1] - 1) .. ":" .. c[2]
  end
  local function marks()
    return vim.api.nvim_buf_get_extmarks(buf, next_edit.ns, 0, -1, { details = true })
  end

  -- 1. `count` -> `total` where it is assigned (line 5), typed.
  vim.api.nvim_win_set_cursor(0, { 6, 9 })
  keys("ciwtotal<Esc>")
  wait("the rename's suggestions", 10000, function()
    return next_edit.get() ~= nil
  end)
  local edits = {}
  for _, e in ipairs(next_edit.get()) do
    table.insert(edits, e.srow .. ":" .. e.scol .. "-" .. e.erow .. ":" .. e.ecol .. "=" .. e.text)
  end
  out.rename_edits = table.concat(edits, ",")
  local added, deleted = {}, 0
  for _, m in ipairs(marks()) do
    local d = m[4]
    if d.hl_group == "AgentlsNextEditDelete" then
      deleted = deleted + 1
    end
    if d.virt_text then
      table.insert(added, d.virt_text[1][1] .. "@" .. m[2] .. ":" .. m[3] .. "/" .. d.virt_text[1][2])
    end
  end
  out.rename_deleted_marks = deleted
  out.rename_added_marks = table.concat(added, ",")
  out.cursor_before_jump = cursor()
  -- 2. <Tab> jumps to the first suggestion after the cursor, <Tab> again applies.
  keys("<Tab>")
  wait("the jump", 5000, function()
    return cursor() ~= out.cursor_before_jump
  end)
  out.cursor_after_jump = cursor()
  keys("<Tab>")
  wait("the rename applied", 5000, function()
    return not text():find("count", 1, true)
  end)
  out.after_rename = text()
  out.cursor_after_apply = cursor()
  out.marks_after_apply = #marks()

  -- 3. A parameter added to `area`; <Esc> dismisses what it suggests.
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  keys("f)i, h: u32<Esc>")
  wait("the parameter's suggestion", 10000, function()
    return next_edit.get() ~= nil
  end)
  out.param_edits = #next_edit.get()
  keys("<Esc>")
  wait("the dismissal", 5000, function()
    return next_edit.get() == nil and #marks() == 0
  end)
  out.dismissed = next_edit.get() == nil
  -- Asked again by command: <Tab> <Tab> applies it.
  vim.cmd("AgentNextEdit")
  wait("the suggestion again", 10000, function()
    return next_edit.get() ~= nil
  end)
  local before = cursor()
  keys("<Tab>")
  wait("the jump to the call", 5000, function()
    return cursor() ~= before
  end)
  out.cursor_param_jump = cursor()
  keys("<Tab>")
  wait("the call changed", 5000, function()
    return text():find("area(total, h)", 1, true) ~= nil
  end)
  -- 4. Typing goes on where the cursor is; then the file is written.
  keys("A // ok<Esc>")
  wait("the typing", 5000, function()
    return text():find("// ok", 1, true) ~= nil
  end)
  vim.cmd("write")
  out.final = text()
  finish()
end)
