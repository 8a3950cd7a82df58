-- claude.mcp's client checks structured results against the tools' outputSchema
-- (spec/support/fake_mcp_output_server.lua), and hands the tool descriptions on unchanged.
local claude = require "claude"
local json = require "claude.json"
local harness = require "support.harness"

local FAKE = harness.root .. "/spec/support/fake_mcp_output_server.lua"

local function connect()
  return assert(claude.mcp.connect { command = harness.claudelua, args = { FAKE },
    name = "outputs", timeout = 10, on_error = function() end })
end

describe("claude.mcp client output validation", function()
  before_each(harness.before)
  after_each(harness.after)

  it("hands the listed tools on as the server sent them", function()
    local c <close> = connect()
    local tools = assert(c:list_tools())
    local sent = json.decode(assert(io.open(FAKE)):read("a"):match("local TOOLS = %[=%[(.-)%]=%]"))
    assert.same(sent, tools)
    assert.same({ kept = { 1, 2, 3 } }, tools[5].outputSchema["x-extension"])
  end)

  it("returns a result that matches, refuses one that does not", function()
    local c <close> = connect()
    assert(c:list_tools())
    assert.same({ temp = 21.5 }, assert(c:call_tool("good")).structuredContent)
    local r, err, kind = c:call_tool("bad")
    assert.is_nil(r)
    assert.equal("validation", kind)
    assert.matches("tool 'bad' that does not match its outputSchema: temp: expected number, "
      .. "got string %(keyword /properties/temp/type%)", err.message)
    r, err, kind = c:call_tool("missing")
    assert.is_nil(r)
    assert.equal("validation", kind)
    assert.matches("no structuredContent", err.message)
  end)

  it("leaves error results and tools without an output schema alone", function()
    local c <close> = connect()
    assert(c:list_tools())
    assert.is_true(assert(c:call_tool("failed")).isError)
    assert.same({ x = 1 }, assert(c:call_tool("plain")).structuredContent)
  end)

  it("checks 2020-12 schemas in full, and fails closed on one it cannot check", function()
    local c <close> = connect()
    assert(c:list_tools())
    assert(c:call_tool("refs", { n = 3 }))
    local r, err = c:call_tool("refs", { n = -1 })
    assert.is_nil(r)
    assert.matches("n: must be >= 0", err.message)
    r, err = c:call_tool("refs", { n = 1, extra = true })
    assert.is_nil(r)
    assert.matches("unexpected property 'extra'", err.message)
    r, err = c:call_tool("unknown_dialect")
    assert.is_nil(r)
    assert.matches("its outputSchema cannot be checked: .*unknown %$schema", err.message)
  end)

  it("checks nothing before the tools were listed", function()
    local c <close> = connect()
    assert.same({ temp = "hot" }, assert(c:call_tool("bad")).structuredContent)
  end)
end)
