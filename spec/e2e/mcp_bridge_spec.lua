-- A connected MCP client given to sessions of the real claude CLI as an
-- in-process server: the CLI's calls go through our one connection to
-- server-everything, guarded and logged in Lua.
local claude = require "claude"
local e2e = require "support.e2e"
local harness = require "support.harness"

local T = 20
local NODE = harness.root .. "/node_modules/.bin/node"
local EVERYTHING = harness.root .. "/node_modules/@modelcontextprotocol/server-everything/dist/"
  .. "index.js"

local text = e2e.text
local use = e2e.use

local function run(prompt, options)
  return harness.last_of(harness.collect(claude.query(prompt, options)), "result")
end

describe("an MCP client as a session's in-process server", function()
  before_each(harness.before)
  after_each(harness.after)

  it("serves the remote tools to two sessions over one connection", function()
    local c <close> = assert(claude.mcp.connect { command = NODE,
      args = { EVERYTHING, "stdio" }, timeout = T })
    local pid = c.conn.transport.pid
    for _, pair in ipairs { { 15, 27 }, { 1, 2 } } do
      local mock <close> = e2e.start { turns = {
        { content = { use("mcp__ev__get-sum", { a = pair[1], b = pair[2] }) } },
        { content = { text("{{last_tool_result}}") } },
      } }
      local result = run("add", mock:options { mcp_servers = { ev = c },
        allowed_tools = { "mcp__ev__get-sum" } })
      assert.equal(string.format("The sum of %d and %d is %d.", pair[1], pair[2],
        pair[1] + pair[2]), result.result)
    end
    assert.equal(pid, c.conn.transport.pid) -- the same server process throughout
  end)

  it("refuses through a guard and logs each call", function()
    local c <close> = assert(claude.mcp.connect { command = NODE,
      args = { EVERYTHING, "stdio" }, timeout = T })
    local log = {}
    local server = assert(c:as_server { name = "ev", filter = { "echo" },
      guard = function(_, args)
        if args.message:find("password") then return nil, "no secrets through echo" end
        return args
      end,
      on_call = function(info) log[#log + 1] = info.refused and "refused" or "called" end })
    local mock <close> = e2e.start { turns = {
      { content = { use("mcp__ev__echo", { message = "my password" }) } },
      { content = { use("mcp__ev__echo", { message = "hello" }) } },
      { content = { text("{{last_tool_result}}") } },
    } }
    local result = run("echo", mock:options { mcp_servers = { ev = server },
      allowed_tools = server:tool_names() })
    assert.equal("Echo: hello", result.result)
    assert.same({ "refused", "called" }, log)
  end)
end)
