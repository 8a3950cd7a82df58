--- What an MCP server may ask of the client: `ping`, `roots/list`,
-- `sampling/createMessage` and `elicitation/create`, each answered from the
-- client's options, and the capabilities `initialize` declares for them (a
-- handler is offered only when its option is given).
--
-- With `forward_requests`, the three are offered whatever the options, and one that comes
-- while a call made with `on_request` is in flight (a mounted tool's: claude.mcp.bridge) is
-- that call's to answer: its caller's client is asked. Over a connection that does not say
-- which request caused it (the legacy era's), it is the call's when that call is the only
-- one in flight; else the options answer it, or it is refused.
-- @module claude.mcp.client.inbound
local json = require "claude.json"
local errors = require "claude.errors"

local M = {}

local jobject = json.object

-- Fills the defaults of a form elicitation's schema into accepted content
-- (SEP-1034: fields the user left out take the schema's default).
local function apply_defaults(schema, content)
  local props = type(schema) == "table" and schema.properties
  if type(props) ~= "table" then return content end
  for name, prop in pairs(props) do
    if content[name] == nil and type(prop) == "table" and prop.default ~= nil then
      content[name] = prop.default
    end
  end
  return content
end

local function roots_of(self)
  local o = self.opts
  local roots = o.roots
  if o.on_roots then roots = o.on_roots() end
  local out = json.array()
  for i, r in ipairs(roots or {}) do
    if type(r) == "string" then r = { uri = r:find("^%a[%w+.-]*:") and r or ("file://" .. r) } end
    out[i] = r
  end
  return { roots = out }
end

--- Answers the server's request `method` with a call's `on_request(method, params)` (its
-- caller's client's answer), raising what it failed with as the JSON-RPC error sent back.
function M.forward(on_request, method, params)
  local r, err = on_request(method, params)
  if r ~= nil then return r end
  if not errors.is(err) then err = errors.new("remote", tostring(err or "no answer")) end
  error(errors.new("remote", errors.message(err), { code = math.type(err.code) == "integer"
    and err.code or -32603, data = err.data }), 0)
end
local forward = M.forward

-- The `on_request` of the one call in flight that forwards requests; false when there are
-- several (which one caused the request cannot be told), nil when there is none.
local function forwarding_call(self)
  local calls = self.forwarding
  local only = calls and next(calls)
  if only == nil then return nil end
  if next(calls, only) ~= nil then return false end
  return calls[only]
end

-- A handler that forwards to the call in flight before `own` (nil: none of the options').
local function forwarding(self, method, own)
  return function(params, ctx)
    local on_request = forwarding_call(self)
    if on_request then return forward(on_request, method, params) end
    if own then return own(params, ctx) end
    error(errors.new("remote", on_request == false and string.format("'%s' came while "
      .. "several calls were in flight and cannot be forwarded (which one asked is not "
      .. "known)", method) or string.format("'%s' came outside any call, and there is no "
      .. "one to forward it to", method), { code = -32603 }), 0)
  end
end

--- The request handlers for a client (`self.opts` holds its options).
function M.handlers(self)
  local o = self.opts
  local h = { ping = function() return jobject() end }
  if o.roots or o.on_roots then h["roots/list"] = function() return roots_of(self) end end
  if o.on_sampling then
    h["sampling/createMessage"] = function(params, ctx)
      local r = o.on_sampling(params, ctx)
      if r == nil then error(errors.new("remote", "sampling declined", { code = -1 }), 0) end
      return r
    end
  end
  if o.on_elicitation then
    h["elicitation/create"] = function(params, ctx)
      local r = o.on_elicitation(params, ctx)
      if type(r) == "string" then r = { action = r } end
      r = r or { action = "decline" }
      if r.action == "accept" and params.mode ~= "url" then
        r.content = apply_defaults(params.requestedSchema, r.content or jobject())
      end
      return r
    end
  end
  if o.forward_requests then
    for _, method in ipairs { "roots/list", "sampling/createMessage", "elicitation/create" } do
      h[method] = forwarding(self, method, h[method])
    end
  end
  return h
end

--- The capabilities `initialize` offers for options `o`.
function M.capabilities(o)
  local caps = jobject()
  local fwd = o.forward_requests
  if o.roots or o.on_roots then
    caps.roots = { listChanged = true }
  elseif fwd then -- (the callers' roots change unseen: nothing to notify)
    caps.roots = jobject()
  end
  if o.on_sampling or fwd then caps.sampling = jobject() end
  if o.on_elicitation or fwd then caps.elicitation = jobject() end
  return caps
end

return M
