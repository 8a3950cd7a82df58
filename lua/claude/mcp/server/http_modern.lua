--- The modern era (protocol 2026-07-28 on) over Streamable HTTP: one POST, one request, no
-- session. The request passes the specification's ladder (the envelope, the standard headers
-- `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name`, the `Mcp-Param-*` headers a tool's
-- `x-mcp-header` parameters mirror), then `claude.mcp.server.modern` serves it. The answer is
-- one JSON body when nothing else is said before it; the POST becomes an event stream as
-- soon as something is (progress, a log, the notifications of a listen). A client that
-- leaves its POST cancels its request (or ends its listen).
--
-- HTTP status: 400 for the envelope and header checks (-32602 envelope, -32020, -32022) and
-- for -32021; 404 for -32601; 200 for the rest, errors of the request included.
-- @module claude.mcp.server.http_modern
local core = require "claude.core"
local json = require "claude.json"
local era = require "claude.mcp.era"
local modern = require "claude.mcp.server.modern"
local wire = require "claude.mcp.wire"
local events = require "claude.mcp.server.events"
-- the slots of a call record: claude.mcp.call's, as constants (one instruction a read;
-- spec/unit/call_record_spec.lua holds them to the module's)
local ID <const>, TOOL <const>, AUTH <const> = 1, 2, 11

local M = {}

local encode, null = json.encode, json.null
local answer_text, error_text = wire.answer_text, wire.error_text
local type, fmt = type, string.format
local E = era.ERRORS
local LATEST = era.LATEST_MODERN

-- The HTTP status of a JSON-RPC error code, in the modern era.
local STATUS = { [-32601] = 404, [E.header_mismatch] = 400, [E.missing_capability] = 400,
  [E.unsupported_version] = 400 }

-- The requests whose `Mcp-Name` header must name their target, and the field it names.
local NAMED = { ["tools/call"] = "name", ["prompts/get"] = "name", ["resources/read"] = "uri",
  ["tasks/get"] = "taskId", ["tasks/update"] = "taskId", ["tasks/cancel"] = "taskId" }

-- made once: checked and lower-cased once, not on every answer (core.http_headers)
local JSON_HEADERS = core.http_headers { ["content-type"] = "application/json" }
local SSE_HEADERS = core.http_headers { ["content-type"] = "text/event-stream",
  ["cache-control"] = "no-cache" }

--- Answer an HTTP request with a JSON-RPC error (the id echoed when there is one).
function M.fail(res, status, id, code, message, data)
  res:respond(status, JSON_HEADERS, error_text(id, code, message, data))
end

---------------------------------------------------------------------------------------------
-- Headers
---------------------------------------------------------------------------------------------

local function trim(s)
  return (s:gsub("^[ \t]+", ""):gsub("[ \t]+$", ""))
end

-- Standard base64 with its padding, strictly (a header value `=?base64?...?=`).
local function base64_decode(s)
  if #s % 4 ~= 0 or not s:find("^[%w+/]*=?=?$") then return nil end
  return core.base64url_decode((s:gsub("=+$", ""):gsub("[+/]", { ["+"] = "-", ["/"] = "_" })))
end

--- The value a header carries: surrounding spaces and tabs dropped, `=?base64?...?=` decoded.
-- @tparam string v
-- @return the value, or nil when the base64 is not valid
function M.header_value(v)
  v = trim(v)
  local b = v:match("^=%?base64%?(.*)%?=$")
  if b then return base64_decode(b) end
  return v
end

-- The text a parameter's value is compared with (what a client puts in its header).
local function as_text(v)
  local t = type(v)
  if t == "string" then return v end
  if t == "number" then
    local i = math.tointeger(v)
    return i and tostring(i) or fmt("%.17g", v)
  end
  if t == "boolean" then return tostring(v) end
  return nil
end

