-- Reliability of the session against the fake CLI: answers that cannot be
-- encoded, lines that are not messages, the stderr tail's size, a CLI that
-- exits with work unanswered, bad bytes in options, callbacks that keep the
-- input open. Timeouts only guard against hangs; no spec asserts a duration.
-- Run: busted spec/integration/reliability_spec.lua
local claude = require "claude"
local json = require "claude.json"
local testing = require "claude.testing"
local harness = require "support.harness"

local T = 30 -- seconds; only a guard against hangs
local fmt = string.format

-- query() to the end: the messages and the fake's log.
local function run(script, options, prompt)
  local opts, fake = testing.fake_cli(script)
  local msgs = harness.collect(claude.query(prompt or "go", testing.merge(opts, options)))
  return msgs, fake:read_log()
end

-- query() until it raises: the messages before, the error, the fake's log.
local function run_failing(script, options, prompt)
  local opts, fake = testing.fake_cli(script)
  local msgs = {}
  local ok, err = pcall(function()
    for msg in claude.query(prompt or "go", testing.merge(opts, options)) do
      msgs[#msgs + 1] = msg
    end
  end)
  assert(not ok, "expected an error")
  return msgs, err, fake:read_log()
end

-- One turn on a connect()ed session; the messages and the fake's log.
local function converse(script, options, prompt)
  local opts, fake = testing.fake_cli(script)
  local s <close> = assert(claude.connect(testing.merge(opts, options)))
  assert(s:send(prompt or "go"))
  local msgs = harness.collect(s:receive(T))
  s:close()
  return msgs, fake:read_log()
end

local function answers(log)
  local out = {}
  for _, m in ipairs(log:find_all("control_response")) do out[#out + 1] = m.response end
  return out
end

-- Runs `fn` with errors nobody waits for collected (claude.on_error); returns
-- fn's results and the list of reported errors.
local function reported(fn)
  local seen = {}
  claude.on_error(function(err) seen[#seen + 1] = err end)
  local r = table.pack(pcall(fn))
  claude.on_error(nil)
  if not r[1] then error(r[2], 0) end
  return seen, table.unpack(r, 2, r.n)
end

describe("reliability against the fake CLI", function()
  before_each(harness.before)
  after_each(function()
    testing.cleanup()
    harness.after()
  end)

  ---------------------------------------------------------------------------
  describe("an answer that cannot be encoded", function()
    local NAN = 0 / 0
    local ROWS = {
      { "a can_use_tool decision holding NaN", "can_use_tool",
        { tool_name = "Bash", input = { command = "ls" }, tool_use_id = "toolu_x" },
        { can_use_tool = function() return claude.allow({ command = NAN }) end },
        "cannot encode NaN" },
      { "hook output holding a function", "hook_callback",
        { callback_id = "hook_0", input = { hook_event_name = "Stop" }, tool_use_id = "t" },
        { hooks = { Stop = function() return { reason = print } end } },
        "cannot encode a function" },
      { "an elicitation answer holding a mixed table", "elicitation",
        { mcp_server_name = "srv", message = "Name?", mode = "form" },
        { on_elicitation = function()
          return { action = "accept", content = { 1, 2, name = "x" } }
        end }, "cannot encode a table with both list items and other keys" },
      { "a dialog answer holding a function", "request_user_dialog",
        { dialog_kind = "pick", payload = {} },
        { on_user_dialog = function() return { behavior = "ok", pick = print } end },
        "cannot encode a function" },
    }
    for _, row in ipairs(ROWS) do
      local name, subtype, fields, options, want = row[1], row[2], row[3], row[4], row[5]
      it(name .. ": an error answer with the cause, reported; nothing hangs", function()
        local seen, msgs, log = reported(function()
          return converse(fmt([[
            cli:expect_initialize()
            cli:expect_user()
            local body, err = cli:request(%q, cli.json.decode(%q))
            cli:reply(tostring(body) .. " / " .. tostring(err))
          ]], subtype, json.encode(fields)), options)
        end)
        local a = answers(log)
        assert.equal(1, #a)
        assert.equal("error", a[1].subtype)
        local text = msgs[#msgs].result
        assert.matches("^nil / ", text)
        assert.matches("the answer to control request '" .. subtype .. "' cannot be sent",
          text, 1, true)
        assert.matches(want, text, 1, true)
        assert.equal(1, #seen)
        assert.equal("encode", seen[1].kind)
        assert.matches(want, seen[1].message, 1, true)
        assert.equal(0, log.exit_code)
      end)
    end
  end)

  ---------------------------------------------------------------------------
  describe("a line that is not a message object", function()
    for _, line in ipairs({ "[1,2]", "[]", "[{\"type\":\"assistant\"}]" }) do
      it("a JSON array " .. line .. " is a protocol error", function()
        local _, err = run_failing(fmt([[
          cli:expect_initialize()
          cli:expect_user()
          cli:system_init()
          cli:write_raw(%q)
          cli:sleep(30)
        ]], line))
        assert.equal("protocol", err.kind)
        assert.matches("JSON array where a message object was expected", err.message, 1, true)
      end)
    end
    for _, line in ipairs({ "42", "\"text\"", "null", "true" }) do
      it("a JSON " .. line .. " is a protocol error", function()
        local _, err = run_failing(fmt([[
          cli:expect_initialize()
          cli:expect_user()
          cli:system_init()
          cli:write_raw(%q)
          cli:sleep(30)
        ]], line))
        assert.equal("protocol", err.kind)
        assert.matches("where a message object was expected", err.message, 1, true)
      end)
    end
  end)

  ---------------------------------------------------------------------------
  describe("callbacks that answer CLI requests keep the input open", function()
    local ROWS = {
      { "on_elicitation", { on_elicitation = function() return "accept" end },
        [[local r = assert(cli:request("elicitation", { mcp_server_name = "s",
            message = "OK?", mode = "form" }))
          assert(r.action == "accept")]] },
      { "on_user_dialog", { on_user_dialog = function() return { behavior = "done" } end },
        [[local r = assert(cli:request("request_user_dialog", { dialog_kind = "pick",
            payload = {} }))
          assert(r.behavior == "done")]] },
    }
    for _, row in ipairs(ROWS) do
      local name, options, ask = row[1], row[2], row[3]
      it("with a string prompt and " .. name .. ", the answer reaches the CLI", function()
        local msgs, log = run(fmt([[
          cli:expect_initialize()
          cli:expect_user()
          cli:system_init()
          cli:assistant("Let me ask.")
          %s
          cli:assistant("Asked.")
          cli:result()
          cli:expect_eof()
        ]], ask), options)
        assert.equal("Asked.", msgs[#msgs].result)
        assert.equal(1, #answers(log))
        assert.is_true(log.eof)
        assert.equal(0, log.exit_code)
      end)
    end
  end)
end)

describe("the stderr tail", function()
  before_each(harness.before)
  after_each(function()
    testing.cleanup()
    harness.after()
  end)

  it("caps each line and the total, and says how much was cut", function()
    local _, err = run_failing([[
      cli:expect_initialize()
      cli:expect_user()
      local big = string.rep("x", 1024 * 1024)
      for i = 1, 20 do cli:stderr("line " .. i .. " " .. big) end
      cli:stderr("last words")
      cli:exit(5)
    ]], { can_use_tool = function() return true end })
    assert.equal("process", err.kind)
    local tail = err.stderr_tail
    assert.is_true(#tail <= 10 * 1024, "tail of " .. #tail .. " bytes")
    local cut = tonumber(tail:match("^%[(%d+) bytes of stderr cut%]\n"))
    assert.is_true(cut > 19 * 1024 * 1024)
    assert.matches("\nlast words$", tail)
    assert.matches("^line 20 x+ %[%d+ bytes cut%]$", tail:match("\n(line 20 [^\n]*)"))
    assert.is_true(#tostring(err) < 12 * 1024)
  end)

  it("collected by a plain process, a huge line is cut too", function()
    local process = require "claude.process"
    local p = assert(process.spawn { "sh", args = { "-c",
      "head -c 3000000 /dev/zero | tr '\\0' y >&2; echo >&2; echo done >&2" } })
    assert(p:wait(T))
    local text = p:stderr()
    assert.is_true(#text < 8 * 1024, #text .. " bytes")
    assert.matches("^y+ %[%d+ bytes cut%]\ndone$", text)
  end)
end)

describe("a CLI that exits 0 with work unanswered", function()
  before_each(harness.before)
  after_each(function()
    testing.cleanup()
    harness.after()
  end)

  it("before answering initialize: query raises kind process", function()
    local _, err = run_failing([[
      cli:read()
      cli:exit(0)
    ]])
    assert.equal("process", err.kind)
    assert.equal(0, err.exit_code)
    assert.matches("exited with code 0 before answering initialize", err.message, 1, true)
  end)

  it("before answering initialize: connect returns kind process", function()
    local opts = testing.fake_cli([[
      cli:read()
      cli:exit(0)
    ]])
    local s, err, kind = claude.connect(opts)
    assert.is_nil(s)
    assert.equal("process", kind)
    assert.matches("before answering initialize", err.message, 1, true)
  end)

  it("with a prompt unanswered: query raises kind process", function()
    local msgs, err = run_failing([[
      cli:expect_initialize()
      cli:expect_user()
      cli:system_init()
      cli:assistant("half")
      cli:exit(0)
    ]])
    assert.equal(2, #msgs)
    assert.equal("process", err.kind)
    assert.matches("exited with code 0 with 1 prompt unanswered", err.message, 1, true)
  end)

  it("after every prompt's result: the query ends without error", function()
    local msgs = run([[
      cli:expect_initialize()
      cli:expect_user()
      cli:reply("all done")
      cli:exit(0)
    ]])
    assert.equal("all done", msgs[#msgs].result)
  end)
end)

describe("NUL and '=' where exec cannot take them", function()
  before_each(harness.before)
  after_each(function()
    testing.cleanup()
    harness.after()
  end)

  local IDLE = "cli:expect_initialize()"
  local ROWS = {
    { "NUL in an option value", { model = "opus\0--dangerously" },
      "bad argument #%d to '%a+' %(the value of %-%-model contains a NUL byte" },
    { "NUL in an environment value", { env = { FOO = "a\0b" } },
      "the value of environment variable FOO contains a NUL" },
    { "'=' in an environment key", { env = { ["PATH=/tmp:"] = "x" } },
      "environment key \"PATH=/tmp:\"" },
    { "NUL in an environment key", { env = { ["A\0B"] = "x" } }, "environment key" },
    { "NUL in cwd", { cwd = "/tmp\0/etc" }, "cwd contains a NUL" },
  }
  for _, row in ipairs(ROWS) do
    local name, options, want = row[1], row[2], row[3]
    it(name .. ": a clear error before spawning (query and connect)", function()
      local opts, fake = testing.fake_cli(IDLE)
      local ok, err = pcall(function()
        local iter = claude.query("hi", testing.merge(opts, options)) -- not a tail call
        return iter
      end)
      assert.is_false(ok)
      assert.matches(want, tostring(err))
      assert.matches("reliability_spec.lua:%d+:", tostring(err)) -- the caller's line
      ok, err = pcall(claude.connect, testing.merge(opts, options))
      assert.is_false(ok)
      assert.matches(want, tostring(err))
      assert.is_nil(fake:read_log().pid) -- never started
    end)
  end

  it("claude.process.spawn refuses them too", function()
    local process = require "claude.process"
    for _, spec in ipairs({ { "echo", args = { "a\0b" } }, { "echo", env = { ["X=Y"] = "1" } },
      { "echo", env = { X = "1\0" } }, { "ec\0ho" } }) do
      local ok, err = pcall(process.spawn, spec)
      assert.is_false(ok)
      assert.matches("bad argument #1 to 'spawn'", err, 1, true)
    end
  end)
end)

describe("a line that cannot be decoded but carries a request id", function()
  before_each(harness.before)
  after_each(function()
    testing.cleanup()
    harness.after()
  end)

  it("an undecodable control_request gets an error answer; the session goes on", function()
    local msgs, log = converse([[
      cli:expect_initialize()
      cli:expect_user()
      cli:system_init()
      cli.pending["bad_1"] = true
      cli:write_raw('{"type":"control_request","request_id":"bad_1","request":'
        .. '{"subtype":"can_use_tool","tool_name":"Bash","input":{"a":[1,,2]}}}')
      local body, err = cli:await_response("bad_1")
      assert(body == nil)
      -- then a request that decodes is answered as ever
      local d = cli:can_use_tool("Bash", { command = "ls" })
      cli:reply(err .. " | " .. d.behavior)
    ]], { can_use_tool = function() return true end })
    local text = msgs[#msgs].result
    assert.matches("^the control request cannot be decoded %(invalid JSON: .*%) | allow$",
      text)
    assert.equal(2, #answers(log))
    assert.equal(0, log.exit_code)
  end)

  it("a control_request with invalid UTF-8 is refused as not JSON; the session goes on",
    function()
      local msgs, log = converse([[
        cli:expect_initialize()
        cli:expect_user()
        cli:system_init()
        cli.pending["bad_2"] = true
        cli:write_raw('{"type":"control_request","request_id":"bad_2","request":'
          .. '{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"ls \255"}}}')
        local body, err = cli:await_response("bad_2")
        assert(body == nil, "a control request that is not UTF-8 was answered")
        local d = cli:can_use_tool("Bash", { command = "ls" })
        cli:reply(err .. " | " .. d.behavior)
      ]], { can_use_tool = function() return true end })
      assert.matches("^the control request cannot be decoded %(invalid JSON: invalid UTF%-8 in "
        .. "string at byte 126 %(found byte 0xFF%)%) | allow$", msgs[#msgs].result)
      assert.equal(2, #answers(log))
      assert.equal(0, log.exit_code)
    end)

  it("an undecodable control_response fails only that request; the session goes on",
    function()
      local opts, fake = testing.fake_cli([[
        cli:expect_initialize()
        local req = cli:expect_control("interrupt")
        cli:write_raw('{"type":"control_response","response":{"subtype":"success",'
          .. '"request_id":"' .. req.request_id .. '","response":{"x":[1,,2]}}}')
        cli:answer(cli:expect_control("set_model"))
        cli:expect_eof()
      ]])
      local s <close> = assert(claude.connect(opts))
      local r, err, kind = s:interrupt(T)
      assert.is_nil(r)
      assert.equal("json_decode", kind)
      assert.matches("answer to control request req_%S+ cannot be decoded", err.message)
      assert.truthy(s:set_model("opus", T))
      s:close()
      assert.equal(0, fake:read_log().exit_code)
    end)

  it("an undecodable line without a request id still ends the session", function()
    local _, err = run_failing([[
      cli:expect_initialize()
      cli:expect_user()
      cli:system_init()
      cli:write_raw('{"type":"assistant","message":{"content":[1,,2]}}')
      cli:sleep(30)
    ]])
    assert.equal("json_decode", err.kind)
  end)
end)

describe("a tool whose schema cannot be enforced", function()
  it("is refused when it is defined, at the caller's line", function()
    -- a reference nothing resolves (it is never fetched) fails closed, not open
    local ok, err = pcall(function()
      local t = claude.tool("t", "d", { type = "object", properties = {
        s = { ["$ref"] = "https://schemas.example.com/s.json" } } }, function() end)
      return t
    end)
    assert.is_false(ok)
    assert.matches("reliability_spec%.lua:%d+: .*https://schemas%.example%.com/s%.json", err)
  end)
end)
