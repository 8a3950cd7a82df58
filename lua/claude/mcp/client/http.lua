--- The Streamable HTTP transport of the MCP client (MCP 2025-03-26 and
-- later): each message is POSTed; the answer comes as JSON or as an SSE
-- stream (with the server's own requests and notifications before it). A
-- standalone GET stream carries what the server sends on its own. Streams
-- that end before their answer are resumed with `Last-Event-ID` after the
-- server's `retry`. `Mcp-Session-Id` and `MCP-Protocol-Version` go with every
-- request; a 404 for the session ends the connection (the client's
-- lifecycle then starts a new session); `close` DELETEs the session.
--
-- With OAuth (`auth`, claude.oauth.provider) every request carries the
-- provider's `Authorization` header; a 401, or a 403 `insufficient_scope`,
-- is handed to the provider, which authorizes in a task of its own, and the
-- request is sent again. A request made while an authorization is under way
-- (or its token is about to expire) waits for it in a task first.
--
-- The transport runs on callbacks of `core.http_request` (libcurl on the
-- loop, SSE parsed in C); see claude.mcp.client.stdio for the `events` its
-- owner gives.
-- @module claude.mcp.client.http
local core = require "claude.core"
local async = require "claude.async"
local json = require "claude.json"
local errors = require "claude.errors"
local era = require "claude.mcp.era"
local authorize = require "claude.mcp.client.authorize"
local param_headers = require "claude.mcp.client.param_headers"

local M = {}

local DEFAULT_RETRY = 1      -- seconds before a stream is resumed when the server said nothing
local MAX_STREAM_RETRY = 30  -- the cap of the standalone stream's backoff
local STREAM_ATTEMPTS = 8    -- resumptions of one stream without any event in between
local CLOSE_TIMEOUT = 2      -- seconds for the DELETE of the session

local Transport = {}
Transport.__index = Transport
Transport.__name = "claude.mcp.HttpTransport"

function Transport:__tostring()
  return string.format("claude.mcp.HttpTransport (%s%s)", self.url,
    self.session_id and (", session " .. self.session_id) or "")
end

--- Makes the transport; nothing is sent until the first message.
-- @tparam table opts the client's options
-- @tparam table events the owner's callbacks
-- @param[opt] provider a claude.oauth.provider
function M.open(opts, events, provider)
  return setmetatable({ url = opts.url, name = opts.name, user_headers = opts.headers or {},
    max = opts.max_message_size, events = events, session_id = nil, provider = provider,
    protocol_version = nil, active = {}, by_id = {}, timers = {}, tasks = {}, closing = false },
    Transport)
end

local function headers(self, accept, extra, method)
  local h = {}
  for k, v in pairs(self.user_headers) do h[k] = v end
  h.Accept = accept
  -- a static Authorization header (any case) is sent; an auth provider's token (and its
  -- DPoP proof) replaces it only when there is one
  if self.provider then
    local auth, dpop = self.provider:header(method or "POST", self.url)
    if auth then
      for k in pairs(h) do
        if type(k) == "string" and k:lower() == "authorization" then h[k] = nil end
      end
      h.Authorization, h.DPoP = auth, dpop
    end
  end
  if self.session_id then h["Mcp-Session-Id"] = self.session_id end
  if self.protocol_version then h["MCP-Protocol-Version"] = self.protocol_version end
  for k, v in pairs(extra or {}) do h[k] = v end
  return h
end

-- The headers of the modern wire (SEP-2243), derived from the message itself: a message
-- whose `_meta` claims a revision carries it in `MCP-Protocol-Version`, its method in
-- `Mcp-Method`, the name, URI or task id it is about in `Mcp-Name`, and the arguments its
-- tool's schema designates in `Mcp-Param-*` (the owner's `events.headers`).
local function modern_headers(self, msg, extra)
  local claimed = era.claimed(msg)
  if not claimed then return end
  extra["MCP-Protocol-Version"] = claimed
  extra["Mcp-Method"] = msg.method
  local field = era.NAME_PARAM[msg.method]
  local name = field and msg.params[field]
  if type(name) == "string" then extra["Mcp-Name"] = param_headers.encode(name) end
  local more = self.events.headers and self.events.headers(msg)
  if more then
    for k, v in pairs(more) do extra[k] = v end
  end
end

local function new_error(self, kind, what, fields)
  return errors.new(kind, "MCP server '" .. self.name .. "' (" .. self.url .. "): " .. what,
    fields)
end

-- Runs fn after `seconds` on the loop (a timer that closes itself).
local function later(self, seconds, fn)
  local t = core.timer()
  self.timers[t] = true
  t:start(seconds, function()
    self.timers[t] = nil
    t:close()
    if not self.closing then fn() end
  end)
