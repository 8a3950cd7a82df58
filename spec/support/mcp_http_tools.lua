-- Tools for the Streamable HTTP specs (spec/integration/mcp_http_spec.lua,
-- spec/support/mcp_http_client.mjs): two servers, so that both paths (/mcp, /mcp/NAME) serve.
local claude = require "claude"

local state = {} -- tag -> "running" | "cancelled" | "finished"

local calc = claude.server("calc", {
  claude.tool("add", "Add two numbers", { a = "number", b = "number" },
    function(args) return args.a + args.b end),
  claude.tool("count", "Reports progress n times, then answers 'counted n'", { n = "integer" },
    function(args, ctx)
      for i = 1, args.n do
        ctx.progress(i, args.n, "step " .. i)
        claude.sleep(0.01)
      end
      return "counted " .. args.n
    end),
  -- waits until released or cancelled; says on stderr when it starts, so that a spec knows
  claude.tool("wait", "Waits for release(tag)", { tag = "string" }, function(args)
    state[args.tag] = "running"
    io.stderr:write("started ", args.tag, "\n")
    io.stderr:flush()
    local ok, err = pcall(function()
      while state[args.tag] == "running" do claude.sleep(0.01) end
    end)
    if not ok then
      state[args.tag] = "cancelled"
      error(err, 0)
    end
    state[args.tag] = "finished"
    return "released " .. args.tag
  end),
  claude.tool("release", "Lets wait(tag) finish", { tag = "string" }, function(args)
    if state[args.tag] == "running" then state[args.tag] = "released" end
    return "ok"
  end),
  claude.tool("state", "The state of wait(tag)", { tag = "string" }, function(args)
    return state[args.tag] or "unknown"
  end),
})

local echo = claude.server("echo", {
  claude.tool("echo", "Echoes its text", { text = "string" }, function(args) return args.text end),
})

return { calc, echo }
