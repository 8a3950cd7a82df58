-- What a client sends in `params` is data, never the server's own state (issue 33): each
-- field the server once kept for itself in the request's params (`task`, `may_task`, `tasks`,
-- `answers`, `used`, `asked`, `_method`, `_out`, the fields a request's context reads, ...)
-- is sent by a client of `claudelua mcp`, over stdio and HTTP, in protocol 2025-11-25 and
-- 2026-07-28, and the answers must be those of the same requests without it (or a refusal).
local process = require "claude.process"
local json = require "claude.json"
local harness = require "support.harness"
local mcp_http = require "support.mcp_http"

local PV, CAPS = "io.modelcontextprotocol/protocolVersion",
  "io.modelcontextprotocol/clientCapabilities"
local TASKS = "io.modelcontextprotocol/tasks"
local MODERN, LEGACY = "2026-07-28", "2025-11-25"

local TOOLS = [[
local claude = require "claude"
local json = require "claude.json"
return claude.server("state", {
  claude.tool("wait", function() claude.sleep(0.02) return "waited" end, { task = true }),
  claude.tool("ask2", function(_, ctx)
    local a, err = ctx.elicit { message = "first?" }
    if not a then return "no elicitation: " .. tostring(err and err.kind) end
    local b = ctx.elicit { message = "second?" }
    return a.content.v .. "," .. b.content.v
  end),
  claude.tool("who", function(_, ctx)
    local info = ctx.client_info
    return table.concat({ tostring(ctx.era), tostring(ctx.protocol_version),
      json.encode(ctx.client_capabilities or {}), tostring(type(info) == "table" and info.name) },
      " ")
  end),
})
]]

local FORGED = { action = "accept", content = { v = "forged" } }

-- The fields, each with the value a hostile client sends.
local FIELDS = {
  task = { id = "forged", status = "working", principal = "someone else" },
  may_task = true,
  tasks = { id = TASKS },
  answers = { ["elicit-1"] = FORGED, ["elicit-2"] = FORGED },
  used = { ["elicit-2"] = FORGED },
  asked = 7,
  _method = "prompts/get",
  _out = { own_ids = true },
  era = "legacy",
  protocol_version = "1999-01-01",
  client_capabilities = { forged = true },
  client_info = { name = "forged" },
  _meta_text = "{}",
  _token = "forged-token",
  _tool_use_id = "forged-use",
}

-- One peer: `request(msg)` -> the answer to msg (notifications skipped), over stdio or HTTP.
local function stdio_peer(file)
  local p = assert(process.spawn { harness.claudelua, args = { "mcp", file }, stdout = "json",
    stderr = "collect", max_line = 16 * 1024 * 1024 })
  local peer = { close = function() p:close_stdin() p:wait(20) p:close() end }
  function peer.request(msg)
    p:write_json(msg)
    while true do
      local m, err = p:read_line(30)
      assert(m, "no answer: " .. tostring(err) .. "\nstderr: " .. p:stderr())
      if m.id == msg.id and m.method == nil then return m end
    end
  end
  return peer
end

local function http_peer(url, era)
  local session
  local peer = { close = function() end }
  function peer.request(msg)
    local h = {}
    if era == MODERN then
      h["mcp-protocol-version"], h["mcp-method"] = MODERN, msg.method
      if msg.method == "tools/call" then h["mcp-name"] = msg.params.name end
    elseif session then
      h["mcp-protocol-version"], h["mcp-session-id"] = LEGACY, session
    end
    local m, resp = mcp_http.post(url, msg, h)
    if msg.method == "initialize" then session = resp.headers["mcp-session-id"] end
    return assert(m, "no answer: " .. resp.body)
  end
  return peer
end

-- An answer in a few words: what a client would act on.
local function summary(m)
  if m.error then return "error " .. tostring(m.error.code) end
  local r = m.result
  if r.resultType == "task" then return "task " .. tostring(r.status) end
  if r.resultType == "input_required" then
    local keys = {}
    for k in pairs(r.inputRequests) do keys[#keys + 1] = k end
    table.sort(keys)
    return "input " .. table.concat(keys, ",")
  end
  local c = r.content and r.content[1]
  return "complete " .. tostring(c and c.text) .. (r.isError and " (isError)" or "")
end

local ids = 0
local function request(peer, era, method, params, caps)
  ids = ids + 1
  if era == MODERN then params._meta = { [PV] = MODERN, [CAPS] = caps or {} } end
  return peer.request { jsonrpc = "2.0", id = ids, method = method, params = params }
end

-- A scenario, the field (when given) in its first request only: its answers in a few words.
local function scenario(peer, era, tool, caps, field)
  local params = { name = tool, arguments = {} }
  if field then params[field] = FIELDS[field] end
  local got = {}
  local m = request(peer, era, "tools/call", params, caps)
  got[1] = summary(m)
  -- multi round-trip: answer what it asks, with the requestState it gave
  for round = 2, 4 do
    if not (m.result and m.result.resultType == "input_required") then break end
    local responses = {}
    for k in pairs(m.result.inputRequests) do
      responses[k] = { action = "accept", content = { v = "real" } }
    end
    m = request(peer, era, "tools/call", { name = tool, arguments = {},
      requestState = m.result.requestState, inputResponses = responses }, caps)
    got[round] = summary(m)
  end
  return table.concat(got, " | ")
end

local SCENARIOS = {
  { "wait", {} },                                  -- no tasks declared: no task
  { "wait", { extensions = { [TASKS] = {} } } },   -- declared: a task
  { "ask2", { elicitation = {} } },               -- two rounds of input
  { "ask2", {} },                                 -- cannot be asked: -32021
  { "who", {} },                                  -- what a request's context reads
}

-- Every scenario with every field; each difference is named.
local function check(peer, era)
  local wrong = {}
  for _, s in ipairs(SCENARIOS) do
    local plain = scenario(peer, era, s[1], s[2])
    for field in pairs(FIELDS) do
      local got = scenario(peer, era, s[1], s[2], field)
      if got ~= plain and not got:match("^error %-32602") then
        wrong[#wrong + 1] = ("%s, %s, params.%s: %q, without it %q"):format(era, s[1], field,
          got, plain)
      end
    end
  end
  table.sort(wrong)
  assert(#wrong == 0, table.concat(wrong, "\n"))
end

local function legacy_init(peer)
  local r = request(peer, LEGACY, "initialize", { protocolVersion = LEGACY, capabilities = {},
    clientInfo = { name = "spec", version = "1" } })
  assert(r.result, json.encode(r))
end

describe("a client's params hold no server state", function()
  local file
  setup(function() file = harness.tempfile(TOOLS, ".lua") end)

  it("over stdio, protocol 2026-07-28", harness.task(function()
    local peer = stdio_peer(file)
    check(peer, MODERN)
    peer.close()
  end, 120))

  it("over stdio, protocol 2025-11-25", harness.task(function()
    local peer = stdio_peer(file)
    legacy_init(peer)
    peer.request { jsonrpc = "2.0", id = "ping", method = "ping" }
    check(peer, LEGACY)
    peer.close()
  end, 120))

  it("over HTTP, both protocols", harness.task(function()
    local server, url = mcp_http.start { file }
    check(http_peer(url, MODERN), MODERN)
    local legacy = http_peer(url, LEGACY)
    legacy_init(legacy)
    check(legacy, LEGACY)
    server:signal("term")
    assert.equal(0, server:wait(20))
    server:close()
  end, 120))
end)
