-- Static headers of an HTTP MCP client reach the server: `Authorization` too, in any case
-- (it was dropped: the transports overwrote it with the auth provider's header, or nil).
local harness = require "support.harness"
local claude = require "claude"
local http = require "claude.http.server"

describe("claude.mcp.connect's static headers", function()
  before_each(harness.before)
  after_each(harness.after)

  -- the Authorization a server sees on the client's first request (answered 401)
  local function seen(opts)
    local got
    local srv <close> = assert(http.listen { on_request = function(req, res)
      got = got or { authorization = req.headers.authorization, x = req.headers["x-team"] }
      res:respond(401, { ["content-type"] = "application/json" }, "{}")
    end })
    opts.url = "http://127.0.0.1:" .. srv:port() .. (opts.transport == "sse" and "/sse" or "/mcp")
    local c = claude.mcp.connect(opts)
    if c then c:close() end
    return got
  end

  for _, transport in ipairs { "streamable_http", "sse" } do
    it("sends a static Authorization header (" .. transport .. ")", harness.task(function()
      assert.same({ authorization = "Bearer s3cret", x = "blue" }, seen {
        transport = transport, headers = { Authorization = "Bearer s3cret", ["X-Team"] = "blue" },
        timeout = 5 })
      assert.same({ authorization = "Bearer lower" }, seen {
        transport = transport, headers = { authorization = "Bearer lower" }, timeout = 5 })
    end, 30))
  end
end)
