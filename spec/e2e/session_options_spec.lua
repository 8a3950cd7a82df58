-- The TypeScript Agent SDK's options that the Python SDK 0.2.143 does not have, each
-- against the REAL claude CLI (pinned in package.json) and the scripted Messages API: what
-- the CLI does with it (docs/api.md maps every option to its row here).
-- Run: busted spec/e2e/session_options_spec.lua
local claude = require "claude"
local json = require "claude.json"
local e2e = require "support.e2e"
local harness = require "support.harness"

local T = 30

local text = e2e.text
local use = e2e.use
local collect = harness.collect

local function turn(s, prompt)
  assert(s:send(prompt))
  return collect(s:receive(T))
end

local function result_of(msgs)
  for i = #msgs, 1, -1 do
    if msgs[i].type == "result" then return msgs[i] end
  end
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

-- The JSON text of a request body the mock logged (with log_bodies).
local function body_text(req) return json.encode(req.body) end

local function tool_def(req, name)
  for _, t in ipairs(req.body.tools) do
    if t.name == name then return t end
  end
end

describe("TypeScript SDK options on the real CLI", function()
  before_each(harness.before)
  after_each(harness.after)

  it("tool_aliases: a built-in tool name the model uses runs the aliased tool", function()
    local mock <close> = e2e.start { turns = {
      { content = { use("Bash", { a = 2, b = 40 }) } },
      { content = { text("aliased: {{last_tool_result}}") } },
    } }
    local calc = claude.server("calc", { claude.tool("add", "Add", { a = "number", b = "number" },
      function(a) return a.a + a.b end) })
    local msgs = collect(claude.query("go", mock:options { mcp_servers = { calc = calc },
      allowed_tools = { "mcp__calc__add" }, tool_aliases = { Bash = "mcp__calc__add" } }))
    assert.equal("aliased: 42", result_of(msgs).result)
  end)

  it("system_prompt as a list of blocks, and the custom form", function()
    local mock <close> = e2e.start({ turns = { { content = { text("a") } },
      { content = { text("b") } } } }, { log_bodies = true })
    local function system_text(req)
      local parts = {}
      for _, b in ipairs(req.body.system) do parts[#parts + 1] = b.text end
      return table.concat(parts, "|")
    end
    collect(claude.query("hi", mock:options { system_prompt = { "BLOCK ONE", "BLOCK TWO" } }))
    assert.matches("BLOCK ONE\n\nBLOCK TWO", system_text(mock:requests()[1]), 1, true)
    collect(claude.query("hi", mock:options { system_prompt = { type = "custom",
      prompt = "You are a release bot.", snapshot = false } }))
    assert.matches("You are a release bot.", system_text(mock:requests()[2]), 1, true)
  end)

  it("title names the new session; persist_session = false writes no transcript", function()
    local mock <close> = e2e.start { turns = { { content = { text("a") } },
      { content = { text("b") } } } }
    local config = mock.dir .. "/home/.claude"
    local msgs = collect(claude.query("hi", mock:options { title = "Release notes" }))
    local changed
    for _, m in ipairs(msgs) do
      if m.type == "system" and m.subtype == "session_title_changed" then changed = m end
    end
    assert.equal("Release notes", changed.title)
    local info = assert(claude.sessions.get_info(msgs[#msgs].session_id, { config_dir = config }))
    assert.equal("Release notes", info.custom_title)
    local again = collect(claude.query("hi", mock:options { persist_session = false }))
    local none, err = claude.sessions.get_info(again[#again].session_id, { config_dir = config })
    assert.is_nil(none)
    assert.equal("not_found", err.kind)
  end)

  it("plan_mode_instructions reach the model in plan mode", function()
    local mock <close> = e2e.start({ turns = { { content = { text("a plan") } } } },
      { log_bodies = true })
    collect(claude.query("plan it", mock:options { permission_mode = "plan",
      plan_mode_instructions = "Plan in haiku form, XYZZY." }))
    assert.matches("Plan in haiku form, XYZZY.", body_text(mock:requests()[1]), 1, true)
  end)

  it("tool_config: the AskUserQuestion previews in HTML", function()
    local mock <close> = e2e.start({ turns = { { content = { text("a") } },
      { content = { text("b") } } } }, { log_bodies = true })
    local allow = function() return true end
    collect(claude.query("hi", mock:options { can_use_tool = allow }))
    collect(claude.query("hi", mock:options { can_use_tool = allow,
      tool_config = { ask_user_question = { preview_format = "html" } } }))
    local plain = json.encode(tool_def(mock:requests()[1], "AskUserQuestion"))
    local html = json.encode(tool_def(mock:requests()[2], "AskUserQuestion"))
    assert.matches("ASCII mockups", plain, 1, true)
    assert.matches("HTML mockups", html, 1, true)
  end)

  it("permission_prompts = 'none': what would ask is denied, can_use_tool is never called",
    function()
    local mock <close> = e2e.start { turns = {
      { content = { use("Bash", { command = "touch made-by-bash", description = "touch" }) } },
      { content = { text("after: {{last_tool_result}}") } },
    } }
    local asked = 0
    local msgs = collect(claude.query("go", mock:options { permission_prompts = "none",
      can_use_tool = function() asked = asked + 1; return true end }))
    assert.equal(0, asked)
    assert.matches("this session has no approval surface", result_of(msgs).result, 1, true)
    assert.is_nil(read_file(mock.dir .. "/work/made-by-bash"))
  end)

  it("project_config_root: project settings come from there, not from cwd", function()
    local mock <close> = e2e.start { turns = { { content = { text("a") } } } }
    local root = mock.dir .. "/trusted"
    os.execute("mkdir -p " .. root .. "/.claude " .. mock.dir .. "/work/.claude")
    write_file(root .. "/.claude/settings.json", '{"permissions":{"deny":["WebSearch"]}}')
    write_file(mock.dir .. "/work/.claude/settings.json", '{"permissions":{"deny":["Write"]}}')
    local s <close> = assert(claude.connect(mock:options { setting_sources = { "project" },
      project_config_root = root }))
    local rules = {}
    for _, r in ipairs(assert(s:list_permission_rules()).state.rules) do
      rules[r.rule] = r.source
    end
    assert.same({ WebSearch = "projectSettings" }, rules)
  end)

  it("debug_file: the CLI writes its debug log there", function()
    local mock <close> = e2e.start { turns = { { content = { text("a") } } } }
    local log = mock.dir .. "/debug.log"
    collect(claude.query("hi", mock:options { debug_file = log }))
    local body = assert(read_file(log))
    assert.is_true(#body > 0)
  end)

  it("verbatim_prompts: a prompt that looks like a command goes to the model as written",
    function()
    local mock <close> = e2e.start { turns = { { content = { text("got: {{last_user_text}}") } } } }
    local msgs = collect(claude.query("/cost", mock:options { verbatim_prompts = true }))
    assert.equal("got: /cost", result_of(msgs).result)
    assert.equal(1, #mock:requests())
  end)

  it("allow_dangerously_skip_permissions: bypassPermissions can be switched on later", function()
    local mock <close> = e2e.start { turns = { { content = { text("a") } } } }
    local s <close> = assert(claude.connect(mock:options()))
    local ok, err = s:set_permission_mode("bypassPermissions")
    assert.is_nil(ok)
    assert.equal("bypass_not_launched", err.response.error_code)
    s:close()
    local s2, err2, kind = claude.connect(mock:options {
      allow_dangerously_skip_permissions = true })
    local id = io.popen("id -u")
    local root = id:read("l") == "0"
    id:close()
    if not root then
      assert(s2, err2)
      assert.same({ mode = "bypassPermissions" },
        assert(s2:set_permission_mode("bypassPermissions")))
      s2:close()
    else
      -- as root the CLI refuses the flag at start-up, and says why
      assert.is_nil(s2)
      assert.equal("startup", kind)
      assert.equal("bypass_root", err2.reason)
    end
  end)

  it("mcp_servers_delivery and plugin_delivery = 'initialize': off the command line", function()
    local mock <close> = e2e.start { turns = { { content = { text("x") } } } }
    local tools = harness.tempfile([[
      local claude = require "claude"
      return claude.server("ext", { claude.tool("env", "Env", {},
        function() return os.getenv("EXT_SECRET") or "none" end) })
    ]], ".lua")
    local host = harness.claudelua:sub(1, 1) == "/" and harness.claudelua
      or harness.root .. "/" .. harness.claudelua
    local plugin = mock.dir .. "/demo"
    os.execute("mkdir -p " .. plugin .. "/.claude-plugin " .. plugin .. "/commands")
    write_file(plugin .. "/.claude-plugin/plugin.json", '{"name":"demo","version":"1.0.0"}')
    write_file(plugin .. "/commands/hello.md", "---\ndescription: says hello\n---\nHello.\n")
    local s <close> = assert(claude.connect(mock:options { mcp_servers_delivery = "initialize",
      plugin_delivery = "initialize", plugins = { { type = "local", path = plugin } },
      mcp_servers = { ext = { command = host, args = { "mcp", tools },
        env = { EXT_SECRET = "hush-1234" } } } }))
    local info = s:server_info()
    assert.is_true(info.mcp_servers_applied)
    assert.is_true(info.plugins_applied)
    local _, ps = harness.sh("ps -eo args")
    assert.is_nil(ps:find("hush-1234", 1, true)) -- not in the CLI's --mcp-config
    local names = {}
    for _, c in ipairs(info.commands) do names[c.name] = true end
    assert.is_true(names["demo:hello"])
    for _ = 1, 100 do
      local up
      for _, srv in ipairs(assert(s:mcp_status()).mcpServers) do
        if srv.name == "ext" and srv.status == "connected" then up = true end
      end
      if up then break end
      claude.sleep(0.1)
    end
    assert.equal("hush-1234", assert(s:mcp_call("mcp__ext__env", {})).content[1].text)
    os.remove(tools)
  end)

  it("by default an external server's env and headers stay off the CLI's command line "
    .. "(/proc/PID/cmdline) and reach the server", function()
    local mock <close> = e2e.start { turns = { { content = { text("x") } } } }
    local tools = harness.tempfile([[
      local claude = require "claude"
      return claude.server("ext", { claude.tool("env", "Env", {},
        function() return os.getenv("EXT_API_TOKEN") or "none" end) })
    ]], ".lua")
    local host = harness.claudelua:sub(1, 1) == "/" and harness.claudelua
      or harness.root .. "/" .. harness.claudelua
    local s <close> = assert(claude.connect(mock:options { mcp_servers = {
      ext = { command = host, args = { "mcp", tools }, env = { EXT_API_TOKEN = "hush-5678" } },
      web = { type = "http", url = "http://127.0.0.1:9/mcp",
        headers = { ["X-API-Key"] = "xak-hush-9012" } } } }))
    assert.is_true(s:server_info().mcp_servers_applied)
    -- the CLI's own command line (over ssh: the ssh client's, which carries the remote one),
    -- then every process's
    local own = assert(read_file("/proc/" .. s.pid .. "/cmdline"))
    assert.truthy(own:find("--await-initialize", 1, true))
    for _, secret in ipairs { "hush-5678", "xak-hush-9012" } do
      assert.is_nil(own:find(secret, 1, true), secret)
      for _, pid in ipairs(claude.core.scandir("/proc") or {}) do
        local line = pid:match("^%d+$") and read_file("/proc/" .. pid .. "/cmdline") or ""
        assert.is_nil(line:find(secret, 1, true), pid .. ": " .. line)
      end
    end
    local deadline = claude.core.now() + 60
    local up
    repeat
      for _, srv in ipairs(assert(s:mcp_status()).mcpServers) do
        if srv.name == "ext" and srv.status == "connected" then up = true end
      end
      if not up then claude.sleep(0.1) end
    until up or claude.core.now() > deadline
    assert.is_true(up)
    assert.equal("hush-5678", assert(s:mcp_call("mcp__ext__env", {})).content[1].text)
    os.remove(tools)
  end)

  it("a PreSkillShellCommand hook (CLI 2.1.332) sees a command's shell line, and blocks it",
    function()
    for _, decision in ipairs { "allow", "deny" } do
      local mock <close> = e2e.start { turns = {
        { content = { text("saw: {{last_user_text}}") } } } }
      os.execute("mkdir -p " .. mock.dir .. "/work/.claude/commands")
      write_file(mock.dir .. "/work/.claude/commands/shell.md", "---\ndescription: a shell line\n"
        .. "allowed-tools: Bash(echo:*)\n---\nResult: !`echo from-skill`\n")
      local seen = {}
      local msgs = collect(claude.query("/shell", mock:options { setting_sources = { "project" },
        hooks = { PreSkillShellCommand = function(input)
          seen[#seen + 1] = input
          return { hook_specific_output = { permission_decision = decision } }
        end } }))
      assert.equal(1, #seen)
      assert.equal("echo from-skill", seen[1].tool_input.command)
      assert.equal("shell", seen[1].command_name)
      assert.equal("user", seen[1].invoked_by)
      assert.equal("projectSettings", seen[1].command_source)
      assert.equal(decision == "allow" and "saw: Result: from-skill"
        or "saw: Result: [not run: blocked by hook]", (result_of(msgs).result:gsub("%s+$", "")))
      mock:stop()
    end
  end)

  it("prompt_suggestions, agent_progress_summaries, per_task_stop_affordance, " ..
    "supported_dialog_kinds: taken by initialize", function()
    local mock <close> = e2e.start { turns = { { content = { text("a") } },
      { content = { text("b") } } } }
    local s <close> = assert(claude.connect(mock:options { prompt_suggestions = true,
      agent_progress_summaries = true, per_task_stop_affordance = true,
      supported_dialog_kinds = { "refusal_fallback_prompt" },
      on_user_dialog = function() return { behavior = "cancelled" } end }))
    turn(s, "one")
    local second = turn(s, "two")
    assert.equal("b", result_of(second).result)
    -- a dialog kind without a callback to answer it is a misuse
    assert.has_error(function()
      claude.connect(mock:options { supported_dialog_kinds = { "refusal_fallback_prompt" } })
    end)
  end)
end)
