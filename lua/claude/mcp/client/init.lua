--- An MCP client: one connection to one MCP server, over stdio (a child
-- process) or HTTP (Streamable HTTP, or the HTTP+SSE transport of
-- 2024-11-05), with a lifecycle that reconnects when the server goes away.
--
--     local c = assert(claude.mcp.connect{ command = "npx", args = { "-y", "some-server" } })
--     for _, t in ipairs(assert(c:list_tools())) do print(t.name) end
--     local r = assert(c:call_tool("add", { a = 1, b = 2 }))
--
-- A connection speaks the protocol era the server does (claude.mcp.era): the legacy one
-- (`initialize`) or the modern one (`server/discover`, then every request with its
-- envelope): claude.mcp.client.negotiate decides, claude.mcp.client.modern carries the
-- modern requests; the methods are the same in both.
--
-- Every method waits (inside a task other tasks run meanwhile; outside one
-- it runs the loop) and has a timeout. Failures are `nil, err, kind`:
-- `timeout`, `connection` (the server went away, or could not be reached:
-- a call whose outcome is unknown is never replayed), `protocol` (the server
-- broke the protocol), `remote` (the server answered with a JSON-RPC error:
-- `err.code`, `err.data`), `unsupported` (the server needs input the client
-- cannot give), `auth` (the server wants authorization and it could not be had:
-- see claude.oauth), `overflow`, `closed`. A tool's `isError` result is a result,
-- not a failure. See docs/mcp-client.md.
--
-- The client's parts are files of their own in claude.mcp.client.*: its class and argument
-- checks (class), a connection and what comes in on it (connection), the lifecycle (connect
-- in either era, reconnect: lifecycle), the request path (request), the lists (lists), the
-- call of a tool (call); the transports, the options, the inbound requests, authorization,
-- the era's probe, the modern requests, their input, headers, listen, the cache and tasks.
-- @module claude.mcp.client
local core = require "claude.core"
local async = require "claude.async"
local json = require "claude.json"
local errors = require "claude.errors"
local era = require "claude.mcp.era"
local options = require "claude.mcp.client.options"
local inbound = require "claude.mcp.client.inbound"
local modern = require "claude.mcp.client.modern"
local cache_mod = require "claude.mcp.client.cache"
local listen = require "claude.mcp.client.listen"
local output = require "claude.mcp.client.output"
local class = require "claude.mcp.client.class"
local connection = require "claude.mcp.client.connection"
local request_mod = require "claude.mcp.client.request"
local lifecycle = require "claude.mcp.client.lifecycle"
local lists = require "claude.mcp.client.lists"
local call = require "claude.mcp.client.call"

local M = {}

local misuse, public = errors.misuse, errors.public
local jobject = json.object
local Client = class.Client
local set_state, report = class.set_state, class.report
local check_self, check_opts, string_arg = class.check_self, class.check_opts, class.string_arg
local timeout_of, meta_of = class.timeout_of, class.meta_of
local request, peer_of = request_mod.request, request_mod.peer_of
local handlers_for, capabilities_of = inbound.handlers, inbound.capabilities

M.PROTOCOL_VERSIONS = core.MCP_PROTOCOL_VERSIONS
M.PROTOCOL_VERSION = core.MCP_PROTOCOL_VERSION

---------------------------------------------------------------------------------------------
-- Connecting
---------------------------------------------------------------------------------------------

