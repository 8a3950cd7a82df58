-- The call record (claude.mcp.call): what every reader fills, and the router's one entry that
-- takes it. The C readers fill the transport's record and hand it to a target; the router
-- reads it whole before anything runs, so the transport may fill it again at once; the
-- modules that read its slots by constant agree with the module's slots.
local claude = require "claude"
local core = require "claude.core"
local async = require "claude.async"
local call = require "claude.mcp.call"
local tool = require "claude.mcp.tool"
local router = require "claude.mcp.router"

local MCP_CALL = core.MCP_CALL

local function line(id, name, args, meta)
  return string.format('{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"%s",'
    .. '"arguments":%s%s}}', id, name, args, meta and ',"_meta":' .. meta or "")
end

-- What a reader of `kind` gives for `lines` from a child's stdout: each call record as a
-- copy of its slots, by way of the target (`target`: true) or of the stream's callback.
local function read_lines(kind, lines, target)
  local rec, got, done = call.new(), {}, async.event()
  local function keep(r)
    local copy = {}
    for i = 1, call.REQ do copy[i] = r[i] end
    got[#got + 1] = copy
  end
  local reader = core.envelope_reader(kind, rec)
  if target then reader:target(function(r) assert(r == rec) keep(r) end) end
  local raw = assert(core.spawn_process {
    file = "/bin/sh", args = { "-c", "printf '%s\\n' \"$@\"", "sh", table.unpack(lines) },
    stdout = "json",
    on_stdout = function(v, r)
      if v == nil and r == nil then return end -- EOF
      if v == MCP_CALL then
        assert(r == rec)
        keep(r)
      else
        got[#got + 1] = v
      end
    end,
    on_exit = function() done:set() end,
  })
  raw:read_with(reader)
  assert.is_true(done:wait(5))
  claude.sleep(0.05)
  raw:close()
  return got
end

describe("the call record", function()
  it("is filled by the request reader, slot by slot, none left from the call before", function()
    local got = read_lines("request", {
      line(1, "add", '{"a":1}', '{"claudecode/toolUseId":"toolu_1","progressToken":7}'),
      line(2, "mul", '{}'),
      '{"jsonrpc":"2.0","method":"notifications/initialized"}',
      line('"three"', "add", "null"),
    }, true)
    assert.equal(4, #got)
    local first, second, fourth = got[1], got[2], got[4]
    assert.same({ 1, "add" }, { first[call.ID], first[call.TOOL] })
    assert.same({ a = 1 }, first[call.ARGS])
    assert.equal(MCP_CALL, first[call.META]) -- the claude CLI's shape, its values beside
    assert.same({ 7, "toolu_1" }, { first[call.TOKEN], first[call.TOOL_USE_ID] })
    -- the next call has no _meta: nothing of the first stays in its slots
    assert.same({ 2, "mul" }, { second[call.ID], second[call.TOOL] })
    assert.is_nil(second[call.META])
    assert.is_nil(second[call.TOKEN])
    assert.is_nil(second[call.TOOL_USE_ID])
    -- any other message goes to the stream's callback, decoded
    assert.equal("notifications/initialized", got[3].method)
    assert.same({ "three", "add" }, { fourth[call.ID], fourth[call.TOOL] })
    assert.equal(require("claude.json").null, fourth[call.ARGS])
  end)

  it("goes to the stream's callback with core.MCP_CALL when the reader has no target", function()
    local got = read_lines("request", { line(5, "add", '{"a":2}') }, false)
    assert.equal(1, #got)
    assert.same({ 5, "add" }, { got[1][call.ID], got[1][call.TOOL] })
  end)

  it("is filled by the control reader with the control request's id and server", function()
    local got = read_lines("control", {
      '{"type":"control_request","request_id":"req-1","request":{"subtype":"mcp_message",'
        .. '"server_name":"calc","message":' .. line(9, "add", '{"a":1}') .. '}}',
    }, true)
    assert.equal(1, #got)
    local rec = got[1]
    assert.same({ 9, "add", "calc" }, { rec[call.ID], rec[call.TOOL], rec[call.SERVER] })
    -- the request id is held back by the reader while the line is handled (core.call_id)
    assert.equal(core.MCP_REQUEST_ID, rec[call.TAG])
  end)

  it("takes only a table, and a target only on a reader that fills one", function()
    assert.has_error(function() core.envelope_reader("request", 42) end)
    assert.has_error(function() core.envelope_reader("response"):target(print) end)
    local reader = core.envelope_reader("request", call.new())
    assert.has_error(function() reader:target(42) end)
    reader:target(print)
    reader:target(nil) -- back to the callback
  end)

  it("is read whole by the router before the call runs: filled again, the call is unmoved",
    function()
      local release = async.event()
      local slow = tool.tool("slow", function() release:wait(5) return "done" end)
      local quick = tool.tool("quick", function() return "at once" end)
      local r = router.new { s = tool.server("s", { slow, quick }) }
      local got = {}
      local function reply(tag, result, id) got[#got + 1] = { tag, result, id } end
      local rec = call.new { [call.SERVER] = "s", [call.REPLY] = reply }
      rec[call.ID], rec[call.TOOL], rec[call.TAG] = 1, "slow", "first"
      local ctx = r:call(rec)
      assert.is_not_nil(ctx) -- it waits
      -- the transport's next call, in the same record
      rec[call.ID], rec[call.TOOL], rec[call.TAG] = 2, "quick", "second"
      assert.is_nil(r.route(rec)) -- answered at once
      release:set()
      async.spawn_observed(function() claude.sleep(0.02) end):wait()
      assert.same({ { "second", "at once", 2 }, { "first", "done", 1 } }, got)
      -- an unknown tool is the router's error answer, with the record's id and tag
      rec[call.ID], rec[call.TOOL], rec[call.TAG] = 3, "nope", "third"
      r:call(rec)
      assert.equal("third", got[3][1])
      assert.equal(3, got[3][2].id)
      assert.matches("nope", got[3][2].error.message)
    end)

  it("has its slots read by constant where the call path reads them: the module's", function()
    -- (a module reads a slot in one instruction with a `<const>` of its own)
    local files = { "lua/claude/mcp/router.lua", "lua/claude/mcp/server/connection.lua",
      "lua/claude/mcp/server/modern.lua", "lua/claude/mcp/server/http.lua",
      "lua/claude/mcp/server/http_modern.lua" }
    local alias = { RMETA = "META" }
    for _, path in ipairs(files) do
      local f = assert(io.open(path))
      local src = f:read("a")
      f:close()
      local n = 0
      for names, values in src:gmatch("\nlocal ([%u_ <>%a,]-<const>[^=\n]*) = ([%d, ]+)\n") do
        local list, i = {}, 0
        for v in values:gmatch("%d+") do list[#list + 1] = tonumber(v) end
        for name in names:gmatch("([%u_]+) <const>") do
          i = i + 1
          assert.equal(call[alias[name] or name], list[i], path .. ": " .. name)
          n = n + 1
        end
      end
      assert.is_true(n > 0, path)
    end
  end)
end)
