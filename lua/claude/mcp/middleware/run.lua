--- How a server's middleware runs (claude.mcp.middleware): the one place every transport's
-- requests meet it. A server's calls of its tools meet it where their record meets the tool
-- (the router's entry: `call`, the call's task under the tool's budget); its other requests,
-- and a call of a tool it does not have, in the router's `handle_async` (`request`, a task of
-- their own). Loaded by the first request of such a server; a server without middleware never
-- reaches this file.
--
-- The middleware, outermost first, then the request itself (`serve`), run in the request's
-- task, in one coroutine, so that a middleware may wait and the request's ctx is the one the
-- tool sees. Each `next` is protected: what a layer raises comes back to the layer around it
-- as `nil, err` (an error of kind `rpc`: a JSON-RPC error; anything else: an internal one),
-- and an answer goes out once, whatever the middleware did: a call's by the router's own
-- writing (a result of one text block as its text).
-- @module claude.mcp.middleware.run
local core = require "claude.core"
local json = require "claude.json"
local errors = require "claude.errors"
local content = require "claude.mcp.content"
local tool = require "claude.mcp.tool"
local budgets = require "claude.mcp.budget"
local async = require "claude.async"
-- the slots of a call record: claude.mcp.call's, as constants (spec/unit/call_record_spec.lua)
local ID <const>, TOOL <const>, ARGS <const>, META <const> = 1, 2, 3, 4
local TAG <const>, REPLY <const> = 8, 10

local M = {}

local dispatch, rpc_error, MCP_CALL = core.mcp_dispatch, core.jsonrpc_error, core.MCP_CALL
local spawn_transient = async.spawn_transient
local null, type, fmt, setmetatable, getmetatable, rawset = json.null, type, string.format,
  setmetatable, getmetatable, rawset
local text_of = content.text_of

-- What of the router the requests use (`bind`): new_ctx, register, unregister,
-- cancelled_text, read, get, complete, answer.
local parts

--- Hand this module the router's parts (claude.mcp.router, once).
-- @tparam table p
function M.bind(p)
  parts = p
end

local KIND = require("claude.mcp.middleware").KIND

-- Is `e` what a request raised to ask its client (claude.mcp.input, loaded by the transports
-- that can ask)?
local loaded = package.loaded
local function is_unwind(e)
  local m = loaded["claude.mcp.input"]
  return m ~= nil and m.is_unwind(e)
end

