-- Semantic search (`agentls/semanticSearch`): code found by what it does, in words,
-- into the quickfix list.
local M = {}

-- Hits asked for when the caller names no limit.
local DEFAULT_LIMIT = 20

--- The quickfix items of a search result: one per hit, at its first line, named after
--- its definition (or its lines).
function M.items(result)
  local items = {}
  for _, h in ipairs(result.hits or {}) do
    local text
    if h.symbol then
      text = h.kind and (h.symbol .. " (" .. h.kind .. ")") or h.symbol
    else
      text = string.format("lines %d-%d", h.startLine + 1, h.endLine + 1)
    end
    table.insert(items, {
      filename = vim.uri_to_fname(h.uri),
      lnum = h.startLine + 1,
      end_lnum = h.endLine + 1,
      col = 1,
      text = text,
    })
  end
  return items
end

--- The quickfix title: the query, and how the hits were ranked (words only until the
--- embedding model is set up and the chunks have their vectors).
function M.title(query, result)
  local how = result.ranking == "hybrid" and "by words and meaning" or "by words"
  local n = #(result.hits or {})
  local title = string.format("agentls search: %s (%d %s, ranked %s", query, n, n == 1 and "hit" or "hits", how)
  if result.ranking == "hybrid" and type(result.model) == "string" then
    -- The static vectors' until the whole model (`embedder = "full"`) takes over.
    title = title .. ", model " .. result.model
  end
  if (result.embedded or 0) < (result.chunks or 0) and result.ranking == "hybrid" then
    title = title .. string.format("; %d of %d chunks embedded so far", result.embedded, result.chunks)
  end
  return title .. ")"
end

--- Searches the workspace for `query`. `opts`: `limit` (20), `path` (a glob relative to
--- the root), `on_result(items, result)` to take the hits instead of the quickfix list.
--- Without `on_result`, the hits fill the quickfix list, which opens.
function M.search(query, opts)
  opts = opts or {}
  query = vim.trim(query or "")
  if query == "" then
    vim.notify("agentls: search for what? (:AgentSearch where do we retry uploads)", vim.log.levels.WARN)
    return
  end
  local params = { query = query, limit = opts.limit or DEFAULT_LIMIT, path = opts.path }
  require("agentls").request(require("agentls.protocol").methods.semanticSearch, params, function(err, result)
    if err then
      vim.notify("agentls search: " .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
      return
    end
    local items = M.items(result)
    if opts.on_result then
      opts.on_result(items, result)
      return
    end
    vim.fn.setqflist({}, " ", { title = M.title(query, result), items = items })
    if #items == 0 then
      vim.notify("agentls: nothing found for " .. query, vim.log.levels.WARN)
      return
    end
    vim.cmd("copen")
  end)
end

return M
