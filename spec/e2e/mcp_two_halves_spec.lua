-- The two halves against each other: claude.mcp (the client) talking to
-- `claudelua mcp` (the server) over stdio and over Streamable HTTP, with the
-- conformance tools file, in each protocol era (the legacy one pinned; the modern one
-- as the client negotiates it by default: the envelope, progress and log lines on the
-- request's stream, the server's questions as multi round-trip results answered by the
-- same callbacks, resource updates through subscriptions/listen), and a stdio server
-- killed mid-session.
local claude = require "claude"
local harness = require "support.harness"
local mcp_http = require "support.mcp_http"

local T = 30
local TOOLS = harness.root .. "/spec/conformance/tools.lua"
local EXE = harness.claudelua:sub(1, 1) == "/" and harness.claudelua
  or harness.root .. "/" .. harness.claudelua

local function text(r) return r.content[1].text end

local transports = {
  stdio = function()
    return { command = EXE, args = { "mcp", TOOLS }, timeout = T }
  end,
  http = function()
    local proc, url = mcp_http.start { TOOLS }
    return { url = url, timeout = T }, proc
  end,
}

for _, name in ipairs { "stdio", "http" } do
  describe("claude.mcp against claudelua mcp over " .. name, function()
    it("lists and calls tools, with progress, logging and errors (legacy era)", function()
      local options, server = transports[name]()
      options.protocol = "legacy"
      local logs = {}
      options.on_notification = function(method, params)
        if method == "notifications/message" then logs[#logs + 1] = params.data end
      end
      local c <close> = assert(claude.mcp.connect(options))
      assert.equal("2025-11-25", c.protocol_version)
      local names = {}
      for _, t in ipairs(assert(c:list_tools())) do names[t.name] = true end
      assert.is_true(names.test_simple_text and names.test_tool_with_progress and true)
      assert.equal("This is a simple text response for testing.",
        text(assert(c:call_tool("test_simple_text"))))
      local seen = {}
      assert.equal("Tool with progress executed successfully",
        text(assert(c:call_tool("test_tool_with_progress", nil,
          { on_progress = function(p, total) seen[#seen + 1] = p .. "/" .. total end }))))
      assert.same({ "0/100", "50/100", "100/100" }, seen)
      assert(c:set_log_level("debug"))
      assert(c:call_tool("test_tool_with_logging"))
      assert.is_true(#logs >= 1)
      local r = assert(c:call_tool("test_error_handling"))  -- isError is a result
      assert.is_true(r.isError)
      local _, err, kind = c:call_tool("no_such_tool")
      assert.equal("remote", kind)
      assert.truthy(err.code)
      assert(c:ping())
      c:close()
      if server then server:close() end
    end)

    it("negotiates the modern era and does the same, and asks through results", function()
      local options, server = transports[name]()
      local logs, updated = {}, require("claude.async").event()
      options.log_level = "debug"
      options.on_notification = function(method, params)
        if method == "notifications/message" then logs[#logs + 1] = params.data end
        if method == "notifications/resources/updated" then updated:set() end
      end
      options.on_sampling = function(req)
        return { role = "assistant", model = "lua", stopReason = "endTurn",
          content = { type = "text", text = "sampled " .. req.messages[1].content.text } }
      end
      options.on_elicitation = function()
        return { action = "accept", content = { username = "ada", email = "ada@example.com" } }
      end
      local c <close> = assert(claude.mcp.connect(options))
      assert.equal("modern", c.era)
      assert.equal("2026-07-28", c.protocol_version)
      assert.equal("conformance-test-server", c.server_info.name)
      local names = {}
      for _, t in ipairs(assert(c:list_tools())) do names[t.name] = true end
      assert.is_true(names.test_simple_text and names.test_sampling and true)
      assert.equal("This is a simple text response for testing.",
        text(assert(c:call_tool("test_simple_text"))))
      local seen = {}
      assert.equal("Tool with progress executed successfully",
        text(assert(c:call_tool("test_tool_with_progress", nil,
          { on_progress = function(p, total) seen[#seen + 1] = p .. "/" .. total end }))))
      assert.same({ "0/100", "50/100", "100/100" }, seen)
      assert(c:call_tool("test_tool_with_logging"))
      assert.is_true(#logs >= 1)
      assert.equal("LLM response: sampled hi", text(assert(c:call_tool("test_sampling",
        { prompt = "hi" }))))
      assert.matches("action=accept", text(assert(c:call_tool("test_elicitation",
        { message = "who?" }))))
      assert.is_true(assert(c:call_tool("test_error_handling")).isError)
      local _, err, kind = c:call_tool("no_such_tool")
      assert.equal("remote", kind)
      assert.truthy(err.code)
      assert.is_true(assert(c:subscribe("test://watched-resource")))
      assert(c:call_tool("test_update_watched"))
      assert.is_true(updated:wait(T))
      assert(c:ping())
      c:close()
      if server then server:close() end
    end)
  end)
end

describe("claude.mcp against claudelua mcp over stdio", function()
  it("reconnects when the server is killed mid-session", function()
    local states = {}
    local options = transports.stdio()
    options.retry_delay = 0.05
    options.protocol = "legacy" -- ping: a method of the legacy era
    options.on_state = function(_, new) states[#states + 1] = new end
    local c <close> = assert(claude.mcp.connect(options))
    assert(c:ping())
    -- kill the server while a call is in flight: that call fails, the next one
    -- runs on a new server process
    local pid = c.conn.transport.pid
    assert.equal("number", type(pid))
    local t = claude.spawn(function() return c:call_tool("test_tool_with_progress") end)
    claude.core.kill(pid, 9)
    local ok, r, err = t:join(T)
    assert.is_true(ok)
    assert.is_nil(r)
    assert.equal("connection", err.kind)
    assert.equal("This is a simple text response for testing.",
      text(assert(c:call_tool("test_simple_text"))))
    assert.is_true(c.reconnects >= 1)
    assert.truthy(table.concat(states, " "):find("reconnecting", 1, true))
  end)
end)
