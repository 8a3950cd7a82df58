-- claude.mcp.mount with a local server: the links in its results (resource links, embedded
-- resources, a read's contents, a prompt's messages) get the server's URIs, as a remote's do
-- (spec/e2e/mcp_compose_spec.lua); a link to another scheme stays.
local claude = require "claude"

local content = claude.mcp.content

local function notes_server()
  return claude.server("notes", {
    claude.tool("links", "Links to the notes", function()
      return {
        content.resource_link { uri = "notes://all", name = "All notes" },
        content.resource { uri = "notes://all", text = "buy milk" },
        content.resource_link { uri = "https://example.com/notes", name = "elsewhere" },
      }
    end),
    claude.tool("plain", "A string", function() return "just text" end),
    claude.tool("fails", "A failure", function() return nil, "no notes" end),
    claude.resource { uri = "notes://all", name = "All notes",
      read = function() return { uri = "notes://all", text = "buy milk" } end },
    claude.resource_template { uri_template = "notes://day/{day}", name = "A day",
      read = function(uri) return "notes of " .. uri end },
    claude.prompt { name = "cite", get = function()
      return { { role = "user", content = content.resource { uri = "notes://all",
        text = "buy milk" } } }
    end },
  })
end

local function ask(router, method, params)
  return router:handle("all", { jsonrpc = "2.0", id = 1, method = method, params = params })
end

describe("mount of a local server", function()
  local router
  before_each(function()
    router = claude.mcp.router.new { all = claude.server("all", {}):mount("n", notes_server()) }
  end)

  it("rewrites the links in a tool's result, not a link of another scheme", function()
    local r = ask(router, "tools/call", { name = "n_links", arguments = {} }).result
    assert.equal("notes://n/all", r.content[1].uri)
    assert.equal("notes://n/all", r.content[2].resource.uri)
    assert.equal("https://example.com/notes", r.content[3].uri)
  end)

  it("keeps the other results as they were", function()
    local r = ask(router, "tools/call", { name = "n_plain", arguments = {} }).result
    assert.equal("just text", r.content[1].text)
    r = ask(router, "tools/call", { name = "n_fails", arguments = {} }).result
    assert.is_true(r.isError)
    assert.equal("no notes", r.content[1].text)
  end)

  it("gives a read's contents the server's URIs", function()
    local r = ask(router, "resources/read", { uri = "notes://n/all" }).result
    assert.same({ uri = "notes://n/all", text = "buy milk" }, r.contents[1])
    r = ask(router, "resources/read", { uri = "notes://n/day/monday" }).result
    assert.equal("notes://n/day/monday", r.contents[1].uri)
    assert.equal("notes of notes://day/monday", r.contents[1].text)
  end)

  it("rewrites the resources in a prompt's messages", function()
    local r = ask(router, "prompts/get", { name = "n_cite" }).result
    assert.equal("notes://n/all", r.messages[1].content.resource.uri)
  end)

  it("leaves everything as it is with no prefix", function()
    router = claude.mcp.router.new { all = claude.server("all", {}):mount("", notes_server()) }
    local r = ask(router, "tools/call", { name = "links", arguments = {} }).result
    assert.equal("notes://all", r.content[1].uri)
    r = ask(router, "resources/read", { uri = "notes://all" }).result
    assert.equal("notes://all", r.contents[1].uri)
  end)
end)
