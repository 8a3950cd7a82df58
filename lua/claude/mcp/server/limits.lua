--- What a client can ask a server to remember, bounded (issue 34; docs/mcp-server.md, "Bounds"):
-- its tasks (per client and in the server, how long one waits for input, the bytes of the
-- results kept), its subscriptions (URIs per listen or per session, the length of one, the
-- listens of one connection) and the task ids a listen names. One table of defaults for
-- every transport: HTTP takes each as an option of `claude.mcp.http.listen` (most as a flag
-- of `claudelua mcp`), stdio and in-process connections the defaults.
-- @module claude.mcp.server.limits
local core = require "claude.core"

local M = {}

--- The defaults. Sized so that one client holds at most a few MiB of the server's memory,
-- and all of them a few hundred MiB.
M.DEFAULTS = {
  max_tasks = 1024,            -- tasks kept in the server (running or finished)
  max_client_tasks = 64,       -- tasks kept per client (its OAuth principal, else its address)
  task_input_timeout = 600,    -- seconds a task waits for its input before it fails
  task_ttl = 3600,             -- seconds a task is kept after its creation
  task_result_bytes = 32 * 1024 * 1024, -- bytes of finished results kept in the server
  max_subscriptions = 256,     -- URIs (or task ids) per listen, per legacy session
  max_listens = 16,            -- listens open at once on one stdio or in-process connection
  max_uri = 2048,              -- bytes of one subscribed URI
}

--- The limits of `opts` (a transport's options; nil: the defaults): a table with every key.
-- @tparam[opt] table opts
-- @treturn table
function M.of(opts)
  local l = {}
  for k, v in pairs(M.DEFAULTS) do
    local o = opts and opts[k]
    l[k] = o ~= nil and o or v
  end
  return l
end

--- The error answer to a request refused past a bound (-32602, its data names the bound).
-- @param id the request's id
-- @tparam string message
-- @tparam string bound
-- @tparam number max
-- @treturn table
function M.refused(id, message, bound, max)
  return core.jsonrpc_error(id, -32602, message .. " (" .. bound .. " " .. tostring(max) .. ")",
    { bound = bound, max = max })
end

--- Check a list of URIs (or ids) a client asks to be remembered: strings, at most `max`
-- of them (`bound` names the count's bound), each at most `limits.max_uri` bytes.
-- @tparam table list
-- @tparam table limits
-- @tparam string what the list's name, for the message
-- @treturn nil|string the message when one is past a bound
-- @treturn[opt] string the bound
-- @treturn[opt] number its value
function M.check_list(list, limits, what)
  local n, max = #list, limits.max_subscriptions
  if n > max then
    return ("Invalid params: too many %s (%d)"):format(what, n), "max_subscriptions", max
  end
  local long = limits.max_uri
  for i = 1, n do
    local u = list[i]
    if type(u) == "string" and #u > long then
      return ("Invalid params: %s %d is longer than %d bytes"):format(what, i, long), "max_uri",
        long
    end
  end
  return nil
end

return M