--- The functions that wrap `method` on a server whose middleware list is `list`, outermost
-- first (and the `method`), worked out once per list (server:use makes a new one) and
-- method; false: none.
-- @tparam table list
-- @tparam string method
-- @return table|false
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
    c = { method = method }
    for _, m in ipairs(list) do
      if type(m) == "function" then
        c[#c + 1] = m
      else
        if m.request then c[#c + 1] = m.request end
        if m[kind] then c[#c + 1] = m[kind] end
        if kind ~= method and m[method] then c[#c + 1] = m[method] end
      end
    end
    if #c == 0 then c = false end
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

-- A request the transport answers itself (`around`), once the middleware let it through:
-- its handler answers with `out:send(response)` to an `out` of the request's own, whose
-- answer comes back here (waiting for it: a handler may answer later) and whose other
-- messages go on to the transport's `out`. A `subscriptions/listen` is handed the transport's
-- `out` itself (it keeps it to send its notifications): once it opened, its end answers it,
-- and `next` returns an empty result; when it refused, its refusal went out. -> result |
-- nil, err
local function own(l, request, ctx)
  local id, out = ctx.request_id, l.out
  local msg = { jsonrpc = "2.0", id = id, method = request.method, params = request.params }
  if request.method == "subscriptions/listen" then
    local before = out.listening
    l.handle(msg, out)
    l.sent = true -- (its answer is its own: the middleware's is not sent)
    if out.listening ~= nil and out.listening ~= before then return json.object() end
    return nil, errors.new("rpc", "Invalid Request: the listen was refused",
      { code = -32600 })
  end
  local answered = false
  local _, response = async.await(function(done)
    l.handle(msg, setmetatable({ send = function(_, m)
      if not answered and m.method == nil and m.id == id then
        answered = true
        return done(m)
      end
      return out:send(m)
    end }, { __index = out, __newindex = out }))
  end)
  local e = response.error
  if e then return nil, errors.new("rpc", e.message, { code = e.code, data = e.data }) end
  return response.result
end

-- The request itself, once the middleware let it through (possibly changed): the router's
-- own work for it, in this coroutine. -> result | nil, err
local function serve(_, request, ctx, l)
  local server, params = l.server, request.params
  if l.handle then return own(l, request, ctx) end
  local t = l.tool
  if t and request.method == "tools/call" and type(params) == "table" then
    -- a call of a tool of the server (the one the call named, unless a middleware changed
    -- it): the router's tool call, its result as a table for the middleware to see
    local name = params.name
    if name ~= t.name then t = server.tools[name] end
    if t then
      local r = tool.call(t, params.arguments, ctx)
      -- (a result has no metatable: an unwind and an error have theirs)
      if getmetatable(r) ~= nil and (is_unwind(r) or errors.is(r, "rpc")) then return nil, r end
      return r
    end
  end
  local op, a, b, c = dispatch(server, { jsonrpc = "2.0", id = ctx.request_id,
    method = request.method, params = params })
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

local layer, start

-- Layer `i` of the chain, protected: -> result | nil, err
local function protected(chain, i, request, ctx, l)
  local ok, r, e = xpcall(layer, report, chain, i, request, ctx, l)
  if not ok then
    if errors.is(r, "budget") then error(r, 0) end -- the task ends: the budget answers
    return nil, as_error(r)
  end
  if r == nil then
    if e == nil then
      return nil, as_error(fmt("the middleware of '%s' returned nothing", chain.method))
    end
    return nil, as_error(e)
  end
  if type(r) ~= "table" then
    -- a call's text (a string, a number: as a tool's), else a misuse
    if chain.method == "tools/call" then return content.result(nil, true, r) end
    return nil, as_error(fmt("the middleware of '%s' returned a %s (a result table "
      .. "expected)", chain.method, content.typename(r)))
  end
  return r
end

layer = function(chain, i, request, ctx, l)
  local f = chain[i]
  if f == nil then return serve(chain, request, ctx, l) end
  return f(request, ctx, function(changed)
    if changed ~= nil and type(changed) ~= "table" then
      error(fmt("bad argument #1 to 'next' (request table expected, got %s)",
        content.typename(changed)), 2)
    end
    local inner = i + 1
    -- (the request itself raises nothing of its own: `serve` needs no protection)
    if chain[inner] == nil then return serve(chain, changed or request, ctx, l) end
    return protected(chain, inner, changed or request, ctx, l)
  end)
end

-- The task of a wrapped request (not a call of a tool: `call`): the chain, then its one
-- answer.
-- What `serve` reads of a request that is no call of a tool: its server (a call's limits
-- hold its server and tool), one per server.
local served = setmetatable({}, { __mode = "k" })
local function served_of(server)
  local s = served[server]
  if not s then
    s = { server = server }
    served[server] = s
  end
  return s
end

local function run(_, chain, request, ctx)
  local r, err = protected(chain, 1, request, ctx, ctx._own or served_of(ctx._server))
  local id, reply, tag = ctx.request_id, ctx._reply, ctx._tag
  if ctx._task then parts.unregister(ctx._router, ctx.server, id, ctx) end
  local call = chain.method == "tools/call"
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

-- The `_meta` of a call's params as a middleware reads it, made on first read from what the
-- call's ctx kept of its record: the modern envelope (its text, decoded by the request's
-- record), or the claude CLI's shape (a progress token and a tool use id).
local TOOL_USE_KEY = "claudecode/toolUseId"
local function lazy_meta(params, k)
  if k ~= "_meta" then return nil end
  local ctx = getmetatable(params).ctx
  local req = ctx._req
  local meta = req and req._meta
  if meta == nil then
    meta = { progressToken = ctx._token, [TOOL_USE_KEY] = ctx.tool_use_id }
  end
  rawset(params, "_meta", meta)
  return meta
end

--- The task of the call in record `rec` of a server whose middleware wraps its calls: the
-- router's entry spawns it, as its plain worker, under the budget of the tool, with `l` the
-- tool's limits (`tool`, `server`) and `ctx` made for it. The record is read at once (its
-- transport fills it again for the next call); the chain runs, the tool innermost; the answer
-- goes out as the router's plain calls' do.
-- @param _ the task
-- @tparam table l
-- @param ctx
-- @tparam table rec
function M.call(_, l, ctx, rec)
  local id, reply, tag, meta = rec[ID], rec[REPLY], rec[TAG], rec[META]
  local params = { name = rec[TOOL], arguments = rec[ARGS] }
  if meta == MCP_CALL or type(meta) == "string" then
    setmetatable(params, { __index = lazy_meta, ctx = ctx })
  elseif type(meta) == "table" then
    params._meta = meta
  end
  local r, err = protected(chain_of(l.server.middleware, "tools/call"), 1,
    { method = "tools/call", id = id, params = params }, ctx, l)
  if r == nil then
    r = err
    if errors.is(r, "cancelled") then r = as_error(r.message) end
  end
  local text = text_of(r)
  if text then return parts.answer(ctx, reply, tag, id, text, true) end
  return parts.answer(ctx, reply, tag, id, r, false)
end

--- Start request `message` of `server` (served as `name`) through its middleware: see
-- `claude.mcp.router`'s `handle_async`, whose arguments these are. A call of one of the
-- server's tools is not started here: the router's call path wraps it (`call`).
-- @return the request's ctx while it runs, nil once answered, or false when no middleware
--   of the server wraps it (the router serves it as usual)
function M.request(router, server, name, message, reply, tag, auth, req)
  if type(message) == "string" then
    local ok, decoded = pcall(json.decode, message)
    if not ok then return false end
    message = decoded
  end
  if type(message) ~= "table" then return false end
  local method, id, params = message.method, message.id, message.params
  if id == nil or id == null or type(method) ~= "string" then return false end
  if params ~= nil and type(params) ~= "table" then return false end -- (the router's -32602)
  if method == "tools/call" and params and server.tools[params.name] then return false end
  local chain = chain_of(server.middleware, method)
  if not chain then return false end
  return start(router, server, name, chain, message, reply, tag, auth, req)
end

--- Run the middleware of `server` (served as `name` by `router`, whose requests' ctx the
-- middleware's is) that wrap request `message` around `handle(message, out)`: a request the
-- transport answers itself, not the router (legacy `resources/subscribe`, the modern era's
-- `server/discover`, `subscriptions/listen`, `tasks/*`, `skills/*`), whose handler answers
-- with `out:send(response)`. The chain's answer goes to `out:send`, once.
-- @param router
-- @tparam claude.Server server
-- @tparam string name
-- @tparam table message a decoded request
-- @tparam[opt] table auth the verified token (`ctx.auth`)
-- @tparam[opt] table req what the transport knows of the client (`ctx._req`)
-- @tparam table out
-- @tparam function handle
-- @return the request's ctx while it runs, nil once answered, false when no middleware wraps
--   it (the transport serves it as usual)
function M.around(router, server, name, message, auth, req, out, handle)
  local params = message.params
  local chain = chain_of(server.middleware, message.method)
  if not chain or (params ~= nil and type(params) ~= "table") then return false end
  local own_l = { server = server, handle = handle, out = out, sent = false }
  local function reply(_, response)
    if not own_l.sent then
      own_l.sent = true
      return out:send(response)
    end
  end
  return start(router, server, name, chain, message, reply, nil, auth, req, own_l)
end

-- The task of a request through `chain`: its ctx while it runs, else nil.
start = function(router, server, name, chain, message, reply, tag, auth, req, own_l)
  local id, method, params = message.id, message.method, message.params or json.object()
  local meta = params._meta
  local ctx = parts.new_ctx(router, name, server, id, type(meta) == "table" and meta or nil,
    auth, req)
  -- (ctx._server: the cache's store is the server's)
  ctx._reply, ctx._tag, ctx._server, ctx._own = reply, tag, server, own_l
  local task = spawn_transient(run, nil, chain, { method = method, id = id, params = params },
    ctx)
  if task then
    ctx._task = task
    parts.register(router, name, id, ctx)
    return ctx
  end
  return nil
end

M.chain = chain_of

return M
