-- The remote protocol's pieces (docs/embedding.md#the-remote-protocol): the thin client's JSON
-- and peer (plain Lua 5.1 code, run here on 5.4 and, where luajit is installed, on LuaJIT),
-- and `claude.remote`'s answers, the two ends wired to each other without a process.
local thin_json = require "claude.thin.json"
local thin_peer = require "claude.thin.peer"
local tasks = require "claude.thin.tasks"
local json = require "claude.json"
local remote = require "claude.remote"
local harness = require "support.harness"

describe("claude.thin.json", function()
  it("round-trips what the protocol carries", function()
    local value = { s = "tab\t\"quote\" é \1", n = -12.5, i = 42, big = 2 ^ 53 + 2, t = true,
      f = false, list = { 1, "two", { three = 3 } }, empty = {}, none = thin_json.null }
    local back = assert(thin_json.decode(thin_json.encode(value)))
    assert.same(value, back)
    -- and claudelua's own codec reads what it writes, and the other way round
    assert.same(json.decode(thin_json.encode(value)).list, back.list)
    assert.same({ a = { 1, 2 }, u = "\u{1F600}" },
      thin_json.decode(json.encode { a = { 1, 2 }, u = "\u{1F600}" }))
  end)

  it("reads escapes and surrogate pairs, and tells empty arrays from objects", function()
    assert.equal("\u{1F600}\n/", thin_json.decode('"\\ud83d\\ude00\\n\\/"'))
    assert.equal("[]", thin_json.encode(thin_json.decode("[]")))
    assert.equal("{}", thin_json.encode({}))
    assert.equal("[1,2]", thin_json.encode { 1, 2 })
  end)

  it("refuses what is not JSON, and what JSON cannot carry", function()
    local v, err = thin_json.decode('{"a":1,}')
    assert.is_nil(v)
    assert.matches("invalid JSON at byte %d+", err)
    assert.is_nil((thin_json.decode('"open')))
    assert.is_nil((thin_json.decode("1 2")))
    assert.has_error(function() thin_json.encode { f = print } end, "cannot encode a function")
    assert.has_error(function() thin_json.encode(0 / 0) end)
  end)

  it("runs on LuaJIT", function()
    local code = harness.sh("command -v luajit")
    if code ~= 0 then
      pending("luajit is not installed (Debian: apt-get install luajit)")
      return
    end
    local script = "package.path = 'lua/?.lua;lua/?/init.lua;' .. package.path\n"
      .. "local j = require 'claude.thin.json'\n"
      .. "local t = j.decode(j.encode { a = { 1, 'x\\n' }, b = 2 ^ 40 })\n"
      .. "assert(t.a[2] == 'x\\n' and t.b == 2 ^ 40)\n"
      .. "local c = require 'claude'\n" -- the thin client, on Lua 5.1
      .. "assert(c.thin and c.tool and c.server and c.query and c.mcp.connect)\n"
      .. "print(c.server('s', { c.tool('t', function() end) }):tool_names()[1])"
    local rc, out, err = harness.sh("luajit -e " .. harness.quote(script))
    assert.equal(0, rc, err)
    assert.equal("mcp__s__t\n", out)
  end)
end)

describe("claude.thin.peer", function()
  local sent, peer
  before_each(function()
    sent = {}
    peer = thin_peer.new {
      send = function(line) sent[#sent + 1] = line end,
      handlers = { double = function(p) return p.n * 2 end,
        broken = function() error("no luck", 0) end },
    }
  end)

  it("frames lines, however the bytes arrive, and answers requests from tasks", function()
    peer:feed('{"jsonrpc":"2.0","id":7,"method":"dou')
    assert.equal(0, #sent)
    peer:feed('ble","params":{"n":21}}\n{"jsonrpc":"2.0","id":8,"method":"broken"}\n')
    assert.same({ jsonrpc = "2.0", id = 7, result = 42 }, json.decode(sent[1]))
    assert.same({ code = -32603, message = "no luck" }, json.decode(sent[2]).error)
    peer:feed('{"jsonrpc":"2.0","id":9,"method":"nope"}\n')
    assert.equal(-32601, json.decode(sent[3]).error.code)
  end)

  it("matches answers to requests, and fails the waiting ones when the other side goes",
    function()
    local got = {}
    local id = peer:start("query", { prompt = "hi" }, function(r, e) got[#got + 1] = { r, e } end)
    assert.same({ jsonrpc = "2.0", id = id, method = "query", params = { prompt = "hi" } },
      json.decode(sent[1]))
    peer:feed('{"jsonrpc":"2.0","id":' .. id .. ',"result":{"ok":true}}\n')
    assert.same({ ok = true }, got[1][1])
    peer:start("query", {}, function(r, e) got[#got + 1] = { r, e } end)
    peer:fail(thin_peer.error("exited", "claudelua remote exited (code 1)"))
    assert.equal("exited", got[2][2].kind)
    peer:start("late", {}, function(r, e) got[#got + 1] = { r, e } end)
    assert.equal("exited", got[3][2].kind)
  end)

  it("tells the other side when a request is cancelled", function()
    local id = peer:start("query", {}, function() error("not called") end)
    assert.is_true(peer:cancel(id, "enough"))
    assert.same({ requestId = id, reason = "enough" }, json.decode(sent[2]).params)
    peer:feed('{"jsonrpc":"2.0","id":' .. id .. ',"result":{}}\n') -- dropped
  end)

  it("waits inside a task without blocking, and refuses to wait outside one", function()
    local result
    tasks.spawn(function() result = { peer:request("double", { n = 1 }) } end)
    assert.is_nil(result)
    peer:feed('{"jsonrpc":"2.0","id":1,"result":2}\n')
    assert.same({ 2 }, result)
    assert.has_error(function() peer:request("x") end,
      "this waits, and the host's loop must not block: call it inside claude.spawn")
  end)
end)

describe("claude.remote", function()
  -- The thin peer and the remote, each writing into the other.
  local function wire(handlers)
    local host, far
    host = thin_peer.new { handlers = handlers,
      send = function(line) far.peer:receive(json.decode(line)) end }
    far = remote.new(function(msg) host:feed(json.encode(msg) .. "\n"); return true end)
    return host, far
  end

  it("answers initialize with its protocol", function()
    local host = wire {}
    local result
    host:start("initialize", { protocol = 1 }, function(r) result = r end)
    harness.task(function()
      while not result do require("claude").sleep(0.001) end
    end, 10)()
    assert.equal(remote.PROTOCOL, result.protocol)
    assert.equal(_VERSION, result.lua)
  end)

  it("answers a method it does not know, and a query without a prompt, with errors", function()
    local host = wire {}
    local errs = {}
    host:start("nope", {}, function(_, e) errs[#errs + 1] = e end)
    host:start("query", {}, function(_, e) errs[#errs + 1] = e end)
    harness.task(function()
      while #errs < 2 do require("claude").sleep(0.001) end
    end, 10)()
    assert.matches("Method not found", errs[1].message)
    assert.matches("'prompt' expected", errs[2].message)
  end)
end)
