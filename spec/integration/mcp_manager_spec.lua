-- claude.mcp.manager: stdio servers (the fake one), in-process servers and
-- a server that cannot start, side by side.
local claude = require "claude"
local harness = require "support.harness"

local T = 10
local FAKE = harness.root .. "/spec/support/fake_mcp_server.lua"

local function fake(extra)
  local o = { command = harness.claudelua, args = { FAKE }, timeout = T }
  for k, v in pairs(extra or {}) do o[k] = v end
  return o
end

local function text(r) return r.content[1].text end

local calc = claude.server("calc", {
  claude.tool("add", "Add", { a = "number", b = "number" }, function(a) return a.a + a.b end),
})

describe("claude.mcp.manager", function()
  before_each(harness.before)
  after_each(harness.after)

  it("connects every server concurrently; a broken one does not stop the others", function()
    local states = {}
    local m <close> = claude.mcp.manager({
      one = fake(), two = fake(), calc = calc, broken = { command = "/no/such/server" },
    }, { on_state = function(name, _, new) states[name] = new end })
    local st = m:status()
    assert.equal("connected", st.one.state)
    assert.equal("connected", st.two.state)
    assert.equal("connected", st.calc.state)
    assert.equal("in-process", st.calc.kind)
    assert.equal("in-process", st.calc.era)
    assert.equal("legacy", st.one.era) -- the fake speaks the legacy era only
    assert.equal("2025-11-25", st.one.protocol_version)
    assert.equal("disconnected", st.broken.state)
    assert.equal("connection", st.broken.error.kind)
    assert.equal("connected", states.one)
    assert.equal("echo: 1", text(assert(m:call_tool("one", "echo", { message = 1 }))))
    assert.equal("3", text(assert(m:call_tool("calc", "add", { a = 1, b = 2 }))))
    local r, _, kind = m:call_tool("broken", "echo", {})
    assert.is_nil(r)
    assert.equal("connection", kind)
    r, _, kind = m:call_tool("nobody", "echo", {})
    assert.is_nil(r)
    assert.equal("not_found", kind)
  end)

  it("lists the tools of every server and pings them all", function()
    local m <close> = claude.mcp.manager { one = fake(), calc = calc }
    local tools, failed = m:list_tools()
    assert.same({}, failed)
    assert.equal("calc", tools[1].server)
    assert.equal("add", tools[1].name)
    assert.equal("one", tools[2].server)
    assert.equal(16, #tools) -- calc.add, and the fake server's 15
    assert.is_true(m:ping_all())
    local st = m:status()
    assert.is_true(st.one.healthy)
    assert.is_number(st.one.latency)
  end)

  it("marks a server whose process died unhealthy, the others stay healthy", function()
    local m <close> = claude.mcp.manager { one = fake { max_retries = 0 }, two = fake() }
    assert.is_nil(m:call_tool("one", "exit", {}))
    assert.is_false(m:ping_all())
    local st = m:status()
    assert.is_false(st.one.healthy)
    assert.equal(3, st.one.error.exit_code)
    assert.is_true(st.two.healthy)
  end)

  it("adds, removes and closes servers", function()
    local m = claude.mcp.manager {}
    assert.is_true(m:add("one", fake()))
    local c = assert(m:client("one"))
    assert.is_true(m:remove("one"))
    assert.equal("disconnected", c.state)
    local ok, err = m:add("bad", { command = "/no/such" })
    assert.is_nil(ok)
    assert.equal("connection", err.kind)
    m:add("two", fake())
    local two = assert(m:client("two"))
    m:close()
    assert.equal("disconnected", two.state)
  end)

  it("raises for misuse at the caller's line", function()
    local ok, err = pcall(function()
      local m = claude.mcp.manager({ one = 42 })
      return m
    end)
    assert.is_false(ok)
    assert.matches("mcp_manager_spec.lua:%d+: bad argument #1 to 'manager' %(entry 'one'", err)
    ok, err = pcall(function()
      local m = claude.mcp.manager({ one = { command = "x", bogus = 1 } })
      return m
    end)
    assert.is_false(ok)
    assert.matches("mcp_manager_spec.lua:%d+: unknown field 'bogus' to 'manager'", err)
    -- its options and as_server's in the one wording, with the hint
    ok, err = pcall(function()
      local m = claude.mcp.manager({}, { timout = 1 })
      return m
    end)
    assert.is_false(ok)
    assert.matches("mcp_manager_spec.lua:%d+: unknown field 'timout' to 'manager' %(did you "
      .. "mean 'timeout'%?%)", err)
    local c <close> = assert(claude.mcp.connect(fake()))
    ok, err = pcall(c.as_server, c, { filtr = {} })
    assert.is_false(ok)
    assert.matches("unknown field 'filtr' to 'as_server' %(did you mean 'filter'%?%)", err)
  end)
end)
