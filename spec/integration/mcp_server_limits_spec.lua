-- What a client can ask `claudelua mcp --http` to remember, and who sees it (issue 34, items
-- 1-4): a listen gets `notifications/tasks` only for the `taskIds` it names; tasks are
-- bounded per client and in the server, a task waiting for input expires, finished results
-- are bounded in bytes; a listen's `resourceSubscriptions` and the legacy era's
-- `resources/subscribe` are bounded in count and URI length (items 1-4); the memory that
-- abandoned event streams left behind comes back while the session lives on (item 5).
local claude = require "claude"
local core = require "claude.core"
local async = require "claude.async"
local json = require "claude.json"
local http = require "claude.http.client"
local process = require "claude.process"
local harness = require "support.harness"
local mcp_http = require "support.mcp_http"

local PV, CAPS = "io.modelcontextprotocol/protocolVersion",
  "io.modelcontextprotocol/clientCapabilities"
local TASKS = "io.modelcontextprotocol/tasks"
local MODERN, LEGACY = "2026-07-28", "2025-11-25"
local DECLARED = { elicitation = {}, extensions = { [TASKS] = {} } }

local TOOLS = [[
local claude = require "claude"
local srv
srv = claude.server("limits", {
  claude.tool("confirm", function(_, ctx)
    ctx.task()
    local r = ctx.elicit { message = "sure?" }
    return "confirmed " .. r.action
  end, { task = true }),
  claude.tool("big", { n = "number" }, function(a, ctx)
    ctx.task()
    claude.sleep(0.01)
    return ("x"):rep(a.n)
  end, { task = true }),
  claude.tool("grow", function()
    srv:add(claude.tool("extra" .. math.random(1e9), function() return "" end))
    return "grown"
  end),
  claude.tool("chatty", { n = "number" }, function(a, ctx)
    local chunk = ("y"):rep(32 * 1024)
    for i = 1, a.n do
      ctx.log("info", chunk .. i)
      claude.sleep(0.001)
    end
    return "done"
  end),
  claude.resource { uri = "mem://a", name = "a", text = "A" },
}, { subscribe = true })
return srv
]]

-- The same tools behind OAuth: a verify function over two fixed tokens.
local OWNED = TOOLS:gsub('}, { subscribe = true }%)', [[}, { subscribe = true, auth = {
  verify = function(token)
    local sub = ({ ["alice-token"] = "alice", ["bob-token"] = "bob" })[token]
    return sub and { sub = sub, iss = "https://as.example" } or nil
  end,
  authorization_servers = { "https://as.example" } } })]])

