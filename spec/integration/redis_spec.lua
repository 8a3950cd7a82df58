-- The Redis client of the shared task store on its own (claude.core.Redis, hiredis on the
-- loop, and claude.mcp.server.redis above it) against a real redis-server started here on
-- 127.0.0.1 on a free port: commands and their replies, pub/sub, a server that goes away and
-- comes back (reconnect with backoff, the subscriptions made again), a server that never
-- answers (the connect timeout), bad URLs, a reply past max_reply, AUTH (a password, an ACL
-- user), and every handle closed after each spec.
local claude = require "claude"
local core = require "claude.core"
local process = require "claude.process"
local redis = require "claude.mcp.server.redis"
local cluster = require "support.cluster"
local harness = require "support.harness"

local function installed(exe)
  return os.execute("command -v " .. exe .. " >/dev/null 2>&1") and true or false
end
local missing = not installed("redis-server")
  and "redis-server is not installed (Debian: apt-get install redis-server); spec skipped"
  or not installed("redis-cli")
  and "redis-cli is not installed (Debian: apt-get install redis-tools); spec skipped"

-- Waits (generously: the machine is shared) until `pred()` holds; returns whether it did.
local function eventually(pred, seconds)
  local stop = core.now() + (seconds or 30)
  while core.now() < stop do
    if pred() then return true end
    claude.sleep(0.02)
  end
  return pred() and true or false
end

-- Waits until no handle is closing any more (the listener `cluster.free_port` used, a
-- connection closed): the count stays the same over a loop turn or two.
local function settle()
  local last = core.stats().handles
  for _ = 1, 200 do
    claude.sleep(0.05)
    local now = core.stats().handles
    if now == last then return end
    last = now
  end
end

