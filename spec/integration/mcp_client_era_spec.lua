-- The era a stdio client ends up in, against spec/support/fake_mcp_server.lua: a server that
-- ignores the server/discover probe, one that exits on it, one that answers it too late
-- (all three legacy: initialize on time, the late answer dropped), and one of the modern
-- era whose results test the client's multi round-trip driver: the requestState sent back
-- exactly, rounds of state alone, the round limit, a missing or unknown resultType.
local claude = require "claude"
local json = require "claude.json"
local harness = require "support.harness"

local T = 10
local FAKE = harness.root .. "/spec/support/fake_mcp_server.lua"

local function fake(mode, extra)
  local o = { command = harness.claudelua, args = { FAKE, mode }, name = "fake",
    timeout = T }
  for k, v in pairs(extra or {}) do o[k] = v end
  return o
end

local function text(r) return r.content[1].text end

describe("claude.mcp's era over stdio", function()
  before_each(harness.before)
  after_each(harness.after)

  it("falls back to initialize when the probe is not answered in time", function()
    local problems = {}
    local c <close> = assert(claude.mcp.connect(fake("probe_silent", { probe_timeout = 0.2,
      on_error = function(e) problems[#problems + 1] = e end })))
    assert.equal("legacy", c.era)
    assert.equal("echo: x", text(assert(c:call_tool("echo", { message = "x" }))))
    assert.same({}, problems)
  end)

  it("drops the answer to a probe that came after its time", function()
    local problems = {}
    local c <close> = assert(claude.mcp.connect(fake("probe_late", { probe_timeout = 0.1,
      on_error = function(e) problems[#problems + 1] = e end })))
    assert.equal("legacy", c.era)
    assert.equal("echo: y", text(assert(c:call_tool("echo", { message = "y" }))))
    assert.same({}, problems) -- no "answered an id never sent"
  end)

  it("starts a server that exits on the probe again, for initialize", function()
    local states = {}
    local c <close> = assert(claude.mcp.connect(fake("probe_exit", {
      on_state = function(_, new) states[#states + 1] = new end, on_error = function() end })))
    assert.equal("legacy", c.era)
    assert.equal("connected", c.state)
    assert.equal(0, c.reconnects)
    assert.equal("echo: z", text(assert(c:call_tool("echo", { message = "z" }))))
  end)

  it("pinned to the legacy era, never probes", function()
    local c <close> = assert(claude.mcp.connect(fake("probe_exit", { protocol = "legacy" })))
    assert.equal("legacy", c.era)
    c:close()
    local pinned <close> = assert(claude.mcp.connect(fake("probe_silent",
      { protocol_version = "2025-06-18" })))
    assert.equal("2025-06-18", pinned.protocol_version)
  end)

  it("pinned to the modern era, refuses a legacy server", function()
    local c, err, kind = claude.mcp.connect(fake("", { protocol = "2026-07-28" }))
    assert.is_nil(c)
    assert.equal("protocol", kind)
    assert.matches("does not speak protocol revision 2026%-07%-28, which the client is "
      .. "pinned to", err.message)
  end)
end)

describe("claude.mcp's multi round-trip driver", function()
  before_each(harness.before)
  after_each(harness.after)

  it("sends the requestState back exactly, the answers with it, state alone after a pause",
    function()
    local asked = 0
    local c <close> = assert(claude.mcp.connect(fake("modern", { on_elicitation = function(p)
      asked = asked + 1
      assert.equal("Name?", p.message)
      return { action = "accept", content = { name = "Ada" } }
    end })))
    assert.equal("modern", c.era)
    assert.equal("fake-modern", c.server_info.name)
    local r = assert(c:call_tool("rounds", {}))
    -- the last round carried the state the server gave (byte for byte) and no answers
    assert.equal('state {"n": 2, "name": "Ada"} inputs null', text(r))
    assert.equal(1, asked)
  end)

  it("sends each round with the envelope and the original arguments", function()
    local c <close> = assert(claude.mcp.connect(fake("modern", { client_info = { name = "t",
      version = "1" } })))
    local p = json.decode(text(assert(c:call_tool("params", { a = 1 }))))
    assert.same({ a = 1 }, p.arguments)
    local meta = p._meta
    assert.equal("2026-07-28", meta["io.modelcontextprotocol/protocolVersion"])
    assert.same({ name = "t", version = "1" }, meta["io.modelcontextprotocol/clientInfo"])
    assert.is_table(meta["io.modelcontextprotocol/clientCapabilities"])
    assert.is_nil(meta["io.modelcontextprotocol/logLevel"])
  end)

  it("sends a log level set between calls with every call after it", function()
    local c <close> = assert(claude.mcp.connect(fake("modern")))
    local function level()
      local p = json.decode(text(assert(c:call_tool("params", { a = 1 }))))
      assert.same({ a = 1 }, p.arguments)
      return p._meta["io.modelcontextprotocol/logLevel"]
    end
    -- the second call of each level goes call_tool's shortest way (the envelope's JSON kept)
    assert.is_nil(level())
    assert.is_nil(level())
    assert.is_true(c:set_log_level("debug"))
    assert.equal("debug", level())
    assert.equal("debug", level())
    assert.is_true(c:set_log_level("error"))
    assert.equal("error", level())
    assert.equal("error", level())
    local other <close> = assert(claude.mcp.connect(fake("modern", { log_level = "info" })))
    local p = json.decode(text(assert(other:call_tool("params", {}))))
    assert.equal("info", p._meta["io.modelcontextprotocol/logLevel"])
    p = json.decode(text(assert(other:call_tool("params", {}))))
    assert.equal("info", p._meta["io.modelcontextprotocol/logLevel"])
    assert.equal("2026-07-28", p._meta["io.modelcontextprotocol/protocolVersion"])
  end)

  it("stops at max_input_rounds", function()
    local c <close> = assert(claude.mcp.connect(fake("modern", { max_input_rounds = 3 })))
    local r, err, kind = c:call_tool("forever", {})
    assert.is_nil(r)
    assert.equal("protocol", kind)
    assert.matches("input_required 4 times in a row; the client stops at 3 rounds", err.message)
  end)

  it("takes a result without resultType from a modern server as broken, and never retries",
    function()
    local c <close> = assert(claude.mcp.connect(fake("modern")))
    local r, err, kind = c:call_tool("no_type", {})
    assert.is_nil(r)
    assert.equal("protocol", kind)
    assert.matches("without resultType", err.message)
    r, err, kind = c:call_tool("odd_type", {})
    assert.is_nil(r)
    assert.equal("protocol", kind)
    assert.matches("resultType 'weird'", err.message)
    assert.equal("modern", c.era) -- the connection goes on
    assert(c:call_tool("params", {}))
  end)
end)

-- call_tool's usual way in the modern era: core.pending's reader checks the usual answer
-- (the usual result with "resultType":"complete") and leaves its resultType out; every other
-- answer is checked whole by the client, as a call with options is (fake_mcp_server's raw_*
-- tools write their lines as they are).
describe("claude.mcp's usual modern call", function()
  before_each(harness.before)
  after_each(harness.after)

  local RAW = { "usual", "type_first", "is_error", "spaced", "id_last", "extra", "no_type",
    "odd_type", "escaped_type", "input", "twice", "not_object", "error" }

  local function outcome(r, err, kind)
    return { result = r, message = err and err.message, kind = kind }
  end

  -- the outcome of tool `name` called the usual way, in a task (the reader wakes it) and
  -- outside one, and with options (not the usual way: the client checks the answer)
  local function three(c, name)
    local in_task
    claude.spawn(function() in_task = outcome(c:call_tool(name)) end):wait()
    return in_task, outcome(c:call_tool(name, {})), outcome(c:call_tool(name, {},
      { timeout = T }))
  end

  it("gives the usual complete result without its resultType", function()
    local c <close> = assert(claude.mcp.connect(fake("modern")))
    for _, name in ipairs { "raw_usual", "raw_type_first", "raw_spaced", "raw_id_last",
      "raw_twice", "raw_escaped_type" } do
      local in_task, outside, with_opts = three(c, name)
      local want = { content = { { type = "text", text = "raw" } } }
      if name == "raw_type_first" then want.isError = false end
      assert.same(want, in_task.result, name)
      assert.is_nil(in_task.result.resultType)
      assert.same(in_task, outside, name)
      assert.same(in_task, with_opts, name)
    end
    local r = assert(c:call_tool("raw_is_error"))
    assert.same({ content = { { type = "text", text = "raw" } }, isError = true }, r)
    r = assert(c:call_tool("raw_extra"))
    assert.same({ content = { { type = "text", text = "raw" } }, structuredContent = { n = 1 } },
      r)
  end)

  it("takes the usual shape without resultType, or with another, as before", function()
    local c <close> = assert(claude.mcp.connect(fake("modern")))
    local in_task = three(c, "raw_no_type")
    assert.is_nil(in_task.result)
    assert.equal("protocol", in_task.kind)
    assert.matches("without resultType", in_task.message)
    in_task = three(c, "raw_odd_type")
    assert.equal("protocol", in_task.kind)
    assert.matches("resultType 'weird'", in_task.message)
    in_task = three(c, "raw_not_object")
    assert.equal("protocol", in_task.kind)
    assert.matches("not an object", in_task.message)
    in_task = three(c, "raw_error")
    assert.equal("remote", in_task.kind)
    assert.matches("raw failure", in_task.message)
    assert.equal("modern", c.era)
  end)

  it("answers every raw shape the same way, usual or not, in a task or not", function()
    local c <close> = assert(claude.mcp.connect(fake("modern", { max_input_rounds = 1 })))
    for _, raw in ipairs(RAW) do
      local in_task, outside, with_opts = three(c, "raw_" .. raw)
      assert.same(with_opts, in_task, raw)
      assert.same(with_opts, outside, raw)
    end
    -- many in flight: each its own answer
    local tasks, results = {}, {}
    for i = 1, 80 do
      tasks[i] = claude.spawn(function() results[i] = outcome(c:call_tool("raw_usual")) end)
    end
    for i = 1, 80 do tasks[i]:wait() end
    for i = 1, 80 do
      assert.same({ content = { { type = "text", text = "raw" } } }, results[i].result)
    end
  end)
end)