local function connect(opts)
  local o, kind = options.check(opts, "connect")
  local self = setmetatable({
    opts = o, name = o.name, transport_kind = kind, state = "disconnected",
    progress = {}, reconnects = 0, closed = false, error = false,
    ready = async.event(), conn = nil, next_token = 0, probes = 0,
    mode = options.mode(o), era = nil, protocol_version = nil, log_level = o.log_level,
    offered = capabilities_of(o),
    client_info = o.client_info or { name = "claudelua", version = core.version },
    cache = cache_mod.new(o.cache), tool_headers = nil, subscriptions = {},
    extensions = o.tasks and { [era.TASKS] = jobject() } or nil,
    -- read by every call_tool: present (a field that is absent costs a miss each time)
    provider = false, output_schemas = false, _class = Client,
    -- the modern envelope, and the way of the usual call, made once (forgotten by
    -- modern.changed at each change of protocol_version or log_level, and each handshake)
    envelope_now = false, usual_way = false,
  }, Client)
  self.handlers = handlers_for(self)
  self.send_one = request_mod.send_one(self)
  self.listening = listen.new(self, function(e) report(self, e) end)
  if o.auth then
    self.provider = require("claude.oauth.provider").new(o.auth, o.url, { name = o.name,
      report = function(e) report(self, e) end,
      protocol_version = function()
        return self.protocol_version or self.mode.version or M.PROTOCOL_VERSION
      end })
  end
  set_state(self, "connecting")
  local ok, err, ekind = lifecycle.attempt(self)
  if not ok and kind == "http" and o.transport == nil and ekind ~= "auth" and err.status
    and err.status >= 400 and err.status < 500 and err.status ~= 401 then
    -- an older server: the HTTP+SSE transport of 2024-11-05
    self.transport_kind = "sse"
    local serr
    ok, serr = lifecycle.attempt(self)
    if not ok then
      -- neither: the first answer says more (a wrong URL, a server that is not MCP)
      self.transport_kind = "http"
      err.message = err.message .. " (the HTTP+SSE transport of 2024-11-05 failed too: "
        .. errors.message(serr) .. ")"
    end
  end
  if not ok then
    set_state(self, "disconnected")
    self.error = err
    return nil, err, ekind
  end
  set_state(self, "connected")
  self.ready:set()
  lifecycle.opened(self)
  return self
end

--- Connects to an MCP server in the era it speaks.
-- @tparam table opts stdio: `command`, `args`, `env`, `cwd`, `stderr`; HTTP:
--   `url`, `headers`, `transport` (`"streamable_http"` or `"sse"`; default:
--   Streamable HTTP, falling back to HTTP+SSE for a server that refuses
--   it); both: `name`, `timeout` (seconds per call, default 60),
--   `connect_timeout` (30), `max_retries` (3), `retry_delay` (0.5),
--   `max_retry_delay` (30), `max_message_size` (bytes), `auth` (OAuth for
--   an HTTP server, see claude.oauth), `protocol` (`"auto"`, `"legacy"` or a
--   revision), `protocol_version`, `probe_timeout`, `client_info`, `log_level`,
--   `cache`, `tasks`, `max_input_rounds`, `max_pages` (1000), `max_list_bytes` (32 MiB),
--   `max_schema_bytes` (4 MiB), `on_notification`, `on_sampling`,
--   `on_elicitation`, `roots`, `on_roots`, `on_state`, `on_error`, `forward_requests`
--   (offer sampling, elicitation and roots, for calls with `on_request`). See
--   docs/mcp-client.md.
-- @return the client | nil, err, kind
-- @function connect
M.connect = public(connect)

---------------------------------------------------------------------------------------------
-- Calls
---------------------------------------------------------------------------------------------

-- The lists: list_tools, list_resources, list_resource_templates, list_prompts (documented
-- in claude.mcp.client.lists)
for _, method in ipairs { "list_tools", "list_resources", "list_resource_templates",
  "list_prompts" } do
  Client[method] = lists[method]
end

--- Calls a tool. A result with `isError` is a result (the tool failed, the
-- call did not). When `list_tools` has listed the tool with an `outputSchema`, a result
-- whose `structuredContent` is missing or does not match it is `nil, err, "validation"`.
-- @tparam string name
-- @tparam[opt] table args
-- @tparam[opt] table opts `{ timeout = s, on_progress = fn(progress, total,
--   message), meta = { ... }, on_request = fn(method, params) }` (`on_request`: answers
--   the server's sampling, elicitation and roots requests while the call runs, with the
--   result or nil, err; see `forward_requests`)
-- @return the CallToolResult | nil, err, kind
-- @function call_tool
Client.call_tool = call.call_tool

