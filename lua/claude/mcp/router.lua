--- The in-process MCP router: answers the CLI's `mcp_message` requests for Lua servers.
--
--     local r = router.new({ calc = calc }, { notify = function(server_name, msg) ... end })
--     local response = r:handle("calc", message)   -- inside a task; may wait
--
-- The protocol is `claude.core.mcp_dispatch` (C): it answers `initialize`, `ping`, the lists
-- and every error itself, and hands back the work to run. This half runs that work: every
-- `tools/call`, `resources/read` and `prompts/get` in a task of its own, so that calls
-- overlap and `notifications/cancelled` (another `handle`) can cancel one. See docs/tools.md.
-- The request context its tools get is claude.mcp.request_context's. (Over 600 lines: the
-- runs of each kind of request, a call's worker and its budget, and their cancellation
-- share the in-flight table; apart they would reach into each other.)
-- @module claude.mcp.router
local core = require "claude.core"
local async = require "claude.async"
local json = require "claude.json"
local tool = require "claude.mcp.tool"
local content = require "claude.mcp.content"
local wire = require "claude.mcp.wire"
local errors = require "claude.errors"
local budgets = require "claude.mcp.budget"
local call = require "claude.mcp.call"
local request_context = require "claude.mcp.request_context"
local traced = require "claude.trace.mcp"
-- the slots of a call record: claude.mcp.call's, as constants (one instruction a read;
-- spec/unit/call_record_spec.lua holds them to the module's)
local ID <const>, TOOL <const>, ARGS <const>, TAG <const>, SERVER <const> = 1, 2, 3, 8, 9
local REPLY <const>, AUTH <const>, REQ <const> = 10, 11, 12

local M = {}

local dispatch, error_handler, typename = core.mcp_dispatch, tool.error_handler,
  content.typename
local number_text = content.format_number
local spawn_transient, limit, is_error = async.spawn_transient, async.limit, errors.is
local new_budget = core.budget
local misuse, public = errors.misuse, errors.public
local jobject, null = json.object, json.null
local type, tostring, fmt = type, tostring, string.format
local pack, unpack, concat = table.pack, table.unpack, table.concat

