-- What the plugin's LSP features share: columns from LSP positions, and requests and
-- their cancellation on Neovim 0.10 (`client.request`) and 0.11+ (`client:request`).
local M = {}

local function has_011()
  return vim.fn.has("nvim-0.11") == 1
end

--- A line's byte column for an LSP character offset in `enc`; past the end clamps to
--- the line's length (LSP's rule).
function M.byte_col(line, character, enc)
  if enc == "utf-8" then
    return math.min(character, #line)
  end
  local ok, col
  if has_011() then
    ok, col = pcall(vim.str_byteindex, line, enc, character, false)
  else
    ok, col = pcall(vim.str_byteindex, line, character, enc == "utf-16")
  end
  return ok and math.min(col, #line) or #line
end

--- The text of line `row` (0-based) of `buf`, "" past the end.
function M.line_at(buf, row)
  return vim.api.nvim_buf_get_lines(buf, row, row + 1, false)[1] or ""
end

--- Sends a request for `buf`; returns the request's id, or nil.
function M.request(client, method, params, handler, buf)
  local ok, id
  if has_011() then
    ok, id = client:request(method, params, handler, buf)
  else
    ok, id = client.request(method, params, handler, buf)
  end
  return ok and id or nil
end

--- Withdraws a request in flight ({ client, id }, or nil); never fails.
function M.cancel(pending)
  if not pending then
    return
  end
  pcall(function()
    if has_011() then
      pending.client:cancel_request(pending.id)
    else
      pending.client.cancel_request(pending.id)
    end
  end)
end

return M
