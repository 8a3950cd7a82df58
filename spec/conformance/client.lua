-- The MCP conformance suite's client: `claudelua spec/conformance/client.lua <url>`,
-- with the scenario in MCP_CONFORMANCE_SCENARIO (the suite sets it). Each
-- scenario does what a client would; the suite's server checks it.
local claude = require "claude"

local url = assert(arg[1], "usage: client.lua <server-url>")
local scenario = os.getenv("MCP_CONFORMANCE_SCENARIO") or "initialize"

local function connect(opts)
  opts = opts or {}
  opts.url = url
  opts.timeout = opts.timeout or 30
  return assert(claude.mcp.connect(opts))
end

local scenarios = {}

function scenarios.initialize()
  local c <close> = connect()
  assert(c:list_tools())
end

scenarios["tools_call"] = function()
  local c <close> = connect()
  for _, t in ipairs(assert(c:list_tools())) do
    if t.name == "add_numbers" then assert(c:call_tool(t.name, { a = 5, b = 3 })) end
  end
end

-- Accepts with empty content: the client fills in the schema's defaults.
scenarios["elicitation-sep1034-client-defaults"] = function()
  local c <close> = connect { on_elicitation = function()
    return { action = "accept", content = {} }
  end }
  for _, t in ipairs(assert(c:list_tools())) do
    assert(c:call_tool(t.name, {}))
  end
end

-- The server closes the tool call's stream after a priming event: the client
-- resumes it with a GET after `retry`, with Last-Event-ID.
scenarios["sse-retry"] = function()
  local c <close> = connect()
  for _, t in ipairs(assert(c:list_tools())) do
    assert(c:call_tool(t.name, {}))
  end
end

local run = scenarios[scenario]
if not run then
  io.stderr:write("unknown scenario: ", scenario, "\n")
  os.exit(2)
end
run()
