--- What a modern server sends on its own (list changes, resource updates) comes only on a
-- `subscriptions/listen` request the client keeps open: its filter names what the client
-- wants (`toolsListChanged`, `promptsListChanged`, `resourcesListChanged` as the server
-- advertises them, when the client has `on_notification` or a server mounts it;
-- `resourceSubscriptions`, the URIs of `subscribe`), the server acknowledges it
-- (`notifications/subscriptions/acknowledged`, tagged with the listen's id) and then sends
-- the notifications on it, which reach `on_notification` as in the legacy era.
--
-- A new filter is a new listen; the old one is closed once the new one is acknowledged
-- (its HTTP stream closed, or on stdio `notifications/cancelled`). A listen the server
-- ends is opened again after a pause (1 s, doubling up to 30 s), unless the server does
-- not know the method.
-- @module claude.mcp.client.listen
local async = require "claude.async"
local errors = require "claude.errors"
local json = require "claude.json"
local era = require "claude.mcp.era"
local modern = require "claude.mcp.client.modern"

local M = {}

M.MAX_PAUSE = 30

local Listener = {}
Listener.__index = Listener

--- The listener of a client (`report(err)` for trouble that fails no call).
function M.new(client, report)
  return setmetatable({ client = client, report = report, subs = {}, current = nil,
    closed = false, pause = 1, reopening = nil, refused = false }, Listener)
end

local function flag(caps, name)
  local c = type(caps) == "table" and caps[name]
  return type(c) == "table" and c.listChanged == true or nil
end

--- The filter the client wants now (empty: no listen is needed).
function Listener:filter()
  local c = self.client
  local f = json.object()
  if c.opts.on_notification or (c.observers and next(c.observers)) then
    local caps = c.capabilities
    f.toolsListChanged = flag(caps, "tools")
    f.promptsListChanged = flag(caps, "prompts")
    f.resourcesListChanged = flag(caps, "resources")
  end
  local uris = {}
  for uri in pairs(c.subscriptions) do uris[#uris + 1] = uri end
  if uris[1] then
    table.sort(uris)
    f.resourceSubscriptions = uris
  end
  return f
end

local schedule -- (self): opens again after a pause

-- Opens a listen with the current filter and waits for its acknowledgement; the one it
-- replaces is closed then.
-- @return true | nil, err, kind
function Listener:open()
  local c = self.client
  local conn = c.conn
  if self.closed or not conn or conn.era ~= "modern" then return true end
  local filter = self:filter()
  if next(filter) == nil then
    self:drop(self.current, "nothing to listen for")
    self.current = nil
    return true
  end
  local sub = { acked = async.event(), conn = conn, filter = filter }
  local id, err, kind = conn.peer:start("subscriptions/listen",
    modern.params(c, { notifications = filter }), function(_, e)
      sub.ended = true
      if sub.id then self.subs[sub.id] = nil end
      if not sub.acked.is_set then
        sub.error = e or errors.new("protocol", "the MCP server '" .. c.name .. "' ended "
          .. "subscriptions/listen before acknowledging it")
        sub.acked:set()
        return
      end
      if self.current == sub and not self.closed and conn.alive then
        self.current = nil
        if e and e.code == -32601 then
          self.refused = true
          return self.report(errors.new("protocol", "the MCP server '" .. c.name
            .. "' does not know subscriptions/listen: its notifications cannot come"))
        end
        schedule(self)
      end
    end)
  if not id then return nil, err, kind end
  sub.id = id
  self.subs[id] = sub
  local ok = sub.acked:wait(c.opts.timeout)
  if not ok then
    sub.error = errors.new("timeout", "the MCP server '" .. c.name .. "' did not acknowledge "
      .. "subscriptions/listen within " .. c.opts.timeout .. " s")
    self:drop(sub, "not acknowledged")
  end
  if sub.error then
    local e = sub.error
    if e.code == -32601 then self.refused = true end
    return nil, e, e.kind
  end
  local old = self.current
  self.current = sub
  self.pause = 1
  self:drop(old, "replaced by a new subscription")
  return true
end

--- Closes one listen (its answer is no longer awaited).
function Listener:drop(sub, why)
  if not sub or sub.ended then return end
  sub.ended = true
  self.subs[sub.id] = nil
  if sub.conn.alive then sub.conn.peer:cancel(sub.id, why) end
end

schedule = function(self)
  if self.reopening or self.closed then return end
  local pause = self.pause
  self.pause = math.min(M.MAX_PAUSE, pause * 2)
  self.reopening = async.spawn(function()
    async.sleep(pause)
    self.reopening = nil
    if self.closed then return end
    local ok, err = self:open()
    if not ok and not self.closed then
      self.report(err)
      if not self.refused then schedule(self) end
    end
  end)
end

--- A notification for the listener: the acknowledgement of a listen (consumed: true).
function Listener:notified(method, params)
  if method ~= "notifications/subscriptions/acknowledged" then return false end
  local meta = type(params) == "table" and params._meta
  local id = type(meta) == "table" and meta[era.META.subscription_id]
  local sub = id ~= nil and self.subs[id]
  if not sub then return false end
  sub.honored = params.notifications
  sub.acked:set()
  return true
end

--- A `notifications/cancelled` from the server for one of our listens (stdio: the server
-- ended it): its wait ends. True when it was one.
function Listener:cancelled(msg)
  local params = type(msg) == "table" and msg.method == "notifications/cancelled"
    and msg.id == nil and msg.params
  local id = type(params) == "table" and params.requestId
  local sub = id ~= nil and self.subs[id]
  if not sub then return false end
  sub.conn.dropped[id] = true -- its answer, should one come, is not a second one
  sub.conn.peer:fail_request(id, errors.new("closed", "the MCP server '" .. self.client.name
    .. "' ended subscriptions/listen" .. (type(params.reason) == "string"
      and (": " .. params.reason) or "")))
  return true
end

--- Ends every listen; nothing is opened again.
function Listener:close()
  if self.closed then return end
  self.closed = true
  if self.reopening then self.reopening:cancel("the MCP client was closed") end
  for _, sub in pairs(self.subs) do self:drop(sub, "the MCP client was closed") end
  self.current = nil
end

--- A new connection: the old listens are gone with it.
function Listener:reset()
  self.subs, self.current, self.pause, self.refused = {}, nil, 1, false
end

return M
