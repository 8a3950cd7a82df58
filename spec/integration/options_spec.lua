-- The options of the Python SDK 0.2.143 and the TypeScript SDK that map to
-- flags, environment and initialize fields, against the fake CLI of
-- claude.testing (the exact argv, env and initialize request), and the
-- checks of every nested option field. The real CLI runs them in
-- spec/e2e/options_spec.lua where it can do so offline.
-- Run: busted spec/integration/options_spec.lua
local claude = require "claude"
local json = require "claude.json"
local testing = require "claude.testing"
local harness = require "support.harness"

local IDLE = "cli:expect_initialize()"

-- Connects to an idle fake with `options`; returns the fake's log.
local function log_for(options)
  local opts, fake = testing.fake_cli(IDLE)
  local s = assert(claude.connect(testing.merge(opts, options)))
  s:close()
  local log = fake:read_log()
  assert.equal(0, log.exit_code)
  return log
end

-- The argv between the fixed ends, after `--system-prompt ""`.
local function middle(options)
  local argv = log_for(options).argv
  assert.same({ "--output-format", "stream-json", "--verbose" }, { table.unpack(argv, 1, 3) })
  assert.same({ "--input-format", "stream-json" }, { table.unpack(argv, #argv - 1, #argv) })
  return { table.unpack(argv, 4, #argv - 2) }
end

local function D(...) return { "--system-prompt", "", ... } end

local function init_request(options)
  return log_for(options):find("control_request", "initialize").request
end

-- The message of the error `fn` raises.
local function raises(fn)
  local ok, err = pcall(fn)
  assert(not ok, "expected an error")
  return tostring(err)
end

describe("options", function()
  before_each(harness.before)
  after_each(function()
    testing.cleanup()
    harness.after()
  end)

  describe("argv", function()
    local ROWS = {
      { "skills 'all' adds Skill and the default setting sources", { skills = "all" },
        D("--allowedTools", "Skill", "--setting-sources=user,project") },
      { "skills list adds Skill(name) after allowed_tools",
        { skills = { "pdf", "plugin:docx" }, allowed_tools = { "Read" } },
        D("--allowedTools", "Read,Skill(pdf),Skill(plugin:docx)",
          "--setting-sources=user,project") },
      { "skills keep explicit setting sources, and no duplicate rule",
        { skills = { "pdf" }, allowed_tools = { "Skill(pdf)" }, setting_sources = { "project" } },
        D("--allowedTools", "Skill(pdf)", "--setting-sources=project") },
      { "task_budget table", { task_budget = { total = 50000 } }, D("--task-budget", "50000") },
      { "task_budget number", { task_budget = 1200 }, D("--task-budget", "1200") },
      { "task_budget after disallowed_tools, before model",
        { task_budget = { total = 9 }, disallowed_tools = { "Bash" }, model = "m" },
        D("--disallowedTools", "Bash", "--task-budget", "9", "--model", "m") },
      { "resume_session_at (equals form)",
        { resume = "s1", resume_session_at = "-u1" }, D("--resume=s1", "--resume-session-at=-u1") },
      { "resume_drops_turn, even empty", { resume_drops_turn = "" }, D("--resume-drops-turn=") },
      { "resume flags after fork_session",
        { fork_session = true, resume_session_at = "a", resume_drops_turn = "b" },
        D("--fork-session", "--resume-session-at=a", "--resume-drops-turn=b") },
      { "session_store gives --session-mirror before the setting sources",
        { session_store = { append = function() end }, setting_sources = {} },
        D("--session-mirror", "--setting-sources=") },
      { "agent (equals form)", { agent = "reviewer", permission_mode = "plan" },
        D("--permission-mode", "plan", "--agent=reviewer") },
      { "mcp_servers as a path", { mcp_servers = "/etc/claude/mcp.json" },
        D("--mcp-config", "/etc/claude/mcp.json") },
      { "mcp_servers as JSON text", { mcp_servers = '{"mcpServers":{}}' },
        D("--mcp-config", '{"mcpServers":{}}') },
      { "system_prompt preset with exclude_dynamic_sections: no flag",
        { system_prompt = { type = "preset", preset = "claude_code",
          exclude_dynamic_sections = true } }, {} },
      { "enable_file_checkpointing: no flag", { enable_file_checkpointing = true }, D() },
      -- the TypeScript SDK's options, in its order
      { "debug", { debug = true }, D("--debug") },
      { "debug_file wins over debug", { debug = true, debug_file = "/tmp/d.log" },
        D("--debug-file=/tmp/d.log") },
      { "permission_prompts, then the mode, then allow_dangerously_skip_permissions",
        { permission_prompts = "none", permission_mode = "plan",
          allow_dangerously_skip_permissions = true },
        D("--permission-prompts=none", "--permission-mode", "plan",
          "--allow-dangerously-skip-permissions") },
      { "project_config_root before add_dirs", { project_config_root = "/r", add_dirs = { "/a" } },
        D("--project-config-root=/r", "--add-dir", "/a") },
      { "persist_session = false", { persist_session = false }, D("--no-session-persistence") },
      { "persist_session = true: no flag", { persist_session = true }, D() },
      { "managed_settings as JSON", { managed_settings = { permissions = { deny = { "X" } } } },
        D("--managed-settings", '{"permissions":{"deny":["X"]}}') },
      { "system_prompt as a list: no flag (initialize)", { system_prompt = { "a", "b" } }, {} },
      { "system_prompt custom: no flag (initialize)",
        { system_prompt = { type = "custom", prompt = "p" } }, {} },
      { "mcp_servers_delivery = 'initialize': no --mcp-config, --await-initialize",
        { mcp_servers_delivery = "initialize", mcp_servers = { x = { command = "srv" } } },
        D("--await-initialize") },
      { "plugin_delivery = 'initialize': no --plugin-dir, --await-initialize",
        { plugin_delivery = "initialize", plugins = { { type = "local", path = "/p" } } },
        D("--await-initialize") },
      { "the initialize-only options: no flag", { prompt_suggestions = true, title = "t",
        agent_progress_summaries = true, plan_mode_instructions = "p", tool_aliases = { A = "B" },
        per_task_stop_affordance = true, verbatim_prompts = true }, D() },
    }
    for _, row in ipairs(ROWS) do
      it(row[1], function() assert.same(row[3], middle(row[2])) end)
    end

    it("encodes every list of a server config as a JSON array, even empty", function()
      local mid = middle { mcp_servers_delivery = "argv", mcp_servers = {
        a = { type = "stdio", command = "srv", args = {}, env = {} },
        b = { command = "srv2", args = { "-v" }, env = { K = "v" } },
        c = { type = "http", url = "http://127.0.0.1:9/mcp", headers = {} },
      } }
      assert.equal("--mcp-config", mid[3])
      local text = mid[4]
      assert.matches('"args":%[%]', text)
      assert.matches('"env":{}', text)
      assert.matches('"headers":{}', text)
      assert.same({ mcpServers = {
        a = { type = "stdio", command = "srv", args = {}, env = {} },
        b = { command = "srv2", args = { "-v" }, env = { K = "v" } },
        c = { type = "http", url = "http://127.0.0.1:9/mcp", headers = {} },
      } }, json.decode(text))
    end)
  end)

  describe("environment", function()
    it("enable_file_checkpointing sets CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING", function()
      assert.equal("true",
        log_for({ enable_file_checkpointing = true }).env.CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING)
      assert.is_nil(log_for({}).env.CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING)
    end)

    it("tool_config sets the CLI's AskUserQuestion variables", function()
      local env = log_for({ tool_config = { ask_user_question = { preview_format = "html",
        extended_questions = true, optional_descriptions = false } } }).env
      assert.equal("html", env.CLAUDE_CODE_QUESTION_PREVIEW_FORMAT)
      assert.equal("1", env.CLAUDE_CODE_QUESTION_EXTENDED)
      assert.is_nil(env.CLAUDE_CODE_QUESTION_OPTIONAL_DESCRIPTIONS)
      assert.is_nil(log_for({}).env.CLAUDE_CODE_QUESTION_PREVIEW_FORMAT)
    end)

    it("asks for start-up failure results (a CLI that refuses to start says why)", function()
      assert.equal("1", log_for({}).env.CLAUDE_CODE_STARTUP_FAILURE_RESULTS)
      assert.is_nil(log_for({ env = { CLAUDE_CODE_STARTUP_FAILURE_RESULTS = false } }).env
        .CLAUDE_CODE_STARTUP_FAILURE_RESULTS)
    end)
  end)

  describe("initialize", function()
    it("carries excludeDynamicSections from the preset system prompt", function()
      local req = init_request { system_prompt = { type = "preset", preset = "claude_code",
        exclude_dynamic_sections = true } }
      assert.is_true(req.excludeDynamicSections)
      assert.is_nil(init_request({}).excludeDynamicSections)
    end)

    it("carries a skills list, not 'all'", function()
      assert.same({ "pdf" }, init_request({ skills = { "pdf" } }).skills)
      assert.is_nil(init_request({ skills = "all" }).skills)
    end)

    it("carries forward_subagent_text as forwardSubagentText, only when true", function()
      assert.is_true(init_request({ forward_subagent_text = true }).forwardSubagentText)
      assert.is_nil(init_request({ forward_subagent_text = false }).forwardSubagentText)
      assert.is_nil(init_request({}).forwardSubagentText)
    end)

    it("sends a matcher's on_failure as onFailure", function()
      local req = init_request { hooks = {
        PreToolUse = { { matcher = "Bash", hooks = { function() end }, on_failure = "block" } },
        Stop = function() end,
      } }
      assert.equal("block", req.hooks.PreToolUse[1].onFailure)
      assert.is_nil(req.hooks.Stop[1].onFailure)
    end)

    it("carries the TypeScript SDK's initialize options", function()
      local req = init_request { title = "T", plan_mode_instructions = "P",
        tool_aliases = { Bash = "mcp__w__bash" }, prompt_suggestions = true,
        agent_progress_summaries = false, per_task_stop_affordance = true,
        supported_dialog_kinds = { "refusal_fallback_prompt" },
        on_user_dialog = function() end }
      assert.equal("T", req.title)
      assert.equal("P", req.planModeInstructions)
      assert.same({ Bash = "mcp__w__bash" }, req.toolAliases)
      assert.is_true(req.promptSuggestions)
      assert.is_false(req.agentProgressSummaries)
      assert.is_true(req.perTaskStopAffordance)
      assert.same({ "refusal_fallback_prompt" }, req.supportedDialogKinds)
      local bare = init_request {}
      for _, k in ipairs { "title", "planModeInstructions", "toolAliases", "promptSuggestions",
        "agentProgressSummaries", "perTaskStopAffordance", "supportedDialogKinds",
        "systemPrompt", "systemPromptSnapshot" } do
        assert.is_nil(bare[k], k)
      end
    end)

    it("carries servers and plugins delivered in initialize", function()
      local req = init_request { mcp_servers_delivery = "initialize", plugin_delivery =
        "initialize", mcp_servers = { x = { command = "srv", env = { K = "v" } } },
        plugins = { { type = "local", path = "/p" } } }
      assert.same({ x = { command = "srv", env = { K = "v" } } }, req.mcpServers)
      assert.same({ { type = "local", path = "/p" } }, req.plugins)
      local plain = init_request { mcp_servers_delivery = "argv",
        mcp_servers = { x = { command = "srv" } } }
      assert.is_nil(plain.mcpServers)
    end)

    it("carries a system prompt list (and the custom form) as systemPrompt blocks", function()
      assert.same({ "a", "b" }, init_request({ system_prompt = { "a", "b" } }).systemPrompt)
      local req = init_request { system_prompt = { type = "custom", prompt = "p",
        snapshot = true } }
      assert.same({ "p" }, req.systemPrompt)
      assert.is_true(req.systemPromptSnapshot)
      assert.is_false(init_request({ system_prompt = { type = "preset", preset = "claude_code",
        snapshot = false } }).systemPromptSnapshot)
    end)

    it("accepts the camelCase agent fields too", function()
      local req = init_request { agents = { rev = { description = "d", prompt = "p",
        maxTurns = 2, disallowed_tools = { "Bash" } } } }
      assert.same({ description = "d", prompt = "p", maxTurns = 2,
        disallowedTools = { "Bash" } }, req.agents.rev)
    end)
  end)

  describe("send", function()
    -- the real CLI replaces the message's session_id by its own, so only the
    -- fake can show what the SDK wrote
    it("sets the user message's session_id", function()
      local opts, fake = testing.fake_cli("cli:expect_initialize(); cli:drain()")
      local s = assert(claude.connect(testing.merge(opts, {})))
      assert(s:send("one", { session_id = "branch-7" }))
      assert(s:send("two"))
      s:close()
      local users = {}
      for _, rec in ipairs(fake:read_log().records) do
        if rec.event == "received" then
          local m = json.decode(rec.line)
          if m.type == "user" then users[#users + 1] = m.session_id end
        end
      end
      assert.same({ "branch-7", "default" }, users)
    end)

    it("sets uuid and priority, and client_composed for verbatim_prompts", function()
      local opts, fake = testing.fake_cli("cli:expect_initialize(); cli:drain()")
      local s = assert(claude.connect(testing.merge(opts, { verbatim_prompts = true })))
      assert(s:send("one", { uuid = "u-1", priority = "later" }))
      assert(s:send("two", { client_composed = false }))
      s:close()
      local users = fake:read_log():find_all("user")
      assert.equal("u-1", users[1].uuid)
      assert.equal("later", users[1].priority)
      assert.is_true(users[1].client_composed)
      assert.is_false(users[2].client_composed)
      assert.matches("bad field 'priority' to 'send'", raises(function()
        local o = testing.fake_cli(IDLE)
        local s2 <close> = assert(claude.connect(o))
        s2:send("x", { priority = "soon" })
      end), 1, true)
    end)

    it("raises for an unknown send option", function()
      local opts = testing.fake_cli(IDLE)
      local s <close> = assert(claude.connect(testing.merge(opts, {})))
      local msg = raises(function() s:send("x", { sessionid = "a" }) end)
      assert.matches("^spec/integration/options_spec.lua:%d+: unknown field 'sessionid' "
        .. "to 'send' %(did you mean 'session_id'%?%)", msg)
    end)
  end)

  describe("session_store.load", function()
    local ID = "6f1f4d0e-0000-4000-8000-000000000001"
    it("a load that fails: connect returns the error, no CLI starts", function()
      local opts, fake = testing.fake_cli(IDLE)
      local dir = harness.tempdir()
      local s, err = claude.connect(testing.merge(opts, { resume = ID, env = {
        CLAUDE_CONFIG_DIR = dir }, session_store = { append = function() end,
        load = function() error("store is down") end } }))
      assert.is_nil(s)
      assert.equal("session_store", err.kind)
      assert.matches("store is down", tostring(err))
      assert.is_nil(fake:read_log().argv)
      os.execute("rm -rf " .. dir)
    end)

    it("a load that does not settle in load_timeout_ms", function()
      local opts = testing.fake_cli(IDLE)
      local dir = harness.tempdir()
      local s, err = claude.connect(testing.merge(opts, { resume = ID, load_timeout_ms = 50,
        env = { CLAUDE_CONFIG_DIR = dir }, session_store = { append = function() end,
        load = function() claude.sleep(2) end } }))
      assert.is_nil(s)
      assert.equal("session_store", err.kind)
      assert.matches("timeout", tostring(err))
      os.execute("rm -rf " .. dir)
    end)
  end)

  describe("errors", function()
    local f = function() end
    local ROWS = {
      { { skills = "pdf" },
        "bad field 'skills' to 'connect' %(\"all\" or a list of skill names expected, "
        .. "got \"pdf\" %(did you mean { \"pdf\" }%?%)%)" },
      { { skills = { "a,b" } }, "skills' to 'connect' %(item 1 'a,b': parentheses, commas" },
      { { skills = { "/pdf" } }, "does not start with '/'" },
      { { skills = { "*" } }, "use skills = \"all\"" },
      { { skills = { " pdf" } }, "leading or trailing spaces" },
      { { skills = { "x:*" } }, "wildcard suffixes" },
      { { skills = { 3 } }, "item 1 is a number" },
      { { task_budget = { totl = 5 } }, "unknown field 'task_budget.totl' to 'connect'" },
      { { task_budget = {} }, "'total' is required" },
      { { task_budget = "5" },
        "bad field 'task_budget' to 'connect' %(number or table expected, got string%)" },
      { { resume_session_at = 5 }, "resume_session_at' to 'connect' %(string expected" },
      { { enable_file_checkpointing = "yes" }, "boolean expected" },
      { { session_store = {} }, "append%(key, entries%) function expected" },
      { { session_store = { append = f }, session_store_flush = "later" },
        "'batched' or 'eager' expected" },
      { { agent = true }, "bad field 'agent' to 'connect' %(string expected" },
      { { forward_subagent_text = "yes" },
        "bad field 'forward_subagent_text' to 'connect' %(boolean expected" },
      { { system_prompt = { type = "preset", exclude_dynamic = true } },
        "unknown field 'system_prompt.exclude_dynamic' to 'connect' %(did you mean "
          .. "'system_prompt.exclude_dynamic_sections'%?%)" },
      { { system_prompt = { type = "preset", exclude_dynamic_sections = "yes" } },
        "'system_prompt.exclude_dynamic_sections' to 'connect' %(boolean expected" },
      { { system_prompt = { type = "preset", preset = "other" } }, "'claude_code' expected" },
      { { system_prompt = { type = "file" } }, "'path' is required" },
      { { system_prompt = { type = "custom" } }, "'prompt' is required with type 'custom'" },
      { { system_prompt = { "a", 2 } }, "item 2 is a number" },
      { { tool_config = { ask_user_question = { preview_format = "svg" } } },
        "'tool_config.ask_user_question.preview_format' to 'connect' %('markdown' or 'html'" },
      { { tool_config = { askUserQuestion = {} } },
        "unknown field 'tool_config.askUserQuestion' to 'connect'" },
      { { tool_aliases = { Bash = 5 } }, "entry 'Bash' must be a string" },
      { { permission_prompts = "nobody" }, "'host' or 'none' expected" },
      { { supported_dialog_kinds = { "x" } }, "needs an on_user_dialog callback" },
      { { title = 5 }, "bad field 'title' to 'connect' %(string expected" },
      { { thinking = { type = "enabled", budget = 5 } },
        "unknown field 'thinking.budget' to 'connect'" },
      { { tools = { type = "preset", presett = "claude_code" } },
        "unknown field 'tools.presett' to 'connect' %(did you mean 'tools.preset'%?%)" },
      { { tools = { "Read", 5 } }, "item 2 is a number" },
      { { output_format = { type = "json_schema", schema = {}, strict = true } },
        "unknown field 'output_format.strict' to 'connect'" },
      { { plugins = { { type = "local", path = "/p", name = "x" } } },
        "unknown field 'plugins%[1%]%.name' to 'connect'" },
      { { agents = { rev = { description = "d", promt = "p" } } },
        "unknown field 'agents.rev.promt' to 'connect' %(did you mean 'agents.rev.prompt'%?%)" },
      { { env = { X = {} } }, "entry 'X' must be a string, a number or false" },
      { { mcp_servers = { s = { type = "stdio", command = 5 } } },
        "'mcp_servers.s.command' to 'connect' %(string expected, got number" },
      { { mcp_servers = { s = { command = "x", args = "-v" } } },
        "'mcp_servers.s.args' to 'connect' %(a list of strings expected, got string" },
      { { mcp_servers = { s = { command = "x", args = { "-v", 2 } } } },
        "'mcp_servers.s.args' to 'connect' %(item 2" },
      { { mcp_servers = { s = { command = "x", env = { A = 1 } } } },
        "'mcp_servers.s.env' to 'connect' %(entry 'A'" },
      { { mcp_servers = { s = { type = "http", url = 7 } } },
        "'mcp_servers.s.url' to 'connect' %(string expected" },
      { { mcp_servers = { s = { type = "http" } } }, "s: 'url' is required" },
      { { mcp_servers = { s = { type = "stdio" } } }, "s: 'command' is required" },
      { { mcp_servers = { s = { command = "x", argv = {} } } },
        "unknown field 'mcp_servers.s.argv' to 'connect' %(did you mean 'mcp_servers.s.args'%?%)" },
      { { mcp_servers = { s = { type = "pipe", command = "x" } } },
        "type 'stdio', 'http', 'sse' or 'ws' expected, got 'pipe'" },
      { { mcp_servers = { s = { type = "sdk", name = "s" } } }, "claude.server%(...%)" },
      { { mcp_servers = { s = { url = "http://x" } } }, "%(or a 'command'%)" },
      { { hooks = { Stop = { { hooks = { f }, on_failure = "retry" } } } },
        "'on_failure' must be \"continue\" or \"block\", got retry" },
      { { hooks = { Stop = { { hooks = { f }, onFailure = "block" } } } },
        "unknown field 'hooks.Stop%[1%]%.onFailure' to 'connect' %(did you mean "
          .. "'hooks.Stop%[1%]%.on_failure'%?%)" },
    }
    for _, row in ipairs(ROWS) do
      local options, pattern = row[1], row[2]
      it(pattern, function()
        local opts = testing.fake_cli(IDLE)
        local msg = raises(function() claude.connect(testing.merge(opts, options)) end)
        assert.matches(pattern, msg)
        -- misuse is blamed on the caller's line
        assert.matches("^spec/integration/options_spec.lua:%d+: ", msg)
      end)
    end
  end)
end)
