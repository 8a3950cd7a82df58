--- What an MCP server may ask of the client: `ping`, `roots/list`,
-- `sampling/createMessage` and `elicitation/create`, each answered from the
-- client's options, and the capabilities `initialize` declares for them (a
-- handler is offered only when its option is given).
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
  return h
end

--- The capabilities `initialize` offers for options `o`.
function M.capabilities(o)
  local caps = jobject()
  if o.roots or o.on_roots then caps.roots = { listChanged = true } end
  if o.on_sampling then caps.sampling = jobject() end
  if o.on_elicitation then caps.elicitation = jobject() end
  return caps
end

return M
