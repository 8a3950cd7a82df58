-- Options and methods that match the Python SDK 0.2.143 and the TypeScript
-- SDK, each against the REAL claude CLI (pinned in package.json) and the scripted
-- Messages API: in-process servers changing under a live session, external
-- server configs, control answers, and the new options on the wire.
-- Run: busted spec/e2e/parity_spec.lua
local claude = require "claude"
local errors = require "claude.errors"
local e2e = require "support.e2e"
local harness = require "support.harness"

local T = 30

local text = e2e.text
local use = e2e.use

local function turn(s, prompt)
  assert(s:send(prompt))
  return harness.collect(s:receive(T))
end

local function last(msgs, type_, subtype)
  for i = #msgs, 1, -1 do
    local m = msgs[i]
    if m.type == type_ and (subtype == nil or m.subtype == subtype) then return m end
  end
end

local function has(list, value)
  for _, v in ipairs(list) do if v == value then return true end end
  return false
end

local function status_of(s, name)
  local st = assert(s:mcp_status())
  for _, srv in ipairs(st.mcpServers) do
    if srv.name == name then return srv.status, srv end
  end
end

describe("parity with the official SDKs, on the real CLI", function()
  before_each(harness.before)
  after_each(harness.after)

  it("a tool added to a live session's server is usable in the next turn", function()
    local mock <close> = e2e.start { turns = {
      { content = { text("ready") } },
      { match = "multiply", content = { use("mcp__calc__mul", { a = 6, b = 7 }) } },
      { content = { text("product {{last_tool_result}}") } },
      { match = "again", content = { use("mcp__calc__mul", { a = 1, b = 2 }) } },
      { content = { text("after removal: {{last_tool_result}}") } },
    } }
    local calc = claude.server("calc", {
      claude.tool("add", "Add", { a = "number", b = "number" }, function(a) return a.a + a.b end),
    })
    local s <close> = assert(claude.connect(mock:options {
      mcp_servers = { calc = calc }, allowed_tools = { "mcp__calc__add", "mcp__calc__mul" } }))
    turn(s, "hello")
    -- no refresh_server: the add itself tells the CLI (notifications/tools/list_changed)
    calc:add(claude.tool("mul", "Multiply", { a = "number", b = "number" },
      function(a) return a.a * a.b end))
    local msgs = turn(s, "please multiply")
    assert.equal("product 42", last(msgs, "result").result)
    assert.is_true(has(mock:requests()[2].tools, "mcp__calc__mul"))
    -- removal: the CLI re-lists the server, but keeps offering a tool the model has
    -- already seen in this conversation (CLI 2.1.330; refresh_server does not drop it
    -- either); a call to it is answered as an unknown tool
    assert.is_not_nil(calc:remove("mul"))
    turn(s, "again")
    local reqs = mock:requests()
    assert.is_true(has(reqs[4].tools, "mcp__calc__mul"))
    assert.is_true(reqs[5].tool_results[1].is_error)
    assert.matches("mul", reqs[5].tool_results[1].text)
  end)

  it("connects an external stdio server given args = {}", function()
    local mock <close> = e2e.start { turns = { { content = { text("ok") } },
      { content = { text("ok") } } } }
    local everything = harness.root .. "/node_modules/.bin/mcp-server-everything"
    local s <close> = assert(claude.connect(mock:options {
      mcp_servers = { everything = { type = "stdio", command = everything, args = {},
        env = {} } } }))
    local msgs = turn(s, "hi")
    assert.equal("connected", e2e.server_status(msgs).everything)
    assert.equal("connected", status_of(s, "everything"))
    s:close()
    -- mcp_servers as JSON text goes to --mcp-config as it is
    local config = require("claude.json").encode { mcpServers = { everything = {
      command = everything, args = require("claude.json").array() } } }
    local s2 <close> = assert(claude.connect(mock:options { mcp_servers = config }))
    turn(s2, "hi")
    assert.equal("connected", status_of(s2, "everything"))
  end)

  it("prompts of an external server are slash commands; an in-process server's are not",
    function()
    local mock <close> = e2e.start { turns = { { content = { text("got: {{last_user_text}}") } },
      { content = { text("got: {{last_user_text}}") } } } }
    local asked = false
    local function notes_server(on_get)
      return claude.server("notes", {
        claude.tool("add", "Add", { a = "number", b = "number" }, function(a) return a.a + a.b end),
        claude.prompt { name = "review", description = "Review", arguments = { "topic" },
          get = function(args)
            if on_get then on_get() end
            return "Review " .. args.topic .. " please."
          end },
      })
    end
    -- the workaround: the same server served by `claudelua mcp` from a file
    local file = harness.tempfile([[
      local claude = require "claude"
      return claude.server("notes", {
        claude.prompt { name = "review", description = "Review", arguments = { "topic" },
          get = function(args) return "Review " .. args.topic .. " please." end },
      })
    ]], ".lua")
    local host = harness.claudelua
    if host:sub(1, 1) ~= "/" then host = harness.root .. "/" .. host end
    local everything = harness.root .. "/node_modules/.bin/mcp-server-everything"
    local s <close> = assert(claude.connect(mock:options { mcp_servers = {
      notes = notes_server(function() asked = true end),
      everything = { command = everything, args = {} },
      served = { command = host, args = { "mcp", file } } } }))
    -- the CLI runs prompts/get and sends the prompt's text as the user's message
    local msgs = turn(s, "/mcp__everything__simple-prompt")
    assert.equal("got: This is a simple prompt without arguments.", last(msgs, "result").result)
    local init = last(msgs, "system", "init")
    assert.is_true(has(init.slash_commands, "mcp__everything__simple-prompt"))
    assert.is_true(has(init.slash_commands, "mcp__everything__args-prompt"))
    assert.is_true(has(init.slash_commands, "mcp__served__review"))
    assert.is_false(has(init.slash_commands, "mcp__notes__review"))
    assert.equal("connected", status_of(s, "notes"))
    msgs = turn(s, "/mcp__served__review parsers")
    assert.equal("got: Review parsers please.", last(msgs, "result").result)
    assert.is_false(asked)
    os.remove(file)
  end)

  it("answers control requests as the CLI does", function()
    local mock <close> = e2e.start { turns = { { content = { text("ok") } },
      { content = { text("ok") } }, { content = { text("ok") } }, { content = { text("ok") } } } }
    local calc = claude.server("calc", {
      claude.tool("add", "Add", { a = "number", b = "number" }, function(a) return a.a + a.b end),
    })
    local s <close> = assert(claude.connect(mock:options { mcp_servers = { calc = calc } }))
    turn(s, "hi")
    -- a mode the CLI does not know is refused, naming the modes
    local ok, err = s:set_permission_mode("sometimes")
    assert.is_nil(ok)
    assert.is_true(errors.is(err, "control"))
    assert.matches("must be one of acceptEdits, auto, bypassPermissions, default, dontAsk, plan",
      err.message, 1, true)
    assert(s:set_permission_mode("acceptEdits"))
    assert.equal("acceptEdits", last(turn(s, "mode?"), "system", "init").permissionMode)
    -- an in-process server can be switched off and on
    assert(s:mcp_toggle("calc", false))
    assert.equal("disabled", status_of(s, "calc"))
    assert(s:mcp_toggle("calc", true))
    assert.equal("connected", status_of(s, "calc"))
    -- stop_task of a task that does not exist: CLI 2.1.330 answers success all the same
    assert.same({}, s:stop_task("no-such-task"))
    -- reload_plugins answers with the reloaded lists
    local reloaded = assert(s:reload_plugins())
    assert.is_table(reloaded)
    -- read_mcp_resource reads MCP Apps ui:// resources only
    local rok, rerr = s:read_mcp_resource("calc", "mem://x")
    assert.is_nil(rok)
    assert.is_true(errors.is(rerr, "control"))
    assert.matches("uri must use the ui:// scheme", rerr.message, 1, true)
    -- refreshed tokens: the CLI answers the stdin message
    assert.is_true(s:update_environment_variables { CLAUDE_CODE_OAUTH_TOKEN = "tok" })
    -- the session still works
    assert.equal("ok", last(turn(s, "again"), "result").result)
  end)

  it("enable_file_checkpointing lets rewind_files undo the CLI's writes", function()
    for _, enabled in ipairs { true, false } do
      local dir = harness.tempdir()
      local file = dir .. "/new.txt"
      local mock <close> = e2e.start { turns = {
        { content = { use("Write", { file_path = file, content = "hello\n" }) } },
        { content = { text("written") } },
      } }
      local s <close> = assert(claude.connect(mock:options { permission_mode = "acceptEdits",
        add_dirs = { dir }, enable_file_checkpointing = enabled,
        extra_args = { ["replay-user-messages"] = true } }))
      assert(s:send("write it"))
      local prompt_id
      for msg in s:receive(T) do
        if msg.type == "user" and msg.isReplay and not prompt_id then prompt_id = msg.uuid end
      end
      assert.is_string(prompt_id)
      assert.is_not_nil(io.open(file)) -- written
      if enabled then
        local dry = assert(s:rewind_files(prompt_id, true))
        assert.is_true(dry.canRewind)
        assert.same({ file }, dry.filesChanged)
        assert.is_not_nil(io.open(file)) -- a dry run changes nothing
        assert.is_true(assert(s:rewind_files(prompt_id)).canRewind)
        assert.is_nil(io.open(file))
      else
        local ok, err = s:rewind_files(prompt_id)
        assert.is_nil(ok)
        assert.matches("File rewinding is not enabled", err.message, 1, true)
        os.remove(file)
      end
      s:close()
      mock:stop()
      os.execute("rm -rf " .. dir)
    end
  end)

  it("resume_session_at resumes from a message of the session", function()
    local mock <close> = e2e.start { turns = {
      { content = { text("one: {{last_user_text}}") } },
      { content = { text("two: {{last_user_text}}") } },
      { content = { text("three: {{last_user_text}}") } },
    } }
    local id, first_answer
    do
      local s <close> = assert(claude.connect(mock:options()))
      local msgs = turn(s, "alpha")
      first_answer = last(msgs, "assistant").uuid
      turn(s, "beta")
      id = s.session_id
    end
    local result
    for msg in claude.query("gamma", mock:options { resume = id,
      resume_session_at = first_answer }) do
      if msg.type == "result" then result = msg end
    end
    assert.equal("three: gamma", result.result)
    assert.equal(3, mock:requests()[3].n_messages) -- alpha, one: alpha, gamma
  end)

  it("task_budget reaches the API as output_config.task_budget, with its beta", function()
    local mock <close> = e2e.start({ turns = {
      { content = { use("Bash", { command = "echo 7", description = "seven" }) } },
      { content = { text("ok") } },
    } }, { log_bodies = true })
    local msgs = harness.collect(claude.query("hi", mock:options {
      task_budget = { total = 20000 }, allowed_tools = { "Bash" } }))
    assert.equal("ok", last(msgs, "result").result)
    local reqs = mock:requests()
    assert.equal(2, #reqs)
    for _, r in ipairs(reqs) do -- every request of the turn carries it
      assert.same({ type = "tokens", total = 20000 }, r.body.output_config.task_budget)
      assert.is_true(has(r.betas, "task-budgets-2026-03-13"))
    end
    mock:stop()
    local mock2 <close> = e2e.start({ turns = { { content = { text("ok") } } } },
      { log_bodies = true })
    harness.collect(claude.query("hi", mock2:options()))
    local r = mock2:requests()[1]
    assert.is_nil(r.body.output_config)
    assert.is_false(has(r.betas, "task-budgets-2026-03-13"))
  end)

  it("resume_drops_turn: drops the named turn, and refuses a turn that is not the next",
    function()
    local mock <close> = e2e.start { turns = {
      { content = { text("one: {{last_user_text}}") } },
      { content = { text("two: {{last_user_text}}") } },
      { content = { text("three: {{last_user_text}}") } },
    } }
    local id
    do
      local s <close> = assert(claude.connect(mock:options()))
      turn(s, "alpha")
      turn(s, "beta")
      id = s.session_id
    end
    -- alpha, one: alpha, beta, two: beta
    local saved = assert(claude.sessions.get_messages(id,
      { config_dir = mock.dir .. "/home/.claude" }))
    assert.equal("beta", claude.text(saved[3]))
    -- the named turn is not the one after the kept message: refused as an error result,
    -- before any request (a ProcessError in the Python SDK; here the CLI's result)
    local msgs = harness.collect(claude.query("gamma", mock:options { resume = id,
      resume_session_at = saved[2].uuid, resume_drops_turn = saved[1].uuid }))
    local refused = last(msgs, "result")
    assert.equal("error_during_execution", refused.subtype)
    assert.is_true(refused.is_error)
    local words = "Resume rejected by --resume-drops-turn: resuming at " .. saved[2].uuid
    assert.equal(words, refused.errors[1]:sub(1, #words))
    assert.matches("range does not start with the declared turn prompt", refused.errors[1], 1,
      true)
    assert.equal(2, #mock:requests())
    -- the turn that follows: resumed without it
    msgs = harness.collect(claude.query("gamma", mock:options { resume = id,
      resume_session_at = saved[2].uuid, resume_drops_turn = saved[3].uuid }))
    assert.equal("three: gamma", last(msgs, "result").result)
    assert.equal(3, mock:requests()[3].n_messages) -- alpha, one: alpha, gamma
  end)

  it("takes skills, task_budget, agent and a preset prompt without dynamic sections", function()
    local mock <close> = e2e.start { turns = { { content = { text("ok") } } } }
    local msgs = harness.collect(claude.query("hi", mock:options {
      skills = "all", setting_sources = {},
      task_budget = { total = 20000 },
      agents = { reviewer = { description = "Reviews", prompt = "You review." } },
      agent = "reviewer",
      system_prompt = { type = "preset", preset = "claude_code",
        exclude_dynamic_sections = true },
    }))
    local init = last(msgs, "system", "init")
    assert.is_true(has(init.tools, "Skill"))
    local result = last(msgs, "result")
    assert.equal("success", result.subtype)
    assert.equal("ok", result.result)
  end)
end)