-- Output validation: claude.mcp.client.output (bounded: a hostile server's schema is
-- compiled and checked within the time the call has left).
M.output_schemas = output.schemas

--- A call's results, or a `validation` failure when its structured result breaks the tool's
-- output schema (`timeout` when checking it would outlast `deadline`, a `core.now()` or nil).
M.check_output = output.check

local READ_OPTIONS = { timeout = true, cache = true, meta = true, traceparent = true,
  tracestate = true }

--- Reads a resource (in the modern era from the client's cache while the server's
-- caching hint says the last read is valid; `{ cache = false }` reads anew).
-- @return the ReadResourceResult (`contents`) | nil, err, kind
-- @function read_resource
Client.read_resource = public(function(self, uri, opts)
  check_self(self, "read_resource")
  string_arg(uri, 1, "read_resource")
  check_opts(opts, 2, "read_resource")
  if opts then errors.check_fields(opts, READ_OPTIONS, "read_resource") end
  local meta = meta_of(opts, "read_resource")
  local timeout = timeout_of(self, opts, "read_resource")
  if meta then return request(self, "resources/read", { uri = uri, _meta = meta }, timeout) end
  return lists.cached(self, "resources/read", uri, { uri = uri }, timeout, opts and opts.cache)
end)

-- The modern era's subscriptions: the set changes, and the listen with it.
local function resubscribe(self, uri, on)
  local before = self.subscriptions[uri]
  self.subscriptions[uri] = on or nil
  local ok, err, kind = self.listening:open()
  if not ok then
    self.subscriptions[uri] = before
    return nil, err, kind
  end
  return true
end

local function simple(method, fname, field)
  return public(function(self, value, opts)
    check_self(self, fname)
    string_arg(value, 1, fname)
    check_opts(opts, 2, fname)
    local timeout = timeout_of(self, opts, fname)
    peer_of(self, timeout or nil) -- the era is known once connected
    if self.era == "modern" then
      if method == "logging/setLevel" then
        if not options.LOG_LEVELS[value] then
          misuse("bad argument #1 to '%s' (a log level expected, got '%s')", fname, value)
        end
        self.log_level = value -- sent with every request from now on
        modern.changed(self)
        return true
      end
      return resubscribe(self, value, method == "resources/subscribe")
    end
    local r, err, kind = request(self, method, { [field] = value }, timeout)
    if r == nil then return nil, err, kind end
    if method == "logging/setLevel" then
      self.log_level = value
      modern.changed(self)
    end
    return true
  end)
end

--- Subscribes to a resource's updates (`notifications/resources/updated`; in the modern era
-- through the client's `subscriptions/listen`).
-- @function subscribe
Client.subscribe = simple("resources/subscribe", "subscribe", "uri")
--- Ends a subscription.
-- @function unsubscribe
Client.unsubscribe = simple("resources/unsubscribe", "unsubscribe", "uri")
--- Sets the server's log level (`notifications/message` below it stop; in the modern era
-- every later request asks for it in its envelope).
-- @function set_log_level
Client.set_log_level = simple("logging/setLevel", "set_log_level", "level")

local PROMPT_OPTIONS = { timeout = true, meta = true, traceparent = true, tracestate = true }

--- Gets a prompt.
-- @tparam string name
-- @tparam[opt] table args string values
-- @return the GetPromptResult | nil, err, kind
-- @function get_prompt
Client.get_prompt = public(function(self, name, args, opts)
  check_self(self, "get_prompt")
  string_arg(name, 1, "get_prompt")
  check_opts(args, 2, "get_prompt")
  check_opts(opts, 3, "get_prompt")
  if opts then errors.check_fields(opts, PROMPT_OPTIONS, "get_prompt") end
  return request(self, "prompts/get", { name = name, arguments = args,
    _meta = meta_of(opts, "get_prompt") }, timeout_of(self, opts, "get_prompt"),
    { name = name })
end)