local Router = { __name = "claude.Router" }
Router.__index = Router
Router.__tostring = function(r)
  local names = {}
  for name in pairs(r._servers) do names[#names + 1] = name end
  table.sort(names)
  return fmt("claude.Router (%s)", concat(names, ", "))
end

local function ack()
  return { jsonrpc = "2.0", result = jobject(), id = 0 }
end

local function id_of(message)
  if type(message) == "string" then message = json.decode(message) end
  local id = type(message) == "table" and message.id or nil
  local t = type(id)
  return (t == "string" or t == "number") and id or null
end

local rpc_error = core.jsonrpc_error
local call_id = core.call_id
local RPC_ERROR = getmetatable(errors.new("rpc", ""))

-- ctx: what execute/read/get receive (claude.mcp.request_context)
local new_ctx, call_ctx = request_context.new, request_context.call

---------------------------------------------------------------------------------------------
-- In-flight requests: self._inflight[server_name][id] is a chain of ctx (ctx._next), since
-- the CLI's two connections to a server may use the same id at once.
---------------------------------------------------------------------------------------------

local function register(self, name, id, ctx)
  local bucket = self._inflight[name]
  if not bucket then
    bucket = {}
    self._inflight[name] = bucket
  end
  ctx._next = bucket[id]
  bucket[id] = ctx
end

local function unregister(self, name, id, ctx)
  local bucket = self._inflight[name]
  local c = bucket[id]
  if c == ctx then
    bucket[id] = ctx._next
  else
    while c and c._next ~= ctx do c = c._next end
    if c then c._next = ctx._next end
  end
  ctx._next = nil
end

local function cancel_ctx(ctx, reason)
  if ctx.cancelled then return 0 end
  ctx.cancelled = true
  ctx._reason = reason
  ctx._task:cancel(reason and "cancelled: " .. reason or "cancelled")
  return 1
end

local function cancel(self, name, id, reason)
  local bucket = self._inflight[name]
  local ctx, n = bucket and bucket[id], 0
  while ctx do
    local nxt = ctx._next -- cancelling may finish ctx and unlink it
    n = n + cancel_ctx(ctx, reason)
    ctx = nxt
  end
  return n
end

local function cancelled_text(ctx)
  return ctx._reason and "cancelled: " .. ctx._reason or "cancelled"
end

---------------------------------------------------------------------------------------------
-- Resources and prompts (tools go through claude.tool.call)
---------------------------------------------------------------------------------------------

-- Is `e` what a tool raised to ask its client (claude.mcp.input)? That module is loaded by
-- the transports that can ask (the modern era's); without it, nothing can have been raised.
local loaded = package.loaded
local function is_unwind(e)
  local m = loaded["claude.mcp.input"]
  return m ~= nil and m.is_unwind(e)
end

-- A JSON-RPC error raised on purpose (kind rpc, an integer code): the request's answer.
local function is_rpc(e)
  return is_error(e, "rpc") and math.type(e.code) == "integer"
end

local function report(what, name)
  return function(e)
    if not is_error(e, "cancelled") and not is_unwind(e) and not is_error(e, "rpc") then
      local msg = type(e) == "string" and e or content.message(e)
      io.stderr:write(fmt("claude: %s '%s' failed: %s\n", what, name, debug.traceback(msg, 2)))
    end
    return e
  end
end

-- {resource, uri, params} -> ReadResourceResult | false, code, message, data
local function read_resource(operands, ctx)
  local res, uri, params = operands[1], operands[2], operands[3]
  local r = pack(xpcall(res.read, report("resource", uri), uri, params, ctx))
  if not r[1] and is_unwind(r[2]) then return r[2] end
  if not r[1] and is_rpc(r[2]) then return false, r[2].code, r[2].message, r[2].data end
  if r[1] and r[2] == nil then
    local msg = r[3] ~= nil and content.message(r[3]) or "Resource not found: '" .. uri .. "'"
    return false, -32602, msg, { uri = uri }
  end
  local result, err = content.read_result(res, uri, unpack(r, 1, r.n))
  if not result then return false, -32603, err.message end
  local cache, req = res.cache, ctx._req
  if cache and req and req.era == "modern" then -- the resource's own caching hints
    result.ttlMs, result.cacheScope = cache.ttl_ms, cache.scope
  end
  return result
end

-- {prompt, arguments} -> GetPromptResult | false, code, message
local function get_prompt(operands, ctx)
  local p, args = operands[1], operands[2]
  local ok, r, e = xpcall(p.get, report("prompt", p.name), args or {}, ctx)
  if not ok and is_unwind(r) then return r end
  if not ok and is_rpc(r) then return false, r.code, r.message, r.data end
  local result, err = content.prompt_result(p, ok, r, e)
  if not result then return false, -32603, err.message end
  return result
end

-- -> CompleteResult | false, code, message. `complete(argument, ctx)` returns a list of
-- values, or the result table itself ({completion = {values =, total =, hasMore =}}).
local MAX_VALUES = 100
local function complete(operands, ctx) -- {completion, argument, context}
  local c, argument, context = operands[1], operands[2], operands[3]
  ctx.arguments = type(context) == "table" and type(context.arguments) == "table"
    and context.arguments or {}
  local ok, r, err = xpcall(c.complete, report("completion", c.key), argument, ctx)
  if not ok and is_rpc(r) then return false, r.code, r.message, r.data end
  if not ok then return false, -32603, content.message(r) end
  if r == nil then
    if err ~= nil then return false, -32603, content.message(err) end
    r = {}
  end
  if type(r) ~= "table" then
    return false, -32603, fmt("completion '%s' returned %s (a list of strings expected)",
      c.key, typename(r))
  end
  if r.completion ~= nil then return r end
  local values, n = json.array(), #r
  for i = 1, math.min(n, MAX_VALUES) do
    if type(r[i]) ~= "string" then
      return false, -32603, fmt("completion '%s' returned a %s value (strings expected)",
        c.key, typename(r[i]))
    end
    values[i] = r[i]
  end
  return { completion = { values = values, total = n, hasMore = n > MAX_VALUES } }
end

---------------------------------------------------------------------------------------------
-- The router
---------------------------------------------------------------------------------------------

--- The JSON-RPC answer to a message for a server nobody serves here (-32601): the one
-- wording of it, for the router and for a session without in-process servers.
-- @tparam string name the server name the message was sent to
-- @param message the JSON-RPC message (or its JSON text), for its id
-- @treturn table the JSON-RPC error response
function M.unknown_server(name, message)
  return rpc_error(id_of(message), -32601, "Server '" .. tostring(name) .. "' not found")
end

local entry -- (self): the router's entry, below
local wrapped -- a request of a server with middleware, below
local wrapped_call -- (list): the worker of a call of a server with middleware, below

-- The router forgets what it kept by name of a server's tools when they change.
local function watch(self, name, server)
  server._watchers[self] = function(_, what)
    if what == "tools" or what == "middleware" then self.by_name[name] = nil end
  end
end

local function check_server(fname, n, name, server, optional)
  if type(name) ~= "string" then
    misuse("bad argument #%d to '%s' (server name expected, got %s)", n, fname, typename(name))
  end
  if not (tool.is_server(server) or (optional and server == nil)) then
    misuse("bad argument #%d to '%s' (claude.Server expected for '%s', got %s)", n + 1, fname,
      name, typename(server))
  end
end

--- Make a router.
-- @tparam[opt] table servers `{ name = claude.Server, ... }`; the names are the ones the CLI
--   uses (`server_name` of `mcp_message`)
-- @tparam[opt] table opts `notify = function(server_name, message, ctx)`: sends a
--   server-to-client JSON-RPC notification (progress, logging) made while serving the request
--   of `ctx`; `request = function(ctx, method, params, timeout)`: sends a request to the
--   client and waits for its result (`ctx.sample`, `ctx.elicit`, `ctx.roots`, `ctx.request`),
--   returning it or `nil, err, kind`; `input = function(ctx, requests)`: answers `ctx.input`
--   (the modern era's multi round-trip requests; without it, `ctx.input` sends the requests
--   with `request`); `task = function(ctx)`: answers `ctx.task()` (the tasks extension: the
--   call goes on as a task; without it, false); `ack = false`: notifications get no answer
--   (a plain MCP transport; the CLI's control channel wants one, the default); traced:
--   `trace_parent`, `transport` (claude.trace.mcp's `server_route`); `session`: the id of
--   the session or connection the router serves alone (`ctx.session`; nil: the router serves
--   many clients, none named)
-- @treturn claude.Router
-- @function new
local NEW_OPTIONS = { notify = true, request = true, ack = true, budget = true,
  close_stream = true, input = true, task = true, trace_parent = true, transport = true,
  session = true }

M.new = public(function(servers, opts)
  errors.check(servers, 1, "new", "table", true)
  errors.check(opts, 2, "new", "table", true)
  opts = opts or {}
  errors.check_fields(opts, NEW_OPTIONS, "new")
  budgets.check(opts.budget, "the session (tool_budget)")
  for f, want in pairs { notify = "function", request = "function", input = "function",
    task = "function", trace_parent = "function", transport = "string" } do
    if opts[f] ~= nil and type(opts[f]) ~= want then
      misuse("bad field '%s' to 'new' (%s expected, got %s)", f, want, typename(opts[f]))
    end
  end
  if opts.session ~= nil and type(opts.session) ~= "string" then
    misuse("bad field 'session' to 'new' (string expected, got %s)", typename(opts.session))
  end
  if opts.ack ~= nil and type(opts.ack) ~= "boolean" then
    misuse("bad field 'ack' to 'new' (boolean expected, got %s)", typename(opts.ack))
  end
  local map = {}
  for name, server in pairs(servers or {}) do
    check_server("new", 1, name, server)
    map[name] = server
  end
  local self = setmetatable({ _servers = map, _notify = opts.notify, _request = opts.request,
    _ack = opts.ack ~= false, _inflight = {}, _budget = opts.budget,
    _limits = setmetatable({}, { __mode = "k" }), _close_stream = opts.close_stream,
    by_name = {}, _input = opts.input, _task = opts.task, _trace_parent = opts.trace_parent,
    _transport = opts.transport, _session = opts.session }, Router)
  self.route = entry(self)
  traced.router(self, Router.handle_async) -- its spans: now, or when tracing turns on
  for name, server in pairs(map) do watch(self, name, server) end
  return self
end)

-- The work of one request, in a task: a tool call answers with its result (the caller writes
-- the JSON-RPC envelope around it), a read or a prompt with a whole response. A tool call
-- runs in a worker (async.worker: a loop, one call after the other, no call per call).
local yield, DONE = coroutine.yield, async.DONE
local trusted = budgets.trusted_handler

-- The answer `result` (its text when `text`) of call `id` with its reply and tag as read from
-- its record, whose ctx is `c` (nil: it has none and never waited): sent unless the call was
-- cancelled meanwhile (the cancellation is its answer then), and a waiting call's registration
-- ends. (The call's worker and its middleware's task, claude.mcp.middleware.run.)
local function send_answer(c, reply, tag, id, result, text)
  if c then
    -- (a call that waited: its tag as `waiting` kept it, not an id of the line, no longer
    -- read)
    local kept = rawget(c, "_tag") -- (a ctx's miss would ask its __index)
    if kept ~= nil then tag = kept end
    if c._task then unregister(c._router, c.server, id, c) end
    if c.cancelled then result, text = content.error(cancelled_text(c)), false end
  end
  if text then
    reply(tag, result, id, true)
  elseif getmetatable(result) == RPC_ERROR and result.kind == "rpc" then
    -- the tool (or a middleware) raised a JSON-RPC error
    reply(tag, rpc_error(id, result.code, result.message, result.data))
  else
    reply(tag, result, id)
  end
end

-- The answer of a call: `finish(result, text)` sends `result` (its text when `text`) with the
-- call's reply, unless the call was cancelled meanwhile, and a waiting call's registration
-- ends; `answer(done, r, e)` is that of a call whose `execute` gave `done, r, e` (tool.call's
-- conversion, inline: a string or a number is the text of the result). Both read the call
-- the worker runs (its upvalues).
--
-- The worker's calls run in one protected call, not one each (an xpcall is a C call: a tenth
-- of what a call costs the server): `execute` runs unprotected inside the worker's loop
-- (`serve`), whose xpcall returns only when it raised; the worker then answers that call
-- as tool.call would have (the tool's message handler ran at the error: its traceback went
-- to stderr) and goes on with a new loop in a new xpcall. An error raised outside
-- `execute` (in_tool false) goes on up as it did: the task fails. `ctx` is nil for a tool
-- that cannot see it: one is made only if the call waits, and the task holds it
-- (`on_budget_data`). The record is read at once: its transport fills it again for the next
-- call.
local call_worker = async.worker(function(task, t, ctx, rec)
  local args, id, reply, tag
  local in_tool = false -- `execute` runs (an error now is the call's failure)

  local function finish(result, text)
    return send_answer(ctx or task.on_budget_data, reply, tag, id, result, text)
  end

  local function answer(done, r, e)
    if done and not t.validate_output then
      local tr = type(r)
      if tr == "string" then return finish(r, true) end
      if tr == "number" then return finish(number_text(r), true) end
    end
    return finish(content.result(t, done, r, e), false)
  end

  -- the worker's loop: the call given, then each next one; returns only by raising
  local function serve()
    while true do
      args, id, reply, tag = rec[ARGS], rec[ID], rec[REPLY], rec[TAG]
      if args == nil or args == null then args = jobject() end
      local valid, verr = t.validate(args)
      if not valid then
        finish(content.error("Input validation error: " .. verr.message), false)
      else
        in_tool = true
        local r, e = t.execute(args, ctx)
        in_tool = false
        -- a text answer of a call nobody registered (it did not wait): finish's way inline
        local c, tr = ctx or task.on_budget_data, type(r)
        if (c and (c._task or c.cancelled)) or t.validate_output then
          answer(true, r, e)
        elseif tr == "string" then
          reply(tag, r, id, true)
        elseif tr == "number" then
          reply(tag, number_text(r), id, true)
        else
          finish(content.result(t, true, r, e), false)
        end
      end
      args, ctx = nil -- luacheck: ignore (an idle worker holds nothing of its last call)
      task, t, ctx, rec = yield(DONE)
    end
  end
  -- the message handler: the failing tool's (tool.error_handler), for an error of `execute`
  local on_error = trusted(function(e)
    if not in_tool then return e end
    return (t.report_error or error_handler(t))(e)
  end)
  while true do
    local _, e = xpcall(serve, on_error)
    if not in_tool then error(e, 0) end -- not the tool's: the task fails, as it did
    in_tool = false
    answer(false, e)
    args, ctx = nil -- luacheck: ignore
    task, t, ctx, rec = yield(DONE)
  end
end)

-- A request that is not a tool call (a read, a prompt, a completion), in a task:
-- `run(operands, ctx)` gives its result, or false, code, message, data; the whole response
-- goes to the ctx's reply.
local function run_request(_, ctx, run, operands)
  local result, code, msg, data = run(operands, ctx)
  local id, reply, tag = ctx.request_id, ctx._reply, ctx._tag
  if ctx._task then unregister(ctx._router, ctx.server, id, ctx) end
  if ctx.cancelled then return reply(tag, rpc_error(id, -32603, cancelled_text(ctx))) end
  if result then return reply(tag, { jsonrpc = "2.0", id = id, result = result }) end
  reply(tag, rpc_error(id, code, msg, data))
end

-- Starts the request of `ctx` (`run_request`); a request still running is registered for
-- cancellation. Returns its ctx then, else nil.
local function start(self, ctx, reply, tag, run, operands)
  ctx._reply, ctx._tag = reply, tag
  local task = spawn_transient(run_request, nil, ctx, run, operands)
  if not task then return nil end
  ctx._task = task
  register(self, ctx.server, ctx.request_id, ctx)
  return ctx
end

--- Whether `execute` can see its second argument, the ctx: a Lua function with one parameter
-- (`function(args)`) and no `...` cannot, so its calls need no ctx unless they wait.
-- @param execute a tool's execute
-- @treturn boolean
local function sees_ctx(execute)
  if type(execute) ~= "function" then return true end
  local info = debug.getinfo(execute, "u")
  return info.isvararg or info.nparams >= 2 or info.what == "C"
end
M.sees_ctx = sees_ctx

-- What a call of tool `t` of `server` needs, worked out once per tool and server: its limits
-- (tool, server, session, defaults) `core = {run, instructions, memory}` and `seconds`, or
-- `core = false` for none; `spare`, a budget whose call ended, reset for the next one;
-- `sees`, whether its `execute` sees a ctx; `tool`, `server`; and how the router's entry runs
-- it, set by `limits_by_name`: `worker(task, arg, ctx, rec)`, with `ctx` made at once when
-- `ctx`, and `usual`, neither ctx, task nor middleware around it.
local function limits_of(self, server, t)
  local per = self._limits[server]
  if not per then
    per = setmetatable({}, { __mode = "k" })
    self._limits[server] = per
  end
  local l = per[t]
  if l == nil then
    local r = budgets.resolve(t.budget, server.budget, self._budget)
    local sees = sees_ctx(t.execute)
    l = { core = r and { run = r.run, instructions = r.instructions, memory = r.memory }
      or false, seconds = r and r.seconds, spare = false, sees = sees, ctx = sees,
      usual = not t.task and not sees, tool = t, server = server, worker = call_worker,
      arg = t }
    per[t] = l
  end
  return l
end

-- The answer to a call its budget stopped: an `isError` result that names the budget.
local function stopped_result(t, err)
  return content.error(budgets.message(t.name, err))
end

-- A waiting call its budget stopped later (the `seconds` timer, or in a later resume).
local function budget_stopped(err, ctx)
  if ctx._task then unregister(ctx._router, ctx.server, ctx.request_id, ctx) end
  ctx.cancelled = true -- what the tool left running is over
  local id = ctx.request_id
  ctx._reply(ctx._tag, stopped_result(ctx._tool, err), id == nil and null or id)
end

-- A call whose task waits: its ctx (made now when the tool cannot see it), with what
-- budget_stopped needs, registered for cancellation, under the limits `l` of its tool.
-- Returns the ctx.
local function waiting(self, l, task, ctx, rec)
  if not ctx then ctx = call_ctx(self, l.server, rec) end
  -- (the tag may be an id the control reader held back, no longer there once this returns)
  ctx._reply, ctx._tag, ctx._tool = rec[REPLY], call_id(rec[TAG]), l.tool
  task.on_budget_data = ctx
  ctx._task = task
  register(self, rec[SERVER], rec[ID], ctx)
  if task.budget then limit(task, budget_stopped, l.seconds) end
  return ctx
end

-- The limits of tool `tname` of server `name`, kept in `router.by_name[name][tname]` (read
-- there by the entry and by a transport asking whether a call is `usual`; forgotten when the
-- server's tools change: `watch`); nil when there is no such tool.
local function limits_by_name(self, name, tname)
  local server = self._servers[name]
  local t = server and server.tools[tname]
  if not t then return nil end
  local per = self.by_name[name]
  if not per then
    per = {}
    self.by_name[name] = per
  end
  local l = limits_of(self, server, t)
  -- a server's middleware that wraps calls runs around the tool in the call's task
  -- (claude.mcp.middleware.run): the worker is then its, handed the tool's limits, and the
  -- call's ctx is always made (server:use makes the router forget what it kept by name)
  local list, worker = server.middleware, call_worker
  if list then worker = wrapped_call(list) end
  if worker == call_worker then
    l.worker, l.arg, l.ctx, l.usual = worker, t, l.sees, not t.task and not l.sees
  else
    l.worker, l.arg, l.ctx, l.usual = worker, l, true, false
  end
  per[tname] = l
  return l
end

-- The router's entry (`Router:call`): one closure per router, which a reader can call
-- straight (`reader:target(router.route)`). The call of record `rec` runs in a task of its
-- own, under its budget when it has one. `l`: its tool's limits, when the caller looked
-- them up already (a connection's usual call: `router.by_name`).
entry = function(self)
  local by_name = self.by_name
  return function(rec, l)
    if not l then
      local per = by_name[rec[SERVER]]
      l = per and per[rec[TOOL]] or limits_by_name(self, rec[SERVER], rec[TOOL])
    end
    if not l then -- no such server or tool (handle_async's error answer), or middleware
      return self:handle_async(rec[SERVER], call.message(rec), rec[REPLY], call_id(rec[TAG]),
        rec[AUTH], rec[REQ])
    end
    local t = l.tool
    -- the call's ctx, made now only when its tool (or a middleware) sees it
    local ctx = l.ctx and call_ctx(self, l.server, rec) or nil
    -- the budget of a call that ended at once serves the next call of the tool
    local b = l.core
    if b then
      b = l.spare
      if b then l.spare = false else b = new_budget(l.core) end
    end
    local task, err = spawn_transient(l.worker, b, l.arg, ctx, rec)
    if task then return waiting(self, l, task, ctx, rec) end
    if b then l.spare = b end
    if err then
      if ctx then ctx.cancelled = true end -- what the tool left running is over
      rec[REPLY](rec[TAG], stopped_result(t, err), rec[ID])
    end
    return nil
  end
end

-- How a server's middleware runs (claude.mcp.middleware.run), loaded by the first request of
-- a server with middleware, and handed what of the router its requests use.
local middleware_run
local function run_module()
  local m = middleware_run
  if m then return m end
  m = require "claude.mcp.middleware.run"
  m.bind { new_ctx = new_ctx, register = register, unregister = unregister,
    cancelled_text = cancelled_text, read = read_resource, get = get_prompt,
    complete = complete, answer = send_answer }
  middleware_run = m
  return m
end

--- claude.mcp.middleware.run, handed what of the router its requests use (for the transports
-- that serve some requests themselves: its `around`).
-- @return the module
M.middleware_run = run_module

-- The worker of a call of a server whose middleware list is `list`: the middleware's when one
-- wraps tools/call, else the plain one.
wrapped_call = function(list)
  local m = run_module()
  return m.chain(list, "tools/call") and m.call or call_worker
end

-- A request of a server with middleware, not a call of one of its tools (those go through
-- `entry`): its ctx while it runs, nil once answered, false for a request no middleware
-- wraps.
wrapped = function(self, server, name, message, reply, tag, auth, req)
  return run_module().request(self, server, name, message, reply, tag, auth, req)
end

--- Run the tool call of record `rec` (`claude.mcp.call`: every transport's readers fill
-- one), without waiting: the one way a tool call starts (`router.route`, the same function,
-- takes the record alone: a reader calls it straight). The call runs in a task of its own,
-- under its budget when it has one (the defaults give every call one), and `rec[REPLY](tag,
-- result, id)` is called once with its answer: at once, or when the task ends. `result` is
-- the CallToolResult, and the caller writes the envelope around it (the session writes it
-- in C); a result that is one text block (the tool returned a string or a number) comes as
-- that text, a string, with a fourth value true: it stands for
-- `{"content":[{"type":"text","text":result}]}`; a JSON-RPC error the tool raised comes as
-- the whole response, without the id. The record is read before anything runs: its
-- transport may fill it again as soon as this returns. A call of a tool that is not there
-- goes the way of `handle_async` (its error answer).
-- @tparam table rec
-- @return the call's context while its task runs (to cancel it), else nil
function Router:call(rec)
  return self.route(rec)
end

--- Answer one JSON-RPC message the CLI sent to server `name`, without waiting: `reply(tag,
-- response)` is called once, at once for everything but work that may wait (a tool, a read,
-- a prompt), which runs in a task of its own and replies when done. A tool call replies
-- `reply(tag, result, id)`: its result and JSON-RPC id, and the caller writes the envelope
-- (the session writes it in C). A result that is one text block (the tool returned a string
-- or a number) comes as that text, a string, which stands for
-- `{"content":[{"type":"text","text":result}]}`. This is the session's path: one task per
-- call, none for the protocol's own messages.
-- @tparam string name the server name of the `mcp_message` request
-- @param message the decoded JSON-RPC message (or its JSON text)
-- @tparam function reply
-- @param tag any value, handed back to `reply` (the control request id)
-- @tparam[opt] table auth the verified token of the request (`ctx.auth`; claude.mcp.server.http)
-- @tparam[opt] table req what the transport knows of the client and the request:
--   `protocol_version`, `client_capabilities`, `client_info`, `era` (read through `ctx`), and
--   anything its `notify`, `request` and `input` options need (`ctx._req`)
-- @return the request's context while its task runs (to cancel it), else nil
function Router:handle_async(name, message, reply, tag, auth, req)
  local server = self._servers[name]
  if not server then return reply(tag, M.unknown_server(name, message)) end
  if server.middleware then -- the requests it wraps run through it (claude.mcp.middleware)
    local ctx = wrapped(self, server, name, message, reply, tag, auth, req)
    if ctx ~= false then return ctx end
  end
  -- mcp_dispatch raises only for a server that is not a table: no pcall here
  local op, a, b, c, d = dispatch(server, message)
  if op == "reply" then return reply(tag, a) end
  -- the CLI's control channel wants an answer even to a notification
  if op == "ack" then
    if self._ack then return reply(tag, ack()) end
    return nil
  end
  if op == "call" then -- tool, arguments, meta, id: a record of its own (this may run again
    -- inside the tool, before the call's record is read whole)
    return self:call(call.fill(call.new { [SERVER] = name, [REPLY] = reply, [TAG] = tag,
      [AUTH] = auth, [REQ] = req }, d, a.name, b, type(c) == "table" and c or nil))
  end
  if op == "cancel" then -- request_id, reason
    cancel(self, name, a, b)
    if self._ack then return reply(tag, ack()) end
    return nil
  end
  if op == "complete" then -- completion, argument, context, id
    return start(self, new_ctx(self, name, server, d, nil, auth, req), reply, tag, complete,
      { a, b, c })
  end
  local id = op == "read" and d or c
  local meta = type(message) == "table" and type(message.params) == "table"
    and message.params._meta
  local ctx = new_ctx(self, name, server, id, type(meta) == "table" and meta or nil, auth, req)
  if op == "read" then -- resource, uri, params, id
    return start(self, ctx, reply, tag, read_resource, { a, b, c })
  end -- "prompt": prompt, arguments, id
  return start(self, ctx, reply, tag, get_prompt, { a, b })
end

--- Answer one JSON-RPC message the CLI sent to server `name`, waiting for it: `handle_async`
-- for callers that want the response as a value. Inside a task a tool call waits for its
-- tool; cancelling that task cancels the call too. Notifications get the acknowledgement
-- `{jsonrpc = "2.0", result = {}, id = 0}`.
-- @tparam string name the server name of the `mcp_message` request
-- @param message the decoded JSON-RPC message (or its JSON text)
-- @treturn table the JSON-RPC response, ready for `json.encode`
function Router:handle(name, message)
  local _, response, id = async.await(function(done)
    local abandoned = false -- the caller's task was cancelled: the late answer is dropped
    local ctx = self:handle_async(name, message, function(_, r, rid)
      if not abandoned then done(r, rid) end
    end)
    if ctx then
      return function()
        abandoned = true
        cancel_ctx(ctx, "the request's task was cancelled")
      end
    end
  end)
  if id ~= nil then return wire.answer(id, response) end
  return response
end

--- Cancel one request in flight, by the context `handle_async` returned (a transport whose
-- requests do not have ids of their own: a client that left its HTTP request). Its answer is
-- still made.
-- @param ctx
-- @tparam[opt] string reason
-- @treturn integer 1 when it was cancelled, 0 when it was already
function Router:cancel_request(ctx, reason) -- luacheck: no unused args
  return cancel_ctx(ctx, reason)
end

--- Cancel every request in flight (when the session closes). Their answers are still made.
-- @tparam[opt] string reason
-- @treturn integer how many were cancelled
function Router:cancel_all(reason)
  local list = {}
  for _, bucket in pairs(self._inflight) do
    for _, ctx in pairs(bucket) do
      while ctx do
        list[#list + 1] = ctx
        ctx = ctx._next
      end
    end
  end
  local n = 0
  for i = 1, #list do n = n + cancel_ctx(list[i], reason) end
  return n
end

--- Close the router: cancel every request in flight (`cancel_all`). The router stays usable.
-- @tparam[opt] string reason default `"router closed"`
-- @treturn integer how many were cancelled
function Router:close(reason)
  return self:cancel_all(reason or "router closed")
end

--- Number of requests in flight.
-- @treturn integer
function Router:pending()
  local n = 0
  for _, bucket in pairs(self._inflight) do
    for _, ctx in pairs(bucket) do
      while ctx do
        n = n + 1
        ctx = ctx._next
      end
    end
  end
  return n
end

--- Add, replace or (with `nil`) remove a server. Calls in flight finish on the old one.
-- @tparam string name
-- @tparam[opt] claude.Server server
-- @function set_server
Router.set_server = public(function(self, name, server)
  check_server("set_server", 1, name, server, true)
  local old = self._servers[name]
  if old then old._watchers[self] = nil end
  self._servers[name] = server
  self.by_name[name] = nil
  if server then watch(self, name, server) end
end)

--- The servers, as a new table `{ name = claude.Server }`.
-- @treturn table
function Router:servers()
  local out = {}
  for k, v in pairs(self._servers) do out[k] = v end
  return out
end

return M
