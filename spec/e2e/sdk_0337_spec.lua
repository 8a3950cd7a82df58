-- The names the TypeScript Agent SDK 0.3.337 adds over 0.3.332, each against the REAL claude
-- CLI (2.1.337, the pin) and the scripted Messages API: what the script writes reaches the
-- CLI and does what the SDK says, and what the CLI sends reaches the script (docs/api.md,
-- "New in 0.3.337", maps each name to its test here). No warning of claude.session.compat:
-- every name is known.
-- Run: busted spec/e2e/sdk_0337_spec.lua
local claude = require "claude"
local json = require "claude.json"
local async = require "claude.async"
local compat = require "claude.session.compat"
local e2e = require "support.e2e"
local harness = require "support.harness"
local mcp_http = require "support.mcp_http"

local T = 60
local text, use = e2e.text, e2e.use
local collect = harness.collect

local function find(msgs, mtype, subtype)
  for i, m in ipairs(msgs) do
    if m.type == mtype and (subtype == nil or m.subtype == subtype) then return m, i end
  end
end

local function read_lines(path)
  local out = {}
  for line in io.lines(path) do out[#out + 1] = json.decode(line) end
  return out
end

-- The request the recording shows the session sent to the CLI, by subtype.
local function sent_request(path, subtype)
  for _, r in ipairs(read_lines(path)) do
    local m = r.msg
    if r.dir == "to_cli" and m and m.type == "control_request" and m.request.subtype == subtype
    then return m.request end
  end
end

local function calc(opts)
  return claude.server("calc", { claude.tool("add", "Add two numbers",
    { a = "number", b = "number" }, function(a) return a.a + a.b end,
    { search_hint = "arithmetic sum plus" }) }, opts)
end

describe("the Agent SDK 0.3.337's names on CLI " .. e2e.cli_version(), function()
  if not e2e.cli_at_least("2.1.337") then -- a run against an older CLI: not its names
    pending("needs CLI 2.1.337 or newer")
    return
  end
  local warnings
  local sink
  before_each(function()
    harness.before()
    compat.reset()
    warnings = {}
    sink = compat.set_sink(function(msg) warnings[#warnings + 1] = msg end)
  end)
  after_each(function()
    compat.set_sink(sink)
    assert.same({}, warnings) -- each name here is one claudelua knows
    harness.after()
  end)

  it("hooks.Interrupt: an interrupt calls it with its source, reason and via", function()
    local mock <close> = e2e.start { turns = {
      { content = { text("Once upon a time, slowly, a long story.") }, chunks = 40,
        chunk_delay_ms = 150 },
    } }
    local called = async.event()
    local got
    local s <close> = assert(claude.connect(mock:options { include_partial_messages = true,
      hooks = { Interrupt = function(input)
        got = input
        called:set()
      end } }))
    assert(s:send("Tell me a story"))
    local interrupted = false
    for msg in s:receive(T) do
      if not interrupted and (msg.type == "stream_event" or msg.type == "assistant") then
        interrupted = true
        assert(s:interrupt(T))
      end
    end
    assert.is_true(interrupted)
    assert(called:wait(T))
    assert.equal("Interrupt", got.hook_event_name)
    assert.equal("user", got.source) -- an SDK program's interrupt() says no one else
    assert.equal("stop", got.reason)
    assert.is_true(got.via == nil or got.via == "client", tostring(got.via))
  end)

  it("agents: omit_claude_md, auto_compact_window, observer, observer_message, "
    .. "critical_system_reminder_experimental reach the CLI, which takes the agent", function()
    local mock <close> = e2e.start { turns = { { content = { text("ok") } } } }
    local file = harness.tempfile("", ".jsonl")
    local s <close> = assert(claude.connect(mock:options { record = file, agents = {
      scout = { description = "Scouts", prompt = "You scout.", omit_claude_md = true,
        auto_compact_window = 100000, observer = "watcher", observer_message = "Be brief.",
        critical_system_reminder_experimental = "Stay read-only." },
      watcher = { description = "Watches", prompt = "You watch." },
    } }))
    local names = {}
    for _, a in ipairs(assert(s:supported_agents(T))) do names[a.name] = true end
    assert.is_true(names.scout)
    s:close()
    local scout = sent_request(file, "initialize").agents.scout
    assert.same({ description = "Scouts", prompt = "You scout.", omitClaudeMd = true,
      autoCompactWindow = 100000, observer = "watcher", observerMessage = "Be brief.",
      criticalSystemReminder_EXPERIMENTAL = "Stay read-only." }, scout)
  end)

  it("tools on an http server config: the policy reaches the CLI, which takes the server",
    function()
    local server <close>, url = mcp_http.start { harness.root
      .. "/spec/support/mcp_http_tools.lua" }
    local mock <close> = e2e.start { turns = {
      { content = { use("mcp__calc__add", { a = 15, b = 27 }) } },
      { content = { text("after: {{last_tool_result}}") } },
    } }
    local file = harness.tempfile("", ".jsonl")
    local policy = { { name = "add", permission_policy = "always_ask" } }
    local messages = collect(claude.query("15 + 27?", mock:options { record = file,
      mcp_servers = { calc = { type = "http", url = url, tools = policy } },
      can_use_tool = function() return true end }))
    assert.equal("connected", e2e.server_status(messages).calc)
    assert.equal("after: 42", find(messages, "result").result)
    -- the servers went on the command line ("argv") or in initialize (the default)
    local lines = read_lines(file)
    local servers
    for i, a in ipairs(lines[1].argv) do
      if a == "--mcp-config" then servers = json.decode(lines[1].argv[i + 1]).mcpServers end
    end
    local function search(v, depth)
      if type(v) ~= "table" or depth > 8 or servers then return end
      if type(v.mcpServers) == "table" then servers = v.mcpServers return end
      for _, w in pairs(v) do search(w, depth + 1) end
    end
    for _, l in ipairs(lines) do search(l, 0) end
    assert.same(policy, assert(servers, "no servers sent").calc.tools)
    -- (CLI 2.1.337 applies such a policy to an organization's connectors: with an API key
    -- and this config it neither asks first nor denies; docs/api.md says so)
    server:signal("term")
    server:wait(10)
  end)

  it("claude.server's timeout: a call longer than it fails in the CLI", function()
    local mock <close> = e2e.start { turns = {
      { content = { use("mcp__slow__wait", {}) } },
      { content = { text("after: {{last_tool_result}}") } },
    } }
    local release = async.event()
    local slow = claude.server("slow", { claude.tool("wait", "Waits", {}, function()
      release:wait(T)
      return "late"
    end) }, { timeout = 1000 })
    local messages = collect(claude.query("wait", mock:options {
      mcp_servers = { slow = slow }, allowed_tools = { "mcp__slow__wait" } }))
    release:set()
    local results = json.encode(mock:tool_results())
    assert.is_nil(results:find("late", 1, true))
    assert.matches("time", results:lower(), 1, true) -- the CLI's words for a timeout
    assert.equal("success", find(messages, "result").subtype)
  end)

  it("claude.server's always_load and claude.tool's search_hint: with tool search on, the "
    .. "tool is sent to the model, not deferred", function()
    local mock <close> = e2e.start({ turns = { { content = { text("ok") } },
      { content = { text("ok") } } } }, { log_bodies = true })
    local function tool_of(server)
      local msgs = collect(claude.query("hi", mock:options { mcp_servers = { calc = server },
        env = { ENABLE_TOOL_SEARCH = "true" } }))
      assert.equal("success", find(msgs, "result").subtype)
      local reqs = mock:requests()
      for _, t in ipairs(reqs[#reqs].body.tools) do
        if t.name == "mcp__calc__add" then return t end
      end
    end
    local deferred = tool_of(calc())
    assert.is_true(deferred == nil or deferred.defer_loading == true)
    local loaded = assert(tool_of(calc { always_load = true }))
    assert.is_not_true(loaded.defer_loading)
    assert.same({ ["anthropic/searchHint"] = "arithmetic sum plus" },
      calc():list("tools")[1]._meta)
  end)

  it("a permission answer's decision_classification ('config') and tool_use_id reach the CLI",
    function()
    local mock <close> = e2e.start { turns = {
      { content = { use("mcp__calc__add", { a = 2, b = 3 }) } },
      { content = { text("sum: {{last_tool_result}}") } },
    } }
    local file = harness.tempfile("", ".jsonl")
    local ids = {}
    local messages = collect(claude.query("2 + 3?", mock:options { record = file,
      mcp_servers = { calc = calc() },
      can_use_tool = function(_, input, ctx)
        ids[#ids + 1] = ctx.tool_use_id
        return { behavior = "allow", updated_input = input,
          decision_classification = "config", tool_use_id = ctx.tool_use_id }
      end }))
    assert.equal("sum: 5", find(messages, "result").result)
    local answer
    for _, r in ipairs(read_lines(file)) do
      local m = r.msg
      if r.dir == "to_cli" and m and m.type == "control_response"
        and type(m.response.response) == "table" and m.response.response.behavior then
        answer = m.response.response
      end
    end
    assert.equal("config", answer.decisionClassification)
    assert.equal(ids[1], answer.toolUseID)
  end)

  it("a tool hook's input: mcp_server names the server (built_in only from an app's own)",
    function()
    local mock <close> = e2e.start { turns = {
      { content = { use("mcp__calc__add", { a = 2, b = 3 }) } },
      { content = { text("done") } },
    } }
    local input
    collect(claude.query("2 + 3?", mock:options { mcp_servers = { calc = calc() },
      allowed_tools = { "mcp__calc__add" },
      hooks = { PreToolUse = function(i) input = i end } }))
    assert.is_table(input)
    assert.is_table(input.mcp_server, json.encode(input))
    assert.equal("calc", input.mcp_server.name)
    assert.is_nil(input.mcp_server.built_in) -- not a server of Claude Desktop's own
  end)

  it("a new startup failure reason: resume_target_not_found", function()
    local mock <close> = e2e.start { turns = { { content = { text("ok") } } } }
    local s, err = claude.connect(mock:options { resume = "0b5e0ab5-0000-4000-8000-00000000dead" })
    if s then s:close() end
    assert.is_nil(s)
    assert.equal("startup", err.kind, tostring(err))
    assert.equal("resume_target_not_found", err.reason)
  end)

  it("task messages: a shell task's notification carries duration_ms", function()
    local gate_dir = harness.tempdir()
    local gate = gate_dir .. "/go"
    local mock <close> = e2e.start { turns = {
      { content = { use("Bash", { command = "while [ ! -e '" .. gate
        .. "' ]; do sleep 0.1; done; echo done-bg", description = "waits",
        run_in_background = true }) } },
      { content = { text("started") } },
      { content = { text("notified") } },
    } }
    local s <close> = assert(claude.connect(mock:options { allowed_tools = { "Bash" } }))
    assert(s:send("go"))
    collect(s:receive(T))
    local gf = assert(io.open(gate, "wb"))
    gf:close()
    local note
    for msg in s:messages(T) do
      if msg.type == "system" and msg.subtype == "task_notification" then note = msg end
      if note and msg.type == "result" then break end
    end
    assert.is_table(note)
    assert.is_number(note.duration_ms, json.encode(note))
    assert.is_nil(note.reason) -- (unfinished_at_resume: only a resumed process's)
  end)

  it("system/init names the turn's model; the usage answer and the result pass whole",
    function()
    local mock <close> = e2e.start { turns = { { content = { text("ok") } } } }
    local s <close> = assert(claude.connect(mock:options {}))
    assert(s:send("hi"))
    local msgs = collect(s:receive(T))
    assert.equal("claude-sonnet-4-5", find(msgs, "system", "init").model)
    -- (utilization_precise: in rate_limits, which an API key has none of)
    local usage, err = s:usage()
    assert.is_true(usage ~= nil or err ~= nil)
    if usage then assert.is_table(usage) end
    -- (auto_mode_unchecked: on a permission denial of auto mode, as the CLI sends it)
    assert.is_table(find(msgs, "result").permission_denials)
  end)
end)
