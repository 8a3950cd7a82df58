--- The MCP client's class, shared by the files that give it its methods
-- (claude.mcp.client.*): the metatable, what every part does to a client (its state
-- changes, its reports) and the checks of a method's self and arguments (misuses, raised
-- at the caller's line by `errors.public`).
-- @module claude.mcp.client.class
local errors = require "claude.errors"

local M = {}

local misuse = errors.misuse

local Client = {}
Client.__index = Client
Client.__name = "claude.mcp.Client"
M.Client = Client

function Client:__tostring()
  return string.format("claude.mcp.Client (%s, %s)", self.name, self.state)
end

--- The client's state becomes `new`; `on_state` is told of a change.
function M.set_state(self, new)
  local old = self.state
  if old == new then return end
  self.state = new
  local fn = self.opts.on_state
  if fn then
    local ok, err = pcall(fn, old, new)
    if not ok then io.stderr:write("claude.mcp: error in on_state: ", tostring(err), "\n") end
  end
end

--- A problem no call returns: to `on_error`, else to stderr.
function M.report(self, err)
  local fn = self.opts.on_error
  if fn then
    local ok, e = pcall(fn, err)
    if ok then return end
    err = e
  end
  io.stderr:write("claude.mcp: ", tostring(err), "\n")
end

function M.check_self(self, fname)
  if getmetatable(self) ~= Client then
    misuse("bad self to '%s' (claude.mcp.Client expected, got %s; use a colon)", fname,
      errors.typename(self))
  end
end

function M.check_opts(opts, n, fname)
  if opts ~= nil and type(opts) ~= "table" then
    misuse("bad argument #%d to '%s' (table expected, got %s)", n, fname, errors.typename(opts))
  end
end

function M.string_arg(v, n, fname)
  if type(v) ~= "string" then
    misuse("bad argument #%d to '%s' (string expected, got %s)", n, fname, errors.typename(v))
  end
end

--- A method's timeout: `opts.timeout`, else the client's.
function M.timeout_of(self, opts, fname)
  local t = opts and opts.timeout
  if t == nil then return self.opts.timeout end
  if t ~= false and (type(t) ~= "number" or t < 0) then
    misuse("bad field 'timeout' to '%s' (non-negative number or false expected, got %s)",
      fname, tostring(t))
  end
  return t
end

--- The `_meta` a request asks for: `meta`, and the W3C trace context (`traceparent`,
-- `tracestate`) when given. A new table, or nil.
function M.meta_of(opts, fname)
  if not opts then return nil end
  local m
  if opts.meta ~= nil then
    errors.check_field(opts.meta, "meta", fname, "table")
    m = {}
    for k, v in pairs(opts.meta) do m[k] = v end
  end
  for _, k in ipairs { "traceparent", "tracestate" } do
    local v = opts[k]
    if v ~= nil then
      errors.check_field(v, k, fname, "string")
      m = m or {}
      m[k] = v
    end
  end
  return m
end

return M
