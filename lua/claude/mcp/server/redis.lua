--- A Redis client for the shared task store and event bus (claude.mcp.server.shared): two
-- connections (claude.core.Redis, hiredis on the loop), one for commands and one for the
-- subscriptions, which come back by themselves after a reconnect. Each connection resolves
-- its host without blocking the loop, connects within `CONNECT_TIMEOUT`, authenticates
-- (`AUTH`, when the URL has a password) and selects its database before it is used. While
-- Redis cannot be reached every command fails at once with kind `"unavailable"` and a
-- message that says so; the client reconnects with a backoff (0.1 s doubling to 5 s) and
-- calls `on_up` again. The password never appears in a message or a log line.
--
--     local r = redis.connect("redis://:secret@127.0.0.1:6379/0", { on_up = fn, on_down = fn })
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

--- Seconds a connection may take to come up (the name, the connect, AUTH and SELECT), and
-- a command to be answered.
M.CONNECT_TIMEOUT, M.TIMEOUT = 5, 10

--- Bytes a reply may hold (past it the connection is dropped, and made again): the largest
-- task record is `task_result_bytes` (32 MiB by default) and some.
M.MAX_REPLY = 64 * 1024 * 1024

local FORM = "redis://[[user:]password@]host[:port][/db]"

local function unescape(s)
  return (s:gsub("%%(%x%x)", function(h) return string.char(tonumber(h, 16)) end))
end

--- The URL as it may be shown: its password replaced by `***`.
-- @tparam string url
-- @treturn string
function M.redact(url)
  if type(url) ~= "string" then return tostring(url) end
  -- (to the last @: a password may hold one)
  return (url:gsub("^(%a+://)(.*)@", function(scheme, cred)
    local user = cred:match("^([^:]*):")
    return scheme .. (user and user ~= "" and user .. ":***" or "***") .. "@"
  end))
end

--- Parse `redis://[[user:]password@]host[:port][/db]` (the password and user
-- percent-decoded; `[::1]` for an IPv6 address).
-- @treturn table `host`, `port`, `db`, `user` (or nil), `password` (or nil)
-- or nil and why (the password left out)
function M.parse_url(url)
  if type(url) ~= "string" then return nil, "a " .. FORM .. " URL expected" end
  if url:find("^rediss://") then
    return nil, "rediss:// (Redis over TLS) is not supported: the libhiredis this build uses "
      .. "(0.14) has no TLS; reach Redis over a trusted network, or through a TLS tunnel "
      .. "(stunnel, spiped) on 127.0.0.1"
  end
  local rest = url:match("^redis://(.*)$")
  if not rest then return nil, fmt("'%s' is not a %s URL", M.redact(url), FORM) end
  local out = { db = 0 }
  local cred, at = rest:match("^(.*)@(.*)$") -- (the last @: a password may hold one)
  if cred then
    rest = at
    local user, password = cred:match("^([^:]*):(.*)$")
    if user then
      out.user, out.password = user ~= "" and unescape(user) or nil, unescape(password)
    else
      out.password = unescape(cred)
    end
    if out.password == "" then out.password = nil end
  end
  local host, tail = rest:match("^%[([%x:%.]+)%](.*)$") -- [IPv6]
  if not host then host, tail = rest:match("^([%w%.%-_]+)(.*)$") end
  local port, db = (tail or ""):match("^:(%d+)/?(%d*)$")
  if not port then db = (tail or ""):match("^/?(%d*)$") port = "6379" end
  if not host or not db then return nil, fmt("'%s' is not a %s URL", M.redact(url), FORM) end
  port = math.tointeger(tonumber(port))
  if not port or port < 1 or port > 65535 then
    return nil, fmt("bad port in '%s'", M.redact(url))
  end
  out.host, out.port, out.db = host, port, math.tointeger(tonumber(db)) or 0
  return out
end

local Client = { __name = "claude.mcp.RedisClient" }
Client.__index = Client
Client.__tostring = function(c)
  return fmt("claude.mcp.RedisClient (%s:%d, %s)", c.host, c.port, c.is_up and "up" or "down")
end

local connect_now, lost -- (self), (self, why)

-- One of the two connections ended (or never came up): both go, a reconnect is scheduled.
-- Once per attempt: the attempt's other callbacks find their generation gone.
local function down(self, why)
  if self.closed then return end
  local was_up = self.is_up or self.lost
  self.is_up, self.lost, self.why, self.generation = false, false, why or "unreachable", nil
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

