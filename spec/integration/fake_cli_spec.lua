-- The scripted fake CLI (claude.testing), driven directly: write lines to
-- its stdin, read lines from its stdout, as the SDK does.
local process = require "claude.process"
local json = require "claude.json"
local testing = require "claude.testing"
local harness = require "support.harness"

local STREAM_FLAGS = { "--output-format", "stream-json", "--verbose", "--input-format",
  "stream-json" }

-- Starts the fake with `script` (source or path) as the SDK would, plus
-- `flags`; returns the process and the fake.
local function start(script, flags, env)
  local opts, fake = testing.fake_cli(script, { env = env })
  local args = { table.unpack(opts.cli_path, 2) }
  for _, a in ipairs(STREAM_FLAGS) do args[#args + 1] = a end
  for _, a in ipairs(flags or {}) do args[#args + 1] = a end
  local p = assert(process.spawn { opts.cli_path[1], args = args, env = opts.env })
  return p, fake
end

local function send(p, msg)
  assert(p:write((type(msg) == "string" and msg or json.encode(msg)) .. "\n"))
end

local function recv(p)
  local line, err = p:read_line(10)
  assert(line, "no line from the fake CLI: " .. tostring(err or "EOF") .. "\n" .. p:stderr())
  return assert(json.decode(line))
end

-- Closes stdin and waits: the exit code and the collected stderr.
local function finish(p)
  p:close_stdin()
  local code = assert(p:wait(10))
  return code, p:stderr()
end

local function initialize(id)
  return { type = "control_request", request_id = id or "req_1_init",
    request = { subtype = "initialize", hooks = json.null } }
end

local function user(text)
  return { type = "user", message = { role = "user", content = text },
    parent_tool_use_id = json.null, session_id = "default" }
end

local function control_response(request_id, body)
  return { type = "control_response",
    response = { subtype = "success", request_id = request_id, response = body } }
end

describe("the fake CLI", function()
  before_each(harness.before)
  after_each(function()
    testing.cleanup()
    harness.after()
  end)

  it("answers initialize with a response shaped like the real one", function()
    local p <close> = start([[ cli:expect_initialize({ output_style = "Learning" }) ]])
    send(p, initialize("req_1_abc"))
    local r = recv(p)
    assert.equal("control_response", r.type)
    assert.equal("success", r.response.subtype)
    assert.equal("req_1_abc", r.response.request_id)
    local body = r.response.response
    assert.equal("Learning", body.output_style)
    assert.is_true(#body.commands > 0 and #body.models > 0 and #body.agents > 0)
    assert.same({ tokenSource = "none", apiKeySource = "ANTHROPIC_API_KEY",
      apiProvider = "firstParty" }, body.account)
    assert.equal(p.pid, body.pid)
    assert.same({ 0, "" }, { finish(p) })
  end)

  it("plays a text turn with faithful system/init, assistant and result lines", function()
    local p <close> = start([[
      cli:expect_initialize()
      local _, text = cli:expect_user("Say hello")
      cli:system_init()
      cli:assistant("Hello! You said: " .. text)
      cli:result()
    ]], { "--model", "claude-test-1", "--permission-mode", "acceptEdits" })
    send(p, initialize())
    recv(p)
    send(p, user("Say hello"))
    local init = recv(p)
    assert.equal("system", init.type)
    assert.equal("init", init.subtype)
    assert.equal("claude-test-1", init.model)
    assert.equal("acceptEdits", init.permissionMode)
    assert.matches("^%x+%-%x+%-4%x+%-[89ab]%x+%-%x+$", init.session_id)
    assert.is_string(init.uuid)
    local a = recv(p)
    assert.equal("assistant", a.type)
    assert.equal(init.session_id, a.session_id)
    assert.equal(json.null, a.parent_tool_use_id)
    assert.equal("assistant", a.message.role)
    assert.matches("^msg_01", a.message.id)
    assert.equal(json.null, a.message.stop_reason)
    assert.same({ { type = "text", text = "Hello! You said: Say hello" } }, a.message.content)
    local r = recv(p)
    assert.equal("result", r.type)
    assert.equal("success", r.subtype)
    assert.is_false(r.is_error)
    assert.equal("Hello! You said: Say hello", r.result)
    assert.equal(1, r.num_turns)
    assert.equal("end_turn", r.stop_reason)
    assert.equal("completed", r.terminal_reason)
    assert.equal(init.session_id, r.session_id)
    assert.is_true(r.total_cost_usd > 0)
    assert.equal(r.total_cost_usd, r.modelUsage["claude-test-1"].costUSD)
    assert.equal(25000, r.usage.input_tokens)
    assert.is_true(math.type(r.duration_ms) == "integer")
    assert.same({}, r.permission_denials)
    assert.same({ 0, "" }, { finish(p) })
  end)

  it("waits for its control request's answer, keeping lines that arrive meanwhile", function()
    local p <close> = start([[
      cli:expect_user()
      local resp = assert(cli:mcp("calc", { jsonrpc = "2.0", id = 1, method = "tools/list" }))
      local body, err = cli:request("hook_callback", { callback_id = "hook_9", input = {} })
      assert(body == nil)
      -- the interrupt came while the fake waited: it is read now
      local req = cli:expect_control("interrupt")
      cli:respond(req)
      cli:assistant(#resp.result.tools .. " tools; hook error: " .. err)
      cli:result()
    ]])
    send(p, user("go"))
    local req = recv(p)
    assert.equal("control_request", req.type)
    assert.equal("mcp_message", req.request.subtype)
    assert.equal("calc", req.request.server_name)
    assert.same({ jsonrpc = "2.0", id = 1, method = "tools/list" }, req.request.message)
    -- unrelated lines before the answer
    send(p, { type = "keep_alive" })
    send(p, { type = "control_request", request_id = "req_2_x",
      request = { subtype = "interrupt" } })
    send(p, control_response("some-other-id", {}))
    send(p, control_response(req.request_id, { mcp_response = { jsonrpc = "2.0", id = 1,
      result = { tools = { { name = "add" }, { name = "mul" } } } } }))
    local hook = recv(p)
    assert.equal("hook_callback", hook.request.subtype)
    send(p, { type = "control_response", response = { subtype = "error",
      request_id = hook.request_id, error = "lua callback crashed" } })
    local ack = recv(p)
    assert.same({ type = "control_response",
      response = { subtype = "success", request_id = "req_2_x" } }, ack)
    -- the unknown control_response was kept too: the script did not read it,
    -- so it is still pending when stdin closes
    local a = recv(p)
    assert.equal("2 tools; hook error: lua callback crashed", a.message.content[1].text)
    assert.equal("result", recv(p).type)
    local code, err = finish(p)
    assert.equal(3, code)
    assert.matches("expected EOF %(stdin closed%), got .*some%-other%-id", err)
  end)

  it("exits 3 naming the script line when a message does not match", function()
    local p <close>, fake = start("cli:expect_initialize()\n")
    send(p, user("too early"))
    local code, err = finish(p)
    assert.equal(3, code)
    assert.matches("^fake_cli: expectation failed at .-:1: expected control_request/initialize, "
      .. "got {.*\"type\":\"user\".*} %(mismatch: type is \"user\"%)", err)
    assert.is_nil(p:read_line(1))
    local log = fake:read_log()
    assert.equal(3, log.exit_code)
    assert.equal("too early", log[1].message.content)
  end)

  it("exits 3 at EOF where a message was expected, and for a wrong user text", function()
    local p <close> = start([[
      cli:expect_user("first")
      cli:expect_user("second")
    ]])
    send(p, user("first"))
    local code, err = finish(p)
    assert.equal(3, code)
    assert.matches(":2: expected user, got EOF %(stdin closed%)", err)

    local q <close> = start("cli:expect_user('yes')")
    send(q, user("no"))
    code, err = finish(q)
    assert.equal(3, code)
    assert.matches("expected the user text \"yes\", got \"no\"", err)
  end)

  it("exits 1 on a malformed line, as the real CLI", function()
    local p <close> = start("cli:expect_user()")
    send(p, '{"type":"user"')
    local code, err = finish(p)
    assert.equal(1, code)
    assert.matches("^Error parsing streaming input line: {\"type\":\"user\": SyntaxError: ", err)
  end)

  it("exits 2 with a traceback when the script itself fails", function()
    local p <close> = start("local x = nil\nx.y = 1\n")
    local code, err = finish(p)
    assert.equal(2, code)
    assert.matches("^fake_cli: script error: .-:2: attempt to index", err)
    assert.matches("stack traceback:", err)

    local q <close> = start("this is not lua")
    code, err = finish(q)
    assert.equal(2, code)
    assert.matches("^fake_cli: cannot load the script: ", err)
  end)

  it("logs argv, env and every line received and sent", function()
    local p <close>, fake = start([[
      cli:expect_initialize()
      cli:expect_user()
      cli:reply("ok")
      cli:write_raw("not json at all")
    ]], { "--max-turns", "3", "--setting-sources", "" }, { MY_VAR = "hello" })
    send(p, initialize())
    send(p, { type = "keep_alive" })
    send(p, user("hi"))
    for _ = 1, 5 do assert(p:read_line(10)) end
    assert.same({ 0, "" }, { finish(p) })

    local log = assert(fake:read_log())
    assert.same({ "--output-format", "stream-json", "--verbose", "--input-format",
      "stream-json", "--max-turns", "3", "--setting-sources", "" }, log.argv)
    assert.equal("hello", log.env.MY_VAR)
    assert.equal(fake.log, log.env.CLAUDELUA_FAKE_LOG)
    assert.equal(3, #log)
    assert.equal("initialize", log[1].request.subtype)
    assert.equal("keep_alive", log[2].type)
    assert.same(user("hi"), log[3])
    assert.equal(log[3], log:find("user"))
    assert.equal(1, #log:find_all("control_request", "initialize"))
    assert.equal(5, #log.sent)
    assert.same({ "control_response", "system", "assistant", "result" }, {
      log.sent[1].type, log.sent[2].type, log.sent[3].type, log.sent[4].type })
    assert.equal("not json at all", log.sent[5])
    assert.is_true(log.eof)
    assert.equal(0, log.exit_code)
    assert.equal(1, #log.runs)
  end)

  it("parses flags, and runs a script file returning function(cli)", function()
    local path = os.tmpname()
    local f = assert(io.open(path, "w"))
    f:write([[
      return function(cli)
        cli:send({ type = "probe", model = cli:flag("--model"), turns = cli:flag("--max-turns"),
          verbose = cli:has_flag("--verbose"), sources = cli:flag("--setting-sources"),
          tools = cli:flags("--allowedTools"), missing = cli:has_flag("--resume"),
          mcp = cli:json_flag("--mcp-config"), home = cli.env.FAKE_HOME })
      end
    ]])
    f:close()
    local p <close> = start(path, { "--model=m2", "--max-turns", "5", "--setting-sources", "",
      "--allowedTools", "a", "--allowedTools=b",
      "--mcp-config", '{"mcpServers":{"calc":{"type":"sdk","name":"calc"}}}' },
      { FAKE_HOME = "/nowhere" })
    local probe = recv(p)
    os.remove(path)
    assert.same({ type = "probe", model = "m2", turns = "5", verbose = true, sources = "",
      tools = { "a", "b" }, missing = false, home = "/nowhere",
      mcp = { mcpServers = { calc = { type = "sdk", name = "calc" } } } }, probe)
    assert.same({ 0, "" }, { finish(p) })
  end)

  it("plays a tool turn: MCP handshake, permission, hooks, tools/call", function()
    local p <close> = start([[
      local _, init = cli:expect_initialize()
      assert(init.sdkMcpServers[1] == "calc")
      local tools = cli:mcp_connect("calc")
      cli:expect_user()
      cli:run_hooks("UserPromptSubmit", { prompt = "add" })
      cli:system_init()
      local mid = cli:assistant("I'll add.")
      -- the same API response: the same message id, as the real CLI
      local id = cli:tool_use("mcp__calc__add", { a = 2, b = 3 }, { message_id = mid })
      local decision = cli:can_use_tool("mcp__calc__add", { a = 2, b = 3 })
      local pre = cli:run_hooks("PreToolUse", { tool_name = "mcp__calc__add",
        tool_input = decision.updatedInput, tool_use_id = id })
      assert(#pre == 1 and pre[1].continue == true)
      local result = assert(cli:call_tool("calc", "add", decision.updatedInput, id))
      cli:tool_result(id, result.content)
      cli:assistant("The sum is " .. result.content[1].text .. " (" .. #tools .. " tool)")
      cli:result()
    ]])
    send(p, { type = "control_request", request_id = "req_1", request = {
      subtype = "initialize", sdkMcpServers = { "calc" }, hooks = {
        PreToolUse = { { matcher = "mcp__calc__.*", hookCallbackIds = { "hook_0" } } },
        PostToolUse = { { matcher = "Bash", hookCallbackIds = { "hook_1" } } },
        UserPromptSubmit = { { hookCallbackIds = { "hook_2" } } } } } })
    assert.equal("req_1", recv(p).response.request_id)

    local function mcp_request(method)
      local r = recv(p)
      assert.equal("mcp_message", r.request.subtype)
      assert.equal(method, r.request.message.method)
      return r.request_id, r.request.message
    end
    local rid, msg = mcp_request("initialize")
    assert.equal(0, msg.id)
    assert.equal("2025-11-25", msg.params.protocolVersion)
    send(p, control_response(rid, { mcp_response = { jsonrpc = "2.0", id = 0, result = {
      protocolVersion = "2024-11-05", capabilities = { tools = {} },
      serverInfo = { name = "calc", version = "1.0.0" } } } }))
    rid = mcp_request("notifications/initialized")
    send(p, control_response(rid, { mcp_response = { jsonrpc = "2.0", id = 0, result = {} } }))
    rid, msg = mcp_request("tools/list")
    assert.equal(1, msg.id)
    send(p, control_response(rid, { mcp_response = { jsonrpc = "2.0", id = 1,
      result = { tools = { { name = "add", inputSchema = { type = "object" } } } } } }))

    send(p, user("add"))
    local hook = recv(p)
    assert.equal("hook_callback", hook.request.subtype)
    assert.equal("hook_2", hook.request.callback_id)
    assert.equal("UserPromptSubmit", hook.request.input.hook_event_name)
    assert.equal("add", hook.request.input.prompt)
    send(p, control_response(hook.request_id, {}))

    local init = recv(p)
    assert.same({ { name = "calc", status = "connected" } }, init.mcp_servers)
    assert.equal("mcp__calc__add", init.tools[#init.tools])
    local text, use = recv(p), recv(p)
    assert.equal(text.message.id, use.message.id)
    local block = use.message.content[1]
    assert.equal("tool_use", block.type)
    assert.matches("^toolu_01", block.id)
    assert.same({ { id = block.id, display_name = "Add", server_display_name = "calc" } },
      use.tool_use_meta)

    local perm = recv(p)
    assert.equal("can_use_tool", perm.request.subtype)
    assert.equal(block.id, perm.request.tool_use_id)
    assert.equal("Add", perm.request.display_name)
    send(p, control_response(perm.request_id, { behavior = "allow",
      updatedInput = { a = 20, b = 3 } }))

    local pre = recv(p)
    assert.equal("hook_0", pre.request.callback_id)
    assert.equal("PreToolUse", pre.request.input.hook_event_name)
    assert.equal(block.id, pre.request.tool_use_id)
    send(p, control_response(pre.request_id, { continue = true }))

    rid, msg = mcp_request("tools/call")
    assert.equal(2, msg.id)
    assert.same({ a = 20, b = 3 }, msg.params.arguments)
    assert.equal(block.id, msg.params._meta["claudecode/toolUseId"])
    send(p, control_response(rid, { mcp_response = { jsonrpc = "2.0", id = 2,
      result = { content = { { type = "text", text = "23" } } } } }))

    local tr = recv(p)
    assert.equal("user", tr.type)
    assert.same({ { tool_use_id = block.id, type = "tool_result",
      content = { { type = "text", text = "23" } } } }, tr.message.content)
    assert.equal("The sum is 23 (1 tool)", recv(p).message.content[1].text)
    local r = recv(p)
    assert.equal("The sum is 23 (1 tool)", r.result)
    assert.equal(2, r.num_turns)
    assert.same({ 0, "" }, { finish(p) })
  end)

  it("answers SDK control requests as the real CLI, and records denials", function()
    local p <close> = start([[
      cli:expect_user()
      for _ = 1, 4 do cli:answer(cli:expect("control_request")) end
      cli:system_init()
      local id = cli:tool_use("Bash", { command = "ls" })
      local d = cli:can_use_tool("Bash", { command = "ls" })
      cli:tool_result(id, d.message, true)
      cli:result()
    ]])
    send(p, user("hi"))
    send(p, { type = "control_request", request_id = "a", request = { subtype = "set_model",
      model = "claude-opus-4-8" } })
    send(p, { type = "control_request", request_id = "b",
      request = { subtype = "set_permission_mode", mode = "plan" } })
    send(p, { type = "control_request", request_id = "c",
      request = { subtype = "get_binary_version" } })
    send(p, { type = "control_request", request_id = "d", request = { subtype = "nope" } })
    local replay = recv(p)
    assert.is_true(replay.isReplay)
    assert.equal("<local-command-stdout>Set model to claude-opus-4-8</local-command-stdout>",
      replay.message.content[1].text)
    assert.same({ type = "control_response",
      response = { subtype = "success", request_id = "a" } }, recv(p))
    assert.same({ mode = "plan" }, recv(p).response.response)
    local status = recv(p)
    assert.same({ "system", "status", "plan" },
      { status.type, status.subtype, status.permissionMode })
    assert.equal(require("claude.testing.fake_cli").version, recv(p).response.response.version)
    assert.same({ subtype = "error", request_id = "d",
      error = "Unsupported control request subtype: nope" }, recv(p).response)
    local init = recv(p)
    assert.same({ "claude-opus-4-8", "plan" }, { init.model, init.permissionMode })
    recv(p) -- tool_use
    local perm = recv(p)
    send(p, control_response(perm.request_id, { behavior = "deny", message = "no" }))
    local tr = recv(p)
    assert.is_true(tr.message.content[1].is_error)
    assert.equal("Error: no", tr.tool_use_result)
    local r = recv(p)
    assert.same({ { tool_name = "Bash", tool_use_id = perm.request.tool_use_id,
      tool_input = { command = "ls" } } }, r.permission_denials)
    assert.same({ 0, "" }, { finish(p) })
  end)

  it("writes huge lines and cancels requests, dropping late answers", function()
    local p <close> = start([[
      cli:expect_user()
      cli:write_raw(string.rep("x", 1024 * 1024))
      local id = cli:send_request("can_use_tool", { tool_name = "Bash", input = {} })
      cli:expect_control("interrupt")
      cli:cancel(id)
      cli:result({ subtype = "error_during_execution" })
    ]])
    send(p, user("hi"))
    assert.equal(1024 * 1024, #assert(p:read_line(10)))
    local perm = recv(p)
    send(p, { type = "control_request", request_id = "i", request = { subtype = "interrupt" } })
    assert.same({ type = "control_cancel_request", request_id = perm.request_id }, recv(p))
    local r = recv(p)
    assert.same({ "error_during_execution", true, "aborted_streaming" },
      { r.subtype, r.is_error, r.terminal_reason })
    send(p, control_response(perm.request_id, { behavior = "allow", updatedInput = {} }))
    assert.same({ 0, "" }, { finish(p) })
  end)

  it("merges options, env key by key", function()
    local opts = testing.fake_cli("cli:expect_eof()")
    local merged = testing.merge(opts, { model = "m", env = { X = "1" } })
    assert.equal(opts.cli_path, merged.cli_path)
    assert.equal("m", merged.model)
    assert.equal("1", merged.env.X)
    assert.equal(opts.env.LUA_PATH, merged.env.LUA_PATH)
    assert.is_nil(opts.env.X)
    assert.has_error(function() testing.fake_cli("missing/script.lua") end,
      "bad argument #1 to 'fake_cli' (no such script file: missing/script.lua)")
  end)
end)
