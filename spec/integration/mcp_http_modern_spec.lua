-- `claudelua mcp --http` in protocol 2026-07-28, request by request: the HTTP status and
-- JSON-RPC error of each rung of the ladder (envelope, versions, standard headers, methods the
-- era removed), JSON or event-stream answers without a session, a listen's event stream, and
-- the legacy era beside it on the same endpoint.
local claude = require "claude"
local json = require "claude.json"
local http = require "claude.http.client"
local harness = require "support.harness"
local mcp_http = require "support.mcp_http"

local PV, CAPS = "io.modelcontextprotocol/protocolVersion",
  "io.modelcontextprotocol/clientCapabilities"

local function post(url, body, headers)
  local h = { ["content-type"] = "application/json",
    accept = "application/json, text/event-stream" }
  for k, v in pairs(headers or {}) do h[k] = v end
  local resp, err = http.request { method = "POST", url = url, headers = h,
    body = type(body) == "string" and body or json.encode(body), timeout = 30 }
  if not resp then
    assert(err.kind == "http", tostring(err))
    resp = { status = err.status, headers = err.headers, body = err.body }
  end
  return resp, resp.body ~= "" and json.decode(resp.body) or nil
end

local function msg(id, method, params, meta)
  params = params or {}
  params._meta = meta == nil and { [PV] = "2026-07-28", [CAPS] = {} } or meta or nil
  return { jsonrpc = "2.0", id = id, method = method, params = params }
end

local function std(method, name, extra)
  local h = { ["mcp-protocol-version"] = "2026-07-28", ["mcp-method"] = method,
    ["mcp-name"] = name }
  for k, v in pairs(extra or {}) do h[k] = v end
  return h
end

