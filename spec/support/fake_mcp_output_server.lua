-- A stdio MCP server whose tools declare output schemas, for the client's output
-- validation (spec/integration/mcp_output_spec.lua): run as
-- `claudelua spec/support/fake_mcp_output_server.lua`. Each tool answers what its name
-- says, right or wrong: the client must tell them apart.
local json = require "claude.json"

-- The tools as listed, as JSON text: the client must hand them on unchanged.
local TOOLS = [=[[
  {"name":"good","inputSchema":{"type":"object"},"outputSchema":{"type":"object",
    "properties":{"temp":{"type":"number"}},"required":["temp"]}},
  {"name":"bad","inputSchema":{"type":"object"},"outputSchema":{"type":"object",
    "properties":{"temp":{"type":"number"}},"required":["temp"]}},
  {"name":"missing","inputSchema":{"type":"object"},"outputSchema":{"type":"object"}},
  {"name":"failed","inputSchema":{"type":"object"},"outputSchema":{"type":"object",
    "required":["temp"]}},
  {"name":"refs","inputSchema":{"type":"object"},"outputSchema":{
    "$schema":"https://json-schema.org/draft/2020-12/schema","$defs":{"t":{"type":"integer",
    "minimum":0}},"type":"object","properties":{"n":{"$ref":"#/$defs/t"}},
    "unevaluatedProperties":false,"x-extension":{"kept":[1,2,3]}}},
  {"name":"unknown_dialect","inputSchema":{"type":"object"},"outputSchema":{
    "$schema":"https://example.com/my-dialect","type":"object"}},
  {"name":"plain","inputSchema":{"type":"object"}}
]]=]

local RESULTS = {
  good = { content = { { type = "text", text = "21.5" } }, structuredContent = { temp = 21.5 } },
  bad = { content = { { type = "text", text = "hot" } }, structuredContent = { temp = "hot" } },
  missing = { content = { { type = "text", text = "no structure" } } },
  failed = { content = { { type = "text", text = "it broke" } }, isError = true },
  unknown_dialect = { content = {}, structuredContent = json.object() },
  plain = { content = { { type = "text", text = "anything" } }, structuredContent = { x = 1 } },
}

local function send(msg)
  io.stdout:write(json.encode(msg), "\n")
  io.stdout:flush()
end

for line in io.stdin:lines() do
  local msg = json.decode(line)
  local id, method, params = msg.id, msg.method, msg.params
  if method == "initialize" then
    send { jsonrpc = "2.0", id = id, result = { protocolVersion = params.protocolVersion,
      capabilities = { tools = json.object() }, serverInfo = { name = "outputs", version = "1" } } }
  elseif method == "tools/list" then
    send { jsonrpc = "2.0", id = id, result = { tools = json.decode(TOOLS) } }
  elseif method == "tools/call" then
    local r = RESULTS[params.name]
    if params.name == "refs" then
      r = { content = {}, structuredContent = params.arguments }
    end
    send { jsonrpc = "2.0", id = id, result = r }
  elseif method == "ping" then
    send { jsonrpc = "2.0", id = id, result = json.object() }
  elseif id ~= nil and method ~= nil then
    send { jsonrpc = "2.0", id = id, error = { code = -32601, message = "Method not found" } }
  end
end