-- The parameters of tool `t` its schema mirrors into headers: { {name, header}, ... }, worked
-- out once per tool.
local function mirrored(t)
  local m = t._mirrored
  if m == nil then
    m = false
    local props = type(t.input_schema) == "table" and t.input_schema.properties
    if type(props) == "table" then
      for name, p in pairs(props) do
        local h = type(p) == "table" and p["x-mcp-header"]
        if type(h) == "string" and h ~= "" then
          m = m or {}
          m[#m + 1] = { name, "mcp-param-" .. h:lower(), h }
        end
      end
    end
    t._mirrored = m
  end
  return m
end

local function mismatch(message)
  return E.header_mismatch, message
end

--- The standard headers of a modern request (`Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`)
-- against its body.
-- @tparam table msg
-- @tparam table headers (lower-case names)
-- @tparam claude.Server server
-- @return nil, or code, message
function M.check_headers(msg, headers, server)
  local method = msg.method
  local hm = headers["mcp-method"]
  if hm == nil then return mismatch("Header mismatch: the Mcp-Method header is missing") end
  if hm ~= method and trim(hm) ~= method then
    return mismatch(fmt("Header mismatch: Mcp-Method says '%s', the body '%s'", trim(hm),
      method))
  end
  local field = NAMED[method]
  if not field then return nil end
  local params = msg.params
  local want = type(params) == "table" and params[field]
  local hn = headers["mcp-name"]
  if hn == nil then return mismatch("Header mismatch: the Mcp-Name header is missing") end
  local name = hn == want and hn or M.header_value(hn)
  if name == nil then return mismatch("Header mismatch: Mcp-Name is not valid base64") end
  if name ~= want then
    return mismatch(fmt("Header mismatch: Mcp-Name says '%s', the body's %s '%s'", name, field,
      tostring(want)))
  end
  if method ~= "tools/call" then return nil end
  local t = server.tools[want]
  local m = t and mirrored(t)
  if not m then return nil end
  local args = type(params.arguments) == "table" and params.arguments or {}
  for i = 1, #m do
    local p, h, label = m[i][1], m[i][2], m[i][3]
    local v, hv = args[p], headers[h]
    if v ~= nil and v ~= null then
      if hv == nil then
        return mismatch(fmt("Header mismatch: the Mcp-Param-%s header is missing", label))
      end
      local got = M.header_value(hv)
      if got == nil then
        return mismatch(fmt("Header mismatch: Mcp-Param-%s is not valid base64", label))
      end
      if got ~= as_text(v) then
        return mismatch(fmt("Header mismatch: Mcp-Param-%s does not match the argument '%s'",
          label, p))
      end
    elseif hv ~= nil then
      return mismatch(fmt("Header mismatch: Mcp-Param-%s is given but the argument '%s' is not",
        label, p))
    end
  end
  return nil
end

---------------------------------------------------------------------------------------------
-- The exchange of one POST
---------------------------------------------------------------------------------------------

-- The out of a POST (claude.mcp.server.modern): the answer ends it (JSON, or the last event
-- of its stream); anything before the answer turns it into an event stream.
local Exchange = { own_ids = false }
Exchange.__index = Exchange

-- The request is over (answered, or its client left): it no longer counts in flight.
local function over(self)
  self.done = true
  local t = self.transport
  if t then t.calls = t.calls - 1 end
end

-- Sends one message of the request, as its JSON text `data`: `answer` says it is the
-- request's answer (`err_code`: its error's code, for the HTTP status), which ends the POST.
function Exchange:deliver(data, answer, err_code)
  if self.done then return nil end
  local res = self.res
  if answer then
    self.done = true
    local t = self.transport
    if t then t.calls = t.calls - 1 end -- no longer in flight
    if self.stream then
      res:write("event: message\ndata: " .. data .. "\n\n")
      res:finish()
    else
      res:respond(err_code and STATUS[err_code] or 200, JSON_HEADERS, data)
    end
    return true
  end
  if not self.stream then
    if res:state() ~= "new" then return nil end
    self.stream = true
    res:start(200, SSE_HEADERS)
  end
  local w = res:write("event: message\ndata: " .. data .. "\n\n")
  if w == nil then return nil end
  -- the progress and logs of a request wait while its client is behind; a listen's
  -- notifications (sent for every listen at once) never do: max_queued bounds those
  if w == false and not self.listening then events.backpressure(self, res) end
  return true
end

-- A call's text result (claude.mcp.server.modern's `out:text`, `ends` the end of its era's
-- text result): written from its text (claude.mcp.wire), no message table made.
function Exchange:text(id, text, ends)
  if self.done then return nil end
  local data, err = answer_text(id, text, true, ends)
  if data == nil then return self:send(wire.unencodable(id, err)) end
  return self:deliver(data, id == self.id)
