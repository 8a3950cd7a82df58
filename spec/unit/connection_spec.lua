-- claude.mcp.server.connection with a fake transport: the messages it sends, and their related ids.
local claude = require "claude"
local json = require "claude.json"
local connection = require "claude.mcp.server.connection"
local harness = require "support.harness"

local function init(id, caps)
  return { jsonrpc = "2.0", id = id or 0, method = "initialize", params = {
    protocolVersion = "2025-11-25", capabilities = caps or {},
    clientInfo = { name = "spec", version = "1" } } }
end

local function call(id, name, args)
  return { jsonrpc = "2.0", id = id, method = "tools/call",
    params = { name = name, arguments = args or {} } }
end

-- A connection whose messages land in `sent` as { msg, related }.
local function open(server, opts)
  local sent = {}
  opts = opts or {}
  opts.server = server
  opts.send = function(msg, related)
    sent[#sent + 1] = { msg = json.decode(json.encode(msg)), related = related }
    return true
  end
  return connection.new(opts), sent
end

-- Runs `fn` in a task and the loop until everything is done.
local function run(fn)
  local t = claude.spawn(fn)
  if not harness.in_task() then claude.run() end -- inside a task (the host), join waits
  local ok, err = t:join()
  assert(ok, err)
  if harness.in_task() then claude.sleep(0.01) end -- the answers of tasks it started
end

local function server(extra)
  local items = {
    claude.tool("echo", { text = "string" }, function(a) return a.text end),
    claude.tool("ask", function(_, ctx)
      local r, err = ctx.sample { messages = json.array(), maxTokens = 5 }
      if not r then return nil, err end
      return "model said " .. r.content.text
    end),
    claude.tool("elicit", function(_, ctx)
      local r, err = ctx.elicit { message = "name?", requestedSchema = { type = "object" } }
      if not r then return nil, err end
      return r.action
    end),
    claude.tool("roots", function(_, ctx)
      local roots, err = ctx.roots()
      if not roots then return nil, err end
      return roots[1].uri
    end),
    claude.tool("custom", function(_, ctx)
      local r, err = ctx.request("x/custom", { n = 1 })
      if not r then return nil, err end
      return r.answer
    end),
    claude.tool("wait", function() claude.sleep(30) return "done" end),
    claude.resource { uri = "mem://a", name = "a", text = "A" },
  }
  for _, i in ipairs(extra or {}) do items[#items + 1] = i end
  return claude.server("s", items, { subscribe = true })
end

describe("claude.mcp.server.connection", function()
  before_each(harness.before)
  after_each(harness.after)

  it("relates each answer to its request and records what initialize said", function()
    local conn, sent = open(server())
    run(function()
      conn:receive(init(7, { sampling = {} }))
      conn:receive(call(8, "echo", { text = "hi" }))
    end)
    assert.is_true(conn.initialized)
    assert.equal("2025-11-25", conn.protocol_version)
    assert.equal("spec", conn.client_info.name)
    assert.same({ sampling = {} }, conn.client_capabilities)
    assert.equal(7, sent[1].related)
    assert.same({ content = { { type = "text", text = "hi" } } }, sent[2].msg.result)
    assert.equal(8, sent[2].related)
  end)

  it("sends a tool's sampling request to the client and waits for the answer", function()
    local conn, sent = open(server())
    run(function()
      conn:receive(init(0, { sampling = {} }))
      conn:receive(call("c1", "ask"))
      local req = sent[2].msg
      assert.equal("sampling/createMessage", req.method)
      assert.equal("c1", sent[2].related)
      conn:receive { jsonrpc = "2.0", id = req.id, result = {
        role = "assistant", content = { type = "text", text = "yes" }, model = "m" } }
    end)
    assert.equal("model said yes", sent[3].msg.result.content[1].text)
    assert.equal("c1", sent[3].related)
  end)

  it("elicits, lists roots and sends any request through ctx", function()
    local conn, sent = open(server())
    run(function()
      conn:receive(init(0, { elicitation = {}, roots = {} }))
      conn:receive(call(1, "elicit"))
      conn:receive { jsonrpc = "2.0", id = sent[#sent].msg.id, result = { action = "decline" } }
      conn:receive(call(2, "roots"))
      assert.equal("roots/list", sent[#sent].msg.method)
      conn:receive { jsonrpc = "2.0", id = sent[#sent].msg.id,
        result = { roots = { { uri = "file:///w" } } } }
      conn:receive(call(3, "custom"))
      assert.same({ n = 1 }, sent[#sent].msg.params)
      conn:receive { jsonrpc = "2.0", id = sent[#sent].msg.id, result = { answer = "42" } }
    end)
    local answers = {}
    for _, s in ipairs(sent) do
      if s.msg.result and s.msg.result.content then answers[s.msg.id] = s.msg.result end
    end
    assert.equal("decline", answers[1].content[1].text)
    assert.equal("file:///w", answers[2].content[1].text)
    assert.equal("42", answers[3].content[1].text)
  end)

  it("fails a request the client's capabilities do not allow, and an error answer", function()
    local conn, sent = open(server())
    run(function()
      conn:receive(init(0, {}))
      conn:receive(call(1, "ask"))
      conn:receive(call(2, "custom"))
      conn:receive { jsonrpc = "2.0", id = sent[#sent].msg.id,
        error = { code = -32601, message = "no such method" } }
    end)
    assert.is_true(sent[2].msg.result.isError)
    assert.matches("does not support sampling", sent[2].msg.result.content[1].text)
    assert.is_true(sent[4].msg.result.isError)
    assert.matches("no such method", sent[4].msg.result.content[1].text)
  end)

  it("refuses requests to the client when stateless, and needs no initialize", function()
    local conn, sent = open(server(), { stateless = true })
    run(function() conn:receive(call(1, "ask")) end)
    assert.is_true(sent[1].msg.result.isError)
    assert.matches("stateless", sent[1].msg.result.content[1].text)
  end)

  it("close cancels calls in flight, drops their answers and fails client requests",
    function()
      local conn, sent = open(server())
      local closed
      conn._on_close = function(reason) closed = reason end
      run(function()
        conn:receive(init(0, { sampling = {} }))
        conn:receive(call(1, "wait"))
        conn:receive(call(2, "ask"))
        assert.equal(2, conn:pending())
        conn:close("client went away")
      end)
      assert.equal(2, #sent) -- the initialize answer and the sampling request, nothing after
      assert.equal("client went away", closed)
      assert.equal(0, conn:pending())
      conn:receive(call(3, "echo", { text = "late" }))
      assert.equal(2, #sent)
    end)

  it("tells only the subscribers of a resource that it changed", function()
    local srv = server()
    local a, sent_a = open(srv)
    local b, sent_b = open(srv)
    run(function()
      a:receive(init(0))
      b:receive(init(0))
      a:receive { jsonrpc = "2.0", id = 1, method = "resources/subscribe",
        params = { uri = "mem://a" } }
      srv:resource_updated("mem://a")
    end)
    assert.same({}, sent_a[2].msg.result)
    assert.same({ jsonrpc = "2.0", method = "notifications/resources/updated",
      params = { uri = "mem://a" } }, sent_a[3].msg)
    assert.equal(1, #sent_b)
    run(function()
      a:receive { jsonrpc = "2.0", id = 2, method = "resources/unsubscribe",
        params = { uri = "mem://a" } }
      srv:resource_updated("mem://a")
    end)
    assert.equal(4, #sent_a)
  end)

  it("announces tools added and removed to every live connection", function()
    local srv = server()
    local a, sent_a = open(srv)
    local b, sent_b = open(srv)
    run(function()
      a:receive(init(0))
      b:receive(init(0))
      local t = claude.tool("late", function() return 1 end)
      srv:add(t)
      assert.equal(t, srv:remove("late"))
      b:close()
      srv:add(claude.tool("later", function() return 1 end))
    end)
    assert.equal("notifications/tools/list_changed", sent_a[2].msg.method)
    assert.equal("notifications/tools/list_changed", sent_a[3].msg.method)
    assert.equal("notifications/tools/list_changed", sent_a[4].msg.method)
    assert.equal(3, #sent_b)
  end)

  it("answers completion/complete from a claude.completion", function()
    local srv = server {
      claude.prompt { name = "greet", arguments = { "name" }, get = function(a) return a.name end },
      claude.completion { ref = { type = "ref/prompt", name = "greet" },
        complete = function(arg, ctx)
          return { arg.value .. "a", arg.value .. "b", ctx.arguments.other }
        end },
    }
    local conn, sent = open(srv)
    run(function()
      conn:receive(init(0))
      conn:receive { jsonrpc = "2.0", id = 1, method = "completion/complete", params = {
        ref = { type = "ref/prompt", name = "greet" }, argument = { name = "name", value = "x" },
        context = { arguments = { other = "o" } } } }
      conn:receive { jsonrpc = "2.0", id = 2, method = "completion/complete", params = {
        ref = { type = "ref/prompt", name = "other" }, argument = { name = "n", value = "" } } }
      conn:receive { jsonrpc = "2.0", id = 3, method = "completion/complete", params = {
        ref = { type = "ref/nope" }, argument = { name = "n", value = "" } } }
    end)
    assert.same({}, sent[1].msg.result.capabilities.completions)
    assert.same({ values = { "xa", "xb", "o" }, total = 3, hasMore = false },
      sent[2].msg.result.completion)
    assert.same({ values = {}, hasMore = false }, sent[3].msg.result.completion)
    assert.equal(-32602, sent[4].msg.error.code)
  end)

  it("answers bad input with errors and goes on", function()
    local conn, sent = open(server())
    run(function()
      conn:receive_invalid("unexpected character", "{x")
      conn:receive_oversized("line exceeds the limit")
      conn:receive(42)
      conn:receive(json.array())
      conn:receive(init(1))
      conn:receive { { jsonrpc = "2.0", id = 2, method = "ping" }, { jsonrpc = "2.0", id = 3,
        method = "ping" } }
    end)
    assert.equal(-32700, sent[1].msg.error.code)
    assert.equal(json.null, sent[1].msg.id)
    assert.equal(-32600, sent[2].msg.error.code)
    assert.equal(-32600, sent[3].msg.error.code)
    assert.equal(-32600, sent[4].msg.error.code)
    assert.equal(1, sent[5].msg.id)
    assert.equal(2, sent[6].msg.id)
    assert.equal(3, sent[7].msg.id)
  end)

  it("serves a new server after set_server and says the lists changed", function()
    local conn, sent = open(server())
    run(function()
      conn:receive(init(0))
      conn:set_server(claude.server("s", { claude.tool("two", function() return 2 end) }))
      conn:receive(call(1, "two"))
    end)
    assert.equal("notifications/tools/list_changed", sent[2].msg.method)
    assert.equal("2", sent[#sent].msg.result.content[1].text)
  end)

  it("reports misuse at the caller's line", function()
    assert.has_error(function() connection.new { server = 1, send = print } end,
      "bad field 'server' to 'new' (claude.Server expected, got number)")
    assert.has_error(function() connection.new { server = server() } end,
      "bad field 'send' to 'new' (function expected, got nil)")
    assert.has_error(function() connection.new { server = server(), send = print, sate = 1 } end,
      "unknown field 'sate' to 'new' (did you mean 'state'?)")
  end)
end)

describe("claude.mcp.server.connection, the two eras", function()
  before_each(harness.before)
  after_each(harness.after)

  local PV, CAPS = "io.modelcontextprotocol/protocolVersion",
    "io.modelcontextprotocol/clientCapabilities"

  local function modern_call(id, name, args, caps)
    return { jsonrpc = "2.0", id = id, method = "tools/call", params = { name = name,
      arguments = args or {}, _meta = { [PV] = "2026-07-28", [CAPS] = caps or {} } } }
  end

  local function discover(id)
    return { jsonrpc = "2.0", id = id, method = "server/discover",
      params = { _meta = { [PV] = "2026-07-28", [CAPS] = {} } } }
  end

  it("answers server/discover without pinning: initialize may follow", function()
    local conn, sent = open(server())
    run(function()
      conn:receive(discover("probe"))
      assert.is_nil(conn.era)
      conn:receive(init(1))
    end)
    assert.same({ "2026-07-28" }, sent[1].msg.result.supportedVersions)
    assert.equal("legacy", conn.era)
    assert.equal("2025-11-25", sent[2].msg.result.protocolVersion)
  end)

  it("pins the modern era at its first enveloped request", function()
    local conn, sent = open(server())
    run(function()
      conn:receive(modern_call(1, "echo", { text = "hi" }))
      conn:receive(init(2))
      conn:receive { jsonrpc = "2.0", id = 3, method = "tools/list", params = {} }
      conn:receive(modern_call(4, "elicit", nil, { elicitation = {} }))
    end)
    assert.equal("modern", conn.era)
    assert.same({ "hi", "complete" }, { sent[1].msg.result.content[1].text,
      sent[1].msg.result.resultType })
    assert.equal(-32022, sent[2].msg.error.code) -- no initialize once modern
    assert.equal(-32602, sent[3].msg.error.code) -- no envelope
    assert.equal("input_required", sent[4].msg.result.resultType)
    assert.is_false(conn.initialized)
  end)

  it("asks the client with real requests in the legacy era (ctx.input)", function()
    local srv = server { claude.tool("both", function(_, ctx)
      local r, err = ctx.input { a = { method = "elicitation/create", params = { message = "?" } },
        b = { method = "roots/list" } }
      if not r then return nil, err end
      return r.a.action .. " " .. #r.b.roots .. " " .. ctx.era .. " " .. ctx.protocol_version
    end) }
    local conn, sent = open(srv)
    run(function()
      conn:receive(init(0, { elicitation = {}, roots = {} }))
      conn:receive(call(1, "both"))
      assert.equal("elicitation/create", sent[2].msg.method)
      conn:receive { jsonrpc = "2.0", id = sent[2].msg.id, result = { action = "accept" } }
      assert.equal("roots/list", sent[3].msg.method)
      conn:receive { jsonrpc = "2.0", id = sent[3].msg.id, result = { roots = { {} } } }
    end)
    assert.equal("accept 1 legacy 2025-11-25", sent[4].msg.result.content[1].text)
  end)

  it("reports a misuse of ctx.input as the tool's error", function()
    local srv = server { claude.tool("bad", function(_, ctx)
      return ctx.input { a = { method = "tools/call" } }
    end) }
    local conn, sent = open(srv)
    run(function()
      conn:receive(init(0))
      conn:receive(call(1, "bad"))
    end)
    assert.is_true(sent[2].msg.result.isError)
    assert.matches("bad argument #1 to 'input'", sent[2].msg.result.content[1].text)
  end)
end)
