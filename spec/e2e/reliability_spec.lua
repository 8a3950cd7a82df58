-- Reliability with the real claude CLI and the scripted Messages API.
local claude = require "claude"
local e2e = require "support.e2e"
local harness = require "support.harness"

describe("reliability with the real CLI", function()
  before_each(harness.before)
  after_each(harness.after)

  it("a tool input 1,000 levels deep reaches an in-process tool; the session goes on",
    function()
      local deep = { leaf = true }
      for _ = 1, 1000 do deep = { deep } end
      local mock <close> = e2e.start { turns = {
        { content = { { type = "tool_use", name = "mcp__nest__depth",
          input = { value = deep } } } },
        { content = { { type = "text", text = "depth {{last_tool_result}}" } } },
        { content = { { type = "text", text = "still here" } } },
      } }
      local server = claude.server("nest", {
        claude.tool("depth", "How deep a value is", { type = "object",
          properties = { value = {} }, required = { "value" } }, function(args)
          local n, v = 0, args.value
          while type(v) == "table" and v[1] ~= nil do
            n, v = n + 1, v[1]
          end
          assert(v.leaf == true)
          return n
        end),
      })
      local s <close> = assert(claude.connect(mock:options {
        mcp_servers = { nest = server }, allowed_tools = server:tool_names() }))
      assert(s:send("how deep?"))
      local msgs = harness.collect(s:receive(120))
      assert.equal("depth 1000", harness.last_of(msgs, "result").result)
      assert(s:send("again"))
      msgs = harness.collect(s:receive(120))
      assert.equal("still here", harness.last_of(msgs, "result").result)
    end)
end)
