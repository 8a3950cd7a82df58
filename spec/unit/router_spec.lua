local claude = require "claude"
local core = require "claude.core"
local async = require "claude.async"
local json = require "claude.json"
local tool = require "claude.mcp.tool"
local router = require "claude.mcp.router"
local harness = require "support.harness"

local canon = require "support.canon_json"

-- What goes on the wire, canonically.
local function wire(x)
  if type(x) == "string" then return canon(assert(json.decode(x))) end
  return canon(assert(json.decode(json.encode(x))))
end

-- Swaps io.stderr for a buffer while f runs; returns what was written.
local function capture_stderr(f)
  local real, buf = io.stderr, {}
  rawset(io, "stderr", { write = function(self, ...)
    for i = 1, select("#", ...) do buf[#buf + 1] = tostring(select(i, ...)) end
    return self
  end })
  local ok, err = pcall(f)
  rawset(io, "stderr", real)
  assert(ok, err)
  return table.concat(buf)
end

local function in_task(f, ...) return async.spawn_observed(f, ...) end

---------------------------------------------------------------------------------------------
-- Fixtures
---------------------------------------------------------------------------------------------

local add = tool.tool("add", "Add two numbers", { a = "number", b = "number" },
  function(args) return args.a + args.b end)

local weather = tool.tool {
  name = "weather", title = "Weather", description = "Current weather",
  input_schema = { city = "string: the city" }, output_schema = { temp = "number" },
  annotations = { read_only = true, open_world = false, title = "Weather lookup" },
  max_result_size_chars = 500, always_load = true,
  execute = function() return { temp = 21.5 } end,
}

local fail = tool.tool("fail", function() error("division by zero") end)

local whoami = tool.tool("whoami", function(_, ctx)
  return table.concat({ ctx.tool_use_id, ctx.request_id, ctx.server, ctx.state.tag,
    tostring(ctx.cancelled) }, " ")
end)

local motd = tool.resource { uri = "mem://motd", name = "motd", mime_type = "text/plain",
  text = "Hello" }
local profile = tool.resource_template { uri_template = "users://{id}/profile",
  name = "profile", read = function(_, params)
    if params.id == "0" then return nil end
    if params.id == "err" then error("disk on fire") end
    return "user " .. params.id
  end }
local review = tool.prompt { name = "review", description = "Review code",
  arguments = { "code", "focus?: what to look at" },
  get = function(args) return "Review: " .. args.code end }

local full = tool.server("full", { add, weather, fail, whoami, motd, profile, review },
  { version = "2.0.0", instructions = "Use full for everything", state = { tag = "S" } })
local bare = tool.server("bare", { add })
local empty = tool.server("empty")

local servers = { full = full, bare = bare, empty = empty }

local WEATHER_LISTING = [[{"name":"weather","title":"Weather","description":"Current weather",
  "inputSchema":{"type":"object","properties":{"city":{"type":"string",
  "description":"the city"}},"required":["city"]},
  "outputSchema":{"type":"object","properties":{"temp":{"type":"number"}},"required":["temp"]},
  "annotations":{"title":"Weather lookup","readOnlyHint":true,"openWorldHint":false},
  "_meta":{"anthropic/maxResultSizeChars":500,"anthropic/alwaysLoad":true}}]]
local ADD_LISTING = [[{"name":"add","description":"Add two numbers","inputSchema":{
  "type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},
  "required":["a","b"]}}]]
local EMPTY_SCHEMA = [[{"type":"object","properties":{}}]]
local FULL_TOOLS = "[" .. ADD_LISTING .. "," .. WEATHER_LISTING .. ","
  .. [[{"name":"fail","inputSchema":]] .. EMPTY_SCHEMA .. "},"
  .. [[{"name":"whoami","inputSchema":]] .. EMPTY_SCHEMA .. "}]"

local ACK = [[{"jsonrpc":"2.0","result":{},"id":0}]]

local function err(id, code, msg, data)
  return json.encode { jsonrpc = "2.0", id = id == nil and json.null or id,
    error = { code = code, message = msg, data = data } }
end

local function ok(id, result)
  return '{"jsonrpc":"2.0","id":' .. json.encode(id) .. ',"result":' .. result .. "}"
end

local function init(version)
  local p = version and ('{"protocolVersion":"' .. version .. '","capabilities":{},'
    .. '"clientInfo":{"name":"claude-code","version":"2.1.197"}}') or "{}"
  return '{"jsonrpc":"2.0","id":0,"method":"initialize","params":' .. p .. "}"
end

-- listChanged: server:add and server:remove notify the sessions using a server
local FULL_INIT = [[{"capabilities":{"tools":{"listChanged":true},
  "resources":{"listChanged":true},"prompts":{"listChanged":true},"logging":{}},
  "serverInfo":{"name":"full","version":"2.0.0"},"instructions":"Use full for everything",
  "protocolVersion":"%s"}]]
local BARE_INIT = [[{"capabilities":{"tools":{"listChanged":true},"logging":{}},
  "serverInfo":{"name":"bare","version":"1.0.0"},"protocolVersion":"%s"}]]

local function req(id, method, params)
  return json.encode { jsonrpc = "2.0", id = id, method = method, params = params }
end

local function note(method, params)
  return json.encode { jsonrpc = "2.0", method = method, params = params }
end

local function call(id, name, args, meta)
  return req(id, "tools/call", { name = name, arguments = args, _meta = meta })
end

local function text_result(text, is_error)
  return json.encode { content = { { type = "text", text = text } }, isError = is_error }
end

-- { description, server name, request (JSON text), expected response (JSON text),
--   raw = pass the text itself instead of the decoded table }
local ROWS = {
  -- initialize: version negotiation
  { "initialize echoes 2024-11-05", "full", init("2024-11-05"),
    ok(0, FULL_INIT:format("2024-11-05")) },
  { "initialize echoes 2025-03-26", "full", init("2025-03-26"),
    ok(0, FULL_INIT:format("2025-03-26")) },
  { "initialize echoes 2025-06-18", "full", init("2025-06-18"),
    ok(0, FULL_INIT:format("2025-06-18")) },
  { "initialize echoes 2025-11-25", "full", init("2025-11-25"),
    ok(0, FULL_INIT:format("2025-11-25")) },
  { "initialize: an unknown version gets the newest", "full", init("1999-01-01"),
    ok(0, FULL_INIT:format("2025-11-25")) },
  { "initialize: a missing version gets the newest", "full", init(nil),
    ok(0, FULL_INIT:format("2025-11-25")) },
  { "initialize without params", "bare", req(0, "initialize"),
    ok(0, BARE_INIT:format("2025-11-25")) },
  { "initialize: a server with tools only advertises tools (and logging)", "bare",
    init("2025-06-18"), ok(0, BARE_INIT:format("2025-06-18")) },
  { "initialize echoes a string id", "bare",
    req("init-1", "initialize", { protocolVersion = "2024-11-05" }),
    ok("init-1", BARE_INIT:format("2024-11-05")) },

  -- ping, logging
  { "ping", "full", req(3, "ping"), ok(3, "{}") },
  { "ping with a string id", "full", req("p", "ping"), ok("p", "{}") },
  { "logging/setLevel", "full", req(4, "logging/setLevel", { level = "warning" }), ok(4, "{}") },
  { "logging/setLevel with a bad level", "full", req(4, "logging/setLevel", { level = "loud" }),
    err(4, -32602, "Invalid params: 'level' must be one of debug, info, notice, warning, "
      .. "error, critical, alert, emergency") },

  -- tools/list
  { "tools/list: annotations, outputSchema, _meta as MCP has them", "full", req(1, "tools/list"),
    ok(1, '{"tools":' .. FULL_TOOLS .. "}") },
  { "tools/list with params {}", "bare", req(1, "tools/list", json.object()),
    ok(1, '{"tools":[' .. ADD_LISTING .. "]}") },
  { "tools/list of a server without tools is []", "empty", req(1, "tools/list"),
    ok(1, '{"tools":[]}') },
  { "tools/list with a foreign cursor", "bare", req(1, "tools/list", { cursor = "xyz" }),
    err(1, -32602, "Invalid params: invalid cursor 'xyz'") },
  { "tools/list with a cursor past the end", "bare", req(1, "tools/list", { cursor = "tools:2" }),
    err(1, -32602, "Invalid params: invalid cursor 'tools:2'") },
  { "tools/list with a non-string cursor", "bare", req(1, "tools/list", { cursor = 5 }),
    err(1, -32602, "Invalid params: 'cursor' must be a string") },

  -- tools/call
  { "tools/call", "full", call(2, "add", { a = 2, b = 3 }), ok(2, text_result("5")) },
  { "tools/call with structured output", "full", call(2, "weather", { city = "Oslo" }),
    ok(2, [[{"content":[{"type":"text","text":"{\"temp\":21.5}"}],
      "structuredContent":{"temp":21.5}}]]) },
  { "tools/call: arguments that fail the schema", "full", call(2, "add", { a = "2", b = 3 }),
    ok(2, text_result("Input validation error: a: expected number, got string "
      .. "(keyword /properties/a/type)", true)) },
  { "tools/call: missing arguments", "full", call(2, "add"),
    ok(2, text_result("Input validation error: missing required property 'a' (keyword /required)",
      true)) },
  { "tools/call: ctx fields", "full", call("c1", "whoami", nil,
    { ["claudecode/toolUseId"] = "toolu_01", progressToken = 1 }),
    ok("c1", text_result("toolu_01 c1 full S false")) },
  { "tools/call: unknown tool", "full", call(2, "nope", json.object()),
    err(2, -32602, "Unknown tool: 'nope'") },
  { "tools/call: no params", "full", req(2, "tools/call"),
    err(2, -32602, "Invalid params: tools/call needs params with a tool name") },
  { "tools/call: no name", "full", req(2, "tools/call", { arguments = json.object() }),
    err(2, -32602, "Invalid params: 'name' must be a string") },
  { "tools/call: arguments not an object", "full", call(2, "add", "a=1"),
    err(2, -32602, "Invalid params: 'arguments' must be an object") },
  { "tools/call: params not an object", "full", '{"jsonrpc":"2.0","id":2,"method":"tools/call",'
    .. '"params":"add"}', err(2, -32602, "Invalid params: 'params' must be an object") },

  -- resources
  { "resources/list", "full", req(5, "resources/list"),
    ok(5, '{"resources":[{"uri":"mem://motd","name":"motd","mimeType":"text/plain"}]}') },
  { "resources/templates/list", "full", req(5, "resources/templates/list"),
    ok(5, '{"resourceTemplates":[{"uriTemplate":"users://{id}/profile","name":"profile"}]}') },
  { "resources/read of a resource", "full", req(6, "resources/read", { uri = "mem://motd" }),
    ok(6, '{"contents":[{"uri":"mem://motd","mimeType":"text/plain","text":"Hello"}]}') },
  { "resources/read through a template", "full",
    req(6, "resources/read", { uri = "users://42/profile" }),
    ok(6, '{"contents":[{"uri":"users://42/profile","text":"user 42"}]}') },
  { "resources/read: a template's read returns nil", "full",
    req(6, "resources/read", { uri = "users://0/profile" }),
    err(6, -32602, "Resource not found: 'users://0/profile'", { uri = "users://0/profile" }) },
  { "resources/read: no such resource", "full", req(6, "resources/read", { uri = "mem://x" }),
    err(6, -32602, "Resource not found: 'mem://x'", { uri = "mem://x" }) },
  { "resources/read: no uri", "full", req(6, "resources/read", json.object()),
    err(6, -32602, "Invalid params: 'uri' must be a string") },
  { "resources/list on a server without resources", "bare", req(5, "resources/list"),
    err(5, -32601, "Method not found: 'resources/list'") },
  { "resources/templates/list on a server without resources", "bare",
    req(5, "resources/templates/list"),
    err(5, -32601, "Method not found: 'resources/templates/list'") },
  { "resources/read on a server without resources", "bare",
    req(5, "resources/read", { uri = "mem://motd" }),
    err(5, -32601, "Method not found: 'resources/read'") },

  -- prompts
  { "prompts/list", "full", req(7, "prompts/list"),
    ok(7, [[{"prompts":[{"name":"review","description":"Review code","arguments":[
      {"name":"code","required":true},
      {"name":"focus","description":"what to look at","required":false}]}]}]]) },
  { "prompts/get", "full", req(8, "prompts/get", { name = "review", arguments = { code = "x=1" } }),
    ok(8, [[{"description":"Review code","messages":[{"role":"user",
      "content":{"type":"text","text":"Review: x=1"}}]}]]) },
  { "prompts/get: missing argument", "full", req(8, "prompts/get", { name = "review" }),
    err(8, -32602, "Invalid arguments for prompt 'review': missing required argument 'code'") },
  { "prompts/get: unknown prompt", "full", req(8, "prompts/get", { name = "nope" }),
    err(8, -32602, "Unknown prompt: 'nope'") },
  { "prompts/get: arguments not an object", "full",
    req(8, "prompts/get", { name = "review", arguments = 3 }),
    err(8, -32602, "Invalid params: 'arguments' must be an object") },
  { "prompts/list on a server without prompts", "bare", req(7, "prompts/list"),
    err(7, -32601, "Method not found: 'prompts/list'") },
  { "prompts/get on a server without prompts", "bare", req(7, "prompts/get", { name = "x" }),
    err(7, -32601, "Method not found: 'prompts/get'") },

  -- notifications are all acknowledged
  { "notifications/initialized", "full", note("notifications/initialized"), ACK },
  { "notifications/cancelled for nothing in flight", "full",
    note("notifications/cancelled", { requestId = 99, reason = "AbortError: remote-cancel" }),
    ACK },
  { "notifications/cancelled without a requestId", "full", note("notifications/cancelled"), ACK },
  { "an unknown notification", "full", note("notifications/whatever", { x = 1 }), ACK },
  { "notifications/roots/list_changed", "bare", note("notifications/roots/list_changed"), ACK },
  { "a response from the client", "full", '{"jsonrpc":"2.0","id":5,"result":{}}', ACK },

  -- errors
  { "unknown method", "full", req(9, "tools/frobnicate"),
    err(9, -32601, "Method not found: 'tools/frobnicate'") },
  { "completion/complete is not served", "full", req(9, "completion/complete"),
    err(9, -32601, "Method not found: 'completion/complete'") },
  { "a notification method sent as a request", "full", req(9, "notifications/initialized"),
    err(9, -32601, "Method not found: 'notifications/initialized'") },
  { "unknown server", "nope", req(9, "tools/list"), err(9, -32601, "Server 'nope' not found") },
  { "unknown server, notification", "nope", note("notifications/initialized"),
    err(nil, -32601, "Server 'nope' not found") },
  { "parse error", "full", '{"jsonrpc":"2.0","id":1,"method":', raw = true,
    err(nil, -32700, "Parse error: invalid JSON: expected a value at byte 34 (the text ends)")
  },
  { "not an object", "full", "42", err(nil, -32600,
    "Invalid Request: a JSON-RPC message must be an object, got number") },
  { "no jsonrpc", "full", '{"id":1,"method":"ping"}',
    err(1, -32600, "Invalid Request: 'jsonrpc' must be \"2.0\"") },
  { "wrong jsonrpc", "full", '{"jsonrpc":"1.0","id":1,"method":"ping"}',
    err(1, -32600, "Invalid Request: 'jsonrpc' must be \"2.0\"") },
  { "null id", "full", '{"jsonrpc":"2.0","id":null,"method":"ping"}',
    err(nil, -32600, "Invalid Request: 'id' must be a string or an integer") },
  { "boolean id", "full", '{"jsonrpc":"2.0","id":true,"method":"ping"}',
    err(nil, -32600, "Invalid Request: 'id' must be a string or an integer") },
  { "an id of 1e400 (infinity)", "full", '{"jsonrpc":"2.0","id":1e400,"method":"ping"}',
    err(nil, -32600, "Invalid Request: 'id' must be a string or an integer") },
  { "a fractional id", "full", '{"jsonrpc":"2.0","id":1.5,"method":"tools/call",'
    .. '"params":{"name":"add","arguments":{"a":1,"b":2}}}',
    err(nil, -32600, "Invalid Request: 'id' must be a string or an integer") },
  { "an id past 2^53 written as a float", "full", '{"jsonrpc":"2.0","id":1e300,"method":"ping"}',
    err(nil, -32600, "Invalid Request: 'id' must be a string or an integer") },
  { "an object id", "full", '{"jsonrpc":"2.0","id":{"n":1},"method":"ping"}',
    err(nil, -32600, "Invalid Request: 'id' must be a string or an integer") },
  { "an array id", "full", '{"jsonrpc":"2.0","id":[1],"method":"ping"}',
    err(nil, -32600, "Invalid Request: 'id' must be a string or an integer") },
  { "an id of 1.0 is the integer 1", "full", '{"jsonrpc":"2.0","id":1.0,"method":"ping"}',
    ok(1, "{}") },
  { "an id of 1e400 as text", "full", '{"jsonrpc":"2.0","id":1e400,"method":"ping"}', raw = true,
    err(nil, -32600, "Invalid Request: 'id' must be a string or an integer") },
  { "a cancel for a fractional request id is only acknowledged", "full",
    '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1.5}}', ACK },
  { "no method", "full", '{"jsonrpc":"2.0","id":1}',
    err(1, -32600, "Invalid Request: 'method' must be a string") },
  { "a batch", "full", '[{"jsonrpc":"2.0","id":1,"method":"ping"}]',
    err(nil, -32600, "Invalid Request: 'jsonrpc' must be \"2.0\"") },
}

describe("the MCP router", function()
  before_each(harness.before)
  after_each(harness.after)

  describe("answers", function()
    local r = router.new(servers)
    for _, row in ipairs(ROWS) do
      it(row[1], function()
        local message = row.raw and row[3] or assert(json.decode(row[3]))
        local response
        local stderr = capture_stderr(function() response = r:handle(row[2], message) end)
        assert.equal("", stderr)
        assert.equal(wire(row[4]), wire(response))
      end)
    end

    it("the same request twice alike (the CLI's two connections share ids)", function()
      for _, m in ipairs { init("2025-11-25"), req(1, "tools/list"), call(2, "add",
        { a = 1, b = 1 }) } do
        local a = wire(r:handle("full", assert(json.decode(m))))
        local b = wire(r:handle("full", assert(json.decode(m))))
        assert.equal(a, b)
      end
    end)

    it("JSON text as well as decoded messages", function()
      assert.equal(wire(ok(3, "{}")), wire(r:handle("full", req(3, "ping"))))
      -- decoded in C in the middle of mcp_dispatch, whose stack slots must stay put
      local text = call(4, "add", { a = 2, b = 3 }, { progressToken = "p" })
      assert.equal(wire(ok(4, text_result("5"))), wire(r:handle("full", text)))
      local op, tool_, args, meta, id = core.mcp_dispatch(r:servers().full, text)
      assert.same({ "call", "add", 2, 3, "p", 4 },
        { op, tool_.name, args.a, args.b, meta.progressToken, id })
    end)

    it("integer ids stay integers", function()
      local response = r:handle("full", assert(json.decode(req(12345678901, "ping"))))
      assert.equal("integer", math.type(response.id))
      assert.matches('"id":12345678901[,}]', json.encode(response))
    end)

    it("a raising tool with an isError result and the traceback on stderr only", function()
      local response
      local stderr = capture_stderr(function()
        response = r:handle("full", assert(json.decode(call(2, "fail"))))
      end)
      assert.equal(wire(ok(2, text_result("division by zero", true))), wire(response))
      assert.not_matches("traceback", response.result.content[1].text)
      assert.matches("tool 'fail' failed: .*division by zero.*stack traceback", stderr)
    end)

    it("a raising resource read with -32603", function()
      local response
      local stderr = capture_stderr(function()
        response = r:handle("full", assert(json.decode(req(6, "resources/read",
          { uri = "users://err/profile" }))))
      end)
      assert.equal(wire(err(6, -32603, "disk on fire")), wire(response))
      assert.matches("resource 'users://err/profile' failed", stderr)
    end)
  end)

  describe("tools/list pagination", function()
    local many = {}
    for i = 1, 250 do
      many[i] = tool.tool(string.format("t%03d", i), function() return i end)
    end
    local big = tool.server("big", many)
    local r = router.new { big = big }

    local function names(response)
      local out = {}
      for i, t in ipairs(response.result.tools) do out[i] = t.name end
      return out
    end

    it("pages of 100 with an opaque cursor", function()
      local seen, cursor, pages = {}, nil, 0
      repeat
        local response = r:handle("big", assert(json.decode(req(pages, "tools/list",
          { cursor = cursor }))))
        assert.equal(pages, response.id)
        local page = names(response)
        assert.is_true(#page <= 100)
        for _, n in ipairs(page) do seen[#seen + 1] = n end
        cursor = response.result.nextCursor
        pages = pages + 1
      until cursor == nil
      assert.equal(3, pages)
      assert.equal(250, #seen)
      for i = 1, 250 do assert.equal(string.format("t%03d", i), seen[i]) end
    end)

    it("the exact pages", function()
      local p1 = r:handle("big", assert(json.decode(req(1, "tools/list"))))
      assert.equal(100, #p1.result.tools)
      assert.equal("t001", p1.result.tools[1].name)
      local p3 = r:handle("big", assert(json.decode(req(3, "tools/list",
        { cursor = "tools:200" }))))
      assert.equal(50, #p3.result.tools)
      assert.equal("t201", p3.result.tools[1].name)
      assert.is_nil(p3.result.nextCursor)
      assert.equal(wire(p1.result.tools[1]), wire('{"name":"t001","inputSchema":'
        .. EMPTY_SCHEMA .. "}"))
    end)

    it("rejects cursors that are not ours", function()
      for _, c in ipairs { "", "tools:", "tools:0", "tools:251", "tools:-1", "tools:1x",
        "prompts:100", "100", "tools:99999999999999999999" } do
        local response = r:handle("big", assert(json.decode(req(1, "tools/list",
          { cursor = c }))))
        assert.equal(-32602, response.error.code, c)
      end
    end)

    it("honours server.page_size", function()
      local s = tool.server("small", { many[1], many[2], many[3] })
      s.page_size = 2
      local rs = router.new { small = s }
      local p1 = rs:handle("small", req(1, "tools/list"))
      assert.same({ "t001", "t002" }, names(p1))
      local p2 = rs:handle("small", req(2, "tools/list", { cursor = p1.result.nextCursor }))
      assert.same({ "t003" }, names(p2))
      assert.is_nil(p2.result.nextCursor)
    end)

    it("sees tools added after the first page", function()
      local s = tool.server("grow", { many[1], many[2], many[3] })
      s.page_size = 2
      local rs = router.new { grow = s }
      local p1 = rs:handle("grow", req(1, "tools/list"))
      s:add(many[4])
      local p2 = rs:handle("grow", req(2, "tools/list", { cursor = p1.result.nextCursor }))
      assert.same({ "t003", "t004" }, names(p2))
      local again = rs:handle("grow", assert(json.decode('{"jsonrpc":"2.0","id":3,'
        .. '"method":"tools/list","params":{"cursor":null}}')))
      assert.same({ "t001", "t002" }, names(again))
      assert.equal(p1.result.nextCursor, again.result.nextCursor)
    end)
  end)

  describe("core.mcp_dispatch", function()
    local dispatch = core.mcp_dispatch

    it("hands back a tools/call", function()
      local args, meta = { a = 1, b = 2 }, { progressToken = 7 }
      local op, t, a, m, id = dispatch(full, { jsonrpc = "2.0", id = 4, method = "tools/call",
        params = { name = "add", arguments = args, _meta = meta } })
      assert.equal("call", op)
      assert.equal(add, t)
      assert.equal(args, a)
      assert.equal(meta, m)
      assert.equal(4, id)
      op, t, a, m, id = dispatch(full, { jsonrpc = "2.0", id = "x", method = "tools/call",
        params = { name = "add", arguments = json.null } })
      assert.equal("call", op)
      assert.equal(add, t)
      assert.is_nil(a)
      assert.is_nil(m)
      assert.equal("x", id)
    end)

    it("hands back a resources/read", function()
      local op, res, uri, params, id = dispatch(full, { jsonrpc = "2.0", id = 1,
        method = "resources/read", params = { uri = "users://a%20b/profile" } })
      assert.equal("read", op)
      assert.equal(profile, res)
      assert.equal("users://a%20b/profile", uri)
      assert.same({ id = "a b" }, params)
      assert.equal(1, id)
      op, res, uri, params = dispatch(full, { jsonrpc = "2.0", id = 1,
        method = "resources/read", params = { uri = "mem://motd" } })
      assert.equal("read", op)
      assert.equal("mem://motd", uri)
      assert.equal(motd, res)
      assert.same({}, params)
    end)

    it("hands back a prompts/get", function()
      local args = { code = "x" }
      local op, p, a, id = dispatch(full, { jsonrpc = "2.0", id = 1, method = "prompts/get",
        params = { name = "review", arguments = args } })
      assert.equal("prompt", op)
      assert.equal(review, p)
      assert.equal(args, a)
      assert.equal(1, id)
    end)

    it("hands back notifications/cancelled", function()
      assert.same({ "cancel", 2, "AbortError: remote-cancel" }, { dispatch(full,
        assert(json.decode(note("notifications/cancelled",
          { requestId = 2, reason = "AbortError: remote-cancel" })))) })
      assert.same({ "cancel", "r1" }, { dispatch(full, { jsonrpc = "2.0",
        method = "notifications/cancelled", params = { requestId = "r1" } }) })
    end)

    it("says ack for a notification or a client's response, and writes no answer", function()
      for _, message in ipairs {
        note("notifications/initialized"),
        note("notifications/whatever", { x = 1 }),
        note("notifications/cancelled"), -- no requestId: nothing to cancel
        { jsonrpc = "2.0", method = "notifications/cancelled", params = { requestId = {} } },
        { jsonrpc = "2.0", id = 5, result = {} },
        { jsonrpc = "2.0", id = 6, error = { code = -1, message = "no" } },
      } do
        assert.same({ "ack" }, { dispatch(full, message) })
      end
      -- the control channel still answers each (the CLI waits for it)
      local got = {}
      router.new { full = full }:handle_async("full", note("notifications/initialized"),
        function(tag, response) got[#got + 1] = { tag, response } end, "t")
      assert.equal(1, #got)
      assert.equal("t", got[1][1])
      assert.equal(wire('{"jsonrpc":"2.0","result":{},"id":0}'), wire(got[1][2]))
    end)

    it("exports the protocol versions, the log levels and the error builder", function()
      assert.same({ "2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25" },
        core.MCP_PROTOCOL_VERSIONS)
      assert.equal(core.MCP_PROTOCOL_VERSIONS[#core.MCP_PROTOCOL_VERSIONS],
        core.MCP_PROTOCOL_VERSION)
      local _, answer = dispatch(full, req(1, "initialize", { protocolVersion = "1999-01-01" }))
      assert.equal(core.MCP_PROTOCOL_VERSION, answer.result.protocolVersion)
      assert.same({ "debug", "info", "notice", "warning", "error", "critical", "alert",
        "emergency" }, core.LOG_LEVELS)
      for _, level in ipairs(core.LOG_LEVELS) do
        local op, r = dispatch(full, req(2, "logging/setLevel", { level = level }))
        assert.equal("reply", op)
        assert.is_not_nil(r.result)
      end
      assert.equal(wire('{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"bad",'
        .. '"data":{"uri":"x"}}}'), wire(core.jsonrpc_error(3, -32602, "bad", { uri = "x" })))
      assert.equal(wire('{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"no"}}'),
        wire(core.jsonrpc_error(nil, -32700, "no")))
      assert.has_error(function() core.jsonrpc_error(1, "x", "m") end)
    end)

    it("marks empty results so they encode as {} and []", function()
      local _, response = dispatch(full, { jsonrpc = "2.0", id = 1, method = "ping" })
      assert.equal('{}', json.encode(response.result))
      _, response = dispatch(empty, { jsonrpc = "2.0", id = 1, method = "tools/list" })
      assert.equal('[]', json.encode(response.result.tools))
    end)

    it("raises only for a server that is not a table", function()
      assert.has_error(function() dispatch(nil, {}) end)
      assert.equal("reply", (dispatch(full)))
      assert.equal("reply", (dispatch(full, function() end)))
    end)
  end)

  describe("running calls", function()
    local function handle_in_task(r, server, message)
      return in_task(function() return r:handle(server, assert(json.decode(message))) end)
    end

    it("lets a fast call finish while a slow one waits", function()
      local log = {}
      local slow = tool.tool("slow", function()
        log[#log + 1] = "slow start"
        claude.sleep(0.05)
        log[#log + 1] = "slow end"
        return "slow"
      end)
      local fast = tool.tool("fast", function()
        log[#log + 1] = "fast"
        return "fast"
      end)
      local r = router.new { s = tool.server("s", { slow, fast }) }
      local a = handle_in_task(r, "s", call(1, "slow"))
      local b = handle_in_task(r, "s", call(2, "fast"))
      assert.equal(wire(ok(2, text_result("fast"))), wire(b:wait()))
      assert.equal(1, r:pending())
      assert.equal(wire(ok(1, text_result("slow"))), wire(a:wait()))
      assert.same({ "slow start", "fast", "slow end" }, log)
      assert.equal(0, r:pending())
    end)

    it("runs ten sleeping calls at once", function()
      local events = {}
      local nap = tool.tool("nap", { i = "integer" }, function(args)
        events[#events + 1] = "start"
        claude.sleep(0.2)
        events[#events + 1] = "end"
        return args.i
      end)
      local r = router.new { s = tool.server("s", { nap }) }
      local tasks = {}
      for i = 1, 10 do tasks[i] = handle_in_task(r, "s", call(i, "nap", { i = i })) end
      assert.equal(10, r:pending())
      for i = 1, 10 do
        assert.equal(wire(ok(i, text_result(tostring(i)))), wire(tasks[i]:wait()))
      end
      assert.equal(20, #events)
      for i = 1, 10 do assert.equal("start", events[i]) end
      for i = 11, 20 do assert.equal("end", events[i]) end
    end)

    it("keeps calls with the same id apart", function()
      local echo = tool.tool("echo", { s = "string", wait = "number" }, function(args)
        claude.sleep(args.wait)
        return args.s
      end)
      local r = router.new { s = tool.server("s", { echo }) }
      local a = handle_in_task(r, "s", call(7, "echo", { s = "first", wait = 0.05 }))
      local b = handle_in_task(r, "s", call(7, "echo", { s = "second", wait = 0.01 }))
      assert.equal(2, r:pending())
      assert.equal(wire(ok(7, text_result("second"))), wire(b:wait()))
      assert.equal(wire(ok(7, text_result("first"))), wire(a:wait()))
      assert.equal(0, r:pending())
    end)

    it("cancels a waiting call: ctx.cancelled, <close> run, an isError answer", function()
      local seen_ctx, closed, after = nil, false, false
      local wait = tool.tool("wait", function(_, ctx)
        seen_ctx = ctx
        local guard <close> = setmetatable({}, { __close = function() closed = true end })
        claude.sleep(30)
        after = true
        return guard and "woke"
      end)
      local r = router.new { s = tool.server("s", { wait }) }
      local t = handle_in_task(r, "s", call(2, "wait"))
      assert.is_false(t:done())
      assert.is_false(seen_ctx.cancelled)
      local stderr = capture_stderr(function()
        local response = r:handle("s", assert(json.decode(note("notifications/cancelled",
          { requestId = 2, reason = "AbortError: remote-cancel" }))))
        assert.equal(wire(ACK), wire(response))
      end)
      assert.equal("", stderr) -- a cancellation is no failure: no traceback
      assert.is_true(t:done())
      assert.is_true(seen_ctx.cancelled)
      assert.equal(_VERSION ~= "Lua 5.3", closed) -- (5.3 has no to-be-closed variables)
      assert.is_false(after)
      assert.equal(wire(ok(2, text_result("cancelled: AbortError: remote-cancel", true))),
        wire(t:wait()))
      assert.equal(0, r:pending())
    end)

    it("cancels only the calls of that server and id", function()
      local hold = tool.tool("hold", function() claude.sleep(30) return "never" end)
      local r = router.new { a = tool.server("a", { hold }), b = tool.server("b", { hold }) }
      local t1 = handle_in_task(r, "a", call(1, "hold"))
      local t2 = handle_in_task(r, "b", call(1, "hold"))
      local t3 = handle_in_task(r, "a", call(2, "hold"))
      r:handle("a", note("notifications/cancelled", { requestId = 1 }))
      assert.is_true(t1:done())
      assert.is_false(t2:done())
      assert.is_false(t3:done())
      assert.equal(wire(ok(1, text_result("cancelled", true))), wire(t1:wait()))
      assert.equal(2, r:cancel_all("closing"))
      assert.equal(wire(ok(1, text_result("cancelled: closing", true))), wire(t2:wait()))
      assert.equal(wire(ok(2, text_result("cancelled: closing", true))), wire(t3:wait()))
      local t4 = handle_in_task(r, "a", call(3, "hold"))
      assert.equal(1, r:close())
      assert.equal(wire(ok(3, text_result("cancelled: router closed", true))), wire(t4:wait()))
      assert.equal(0, r:close())
    end)

    it("does not let a call that never returns block the others", function()
      local forever = tool.tool("forever", function()
        async.await(function() end) -- nothing will ever complete this wait
      end)
      local r = router.new { s = tool.server("s", { forever, add }) }
      local stuck = handle_in_task(r, "s", call("f", "forever"))
      for i = 1, 3 do
        local t = handle_in_task(r, "s", call(i, "add", { a = i, b = i }))
        assert.equal(wire(ok(i, text_result(tostring(2 * i)))), wire(t:wait()))
      end
      assert.is_false(stuck:done())
      r:handle("s", note("notifications/cancelled", { requestId = "f", reason = "bye" }))
      assert.equal(wire(ok("f", text_result("cancelled: bye", true))), wire(stuck:wait()))
    end)

    it("cancels a resource read and a prompt", function()
      local slow_res = tool.resource { uri = "mem://slow", name = "slow",
        read = function() claude.sleep(30) end }
      local slow_prompt = tool.prompt { name = "slow",
        get = function() claude.sleep(30) end }
      local r = router.new { s = tool.server("s", { slow_res, slow_prompt }) }
      local a = handle_in_task(r, "s", req(1, "resources/read", { uri = "mem://slow" }))
      local b = handle_in_task(r, "s", req(2, "prompts/get", { name = "slow" }))
      assert.equal(2, r:pending())
      r:handle("s", note("notifications/cancelled", { requestId = 1, reason = "x" }))
      r:handle("s", note("notifications/cancelled", { requestId = 2 }))
      assert.equal(wire(err(1, -32603, "cancelled: x")), wire(a:wait()))
      assert.equal(wire(err(2, -32603, "cancelled")), wire(b:wait()))
    end)

    it("cancels the call when the task running handle is cancelled", function()
      local closed = false
      local hold = tool.tool("hold", function()
        local guard <close> = setmetatable({}, { __close = function() closed = true end })
        claude.sleep(30)
        return guard
      end)
      local r = router.new { s = tool.server("s", { hold }) }
      local t = handle_in_task(r, "s", call(1, "hold"))
      t:cancel("session closed")
      local okj, e = t:join()
      assert.is_false(okj)
      assert.matches("session closed", tostring(e))
      assert.equal(_VERSION ~= "Lua 5.3", closed) -- (5.3 has no to-be-closed variables)
      assert.equal(0, r:pending())
    end)
  end)

  describe("ctx", function()
    local function collector()
      local sent = {}
      return sent, function(server, message) sent[#sent + 1] = { server, message } end
    end

    it("sends progress when the request has a progressToken", function()
      local results = {}
      local work = tool.tool("work", function(_, ctx)
        results[#results + 1] = ctx.progress(1, 2, "half")
        claude.sleep(0)
        results[#results + 1] = ctx.progress(2)
        return "done"
      end)
      local sent, notify = collector()
      local r = router.new({ s = tool.server("s", { work }) }, { notify = notify })
      local t = in_task(r.handle, r, "s", assert(json.decode(call(3, "work", nil,
        { progressToken = "tok" }))))
      assert.equal(wire(ok(3, text_result("done"))), wire(t:wait()))
      assert.same({ true, true }, results)
      assert.equal(2, #sent)
      assert.equal("s", sent[1][1])
      assert.equal(wire([[{"jsonrpc":"2.0","method":"notifications/progress",
        "params":{"progressToken":"tok","progress":1,"total":2,"message":"half"}}]]),
        wire(sent[1][2]))
      assert.equal(wire([[{"jsonrpc":"2.0","method":"notifications/progress",
        "params":{"progressToken":"tok","progress":2}}]]), wire(sent[2][2]))
    end)

    it("sends no progress without a progressToken", function()
      local result
      local work = tool.tool("work", function(_, ctx) result = ctx.progress(1, 2) end)
      local sent, notify = collector()
      local r = router.new({ s = tool.server("s", { work }) }, { notify = notify })
      r:handle("s", call(3, "work"))
      assert.is_false(result)
      assert.same({}, sent)
    end)

    it("sends log messages as notifications/message", function()
      local work = tool.tool("work", function(_, ctx)
        ctx.log("info", "read", 3, "rows")
        ctx.log("warning", { disk = 0.93 })
        return "ok"
      end)
      local sent, notify = collector()
      local r = router.new({ disk = tool.server("disk", { work }) }, { notify = notify })
      assert.equal(wire(ok(1, text_result("ok"))), wire(r:handle("disk", call(1, "work"))))
      assert.equal(2, #sent)
      assert.equal(wire([[{"jsonrpc":"2.0","method":"notifications/message",
        "params":{"level":"info","logger":"disk","data":"read 3 rows"}}]]), wire(sent[1][2]))
      assert.equal(wire([[{"jsonrpc":"2.0","method":"notifications/message",
        "params":{"level":"warning","logger":"disk","data":{"disk":0.93}}}]]), wire(sent[2][2]))
    end)

    it("writes log messages to stderr without notify", function()
      local work = tool.tool("work", function(_, ctx) ctx.log("error", "oops", 1) end)
      local r = router.new { s = tool.server("s", { work }) }
      local stderr = capture_stderr(function() r:handle("s", call(1, "work")) end)
      assert.equal("claude: [s] error: oops 1\n", stderr)
    end)

    it("rejects a bad log level or progress as an isError result", function()
      local work = tool.tool("work", function(_, ctx) ctx.log("loud", "x") end)
      local work2 = tool.tool("work2", function(_, ctx) ctx.progress("half") end)
      local r = router.new { s = tool.server("s", { work, work2 }) }
      local a, b
      capture_stderr(function()
        a = r:handle("s", call(1, "work"))
        b = r:handle("s", call(2, "work2"))
      end)
      assert.is_true(a.result.isError)
      assert.matches("^bad argument #1 to 'log' %(debug, info,.* got 'loud'%)$",
        a.result.content[1].text)
      assert.equal("bad argument #1 to 'progress' (number expected, got string)",
        b.result.content[1].text)
    end)

    it("gives resources and prompts a ctx too", function()
      local seen = {}
      local res = tool.resource { uri = "mem://c", name = "c", read = function(_, _, ctx)
        seen[#seen + 1] = ctx
        return "c"
      end }
      local p = tool.prompt { name = "p", get = function(_, ctx)
        seen[#seen + 1] = ctx
        return "p"
      end }
      local r = router.new { s = tool.server("s", { res, p }, { state = 42 }) }
      r:handle("s", req(1, "resources/read", { uri = "mem://c" }))
      r:handle("s", req("two", "prompts/get", { name = "p" }))
      assert.equal(1, seen[1].request_id)
      assert.equal("two", seen[2].request_id)
      for _, ctx in ipairs(seen) do
        assert.equal("s", ctx.server)
        assert.equal(42, ctx.state)
        assert.is_false(ctx.cancelled)
        assert.is_function(ctx.log)
      end
    end)
  end)

  describe("router objects", function()
    it("add, replace and remove servers", function()
      local r = router.new()
      assert.same({}, r:servers())
      assert.equal(-32601, r:handle("bare", req(1, "ping")).error.code)
      r:set_server("bare", bare)
      assert.same({ bare = bare }, r:servers())
      assert.equal(wire(ok(1, "{}")), wire(r:handle("bare", req(1, "ping"))))
      r:servers().other = full -- a copy
      assert.is_nil(r:servers().other)
      r:set_server("bare", nil)
      assert.equal(wire(err(1, -32601, "Server 'bare' not found")),
        wire(r:handle("bare", req(1, "ping"))))
    end)

    it("answer through handle_async: at once, or when a waiting tool is done", function()
      local slow = tool.tool("slow", function() claude.sleep(0.01) return "late" end)
      local r = router.new { bare = bare, wait = tool.server("wait", { slow }) }
      local got = {}
      local function reply(tag, response, id) got[#got + 1] = { tag, response, id } end
      r:handle_async("bare", req(1, "ping"), reply, "a")           -- protocol: a response
      r:handle_async("bare", { jsonrpc = "2.0", id = 2, method = "tools/call",
        params = { name = "add", arguments = { a = 15, b = 27 } } }, reply, "b")
      r:handle_async("nope", req(3, "ping"), reply, "c")           -- unknown server
      r:handle_async("wait", { jsonrpc = "2.0", id = 4, method = "tools/call",
        params = { name = "slow" } }, reply, "d")
      assert.equal(3, #got) -- all at once but "d", whose tool waits
      in_task(function() claude.sleep(0.05) end):wait()
      assert.equal(4, #got)
      table.sort(got, function(x, y) return x[1] < y[1] end)
      assert.equal(wire(ok(1, "{}")), wire(got[1][2]))
      assert.is_nil(got[1][3])
      -- a tool call: its result and JSON-RPC id, the caller writes the envelope; a result
      -- of one text block comes as its text
      assert.equal("42", got[2][2])
      assert.equal(2, got[2][3])
      assert.equal(-32601, got[3][2].error.code)
      assert.equal("late", got[4][2])
      assert.equal(4, got[4][3])
    end)

    it("keep nothing in flight when the reply itself raises, budgeted or not", function()
      local seen = {}
      claude.on_error(function(e) seen[#seen + 1] = tostring(e) end)
      local r = router.new { plain = tool.server("plain", { add }, { budget = false }),
        budgeted = tool.server("budgeted", { add }) }
      local function reply() error("the writer is gone") end
      for i, name in ipairs { "plain", "budgeted" } do
        r:handle_async(name, { jsonrpc = "2.0", id = i, method = "tools/call",
          params = { name = "add", arguments = { a = 1, b = 2 } } }, reply, name)
      end
      assert.equal(0, r:pending())
      in_task(function() claude.sleep(0.01) end):wait() -- the failures are reported
      claude.on_error(nil)
      assert.equal(2, #seen)
      assert.matches("the writer is gone", seen[1])
      assert.matches("the writer is gone", seen[2])
    end)

    it("give handle_async a table for every other tool result", function()
      local r = router.new { s = tool.server("s", {
        tool.tool("list", function()
          return { claude.content.text("a"), claude.content.text("b") }
        end),
        tool.tool("fails", function() error("boom") end),
        tool.tool("nothing", function() end),
        tool.tool { name = "typed", output_schema = { n = "integer" },
          execute = function() return 1 end },
      }) }
      local got = {}
      local function reply(tag, response) got[tag] = response end
      for i, name in ipairs { "list", "fails", "nothing", "typed" } do
        r:handle_async("s", { jsonrpc = "2.0", id = i, method = "tools/call",
          params = { name = name } }, reply, name)
      end
      assert.equal(wire('{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}'),
        wire(got.list))
      assert.is_true(got.fails.isError)
      assert.equal(wire('{"content":[]}'), wire(got.nothing))
      -- with an output schema, a number is no text: it fails the schema
      assert.is_true(got.typed.isError)
    end)

    it("raise on misuse", function()
      assert.has_error(function() router.new(5) end,
        "bad argument #1 to 'new' (table expected, got number)")
      assert.has_error(function() router.new({ x = {} }) end,
        "bad argument #2 to 'new' (claude.Server expected for 'x', got table)")
      assert.has_error(function() router.new({}, { notfy = print }) end,
        "unknown field 'notfy' to 'new' (did you mean 'notify'?)")
      assert.has_error(function() router.new({}, { notify = 1 }) end,
        "bad field 'notify' to 'new' (function expected, got number)")
      local r = router.new()
      assert.has_error(function() r:set_server(1, bare) end,
        "bad argument #1 to 'set_server' (server name expected, got number)")
      assert.has_error(function() r:set_server("x", add) end,
        "bad argument #2 to 'set_server' (claude.Server expected for 'x', got claude.Tool)")
    end)
  end)
end)
