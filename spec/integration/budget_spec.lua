-- Tool budgets end to end against the fake CLI: a tool that spins, one that allocates
-- without end, one that runs too many instructions and one that sleeps past its time are
-- each answered with an isError result naming the budget, while other calls go on; the
-- levels (tool, server, session) and `false`; the defaults (run 1 s, memory 256 MiB), what
-- they leave alone, and how each level turns them off; SIGINT and SIGTERM reaching a tool
-- that holds the loop in the claudelua host and in `claudelua mcp`.
-- Run: busted spec/integration/budget_spec.lua
local claude = require "claude"
local core = require "claude.core"
local testing = require "claude.testing"
local harness = require "support.harness"

local T = 30 -- seconds; only a guard against hangs

local function converse(script, options)
  local opts, fake = testing.fake_cli(script)
  local s <close> = assert(claude.connect(testing.merge(opts, options)))
  assert(s:send("go"))
  local msgs = harness.collect(s:receive(T))
  s:close()
  return msgs, fake:read_log()
end

-- (the tools stopped for memory and instructions get a `run` a loaded machine cannot
-- exceed before their own limit: the default 1 s is wall time, and under load a second
-- can pass before 8 MiB are allocated)
local function tools(server_opts)
  return claude.server("b", {
    claude.tool("spin", "Spins", function() while true do end end, { budget = { run = 0.2 } }),
    claude.tool("alloc", "Allocates", function()
      local t = {}
      while true do t[#t + 1] = string.rep("x", 1000) .. #t end
    end, { budget = { memory = 8 * 1024 * 1024, run = 30 } }),
    claude.tool("count", "Counts", function()
      local n = 0
      for i = 1, 1e12 do n = n + i end
      return n
    end, { budget = { instructions = 1e6, run = 30 } }),
    claude.tool("nap", "Sleeps", function()
      claude.sleep(60)
      return "woke"
    end, { budget = { seconds = 0.3 } }),
    claude.tool("add", "Adds", { a = "number", b = "number" },
      function(a) return a.a + a.b end),
  }, server_opts)
end

-- A script that calls `names` in order on server b and reports the texts.
local CALLS = [[
  cli:expect_initialize()
  cli:expect_user()
  cli:system_init()
  cli:mcp_connect("b")
  local out = {}
  for _, name in ipairs({ %s }) do
    local args = name == "add" and { a = 1, b = 2 } or {}
    local r = assert(cli:call_tool("b", name, args))
    out[#out + 1] = name .. "=" .. (r.isError and "error:" or "") .. r.content[1].text
  end
  cli:reply(table.concat(out, "\n"))
]]

describe("tool budgets against the fake CLI", function()
  before_each(harness.before)
  after_each(function()
    testing.cleanup()
    harness.after()
  end)

  it("stop a spinning, an allocating, a counting and a sleeping tool; others go on",
    function()
      local msgs = converse(string.format(CALLS,
        '"add", "spin", "add", "alloc", "add", "count", "add", "nap", "add"'),
        { mcp_servers = { b = tools() } })
      local lines = {}
      for l in msgs[#msgs].result:gmatch("[^\n]+") do lines[#lines + 1] = l end
      assert.equal(9, #lines)
      for _, i in ipairs({ 1, 3, 5, 7, 9 }) do assert.equal("add=3", lines[i]) end
      assert.matches("^spin=error:Tool 'spin' was stopped: .*budget 'run' exceeded", lines[2])
      assert.matches("^alloc=error:Tool 'alloc' was stopped: .*budget 'memory' exceeded",
        lines[4])
      assert.matches("^count=error:Tool 'count' was stopped: .*budget 'instructions' exceeded",
        lines[6])
      assert.matches("^nap=error:Tool 'nap' was stopped: .*budget 'seconds' exceeded",
        lines[8])
      assert.equal(0, core.budget_current())
    end)

  it("while a tool sleeps toward its time budget, other calls are answered", function()
    local msgs = converse([[
      cli:expect_initialize()
      cli:expect_user()
      cli:system_init()
      cli:mcp_connect("b")
      local id = cli:send_request("mcp_message", { server_name = "b", message = {
        jsonrpc = "2.0", id = 50, method = "tools/call",
        params = { name = "nap", arguments = {} } } })
      local r = assert(cli:call_tool("b", "add", { a = 2, b = 3 }))
      local body = assert(cli:await_response(id))
      cli:reply(r.content[1].text .. " then " .. body.mcp_response.result.content[1].text)
    ]], { mcp_servers = { b = tools() } })
    assert.matches("^5 then Tool 'nap' was stopped", msgs[#msgs].result)
  end)

  it("take each field from the tool, then the server, then the session; false is off",
    function()
      local server = claude.server("b", {
        claude.tool("spin", "Spins", function()
          local n = 0
          for i = 1, 3e6 do n = n + i end
          return "done"
        end),
        claude.tool("free", "Free", function()
          local n = 0
          for i = 1, 3e6 do n = n + i end
          return "done"
        end, { budget = { instructions = false } }),
      }, { budget = { instructions = 1e6 } })
      local msgs = converse(string.format(CALLS, '"spin", "free"'),
        { mcp_servers = { b = server }, tool_budget = { instructions = 1e9 } })
      local text = msgs[#msgs].result
      assert.matches("spin=error:Tool 'spin' was stopped: .*'instructions'", text)
      assert.matches("free=done", text, 1, true)
      -- the session's level alone
      msgs = converse(string.format(CALLS, '"spin"'), { mcp_servers = { b = claude.server("b", {
        claude.tool("spin", "Spins", function()
          local n = 0
          for i = 1, 3e6 do n = n + i end
          return "done"
        end) }) }, tool_budget = { instructions = 1e6 } })
      assert.matches("'instructions'", msgs[#msgs].result)
    end)

  it("refuses a malformed budget at the caller's line", function()
    for _, b in ipairs({ { run = 0 }, { run = "1" }, { wall = 1 }, 5 }) do
      local ok, err = pcall(function()
        local t = claude.tool("t", "d", function() end, { budget = b })
        return t
      end)
      assert.is_false(ok)
      assert.matches("budget_spec%.lua:%d+: bad budget for tool 't'", err)
    end
    local ok, err = pcall(function()
      local s = claude.server("s", {}, { budget = { memory = -1 } })
      return s
    end)
    assert.is_false(ok)
    assert.matches("bad budget for server 's'", err)
  end)
end)

describe("the default tool budgets (run 1 s, memory 256 MiB)", function()
  before_each(harness.before)
  after_each(function()
    testing.cleanup()
    harness.after()
  end)

  local function busy(seconds)
    local t = core.now() + seconds
    while core.now() < t do end
  end

  it("stop a spinning tool that has no budget of its own, and the other call is answered",
    function()
      local server = claude.server("b", {
        claude.tool("spin", "Spins", function() while true do end end),
        claude.tool("add", "Adds", { a = "number", b = "number" },
          function(a) return a.a + a.b end),
      })
      local msgs = converse([[
        cli:expect_initialize()
        cli:expect_user()
        cli:system_init()
        cli:mcp_connect("b")
        local id = cli:send_request("mcp_message", { server_name = "b", message = {
          jsonrpc = "2.0", id = 50, method = "tools/call",
          params = { name = "spin", arguments = {} } } })
        local r = assert(cli:call_tool("b", "add", { a = 2, b = 3 }))
        local spin = assert(cli:await_response(id)).mcp_response.result
        cli:reply(r.content[1].text .. " " .. tostring(spin.isError) .. " "
          .. spin.content[1].text)
      ]], { mcp_servers = { b = server } })
      assert.matches("^5 true Tool 'spin' was stopped: it held the event loop too long "
        .. "without yielding %(budget 'run' exceeded%)%.$", msgs[#msgs].result)
      assert.equal(0, core.budget_current())
    end)

  it("stop a tool that allocates without end", function()
    local server = claude.server("b", {
      claude.tool("hoard", "Allocates", function()
        local t = {}
        while true do
          t[#t + 1] = string.rep("x", 1024 * 1024) .. #t
          claude.sleep(0) -- yields: `run` never bites, however slow the build
        end
      end),
      claude.tool("add", "Adds", { a = "number", b = "number" },
        function(a) return a.a + a.b end),
    })
    local msgs = converse(string.format(CALLS, '"hoard", "add"'),
      { mcp_servers = { b = server } })
    local text = msgs[#msgs].result
    assert.matches("hoard=error:Tool 'hoard' was stopped: it allocated more memory than its "
      .. "budget %(budget 'memory' exceeded%)", text)
    assert.matches("add=3", text, 1, true)
    collectgarbage()
  end)

  it("leave alone a tool that waits longer than `run` in all", function()
    local server = claude.server("b", {
      claude.tool("naps", "Naps", function()
        for _ = 1, 3 do claude.sleep(0.4) end -- 1.2 s, the loop free all along
        return "rested"
      end),
    })
    local msgs = converse(string.format(CALLS, '"naps"'), { mcp_servers = { b = server } })
    assert.equal("naps=rested", msgs[#msgs].result)
  end)

  it("count `run` per stretch: 0.6 s busy, a yield, 0.6 s busy is not stopped", function()
    local server = claude.server("b", {
      claude.tool("twice", "Busy twice", function()
        busy(0.6)
        claude.sleep(0) -- gives the loop back: a new stretch
        busy(0.6)
        return "done"
      end),
    })
    local msgs = converse(string.format(CALLS, '"twice"'), { mcp_servers = { b = server } })
    assert.equal("twice=done", msgs[#msgs].result)
  end)

  -- { level, the server's options, the tool's options, the session's options }
  local offs = {
    { "the tool", nil, { budget = { run = false } }, nil },
    { "the server", { budget = false }, nil, nil },
    { "the session (tool_budget)", nil, nil, { tool_budget = false } },
  }
  for _, row in ipairs(offs) do
    it("turn off with false at " .. row[1], function()
      local server = claude.server("b", {
        claude.tool("busy", "Busy", function()
          busy(1.2)
          return "done"
        end, row[3]),
      }, row[2])
      local options = { mcp_servers = { b = server } }
      for k, v in pairs(row[4] or {}) do options[k] = v end
      local msgs = converse(string.format(CALLS, '"busy"'), options)
      assert.equal("busy=done", msgs[#msgs].result)
    end)
  end
end)

-- `claudelua mcp` calls tools through the same router: the defaults hold over stdio and
-- HTTP, and a server's or a tool's `budget` turns them off (there is no session there).
describe("the default tool budgets in claudelua mcp", function()
  local process = require "claude.process"
  local json = require "claude.json"

  -- servers "d" (spin: no budget; busy: budget = false) and "off" (budget = false: busy)
  local TOOLS = [[
    local claude = require "claude"
    local function busy()
      local t = claude.core.now() + 1.2
      while claude.core.now() < t do end
      return "done"
    end
    return {
      claude.server("d", {
        claude.tool("spin", "Spins", function() while true do end end),
        claude.tool("busy", "Busy", busy, { budget = false }),
      }),
      claude.server("off", { claude.tool("busy", "Busy", busy) }, { budget = false }),
    }
  ]]

  local function call(id, name)
    return { jsonrpc = "2.0", id = id, method = "tools/call",
      params = { name = name, arguments = json.object() } }
  end

  it("over stdio: run stops a spinning tool; a tool's budget = false lets a busy one finish",
    function()
      local path = harness.tempfile(TOOLS, ".lua")
      local p <close> = assert(process.spawn { harness.claudelua,
        args = { "mcp", "--server", "d", path }, stdout = "json", stderr = "collect" })
      p:write_json { jsonrpc = "2.0", id = 0, method = "initialize", params = {
        protocolVersion = "2025-06-18", capabilities = {},
        clientInfo = { name = "spec", version = "1" } } }
      assert.equal(0, p:read_line(T).id)
      p:write_json(call(1, "spin"))
      local r = p:read_line(T)
      assert.equal(1, r.id)
      assert.is_true(r.result.isError)
      assert.matches("budget 'run' exceeded", r.result.content[1].text, 1, true)
      p:write_json(call(2, "busy"))
      r = p:read_line(T)
      assert.same({ 2, "done" }, { r.id, r.result.content[1].text })
      p:close_stdin()
      assert.same({ 0, 0 }, { p:wait(T) })
      os.remove(path)
    end)

  it("over HTTP: run stops a spinning tool; a server's budget = false lets a busy one finish",
    function()
      local mcp_http = require "support.mcp_http"
      local path = harness.tempfile(TOOLS, ".lua")
      local server <close>, url = mcp_http.start { "--stateless", path }
      local function post(at, body)
        local c <close> = assert(process.spawn { "curl", args = { "-s", "--max-time", "20",
          "-H", "Content-Type: application/json",
          "-H", "Accept: application/json, text/event-stream",
          "--data-binary", json.encode(body), at }, stderr = "collect" })
        local lines = {}
        for line in c:lines(T) do lines[#lines + 1] = line end
        c:wait(T)
        -- a JSON answer, or the data line of an SSE one
        local text = table.concat(lines, "\n")
        return json.decode(text:match("^data: (.*)$") or text:match("\ndata: ([^\n]*)") or text)
      end
      local r = post(url .. "/d", call(1, "spin"))
      assert.is_true(r.result.isError)
      assert.matches("budget 'run' exceeded", r.result.content[1].text, 1, true)
      r = post(url .. "/off", call(2, "busy"))
      assert.equal("done", r.result.content[1].text)
      assert.is_true(server:signal("term"))
      assert.same({ 0, 0 }, { server:wait(T) })
      os.remove(path)
    end)
end)

-- Signals reach Lua that holds the loop (a tool with `run = false` that spins, a spin at
-- the top level): SIGINT interrupts it as in lua.c and the host exits 130; `claudelua mcp`
-- stops on SIGINT and SIGTERM. Readiness is a line the spinning code writes, never a delay.
describe("signals and Lua that holds the loop in the claudelua host", function()
  local process = require "claude.process"

  local function host(script, stdout)
    local path = harness.tempfile(script, ".lua")
    local p = assert(process.spawn { harness.claudelua, args = { path }, stderr = "collect",
      stdout = stdout })
    return p, path
  end

  -- A session whose tool `spin` (budget `tool_budget`) writes "spinning" and spins.
  local SESSION = [[
    local claude = require "claude"
    local testing = require "claude.testing"
    local opts = testing.fake_cli([=[
      cli:expect_initialize()
      cli:expect_user()
      cli:system_init()
      cli:mcp_connect("b")
      cli:call_tool("b", "spin", {})
      cli:drain()
    ]=])
    opts.mcp_servers = { b = claude.server("b", {
      claude.tool("spin", "Spins", function()
        print("spinning")
        io.stdout:flush()
        while true do end
      end) }) }
    opts.tool_budget = %s
    for _ in claude.query("go", opts) do end
  ]]

  it("SIGINT interrupts a tool that spins with run = false; the host exits 130", function()
    local p <close>, path = host(string.format(SESSION, "{ run = false }"))
    assert.equal("spinning", p:read_line(T))
    assert.is_true(p:signal("int"))
    assert.same({ 130, 0 }, { p:wait(T) })
    assert.matches("tool 'spin' failed: [^\n]*interrupted", p:stderr())
    assert.matches("claudelua: interrupted", p:stderr(), 1, true)
    os.remove(path)
  end)

  it("SIGINT interrupts a spin at the top level, as lua does", function()
    local p <close>, path = host([[
      print("spinning")
      io.stdout:flush()
      while true do end
    ]])
    assert.equal("spinning", p:read_line(T))
    assert.is_true(p:signal("int"))
    assert.same({ 130, 0 }, { p:wait(T) })
    assert.matches("claudelua: interrupted", p:stderr(), 1, true)
    os.remove(path)
  end)

  -- the loop never sees the signal: the watchdog ends the process a second after it came
  -- (or a second SIGINT, at once)
  for _, twice in ipairs({ false, true }) do
    it("a host whose Lua catches the interrupt ends on " .. (twice and "a second SIGINT"
      or "the first SIGINT all the same"), function()
      local p <close>, path = host([[
        while true do
          local _, err = pcall(function()
            print("spinning")
            io.stdout:flush()
            while true do end
          end)
          print("caught: " .. tostring(err))
          io.stdout:flush()
        end
      ]])
      assert.equal("spinning", p:read_line(T))
      assert.is_true(p:signal("int"))
      if twice then assert.is_true(p:signal("int")) end
      assert.same({ 130, 0 }, { p:wait(T) })
      if not twice then
        assert.matches("^caught: .*interrupted$", p:read_line(T))
        assert.matches("SIGINT: the Lua code holding the loop could not be interrupted",
          p:stderr(), 1, true)
      end
      os.remove(path)
    end)
  end

  it("SIGINT stops the host while a tool spins under the default budget", function()
    local p <close>, path = host(string.format(SESSION, "nil"))
    assert.equal("spinning", p:read_line(T))
    assert.is_true(p:signal("int"))
    assert.same({ 130, 0 }, { p:wait(T) })
    assert.matches("claudelua: interrupted", p:stderr(), 1, true)
    os.remove(path)
  end)

  -- A tools file whose tool `spin` writes "spinning" to stderr and spins, run budget off.
  local TOOLS = [[
    local claude = require "claude"
    return claude.server("s", {
      claude.tool("spin", "Spins", function()
        io.stderr:write("spinning\n")
        io.stderr:flush()
        while true do end
      end, { budget = { run = false } }),
    })
  ]]

  local function mcp_stdio()
    local path = harness.tempfile(TOOLS, ".lua")
    local p = assert(process.spawn { harness.claudelua, args = { "mcp", path },
      stdout = "json", stderr = "lines" })
    p:write_json { jsonrpc = "2.0", id = 0, method = "initialize", params = {
      protocolVersion = "2025-06-18", capabilities = {},
      clientInfo = { name = "spec", version = "1" } } }
    assert.equal(0, p:read_line(T).id)
    p:write_json { jsonrpc = "2.0", method = "notifications/initialized" }
    p:write_json { jsonrpc = "2.0", id = 1, method = "tools/call",
      params = { name = "spin", arguments = {} } }
    assert.equal("spinning", p:read_stderr_line(T))
    return p, path
  end

  -- { signal, exit code }
  for _, row in ipairs({ { "int", 130 }, { "term", 0 } }) do
    it("claudelua mcp (stdio) stops on SIG" .. row[1]:upper() .. " while a tool spins",
      function()
        local p <close>, path = mcp_stdio()
        assert.is_true(p:signal(row[1]))
        -- the spinning call is answered (interrupted) or dropped; then stdout ends
        local msg = p:read_line(T)
        if msg then
          assert.equal(1, msg.id)
          assert.is_true(msg.result.isError)
        end
        assert.same({ row[2], 0 }, { p:wait(T) })
        os.remove(path)
      end)
  end

  it("claudelua mcp --http stops on SIGTERM while a tool spins", function()
    local mcp_http = require "support.mcp_http"
    local json = require "claude.json"
    local path = harness.tempfile(TOOLS, ".lua")
    local server <close>, url, stderr = mcp_http.start { "--stateless", path }
    local curl <close> = assert(process.spawn { "curl", args = { "-s", "--max-time", "20",
      "-H", "Content-Type: application/json", "-H", "Accept: application/json, text/event-stream",
      "--data-binary", json.encode { jsonrpc = "2.0", id = 1, method = "tools/call",
        params = { name = "spin", arguments = json.object() } }, url }, stderr = "collect" })
    local spinning = false
    for _ = 1, T * 100 do
      for _, l in ipairs(stderr) do spinning = spinning or l == "spinning" end
      if spinning then break end
      claude.sleep(0.01)
    end
    assert.is_true(spinning)
    assert.is_true(server:signal("term"))
    assert.same({ 0, 0 }, { server:wait(T) })
    curl:wait(T)
    os.remove(path)
  end)
end)

-- Where Lua turns hooks off (a `__gc` metamethod, the message handler of an error a hook
-- raised), `claudelua mcp` still stops the call or, when nothing in the process can, exits so
-- that a supervisor restarts it; the first SIGTERM or SIGINT always ends it. Before the fix
-- each of these hung. Readiness is a line the tool writes, never a delay.
describe("tools that hold the loop where Lua turns hooks off", function()
  local process = require "claude.process"
  local json = require "claude.json"

  local TOOLS = [[
    local claude = require "claude"
    local function ready()
      io.stderr:write("spinning\n")
      io.stderr:flush()
    end
    return claude.server("h", {
      -- the budget's error is raised in the handler: Lua would call it again, hooks off
      claude.tool("handler", "Spins in its message handler", function()
        return xpcall(function() error("x") end, function() while true do end end)
      end),
      -- a finalizer that spins and allocates now and then (too little for `memory`), run
      -- by the tool's own full collection
      claude.tool("gc", "Spins in __gc, allocating", function()
        setmetatable({}, { __gc = function()
          local t, i = {}, 0
          while true do
            i = i + 1
            if i % 100000 == 0 then t[#t % 64 + 1] = { "garbage" } end
          end
        end })
        collectgarbage()
        return "survived"
      end),
      -- a finalizer that spins without allocating: nothing in the process can stop it
      claude.tool("gcspin", "Spins in __gc", function()
        setmetatable({}, { __gc = function() ready() while true do end end })
        collectgarbage()
        return "survived"
      end),
      claude.tool("add", "Adds", { a = "number", b = "number" },
        function(a) return a.a + a.b end),
    })
  ]]

  local function call(id, name, args)
    return { jsonrpc = "2.0", id = id, method = "tools/call",
      params = { name = name, arguments = args or json.object() } }
  end

  local function stdio(...)
    local path = harness.tempfile(TOOLS, ".lua")
    local args = { "mcp" }
    for _, a in ipairs({ ... }) do args[#args + 1] = a end
    args[#args + 1] = path
    local p = assert(process.spawn { harness.claudelua, args = args, stdout = "json",
      stderr = "lines" })
    p:write_json { jsonrpc = "2.0", id = 0, method = "initialize", params = {
      protocolVersion = "2025-06-18", capabilities = {},
      clientInfo = { name = "spec", version = "1" } } }
    assert.equal(0, p:read_line(T).id)
    p:write_json { jsonrpc = "2.0", method = "notifications/initialized" }
    return p, path
  end

  local function wait_spinning(p)
    for _ = 1, 100 do
      local line = p:read_stderr_line(T)
      if line == nil or line == "spinning" then return line end
    end
  end

  it("over stdio: the handler and the allocating __gc are stopped, the server goes on, "
    .. "SIGTERM stops it", function()
    local p <close>, path = stdio()
    for id, name in ipairs({ "handler", "gc" }) do
      p:write_json(call(id, name))
      local r = p:read_line(T)
      assert.equal(id, r.id)
      assert.is_true(r.result.isError)
      assert.matches("budget 'run' exceeded", r.result.content[1].text, 1, true)
    end
    p:write_json(call(3, "add", { a = 1, b = 2 }))
    local r = p:read_line(T)
    assert.same({ 3, "3" }, { r.id, r.result.content[1].text })
    assert.is_true(p:signal("term"))
    assert.same({ 0, 0 }, { p:wait(T) })
    os.remove(path)
  end)

  for _, row in ipairs({ { "term", 143 }, { "int", 130 } }) do
    it("over stdio: the first SIG" .. row[1]:upper() .. " ends a server whose __gc spins",
      function()
        local p <close>, path = stdio("--stuck-exit", "0")
        p:write_json(call(1, "gcspin"))
        assert.equal("spinning", wait_spinning(p))
        assert.is_true(p:signal(row[1]))
        assert.same({ row[2], 0 }, { p:wait(T) })
        os.remove(path)
      end)
  end

  it("over stdio: a __gc that spins ends the server after --stuck-exit seconds, saying why",
    function()
      local p <close>, path = stdio("--stuck-exit", "0.5")
      p:write_json(call(1, "gcspin"))
      assert.equal("spinning", wait_spinning(p))
      assert.same({ 70, 0 }, { p:wait(T) })
      local said = p:read_stderr_line(T) or ""
      assert.matches("claudelua mcp: a budgeted call held the loop", said, 1, true)
      os.remove(path)
    end)

  it("over stdio: initialize and a call whose __gc spins in one write: the initialize "
    .. "answer leaves before the stuck exit (issue 34, item 6)", function()
      local path = harness.tempfile(TOOLS, ".lua")
      local p <close> = assert(process.spawn { harness.claudelua, stdout = "json",
        args = { "mcp", "--stuck-exit", "0.5", path }, stderr = "lines" })
      p:write(json.encode { jsonrpc = "2.0", id = 0, method = "initialize", params = {
        protocolVersion = "2025-06-18", capabilities = {},
        clientInfo = { name = "spec", version = "1" } } } .. "\n"
        .. json.encode(call(1, "gcspin")) .. "\n")
      assert.same({ 70, 0 }, { p:wait(T) })
      local first = p:read_line(T)
      assert(first, "no initialize answer before the stuck exit")
      assert.equal(0, first.id)
      assert.is_table(first.result.serverInfo)
      os.remove(path)
    end)

  it("over HTTP: the handler is stopped, the server goes on; the first SIGTERM ends it "
    .. "while a __gc spins", function()
    local mcp_http = require "support.mcp_http"
    local path = harness.tempfile(TOOLS, ".lua")
    local server <close>, url, stderr = mcp_http.start { "--stateless", "--stuck-exit", "0",
      path }
    local function post(body)
      return assert(process.spawn { "curl", args = { "-s", "--max-time", "60",
        "-H", "Content-Type: application/json",
        "-H", "Accept: application/json, text/event-stream",
        "--data-binary", json.encode(body), url }, stderr = "collect" })
    end
    local function answer(c)
      local lines = {}
      for line in c:lines(T) do lines[#lines + 1] = line end
      c:wait(T)
      local text = table.concat(lines, "\n")
      return json.decode(text:match("^data: (.*)$") or text:match("\ndata: ([^\n]*)") or text)
    end
    local c <close> = post(call(1, "handler"))
    local r = answer(c)
    assert.is_true(r.result.isError)
    assert.matches("budget 'run' exceeded", r.result.content[1].text, 1, true)
    local c2 <close> = post(call(2, "add", { a = 2, b = 3 }))
    assert.equal("5", answer(c2).result.content[1].text)
    local c3 <close> = post(call(3, "gcspin"))
    local spinning = false
    for _ = 1, T * 100 do
      for _, l in ipairs(stderr) do spinning = spinning or l == "spinning" end
      if spinning then break end
      claude.sleep(0.01)
    end
    assert.is_true(spinning)
    assert.is_true(server:signal("term"))
    assert.same({ 143, 0 }, { server:wait(T) })
    c3:wait(T)
    os.remove(path)
  end)

  it("in the claudelua host, the first SIGINT ends a script whose __gc spins", function()
    local path = harness.tempfile([[
      setmetatable({}, { __gc = function()
        print("spinning")
        io.stdout:flush()
        while true do end
      end })
      collectgarbage()
    ]], ".lua")
    local p <close> = assert(process.spawn { harness.claudelua, args = { path },
      stderr = "collect" })
    assert.equal("spinning", p:read_line(T))
    assert.is_true(p:signal("int"))
    assert.same({ 130, 0 }, { p:wait(T) })
    assert.matches("could not be interrupted", p:stderr(), 1, true)
    os.remove(path)
  end)

  it("in the claudelua host, SIGINT ends a script whose message handler spins", function()
    local path = harness.tempfile([[
      print(xpcall(error, function()
        print("spinning")
        io.stdout:flush()
        while true do end
      end))
    ]], ".lua")
    local p <close> = assert(process.spawn { harness.claudelua, args = { path },
      stderr = "collect" })
    assert.equal("spinning", p:read_line(T))
    assert.is_true(p:signal("int"))
    assert.same({ 130, 0 }, { p:wait(T) })
    os.remove(path)
  end)
end)
