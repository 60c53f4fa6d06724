-- agentls for Neovim: the language server on every buffer of the workspace, with the
-- client settings that give exact edits, plus a chat window, review of agent edits and
-- a statusline component. `require("agentls").setup{}` starts it all.
local config = require("agentls.config")
local protocol = require("agentls.protocol")

local M = {}

-- What the statusline shows, updated from agent/event.
M.state = { status = "idle", model = nil, tokens = 0, session = nil, attached = false }

local function has_011()
  return vim.fn.has("nvim-0.11") == 1
end

--- The running agentls client, if any.
function M.client()
  local get = vim.lsp.get_clients or vim.lsp.get_active_clients
  return get({ name = "agentls" })[1]
end

--- Sends a request to agentls; `cb(err, result)` runs on the main loop.
function M.request(method, params, cb)
  local client = M.client()
  if not client then
    vim.notify("agentls: the server is not running in this workspace", vim.log.levels.WARN)
    return
  end
  local handler = function(err, result)
    if cb then
      cb(err, result)
    elseif err then
      vim.notify("agentls: " .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
    end
  end
  if has_011() then
    client:request(method, params, handler)
  else
    client.request(method, params, handler)
  end
end

--- Sends a notification to agentls.
function M.notify(method, params)
  local client = M.client()
  if not client then
    return
  end
  if has_011() then
    client:notify(method, params)
  else
    client.notify(method, params)
  end
end

--- Client capabilities for exact agent edits: versioned documentChanges (the server
--- refuses a stale edit instead of landing it at old positions) and the agent/*
--- extension (the chat's streamed events).
function M.capabilities()
  local caps = vim.lsp.protocol.make_client_capabilities()
  caps.workspace = caps.workspace or {}
  caps.workspace.workspaceEdit = caps.workspace.workspaceEdit or {}
  caps.workspace.workspaceEdit.documentChanges = true
  -- Neovim does not ask before applying an annotated edit: say so, and the server keeps
  -- review-mode edits pending for :AgentAccept / :AgentReject instead.
  caps.workspace.workspaceEdit.changeAnnotationSupport = nil
  caps.window = caps.window or {}
  caps.window.workDoneProgress = true
  if config.get().completion.enabled then
    caps.textDocument = caps.textDocument or {}
    caps.textDocument.inlineCompletion = { dynamicRegistration = false }
  end
  caps.experimental =
    vim.tbl_extend("force", caps.experimental or {}, { [protocol.capability] = { version = protocol.version } })
  return caps
end

local function on_event(_, params)
  if type(params) ~= "table" or type(params.event) ~= "table" then
    return
  end
  local e = params.event
  if e.type == "status" then
    M.state.status = e.status
    M.state.model = e.model
  elseif e.type == "usage" then
    M.state.tokens = M.state.tokens + (e.input or 0) + (e.output or 0)
  elseif e.type == "finished" then
    M.state.status = e.status
  end
  require("agentls.chat").on_event(params)
  require("agentls.review").on_event(params)
  vim.cmd("redrawstatus")
end

local function root_of(bufnr)
  local markers = config.get().root_markers
  local root = vim.fs.root and vim.fs.root(bufnr, markers) or nil
  return root or vim.fn.getcwd()
end

-- The server's settings: the user's, and ghost text off when the plugin's is.
local function server_settings(cfg)
  if cfg.completion.enabled then
    return cfg.settings
  end
  return vim.tbl_deep_extend("keep", cfg.settings, { completion = { enabled = false } })
end

local function lsp_config()
  local cfg = config.get()
  local settings = server_settings(cfg)
  return {
    name = "agentls",
    cmd = cfg.cmd,
    capabilities = M.capabilities(),
    -- Every keystroke reaches the server at once: it plans agent edits on the live text.
    flags = { debounce_text_changes = 0 },
    -- Only a non-empty table: an empty one would be encoded as `[]`.
    init_options = next(settings) ~= nil and settings or nil,
    handlers = { [protocol.methods.event] = on_event },
    on_attach = function()
      M.state.attached = true
    end,
  }
end

local function start_010(bufnr)
  if vim.bo[bufnr].buftype ~= "" or vim.api.nvim_buf_get_name(bufnr) == "" then
    return
  end
  local c = lsp_config()
  c.root_dir = root_of(bufnr)
  vim.lsp.start(c, { bufnr = bufnr })
end

local function forward_diagnostics()
  local pending = {}
  local function send(bufnr)
    pending[bufnr] = nil
    if not vim.api.nvim_buf_is_valid(bufnr) or not M.client() then
      return
    end
    local name = vim.api.nvim_buf_get_name(bufnr)
    if name == "" then
      return
    end
    local items = {}
    for _, d in ipairs(vim.diagnostic.get(bufnr)) do
      if d.source ~= "agentls" then
        table.insert(items, {
          range = {
            start = { line = d.lnum, character = d.col },
            ["end"] = { line = d.end_lnum or d.lnum, character = d.end_col or d.col },
          },
          severity = d.severity,
          code = d.code,
          source = d.source,
          message = d.message,
        })
      end
    end
    M.notify(protocol.methods.diagnostics, {
      uri = vim.uri_from_bufnr(bufnr),
      version = vim.lsp.util.buf_versions and vim.lsp.util.buf_versions[bufnr] or vim.NIL,
      diagnostics = items,
    })
  end
  vim.api.nvim_create_autocmd("DiagnosticChanged", {
    group = vim.api.nvim_create_augroup("agentls_diagnostics", { clear = true }),
    callback = function(ev)
      -- Coalesced: linters publish in bursts.
      if not pending[ev.buf] then
        pending[ev.buf] = true
        vim.defer_fn(function()
          send(ev.buf)
        end, 150)
      end
    end,
  })
end

local function notify_progress()
  vim.api.nvim_create_autocmd("LspProgress", {
    group = vim.api.nvim_create_augroup("agentls_progress", { clear = true }),
    callback = function(ev)
      local client = vim.lsp.get_client_by_id(ev.data.client_id)
      local value = ev.data.params and ev.data.params.value
      if not client or client.name ~= "agentls" or type(value) ~= "table" then
        return
      end
      if value.kind == "begin" then
        vim.notify(value.title or "agentls", vim.log.levels.INFO)
      elseif value.kind == "end" and value.message then
        vim.notify("agentls: " .. value.message, vim.log.levels.INFO)
      end
    end,
  })
end

--- Starts agentls for every buffer of the workspace (files opened later included).
function M.setup(opts)
  config.set(opts)
  if has_011() and vim.lsp.config and vim.lsp.enable then
    local c = lsp_config()
    c.root_dir = function(bufnr, on_dir)
      on_dir(root_of(bufnr))
    end
    -- No `filetypes`: every file type.
    vim.lsp.config("agentls", c)
    vim.lsp.enable("agentls")
  else
    vim.api.nvim_create_autocmd({ "BufReadPost", "BufNewFile" }, {
      group = vim.api.nvim_create_augroup("agentls_start", { clear = true }),
      callback = function(ev)
        start_010(ev.buf)
      end,
    })
  end
  if config.get().forward_diagnostics then
    forward_diagnostics()
  end
  if config.get().notify_progress then
    notify_progress()
  end
  if config.get().completion.enabled then
    require("agentls.complete").setup(config.get().completion)
  end
  if config.get().next_edit.enabled then
    require("agentls.next_edit").setup(config.get().next_edit)
  end
  M.did_setup = true
end

--- A statusline component: "agentls: running · model · N tok", or "" when not attached.
function M.status()
  if not M.client() then
    return ""
  end
  local parts = { "agentls: " .. (M.state.status or "idle") }
  if M.state.model then
    table.insert(parts, M.state.model)
  end
  if M.state.tokens > 0 then
    table.insert(parts, M.state.tokens .. " tok")
  end
  return table.concat(parts, " · ")
end

return M
