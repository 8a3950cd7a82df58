-- claude.mcp against a hostile server (issue 34, items 13-15): spec/support/
-- hostile_mcp_server.lua answers as each row scripts it. Every malformed answer is
-- `nil, err, "protocol"`, never a raise; the client's bounds (schemas, pages) hold within a
-- call's timeout. Timings are never asserted: a bound's check only fails past a generous
-- outer limit.
local claude = require "claude"
local core = require "claude.core"
local harness = require "support.harness"

local SERVER = harness.root .. "/spec/support/hostile_mcp_server.lua"
local T = 10

-- The plan's Lua source from `{ [method] = { raw, ... } }` (see the server's comment).
local function plan(answers)
  local parts = {}
  for method, list in pairs(answers) do
    local items = {}
    for i, raw in ipairs(list) do items[i] = raw and string.format("%q", raw) or "false" end
    parts[#parts + 1] = string.format("[%q] = { %s }", method, table.concat(items, ", "))
  end
  return "return { " .. table.concat(parts, ", ") .. " }"
end

local function connect(era, source, extra)
  local o = { command = harness.claudelua, args = { SERVER, era, source }, name = "hostile",
    timeout = T, protocol = era == "legacy" and "legacy" or nil }
  for k, v in pairs(extra or {}) do o[k] = v end
  return assert(claude.mcp.connect(o))
end

-- call_tool's outcome: { raised = message } or { result, message, kind }; a task handle
-- (opts.task) is waited for.
local function outcome(c, opts)
  local ok, r, err, kind = pcall(c.call_tool, c, "x", {}, opts)
  if ok and r and opts and opts.task then
    ok, r, err, kind = pcall(r.wait, r, { timeout = T })
  end
  if not ok then return { raised = tostring(r) } end
  return { result = r, message = err and err.message, kind = kind }
end

local TASK = '{"resultType":"task","taskId":"t","status":"working","pollIntervalMs":10}'
local LTASK = '{"task":{"taskId":"t","status":"working","pollInterval":10}}'
local function get(s) return '{"resultType":"complete","taskId":"t"' .. s .. '}' end

describe("claude.mcp's readers of task answers against a hostile server", function()
  before_each(harness.before)
  after_each(harness.after)

  -- era, the answers, call_tool's options, the kind expected, its message
  local ROWS = {
    { "modern", { ["tools/call"] = { '{"resultType":"task"}' } }, nil, "protocol",
      "task without taskId" },
    { "modern", { ["tools/call"] = { '{"resultType":"task"}' } }, { task = true }, "protocol",
      "task without taskId" },
    { "modern", { ["tools/call"] = { '{"resultType":"task","taskId":5}' } }, nil, "protocol",
      "taskId is not a string" },
    { "modern", { ["tools/call"] = { '{"resultType":"task","taskId":"t","status":7}' } }, nil,
      "protocol", "status is not a string" },
    { "modern", { ["tools/call"] = { '{"resultType":"task","taskId":"t","status":"bogus"}' } },
      nil, "protocol", "status is 'bogus'" },
    { "modern", { ["tools/call"] = { TASK }, ["tasks/get"] = {
      get ',"status":"completed","result":5' } }, nil, "protocol", "result is not an object" },
    { "modern", { ["tools/call"] = { TASK }, ["tasks/get"] = { get "" } }, nil, "protocol",
      "task without status" },
    { "modern", { ["tools/call"] = { TASK }, ["tasks/get"] = {
      get ',"status":"input_required","inputRequests":"x"' } }, { task = true }, "protocol",
      "inputRequests is not an object" },
    { "modern", { ["tools/call"] = { TASK }, ["tasks/get"] = { get ',"status":"completed"' } },
      nil, "protocol", "completed without its result" },
    { "modern", { ["tools/call"] = { TASK }, ["tasks/get"] = { '"x"' } }, nil, "protocol",
      "not an object" },
    { "modern", { ["tools/call"] = { TASK }, ["tasks/get"] = {
      get ',"status":"failed","error":"boom"' } }, nil, "remote", "no reason given" },
    { "modern", { ["tools/call"] = {
      '{"resultType":"input_required","inputRequests":5,"requestState":"s"}' } }, nil,
      "protocol", "inputRequests that is not an object" },
    { "modern", { ["tools/call"] = { "false" } }, nil, "protocol", "not an object" },
    { "modern", { ["tools/call"] = { TASK }, ["tasks/get"] = { "false" } }, nil, "protocol",
      "not an object" },
    { "legacy", { ["tools/call"] = { "5" } }, nil, "protocol", "result that is not an object" },
    { "legacy", { ["tools/call"] = { "false" } }, { timeout = T }, "protocol",
      "result that is not an object" },
    { "legacy", { ["tools/call"] = { LTASK }, ["tasks/get"] = { "false" } }, nil, "protocol",
      "task that is not an object" },
    { "legacy", { ["tools/call"] = { "true" } }, { timeout = T }, "protocol",
      "result that is not an object" },
    { "legacy", { ["tools/call"] = { '{"task":{}}' } }, nil, "protocol", "without taskId" },
    { "legacy", { ["tools/call"] = { '{"task":{}}' } }, { task = true }, "protocol",
      "without taskId" },
    { "legacy", { ["tools/call"] = { '{"task":{"taskId":null}}' } }, nil, "protocol",
      "taskId is not a string" },
    { "legacy", { ["tools/call"] = { '{"task":"t"}' } }, nil, "protocol",
      "task that is not an object" },
    { "legacy", { ["tools/call"] = { LTASK }, ["tasks/get"] = { '"x"' } }, nil, "protocol",
      "task that is not an object" },
    { "legacy", { ["tools/call"] = { LTASK }, ["tasks/get"] = { '{"taskId":"t","status":5}' } },
      nil, "protocol", "status is not a string" },
    { "legacy", { ["tools/call"] = { LTASK }, ["tasks/get"] = { '{"taskId":"t"}' } }, nil,
      "protocol", "task without status" },
    { "legacy", { ["tools/call"] = { LTASK }, ["tasks/get"] = {
      '{"taskId":"t","status":"completed"}' }, ["tasks/result"] = { "true" } }, nil, "protocol",
      "result that is not an object" },
    { "legacy", { ["tools/call"] = { LTASK }, ["tasks/get"] = {
      '{"taskId":"t","status":"completed"}' }, ["tasks/result"] = { '"done"' } },
      { task = true }, "protocol", "result that is not an object" },
  }

  for i, row in ipairs(ROWS) do
    local era, answers, opts, kind, message = row[1], row[2], row[3], row[4], row[5]
    it(string.format("row %d (%s): %s is %s", i, era, message, kind), function()
      -- outside a task, and in one (where core.pending's reader wakes the call)
      for _, in_task in ipairs { false, true } do
        local c <close> = connect(era, plan(answers))
        local out
        if in_task then
          claude.spawn(function() out = outcome(c, opts) end):wait()
        else
          out = outcome(c, opts)
        end
        assert.is_nil(out.raised, out.raised)
        assert.is_nil(out.result)
        assert.equal(kind, out.kind, out.message)
        assert.matches(message, out.message, 1, true)
      end
    end)
  end
end)

describe("claude.mcp's pagination against a hostile server", function()
  before_each(harness.before)
  after_each(harness.after)

  local function page(cursor, item)
    return '{"tools":[{"name":"t%d","inputSchema":{"type":"object"}' .. (item or "") .. '}]'
      .. (cursor and (',"nextCursor":' .. cursor) or "") .. ',"resultType":"complete"}'
  end
  local ENDLESS = { ["tools/list"] = { page '"c%d"' } }
  local LOOP = { ["tools/list"] = { page '"a"', page '"b"', page '"a"' } }
  local BIG = { ["tools/list"] = { page('"c%d"', ',"description":"' .. ("x"):rep(60000) .. '"') } }
  -- each page after 0.3 s: every page well within the timeout, the walk not
  local SLOW = [[return { ["tools/list"] = function(_, n)
    os.execute("sleep 0.3")
    return '{"tools":[],"nextCursor":"c' .. n .. '","resultType":"complete"}'
  end }]]

  -- list_tools' outcome in a task, or nil when it took more than the outer bound (30 s)
  local function listed(c, opts)
    local out
    local t = claude.spawn(function()
      local r, err, kind = c:list_tools(opts)
      out = { result = r, err = err, kind = kind }
    end)
    t:join(30)
    return out
  end

  -- era, the plan (answers or source), connect's options, list_tools' options, the kinds
  -- expected, err.bound
  local ROWS = {
    { "legacy", ENDLESS, nil, { timeout = 3 }, { protocol = true, timeout = true } },
    { "modern", ENDLESS, nil, { timeout = 3 }, { protocol = true, timeout = true } },
    { "legacy", ENDLESS, nil, { max_pages = 5 }, { protocol = true }, "max_pages" },
    { "modern", ENDLESS, { max_pages = 7 }, nil, { protocol = true }, "max_pages" },
    { "legacy", LOOP, nil, { timeout = 3 }, { protocol = true }, "cursor" },
    { "modern", LOOP, nil, { timeout = 3, cache = false }, { protocol = true }, "cursor" },
    { "legacy", { ["tools/list"] = { page "5" } }, nil, nil, { protocol = true } },
    { "legacy", { ["tools/list"] = { "false" } }, nil, nil, { protocol = true } },
    { "legacy", BIG, { max_list_bytes = 200000 }, nil, { protocol = true }, "max_bytes" },
    { "modern", BIG, nil, { max_bytes = 200000 }, { protocol = true }, "max_bytes" },
    { "legacy", SLOW, nil, { timeout = 1 }, { timeout = true } },
  }

  for i, row in ipairs(ROWS) do
    local era, answers, copts, lopts, kinds, bound = table.unpack(row, 1, 6)
    it(string.format("row %d (%s): %s", i, era, bound or next(kinds)), function()
      local c <close> = connect(era, type(answers) == "string" and answers or plan(answers),
        copts)
      local out = listed(c, lopts)
      assert.is_table(out, "list_tools did not return within 30 s")
      assert.is_nil(out.result)
      assert.is_true(kinds[out.kind] or false, tostring(out.kind) .. ": "
        .. tostring(out.err))
      if bound then assert.equal(bound, out.err.bound) end
    end)
  end

  it("still lists every page of a server within the bounds", function()
    local c <close> = connect("legacy", plan { ["tools/list"] = { page '"c%d"', page '"c%d"',
      page(nil) } })
    local tools = assert(c:list_tools { timeout = T })
    assert.same({ "t1", "t2", "t3" }, { tools[1].name, tools[2].name, tools[3].name })
  end)
end)

describe("claude.mcp's output schemas against a hostile server", function()
  before_each(harness.before)
  after_each(harness.after)

  -- A server listing tool x with the outputSchema `schema` (Lua source of a value), whose
  -- calls answer `structured` (likewise).
  local function schema_plan(schema, structured)
    return [[
      local json = require "claude.json"
      local schema = ]] .. schema .. [[
      local sc = ]] .. structured .. [[
      local list = json.encode { tools = { { name = "x", inputSchema = { type = "object" },
        outputSchema = schema } } }
      local result = json.encode { content = { { type = "text", text = "x" } },
        structuredContent = sc }
      return { ["tools/list"] = { list }, ["tools/call"] = { result } }
    ]]
  end

  -- 20,000 items, each a match of about 2 ms (PCRE2's match limit is never reached)
  local PATTERN = schema_plan([[{ type = "object", properties = { items = { type = "array",
      items = { type = "string", pattern = "^(?:(a|aa)*c|.*)$" } } } }]],
    [[{ items = (function() local t = {} for i = 1, 20000 do t[i] = ("a"):rep(27) .. "!" end
      return t end)() }]])
  -- 50,000 entries; 30,000 items from its end
  local ENUM = schema_plan([[{ type = "object", properties = { items = { type = "array",
      items = { enum = (function() local t = {} for i = 1, 50000 do t[i] = "v" .. i end
        return t end)() } } } }]],
    [[{ items = (function() local t = {} for i = 1, 30000 do t[i] = "v" .. (50001 - i) end
      return t end)() }]])
  -- 3,000 patternProperties against an object of 50,000 properties
  local PATTERNS = schema_plan([[{ type = "object", patternProperties = (function()
      local t = {} for i = 1, 3000 do t["^p" .. i .. "x"] = { type = "string" } end
      return t end)() }]],
    [[(function() local t = {} for i = 1, 50000 do t["q" .. i] = "v" end return t end)()]])
  -- the same near the message limit (12 MiB of descriptions)
  local BIG = schema_plan([[{ type = "object", patternProperties = (function()
      local t = {} for i = 1, 3000 do t["^p" .. i .. "x"] = { type = "string",
        description = ("d"):rep(4000) } end
      return t end)() }]],
    [[(function() local t = {} for i = 1, 50000 do t["q" .. i] = "v" end return t end)()]])

  -- plan, call_tool's options, the kinds that may come (ok: the result)
  local ROWS = {
    { "a costly pattern over 560 KB of items", PATTERN, nil, { timeout = true } },
    { "a 50,000-entry enum", ENUM, nil, { ok = true } },
    { "3,000 patternProperties over 50,000 properties", PATTERNS, { timeout = 3 },
      { timeout = true } },
    { "a 12 MiB schema", BIG, { timeout = 3 }, { validation = true, timeout = true } },
  }

  for i, row in ipairs(ROWS) do
    local what, source, opts, kinds = table.unpack(row, 1, 4)
    it(string.format("row %d: %s, within the call's timeout of 3 s", i, what), function()
      local c <close> = connect("legacy", source, { timeout = 3 })
      assert(c:list_tools { timeout = T })
      local started, out = core.now(), nil
      local t = claude.spawn(function()
        local r, err, kind = c:call_tool("x", {}, opts)
        out = { result = r, err = err, kind = kind or "ok" }
      end)
      t:join(30)
      local took = core.now() - started
      assert.is_table(out, "call_tool did not return within 30 s")
      -- (a generous outer bound: only a loop held far past the timeout fails it)
      assert.is_true(took < 30, string.format("call_tool took %.1f s", took))
      assert.is_true(kinds[out.kind] or false, out.kind .. ": " .. tostring(out.err))
    end)
  end
end)
