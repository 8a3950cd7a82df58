-- luacheck: no max line length
-- (each misuse case is one line: the line a call is on is the line it must blame)
-- The one convention for failures and misuse (claude.errors): expected failures come back as
-- `nil, err, kind`; misuse raises at the caller's line, for every public entry point, however
-- deep inside the library the mistake is found.
local claude = require "claude"
local errors = require "claude.errors"
local queue = require "claude.queue"
local schema = require "claude.schema"
local content = require "claude.mcp.content"
local router = require "claude.mcp.router"
local testing = require "claude.testing"

local SRC = debug.getinfo(1, "S").short_src

-- `f` is a one-line function calling one public entry point: it must raise
-- "<this file>:<that line>: <message>".
local function blames(message, f)
  local line = debug.getinfo(f, "S").linedefined
  local ok, err = pcall(f)
  assert.is_false(ok, "expected an error")
  assert.equal("string", type(err))
  assert.equal(("%s:%d: %s"):format(SRC, line, message), err)
end

-- Options that find an executable without starting anything: every misuse below is found
-- before a process starts.
local CLI = { cli_path = "/bin/sh" }
local function with(o)
  local out = { cli_path = CLI.cli_path }
  for k, v in pairs(o) do out[k] = v end
  return out
end

describe("claude.errors", function()
  describe("errors as values", function()
    it("new, is, tostring", function()
      local e = errors.new("timeout", "timed out after 1 s", { seconds = 1 })
      assert.is_true(errors.is(e))
      assert.is_true(errors.is(e, "timeout"))
      assert.is_false(errors.is(e, "closed"))
      assert.is_false(errors.is("timeout"))
      assert.equal("timeout: timed out after 1 s", tostring(e))
      assert.equal(1, e.seconds)
      assert.equal("claude.Error", getmetatable(e).__name)
    end)

    it("fail gives nil, err, kind with kind == err.kind", function()
      local v, err, kind = errors.fail("closed", "the session is closed")
      assert.is_nil(v)
      assert.equal("closed", kind)
      assert.equal(kind, err.kind)
      assert.equal("closed: the session is closed", tostring(err))
    end)

    it("throw and catch carry a failure out of a deep computation", function()
      local function deep(n)
        if n == 0 then errors.throw("schema", "too deep") end
        return deep(n - 1)
      end
      local v, err, kind = errors.catch(pcall(deep, 5))
      assert.is_nil(v)
      assert.equal("schema", kind)
      assert.equal("too deep", err.message)
      assert.same({ 1, 2 }, { errors.catch(pcall(function() return 1, 2 end)) })
    end)

    it("catch raises anything throw did not raise, unchanged", function()
      local plain = errors.new("timeout", "not thrown")
      local ok, err = pcall(errors.catch, pcall(error, plain))
      assert.is_false(ok)
      assert.equal(plain, err)
      ok, err = pcall(errors.catch, pcall(error, "boom", 0))
      assert.is_false(ok)
      assert.equal("boom", err)
    end)

    it("message and typename", function()
      assert.equal("gone", errors.message(errors.new("closed", "gone")))
      assert.equal("x", errors.message("x"))
      assert.equal("claude.Queue", errors.typename(queue.new()))
      assert.equal("number", errors.typename(1))
    end)
  end)

  describe("the expected failures of the public API are nil, err, kind", function()
    it("schema.parse, schema.compile, a validator, schema.regex", function()
      local rows = {
        { "schema", schema.parse { a = "strng" } },
        { "schema", schema.compile { type = "thing" } },
        { "validation", schema.compile { type = "number" }("x") },
        { "unsupported", schema.compile { ["$schema"] = "http://example.com/unknown" } },
        { "schema", schema.regex "(a" },
      }
      for _, r in ipairs(rows) do
        assert.is_nil(r[2])
        assert.is_true(errors.is(r[3]))
        assert.equal(r[1], r[4])
        assert.equal(r[4], r[3].kind)
      end
    end)

    it("content.read_result and content.prompt_result", function()
      local v, err, kind = content.read_result({}, "u://a", true, nil, "gone")
      assert.same({ nil, "result", "result", "gone" }, { v, kind, err.kind, err.message })
      v, err, kind = content.prompt_result({}, true, 5)
      assert.same({ nil, "result", "get() returned a number" }, { v, kind, err.message })
    end)

    it("a queue that ends with an error or times out", function()
      local q = queue.new()
      local v, err, kind = q:pop(0.01)
      assert.same({ nil, "timeout", "timeout" }, { v, kind, err.kind })
      q:close(errors.new("closed", "done"))
      v, err, kind = q:pop()
      assert.same({ nil, "closed", "closed" }, { v, kind, err.kind })
      local clean = queue.new()
      clean:close()
      assert.same({}, { clean:pop() })
    end)

    it("claude.connect when the CLI cannot be found", function()
      local s, err, kind = claude.connect { cli_path = "/nonexistent/claude" }
      assert.is_nil(s)
      assert.equal("cli_not_found", kind)
      assert.equal(kind, err.kind)
    end)

    it("testing.read_log of a missing file", function()
      local log, err, kind = testing.read_log("/nonexistent/log")
      assert.same({ nil, "io", "io" }, { log, kind, err.kind })
    end)
  end)

  describe("misuse is reported at the caller's line", function()
    it("the tool DSL", function()
      blames("bad argument #1 to 'tool' (string or table expected, got number)", function() claude.tool(5) end)
      blames("bad argument #2 to 'tool' (function expected, got nil)", function() claude.tool("t") end)
      blames("bad field 'name' to 'tool' ('a b' is not a valid name (1-64 of A-Z a-z 0-9 _ -))", function() claude.tool { name = "a b", execute = print } end)
      blames("unknown field 'x' to 'tool'", function() claude.tool { name = "t", execute = print, x = 1 } end)
      blames("bad field 'input_schema' to 'tool' (a: unknown type 'strng')", function() claude.tool { name = "t", execute = print, input_schema = { a = "strng" } } end)
      blames("bad argument #1 to 'server' (string expected, got nil)", function() claude.server() end)
      blames("bad argument #2 to 'server' (item 1: claude.Tool, claude.Resource or claude.Prompt expected, got number)", function() claude.server("s", { 1 }) end)
      blames("bad field 'read' to 'resource' (function expected, got nil)", function() claude.resource { uri = "u://a", name = "a" } end)
      blames("bad field 'get' to 'prompt' (function expected, got nil)", function() claude.prompt { name = "p" } end)
      local s = claude.server("s")
      blames("bad argument #1 to 'add' (claude.Tool, claude.Resource or claude.Prompt expected, got string)", function() s:add("x") end)
      blames("bad argument #1 to 'list' (unknown list 'nope')", function() s:list("nope") end)
    end)

    it("content constructors", function()
      blames("bad argument #1 to 'text' (string expected, got table)", function() content.text({}) end)
      blames("bad argument #1 to 'image' (string or table expected, got boolean)", function() content.image(true) end)
      blames("bad field 'uri' to 'resource' (string expected, got nil)", function() content.resource { text = "x" } end)
      blames("bad field 'name' to 'resource_link' (string expected, got nil)", function() content.resource_link { uri = "u://a" } end)
    end)

    it("schemas", function()
      blames("a: unknown type 'strng'", function() schema.normalize { a = "strng" } end)
      blames("bad schema: unknown type 'thing'", function() schema.validator { type = "thing" } end)
    end)

    it("claude.query and claude.connect options, found deep inside the session's start", function()
      blames("bad argument #1 to 'query' (string, table or function expected, got number)", function() claude.query(5) end)
      blames("unknown field 'modle' to 'query' (did you mean 'model'?)", function() claude.query("hi", with { modle = "x" }) end)
      blames("bad field 'max_turns' to 'query' (number expected, got string)", function() claude.query("hi", with { max_turns = "3" }) end)
      blames("bad argument #1 to 'connect' (table expected, got string)", function() claude.connect("x") end)
      blames("unknown field 'x' to 'connect'", function() claude.connect(with { x = 1, strict = true }) end)
      blames("bad field 'cli_path' to 'connect' (argv list must start with a string)", function() claude.connect { cli_path = { 1 } } end)
      blames("bad field 'system_prompt' to 'connect' (a string, a list of strings, {type='preset', append=...}, {type='custom', prompt=...} or {type='file', path=...} expected)", function() claude.connect(with { system_prompt = { type = "x" } }) end)
      blames("bad field 'allowed_tools' to 'connect' (item 2 is a number, string expected)", function() claude.connect(with { allowed_tools = { "Read", 2 } }) end)
      blames("options 'can_use_tool' and 'permission_prompt_tool_name' cannot be combined", function() claude.connect(with { can_use_tool = print, permission_prompt_tool_name = "x" }) end)
      blames("bad field 'mcp_servers' to 'connect' (entry 'calc' is a number; expected claude.server(...) or a server config table)", function() claude.connect(with { mcp_servers = { calc = 1 } }) end)
    end)

    it("hooks registration", function()
      blames("unknown field 'hooks.PreTool' to 'connect' (did you mean 'hooks.PreToolUse'?)", function() claude.connect(with { hooks = { PreTool = print } }) end)
      blames("bad field 'hooks' to 'query' (Stop[1]: 'matcher' must be a string)", function() claude.query("hi", with { hooks = { Stop = { { matcher = 1, hooks = { print } } } } }) end)
      blames("bad field 'hooks' to 'connect' (Stop[1].hooks[2]: function expected, got number)", function() claude.connect(with { hooks = { Stop = { { hooks = { print, 2 } } } } }) end)
    end)

    it("tasks and queues", function()
      blames("bad argument #1 to 'spawn' (function expected, got number)", function() claude.spawn(1) end)
      blames("bad argument #1 to 'sleep' (non-negative number expected, got -1)", function() claude.sleep(-1) end)
      blames("bad argument #1 to 'on_error' (function expected, got number)", function() claude.on_error(1) end)
      local q = queue.new()
      blames("bad argument #1 to 'push' (a value expected, got nil)", function() q:push(nil) end)
    end)

    it("the router and a request's ctx", function()
      blames("bad argument #1 to 'new' (table expected, got number)", function() router.new(1) end)
      blames("bad field 'notify' to 'new' (function expected, got number)", function() router.new({}, { notify = 1 }) end)
      local r = router.new()
      blames("bad argument #2 to 'set_server' (claude.Server expected for 'x', got number)", function() r:set_server("x", 1) end)
      local seen = {}
      local t = claude.tool("probe", function(_, ctx)
        seen.progress = { pcall(function() ctx.progress("half") end) }
        seen.line_progress = debug.getinfo(1, "l").currentline - 1
        seen.log = { pcall(function() ctx.log("loud", "x") end) }
        seen.line_log = debug.getinfo(1, "l").currentline - 1
        return "ok"
      end)
      local calls = router.new { s = claude.server("s", { t }) }
      local response = calls:handle("s", { jsonrpc = "2.0", id = 1, method = "tools/call",
        params = { name = "probe", arguments = {} } })
      assert.equal("ok", response.result.content[1].text)
      assert.is_false(seen.progress[1])
      assert.equal(("%s:%d: bad argument #1 to 'progress' (number expected, got string)")
        :format(SRC, seen.line_progress), seen.progress[2])
      assert.is_false(seen.log[1])
      assert.equal(("%s:%d: bad argument #1 to 'log' (debug, info, notice, warning, error, "
        .. "critical, alert or emergency expected, got 'loud')"):format(SRC, seen.line_log),
        seen.log[2])
    end)

    it("claude.testing", function()
      blames("bad argument #1 to 'fake_cli' (string expected, got number)", function() testing.fake_cli(1) end)
      blames("bad argument #1 to 'fake_cli' (no such script file: missing/script.lua)", function() testing.fake_cli("missing/script.lua") end)
      blames("bad argument #2 to 'merge' (table expected, got number)", function() testing.merge({}, 2) end)
      local _, fake = testing.fake_cli("cli:expect_eof()", { log = false })
      blames("this fake CLI keeps no log (log = false)", function() fake:read_log() end)
      fake:cleanup()
    end)

    it("other errors pass through public functions unchanged", function()
      local e = errors.new("timeout", "late")
      local f = errors.public(function() error(e) end)
      local ok, err = pcall(f)
      assert.is_false(ok)
      assert.equal(e, err)
      local g = errors.public(function() error("plain", 0) end)
      ok, err = pcall(g)
      assert.same({ false, "plain" }, { ok, err })
    end)
  end)
end)
