-- MCP Apps (io.modelcontextprotocol/ui) in the tool DSL and the server: claude.view (its
-- listing, its reads, a file beside the Lua file that defines it, the misuse of each field), a
-- tool's view and visibility (the _meta the extension defines, the view served with the
-- tool), the capability in both eras, renders_views, and the files --watch follows.
local claude = require "claude"
local json = require "claude.json"
local apps = require "claude.mcp.apps"
local connection = require "claude.mcp.server.connection"
local modern = require "claude.mcp.server.modern"
local harness = require "support.harness"

local MIME = "text/html;profile=mcp-app"
local HTML = "<!doctype html><html><body><p id=n></p></body></html>"

local function write(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

-- The message of the misuse `fn` raises, without its position.
local function misuse(fn)
  local ok, err = pcall(fn)
  assert.is_false(ok)
  return (tostring(err):gsub("^[^\n]-:%d+: ", ""))
end

-- What a JSON client sees of `v`.
local function wire(v)
  return json.decode(json.encode(v))
end

local function read(server, uri)
  local r = server.resources[uri]
  return wire(claude.content.read_result(r, uri, true, r.read(uri, {}, nil)))
end

local function serve(server, msg)
  local sent = {}
  local conn = connection.new { server = server, send = function(m)
    sent[#sent + 1] = wire(m)
    return true
  end }
  conn:receive(msg)
  return sent[1], conn
end

local INIT = { jsonrpc = "2.0", id = 1, method = "initialize", params = {
  protocolVersion = "2025-11-25", capabilities = {},
  clientInfo = { name = "spec", version = "1" } } }

local function envelope(caps)
  return { ["io.modelcontextprotocol/protocolVersion"] = "2026-07-28",
    ["io.modelcontextprotocol/clientCapabilities"] = caps or {} }
end

describe("MCP Apps", function()
  local view = claude.view { uri = "ui://shop/cart.html", name = "Cart", description = "The cart",
    html = HTML, csp = { connect_domains = { "https://api.example.com" },
      resourceDomains = { "https://*.cdn.example.com" } },
    permissions = { clipboard_write = true, camera = false }, domain = "a904.example.com",
    prefers_border = false }

  it("makes a view a ui:// resource of the extension's MIME type with its _meta.ui", function()
    assert.equal("claude.Resource", getmetatable(view).__name)
    local listing = wire(view.listing)
    assert.same({ uri = "ui://shop/cart.html", name = "Cart", description = "The cart",
      mimeType = MIME, size = #HTML, _meta = { ui = {
        csp = { connectDomains = { "https://api.example.com" },
          resourceDomains = { "https://*.cdn.example.com" } },
        permissions = { clipboardWrite = {} }, domain = "a904.example.com",
        prefersBorder = false } } }, listing)
    -- a read carries the HTML and the same _meta.ui (hosts read the content's first)
    local s = claude.server("shop", { view })
    assert.same({ contents = { { uri = "ui://shop/cart.html", mimeType = MIME, text = HTML,
      _meta = listing._meta } } }, read(s, "ui://shop/cart.html"))
    -- without metadata: no _meta at all; the name defaults to the URI
    local plain = claude.view { uri = "ui://plain", html = HTML }
    assert.same({ uri = "ui://plain", name = "ui://plain", mimeType = MIME, size = #HTML },
      wire(plain.listing))
    assert.is_nil(read(claude.server("p", { plain }), "ui://plain").contents[1]._meta)
  end)

  it("reads a view's file beside the Lua file that defines it", function()
    local dir = harness.tempdir()
    os.execute("mkdir -p " .. harness.quote(dir .. "/lib"))
    write(dir .. "/lib/view.html", HTML)
    write(dir .. "/lib/views.lua", [[
      local claude = require "claude"
      local v = claude.view { uri = "ui://v/view.html", file = "view.html" }
      return v
    ]])
    local v = dofile(dir .. "/lib/views.lua")
    assert.equal(dir .. "/lib/view.html", v.view_file)
    -- in `return claude.view{...}` the caller is unknown: beside the script run (arg[0])
    write(dir .. "/tail.lua", [[
      return require("claude").view { uri = "ui://v/tail.html", file = "lib/view.html" }
    ]])
    local saved = rawget(_G, "arg")
    rawset(_G, "arg", { [0] = dir .. "/main.lua" })
    local ok, tail = pcall(dofile, dir .. "/tail.lua")
    rawset(_G, "arg", saved)
    assert(ok, tail)
    assert.equal(dir .. "/lib/view.html", tail.view_file)
    assert.equal(HTML, read(claude.server("v", { v }), "ui://v/view.html").contents[1].text)
    -- an absolute path is taken as it is; apps.files lists what --watch follows
    local abs = claude.view { uri = "ui://v/abs.html", file = dir .. "/lib/view.html" }
    assert.equal(dir .. "/lib/view.html", abs.view_file)
    local s = claude.server("v", { v, abs, claude.view { uri = "ui://v/s", html = HTML } })
    assert.same({ dir .. "/lib/view.html" }, apps.files { { "v", s } })
    assert.matches("bad field 'file' to 'view' %(cannot read the view: .*nope%.html",
      misuse(function() claude.view { uri = "ui://v/x", file = dir .. "/nope.html" } end))
  end)

  it("refuses a view's bad fields, naming them", function()
    local cases = {
      { {}, "bad field 'uri' to 'view' (string expected, got nil)" },
      { { uri = "https://x/view.html", html = HTML },
        "bad field 'uri' to 'view' (a ui:// URI expected, got \"https://x/view.html\")" },
      { { uri = "ui://", html = HTML }, "bad field 'uri' to 'view' (a ui:// URI expected, "
        .. "got \"ui://\")" },
      { { uri = "ui://a" }, "bad field 'file' to 'view' (exactly one of file and html expected)" },
      { { uri = "ui://a", html = HTML, file = "x.html" },
        "bad field 'html' to 'view' (exactly one of file and html expected)" },
      { { uri = "ui://a", html = HTML, csp = { connect_domains = "https://a" } },
        "bad field 'csp.connect_domains' to 'view' (a list of origins expected, got string)" },
      { { uri = "ui://a", html = HTML, csp = { connect_domains = { "https://a; script-src *" } } },
        "bad field 'csp.connect_domains[1]' to 'view' (an origin such as "
        .. "'https://api.example.com' expected, got \"https://a; script-src *\")" },
      { { uri = "ui://a", html = HTML, permissions = { camera = {} } },
        "bad field 'permissions.camera' to 'view' (boolean expected, got table)" },
      { { uri = "ui://a", html = HTML, prefers_border = "yes" },
        "bad field 'prefers_border' to 'view' (boolean expected, got string)" },
    }
    for _, c in ipairs(cases) do
      assert.equal(c[2], misuse(function() claude.view(c[1]) end))
    end
    assert.matches("unknown field 'csp.conect_domains' to 'view'.*did you mean "
      .. "'csp.connect_domains'",
      misuse(function() claude.view { uri = "ui://a", html = HTML,
        csp = { conect_domains = {} } } end))
    assert.matches("unknown field 'permissions.microphon' to 'view'.*did you mean "
      .. "'permissions.microphone'",
      misuse(function() claude.view { uri = "ui://a", html = HTML,
        permissions = { microphon = true } } end))
    assert.matches("unknown field 'htm' to 'view'.*did you mean 'html'",
      misuse(function() claude.view { uri = "ui://a", htm = HTML } end))
    -- blamed on the caller's line
    local ok, err = pcall(function() claude.view { uri = "x" } end)
    assert.is_false(ok)
    assert.matches("apps_spec.lua:%d+: bad field 'uri'", err)
  end)

  it("names a tool's view and visibility in its _meta, and serves the view with it", function()
    local show = claude.tool("show", "Shows the cart", {}, function() return { items = 2 } end,
      { view = view })
    local add = claude.tool { name = "add", description = "Adds an item", input_schema = {},
      view = view, visibility = { "app" }, meta = { ui = { extra = 1 }, other = "kept" },
      execute = function() return "added" end }
    local by_uri = claude.tool("by_uri", function() return "x" end,
      { view = "ui://shop/cart.html", visibility = { "model", "app" } })
    local only = claude.tool("only", function() return "x" end, { visibility = { "model" } })
    assert.same({ ui = { resourceUri = "ui://shop/cart.html" },
      ["ui/resourceUri"] = "ui://shop/cart.html" }, wire(show.listing._meta))
    assert.same({ ui = { resourceUri = "ui://shop/cart.html", visibility = { "app" }, extra = 1 },
      ["ui/resourceUri"] = "ui://shop/cart.html", other = "kept" }, wire(add.listing._meta))
    assert.same({ "model", "app" }, wire(by_uri.listing._meta).ui.visibility)
    assert.same({ ui = { visibility = { "model" } } }, wire(only.listing._meta))
    -- the view comes with its tools, once, whichever order the list has
    for _, items in ipairs { { show, add }, { view, show, add }, { show, view, add } } do
      local s = claude.server("shop", items)
      assert.equal(1, #s:list("resources"))
      assert.equal(view, s.resources["ui://shop/cart.html"])
    end
    local s = claude.server("shop")
    s:add(show)
    assert.equal(view, s.resources["ui://shop/cart.html"])
    -- another view of the same URI is a duplicate
    local other = claude.view { uri = "ui://shop/cart.html", html = "<p>other</p>" }
    assert.matches("duplicate resource uri 'ui://shop/cart.html'", misuse(function()
      claude.server("shop", { other, show })
    end))
    -- a call answers as any tool's does
    assert.same({ content = { { type = "text", text = '{"items":2}' } },
      structuredContent = { items = 2 } }, wire(claude.mcp.tool.call(show)))
  end)

  it("refuses a tool's bad view and visibility", function()
    local function t(opts) return function() claude.tool("t", function() end, opts) end end
    assert.equal("bad field 'view' to 'tool' (a view (claude.view) or a ui:// URI expected, "
      .. "got number)", misuse(t { view = 1 }))
    assert.equal("bad field 'view' to 'tool' (a ui:// URI expected, got \"https://x\")",
      misuse(t { view = "https://x" }))
    assert.equal("bad field 'view' to 'tool' (a view (claude.view) or a ui:// URI expected, "
      .. "got claude.Resource)", misuse(t { view = claude.resource { uri = "ui://r", name = "r",
        text = "x" } }))
    assert.equal("bad field 'visibility' to 'tool' (a list of 'model' and 'app' expected, got "
      .. "an empty or keyed table)", misuse(t { visibility = {} }))
    assert.equal("bad field 'visibility' to 'tool' (a list of 'model' and 'app' expected, got "
      .. "string)", misuse(t { visibility = "app" }))
    assert.equal("bad field 'visibility[2]' to 'tool' ('model' or 'app' (once each) expected, "
      .. "got 'user')", misuse(t { visibility = { "app", "user" } }))
    assert.equal("bad field 'visibility[2]' to 'tool' ('model' or 'app' (once each) expected, "
      .. "got 'app')", misuse(t { visibility = { "app", "app" } }))
  end)

  it("shapes a result for a view: text for the model, data and _meta for the view", function()
    local t = claude.tool("t", function()
      return claude.view_result("2 items", { items = { "a", "b" } }, { at = 1 })
    end)
    assert.same({ content = { { type = "text", text = "2 items" } },
      structuredContent = { items = { "a", "b" } }, _meta = { at = 1 } },
      wire(claude.mcp.tool.call(t)))
    assert.matches('"structuredContent":{}', json.encode(claude.view_result("none", {})), 1,
      true)
    assert.equal("bad argument #1 to 'view_result' (string expected, got nil)",
      misuse(function() claude.view_result() end))
    assert.equal("bad argument #2 to 'view_result' (a table of fields expected, got a list)",
      misuse(function() claude.view_result("x", { 1, 2 }) end))
    assert.equal("bad argument #3 to 'view_result' (table expected, got string)",
      misuse(function() claude.view_result("x", nil, "m") end))
  end)

  it("declares the extension in initialize and server/discover when the server has views",
    function()
      local with = claude.server("shop", { claude.tool("show", function() return "x" end,
        { view = view }) })
      local without = claude.server("plain", { claude.tool("t", function() return "x" end) })
      local r = serve(with, INIT)
      assert.same({ mimeTypes = { MIME } },
        r.result.capabilities.extensions["io.modelcontextprotocol/ui"])
      assert.is_nil(serve(without, INIT).result.capabilities.extensions)
      local discover = { jsonrpc = "2.0", id = 2, method = "server/discover",
        params = { _meta = envelope() } }
      r = serve(with, discover)
      assert.same({ mimeTypes = { MIME } },
        r.result.capabilities.extensions["io.modelcontextprotocol/ui"])
      assert.is_nil(serve(without, discover).result.capabilities.extensions)
      -- a server that gains a view declares it from then on
      without:add(claude.view { uri = "ui://later", html = HTML })
      assert.is_table(serve(without, INIT).result.capabilities.extensions)
      -- a tool that names a view by URI is enough
      local m = modern.new(claude.server("u", { claude.tool("t", function() end,
        { view = "ui://elsewhere" }) }))
      assert.same({ mimeTypes = { MIME } },
        wire(m:capabilities()).extensions["io.modelcontextprotocol/ui"])
    end)

  it("tells a tool whether its client renders views, in both eras", function()
    local seen = {}
    local s = claude.server("s", { claude.tool("probe", function(_, ctx)
      seen[#seen + 1] = { ctx.era, claude.renders_views(ctx) }
      return "ok"
    end, { view = view }) })
    local ui = { extensions = { ["io.modelcontextprotocol/ui"] = { mimeTypes = { MIME } } } }
    local call = { jsonrpc = "2.0", id = 2, method = "tools/call", params = { name = "probe" } }
    harness.task(function()
      for _, caps in ipairs { ui, {} } do
        local init = wire(INIT)
        init.params.capabilities = caps
        local _, conn = serve(s, init)
        conn:receive(call)
        local m = wire(call)
        m.params._meta = envelope(caps)
        serve(s, m)
        claude.sleep(0.05)
      end
    end)()
    assert.same({ { "legacy", true }, { "modern", true }, { "legacy", false },
      { "modern", false } }, seen)
    assert.is_true(apps.renders_views(ui))
    assert.is_false(apps.renders_views { extensions = { ["io.modelcontextprotocol/ui"] = {
      mimeTypes = { "text/html" } } } })
    assert.is_false(apps.renders_views(nil))
  end)
end)
