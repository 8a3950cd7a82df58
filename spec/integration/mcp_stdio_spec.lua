-- `claudelua mcp tools.lua` over stdio, spawned and spoken to in JSON lines: the protocol,
-- bad input (each case goes on serving), the stdout discipline, ending at EOF and on signals,
-- and --watch.
local claude = require "claude"
local process = require "claude.process"
local json = require "claude.json"
local harness = require "support.harness"

local TOOLS = [[
local claude = require "claude"
print("printed by the tools file")
io.write("written by the tools file\n")
local srv
srv = claude.server("calc", {
  claude.tool("add", "Add", { a = "number", b = "number" }, function(a)
    print("printed by a tool")
    return a.a + a.b
  end),
  claude.tool("boom", function() error("kaboom", 0) end),
  claude.tool("fails", function() return nil, "it did not work" end),
  claude.tool("slow", { seconds = "number" }, function(a)
    claude.sleep(a.seconds)
    return "slept"
  end),
  claude.tool("grow", function()
    srv:add(claude.tool("extra", function() return "extra" end))
    return "grown"
  end),
  claude.tool("logs", function(_, ctx)
    ctx.log("debug", "a debug line")
    ctx.log("warning", "a warning")
    return "logged"
  end),
})
return srv
]]

local function init_msg(id)
  return { jsonrpc = "2.0", id = id or 0, method = "initialize", params = {
    protocolVersion = "2025-06-18", capabilities = {},
    clientInfo = { name = "spec", version = "1" } } }
end

local function call(id, name, args)
  return { jsonrpc = "2.0", id = id, method = "tools/call",
    params = { name = name, arguments = args or {} } }
end

