--- The MCP client's call of a tool (`Client:call_tool`): written once (call_tool), with the
-- usual call's first round written in front of it, which hands anything but the usual
-- answer back to it. The result's output schema is checked (claude.mcp.client.output), a
-- task the server makes is waited for or handed out (claude.mcp.client.tasks), a modern
-- call's rounds followed (claude.mcp.client.modern).
-- @module claude.mcp.client.call
local core = require "claude.core"
local rpc = require "claude.rpc"
local json = require "claude.json"
local errors = require "claude.errors"
local era = require "claude.mcp.era"
local class = require "claude.mcp.client.class"
local request_mod = require "claude.mcp.client.request"
local modern = require "claude.mcp.client.modern"
local lists = require "claude.mcp.client.lists"
local tasks = require "claude.mcp.client.tasks"
local check_output = require("claude.mcp.client.output").check

local M = {}

local Client = class.Client
local request_written = rpc.Peer.request_written -- (call_tool's: no look-up through Peer)
local UNCHECKED = rpc.UNCHECKED
local usual_call = core.usual_call
local now = core.now
local misuse, public = errors.misuse, errors.public
local pack = table.pack
local type = type -- (call_tool's checks: an upvalue, not a look-up in the globals)
local jobject = json.object
local check_self, check_opts, timeout_of = class.check_self, class.check_opts, class.timeout_of
local meta_of, report = class.meta_of, class.report
local request, task_request = request_mod.request, request_mod.task_request

local CALL_OPTIONS = { timeout = true, on_progress = true, meta = true, task = true,
  on_status = true, traceparent = true, tracestate = true, on_request = true }

-- A tools/call answered with a result that is not an object.
local function not_object(self)
  return errors.fail("protocol", "the MCP server '" .. self.name .. "' answered tools/call "
    .. "with a result that is not an object")
end

-- A call of a tool: every way of calling one, the usual one's first round aside (below).
-- `first`: the answer of the first round when Client.call_tool wrote that round itself
-- (`{ result, err, kind, modern }`: request_written's values, and whether the round carried
-- the modern envelope); the call goes on from it.
local function call_tool(self, name, args, opts, first)
  check_self(self, "call_tool")
  if type(name) ~= "string" then
    misuse("bad argument #1 to 'call_tool' (string expected, got %s)", errors.typename(name))
  end
  if args ~= nil and type(args) ~= "table" then
    misuse("bad argument #2 to 'call_tool' (table expected, got %s)", errors.typename(args))
  end
  check_opts(opts, 3, "call_tool")
  if opts then errors.check_fields(opts, CALL_OPTIONS, "call_tool") end
  local timeout = timeout_of(self, opts, "call_tool")
  local deadline = timeout and now() + timeout -- (checking the output counts too)
  local params = { name = name, arguments = args or jobject() }
  local on_progress = opts and opts.on_progress
  if on_progress ~= nil and type(on_progress) ~= "function" then
    errors.bad_field("on_progress", "call_tool", "function expected, got %s",
      errors.typename(on_progress))
  end
  local want_task = opts and opts.task
  if want_task ~= nil and type(want_task) ~= "boolean" and type(want_task) ~= "table" then
    errors.bad_field("task", "call_tool", "true or { ttl = seconds } expected, got %s",
      errors.typename(want_task))
  end
  local on_status = opts and opts.on_status
  if on_status ~= nil and type(on_status) ~= "function" then
    errors.bad_field("on_status", "call_tool", "function expected, got %s",
      errors.typename(on_status))
  end
  -- the server's requests while the call runs go to its caller (claude.mcp.client.inbound)
  local on_request = opts and opts.on_request
  if on_request ~= nil and type(on_request) ~= "function" then
    errors.bad_field("on_request", "call_tool", "function expected, got %s",
      errors.typename(on_request))
  end
  local meta = meta_of(opts, "call_tool")
  local token
  if on_progress then
    token = self.next_token + 1
    self.next_token = token
    meta = meta or {}
    meta.progressToken = token
    self.progress[token] = on_progress
  end
  params._meta = meta
  local ropts = { name = name, owned = true, on_request = on_request }
  local forwarding = on_request and {}
  if forwarding then
    self.forwarding = self.forwarding or {}
    self.forwarding[forwarding] = on_request
  end
  if want_task and self.era == "modern" and not self.opts.tasks then
    ropts.extensions = { [era.TASKS] = jobject() }
  elseif want_task and self.era == "legacy" then
    -- 2025-11-25: the task is asked for in the call (the server may answer at once)
    local ttl = type(want_task) == "table" and tonumber(want_task.ttl)
    params.task = ttl and { ttl = math.floor(ttl * 1000) } or jobject()
  end
  local r
  if not first then
    r = pack(pcall(request, self, "tools/call", params, timeout, ropts))
  elseif first.modern then -- its rounds, from the first one's answer on
    ropts.first = first
    r = pack(pcall(modern.request, self, self.send_one, "tools/call", params, ropts, timeout))
    ropts.first = nil
  else -- (UNCHECKED: a result the reader did not check; it is, below)
    local err = first.err
    r = { true, first.result, err ~= UNCHECKED and err or nil, first.kind }
  end
  if r[1] and r[2] == nil and self.era == "modern" and type(r[3]) == "table"
    and r[3].code == era.ERRORS.header_mismatch
    and not (self.tool_headers and self.tool_headers[name]) then
    -- an x-mcp-header tool the client has not listed yet: its Mcp-Param-* headers were
    -- missing; listed now, the call goes once more
    local listed = lists.all(self, "tools/list", "tools", { cache = false }, "call_tool")
    if listed and self.tool_headers and self.tool_headers[name] then
      r = pack(pcall(request, self, "tools/call", params, timeout, ropts))
    end
  end
  if token then self.progress[token] = nil end
  if forwarding then self.forwarding[forwarding] = nil end
  if not r[1] then error(r[2], 0) end
  local result, how = r[2], r[3]
  if result == nil then return nil, r[3], r[4] end
  if type(result) ~= "table" then return not_object(self) end
  local info = how == "task" and result
    or (self.era == "legacy" and result.task ~= nil and result.content == nil and result.task)
  if info then
    local t, terr, tkind = tasks.new(self, task_request(self), info, { name = name,
      timeout = timeout, on_status = on_status, report = function(e) report(self, e) end,
      on_request = on_request })
    if not t then return nil, terr, tkind end
    if want_task then return t end
    -- a task the server chose to make: the call waits for its end
    return check_output(self, name, deadline, t:wait { timeout = timeout or nil })
  end
  if want_task then return tasks.done(self, result, { name = name }) end
  return check_output(self, name, deadline, result)
end

local public_call_tool = public(call_tool)

-- The way the usual call's first round is written (Peer:request_written's `way`): by the
-- transport, around the name and arguments (write_call), ended in the modern era by the
-- envelope's JSON (modern.usual_tail), its answer checked by the reader as `usual` says.
-- Made once for a connection in its era and envelope (modern.changed, which every
-- handshake calls, forgets it: false); nil where there is none (a transport that does not
-- write calls, OAuth).
local function usual_way(self)
  local write = not self.provider and self.conn.transport.write_call
  local way = nil
  if write and self.era == "modern" then
    way = { method = "tools/call", write = write, tail = modern.usual_tail(self), usual = "usual",
      modern = true }
  elseif write then
    way = { method = "tools/call", write = write, tail = nil, usual = "object", modern = false }
  end
  self.usual_way = way
  return way
end

-- The metatable of options that carry only a W3C trace context (`traceparent`,
-- `tracestate`: a traced call's, claude.trace.mcp): the usual call stays usual, its `_meta`
-- written with that context.
local TRACE_CONTEXT = require("claude.trace")._CONTEXT

-- The usual way of writing a call whose `_meta` also holds the trace context of `opts`:
-- the envelope's `_meta` (modern) or none (legacy) with `traceparent` and `tracestate` first.
local function traced_way(way, opts)
  local ts = opts.tracestate
  local head = ',"_meta":{"traceparent":' .. json.encode(opts.traceparent)
    .. (type(ts) == "string" and ',"tracestate":' .. json.encode(ts) or "")
  local rest = way.tail and way.tail:sub(#',"_meta":{' + 1) or "}}}\n"
  return { method = way.method, write = way.write, usual = way.usual, modern = way.modern,
    tail = rest:sub(1, 1) == "}" and head .. rest or head .. "," .. rest }
end

--- `Client:call_tool(name, args, opts)` (claude.mcp.client). The usual call (no options, or
-- only a trace context; connected, a way of writing it: usual_way, no output schema to
-- check) has its first round written here; its usual answer (checked by the reader:
-- request_written's `usual`) is the call's. Anything else is call_tool's, which goes on from
-- that round's answer.
function M.call_tool(self, name, args, opts)
  -- (_class: a client's own field, for getmetatable's call with its __metatable look-up)
  -- (usual_call: the three types told in one C call, not three of type())
  if (opts == nil or getmetatable(opts) == TRACE_CONTEXT) and usual_call(self, name, args)
    and self._class == Client and self.state == "connected" and not self.closed then
    local way = self.usual_way
    if way == false then way = usual_way(self) end
    local schemas = self.output_schemas
    if way and not (schemas and schemas[name]) then
      if opts then way = traced_way(way, opts) end
      local result, err, kind = request_written(self.conn.peer, way, self.opts.timeout, name,
        args or jobject())
      -- (a legacy result with `task` may be a task; a modern one's tasks have a resultType)
      if err == nil and (way.modern or result.task == nil) then return result end
      return public_call_tool(self, name, args, opts, { result = result, err = err,
        kind = kind, modern = way.modern })
    end
  end
  return public_call_tool(self, name, args, opts)
end

return M
