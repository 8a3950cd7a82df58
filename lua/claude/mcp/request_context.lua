--- The request context: what a tool's `execute`, a resource's `read`, a prompt's `get` and
-- a server's middleware receive as `ctx`, for every transport (claude.mcp.router makes one
-- per request): the request's id and server, its cancellation, progress and logs, the
-- requests and input to the client, the trace context of `_meta`, who asks (`principal`,
-- `session`, `principal_key`) and what the transport knows of the client. See docs/tools.md.
-- @module claude.mcp.request_context
local core = require "claude.core"
local json = require "claude.json"
local errors = require "claude.errors"
local content = require "claude.mcp.content"
-- the slots of a call record: claude.mcp.call's, as constants (one instruction a read;
-- spec/unit/call_record_spec.lua holds them to the module's)
local ID <const>, META <const>, TOKEN <const>, TOOL_USE_ID <const> = 1, 4, 5, 6
local SERVER <const>, AUTH <const>, REQ <const> = 9, 11, 12

local M = {}

local typename, misuse, public = content.typename, errors.misuse, errors.public
local MCP_CALL, call_id = core.MCP_CALL, core.call_id
local type, select, tostring, fmt = type, select, tostring, string.format
local pack, concat = table.pack, table.concat
local TOOL_USE_KEY = "claudecode/toolUseId" -- (the tool use id's key in _meta)

local LEVELS = {}
for _, l in ipairs(core.LOG_LEVELS) do LEVELS[l] = true end


local function progress(ctx, done, total, message)
  if type(done) ~= "number" then
    misuse("bad argument #1 to 'progress' (number expected, got %s)", typename(done))
  end
  if total ~= nil and type(total) ~= "number" then
    misuse("bad argument #2 to 'progress' (number expected, got %s)", typename(total))
  end
  if message ~= nil and type(message) ~= "string" then
    misuse("bad argument #3 to 'progress' (string expected, got %s)", typename(message))
  end
  local token, notify = ctx._token, ctx._router._notify
  if token == nil or notify == nil then return false end
  notify(ctx.server, { jsonrpc = "2.0", method = "notifications/progress",
    params = { progressToken = token, progress = done, total = total, message = message } }, ctx)
  return true
end

local function log(ctx, level, ...)
  if not LEVELS[level] then
    misuse("bad argument #1 to 'log' (debug, info, notice, warning, error, critical, alert "
      .. "or emergency expected, got %s)", type(level) == "string" and "'" .. level .. "'"
      or typename(level))
  end
  local n, data = select("#", ...), ...
  if n ~= 1 or type(data) ~= "table" then
    local parts = pack(...)
    for i = 1, n do parts[i] = tostring(parts[i]) end
    data = concat(parts, " ", 1, n)
  end
  local notify = ctx._router._notify
  if notify then
    notify(ctx.server, { jsonrpc = "2.0", method = "notifications/message",
      params = { level = level, logger = ctx.server, data = data } }, ctx)
  else
    if type(data) ~= "string" then
      local ok, text = pcall(json.encode, data)
      data = ok and text or tostring(data)
    end
    io.stderr:write(fmt("claude: [%s] %s: %s\n", ctx.server, level, data))
  end
end

-- A request from the tool to the client, waiting in the tool's task: the transport's
-- `request` option sends it (the CLI's control channel has none).
local function client_request(ctx, method, params, timeout)
  if type(method) ~= "string" then
    misuse("bad argument #1 to 'request' (string expected, got %s)", typename(method))
  end
  if params ~= nil and type(params) ~= "table" then
    misuse("bad argument #2 to 'request' (table expected, got %s)", typename(params))
  end
  local send = ctx._router._request
  if not send then
    local err = errors.new("unsupported", fmt("'%s': this transport cannot send requests "
      .. "to the client", method))
    return nil, err, err.kind
  end
  return send(ctx, method, params, timeout)
end

-- ctx.input{ key = {method =, params =}, ... }: the transport's `input` option when it has
-- one (the modern era: answers of the retry, or the request unwinds), else the requests one
-- after another (the legacy era's requests to the client).
local function ask(ctx, requests, timeout)
  if type(requests) ~= "table" then
    misuse("bad argument #1 to 'input' (table expected, got %s)", typename(requests))
  end
  local keys = {}
  for key, r in pairs(requests) do
    if type(key) ~= "string" then
      misuse("bad argument #1 to 'input' (keys must be strings, got %s)", typename(key))
    end
    if type(r) ~= "table" or not require("claude.mcp.input").CAPABILITY[r.method] then
      misuse("bad argument #1 to 'input' (%s: {method = 'elicitation/create', "
        .. "'sampling/createMessage' or 'roots/list', params = {...}} expected)", key)
    end
    if r.params ~= nil and type(r.params) ~= "table" then
      misuse("bad argument #1 to 'input' (%s.params: table expected, got %s)", key,
        typename(r.params))
    end
    keys[#keys + 1] = key
  end
  local hook = ctx._router._input
  if hook then return hook(ctx, requests) end
  table.sort(keys)
  local answers = {}
  for i = 1, #keys do
    local r = requests[keys[i]]
    local a, err, kind = client_request(ctx, r.method, r.params, timeout)
    if a == nil then return nil, err, kind end
    answers[keys[i]] = a
  end
  return answers
end

local public_progress, public_log = public(progress), public(log)
local public_request, public_input = public(client_request), public(ask)

-- Fields of ctx read from the request's `_meta` (trace context) and from what the transport
-- knows of the client (the connection's initialize, or the request's envelope).
local META_FIELDS = { traceparent = true, tracestate = true, baggage = true }
local REQ_FIELDS = { protocol_version = true, client_capabilities = true, client_info = true,
  era = true, client_address = true }

-- ctx.elicit / ctx.roots: the MCP requests a tool makes most, by name; ctx.sample,
-- ctx.elicit_url and ctx.elicit_complete check their fields and answers (claude.mcp.requests,
-- loaded by the first use of one).
local CLIENT_METHODS = { elicit = "elicitation/create" }
local TYPED = { sample = true, elicit_url = true, elicit_complete = true }

-- progress and log are made on first use: most calls never touch them. (Tail calls: a
-- misuse blames the caller of ctx.progress / ctx.log.)
local Ctx = { __name = "claude.RequestContext" }
Ctx.__tostring = function(ctx)
  return fmt("claude.RequestContext (%s, request %s)", ctx.server, tostring(ctx.request_id))
end
Ctx.__index = function(ctx, k)
  local f
  if k == "progress" then
    f = function(...) return public_progress(ctx, ...) end
  elseif k == "log" then
    f = function(...) return public_log(ctx, ...) end
  elseif k == "request" then
    f = function(...) return public_request(ctx, ...) end
  elseif k == "close_stream" then -- Streamable HTTP: end this call's stream
    f = function()
      local close = ctx._router._close_stream
      return close ~= nil and close(ctx) or false
    end
  elseif CLIENT_METHODS[k] then
    local method = CLIENT_METHODS[k]
    f = function(params, timeout) return public_request(ctx, method, params, timeout) end
  elseif TYPED[k] then
    f = require("claude.mcp.requests")[k](ctx, client_request)
  elseif k == "roots" then
    f = function(timeout)
      local r, err, kind = public_request(ctx, "roots/list", nil, timeout)
      if not r then return nil, err, kind end
      return type(r) == "table" and r.roots or {}
    end
  elseif k == "input" then
    f = function(requests, timeout) return public_input(ctx, requests, timeout) end
  elseif k == "task" then -- the tasks extension: go on as a task (the transport's `task`)
    f = function()
      local hook = ctx._router._task
      return hook ~= nil and hook(ctx) or false
    end
  elseif META_FIELDS[k] then
    local m = rawget(ctx, "_meta")
    local v = m and m[k]
    return type(v) == "string" and v or nil
  elseif k == "principal" then -- who asks: the verified token's subject (or client) at its issuer
    local a = rawget(ctx, "auth")
    return a and require("claude.mcp.server.tasks").owner(a) or nil
  elseif k == "session" then -- the session (legacy HTTP) or the connection (stdio, in-process)
    return ctx._router._session
  elseif k == "principal_key" then
    -- who asks, as a key: the principal; without a token, the session (or connection), else
    -- the client's address (the modern era over HTTP has no session)
    local p = ctx.principal
    if p then return "principal:" .. p end
    local s = ctx._router._session
    if s then return "session:" .. s end
    local a = ctx.client_address
    return a and "address:" .. a or nil
  elseif REQ_FIELDS[k] then
    local r = rawget(ctx, "_req")
    if r then return r[k] end
    return k == "era" and "legacy" or nil
  else
    return nil
  end
  rawset(ctx, k, f)
  return f
end

-- A request's context. `meta` is the request's `_meta` table or nil; `token` and
-- `tool_use_id` come from it (a call's context: `call_ctx`).
local function new_ctx(self, name, server, id, meta, auth, req, token, tool_use_id)
  if meta then token, tool_use_id = meta.progressToken, meta[TOOL_USE_KEY] end
  -- seven fields at most in the constructor (a hash of 8); the rest only when there
  local ctx = setmetatable({ request_id = id, server = name, cancelled = false,
    tool_use_id = tool_use_id, _router = self, _token = token,
    _task = false, -- (set when the request waits: read at its end, without a metamethod)
  }, Ctx)
  local state = server.state
  if state ~= nil then ctx.state = state end
  if auth ~= nil then ctx.auth = auth end
  if meta ~= nil then ctx._meta = meta end
  if req ~= nil then ctx._req = req end
  return ctx
end

-- The context of the call in record `rec` (claude.mcp.call). Its `_meta` is a table only when
-- it may hold a trace context: the claude CLI's shape and the modern envelope's text have
-- none (their token and tool use id are given; the envelope's members are read through the
-- transport's `req`). The held tool use id is made a string.
local function call_ctx(self, server, rec)
  local meta = rec[META]
  if meta == MCP_CALL or type(meta) == "string" then
    return new_ctx(self, rec[SERVER], server, rec[ID], nil, rec[AUTH], rec[REQ], rec[TOKEN],
      call_id(rec[TOOL_USE_ID]))
  end
  return new_ctx(self, rec[SERVER], server, rec[ID], type(meta) == "table" and meta or nil,
    rec[AUTH], rec[REQ])
end


--- A request's context (`new(router, name, server, id, meta, auth, req, token, tool_use_id)`):
-- see `claude.mcp.router`.
M.new = new_ctx
--- The context of the call in a call record (`call(router, server, rec)`).
M.call = call_ctx

return M
