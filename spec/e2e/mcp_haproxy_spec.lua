-- `claudelua mcp --http` past one process: three processes behind a real load balancer
-- (Debian's haproxy, started here with the configuration docs/mcp-server.md gives). Requests
-- of protocol 2026-07-28 carry no session and go round-robin, a multi round-trip retry
-- included (it lands on another process, which opens the requestState with the key they
-- share); a task's tasks/get goes to the process that has the task (its id names the node);
-- sessions of the legacy era stay on the process that opened them (Mcp-Session-Id).
local claude = require "claude"
local core = require "claude.core"
local process = require "claude.process"
local json = require "claude.json"
local http = require "claude.http.client"
local harness = require "support.harness"
local mcp_http = require "support.mcp_http"

local PV, CAPS = "io.modelcontextprotocol/protocolVersion",
  "io.modelcontextprotocol/clientCapabilities"
local TASKS = "io.modelcontextprotocol/tasks"

local TOOLS = [[
local claude = require "claude"
local node = ...
return claude.server("lb", {
  claude.tool("whoami", "The node that answers", function() return node end),
  claude.tool("ask", "Asks a name", function(_, ctx)
    local r, err = ctx.elicit { message = "Your name?", requestedSchema = { type = "object",
      properties = { name = { type = "string" } } } }
    if not r then return nil, err end
    return "Hello, " .. r.content.name .. " (from " .. node .. ")"
  end),
  claude.tool("slow", "Takes a while (a task)", function()
    claude.sleep(0.3)
    return "slow done on " .. node
  end, { task = true }),
}, { version = node })
]]

-- The haproxy configuration of docs/mcp-server.md, on these ports.
local function config(port, backends)
  local lines = {
    "global", "  maxconn 1024",
    "defaults", "  mode http", "  timeout connect 5s", "  timeout client 1h",
    "  timeout server 1h", "  option http-buffer-request",
    "frontend mcp", "  bind 127.0.0.1:" .. port, "  default_backend claudelua",
    "backend claudelua", "  balance roundrobin",
    "  stick-table type string len 64 size 1m expire 1h",
    "  stick on req.hdr(mcp-session-id)",
    "  stick store-response res.hdr(mcp-session-id)",
  }
  for _, b in ipairs(backends) do
    lines[#lines + 1] = string.format("  use-server %s if { req.hdr(mcp-name) -m beg %s. }",
      b.node, b.node)
  end
  for _, b in ipairs(backends) do
    lines[#lines + 1] = string.format("  server %s 127.0.0.1:%d", b.node, b.port)
  end
  return table.concat(lines, "\n") .. "\n"
end

local id = 0

-- A POST of protocol 2026-07-28 with its envelope and standard headers.
local function modern(url, method, params, caps)
  id = id + 1
  params = params or {}
  params._meta = { [PV] = "2026-07-28", [CAPS] = caps or { elicitation = {} } }
  local headers = { ["content-type"] = "application/json",
    accept = "application/json, text/event-stream", ["mcp-protocol-version"] = "2026-07-28",
    ["mcp-method"] = method }
  local name = params.name or params.uri or params.taskId
  if name then headers["mcp-name"] = name end
  local resp, err = http.request { method = "POST", url = url, headers = headers,
    body = json.encode { jsonrpc = "2.0", id = id, method = method, params = params },
    timeout = 30 }
  if not resp then
    assert(err.kind == "http", tostring(err))
    return json.decode(err.body), err.status
  end
  return json.decode(resp.body), resp.status
end

local function legacy(url, method, params, session)
  id = id + 1
  local headers = { ["content-type"] = "application/json",
    accept = "application/json, text/event-stream", ["mcp-session-id"] = session,
    ["mcp-protocol-version"] = session and "2025-11-25" or nil }
  local resp = assert(http.request { method = "POST", url = url, headers = headers,
    body = json.encode { jsonrpc = "2.0", id = method:match("^notifications/") and nil or id,
      method = method, params = params }, timeout = 30 })
  return resp.body ~= "" and json.decode(resp.body) or nil, resp.headers["mcp-session-id"]
end

local function node_of(r)
  return r.result._meta["io.modelcontextprotocol/serverInfo"].version
end

describe("claudelua mcp --http behind haproxy", function()
  it("spreads the modern era over three processes and pins legacy sessions", function()
    assert(os.execute("command -v haproxy >/dev/null"),
      "haproxy is not installed (tools/setup-lab.sh installs it)")
    local dir = harness.tempdir()
    local tools = dir .. "/tools.lua"
    local f = assert(io.open(tools, "w"))
    f:write(TOOLS)
    f:close()
    local key = dir .. "/state.key"
    f = assert(io.open(key, "w"))
    f:write(core.base64url_encode(assert(core.random_bytes(32))), "\n")
    f:close()
    local servers, backends = {}, {}
    for i, node in ipairs { "a", "b", "c" } do
      local p, url = mcp_http.start { "--state-key-file", key, "--node", node, tools, node }
      servers[i] = p
      backends[i] = { node = node, port = tonumber(url:match(":(%d+)/")) }
    end
    -- haproxy on a free port: one a claudelua process just had, given back
    local probe, purl = mcp_http.start { tools, "probe" }
    local port = tonumber(purl:match(":(%d+)/"))
    probe:signal("term")
    probe:wait(10)
    f = assert(io.open(dir .. "/haproxy.cfg", "w"))
    f:write(config(port, backends))
    f:close()
    local lb <close> = assert(process.spawn { "haproxy", args = { "-db", "-f",
      dir .. "/haproxy.cfg" }, stderr = "collect" })
    local url = "http://127.0.0.1:" .. port .. "/mcp"
    for _ = 1, 100 do -- until haproxy answers (a 4xx of ours through it, or anything)
      local resp, err = http.request { url = url, method = "GET", timeout = 1 }
      if resp or (err and err.kind == "http") then break end
      claude.sleep(0.1)
    end

    -- the modern era: one request after the other, round-robin over the three
    local seen = {}
    for _ = 1, 3 do
      local r = modern(url, "tools/call", { name = "whoami", arguments = {} })
      seen[#seen + 1] = r.result.content[1].text
    end
    table.sort(seen)
    assert.same({ "a", "b", "c" }, seen)

    -- a multi round-trip call whose retry lands on another process: the shared key opens it
    local r1 = modern(url, "tools/call", { name = "ask", arguments = {} })
    assert.equal("input_required", r1.result.resultType)
    local key_of = next(r1.result.inputRequests)
    local r2 = modern(url, "tools/call", { name = "ask", arguments = {},
      inputResponses = { [key_of] = { action = "accept", content = { name = "Ada" } } },
      requestState = r1.result.requestState })
    assert.equal("complete", r2.result.resultType)
    assert.are_not.equal(node_of(r1), node_of(r2))
    assert.equal("Hello, Ada (from " .. node_of(r2) .. ")", r2.result.content[1].text)
    -- a process with another key refuses that state
    local other <close>, other_url = mcp_http.start { tools, "x" }
    local refused = modern(other_url, "tools/call", { name = "ask", arguments = {},
      inputResponses = { [key_of] = { action = "accept", content = { name = "Ada" } } },
      requestState = r1.result.requestState })
    assert.equal(-32602, refused.error.code)
    assert.equal("invalid_request_state", refused.error.data.reason)
    other:signal("term")
    other:wait(10)

    -- a task: created on one process, polled through the balancer, found every time
    local caps = { extensions = { [TASKS] = {} } }
    local created = modern(url, "tools/call", { name = "slow", arguments = {} }, caps)
    assert.equal("task", created.result.resultType)
    local owner = created.result.taskId:match("^(%a)%.")
    local status
    for _ = 1, 50 do
      local got = modern(url, "tasks/get", { taskId = created.result.taskId }, caps)
      assert.is_nil(got.error)
      status = got.result.status
      if status == "completed" then
        assert.equal("slow done on " .. owner, got.result.result.content[1].text)
        break
      end
      claude.sleep(0.1)
    end
    assert.equal("completed", status)

    -- the legacy era: a session stays on the process that opened it
    local init, session = legacy(url, "initialize", { protocolVersion = "2025-11-25",
      capabilities = {}, clientInfo = { name = "spec", version = "1" } })
    assert.equal("2025-11-25", init.result.protocolVersion)
    assert.matches("^%x+$", session)
    legacy(url, "notifications/initialized", nil, session)
    local nodes = {}
    for _ = 1, 4 do
      local r = legacy(url, "tools/call", { name = "whoami", arguments = {} }, session)
      nodes[r.result.content[1].text] = true
    end
    local count = 0
    for _ in pairs(nodes) do count = count + 1 end
    assert.equal(1, count)

    lb:signal("term")
    lb:wait(10)
    for _, p in ipairs(servers) do
      p:signal("term")
      assert.equal(0, p:wait(10))
    end
    os.execute("rm -rf " .. harness.quote(dir))
  end)
end)
