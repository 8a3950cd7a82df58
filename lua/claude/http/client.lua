--- HTTP(S) requests on the claude loop: libcurl driven by libuv, no threads.
--
-- Inside a task a request waits while other tasks run; outside any task it
-- runs the loop until the request is done (as every claude wait does).
-- Connections are kept alive and reused for later requests to the same
-- server. Redirects are not followed: a 3xx is returned as it is.
--
--    local http = require "claude.http.client"
--    local resp, err = http.request{ method = "POST", url = url,
--      headers = { ["content-type"] = "application/json" }, body = text, timeout = 30 }
--    if not resp then print(err.kind, err) end        -- or resp.status, resp.body
--
--    local stream <close> = assert(http.stream{ url = url,
--      headers = { accept = "text/event-stream" } })
--    for event in stream:events() do print(event.event, event.data) end
--
-- Request options (for `request` and `stream`; `core.http_request` takes the
-- same plus its callbacks):
--
-- * `url` (string, required): http or https.
-- * `method` (string, default "GET"): any token; `body` is sent with any method.
-- * `headers` ({ name = value }): sent as given; values strings or numbers
--   without CR, LF or NUL. No `Content-Type` unless given.
-- * `body` (string): the request body.
-- * `timeout` (seconds): limit on the whole transfer (a stream included);
--   `connect_timeout` (seconds): on connecting only.
-- * `max_body` (bytes): limit on the response body; default 64 MiB for a
--   collected body, none for a streamed one.
-- * `max_event` (bytes, default 64 MiB): limit on one SSE event.
-- * `resolve` (string, `host:port:address`): connect to that address for
--   that host and port, no look-up (libcurl's CURLOPT_RESOLVE; what
--   `claude.guard.url`'s `check` returns, so the address checked is the one
--   reached).
--
-- Errors are `nil, err` with `err` a `claude.errors` value whose `kind` is
-- `"timeout"`, `"connection"` (refused, reset, closed mid-body, DNS...),
-- `"tls"`, `"url"` (malformed, or not http/https), `"overflow"` (max_body or
-- max_event), `"ENOSYS"` (libcurl, loaded on the first request, is not
-- installed), or `"http"` (status >= 400: `err.status`, `err.headers`,
-- `err.body`). A failure after the headers came carries them in
-- `err.response` (`status`, `headers`, and for SSE `last_event_id`, `retry`).
-- Misuse (a bad option) raises at the caller's line.
--
-- The C layer under this module, `core.http_request(opts)`, takes the same
-- options plus callbacks, all optional, run from the loop (protected: an
-- error goes to `claude.on_error` and the request goes on; they cannot
-- wait):
--
-- * `on_headers(status, headers, mode)`: once, when the final response's
--   headers are in (interim 1xx responses are skipped). `mode` says how the
--   body comes: `"sse"` (a 2xx `text/event-stream` and `on_event` given),
--   `"stream"` (`on_data` given), else `"collect"`.
-- * `on_event(event)`: each SSE event, parsed in C (WHATWG rules):
--   `{ event = type ("message" by default), data = lines joined with "\n",
--   id = the stream's last event ID (absent when empty), retry = ms (absent
--   until the stream sets one) }`.
-- * `on_data(chunk)`: the body as it arrives (when not SSE).
-- * `on_done(true, response)` or `on_done(false, message, kind[, response])`:
--   once at the end. `response` is `{ status, headers, body }` (`body` only
--   when collected; for SSE `last_event_id` and `retry` instead); a status
--   >= 400 is `true` here, not an error. The fourth argument comes when the
--   headers had arrived before the failure.
--
-- It returns a `claude.HttpRequest` (or nil, message, "url" for a bad URL;
-- nil, message, "ENOSYS" when libcurl cannot be loaded),
-- with `req:cancel()` (true if it was running; no callback runs after it,
-- not even `on_done`; also `__close`), `req:running()`, `__tostring`. A
-- running request stays alive without a reference; at `lua_close` running
-- requests are aborted and every handle closed.
-- @module claude.http.client
local core = require "claude.core"
local async = require "claude.async"
local errors = require "claude.errors"
local queue = require "claude.queue"

local M = {}

local pack, unpack = table.pack, table.unpack
local BODY_IN_MESSAGE = 200 -- bytes of an error body quoted in its message

local CALLBACKS = { on_headers = true, on_data = true, on_event = true, on_done = true }

-- The options for core.http_request: the caller's, with our callbacks. The
-- caller's table is not modified.
local function options(opts, callbacks, fname)
  if type(opts) ~= "table" then
    error("bad argument #1 to '" .. fname .. "' (table expected, got " .. type(opts) .. ")", 3)
  end
  local args = {}
  for k, v in pairs(opts) do
    if CALLBACKS[k] then
      error("bad field '" .. k .. "' to '" .. fname .. "' (callbacks belong to "
        .. "claude.core.http_request)", 3)
    end
    args[k] = v
  end
  for k, v in pairs(callbacks) do args[k] = v end
  return args
end

-- Starts the request; misuse is raised at the caller's caller's line.
local function start(args, fname)
  local ok, req, err, kind = pcall(core.http_request, args)
  if not ok then
    if type(req) == "string" then error((req:gsub("'http_request'", "'" .. fname .. "'")), 3) end
    error(req, 0)
  end
  if not req then return nil, errors.new(kind, err) end
  return req
