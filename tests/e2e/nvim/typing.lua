-- Real Neovim (0.11) types while the agent edits: open src/lib.rs, start agentls the way
-- $SETUP says ("readme": the README's plain `vim.lsp.start`, so no versioned edits and
-- a 150 ms didChange debounce; "plugin": the plugin's settings, versioned edits and no
-- debounce), run "Agent: implement `add`", and type as a user would while it runs:
-- $SCENARIO "above" inserts comment lines at the top, "same_line" types " // mine" at
-- the end of the line the agent is editing, "whole" adds one line while the model
-- writes the whole file it read earlier. Results go to $OUT, `key=value` per line.
local out = {}
local function finish()
  local lines = {}
  for k, v in pairs(out) do
    table.insert(lines, k .. '=' .. tostring(v))
  end
  table.sort(lines)
  vim.fn.writefile(lines, vim.env.OUT)
  vim.cmd('qa!')
end

local ok, err = pcall(function()
  local root = vim.env.WS
  vim.cmd('edit ' .. root .. '/src/lib.rs')
  local bufnr = vim.api.nvim_get_current_buf()
  local done = false
  local config = {
    name = 'agentls',
    cmd = { vim.env.AGENTLS_BIN },
    root_dir = root,
    handlers = {
      ['$/progress'] = function(_, result)
        if type(result.token) == 'string' and result.token:find('^agentls/') and result.value.kind == 'end' then
          done = true
        end
      end,
      ['window/showMessage'] = function(_, result)
        out.message = result.message:gsub('\n', ' ')
      end,
    },
  }
  if vim.env.SETUP == 'plugin' then
    config.flags = { debounce_text_changes = 0 }
    local caps = vim.lsp.protocol.make_client_capabilities()
    caps.workspace.workspaceEdit.documentChanges = true
    config.capabilities = caps
  end
  local id = vim.lsp.start(config)
  assert(id, 'vim.lsp.start failed')
  assert(
    vim.wait(10000, function()
      local c = vim.lsp.get_client_by_id(id)
      return c ~= nil and c.initialized
    end, 20),
    'the server did not initialize'
  )
  out.document_changes = vim.lsp.get_client_by_id(id).capabilities.workspace.workspaceEdit.documentChanges == true

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
        if a.title:find('implement `add`', 1, true) then
          action = a
        end
      end
    end
    return action ~= nil
  end, 100)
  assert(action, 'no "implement `add`" action')
  vim.lsp.buf_request_sync(bufnr, 'workspace/executeCommand', action.command, 5000)

  -- Type as a user does: one change at a time, on the editor's own loop.
  local typed = 0
  local count = tonumber(vim.env.KEYS or '40')
  local timer = vim.uv.new_timer()
  timer:start(
    tonumber(vim.env.FIRST_KEY_MS or '5'),
    25,
    vim.schedule_wrap(function()
      if typed >= count then
        timer:stop()
        return
      end
      -- GO_FILE: the test says when (it appears once the model has read the file).
      if vim.env.GO_FILE and not vim.uv.fs_stat(vim.env.GO_FILE) then
        return
      end
      typed = typed + 1
      if vim.env.SCENARIO == 'whole' then
        -- One line, typed while the model is writing the whole file it read.
        vim.api.nvim_buf_set_lines(bufnr, 0, 0, false, { '// mine' })
      elseif vim.env.SCENARIO == 'above' then
        vim.api.nvim_buf_set_lines(bufnr, typed - 1, typed - 1, false, { '// typed ' .. typed })
      else
        local lines = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
        for i, l in ipairs(lines) do
          if l:find('^    ') then
            local ch = (' // mine'):sub(((typed - 1) % 8) + 1, ((typed - 1) % 8) + 1)
            vim.api.nvim_buf_set_text(bufnr, i - 1, #l, i - 1, #l, { ch })
            break
          end
        end
      end
    end)
  )
  out.finished = vim.wait(60000, function()
    return done and typed >= count
  end, 20)
  -- Whatever a repair needs has gone out by now.
  vim.wait(1500, function()
    return false
  end, 50)
  out.typed = typed
  out.text = table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), '|')
  local resp = vim.lsp.buf_request_sync(
    bufnr,
    'agentls/viewFileText',
    { textDocument = { uri = vim.uri_from_bufnr(bufnr) } },
    5000
  ) or {}
  for _, r in pairs(resp) do
    out.server_text = r.result and r.result.text:gsub('\n', '|')
  end
end)
if not ok then
  out.error = tostring(err):gsub('\n', ' ')
end
finish()