end

function Exchange:send(msg)
  if self.done then return nil end
  local e = msg.error
  return self:deliver(encode(msg), msg.method == nil and msg.id == self.id, e and e.code)
end

-- Is transport `t` (nil: none counts) at `max_calls`, its requests in flight?
local function full(t) return t ~= nil and t.calls >= t.opts.max_calls end

-- The exchange of request `id` answered on `res`, counted in flight in transport `t` (if
-- any) until answered; `client`: whose share of the task bounds a task of it counts in.
local function open(res, id, t, client)
  if t then t.calls = t.calls + 1 end
  return setmetatable({ res = res, id = id, done = false, stream = false, transport = t,
    client = client }, Exchange)
end

-- The out of a notification: nothing goes back.
local NOWHERE = { own_ids = false, send = function() return true end }

-- A call not answered at once: when its client goes away first, the exchange is over, its
-- waits end, its listen ends and the call is cancelled.
local function watch_close(m, res, ex, ctx)
  res.on_close = function()
    if ex.done then return end
    over(ex)
    events.wake(ex)
    if ex.listening then m:unlisten(ex.listening) end
    if ctx then m:cancel(ctx, "the HTTP client disconnected") end
  end
end

--- Serve one POST of the modern era whose body `msg` is a single message (`is_modern`).
-- @param m the endpoint's `claude.mcp.server.modern`
-- @param req the HTTP request
-- @param res its response
-- @tparam table msg the decoded body
-- @tparam[opt] table auth the verified token
-- @tparam[opt] table t the transport, whose `calls` (requests in flight) this request counts
--   in, up to `t.opts.max_calls` (past it: 503); a listen does not: it is a stream, bounded
--   as a GET stream is (its connection, `max_queued`, `write_timeout`)
function M.post(m, req, res, msg, auth, t)
  local headers, id = req.headers, msg.id
  if msg.method == nil then -- an answer: there is no request of ours to answer in this era
    return res:respond(202, {})
  end
  if id == nil then -- a notification
    res:respond(202, {})
    return m:handle(msg, NOWHERE, auth)
  end
  local code, message, data = modern.check(msg, headers["mcp-protocol-version"])
  if not code then
    if era.LEGACY_ONLY[msg.method] then
      code, message = -32601, fmt("Method not found: '%s' is not in protocol %s", msg.method,
        era.MODERN)
    else
      code, message = M.check_headers(msg, headers, m:server())
    end
  end
  if code then return M.fail(res, STATUS[code] or 400, id, code, message, data) end
  if t and msg.method == "subscriptions/listen" then t = nil end
  if full(t) then
    local max = t.opts.max_calls
    return res:respond(503, { ["content-type"] = "application/json", ["retry-after"] = "1" },
      error_text(id, -32000, fmt("Service Unavailable: %d requests are in flight "
        .. "(max_calls %d); retry later", t.calls, max), { bound = "max_calls", max = max }))
  end
  -- (client: whose share of the task bounds a task of this request counts in, without OAuth)
  local ex = open(res, id, t, req.remote_address)
  local ctx = m:handle(msg, ex, auth)
  if not ex.done then watch_close(m, res, ex, ctx) end
end

--- `post` of a `tools/call` whose body the envelope reader took apart into a call record
-- (core.envelope_read, claude.mcp.call: its envelope is the one of the version we speak, as
-- its text), when it is the usual call: the version in the header too, `Mcp-Method` and
-- `Mcp-Name` spelled as the body says, a tool there that mirrors no argument into a header,
-- and room in flight; served with no message table made (`Modern:call`). False for any
-- other: `post` serves it.
-- @return true when served, else false (nothing done)
function M.post_call(m, req, res, rec, auth, t)
  local headers, name = req.headers, rec[TOOL]
  if headers["mcp-protocol-version"] ~= LATEST or headers["mcp-method"] ~= "tools/call"
      or headers["mcp-name"] ~= name then
    return false
  end
  local tl = m:server().tools[name]
  if not tl or mirrored(tl) or full(t) then return false end
  local ex = open(res, rec[ID], t, req.remote_address) -- (as post's: ctx.client_address)
  rec[AUTH] = auth
  local ctx = m:call(rec, ex)
  if not ex.done then watch_close(m, res, ex, ctx) end
  return true
end

return M
