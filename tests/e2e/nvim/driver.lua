-- The harness the plugin scenarios share (loaded with dofile from the script's folder):
-- the steps run in a coroutine that yields to the event loop between keys (the loop
-- that processes typed keys); results go to $OUT, one `key=value` per line, newlines
-- as `|`; an error is reported as `error=…`.
local D = { out = {} }

function D.finish()
  local lines = {}
  for k, v in pairs(D.out) do
    table.insert(lines, k .. "=" .. tostring(v):gsub("\n", "|"))
  end
  table.sort(lines)
  vim.fn.writefile(lines, vim.env.OUT)
  vim.cmd("qa!")
end

local steps
local function resume()
  local ok, err = coroutine.resume(steps)
  if not ok then
    D.out.error = tostring(err)
    D.finish()
  end
end

--- Gives the event loop `ms`, then goes on.
function D.pause(ms)
  vim.defer_fn(resume, ms)
  coroutine.yield()
end

--- Waits (at most `ms`) until `fn()` holds; fails naming `what`.
function D.wait(what, ms, fn)
  local deadline = vim.uv.now() + ms
  while not fn() do
    if vim.uv.now() > deadline then
      error("timed out waiting for " .. what)
    end
    D.pause(20)
  end
end

--- Keys as typed: mappings apply.
function D.keys(k)
  vim.api.nvim_feedkeys(vim.keycode(k), "mt", false)
  D.pause(0)
end

--- Runs `body` as the steps.
function D.run(body)
  steps = coroutine.create(body)
  resume()
end

return D