describe("claudelua mcp --http, protocol 2026-07-28", function()
  local server, url

  setup(function()
    server, url = mcp_http.start { harness.root .. "/spec/conformance/tools.lua" }
  end)

  teardown(function()
    server:signal("term")
    assert.equal(0, server:wait(10))
    server:close()
  end)

  it("answers with JSON, no session, stamps and serverInfo", function()
    local resp, r = post(url, msg(1, "tools/call", { name = "test_simple_text", arguments = {} }),
      std("tools/call", "test_simple_text"))
    assert.equal(200, resp.status)
    assert.matches("^application/json", resp.headers["content-type"])
    assert.is_nil(resp.headers["mcp-session-id"])
    assert.equal("complete", r.result.resultType)
    assert.equal("conformance-test-server",
      r.result._meta["io.modelcontextprotocol/serverInfo"].name)
  end)

  it("turns the answer into an event stream when the call reports progress", function()
    local m = msg(2, "tools/call", { name = "test_tool_with_progress", arguments = {} })
    m.params._meta.progressToken = "p"
    local resp = post(url, m, std("tools/call", "test_tool_with_progress"))
    assert.equal(200, resp.status)
    assert.matches("^text/event%-stream", resp.headers["content-type"])
    local events = {}
    for data in resp.body:gmatch("data: ([^\n]*)") do events[#events + 1] = json.decode(data) end
    assert.equal(4, #events)
    assert.equal("notifications/progress", events[1].method)
    assert.equal(2, events[4].id)
  end)

  it("refuses what the ladder refuses, with the request's id", function()
    local cases = {
      -- body, headers, status, code
      { msg(3, "tools/list", {}, false), std("tools/list"), 400, -32602 },
      { msg(4, "tools/list", {}, { [PV] = "2026-07-28" }), std("tools/list"), 400, -32602 },
      { msg(5, "tools/list", {}, { [PV] = "v999", [CAPS] = {} }),
        std("tools/list", nil, { ["mcp-protocol-version"] = "v999" }), 400, -32022 },
      { msg(6, "tools/list", {}, { [PV] = "v999", [CAPS] = {} }), std("tools/list"), 400,
        -32020 },
      { msg(7, "tools/list"), { ["mcp-method"] = "tools/list" }, 400, -32020 },
      { msg(8, "tools/list"), std("prompts/list"), 400, -32020 },
      { msg(9, "tools/list"), std("TOOLS/LIST"), 400, -32020 },
      { msg(10, "tools/call", { name = "test_simple_text" }), std("tools/call", "other"), 400,
        -32020 },
      { msg(11, "tools/call", { name = "test_x_mcp_header", arguments = { region = "eu" } }),
        std("tools/call", "test_x_mcp_header", { ["mcp-param-region"] = "us" }), 400, -32020 },
      { msg(12, "ping"), std("ping"), 404, -32601 },
      { msg(13, "initialize", { protocolVersion = "2025-11-25" }), std("initialize"), 404,
        -32601 },
    }
    for i, c in ipairs(cases) do
      local resp, r = post(url, c[1], c[2])
      assert.equal(c[3], resp.status, "case " .. i .. ": " .. resp.body)
      assert.equal(c[4], r.error.code, "case " .. i)
      assert.equal(c[1].id, r.id, "case " .. i)
    end
  end)

  it("takes header values with spaces around or in base64", function()
    local _, r = post(url, msg(14, "tools/call", { name = "test_x_mcp_header",
      arguments = { region = "Hello" } }), std("tools/call", "  test_x_mcp_header  ",
      { ["mcp-param-region"] = "=?base64?SGVsbG8=?=" }))
    assert.equal("region=Hello", r.result.content[1].text)
  end)

  it("has no GET stream, no batch and no answer to a notification", function()
    local resp, err = http.request { url = url, headers = { accept = "text/event-stream",
      ["mcp-protocol-version"] = "2026-07-28" }, timeout = 10 }
    assert.is_nil(resp)
    assert.equal(405, err.status)
    local bresp = post(url, { msg(15, "tools/list") }, std("tools/list"))
    assert.equal(400, bresp.status)
    local nresp = post(url, { jsonrpc = "2.0", method = "notifications/cancelled",
      params = { requestId = 1, _meta = { [PV] = "2026-07-28", [CAPS] = {} } } },
      std("notifications/cancelled"))
    assert.equal(202, nresp.status)
  end)

  it("streams a listen: the acknowledgement, then what it asked for", harness.task(function()
    local events = {}
    local stream <close> = assert(http.stream { method = "POST", url = url,
      headers = { ["content-type"] = "application/json",
        accept = "application/json, text/event-stream",
        ["mcp-protocol-version"] = "2026-07-28", ["mcp-method"] = "subscriptions/listen" },
      body = json.encode(msg("L", "subscriptions/listen",
        { notifications = { toolsListChanged = true } })), timeout = 30 })
    local got = claude.spawn(function()
      for event in stream:events() do
        events[#events + 1] = json.decode(event.data)
        if #events == 2 then break end
      end
    end)
    claude.sleep(0.2)
    post(url, msg(16, "tools/call", { name = "test_trigger_tool_change", arguments = {} }),
      std("tools/call", "test_trigger_tool_change"))
    assert(got:join(10))
    assert.equal("notifications/subscriptions/acknowledged", events[1].method)
    assert.equal("notifications/tools/list_changed", events[2].method)
    assert.equal("L", events[2].params._meta["io.modelcontextprotocol/subscriptionId"])
  end))

  it("serves each mounted server in this era too (/mcp/NAME)", function()
    local resp, r = post(url .. "/conformance-test-server", msg(17, "server/discover"),
      std("server/discover"))
    assert.equal(200, resp.status)
    assert.equal("conformance-test-server",
      r.result._meta["io.modelcontextprotocol/serverInfo"].name)
    assert.same({ "2026-07-28" }, r.result.supportedVersions)
  end)

  it("serves the legacy era beside it", function()
    local resp, r = post(url, { jsonrpc = "2.0", id = 0, method = "initialize", params = {
      protocolVersion = "2025-11-25", capabilities = {},
      clientInfo = { name = "spec", version = "1" } } })
    assert.equal(200, resp.status)
    assert.matches("^%x+$", resp.headers["mcp-session-id"])
    assert.equal("2025-11-25", r.result.protocolVersion)
  end)
end)
