-- Review of agent edits that land pending (`settings = { agent = { review = "review" } }`):
-- each pending change is marked with signs on its added lines and its removed lines as
-- virtual lines above; :AgentAccept / :AgentReject act on the change under the cursor
-- (the server says which changes are pending and where they are now: agent/listChanges),
-- :AgentAcceptAll / :AgentRejectAll on the session's. Both decide by change id
-- (agent/review).
local M = {}

local methods = require("agentls.protocol").methods

local ns = vim.api.nvim_create_namespace("agentls_review")

-- Marks per pending change id: { { buf, ids = {extmark ids} } }, and the ids of each
-- edit event, so marks go when every id of their edit is decided.
local marks = {}

local function agentls()
  return require("agentls")
end

-- Hunks of a unified diff: new-file start line (1-based), added line offsets, and the
-- removed lines with the new-file line they stood before.
local function hunks(diff)
  local out, hunk, new_line = {}, nil, 0
  for _, l in ipairs(vim.split(diff or "", "\n", { plain = true })) do
    local start = l:match("^@@ %-%d+,?%d* %+(%d+)")
    if start then
      hunk = { added = {}, removed = {} }
      table.insert(out, hunk)
      new_line = tonumber(start)
    elseif hunk and l:sub(1, 3) ~= "+++" and l:sub(1, 3) ~= "---" then
      local c = l:sub(1, 1)
      if c == "+" then
        table.insert(hunk.added, new_line)
        new_line = new_line + 1
      elseif c == "-" then
        table.insert(hunk.removed, { before = new_line, text = l:sub(2) })
      elseif c == " " then
        new_line = new_line + 1
      end
    end
  end
  return out
end

local function place(buf, diff)
  local ids = {}
  local count = vim.api.nvim_buf_line_count(buf)
  for _, h in ipairs(hunks(diff)) do
    for _, line in ipairs(h.added) do
      if line <= count then
        table.insert(
          ids,
          vim.api.nvim_buf_set_extmark(buf, ns, line - 1, 0, {
            sign_text = "+",
            sign_hl_group = "DiffAdd",
            line_hl_group = "DiffAdd",
          })
        )
      end
    end
    -- Removed lines, grouped by the line they stood before.
    local groups, order = {}, {}
    for _, r in ipairs(h.removed) do
      if not groups[r.before] then
        groups[r.before] = {}
        table.insert(order, r.before)
      end
      table.insert(groups[r.before], { { "- " .. r.text, "DiffDelete" } })
    end
    for _, before in ipairs(order) do
      local at = math.min(before, count) - 1
      local above = before <= count
      table.insert(
        ids,
        vim.api.nvim_buf_set_extmark(buf, ns, math.max(at, 0), 0, {
          virt_lines = groups[before],
          virt_lines_above = above,
          sign_text = "-",
          sign_hl_group = "DiffDelete",
        })
      )
    end
  end
  return ids
end

--- An `edit` event with pending change ids: mark it in its buffer.
function M.on_event(params)
  local e = params.event
  if e.type ~= "edit" or not e.changeIds or #e.changeIds == 0 then
    return
  end
  local buf = vim.uri_to_bufnr(e.uri)
  if not vim.api.nvim_buf_is_loaded(buf) then
    return
  end
  local entry = { buf = buf, ids = place(buf, e.diff), pending = {}, session = params.session }
  for _, id in ipairs(e.changeIds) do
    entry.pending[id] = true
    marks[id] = entry
  end
end

local function clear(entry)
  if vim.api.nvim_buf_is_valid(entry.buf) then
    for _, id in ipairs(entry.ids) do
      pcall(vim.api.nvim_buf_del_extmark, entry.buf, ns, id)
    end
  end
end

local function decided(result)
  for _, list in ipairs({ result.accepted or {}, result.rejected or {} }) do
    for _, id in ipairs(list) do
      local entry = marks[id]
      if entry then
        entry.pending[id] = nil
        marks[id] = nil
        if next(entry.pending) == nil then
          clear(entry)
        end
      end
    end
  end
  for _, f in ipairs(result.failed or {}) do
    vim.notify(("agentls: change %s: %s"):format(tostring(f[1]), tostring(f[2])), vim.log.levels.WARN)
  end
end

local function review(params)
  agentls().request(methods.review, params, function(err, result)
    if err then
      vim.notify("agentls: " .. (err.message or "review failed"), vim.log.levels.ERROR)
      return
    end
    decided(result or {})
    vim.cmd("redraw")
  end)
end

--- The pending changes (agent/listChanges with `params`: `uri`, `session`, or `{}` for
--- all); `cb(changes)` runs with a list, empty on an error.
function M.list(params, cb)
  if next(params) == nil then
    params = vim.empty_dict()
  end
  agentls().request(methods.listChanges, params, function(err, result)
    if err then
      vim.notify("agentls: " .. (err.message or "listing changes failed"), vim.log.levels.ERROR)
    end
    cb(not err and result and result.changes or {})
  end)
end

--- The 0-based first and last line of a change's text now; nil when the user has
--- rewritten those lines (no ranges). A range ending at the start of a line (a whole
--- inserted line) does not reach into that line.
function M.lines(change)
  local ranges = change.ranges or {}
  local first, last = ranges[1], ranges[#ranges]
  if not first then
    return nil
  end
  local stop = last["end"].line
  if last["end"].character == 0 and stop > last.start.line then
    stop = stop - 1
  end
  return first.start.line, math.max(first.start.line, stop)
end

--- Accepts or rejects the change under the cursor ("accept" | "reject").
function M.at_cursor(action)
  local row = vim.api.nvim_win_get_cursor(0)[1] - 1
  M.list({ uri = vim.uri_from_bufnr(vim.api.nvim_get_current_buf()) }, function(changes)
    for _, c in ipairs(changes) do
      local first, last = M.lines(c)
      if first and first <= row and row <= last then
        review({ session = c.session, change = c.id, action = action })
        return
      end
    end
    vim.notify("agentls: no pending change under the cursor", vim.log.levels.INFO)
  end)
end

--- Accepts or rejects every pending change of the chat's session (else of the session
--- that made the latest pending change).
function M.all(action)
  local session = require("agentls.chat").session()
  if session then
    review({ session = session, action = action })
    return
  end
  M.list({}, function(changes)
    local latest
    for _, c in ipairs(changes) do
      if not latest or c.id > latest.id then
        latest = c
      end
    end
    if not latest then
      vim.notify("agentls: no session with pending changes", vim.log.levels.INFO)
      return
    end
    review({ session = latest.session, action = action })
  end)
end

--- The namespace of the marks (tests).
M.ns = ns

return M
