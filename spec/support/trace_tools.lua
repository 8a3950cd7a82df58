-- Tools for spec/e2e/trace_spec.lua: each makes a child span of its call's span, one at once,
-- one after waiting (its span is still the current one when it resumes); `trace_on` turns
-- tracing on while the server runs (to TRACE_ON_ENDPOINT), as a late `enable` would.
local claude = require "claude"

return claude.server("traced", {
  claude.tool("lookup", "Looks a key up", {}, function()
    return claude.trace.span("db.lookup", { attributes = { ["db.system"] = "memory" } },
      function() return "found" end)
  end),
  claude.tool("slow_lookup", "Looks a key up after a wait", {}, function()
    claude.sleep(0.05)
    return claude.trace.span("db.lookup", function(span)
      span:set("db.system", "memory")
      return "found later"
    end)
  end),
  claude.tool("trace_on", "Turns tracing on now", {}, function()
    assert(claude.trace.enable { endpoint = os.getenv("TRACE_ON_ENDPOINT"),
      service_name = "late", schedule_delay = 0.05 })
    return "on"
  end),
})
