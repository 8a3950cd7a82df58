-- claude.openapi against an HTTP server of the spec's own (claude.http.server, on 127.0.0.1),
-- which records each request as it came: the exact bytes of parameter styles, bodies and
-- credentials; the URL guard; errors, bounds and hostile documents. The same tools against a
-- real OpenAPI server (Prism, validating every request): spec/e2e/openapi_spec.lua.
local claude = require "claude"
local json = require "claude.json"
local tool = require "claude.mcp.tool"
local http = require "claude.http.client"
local server = require "claude.http.server"
local harness = require "support.harness"

local PETSTORE = "spec/fixtures/openapi/petstore.json"
local PETSTORE_YAML = "spec/fixtures/openapi/petstore.yaml"

local srv, base, last
local documents, fetched = {}, {}
-- A /slow request waits 5 s at most, or until the file's teardown releases it: its timer
-- must not outlive the file (the next file's first spec would see a handle go).
local slow_released, slow_answered = claude.async.event(), claude.async.event()

local function start()
  srv = assert(server.listen { port = 0, ref = false, on_request = function(req, res)
    if documents[req.path] then
      fetched[req.path] = (fetched[req.path] or 0) + 1
      return res:respond(200, { ["content-type"] = "application/json" }, documents[req.path])
    end
    last = req
    if req.path == "/big" then
      return res:respond(200, { ["content-type"] = "text/plain" }, string.rep("x", 300000))
    elseif req.path == "/slow" then
      slow_released:wait(5)
      slow_answered:set()
    elseif req.path:match("^/pets/404") then
      return res:respond(404, { ["content-type"] = "application/json" },
        '{"code":404,"message":"no pet 404"}' .. string.rep(" ", 3000))
    elseif req.path == "/empty" then
      return res:respond(204)
    elseif req.path == "/image" then
      return res:respond(200, { ["content-type"] = "image/png" }, "\137PNG\r\n\26\nxx")
    end
    -- an object the Petstore's output schemas accept (a Pet: id and name)
    res:respond(200, { ["content-type"] = "application/json" },
      json.encode { method = req.method, path = req.path, ok = true, id = 1, name = "echo" })
  end })
  base = "http://127.0.0.1:" .. srv:port()
end

local LOOPBACK
local function opts(extra)
  local o = { base_url = base, guard = LOOPBACK }
  for k, v in pairs(extra or {}) do o[k] = v end
  return o
end

local function by_name(tools)
  local t = {}
  for _, x in ipairs(tools) do t[x.name] = x end
  return t
end

local function doc(paths, components, version)
  return { openapi = version or "3.0.3", info = { title = "t", version = "1" }, paths = paths,
    components = components }
end

local function op(fields)
  fields.responses = fields.responses or { ["200"] = { description = "ok" } }
  return fields
end

describe("claude.openapi", function()
  setup(function()
    LOOPBACK = claude.guard.url { allow_classes = { "loopback" } }
    start()
  end)
  teardown(function()
    local waiting = slow_released:waiting()
    slow_released:set()
    if waiting then assert(slow_answered:wait(60)) end
    srv:close()
  end)

  it("makes a tool of each operation, named by operationId or method and path", function()
    local tools, api = assert(claude.openapi.tools(PETSTORE, opts()))
    local names = {}
    for i, t in ipairs(tools) do names[i] = t.name end
    assert.same({ "listPets", "addPet", "get_pets_id_photos", "getPetById", "updatePet",
      "deletePet", "getInventory" }, names)
    assert.equal("Petstore", api.title)
    assert.equal("1.0.0", api.version)
    assert.same({ tool = "getPetById", method = "GET", path = "/pets/{petId}",
      operation_id = "getPetById", base_url = base, output_schema = true }, api.operations[4])
    local t = by_name(tools)
    assert.equal("List the pets\n\nThe pets of the store, filtered by tag, status and traits.",
      t.listPets.description)
    assert.same({ readOnlyHint = true, openWorldHint = true, title = "List the pets" },
      t.listPets.annotations)
    assert.is_true(t.deletePet.annotations.destructiveHint)
  end)

  it("merges parameters and body into one schema: collisions, refs, 3.0's forms", function()
    local t = by_name(assert(claude.openapi.tools(PETSTORE, opts())))
    -- a path id and a query id: both named by their place
    local photos = t.get_pets_id_photos.input_schema
    assert.same({ "id_path" }, photos.required)
    assert.equal("Only the photo of this id", photos.properties.id_query.description)
    -- the body flattened; readOnly id left out; refs under $defs; the cycle kept as a ref
    local add = t.addPet.input_schema
    assert.same({ "name" }, add.required)
    assert.is_nil(add.properties.id)
    assert.same({ "string", "null" }, add.properties.tag.type)
    assert.same({ exclusiveMinimum = 0, type = "integer" }, add.properties.age)
    assert.same({ ["$ref"] = "#/$defs/Category" }, add.properties.category)
    assert.equal("#/$defs/Category", add["$defs"].Category.properties.parent["$ref"])
    assert.is_false(add.additionalProperties)
    -- the header Accept is ignored (OpenAPI says so); a required header is required
    local get = t.getPetById.input_schema
    assert.is_nil(get.properties.Accept)
    assert.same({ "petId", "X-Request-ID" }, get.required)
  end)

  it("sends parameters in their styles and credentials as their schemes say", function()
    local t = by_name(assert(claude.openapi.tools(PETSTORE, opts { auth = {
      api_key = "k-1", bearer = function() return "tok" end,
      basic = { username = "ann", password = "s3cret" }, api_key_query = "q 1" },
      headers = { ["x-client"] = "spec" } })))
    local r = tool.call(t.listPets, { limit = 3, tags = { "a b", "c" },
      status = { "available", "sold" }, traits = { color = "red", size = "small" } })
    assert.is_nil(r.isError, r.content[1].text)
    assert.equal("GET", last.method)
    assert.equal("/pets", last.path)
    assert.equal("limit=3&tags=a%20b&tags=c&status=available,sold&traits%5Bcolor%5D=red"
      .. "&traits%5Bsize%5D=small", last.query)
    assert.equal("spec", last.headers["x-client"])
    assert.equal("application/json", last.headers.accept)
    assert.is_nil(last.headers["x-api-key"]) -- security: [] on this operation

    r = tool.call(t.addPet, { name = "Rex", tag = json.null, category = { name = "dogs" } })
    assert.is_nil(r.isError, r.content[1].text)
    assert.equal("POST", last.method)
    assert.equal("k-1", last.headers["x-api-key"])
    assert.equal("application/json", last.headers["content-type"])
    assert.same({ name = "Rex", tag = json.null, category = { name = "dogs" } },
      json.decode(last.body))
    assert.same({ method = "POST", path = "/pets", ok = true, id = 1, name = "echo" },
      r.structuredContent)

    tool.call(t.getPetById, { petId = 7, ["X-Request-ID"] = "r-1" })
    assert.equal("/pets/7", last.path)
    assert.equal("r-1", last.headers["x-request-id"])

    tool.call(t.updatePet, { petId = 7, name = "Tom & Jerry", status = "sold" })
    assert.equal("PUT", last.method)
    assert.equal("Bearer tok", last.headers.authorization)
    assert.equal("application/x-www-form-urlencoded", last.headers["content-type"])
    assert.equal("name=Tom%20%26%20Jerry&status=sold", last.body)

    tool.call(t.deletePet, { petId = 7, session = "abc" })
    assert.equal("DELETE", last.method)
    assert.equal("Basic " .. claude.content.base64("ann:s3cret"), last.headers.authorization)
    assert.equal("session=abc", last.headers.cookie)

    tool.call(t.getInventory, {})
    assert.equal("key=q%201", last.query)
  end)

  it("serializes label, matrix, pipe, space and content parameters", function()
    local d = doc { ["/a/{l}/{m}"] = { get = op { operationId = "styles", parameters = {
      { name = "l", ["in"] = "path", required = true, style = "label",
        schema = { type = "array", items = { type = "integer" } } },
      { name = "m", ["in"] = "path", required = true, style = "matrix", explode = true,
        schema = { type = "object" } },
      { name = "p", ["in"] = "query", style = "pipeDelimited", explode = false,
        schema = { type = "array" } },
      { name = "s", ["in"] = "query", style = "spaceDelimited", explode = false,
        schema = { type = "array" } },
      { name = "j", ["in"] = "query", content = { ["application/json"] = {
        schema = { type = "object" } } } },
      { name = "opt", ["in"] = "query", schema = { type = { "string", "null" } } },
    } } } }
    local t = by_name(assert(claude.openapi.tools(d, opts())))
    local r = tool.call(t.styles, { l = { 1, 2 }, m = { x = 1, y = "z" }, p = { "a", "b" },
      s = { "c", "d" }, j = { k = true }, opt = json.null })
    assert.is_nil(r.isError, r.content[1].text)
    assert.equal("/a/.1,2/;x=1;y=z", last.target:match("^[^?]*"))
    assert.equal("p=a%7Cb&s=c%20d&j=%7B%22k%22%3Atrue%7D", last.query)
  end)

  it("sends a body that is no object, multipart forms and text", function()
    local d = doc {
      ["/list"] = { post = op { operationId = "postList", requestBody = { required = true,
        description = "The items", content = { ["application/json"] = {
          schema = { type = "array", items = { type = "string" } } } } } } },
      ["/form"] = { post = op { operationId = "upload", requestBody = { content = {
        ["multipart/form-data"] = { schema = { type = "object", properties = {
          title = { type = "string" }, meta = { type = "object" } } } } } } } },
      ["/text"] = { post = op { operationId = "note", requestBody = { content = {
        ["text/plain"] = { schema = { type = "string" } } } } } },
      ["/xml"] = { post = op { operationId = "xmlOnly", requestBody = { content = {
        ["application/xml"] = { schema = { type = "object" } } } } } },
    }
    local tools, api = assert(claude.openapi.tools(d, opts()))
    local t = by_name(tools)
    assert.same({ { method = "POST", path = "/xml", operation_id = "xmlOnly", tags = {},
      reason = "its request body's media types (application/xml) are not sent: JSON, forms "
        .. "and text are" } }, api.skipped)
    assert.equal("The items", t.postList.input_schema.properties.body.description)
    assert.same({ "body" }, t.postList.input_schema.required)
    tool.call(t.postList, { body = { "a", "b" } })
    assert.equal('["a","b"]', last.body)
    tool.call(t.upload, { title = "T", meta = { n = 1 } })
    local boundary = last.headers["content-type"]:match("^multipart/form%-data; boundary=(.+)$")
    assert.truthy(boundary)
    assert.equal("--" .. boundary .. "\r\nContent-Disposition: form-data; name=\"meta\"\r\n"
      .. "Content-Type: application/json\r\n\r\n{\"n\":1}\r\n--" .. boundary
      .. "\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nT\r\n--" .. boundary
      .. "--\r\n", last.body)
    tool.call(t.note, { body = "hello" })
    assert.equal("text/plain", last.headers["content-type"])
    assert.equal("hello", last.body)
  end)

  it("makes HTTP errors tool errors with the status and a part of the body", function()
    local d = doc {
      ["/pets/{id}"] = { get = op { operationId = "get", parameters = {
        { name = "id", ["in"] = "path", required = true, schema = { type = "integer" } } } } },
      ["/big"] = { get = op { operationId = "big" } },
      ["/slow"] = { get = op { operationId = "slow" } },
      ["/empty"] = { get = op { operationId = "empty" } },
      ["/image"] = { get = op { operationId = "image" } },
    }
    local t = by_name(assert(claude.openapi.tools(d, opts { max_response = 100000,
      timeout = 0.5 })))
    local r = tool.call(t.get, { id = 404 })
    assert.is_true(r.isError)
    assert.matches('^GET /pets/{id}: HTTP 404 Not Found: {"code":404,"message":"no pet 404"}',
      r.content[1].text)
    assert.matches("%.%.%. %(3035 bytes%)$", r.content[1].text)
    r = tool.call(t.big, {})
    assert.is_true(r.isError)
    assert.equal("GET /big: the response is larger than 100000 bytes (max_response): cut off",
      r.content[1].text)
    r = tool.call(t.slow, {})
    assert.is_true(r.isError)
    assert.equal("GET /slow: no complete response within 0.5 s (timeout)", r.content[1].text)
    assert.equal("HTTP 204 (no content)", tool.call(t.empty, {}).content[1].text)
    assert.equal("image", tool.call(t.image, {}).content[1].type)
  end)

  it("refuses private addresses unless the guard allows them", function()
    local t = by_name(assert(claude.openapi.tools(PETSTORE, { base_url = base })))
    local r = tool.call(t.getInventory, {})
    assert.is_true(r.isError)
    assert.matches("a loopback address %(rule url.address%)", r.content[1].text)
    last = nil
    -- and a document's URL goes through the same guard
    local tools, err, kind = claude.openapi.tools(base .. "/doc.json")
    assert.is_nil(tools)
    assert.equal("guard", kind)
    assert.equal("url.address", err.rule)
    assert.is_nil(last)
  end)

  it("fetches a document by URL; a relative server is read against it", function()
    documents["/api/doc.json"] = json.encode { openapi = "3.1.0", info = { title = "r",
      version = "1" }, servers = { { url = "/v2" } }, paths = { ["/ping"] = { get = {
        operationId = "ping", responses = { ["200"] = { description = "ok" } } } } } }
    local tools, api = assert(claude.openapi.tools(base .. "/api/doc.json",
      { guard = LOOPBACK }))
    assert.equal(base .. "/v2", api.operations[1].base_url)
    local r = tool.call(tools[1], {})
    assert.is_nil(r.isError, r.content and r.content[1].text)
    assert.equal("/v2/ping", last.path)
  end)

  it("reads a YAML document: the official Petstore, from a file or a URL", function()
    local tools, api = assert(claude.openapi.tools(PETSTORE_YAML))
    local t = by_name(tools)
    assert.same({ "listPets", "createPets", "showPetById" },
      { tools[1].name, tools[2].name, tools[3].name })
    assert.equal("1.0.0", api.version) -- unquoted, still text: not a number of the core schema
    assert.equal("http://petstore.swagger.io/v1", api.operations[1].base_url)
    assert.same({ type = "integer", maximum = 100, format = "int32",
      description = "How many items to return at one time (max 100)" },
      t.listPets.input_schema.properties.limit)
    assert.same({ "id", "name" }, t.createPets.input_schema.required)
    documents["/api/petstore.yaml"] = assert(io.open(PETSTORE_YAML)):read("a")
    t = by_name(assert(claude.openapi.tools(base .. "/api/petstore.yaml", opts())))
    local r = tool.call(t.listPets, { limit = 5 })
    assert.is_nil(r.isError, r.content and r.content[1].text)
    assert.equal("/pets", last.path)
    assert.equal("limit=5", last.query)
    r = tool.call(t.createPets, { id = 1, name = "Rex" })
    assert.is_nil(r.isError, r.content and r.content[1].text)
    assert.same({ id = 1, name = "Rex" }, json.decode(last.body))
  end)

  describe("output schemas", function()
    local function respond(schema, extra)
      local r = { description = "ok" }
      if schema then r.content = { ["application/json"] = { schema = schema } } end
      local responses = { ["200"] = r }
      for k, v in pairs(extra or {}) do responses[k] = v end
      return responses
    end

    it("come from the 2xx JSON schema when it is an object; the result is checked", function()
      local t = by_name(assert(claude.openapi.tools(PETSTORE, opts())))
      local out = t.getPetById.output_schema
      assert.same({ type = "object", allOf = { { ["$ref"] = "#/$defs/Pet" } } },
        { type = out.type, allOf = out.allOf })
      assert.is_table(out["$defs"].NewPet)
      assert.is_table(out["$defs"].Category)
      assert.is_nil(t.listPets.output_schema) -- an array: no structured result
      assert.is_nil(t.deletePet.output_schema) -- 204, no content
      assert.equal("object", t.getInventory.output_schema.type)
      local r = tool.call(t.getPetById, { petId = 7, ["X-Request-ID"] = "r" })
      assert.is_nil(r.isError, r.content and r.content[1].text)
      assert.equal("echo", r.structuredContent.name)
      -- an answer that breaks the schema is refused as the router refuses any tool's
      documents["/nameless/pets/1"] = json.encode { id = 1 }
      local d = json.decode(assert(io.open(PETSTORE)):read("a"))
      local nameless = by_name(assert(claude.openapi.tools(d, opts { base_url = base
        .. "/nameless" })))
      r = tool.call(nameless.getPetById, { petId = 1, ["X-Request-ID"] = "r" })
      assert.is_true(r.isError)
      assert.matches("^Output validation error: missing required property 'name'",
        r.content[1].text)
    end)

    it("join several 2xx schemas; none when a 2xx has no JSON object", function()
      local A = { type = "object", properties = { a = { type = "string" } } }
      local B = { type = "object", properties = { b = { type = "integer" } } }
      local d = doc {
        ["/two"] = { post = op { operationId = "two", responses = respond(A,
          { ["201"] = { description = "made", content = { ["application/json"] = { schema = B } } },
            ["400"] = { description = "bad", content = { ["application/json"] = {
              schema = { type = "string" } } } } }) } },
        ["/same"] = { get = op { operationId = "same", responses = respond(
          { ["$ref"] = "#/components/schemas/O" }, { ["2XX"] = { description = "any",
            content = { ["application/problem+json"] = { schema = {
              ["$ref"] = "#/components/schemas/O" } } } } }) } },
        ["/empty"] = { get = op { operationId = "empty", responses = respond(A,
          { ["204"] = { description = "none" } }) } },
        ["/text"] = { get = op { operationId = "text", responses = { ["200"] = {
          description = "t", content = { ["text/plain"] = { schema = { type = "string" } } } }
        } } },
        ["/nullable"] = { get = op { operationId = "nullable", responses = respond(
          { type = "object", nullable = true, properties = { x = { type = "string" } } }) } },
      }
      d.components = { schemas = { O = { type = "object", required = { "o" },
        properties = { o = { type = "boolean" } } } } }
      local t = by_name(assert(claude.openapi.tools(d, opts())))
      assert.same({ type = "object", anyOf = { A, B } }, t.two.output_schema)
      assert.same({ type = "object", allOf = { { ["$ref"] = "#/$defs/O" } },
        ["$defs"] = { O = d.components.schemas.O } }, t.same.output_schema)
      assert.is_nil(t.empty.output_schema)
      assert.is_nil(t.text.output_schema)
      -- 3.0's nullable object: the root may be null, so it is wrapped as an object
      assert.same({ { type = { "object", "null" }, properties = { x = { type = "string" } } } },
        t.nullable.output_schema.allOf)
    end)

    it("leave writeOnly properties out of a response's required, readOnly of a request's",
      function()
        local User = { type = "object", required = { "id", "name", "password" }, properties = {
          id = { type = "integer", readOnly = true }, name = { type = "string" },
          password = { type = "string", writeOnly = true },
          nested = { type = "object", required = { "created" }, properties = {
            created = { type = "string", readOnly = true } } } } }
        local d = doc({ ["/users"] = { post = op { operationId = "addUser",
          requestBody = { required = true, content = { ["application/json"] = {
            schema = { ["$ref"] = "#/components/schemas/User" } } } },
          responses = respond { ["$ref"] = "#/components/schemas/User" } } } },
          { schemas = { User = User } })
        local t = assert(claude.openapi.tools(d, opts()))[1]
        assert.same({ "name", "password" }, t.input_schema.required)
        assert.same({}, t.input_schema.properties.nested.required)
        local out = t.output_schema["$defs"].User
        assert.same({ "id", "name" }, out.required)
        assert.same({ "created" }, out.properties.nested.required)
      end)

    it("are left out, and said why, when a response's schema is at fault", function()
      local d = doc { ["/p"] = { get = op { operationId = "p", responses = respond {
        type = "object", properties = { x = { ["$ref"] = "#/components/schemas/Nope" } } } } } }
      local tools, api = assert(claude.openapi.tools(d, opts()))
      assert.is_nil(tools[1].output_schema)
      assert.is_false(api.operations[1].output_schema)
      assert.matches("$ref '#/components/schemas/Nope' cannot be resolved",
        api.operations[1].output_fault, 1, true)
    end)
  end)

  describe("external $refs", function()
    local SPLIT = "spec/fixtures/openapi/split/openapi.yaml"

    -- a folder of files written for one test: name -> text (or a table: JSON), links
    local function folder(files, links)
      local dir = assert(claude.core.mkdtemp(os.tmpname() .. "-openapi"))
      for name, text in pairs(files) do
        local sub = name:match("^(.*)/")
        if sub then os.execute("mkdir -p '" .. dir .. "/" .. sub .. "'") end
        local f = assert(io.open(dir .. "/" .. name, "wb"))
        f:write(type(text) == "table" and json.encode(text) or text)
        f:close()
      end
      for name, target in pairs(links or {}) do
        assert(os.execute("ln -s '" .. target .. "' '" .. dir .. "/" .. name .. "'"))
      end
      return dir
    end
    local function with_ref(ref)
      return doc({ ["/p"] = { post = op { operationId = "p", requestBody = { content = {
        ["application/json"] = { schema = { ["$ref"] = ref } } } } } } })
    end
    local function refused(source, message, kind, o)
      local tools, err, k = claude.openapi.tools(source, opts(o))
      assert.is_nil(tools)
      assert.equal(kind or "openapi", k)
      assert.matches(message, err.message, 1, true)
      return err
    end

    it("reads files beside the document: path items, parameters, schemas", function()
      local t = by_name(assert(claude.openapi.tools(SPLIT, opts())))
      assert.same({ type = "integer", maximum = 50 }, t.listPets.input_schema.properties.limit)
      assert.same({ "petId" }, t.getPet.input_schema.required)
      local s = t.addPet.input_schema
      assert.same({ "name" }, s.required)
      assert.same({ ["$ref"] = "#/$defs/category" }, s.properties.category)
      assert.same({ ["$ref"] = "#/$defs/Owner" }, s.properties.owner) -- back in the document
      assert.same({ ["$ref"] = "#/$defs/pet" }, s.properties.friends.items) -- a whole file
      assert.same({ "Owner", "category", "pet" }, (function()
        local keys = {}
        for k in pairs(s["$defs"]) do keys[#keys + 1] = k end
        table.sort(keys)
        return keys
      end)())
      local r = tool.call(t.addPet, { name = "Rex", category = { name = "dogs" },
        friends = { { name = "Tom" } } })
      assert.is_nil(r.isError, r.content and r.content[1].text)
      assert.same({ name = "Rex", category = { name = "dogs" }, friends = { { name = "Tom" } } },
        json.decode(last.body))
      r = tool.call(t.addPet, { name = "Rex", category = { name = ("x"):rep(21) } })
      assert.is_true(r.isError) -- category.json's maxLength, checked before any request
    end)

    it("reads URLs, relative ones against the document's, each once per load", function()
      documents["/split/openapi.json"] = json.encode(with_ref("schemas/pet.json#/Pet"))
      documents["/split/schemas/pet.json"] = json.encode { Pet = { type = "object",
        properties = { a = { ["$ref"] = "../../common.json#/A" },
          b = { ["$ref"] = "#/Pet" }, c = { ["$ref"] = base .. "/common.json#/A" } } } }
      documents["/common.json"] = json.encode { A = { type = "string", maxLength = 3 } }
      fetched = {}
      local t = assert(claude.openapi.tools(base .. "/split/openapi.json", opts()))[1]
      assert.same({ ["$ref"] = "#/$defs/A" }, t.input_schema.properties.a)
      assert.same({ ["$ref"] = "#/$defs/A" }, t.input_schema.properties.c)
      assert.same({ ["/split/openapi.json"] = 1, ["/split/schemas/pet.json"] = 1,
        ["/common.json"] = 1 }, fetched)
      -- a file document may name a URL; it goes through the guard like any call
      local dir = folder { ["api.json"] = with_ref(base .. "/common.json#/A") }
      refused(dir .. "/api.json", "a loopback address", "guard", { guard = claude.guard.url() })
      assert.is_table(assert(claude.openapi.tools(dir .. "/api.json", opts())))
      os.execute("rm -rf '" .. dir .. "'")
    end)

    it("never leaves the document's folder: .., absolute paths, links", function()
      local outside = folder { ["secret.json"] = { type = "string" } }
      local dir = folder({
        ["up.json"] = with_ref("../secret.json"),
        ["deep.json"] = with_ref("a/../../secret.json"),
        ["abs.json"] = with_ref(outside .. "/secret.json"),
        ["link.json"] = with_ref("sneaky.json"),
        ["file.json"] = with_ref("file://" .. outside .. "/secret.json"),
        ["missing.json"] = with_ref("nope.json"),
      }, { ["sneaky.json"] = outside .. "/secret.json" })
      refused(dir .. "/up.json", "$ref '../secret.json' leads out of the document's folder")
      refused(dir .. "/deep.json", "leads out of the document's folder")
      refused(dir .. "/abs.json", "leads out of the document's folder")
      refused(dir .. "/link.json", "sneaky.json cannot be read: it leads out of the document's "
        .. "folder (a link)")
      refused(dir .. "/file.json", "only http and https URLs are read")
      local err = refused(dir .. "/missing.json", "nope.json cannot be read")
      assert.equal("#/paths/~1p/post/requestBody/content/application~1json/schema", err.where)
      os.execute("rm -rf '" .. dir .. "' '" .. outside .. "'")
    end)

    it("bounds the documents read, their bytes, and refuses cycles across files", function()
      local dir = folder {
        ["api.json"] = with_ref("one.json"),
        ["one.json"] = { ["$ref"] = "two.json" },
        ["two.json"] = { ["$ref"] = "one.json" },
        ["many.json"] = with_ref("s1.json"),
        ["s1.json"] = { type = "object", properties = { a = { ["$ref"] = "s2.json" } } },
        ["s2.json"] = { type = "object", properties = { a = { ["$ref"] = "s3.json" } } },
        ["s3.json"] = { type = "string", description = ("x"):rep(3000) },
      }
      refused(dir .. "/api.json", "circular $ref")
      assert.is_table(assert(claude.openapi.tools(dir .. "/many.json", opts())))
      refused(dir .. "/many.json", "more than 3 documents referred to (max_documents)", nil,
        { max_documents = 3 })
      refused(dir .. "/many.json", "over max_document", "overflow", { max_document = 2000 })
      os.execute("rm -rf '" .. dir .. "'")
    end)
  end)

  it("pins the address the guard checked (resolve): no second look-up", function()
    local resp = assert(http.request { url = "http://pinned.invalid:" .. srv:port() .. "/x",
      resolve = "pinned.invalid:" .. srv:port() .. ":127.0.0.1", timeout = 10 })
    assert.equal(200, resp.status)
    assert.equal("pinned.invalid:" .. srv:port(), last.headers.host)
  end)

  it("chooses operations by id, tag, path, method or a function", function()
    local function names(o)
      local out = {}
      for _, x in ipairs(assert(claude.openapi.tools(PETSTORE, opts(o)))) do
        out[#out + 1] = x.name
      end
      return out
    end
    assert.same({ "getInventory" }, names { include = { tags = { "store" } } })
    assert.same({ "listPets", "addPet" }, names { include = { paths = { "/pets" } } })
    assert.same({ "get_pets_id_photos", "getPetById", "updatePet", "deletePet" },
      names { include = { paths = { "/pets/*", "/pets/**/photos" } } })
    assert.same({ "listPets", "get_pets_id_photos", "getPetById", "getInventory" },
      names { include = { methods = { "get" } } })
    assert.same({ "deletePet" }, names { include = { operations = { "deletePet" } } })
    assert.same({ "listPets", "getInventory" }, names { include = { methods = { "GET" } },
      exclude = { paths = { "/pets/**" } } })
    assert.same({ "addPet" }, names { include = function(o) return o.method == "POST" end })
    assert.same({ "pets_add" }, names { include = { operations = { "addPet" } },
      names = { addPet = "pets_add" } })
  end)

  it("handles 3.0's nullable without a type, and 3.1 as it is", function()
    local d = doc({ ["/x"] = { post = op { operationId = "x", requestBody = { content = {
      ["application/json"] = { schema = { type = "object", properties = {
        a = { nullable = true, allOf = { { ["$ref"] = "#/components/schemas/A" } } },
        b = { type = "integer", maximum = 5, exclusiveMaximum = true },
      } } } } } } } }, { schemas = { A = { type = "string" } } })
    local s = assert(claude.openapi.tools(d, opts()))[1].input_schema
    assert.same({ anyOf = { { allOf = { { ["$ref"] = "#/$defs/A" } } }, { type = "null" } } },
      s.properties.a)
    assert.same({ type = "integer", exclusiveMaximum = 5 }, s.properties.b)
    d.openapi = "3.1.0"
    s = assert(claude.openapi.tools(d, opts()))[1].input_schema
    assert.is_true(s.properties.a.nullable == nil and s.properties.a.allOf ~= nil)
  end)

  describe("a bad or hostile document", function()
    local function fails(d, where, message, o)
      local tools, err, kind = claude.openapi.tools(d, opts(o))
      assert.is_nil(tools)
      assert.equal("openapi", kind)
      if where then assert.equal(where, err.where) end
      assert.matches(message, err.message, 1, true)
      return err
    end

    it("names where it is wrong", function()
      fails({ swagger = "2.0" }, "#/swagger", "Swagger 2.0 is not OpenAPI 3")
      fails({ openapi = "4.0.0" }, "#/openapi", "version '4.0.0' is not 3.0.x or 3.1.x")
      fails(doc { ["/p"] = { get = op { parameters = { { name = "q", ["in"] = "body" } } } } },
        "#/paths/~1p/get/parameters/0", "'in' must be path, query, header or cookie")
      fails(doc { ["/p/{id}"] = { get = op {} } }, "#/paths/~1p~1{id}/get",
        "the path names {id} but the operation has no path parameter 'id'")
      fails(doc { ["/p"] = { get = op { parameters = { { ["$ref"] = "#/components/nope" } } } } },
        "#/paths/~1p/get/parameters/0", "$ref '#/components/nope' cannot be resolved")
      fails(doc { ["/p"] = { get = op { parameters = { { name = "q", ["in"] = "query",
        schema = { ["$ref"] = "other.json#/X" } } } } } },
        "#/paths/~1p/get/parameters/0/schema/$ref", "$ref 'other.json#/X' is relative: it "
          .. "needs the document's path or URL, and this one was given as a table")
      local err = fails(doc { ["/p"] = { get = op { parameters = { { name = "q",
        ["in"] = "query", schema = { type = "string", pattern = "(a" } } } } } },
        "#/paths/~1p/get", "bad field 'input_schema' to 'tool'")
      assert.matches("^openapi: #/paths/~1p/get: ", tostring(err))
      local path = harness.tempfile("openapi: 3.0.0\npaths:\n  /p: {get: [}\n", ".yaml")
      err = fails(path, "#", "is not valid YAML: yaml: line 3, column ")
      os.remove(path)
      assert.matches("^openapi: .*%.yaml is not valid YAML", err.message)
    end)

    it("bounds cycles, depth, size and the number of tools", function()
      local function with_schema(s, components)
        return doc({ ["/p"] = { post = op { operationId = "p", requestBody = { content = {
          ["application/json"] = { schema = s } } } } } }, components)
      end
      local A, B = "#/components/schemas/A", "#/components/schemas/B"
      fails(with_schema({ ["$ref"] = A }, { schemas = { A = { ["$ref"] = B },
        B = { ["$ref"] = A } } }), "#/paths/~1p/post/requestBody/content/application~1json/schema",
        "circular $ref: " .. A .. " -> " .. B .. " -> " .. A)
      local deep = { type = "string" }
      for _ = 1, 100 do deep = { type = "array", items = deep } end
      local derr = fails(with_schema(deep), false, "schemas nested deeper than 64")
      assert.matches("^#/paths/~1p/post/requestBody/content/application~1json/schema/items/",
        derr.where)
      -- a fan of references: each schema refers to the next twice, so inlining would be
      -- 2^40 nodes; as $defs each is converted once
      local schemas = {}
      for i = 1, 40 do
        schemas["S" .. i] = { type = "object", properties = {
          a = { ["$ref"] = "#/components/schemas/S" .. (i + 1) },
          b = { ["$ref"] = "#/components/schemas/S" .. (i + 1) } } }
      end
      schemas.S41 = { type = "string" }
      local tools = assert(claude.openapi.tools(with_schema(
        { ["$ref"] = "#/components/schemas/S1" }, { schemas = schemas }), opts()))
      local n = 0
      for _ in pairs(tools[1].input_schema["$defs"]) do n = n + 1 end
      assert.equal(40, n) -- S2..S41: S1 is the flattened body itself
      fails(with_schema({ ["$ref"] = "#/components/schemas/S1" }, { schemas = schemas }),
        "#/paths/~1p/post", "input schema larger than 50 nodes", { max_schema_nodes = 50 })
      local paths = {}
      for i = 1, 20 do paths["/p" .. i] = { get = op {} } end
      fails(doc(paths), "#/paths", "20 operations chosen, over max_tools (10)",
        { max_tools = 10 })
      -- YAML: a billion laughs and deep nesting fail in the parse, before any walk
      local lines = { "openapi: 3.0.0", 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol"]' }
      for i = 2, 9 do
        local this, prev = string.char(96 + i), string.char(95 + i)
        lines[#lines + 1] = ("%s: &%s [%s]"):format(this, this, ("*" .. prev .. ","):rep(8)
          :sub(1, -2))
      end
      local lol = harness.tempfile(table.concat(lines, "\n"), ".yaml")
      fails(lol, "#", "aliases counted as the nodes they stand for")
      os.remove(lol)
      local nest = harness.tempfile("openapi: 3.0.0\nx: " .. ("["):rep(1000), ".yaml")
      fails(nest, "#", "nested deeper than 512")
      os.remove(nest)
      local big = harness.tempfile("{" .. string.rep(" ", 5000) .. "}", ".json")
      local t, err, kind = claude.openapi.tools(big, opts { max_document = 1000 })
      os.remove(big)
      assert.is_nil(t)
      assert.equal("overflow", kind)
      assert.matches("over max_document %(1000%)", err.message)
    end)
  end)

  it("raises for misuse at the caller's line", function()
    assert.has_error(function() claude.openapi.tools(42) end,
      "bad argument #1 to 'openapi.tools' (a path, a URL or a table expected, got number)")
    local ok, err = pcall(claude.openapi.tools, PETSTORE, { base_ur = "x" })
    assert.is_false(ok)
    assert.matches("unknown field 'base_ur' to 'openapi.tools' %(did you mean 'base_url'%?%)",
      err)
    assert.has_error(function() claude.openapi.tools(PETSTORE, { include = { tag = {} } }) end)
    assert.has_error(function() claude.openapi.tools(PETSTORE, { guard = true }) end)
  end)

  it("makes a server with the document's title and version", function()
    local s, api = assert(claude.openapi.server("pets", PETSTORE, opts()))
    assert.equal("pets", s.name)
    assert.equal("1.0.0", s.version)
    assert.equal(7, #s.tool_list)
    assert.equal(7, #api.operations)
  end)
end)