end

-- One decoded message (or a batch) from a response or a stream.
local function deliver(self, value, stream)
  if type(value) == "table" and value[1] ~= nil and value.jsonrpc == nil then
    for _, m in ipairs(value) do deliver(self, m, stream) end
    return
  end
  if stream and type(value) == "table" and value.method == nil and value.id ~= nil then
    stream.waiting[value.id] = nil -- its answer came
  end
  self.events.message(value)
end

local function on_event(self, stream, ev)
  stream.last_id = ev.id or stream.last_id
  if ev.retry then stream.retry = ev.retry / 1000 end
  stream.attempts = 0
  local data = ev.data
  if data == nil or data == "" then return end -- a priming event: an id, no message
  local value, err = json.decode(data)
  if value == nil then
    return self.events.undecodable(data, new_error(self, "protocol", "an SSE event that is "
      .. "not JSON (" .. err .. "): " .. data:sub(1, 200)))
  end
  deliver(self, value, stream)
end

local open_get -- (self, stream): a GET on a stream (standalone, or resuming one)

-- The ids a stream still owes an answer to fail with `err`.
local function fail_waiting(self, stream, err)
  for id in pairs(stream.waiting) do self.events.failed(id, err) end
  stream.waiting = {}
end

-- A stream ended (cleanly or not): resume it when it owes answers (or is the
-- standalone one) and has an event id to resume from.
local function stream_ended(self, stream, err)
  if self.closing then return end
  local owes = next(stream.waiting) ~= nil
  if not owes and not stream.standalone then return end
  stream.attempts = stream.attempts + 1
  if (owes and not stream.last_id) or stream.attempts > STREAM_ATTEMPTS then
    return fail_waiting(self, stream, err or new_error(self, "connection",
      "the server ended the stream before the answer, with no event id to resume from"))
  end
  local delay = stream.retry
  if not delay then
    delay = math.min(MAX_STREAM_RETRY, DEFAULT_RETRY * 2 ^ (stream.attempts - 1))
  end
  later(self, delay, function() open_get(self, stream) end)
end

local function session_gone(self)
  self.events.closed(new_error(self, "connection", "the server ended the session "
    .. tostring(self.session_id) .. " (HTTP 404)", { status = 404, session_expired = true }))
end

local function track(self, req)
  if req then self.active[req] = true end
  return req
end

local in_task, reauthorize = authorize.in_task, authorize.reauthorize

open_get = function(self, stream)
  local req
  local extra = stream.last_id and { ["Last-Event-ID"] = stream.last_id } or nil
  local h = headers(self, "text/event-stream", extra, "GET")
  req = core.http_request {
    method = "GET", url = self.url, headers = h, max_event = self.max,
    on_headers = function(status, hdrs)
      stream.status, stream.headers = status, hdrs
    end,
    on_event = function(ev) on_event(self, stream, ev) end,
    on_data = function() end,
    on_done = function(ok, a, b)
      self.active[req] = nil
      if self.closing then return end
      local status = stream.status
      if status and self.provider and self.provider:wants(status, stream.headers) then
        stream.attempt = stream.attempt or {}
        return reauthorize(self, status, stream.headers, h.Authorization, stream.attempt,
          function() open_get(self, stream) end,
          function(err)
            if next(stream.waiting) then return fail_waiting(self, stream, err) end
            self.events.problem(err)
          end)
      end
      if status and status < 300 then stream.attempt = nil end
      if status == 404 and self.session_id then return session_gone(self) end
      if status == 405 and stream.standalone then return end -- the server offers none
      if ok and status and status >= 400 then
        return stream_ended(self, stream, new_error(self, "connection",
          "resuming a stream failed: HTTP " .. status, { status = status }))
      end
      stream_ended(self, stream, not ok and new_error(self, b, a) or nil)
    end,
  }
  track(self, req)
end

-- What a failed POST means for the request it carried.
local function post_failed(self, id, status, body)
  if body and body ~= "" then
    local value = json.decode(body)
    if type(value) == "table" and value.error ~= nil and value.id == id and id ~= nil then
      return self.events.message(value) -- a JSON-RPC error answer with an HTTP error status
    end
  end
  local kind = status >= 500 and "connection" or "protocol"
  local what = "HTTP " .. status .. (body and body ~= "" and (": " .. body:sub(1, 200)) or "")
  if status == 401 and not self.provider then
    kind = "auth"
    what = what .. " (the server requires authorization: give claude.mcp.connect an 'auth' "
      .. "option, see claude.oauth)"
  end
  local err = new_error(self, kind, what, { status = status, body = body })
  if id ~= nil then self.events.failed(id, err) else self.events.problem(err) end
