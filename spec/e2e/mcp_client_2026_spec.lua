-- claude.mcp against real servers of both protocol eras: the TypeScript SDK v2
-- (@modelcontextprotocol/server 2.4.0: `serveStdio` and its Streamable HTTP handler) speaks
-- 2026-07-28, which the client negotiates (server/discover) and then uses: the envelope,
-- multi round-trip results answered by the usual callbacks, x-mcp-header arguments,
-- subscriptions/listen, caching hints, trace context; the manager and the bridge on top.
-- The TypeScript SDK v1 and server-everything stay on the legacy era (the probe falls back
-- to initialize). Tasks: the tasks extension against a stdio server written from the
-- protocol (spec/support/mcp_tasks_server.mjs), and 2025-11-25 tasks against
-- server-everything.
local claude = require "claude"
local async = require "claude.async"
local json = require "claude.json"
local process = require "claude.process"
local harness = require "support.harness"

local T = 20
local NODE = harness.root .. "/node_modules/.bin/node"
local SUPPORT = harness.root .. "/spec/support/"
local EVERYTHING = harness.root .. "/node_modules/@modelcontextprotocol/server-everything/dist/"
  .. "index.js"

local function text(r) return r.content[1].text end

-- Starts a fixture over HTTP; returns the process and its URL.
local function http_fixture(script)
  local proc = assert(process.spawn { NODE, args = { SUPPORT .. script, "http" },
    stderr = "lines", stdout = "ignore" })
  while true do
    local line = proc:read_stderr_line(T)
    if not line then error(script .. " did not start") end
    local u = line:match("listening (%S+)")
    if u then return proc, u end
  end
end

local function accept_name() return { action = "accept", content = { name = "Ada" } } end
local function sample(req)
  return { role = "assistant", model = "lua", stopReason = "endTurn",
    content = { type = "text", text = "short of " .. req.messages[1].content.text } }
end

