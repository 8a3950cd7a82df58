local json = require "claude.json"
local tool = require "claude.mcp.tool"
local content = require "claude.mcp.content"

local function fn() end

-- Runs f, expects it to raise `msg` blaming this spec file (the caller of the DSL).
local function raises(msg, f)
  local ok, err = pcall(f)
  assert.is_false(ok, "expected an error")
  assert.equal("string", type(err))
  local where, text = err:match("^(.-:%d+): (.*)$")
  assert.equal(msg, text or err)
  assert.matches("tool_spec%.lua", where or "")
end

describe("claude.tool", function()
  describe("tool()", function()
    it("positional form: name, description, schema, execute", function()
      local t = tool.tool("add", "Add two numbers", { a = "number", b = "number" }, fn)
      assert.equal("tool", t.kind)
      assert.equal("add", t.name)
      assert.equal("Add two numbers", t.description)
      assert.equal(fn, t.execute)
      assert.same({ "a", "b" }, { t.input_schema.required[1], t.input_schema.required[2] })
      assert.equal("claude.Tool", getmetatable(t).__name)
      assert.equal("claude.Tool: add", tostring(t))
      assert.is_true(tool.is_tool(t))
    end)

    it("positional form without description or schema", function()
      local a = tool.tool("ping", fn)
      assert.is_nil(a.description)
      assert.equal("object", a.input_schema.type)
      assert.equal('{}', json.encode(a.input_schema.properties))
      local b = tool.tool("echo", { s = "string" }, fn)
      assert.equal("string", b.input_schema.properties.s.type)
      local c = tool.tool("desc", "only a description", fn)
      assert.equal("only a description", c.description)
    end)

    it("positional form with trailing options", function()
      local t = tool.tool("rm", "Remove", { path = "string" }, fn,
        { annotations = { destructive = true }, output_schema = { ok = "boolean" } })
      assert.same({ destructiveHint = true }, t.annotations)
      assert.equal("boolean", t.output_schema.properties.ok.type)
    end)

    it("table form", function()
      local t = tool.tool {
        name = "weather", title = "Weather", description = "Get the weather",
        input_schema = { city = "string: the city" }, output_schema = { temp = "number" },
        annotations = { read_only = true, open_world = true, title = "Weather lookup" },
        max_result_size_chars = 200000, always_load = true, meta = { ["x/y"] = 1 },
        execute = fn,
      }
      assert.equal("Weather", t.title)
      assert.same({ readOnlyHint = true, openWorldHint = true, title = "Weather lookup" },
        t.annotations)
      assert.same({ ["anthropic/maxResultSizeChars"] = 200000, ["anthropic/alwaysLoad"] = true,
        ["x/y"] = 1 }, t.meta)
      assert.is_function(t.validate)
      assert.is_function(t.validate_output)
    end)

    it("accepts the MCP annotation names and emits camelCase", function()
      local t = tool.tool { name = "x", execute = fn, annotations = {
        readOnlyHint = false, destructiveHint = true, idempotentHint = true,
        openWorldHint = false, maxResultSizeChars = 10 } }
      assert.same({ readOnlyHint = false, destructiveHint = true, idempotentHint = true,
        openWorldHint = false }, t.annotations)
      assert.same({ ["anthropic/maxResultSizeChars"] = 10 }, t.meta)
      local u = tool.tool { name = "y", execute = fn, annotations = { idempotent = true } }
      assert.same({ idempotentHint = true }, u.annotations)
    end)

    it("builds the exact tools/list entry", function()
      local t = tool.tool { name = "add", description = "Add", input_schema = { a = "number" },
        annotations = { read_only = true }, max_result_size_chars = 5, execute = fn }
      assert.same({
        name = "add", description = "Add",
        inputSchema = { type = "object", properties = { a = { type = "number" } },
          required = { "a" } },
        annotations = { readOnlyHint = true },
        _meta = { ["anthropic/maxResultSizeChars"] = 5 },
      }, t.listing)
      local bare = tool.tool("ping", fn)
      assert.same({ name = "ping", inputSchema = bare.input_schema }, bare.listing)
      assert.same({ type = "object", properties = {} },
        json.decode(json.encode(bare.input_schema)))
      local out = tool.tool { name = "o", output_schema = { n = "integer" }, execute = fn }
      assert.equal(out.output_schema, out.listing.outputSchema)
    end)

    it("compiles the input validator", function()
      local t = tool.tool("add", { a = "number", b = "number" }, fn)
      assert.is_true(t.validate { a = 1, b = 2 })
      local ok, err, kind = t.validate { a = 1, b = "2" }
      assert.is_nil(ok)
      assert.equal("b: expected number, got string (keyword /properties/b/type)", err.message)
      assert.equal("validation", kind)
    end)

    it("compiles a shorthand input schema at its first call, then calls that", function()
      local t = tool.tool("add", { a = "number", b = "number" }, fn)
      local first = t.validate
      assert.is_nil(t.validate { a = 1 }) -- the first call compiles it, and answers
      assert.not_equal(first, t.validate)
      local compiled = t.validate
      assert.is_true(first { a = 1, b = 2 }) -- a copy of the first one goes on working
      assert.equal(compiled, t.validate)
      local bare = tool.tool { name = "ping", execute = fn }
      assert.is_true(bare.validate {})
      -- a JSON Schema is compiled at once: its mistakes are the definition's
      assert.has_error(function()
        tool.tool { name = "x", input_schema = { type = "object", minProperties = "2" },
          execute = fn }
      end)
    end)

    local long = ("x"):rep(65)
    local misuse = {
      { "bad argument #1 to 'tool' (string or table expected, got nil)",
        function() tool.tool() end },
      { "bad argument #1 to 'tool' (string or table expected, got number)",
        function() tool.tool(1, fn) end },
      { "bad argument #2 to 'tool' (function expected, got nil)",
        function() tool.tool("x") end },
      { "bad argument #3 to 'tool' (function expected, got nil)",
        function() tool.tool("x", "desc") end },
      { "bad argument #4 to 'tool' (function expected, got string)",
        function() tool.tool("x", "d", {}, "f") end },
      { "bad argument #3 to 'tool' (a: unknown type 'strng')",
        function() tool.tool("x", "d", { a = "strng" }, fn) end },
      { "bad argument #2 to 'tool' (a: unknown type 'strng')",
        function() tool.tool("x", { a = "strng" }, fn) end },
      { "bad argument #5 to 'tool' (table of options expected, got string)",
        function() tool.tool("x", "d", {}, fn, "opts") end },
      { "bad argument #6 to 'tool' (too many arguments)",
        function() tool.tool("x", "d", {}, fn, {}, 1) end },
      { "unknown field 'execute' to 'tool'",
        function() tool.tool("x", fn, { execute = fn }) end },
      { "bad argument #2 to 'tool' (no value expected)",
        function() tool.tool({ name = "x", execute = fn }, 1) end },
      { "bad argument #1 to 'tool' ('a b' is not a valid name (1-64 of A-Z a-z 0-9 _ -))",
        function() tool.tool("a b", fn) end },
      { "bad field 'name' to 'tool' (string expected, got nil)",
        function() tool.tool { execute = fn } end },
      { "bad field 'name' to 'tool' ('" .. long .. "' is not a valid name (1-64 of A-Z a-z "
          .. "0-9 _ -))", function() tool.tool { name = long, execute = fn } end },
      { "bad field 'execute' to 'tool' (function expected, got nil)",
        function() tool.tool { name = "x" } end },
      { "bad field 'execute' to 'tool' (function expected, got table)",
        function() tool.tool { name = "x", execute = {} } end },
      { "bad field 'description' to 'tool' (string expected, got number)",
        function() tool.tool { name = "x", description = 1, execute = fn } end },
      { "bad field 'title' to 'tool' (string expected, got boolean)",
        function() tool.tool { name = "x", title = true, execute = fn } end },
      { "unknown field 'handler' to 'tool'",
        function() tool.tool { name = "x", handler = fn } end },
      { "bad field 'input_schema' to 'tool' (table expected, got string)",
        function() tool.tool { name = "x", input_schema = "number", execute = fn } end },
      { "bad field 'input_schema' to 'tool' (b: unknown type 'nmber')",
        function() tool.tool { name = "x", input_schema = { b = "nmber" }, execute = fn } end },
      { "bad field 'input_schema' to 'tool' (n: 'minimum' must be a number)",
        function() tool.tool { name = "x", execute = fn,
          input_schema = { n = { type = "number", minimum = "0" } } } end },
      { "bad field 'output_schema' to 'tool' (t[]: unknown type 'strin')",
        function()
          tool.tool { name = "x", output_schema = { t = { "strin" } }, execute = fn }
        end },
      { "bad field 'annotations' to 'tool' (table expected, got boolean)",
        function() tool.tool { name = "x", annotations = true, execute = fn } end },
      { "bad field 'annotations.read_only' to 'tool' (boolean expected, got string)",
        function()
          tool.tool { name = "x", annotations = { read_only = "yes" }, execute = fn }
        end },
      { "bad field 'annotations.title' to 'tool' (string expected, got number)",
        function() tool.tool { name = "x", annotations = { title = 1 }, execute = fn } end },
      { "unknown field 'annotations.readonly' to 'tool' (did you mean 'annotations.read_only'?)",
        function() tool.tool { name = "x", annotations = { readonly = true }, execute = fn } end },
      { "bad field 'max_result_size_chars' to 'tool' (positive integer expected, got float)",
        function() tool.tool { name = "x", max_result_size_chars = 1.5, execute = fn } end },
      { "bad field 'max_result_size_chars' to 'tool' (positive integer expected, got string)",
        function() tool.tool { name = "x", annotations = { max_result_size_chars = "1" },
          execute = fn } end },
      { "bad field 'always_load' to 'tool' (boolean expected, got number)",
        function() tool.tool { name = "x", always_load = 1, execute = fn } end },
      { "bad field 'meta' to 'tool' (table expected, got string)",
        function() tool.tool { name = "x", meta = "m", execute = fn } end },
    }
    for _, row in ipairs(misuse) do
      it("raises: " .. row[1], function() raises(row[1], row[2]) end)
    end
  end)

  describe("resource()", function()
    it("a fixed resource with read", function()
      local r = tool.resource { uri = "mem://notes", name = "notes", description = "Notes",
        mime_type = "text/markdown", size = 10, read = function() return "# hi" end }
      assert.equal("resource", r.kind)
      assert.equal("claude.Resource: mem://notes", tostring(r))
      assert.same({ uri = "mem://notes", name = "notes", description = "Notes",
        mimeType = "text/markdown", size = 10 }, r.listing)
      assert.equal("# hi", r.read("mem://notes", {}))
    end)

    it("a static resource", function()
      local r = tool.resource { uri = "mem://a", name = "a", text = "hello" }
      assert.same({ contents = { { uri = "mem://a", text = "hello" } } },
        content.read_result(r, "mem://a", pcall(r.read, "mem://a", {})))
    end)

    it("a resource template", function()
      local r = tool.resource { uri_template = "file:///{+path}.txt", name = "files",
        read = function(_, p) return p.path end }
      assert.equal("resource_template", r.kind)
      assert.equal("claude.ResourceTemplate: file:///{+path}.txt", tostring(r))
      assert.same({ uriTemplate = "file:///{+path}.txt", name = "files" }, r.listing)
      assert.same({ path = "a/b c" }, r.match("file:///a/b%20c.txt"))
      assert.is_nil(r.match("http://x"))
      local u = tool.resource_template { uri_template = "users://{id}/profile", name = "u",
        read = fn }
      assert.same({ id = "42" }, u.match("users://42/profile"))
      assert.is_nil(u.match("users://4/2/profile"))
    end)

    local misuse = {
      { "bad argument #1 to 'resource' (table expected, got string)",
        function() tool.resource "x" end },
      { "bad field 'uri' to 'resource' (exactly one of uri and uri_template expected)",
        function() tool.resource { name = "x", read = fn } end },
      { "bad field 'uri_template' to 'resource' (exactly one of uri and uri_template "
          .. "expected)", function()
        tool.resource { uri = "a://b", uri_template = "a://{x}", name = "x", read = fn }
      end },
      { "bad field 'name' to 'resource' (string expected, got nil)",
        function() tool.resource { uri = "a://b", read = fn } end },
      { "bad field 'read' to 'resource' (function expected, got nil)",
        function() tool.resource { uri = "a://b", name = "b" } end },
      { "bad field 'read' to 'resource' (either read or text/blob/bytes, not both)",
        function() tool.resource { uri = "a://b", name = "b", read = fn, text = "t" } end },
      { "bad field 'text' to 'resource' (string expected, got number)",
        function() tool.resource { uri = "a://b", name = "b", text = 1 } end },
      { "unknown field 'mime' to 'resource' (did you mean 'mime_type'?)",
        function() tool.resource { uri = "a://b", name = "b", read = fn, mime = "x" } end },
      { "bad field 'size' to 'resource' (integer expected, got number)",
        function() tool.resource { uri = "a://b", name = "b", read = fn, size = 1.5 } end },
      { "bad field 'read' to 'resource' (function expected, got nil)",
        function() tool.resource { uri_template = "a://{x}", name = "b" } end },
      { "bad field 'uri_template' to 'resource' (unsupported URI template expression in "
          .. "'a://{?x}' (only {var} and {+var}))",
        function() tool.resource { uri_template = "a://{?x}", name = "b", read = fn } end },
      { "bad field 'uri_template' to 'resource' ('a://b' has no {variable})",
        function() tool.resource { uri_template = "a://b", name = "b", read = fn } end },
      { "bad field 'uri_template' to 'resource_template' (string expected, got nil)",
        function() tool.resource_template { uri = "a://b", name = "b", read = fn } end },
    }
    for _, row in ipairs(misuse) do
      it("raises: " .. row[1], function() raises(row[1], row[2]) end)
    end
  end)

  describe("prompt()", function()
    it("builds arguments, listing and validator", function()
      local p = tool.prompt { name = "review", description = "Review code",
        arguments = { "code: the code", "style?", { name = "lang", required = false },
          { name = "focus", description = "what to look at" } },
        get = function(a) return "Review " .. a.code end }
      assert.equal("prompt", p.kind)
      assert.equal("claude.Prompt: review", tostring(p))
      assert.same({ name = "review", description = "Review code", arguments = {
        { name = "code", description = "the code", required = true },
        { name = "style", required = false },
        { name = "lang", required = false },
        { name = "focus", description = "what to look at", required = true },
      } }, p.listing)
      assert.is_true(p.validate { code = "x", focus = "y" })
      assert.same({ nil, "missing required argument 'code'" }, { p.validate { focus = "y" } })
      assert.same({ nil, "argument 'style' must be a string" },
        { p.validate { code = "x", focus = "y", style = 1 } })
      local bare = tool.prompt { name = "hi", get = fn }
      assert.equal("[]", json.encode(bare.listing.arguments))
      assert.is_true(bare.validate(nil))
    end)

    local misuse = {
      { "bad argument #1 to 'prompt' (table expected, got nil)", function() tool.prompt() end },
      { "bad field 'name' to 'prompt' (string expected, got nil)",
        function() tool.prompt { get = fn } end },
      { "bad field 'get' to 'prompt' (function expected, got nil)",
        function() tool.prompt { name = "p" } end },
      { "unknown field 'args' to 'prompt'",
        function() tool.prompt { name = "p", get = fn, args = {} } end },
      { "bad field 'arguments' to 'prompt' (a list expected (e.g. { 'city', 'days?' }))",
        function() tool.prompt { name = "p", get = fn, arguments = { city = "string" } } end },
      { "bad field 'arguments[1]' to 'prompt' (bad argument spec 'a b' (expected e.g. 'city', "
          .. "'days?' or 'city: the city name'))",
        function() tool.prompt { name = "p", get = fn, arguments = { "a b" } } end },
      { "bad field 'arguments[1].name' to 'prompt' (string expected, got nil)",
        function() tool.prompt { name = "p", get = fn, arguments = { {} } } end },
      { "bad field 'arguments[1].required' to 'prompt' (boolean expected, got string)",
        function()
          tool.prompt { name = "p", get = fn, arguments = { { name = "a", required = "no" } } }
        end },
      { "unknown field 'arguments[1].type' to 'prompt'",
        function()
          tool.prompt { name = "p", get = fn, arguments = { { name = "a", type = "string" } } }
        end },
      { "bad field 'arguments' to 'prompt' (duplicate argument 'a')",
        function() tool.prompt { name = "p", get = fn, arguments = { "a", "a?" } } end },
    }
    for _, row in ipairs(misuse) do
      it("raises: " .. row[1], function() raises(row[1], row[2]) end)
    end
  end)

  describe("server()", function()
    local add = tool.tool("add", { a = "number", b = "number" }, fn)
    local sub = tool.tool("sub", { a = "number", b = "number" }, fn)

    it("holds what a router needs", function()
      local state = {}
      local res = tool.resource { uri = "mem://x", name = "x", text = "x" }
      local tpl = tool.resource { uri_template = "mem://{id}", name = "t", read = fn }
      local p = tool.prompt { name = "p", get = fn }
      local s = tool.server("calc", { add, res, tpl, p },
        { version = "2.0.0", state = state, instructions = "Use it" })
      assert.equal("claude.Server", getmetatable(s).__name)
      assert.equal("claude.Server: calc (1 tool)", tostring(s))
      assert.is_true(tool.is_server(s))
      assert.equal("calc", s.name)
      assert.equal("2.0.0", s.version)
      assert.equal(state, s.state)
      assert.equal("Use it", s.instructions)
      assert.equal(add, s.tools.add)
      assert.same({ add }, s.tool_list)
      assert.equal(res, s.resources["mem://x"])
      assert.same({ res }, s.resource_list)
      assert.equal(tpl, s.resource_templates["mem://{id}"])
      assert.same({ tpl }, s.resource_template_list)
      assert.equal(p, s.prompts.p)
      assert.same({ p }, s.prompt_list)
      assert.equal(4, s.revision)
    end)

    it("accepts a json.array of items", function()
      assert.same({ add }, tool.server("s", json.array { add }).tool_list)
    end)

    it("defaults", function()
      local s = tool.server("empty")
      assert.equal("1.0.0", s.version)
      assert.same({}, s.tool_list)
      assert.equal("[]", json.encode(s:list "tools"))
    end)

    it("add() extends it, bumps revision and refreshes lists", function()
      local s = tool.server("calc", { add })
      local r0 = s.revision
      local first = s:list "tools"
      assert.equal(first, s:list "tools")  -- cached
      assert.equal(s, s:add(sub))
      assert.is_true(s.revision > r0)
      assert.same({ "mcp__calc__add", "mcp__calc__sub" }, s:tool_names())
      assert.same({ add.listing, sub.listing }, s:list "tools")
      assert.equal("claude.Server: calc (2 tools)", tostring(s))
    end)

    local misuse = {
      { "bad argument #1 to 'server' (string expected, got nil)", function() tool.server() end },
      { "bad argument #1 to 'server' ('a.b' is not a valid name (A-Z a-z 0-9 _ -))",
        function() tool.server("a.b", {}) end },
      { "bad argument #2 to 'server' (a list of tools expected, got claude.Tool)",
        function() tool.server("s", add) end },
      { "bad argument #2 to 'server' (a list of tools expected, got string)",
        function() tool.server("s", "add") end },
      { "bad argument #2 to 'server' (item 1: claude.Tool, claude.Resource or claude.Prompt "
          .. "expected, got table)", function() tool.server("s", { { name = "x" } }) end },
      { "bad argument #2 to 'server' (a list of tools expected, found key 'add')",
        function() tool.server("s", { add = add }) end },
      { "bad argument #2 to 'server' (item 2: duplicate tool name 'add')",
        function() tool.server("s", { add, add }) end },
      { "bad argument #3 to 'server' (table expected, got string)",
        function() tool.server("s", {}, "1.0") end },
      { "unknown field 'versoin' to 'server' (did you mean 'version'?)",
        function() tool.server("s", {}, { versoin = "1" }) end },
      { "bad field 'version' to 'server' (string expected, got number)",
        function() tool.server("s", {}, { version = 1 }) end },
      { "bad argument #1 to 'add' (duplicate tool name 'add')",
        function() tool.server("s", { add }):add(add) end },
      { "bad argument #1 to 'add' (claude.Tool, claude.Resource or claude.Prompt expected, "
          .. "got nil)", function() tool.server("s"):add() end },
      { "bad self to 'add' (claude.Server expected, got table)",
        function() local s = tool.server("s"); s.add({}, add) end },
      { "bad argument #1 to 'add' (duplicate resource uri 'm://x')", function()
        local r = tool.resource { uri = "m://x", name = "x", text = "" }
        tool.server("s", { r }):add(tool.resource { uri = "m://x", name = "y", text = "" })
      end },
      { "bad argument #1 to 'add' (duplicate prompt name 'p')", function()
        tool.server("s", { tool.prompt { name = "p", get = fn } })
          :add(tool.prompt { name = "p", get = fn })
      end },
      { "bad argument #1 to 'list' (unknown list 'tool')",
        function() tool.server("s"):list "tool" end },
    }
    for _, row in ipairs(misuse) do
      it("raises: " .. row[1], function() raises(row[1], row[2]) end)
    end
  end)

  describe("call()", function()
    local add = tool.tool("add", { a = "number", b = "number" },
      function(args) return args.a + args.b end)
    local ctxs = {}
    local echo = tool.tool("echo", function(args, ctx) ctxs[#ctxs + 1] = ctx; return args end)

    local rows = {
      { add, { a = 15, b = 27 }, '{"content":[{"type":"text","text":"42"}]}' },
      { add, { a = 1.5, b = 2 }, '{"content":[{"type":"text","text":"3.5"}]}' },
      { add, { a = "1", b = 2 }, '{"content":[{"type":"text","text":'
        .. '"Input validation error: a: expected number, got string '
        .. '(keyword /properties/a/type)"}],"isError":true}' },
      { add, { a = 1 }, '{"content":[{"type":"text","text":'
        .. '"Input validation error: missing required property \'b\' (keyword /required)"}],'
        .. '"isError":true}' },
      { echo, nil, '{"content":[{"type":"text","text":"{}"}],"structuredContent":{}}' },
      { echo, json.null, '{"content":[{"type":"text","text":"{}"}],"structuredContent":{}}' },
    }
    for i, row in ipairs(rows) do
      it("row " .. i, function()
        local r = tool.call(row[1], row[2], { id = i })
        assert.same(json.decode(row[3]), json.decode(json.encode(r)))
      end)
    end

    it("passes ctx to execute", function()
      local ctx = {}
      tool.call(echo, {}, ctx)
      assert.equal(ctx, ctxs[#ctxs])
    end)

    it("turns a raised error into isError, traceback to stderr", function()
      local boom = tool.tool("boom", function() error("kaput") end)
      local stderr = io.stderr
      local written = {}
      io.stderr = { write = function(_, s) written[#written + 1] = s end }  -- luacheck: ignore
      local r = tool.call(boom, {})
      io.stderr = stderr  -- luacheck: ignore
      assert.same({ content = { { type = "text", text = "kaput" } }, isError = true }, r)
      local log = table.concat(written)
      assert.matches("claude: tool 'boom' failed: .*kaput", log)
      assert.matches("stack traceback", log)
    end)

    it("yields across execute inside a coroutine", function()
      local slow = tool.tool("slow", function() return coroutine.yield() end)
      local co = coroutine.wrap(function() return tool.call(slow, {}) end)
      co()
      assert.same({ content = { { type = "text", text = "done" } } }, co("done"))
    end)
  end)
end)