end

local function post(self, msg, body, attempt)
  local id = msg.method ~= nil and msg.id or nil
  local stream = { waiting = {}, attempts = 0 }
  if id ~= nil then stream.waiting[id] = true end
  local status, hdrs, is_sse
  local req
  local extra = { ["Content-Type"] = "application/json" }
  if msg.method then modern_headers(self, msg, extra) end
  local h = headers(self, "application/json, text/event-stream", extra)
  req = core.http_request {
    method = "POST", url = self.url, body = body, max_body = self.max, max_event = self.max,
    headers = h,
    on_headers = function(s, got, mode)
      status, hdrs, is_sse = s, got, mode == "sse"
      local sid = got["mcp-session-id"]
      if sid and s < 300 and msg.method == "initialize" then self.session_id = sid end
    end,
    on_event = function(ev) on_event(self, stream, ev) end,
    on_done = function(ok, a, b, c)
      self.active[req] = nil
      if id ~= nil and self.by_id[id] == req then self.by_id[id] = nil end
      if self.closing then return end
      if not ok then
        if c == nil and b == "connection" then
          -- nothing came back: the server is gone
          return self.events.closed(new_error(self, "connection", a))
        end
        local err = new_error(self, b, a)
        if is_sse then return stream_ended(self, stream, err) end
        if id ~= nil then self.events.failed(id, err) else self.events.problem(err) end
        return
      end
      if self.provider and self.provider:wants(status, hdrs) then
        return reauthorize(self, status, hdrs, h.Authorization, attempt,
          function() post(self, msg, body, attempt) end,
          function(err)
            if id ~= nil then self.events.failed(id, err) else self.events.problem(err) end
          end)
      end
      if status == 404 and self.session_id then return session_gone(self) end
      if status >= 400 then return post_failed(self, id, status, a.body) end
      if is_sse then return stream_ended(self, stream, nil) end
      local text = a.body
      if text and text ~= "" and (hdrs["content-type"] or ""):find("json", 1, true) then
        local value, err = json.decode(text)
        if value == nil then
          local e = new_error(self, "protocol", "an answer that is not JSON (" .. err .. ")")
          if id ~= nil then return self.events.failed(id, e) end
          return self.events.problem(e)
        end
        deliver(self, value, stream)
      end
      if next(stream.waiting) then
        fail_waiting(self, stream, new_error(self, "protocol", "HTTP " .. status
          .. " without an answer to the request"))
      end
    end,
  }
  track(self, req)
  if req and id ~= nil then self.by_id[id] = req end
end

--- Sends one message (a POST of its own).
-- @return true | nil, err
function Transport:send(msg)
  if self.closing then return nil, new_error(self, "closed", "the transport is closed") end
  local ok, body = pcall(json.encode, msg)
  if not ok then return nil, new_error(self, "protocol", "cannot encode: " .. tostring(body)) end
  local provider = self.provider
  if provider and not provider:ready() then
    in_task(self, function()
      provider:prepare()
      if not self.closing then post(self, msg, body, {}) end
    end)
  else
    post(self, msg, body, {})
  end
  return true
end

--- Stops the POST that carries request `id` (its stream closes: in the modern era that is
-- how a server learns that nobody waits any more). Its answer will not come.
function Transport:abort(id)
  local req = self.by_id[id]
  if not req then return false end
  self.by_id[id] = nil
  self.active[req] = nil
  req:cancel()
  return true
end

function Transport:set_protocol_version(v)
  self.protocol_version = v
end

--- After the handshake: the standalone GET stream for the server's own messages.
function Transport:initialized()
  open_get(self, { waiting = {}, attempts = 0, standalone = true })
end

--- Ends the transport: every request is aborted, the session is DELETEd (waiting for it
-- at most 2 s where waiting is possible).
function Transport:close()
  if self.closing then return end
  self.closing = true
  for req in pairs(self.active) do req:cancel() end
  self.active = {}
  for t in pairs(self.timers) do t:close() end
  self.timers = {}
  authorize.cancel_tasks(self)
  if not self.session_id then return end
  local req
  local finished = false
  local wake
  req = core.http_request { method = "DELETE", url = self.url, headers = headers(self,
    "application/json, text/event-stream", nil, "DELETE"), timeout = CLOSE_TIMEOUT,
    on_done = function()
      finished = true
      if wake then wake() end
    end }
  if not req or finished then return end
  local ok, done = pcall(async.await, function(done)
    wake = done
    return function() req:cancel() end
  end, CLOSE_TIMEOUT + 1)
  if not (ok and done) then req:cancel() end
end

return M
