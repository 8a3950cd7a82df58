-- `claudelua mcp --http` past one process, sharing its tasks and events through Redis
-- (docs/scaling.md): redis-server, three replicas (`--tasks redis://...`) and HAProxy, each
-- started here on 127.0.0.1, HAProxy round-robin with no stickiness for the modern era. Any
-- replica answers for any task; a listen on one hears the others; a replica that dies takes
-- its tasks down as `failed` within their lease; Redis going away gives clear errors, then
-- everything comes back by itself.
local claude = require "claude"
local core = require "claude.core"
local json = require "claude.json"
local http = require "claude.http.client"
local cluster = require "support.cluster"
local conformance = require "support.conformance"
local harness = require "support.harness"

local PV, CAPS = "io.modelcontextprotocol/protocolVersion",
  "io.modelcontextprotocol/clientCapabilities"
local TASKS = "io.modelcontextprotocol/tasks"
local TASK_CAPS = { elicitation = {}, extensions = { [TASKS] = {} } }

-- Scenarios the suite lists but skips itself (no check to run yet).
local EMPTY = { ["tasks-status-notifications"] = true }

local TOOLS = [[
local claude = require "claude"
local node = ...
local srv
srv = claude.server("lb", {
  claude.tool("whoami", "The node that answers", function() return node end),
  claude.tool("touch", "Says a resource was updated", { uri = "string" }, function(args)
    srv:resource_updated(args.uri)
    return "touched on " .. node
  end),
  claude.tool("ask", "Asks a name in a task", function(_, ctx)
    ctx.task()
    local r, err = ctx.elicit { message = "Your name?", requestedSchema = { type = "object",
      properties = { name = { type = "string" } } } }
    if not r then return nil, err end
    return "Hello, " .. r.content.name .. " (from " .. node .. ")"
  end, { task = true }),
  claude.tool("slow", "Takes a while (a task)", { seconds = "number" }, function(args)
    claude.sleep(args.seconds or 0.3)
    return "slow done on " .. node
  end, { task = true }),
  claude.tool("mark", "Writes a file after a while (a task)", { seconds = "number",
    path = "string" }, function(args)
    claude.sleep(args.seconds)
    local f = assert(io.open(args.path, "w"))
    f:write(node)
    f:close()
    return "marked on " .. node
  end, { task = true }),
  claude.tool("grow", "Adds a tool to this replica", { name = "string" }, function(args)
    srv:add(claude.tool(args.name, "Added", function() return args.name end))
    return "grown on " .. node
  end),
}, { version = node, subscribe = true })
return srv
]]

local id = 0

-- A POST of protocol 2026-07-28 with its envelope and standard headers: the answer (or the
-- error body) and the HTTP status.
local function modern(url, method, params, caps)
  id = id + 1
  params = params or {}
  params._meta = { [PV] = "2026-07-28", [CAPS] = caps or TASK_CAPS }
  local headers = { ["content-type"] = "application/json",
    accept = "application/json, text/event-stream", ["mcp-protocol-version"] = "2026-07-28",
    ["mcp-method"] = method }
  local name = params.name or params.uri or params.taskId
  if name then headers["mcp-name"] = name end
  local resp, err = http.request { method = "POST", url = url, headers = headers,
    body = json.encode { jsonrpc = "2.0", id = id, method = method, params = params },
    timeout = 30 }
  if not resp then
    if err.kind ~= "http" then return nil, err end
    return json.decode(err.body), err.status
  end
  return json.decode(resp.body), resp.status
end

-- tasks/get until `pred(result)`, for at most `deadline` seconds (generous: the machine is
-- shared); returns the last result.
local function poll(url, task_id, pred, deadline)
  local last
  local stop = core.now() + (deadline or 60)
  while core.now() < stop do
    local r = modern(url, "tasks/get", { taskId = task_id })
    if r and r.result then
      last = r.result
      if pred(last) then return last end
    end
    claude.sleep(0.1)
  end
  return last
end

local function node_of(task_id) return task_id:match("^([%w_%-]+)%.") end

-- A replica other than those named.
local function other_than(c, ...)
  local skip = {}
  for _, n in ipairs { ... } do skip[n] = true end
  for _, node in ipairs(c.nodes) do
    if not skip[node] then return c.replicas[node], node end
  end
end

