--- One connection of an MCP client to its server: a transport and its JSON-RPC peer, and
-- what comes in on it (answers, notifications, undecodable messages, the loss) routed to the
-- calls waiting and the client's callbacks. The era is found and the handshake made on it by
-- claude.mcp.client.lifecycle.
-- @module claude.mcp.client.connection
local core = require "claude.core"
local rpc = require "claude.rpc"
local errors = require "claude.errors"
local modern = require "claude.mcp.client.modern"
local param_headers = require "claude.mcp.client.param_headers"
local class = require "claude.mcp.client.class"

local M = {}

local report = class.report

local function on_notification(self, method, params)
  if method == "notifications/progress" and type(params) == "table" then
    local fn = self.progress[params.progressToken]
    if fn then
      local ok, err = pcall(fn, params.progress, params.total, params.message)
      if not ok then report(self, err) end
      return
    end
  end
  if self.listening and self.listening:notified(method, params) then return end
  self.cache:notified(method, params)
  if method == "notifications/tools/list_changed" then self.tool_headers = nil end
  if self.tasks_live and type(params) == "table" and params.taskId ~= nil then
    local t = self.tasks_live[params.taskId]
    if t then t:notified(method, params) end
  end
  local fn = self.opts.on_notification
  if fn then
    local ok, err = pcall(fn, method, params)
    if not ok then report(self, err) end
  end
  -- the servers that mount this client (claude.mcp.mount)
  local observers = self.observers
  if observers then
    for _, observe in pairs(observers) do
      local ok, err = pcall(observe, method, params)
      if not ok then report(self, err) end
    end
  end
end

local transports = {
  stdio = "claude.mcp.client.stdio",
  http = "claude.mcp.client.http",
  sse = "claude.mcp.client.sse",
}

