-- The middleware specs' server (spec/e2e/mcp_middleware_spec.lua): one server whose middleware
-- logs each request, answers some calls itself, changes requests and results, refuses with a
-- JSON-RPC error (returned and raised), limits one tool's calls, hides a tool from the list,
-- and keeps a resource's reads as its caching hint says.
local claude = require "claude"
local errors = require "claude.errors"
local mw = require "claude.mcp.middleware"

local reads = 0

return claude.server("mw", {
  claude.tool("add", "Add two numbers", { a = "number", b = "number" },
    function(args) return args.a + args.b end),
  claude.tool("secret", "Refused by the middleware", function() return "the secret" end),
  claude.tool("boom", "Its middleware fails", function() return "never" end),
  claude.tool("answer", "Answered by the middleware", function() return "the tool" end),
  claude.tool("limited", "Two calls, then a wait", function() return "done" end),
  claude.tool("hidden", "Not listed", function() return "hidden" end),
  claude.tool("slow_start", "Its middleware waits first", function(_, ctx)
    return "after " .. ctx.era end),
  claude.resource { uri = "mem://counter", name = "counter", mime_type = "text/plain",
    cache = { ttl_ms = 600000, scope = "public" },
    read = function()
      reads = reads + 1
      return "read " .. reads
    end },
  claude.prompt { name = "greet", arguments = { "name" },
    get = function(args) return "Hello, " .. args.name end },
}, { middleware = {
  mw.log(),
  mw.cache(),
  mw.rate_limit { rate = 0.001, burst = 2, on = "call", key = function(req)
    return req.params.name == "limited" and "limited" or nil
  end },
  { call = function(req, ctx, next)
      local name = req.params.name
      if name == "secret" then
        return nil, errors.new("rpc", "Forbidden: secret", { code = -32001,
          data = { tool = name } })
      elseif name == "boom" then
        error("the middleware broke")
      elseif name == "answer" then
        return "the middleware (" .. ctx.era .. ")"
      elseif name == "slow_start" then
        claude.sleep(0.05)
      elseif name == "add" then
        req.params.arguments.b = req.params.arguments.b * 10 -- a changed request
      end
      local result, err = next(req)
      if result and result.content and result.content[1] then -- a changed result
        result.content[1].text = result.content[1].text .. " (mw)"
      end
      return result, err
    end,
    ["tools/list"] = function(_, _, next)
      local result = next()
      for i = #result.tools, 1, -1 do
        if result.tools[i].name == "hidden" then table.remove(result.tools, i) end
      end
      return result
    end,
    get = function(req, _, next)
      req.params.arguments.name = req.params.arguments.name:upper()
      return next(req)
    end },
} })