-- Opens a subscriptions/listen on `url` (a replica): its events' messages go to the list
-- returned, as they come.
local function listen(url, notifications)
  id = id + 1
  local got, acked = {}, false
  local body = json.encode { jsonrpc = "2.0", id = id, method = "subscriptions/listen",
    params = { notifications = notifications, _meta = { [PV] = "2026-07-28",
      [CAPS] = TASK_CAPS } } }
  local req = assert(core.http_request { method = "POST", url = url, body = body,
    headers = { ["content-type"] = "application/json",
      accept = "application/json, text/event-stream", ["mcp-protocol-version"] = "2026-07-28",
      ["mcp-method"] = "subscriptions/listen" },
    on_event = function(e)
      local m = json.decode(e.data)
      if m and m.method == "notifications/subscriptions/acknowledged" then acked = true end
      got[#got + 1] = m
    end, on_done = function() end })
  local stop = core.now() + 30
  while not acked and core.now() < stop do claude.sleep(0.05) end
  assert.is_true(acked, "the listen was not acknowledged")
  return got, req
end

-- Waits (generously) until `pred(message)` holds for a message of `got`.
local function heard(got, pred)
  local stop = core.now() + 60
  while core.now() < stop do
    for _, m in ipairs(got) do
      if pred(m) then return m end
    end
    claude.sleep(0.05)
  end
  return nil
end

describe("claudelua mcp --http replicas sharing tasks and events through Redis", function()
  local missing = cluster.missing()
  local c

  setup(function()
    if missing then return end
    c = cluster.start { tools = TOOLS, nodes = { "a", "b", "c" }, lease = 2 }
  end)

  teardown(function()
    if c then c:stop() end
  end)

  it("answers a task on any replica: created on one, answered and finished from another",
    function()
    if missing then return pending(missing) end
    local created = modern(c.url, "tools/call", { name = "ask", arguments = {} })
    assert.equal("task", created.result.resultType)
    local tid = created.result.taskId
    local owner = node_of(tid)
    -- every replica finds it (round-robin: three gets, three replicas)
    local got = poll(c.url, tid, function(r) return r.status == "input_required" end)
    assert.equal("input_required", got.status)
    local key = next(got.inputRequests)
    assert.equal("elicitation/create", got.inputRequests[key].method)
    for node, r in pairs(c.replicas) do
      local g = modern(r.url, "tasks/get", { taskId = tid })
      assert.equal("input_required", g.result.status, node)
    end
    -- answered on a replica that does not run it
    local other
    for node, r in pairs(c.replicas) do
      if node ~= owner then other = r end
    end
    local upd = modern(other.url, "tasks/update", { taskId = tid, inputResponses = {
      [key] = { action = "accept", content = { name = "Ada" } } } })
    assert.is_nil(upd.error)
    assert.equal("complete", upd.result.resultType)
    local done = poll(c.url, tid, function(r) return r.status == "completed" end)
    assert.equal("completed", done.status)
    assert.equal("Hello, Ada (from " .. owner .. ")", done.result.content[1].text)
    -- an unknown task is unknown everywhere; another principal's is too (no OAuth here: the
    -- id is the key, so only a made-up one)
    local nope = modern(c.url, "tasks/get", { taskId = owner .. ".nope" })
    assert.equal(-32602, nope.error.code)
    -- a cancel from another replica ends it where it runs
    local slow = modern(c.url, "tools/call", { name = "slow", arguments = { seconds = 60 } })
    local sid = slow.result.taskId
    local away
    for node, r in pairs(c.replicas) do
      if node ~= node_of(sid) then away = r end
    end
    local cancel = modern(away.url, "tasks/cancel", { taskId = sid })
    assert.is_nil(cancel.error)
    local ended = modern(c.replicas[node_of(sid)].url, "tasks/get", { taskId = sid })
    assert.equal("cancelled", ended.result.status)
  end)

  it("has a listen on one replica hear the tasks and updates of the others", function()
    if missing then return pending(missing) end
    local created = modern(c.url, "tools/call", { name = "ask", arguments = {} })
    local tid = created.result.taskId
    local owner = node_of(tid)
    local got_input = poll(c.url, tid, function(r) return r.status == "input_required" end)
    local listener, lnode = other_than(c, owner)
    local got, req = listen(listener.url, { taskIds = { tid }, resourceSubscriptions = {
      "file:///shared" } })
    local key = next(got_input.inputRequests)
    local third = other_than(c, owner, lnode)
    assert.is_nil(modern(third.url, "tasks/update", { taskId = tid, inputResponses = {
      [key] = { action = "accept", content = { name = "Lin" } } } }).error)
    local done = heard(got, function(m)
      return m.method == "notifications/tasks" and m.params.taskId == tid
        and m.params.status == "completed"
    end)
    assert.is_table(done, "the listen on " .. lnode .. " did not hear task " .. tid)
    assert.equal("Hello, Lin (from " .. owner .. ")", done.params.result.content[1].text)
    -- a resource updated on another replica
    assert.is_nil(modern(c.replicas[owner].url, "tools/call", { name = "touch",
      arguments = { uri = "file:///shared" } }).error)
    assert.is_table(heard(got, function(m)
      return m.method == "notifications/resources/updated" and m.params.uri == "file:///shared"
    end), "the listen did not hear the resource updated on " .. owner)
    -- a task it did not name is not heard
    local other = modern(c.url, "tools/call", { name = "slow", arguments = { seconds = 0.1 } })
    poll(c.url, other.result.taskId, function(r) return r.status == "completed" end)
    for _, m in ipairs(got) do
      if m.method == "notifications/tasks" then assert.equal(tid, m.params.taskId) end
    end
    req:cancel()
  end)

  it("has a listen on one replica hear a list changed on another", function()
    if missing then return pending(missing) end
    local got, req = listen(c.replicas.a.url, { toolsListChanged = true })
    assert.is_nil(modern(c.replicas.b.url, "tools/call", { name = "grow",
      arguments = { name = "extra_b" } }).error)
    assert.is_table(heard(got, function(m)
      return m.method == "notifications/tools/list_changed"
    end), "the listen on a did not hear b's tools/list_changed")
    -- (the listen names no task and no resource: nothing else reaches it)
    for _, m in ipairs(got) do
      assert.is_true(m.method == "notifications/subscriptions/acknowledged"
        or m.method == "notifications/tools/list_changed", tostring(m.method))
    end
    req:cancel()
  end)

  it("stops a task on a replica that stalled past its lease, as the others failed it",
    function()
    if missing then return pending(missing) end
    -- a task that writes a file after 15 s (longer than the stall: its timer is not due
    -- when b wakes), on b (b's own URL: a stalled b is out of rotation)
    local mark = c.dir .. "/stalled.mark"
    local started = core.now()
    local r = modern(c.replicas.b.url, "tools/call", { name = "mark",
      arguments = { seconds = 15, path = mark } })
    local tid = r.result.taskId
    assert.equal("b", node_of(tid))
    local pid = c.replicas.b.process.pid
    assert(os.execute("kill -STOP " .. pid))
    local ok, err = pcall(function()
      -- the others fail it once its lease (2 s) lapsed
      local failed = poll(c.replicas.a.url, tid, function(t) return t.status == "failed" end)
      assert.equal("failed", failed and failed.status)
      assert.matches("replica 'b'.*lease", failed.statusMessage)
    end)
    assert(os.execute("kill -CONT " .. pid))
    assert(ok, err)
    -- b, back, agrees: failed, as the store says, and its call no longer runs
    local own = poll(c.replicas.b.url, tid, function(t) return t.status == "failed" end, 30)
    assert.equal("failed", own and own.status)
    assert.matches("replica 'b'.*lease", own.statusMessage)
    assert.matches("lease", own.error.message)
    claude.sleep(math.max(0, started + 16 - core.now())) -- (past its 15 s: no file)
    assert.is_nil(io.open(mark), "the stalled task's call ran on")
    assert.equal("failed", modern(c.replicas.b.url, "tasks/get", { taskId = tid }).result.status)
    -- b goes on serving
    local after = modern(c.replicas.b.url, "tools/call", { name = "slow",
      arguments = { seconds = 0.1 } })
    assert.equal("completed", poll(c.replicas.b.url, after.result.taskId,
      function(t) return t.status == "completed" end).status)
  end)

  it("behaves as one server to claude.mcp: tasks, input, retries", function()
    if missing then return pending(missing) end
    local client <close> = assert(claude.mcp.connect { url = c.url, tasks = true,
      on_elicitation = function() return { action = "accept", content = { name = "Max" } } end })
    for _ = 1, 3 do -- each round-robin'd: the task's polls and its answer land anywhere
      local t = assert(client:call_tool("ask", {}, { task = true }))
      local r = assert(t:wait { timeout = 60 })
      assert.matches("^Hello, Max %(from [abc]%)$", r.content[1].text)
    end
    local r = assert(client:call_tool("slow", { seconds = 0.2 })) -- a task, waited for
    assert.matches("^slow done on [abc]$", r.content[1].text)
  end)

  it("passes the conformance suite's 2026-07-28 and tasks scenarios through HAProxy",
    function()
    if missing then return pending(missing) end
    local conf = cluster.start { tools_file = harness.root .. "/spec/conformance/tools.lua",
      nodes = { "p", "q", "r" }, lease = 5 }
    local ok, err = pcall(function()
      for _, version in ipairs { "2026-07-28", "2025-11-25" } do
        local args = { "--requirements", version }
        local text, code = conformance.run_server(conf.url, args, conformance.next)
        local names = conformance.scenarios("Server", conformance.next, args)
        conformance.assert_passed(text, names, EMPTY)
        assert.equal(0, code, "the suite failed:\n" .. text)
      end
      for _, name in ipairs(conformance.scenarios("Server", conformance.next, nil,
          "extension")) do
        local text, code = conformance.run_server(conf.url, { "--scenario", name },
          conformance.next)
        conformance.assert_scenario_passed(text, name, EMPTY[name])
        assert.equal(0, code, name .. ":\n" .. text)
      end
    end)
    conf:stop()
    assert(ok, err)
  end)

  it("fails the tasks of a replica killed mid-run within their lease; the others finish",
    function()
    if missing then return pending(missing) end
    local ids = {}
    for _ = 1, 6 do -- two per replica
      local r = modern(c.url, "tools/call", { name = "slow", arguments = { seconds = 4 } })
      ids[#ids + 1] = r.result.taskId
    end
    local victim = node_of(ids[1])
    c.replicas[victim].process:signal("kill")
    c.replicas[victim].process:wait(10)
    for _, tid in ipairs(ids) do
      local r = poll(c.url, tid, function(t)
        return t.status == "completed" or t.status == "failed"
      end)
      if node_of(tid) == victim then
        assert.equal("failed", r.status, tid)
        assert.matches("lease", r.statusMessage)
        assert.matches("replica '" .. victim .. "'", r.error.message)
      else
        assert.equal("completed", r.status, tid)
        assert.equal("slow done on " .. node_of(tid), r.result.content[1].text)
      end
    end
    c:start_replica(victim) -- (a new port: haproxy's check finds the old one down; the
    -- tests after this one use the replicas' own URLs or the two left)
  end)

  it("answers clear errors while Redis is away, and comes back by itself", function()
    if missing then return pending(missing) end
    local before = modern(c.url, "tools/call", { name = "slow", arguments = { seconds = 0.1 } })
    local tid = before.result.taskId
    poll(c.url, tid, function(r) return r.status == "completed" end)
    c:stop_redis()
    local any = select(2, other_than(c))
    local url = c.replicas[any].url
    -- a new task: refused, saying why
    local r = modern(url, "tools/call", { name = "slow", arguments = {} })
    assert.equal(-32603, r.error.code)
    assert.equal("task_store_unavailable", r.error.data.reason)
    assert.matches("Redis at 127%.0%.0%.1:%d+ is unreachable", r.error.message)
    -- another replica's task cannot be read: said so too
    local away = other_than(c, node_of(tid))
    local g = modern(away.url, "tasks/get", { taskId = tid })
    assert.equal("task_store_unavailable", g.error.data.reason)
    -- calls that need no task go on
    assert.is_nil(modern(url, "tools/call", { name = "whoami", arguments = {} }).error)
    c:start_redis()
    -- back by itself (the backoff is at most 5 s): a new task, found everywhere; the one of
    -- before too (its replica wrote it again into the empty Redis)
    local t
    local stop = core.now() + 60
    repeat
      claude.sleep(0.2)
      t = modern(url, "tools/call", { name = "slow", arguments = { seconds = 0.1 } })
    until t.result or core.now() > stop
    assert.equal("task", t.result.resultType)
    assert.equal("completed", poll(c.url, t.result.taskId,
      function(x) return x.status == "completed" end).status)
    local again = poll(away.url, tid, function(x) return x.status == "completed" end, 30)
    assert.equal("completed", again and again.status)
  end)
end)
