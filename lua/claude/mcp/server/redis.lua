--- A Redis client for the shared task store and event bus (claude.mcp.server.shared): two
-- connections (claude.core.Redis, hiredis on the loop), one for commands and one for the
-- subscriptions, which come back by themselves after a reconnect. While Redis cannot be
-- reached every command fails at once with kind `"unavailable"` and a message that says so;
-- the client reconnects with a backoff (0.1 s doubling to 5 s) and calls `on_up` again.
--
--     local r = redis.connect("redis://127.0.0.1:6379/0", { on_up = fn, on_down = fn })
--     local v, err, kind = r:call("GET", key)       -- in a task: waits for the reply
--     r:send({ "PUBLISH", ch, text })                -- no wait
--     r:subscribe(ch, function(payload) end)
--     r:close()
-- @module claude.mcp.server.redis
local core = require "claude.core"
local async = require "claude.async"

local M = {}

local fmt, type = string.format, type

--- Seconds the first retry waits, and the longest wait between two.
M.BACKOFF, M.BACKOFF_MAX = 0.1, 5

--- Seconds a connection may take to come up (hiredis 0.14 has no connect timeout of its own)
-- and a command to be answered.
M.CONNECT_TIMEOUT, M.TIMEOUT = 5, 10

--- Parse `redis://host:port[/db]`.
-- @treturn string host
-- @treturn integer port
-- @treturn integer db
-- or nil and why
function M.parse_url(url)
  if type(url) ~= "string" then return nil, "a redis://host:port[/db] URL expected" end
  local host, port, db = url:match("^redis://%[?([%w%.%-_:]-)%]?:(%d+)/?(%d*)$")
  if not host then
    host, db = url:match("^redis://([%w%.%-_]+)/?(%d*)$")
    port = "6379"
  end
  if not host or host == "" then
    return nil, fmt("'%s' is not a redis://host:port[/db] URL", url)
  end
  port = math.tointeger(tonumber(port))
  if not port or port < 1 or port > 65535 then return nil, fmt("bad port in '%s'", url) end
  return host, port, math.tointeger(tonumber(db)) or 0
end

local Client = { __name = "claude.mcp.RedisClient" }
Client.__index = Client
Client.__tostring = function(c)
  return fmt("claude.mcp.RedisClient (%s:%d, %s)", c.host, c.port, c.is_up and "up" or "down")
end

local connect_now -- (self)

-- One of the two connections ended (or never came up): both go, a reconnect is scheduled.
local function down(self, why)
  if self.closed then return end
  local was_up = self.is_up
  self.is_up, self.why = false, why or "unreachable"
  for _, k in ipairs { "cmd", "sub" } do
    local c = self[k]
    self[k] = nil
    if c then c:close() end
  end
  if self.connect_timer then self.connect_timer:stop() end
  if was_up and self.on_down then self.on_down(self.why) end
  local wait = self.backoff
  self.backoff = math.min(wait * 2, M.BACKOFF_MAX)
  self.retry_timer:start(wait * (0.75 + 0.5 * math.random()), function() connect_now(self) end)
end

-- Both connections up (and the database selected, the subscriptions sent): usable.
local function up(self)
  self.is_up, self.why, self.backoff = true, nil, M.BACKOFF
  if self.connect_timer then self.connect_timer:stop() end
  if self.on_up then async.spawn(self.on_up) end
end

local function subscribe_on(conn, channel, fn)
  return conn:subscribe(channel, function(kind, _, payload)
    if kind == "message" then fn(payload) end
  end)
end

connect_now = function(self)
  if self.closed then return end
  local ready, generation = 0, {}
  self.generation = generation
  local function event(what, why)
    if self.generation ~= generation then return end
    if what == "closed" then return core.defer(function() down(self, why) end) end
    ready = ready + 1
    if ready == 2 then
      -- the database first (commands are answered in order: SELECT before any other)
      if self.db ~= 0 then self.cmd:command({ "SELECT", self.db }, function() end) end
      for channel, fn in pairs(self.subs) do subscribe_on(self.sub, channel, fn) end
      up(self)
    end
  end
  local cmd, err = core.redis_connect(self.host, self.port, event)
  local sub
  if cmd then sub, err = core.redis_connect(self.host, self.port, event) end
  self.cmd, self.sub = cmd, sub
  if not sub then return down(self, err) end
  self.connect_timer = self.connect_timer or core.timer()
  self.connect_timer:start(M.CONNECT_TIMEOUT, function()
    if not self.is_up then down(self, "no answer within " .. M.CONNECT_TIMEOUT .. " s") end
  end)
  self.connect_timer:ref(false)
end

--- Connect (and keep connecting).
-- @tparam string url `redis://host:port[/db]`
-- @tparam[opt] table opts `on_up` (called in a task each time the client is up),
--   `on_down(why)`
-- @return the client, or nil, err, "misuse" for a bad URL
function M.connect(url, opts)
  local host, port, db = M.parse_url(url)
  if not host then return nil, port, "misuse" end
  opts = opts or {}
  local self = setmetatable({ host = host, port = port, db = db, url = url, is_up = false,
    closed = false, subs = {}, backoff = M.BACKOFF, on_up = opts.on_up,
    on_down = opts.on_down, retry_timer = core.timer() }, Client)
  self.retry_timer:ref(false) -- (a server waiting for Redis lives by its listener, not this)
  connect_now(self)
  return self
end

--- Why commands fail now (nil when up).
function Client:unavailable()
  if self.is_up then return nil end
  return fmt("Redis at %s:%d is unreachable (%s); reconnecting", self.host, self.port,
    tostring(self.why or "connecting"))
end

--- Send a command without waiting; `cb(reply)` or `cb(nil, err, kind)` when given.
-- @tparam table args
-- @tparam[opt] function cb
-- @return true, or nil, err, "unavailable"
function Client:send(args, cb)
  local why = self:unavailable()
  if why then return nil, why, "unavailable" end
  local ok, err = self.cmd:command(args, cb or function() end)
  if not ok then return nil, err, "unavailable" end
  return true
end

--- Send a command and wait for its reply (in a task).
-- @return the reply, or nil, err, kind (`"unavailable"`, `"redis"`: an error reply,
--   `"timeout"`)
function Client:call(...)
  local args = { ... }
  local why = self:unavailable()
  if why then return nil, why, "unavailable" end
  local sent, serr
  local ok, a, b, c = async.await(function(done)
    sent, serr = self.cmd:command(args, done)
    if not sent then done(nil, serr, "unavailable") end
  end, M.TIMEOUT)
  if not ok then return nil, fmt("Redis did not answer within %g s", M.TIMEOUT), "timeout" end
  if a == nil and c == "closed" then c = "unavailable" end
  return a, b, c
end

--- Keep a subscription to `channel` (across reconnects): `fn(payload)` per message.
function Client:subscribe(channel, fn)
  self.subs[channel] = fn
  if self.is_up then subscribe_on(self.sub, channel, fn) end
end

--- Is the client usable now?
function Client:up()
  return self.is_up
end

--- Stop: both connections close, no reconnect. Idempotent.
function Client:close()
  if self.closed then return end
  self.closed, self.is_up = true, false
  self.generation = nil
  for _, k in ipairs { "cmd", "sub" } do
    local c = self[k]
    self[k] = nil
    if c then c:close() end
  end
  self.retry_timer:close()
  if self.connect_timer then self.connect_timer:close() end
end

return M
