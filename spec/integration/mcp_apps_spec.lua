-- `claudelua mcp` serving MCP Apps over stdio, spoken to in JSON lines: the capability in
-- both eras, the tool's _meta and the view's resource, and `--watch` reloading a view whose
-- file changed (not only the tools file).
local claude = require "claude"
local process = require "claude.process"
local harness = require "support.harness"

local MIME = "text/html;profile=mcp-app"

local TOOLS = [[
local claude = require "claude"
local count = 0
local view = claude.view { uri = "ui://counter/view.html", file = "view.html",
  csp = { connect_domains = { "https://api.example.com" } } }
return claude.server("counter", {
  claude.tool("counter", "Shows the counter", {}, function() return { count = count } end,
    { view = view }),
  claude.tool("bump", "Adds one", {}, function()
    count = count + 1
    return { count = count }
  end, { view = view, visibility = { "app" } }),
})
]]

local function write(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

local function serve(extra)
  local dir = harness.tempdir()
  write(dir .. "/tools.lua", TOOLS)
  write(dir .. "/view.html", "<p>one</p>")
  local args = { "mcp" }
  for _, a in ipairs(extra or {}) do args[#args + 1] = a end
  args[#args + 1] = dir .. "/tools.lua"
  local p = assert(process.spawn { harness.claudelua, args = args, stdout = "json",
    stderr = "collect" })
  return p, dir
end

local function read(p)
  local v, err = p:read_line(20)
  assert(v, "no message from the server: " .. tostring(err) .. "\nstderr: " .. p:stderr())
  return v
end

local function answer(p, id)
  local before = {}
  while true do
    local m = read(p)
    if m.id == id and m.method == nil then return m, before end
    before[#before + 1] = m
  end
end

local UI = { extensions = { ["io.modelcontextprotocol/ui"] = { mimeTypes = { MIME } } } }

describe("claudelua mcp with MCP Apps", function()
  before_each(harness.before)
  after_each(harness.after)

  it("declares the extension and serves the tool's _meta and its view in the legacy era",
    function()
      local p <close> = serve()
      p:write_json { jsonrpc = "2.0", id = 0, method = "initialize", params = {
        protocolVersion = "2025-11-25", capabilities = UI, clientInfo = { name = "s",
          version = "1" } } }
      local r = answer(p, 0)
      assert.same({ mimeTypes = { MIME } },
        r.result.capabilities.extensions["io.modelcontextprotocol/ui"])
      p:write_json { jsonrpc = "2.0", method = "notifications/initialized" }
      p:write_json { jsonrpc = "2.0", id = 1, method = "tools/list" }
      local tools = answer(p, 1).result.tools
      assert.same({ resourceUri = "ui://counter/view.html" }, tools[1]._meta.ui)
      assert.equal("ui://counter/view.html", tools[1]._meta["ui/resourceUri"])
      assert.same({ resourceUri = "ui://counter/view.html", visibility = { "app" } },
        tools[2]._meta.ui)
      p:write_json { jsonrpc = "2.0", id = 2, method = "resources/list" }
      local res = answer(p, 2).result.resources
      assert.same({ { uri = "ui://counter/view.html", name = "ui://counter/view.html",
        mimeType = MIME, size = 10, _meta = { ui = { csp = {
          connectDomains = { "https://api.example.com" } } } } } }, res)
      p:write_json { jsonrpc = "2.0", id = 3, method = "tools/call",
        params = { name = "bump", arguments = {} } }
      assert.same({ count = 1 }, answer(p, 3).result.structuredContent)
      p:close_stdin()
      assert.same({ 0, 0 }, { p:wait(10) })
    end)

  it("declares it in server/discover and serves the view in the modern era", function()
    local p <close> = serve()
    local meta = { ["io.modelcontextprotocol/protocolVersion"] = "2026-07-28",
      ["io.modelcontextprotocol/clientCapabilities"] = UI }
    p:write_json { jsonrpc = "2.0", id = 1, method = "server/discover", params = { _meta = meta } }
    assert.same({ mimeTypes = { MIME } },
      answer(p, 1).result.capabilities.extensions["io.modelcontextprotocol/ui"])
    p:write_json { jsonrpc = "2.0", id = 2, method = "resources/read",
      params = { uri = "ui://counter/view.html", _meta = meta } }
    local r = answer(p, 2).result
    assert.same({ uri = "ui://counter/view.html", mimeType = MIME, text = "<p>one</p>",
      _meta = { ui = { csp = { connectDomains = { "https://api.example.com" } } } } },
      r.contents[1])
    assert.equal("complete", r.resultType)
  end)

  it("--watch reloads a view whose file changed, and tells the client", function()
    local p <close>, dir = serve { "--watch" }
    p:write_json { jsonrpc = "2.0", id = 0, method = "initialize", params = {
      protocolVersion = "2025-11-25", capabilities = UI, clientInfo = { name = "s",
        version = "1" } } }
    answer(p, 0)
    p:write_json { jsonrpc = "2.0", method = "notifications/initialized" }
    write(dir .. "/view.html", "<p>two</p>")
    local seen = {}
    for _ = 1, 3 do seen[read(p).method] = true end
    assert.same({ ["notifications/tools/list_changed"] = true,
      ["notifications/resources/list_changed"] = true,
      ["notifications/prompts/list_changed"] = true }, seen)
    assert.matches("reloaded", p:stderr())
    p:write_json { jsonrpc = "2.0", id = 1, method = "resources/read",
      params = { uri = "ui://counter/view.html" } }
    assert.equal("<p>two</p>", answer(p, 1).result.contents[1].text)
    -- a view file that goes away keeps the previous tools, and says why
    os.remove(dir .. "/view.html")
    write(dir .. "/tools.lua", TOOLS .. "\n")
    for _ = 1, 200 do
      if p:stderr():find("keeping the previous tools", 1, true) then break end
      claude.sleep(0.05)
    end
    assert.matches("cannot read the view", p:stderr())
    p:write_json { jsonrpc = "2.0", id = 2, method = "resources/read",
      params = { uri = "ui://counter/view.html" } }
    assert.equal("<p>two</p>", answer(p, 2).result.contents[1].text)
  end)
end)