end

local function label(opts)
  return (opts.method or "GET") .. " " .. tostring(opts.url)
end

local function http_error(opts, resp, body)
  body = body or ""
  local quoted = #body > BODY_IN_MESSAGE and body:sub(1, BODY_IN_MESSAGE) .. "..." or body
  return errors.new("http", string.format("%s: HTTP %d%s", label(opts), resp.status,
    quoted ~= "" and (": " .. quoted) or ""),
    { status = resp.status, headers = resp.headers, body = body })
end

local function failure(opts, message, kind, response)
  return errors.new(kind, label(opts) .. ": " .. message, { response = response })
end

--- Sends a request and waits for the whole response.
-- @tparam table opts the request options (see the module's description)
-- @treturn table `{ status = n, headers = { lowercased name = value }, body = s }`
--   (a repeated header's values joined with ", "); or nil and an error
--   (kind `http` for a status >= 400)
-- @raise a `cancelled` error when the waiting task is cancelled (the request
--   is aborted)
function M.request(opts)
  local result, wake
  local args = options(opts, {
    on_done = function(...)
      result = pack(...)
      if wake then wake() end
    end,
  }, "request")
  local req, err = start(args, "request")
  if not req then return nil, err end
  if not result then
    async.await(function(done)
      wake = done
      return function() req:cancel() end
    end)
  end
  local ok, a, b, c = unpack(result, 1, result.n)
  if not ok then return nil, failure(opts, a, b, c) end
  if a.status >= 400 then return nil, http_error(opts, a, a.body) end
  return a
end

local Stream = {}
Stream.__index = Stream
Stream.__name = "claude.http.Stream"

function Stream:__tostring()
  return string.format("claude.http.Stream (%s, %s)", self.label,
    self.closed and "closed" or self.finished and "finished" or "open")
end

--- Sends a request and waits for the response's headers; the body is then
-- read as it arrives: SSE events when the response is a 2xx
-- `text/event-stream`, else chunks of bytes.
-- @tparam table opts the request options (see the module's description)
-- @return a stream with `status`, `headers`, `sse` (true for an event
--   stream), `last_event_id` and `retry` (kept up to date as events come);
--   or nil and an error (kind `http` for a status >= 400, with the body)
-- @raise a `cancelled` error when the waiting task is cancelled
function M.stream(opts)
  local self = setmetatable({ label = label(opts), items = queue.new(), finished = false,
    closed = false }, Stream)
  local head = async.event()
  local args = options(opts, {
    on_headers = function(status, headers, mode)
      self.status, self.headers, self.sse = status, headers, mode == "sse"
      head:set()
    end,
    on_event = function(event)
      self.last_event_id = event.id -- every event carries the stream's current one
      if event.retry then self.retry = event.retry end
      self.items:push(event)
    end,
    on_data = function(chunk) self.items:push(chunk) end,
    on_done = function(ok, a, b, c)
      self.finished = true
      local response = ok and a or c
      if response and self.sse then
        self.last_event_id = response.last_event_id
        self.retry = response.retry or self.retry
      end
      if ok then
        self.items:close()
      else
        self.error = failure(opts, a, b, c)
        self.items:close(self.error)
      end
      head:set()
    end,
  }, "stream")
  local req, err = start(args, "stream")
  if not req then return nil, err end
  self.req = req
  local ok, werr = pcall(head.wait, head)
  if not ok then -- cancelled while waiting for the headers
    req:cancel()
    error(werr, 0)
  end
  if self.status == nil then return nil, self.error end
  if self.status >= 400 then
    local body, berr = self:body()
    self:close()
    if not body then return nil, berr end
    return nil, http_error(opts, self, body)
  end
  return self
end

--- The next piece of the body: an event `{ event, data, id, retry }` for
-- an event stream, else a string.
-- @tparam[opt] number timeout seconds to wait (default: no limit)
-- @return the piece; nil at the end of the body; nil and an error when the
--   transfer failed, or on timeout (kind `timeout`: the stream stays open)
function Stream:read(timeout)
  if self.closed then return nil, errors.new("closed", self.label .. ": the stream is closed") end
  return self.items:pop(timeout)
end

--- Iterates over the pieces of the body (see `read`); raises on an error.
function Stream:events(timeout)
  return function()
    local item, err = self:read(timeout)
    if err then error(err, 2) end
    return item
  end
end

--- Reads the rest of a body that is not an event stream and returns it.
-- @treturn string|nil the body, or nil and an error
function Stream:body(timeout)
  local parts = {}
  while true do
    local chunk, err = self:read(timeout)
    if err then return nil, err end
    if chunk == nil then return table.concat(parts) end
    if type(chunk) ~= "string" then
      error("body: this response is an event stream (read it with read or events)", 2)
    end
    parts[#parts + 1] = chunk
  end
end

--- Aborts the transfer if it still runs (no error is reported for it) and
-- frees the stream. Idempotent; also the `<close>` handler.
function Stream:close()
  if self.closed then return end
  self.closed = true
  if self.req then self.req:cancel() end
end
Stream.__close = Stream.close

M.Stream = Stream
return M
