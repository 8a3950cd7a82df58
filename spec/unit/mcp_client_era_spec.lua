-- The pure parts of the client's modern era: the probe's verdicts, the x-mcp-header scan
-- and the Mcp-Param-* values, the cache's lifetimes, the protocol option.
local claude = require "claude"
local json = require "claude.json"
local negotiate = require "claude.mcp.client.negotiate"
local param_headers = require "claude.mcp.client.param_headers"
local cache_mod = require "claude.mcp.client.cache"
local registration = require "claude.oauth.registration"

describe("the server/discover probe's verdict", function()
  local function kind(outcome, transport)
    local v = negotiate.classify(outcome, transport or "http")
    return v.kind, v
  end

  it("is modern for a discover result listing a revision we speak", function()
    local k, v = kind { result = { supportedVersions = { "2027-01-01", "2026-07-28" } } }
    assert.equal("modern", k)
    assert.equal("2026-07-28", v.version)
  end)

  it("is legacy for a discover result without one, or without the list", function()
    assert.equal("legacy", kind { result = { supportedVersions = { "2027-01-01" } } })
    assert.equal("legacy", kind { result = {} })
  end)

  it("asks again at the revision a -32022 names, and only at one we speak", function()
    local k, v = kind { error = { code = -32022, data = { supported = { "2026-07-28" } } } }
    assert.equal("corrective", k)
    assert.equal("2026-07-28", v.version)
    assert.equal("legacy", kind { error = { code = -32022,
      data = { supported = { "2025-11-25" } } } })
    assert.equal("legacy", kind { error = { code = -32022 } })
    k, v = kind { error = { code = -32022, data = { supported = { "2099-01-01" } } } }
    assert.equal("error", k)
    assert.matches("2099%-01%-01", v.err.message)
  end)

  it("is legacy for any other JSON-RPC error, in a body or in an HTTP 4xx", function()
    for _, code in ipairs { -32601, -32600, -32000, -32001, -32020, -32602 } do
      assert.equal("legacy", kind { error = { code = code, message = "no" } })
    end
    assert.equal("legacy", kind { failed = { status = 400, body = json.encode { jsonrpc = "2.0",
      id = json.null, error = { code = -32000, message = "Bad Request: no session" } } } })
    assert.equal("legacy", kind { failed = { status = 404, body = "Not Found" } })
  end)

  it("is an error for what says nothing of the era", function()
    assert.equal("error", kind { failed = { status = 401 } })
    assert.equal("error", kind { failed = { status = 403 } })
    assert.equal("error", kind { failed = { status = 502, body = "bad gateway" } })
    assert.equal("error", kind { failed = { status = 200 } })
    assert.equal("error", kind { failed = { kind = "auth", status = 400, message = "x" } })
    assert.equal("error", kind { failed = { kind = "connection", message = "refused" } })
    assert.equal("error", kind { timeout = true }, "http")
    assert.equal("error", kind { closed = { message = "gone" } }, "http")
  end)

  it("over stdio, is legacy when the probe gets no answer or the server exits", function()
    assert.equal("legacy", kind({ timeout = true }, "stdio"))
    local k, v = kind({ closed = { message = "exited" } }, "stdio")
    assert.equal("legacy", k)
    assert.is_true(v.respawn)
  end)
end)

