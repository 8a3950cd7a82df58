--- One request peer: outbound requests (ids, pending waits, timeouts,
-- cancellation), inbound requests each answered from its own task,
-- notifications both ways, and one failure path when the other side goes
-- away.
--
-- (Over 600 lines: the two codecs, and the three ways a request waits (in a task with no
-- closure, outside one, written by its owner) around one pending set and one abandon path.)
--
-- The peer knows neither the transport nor the protocol. It writes through
-- the `send` function its owner gives (a child's stdin, the host's stdout, an
-- HTTP response...), is fed decoded messages by its owner (`peer:receive`),
-- and builds and reads messages through a codec: `rpc.jsonrpc` (JSON-RPC 2.0)
-- or `rpc.control` (the claude CLI's control protocol).
--
-- A codec is a table of functions (every message they return goes to `send`
-- as it is):
--
-- - `new_id(n)`: the id of the n-th outbound request; `seq(id)` (optional, for ids that
--   are not integers): the n an id was made from, or nil
-- - `request(id, method, params)`, `result(id, value)`,
--   `error(id, code, message, data)`: messages
-- - `notification(method, params)`: a message; a codec without it has no
--   notifications, and `notify` sends a request whose answer nobody waits for
-- - `cancel(id, reason)`: the message telling the other side we stopped
--   waiting for request `id`, or nil (nothing to send)
-- - `decode(msg)`: what `msg` is, one of
--   `"request", id, method, params`; `"notification", method, params`;
--   `"result", id, value`; `"error", id, fields` (`message`, `code`, `data`,
--   ...); `"cancel", id, reason`; `"invalid", id_or_nil, why`; or nil when the
--   message is not of this protocol
-- - `unknown_method(method)`: the message of the answer to an unknown method
-- - fields: `noun` (how errors name a request: "request", "control request")
--   and `error_kind` (the kind of the error an error answer becomes)
-- @module claude.rpc
local async = require "claude.async"
local errors = require "claude.errors"
local json = require "claude.json"
local core = require "claude.core"
local pending = require "claude.pending"

-- (wait_call: the one wait of a task, async's; the running task found with no call)
local wait_call, tasks = async.wait_call, async.by_coroutine
local running = coroutine.running

local M = {}

local DEFAULT_TIMEOUT = 60

-- JSON-RPC error codes the peer itself answers with.
local INVALID_REQUEST, METHOD_NOT_FOUND, INTERNAL_ERROR = -32600, -32601, -32603
M.INVALID_REQUEST, M.METHOD_NOT_FOUND, M.INTERNAL_ERROR =
  INVALID_REQUEST, METHOD_NOT_FOUND, INTERNAL_ERROR

local pack = table.pack

--- What `Peer:request_written` with `usual` returns after a result it did not check.
local UNCHECKED = setmetatable({}, { __name = "claude.rpc.UNCHECKED",
  __tostring = function() return "claude.rpc.UNCHECKED" end })
M.UNCHECKED = UNCHECKED

---------------------------------------------------------------------------
-- JSON-RPC 2.0

local function jsonrpc_decode(msg)
  if type(msg) ~= "table" then
    return "invalid", nil, "a JSON-RPC message must be an object, got a JSON " .. type(msg)
  end
  local method, id = msg.method, msg.id
  if id == json.null then id = nil end
  if method ~= nil then
    if type(method) ~= "string" then
      return "invalid", id, "'method' must be a string"
    end
    if id == nil then
      local params = msg.params
      if method == "notifications/cancelled" and type(params) == "table" then
        return "cancel", params.requestId, params.reason
      end
      return "notification", method, params
    end
    return "request", id, method, msg.params
  end
  local e = msg.error
  if e ~= nil then
    if type(e) ~= "table" then
      return "error", id, { message = tostring(e) }
    end
    local text = e.message
    return "error", id, { code = e.code, message = type(text) == "string" and text
      or tostring(text), data = e.data }
  end
  if id ~= nil then return "result", id, msg.result end
  return "invalid", nil, "neither a request, a notification nor a response"
end

--- The JSON-RPC 2.0 codec: integer ids, `notifications/cancelled`, error
-- answers become errors of kind `remote` with `code`, `data` and the
-- remote's text in `remote_message`.
local function count_id(n) return n end

M.jsonrpc = {
  noun = "request",
  error_kind = "remote",
  new_id = count_id,
  request = function(id, method, params)
    return { jsonrpc = "2.0", id = id, method = method, params = params }
  end,
  notification = function(method, params)
    return { jsonrpc = "2.0", method = method, params = params }
  end,
  result = function(id, value)
    return { jsonrpc = "2.0", id = id, result = value }
  end,
  error = function(id, code, message, data)
    return { jsonrpc = "2.0", id = id == nil and json.null or id,
      error = { code = code, message = message, data = data } }
  end,
  cancel = function(id, reason)
    return { jsonrpc = "2.0", method = "notifications/cancelled",
      params = { requestId = id, reason = reason } }
  end,
  unknown_method = function(method) return "Method not found: " .. tostring(method) end,
  decode = jsonrpc_decode,
}

---------------------------------------------------------------------------
-- The claude CLI's control protocol

local function control_decode(msg)
  local t = msg.type
  if t == "control_response" then
    local r = msg.response
    if type(r) ~= "table" then return "invalid", nil, "a control_response without a response" end
    if r.subtype == "error" then
      return "error", r.request_id, { message = tostring(r.error), response = r }
    end
    local body = r.response
    if body == nil or body == json.null then body = {} end
    return "result", r.request_id, body
  elseif t == "control_request" then
    local req = msg.request
    return "request", msg.request_id, type(req) == "table" and req.subtype or nil, req
  elseif t == "control_cancel_request" then
    return "cancel", msg.request_id
  end
  return nil
end

--- The control protocol codec: the method is the request's `subtype`, the
-- params are the rest of the request object (and the handlers get the whole
-- request), error answers become errors of kind `control` with the answer in
-- `response`. It has no notifications.
M.control = {
  noun = "control request",
  error_kind = "control",
  new_id = function(n) return string.format("req_%d_%08x", n, math.random(0, 0x7fffffff)) end,
  seq = function(id) return type(id) == "string" and tonumber(id:match("^req_(%d+)_")) or nil end,
  request = function(id, method, params)
    local request = { subtype = method }
    if params then
      for k, v in pairs(params) do
        if k ~= "subtype" then request[k] = v end
      end
    end
    return { type = "control_request", request_id = id, request = request }
  end,
  result = function(id, value)
    return { type = "control_response",
      response = { subtype = "success", request_id = id, response = value } }
  end,
  error = function(id, _, message)
    return { type = "control_response",
      response = { subtype = "error", request_id = id, error = message } }
  end,
  cancel = function(id) return { type = "control_cancel_request", request_id = id } end,
  unknown_method = function(method)
    return "Unsupported control request subtype: " .. tostring(method)
  end,
  decode = control_decode,
}

---------------------------------------------------------------------------
-- The peer

-- The set of a peer's requests waiting for their answer: in C for integer ids (JSON-RPC's:
-- core.pending, which a transport's reader can hand answers to), else claude.pending.
local function new_pending(codec)
  if codec.seq then return pending.new(codec.seq) end
  return core.pending()
end

local Peer = {}
Peer.__index = Peer
Peer.__name = "claude.rpc.Peer"

function Peer:__tostring()
  local n = self.pending:waiting()
  return string.format("claude.rpc.Peer (%s, %s, %d pending%s)", self.codec.noun or "?",
    self.name, n,
    self.error and (", " .. self.error.kind) or "")
end

local CODEC_FUNCTIONS = { "new_id", "request", "result", "error", "decode" }

--- Makes a peer.
-- @tparam table opts
--   `codec` (`rpc.jsonrpc`, `rpc.control` or your own),
--   `send` (`send(message)` -> true | nil, err: writes one message),
--   `send_request` (optional, `send_request(id, method, params)` -> true | nil, err: writes
--   the request the codec's `request` makes, without the table: a transport that writes
--   the envelope around the params itself),
--   `handlers` (method -> `fn(params, ctx)` returning the result or raising),
--   `on_notification` (`fn(method, params)`), `on_cancel` (`fn(id, method,
--   err)` when an outbound request is abandoned; default: send
--   `codec.cancel(id, reason)`), `timeout` (seconds for requests, default 60;
--   false: none), `context` (fields copied into every handler's ctx),
--   `name` (for messages)
-- @return the peer
function M.new(opts)
  if type(opts) ~= "table" then
    error("bad argument #1 to 'new' (table expected, got " .. type(opts) .. ")", 2)
  end
  local codec = opts.codec
  if type(codec) ~= "table" then
    error("bad field 'codec' to 'new' (table expected, got " .. type(codec) .. ")", 2)
  end
  for _, f in ipairs(CODEC_FUNCTIONS) do
    if type(codec[f]) ~= "function" then
      error("bad field 'codec' to 'new' (function '" .. f .. "' missing)", 2)
    end
  end
  if type(opts.send) ~= "function" then
    error("bad field 'send' to 'new' (function expected, got " .. type(opts.send) .. ")", 2)
  end
  for _, f in ipairs { "handlers", "context" } do
    if opts[f] ~= nil and type(opts[f]) ~= "table" then
      error("bad field '" .. f .. "' to 'new' (table expected, got " .. type(opts[f]) .. ")", 2)
    end
  end
  for _, f in ipairs { "on_notification", "on_cancel", "send_request" } do
    if opts[f] ~= nil and type(opts[f]) ~= "function" then
      error("bad field '" .. f .. "' to 'new' (function expected, got "
        .. type(opts[f]) .. ")", 2)
    end
  end
  local timeout = opts.timeout
  if timeout ~= nil and timeout ~= false and (type(timeout) ~= "number" or timeout < 0) then
    error("bad field 'timeout' to 'new' (non-negative number or false expected, got "
      .. tostring(timeout) .. ")", 2)
  end
  if timeout == nil then timeout = DEFAULT_TIMEOUT end
  local waiting = new_pending(codec)
  return setmetatable({
    codec = codec,
    send = opts.send,
    send_request = opts.send_request,
    handlers = opts.handlers or {},
    on_notification = opts.on_notification,
    on_cancel = opts.on_cancel,
    context = opts.context,
    timeout = timeout or nil,
    name = opts.name or "peer",
    counter = 0,
    pending = waiting, -- outbound requests: callback(result) | (nil, err)
    pending_add = waiting.add, -- (its add, looked up once: every later set is of its kind)
    count_ids = codec.new_id == count_id, -- (JSON-RPC's ids are the counts)
    inbound = {},  -- id -> ctx of a request being handled
    error = false, -- set once the other side is gone
    closed = false,
  }, Peer)
end

--- The next outbound request id.
function Peer:next_id()
  local n = self.counter + 1
  self.counter = n
  return self.codec.new_id(n)
end

local start -- (self, method, params, callback): Peer:start without the checks

local function check_method(method, fname)
  if type(method) ~= "string" then
    error("bad argument #1 to '" .. fname .. "' (string expected, got " .. type(method) .. ")", 3)
  end
end

-- The error an outbound request ends with when the other side answers with one.
local function remote_error(self, method, fields)
  local codec = self.codec
  fields.remote_message = fields.message
  local text = fields.message
  if fields.code ~= nil then text = text .. " (" .. tostring(fields.code) .. ")" end
  return errors.new(codec.error_kind or "remote", string.format("%s '%s' failed: %s",
    codec.noun or "request", tostring(method), text), fields)
end

--- Sends a request and calls `callback(result)` or `callback(nil, err)` when
-- it is answered (or the peer fails); no timeout. The base of `request`,
-- for owners that wait in their own way.
-- @return the request id | nil, err, kind
function Peer:start(method, params, callback)
  check_method(method, "start")
  if type(callback) ~= "function" then
    error("bad argument #3 to 'start' (function expected, got " .. type(callback) .. ")", 2)
  end
  return start(self, method, params, callback)
end

start = function(self, method, params, callback, written)
  if self.error then return nil, self.error, self.error.kind end
  if self.closed then
    local err = errors.new("closed", "the connection to the " .. self.name .. " is closed")
    return nil, err, err.kind
  end
  local n = self.counter + 1 -- self:next_id(), inline
  self.counter = n
  local id, new_id = n, self.codec.new_id
  if new_id ~= count_id then id = new_id(n) end -- (JSON-RPC's ids are the counts)
  -- registered first: an in-memory transport may answer inside send
  self.pending:add(id, n, callback, method)
  local send_request = self.send_request
  local ok, err
  if written then -- (Peer:request_written's, outside a task: its way and values)
    ok, err = written.way.write(id, written.a, written.b, written.way.tail)
  elseif send_request then
    ok, err = send_request(id, method, params)
  else
    ok, err = self.send(self.codec.request(id, method, params))
  end
  if not ok then
    self.pending:take(id)
    if not errors.is(err) then err = errors.new("connection", tostring(err)) end
    return nil, err, err.kind
  end
  return id
end

-- We stopped waiting for request `id` (`err` says why): forget it, and tell
-- the other side.
local function abandon(self, id, method, err)
  self.pending:take(id)
  if self.error or self.closed then return end
  if self.on_cancel then
    self.on_cancel(id, method, err)
  elseif self.codec.cancel then
    local msg = self.codec.cancel(id, err.message)
    if msg ~= nil then self.send(msg) end
  end
end

-- A request's wait that timed out: the other side is told, and the caller gets the error.
local function timed_out(self, id, method, timeout)
  local err = errors.new("timeout", string.format("%s '%s' timed out after %g s",
    self.codec.noun or "request", tostring(method), timeout))
  abandon(self, id, method, err)
  return nil, err, "timeout"
end

-- A request waited for with async.await (outside a task, where wait_call cannot): a closure
-- per request. `written`: Peer:request_written's way and values (`way`, `a`, `b`).
local function await_request(self, method, params, timeout, written)
  local id, serr
  local r = pack(pcall(async.await, function(done)
    id, serr = start(self, method, params, done, written)
    if not id then return done(nil, serr) end
    return function() self.pending:take(id) end
  end, timeout))
  if not r[1] then -- the wait raised: the waiting task was cancelled
    local err = r[2]
    if id and errors.is(err, "cancelled") then abandon(self, id, method, err) end
    error(err, 0)
  end
  if not r[2] then return timed_out(self, id, method, timeout) end
  local result, err = r[3], r[4]
  if err then return nil, err, err.kind end
  return result
end

-- The end of a request's wait (async.wait_call) without its answer: the request is
-- forgotten, and the other side told when the waiting task was cancelled (a timeout is told
-- by timed_out, with its own message).
local function request_abort(task, err)
  local self, id = task.rpc_peer, task.rpc_id
  if errors.is(err, "cancelled") then
    local _, method = self.pending:get(id)
    abandon(self, id, method, err)
  else
    self.pending:take(id)
  end
end

--- `request(method, ...)` for an owner that writes the request itself, the way told by
-- `way`, a table made once for many requests: `way.write(id, a, b, way.tail)` writes the
-- request with id `id` (the message the codec's `request` would make, however made; the MCP
-- client writes a tools/call around its name and arguments in C) and returns true, or nil
-- and an error; `way.method` names it (for messages: timeouts, cancellations). (No varargs
-- on the call's path.)
-- `way.usual = "usual"` (a modern tools/call's, claude.mcp's): an answer that is the usual
-- result with `"resultType":"complete"`, read by core.pending's reader, comes as the result
-- without that member (the caller's check made there); any other result comes with
-- `rpc.UNCHECKED` after it (an error answer as without `usual`), so that the usual one
-- costs its caller one test. `usual = "object"` (a legacy tools/call's): a result the reader
-- saw is an object comes alone, any other with `rpc.UNCHECKED`.
-- @tparam table way `method`, `write`, `tail`, `usual`
-- @param timeout as for `request`
-- @return the result[, rpc.UNCHECKED] | nil, err, kind
function Peer:request_written(way, timeout, a, b)
  local method, usual = way.method, way.usual
  local task = tasks[running()]
  if not task then -- outside a task: `request`'s way, with a closure
    if timeout == nil then timeout = self.timeout elseif timeout == false then timeout = nil end
    local result, err, kind = await_request(self, method, nil, timeout, { way = way, a = a,
      b = b })
    if usual and result ~= nil then return result, UNCHECKED end
    return result, err, kind
  end
  if self.error then return nil, self.error, self.error.kind end
  if self.closed then
    local err = errors.new("closed", "the connection to the " .. self.name .. " is closed")
    return nil, err, err.kind
  end
  if timeout == nil then timeout = self.timeout elseif timeout == false then timeout = nil end
  local n = self.counter + 1
  self.counter = n
  local id = n
  if not self.count_ids then id = self.codec.new_id(n) end
  -- a task with no budget is resumed in its coroutine (the running one) by the reader of
  -- the answer itself, and the deadline is the set's (core.pending: true; claude.pending
  -- keeps neither)
  -- (how it waits, one value: `usual` says how the reader marks its usual answer)
  local timed = self.pending_add(self.pending, id, n, task, method,
    not task.budget and (usual or true), timeout)
  local ok, err = way.write(id, a, b, way.tail)
  if not ok then
    self.pending:take(id)
    task.early = false -- (what a failure told the task before its wait is not its answer)
    if not errors.is(err) then err = errors.new("connection", tostring(err)) end
    return nil, err, err.kind
  end
  task.rpc_peer, task.rpc_id = self, id
  -- (checked: core.pending's reader read the `usual` answer: claude_pending_wake)
  local done, result, rerr, checked = wait_call(task, not timed and timeout or nil,
    request_abort)
  -- not done: timed out (a cancellation raised, after request_abort told the other side)
  if not done then return timed_out(self, id, method, timeout) end
  if rerr then return nil, rerr, rerr.kind end
  if usual and not checked then return result, UNCHECKED end
  return result
end

--- Sends a request and waits for its answer, at most `timeout` seconds
-- (default: the peer's; false: no limit). Cancelling the waiting task
-- abandons the request (the other side is told) and raises as every wait
-- does.
-- @return the result | nil, err, kind (`timeout`, `closed`, `connection`,
--   the codec's error kind for an error answer, or the peer's failure)
function Peer:request(method, params, timeout)
  if type(method) ~= "string" then check_method(method, "request") end
  if timeout ~= nil and timeout ~= false and (type(timeout) ~= "number" or timeout < 0) then
    error("bad argument #3 to 'request' (non-negative number or false expected, got "
      .. tostring(timeout) .. ")", 2)
  end
  if self.error then return nil, self.error, self.error.kind end
  if timeout == nil then timeout = self.timeout elseif timeout == false then timeout = nil end
  -- in a task: the task itself is the request's callback, and waits with no closure
  local task = tasks[running()]
  if task then
    local id, serr = start(self, method, params, task)
    if not id then
      task.early = false -- (what a failure told the task before its wait is not its answer)
      return nil, serr, serr.kind
    end
    task.rpc_peer, task.rpc_id = self, id
    local ok, result, err = wait_call(task, timeout, request_abort)
    -- not ok: timed out (a cancellation raised, after request_abort told the other side)
    if not ok then return timed_out(self, id, method, timeout) end
    if err then return nil, err, err.kind end
    return result
  end
  return await_request(self, method, params, timeout)
end

--- Cancels outbound request `id` (from `start`, or the id a `request` sent):
-- its wait ends with a `cancelled` error (returned, not raised: the waiting
-- task goes on) and the other side is told, as for a timeout.
-- @return true, or false when no such request is pending
function Peer:cancel(id, reason)
  local callback, method = self.pending:get(id)
  if not callback then return false end
  local err = errors.new("cancelled", reason or string.format("%s '%s' cancelled",
    self.codec.noun or "request", tostring(method)))
  abandon(self, id, method, err)
  callback(nil, err)
  return true
end

--- Ends the wait for outbound request `id` with `err` (a claude error), telling the other
-- side nothing: its answer came but cannot be read.
-- @return true, or false when no such request is pending
function Peer:fail_request(id, err)
  local callback = self.pending:take(id)
  if not callback then return false end
  callback(nil, err)
  return true
end

--- Sends a notification; with a codec that has none, a request whose answer
-- nobody waits for.
-- @return true | nil, err, kind
function Peer:notify(method, params)
  check_method(method, "notify")
  if self.error then return nil, self.error, self.error.kind end
  if self.closed then
    local err = errors.new("closed", "the connection to the " .. self.name .. " is closed")
    return nil, err, err.kind
  end
  local codec = self.codec
  local msg
  if codec.notification then
    msg = codec.notification(method, params)
  else
    msg = codec.request(self:next_id(), method, params)
  end
  local ok, err = self.send(msg)
  if not ok then
    if not errors.is(err) then err = errors.new("connection", tostring(err)) end
    return nil, err, err.kind
  end
  return true
end

--- Answers inbound request `id` with `result` (for owners that answer
-- outside a handler).
function Peer:respond(id, result)
  if result == nil then result = json.object() end
  return self.send(self.codec.result(id, result))
end

--- Answers inbound request `id` with an error.
function Peer:respond_error(id, code, message, data)
  return self.send(self.codec.error(id, code, message, data))
end

-- The code and text of the answer for a handler's error: a claude error keeps
-- its message (and `code`, `data` when it has them); a string is reported on
-- stderr with its traceback and answered with its first line, minus the
-- position.
local function error_answer(method, err)
  if errors.is(err) then
    return math.type(err.code) == "integer" and err.code or INTERNAL_ERROR, err.message, err.data
  end
  if type(err) == "string" then
    io.stderr:write("claude: error in a '", tostring(method), "' handler: ", err, "\n")
    return INTERNAL_ERROR, (err:match("^[^\n]*"):gsub("^[^:]*:%d+: ", ""))
  end
  return INTERNAL_ERROR, tostring(err)
end

-- The body of an inbound request's task.
local function run_request(self, id, method, params, handler, ctx)
  local ok, result = xpcall(handler, async.traceback, params, ctx)
  if self.inbound[id] ~= ctx then return end -- cancelled, or the peer closed: no answer
  self.inbound[id] = nil
  local sent, werr
  if ok then
    sent, werr = pcall(self.respond, self, id, result)
  else
    sent, werr = pcall(self.respond_error, self, id, error_answer(method, result))
  end
  if not sent then
    -- an answer that cannot be encoded (NaN, a function, a mixed table) raised inside the
    -- write and nothing went out: the other side would wait forever. Answer with the cause
    -- instead, and report it.
    local err = errors.new("encode", string.format("the answer to %s '%s' cannot be sent: %s",
      self.codec.noun or "request", tostring(method), errors.message(werr)))
    async.report(err)
    self:respond_error(id, INTERNAL_ERROR, err.message)
  end
end

local function handle_request(self, id, method, params)
  local handler = self.handlers[method]
  if not handler then
    local codec = self.codec
    local text = codec.unknown_method and codec.unknown_method(method)
      or ("Method not found: " .. tostring(method))
    return self:respond_error(id, METHOD_NOT_FOUND, text)
  end
  local ctx = { id = id, request_id = id, method = method, peer = self, cancelled = false,
    task = false }
  local extra = self.context
  if extra then
    for k, v in pairs(extra) do ctx[k] = v end
  end
  self.inbound[id] = ctx
  local task = async.spawn(run_request, self, id, method, params, handler, ctx)
  if self.inbound[id] == ctx then ctx.task = task end
end

local function cancel_inbound(self, id, reason)
  local ctx = self.inbound[id]
  if not ctx then return end
  self.inbound[id] = nil
  ctx.cancelled = true
  if ctx.task then ctx.task:cancel(reason) end
end

--- Handles one decoded message from the other side: answers end their
-- waits (answers to ids nobody waits for are dropped), requests start their
-- handler's task, cancellations cancel it, notifications go to
-- `on_notification`.
-- @return true | false, why (the message is not of this protocol, or is
--   invalid; an invalid request with an id is answered with an error)
function Peer:receive(msg)
  local what, a, b, c = self.codec.decode(msg)
  if what == "result" or what == "error" then
    local callback, method = self.pending:take(a)
    if callback then
      if what == "result" then
        callback(b)
      else
        callback(nil, remote_error(self, method, b))
      end
    end
  elseif what == "request" then
    if self.closed then return true end
    handle_request(self, a, b, c)
  elseif what == "notification" then
    local fn = self.on_notification
    if fn then fn(a, b) end
  elseif what == "cancel" then
    cancel_inbound(self, a, b or ("cancelled by the " .. self.name))
  elseif what == "invalid" then
    if a ~= nil then self:respond_error(a, INVALID_REQUEST, b) end
    return false, b
  else
    return false, "not a message of this protocol"
  end
  return true
end

--- The other side is gone: every pending wait ends with `err` (a claude
-- error; give it the exit code and stderr tail when the transport knows
-- them), and so does every later request. Idempotent: the first error stays.
function Peer:fail(err)
  if self.error then return end
  if not errors.is(err) then err = errors.new("connection", tostring(err)) end
  self.error = err
  local waiting = self.pending
  self.pending = new_pending(self.codec)
  for _, id in ipairs(waiting:ids()) do
    local callback = waiting:take(id)
    callback(nil, err)
  end
  if waiting.close then waiting:close() end -- (core.pending's timer of deadlines)
end

--- Closes the peer: the handlers still running are cancelled (with
-- `reason`) and answer nothing; pending waits end with a `closed` error
-- unless the peer had already failed. Idempotent.
function Peer:close(reason)
  if self.closed then return end
  self.closed = true
  reason = reason or ("the connection to the " .. self.name .. " is closed")
  local inbound = self.inbound
  self.inbound = {}
  for _, ctx in pairs(inbound) do
    ctx.cancelled = true
    if ctx.task then ctx.task:cancel(reason) end
  end
  self:fail(errors.new("closed", reason))
end

--- The number of outbound requests waiting for an answer.
function Peer:pending_count()
  return self.pending:waiting()
end

M.Peer = Peer
M.DEFAULT_TIMEOUT = DEFAULT_TIMEOUT
return M
