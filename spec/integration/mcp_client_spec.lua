-- claude.mcp.connect over stdio against a small fake server that misbehaves
-- on request (spec/support/fake_mcp_server.lua): each kind of bad input
-- gives a clear error of the right kind, other calls go on, nothing hangs.
local claude = require "claude"
local errors = require "claude.errors"
local json = require "claude.json"
local harness = require "support.harness"

local T = 10
local FAKE = harness.root .. "/spec/support/fake_mcp_server.lua"

local function fake(mode, extra)
  local o = { command = harness.claudelua, args = { FAKE, mode }, name = "fake",
    timeout = T, on_error = function() end }
  for k, v in pairs(extra or {}) do o[k] = v end
  return o
end

local function text(r) return r.content[1].text end

describe("claude.mcp client over stdio", function()
  before_each(harness.before)
  after_each(harness.after)

  it("shakes hands, then lists (following pages) and calls", function()
    local states = {}
    local c <close> = assert(claude.mcp.connect(fake("paged", {
      on_state = function(old, new) states[#states + 1] = old .. ">" .. new end })))
    assert.same({ "disconnected>connecting", "connecting>initializing",
      "initializing>connected" }, states)
    assert.equal("connected", c.state)
    assert.equal(claude.core.MCP_PROTOCOL_VERSION, c.protocol_version)
    assert.equal("fake", c.server_info.name)
    assert.equal("be kind", c.instructions)
    assert.is_table(c.capabilities.tools)
    local tools = assert(c:list_tools())
    assert.equal(15, #tools)
    assert.equal("echo", tools[1].name)
    assert.equal("progress", tools[12].name)
    assert.equal("echo: hi", text(assert(c:call_tool("echo", { message = "hi" }))))
    assert.is_true(assert(c:ping()))
  end)

  it("refuses a protocol version it does not speak, clearly", function()
    local c, err, kind = claude.mcp.connect(fake("bad_version"))
    assert.is_nil(c)
    assert.equal("protocol", kind)
    assert.matches("'1999-01-01'", err.message, 1, true)
    assert.matches("2025-06-18", err.message, 1, true)
  end)

  it("gives an error answer as kind remote with code and data; isError is a result", function()
    local c <close> = assert(claude.mcp.connect(fake()))
    local r, err, kind = c:call_tool("fail")
    assert.is_nil(r)
    assert.equal("remote", kind)
    assert.equal(-32001, err.code)
    assert.same({ why = "on purpose" }, err.data)
    r = assert(c:call_tool("is_error"))
    assert.is_true(r.isError)
  end)

  it("reports a line that is not JSON and goes on", function()
    local problems = {}
    local c <close> = assert(claude.mcp.connect(fake("", {
      on_error = function(e) problems[#problems + 1] = e end })))
    assert.equal("after garbage", text(assert(c:call_tool("garbage"))))
    assert.equal(1, #problems)
    assert.equal("protocol", problems[1].kind)
    assert.matches("not JSON", problems[1].message)
    assert.equal("echo: still", text(assert(c:call_tool("echo", { message = "still" }))))
  end)

  it("fails at once the call whose answer is not UTF-8, and goes on", function()
    local problems = {}
    local c <close> = assert(claude.mcp.connect(fake("", {
      on_error = function(e) problems[#problems + 1] = e end })))
    local r, err, kind = c:call_tool("binary")
    assert.is_nil(r)
    assert.equal("protocol", kind)
    assert.matches("not JSON %(invalid JSON: invalid UTF%-8 in string at byte %d+", err.message)
    -- the server's request before it, not UTF-8 either, is reported: it answers no call
    assert.equal(1, #problems)
    assert.matches("invalid UTF%-8", problems[1].message)
    assert.equal("echo: still", text(assert(c:call_tool("echo", { message = "still" }))))
  end)

  it("times out a call, tells the server, and goes on", function()
    local c <close> = assert(claude.mcp.connect(fake()))
    local r, err, kind = c:call_tool("never", nil, { timeout = 0.2 })
    assert.is_nil(r)
    assert.equal("timeout", kind)
    assert.matches("tools/call", err.message)
    -- the server got notifications/cancelled for that request
    assert.equal("2", text(assert(c:call_tool("cancelled"))))
  end)

  it("cancels a call whose task is cancelled, and tells the server", function()
    local c <close> = assert(claude.mcp.connect(fake()))
    local t = claude.spawn(function() return c:call_tool("never") end)
    t:cancel("no longer needed")
    local ok, err = t:join(T)
    assert.is_false(ok)
    assert.is_true(errors.is(err, "cancelled"))
    assert.equal("2", text(assert(c:call_tool("cancelled"))))
  end)

  it("reports an answer to an id never sent; the call times out", function()
    local problems = {}
    local c <close> = assert(claude.mcp.connect(fake("", {
      on_error = function(e) problems[#problems + 1] = e end })))
    local r, _, kind = c:call_tool("unknown_id", nil, { timeout = 0.3 })
    assert.is_nil(r)
    assert.equal("timeout", kind)
    assert.equal("protocol", problems[1].kind)
    assert.matches("never sent", problems[1].message)
  end)

  it("reports a second answer to one request (it was dropped without a word), not the late "
    .. "answer of a request it gave up on", function()
    local problems = {}
    local c <close> = assert(claude.mcp.connect(fake("", {
      on_error = function(e) problems[#problems + 1] = e end })))
    assert.equal("first", text(assert(c:call_tool("twice"))))
    local r, _, kind = c:call_tool("late", nil, { timeout = 0.2 })
    assert.is_nil(r)
    assert.equal("timeout", kind)
    assert.equal("echo: ok", text(assert(c:call_tool("echo", { message = "ok" })))) -- after it
    assert.equal(1, #problems)
    assert.equal("protocol", problems[1].kind)
    assert.matches("answered request id %d+ again", problems[1].message)
  end)

  it("fails the calls in flight with overflow for a message over the limit", function()
    local c <close> = assert(claude.mcp.connect(fake("", { max_message_size = 10000 })))
    local r, err, kind = c:call_tool("huge")
    assert.is_nil(r)
    assert.equal("overflow", kind)
    assert.matches("max_message_size", err.message)
    assert.equal("echo: ok", text(assert(c:call_tool("echo", { message = "ok" }))))
  end)

  it("fails a call when the server dies mid-call, with the exit code and stderr", function()
    local c <close> = assert(claude.mcp.connect(fake("", { max_retries = 0 })))
    local r, err, kind = c:call_tool("exit")
    assert.is_nil(r)
    assert.equal("connection", kind)
    assert.equal(3, err.exit_code)
    assert.matches("dying on purpose", err.stderr_tail)
    assert.matches("dying on purpose", tostring(err))
    assert.equal("disconnected", c.state)
    local _, _, pkind = c:ping()
    assert.equal("connection", pkind)
  end)

  it("reconnects after the server dies; the lost call is not replayed", function()
    local states = {}
    local c <close> = assert(claude.mcp.connect(fake("", { retry_delay = 0.01,
      on_state = function(_, new) states[#states + 1] = new end })))
    local r, err = c:call_tool("exit")
    assert.is_nil(r)
    assert.equal("connection", err.kind)
    -- the next call waits for the new connection
    assert.equal("echo: back", text(assert(c:call_tool("echo", { message = "back" }))))
    assert.equal(1, c.reconnects)
    assert.same({ "connecting", "initializing", "connected", "reconnecting", "initializing",
      "connected" }, states)
  end)

  it("stops a reconnect under way when closed; waiting calls end with closed", function()
    local c = assert(claude.mcp.connect(fake("", { retry_delay = 30 })))
    assert.is_nil(c:call_tool("exit"))
    assert.equal("reconnecting", c.state)
    local waiting = claude.spawn(function() return c:ping() end)
    c:close()
    local _, r, _, kind = waiting:join(T)
    assert.is_nil(r)
    assert.equal("closed", kind)
    assert.equal("disconnected", c.state)
  end)

  it("gives up after max_retries, with the server's exit in the error", function()
    local c <close> = assert(claude.mcp.connect(fake("", { max_retries = 2,
      retry_delay = 0.01 })))
    assert.equal("connected", c.state)
    -- every restart from now on fails: the command is replaced by one that exits
    c.opts.command, c.opts.args = "/bin/sh", { "-c", "echo broken >&2; exit 7" }
    assert.is_nil(c:call_tool("exit"))
    local r, err, kind = c:ping()
    assert.is_nil(r)
    assert.equal("connection", kind)
    assert.matches("2 reconnect attempts failed", err.message)
    assert.equal(3, err.exit_code)
    assert.equal("disconnected", c.state)
  end)

  it("answers the server's sampling and roots requests; capabilities follow", function()
    local c <close> = assert(claude.mcp.connect(fake("", {
      on_sampling = function(req)
        return { role = "assistant", model = "lua",
          content = { type = "text", text = "sampled " .. req.messages[1].content.text } }
      end,
      roots = { "/tmp", { uri = "file:///srv", name = "srv" } },
    })))
    assert.equal("sampled hello", text(assert(c:call_tool("sample"))))
    assert.same({ { uri = "file:///tmp" }, { uri = "file:///srv", name = "srv" } },
      json.decode(text(assert(c:call_tool("roots")))))
  end)

  it("answers method-not-found for what it was not given", function()
    local c <close> = assert(claude.mcp.connect(fake()))
    assert.equal("error -32601", text(assert(c:call_tool("sample"))))
  end)

  it("delivers progress to the call's on_progress", function()
    local c <close> = assert(claude.mcp.connect(fake()))
    local seen = {}
    assert(c:call_tool("progress", nil, { on_progress = function(p, total, msg)
      seen[#seen + 1] = { p, total, msg }
    end }))
    assert.same({ { 1, 2, "step 1" }, { 2, 2, "step 2" } }, seen)
  end)

  it("fails a call after close with kind closed", function()
    local c = assert(claude.mcp.connect(fake()))
    assert.is_true(c:close())
    assert.is_true(c:close())
    local r, _, kind = c:list_tools()
    assert.is_nil(r)
    assert.equal("closed", kind)
  end)

  it("raises for misuse at the caller's line", function()
    local function try(opts)
      local ok, err = pcall(function()
        local c = claude.mcp.connect(opts) -- the line blamed
        return c
      end)
      assert.is_false(ok)
      assert.matches("mcp_client_spec.lua:%d+: ", err)
      return err
    end
    assert.matches("unknown field 'comand' to 'connect' %(did you mean 'command'%?%)",
      try { comand = "x" })
    assert.matches("bad field 'timeout' to 'connect' %(number expected, got string%)",
      try { command = "x", timeout = "1" })
    assert.matches("'command' %(stdio%) or 'url' %(HTTP%) expected", try {})
    assert.matches("exclude each other", try { command = "x", url = "http://x" })
    local c <close> = assert(claude.mcp.connect(fake()))
    local ok, err = pcall(function()
      local r = c:call_tool(42)
      return r
    end)
    assert.is_false(ok)
    assert.matches("mcp_client_spec.lua:%d+: bad argument #1 to 'call_tool' %(string expected, "
      .. "got number%)", err)
  end)

  it("gives a connection error for a command that does not exist", function()
    local c, err, kind = claude.mcp.connect { command = "/no/such/server" }
    assert.is_nil(c)
    assert.equal("connection", kind)
    assert.matches("/no/such/server", err.message, 1, true)
  end)
end)
