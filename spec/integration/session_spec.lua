-- The session layer (claude.query / claude.connect) against the scripted
-- fake CLI of claude.testing: argv, env, options, initialize, the control
-- protocol both ways, message framing, lifetimes, many sessions at once.
-- Fast and deterministic: no network, no Node. Timeouts are generous and only
-- guard against hangs; no spec asserts a duration.
-- Run: busted spec/integration/session_spec.lua
--      busted --lua=build/claudelua spec/integration/session_spec.lua
local claude = require "claude"
local json = require "claude.json"
local testing = require "claude.testing"
local harness = require "support.harness"

local T = 30 -- seconds; only a guard against hangs

local fmt = string.format

-- A script that answers initialize, then waits for stdin to close.
local IDLE = "cli:expect_initialize()"

local collect, of_type = harness.collect, harness.of_type

-- Runs `fn`; returns its error (fails when it does not raise).
local function raises(fn, ...)
  local ok, err = pcall(fn, ...)
  assert(not ok, "expected an error")
  return err
end

-- True while a process `pid` exists (and is not yet reaped).
local function alive(pid)
  return os.execute("kill -0 " .. math.tointeger(pid) .. " 2>/dev/null") == true
end

-- Connects to a fake playing `script`; returns the session and the fake.
local function connect(script, options)
  local opts, fake = testing.fake_cli(script)
  local s, err = claude.connect(testing.merge(opts, options))
  assert(s, tostring(err))
  return s, fake
end

-- query() to the end: the messages and the fake's log.
local function run(script, options, prompt)
  local opts, fake = testing.fake_cli(script)
  local msgs = collect(claude.query(prompt or "go", testing.merge(opts, options)))
  return msgs, fake:read_log()
end