for _, transport in ipairs { "stdio", "http" } do
  describe("claude.mcp with the TypeScript SDK v2 over " .. transport, function()
    local procs = {}
    before_each(harness.before)
    after_each(function()
      for _, p in ipairs(procs) do p:close(1) end
      procs = {}
      harness.after()
    end)

    local function options(extra)
      local o = { timeout = T }
      if transport == "stdio" then
        o.command, o.args = NODE, { SUPPORT .. "mcp_sdk2_server.mjs", "stdio" }
      else
        local proc
        proc, o.url = http_fixture("mcp_sdk2_server.mjs")
        procs[#procs + 1] = proc
      end
      for k, v in pairs(extra or {}) do o[k] = v end
      return o
    end
    local function connect(extra) return assert(claude.mcp.connect(options(extra))) end

    it("negotiates 2026-07-28 and lists, calls, reads, gets and pings", function()
      local c <close> = connect()
      assert.equal("modern", c.era)
      assert.equal("2026-07-28", c.protocol_version)
      assert.equal("sdk2-fixture", c.server_info.name)
      assert.is_table(c.capabilities.tools)
      assert.equal("2026-07-28", c.discovered.supportedVersions[1])
      local names = {}
      for _, t in ipairs(assert(c:list_tools())) do names[t.name] = true end
      assert.is_true(names.echo and names.ask_name and names.region and true)
      assert.equal("hi", text(assert(c:call_tool("echo", { text = "hi" }))))
      local r = assert(c:read_resource("test://r"))
      assert.equal("R", r.contents[1].text)
      assert.is_nil(r.resultType) -- the discriminator is the wire's, not the result's
      assert.equal(2, #assert(c:list_resources()))
      assert.equal("hi", assert(c:get_prompt("greet")).messages[1].content.text)
      assert.is_true(assert(c:ping()))
    end)

    it("answers multi round-trip input with on_elicitation, on_sampling and roots", function()
      local asked = {}
      local c <close> = connect {
        on_elicitation = function(req)
          asked[#asked + 1] = req.message
          return accept_name()
        end,
        on_sampling = sample, roots = { "/tmp/a", "file:///tmp/b" } }
      assert.equal("Hello, Ada!", text(assert(c:call_tool("ask_name", {}))))
      assert.same({ "Your name?" }, asked)
      assert.equal("summary: short of Summarize: long", text(assert(c:call_tool("summarize",
        { text = "long" }))))
      assert.equal("roots: file:///tmp/a,file:///tmp/b", text(assert(c:call_tool("count_roots",
        {}))))
    end)

    it("says which callback is missing when the server needs input it cannot give", function()
      local c <close> = connect()
      local r, err, kind = c:call_tool("ask_name", {})
      assert.is_nil(r)
      -- the server refuses (-32021): it may not ask what the client did not declare
      assert.equal("unsupported", kind)
      assert.equal(-32021, err.code)
      assert.matches("needs the client's elicitation capability for tools/call 'ask_name'",
        err.message)
      assert.matches("give claude.mcp.connect 'on_elicitation'", err.message)
    end)

    it("repeats x-mcp-header arguments in Mcp-Param headers (the server checks them)", function()
      local c <close> = connect()
      assert(c:list_tools())
      for _, v in ipairs { "us-west1", " padded ", "日本", "" } do
        assert.equal("region=" .. v, text(assert(c:call_tool("region", { region = v }))))
      end
    end)

    it("calls an x-mcp-header tool it has not listed yet", function()
      local c <close> = connect()
      assert.equal("region=eu", text(assert(c:call_tool("region", { region = "eu" }))))
    end)

    it("delivers progress, and log lines at the level asked for", function()
      local logs = {}
      local c <close> = connect { log_level = "info", on_notification = function(m, p)
        if m == "notifications/message" then logs[#logs + 1] = p.data end
      end }
      local steps = {}
      assert.equal("done", text(assert(c:call_tool("progress", {}, { on_progress = function(p)
        steps[#steps + 1] = p
      end }))))
      assert.same({ 1, 2, 3 }, steps)
      assert.same({ "progress done" }, logs)
      assert.is_true(c:set_log_level("error")) -- from now on, no info lines
      assert(c:call_tool("progress", {}))
      assert.same({ "progress done" }, logs)
    end)

    it("keeps reads as long as the server's caching hint says, unless told not to", function()
      local c <close> = connect()
      local first = assert(c:read_resource("test://cached")).contents[1].text
      assert.matches("^read %d+$", first)
      assert.equal(first, assert(c:read_resource("test://cached")).contents[1].text)
      local fresh = assert(c:read_resource("test://cached", { cache = false })).contents[1].text
      assert.not_equal(first, fresh)
      c:close()
      local off <close> = connect { cache = false }
      local a = assert(off:read_resource("test://cached")).contents[1].text
      local b = assert(off:read_resource("test://cached")).contents[1].text
      assert.not_equal(a, b)
    end)

    it("gets list changes and resource updates through subscriptions/listen", function()
      local notes = {}
      local changed, updated = async.event(), async.event()
      local c <close> = connect { on_notification = function(m, p)
        notes[#notes + 1] = m
        if m == "notifications/tools/list_changed" then changed:set() end
        if m == "notifications/resources/updated" and p.uri == "test://r" then updated:set() end
      end }
      assert(c:list_tools())
      assert.equal("added", text(assert(c:call_tool("add_tool", {}))))
      assert.is_true(changed:wait(T))
      local names = {}
      for _, t in ipairs(assert(c:list_tools())) do names[t.name] = true end
      assert.is_true(names.extra)
      assert.is_true(assert(c:subscribe("test://r")))
      assert(c:call_tool("touch", {}))
      assert.is_true(updated:wait(T))
      assert.is_true(assert(c:unsubscribe("test://r")))
    end)

    it("passes the caller's trace context in _meta", function()
      local c <close> = connect()
      local tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
      local meta = json.decode(text(assert(c:call_tool("meta", {}, { traceparent = tp,
        tracestate = "k=v" }))))
      assert.equal(tp, meta.traceparent)
      assert.equal("k=v", meta.tracestate)
    end)

    it("speaks the legacy era when pinned to it, with the same callbacks", function()
      local c <close> = connect { protocol = "legacy", on_elicitation = accept_name }
      assert.equal("legacy", c.era)
      assert.equal("2025-11-25", c.protocol_version)
      assert.equal("hi", text(assert(c:call_tool("echo", { text = "hi" }))))
      if transport == "stdio" then -- the SDK's legacy HTTP serving is one request at a time
        assert.equal("Hello, Ada!", text(assert(c:call_tool("ask_name", {}))))
      end
    end)

    it("works under the manager and as an in-process server (the bridge)", function()
      local m <close> = claude.mcp.manager { v2 = options { on_elicitation = accept_name } }
      assert.equal("hi", text(assert(m:call_tool("v2", "echo", { text = "hi" }))))
      assert.equal("Hello, Ada!", text(assert(m:call_tool("v2", "ask_name", {}))))
      assert.is_true(m:ping_all())
      assert.equal("modern", m:status().v2.era)
      assert.equal("2026-07-28", m:status().v2.protocol_version)
      local c = assert(m:client("v2"))
      assert.equal("modern", c.era)
      local s = assert(c:as_server { name = "v2", filter = { "echo", "region" } })
      local router = require("claude.mcp.router").new { v2 = s }
      local r = router:handle("v2", { jsonrpc = "2.0", id = 1, method = "tools/call",
        params = { name = "region", arguments = { region = "ap" } } })
      assert.equal("region=ap", text(r.result))
      assert.is_nil(r.result.resultType)
    end)
  end)

  describe("claude.mcp with the TypeScript SDK v1 over " .. transport, function()
    local server_proc
    before_each(harness.before)
    after_each(function()
      if server_proc then server_proc:close(1) end
      server_proc = nil
      harness.after()
    end)

    it("falls back to initialize: the legacy era, its requests to the client", function()
      local o = { timeout = T, on_elicitation = accept_name }
      if transport == "stdio" then
        o.command, o.args = NODE, { SUPPORT .. "mcp_sdk1_server.mjs", "stdio" }
      else
        server_proc, o.url = http_fixture("mcp_sdk1_server.mjs")
      end
      local c <close> = assert(claude.mcp.connect(o))
      assert.equal("legacy", c.era)
      assert.equal("2025-11-25", c.protocol_version)
      assert.equal("sdk1-fixture", c.server_info.name)
      assert.equal("x", text(assert(c:call_tool("echo", { text = "x" }))))
      assert.equal("Hello, Ada!", text(assert(c:call_tool("ask_name", {}))))
    end)

    it("refuses a server that does not speak the revision the client is pinned to", function()
      local o = { timeout = T, protocol = "2026-07-28" }
      if transport == "stdio" then
        o.command, o.args = NODE, { SUPPORT .. "mcp_sdk1_server.mjs", "stdio" }
      else
        server_proc, o.url = http_fixture("mcp_sdk1_server.mjs")
      end
      local c, err, kind = claude.mcp.connect(o)
      assert.is_nil(c)
      assert.equal("protocol", kind)
      assert.matches("pinned to", err.message)
    end)
  end)
end

describe("claude.mcp tasks", function()
  before_each(harness.before)
  after_each(harness.after)

  local function tasks_server(extra)
    local o = { command = NODE, args = { SUPPORT .. "mcp_tasks_server.mjs" }, timeout = T }
    for k, v in pairs(extra or {}) do o[k] = v end
    return assert(claude.mcp.connect(o))
  end

  it("runs a call as a task of the tasks extension: get, wait, status", function()
    local seen = {}
    local c <close> = tasks_server()
    assert.equal("modern", c.era)
    local t = assert(c:call_tool("slow", { seconds = 0.2 }, { task = true,
      on_status = function(task) seen[#seen + 1] = task.status end }))
    assert.matches("^task%-", t.id)
    assert.equal("working", t.status)
    -- (the tool may have ended by now on a loaded machine: either, never another)
    local now = assert(t:get()).status
    assert.is_true(now == "working" or now == "completed", now)
    assert.equal("slow done", text(assert(t:wait())))
    assert.equal("completed", t.status)
    assert.same({ "working", "completed" }, seen) -- a status that ended never comes back
    -- without the option the same tool runs at once (the extension is not declared)
    assert.equal("slow done", text(assert(c:call_tool("slow", { seconds = 0.05 }))))
  end)

  it("answers a task's input with the callbacks (tasks/update)", function()
    local c <close> = tasks_server { on_elicitation = function(req)
      assert.equal("Delete a.txt?", req.message)
      return { action = "accept", content = { yes = true } }
    end }
    local t = assert(c:call_tool("confirm", { file = "a.txt" }, { task = true }))
    assert.equal("deleted a.txt", text(assert(t:wait())))
  end)

  it("reports a failed task and cancels one", function()
    local c <close> = tasks_server()
    local f = assert(c:call_tool("failing", {}, { task = true }))
    local r, err, kind = f:wait()
    assert.is_nil(r)
    assert.equal("remote", kind)
    assert.matches("the job broke", err.message)
    local s = assert(c:call_tool("slow", { seconds = 30 }, { task = true }))
    assert.is_true(assert(s:cancel()))
    r, err, kind = s:wait { timeout = T }
    assert.is_nil(r)
    assert.equal("cancelled", kind)
    assert.matches("was cancelled", err.message)
    assert.is_true(assert(s:cancel())) -- idempotent once it ended
  end)

  it("waits for a task the server made on its own", function()
    local c <close> = tasks_server { tasks = true }
    assert.equal("forced done", text(assert(c:call_tool("forced", {}))))
    -- a call answered at once still gives a handle when one was asked for
    local t = assert(c:call_tool("greet", { name = "x" }, { task = true }))
    assert.equal("completed", t.status)
    assert.equal("Hello, x!", text(assert(t:wait())))
  end)

  it("runs a 2025-11-25 task of server-everything, its input asked on the task's stream",
    function()
    local statuses = {}
    local c <close> = assert(claude.mcp.connect { command = NODE,
      args = { EVERYTHING, "stdio" }, timeout = T,
      on_elicitation = function()
        return { action = "accept", content = { interpretation = "x" } }
      end })
    assert.equal("legacy", c.era)
    local t = assert(c:call_tool("simulate-research-query", { topic = "lua", ambiguous = true },
      { task = true, on_status = function(task) statuses[task.status] = true end }))
    assert.is_string(t.id)
    local r = assert(t:wait { timeout = T })
    assert.matches("Research Report: lua", text(r))
    assert.is_true(statuses.working)
  end)
end)