-- Spawns the server on a tools file; its stdout is read as JSON (a line that is not JSON
-- fails read_line, so "stdout carries the protocol alone" is checked on every read).
local function serve(text, extra)
  local file = harness.tempfile(text or TOOLS, ".lua")
  local args = { "mcp" }
  for _, a in ipairs(extra or {}) do args[#args + 1] = a end
  args[#args + 1] = file
  local p = assert(process.spawn { harness.claudelua, args = args, stdout = "json",
    stderr = "collect", max_line = 64 * 1024 * 1024 })
  return p, file
end

local function read(p)
  local v, err = p:read_line(20)
  assert(v, "no message from the server: " .. tostring(err) .. "\nstderr: " .. p:stderr())
  return v
end

-- Reads until the answer to `id`, returning it and the messages before it.
local function answer(p, id)
  local before = {}
  while true do
    local m = read(p)
    if m.id == id and m.method == nil then return m, before end
    before[#before + 1] = m
  end
end

local function started(text, extra)
  local p, file = serve(text, extra)
  p:write_json(init_msg(0))
  local r = answer(p, 0)
  assert.equal("2025-06-18", r.result.protocolVersion)
  p:write_json { jsonrpc = "2.0", method = "notifications/initialized" }
  return p, file
end

describe("claudelua mcp over stdio", function()
  before_each(harness.before)
  after_each(harness.after)

  it("answers a request before initialize with an error at once, then initializes", function()
    local p <close> = serve()
    p:write_json { jsonrpc = "2.0", id = 1, method = "server/discover" }
    p:write_json { jsonrpc = "2.0", id = 2, method = "tools/list" }
    local r1, r2 = read(p), read(p)
    assert.equal(1, r1.id)
    assert.equal(-32600, r1.error.code)
    assert.equal(2, r2.id)
    assert.equal(-32600, r2.error.code)
    assert.matches("before 'initialize'", r2.error.message)
    p:write_json(init_msg(3))
    local r = answer(p, 3)
    assert.equal("calc", r.result.serverInfo.name)
    assert.is_true(r.result.capabilities.tools.listChanged)
    p:close_stdin()
    assert.same({ 0, 0 }, { p:wait(10) })
  end)

  it("negotiates every protocol version it speaks, and its newest for another", function()
    local p <close> = serve()
    for i, v in ipairs(claude.core.MCP_PROTOCOL_VERSIONS) do
      local m = init_msg(i)
      m.params.protocolVersion = v
      p:write_json(m)
      assert.equal(v, answer(p, i).result.protocolVersion)
    end
    local m = init_msg(99)
    m.params.protocolVersion = "2099-01-01"
    p:write_json(m)
    assert.equal(claude.core.MCP_PROTOCOL_VERSION, answer(p, 99).result.protocolVersion)
  end)

  it("keeps stdout for the protocol: what the tools file and tools print goes to stderr",
    function()
      local p <close> = started()
      p:write_json(call(1, "add", { a = 2, b = 3 }))
      local r = answer(p, 1)
      assert.same({ { type = "text", text = "5" } }, r.result.content)
      p:close_stdin()
      assert.same({ 0, 0 }, { p:wait(10) })
      local err = p:stderr()
      assert.matches("printed by the tools file", err)
      assert.matches("written by the tools file", err)
      assert.matches("printed by a tool", err)
    end)

  it("answers a line that is not JSON with -32700 and goes on", function()
    local p <close> = started()
    p:write("this is not json\n")
    local r = read(p)
    assert.equal(json.null, r.id)
    assert.equal(-32700, r.error.code)
    p:write_json(call(2, "add", { a = 1, b = 1 }))
    assert.equal("2", answer(p, 2).result.content[1].text)
  end)

  it("answers a line with invalid UTF-8 with -32700, goes on, and writes only UTF-8", function()
    local p <close> = started([[
      local claude = require "claude"
      return claude.server("bin", {
        claude.tool("binary", function() return "ok\255\254" end),
        claude.tool("echo", { s = "string" }, function(a) return a.s end),
      })
    ]])
    p:write('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x\255",'
      .. '"arguments":{}}}\n')
    local r = read(p) -- stdout is decoded as JSON, so it is UTF-8 too
    assert.equal(json.null, r.id)
    assert.equal(-32700, r.error.code)
    assert.matches("invalid UTF%-8 in string at byte 66", r.error.message)
    p:write_json(call(2, "binary"))
    assert.equal("ok\u{FFFD}\u{FFFD}", answer(p, 2).result.content[1].text)
    p:write_json(call(3, "echo", { s = "é中😀" }))
    assert.equal("é中😀", answer(p, 3).result.content[1].text)
  end)

  it("answers an oversized message with an error and goes on", function()
    local p <close> = started(nil, { "--max-message", "1000" })
    p:write_json(call(1, "add", { a = 1, b = 2, pad = string.rep("x", 5000) }))
    local r = read(p)
    assert.equal(json.null, r.id)
    assert.equal(-32600, r.error.code)
    assert.matches("too large", r.error.message)
    p:write_json(call(2, "add", { a = 1, b = 2 }))
    assert.equal("3", answer(p, 2).result.content[1].text)
  end)

  it("answers invalid requests and unknown tools with errors and goes on", function()
    local p <close> = started()
    p:write('{"jsonrpc":"2.0","id":1}\n')
    p:write('[1,2]\n')
    p:write_json(call(3, "nope"))
    p:write_json(call(4, "add", { a = "x", b = 1 }))
    assert.equal(-32600, answer(p, 1).error.code)
    local bad = read(p)
    assert.equal(-32600, bad.error.code)
    assert.equal(-32600, read(p).error.code)
    assert.equal(-32602, answer(p, 3).error.code)
    local v = answer(p, 4)
    assert.is_true(v.result.isError)
    assert.matches("Input validation error", v.result.content[1].text)
  end)

  it("turns a tool that raises or returns nil, err into an isError result", function()
    local p <close> = started()
    p:write_json(call(1, "boom"))
    p:write_json(call(2, "fails"))
    local r1, r2 = answer(p, 1), answer(p, 2)
    assert.is_true(r1.result.isError)
    assert.equal("kaboom", r1.result.content[1].text)
    assert.is_true(r2.result.isError)
    assert.equal("it did not work", r2.result.content[1].text)
  end)

  it("filters ctx.log by logging/setLevel", function()
    local p <close> = started()
    p:write_json { jsonrpc = "2.0", id = 1, method = "logging/setLevel",
      params = { level = "warning" } }
    assert.same({}, answer(p, 1).result)
    p:write_json(call(2, "logs"))
    local r, before = answer(p, 2)
    assert.equal("logged", r.result.content[1].text)
    assert.equal(1, #before)
    assert.equal("notifications/message", before[1].method)
    assert.equal("warning", before[1].params.level)
  end)

  it("cancels a call on notifications/cancelled", function()
    local p <close> = started()
    p:write_json(call(1, "slow", { seconds = 30 }))
    p:write_json { jsonrpc = "2.0", method = "notifications/cancelled",
      params = { requestId = 1, reason = "changed my mind" } }
    local r = answer(p, 1)
    assert.is_true(r.result.isError)
    assert.matches("cancelled", r.result.content[1].text)
  end)

  it("sends tools/list_changed when a tool is added while serving", function()
    local p <close> = started()
    p:write_json(call(1, "grow"))
    local r, before = answer(p, 1)
    assert.equal("grown", r.result.content[1].text)
    assert.equal("notifications/tools/list_changed", before[1].method)
    p:write_json { jsonrpc = "2.0", id = 2, method = "tools/list" }
    local names = {}
    for _, t in ipairs(answer(p, 2).result.tools) do names[#names + 1] = t.name end
    assert.equal("extra", names[#names])
  end)

  it("lets a call in flight finish at stdin EOF, then ends", function()
    local p <close> = started()
    p:write_json(call(1, "slow", { seconds = 0.2 }))
    p:close_stdin()
    assert.equal("slept", answer(p, 1).result.content[1].text)
    assert.same({ 0, 0 }, { p:wait(10) })
  end)

  it("on SIGTERM lets a call in flight finish within the grace, then ends", function()
    local p <close> = started(nil, { "--grace", "10" })
    p:write_json(call(1, "slow", { seconds = 0.3 }))
    p:write_json { jsonrpc = "2.0", id = 2, method = "ping" }
    answer(p, 2) -- the call is in flight
    p:signal("term")
    assert.equal("slept", answer(p, 1).result.content[1].text)
    assert.same({ 0, 0 }, { p:wait(10) })
  end)

  it("on SIGINT lets a call in flight finish within the grace, then ends", function()
    local p <close> = started(nil, { "--grace", "10" })
    p:write_json(call(1, "slow", { seconds = 0.3 }))
    p:write_json { jsonrpc = "2.0", id = 2, method = "ping" }
    answer(p, 2)
    p:signal("int")
    assert.equal("slept", answer(p, 1).result.content[1].text)
    assert.same({ 130, 0 }, { p:wait(10) })
  end)

  it("on SIGTERM cancels a call that outlives the grace", function()
    local p <close> = started(nil, { "--grace", "0.2" })
    p:write_json(call(1, "slow", { seconds = 60 }))
    p:write_json { jsonrpc = "2.0", id = 2, method = "ping" }
    answer(p, 2)
    p:signal("term")
    assert.is_nil(p:read_line(20)) -- its answer is dropped: stdout ends
    assert.same({ 0, 0 }, { p:wait(10) })
  end)

  it("serves the server --server names, and refuses several without it", function()
    local several = [[
      local claude = require "claude"
      return { a = claude.server("a", {}), b = claude.server("b", {}) }
    ]]
    local p <close> = serve(several)
    assert.same({ 1, 0 }, { p:wait(10) })
    assert.matches("%-%-server NAME", p:stderr())
    local q <close> = serve(several, { "--server", "b" })
    q:write_json(init_msg(1))
    assert.equal("b", answer(q, 1).result.serverInfo.name)
  end)

  it("reports a tools file that does not return a server", function()
    local p <close> = serve("return 42")
    assert.same({ 1, 0 }, { p:wait(10) })
    assert.matches("returned number", p:stderr())
  end)

  it("--watch reloads the file, keeps the client and sends list_changed", function()
    local p <close>, file = started(nil, { "--watch" })
    local f = assert(io.open(file, "wb"))
    f:write([[
      local claude = require "claude"
      return claude.server("calc", { claude.tool("mul", { a = "number", b = "number" },
        function(a) return a.a * a.b end) })
    ]])
    f:close()
    local m = read(p)
    assert.equal("notifications/tools/list_changed", m.method)
    p:write_json(call(1, "mul", { a = 6, b = 7 }))
    assert.equal("42", answer(p, 1).result.content[1].text)
    -- a file that fails to load keeps the previous tools, and says why
    f = assert(io.open(file, "wb"))
    f:write("this is not lua")
    f:close()
    for _ = 1, 200 do -- until the server says it kept them
      if p:stderr():find("keeping the previous tools", 1, true) then break end
      claude.sleep(0.05)
    end
    assert.matches("keeping the previous tools", p:stderr())
    p:write_json(call(2, "mul", { a = 2, b = 3 }))
    assert.equal("6", answer(p, 2).result.content[1].text)
  end)

  -- the usual call under a budget (the defaults) and with none (the server's budget = false)
  for _, off in ipairs { false, true } do
    it("answers the usual tools/call of protocol 2026-07-28 as it answers the same message "
      .. "spelled otherwise" .. (off and ", budgets off" or ""), function()
      -- the claude CLI's request with the envelope: the envelope reader's way (the text of the
      -- envelope kept and compared, a tool that cannot see its ctx served without one), and
      -- the same message with the CLI's keys between the envelope's members (the decoder's
      -- way): the answers must be the same, whatever the tool does
      local p <close> = serve([[
        local claude = require "claude"
        local srv
        srv = claude.server("eras", {
          claude.tool("add", { a = "number", b = "number" }, function(a) return a.a + a.b end),
          claude.tool("slow", function() claude.sleep(0.01) return "slept" end),
          claude.tool("data", function() return { x = 1 } end),
          claude.tool("boom", function() error("kaboom", 0) end),
          claude.tool("rpc", function()
            error(claude.errors.new("rpc", "no", { code = -32099 }))
          end),
          claude.tool("over", function() claude.sleep(5) end, { budget = { seconds = 0.05 } }),
          claude.tool("ctx", function(_, ctx)
            return table.concat({ ctx.era, ctx.protocol_version, ctx.client_info.name,
              tostring(ctx.tool_use_id), tostring(ctx.client_capabilities.roots ~= nil) }, " ")
          end),
          claude.tool("waits", function(_, ctx)
            claude.sleep(0.01)
            return ctx.client_info.name .. " " .. tostring(ctx.tool_use_id)
          end),
          claude.tool("later", function() return "plain" end),
          claude.tool("swap", function()
            srv:remove("later")
            srv:add(claude.tool("later", function(_, ctx) return ctx.era end))
            return "swapped"
          end),
          claude.tool("drop", function()
            srv:remove("add")
            srv:add(claude.tool("nosuch", function() return "new" end))
            return "dropped"
          end),
        }]] .. (off and ", { budget = false }" or "") .. [[)
        return srv
      ]])
      local V = '"io.modelcontextprotocol/protocolVersion":"2026-07-28"'
      local C = '"io.modelcontextprotocol/clientCapabilities":{"roots":{}}'
      local I = '"io.modelcontextprotocol/clientInfo":{"name":"spec","version":"1"}'
      local function line(id, name, args, spread)
        local cli = '"claudecode/toolUseId":"toolu_' .. id .. '","progressToken":' .. id
        local meta = spread and V .. "," .. cli .. "," .. C .. "," .. I
          or V .. "," .. C .. "," .. I .. "," .. cli
        return '{"jsonrpc":"2.0","id":' .. id .. ',"method":"tools/call","params":{"name":"'
          .. name .. '","arguments":' .. args .. ',"_meta":{' .. meta .. "}}}\n"
      end
      local calls = { { "add", '{"a":1,"b":2}' }, { "slow", "{}" }, { "data", "{}" },
        { "boom", "{}" }, { "rpc", "{}" }, { "over", "{}" }, { "ctx", "{}" }, { "waits", "{}" },
        { "add", '{"a":"x"}' }, { "nosuch", "{}" } }
      local answers = {}
      for round = 1, 3 do
        for i, c in ipairs(calls) do
          local id = round * 100 + i
          assert(p:write(line(id, c[1], c[2], round == 3)))
          local r = answer(p, id)
          r.id = nil
          local content = r.result and r.result.content
          if content then content[1].text = content[1].text:gsub("toolu_%d+", "toolu_") end
          if round == 1 then answers[i] = r else assert.same(answers[i], r, c[1]) end
        end
      end
      local function text(i) return answers[i].result.content[1].text end
      assert.same({ "3", "slept", '{"x":1}', "kaboom" }, { text(1), text(2), text(3), text(4) })
      assert.equal(-32099, answers[5].error.code)
      assert.matches("time budget", text(6))
      assert.equal("modern 2026-07-28 spec toolu_ true", text(7))
      assert.equal("spec toolu_", text(8))
      assert.matches("validation", text(9))
      assert.equal(-32602, answers[10].error.code)
      assert.equal("complete", answers[1].result.resultType)
      -- a tool replaced by one that sees its ctx
      local function later(id)
        assert(p:write(line(id, "later", "{}")))
        return answer(p, id).result.content[1].text
      end
      assert.equal("plain", later(300))
      assert(p:write(line(301, "swap", "{}")))
      assert.equal("swapped", answer(p, 301).result.content[1].text)
      assert.equal("modern", later(302))
      -- a tool removed after its usual calls is unknown; one added under a name asked before
      -- is found
      assert(p:write(line(304, "drop", "{}")))
      assert.equal("dropped", answer(p, 304).result.content[1].text)
      assert(p:write(line(305, "add", '{"a":1,"b":2}')))
      assert.equal(-32602, answer(p, 305).error.code)
      assert(p:write(line(306, "nosuch", "{}")))
      assert.equal("new", answer(p, 306).result.content[1].text)
      -- a call that waits, cancelled
      assert(p:write(line(400, "over", "{}")))
      p:write_json { jsonrpc = "2.0", method = "notifications/cancelled",
        params = { requestId = 400 } }
      assert.matches("cancelled", answer(p, 400).result.content[1].text)
    end)
  end

  it("--watch tells a listen of protocol 2026-07-28 that the lists changed", function()
    local p <close>, file = serve(nil, { "--watch" })
    local meta = { ["io.modelcontextprotocol/protocolVersion"] = "2026-07-28",
      ["io.modelcontextprotocol/clientCapabilities"] = {} }
    p:write_json { jsonrpc = "2.0", id = "L", method = "subscriptions/listen",
      params = { _meta = meta, notifications = { toolsListChanged = true } } }
    local ack = read(p)
    assert.equal("notifications/subscriptions/acknowledged", ack.method)
    local f = assert(io.open(file, "wb"))
    f:write([[
      local claude = require "claude"
      return claude.server("calc", { claude.tool("mul", { a = "number", b = "number" },
        function(a) return a.a * a.b end) })
    ]])
    f:close()
    local m = read(p)
    assert.equal("notifications/tools/list_changed", m.method)
    assert.equal("L", m.params._meta["io.modelcontextprotocol/subscriptionId"])
    p:write_json { jsonrpc = "2.0", id = 1, method = "tools/call",
      params = { name = "mul", arguments = { a = 6, b = 7 }, _meta = meta } }
    local r = answer(p, 1)
    assert.same({ "42", "complete" }, { r.result.content[1].text, r.result.resultType })
  end)
end)