-- query() until it raises: the messages before, the error, the fake's log.
local function run_failing(script, options, prompt)
  local opts, fake = testing.fake_cli(script)
  local msgs = {}
  local err = raises(function()
    for msg in claude.query(prompt or "go", testing.merge(opts, options)) do
      msgs[#msgs + 1] = msg
    end
  end)
  return msgs, err, fake:read_log()
end

-- One turn on a connect()ed session (stdin stays open for the CLI's
-- requests); the session is closed after. The messages and the fake's log.
local function converse(script, options, prompt)
  local opts, fake = testing.fake_cli(script)
  local s <close> = assert(claude.connect(testing.merge(opts, options)))
  assert(s:send(prompt or "go"))
  local msgs = collect(s:receive(T))
  s:close()
  return msgs, fake:read_log()
end

-- The SDK's answers to the fake's control requests, in order (bodies of
-- the control_response lines the SDK wrote).
local function answers(log)
  local out = {}
  for _, m in ipairs(log:find_all("control_response")) do out[#out + 1] = m.response end
  return out
end

-- The SDK answered exactly one request, with `want` (its request_id aside), and the fake
-- exited 0.
local function assert_one_answer(log, want)
  local a = answers(log)
  assert.equal(1, #a)
  want.request_id = a[1].request_id
  assert.same(want, a[1])
  assert.equal(0, log.exit_code)
end

-- The raw lines the SDK wrote to the fake.
local function received_lines(log)
  local out = {}
  for _, rec in ipairs(log.records) do
    if rec.event == "received" then out[#out + 1] = rec.line end
  end
  return out
end

-- The argv the SDK gave the CLI for `options`.
local function argv_for(options)
  local s, fake = connect(IDLE, options)
  s:close()
  local log = fake:read_log()
  assert.equal(0, log.exit_code)
  return log.argv
end

-- Checks the fixed ends of an argv and returns what lies between.
local function middle(argv)
  assert.same({ "--output-format", "stream-json", "--verbose" }, { table.unpack(argv, 1, 3) })
  assert.same({ "--input-format", "stream-json" }, { table.unpack(argv, #argv - 1, #argv) })
  for _, a in ipairs(argv) do
    assert.is_not.equal("-p", a)
    assert.is_not.equal("--print", a)
  end
  return { table.unpack(argv, 4, #argv - 2) }
end

-- The flags every argv has without a system_prompt, then `...`.
local function D(...) return { "--system-prompt", "", ... } end

local function allow_all() return true end

local function calc_server(calls)
  return claude.server("calc", {
    claude.tool("add", "Add two numbers", { a = "number", b = "number" }, function(args)
      if calls then calls[#calls + 1] = { a = args.a, b = args.b } end
      return args.a + args.b
    end),
  })
end

describe("session against the fake CLI", function()
  before_each(harness.before)
  after_each(function()
    testing.cleanup()
    harness.after()
  end)

  ---------------------------------------------------------------------------
  describe("argv", function()
    local schema = { type = "object", properties = { answer = { type = "string" } } }
    local ROWS = {
      { "no system_prompt: an empty one", {}, D() },
      { "system_prompt string", { system_prompt = "Be brief." },
        { "--system-prompt", "Be brief." } },
      { "system_prompt preset + append",
        { system_prompt = { type = "preset", preset = "claude_code", append = "Also X." } },
        { "--append-system-prompt", "Also X." } },
      { "system_prompt preset alone: the CLI's own prompt",
        { system_prompt = { type = "preset", preset = "claude_code" } }, {} },
      { "system_prompt file", { system_prompt = { type = "file", path = "/tmp/sp.md" } },
        { "--system-prompt-file", "/tmp/sp.md" } },
      { "tools list", { tools = { "Read", "Bash" } }, D("--tools", "Read,Bash") },
      { "tools empty", { tools = {} }, D("--tools", "") },
      { "tools preset", { tools = { type = "preset", preset = "claude_code" } },
        D("--tools", "default") },
      { "allowed_tools", { allowed_tools = { "Read", "mcp__calc__add" } },
        D("--allowedTools", "Read,mcp__calc__add") },
      { "allowed_tools empty", { allowed_tools = {} }, D() },
      { "disallowed_tools", { disallowed_tools = { "Bash", "Write" } },
        D("--disallowedTools", "Bash,Write") },
      { "max_turns", { max_turns = 3 }, D("--max-turns", "3") },
      { "max_turns as an integral float", { max_turns = 3.0 }, D("--max-turns", "3") },
      { "max_turns 0: no flag", { max_turns = 0 }, D() },
      { "max_budget_usd", { max_budget_usd = 0.25 }, D("--max-budget-usd", "0.25") },
      { "model", { model = "claude-opus-4-8" }, D("--model", "claude-opus-4-8") },
      { "fallback_model", { fallback_model = "claude-haiku-4-5" },
        D("--fallback-model", "claude-haiku-4-5") },
      { "betas", { betas = { "b-one", "b-two" } }, D("--betas", "b-one,b-two") },
      { "permission_mode", { permission_mode = "acceptEdits" },
        D("--permission-mode", "acceptEdits") },
      { "can_use_tool", { can_use_tool = allow_all }, D("--permission-prompt-tool", "stdio") },
      { "permission_prompt_tool_name", { permission_prompt_tool_name = "mcp__perm__ask" },
        D("--permission-prompt-tool", "mcp__perm__ask") },
      { "continue", { continue = true }, D("--continue") },
      { "continue_conversation", { continue_conversation = true }, D("--continue") },
      { "resume (equals form)", { resume = "0b7c5a9e-1111-4222-8333-444455556666" },
        D("--resume=0b7c5a9e-1111-4222-8333-444455556666") },
      { "resume starting with '-' stays one token", { resume = "-rf" }, D("--resume=-rf") },
      { "session_id (equals form)", { session_id = "9d3e1c2a-aaaa-4bbb-8ccc-dddddddddddd" },
        D("--session-id=9d3e1c2a-aaaa-4bbb-8ccc-dddddddddddd") },
      { "settings string passes through", { settings = "/etc/claude/settings.json" },
        D("--settings", "/etc/claude/settings.json") },
      { "add_dirs repeated", { add_dirs = { "/srv/a", "/srv/b" } },
        D("--add-dir", "/srv/a", "--add-dir", "/srv/b") },
      { "include_partial_messages", { include_partial_messages = true },
        D("--include-partial-messages") },
      { "include_hook_events", { include_hook_events = true }, D("--include-hook-events") },
      { "strict_mcp_config", { strict_mcp_config = true }, D("--strict-mcp-config") },
      { "fork_session", { fork_session = true }, D("--fork-session") },
      { "setting_sources", { setting_sources = { "user", "project" } },
        D("--setting-sources=user,project") },
      { "setting_sources empty: load none", { setting_sources = {} }, D("--setting-sources=") },
      { "plugins repeated",
        { plugins = { { type = "local", path = "/p/one" }, { type = "local", path = "/p/two" } } },
        D("--plugin-dir", "/p/one", "--plugin-dir", "/p/two") },
      { "extra_args: flag, value, --k=-v, sorted; false omitted",
        { extra_args = { debug = true, ["max-x"] = 5, foo = "-v", bar = json.null, skip = false,
          name = "plain" } },
        D("--bar", "--debug", "--foo=-v", "--max-x", "5", "--name", "plain") },
      { "thinking adaptive", { thinking = { type = "adaptive" } }, D("--thinking", "adaptive") },
      { "thinking enabled", { thinking = { type = "enabled", budget_tokens = 5000 } },
        D("--max-thinking-tokens", "5000") },
      { "thinking enabled without a budget", { thinking = { type = "enabled" } },
        D("--max-thinking-tokens", "32000") },
      { "thinking disabled", { thinking = { type = "disabled" } }, D("--thinking", "disabled") },
      { "thinking display", { thinking = { type = "adaptive", display = "summarized" } },
        D("--thinking", "adaptive", "--thinking-display", "summarized") },
      { "max_thinking_tokens", { max_thinking_tokens = 8000 }, D("--max-thinking-tokens", "8000") },
      { "thinking wins over max_thinking_tokens",
        { thinking = { type = "disabled" }, max_thinking_tokens = 8000 },
        D("--thinking", "disabled") },
      { "effort", { effort = "high" }, D("--effort", "high") },
    }
    for _, row in ipairs(ROWS) do
      local name, options, want = row[1], row[2], row[3]
      it(name, function()
        assert.same(want, middle(argv_for(options)))
      end)
    end

    -- Options whose value is JSON: the flag, then the decoded value.
    local settings_file = os.tmpname()
    do
      local f = assert(io.open(settings_file, "wb"))
      f:write('{"model":"from-file","permissions":{"allow":["Read"]}}')
      f:close()
    end
    teardown(function() os.remove(settings_file) end)
    local JSON_ROWS = {
      { "settings table", { settings = { permissions = { allow = { "Read" } } } },
        "--settings", { permissions = { allow = { "Read" } } } },
      { "sandbox alone becomes settings", { sandbox = { enabled = true } },
        "--settings", { sandbox = { enabled = true } } },
      { "sandbox merged into a settings table",
        { settings = { model = "m" }, sandbox = { enabled = true } },
        "--settings", { model = "m", sandbox = { enabled = true } } },
      { "sandbox merged into inline JSON settings",
        { settings = '{"model":"inline"}', sandbox = { enabled = false } },
        "--settings", { model = "inline", sandbox = { enabled = false } } },
      { "sandbox merged into a settings file",
        { settings = settings_file, sandbox = { enabled = true } },
        "--settings", { model = "from-file", permissions = { allow = { "Read" } },
          sandbox = { enabled = true } } },
      { "external mcp_servers (delivery argv)", { mcp_servers_delivery = "argv", mcp_servers = {
          echo = { type = "stdio", command = "echo-mcp", args = { "--x" } },
          web = { type = "http", url = "http://127.0.0.1:9/mcp" } } },
        "--mcp-config", { mcpServers = {
          echo = { type = "stdio", command = "echo-mcp", args = { "--x" } },
          web = { type = "http", url = "http://127.0.0.1:9/mcp" } } } },
      { "in-process servers stay out of --mcp-config",
        { mcp_servers = { calc = calc_server(), echo = { command = "echo-mcp" } },
          mcp_servers_delivery = "argv" },
        "--mcp-config", { mcpServers = { echo = { command = "echo-mcp" } } } },
      { "output_format", { output_format = { type = "json_schema", schema = schema } },
        "--json-schema", schema },
    }
    for _, row in ipairs(JSON_ROWS) do
      local name, options, flag, want = row[1], row[2], row[3], row[4]
      it(name, function()
        local mid = middle(argv_for(options))
        assert.equal(4, #mid)
        assert.same({ "--system-prompt", "", flag }, { table.unpack(mid, 1, 3) })
        assert.same(want, json.decode(mid[4]))
      end)
    end

    it("has no --mcp-config with only in-process servers", function()
      assert.same(D(), middle(argv_for({ mcp_servers = { calc = calc_server() } })))
    end)

    it("puts every option in the official SDKs' order", function()
      local argv = argv_for {
        system_prompt = "S", tools = { "Read" }, allowed_tools = { "Read" }, max_turns = 2,
        max_budget_usd = 1.5, disallowed_tools = { "Bash" }, model = "m", fallback_model = "f",
        betas = { "b" }, can_use_tool = allow_all, permission_mode = "plan", continue = true,
        resume = "r-id", session_id = "s-id", settings = { model = "x" }, add_dirs = { "/d" },
        mcp_servers = { echo = { command = "echo-mcp" } }, mcp_servers_delivery = "argv",
        include_partial_messages = true,
        include_hook_events = true, strict_mcp_config = true, fork_session = true,
        setting_sources = { "user" }, plugins = { { type = "local", path = "/pl" } },
        extra_args = { ["debug-to-stderr"] = true }, thinking = { type = "adaptive" },
        effort = "low", output_format = { type = "json_schema", schema = { type = "object" } },
      }
      assert.same({
        "--output-format", "stream-json", "--verbose",
        "--system-prompt", "S", "--tools", "Read", "--allowedTools", "Read", "--max-turns", "2",
        "--max-budget-usd", "1.5", "--disallowedTools", "Bash", "--model", "m",
        "--fallback-model", "f", "--betas", "b", "--permission-prompt-tool", "stdio",
        "--permission-mode", "plan", "--continue", "--resume=r-id", "--session-id=s-id",
        "--settings", '{"model":"x"}', "--add-dir", "/d",
        "--mcp-config", '{"mcpServers":{"echo":{"command":"echo-mcp"}}}',
        "--include-partial-messages", "--include-hook-events", "--strict-mcp-config",
        "--fork-session", "--setting-sources=user", "--plugin-dir", "/pl", "--debug-to-stderr",
        "--thinking", "adaptive", "--effort", "low", "--json-schema", '{"type":"object"}',
        "--input-format", "stream-json",
      }, argv)
    end)

    it("does not modify the caller's settings table when merging sandbox", function()
      local settings = { model = "m" }
      argv_for({ settings = settings, sandbox = { enabled = true } })
      assert.same({ model = "m" }, settings)
    end)
  end)

  ---------------------------------------------------------------------------
  describe("environment and cwd", function()
    it("sets CLAUDE_CODE_ENTRYPOINT=sdk-lua, merges options.env, false removes", function()
      assert.is_string(os.getenv("HOME"))
      local s, fake = connect(IDLE, { env = { MY_FLAG = "on", MY_NUM = 42, HOME = false } })
      s:close()
      local log = fake:read_log()
      assert.equal("sdk-lua", log.env.CLAUDE_CODE_ENTRYPOINT)
      assert.equal("on", log.env.MY_FLAG)
      assert.equal("42", log.env.MY_NUM)
      assert.is_nil(log.env.HOME)
      assert.is_nil(log.env.CLAUDECODE)
      assert.equal(os.getenv("PATH"), log.env.PATH) -- the rest is inherited
    end)

    it("lets options.env override the entrypoint", function()
      local s, fake = connect(IDLE, { env = { CLAUDE_CODE_ENTRYPOINT = "my-app" } })
      s:close()
      assert.equal("my-app", fake:read_log().env.CLAUDE_CODE_ENTRYPOINT)
    end)

    it("removes CLAUDECODE inherited from the host's environment", function()
      -- our own environment cannot be changed: a child host runs with CLAUDECODE=1
      local child = harness.tempfile([[
        local claude = require "claude"
        local testing = require "claude.testing"
        local opts, fake = testing.fake_cli("cli:expect_initialize()")
        local s = assert(claude.connect(opts))
        s:close()
        local log = fake:read_log()
        fake:cleanup()
        io.write(tostring(os.getenv("CLAUDECODE")), "|", tostring(log.env.CLAUDECODE), "|",
          tostring(log.env.CLAUDE_CODE_ENTRYPOINT), "|", tostring(log.exit_code))
      ]], ".lua")
      local env = { "CLAUDECODE=1" }
      for k, v in pairs(testing.lua_env()) do env[#env + 1] = k .. "=" .. harness.quote(v) end
      local code, out, err = harness.sh("env " .. table.concat(env, " ") .. " "
        .. harness.quote(testing.interpreter()) .. " " .. harness.quote(child))
      os.remove(child)
      assert.equal(0, code, err)
      assert.equal("1|nil|sdk-lua|0", out)
    end)

    it("runs the CLI in options.cwd", function()
      local dir = os.tmpname()
      os.remove(dir)
      assert(os.execute("mkdir " .. harness.quote(dir)))
      local s, fake = connect(IDLE, { cwd = dir })
      s:close()
      local log = fake:read_log()
      os.execute("rmdir " .. harness.quote(dir))
      assert.equal(dir, log.cwd)
      assert.equal(dir, log.env.PWD)
    end)

    it("fails to connect to a cwd that does not exist", function()
      local opts = testing.fake_cli(IDLE)
      local s, err = claude.connect(testing.merge(opts, { cwd = "/nonexistent/dir/x" }))
      assert.is_nil(s)
      assert.equal("connection", err.kind)
      assert.matches("/nonexistent/dir/x", err.message, 1, true)
    end)
  end)

  ---------------------------------------------------------------------------
  describe("option errors", function()
    local ROWS = {
      { "an unknown key, with a did-you-mean", { modle = "x" },
        "unknown field 'modle' to '%s' (did you mean 'model'?)" },
      { "an unknown key close to nothing, with strict = true",
        { zzzzzzzzzzzz = 1, strict = true }, "unknown field 'zzzzzzzzzzzz' to '%s'" },
      { "a snake_case typo", { allowedTools = { "Read" } },
        "unknown field 'allowedTools' to '%s' (did you mean 'allowed_tools'?)" },
      { "a wrong type", { max_turns = "3" },
        "bad field 'max_turns' to '%s' (number expected, got string)" },
      { "a wrong type among two allowed", { system_prompt = 7 },
        "bad field 'system_prompt' to '%s' (string or table expected, got number)" },
      { "a wrong callback type", { can_use_tool = true },
        "bad field 'can_use_tool' to '%s' (function expected, got boolean)" },
      { "can_use_tool with permission_prompt_tool_name",
        { can_use_tool = allow_all, permission_prompt_tool_name = "x" },
        "options 'can_use_tool' and 'permission_prompt_tool_name' cannot be combined" },
      { "a list item that is not a string", { allowed_tools = { "Read", 3 } },
        "bad field 'allowed_tools' to '%s' (item 2 is a number, string expected)" },
      { "an unknown hook event", { hooks = { PreToolUze = allow_all } },
        "unknown field 'hooks.PreToolUze' to '%s' (did you mean 'hooks.PreToolUse'?)" },
      { "a bad thinking type", { thinking = { type = "sometimes" } },
        "bad field 'thinking' to '%s'" },
    }
    for _, row in ipairs(ROWS) do
      local name, options, want = row[1], row[2], row[3]
      it(name .. " (query and connect)", function()
        local opts = testing.fake_cli(IDLE)
        for fname, start in pairs({
          query = function(o) return claude.query("hi", o) end,
          connect = function(o) return claude.connect(o) end,
        }) do
          local err = raises(start, testing.merge(opts, options))
          assert.is_string(err)
          assert.matches((want:gsub("%%s", fname)), err, 1, true)
        end
      end)
    end

    it("blames the caller's line", function()
      local opts = testing.fake_cli(IDLE)
      local err = raises(function()
        local iter = claude.query("hi", testing.merge(opts, { x = 1, strict = true }))
        return iter
      end)
      assert.matches("session_spec%.lua:%d+: unknown field 'x' to 'query'", err)
      err = raises(function()
        local s = claude.connect(testing.merge(opts, { x = 1, strict = true }))
        return s
      end)
      assert.matches("session_spec%.lua:%d+: unknown field 'x' to 'connect'", err)
    end)
  end)

  ---------------------------------------------------------------------------
  describe("initialize", function()
    it("sends hooks: null without hooks, and no servers or agents", function()
      local s, fake = connect(IDLE)
      s:close()
      local req = fake:read_log():find("control_request", "initialize").request
      assert.equal(json.null, req.hooks)
      assert.is_nil(req.sdkMcpServers)
      assert.is_nil(req.sdkMcpServerManifests)
      assert.is_nil(req.agents)
    end)

    it("numbers hook callbacks hook_0.. in order, with matchers and timeouts", function()
      local function f() end
      local s, fake = connect(IDLE, { hooks = {
        Stop = f,
        PreToolUse = { { matcher = "Bash|Edit", hooks = { f, f }, timeout = 30 }, f },
        PostToolUse = { { matcher = "mcp__calc__.*", hooks = { f } } },
      } })
      s:close()
      local req = fake:read_log():find("control_request", "initialize").request
      assert.same({
        PostToolUse = { { matcher = "mcp__calc__.*", hookCallbackIds = { "hook_0" } } },
        PreToolUse = {
          { matcher = "Bash|Edit", hookCallbackIds = { "hook_1", "hook_2" }, timeout = 30 },
          { matcher = json.null, hookCallbackIds = { "hook_3" } },
        },
        Stop = { { matcher = json.null, hookCallbackIds = { "hook_4" } } },
      }, req.hooks)
    end)

    it("names in-process servers in sdkMcpServers, with their manifests", function()
      local zeta = claude.server("zeta", {
        claude.tool("ping", "Ping", {}, function() return "pong" end),
      })
      local s, fake = connect(IDLE, { mcp_servers = { zeta = zeta, calc = calc_server() } })
      s:close()
      local log = fake:read_log()
      local req = log:find("control_request", "initialize").request
      assert.same({ "calc", "zeta" }, req.sdkMcpServers)
      local m = req.sdkMcpServerManifests.calc
      assert.equal("calc", m.initializeResult.serverInfo.name)
      assert.is_string(m.initializeResult.protocolVersion)
      assert.equal(1, #m.toolsListResult.tools)
      local tool = m.toolsListResult.tools[1]
      assert.equal("add", tool.name)
      assert.equal("Add two numbers", tool.description)
      assert.equal("object", tool.inputSchema.type)
      assert.equal("ping", req.sdkMcpServerManifests.zeta.toolsListResult.tools[1].name)
      assert.is_nil(log:flag("--mcp-config"))
    end)

    it("sends agents with the CLI's camelCase keys", function()
      local s, fake = connect(IDLE, { agents = { reviewer = {
        description = "Reviews code", prompt = "Review it.", tools = { "Read" },
        disallowed_tools = { "Bash" }, model = "sonnet", skills = { "lint" }, memory = "project",
        mcp_servers = { "calc" }, initial_prompt = "Start here.", max_turns = 4,
        background = true, effort = "low", permission_mode = "plan",
      } } })
      s:close()
      local req = fake:read_log():find("control_request", "initialize").request
      assert.same({ reviewer = {
        description = "Reviews code", prompt = "Review it.", tools = { "Read" },
        disallowedTools = { "Bash" }, model = "sonnet", skills = { "lint" }, memory = "project",
        mcpServers = { "calc" }, initialPrompt = "Start here.", maxTurns = 4,
        background = true, effort = "low", permissionMode = "plan",
      } }, req.agents)
    end)

    it("keeps the CLI's answer as server_info", function()
      local s <close> = connect("cli:expect_initialize({ output_style = 'Learning' })")
      local info = s:server_info()
      assert.equal("Learning", info.output_style)
      assert.is_true(#info.models > 0)
      assert.equal(s.pid, info.pid)
      assert.equal(info, s:get_server_info())
    end)

    it("serves mcp_message requests that come before the initialize answer", function()
      local calls = {}
      local s <close>, fake = connect([[
        local init = cli:expect_control("initialize")
        local tools = cli:mcp_connect("calc")        -- before answering initialize
        cli:respond(init, cli:initialize_response({ output_style = "tools:" .. #tools }))
        cli:expect_user()
        cli:system_init()
        local id = cli:tool_use("mcp__calc__add", { a = 2, b = 3 })
        local r = assert(cli:call_tool("calc", "add", { a = 2, b = 3 }, id))
        cli:tool_result(id, r.content)
        cli:assistant("sum " .. r.content[1].text)
        cli:result()
      ]], { mcp_servers = { calc = calc_server(calls) } })
      assert.equal("tools:1", s:server_info().output_style)
      assert(s:send("add"))
      local msgs = collect(s:receive(T))
      assert.equal("sum 5", msgs[#msgs].result)
      assert.same({ { a = 2, b = 3 } }, calls)
      assert.is_truthy(of_type(msgs, "system", "init")[1].tools)
      s:close()
      assert.equal(0, fake:read_log().exit_code)
    end)

    it("calls the tool the server holds at each call: replaced, removed, added", function()
      -- the session keeps what it worked out for a tool's usual calls by name: a change of
      -- the server's tools must be seen by the next call
      local srv
      local n = 0
      srv = claude.server("calc", {
        claude.tool("add", { a = "number", b = "number" }, function(a)
          n = n + 1
          if n == 2 then
            srv:remove("add")
            srv:add(claude.tool("add", { a = "number", b = "number" }, function(b)
              srv:remove("add")
              srv:add(claude.tool("mul", { a = "number", b = "number" }, function(c)
                return c.a * c.b
              end))
              return "new " .. (b.a + b.b)
            end))
          end
          return a.a + a.b
        end),
      })
      local s <close>, fake = connect([[
        cli:expect_initialize()
        cli:mcp_connect("calc")
        cli:expect_user()
        cli:system_init()
        local out = {}
        for i, tool in ipairs { "add", "add", "add", "add", "mul" } do
          local r, err = cli:call_tool("calc", tool, { a = 2, b = 3 }, "toolu_" .. i)
          out[i] = r and r.content[1].text or ("error " .. tostring(err and err.code))
        end
        cli:result({ result = table.concat(out, ",") })
        cli:drain() -- the session's list_changed notifications
      ]], { mcp_servers = { calc = srv } })
      assert(s:send("go"))
      local msgs = collect(s:receive(T))
      assert.equal("5,5,new 5,error -32602,6", msgs[#msgs].result)
      s:close()
      assert.equal(0, fake:read_log().exit_code)
    end)

    -- the usual calls under the default budgets and with none (tool_budget = false)
    for _, off in ipairs { false, true } do
      it("answers each tool call with its own request id, whether it waits or not"
        .. (off and ", budgets off" or ""), function()
        -- the reader holds back a control request's id and its tool use id (no Lua strings):
        -- a call answered at once writes them from the line, one that waits keeps them
        local srv = claude.server("calc", {
          claude.tool("add", { a = "number", b = "number" }, function(a) return a.a + a.b end),
          claude.tool("slow", { ms = "number" }, function(a)
            claude.sleep(a.ms / 1000)
            return "slept " .. a.ms
          end),
          claude.tool("who", function(_, ctx) return ctx.tool_use_id end),
          claude.tool("later_who", function(_, ctx)
            claude.sleep(0.01)
            return "later " .. ctx.tool_use_id
          end),
          claude.tool("over", function() claude.sleep(5) end, { budget = { seconds = 0.05 } }),
        })
        local s <close>, fake = connect([[
          cli:expect_initialize()
          cli:mcp_connect("calc")
          cli:expect_user()
          cli:system_init()
          local function call(i, tool, args)
            return cli:send_request("mcp_message", { server_name = "calc", message = {
              jsonrpc = "2.0", id = i, method = "tools/call", params = { name = tool,
                arguments = args, _meta = { ["claudecode/toolUseId"] = "toolu_" .. i,
                  progressToken = i } } } })
          end
          local rids = { call(1, "slow", { ms = 60 }), call(2, "slow", { ms = 20 }),
            call(3, "add", { a = 1, b = 2 }), call(4, "who", {}), call(5, "over", {}),
            call(6, "later_who", {}), call(7, "add", { a = 3, b = 4 }) }
          local out = {}
          for i, rid in ipairs(rids) do
            local body, err = cli:await_response(rid)
            local r = body and body.mcp_response
            out[i] = r and (r.id .. ":" .. r.result.content[1].text) or tostring(err)
          end
          cli:result({ result = table.concat(out, "|") })
        ]], { mcp_servers = { calc = srv }, tool_budget = not off and nil })
        assert(s:send("go"))
        local msgs = collect(s:receive(T))
        local got = {}
        for part in msgs[#msgs].result:gmatch("[^|]+") do got[#got + 1] = part end
        assert.same({ "1:slept 60", "2:slept 20", "3:3", "4:toolu_4" }, { table.unpack(got, 1, 4) })
        assert.matches("^5:.*budget", got[5])
        assert.same({ "6:later toolu_6", "7:7" }, { got[6], got[7] })
        s:close()
        assert.equal(0, fake:read_log().exit_code)
      end)
    end

    it("fails connect (kind timeout) when initialize is never answered", function()
      local opts, fake = testing.fake_cli([[
        cli:expect_control("initialize")
        cli:drain()
      ]])
      local s, err = claude.connect(testing.merge(opts, { initialize_timeout = 0.3 }))
      assert.is_nil(s)
      assert.equal("timeout", err.kind)
      local log = fake:read_log()
      assert.is_true(log.eof) -- the session was closed
      assert.is_false(alive(log.pid))
      assert.matches("did not answer initialize", err.message, 1, true)
      assert.is_nil(err.message:find("within timed out", 1, true),
        "garbled message: " .. err.message)
    end)

    it("fails connect with the CLI's error answer to initialize", function()
      local opts = testing.fake_cli([[
        cli:respond_error((cli:expect_control("initialize")), "not logged in")
      ]])
      local s, err = claude.connect(opts)
      assert.is_nil(s)
      assert.equal("control", err.kind)
      assert.matches("not logged in", err.message, 1, true)
    end)
  end)

  ---------------------------------------------------------------------------
  describe("requests from the CLI", function()
    -- The fake asks can_use_tool for Bash with `input` (JSON text).
    local function permission_script(input)
      return fmt([[
        cli:expect_initialize()
        cli:expect_user()
        cli:system_init()
        cli:tool_use("Bash", cli.json.decode(%q))
        cli:can_use_tool("Bash", cli.json.decode(%q))
        cli:assistant("done")
        cli:result()
      ]], input, input)
    end

    local perms = { { type = "addRules", rules = { { toolName = "Bash" } }, behavior = "allow",
      destination = "session" } }
    local DECISIONS = {
      { "true allows with the original input", function() return true end,
        { behavior = "allow", updatedInput = { command = "ls" } } },
      { "claude.allow() allows with the original input", function() return claude.allow() end,
        { behavior = "allow", updatedInput = { command = "ls" } } },
      { "claude.allow(input) changes the input",
        function(_, input) return claude.allow({ command = input.command .. " -la" }) end,
        { behavior = "allow", updatedInput = { command = "ls -la" } } },
      { "claude.allow with permission updates",
        function() return claude.allow(nil, perms) end,
        { behavior = "allow", updatedInput = { command = "ls" }, updatedPermissions = perms } },
      { "the table form in camelCase",
        function() return { behavior = "allow", updatedInput = { command = "pwd" } } end,
        { behavior = "allow", updatedInput = { command = "pwd" } } },
      { "false, message denies with the message",
        function() return false, "Not today." end, { behavior = "deny", message = "Not today." } },
      { "false alone denies with a stock message", function() return false end,
        { behavior = "deny", message = "Denied by the can_use_tool callback" } },
      { "claude.deny(message)", function() return claude.deny("No.") end,
        { behavior = "deny", message = "No." } },
      { "claude.deny(message, true) interrupts", function() return claude.deny("Stop.", true) end,
        { behavior = "deny", message = "Stop.", interrupt = true } },
      { "\"deny\", message", function() return "deny", "Nope." end,
        { behavior = "deny", message = "Nope." } },
    }
    for _, row in ipairs(DECISIONS) do
      local name, fn, want = row[1], row[2], row[3]
      it("can_use_tool: " .. name, function()
        local seen
        local msgs, log = run(permission_script('{"command":"ls"}'), {
          can_use_tool = function(tool, input, ctx)
            seen = { tool = tool, input = input, ctx = ctx }
            return fn(tool, input, ctx)
          end,
        })
        assert.equal("done", msgs[#msgs].result)
        assert.equal("Bash", seen.tool)
        assert.same({ command = "ls" }, seen.input)
        local a = answers(log)
        assert.equal(1, #a)
        assert.equal("success", a[1].subtype)
        assert.same(want, a[1].response)
        assert.equal(0, log.exit_code)
      end)
    end

    it("can_use_tool: an empty input is answered as {} (both ways of allowing)", function()
      for _, fn in ipairs({ allow_all, function() return claude.allow() end }) do
        local _, log = run(permission_script("{}"), { can_use_tool = fn })
        local lines = received_lines(log)
        local answer = lines[#lines]
        assert.matches('"updatedInput":{}', answer, 1, true)
        assert.equal(0, log.exit_code)
      end
    end)

    it("can_use_tool: the callback gets the request's context", function()
      local ctx
      local _, log = run([[
        cli:expect_initialize()
        cli:expect_user()
        cli:system_init()
        local id = cli:tool_use("Edit", { file_path = "/etc/x" })
        cli:can_use_tool("Edit", { file_path = "/etc/x" }, { blocked_path = "/etc/x",
          decision_reason = "outside the project", title = "Edit /etc/x?" })
        cli:assistant(id)
        cli:result()
      ]], { can_use_tool = function(_, _, c)
        ctx = c
        return true
      end })
      local tool_use_id = log.sent[#log.sent].result
      assert.equal(tool_use_id, ctx.tool_use_id)
      assert.equal("/etc/x", ctx.blocked_path)
      assert.equal("outside the project", ctx.decision_reason)
      assert.equal("Edit /etc/x?", ctx.title)
      assert.equal("Edit", ctx.display_name)
      assert.equal("addRules", ctx.suggestions[1].type)
      assert.equal("can_use_tool", ctx.request.subtype)
      assert.is_false(ctx.cancelled())
    end)

    local INVALID = {
      { "nothing", function() end, "can_use_tool returned nothing" },
      { "a number", function() return 42 end, "can_use_tool returned a number" },
      { "an unknown behavior", function() return { behavior = "maybe" } end,
        "can_use_tool returned a table with behavior 'maybe'" },
      { "an updated input that is not a table",
        function() return { behavior = "allow", updated_input = "rm -rf /" } end,
        "can_use_tool returned an updated input that is not a table" },
    }
    for _, row in ipairs(INVALID) do
      local name, fn, want = row[1], row[2], row[3]
      it("can_use_tool returning " .. name .. ": a deny that says why, nothing hangs",
        function()
          local msgs, log = run(permission_script('{"command":"ls"}'), { can_use_tool = fn })
          assert.equal("done", msgs[#msgs].result)
          local a = answers(log)
          assert.equal(1, #a)
          assert.equal("deny", a[1].response.behavior)
          assert.matches("^Permission callback error: ", a[1].response.message)
          assert.matches(want, a[1].response.message, 1, true)
          assert.equal(1, #msgs[#msgs].permission_denials)
          assert.equal(0, log.exit_code)
        end)
    end

    it("can_use_tool raising: an error answer with the message, nothing hangs", function()
      local msgs, log = run(permission_script('{"command":"ls"}'),
        { can_use_tool = function() error("kaboom") end })
      assert.equal("done", msgs[#msgs].result)
      local a = answers(log)
      assert.same({ subtype = "error", request_id = a[1].request_id, error = "kaboom" }, a[1])
      assert.equal(0, log.exit_code)
    end)

    -- The fake runs the PreToolUse hooks for Bash; `fn` is the hook.
    local HOOK_SCRIPT = [[
      cli:expect_initialize()
      cli:expect_user()
      cli:system_init()
      cli:tool_use("Bash", { command = "ls" }, { id = "toolu_01hook" })
      cli:run_hooks("PreToolUse", { tool_name = "Bash", tool_input = { command = "ls" },
        tool_use_id = "toolu_01hook" })
      cli:assistant("done")
      cli:result()
    ]]
    local HOOK_ROWS = {
      { "nil is {}", function() end, { subtype = "success", response = {} } },
      { "snake_case becomes camelCase, hookEventName defaulted",
        function()
          return { system_message = "checked", suppress_output = true,
            hook_specific_output = { permission_decision = "deny",
              permission_decision_reason = "not here", additional_context = "ctx" } }
        end,
        { subtype = "success", response = { systemMessage = "checked", suppressOutput = true,
          hookSpecificOutput = { hookEventName = "PreToolUse", permissionDecision = "deny",
            permissionDecisionReason = "not here", additionalContext = "ctx" } } } },
      { "continue = false is kept",
        function() return { continue = false, stop_reason = "enough" } end,
        { subtype = "success", response = { ["continue"] = false, stopReason = "enough" } } },
      { "a bad permissionDecision is an error answer",
        function() return { hook_specific_output = { permission_decision = "maybe" } } end,
        { subtype = "error", error = "hook for PreToolUse: permissionDecision must be allow, "
          .. "deny, ask or defer, got 'maybe'" } },
      { "an unknown field is an error answer", function() return { sytem_message = "x" } end,
        { subtype = "error", error = "hook for PreToolUse returned an unknown field "
          .. "'sytem_message' (did you mean 'systemMessage'?)" } },
      { "a wrong hookEventName is an error answer",
        function() return { hookSpecificOutput = { hookEventName = "Stop" } } end,
        { subtype = "error", error = "hook for PreToolUse: hookEventName is 'Stop', it must be "
          .. "'PreToolUse'" } },
      { "a hook that raises is an error answer", function() error("hook broke") end,
        { subtype = "error", error = "hook broke" } },
    }
    for _, row in ipairs(HOOK_ROWS) do
      local name, fn, want = row[1], row[2], row[3]
      it("hook_callback: " .. name, function()
        local got
        local msgs, log = run(HOOK_SCRIPT, { hooks = { PreToolUse = {
          { matcher = "Bash", hooks = { function(input, tool_use_id, ctx)
            got = { input = input, tool_use_id = tool_use_id, ctx = ctx }
            return fn()
          end } },
        } } })
        assert.equal("done", msgs[#msgs].result)
        assert.equal("PreToolUse", got.input.hook_event_name)
        assert.equal("Bash", got.input.tool_name)
        assert.same({ command = "ls" }, got.input.tool_input)
        assert.equal("toolu_01hook", got.tool_use_id)
        assert_one_answer(log, want)
      end)
    end

    it("hook_callback: an unknown callback id is an error answer", function()
      local _, log = converse([[
        cli:expect_initialize()
        cli:expect_user()
        local out, err = cli:hook("hook_99", { hook_event_name = "Stop" })
        cli:assistant(tostring(out) .. " / " .. err)
        cli:result()
      ]], { hooks = { Stop = function() end } })
      assert.equal("nil / unknown hook callback id 'hook_99'", log.sent[#log.sent].result)
    end)

    -- Requests answered without user code: the fake asks, the answer is checked.
    local DEFAULT_ROWS = {
      { "an unknown subtype", "no_such_subtype", {}, {},
        { subtype = "error", error = "Unsupported control request subtype: no_such_subtype" } },
      { "elicitation without on_elicitation: decline", "elicitation",
        { mcp_server_name = "srv", message = "Your name?", mode = "form" }, {},
        { subtype = "success", response = { action = "decline" } } },
      { "elicitation with on_elicitation returning a string", "elicitation",
        { mcp_server_name = "srv", message = "OK?", mode = "form" },
        { on_elicitation = function() return "cancel" end },
        { subtype = "success", response = { action = "cancel" } } },
      { "elicitation with on_elicitation returning content", "elicitation",
        { mcp_server_name = "srv", message = "Name?", mode = "form" },
        { on_elicitation = function(req)
          return { action = "accept", content = { name = req.mcp_server_name } }
        end },
        { subtype = "success", response = { action = "accept", content = { name = "srv" } } } },
      { "request_user_dialog: cancelled", "request_user_dialog",
        { dialog_kind = "pick", payload = {} }, {},
        { subtype = "success", response = { behavior = "cancelled" } } },
      { "oauth_token_refresh: no token", "oauth_token_refresh", {}, {},
        { subtype = "success", response = { accessToken = json.null } } },
      { "mcp_message for an unknown server (no servers): -32601", "mcp_message",
        { server_name = "ghost", message = { jsonrpc = "2.0", id = 7, method = "tools/list" } },
        {}, { subtype = "success", response = { mcp_response = { jsonrpc = "2.0", id = 7,
          error = { code = -32601, message = "Server 'ghost' not found" } } } } },
      { "mcp_message for an unknown server (others exist): -32601", "mcp_message",
        { server_name = "ghost", message = { jsonrpc = "2.0", id = 8, method = "tools/list" } },
        { mcp_servers = { calc = calc_server() } },
        { subtype = "success", response = { mcp_response = { jsonrpc = "2.0", id = 8,
          error = { code = -32601, message = "Server 'ghost' not found" } } } } },
    }
    for _, row in ipairs(DEFAULT_ROWS) do
      local name, subtype, fields, options, want = row[1], row[2], row[3], row[4], row[5]
      it(name, function()
        local msgs, log = converse(fmt([[
          cli:expect_initialize()
          cli:expect_user()
          cli:request(%q, cli.json.decode(%q))
          cli:reply("asked")
        ]], subtype, json.encode(fields)), options)
        assert.equal("asked", msgs[#msgs].result)
        assert_one_answer(log, want)
      end)
    end

    it("answers several can_use_tool at once; a slow callback holds up no other", function()
      local order = {}
      local msgs, log = run([[
        cli:expect_initialize()
        cli:expect_user()
        cli:system_init()
        local ids = {}
        for i = 1, 3 do
          ids[i] = cli:send_request("can_use_tool", { tool_name = "Read",
            input = { n = i }, tool_use_id = "toolu_01n" .. i })
        end
        local got = {}
        for i = 3, 1, -1 do got[#got + 1] = assert(cli:await_response(ids[i])).updatedInput.n end
        cli:assistant(table.concat(got, ","))
        cli:result()
      ]], { can_use_tool = function(_, input)
        claude.sleep(0.05 * (3 - input.n)) -- the first asked sleeps longest
        order[#order + 1] = input.n
        return claude.allow({ n = input.n * 10 })
      end })
      assert.equal("30,20,10", msgs[#msgs].result)
      local a = answers(log)
      assert.equal(3, #a)
      local by_id = {}
      for _, r in ipairs(a) do by_id[r.request_id] = r.response.updatedInput.n end
      for _, m in ipairs(log.sent) do
        if m.type == "control_request" and m.request.subtype == "can_use_tool" then
          assert.equal(m.request.input.n * 10, by_id[m.request_id])
        end
      end
      assert.equal(3, #order)
    end)

    it("control_cancel_request for a pending can_use_tool: no answer is ever written",
      function()
        local cancelled_err, ctx_cancelled
        local msgs, log = run([[
          cli:expect_initialize()
          cli:expect_user()
          cli:system_init()
          cli:tool_use("Bash", { command = "sleep 1" })
          local id = cli:send_request("can_use_tool", { tool_name = "Bash",
            input = { command = "sleep 1" }, tool_use_id = "toolu_01x" })
          cli:cancel(id)
          cli:sleep(0.3)  -- room for a (wrong) late answer to arrive before the end
          cli:assistant(id)
          cli:result()
        ]], { can_use_tool = function(_, _, ctx)
          -- swallows the cancellation and answers anyway: still no answer on the wire
          local ok, err = pcall(claude.sleep, T)
          if not ok then cancelled_err = err end
          ctx_cancelled = ctx.cancelled()
          return true
        end })
        local id = msgs[#msgs].result
        assert.is_truthy(cancelled_err, "the callback's task was not cancelled")
        assert.equal("cancelled", cancelled_err.kind)
        assert.is_true(ctx_cancelled)
        assert.is_nil(log:find("control_response", { response = { request_id = id } }))
        assert.equal(0, #answers(log))
        assert.equal(0, log.exit_code)
      end)
  end)

  ---------------------------------------------------------------------------
  describe("requests to the CLI", function()
    it("round-trips interrupt, set_model, set_permission_mode, mcp_status", function()
      local s <close>, fake = connect([[
        cli:expect_initialize()
        cli:answer((cli:expect_control("interrupt")))
        cli:answer((cli:expect_control("set_model", { model = "claude-opus-4-8" })))
        cli:answer((cli:expect_control("set_model", { model = cli.json.null })))
        cli:answer((cli:expect_control("set_permission_mode", { mode = "acceptEdits" })))
        cli:answer((cli:expect_control("mcp_status")))
        cli:answer((cli:expect_control("get_binary_version")))
      ]])
      assert.same({}, s:interrupt(T))
      assert.same({}, s:set_model("claude-opus-4-8", T))
      assert.same({}, s:set_model(nil, T))
      assert.same({ mode = "acceptEdits" }, s:set_permission_mode("acceptEdits", T))
      local status = assert(s:mcp_status(T))
      assert.is_table(status.mcpServers)
      assert.equal(0, #status.mcpServers)
      local v = assert(s:control("get_binary_version", nil, T))
      assert.is_string(v.version)
      -- the CLI's side lines arrive as messages
      local replay = assert(s:next_message(T))
      assert.equal("user", replay.type)
      assert.is_true(replay.isReplay)
      assert.equal("<local-command-stdout>Set model to claude-opus-4-8</local-command-stdout>",
        claude.text(replay))
      assert.equal("user", assert(s:next_message(T)).type)
      local status_line = assert(s:next_message(T))
      assert.equal("status", status_line.subtype)
      assert.equal("acceptEdits", status_line.permissionMode)
      s:close()
      assert.equal(0, fake:read_log().exit_code)
    end)

    it("returns nil, err (kind control) for an error answer", function()
      local s <close> = connect([[
        cli:expect_initialize()
        cli:answer((cli:expect_control("get_context_usage")))
      ]])
      local body, err = s:get_context_usage(T)
      assert.is_nil(body)
      assert.equal("control", err.kind)
      assert.equal("control request 'get_context_usage' failed: Unsupported control request "
        .. "subtype: get_context_usage", err.message)
      assert.equal("error", err.response.subtype)
    end)

    it("raises at the caller's line for a bad subtype or timeout", function()
      local s <close> = connect([[
        cli:expect_initialize()
        cli:drain()
      ]])
      local ok, err = pcall(function() s:control(42) end)
      assert.is_false(ok)
      assert.matches("session_spec.lua:%d+: bad argument #1 to 'control' %(string expected, "
        .. "got number%)", err)
      ok, err = pcall(function() s:control("mcp_status", nil, "soon") end)
      assert.is_false(ok)
      assert.matches("session_spec.lua:%d+: bad argument #3 to 'control' %(non%-negative "
        .. "number expected, got soon%)", err)
    end)

    it("does not modify the caller's fields table", function()
      local s <close> = connect([[
        cli:expect_initialize()
        cli:answer((cli:expect_control("get_settings")))
      ]])
      local fields = {}
      assert(s:control("get_settings", fields, T))
      assert.same({}, fields)
    end)

    it("times out (kind timeout) and sends control_cancel_request", function()
      local s <close>, fake = connect([[
        cli:expect_initialize()
        local req = cli:expect_control("mcp_status")           -- not answered...
        cli:expect("control_cancel_request", { request_id = req.request_id })
        cli:respond(req, { mcpServers = {} })                  -- ...until too late
        cli:answer((cli:expect_control("interrupt")))
      ]])
      local body, err = s:mcp_status(0.3)
      assert.is_nil(body)
      assert.equal("timeout", err.kind)
      assert.matches("control request 'mcp_status' timed out", err.message, 1, true)
      -- the late answer is dropped; the session goes on
      assert.same({}, s:interrupt(T))
      s:close()
      local log = fake:read_log()
      local req = log:find("control_request", "mcp_status")
      assert.is_table(log:find("control_cancel_request", { request_id = req.request_id }))
      assert.equal(0, log.exit_code)
    end)
  end)

  ---------------------------------------------------------------------------
  describe("messages", function()
    it("passes unknown message types and content blocks through untouched", function()
      local msgs, log = run([[
        cli:expect_initialize()
        cli:expect_user()
        cli:system_init()
        cli:send({ type = "mystery_event", session_id = cli.session_id,
          payload = { nested = { 1, 2.5, "x" }, flag = false, none = cli.json.null } })
        cli:system("brand_new_subtype", { detail = { deep = true } })
        cli:assistant({ { type = "hologram", frames = { "a", "b" } },
          { type = "text", text = "plain" } })
        cli:result()
      ]])
      local sent = {}
      for _, m in ipairs(log.sent) do
        if m.type ~= "control_response" then sent[#sent + 1] = m end
      end
      assert.same(sent, msgs)
      local mystery = of_type(msgs, "mystery_event")[1]
      assert.same({ nested = { 1, 2.5, "x" }, flag = false, none = json.null }, mystery.payload)
      assert.equal("hologram", of_type(msgs, "assistant")[1].message.content[1].type)
    end)

    it("claude.text reads assistant, user and result messages", function()
      local msgs = run([[
        cli:expect_initialize()
        cli:expect_user()
        cli:system_init()
        cli:assistant({ { type = "text", text = "Hello, " }, { type = "thinking",
          thinking = "hmm" }, { type = "text", text = "world" } })
        cli:tool_use("Read", { file_path = "/x" })
        cli:user("<local-command-stdout>ok</local-command-stdout>")
        cli:result()
      ]])
      local a = of_type(msgs, "assistant")
      assert.equal("Hello, ", claude.text(a[1]))     -- one line per block
      assert.is_nil(claude.text(a[2]))               -- thinking
      assert.equal("world", claude.text(a[3]))
      assert.is_nil(claude.text(a[4]))               -- tool_use
      assert.equal("<local-command-stdout>ok</local-command-stdout>",
        claude.text(of_type(msgs, "user")[1]))
      assert.equal("world", claude.text(msgs[#msgs]))
      assert.is_nil(claude.text(of_type(msgs, "system")[1]))
      assert.is_nil(claude.text("not a message"))
      assert.equal("hi", claude.text({ type = "user", message = { role = "user",
        content = "hi" } }))
      local function assistant(...)
        return { type = "assistant", message = { content = { ... } } }
      end
      local text, thinking = { type = "text", text = "a" }, { type = "thinking", thinking = "t" }
      assert.equal("aba", claude.text(assistant(text, thinking, { type = "text", text = "b" },
        text)))
      assert.equal("a", claude.text(assistant(thinking, text)))
      assert.is_nil(claude.text(assistant(thinking, thinking)))
      assert.is_nil(claude.text(assistant(thinking)))
      assert.is_nil(claude.text(assistant()))
      assert.is_nil(claude.text(assistant({ type = "text", text = 5 })))
      assert.is_nil(claude.text({ type = "result", result = 5 }))
    end)

    it("skips a line that is not JSON (to the stderr callback), and blank lines", function()
      local lines = {}
      local msgs, log = run([[
        cli:expect_initialize()
        cli:expect_user()
        cli:write_raw("[SandboxDebug] sandbox ready")
        cli:write_raw("")
        cli:write_raw("   ")
        cli:stderr("a real stderr line")
        cli:reply("fine")
      ]], { stderr = function(line) lines[#lines + 1] = line end })
      assert.equal("fine", msgs[#msgs].result)
      assert.equal(3, #msgs)
      local set = {}
      for _, l in ipairs(lines) do set[l] = true end
      assert.is_true(set["[SandboxDebug] sandbox ready"])
      assert.is_true(set["a real stderr line"])
      assert.equal(0, log.exit_code)
    end)

    it("ends the session (kind json_decode) at a malformed line starting with {", function()
      local msgs, err = run_failing([[
        cli:expect_initialize()
        cli:expect_user()
        cli:system_init()
        cli:write_raw('{"type":"assistant","message":')
        cli:assistant("never seen")
        cli:drain()
      ]], { can_use_tool = allow_all })
      assert.equal("json_decode", err.kind)
      assert.equal('{"type":"assistant","message":', err.line)
      assert.same({ "system" }, { msgs[1].type })
      assert.equal(1, #msgs)
    end)

    it("ends the session (kind overflow) at a line over max_buffer_size; no half-dead session",
      function()
        local s <close>, fake = connect([[
          cli:expect_initialize()
          cli:expect_user()
          cli:system_init()
          cli:write_raw('{"type":"assistant","pad":"' .. string.rep("x", 300000) .. '"}')
          cli:drain()
        ]], { max_buffer_size = 64 * 1024 })
        assert(s:send("go"))
        local msgs = {}
        local err = raises(function()
          for msg in s:receive(T) do msgs[#msgs + 1] = msg end
        end)
        assert.equal("overflow", err.kind)
        assert.equal(1, #msgs)
        -- every later use fails with the same error
        local ok, serr = s:send("more")
        assert.is_nil(ok)
        assert.equal("overflow", serr.kind)
        local body, cerr = s:interrupt(T)
        assert.is_nil(body)
        assert.equal("overflow", cerr.kind)
        local m, merr = s:next_message(T)
        assert.is_nil(m)
        assert.equal("overflow", merr.kind)
        s:close()
        assert.is_false(alive(fake:read_log().pid))
      end)
  end)

  ---------------------------------------------------------------------------
  describe("lifetimes", function()
    it("closes while a tool still runs: the tool is cancelled, nothing is reported", function()
      local reported = {}
      claude.on_error(function(e) reported[#reported + 1] = tostring(e) end)
      local started, cancelled = false, false
      local slow = claude.server("slow", {
        claude.tool("wait", "Waits", {}, function(_, ctx)
          started = true
          pcall(claude.sleep, 30)
          cancelled = ctx.cancelled
          return "late"
        end),
      })
      local opts = testing.fake_cli([[
        cli:expect_initialize()
        cli:expect_user()
        cli:call_tool("slow", "wait", {}, "toolu_1")   -- the SDK closes before answering
        cli:drain()
      ]])
      local s = assert(claude.connect(testing.merge(opts, { mcp_servers = { slow = slow },
        close_timeout = 1 })))
      assert(s:send("go"))
      for _ = 1, 200 do
        if started then break end
        claude.sleep(0.01)
      end
      assert.is_true(started)
      s:close()
      claude.sleep(0.05)
      claude.on_error(nil)
      assert.is_true(cancelled)
      assert.same({}, reported)
    end)

    it("raises kind cli_not_found for a CLI that is not there", function()
      local err = raises(function()
        local iter = claude.query("hi", { cli_path = "/nonexistent/bin/claude" })
        return iter
      end)
      assert.equal("cli_not_found", err.kind)
      assert.matches("/nonexistent/bin/claude", err.message, 1, true)
      local s, cerr = claude.connect({ cli_path = "/nonexistent/bin/claude" })
      assert.is_nil(s)
      assert.equal("cli_not_found", cerr.kind)
      -- both ways forward: install it, or run with --demo
      assert.matches("install it with: npm install -g @anthropic-ai/claude-code", cerr.message,
        1, true)
      assert.matches("--demo (claudelua --demo script.lua", cerr.message, 1, true)
    end)

    it("names the CLI tools/setup.sh installed beside claudelua when there is none on PATH",
      function()
      -- tools/setup.sh's layout: <prefix>/bin/claudelua, <prefix>/lib/claudelua/cli/claude
      local q = harness.quote
      local prefix = harness.tempdir()
      local cli = prefix .. "/lib/claudelua/cli/claude"
      assert.is_true(os.execute("mkdir -p " .. q(prefix .. "/bin") .. " "
        .. q(prefix .. "/lib/claudelua/cli") .. " && cp " .. q(harness.claudelua) .. " "
        .. q(prefix .. "/bin/") .. " && printf '#!/bin/sh\\n' > " .. q(cli)
        .. " && chmod +x " .. q(cli)))
      local code, out = harness.sh("cd " .. q(prefix) .. " && env -i HOME=" .. q(prefix)
        .. " PATH=/usr/bin:/bin bin/claudelua -e "
        .. q("print(select(2, require('claude').connect{}))"))
      os.execute("rm -rf " .. q(prefix))
      assert.equal(0, code, out)
      assert.matches("claude CLI not found on PATH or in the usual install places; install it",
        out, 1, true)
      assert.matches("--demo (claudelua --demo script.lua", out, 1, true)
      assert.matches("the set-up put a CLI at " .. cli .. " (--demo runs it; ", out, 1, true)
    end)

    it("sends a prompt given as content blocks or as a whole user message", function()
      local _, log = run([[
        cli:expect_initialize()
        cli:expect_user("from blocks")
        cli:reply("ok")
      ]], nil, { { type = "text", text = "from blocks" } })
      assert.same({ { type = "text", text = "from blocks" } }, log:find("user").message.content)
      local msg = { type = "user", session_id = "", parent_tool_use_id = json.null,
        message = { role = "user", content = "whole" }, origin = { kind = "human" } }
      _, log = run([[
        cli:expect_initialize()
        cli:expect_user("whole")
        cli:reply("ok")
      ]], nil, msg)
      assert.same(msg, log:find("user"))
    end)

    it("a one-shot string prompt without callbacks closes stdin right after it", function()
      local msgs, log = run([[
        cli:expect_initialize()
        cli:expect_user("one shot")
        cli:expect_eof()          -- before anything is said
        cli:reply("answered")
      ]], nil, "one shot")
      assert.equal("answered", msgs[#msgs].result)
      assert.is_true(log.eof)
      assert.equal(0, log.exit_code)
    end)

    -- With callbacks, the CLI may still ask after the assistant text: stdin
    -- must stay open until the result.
    local LATE_ROWS = {
      { "can_use_tool", { can_use_tool = allow_all },
        'assert(cli:can_use_tool("Bash", { command = "ls" }).behavior == "allow")', 1 },
      { "a hook", { hooks = { Stop = function() return { system_message = "bye" } end } },
        'assert(cli:run_hooks("Stop", { stop_hook_active = false })[1].systemMessage == "bye")',
        1 },
      { "an in-process server", { mcp_servers = { calc = calc_server() } },
        'cli:mcp_connect("calc")\n' -- 3 requests, then tools/call
        .. 'assert(cli:call_tool("calc", "add", { a = 1, b = 2 }).content[1].text == "3")', 4 },
    }
    for _, row in ipairs(LATE_ROWS) do
      local name, options, ask, n_answers = row[1], row[2], row[3], row[4]
      it("with " .. name .. ", stdin stays open until the result", function()
        local msgs, log = run(fmt([[
          cli:expect_initialize()
          cli:expect_user()
          cli:system_init()
          cli:assistant("Let me check.")
          %s
          cli:assistant("Checked.")
          cli:result()
          cli:expect_eof()
        ]], ask), options)
        assert.equal("Checked.", msgs[#msgs].result)
        assert.equal(n_answers, #answers(log))
        assert.is_true(log.eof)
        assert.equal(0, log.exit_code)
      end)
    end

    it("an iterator prompt of 3 messages with callbacks closes after the 3rd result", function()
      local words = { "one", "two", "three" }
      local i = 0
      local prompt = function()
        i = i + 1
        return words[i]
      end
      local asked = {}
      local msgs, log = run([[
        cli:expect_initialize()
        for _, word in ipairs({ "one", "two", "three" }) do
          cli:expect_user(word)
          cli:system_init()
          cli:assistant("echo " .. word)
          assert(cli:can_use_tool("Read", { file_path = "/" .. word }).behavior == "allow")
          cli:result()
        end
        cli:expect_eof()
      ]], { can_use_tool = function(_, input)
        asked[#asked + 1] = input.file_path
        return true
      end }, prompt)
      local results = of_type(msgs, "result")
      assert.equal(3, #results)
      assert.equal("echo three", results[3].result)
      assert.same({ "/one", "/two", "/three" }, asked)
      assert.equal(0, log.exit_code)
    end)

    it("an empty iterator prompt closes stdin at once, even with callbacks", function()
      local msgs, log = run([[
        cli:expect_initialize()
        cli:expect_eof()
      ]], { can_use_tool = allow_all }, function() return nil end)
      assert.same({}, msgs)
      assert.equal(0, log.exit_code)
    end)

    it("break out of for msg in claude.query(...) closes the session", function()
      if _VERSION == "Lua 5.3" then return pending("Lua 5.3 has no closing value in a for") end
      local opts, fake = testing.fake_cli([[
        cli:expect_initialize()
        cli:expect_user()
        cli:system_init()
        cli:assistant("first")
        cli:answer(cli:expect_control("interrupt")) -- the loop broke mid-turn: stop the turn
        cli:expect_eof()      -- then the SDK closes stdin
      ]])
      local seen = {}
      for msg in claude.query("hi", testing.merge(opts, { can_use_tool = allow_all })) do
        seen[#seen + 1] = msg.type
        if msg.type == "assistant" then break end
      end
      assert.same({ "system", "assistant" }, seen)
      local log = fake:read_log()
      assert.is_true(log.eof)
      assert.equal(0, log.exit_code)
      assert.is_false(alive(log.pid))
    end)

    it("break ends a CLI that ignores EOF (terminated after close_timeout)", function()
      if _VERSION == "Lua 5.3" then return pending("Lua 5.3 has no closing value in a for") end
      local opts, fake = testing.fake_cli([[
        cli:expect_initialize()
        cli:expect_user()
        cli:system_init()
        cli:assistant("first")
        cli:sleep(60)
      ]])
      for msg in claude.query("hi", testing.merge(opts, { close_timeout = 0.2 })) do
        if msg.type == "assistant" then break end
      end
      local log = fake:read_log()
      assert.is_false(alive(log.pid)) -- interrupted, then signalled: it is gone
    end)

    it("the CLI exiting non-zero mid-turn raises kind process with code and stderr", function()
      local msgs, err, log = run_failing([[
        cli:expect_initialize()
        cli:expect_user()
        cli:system_init()
        cli:assistant("partial")
        cli:stderr("fatal: the API went away")
        cli:exit(7)
      ]], { can_use_tool = allow_all })
      assert.same({ "system", "assistant" }, { msgs[1].type, msgs[2].type })
      assert.equal("process", err.kind)
      assert.equal(7, err.exit_code)
      assert.matches("fatal: the API went away", err.stderr_tail, 1, true)
      assert.matches("exited with code 7", tostring(err), 1, true)
      assert.matches("--- last lines of stderr ---", tostring(err), 1, true)
      assert.equal(7, log.exit_code)
    end)

    it("the CLI killed by a signal mid-turn raises kind process with the signal", function()
      local msgs, err = run_failing([[
        cli:expect_initialize()
        cli:expect_user()
        cli:system_init()
        require("claude.core").kill(cli:initialize_response().pid, 9)
        cli:sleep(30)
      ]], { can_use_tool = allow_all })
      assert.equal(1, #msgs)
      assert.equal("process", err.kind)
      assert.equal(9, err.signal)
      assert.matches("was killed by signal 9", err.message, 1, true)
    end)

    it("keeps the last 40 lines of stderr in the error", function()
      local _, err = run_failing([[
        cli:expect_initialize()
        cli:expect_user()
        for i = 1, 100 do cli:stderr("line " .. i) end
        cli:exit(5)
      ]], { can_use_tool = allow_all })
      assert.equal("process", err.kind)
      local lines = {}
      for l in err.stderr_tail:gmatch("[^\n]+") do lines[#lines + 1] = l end
      assert.equal(40, #lines)
      assert.equal("line 61", lines[1])
      assert.equal("line 100", lines[40])
    end)

    it("an error result then exit code 1 ends the iteration without raising", function()
      local msgs, log = run([[
        cli:expect_initialize()
        cli:expect_user()
        cli:system_init()
        cli:assistant("API Error: 400 bad block", { model = "<synthetic>",
          error = "invalid_request" })
        cli:result({ is_error = true, api_error_status = 400 })
        cli:expect_eof()
        cli:exit(1)
      ]])
      assert.is_true(msgs[#msgs].is_error)
      assert.equal(400, msgs[#msgs].api_error_status)
      assert.equal(1, log.exit_code)
    end)

    it("a prompt iterator that raises ends the query with its error", function()
      local opts, fake = testing.fake_cli([[
        cli:expect_initialize()
        cli:expect_user("one")
        cli:reply("r1")
        cli:drain()
      ]])
      local n = 0
      local prompt = function()
        n = n + 1
        if n == 1 then return "one" end
        error("feeder broke", 0)
      end
      local reported = {}
      claude.on_error(function(e) reported[#reported + 1] = tostring(e) end)
      local task = claude.spawn(function()
        local msgs = {}
        local ok, err = pcall(function()
          for msg in claude.query(prompt, opts) do msgs[#msgs + 1] = msg end
        end)
        return ok, err, msgs
      end)
      local joined, ok, err = task:join(10) -- a guard: the bug hangs here
      if not joined then
        task:cancel("the query hung")
        task:join(T)
      end
      claude.on_error(nil)
      assert.is_true(joined, "the query hung after its prompt iterator raised")
      assert.is_false(ok)
      assert.matches("feeder broke", tostring(err), 1, true)
      local pid = fake:read_log().pid -- nil when it was stopped before it logged
      assert.is_true(pid == nil or not alive(pid))
      assert.same({}, reported)
    end)

    it("every pending control wait ends with the exit error at once", function()
      local s <close> = connect([[
        cli:expect_initialize()
        cli:expect("control_request")
        cli:expect("control_request")
        cli:stderr("crashing now")
        cli:exit(9)
      ]])
      local t1 = claude.spawn(function() return s:mcp_status(T) end)
      local t2 = claude.spawn(function() return s:interrupt(T) end)
      for _, t in ipairs({ t1, t2 }) do
        local ok, body, err = t:join(T)
        assert.is_true(ok)
        assert.is_nil(body)
        assert.equal("process", err.kind) -- not "timeout": the wait ended with the exit
        assert.equal(9, err.exit_code)
        assert.matches("crashing now", err.stderr_tail, 1, true)
      end
      local m, merr = s:next_message(T)
      assert.is_nil(m)
      assert.equal("process", merr.kind)
      local ok, serr = s:send("more")
      assert.is_nil(ok)
      assert.equal("process", serr.kind)
    end)

    it("connect fails (kind process) when the CLI dies before answering initialize", function()
      local opts = testing.fake_cli([[
        cli:expect_control("initialize")
        cli:stderr("no auth")
        cli:exit(4)
      ]])
      local s, err = claude.connect(opts)
      assert.is_nil(s)
      assert.equal("process", err.kind)
      assert.equal(4, err.exit_code)
      assert.matches("no auth", err.stderr_tail, 1, true)
    end)

    it("<close> on a connect()ed session ends the process", function()
      if _VERSION == "Lua 5.3" then return pending("Lua 5.3 has no to-be-closed variables") end
      local opts, fake = testing.fake_cli([[
        cli:expect_initialize()
        cli:expect_user("hello")
        cli:reply("hi there")
      ]])
      local pid, session
      do
        local s <close> = assert(claude.connect(opts))
        pid, session = s.pid, s
        assert(s:send("hello"))
        local msgs = collect(s:receive(T))
        assert.equal("hi there", msgs[#msgs].result)
        assert.is_true(alive(pid))
      end
      assert.equal("closed", session.state)
      assert.is_false(alive(pid))
      local log = fake:read_log()
      assert.is_true(log.eof)
      assert.equal(0, log.exit_code)
      local ok, err = session:send("again")
      assert.is_nil(ok)
      assert.is_truthy(err)
      session:close() -- idempotent
    end)
  end)

  ---------------------------------------------------------------------------
  it("runs 5 sessions at once in one process", function()
    local N = 5
    local tasks, fakes = {}, {}
    for i = 1, N do
      local opts, fake = testing.fake_cli(fmt([[
        cli:expect_initialize()
        local _, text = cli:expect_user()
        cli:system_init()
        cli:assistant("working on " .. text)
        cli:sleep(0.05)
        local d = assert(cli:can_use_tool("Read", { file_path = "/f%d" }))
        cli:assistant(text .. ":" .. d.updatedInput.file_path)
        cli:result()
      ]], i))
      fakes[i] = fake
      tasks[i] = claude.spawn(function()
        local last
        for msg in claude.query("job" .. i, testing.merge(opts, {
          can_use_tool = function(_, input)
            claude.sleep(0.01)
            return claude.allow({ file_path = input.file_path .. "!" })
          end,
        })) do last = msg end
        return last.result
      end)
    end
    local pids = {}
    for i = 1, N do
      local ok, result = tasks[i]:join(T)
      assert(ok, tostring(result))
      assert.equal(fmt("job%d:/f%d!", i, i), result)
      local log = fakes[i]:read_log()
      assert.equal(0, log.exit_code)
      assert.is_nil(pids[log.pid])
      pids[log.pid] = true
    end
  end)
end)
