-- fuzz/router.lua -- the Lua half of the router target (fuzz/router.c): a server with a tool
-- of each kind, and a check that every answer to a message encodes; and the envelope readers
-- (src/mcp/envelope.c, answer.c) against the decoder: a line a reader takes must be one the decoder
-- takes, into the very message the reader's values rebuild.
local core = require "claude.core"
local router = require "claude.mcp.router"
local call = require "claude.mcp.call"
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

-- Canonical JSON (the specs' own: sorted keys, `[]` told from `{}`); tools/fuzz.sh runs
-- from the repository's root
local canon = dofile("spec/support/canon_json.lua")

local record = call.new()
local function readers_agree(text)
  local mark, rec = core.envelope_read("request", text, record)
  if mark ~= nil then
    local decoded = json.decode(text)
    assert(decoded ~= nil, "the request reader took a line the decoder refuses")
    assert(canon(decoded) == canon(call.message(rec)),
      "the request reader's call record is not the decoder's message")
  end
  local a = table.pack(core.envelope_read("response", text))
  if a.n > 0 then
    local decoded = json.decode(text)
    assert(decoded ~= nil, "the response reader took a line the decoder refuses")
    assert(canon(decoded) == canon({ jsonrpc = "2.0", id = a[2], result = a[3] }),
      "the response reader's values are not the decoder's message")
  end
end

return function(text)
  readers_agree(text)
  local response = r:handle("fz", text)
  if response ~= nil then json.encode(response) end
  assert(r:pending() == 0, "a request was left in flight")
end