local file
local function serve(flags)
  local args = {}
  for _, f in ipairs(flags or {}) do args[#args + 1] = f end
  args[#args + 1] = file
  local server, url = mcp_http.start(args)
  return setmetatable({ url = url, pid = server.pid }, { __close = function()
    server:signal("term")
    server:wait(20)
    server:close()
  end })
end

local ids = 0
local function modern_msg(method, params, caps, token)
  ids = ids + 1
  params = params or {}
  params._meta = { [PV] = MODERN, [CAPS] = caps or DECLARED }
  local h = { ["content-type"] = "application/json",
    accept = "application/json, text/event-stream", ["mcp-protocol-version"] = MODERN,
    ["mcp-method"] = method }
  if method == "tools/call" then h["mcp-name"] = params.name end
  if method:match("^tasks/") then h["mcp-name"] = params.taskId end
  if token then h.authorization = "Bearer " .. token end
  return { jsonrpc = "2.0", id = ids, method = method, params = params }, h
end

local post = mcp_http.post

local function modern(url, method, params, caps, token)
  return (post(url, modern_msg(method, params, caps, token)))
end

-- A listen's stream: its messages as they come (`got`), `until_(pred)` waits for one.
local function listen(url, notifications, caps, token)
  local body, h = modern_msg("subscriptions/listen", { notifications = notifications }, caps,
    token)
  local stream = assert(http.stream { method = "POST", url = url, headers = h,
    body = json.encode(body), timeout = 60 })
  local l = { got = {}, arrived = async.event() }
  l.reader = claude.spawn(function()
    pcall(function() -- (until the spec closes the stream)
      for event in stream:events() do
        l.got[#l.got + 1] = json.decode(event.data)
        l.arrived:set()
      end
    end)
  end)
  function l.until_(pred)
    local deadline = core.now() + 30
    while true do
      for _, m in ipairs(l.got) do
        if pred(m) then return m end
      end
      assert(core.now() < deadline, "nothing came: " .. json.encode(l.got))
      l.arrived = async.event()
      l.arrived:wait(deadline - core.now())
    end
  end
  function l.close() stream:close() l.reader:cancel() end
  return l
end

-- tasks/get until `pred(answer)`, with a generous deadline (a poll, as a client does).
local function poll(url, id, pred, token)
  local deadline = core.now() + 30
  while true do
    local m = modern(url, "tasks/get", { taskId = id }, nil, token)
    if pred(m) then return m end
    assert(core.now() < deadline, "the task never got there: " .. json.encode(m))
    claude.sleep(0.05)
  end
end

-- The resident memory of a process, in bytes.
local function rss(pid)
  local f = assert(io.open("/proc/" .. pid .. "/status"))
  local text = f:read("a")
  f:close()
  return tonumber(text:match("VmRSS:%s*(%d+) kB")) * 1024
end

local MiB = 1024 * 1024
-- (a sanitizer's shadow memory and quarantine keep what is freed: RSS says nothing there,
-- and only the refusals are checked)
local SANITIZED = os.getenv("CLAUDELUA_SANITIZER_PRELOAD") ~= nil

-- Waits (60 s at most) until the server's RSS is within 8 MiB of `base` again: what a
-- refused request took while it was read is given back (claude.mcp.server.trim).
local function settles(pid, base)
  if SANITIZED then return end
  local deadline, now = core.now() + 60, rss(pid)
  while now > base + 8 * MiB and core.now() < deadline do
    claude.sleep(0.2)
    now = rss(pid)
  end
  assert(now <= base + 8 * MiB, ("%.1f MiB more than before"):format((now - base) / MiB))
end

local function a_task(url, tool, args, token)
  local m = modern(url, "tools/call", { name = tool, arguments = args or {} }, nil, token)
  assert(m.result and m.result.resultType == "task", json.encode(m))
  return m.result.taskId
end

describe("claudelua mcp --http: what a client can make the server remember", function()
  setup(function() file = harness.tempfile(TOOLS, ".lua") end)

  it("sends a listen only the tasks named in its taskIds (item 1)", harness.task(function()
    local s <close> = serve()
    local id = a_task(s.url, "confirm")
    -- one listen names no task, one names it; both ask for list changes
    local blind = listen(s.url, { toolsListChanged = true, taskIds = {} })
    local named = listen(s.url, { toolsListChanged = true, taskIds = { id } })
    local function acked(m) return m.method == "notifications/subscriptions/acknowledged" end
    local ack = named.until_(acked)
    assert.same({ id }, ack.params.notifications.taskIds)
    blind.until_(acked)
    assert.equal("input_required", poll(s.url, id, function(m)
      return m.result.status == "input_required" end).result.status)
    modern(s.url, "tasks/update", { taskId = id,
      inputResponses = { ["elicit-1"] = { action = "accept", content = {} } } })
    local done = named.until_(function(m)
      return m.method == "notifications/tasks" and m.params.status == "completed" end)
    assert.equal(id, done.params.taskId)
    -- a list change after it: what the blind listen got before it is all it gets of the task
    modern(s.url, "tools/call", { name = "grow", arguments = {} })
    blind.until_(function(m) return m.method == "notifications/tools/list_changed" end)
    for _, m in ipairs(blind.got) do
      assert.is_not.equal("notifications/tasks", m.method, json.encode(m))
    end
    blind.close()
    named.close()
  end, 120))

  it("keeps a task from another OAuth principal, even one that names it (item 1)",
      harness.task(function()
    local owned = harness.tempfile(OWNED, ".lua")
    local server, url = mcp_http.start { owned }
    local id = a_task(url, "confirm", nil, "alice-token")
    local acked = function(m) return m.method == "notifications/subscriptions/acknowledged" end
    local bob = listen(url, { toolsListChanged = true, taskIds = { id } }, nil, "bob-token")
    local alice = listen(url, { taskIds = { id } }, nil, "alice-token")
    bob.until_(acked)
    alice.until_(acked)
    for _, method in ipairs { "tasks/get", "tasks/update", "tasks/cancel" } do
      local m = modern(url, method, { taskId = id, inputResponses = {} }, nil, "bob-token")
      assert.equal(-32602, m.error and m.error.code, method .. ": " .. json.encode(m))
    end
    poll(url, id, function(m) return m.result.status == "input_required" end, "alice-token")
    modern(url, "tasks/update", { taskId = id,
      inputResponses = { ["elicit-1"] = { action = "accept", content = {} } } }, nil,
      "alice-token")
    alice.until_(function(m)
      return m.method == "notifications/tasks" and m.params.status == "completed" end)
    modern(url, "tools/call", { name = "grow", arguments = {} }, nil, "bob-token")
    bob.until_(function(m) return m.method == "notifications/tools/list_changed" end)
    for _, m in ipairs(bob.got) do
      assert.is_not.equal("notifications/tasks", m.method, json.encode(m))
    end
    bob.close()
    alice.close()
    server:signal("term")
    server:wait(20)
    server:close()
    os.remove(owned)
  end, 120))

  it("bounds the tasks of a client (item 2)", harness.task(function()
    local s <close> = serve() -- the defaults: 64 per client
    local held = {}
    for i = 1, 64 do held[i] = a_task(s.url, "confirm") end
    local m = modern(s.url, "tools/call", { name = "confirm", arguments = {} })
    assert.equal(-32602, m.error and m.error.code, json.encode(m))
    assert.equal("max_client_tasks", m.error.data.bound)
    assert.equal(64, m.error.data.max)
    -- one ends: its room goes to the next task (the finished one is forgotten)
    modern(s.url, "tasks/cancel", { taskId = held[1] })
    local fourth = a_task(s.url, "confirm")
    assert.equal(-32602, modern(s.url, "tasks/get", { taskId = held[1] }).error.code)
    assert.equal("input_required", poll(s.url, fourth, function(r)
      return r.result.status == "input_required" end).result.status)
  end, 120))

  it("bounds the tasks of the server (item 2)", harness.task(function()
    local s <close> = serve { "--max-tasks", "3" }
    for _ = 1, 3 do a_task(s.url, "confirm") end
    local m = modern(s.url, "tools/call", { name = "confirm", arguments = {} })
    assert.equal("max_tasks", m.error and m.error.data.bound, json.encode(m))
    assert.equal(3, m.error.data.max)
  end, 120))

  it("ends a task whose input never comes (item 2)", harness.task(function()
    local s <close> = serve { "--task-input-timeout", "1" }
    local id = a_task(s.url, "confirm")
    local m = poll(s.url, id, function(r) return r.result.status == "failed" end)
    assert.matches("task_input_timeout", m.result.error.message)
  end, 120))

  it("keeps finished results within task_result_bytes (item 2)", harness.task(function()
    local s <close> = serve { "--task-result-bytes", "250000" }
    local list = {}
    for i = 1, 4 do
      list[i] = a_task(s.url, "big", { n = 100000 })
      poll(s.url, list[i], function(r) return r.error or r.result.status == "completed" end)
    end
    -- 4 x 100 kB: the oldest went
    assert.equal(-32602, modern(s.url, "tasks/get", { taskId = list[1] }).error.code)
    assert.equal("completed", modern(s.url, "tasks/get", { taskId = list[4] }).result.status)
    -- a result larger than the bound is not kept: the task fails, saying why
    local id = a_task(s.url, "big", { n = 300000 })
    local m = poll(s.url, id, function(r) return r.result.status ~= "working" end)
    assert.equal("failed", m.result.status)
    assert.matches("task_result_bytes", m.result.error.message)
  end, 120))

  it("bounds a listen's resourceSubscriptions and their length (item 3)", harness.task(function()
    local s <close> = serve()
    local uris = {}
    for i = 1, 257 do uris[i] = "mem://r" .. i end
    local body, h = modern_msg("subscriptions/listen",
      { notifications = { resourceSubscriptions = uris } })
    local m = post(s.url, body, h)
    assert.equal(-32602, m.error and m.error.code, json.encode(m))
    assert.equal("max_subscriptions", m.error.data.bound)
    body, h = modern_msg("subscriptions/listen",
      { notifications = { resourceSubscriptions = { "mem://" .. ("u"):rep(3000) } } })
    m = post(s.url, body, h)
    assert.equal("max_uri", m.error and m.error.data.bound, json.encode(m))
    -- three listens of 400,000 URIs each (+202 MiB while they stayed open): refused, and the
    -- memory their bodies took comes back
    local base = rss(s.pid)
    local many = {}
    for i = 1, 400000 do many[i] = "mem://" .. i end
    for _ = 1, 3 do
      body, h = modern_msg("subscriptions/listen",
        { notifications = { resourceSubscriptions = many } })
      m = post(s.url, body, h)
      assert.equal("max_subscriptions", m.error and m.error.data.bound)
    end
    settles(s.pid, base)
    -- within the bounds: acknowledged
    local l = listen(s.url, { resourceSubscriptions = { uris[1], uris[2] } })
    local ack = l.until_(function(x)
      return x.method == "notifications/subscriptions/acknowledged" end)
    assert.same({ uris[1], uris[2] }, ack.params.notifications.resourceSubscriptions)
    l.close()
  end, 120))

  it("bounds the listens of one stdio connection (item 3)", harness.task(function()
    local p <close> = assert(process.spawn { harness.claudelua, args = { "mcp", file },
      stdout = "json", stderr = "collect" })
    local function open(id)
      local m = modern_msg("subscriptions/listen", { notifications = { toolsListChanged = true } })
      m.id = id
      p:write_json(m)
      local got = assert(p:read_line(30), "no answer: " .. p:stderr())
      return got
    end
    for i = 1, 16 do
      assert.equal("notifications/subscriptions/acknowledged", open("L" .. i).method)
    end
    local m = open("L17")
    assert.equal("max_listens", m.error and m.error.data.bound, json.encode(m))
    -- one ends: room for another
    p:write_json { jsonrpc = "2.0", method = "notifications/cancelled",
      params = { requestId = "L1" } }
    assert.equal("notifications/subscriptions/acknowledged", open("L18").method)
    p:close_stdin()
    p:wait(20)
  end, 120))

  it("bounds resources/subscribe of a session, in count and length (item 4)",
      harness.task(function()
    local s <close> = serve() -- the defaults: 256 per session
    local h = { ["content-type"] = "application/json",
      accept = "application/json, text/event-stream" }
    local init, resp = post(s.url, { jsonrpc = "2.0", id = 0, method = "initialize", params = {
      protocolVersion = LEGACY, capabilities = {},
      clientInfo = { name = "spec", version = "1" } } }, h)
    assert(init.result, json.encode(init))
    h["mcp-session-id"], h["mcp-protocol-version"] = resp.headers["mcp-session-id"], LEGACY
    local function subscribe(id, uri)
      return (post(s.url, { jsonrpc = "2.0", id = id, method = "resources/subscribe",
        params = { uri = uri } }, h))
    end
    for i = 1, 256 do assert(subscribe(i, "mem://r" .. i).result) end
    assert(subscribe(1000, "mem://r1").result) -- again: nothing more held
    local m = subscribe(1001, "mem://r257")
    assert.equal("max_subscriptions", m.error and m.error.data.bound, json.encode(m))
    assert(post(s.url, { jsonrpc = "2.0", id = 1002, method = "resources/unsubscribe",
      params = { uri = "mem://r1" } }, h).result)
    assert(subscribe(1003, "mem://r257").result)
    m = subscribe(1004, "mem://" .. ("u"):rep(3000))
    assert.equal("max_uri", m.error and m.error.data.bound, json.encode(m))
    -- 200 URIs of 256 KB (+169 MiB for 512 of them): refused, the memory comes back
    local base = rss(s.pid)
    local long = "mem://" .. ("u"):rep(256 * 1024)
    for i = 1, 200 do
      m = subscribe(2000 + i, long .. i)
      assert.equal("max_uri", m.error and m.error.data.bound)
    end
    settles(s.pid, base)
  end, 120))

  it("gives back what abandoned event streams left while the session lives on (item 5)",
    harness.task(function()
      local s <close> = serve()
      local h = { ["content-type"] = "application/json",
        accept = "application/json, text/event-stream" }
      local _, resp = post(s.url, { jsonrpc = "2.0", id = 0, method = "initialize", params = {
        protocolVersion = LEGACY, capabilities = {},
        clientInfo = { name = "spec", version = "1" } } }, h)
      h["mcp-session-id"], h["mcp-protocol-version"] = resp.headers["mcp-session-id"], LEGACY
      local function call(id, n)
        return json.encode { jsonrpc = "2.0", id = id, method = "tools/call",
          params = { name = "chatty", arguments = { n = n } } }
      end
      post(s.url, json.decode(call(1, 2)), h)
      local base = rss(s.pid)
      -- waves of 60 calls whose streams the client leaves after their first event; the calls
      -- go on after their streams were left, and what they leave is held (past the 8 MiB of
      -- growth the trim looks for) until the trim gives it back. How much one wave holds at
      -- once depends on the machine's speed (about 18 MiB quiet, 8 to 11 under load: most
      -- events then come after the close), so waves come until the server holds 9 MiB more.
      local peak, waves, wave_id = base, 0, 100
      local function wave()
        waves = waves + 1
        local streams = {}
        for i = 1, 60 do
          wave_id = wave_id + 1
          streams[i] = assert(http.stream { method = "POST", url = s.url, headers = h,
            body = call(wave_id, 200), timeout = 60 })
        end
        for i = 1, 60 do
          local next_event, st, v = streams[i]:events()
          next_event(st, v) -- its first event: the call runs
          local r = rss(s.pid)
          if r > peak then peak = r end
        end
        for i = 1, 60 do streams[i]:close() end
      end
      wave()
      if SANITIZED then return end
      -- the session stays alive and busy: a ping every 0.2 s
      local talking = true
      local trickle = claude.spawn(function()
        local n = 1000
        while talking do
          n = n + 1
          post(s.url, { jsonrpc = "2.0", id = n, method = "ping" }, h)
          claude.sleep(0.2)
        end
      end)
      local now = rss(s.pid)
      while peak - base < 9 * MiB and waves < 6 do
        local deadline = core.now() + 10
        while peak - base < 9 * MiB and core.now() < deadline do
          claude.sleep(0.2)
          now = rss(s.pid)
          if now > peak then peak = now end
        end
        if peak - base < 9 * MiB then wave() end
      end
      local deadline = core.now() + 60
      while now > base + 6 * MiB and core.now() < deadline do
        if now > peak then peak = now end
        claude.sleep(0.2)
        now = rss(s.pid)
      end
      talking = false
      trickle:join(30)
      assert(peak - base >= 9 * MiB, ("%d waves held only %.1f MiB"):format(waves,
        (peak - base) / MiB))
      assert(now <= base + 6 * MiB, ("%.1f MiB of the %.1f MiB the load took are still held")
        :format((now - base) / MiB, (peak - base) / MiB))
    end, 240))
end)
