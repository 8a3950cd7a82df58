-- claude.mcp.connect over Streamable HTTP against a small MCP server in Lua
-- (claude.http.server, on the same loop) that misbehaves on request: HTTP
-- 5xx, a malformed SSE stream, an expired session, an answer that never
-- comes. Each gives a clear error of the right kind and nothing hangs.
-- luacheck: ignore 211/_srv (the server is kept only to be closed)
local claude = require "claude"
local json = require "claude.json"
local http_server = require "claude.http.server"
local harness = require "support.harness"

local T = 10

local function text(r) return r.content[1].text end

-- The fake server; `log` records what it saw.
local function start(port)
  local log = { inits = 0, deletes = 0, sessions = {}, versions = {},
    release = require("claude.async").event() }
  local session = 0
  local JSON = { ["content-type"] = "application/json" }
  local srv = assert(http_server.listen { port = port, on_request = function(req, res)
    if req.method == "DELETE" then
      log.deletes = log.deletes + 1
      log.sessions[req.headers["mcp-session-id"]] = "deleted"
      return res:respond(200)
    end
    if req.method == "GET" then return res:respond(405) end
    local msg = json.decode(req.body)
    local sid = req.headers["mcp-session-id"]
    if msg.method == "initialize" then
      log.inits = log.inits + 1
      session = session + 1
      log.sessions["s" .. session] = "open"
      return res:respond(200, { ["content-type"] = "application/json",
        ["mcp-session-id"] = "s" .. session }, json.encode { jsonrpc = "2.0", id = msg.id,
        result = { protocolVersion = msg.params.protocolVersion,
          capabilities = { tools = json.object() }, serverInfo = { name = "fake-http",
            version = "1" } } })
    end
    if log.sessions[sid] ~= "open" then return res:respond(404) end
    log.versions[#log.versions + 1] = req.headers["mcp-protocol-version"]
    if msg.id == nil then return res:respond(202) end
    local name = msg.params and msg.params.name
    if msg.method == "ping" then
      return res:respond(200, JSON, json.encode { jsonrpc = "2.0", id = msg.id,
        result = json.object() })
    elseif name == "fail5xx" then
      return res:respond(503, { ["content-type"] = "text/plain" }, "overloaded")
    elseif name == "bad_sse" then
      res:start(200, { ["content-type"] = "text/event-stream" })
      res:write("data: {not json\n\n")
      return res:finish()
    elseif name == "bad_utf8_sse" or name == "bad_utf8_json" then
      local answer = '{"jsonrpc":"2.0","id":' .. json.encode(msg.id) .. ',"result":{"content":'
        .. '[{"type":"text","text":"bad \255"}]}}'
      if name == "bad_utf8_json" then return res:respond(200, JSON, answer) end
      res:start(200, { ["content-type"] = "text/event-stream" })
      res:write("data: " .. answer .. "\n\n")
      return res:finish()
    elseif name == "sse" then
      res:start(200, { ["content-type"] = "text/event-stream" })
      res:write("event: message\ndata: " .. json.encode { jsonrpc = "2.0",
        method = "notifications/message", params = { level = "info", data = "hi" } } .. "\n\n")
      res:write("data: " .. json.encode { jsonrpc = "2.0", id = msg.id,
        result = { content = { { type = "text", text = "over sse" } } } } .. "\n\n")
      return res:finish()
    elseif name == "expire" then
      log.sessions[sid] = "expired"
      return res:respond(404)
    elseif name == "never" then
      log.release:wait(T) -- until the spec lets it go
    end
    res:respond(200, JSON, json.encode { jsonrpc = "2.0", id = msg.id,
      result = { content = { { type = "text", text = "json " .. tostring(name) } } } })
  end })
  return srv, "http://127.0.0.1:" .. srv:port() .. "/mcp", log
end

describe("claude.mcp client over Streamable HTTP", function()
  before_each(harness.before)
  after_each(harness.after)

  -- every case runs in a task, so that the in-process server's tasks run too
  local function case(fn) return harness.task(fn, 3 * T) end

  it("sends the session id and protocol version, answers over JSON and SSE", case(function()
    local _srv <close>, url, log = start()
    local notes = {}
    local c = assert(claude.mcp.connect { url = url, timeout = T,
      on_notification = function(m) notes[#notes + 1] = m end })
    assert.equal("fake-http", c.server_info.name)
    assert.equal("json a", text(assert(c:call_tool("a"))))
    assert.equal("over sse", text(assert(c:call_tool("sse"))))
    assert.same({ "notifications/message" }, notes)
    assert.equal(c.protocol_version, log.versions[1])
    c:close()
    assert.equal(1, log.deletes)
    assert.equal("deleted", log.sessions.s1)
  end))

  it("fails a call answered with HTTP 5xx, kind connection; others go on", case(function()
    local _srv <close>, url = start()
    local c <close> = assert(claude.mcp.connect { url = url, timeout = T })
    local r, err, kind = c:call_tool("fail5xx")
    assert.is_nil(r)
    assert.equal("connection", kind)
    assert.equal(503, err.status)
    assert.matches("HTTP 503: overloaded", err.message, 1, true)
    assert.equal("json ok", text(assert(c:call_tool("ok"))))
  end))

  it("reports a malformed SSE event, and fails the call the stream ended without",
    case(function()
      local _srv <close>, url = start()
      local problems = {}
      local c <close> = assert(claude.mcp.connect { url = url, timeout = T,
        on_error = function(e) problems[#problems + 1] = e end })
      local r, err, kind = c:call_tool("bad_sse")
      assert.is_nil(r)
      assert.equal("connection", kind)
      assert.matches("ended the stream before the answer", err.message)
      assert.equal("protocol", problems[1].kind)
      assert.matches("not JSON", problems[1].message)
      assert.equal("json ok", text(assert(c:call_tool("ok"))))
    end))

  it("fails at once a call whose answer is not UTF-8, over JSON and over SSE", case(function()
    local _srv <close>, url = start()
    local problems = {}
    local c <close> = assert(claude.mcp.connect { url = url, timeout = T,
      on_error = function(e) problems[#problems + 1] = e end })
    for _, name in ipairs { "bad_utf8_json", "bad_utf8_sse" } do
      local r, err, kind = c:call_tool(name)
      assert.is_nil(r)
      assert.equal("protocol", kind, name)
      assert.matches("not JSON %(invalid JSON: invalid UTF%-8 in string at byte", err.message)
    end
    assert.same({}, problems)
    assert.equal("json ok", text(assert(c:call_tool("ok"))))
  end))

  it("starts a new session after a 404 for the old one", case(function()
    local _srv <close>, url, log = start()
    local c <close> = assert(claude.mcp.connect { url = url, timeout = T, retry_delay = 0.01 })
    local r, _, kind = c:call_tool("expire")
    assert.is_nil(r)
    assert.equal("connection", kind)
    assert.equal("json again", text(assert(c:call_tool("again"))))
    assert.equal(2, log.inits)
    assert.equal(1, c.reconnects)
  end))

  it("reconnects to a server that went away and came back, in a new session",
    case(function()
      local srv, url = start()
      local port = srv:port()
      local states = {}
      local c <close> = assert(claude.mcp.connect { url = url, timeout = T,
        retry_delay = 0.05, max_retries = 50, on_error = function() end,
        on_state = function(_, new) states[#states + 1] = new end })
      srv:close()
      local r, _, kind = c:call_tool("a")
      assert.is_nil(r)
      assert.equal("connection", kind)
      assert.equal("reconnecting", c.state)
      local _srv <close>, _, log2 = start(port)
      assert.equal("json back", text(assert(c:call_tool("back"))))
      assert.equal(1, log2.inits)
      assert.equal("connected", states[#states])
    end))

  it("times out a call whose answer never comes", case(function()
    local _srv <close>, url, log = start()
    local c <close> = assert(claude.mcp.connect { url = url, timeout = T })
    local r, _, kind = c:call_tool("never", nil, { timeout = 0.2 })
    assert.is_nil(r)
    assert.equal("timeout", kind)
    assert.is_true(assert(c:ping()))
    log.release:set()
  end))

  it("reports the Streamable HTTP answer when neither transport works", case(function()
    local srv <close> = assert(http_server.listen { on_request = function(_, res)
      res:respond(404, { ["content-type"] = "text/plain" }, "no MCP here")
    end })
    local c, err, kind = claude.mcp.connect { url = "http://127.0.0.1:" .. srv:port() .. "/x",
      timeout = T }
    assert.is_nil(c)
    assert.equal("protocol", kind)
    assert.equal(404, err.status)
    assert.matches("HTTP 404: no MCP here", err.message, 1, true)
    assert.matches("HTTP+SSE transport of 2024-11-05 failed too", err.message, 1, true)
  end))

  it("gives a connection error when nothing listens", case(function()
    local c, err, kind = claude.mcp.connect { url = "http://127.0.0.1:1/mcp", timeout = T }
    assert.is_nil(c)
    assert.equal("connection", kind)
    assert.matches("127.0.0.1:1", err.message, 1, true)
  end))
end)
