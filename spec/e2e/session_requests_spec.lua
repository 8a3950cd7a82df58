-- The TypeScript Agent SDK's `Query` methods and the control requests behind them, each
-- against the REAL claude CLI (pinned in package.json) and the scripted Messages API:
-- what the CLI answers, and what it does. docs/api.md maps every method to its row here.
-- Run: busted spec/e2e/session_requests_spec.lua
local claude = require "claude"
local json = require "claude.json"
local errors = require "claude.errors"
local e2e = require "support.e2e"
local harness = require "support.harness"

local T = 30

local text = e2e.text
local use = e2e.use
local collect = harness.collect

local function turn(s, prompt, opts)
  assert(s:send(prompt, opts))
  return collect(s:receive(T))
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

local function write_file(path, body)
  local f = assert(io.open(path, "wb"))
  f:write(body)
  f:close()
end

local function read_file(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s
end

local function calc_server()
  return claude.server("calc", {
    claude.tool("add", "Add", { a = "number", b = "number" }, function(a) return a.a + a.b end),
  })
end

-- A message of the session (not of a turn) that arrives within `seconds`, or nil.
local function next_of(s, type_, subtype, seconds)
  local deadline = claude.core.now() + (seconds or 5)
  while claude.core.now() < deadline do
    local m = s:next_message(math.max(0.05, deadline - claude.core.now()))
    if m and m.type == type_ and (subtype == nil or m.subtype == subtype) then return m end
  end
end

describe("Query methods on the real CLI", function()
  before_each(harness.before)
  after_each(harness.after)

  it("the initialize answer: initialization_result, supported_*, account_info, reinitialize",
    function()
    local mock <close> = e2e.start { turns = { { content = { text("hi") } } } }
    local hooked = 0
    local s <close> = assert(claude.connect(mock:options {
      hooks = { UserPromptSubmit = function() hooked = hooked + 1 end } }))
    local init = assert(s:initialization_result(T))
    assert.equal(s:server_info(), init)
    assert.equal(e2e.remote and s.proc.remote_pid or s.pid, init.pid) -- (over ssh: the host's)
    local commands = assert(s:supported_commands())
    assert.equal(init.commands, commands)
    assert.is_string(commands[1].name)
    local models = assert(s:supported_models())
    assert.equal("default", models[1].value)
    assert.is_string(models[1].displayName)
    local agents = assert(s:supported_agents())
    local names = {}
    for _, a in ipairs(agents) do names[#names + 1] = a.name end
    assert.is_true(has(names, "general-purpose"))
    assert.same({ apiProvider = "firstParty", apiKeySource = "ANTHROPIC_API_KEY",
      tokenSource = "none" }, s:account_info())
    -- a fresh answer, and the hooks registered again (the CLI's own word for it)
    local again = assert(s:reinitialize(T))
    assert.is_not.equal(init, again)
    assert.equal(again, s:server_info())
    assert.equal(init.pid, again.pid)
    assert.is_true(again.hooks_applied)
    assert.equal("hi", last(turn(s, "hello"), "result").result)
    assert.equal(1, hooked)
  end)

  it("settings: get_settings, apply_flag_settings (the model of the next request), " ..
    "update_settings (a file, and a refusal)", function()
    local mock <close> = e2e.start { turns = { { content = { text("ok") } } } }
    local s <close> = assert(claude.connect(mock:options { setting_sources = { "local" },
      managed_settings = { permissions = { deny = { "WebFetch" } } } }))
    local settings = assert(s:get_settings())
    assert.equal("claude-sonnet-4-5", settings.applied.model)
    assert.same({ "WebFetch" }, settings.effective.permissions.deny)
    assert.equal("policySettings", settings.sources[1].source)
    assert.same({}, assert(s:apply_flag_settings { model = "claude-haiku-4-5" }))
    assert.equal("claude-haiku-4-5", assert(s:get_settings()).applied.model)
    turn(s, "hi")
    assert.equal("claude-haiku-4-5", mock:requests()[1].model)
    -- update_settings writes the project's local settings file
    assert.same({}, assert(s:update_settings("localSettings", { outputStyle = "Explanatory" })))
    local written = json.decode(read_file(mock.dir .. "/work/.claude/settings.local.json"))
    assert.equal("Explanatory", written.outputStyle)
    assert.equal("Explanatory", assert(s:get_settings()).effective.outputStyle)
    -- userSettings is not among this session's setting sources: the CLI refuses
    local ok, err = s:update_settings("userSettings", { effortLevel = "high" })
    assert.is_nil(ok)
    assert.equal("control", err.kind)
    assert.matches("userSettings source is disabled for this session", err.message, 1, true)
    assert.has_error(function() s:update_settings("projectSettings", {}) end,
      "bad argument #1 to 'update_settings' ('localSettings' or 'userSettings' expected, got "
      .. "projectSettings)")
  end)

  it("usage, get_session_cost, list_models, get_binary_version", function()
    local mock <close> = e2e.start { turns = { { content = { text("ok") } } } }
    local s <close> = assert(claude.connect(mock:options()))
    local before = assert(s:usage())
    assert.is_false(before.rate_limits_available) -- an API key: no plan limits
    assert.equal(json.null, before.rate_limits)
    assert.equal(0, before.session.total_cost_usd)
    turn(s, "hi")
    local after = assert(s:usage { skip_behaviors = true })
    assert.is_true(after.session.total_cost_usd > 0)
    assert.equal(json.null, after.behaviors)
    assert.is_table(after.session.model_usage["claude-sonnet-4-5"])
    assert.matches("^Estimated cost: +%$%d", assert(s:get_session_cost()).text)
    local models = assert(s:list_models()).models
    assert.equal("default", models[1].value)
    local version = assert(s:get_binary_version())
    assert.matches("^%d+%.%d+%.%d+$", version.version)
    assert.is_string(version.buildTime)
  end)

  it("list_permission_rules and get_hooks_listing", function()
    local mock <close> = e2e.start { turns = { { content = { text("ok") } } } }
    local s <close> = assert(claude.connect(mock:options { allowed_tools = { "Bash(ls:*)" },
      settings = { hooks = { PostToolUse = { { matcher = "Bash",
        hooks = { { type = "command", command = "true" } } } } } } }))
    local state = assert(s:list_permission_rules()).state
    assert.equal(mock.dir .. "/work", state.originalCwd)
    local found
    for _, r in ipairs(state.rules) do if r.rule == "Bash(ls:*)" then found = r end end
    assert.equal("allow", found.behavior)
    local listing = assert(s:get_hooks_listing())
    assert.is_false(listing.policy.allDisabled)
    local event
    for _, e in ipairs(listing.events) do if e.name == "PostToolUse" then event = e end end
    assert.equal(1, event.hookCount)
    assert.is_true(#listing.eventCatalog > 20)
  end)

  it("cancel_async_message drops a queued prompt; interrupt answers with a receipt", function()
    local mock <close> = e2e.start { turns = {
      { delay_ms = 2000, content = { text("slow") } },
      { content = { text("after: {{last_user_text}}") } },
    } }
    local s <close> = assert(claude.connect(mock:options()))
    local queued = "11111111-1111-4111-8111-111111111111"
    assert(s:send("slow one"))
    assert(s:send("queued", { uuid = queued }))
    assert.is_true(assert(s:cancel_async_message(queued)))
    assert.is_false(s:cancel_async_message(queued)) -- gone already
    local msgs = collect(s:receive(T))
    assert.equal("slow", last(msgs, "result").result)
    local receipt = assert(s:interrupt()) -- while idle: harmless
    assert.same({}, receipt.still_queued)
    assert.equal("after: next", last(turn(s, "next"), "result").result)
    local reqs = mock:requests()
    assert.equal(2, #reqs) -- the cancelled prompt never reached the model
    assert.equal("next", reqs[2].last_user_text)
  end)

  it("rename_session: the CLI says so and the transcript takes the title", function()
    local mock <close> = e2e.start { turns = { { content = { text("ok") } } } }
    local s <close> = assert(claude.connect(mock:options()))
    turn(s, "hi")
    assert.same({}, assert(s:rename_session("A better title")))
    local changed = assert(next_of(s, "system", "session_title_changed"))
    assert.equal("A better title", changed.title)
    s:close()
    local info = assert(claude.sessions.get_info(s.session_id,
      { config_dir = mock.dir .. "/home/.claude" }))
    assert.equal("A better title", info.custom_title)
  end)

  it("read_file: relative to the session's directory, base64, and a refused path", function()
    local mock <close> = e2e.start { turns = { { content = { text("ok") } } } }
    write_file(mock.dir .. "/work/hello.txt", "hello file\n")
    local s <close> = assert(claude.connect(mock:options()))
    local r = assert(s:read_file("hello.txt"))
    assert.equal("hello file\n", r.contents)
    assert.equal(mock.dir .. "/work/hello.txt", r.absPath)
    local b = assert(s:read_file("hello.txt", { encoding = "base64", max_bytes = 3 }))
    assert.equal("aGVs", b.contents)
    assert.is_true(b.truncated)
    local ok, err = s:read_file("/etc/hostname")
    assert.is_nil(ok)
    assert.equal("control", err.kind)
    assert.matches("read denied", err.message, 1, true)
  end)

  it("seed_read_state lets an Edit go ahead without a Read first", function()
    local dir = harness.tempdir()
    local file = dir .. "/notes.txt"
    local edit = use("Edit", { file_path = file, old_string = "one", new_string = "two" })
    local mock <close> = e2e.start { turns = {
      { content = { edit } }, { content = { text("edit said {{last_tool_result}}") } },
      { content = { edit } }, { content = { text("edit said {{last_tool_result}}") } },
    } }
    write_file(file, "one\n")
    local s <close> = assert(claude.connect(mock:options { allowed_tools = { "Edit" },
      add_dirs = { dir } }))
    local first = last(turn(s, "edit it"), "result").result
    assert.matches("has not been read yet", first, 1, true)
    assert.equal("one\n", read_file(file))
    assert.same({}, assert(s:seed_read_state(file, assert(claude.core.stat(file)).mtime)))
    local second = last(turn(s, "edit it again"), "result").result
    assert.matches("has been updated", second, 1, true)
    assert.equal("two\n", read_file(file))
    os.execute("rm -rf " .. dir)
  end)

  it("background_tasks sends a running foreground command to the background", function()
    local mock <close> = e2e.start { turns = {
      { content = { use("Bash", { command = "sleep 20; echo late", description = "waits" }) } },
      { content = { text("result: {{last_tool_result}}") } },
    } }
    local s <close> = assert(claude.connect(mock:options { allowed_tools = { "Bash" } }))
    assert.is_false(s:background_tasks("toolu_none")) -- names no task
    assert(s:send("go"))
    local msgs, backgrounded = {}, nil
    for msg in s:receive(T) do
      msgs[#msgs + 1] = msg
      if msg.type == "system" and msg.subtype == "task_started" then
        -- the command runs in the foreground: the turn waits for it
        claude.spawn(function() backgrounded = s:background_tasks() end)
      end
    end
    assert.is_true(backgrounded)
    local result = last(msgs, "result")
    assert.equal("success", result.subtype)
    local started = last(msgs, "system", "task_started")
    assert.matches("^result: Command was manually backgrounded", result.result)
    assert.matches(started.task_id, result.result, 1, true)
    assert(s:stop_task(started.task_id))
  end)

  it("reload_skills, reload_output_styles (a style written meanwhile), reload_plugins", function()
    local mock <close> = e2e.start { turns = { { content = { text("ok") } } } }
    local styles = mock.dir .. "/work/.claude/output-styles"
    os.execute("mkdir -p " .. styles)
    local s <close> = assert(claude.connect(mock:options { setting_sources = { "project" } }))
    local skills = assert(s:reload_skills()).skills
    assert.is_table(skills)
    local before = assert(s:reload_output_styles()).available_output_styles
    assert.is_true(has(before, "default"))
    assert.is_false(has(before, "Pirate"))
    write_file(styles .. "/pirate.md", "---\nname: Pirate\ndescription: Arr\n---\nTalk like one.\n")
    assert.is_true(has(assert(s:reload_output_styles()).available_output_styles, "Pirate"))
    local plugins = assert(s:reload_plugins { refuse_if_busy = true })
    assert.is_table(plugins.plugins)
    assert.is_table(plugins.commands)
  end)

  it("mcp_call calls a tool of an external server without a model turn", function()
    local mock <close> = e2e.start { turns = { { content = { text("ok") } } } }
    local tools = harness.tempfile([[
      local claude = require "claude"
      return claude.server("ext", { claude.tool("add", "Add", { a = "number", b = "number" },
        function(a) return a.a + a.b end), claude.tool("fail", "Fails", {},
        function() return nil, "it broke" end) })
    ]], ".lua")
    local host = harness.claudelua:sub(1, 1) == "/" and harness.claudelua
      or harness.root .. "/" .. harness.claudelua
    local s <close> = assert(claude.connect(mock:options { mcp_servers = {
      ext = { command = host, args = { "mcp", tools } }, calc = calc_server() } }))
    -- wait until the CLI has connected the external server
    for _ = 1, 100 do
      local st = assert(s:mcp_status())
      local up
      for _, srv in ipairs(st.mcpServers) do
        if srv.name == "ext" and srv.status == "connected" then up = true end
      end
      if up then break end
      claude.sleep(0.1)
    end
    local r = assert(s:mcp_call("mcp__ext__add", { a = 2, b = 40 }))
    assert.equal("42", r.content[1].text)
    assert.equal(0, #mock:requests()) -- no model turn
    -- a tool's own error: a failure, or (soft_error_result, CLI 2.1.332) its result
    local failed, ferr = s:mcp_call("mcp__ext__fail", {})
    assert.is_nil(failed)
    assert.matches("it broke", ferr.message, 1, true)
    local soft = assert(s:mcp_call("mcp__ext__fail", {}, { soft_error_result = true }))
    assert.is_true(soft.isError)
    assert.matches("it broke", soft.content[1].text, 1, true)
    -- in-process servers are the host's own: the CLI refuses to call them for it
    local ok, err = s:mcp_call("mcp__calc__add", { a = 1, b = 2 })
    assert.is_nil(ok)
    assert.matches("does not support SDK MCP servers", err.message, 1, true)
    os.remove(tools)
  end)

  it("set_mcp_permission_mode_override: stored, with a warning for an unknown server", function()
    local mock <close> = e2e.start { turns = { { content = { text("ok") } } } }
    local s <close> = assert(claude.connect(mock:options {
      mcp_servers = { calc = calc_server() } }))
    assert.same({}, assert(s:set_mcp_permission_mode_override("calc", "default")))
    assert.same({}, assert(s:set_mcp_permission_mode_override("calc", nil)))
    local r = assert(s:set_mcp_permission_mode_override("nope", "default"))
    assert.matches("MCP server 'nope' is not yet known", r.warning, 1, true)
    assert.has_error(function() s:set_mcp_permission_mode_override("calc", "plan") end)
  end)

  it("get_context_usage in summary detail asks no token counts; set_max_thinking_tokens " ..
    "takes a display", function()
    local mock <close> = e2e.start { turns = { { content = { text("ok") } } } }
    local s <close> = assert(claude.connect(mock:options()))
    local usage = assert(s:get_context_usage { detail = "summary" })
    assert.is_number(usage.totalTokens)
    assert.equal(0, #mock:records("count_tokens"))
    assert(s:get_context_usage())
    assert.is_true(#mock:records("count_tokens") > 0)
    assert.same({}, assert(s:set_max_thinking_tokens(2048, { display = "omitted" })))
    assert.same({}, assert(s:set_max_thinking_tokens(nil, { display = false, timeout = T })))
  end)

  it("a CLI that refuses to start: connect says why (startup_failure_reason)", function()
    local mock <close> = e2e.start { turns = { { content = { text("unused") } } } }
    write_file(mock.dir .. "/home/.claude/.claude.json", "{not json")
    local s, err, kind = claude.connect(mock:options())
    assert.is_nil(s)
    assert.equal("startup", kind)
    assert.equal("config_file_invalid", err.reason)
    assert.matches("refused to start %(config_file_invalid%): Configuration error in",
      err.message)
    assert.equal("result", err.result.type)
    assert.is_true(err.result.invalid_config_file.is_global)
    assert.is_true(errors.is(err, "startup"))
  end)

  it("start-up marks: keep_alive lines before the initialize answer", function()
    local mock <close> = e2e.start { turns = { { content = { text("unused") } } } }
    local s <close> = assert(claude.connect(mock:options { env = {
      CLAUDE_CODE_SDK_READS_STARTUP_MARKS = "1" } }))
    assert.is_string(s.startup_mark.mark)
    assert.equal("initialize_before_reply", s.startup_mark.mark)
  end)
end)
