--- How a server's middleware runs (claude.mcp.middleware): the one place every transport's
-- requests meet it, the router's (`handle_async`, and its entry for a call: a server with
-- middleware sends its calls there too). Loaded by the first request of such a server; a
-- server without middleware never reaches this file.
--
-- A wrapped request runs in a task of its own, as a tool call does, under the called tool's
-- budget: the middleware, outermost first, then the request itself (`serve`), in the same
-- coroutine, so that a middleware may wait and the request's ctx is the one the tool sees.
-- Each `next` is protected: what a layer raises comes back to the layer around it as
-- `nil, err` (an error of kind `rpc`: a JSON-RPC error; anything else: an internal one),
-- and an answer goes out once, whatever the middleware did.
-- @module claude.mcp.middleware.run
local core = require "claude.core"
local async = require "claude.async"
local json = require "claude.json"
local errors = require "claude.errors"
local content = require "claude.mcp.content"
local tool = require "claude.mcp.tool"
local budgets = require "claude.mcp.budget"

local M = {}

local dispatch, rpc_error, new_budget = core.mcp_dispatch, core.jsonrpc_error, core.budget
local spawn_transient, limit = async.spawn_transient, async.limit
local null, type, fmt = json.null, type, string.format

local KIND = require("claude.mcp.middleware").KIND

-- Is `e` what a request raised to ask its client (claude.mcp.input, loaded by the transports
-- that can ask)?
local loaded = package.loaded
local function is_unwind(e)
  local m = loaded["claude.mcp.input"]
  return m ~= nil and m.is_unwind(e)
end

