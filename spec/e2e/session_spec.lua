-- Sessions against the REAL claude CLI (node_modules/.bin/claude, or
-- $CLAUDELUA_CLI), with the scripted Messages API of spec/support/mock_api.mjs.
-- Every spec starts its own mock; nothing leaves 127.0.0.1.
-- Run: busted spec/e2e/session_spec.lua   (or busted --run=e2e)
local claude = require "claude"
local errors = require "claude.errors"
local e2e = require "support.e2e"
local harness = require "support.harness"

-- Generous: the machine is small and busy. Timeouts only guard against hangs.
local T = 30

local collect, of_type, last_of = harness.collect, harness.of_type, harness.last_of

-- Assistant texts (non-empty) of a list of messages, in order.
local function texts(msgs)
  local out = {}
  for _, m in ipairs(of_type(msgs, "assistant")) do
    local t = claude.text(m)
    if t and t ~= "" then out[#out + 1] = t end
  end
  return out
end

-- A tool turn followed by a turn that echoes the tool result.
local function tool_turns(input)
  return {
    { match = "add", content = { { type = "text", text = "I'll add." },
      { type = "tool_use", name = "mcp__calc__add", input = input or { a = 2, b = 3 } } } },
    { content = { { type = "text", text = "Tool said: {{last_tool_result}}" } } },
  }
end

-- The in-process server `calc`; `calls` records the arguments it got.
local function calc_server(calls)
  return claude.server("calc", {
    claude.tool("add", "Add two numbers", { a = "number", b = "number" }, function(args)
      calls[#calls + 1] = { a = args.a, b = args.b }
      return args.a + args.b
    end),
  })
end

-- Runs `fn(...)` with a pcall; returns the error (nil if none).
local function raises(fn, ...)
  local ok, err = pcall(fn, ...)
  if ok then return nil end
  return err
end

describe("session with the real CLI", function()
  before_each(harness.before)
  after_each(harness.after)

  it("answers a text turn with assistant text and a costed result", function()
    local mock <close> = e2e.start { turns = {
      { match = "15 + 27", content = { { type = "text", text = "The answer is 42." } } },
    } }
    local msgs = collect(claude.query("What is 15 + 27?", mock:options()))
    local init = of_type(msgs, "system", "init")[1]
    assert.is_table(init)
    assert.is_string(init.session_id)
    assert.same({ "The answer is 42." }, texts(msgs))
    local result = msgs[#msgs]
    assert.equal("result", result.type)
    assert.equal("success", result.subtype)
    assert.is_false(result.is_error)
    assert.equal("The answer is 42.", claude.text(result))
    assert.is_number(result.total_cost_usd)
    assert.is_true(result.total_cost_usd > 0)
    assert.equal(init.session_id, result.session_id)
    local reqs = mock:requests()
    assert.equal(1, #reqs)
    assert.equal("What is 15 + 27?", reqs[1].last_user_text)
    assert.is_nil(reqs[1].mismatch)
  end)

  it("runs several turns on one process with connect", function()
    local mock <close> = e2e.start { turns = {
      { content = { { type = "text", text = "first: {{last_user_text}}" } } },
      { content = { { type = "text", text = "second: {{last_user_text}}" } } },
    } }
    local s <close> = assert(claude.connect(mock:options()))
    assert.is_number(s.pid)
    local info = s:get_server_info()
    assert.is_table(info)
    -- over ssh (CLAUDELUA_E2E_SPAWN=ssh) s.pid is the local ssh client's
    assert.equal(e2e.remote and info.pid or s.pid, info.pid)

    assert(s:send("one"))
    local turn1 = collect(s:receive(T))
    assert.same({ "first: one" }, texts(turn1))
    assert.equal("result", turn1[#turn1].type)
    assert.equal(turn1[#turn1], s.last_result)
    local sid = s.session_id
    assert.is_string(sid)

    assert(s:send("two"))
    local turn2 = collect(s:receive(T))
    assert.same({ "second: two" }, texts(turn2))
    local result = turn2[#turn2]
    assert.equal("success", result.subtype)
    assert.equal(sid, result.session_id)
    assert.equal(sid, s.session_id)
    -- the cost accumulates over the process
    assert.is_true(result.total_cost_usd > turn1[#turn1].total_cost_usd)

    s:close()
    assert.same({ 0, 0 }, { s:wait(T) })
    assert.equal(2, #mock:requests())
  end)

  describe("can_use_tool", function()
    it("allows a call", function()
      local mock <close> = e2e.start { turns = tool_turns() }
      local calls, asked = {}, {}
      local msgs = collect(claude.query("Please add 2 and 3", mock:options {
        mcp_servers = { calc = calc_server(calls) },
        can_use_tool = function(name, input, ctx)
          asked[#asked + 1] = { name = name, a = input.a, b = input.b, id = ctx.tool_use_id }
          return claude.allow()
        end,
      }))
      assert.equal(1, #asked)
      assert.equal("mcp__calc__add", asked[1].name)
      assert.equal(2, asked[1].a)
      assert.equal(3, asked[1].b)
      assert.matches("^toolu_", asked[1].id)
      assert.same({ { a = 2, b = 3 } }, calls)
      assert.equal("Tool said: 5", claude.text(last_of(msgs, "result")))
      assert.same({}, last_of(msgs, "result").permission_denials)
    end)

    it("denies a call, and the model sees the message", function()
      local mock <close> = e2e.start { turns = tool_turns() }
      local calls = {}
      local msgs = collect(claude.query("Please add 2 and 3", mock:options {
        mcp_servers = { calc = calc_server(calls) },
        can_use_tool = function() return claude.deny("The Lua host said no.") end,
      }))
      assert.same({}, calls)
      local result = last_of(msgs, "result")
      assert.equal("success", result.subtype)
      assert.equal("Tool said: ERROR: The Lua host said no.", claude.text(result))
      assert.equal(1, #result.permission_denials)
      assert.equal("mcp__calc__add", result.permission_denials[1].tool_name)
      local reqs = mock:requests()
      assert.equal(2, #reqs)
      assert.is_true(reqs[2].tool_results[1].is_error)
    end)

    it("allows a call with changed input", function()
      local mock <close> = e2e.start { turns = tool_turns() }
      local calls = {}
      local msgs = collect(claude.query("Please add 2 and 3", mock:options {
        mcp_servers = { calc = calc_server(calls) },
        can_use_tool = function(_, input)
          return claude.allow { a = input.a * 10, b = input.b }
        end,
      }))
      assert.same({ { a = 20, b = 3 } }, calls)
      assert.equal("Tool said: 23", claude.text(last_of(msgs, "result")))
    end)
  end)

  describe("a PreToolUse hook", function()
    it("that allows skips can_use_tool", function()
      local mock <close> = e2e.start { turns = tool_turns() }
      local calls, seen, asked = {}, {}, 0
      local msgs = collect(claude.query("Please add 2 and 3", mock:options {
        mcp_servers = { calc = calc_server(calls) },
        can_use_tool = function()
          asked = asked + 1
          return claude.deny("can_use_tool should not be asked")
        end,
        hooks = { PreToolUse = { { matcher = "mcp__calc__add", hooks = {
          function(input, tool_use_id)
            seen[#seen + 1] = { event = input.hook_event_name, tool = input.tool_name,
              a = input.tool_input.a, id = tool_use_id }
            return { hook_specific_output = { permission_decision = "allow",
              permission_decision_reason = "calc is safe" } }
          end } } } },
      }))
      assert.equal(0, asked)
      assert.equal(1, #seen)
      assert.equal("PreToolUse", seen[1].event)
      assert.equal("mcp__calc__add", seen[1].tool)
      assert.equal(2, seen[1].a)
      assert.matches("^toolu_", seen[1].id)
      assert.same({ { a = 2, b = 3 } }, calls)
      assert.equal("Tool said: 5", claude.text(last_of(msgs, "result")))
    end)

    it("that denies gives the model its reason", function()
      local mock <close> = e2e.start { turns = tool_turns() }
      local calls = {}
      local msgs = collect(claude.query("Please add 2 and 3", mock:options {
        mcp_servers = { calc = calc_server(calls) },
        hooks = { PreToolUse = { { matcher = "mcp__calc__add", hooks = {
          function()
            return { hook_specific_output = { permission_decision = "deny",
              permission_decision_reason = "No adding on Sundays." } }
          end } } } },
      }))
      assert.same({}, calls)
      -- 2.1.330 and 2.1.332 word it "PreToolUse:mcp__calc__add hook error: <reason>"
      local result = last_of(msgs, "result")
      assert.matches("^Tool said: ERROR: .*No adding on Sundays%.$", claude.text(result))
      local reqs = mock:requests()
      assert.matches("No adding on Sundays%.$", reqs[2].tool_results[1].text)
      assert.is_true(reqs[2].tool_results[1].is_error)
    end)
  end)

  it("interrupts a turn while text streams, then runs the next turn", function()
    local mock <close> = e2e.start { turns = {
      { content = { { type = "text", text = "Once upon a time, slowly, a long story." } },
        chunks = 40, chunk_delay_ms = 150 },
      { content = { { type = "text", text = "after: {{last_user_text}}" } } },
    } }
    local s <close> = assert(claude.connect(mock:options { include_partial_messages = true }))
    assert(s:send("Tell me a story"))
    local interrupted, turn1 = false, {}
    for msg in s:receive(T) do
      turn1[#turn1 + 1] = msg
      if not interrupted and (msg.type == "stream_event" or msg.type == "assistant") then
        interrupted = true
        assert(s:interrupt(T))
      end
    end
    assert.is_true(interrupted)
    assert.is_true(#of_type(turn1, "stream_event") > 0)
    local result = turn1[#turn1]
    assert.equal("result", result.type)
    assert.equal("error_during_execution", result.subtype)
    assert.is_true(result.is_error)
    -- the session goes on
    assert(s:send("and now?"))
    local turn2 = collect(s:receive(T))
    assert.same({ "after: and now?" }, texts(turn2))
    assert.equal("success", turn2[#turn2].subtype)
  end)

  it("speaks every outbound control request the real CLI knows", function()
    local mock <close> = e2e.start { turns = {
      { content = { { type = "text", text = "hello" } } },
    } }
    local calc = claude.server("calc", {
      claude.tool("add", "Add", { a = "number", b = "number" }, function(a) return a.a + a.b end),
    })
    local s <close> = assert(claude.connect(mock:options { mcp_servers = { calc = calc } }))
    -- rows: method call, then a check of its answer
    assert.truthy(s:set_max_thinking_tokens(1024, T))
    assert.same({ mode = "acceptEdits" }, (s:set_permission_mode("acceptEdits", T)))
    assert.truthy(s:set_model("claude-sonnet-4-5", T))
    local status = assert(s:mcp_status(T))
    assert.is_table(status.mcpServers)
    local rewind = assert(s:rewind_files("00000000-0000-4000-8000-000000000000", true, T))
    assert.is_false(rewind.canRewind)
    -- toggling or reconnecting an sdk server: 2.1.197 refused it, 2.1.330 accepts it;
    -- either way an answer (a table, or a control error), never a timeout
    for _, call in ipairs { function() return s:mcp_toggle("calc", true, T) end,
                            function() return s:mcp_reconnect("calc", T) end } do
      local body, cerr = call()
      assert.is_true(type(body) == "table" or cerr.kind == "control", tostring(cerr))
    end
    -- an unknown subtype: the CLI's own error, as a value
    local ok, err = s:control("no_such_subtype", nil, T)
    assert.is_nil(ok)
    assert.matches("Unsupported control request subtype", err.message)
    -- end_input: the CLI finishes the turn and exits; messages() ends with it
    assert(s:send("hi"))
    s:end_input()
    local types = {}
    for msg in s:messages(T) do types[#types + 1] = msg.type end
    assert.equal("result", types[#types])
    assert.same({ 0, 0 }, { s:wait(T) })
  end)

  it("stops a turn still running when the loop is left early", function()
    local mock <close> = e2e.start { turns = {
      { content = { { type = "text", text = "A long answer that streams slowly." } },
        chunks = 40, chunk_delay_ms = 150 },
    } }
    local seen = 0
    local iter, _, _, session = claude.query("Tell me a story",
      mock:options { include_partial_messages = true })
    for msg in iter, nil, nil, session do
      if msg.type == "stream_event" then
        seen = seen + 1
        break -- closes the session: the CLI is interrupted, not left to finish
      end
    end
    assert.equal(1, seen)
    -- it ended the turn and exited by itself: no SIGTERM/SIGKILL was needed
    assert.equal(0, session.exit_signal)
    assert.is_true(session.exit_code == 0 or session.exit_code == 1)
    -- the CLI hung up on the streaming answer instead of reading it to the end
    for _ = 1, 100 do
      if #mock:records("client_closed") > 0 then break end
      claude.sleep(0.05)
    end
    assert.equal(1, #mock:records("client_closed"))
    assert.equal(0, #mock:records("stream_done"))
  end)

  it("interrupts a turn while can_use_tool is pending: the callback is cancelled", function()
    local mock <close> = e2e.start { turns = {
      { content = { { type = "tool_use", name = "mcp__calc__add", input = { a = 2, b = 3 } } } },
      { content = { { type = "text", text = "after: {{last_user_text}}" } } },
    } }
    local calls, s = {}, nil
    local state = {}
    s = assert(claude.connect(mock:options {
      mcp_servers = { calc = calc_server(calls) },
      can_use_tool = function(_, _, ctx)
        claude.spawn(function() state.interrupt = s:interrupt(T) end)
        state.slept = pcall(claude.sleep, T) -- cancelled by the CLI's control_cancel_request
        state.cancelled = ctx.cancelled()
        return claude.allow()
      end,
    }))
    local ok, err = pcall(function()
      assert(s:send("add please"))
      local turn1 = collect(s:receive(T))
      assert.equal("error_during_execution", turn1[#turn1].subtype)
      assert.is_false(state.slept)
      assert.is_true(state.cancelled)
      assert.is_table(state.interrupt)
      assert.same({}, calls)
      assert(s:send("next"))
      assert.same({ "after: next" }, texts(collect(s:receive(T))))
    end)
    s:close()
    assert(ok, err)
  end)

  describe("when the CLI is killed mid-turn", function()
    it("the receive iterator raises a process error", function()
      local mock <close> = e2e.start { turns = {
        { delay_ms = 20000, content = { { type = "text", text = "too late" } } },
      } }
      local s <close> = assert(claude.connect(mock:options()))
      assert(s:send("hello"))
      local first = assert(s:next_message(T))
      assert.equal("system", first.type) -- the turn has started
      assert(claude.core.kill(s.pid, 9))
      local err = raises(function()
        for _ in s:receive(T) do end
      end)
      assert.is_not_nil(err)
      assert.is_true(errors.is(err, "process"), tostring(err))
      assert.equal(9, err.signal)
      -- later waits see the same error, at once
      local msg, err2 = s:next_message(T)
      assert.is_nil(msg)
      assert.is_true(errors.is(err2, "process"))
    end)

    it("the query iterator raises a process error", function()
      local mock <close> = e2e.start { turns = {
        { delay_ms = 20000, content = { { type = "text", text = "too late" } } },
      } }
      local iter, _, _, s = claude.query("hello", mock:options())
      local killed = false
      local err = raises(function()
        for msg in iter do
          if not killed and msg.type == "system" then
            killed = true
            assert(claude.core.kill(s.pid, 9))
          end
        end
      end)
      s:close()
      assert.is_true(killed)
      assert.is_true(errors.is(err, "process"), tostring(err))
    end)
  end)

  describe("a 300 KB user message", function()
    local big = ("0123456789abcdef"):rep(300 * 1024 // 16)
    local turns = { { content = { { type = "text", text = "length {{user_text_length}}" } } } }

    it("goes through on a connected session", function()
      local mock <close> = e2e.start { turns = turns }
      local s <close> = assert(claude.connect(mock:options()))
      assert(s:send(big))
      local msgs = collect(s:receive(T))
      assert.equal("length " .. #big, claude.text(last_of(msgs, "result")))
      assert.equal(#big, #mock:requests()[1].last_user_text)
    end)

    it("goes through as a query prompt (stdin closed right after the write)", function()
      local mock <close> = e2e.start { turns = turns }
      local msgs = collect(claude.query(big, mock:options()))
      assert.equal("length " .. #big, claude.text(last_of(msgs, "result")))
      assert.equal(#big, #mock:requests()[1].last_user_text)
    end)
  end)

  describe("options", function()
    it("an unknown key raises naming it", function()
      local err = raises(claude.query, "hi", { modle = "claude-sonnet-4-5" })
      assert.matches("unknown field 'modle' to 'query'", tostring(err), 1, true)
      assert.matches("did you mean 'model'", tostring(err), 1, true)
      err = raises(claude.connect, { permision_mode = "default" })
      assert.matches("unknown field 'permision_mode' to 'connect'", tostring(err), 1, true)
    end)

    it("a cli_path that does not exist gives cli_not_found with an install hint", function()
      local missing = "/nonexistent/dir/claude"
      local s, err = claude.connect { cli_path = missing }
      assert.is_nil(s)
      assert.is_true(errors.is(err, "cli_not_found"), tostring(err))
      assert.matches(missing, err.message, 1, true)
      assert.matches("npm install -g @anthropic-ai/claude-code", err.message, 1, true)
      -- query raises the same error
      local qerr = raises(claude.query, "hi", { cli_path = missing })
      assert.is_true(errors.is(qerr, "cli_not_found"), tostring(qerr))
    end)
  end)
end)
