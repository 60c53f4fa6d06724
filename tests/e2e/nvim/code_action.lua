-- Drives agentls from a real, headless Neovim (0.7+): open a file with a stub, ask the
-- server for its code actions, run "Agent: implement `add`", wait until the agent's
-- edit is in the buffer. Results go to $OUT, one `key=value` per line.
local out = {}
local function finish()
  local lines = {}
  for k, v in pairs(out) do table.insert(lines, k .. '=' .. tostring(v)) end
  table.sort(lines)
  vim.fn.writefile(lines, vim.env.OUT)
  vim.cmd('qa!')
end

local ok, err = pcall(function()
  local root = vim.env.WS
  vim.cmd('edit ' .. root .. '/src/lib.rs')
  local bufnr = vim.api.nvim_get_current_buf()
  local progress = {}
  local id = vim.lsp.start_client({
    name = 'agentls',
    cmd = { vim.env.AGENTLS_BIN },
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = 'ws' } },
    handlers = {
      ['$/progress'] = function(_, result)
        if type(result.token) == 'string' and result.token:find('^agentls/') then
          table.insert(progress, result.value.kind)
        end
      end,
      ['window/showMessage'] = function(_, result)
        out.message = result.message:gsub('\n', ' ')
      end,
    },
  })
  vim.lsp.buf_attach_client(bufnr, id)
  assert(vim.wait(10000, function()
    local c = vim.lsp.get_client_by_id(id)
    return c ~= nil and c.server_capabilities ~= nil and c.server_capabilities.codeActionProvider ~= nil
  end, 20), 'the server did not initialize')

  local action
  vim.wait(10000, function()
    local params = {
      textDocument = { uri = vim.uri_from_bufnr(bufnr) },
      range = { start = { line = 1, character = 4 }, ['end'] = { line = 1, character = 4 } },
      context = { diagnostics = {} },
    }
    local responses = vim.lsp.buf_request_sync(bufnr, 'textDocument/codeAction', params, 2000) or {}
    for _, r in pairs(responses) do
      for _, a in ipairs(r.result or {}) do
        if a.title:find('implement `add`', 1, true) then action = a end
      end
    end
    return action ~= nil
  end, 100)
  assert(action, 'no "implement `add`" action')
  out.action = action.title

  local started = vim.loop.hrtime()
  local reply = vim.lsp.buf_request_sync(bufnr, 'workspace/executeCommand', action.command, 5000)
  out.reply_ms = math.floor((vim.loop.hrtime() - started) / 1e6)
  for _, r in pairs(reply or {}) do out.session = r.result and r.result.session end

  local landed = vim.wait(30000, function()
    local text = table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), '\n')
    return text:find('a + b', 1, true) ~= nil and progress[#progress] == 'end' and out.message ~= nil
  end, 50)
  out.landed = landed
  out.progress = table.concat(progress, ',')
  out.text = table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), '|')
end)
if not ok then out.error = tostring(err):gsub('\n', ' ') end
finish()
