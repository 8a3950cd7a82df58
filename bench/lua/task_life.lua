-- The life of one task of the tasks extension, driven straight into two modern servers (no
-- transport: what the task store costs, not HTTP): `build/claudelua bench/lua/task_life.lua
-- STORE TASKS [WHERE]`. STORE is `memory` or a redis:// URL (the two servers are then two
-- replicas, each with its own client, as two processes would be); WHERE, with Redis, is
-- `here` (every request on the task's replica: the store only mirrors) or `there` (the gets
-- and the update on the other replica: read from Redis, the update forwarded). A life:
--
--   tools/call of `ask` (a task at once, asking a name), tasks/get (input_required),
--   tasks/update with the name, the task completes, tasks/get twice (the result)
--
-- Every answer is checked. bench/task_cost runs it under callgrind.
local claude = require "claude"
local async = require "claude.async"
local era = require "claude.mcp.era"
local modern = require "claude.mcp.server.modern"
local shared = require "claude.mcp.server.shared"

local store, lives, where = arg[1] or "memory", math.tointeger(tonumber(arg[2] or 100)),
  arg[3] or "here"
local PV, CAPS = era.META.protocol_version, era.META.client_capabilities
local TASKS = "io.modelcontextprotocol/tasks"
local caps = { extensions = { [TASKS] = {} }, elicitation = {} }

-- what the driver waits for: the task with that name answered its call
local finished = {}

local srv = claude.server("bench", {
  claude.tool("ask", function(args, ctx)
    ctx.task()
    local r = ctx.elicit { message = "Your name?", requestedSchema = { type = "object" } }
    finished[args.n]:set() -- (the waiter runs after this call's answer completed the task)
    return "Hello, " .. r.content.name
  -- (no `run` bound: under callgrind, 50 times slower, a stretch of Lua would pass it)
  end, { task = true, budget = { run = false } }),
})

local function replica(node)
  local of = assert(shared.open(store, { node = node, lease = 15,
    log = function() end }))
  return modern.new(srv, { node = node, shared = of("bench") }), of
end

local a, a_of = replica("a")
local b, b_of = replica("b")
local away = (store ~= "memory" and where == "there") and b or a

local id = 0
-- One request; its answer, waited for (a store's read or forward answers later).
local function ask(m, method, params)
  id = id + 1
  params._meta = { [PV] = "2026-07-28", [CAPS] = caps }
  local got, ev = nil, async.event()
  m:handle({ jsonrpc = "2.0", id = id, method = method, params = params },
    { send = function(_, msg) got = msg ev:set() return true end })
  if not got then assert(ev:wait(10), "no answer to " .. method) end
  assert(got.error == nil, got.error and got.error.message)
  return got.result
end

local function life(n)
  finished[n] = async.event()
  local created = ask(a, "tools/call", { name = "ask", arguments = { n = n } })
  assert(created.resultType == "task", require("claude.json").encode(created))
  local tid = created.taskId
  local got = ask(away, "tasks/get", { taskId = tid })
  assert(got.status == "input_required", got.status)
  ask(away, "tasks/update", { taskId = tid, inputResponses = {
    ["elicit-1"] = { action = "accept", content = { name = "Ada" } } } })
  assert(finished[n]:wait(10), "the task did not finish")
  finished[n] = nil
  for _ = 1, 2 do
    got = ask(away, "tasks/get", { taskId = tid })
    assert(got.status == "completed" and got.result.content[1].text == "Hello, Ada",
      got.status)
  end
end

claude.spawn(function()
  -- with Redis: both replicas' clients up first
  local stop = claude.core.now() + 10
  while a._shared.client and not (a._shared.client:up() and b._shared.client:up()) do
    assert(claude.core.now() < stop, "Redis did not come up")
    claude.sleep(0.01)
  end
  for n = 1, lives do life(n) end
  a:close()
  b:close()
  if a_of.close then a_of.close() end
  if b_of.close then b_of.close() end
end):wait()
io.stderr:write(string.format("%d task lives (%s, %s)\n", lives, store, where))
