-- claude.mcp.requests (ctx.sample, ctx.elicit_url, ctx.elicit_complete) with a fake client,
-- and the metadata of servers, tools, resources and prompts (claude.mcp.metadata). The real
-- TypeScript SDK clients answer them in spec/e2e/mcp_metadata_spec.lua.
local claude = require "claude"
local json = require "claude.json"
local requests = require "claude.mcp.requests"

-- A request context whose client answers with `answer(method, params)`; what it was asked
-- lands in `asked`.
local function fake(answer, fields)
  local asked, notes = {}, {}
  local ctx = { server = "s", era = "legacy", _router = { _notify = function(_, msg)
    notes[#notes + 1] = msg
  end } }
  for k, v in pairs(fields or {}) do ctx[k] = v end
  local send = function(_, method, params)
    asked[#asked + 1] = { method = method, params = json.decode(json.encode(params)) }
    return answer(method, params)
  end
  return ctx, send, asked, notes
end

local add = claude.tool("add", "Add", { a = "number", b = "number" },
  function(a) return a.a + a.b end)

describe("ctx.sample", function()
  it("sends the 2025-11-25 shapes and types the answer", function()
    local ctx, send, asked = fake(function()
      return { role = "assistant", model = "m", stopReason = "toolUse", content = {
        { type = "text", text = "let me add" },
        { type = "tool_use", id = "c1", name = "add", input = { a = 1, b = 2 } } } }
    end, { client_capabilities = { sampling = { tools = {} } } })
    local r = requests.sample(ctx, send)({ messages = "1 + 2?", max_tokens = 50,
      system = "be brief", tools = { add, { name = "neg", input_schema = { x = "number" } } },
      tool_choice = "required", temperature = 0 })
    assert.same({ method = "sampling/createMessage", params = {
      messages = { { role = "user", content = { type = "text", text = "1 + 2?" } } },
      maxTokens = 50, systemPrompt = "be brief", temperature = 0,
      toolChoice = { mode = "required" },
      tools = { { name = "add", description = "Add", inputSchema = { type = "object",
        properties = { a = { type = "number" }, b = { type = "number" } },
        required = { "a", "b" } } },
        { name = "neg", inputSchema = { type = "object", properties = {
          x = { type = "number" } }, required = { "x" } } } } } }, asked[1])
    assert.equal("let me add", r.text)
    assert.equal("toolUse", r.stop_reason)
    assert.same({ { id = "c1", name = "add", input = { a = 1, b = 2 } } }, r.tool_uses)
    assert.equal(2, #r.blocks)
  end)

  it("passes the protocol's own names as they are, and a single block answer", function()
    local ctx, send, asked = fake(function()
      return { role = "assistant", model = "m", content = { type = "text", text = "hi" } }
    end)
    local r = requests.sample(ctx, send)({ messages = { { role = "user", content = {
      type = "text", text = "x" } } }, maxTokens = 5, includeContext = "none" })
    assert.equal(5, asked[1].params.maxTokens)
    assert.equal("none", asked[1].params.includeContext)
    assert.equal("hi", r.text)
    assert.same({}, r.tool_uses)
    assert.equal("hi", r.content.text) -- the protocol's answer is still there
  end)

  it("refuses tools the client did not declare, and a bad answer", function()
    local ctx, send = fake(function() return { role = "assistant" } end,
      { client_capabilities = { sampling = {} } })
    local r, err, kind = requests.sample(ctx, send)({ messages = "x", max_tokens = 1,
      tools = { add } })
    assert.is_nil(r)
    assert.equal("unsupported", kind)
    assert.matches("sampling.tools", err.message)
    r, err, kind = requests.sample(ctx, send)({ messages = "x", max_tokens = 1 })
    assert.is_nil(r)
    assert.equal("remote", kind)
    assert.matches("no content", err.message)
  end)

  it("raises misuse at the caller's line", function()
    local sample = requests.sample(fake(function() end))
    local cases = {
      { { messages = "x" }, "bad field 'max_tokens' to 'sample' %(positive integer expected" },
      { { messages = "x", max_tokens = 1, tool_choice = "always", tools = { add } },
        "bad field 'tool_choice' to 'sample' %('auto', 'required' or 'none' expected" },
      { { messages = "x", max_tokens = 1, tool_choice = "auto" },
        "bad field 'tool_choice' to 'sample' %(given without tools%)" },
      { { messages = "x", max_tokens = 1, tools = { 3 } },
        "bad field 'tools%[1%]' to 'sample' %(a claude.Tool or a table expected, got number%)" },
      { { messages = { { role = "bot", content = "x" } }, max_tokens = 1 },
        "bad field 'messages%[1%].role' to 'sample'" },
      { { messages = "x", max_tokens = 1, maxTokens = 2 },
        "bad field 'max_tokens' to 'sample' %(given twice %(as 'maxTokens' too%)%)" },
      { { messages = "x", max_tokens = 1, sytem = "x" }, "unknown field 'sytem'" },
    }
    for _, c in ipairs(cases) do
      local ok, err = pcall(function() sample(c[1]) end)
      assert.is_false(ok)
      assert.matches("mcp_requests_spec.lua:%d+: " .. c[2], err)
    end
  end)
end)

describe("ctx.elicit_url and ctx.elicit_complete", function()
  it("sends a URL-mode elicitation, and its completion (legacy era)", function()
    local ctx, send, asked, notes = fake(function() return { action = "accept" } end,
      { client_capabilities = { elicitation = { url = {} } } })
    local r = requests.elicit_url(ctx, send)({ message = "Sign in",
      url = "https://example.com/a" })
    assert.equal("accept", r.action)
    assert.matches("^%x+$", r.id)
    assert.same({ mode = "url", message = "Sign in", url = "https://example.com/a",
      elicitationId = r.id }, asked[1].params)
    assert.is_true(requests.elicit_complete(ctx)(r.id))
    assert.same({ elicitationId = r.id }, notes[1].params)
    assert.equal("notifications/elicitation/complete", notes[1].method)
  end)

  it("has no elicitationId and no completion in the modern era", function()
    local ctx, send, asked = fake(function() return { action = "decline" } end,
      { era = "modern" })
    local r = requests.elicit_url(ctx, send)({ message = "m", url = "https://x.test/",
      id = "given" })
    assert.same({ action = "decline" }, r)
    assert.is_nil(asked[1].params.elicitationId)
    assert.is_false(requests.elicit_complete(ctx)("given"))
  end)

  it("refuses a client without elicitation.url, a bad answer, and misuse", function()
    local ctx, send = fake(function() return { action = "maybe" } end,
      { client_capabilities = { elicitation = { form = {} } } })
    local r, err, kind = requests.elicit_url(ctx, send)({ message = "m", url = "https://x/" })
    assert.is_nil(r)
    assert.equal("unsupported", kind)
    assert.matches("elicitation.url", err.message)
    ctx.client_capabilities = nil
    r, err, kind = requests.elicit_url(ctx, send)({ message = "m", url = "https://x/" })
    assert.is_nil(r)
    assert.equal("remote", kind)
    assert.matches("no action", err.message)
    local ok, e = pcall(function() requests.elicit_url(ctx, send)({ message = "m",
      url = "not a url" }) end)
    assert.is_false(ok)
    assert.matches("mcp_requests_spec.lua:%d+: bad field 'url' to 'elicit_url' %(an absolute "
      .. "URL expected, got 'not a url'%)", e)
    ok, e = pcall(function() requests.elicit_complete(ctx)(1) end)
    assert.is_false(ok)
    assert.matches("mcp_requests_spec.lua:%d+: bad argument #1 to 'elicit_complete'", e)
  end)
end)

describe("metadata", function()
  it("builds serverInfo and icons, and checks them at the caller's line", function()
    local s = claude.server("m", {}, { title = "M", description = "d",
      website_url = "https://example.com", icons = { "https://example.com/i.png" } })
    assert.same({ name = "m", version = "1.0.0", title = "M", description = "d",
      websiteUrl = "https://example.com", icons = { { src = "https://example.com/i.png" } } },
      json.decode(json.encode(s.server_info)))
    assert.is_nil(claude.server("plain").server_info)
    local cases = {
      { function() claude.server("m", {}, { website_url = "ftp://x" }) end,
        "bad field 'website_url' to 'server' %(an http:// or https:// URL expected" },
      { function() claude.server("m", {}, { icons = { { src = "javascript:alert(1)" } } }) end,
        "bad field 'icons%[1%].src' to 'server' %(an https:// URL or a data:image/ URI" },
      { function() claude.tool { name = "t", execute = print, icons = { {
        src = "https://x/i.png", theme = "blue" } } } end,
        "bad field 'icons%[1%].theme' to 'tool' %('light' or 'dark' expected, got 'blue'%)" },
      { function() claude.prompt { name = "p", get = print, icons = { {
        src = "https://x/i.png", sizes = { "big" } } } } end,
        "bad field 'icons%[1%].sizes%[1%]' to 'prompt' %('WxH' or 'any' expected" },
      { function() claude.resource { uri = "a://b", name = "r", text = "x", icons = 1 } end,
        "bad field 'icons' to 'resource' %(a list of icons expected, got number%)" },
    }
    for _, c in ipairs(cases) do
      local ok, err = pcall(c[1])
      assert.is_false(ok)
      assert.matches("mcp_requests_spec.lua:%d+: " .. c[2], err)
    end
  end)
end)