-- A redis-server on `port` (no persistence), with `extra` arguments; waits until it answers.
local function start_redis(port, extra)
  local args = { "--port", tostring(port), "--bind", "127.0.0.1", "--save", "",
    "--appendonly", "no" }
  for _, a in ipairs(extra or {}) do args[#args + 1] = a end
  local p = assert(process.spawn { "redis-server", args = args, stdout = "ignore",
    stderr = "collect" })
  local auth = ""
  for i, a in ipairs(args) do
    if a == "--requirepass" then auth = " -a " .. harness.quote(args[i + 1]) end
  end
  assert(eventually(function()
    local f = io.popen("redis-cli --no-auth-warning -p " .. port .. auth .. " ping 2>/dev/null")
    local out = f and f:read("a") or ""
    if f then f:close() end
    return out:find("PONG") ~= nil
  end), "redis-server did not start")
  return p
end

local function stop_redis(p)
  p:signal("kill")
  p:wait(10)
  p:close()
end

-- A server that never answers (python3): `full`, a listener whose accept queue is full (a
-- connect hangs), or `accept`, one that accepts and never writes. It prints its port, and
-- ends when its stdin closes.
local function silent(how)
  return assert(process.spawn { "python3", args = { "-c", [[
import socket, sys, threading
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(0 if sys.argv[1] == "full" else 16)
held = []
if sys.argv[1] == "full":
    for i in range(3):
        c = socket.socket(); c.setblocking(False)
        try: c.connect(s.getsockname())
        except BlockingIOError: pass
        held.append(c)
else:
    def accept():
        while True: held.append(s.accept()[0])
    threading.Thread(target=accept, daemon=True).start()
print(s.getsockname()[1], flush=True)
sys.stdin.read()
]], how }, stdin = "pipe" })
end

-- Ends a `silent` server.
local function hush(p)
  p:close_stdin()
  p:wait(10)
  p:close()
end

-- Waits until the client's `unavailable()` says `text`.
local function says(c, text)
  assert.is_true(eventually(function()
    return (c:unavailable() or ""):find(text, 1, true) ~= nil
  end), tostring(c:unavailable()))
end

-- A client, up (or failing the spec with why not).
local function connected(url, opts)
  local c = assert(redis.connect(url, opts))
  assert(eventually(function() return c:up() end), tostring(c:unavailable()))
  return c
end

describe("the Redis client", function()
  local server, port, url
  local saved = {}

  setup(function()
    if missing then return end
    port = cluster.free_port()
    url = "redis://127.0.0.1:" .. port
    server = start_redis(port)
  end)

  teardown(function()
    if server then stop_redis(server) end
  end)

  local handles
  before_each(function()
    settle()
    harness.before()
    handles = core.stats().handles
    for _, k in ipairs { "BACKOFF", "BACKOFF_MAX", "CONNECT_TIMEOUT", "TIMEOUT" } do
      saved[k] = redis[k]
    end
  end)

  after_each(function()
    for k, v in pairs(saved) do redis[k] = v end
    -- a name being resolved when its connection closed finishes first (libuv's threads
    -- cannot be interrupted): its request is a handle until then
    eventually(function() return core.stats().handles <= handles end)
    harness.after()
  end)

  it("sends commands and hands back their replies, typed", harness.task(function()
    if missing then return pending(missing) end
    local c = connected(url .. "/3")
    assert.equal("OK", c:call("SET", "k", "v\0binary"))
    assert.equal("v\0binary", c:call("GET", "k"))
    assert.is_nil((c:call("GET", "nothing here")))
    assert.equal(3, c:call("RPUSH", "l", "a", 2, "c")) -- (a number goes as its text)
    assert.same({ "a", "2", "c" }, c:call("LRANGE", "l", 0, -1))
    assert.same({ "v\0binary", false, "v\0binary" }, c:call("MGET", "k", "none", "k"))
    local none, err, kind = c:call("INCR", "k")
    assert.is_nil(none)
    assert.matches("not an integer", err)
    assert.equal("redis", kind)
    -- the database of the URL: /3, not 0
    local c0 = connected(url)
    assert.is_nil((c0:call("GET", "k")))
    c0:close()
    assert.equal(1, c:call("DEL", "k"))
    c:call("DEL", "l")
    local sent = claude.async.event()
    assert.is_true(c:send({ "PING" }, function(reply)
      assert.equal("PONG", reply)
      sent:set()
    end))
    assert.is_true(sent:wait(30))
    c:close()
    assert.is_false(c:up())
    c:close() -- (idempotent)
  end))

  it("delivers what is published to its subscriptions", harness.task(function()
    if missing then return pending(missing) end
    local c = connected(url)
    local got = {}
    c:subscribe("news", function(payload) got[#got + 1] = payload end)
    -- (the subscription is made on its own connection: published until it is heard)
    assert.is_true(eventually(function()
      c:send({ "PUBLISH", "news", "first" })
      claude.sleep(0.05)
      return #got > 0
    end))
    local before = #got
    assert.equal(1, c:call("PUBLISH", "news", "bytes\0and \n lines"))
    assert.is_true(eventually(function() return #got > before end))
    assert.equal("bytes\0and \n lines", got[#got])
    assert.equal(0, c:call("PUBLISH", "elsewhere", "x"))
    c:close()
  end))

  it("reconnects with a backoff after the server went away, and subscribes again",
    harness.task(function()
    if missing then return pending(missing) end
    redis.BACKOFF, redis.BACKOFF_MAX = 0.05, 0.4
    local p2 = cluster.free_port()
    local own = start_redis(p2)
    local ups, downs, got = 0, {}, {}
    local c = connected("redis://127.0.0.1:" .. p2, {
      on_up = function() ups = ups + 1 end,
      on_down = function(why) downs[#downs + 1] = why end })
    assert.is_true(eventually(function() return ups == 1 end))
    c:subscribe("back", function(payload) got[#got + 1] = payload end)
    stop_redis(own)
    assert.is_true(eventually(function() return not c:up() end))
    assert.is_true(eventually(function() return #downs == 1 end))
    local v, err, kind = c:call("PING")
    assert.is_nil(v)
    assert.equal("unavailable", kind)
    assert.matches("Redis at 127%.0%.0%.1:" .. p2 .. " is unreachable", err)
    local s1, serr = c:send({ "PING" })
    assert.is_nil(s1)
    assert.matches("reconnecting", serr)
    claude.sleep(0.5) -- (a few attempts fail meanwhile: the backoff grows to its bound)
    assert.equal(1, #downs, "on_down once per outage, not per attempt")
    own = start_redis(p2)
    assert.is_true(eventually(function() return c:up() and ups == 2 end))
    assert.equal("PONG", c:call("PING"))
    -- the subscription came back with the connection
    assert.is_true(eventually(function()
      c:send({ "PUBLISH", "back", "again" })
      claude.sleep(0.05)
      return got[#got] == "again"
    end))
    c:close()
    stop_redis(own)
  end))

  it("gives up a connect nobody answers within its timeout", harness.task(function()
    if missing then return pending(missing) end
    if not installed("python3") then return pending("python3 is not installed") end
    -- a listener whose accept queue is full: the kernel drops our SYN, the connect hangs
    local deaf = silent("full")
    local deaf_port = assert(tonumber(deaf:read_line(30)))
    -- the connection itself: its own timeout, reported once
    local events = {}
    local conn = assert(core.redis_connect("127.0.0.1", deaf_port, function(what, why)
      events[#events + 1] = { what, why }
    end, 0.3))
    assert.equal("claude.core.Redis (connecting)", tostring(conn))
    assert.is_true(eventually(function() return #events > 0 end))
    assert.equal("closed", events[1][1])
    assert.equal("no connection within 0.3 s", events[1][2])
    claude.sleep(0.1)
    assert.equal(1, #events)
    conn:close()
    -- the client: unavailable, saying so, and trying again
    redis.CONNECT_TIMEOUT, redis.BACKOFF, redis.BACKOFF_MAX = 0.2, 0.05, 0.2
    local c = assert(redis.connect("redis://127.0.0.1:" .. deaf_port))
    says(c, "no connection within 0.2 s")
    assert.is_false(c:up())
    c:close()
    hush(deaf)
  end))

  it("is not up on a server that accepts and never answers", harness.task(function()
    if missing then return pending(missing) end
    if not installed("python3") then return pending("python3 is not installed") end
    local mute = silent("accept")
    local mute_port = assert(tonumber(mute:read_line(30)))
    redis.CONNECT_TIMEOUT, redis.BACKOFF = 0.2, 0.05
    local c = assert(redis.connect("redis://127.0.0.1:" .. mute_port))
    says(c, "not ready within 0.4 s")
    c:close()
    hush(mute)
  end))

  it("refuses bad URLs, and says why a host cannot be resolved", harness.task(function()
    if missing then return pending(missing) end
    for bad, why in pairs {
      ["http://127.0.0.1:6379"] = "is not a redis://",
      ["redis://"] = "is not a redis://",
      ["redis://host:99999"] = "bad port",
      ["redis://host:6379/x"] = "is not a redis://",
      ["rediss://127.0.0.1:6380"] = "has no TLS",
    } do
      local c, err, kind = redis.connect(bad)
      assert.is_nil(c, bad)
      assert.matches(why, err, 1, true)
      assert.equal("misuse", kind)
    end
    assert.is_nil(redis.connect(42))
    -- parsed: the defaults, an IPv6 address, a user, a password holding @ and %-escapes
    assert.same({ host = "h", port = 6379, db = 0 }, redis.parse_url("redis://h"))
    assert.same({ host = "::1", port = 7000, db = 2 }, redis.parse_url("redis://[::1]:7000/2"))
    assert.same({ host = "h", port = 1, db = 0, user = "ann", password = "p@ss:w/rd" },
      redis.parse_url("redis://ann:p@ss:w%2Frd@h:1"))
    assert.same({ host = "h", port = 6379, db = 0, password = "pw" },
      redis.parse_url("redis://pw@h"))
    assert.equal("redis://ann:***@h:1", redis.redact("redis://ann:p@ss@h:1"))
    assert.equal("redis://***@h", redis.redact("redis://:pw@h"))
    assert.equal("redis://h:1", redis.redact("redis://h:1"))
    -- a name that does not resolve: resolved off the loop, said so (one attempt: a retry's
    -- resolve could still be waiting on DNS when the spec ends)
    redis.BACKOFF = 60
    local c = assert(redis.connect("redis://no-such-host.invalid:" .. port))
    says(c, "cannot resolve 'no-such-host.invalid'")
    c:close()
    -- a name that does: localhost
    local l = connected("redis://localhost:" .. port)
    assert.equal("PONG", l:call("PING"))
    l:close()
  end))

  it("drops a connection whose reply passes max_reply, then comes back", harness.task(function()
    if missing then return pending(missing) end
    redis.BACKOFF = 0.05
    local c = connected(url, { max_reply = 1024 * 1024 })
    local big = string.rep("0123456789abcdef", 128 * 1024) -- 2 MiB
    assert.equal("OK", c:call("SET", "big", big)) -- (what is sent is not bounded)
    assert.equal("OK", c:call("SET", "small", string.rep("x", 512 * 1024)))
    assert.equal(512 * 1024, #c:call("GET", "small")) -- (under it, over many reads)
    local v, err, kind = c:call("GET", "big")
    assert.is_nil(v)
    assert.matches("a reply larger than 1048576 bytes %(max_reply%)", err)
    assert.equal("unavailable", kind)
    assert.is_true(eventually(function() return c:up() end))
    assert.equal(#big, c:call("STRLEN", "big"))
    c:call("DEL", "big", "small")
    c:close()
  end))

  it("authenticates with a password or an ACL user, and never shows the password",
    harness.task(function()
    if missing then return pending(missing) end
    redis.BACKOFF = 0.05
    local p2 = cluster.free_port()
    local own = start_redis(p2, { "--requirepass", "s3cret/pw" })
    local base = "127.0.0.1:" .. p2
    local c = connected("redis://:s3cret%2Fpw@" .. base .. "/1")
    assert.equal("OK", c:call("SET", "k", "v"))
    assert.equal("OK", c:call("ACL", "SETUSER", "ann", "on", ">ann-pw", "~*", "&*", "+@all"))
    local ann = connected("redis://ann:ann-pw@" .. base .. "/1")
    assert.equal("v", ann:call("GET", "k"))
    assert.equal("ann", ann:call("ACL", "WHOAMI"))
    ann:close()
    c:close()
    -- the task store under an ACL user with only what docs/scaling.md lists: saves, reads,
    -- renewals, a sweep, events; Redis's ACL LOG records every command it denied
    local shared_redis = require "claude.mcp.server.shared_redis"
    c = connected("redis://:s3cret%2Fpw@" .. base)
    assert.equal("OK", c:call("ACL", "SETUSER", "store", "on", ">store-pw", "~claudelua:*",
      "&claudelua:*", "+ping", "+select", "+eval", "+hget", "+del", "+set", "+publish",
      "+subscribe", "+hset", "+pexpire", "+sadd", "+srem", "+smembers", "+exists"))
    local lines = {}
    local of = assert(shared_redis.open("redis://store:store-pw@" .. base .. "/4",
      { node = "n1", lease = 0.3, log = function(l) lines[#lines + 1] = l end }))
    local store = of("acl")
    local heard = {}
    c:subscribe("claudelua:acl:events", function(p) heard[#heard + 1] = p end)
    assert.is_true(eventually(function() return store.client:up() end))
    local stored = claude.async.event()
    store:saved({ id = "n1.kept", ttl_ms = 60000, status = "working" },
      { taskId = "n1.kept", status = "working" }, function() stored:set() end)
    store:saved({ id = "n1.lost", ttl_ms = 60000, status = "working" },
      { taskId = "n1.lost", status = "working" })
    assert.is_true(stored:wait(30))
    store._mine["n1.lost"] = nil -- (not renewed: its lease lapses, a sweep fails it)
    assert.equal("working", store:find("n1.kept").status)
    assert.is_true(eventually(function()
      local v = store:find("n1.lost")
      return v and v.status == "failed"
    end))
    assert.equal("working", store:find("n1.kept").status) -- (renewed)
    store:forgot({ id = "n1.kept" })
    assert.is_true(eventually(function() return store:find("n1.kept") == nil end))
    assert.is_true(eventually(function() return #heard > 0 end)) -- (the sweep's event)
    of.close()
    assert.same({}, c:call("ACL", "LOG"))
    for _, l in ipairs(lines) do assert.is_nil(l:find("store-pw", 1, true), l) end
    assert.matches("redis://store:%*%*%*@", lines[1])
    c:close()
    -- a wrong password, and none: not up, saying why, with no password in sight
    for u, why in pairs { ["redis://:wrong-pw@" .. base] = "AUTH refused: WRONGPASS",
      ["redis://ann:wrong-pw@" .. base] = "AUTH refused: WRONGPASS",
      ["redis://" .. base] = "PING refused: NOAUTH" } do
      local downs = {}
      local bad = assert(redis.connect(u, { on_down = function(w) downs[#downs + 1] = w end }))
      says(bad, why)
      local _, err = bad:call("PING")
      assert.is_nil(err:find("wrong-pw", 1, true))
      assert.is_nil(tostring(bad):find("wrong-pw", 1, true))
      assert.is_nil(bad.url:find("wrong-pw", 1, true))
      bad:close()
    end
    stop_redis(own)
  end))
end)
