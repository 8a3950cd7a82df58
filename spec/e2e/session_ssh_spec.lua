-- The CLI on "another host": the REAL claude CLI started over OpenSSH (an sshd of this
-- spec's own on 127.0.0.1, spec/support/sshd.lua) by the `spawn` option and claude.ssh,
-- against the scripted Messages API. The rest of the e2e specs run over ssh too with
-- CLAUDELUA_E2E_SPAWN=ssh (ctest's e2e-ssh label); here, what only ssh has: variables
-- that reach the CLI without a command line, signals and closing that reach the remote
-- process, many sessions each with a CLI of its own.
-- Run: busted spec/e2e/session_ssh_spec.lua
local claude = require "claude"
local e2e = require "support.e2e"
local harness = require "support.harness"
local sshd = require "support.sshd"

local T = 30

local text = e2e.text
local use = e2e.use
local collect = harness.collect

local function result_of(msgs)
  for i = #msgs, 1, -1 do
    if msgs[i].type == "result" then return msgs[i] end
  end
end

local function alive(pid)
  return harness.sh("kill -0 " .. pid) == 0
end

local function wait_gone(pid, seconds)
  local deadline = claude.core.now() + seconds
  while claude.core.now() < deadline do
    if not alive(pid) then return true end
    claude.sleep(0.05)
  end
  return not alive(pid)
end

-- The CLI's process id on the host: its wrapper says it on stderr, which may come after
-- the first line on stdout.
local function remote_pid(proc)
  for _ = 1, 200 do
    if proc.remote_pid then return proc.remote_pid end
    claude.sleep(0.02)
  end
  return proc.remote_pid
end

local describe_ssh = sshd.available() and describe or pending

describe_ssh("a session whose CLI runs over ssh", function()
  -- one server for the file, started before the specs count their handles
  local server = sshd.start()
  local spawn = claude.ssh(server:ssh_options())

  before_each(harness.before)
  after_each(harness.after)

  local function options(mock, extra)
    local o = mock:options(extra)
    o.spawn = spawn
    return o
  end

  it("runs a tool, a hook and can_use_tool, and an interrupt, on the remote CLI", function()
    local mock <close> = e2e.start { turns = {
      { content = { use("mcp__calc__add", { a = 2, b = 3 }) } },
      { content = { text("sum: {{last_tool_result}}") } },
      { content = { text("A long story, told slowly.") }, chunks = 40, chunk_delay_ms = 150 },
      { content = { text("after: {{last_user_text}}") } },
    } }
    local seen = {}
    local calc = claude.server("calc", { claude.tool("add", "Add", { a = "number", b = "number" },
      function(a) return a.a + a.b end) })
    local s <close> = assert(claude.connect(options(mock, { mcp_servers = { calc = calc },
      include_partial_messages = true,
      can_use_tool = function(name) seen[#seen + 1] = "asked " .. name; return true end,
      hooks = { PreToolUse = function(i) seen[#seen + 1] = "hook " .. i.tool_name end } })))
    assert.is_number(s.proc.remote_pid)
    assert.equal(s.proc.remote_pid, s:server_info().pid) -- the CLI itself, not a shell
    assert(s:send("add"))
    assert.equal("sum: 5", result_of(collect(s:receive(T))).result)
    assert.same({ "hook mcp__calc__add", "asked mcp__calc__add" }, seen)
    assert(s:send("a story"))
    local interrupted = false
    for msg in s:receive(T) do
      if not interrupted and msg.type == "stream_event" then
        interrupted = true
        assert(s:interrupt(T))
      end
      if msg.type == "result" then assert.equal("error_during_execution", msg.subtype) end
    end
    assert(s:send("next"))
    assert.equal("after: next", result_of(collect(s:receive(T))).result)
  end)

  it("gives the CLI its variables on its input, never on a command line", function()
    local mock <close> = e2e.start { turns = {
      { content = { use("Bash", { command = "echo \"[$CLAUDELUA_SECRET_TOKEN]\"",
        description = "show" }) } },
      { content = { text("shell said {{last_tool_result}}") } },
    } }
    local secret = "s3cret-value-7731"
    local s <close> = assert(claude.connect(options(mock, { allowed_tools = { "Bash" },
      env = { CLAUDELUA_SECRET_TOKEN = secret } })))
    local _, ps = harness.sh("ps -eo args")
    assert.is_nil(ps:find(secret, 1, true))
    assert.is_nil(ps:find("dummy", 1, true)) -- ANTHROPIC_API_KEY's value neither
    assert(s:send("show it"))
    assert.equal("shell said [" .. secret .. "]", result_of(collect(s:receive(T))).result)
  end)

  it("hands a traced query's context to the remote CLI (TRACEPARENT over ssh)", function()
    local mock <close> = e2e.start { turns = {
      { content = { use("Bash", { command = "echo \"[$TRACEPARENT]\"", description = "show" }) } },
      { content = { text("shell said {{last_tool_result}}") } },
    } }
    local spans = {}
    assert(claude.trace.enable { schedule_delay = 0.05,
      exporter = function(batch) for _, sp in ipairs(batch) do spans[#spans + 1] = sp end end })
    local ok, err = pcall(function()
      local s <close> = assert(claude.connect(options(mock, { allowed_tools = { "Bash" } })))
      assert(s:send("show it"))
      local said = result_of(collect(s:receive(T))).result
      s:close()
      assert(claude.trace.flush(T))
      local query
      for _, sp in ipairs(spans) do if sp.name == "invoke_agent claude" then query = sp end end
      assert.truthy(query, "no query span")
      assert.equal("shell said [" .. query:traceparent() .. "]", said)
    end)
    claude.trace.shutdown(T)
    assert(ok, err)
  end)

  it("close mid-turn stops the remote CLI", function()
    local mock <close> = e2e.start { turns = {
      { delay_ms = 20000, content = { text("too late") } },
    } }
    local s = assert(claude.connect(options(mock)))
    local pid = s.proc.remote_pid
    assert.is_true(alive(pid))
    assert(s:send("go"))
    assert.equal("system", assert(s:next_message(T)).type)
    s:close(2)
    assert.is_true(wait_gone(pid, 10))
  end)

  it("signals reach the remote process group (the stop ladder's too)", function()
    local lines = {}
    local proc = assert(spawn { "/bin/sh", command = "/bin/sh", args = { "-c",
      "trap '' INT; echo started; exec sleep 60" }, env_changes = {}, cwd = "/",
      stdout = "lines", stderr = function(l) lines[#lines + 1] = l end })
    assert.equal("started", proc:read_line(T))
    local pid = assert(remote_pid(proc))
    assert.is_true(alive(pid))
    assert(proc:signal("term"))
    assert.is_true(wait_gone(pid, 10))
    local code = proc:wait(T)
    assert.is_true(code ~= 0)
    proc:close()
    -- and a command that ignores SIGTERM goes at the ladder's SIGKILL
    local stubborn = assert(spawn { "/bin/sh", command = "/bin/sh", args = { "-c",
      "trap '' TERM INT; echo started; while :; do sleep 1; done" }, env_changes = {},
      stdout = "lines", stderr = function() end })
    assert.equal("started", stubborn:read_line(T))
    local spid = assert(remote_pid(stubborn))
    stubborn:close { term_grace = 1, kill_grace = 1 }
    assert.is_true(wait_gone(spid, 10))
  end)

  it("many sessions in one process, each with a CLI of its own", function()
    local N = 3
    local mocks, results = {}, {}
    for i = 1, N do
      mocks[i] = e2e.start { turns = {
        { content = { text("answer " .. i .. ": {{last_user_text}}") } } } }
    end
    local tasks = {}
    for i = 1, N do
      tasks[i] = claude.spawn(function()
        local s <close> = assert(claude.connect(options(mocks[i])))
        assert(s:send("q" .. i))
        results[i] = { text = result_of(collect(s:receive(T))).result, pid = s.proc.remote_pid }
      end)
    end
    for i = 1, N do assert(tasks[i]:join(60)) end
    local pids = {}
    for i = 1, N do
      assert.equal("answer " .. i .. ": q" .. i, results[i].text)
      assert.is_nil(pids[results[i].pid])
      pids[results[i].pid] = true
      mocks[i]:stop()
    end
  end)

  it("a CLI that refuses to start says why over ssh too", function()
    local mock <close> = e2e.start { turns = { { content = { text("unused") } } } }
    local f = assert(io.open(mock.dir .. "/home/.claude/.claude.json", "wb"))
    f:write("{not json")
    f:close()
    local s, err, kind = claude.connect(options(mock))
    assert.is_nil(s)
    assert.equal("startup", kind, tostring(err))
    assert.equal("config_file_invalid", err.reason)
  end)

  it("an unreachable host is a connection-time error naming ssh", function()
    local mock <close> = e2e.start { turns = { { content = { text("unused") } } } }
    local opts = mock:options()
    local bad = server:ssh_options()
    bad.port = 1
    bad.connect_timeout = 5
    opts.spawn = claude.ssh(bad)
    local s, err = claude.connect(opts)
    assert.is_nil(s)
    assert.equal("process", err.kind)
    assert.equal(255, err.exit_code) -- ssh's own failure
    assert.matches("Connection refused", err.stderr_tail, 1, true)
  end)

  teardown(function() server:stop() end)
end)
