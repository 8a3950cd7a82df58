--- The HTTP+SSE transport of MCP 2024-11-05, for older servers: a GET opens
-- an event stream whose first event, `endpoint`, names the URL to POST
-- messages to; everything the server sends comes as `message` events on
-- that stream. Messages sent before the endpoint is known wait for it. The
-- stream's end is the connection's end. See claude.mcp.client.stdio for
-- the `events` its owner gives.
--
-- With OAuth (claude.oauth.provider) the stream and every POST carry the
-- provider's `Authorization` header; a 401 (or a 403 `insufficient_scope`)
-- is handed to the provider and the request made again, as in
-- claude.mcp.client.http.
-- @module claude.mcp.client.sse
local core = require "claude.core"
local json = require "claude.json"
local errors = require "claude.errors"
local authorize = require "claude.mcp.client.authorize"

local M = {}

local Transport = {}
Transport.__index = Transport
Transport.__name = "claude.mcp.SseTransport"

function Transport:__tostring()
  return string.format("claude.mcp.SseTransport (%s)", self.url)
end

local function new_error(self, kind, what, fields)
  return errors.new(kind, "MCP server '" .. self.name .. "' (" .. self.url .. "): " .. what,
    fields)
end

-- The endpoint's URL: absolute, from the root of the server, or relative to the stream's.
local function resolve(base, ref)
  if ref:find("^%a[%w+.-]*://") then return ref end
  local origin = base:match("^(%a[%w+.-]*://[^/?#]+)")
  if ref:sub(1, 1) == "/" then return origin .. ref end
  return (base:match("^(.*/)") or (origin .. "/")) .. ref
end

local function headers(self, extra, method, target)
  local h = {}
  for k, v in pairs(self.user_headers) do h[k] = v end
  for k, v in pairs(extra) do h[k] = v end
  -- a static Authorization header (any case) is sent; an auth provider's token (and its
  -- DPoP proof) replaces it only when there is one
  if self.provider then
    local auth, dpop = self.provider:header(method, target)
    if auth then
      for k in pairs(h) do
        if type(k) == "string" and k:lower() == "authorization" then h[k] = nil end
      end
      h.Authorization, h.DPoP = auth, dpop
    end
  end
  return h
end

local in_task, reauthorize = authorize.in_task, authorize.reauthorize

local function gone(self, err)
  if self.closing or self.dead then return end
  self.dead = true
  self.events.closed(err)
end

local function post(self, msg, body, attempt)
  local id = msg.method ~= nil and msg.id or nil
  local req
  local h = headers(self, { ["Content-Type"] = "application/json" }, "POST", self.endpoint)
  req = core.http_request {
    method = "POST", url = self.endpoint, body = body, headers = h,
    on_done = function(ok, a, b)
      self.active[req] = nil
      if self.closing then return end
      local err
      if ok and self.provider and self.provider:wants(a.status, a.headers) then
        return reauthorize(self, a.status, a.headers, h.Authorization, attempt,
          function() post(self, msg, body, attempt) end,
          function(e)
            if id ~= nil then self.events.failed(id, e) else self.events.problem(e) end
          end)
      end
      if not ok then
        err = new_error(self, b, a)
      elseif a.status >= 400 then
        err = new_error(self, a.status >= 500 and "connection" or "protocol", "HTTP "
          .. a.status .. (a.body and a.body ~= "" and (": " .. a.body:sub(1, 200)) or ""),
          { status = a.status, body = a.body })
      end
      if err then
        if id ~= nil then self.events.failed(id, err) else self.events.problem(err) end
      end
    end,
  }
  if req then self.active[req] = true end
end

-- Opens (or, after an authorization, opens again) the event stream.
local function open_stream(self, attempt)
  local events = self.events
  local status, hdrs
  local req
  local h = headers(self, { Accept = "text/event-stream" }, "GET", self.url)
  req = core.http_request {
    method = "GET", url = self.url, max_event = self.max, headers = h,
    on_headers = function(s, hh) status, hdrs = s, hh end,
    on_event = function(ev)
      if ev.event == "endpoint" then
        self.endpoint = resolve(self.url, ev.data)
        local q = self.queue
        self.queue = {}
        for _, item in ipairs(q) do post(self, item[1], item[2], {}) end
        return
      end
      if ev.event ~= "message" or ev.data == "" then return end
      local value, err = json.decode(ev.data)
      if value == nil then
        return events.undecodable(ev.data, new_error(self, "protocol", "an SSE event that "
          .. "is not JSON (" .. err .. "): " .. ev.data:sub(1, 200)))
      end
      events.message(value)
    end,
    on_data = function() end,
    on_done = function(ok, a, b)
      self.active[req] = nil
      if self.closing then return end
      if status and self.provider and self.provider:wants(status, hdrs) then
        return reauthorize(self, status, hdrs, h.Authorization, attempt,
          function() open_stream(self, attempt) end, function(e) gone(self, e) end)
      end
      if status == 401 and not self.provider then
        return gone(self, new_error(self, "auth", "HTTP 401 for the event stream (the server "
          .. "requires authorization: give claude.mcp.connect an 'auth' option, see "
          .. "claude.oauth)", { status = status }))
      end
      if status and status >= 400 then
        return gone(self, new_error(self, status >= 500 and "connection" or "protocol",
          "HTTP " .. status .. " for the event stream", { status = status }))
      end
      if not ok then return gone(self, new_error(self, b, a)) end
      gone(self, new_error(self, "connection", "the server ended the event stream"))
    end,
  }
  if req then self.active[req] = true end
end

--- Opens the event stream.
-- @tparam table opts the client's options
-- @tparam table events the owner's callbacks
-- @param[opt] provider a claude.oauth.provider
function M.open(opts, events, provider)
  local self = setmetatable({ url = opts.url, name = opts.name, events = events,
    user_headers = opts.headers or {}, queue = {}, active = {}, tasks = {}, closing = false,
    dead = false, provider = provider, max = opts.max_message_size }, Transport)
  if provider and not provider:ready() then
    in_task(self, function()
      provider:prepare()
      if not self.closing then open_stream(self, {}) end
    end)
  else
    open_stream(self, {})
  end
  return self
end

--- Sends one message: a POST to the endpoint (queued until it is known).
function Transport:send(msg)
  if self.closing or self.dead then
    return nil, new_error(self, "connection", "the event stream is closed")
  end
  local ok, body = pcall(json.encode, msg)
  if not ok then return nil, new_error(self, "protocol", "cannot encode: " .. tostring(body)) end
  if not self.endpoint then
    self.queue[#self.queue + 1] = { msg, body }
  elseif self.provider and not self.provider:ready() then
    in_task(self, function()
      self.provider:prepare()
      if not self.closing then post(self, msg, body, {}) end
    end)
  else
    post(self, msg, body, {})
  end
  return true
end

--- Ends the stream and every request.
function Transport:close()
  if self.closing then return end
  self.closing = true
  for req in pairs(self.active) do req:cancel() end
  self.active = {}
  authorize.cancel_tasks(self)
end

return M
