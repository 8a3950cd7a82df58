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

local PV, CAPS = "io.modelcontextprotocol/protocolVersion",
  "io.modelcontextprotocol/clientCapabilities"
local TASKS = "io.modelcontextprotocol/tasks"
local TASK_CAPS = { elicitation = {}, extensions = { [TASKS] = {} } }

local TOOLS = [[
local claude = require "claude"
local node = ...
return claude.server("lb", {
  claude.tool("whoami", "The node that answers", function() return node end),
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
}, { version = node })
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
end)