-- The Mcp-Param-* headers of a modern tools/call (the tool's x-mcp-header declarations).
local function param_headers_of(self, msg)
  if msg.method ~= "tools/call" or not self.tool_headers then return nil end
  local params = msg.params
  local decls = self.tool_headers[params.name]
  if not decls or not decls[1] then return nil end
  return param_headers.build(decls, params.arguments)
end

-- The ids of requests given up on (a timeout, a cancellation) whose late answers are
-- dropped without a word: the last DROPPED_KEPT of them.
local DROPPED_KEPT = 256

local function abandoned(conn, id)
  local dropped = conn.dropped
  if dropped[id] then return end
  dropped[id] = true
  local order = conn.dropped_order
  order[#order + 1] = id
  if #order > DROPPED_KEPT then dropped[table.remove(order, 1)] = nil end
end

--- Opens a transport (`kind`: stdio, http, sse) and its peer; returns the connection | nil,
-- err, kind; `on_lost(self, conn, err)` when it goes away by itself. While the era
-- is being found (`conn.probe`), the probe's answer goes to it and nothing else is read;
-- an answer to a probe that timed out (`conn.dropped`) is dropped.
function M.open(self, kind, on_lost)
  local conn = { alive = true, era = nil, dropped = {}, dropped_order = {} }
  local events = {
    message = function(msg)
      local peer = conn.peer
      if not peer then return end
      local probe = conn.probe
      if probe then
        if type(msg) == "table" and msg.id == probe.id and msg.method == nil then
          if msg.error ~= nil then
            local e = msg.error
            probe.done({ error = type(e) == "table" and e or { message = tostring(e) } })
          else
            probe.done({ result = msg.result })
          end
        end
        return
      end
      if type(msg) == "table" and msg.method == nil and msg.id ~= nil then
        local id = msg.id
        if peer.pending:get(id) == nil then
          -- the late answer of a request we gave up on (timeout, cancellation) goes; any
          -- other is the server's mistake, said (it was dropped silently: issue 23)
          if conn.dropped[id] then return end
          if math.type(id) == "integer" and id >= 1 and id <= peer.counter then
            return report(self, errors.new("protocol", "the MCP server '" .. self.name
              .. "' answered request id " .. id .. " again (it was answered already); the "
              .. "second answer was dropped"))
          end
          return report(self, errors.new("protocol", "the MCP server '" .. self.name
            .. "' answered request id " .. tostring(id) .. ", which was never sent"))
        end
      end
      if self.listening:cancelled(msg) then return end
      local ok, why = peer:receive(msg)
      if not ok then
        report(self, errors.new("protocol", "the MCP server '" .. self.name
          .. "' sent an invalid message: " .. tostring(why)))
      end
    end,
    -- an answer the transport's envelope reader took apart (core.RPC_RESULT): its call's
    -- callback at once, as `message` would do for it; anything else goes that way
    result = function(id, value)
      local peer = conn.peer
      if not peer then return end
      if not conn.probe and not conn.dropped[id] then
        local callback = peer.pending:take(id)
        if callback then return callback(value) end
      end
      return conn.events.message({ jsonrpc = "2.0", id = id, result = value })
    end,
    problem = function(err) report(self, err) end,
    -- a message that does not decode (cut short, invalid UTF-8, ...): when it answers a
    -- call in flight (its id, no method), that call fails with `err` now rather than
    -- timing out; anything else is reported
    undecodable = function(text, err)
      local peer = conn.peer
      local _, id, _, has_method = core.json_peek_ids(text)
      local cb = peer and id ~= nil and not has_method and peer.pending:take(id)
      if cb then return cb(nil, err) end
      report(self, err)
    end,
    lost = function(err)
      -- the lost message may have been the answer to any call in flight
      report(self, err)
      local peer = conn.peer
      for _, id in ipairs(peer and peer.pending:ids() or {}) do
        local cb = peer.pending:take(id)
        abandoned(conn, id)
        peer:notify("notifications/cancelled", { requestId = id, reason = err.message })
        cb(nil, err)
      end
    end,
    closed = function(err)
      if conn.probe then conn.probe.done({ closed = err }) end
      on_lost(self, conn, err)
    end,
    -- a request the transport could not deliver (HTTP: its POST failed)
    failed = function(id, err)
      if conn.probe and conn.probe.id == id then return conn.probe.done({ failed = err }) end
      local peer = conn.peer
      local cb = peer and peer.pending:take(id)
      if cb then
        cb(nil, err)
      end
    end,
    headers = function(msg) return param_headers_of(self, msg) end,
  }
  conn.events = events
  local mod = require(transports[kind])
  local t, err, ekind = mod.open(self.opts, events, self.provider)
  if not t then return nil, err, ekind end
  conn.transport = t
  local function send(msg)
    -- a notification of the modern era carries the envelope too
    if conn.era == "modern" and msg.method ~= nil and msg.id == nil then
      msg.params = modern.params(self, msg.params)
    end
    return t:send(msg)
  end
  conn.peer = rpc.new {
    codec = rpc.jsonrpc,
    name = "MCP server '" .. self.name .. "'",
    send = send,
    -- a transport that writes a request's envelope itself (stdio) is given its values
    send_request = t.send_request,
    handlers = self.handlers,
    on_notification = function(method, params) on_notification(self, method, params) end,
    -- a modern HTTP request is abandoned by closing its stream; elsewhere the server is told
    on_cancel = function(id, _, cerr)
      abandoned(conn, id)
      if conn.era == "modern" and t.abort then
        t:abort(id)
        return
      end
      send(rpc.jsonrpc.cancel(id, cerr.message))
    end,
    context = { client = self },
    timeout = self.opts.timeout,
  }
  -- a transport that reads answers in C hands those of the requests waiting straight to them
  if t.bind_answers then t:bind_answers(conn.peer.pending) end
  return conn
end

--- Closes a connection (the client's own doing: not a loss).
function M.close(conn, reason)
  if not conn.alive then return end
  conn.alive = false
  conn.peer:close(reason)
  conn.transport:close()
end

return M
