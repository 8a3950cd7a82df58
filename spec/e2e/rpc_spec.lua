-- A JSON-RPC peer over a child's stdio, against a real MCP server
-- (@modelcontextprotocol/server-everything): the shape an MCP client takes.
local claude = require "claude"
local rpc = require "claude.rpc"
local process = require "claude.process"
local errors = require "claude.errors"
local json = require "claude.json"
local harness = require "support.harness"

local T = 20
local NODE = harness.root .. "/node_modules/.bin/node"
local EVERYTHING = harness.root .. "/node_modules/@modelcontextprotocol/server-everything/dist/"
  .. "index.js"

-- Starts server-everything and a peer on its stdio; `handlers` answer the
-- server's requests. Returns the peer, the process and the notifications seen.
local function connect(handlers)
  local notes = {}
  local peer, proc
  proc = assert(process.spawn { NODE, args = { EVERYTHING, "stdio" }, stdout = "json",
    on_stdout = function(msg, err)
      if msg ~= nil then
        peer:receive(msg)
      elseif err then
        peer:fail(errors.new("protocol", "the server wrote a line that is not JSON: " .. err))
      end
    end,
    on_exit = function(code, signal)
      peer:fail(errors.new("process", "the server exited (code " .. code .. ", signal "
        .. signal .. ")", { exit_code = code, signal = signal, stderr_tail = proc:stderr() }))
    end,
  })
  peer = rpc.new {
    codec = rpc.jsonrpc,
    name = "MCP server",
    send = function(msg) return proc:write_json(msg) end,
    handlers = handlers,
    on_notification = function(method, params) notes[#notes + 1] = { method, params } end,
  }
  return peer, proc, notes
end

local function initialize(peer, capabilities)
  local init = assert(peer:request("initialize", { protocolVersion = "2025-06-18",
    capabilities = capabilities or json.object(),
    clientInfo = { name = "claudelua-spec", version = "0" } }, T))
  assert(peer:notify("notifications/initialized"))
  return init
end

local function text_of(result)
  return result.content[1].text
end

describe("an rpc peer on a real MCP server's stdio", function()
  before_each(harness.before)
  after_each(harness.after)

  it("initializes, lists and calls tools, and answers the server's own requests", function()
    local sampled
    local peer, proc <close> = connect {
      ["sampling/createMessage"] = function(params, ctx)
        sampled = { params.messages[1].content.text, ctx.method }
        return { role = "assistant", model = "lua", stopReason = "endTurn",
          content = { type = "text", text = "sampled by Lua" } }
      end,
    }
    local init = initialize(peer, { sampling = json.object() })
    assert.is_string(init.serverInfo.name)
    local names = {}
    for _, tool in ipairs(assert(peer:request("tools/list", nil, T)).tools) do
      names[tool.name] = true
    end
    assert.is_true(names.echo)
    assert.is_true(names["trigger-sampling-request"])
    assert.equal("Echo: hi", text_of(assert(peer:request("tools/call",
      { name = "echo", arguments = { message = "hi" } }, T))))
    local r = assert(peer:request("tools/call", { name = "trigger-sampling-request",
      arguments = { prompt = "ping" } }, T))
    assert.matches("sampled by Lua", json.encode(r), 1, true)
    assert.matches("ping", sampled[1], 1, true)
    assert.equal("sampling/createMessage", sampled[2])
    peer:close()
    proc:close()
  end)

  it("gets an error answer as kind remote with the JSON-RPC code", function()
    local peer, proc <close> = connect()
    initialize(peer)
    local r, err, kind = peer:request("no/such/method", nil, T)
    assert.is_nil(r)
    assert.equal("remote", kind)
    assert.equal(rpc.METHOD_NOT_FOUND, err.code)
    assert.matches("^request 'no/such/method' failed: ", err.message)
    peer:close()
    proc:close()
  end)

  it("delivers progress notifications, then the answer", function()
    local peer, proc <close>, notes = connect()
    initialize(peer)
    local r = assert(peer:request("tools/call", { name = "trigger-long-running-operation",
      arguments = { duration = 0.2, steps = 2 }, _meta = { progressToken = "tok" } }, T))
    assert.matches("Long running operation completed", text_of(r), 1, true)
    local progress = {}
    for _, n in ipairs(notes) do
      if n[1] == "notifications/progress" and n[2].progressToken == "tok" then
        progress[#progress + 1] = n[2].progress
      end
    end
    assert.same({ 1, 2 }, progress)
    peer:close()
    proc:close()
  end)

  it("cancels a request it stops waiting for; the server goes on", function()
    local peer, proc <close> = connect()
    initialize(peer)
    local t = claude.spawn(function()
      return peer:request("tools/call", { name = "trigger-long-running-operation",
        arguments = { duration = 60, steps = 60 } }, T)
    end)
    claude.sleep(0.2)
    t:cancel("not needed")
    local ok, err = t:join(T)
    assert.is_false(ok)
    assert.is_true(errors.is(err, "cancelled"))
    assert.equal(0, peer:pending_count())
    assert.equal("Echo: still here", text_of(assert(peer:request("tools/call",
      { name = "echo", arguments = { message = "still here" } }, T))))
    peer:close()
    proc:close()
  end)

  it("ends every pending wait with the exit when the server dies", function()
    local peer, proc <close> = connect()
    initialize(peer)
    local tasks = {}
    for i = 1, 2 do
      tasks[i] = claude.spawn(function()
        return peer:request("tools/call", { name = "trigger-long-running-operation",
          arguments = { duration = 60, steps = 60 } }, 60)
      end)
    end
    claude.sleep(0.2)
    proc:signal("kill")
    for i = 1, 2 do
      local _, r, err, kind = tasks[i]:join(T)
      assert.is_nil(r)
      assert.equal("process", kind)
      assert.equal(9, err.signal)
    end
    local r, err = peer:request("ping", nil, T)
    assert.is_nil(r)
    assert.equal("process", err.kind)
    peer:close()
    proc:close()
  end)
end)