describe("x-mcp-header declarations", function()
  local function prop(t, name) return { type = t, ["x-mcp-header"] = name } end
  local function schema(props) return { type = "object", properties = props } end

  it("are found along properties chains, nested ones too", function()
    local d = assert(param_headers.scan(schema { region = prop("string", "Region"),
      n = prop("integer", "N"), opts = { type = "object",
        properties = { verbose = prop("boolean", "Verbose") } }, plain = { type = "string" } }))
    table.sort(d, function(a, b) return a.header < b.header end)
    assert.same({ { path = { "n" }, header = "N", type = "integer" },
      { path = { "region" }, header = "Region", type = "string" },
      { path = { "opts", "verbose" }, header = "Verbose", type = "boolean" } }, d)
    assert.same({}, assert(param_headers.scan(schema { a = { type = "string" } })))
    assert.same({}, assert(param_headers.scan(nil)))
  end)

  it("are found, and refused with their path, in a server's schema nested 5,000 deep", function()
    local function deep(leaf)
      local root = schema {}
      local node = root
      for i = 1, 5000 do
        local child = i == 5000 and leaf or schema {}
        node.properties["p" .. i] = child
        node = child
      end
      return root
    end
    local d = assert(param_headers.scan(deep(prop("string", "Deep"))))
    assert.equal(5000, #d[1].path)
    assert.same({ "p1", "p2" }, { d[1].path[1], d[1].path[2] })
    assert.equal("p5000", d[1].path[5000])
    local _, why = param_headers.scan(deep(prop("object", "Deep")))
    assert.matches("^p1%.p2%.p3%..*%.p5000: x%-mcp%-header is only allowed", why)
  end)

  local invalid = {
    empty = schema { a = prop("string", "") },
    object = schema { a = prop("object", "A") },
    array = schema { a = prop("array", "A") },
    null = schema { a = prop("null", "A") },
    number = schema { a = prop("number", "A") },
    not_a_string = schema { a = { type = "string", ["x-mcp-header"] = 3 } },
    same_case = schema { a = prop("string", "Region"), b = prop("string", "Region") },
    other_case = schema { a = prop("string", "MyField"), b = prop("string", "myfield") },
    space = schema { a = prop("string", "My Region") },
    colon = schema { a = prop("string", "My:Region") },
    non_ascii = schema { a = prop("string", "Région") },
    control = schema { a = prop("string", "Region\t1") },
    under_items = schema { a = { type = "array", items = prop("string", "A") } },
    under_anyof = schema { a = { anyOf = { prop("string", "A") } } },
    under_defs = { type = "object", ["$defs"] = { x = prop("string", "A") } },
    at_root = { type = "string", ["x-mcp-header"] = "A" },
  }
  for name, s in pairs(invalid) do
    it("are invalid: " .. name, function()
      local d, why = param_headers.scan(s)
      assert.is_nil(d)
      assert.is_string(why)
    end)
  end

  it("encode values: plain when printable ASCII, else =?base64?...?=", function()
    local enc = param_headers.encode
    assert.equal("us-west1", enc("us-west1"))
    assert.equal("us west 1", enc("us west 1"))
    assert.equal("a\tb", enc("a\tb"))
    assert.equal("=?base64??=", enc(""))
    assert.equal("=?base64?IHBhZGRlZCA=?=", enc(" padded "))
    assert.equal("=?base64?CWluZGVudGVk?=", enc("\tindented"))
    assert.equal("=?base64?bGluZTEKbGluZTI=?=", enc("line1\nline2"))
    assert.equal("=?base64?SGVsbG8sIOS4lueVjA==?=", enc("Hello, 世界"))
    assert.equal("=?base64?PT9iYXNlNjQ/eD89?=", enc("=?base64?x?="))
  end)

  it("build the headers of a call, leaving out what is missing or null", function()
    local d = assert(param_headers.scan(schema { region = prop("string", "Region"),
      n = prop("integer", "Priority"), v = prop("boolean", "Verbose") }))
    assert.same({ ["Mcp-Param-Region"] = "eu", ["Mcp-Param-Priority"] = "42",
      ["Mcp-Param-Verbose"] = "false" }, param_headers.build(d, { region = "eu", n = 42,
        v = false }))
    assert.same({ ["Mcp-Param-Region"] = "eu" }, param_headers.build(d, { region = "eu",
      v = json.null }))
    assert.is_nil(param_headers.build(d, {}))
  end)
end)

describe("the client's cache", function()
  it("keeps a result for its ttlMs, and nothing without one", function()
    local c = cache_mod.new()
    c:put("resources/read", "a", { contents = {}, ttlMs = 60000 })
    c:put("resources/read", "b", { contents = {}, ttlMs = 0 })
    c:put("resources/read", "c", { contents = {} })
    assert.is_table(c:get("resources/read", "a"))
    assert.is_nil(c:get("resources/read", "b"))
    assert.is_nil(c:get("resources/read", "c"))
    c:put("tools/list", nil, { tools = {}, ttlMs = 1 })
    require("claude").sleep(0.05) -- (in a task inside the host, or running the loop)
    assert.is_nil(c:get("tools/list", nil))
  end)

  it("drops what a notification makes stale, and keeps nothing when off", function()
    local c = cache_mod.new()
    c:put("tools/list", nil, { tools = {}, ttlMs = 60000 })
    c:put("resources/read", "x", { contents = {}, ttlMs = 60000 })
    c:put("resources/read", "y", { contents = {}, ttlMs = 60000 })
    c:notified("notifications/tools/list_changed")
    assert.is_nil(c:get("tools/list", nil))
    c:notified("notifications/resources/updated", { uri = "x" })
    assert.is_nil(c:get("resources/read", "x"))
    assert.is_table(c:get("resources/read", "y"))
    local off = cache_mod.new(false)
    off:put("tools/list", nil, { tools = {}, ttlMs = 60000 })
    assert.is_nil(off:get("tools/list", nil))
  end)

  it("gives a copy: changing it changes nothing kept", function()
    local c = cache_mod.new()
    c:put("resources/read", "x", { contents = { 1 }, ttlMs = 60000 })
    c:get("resources/read", "x").contents = nil
    assert.same({ 1 }, c:get("resources/read", "x").contents)
  end)
end)

describe("connect's protocol options", function()
  local function connect(o)
    o.command = "true"
    return claude.mcp.connect(o)
  end

  it("refuse what is not a mode or a revision, at the caller's line", function()
    assert.has_error(function() connect { protocol = "2030-01-01" } end,
      "bad field 'protocol' to 'connect' ('auto', 'legacy' or a revision: 2026-07-28, "
      .. "2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05 expected, got '2030-01-01')")
    assert.has_error(function()
      connect { protocol = "auto", protocol_version = "2025-11-25" }
    end, "bad options to 'connect' ('protocol' and 'protocol_version' exclude each other)")
    assert.has_error(function() connect { log_level = "loud" } end)
    assert.has_error(function() connect { max_input_rounds = 0 } end)
    assert.has_error(function()
      claude.mcp.connect { url = "http://x/", transport = "sse", protocol = "2026-07-28" }
    end)
  end)
end)

describe("the application_type of a registration (SEP-837)", function()
  it("is native for a loopback or own-scheme redirect, web otherwise", function()
    assert.equal("native", registration.application_type("http://127.0.0.1:3000/callback"))
    assert.equal("native", registration.application_type("http://localhost/cb"))
    assert.equal("native", registration.application_type("http://[::1]:8080/cb"))
    assert.equal("native", registration.application_type("com.example.app:/callback"))
    assert.equal("web", registration.application_type("https://app.example.com/callback"))
    assert.equal("web", registration.application_type(nil))
  end)
end)
