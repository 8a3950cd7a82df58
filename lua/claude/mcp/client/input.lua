--- The input a modern server asks for inside a result (multi round-trip requests, SEP-2322,
-- and tasks waiting for input): `inputRequests = { key = { method = ..., params = ... } }`
-- with `elicitation/create`, `sampling/createMessage` or `roots/list`. Each is answered by
-- the same callback that answers the server's own request in the legacy era
-- (`on_elicitation`, `on_sampling`, `roots`/`on_roots`: claude.mcp.client.inbound), all of
-- them concurrently, each in a task of its own; the answers are `inputResponses`, keyed alike.
-- @module claude.mcp.client.input
local async = require "claude.async"
local errors = require "claude.errors"
local json = require "claude.json"
local inbound = require "claude.mcp.client.inbound"

local M = {}

-- The option that answers each kind of request (for the message when it is missing).
local OPTION = { ["elicitation/create"] = "on_elicitation",
  ["sampling/createMessage"] = "on_sampling", ["roots/list"] = "roots or on_roots" }

local function sorted_keys(t)
  local keys = {}
  for k in pairs(t) do
    if type(k) == "string" then keys[#keys + 1] = k end
  end
  table.sort(keys)
  return keys
end

--- Answers `requests` with the client's callbacks.
-- @param self the client (`name`, `handlers`: method -> fn(params, ctx))
-- @tparam table requests `inputRequests` of a result
-- @tparam table ctx what the request was: `method`, `name` (for the callbacks and messages),
--   `on_request` (the call's own answerer, `fn(method, params)`: claude.mcp.client.inbound)
-- @return `{ key = result }` | nil, err, kind (`protocol` for a malformed request,
--   `unsupported` when a callback is missing, the callback's error when it raised)
function M.answer(self, requests, ctx)
  local what = ctx.method .. (ctx.name and (" '" .. ctx.name .. "'") or "")
  if type(requests) ~= "table" then
    return errors.fail("protocol", string.format("the MCP server '%s' asked for input for %s "
      .. "without a table of requests", self.name, what))
  end
  local keys = sorted_keys(requests)
  local on_request, handlers = ctx.on_request, self.handlers
  if on_request then -- a mounted tool's call: its caller answers (claude.mcp.bridge)
    handlers = {}
    for method in pairs(OPTION) do
      handlers[method] = function(params) return inbound.forward(on_request, method, params) end
    end
  end
  for _, key in ipairs(keys) do
    local r = requests[key]
    if type(r) ~= "table" or type(r.method) ~= "string" then
      return errors.fail("protocol", string.format("the MCP server '%s' asked for input '%s' "
        .. "for %s without a method", self.name, key, what))
    end
    if not handlers[r.method] then
      local option = OPTION[r.method]
      return errors.fail("unsupported", string.format("the MCP server '%s' needs '%s' input "
        .. "for %s, and the client cannot give it%s", self.name, r.method, what,
        option and (" (give claude.mcp.connect '" .. option .. "')") or ""),
        { method = r.method, key = key })
    end
  end
  local tasks, out = {}, json.object()
  for i, key in ipairs(keys) do
    local r = requests[key]
    local hctx = { client = self, method = r.method, key = key, request = ctx,
      cancelled = false }
    tasks[i] = async.spawn_observed(handlers[r.method],
      type(r.params) == "table" and r.params or json.object(), hctx)
  end
  local failure
  for i, t in ipairs(tasks) do
    local ok, result = t:join()
    if not ok and not failure then
      failure = result
    elseif ok then
      out[keys[i]] = result == nil and json.object() or result
    end
  end
  if failure then
    for _, t in ipairs(tasks) do t:cancel("another input request failed") end
    if errors.is(failure, "cancelled") then error(failure, 0) end
    local err = errors.is(failure) and failure or errors.new("task", tostring(failure))
    return nil, errors.new(err.kind, string.format("answering the MCP server '%s' for %s "
      .. "failed: %s", self.name, what, errors.message(err)), { cause = err, code = err.code }),
      err.kind
  end
  return out
end

return M
