-- fuzz/router.lua -- the Lua half of the router target (fuzz/router.c): a server with a tool
-- of each kind, and a check that every answer to a message encodes.
local router = require "claude.mcp.router"
local tool = require "claude.mcp.tool"
local json = require "claude.json"

io.stderr = { write = function(self) return self end } -- tool failures are reported there

local server = tool.server("fz", {
  tool.tool("add", "Add two numbers", { a = "number", b = "number" },
    function(args) return args.a + args.b end),
  tool.tool("echo", function(args) return { type = "text", text = json.encode(args) } end),
  tool.tool { name = "weather", input_schema = { city = "string" },
    output_schema = { temp = "number" }, execute = function() return { temp = 21.5 } end },
  tool.tool("fail", function() error("division by zero") end),
  tool.resource { uri = "mem://motd", name = "motd", text = "Hello" },
  tool.resource_template { uri_template = "users://{id}/profile", name = "profile",
    read = function(_, params) return "user " .. params.id end },
  tool.prompt { name = "review", arguments = { "code", "focus?" },
    get = function(args) return "Review: " .. args.code end },
}, { version = "1.0.0" })

local r = router.new({ fz = server })

return function(text)
  local response = r:handle("fz", text)
  if response ~= nil then json.encode(response) end
  assert(r:pending() == 0, "a request was left in flight")
end