-- The functions that wrap `method` on a server whose middleware list is `list`, outermost
-- first, worked out once per list (server:use makes a new one) and method; false: none.
local chains = setmetatable({}, { __mode = "k" })
local function chain_of(list, method)
  local per = chains[list]
  if not per then
    per = {}
    chains[list] = per
  end
  local c = per[method]
  if c ~= nil then return c end
  local kind = KIND[method]
  c = false
  if kind then
    c = {}
    for _, m in ipairs(list) do
      if type(m) == "function" then
        c[#c + 1] = m
      else
        if m.request then c[#c + 1] = m.request end
        if m[kind] then c[#c + 1] = m[kind] end
        if kind ~= method and m[method] then c[#c + 1] = m[method] end
      end
    end
    -- (none for a call still runs here: the router sends every call of the server this way)
    if #c == 0 and method ~= "tools/call" then c = false end
  end
  per[method] = c
  return c
end

-- A failure as the layer around sees it: an error of kind rpc (a JSON-RPC error), an unwind,
-- a cancellation, or an internal error that says what failed.
local function as_error(e)
  if errors.is(e, "rpc") and math.type(e.code) == "integer" then return e end
  if is_unwind(e) or errors.is(e, "cancelled") then return e end
  return errors.new("rpc", "Internal error: " .. content.message(e), { code = -32603 })
end

-- The message handler of each layer: a failure's traceback to stderr (not a JSON-RPC error
-- raised on purpose, a cancellation, a budget or a question to the client).
local report = budgets.trusted_handler(function(e)
  if not (errors.is(e, "rpc") or errors.is(e, "cancelled") or errors.is(e, "budget")
      or is_unwind(e)) then
    io.stderr:write(fmt("claude: middleware failed: %s\n",
      debug.traceback(content.message(e), 2)))
  end
  return e
end)

-- The request itself, once the middleware let it through (possibly changed): the router's
-- own work for it, in this coroutine. -> result | nil, err
local function serve(job, request, ctx)
  local parts, server = job.parts, job.server
  local op, a, b, c = dispatch(server, { jsonrpc = "2.0", id = job.id,
    method = request.method, params = request.params })
  local r, code, msg, data
  if op == "reply" then -- a list, a ping, or the protocol's error answer
    if a.error then
      return nil, errors.new("rpc", a.error.message, { code = a.error.code, data = a.error.data })
    end
    ctx._cache_hint = server.cache -- (what the modern era stamps a list with)
    return a.result
  elseif op == "call" then
    r = tool.call(a, b, ctx)
    if is_unwind(r) or errors.is(r, "rpc") then return nil, r end
    return r
  elseif op == "read" then
    ctx._cache_hint = a.cache or server.cache
    r, code, msg, data = parts.read({ a, b, c }, ctx)
  elseif op == "prompt" then
    r, code, msg, data = parts.get({ a, b }, ctx)
  elseif op == "complete" then
    r, code, msg, data = parts.complete({ a, b, c }, ctx)
  else
    return nil, errors.new("rpc", fmt("Invalid Request: '%s' is not a request",
      tostring(request.method)), { code = -32600 })
  end
  if r == false then return nil, errors.new("rpc", msg, { code = code, data = data }) end
  if is_unwind(r) then return nil, r end
  return r
end

local layer

-- Layer `i` of the chain, protected: -> result | nil, err
local function protected(job, i, request, ctx)
  local ok, r, e = xpcall(layer, report, job, i, request, ctx)
  if not ok then
    if errors.is(r, "budget") then error(r, 0) end -- the task ends: the budget answers
    return nil, as_error(r)
  end
  if r == nil then
    if e == nil then
      return nil, as_error(fmt("the middleware of '%s' returned nothing", job.method))
    end
    return nil, as_error(e)
  end
  if type(r) ~= "table" then
    -- a call's text (a string, a number: as a tool's), else a misuse
    if job.method == "tools/call" then return content.result(nil, true, r) end
    return nil, as_error(fmt("the middleware of '%s' returned a %s (a result table "
      .. "expected)", job.method, content.typename(r)))
  end
  return r
end

layer = function(job, i, request, ctx)
  local f = job.chain[i]
  if f == nil then return serve(job, request, ctx) end
  return f(request, ctx, function(changed)
    if changed ~= nil and type(changed) ~= "table" then
      error(fmt("bad argument #1 to 'next' (request table expected, got %s)",
        content.typename(changed)), 2)
    end
    return protected(job, i + 1, changed or request, ctx)
  end)
end

-- The task of a wrapped request: the chain, then its one answer.
local function run(_, job, ctx)
  local r, err = protected(job, 1, job.request, ctx)
  local parts, id, reply, tag = job.parts, job.id, ctx._reply, ctx._tag
  if ctx._task then parts.unregister(ctx._router, ctx.server, id, ctx) end
  local call = job.method == "tools/call"
  if ctx.cancelled then
    local text = parts.cancelled_text(ctx)
    if call then return reply(tag, content.error(text), id) end
    return reply(tag, rpc_error(id, -32603, text))
  end
  if r == nil and is_unwind(err) then r = err end -- the transport answers input_required
  if r ~= nil then
    if call then return reply(tag, r, id) end
    return reply(tag, { jsonrpc = "2.0", id = id, result = r })
  end
  if errors.is(err, "cancelled") then err = as_error(err.message) end
  return reply(tag, rpc_error(id, err.code, err.message, err.data))
end

--- Start request `message` of `server` (served as `name`) through its middleware: see
-- `claude.mcp.router`'s `handle_async`, whose arguments these are after the router's parts.
-- @return the request's ctx while it runs, nil once answered, or false when no middleware
--   of the server wraps it (the router serves it as usual)
function M.request(parts, router, server, name, message, reply, tag, auth, req)
  if type(message) == "string" then
    local ok, decoded = pcall(json.decode, message)
    if not ok then return false end
    message = decoded
  end
  if type(message) ~= "table" then return false end
  local method, id, params = message.method, message.id, message.params
  if id == nil or id == null or type(method) ~= "string" then return false end
  if params ~= nil and type(params) ~= "table" then return false end -- (the router's -32602)
  local chain = chain_of(server.middleware, method)
  if not chain then return false end
  params = params or json.object()
  local meta = params._meta
  local ctx = parts.new_ctx(router, name, server, id, type(meta) == "table" and meta or nil,
    auth, req)
  ctx._reply, ctx._tag, ctx._server = reply, tag, server
  -- a call runs under the budget of the tool it names, middleware included
  local budget, l
  local t = method == "tools/call" and server.tools[params.name]
  if t then
    l = parts.limits(router, server, t)
    if l.core then budget = new_budget(l.core) end
    ctx._tool = t
  end
  local job = { parts = parts, chain = chain, method = method, id = id, server = server,
    request = { method = method, id = id, params = params } }
  local task, err = spawn_transient(run, budget, job, ctx)
  if task then
    ctx._task = task
    parts.register(router, name, id, ctx)
    if budget then
      task.on_budget_data = ctx
      limit(task, parts.stopped, l.seconds)
    end
    return ctx
  end
  if err then parts.stopped(err, ctx) end -- its budget stopped it at once
  return nil
end

return M