local COMPLETE_OPTIONS = { timeout = true, context = true, meta = true, traceparent = true,
  tracestate = true }

--- Asks for completions of a prompt's or a resource template's argument.
-- @tparam table ref `{ type = "ref/prompt", name = ... }` or
--   `{ type = "ref/resource", uri = ... }`
-- @tparam table argument `{ name = ..., value = ... }`
-- @tparam[opt] table opts `timeout`, `context` (`{ arguments = {...} }`: the arguments
--   already given), `meta`, `traceparent`, `tracestate`
-- @return the completion (`values`, `total`, `hasMore`) | nil, err, kind
-- @function complete
Client.complete = public(function(self, ref, argument, opts)
  check_self(self, "complete")
  if type(ref) ~= "table" then
    misuse("bad argument #1 to 'complete' (table expected, got %s)", errors.typename(ref))
  end
  if type(argument) ~= "table" then
    misuse("bad argument #2 to 'complete' (table expected, got %s)", errors.typename(argument))
  end
  check_opts(opts, 3, "complete")
  if opts then errors.check_fields(opts, COMPLETE_OPTIONS, "complete") end
  local context = opts and opts.context
  if context ~= nil then errors.check_field(context, "context", "complete", "table") end
  local r, err, kind = request(self, "completion/complete", { ref = ref, argument = argument,
    context = context, _meta = meta_of(opts, "complete") }, timeout_of(self, opts, "complete"))
  if r == nil then return nil, err, kind end
  return type(r) == "table" and r.completion or r
end)

--- Pings the server (in the modern era, which has no `ping`, `server/discover` asks it
-- whether it is there).
-- @return true | nil, err, kind
-- @function ping
Client.ping = public(function(self, opts)
  check_self(self, "ping")
  check_opts(opts, 1, "ping")
  local timeout = timeout_of(self, opts, "ping")
  peer_of(self, timeout or nil)
  local r, err, kind = request(self, self.era == "modern" and "server/discover" or "ping", nil,
    timeout)
  if r == nil then return nil, err, kind end
  return true
end)

--- Sends a notification to the server.
-- @return true | nil, err, kind
function Client:notify(method, params)
  local peer, err, kind = peer_of(self, self.opts.timeout)
  if not peer then return nil, err, kind end
  return peer:notify(method, params)
end

--- Tells the server the roots changed (`notifications/roots/list_changed`; in the modern
-- era servers ask for the roots with each request that needs them, so nothing is sent).
function Client:roots_changed()
  local peer, err, kind = peer_of(self, self.opts.timeout)
  if not peer then return nil, err, kind end
  if self.era == "modern" then return true end
  return peer:notify("notifications/roots/list_changed")
end

--- Closes the connection: calls in flight end with `closed`, a stdio server
-- is stopped (stdin closed, then SIGTERM, SIGKILL), an HTTP session is
-- deleted. Idempotent; also `<close>`.
-- @return true
function Client:close()
  if self.closed then return true end
  self.closed = true
  local conn = self.conn
  self.conn = nil
  set_state(self, "disconnected")
  self.ready:set()
  -- a reconnect under way stops at once (it is not left sleeping)
  if self.reconnecting then self.reconnecting:cancel("the MCP client was closed") end
  self.listening:close()
  if conn then connection.close(conn, "the MCP client '" .. self.name .. "' was closed") end
  return true
end
Client.__close = Client.close

--- A `claude.server` whose tools forward to this client (see
-- claude.mcp.bridge).
-- @function as_server
Client.as_server = public(function(self, opts)
  check_self(self, "as_server")
  return require("claude.mcp.bridge").server(self, opts)
end)

--- Is `v` a client made by `connect`?
function M.is_client(v)
  return getmetatable(v) == Client
end

-- traced: a CLIENT span around each call, read and prompt, its context in the request's
-- `_meta` (claude.trace.mcp), put in front of the methods only while tracing is on
require("claude.trace").instrument(function()
  require("claude.trace.mcp").instrument_client(Client)
end)

M.Client = Client
return M
