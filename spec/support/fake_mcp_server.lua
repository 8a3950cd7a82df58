-- A small stdio MCP server that misbehaves on request, for the client's
-- specs: run as `claudelua spec/support/fake_mcp_server.lua [mode]`.
-- Modes: "bad_version" (answers initialize with a version nobody speaks),
-- "paged" (tools/list in pages of one). Tools: echo, exit (dies mid-call,
-- exit code 3, after a line on stderr), garbage (a line that is not JSON,
-- then the answer), huge (an answer of 100 000 bytes), unknown_id (answers
-- another id), never (no answer), fail (a JSON-RPC error), is_error (an
-- isError result), cancelled (the request ids cancelled so far), sample
-- (asks the client for sampling, then answers with its text), roots (asks
-- for roots), progress (two progress notifications, then the answer), binary (an
-- answer whose text is not UTF-8, then a request whose params are not either), twice
-- (answers twice), late (answers after 0.5 s).
-- The protocol era (server/discover): "probe_silent" never answers the probe,
-- "probe_exit" exits on it, "probe_late" answers it after half a second (legacy
-- servers all three, for initialize); "modern" speaks 2026-07-28 with the tools
-- rounds (input_required twice: an elicitation, then state alone), forever (always
-- input_required), no_type (a result without resultType), odd_type (an unknown
-- resultType), params (the params it got, as text), and the raw_* tools, whose answers are
-- lines written as they are (RAW: the usual result's shape and its neighbours, for the
-- client's reader).
local json = require "claude.json"

local mode = arg[1] or ""
local cancelled = {}
local next_id = 0

local function send(msg)
  io.stdout:write(json.encode(msg), "\n")
  io.stdout:flush()
end

local function result(id, r) send { jsonrpc = "2.0", id = id, result = r } end
local function text(id, s) result(id, { content = { { type = "text", text = s } } }) end

-- A request to the client; waits for its answer (notifications meanwhile are dropped).
local function ask(method, params)
  next_id = next_id + 1
  local id = "s" .. next_id
  send { jsonrpc = "2.0", id = id, method = method, params = params }
  for line in io.stdin:lines() do
    local msg = json.decode(line)
    if msg.id == id then return msg.result, msg.error end
  end
end

local TOOLS = { "echo", "exit", "garbage", "huge", "unknown_id", "never", "fail", "is_error",
  "cancelled", "sample", "roots", "progress", "binary", "twice", "late" }

local tools = {}
function tools.echo(id, args) text(id, "echo: " .. tostring(args.message)) end
function tools.exit()
  io.stderr:write("fake server: dying on purpose\n")
  os.exit(3)
end
function tools.garbage(id)
  io.stdout:write("this is not JSON\n")
  text(id, "after garbage")
end
function tools.huge(id) text(id, string.rep("x", 100000)) end
function tools.binary(id)
  io.stdout:write('{"jsonrpc":"2.0","id":"s0","method":"roots/list","params":{"x":"\255"}}\n')
  io.stdout:write('{"jsonrpc":"2.0","id":', id, ',"result":{"content":[{"type":"text",'
    .. '"text":"bad \255"}]}}\n')
  io.stdout:flush()
end
function tools.unknown_id(id) text(id + 1000, "lost") end
function tools.twice(id)
  text(id, "first")
  text(id, "second")
end
function tools.late(id)
  os.execute("sleep 0.5")
  text(id, "late")
end
function tools.never() end
function tools.fail(id)
  send { jsonrpc = "2.0", id = id, error = { code = -32001, message = "it broke",
    data = { why = "on purpose" } } }
end
function tools.is_error(id)
  result(id, { content = { { type = "text", text = "tool failed" } }, isError = true })
end
function tools.cancelled(id) text(id, table.concat(cancelled, ",")) end
function tools.sample(id)
  local r, err = ask("sampling/createMessage", { messages = { { role = "user",
    content = { type = "text", text = "hello" } } }, maxTokens = 10 })
  text(id, r and r.content.text or ("error " .. tostring(err and err.code)))
end
function tools.roots(id)
  local r, err = ask("roots/list", {})
  text(id, r and json.encode(r.roots) or ("error " .. tostring(err and err.code)))
end
function tools.progress(id, _, meta)
  local token = meta and meta.progressToken
  for i = 1, 2 do
    send { jsonrpc = "2.0", method = "notifications/progress",
      params = { progressToken = token, progress = i, total = 2, message = "step " .. i } }
  end
  text(id, "done")
end

local function list_tools(id, params)
  local list = {}
  for i, name in ipairs(TOOLS) do
    list[i] = { name = name, inputSchema = { type = "object" } }
  end
  if mode ~= "paged" then return result(id, { tools = list }) end
  local at = tonumber(params and params.cursor or "1")
  result(id, { tools = { list[at] }, nextCursor = at < #list and tostring(at + 1) or nil })
end

local V = "2026-07-28"
local function complete(id, r)
  r.resultType = "complete"
  result(id, r)
end

local modern = {}
function modern.rounds(id, params)
  local state = params.requestState
  if state == nil then
    return result(id, { resultType = "input_required", requestState = "{\"n\": 1}",
      inputRequests = { name = { method = "elicitation/create", params = {
        message = "Name?", requestedSchema = { type = "object",
          properties = { name = { type = "string" } } } } } } })
  elseif state == "{\"n\": 1}" then
    local answer = params.inputResponses and params.inputResponses.name
    return result(id, { resultType = "input_required", requestState = "{\"n\": 2, \"name\": "
      .. json.encode(answer and answer.content and answer.content.name or "?") .. "}" })
  end
  complete(id, { content = { { type = "text", text = "state " .. state .. " inputs "
    .. json.encode(params.inputResponses or json.null) } } })
end
function modern.forever(id, params)
  result(id, { resultType = "input_required",
    requestState = "s" .. tostring(params.requestState or "") })
end
function modern.no_type(id) result(id, { content = { { type = "text", text = "no type" } } }) end
function modern.odd_type(id) result(id, { resultType = "weird" }) end
function modern.params(id, params)
  complete(id, { content = { { type = "text", text = json.encode(params) } } })
end
-- (%d: the id; the usual answer is '{"jsonrpc":"2.0","id":%d,"result":...}')
local CONTENT = '"content":[{"type":"text","text":"raw"}]'
local RAW = {
  usual = '{"jsonrpc":"2.0","id":%d,"result":{' .. CONTENT .. ',"resultType":"complete"}}',
  type_first = '{"jsonrpc":"2.0","id":%d,"result":{"resultType":"complete",' .. CONTENT
    .. ',"isError":false}}',
  is_error = '{"jsonrpc":"2.0","id":%d,"result":{' .. CONTENT .. ',"isError":true,'
    .. '"resultType":"complete"}}',
  spaced = '{"jsonrpc":"2.0","id":%d,"result":{ ' .. CONTENT .. ' , "resultType" : "complete" }}',
  id_last = '{"jsonrpc":"2.0","result":{' .. CONTENT .. ',"resultType":"complete"},"id":%d}',
  extra = '{"jsonrpc":"2.0","id":%d,"result":{' .. CONTENT .. ',"resultType":"complete",'
    .. '"structuredContent":{"n":1}}}',
  no_type = '{"jsonrpc":"2.0","id":%d,"result":{' .. CONTENT .. '}}',
  odd_type = '{"jsonrpc":"2.0","id":%d,"result":{' .. CONTENT .. ',"resultType":"weird"}}',
  escaped_type = '{"jsonrpc":"2.0","id":%d,"result":{' .. CONTENT
    .. ',"resultType":"complet\\u0065"}}',
  input = '{"jsonrpc":"2.0","id":%d,"result":{' .. CONTENT .. ',"resultType":"input_required"}}',
  twice = '{"jsonrpc":"2.0","id":%d,"result":{' .. CONTENT .. ',"resultType":"complete",'
    .. '"resultType":"complete"}}',
  not_object = '{"jsonrpc":"2.0","id":%d,"result":"complete"}',
  error = '{"jsonrpc":"2.0","id":%d,"error":{"code":-32000,"message":"raw failure"}}',
}
for name, line in pairs(RAW) do
  modern["raw_" .. name] = function(id)
    io.stdout:write(string.format(line, id), "\n")
    io.stdout:flush()
  end
end

local function serve_modern(id, method, params)
  local meta = type(params) == "table" and params._meta or {}
  if method == "server/discover" then
    return complete(id, { supportedVersions = { V }, capabilities = { tools = json.object() },
      serverInfo = { name = "fake-modern", version = "0.2" }, ttlMs = 0,
      cacheScope = "private" })
  end
  if meta["io.modelcontextprotocol/protocolVersion"] ~= V then
    return send { jsonrpc = "2.0", id = id, error = { code = -32022,
      message = "Unsupported protocol version", data = { supported = { V } } } }
  end
  if method == "tools/list" then
    local list = {}
    for name in pairs(modern) do list[#list + 1] = { name = name,
      inputSchema = { type = "object" } } end
    table.sort(list, function(a, b) return a.name < b.name end)
    return complete(id, { tools = list, ttlMs = 0, cacheScope = "private" })
  elseif method == "tools/call" and modern[params.name] then
    return modern[params.name](id, params)
  end
  send { jsonrpc = "2.0", id = id, error = { code = -32601, message = "Method not found" } }
end

for line in io.stdin:lines() do
  local msg = json.decode(line)
  local id, method, params = msg.id, msg.method, msg.params
  if method == "server/discover" and mode:find("^probe_") then
    if mode == "probe_exit" then os.exit(0) end
    if mode == "probe_late" then
      os.execute("sleep 0.5")
      result(id, { resultType = "complete", supportedVersions = { V },
        capabilities = json.object() })
    end
  elseif mode == "modern" then
    if id ~= nil and method ~= nil then serve_modern(id, method, params) end
  elseif method == "initialize" then
    result(id, { protocolVersion = mode == "bad_version" and "1999-01-01"
      or params.protocolVersion, capabilities = { tools = json.object() },
      serverInfo = { name = "fake", version = "0.1" }, instructions = "be kind" })
  elseif method == "notifications/cancelled" then
    cancelled[#cancelled + 1] = tostring(params.requestId)
  elseif method == "tools/list" then
    list_tools(id, params)
  elseif method == "tools/call" then
    local fn = tools[params.name]
    if fn then
      fn(id, params.arguments or {}, params._meta)
    else
      send { jsonrpc = "2.0", id = id, error = { code = -32602, message = "no tool" } }
    end
  elseif method == "ping" then
    result(id, json.object())
  elseif id ~= nil and method ~= nil then
    send { jsonrpc = "2.0", id = id, error = { code = -32601, message = "Method not found" } }
  end
end
