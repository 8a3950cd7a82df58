--- The `claudelua remote` process the thin client drives: started with the host's loop
-- (`uv.spawn`), its stdout fed to a `claude.thin.peer` through the host's `schedule`, its
-- stderr kept (the tail) for the error when it ends.
-- @module claude.thin.process
local peer_mod = require "claude.thin.peer"
local tasks = require "claude.thin.tasks"

local M = {}

local STDERR_TAIL = 4096

-- The environment for the child: this process's, with `changes` (name -> value, or false
-- to remove it) applied; nil when nothing changes (the child inherits).
local function environment(uv, changes)
  if not changes or next(changes) == nil then return nil end
  local env = {}
  for k, v in pairs(uv.os_environ()) do env[k] = v end
  for k, v in pairs(changes) do env[k] = v or nil end
  local list = {}
  for k, v in pairs(env) do list[#list + 1] = k .. "=" .. v end
  return list
end

--- Starts `cmd remote` and returns the peer talking to it. `opts`: `cmd` (default
-- "claudelua"), `env` (changes), `handlers`, `on_notification`, `on_exit(code, signal)`.
-- @return peer, the process | nil, err
function M.start(opts)
  local host = tasks.host
  local uv = host.uv
  local stdin, stdout, stderr = uv.new_pipe(false), uv.new_pipe(false), uv.new_pipe(false)
  local proc = { stderr = "" }
  local peer = peer_mod.new {
    handlers = opts.handlers, on_notification = opts.on_notification,
    send = function(line) if not stdin:is_closing() then stdin:write(line) end end,
  }
  local handle, pid = uv.spawn(opts.cmd or "claudelua", {
    args = { "remote" }, stdio = { stdin, stdout, stderr }, env = environment(uv, opts.env),
  }, function(code, signal)
    host.schedule(function()
      local tail = proc.stderr:gsub("%s+$", "")
      peer:fail(peer_mod.error("exited", string.format("claudelua remote exited (code %d%s)%s",
        code, signal ~= 0 and ", signal " .. signal or "", tail ~= "" and ": " .. tail or "")))
      if opts.on_exit then opts.on_exit(code, signal) end
    end)
    for _, h in ipairs { stdin, stdout, stderr, proc.handle } do
      if not h:is_closing() then h:close() end
    end
  end)
  if not handle then
    for _, h in ipairs { stdin, stdout, stderr } do h:close() end
    return nil, peer_mod.error("spawn", "cannot start " .. tostring(opts.cmd or "claudelua")
      .. " remote: " .. tostring(pid))
  end
  proc.handle, proc.pid = handle, pid
  stdout:read_start(function(_, data)
    if data then host.schedule(function() peer:feed(data) end) end
  end)
  stderr:read_start(function(_, data)
    if data then proc.stderr = (proc.stderr .. data):sub(-STDERR_TAIL) end
  end)
  --- Ends the process: its stdin closes, so it finishes what runs and exits.
  function proc.close()
    if not stdin:is_closing() then stdin:close() end
  end
  return peer, proc
end

return M
