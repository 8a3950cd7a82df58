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

describe("tool budgets with the real CLI", function()
  before_each(harness.before)
  after_each(harness.after)

  it("a spinning, an allocating and a sleeping tool each get an isError result; "
    .. "other calls go on", function()
    local function use(name, input)
      return { type = "tool_use", name = "mcp__b__" .. name, input = input or {} }
    end
    local function says(t) return { type = "text", text = t } end
    local mock <close> = e2e.start { turns = {
      { content = { use("spin") } },
      { content = { use("add", { a = 1, b = 2 }) } },
      { content = { use("alloc") } },
      { content = { use("add", { a = 3, b = 4 }) } },
      { content = { use("nap") } },
      { content = { use("add", { a = 5, b = 6 }) } },
      { content = { says("done") } },
    } }
    local server = claude.server("b", {
      claude.tool("spin", "Spins", function() while true do end end, { budget = { run = 0.2 } }),
      claude.tool("alloc", "Allocates", function()
        local t = {}
        while true do t[#t + 1] = string.rep("x", 1000) .. #t end
      -- (a `run` of its own far above the default: on a loaded machine the default could stop
      -- it for holding the loop before it has allocated its 8 MiB; memory must stop it)
      end, { budget = { memory = 8 * 1024 * 1024, run = 30 } }),
      claude.tool("nap", "Sleeps", function()
        claude.sleep(60)
        return "woke"
      end, { budget = { seconds = 0.5 } }),
      claude.tool("add", "Adds", { a = "number", b = "number" },
        function(a) return a.a + a.b end),
    })
    local msgs = harness.collect(claude.query("go", mock:options {
      mcp_servers = { b = server }, allowed_tools = server:tool_names() }))
    assert.equal("done", harness.last_of(msgs, "result").result)
    local results = {}
    for _, req in ipairs(mock:requests()) do
      for _, r in ipairs(req.tool_results or {}) do results[#results + 1] = r end
    end
    assert.equal(6, #results)
    local function text(r) return r.text end
    assert.is_true(results[1].is_error)
    assert.matches("Tool 'spin' was stopped: .*'run'", text(results[1]))
    assert.equal("3", text(results[2]))
    assert.is_true(results[3].is_error)
    assert.matches("Tool 'alloc' was stopped: .*'memory'", text(results[3]))
    assert.equal("7", text(results[4]))
    assert.is_true(results[5].is_error)
    assert.matches("Tool 'nap' was stopped: .*'seconds'", text(results[5]))
    assert.equal("11", text(results[6]))
  end)
end)
