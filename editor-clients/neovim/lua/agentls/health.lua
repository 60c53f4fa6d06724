-- :checkhealth agentls
local M = {}

function M.check()
  local health = vim.health
  local config = require("agentls.config").get()
  local agentls = require("agentls")
  health.start("agentls")
  if vim.fn.has("nvim-0.10") ~= 1 then
    health.error("Neovim 0.10 or newer is needed")
  else
    health.ok("Neovim " .. tostring(vim.version()))
  end
  if not agentls.did_setup then
    health.warn('require("agentls").setup{} has not run')
  end
  local bin = config.cmd[1]
  if vim.fn.executable(bin) ~= 1 then
    health.error(("`%s` is not executable; set cmd in setup{} or put agentls on PATH"):format(bin))
    return
  end
  local version = vim.fn.system({ bin, "--version" })
  if vim.v.shell_error ~= 0 then
    health.error(("`%s --version` failed: %s"):format(bin, version))
  else
    health.ok(vim.trim(version))
  end
  local doctor = vim.fn.system({ bin, "doctor", "--workspace", vim.fn.getcwd() })
  if vim.v.shell_error ~= 0 then
    health.warn("`agentls doctor` reported a problem:\n" .. doctor)
  else
    local found = doctor:match("configuration files?[^\n]*\n([^\n]*)")
    health.ok("agentls doctor ran" .. (found and (": " .. vim.trim(found)) or ""))
  end
  local client = agentls.client()
  if not client then
    health.info("agentls is not attached to any buffer yet (open a file of the workspace)")
    return
  end
  local caps = client.config.capabilities or {}
  local edit = caps.workspace and caps.workspace.workspaceEdit or {}
  if edit.documentChanges then
    health.ok("versioned edits (workspaceEdit.documentChanges)")
  else
    health.error("documentChanges is off: agent edits cannot be checked against your buffer")
  end
  local debounce = client.flags and client.flags.debounce_text_changes
  if debounce == 0 then
    health.ok("didChange is sent at once (debounce_text_changes = 0)")
  else
    health.warn(("didChange debounce is %s ms: agent edits wait for a quiet buffer"):format(tostring(debounce)))
  end
  local ghost = config.completion
  if not ghost.enabled then
    health.info("ghost text: off (completion.enabled = false)")
  elseif not (client.server_capabilities or {}).inlineCompletionProvider then
    health.warn("ghost text: the server offers no textDocument/inlineCompletion (see its [completion] config)")
  else
    local how = require("agentls.complete").builtin() and "vim.lsp.inline_completion" or "extmarks"
    health.ok(("ghost text: %s, accepted with %s"):format(how, tostring(ghost.accept)))
  end
  local done, models = false, nil
  agentls.request(require("agentls.protocol").methods.listModels, nil, function(err, r)
    done, models = true, (not err) and r or nil
  end)
  vim.wait(3000, function()
    return done
  end, 20)
  if models and models.models and #models.models > 0 then
    local names = {}
    for _, m in ipairs(models.models) do
      table.insert(names, m.name)
    end
    health.ok(
      "models: " .. table.concat(names, ", ") .. (models.default and (" (default " .. models.default .. ")") or "")
    )
  else
    health.warn("no model configured: add [models.NAME] to ~/.config/agentls/config.toml (see the README)")
  end
end

return M