-- What a new connection is told before it is used: AUTH (when the URL has a password),
-- SELECT (the commands' connection, a database other than 0), then PING: a server that
-- wants a password it was not given, or that never answers, is not up.
local function preamble(self, is_cmd)
  local list = {}
  if self.password then
    list[#list + 1] = self.user and { "AUTH", self.user, self.password }
      or { "AUTH", self.password }
  end
  if is_cmd and self.db ~= 0 then list[#list + 1] = { "SELECT", self.db } end
  list[#list + 1] = { "PING" }
  return list
end

connect_now = function(self)
  if self.closed then return end
  local ready, waiting, generation = 0, 0, {}
  self.generation = generation
  local function current() return self.generation == generation end
  -- (inside hiredis's callbacks: the connections close after them); the first failure of
  -- an attempt says why, the others are its echo
  local failed = false
  local function fail(why)
    if failed then return end
    failed = true
    if self.is_up then self.is_up, self.lost = false, true end -- (no command meanwhile)
    core.defer(function()
      if current() then down(self, why) end
    end)
  end
  local function ready_one()
    waiting = waiting - 1
    if waiting > 0 then return end
    for channel, fn in pairs(self.subs) do subscribe_on(self.sub, channel, fn) end
    up(self)
  end
  local function event(what, why)
    if not current() then return end
    if what == "closed" then return fail(why) end
    ready = ready + 1
    if ready < 2 then return end
    -- both connections up: each told its preamble, answered before anything else is sent
    for _, k in ipairs { "cmd", "sub" } do
      for _, args in ipairs(preamble(self, k == "cmd")) do
        waiting = waiting + 1
        self[k]:command(args, function(reply, err)
          if not current() then return end
          if reply ~= nil then return ready_one() end
          -- (Redis's words: WRONGPASS, NOAUTH, ERR ...; a password in them is hidden)
          local said = tostring(err)
          if self.password then said = said:gsub(self.password:gsub("%p", "%%%0"), "***") end
          fail(fmt("%s refused: %s", args[1], said))
        end)
      end
    end
  end
  local cmd, err = core.redis_connect(self.host, self.port, event, M.CONNECT_TIMEOUT,
    self.max_reply)
  local sub
  if cmd then
    sub, err = core.redis_connect(self.host, self.port, event, M.CONNECT_TIMEOUT,
      self.max_reply)
  end
  self.cmd, self.sub = cmd, sub
  if not sub then return down(self, err) end
  -- (AUTH, SELECT and PING answered too: each connection's own timeout ends at its connect)
  self.connect_timer = self.connect_timer or core.timer()
  self.connect_timer:start(M.CONNECT_TIMEOUT * 2, function()
    if current() and not self.is_up then
      down(self, "not ready within " .. M.CONNECT_TIMEOUT * 2 .. " s")
    end
  end)
  self.connect_timer:ref(false)
end

--- Connect (and keep connecting).
-- @tparam string url `redis://[[user:]password@]host[:port][/db]`
-- @tparam[opt] table opts `on_up` (called in a task each time the client is up),
--   `on_down(why)`, `max_reply` (bytes, `M.MAX_REPLY`)
-- @return the client, or nil, err, "misuse" for a bad URL
function M.connect(url, opts)
  local u, err = M.parse_url(url)
  if not u then return nil, err, "misuse" end
  opts = opts or {}
  local self = setmetatable({ host = u.host, port = u.port, db = u.db, user = u.user,
    password = u.password, url = M.redact(url), is_up = false, closed = false, subs = {},
    backoff = M.BACKOFF, on_up = opts.on_up, on_down = opts.on_down,
    max_reply = opts.max_reply or M.MAX_REPLY, retry_timer = core.timer() }, Client)
  self.retry_timer:ref(false) -- (a server waiting for Redis lives by its listener, not this)
  connect_now(self)
  return self
end

-- The commands' connection went: hiredis fails its commands before it says it closed (the
-- "closed" event, then `down`), and nothing is sent on it meanwhile.
lost = function(self, why)
  if self.is_up then self.is_up, self.lost, self.why = false, true, why end
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
  if not ok then
    lost(self, err)
    return nil, err, "unavailable"
  end
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
  if a == nil and c == "closed" then
    lost(self, b)
    c = "unavailable"
  end
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
