local claude = require "claude"
local rpc = require "claude.rpc"
local json = require "claude.json"
local errors = require "claude.errors"
local harness = require "support.harness"

local T = 5

-- An in-memory transport: what a peer sends goes through JSON text (as on a
-- line stream) and reaches the other end on a later turn of the loop, in
-- order. `log` keeps a decoded copy of every message, for the assertions.
local function wire(deliver)
  local log = {}
  local function send(msg)
    local text = json.encode(msg)
    log[#log + 1] = json.decode(text)
    claude.spawn(function()
      claude.sleep(0)
      deliver(json.decode(text))
    end)
    return true
  end
  return send, log
end

-- Two peers talking to each other; `a` and `b` are the options of each.
local function pair(codec, a, b)
  local pa, pb
  local send_a, log_a = wire(function(msg) pb:receive(msg) end)
  local send_b, log_b = wire(function(msg) pa:receive(msg) end)
  a = a or {}
  b = b or {}
  a.codec, a.send = codec, send_a
  b.codec, b.send = codec, send_b
  pa, pb = rpc.new(a), rpc.new(b)
  return pa, pb, log_a, log_b
end

-- One peer and a scripted other side: what the peer sends lands in `sent`,
-- the spec answers with `peer:receive(...)` itself.
local function lone(codec, opts)
  local sent = {}
  opts = opts or {}
  opts.codec = codec
  opts.send = function(msg)
    sent[#sent + 1] = json.decode(json.encode(msg))
    return true
  end
  return rpc.new(opts), sent
end

-- Runs `fn` in a task and returns the task (requests wait inside it).
local function go(fn, ...)
  return claude.spawn(fn, ...)
end

-- Lets the loop turn until `cond()` holds (messages are delivered a turn later).
local function settle(cond)
  for _ = 1, 200 do
    if cond() then return end
    claude.sleep(0)
  end
  error("the condition never held", 2)
end

describe("rpc codecs", function()
  before_each(harness.before)
  after_each(harness.after)

  local null = json.null
  -- message in -> what decode makes of it
  local jsonrpc_rows = {
    { { jsonrpc = "2.0", id = 1, method = "tools/list" }, { "request", 1, "tools/list" } },
    { { jsonrpc = "2.0", id = "a", method = "m", params = { x = 1 } },
      { "request", "a", "m", { x = 1 } } },
    { { jsonrpc = "2.0", method = "notifications/initialized" },
      { "notification", "notifications/initialized" } },
    { { jsonrpc = "2.0", method = "n", id = null }, { "notification", "n" } },
    { { jsonrpc = "2.0", method = "notifications/cancelled", params = { requestId = 7,
      reason = "user" } }, { "cancel", 7, "user" } },
    { { jsonrpc = "2.0", id = 3, result = { ok = true } }, { "result", 3, { ok = true } } },
    { { jsonrpc = "2.0", id = 4, error = { code = -32602, message = "bad", data = 9 } },
      { "error", 4, { code = -32602, message = "bad", data = 9 } } },
    { { jsonrpc = "2.0", id = 5, error = "text" }, { "error", 5, { message = "text" } } },
    { { jsonrpc = "2.0", id = 6, method = 12 }, { "invalid", 6, "'method' must be a string" } },
    { { jsonrpc = "2.0" }, { "invalid", nil, "neither a request, a notification nor a response" } },
    { 42, { "invalid", nil, "a JSON-RPC message must be an object, got a JSON number" } },
  }
  for i, row in ipairs(jsonrpc_rows) do
    it("JSON-RPC decodes row " .. i, function()
      local got = table.pack(rpc.jsonrpc.decode(row[1]))
      assert.same(row[2], { table.unpack(got, 1, got.n) })
    end)
  end

  it("JSON-RPC builds requests, notifications, answers and cancellations", function()
    local c = rpc.jsonrpc
    assert.same({ jsonrpc = "2.0", id = 1, method = "m", params = { a = 1 } },
      c.request(1, "m", { a = 1 }))
    assert.same({ jsonrpc = "2.0", method = "n" }, c.notification("n"))
    assert.same({ jsonrpc = "2.0", id = 2, result = { x = 1 } }, c.result(2, { x = 1 }))
    assert.same({ jsonrpc = "2.0", id = 3, error = { code = -32601, message = "no" } },
      c.error(3, -32601, "no"))
    assert.equal(null, c.error(nil, -32600, "bad").id)
    assert.same({ jsonrpc = "2.0", method = "notifications/cancelled",
      params = { requestId = 4, reason = "why" } }, c.cancel(4, "why"))
    assert.equal(1, c.new_id(1))
  end)

  local control_rows = {
    { { type = "control_request", request_id = "r1", request = { subtype = "can_use_tool",
      tool_name = "Bash" } }, { "request", "r1", "can_use_tool",
      { subtype = "can_use_tool", tool_name = "Bash" } } },
    { { type = "control_request", request_id = "r2" }, { "request", "r2" } },
    { { type = "control_response", response = { subtype = "success", request_id = "r3",
      response = { a = 1 } } }, { "result", "r3", { a = 1 } } },
    { { type = "control_response", response = { subtype = "success", request_id = "r4" } },
      { "result", "r4", {} } },
    { { type = "control_response", response = { subtype = "success", request_id = "r5",
      response = null } }, { "result", "r5", {} } },
    { { type = "control_cancel_request", request_id = "r6" }, { "cancel", "r6" } },
    { { type = "control_response" },
      { "invalid", nil, "a control_response without a response" } },
    { { type = "assistant" }, {} },
  }
  for i, row in ipairs(control_rows) do
    it("the control protocol decodes row " .. i, function()
      local got = table.pack(rpc.control.decode(row[1]))
      assert.same(row[2], { table.unpack(got, 1, got.n) })
    end)
  end

  it("the control protocol keeps an error answer whole", function()
    local r = { subtype = "error", request_id = "r7", error = "nope" }
    local what, id, fields = rpc.control.decode({ type = "control_response", response = r })
    assert.same({ "error", "r7", "nope" }, { what, id, fields.message })
    assert.equal(r, fields.response)
  end)

  it("the control protocol builds requests without touching the caller's params", function()
    local c = rpc.control
    local params = { mode = "plan", subtype = "ignored" }
    assert.same({ type = "control_request", request_id = "x",
      request = { subtype = "set_permission_mode", mode = "plan" } },
      c.request("x", "set_permission_mode", params))
    assert.same({ mode = "plan", subtype = "ignored" }, params)
    assert.same({ type = "control_response", response = { subtype = "success",
      request_id = "x", response = { behavior = "allow" } } },
      c.result("x", { behavior = "allow" }))
    assert.same({ type = "control_response", response = { subtype = "error",
      request_id = "x", error = "boom" } }, c.error("x", -32603, "boom"))
    assert.same({ type = "control_cancel_request", request_id = "x" }, c.cancel("x"))
    assert.matches("^req_1_%x%x%x%x%x%x%x%x$", c.new_id(1))
    assert.is_nil(c.notification)
  end)
end)

describe("an rpc peer", function()
  before_each(harness.before)
  after_each(harness.after)

  it("raises at the caller's line for bad options, naming the field", function()
    local cases = {
      { nil, "bad argument #1 to 'new' %(table expected, got nil%)" },
      { {}, "bad field 'codec' to 'new' %(table expected, got nil%)" },
      { { codec = { request = true } },
        "bad field 'codec' to 'new' %(function 'new_id' missing%)" },
      { { codec = rpc.jsonrpc }, "bad field 'send' to 'new' %(function expected, got nil%)" },
      { { codec = rpc.jsonrpc, send = print, handlers = 1 },
        "bad field 'handlers' to 'new' %(table expected, got number%)" },
      { { codec = rpc.jsonrpc, send = print, on_cancel = 1 },
        "bad field 'on_cancel' to 'new' %(function expected, got number%)" },
      { { codec = rpc.jsonrpc, send = print, timeout = -1 },
        "bad field 'timeout' to 'new' %(non%-negative number or false expected, got %-1%)" },
    }
    for _, case in ipairs(cases) do
      local ok, err = pcall(function()
        local peer = rpc.new(case[1]) -- not a tail call: the error names this line
        return peer
      end)
      assert.is_false(ok)
      assert.matches("rpc_spec.lua:%d+: " .. case[2], err)
    end
  end)

  it("raises at the caller's line for a bad method, timeout or callback", function()
    local a = lone(rpc.jsonrpc)
    local cases = {
      { function() a:request(nil) end,
        "bad argument #1 to 'request' %(string expected, got nil%)" },
      { function() a:request("m", nil, -1) end,
        "bad argument #3 to 'request' %(non%-negative number or false expected, got %-1%)" },
      { function() a:notify(7) end,
        "bad argument #1 to 'notify' %(string expected, got number%)" },
      { function() a:start("m", nil, "cb") end,
        "bad argument #3 to 'start' %(function expected, got string%)" },
    }
    for _, case in ipairs(cases) do
      local ok, err = pcall(case[1])
      assert.is_false(ok)
      assert.matches("rpc_spec.lua:%d+: " .. case[2], err)
    end
    assert.equal(0, a:pending_count())
  end)

  it("cancels one outbound request by its id: the wait returns a cancelled error", function()
    local a, sent = lone(rpc.jsonrpc)
    local got
    local id = assert(a:start("m", { x = 1 }, function(r, err) got = { r, err } end))
    assert.equal(1, id)
    local t = go(function() return a:request("n", nil, T) end)
    settle(function() return #sent == 2 end)
    assert.is_true(a:cancel(id, "changed my mind"))
    assert.is_false(a:cancel(id))
    assert.is_nil(got[1])
    assert.is_true(errors.is(got[2], "cancelled"))
    assert.equal("changed my mind", got[2].message)
    assert.is_true(a:cancel(sent[2].id))
    local r, err, kind = t:wait(T)
    assert.is_nil(r)
    assert.equal("cancelled", kind)
    assert.equal("request 'n' cancelled", err.message)
    assert.same({ requestId = 1, reason = "changed my mind" }, sent[3].params)
    assert.same({ requestId = 2, reason = "request 'n' cancelled" }, sent[4].params)
    assert.equal(0, a:pending_count())
  end)

  it("numbers its requests and routes each answer to its request", function()
    local a, b, log_a = pair(rpc.jsonrpc, nil, { handlers = {
      add = function(p) return { sum = p.a + p.b } end,
      echo = function(p, ctx) return { p = p, id = ctx.id, method = ctx.method,
        same_peer = ctx.peer ~= nil, who = ctx.who } end,
    }, context = { who = "b" } })
    local t = go(function()
      return a:request("add", { a = 2, b = 3 }, T), a:request("echo", { 1 }, T)
    end)
    local sum, echo = t:wait(T)
    assert.same({ sum = 5 }, sum)
    assert.same({ p = { 1 }, id = 2, method = "echo", same_peer = true, who = "b" }, echo)
    assert.same({ 1, 2 }, { log_a[1].id, log_a[2].id })
    assert.equal(0, a:pending_count())
    assert.is_false(b.error)
  end)

  it("matches answers that come out of order", function()
    local a, sent = lone(rpc.jsonrpc)
    local results = {}
    local tasks = {}
    for i = 1, 3 do
      tasks[i] = go(function() results[i] = a:request("m" .. i, nil, T) end)
    end
    settle(function() return #sent == 3 end)
    for i = 3, 1, -1 do
      assert.is_true(a:receive { jsonrpc = "2.0", id = sent[i].id, result = { n = i } })
    end
    for i = 1, 3 do tasks[i]:wait(T) end
    assert.same({ { n = 1 }, { n = 2 }, { n = 3 } }, results)
  end)

  it("drops answers to ids nobody waits for, and goes on", function()
    local a, sent = lone(rpc.jsonrpc)
    assert.is_true(a:receive { jsonrpc = "2.0", id = 99, result = {} })
    assert.is_true(a:receive { jsonrpc = "2.0", id = 98, error = { code = 1, message = "x" } })
    local t = go(function() return a:request("m", nil, T) end)
    settle(function() return #sent == 1 end)
    a:receive { jsonrpc = "2.0", id = sent[1].id, result = "ok" }
    assert.equal("ok", t:wait(T))
  end)

  it("times out a request, tells the other side, and drops the late answer", function()
    local a, sent = lone(rpc.jsonrpc)
    local t = go(function() return a:request("slow", nil, 0.05) end)
    local ok, r, err, kind = t:join(T)
    assert.is_true(ok)
    assert.is_nil(r)
    assert.equal("timeout", kind)
    assert.is_true(errors.is(err, "timeout"))
    assert.equal("request 'slow' timed out after 0.05 s", err.message)
    assert.same({ jsonrpc = "2.0", method = "notifications/cancelled",
      params = { requestId = sent[1].id, reason = err.message } }, sent[2])
    assert.is_true(a:receive { jsonrpc = "2.0", id = sent[1].id, result = "late" })
    assert.equal(0, a:pending_count())
  end)

  -- request_written keeps its deadline in the pending set (core.pending: one timer for all,
  -- armed for the earliest), also for requests lapped by the ring into its hash
  it("times out written requests at their own deadlines, and only the unanswered", function()
    local a, sent = lone(rpc.jsonrpc)
    local function write(id, m) return a.send { jsonrpc = "2.0", id = id, method = m } end
    local slow = go(function()
      return a:request_written({ method = "slow", write = write }, 0.3, "slow")
    end)
    local tasks = {}
    for i = 1, 150 do -- the ring comes round: "slow" goes to the hash
      local timeout = i % 2 == 0 and 0.05 or 5
      tasks[i] = go(function()
        return a:request_written({ method = "m", write = write }, timeout, "m")
      end)
    end
    for i = 1, 150, 2 do -- the odd ones (5 s) answered at once
      assert.is_true(a:receive { jsonrpc = "2.0", id = sent[i + 1].id, result = i })
    end
    for i = 1, 150 do
      local ok, r, err, kind = tasks[i]:join(T)
      assert.is_true(ok)
      if i % 2 == 1 then
        assert.equal(i, r)
      else
        assert.is_nil(r)
        assert.equal("timeout", kind)
        assert.equal("request 'm' timed out after 0.05 s", err.message)
      end
    end
    assert.is_false(slow:done()) -- its deadline is later
    local ok, r, err = slow:join(T)
    assert.is_true(ok)
    assert.is_nil(r)
    assert.equal("request 'slow' timed out after 0.3 s", err.message)
    assert.equal(0, a:pending_count())
    a:close() -- (its set's timer goes with it)
  end)

  it("lets the loop end while no written request waits with a deadline", function()
    local a, sent = lone(rpc.jsonrpc)
    local function write(id, m) return a.send { jsonrpc = "2.0", id = id, method = m } end
    local before = claude.core.alive() -- (the host's own handles may hold it: then true)
    local t = go(function() return a:request_written({ method = "m", write = write }, 5, "m") end)
    assert.is_true(claude.core.alive()) -- the deadline holds the loop while it waits
    assert.is_true(a:receive { jsonrpc = "2.0", id = sent[1].id, result = 1 })
    assert.same({ true, 1 }, { t:join(T) })
    -- nothing else is pending: the set's timer (armed for 5 s) does not hold the loop
    assert.equal(before, claude.core.alive())
    a:close()
  end)

  it("sends control_cancel_request for a control request that timed out", function()
    local a, sent = lone(rpc.control)
    local t = go(function() return a:request("mcp_status", nil, 0.05) end)
    local _, _, err = t:join(T)
    assert.equal("control request 'mcp_status' timed out after 0.05 s", err.message)
    assert.same({ type = "control_cancel_request", request_id = sent[1].request_id }, sent[2])
  end)

  it("uses its own timeout when the request gives none, and none with false", function()
    local a, sent = lone(rpc.jsonrpc, { timeout = 0.05 })
    local t = go(function() return a:request("m") end)
    local _, _, err = t:join(T)
    assert.is_true(errors.is(err, "timeout"))
    local u = go(function() return a:request("n", nil, false) end)
    claude.sleep(0.1)
    assert.is_false(u:done())
    a:receive { jsonrpc = "2.0", id = sent[3].id, result = 1 }
    assert.equal(1, u:wait(T))
  end)

  it("calls on_cancel in place of the codec's cancel message", function()
    local seen
    local a, sent = lone(rpc.jsonrpc, { on_cancel = function(id, method, err)
      seen = { id, method, err.kind }
    end })
    local t = go(function() return a:request("initialize", nil, 0.05) end)
    t:join(T)
    assert.same({ 1, "initialize", "timeout" }, seen)
    assert.equal(1, #sent) -- nothing else was sent
  end)

  it("cancels both ways: the waiting task, and the handler's task on the other side", function()
    local started, handler_err, handler_ctx = false, nil, nil
    local a, b, log_a, log_b = pair(rpc.jsonrpc, nil, { handlers = {
      slow = function(_, ctx)
        started = true
        handler_ctx = ctx
        local ok, err = pcall(claude.sleep, 30)
        handler_err = not ok and err
        error(err, 0)
      end,
    } })
    local t = go(function() return a:request("slow", nil, T) end)
    settle(function() return started end)
    assert.is_true(t:cancel("user stopped it"))
    local ok, err = t:join(T)
    assert.is_false(ok)
    assert.is_true(errors.is(err, "cancelled"))
    settle(function() return handler_err ~= nil end)
    assert.is_true(errors.is(handler_err, "cancelled"))
    assert.equal("user stopped it", handler_err.message)
    assert.is_true(handler_ctx.cancelled)
    assert.same({ requestId = 1, reason = "user stopped it" }, log_a[2].params)
    claude.sleep(0.01)
    assert.equal(0, #log_b) -- a cancelled request is not answered
    assert.equal(0, a:pending_count())
    assert.is_nil(next(b.inbound))
  end)

  it("answers a handler that raises with an error, and goes on", function()
    local a = pair(rpc.jsonrpc, nil, { handlers = {
      broken = function() error("it broke") end,
      coded = function() error(errors.new("protocol", "bad params", { code = -32602,
        data = { field = "x" } })) end,
      fine = function() return "fine" end,
    } })
    local t = go(function()
      local r1 = table.pack(a:request("broken", nil, T))
      local r2 = table.pack(a:request("coded", nil, T))
      return r1, r2, a:request("fine", nil, T)
    end)
    local r1, r2, fine = t:wait(T)
    assert.is_nil(r1[1])
    assert.equal("remote", r1[3])
    assert.equal(rpc.INTERNAL_ERROR, r1[2].code)
    assert.equal("it broke", r1[2].remote_message)
    assert.equal("request 'broken' failed: it broke (-32603)", r1[2].message)
    assert.same({ "remote", -32602, "bad params", { field = "x" } },
      { r2[2].kind, r2[2].code, r2[2].remote_message, r2[2].data })
    assert.equal("fine", fine)
  end)

  it("answers an unknown method with the codec's error", function()
    local a = pair(rpc.jsonrpc)
    local t = go(function() return a:request("nope", nil, T) end)
    local _, _, err = t:join(T)
    assert.equal(rpc.METHOD_NOT_FOUND, err.code)
    assert.equal("Method not found: nope", err.remote_message)
    local c = pair(rpc.control)
    local u = go(function() return c:request("get_context_usage", nil, T) end)
    local _, _, cerr = u:join(T)
    assert.equal("control", cerr.kind)
    assert.equal("control request 'get_context_usage' failed: Unsupported control request "
      .. "subtype: get_context_usage", cerr.message)
    assert.equal("error", cerr.response.subtype)
  end)

  it("runs the control protocol both ways, handlers getting the whole request", function()
    local a, _, log_a, log_b = pair(rpc.control, nil, { handlers = {
      can_use_tool = function(req) return { behavior = "allow", tool = req.tool_name } end,
    } })
    local t = go(function() return a:request("can_use_tool", { tool_name = "Bash" }, T) end)
    assert.same({ behavior = "allow", tool = "Bash" }, t:wait(T))
    assert.equal("control_request", log_a[1].type)
    assert.same({ subtype = "can_use_tool", tool_name = "Bash" }, log_a[1].request)
    assert.same({ subtype = "success", request_id = log_a[1].request_id,
      response = { behavior = "allow", tool = "Bash" } }, log_b[1].response)
  end)

  it("lets a handler make its own requests to the other side while it runs", function()
    local a, b
    a, b = pair(rpc.jsonrpc, { handlers = {
      ["sampling/createMessage"] = function(p) return { text = "sampled " .. p.prompt } end,
    } }, { handlers = {
      ["tools/call"] = function(p, ctx)
        local r = assert(ctx.peer:request("sampling/createMessage", { prompt = p.name }, T))
        return { content = r.text }
      end,
    } })
    local t = go(function() return a:request("tools/call", { name = "x" }, T) end)
    assert.same({ content = "sampled x" }, t:wait(T))
    assert.equal(0, b:pending_count())
  end)

  it("carries notifications both ways", function()
    local got_a, got_b = {}, {}
    local a, b = pair(rpc.jsonrpc,
      { on_notification = function(m, p) got_a[#got_a + 1] = { m, p } end },
      { on_notification = function(m, p) got_b[#got_b + 1] = { m, p } end })
    assert.is_true(a:notify("notifications/progress", { progress = 1 }))
    assert.is_true(b:notify("notifications/tools/list_changed"))
    settle(function() return #got_a == 1 and #got_b == 1 end)
    assert.same({ "notifications/progress", { progress = 1 } }, got_b[1])
    assert.same({ "notifications/tools/list_changed" }, got_a[1])
  end)

  it("sends a notification of a codec without them as a request nobody waits for", function()
    local a, sent = lone(rpc.control)
    assert.is_true(a:notify("interrupt"))
    assert.equal("control_request", sent[1].type)
    assert.same({ subtype = "interrupt" }, sent[1].request)
    assert.equal(0, a:pending_count())
    assert.is_true(a:receive { type = "control_response", response = { subtype = "success",
      request_id = sent[1].request_id } })
  end)

  it("fails every pending wait at once when the other side dies, with what it left", function()
    local a = lone(rpc.jsonrpc)
    local tasks = {}
    for i = 1, 3 do tasks[i] = go(function() return a:request("m", nil, 30) end) end
    settle(function() return a:pending_count() == 3 end)
    local died = errors.new("process", "the server exited with code 3",
      { exit_code = 3, stderr_tail = "panic: out of cheese" })
    a:fail(died)
    for i = 1, 3 do
      local ok, r, err, kind = tasks[i]:join(T)
      assert.is_true(ok)
      assert.is_nil(r)
      assert.equal(died, err)
      assert.equal("process", kind)
    end
    assert.equal(3, died.exit_code)
    assert.matches("panic: out of cheese", tostring(died))
    -- later requests and notifications fail at once, with the same error
    local r, err, kind = go(function() return a:request("m", nil, 30) end):wait(T)
    assert.same({ nil, died, "process" }, { r, err, kind })
    assert.same({ nil, died, "process" }, { a:notify("n") })
    a:fail(errors.new("closed", "second")) -- the first error stays
    assert.equal(died, a.error)
  end)

  it("on close, cancels running handlers (no answer) and fails pending waits", function()
    local handler_err
    local a, b, _, log_b = pair(rpc.jsonrpc, nil, { handlers = {
      slow = function()
        local ok, err = pcall(claude.sleep, 30)
        handler_err = not ok and err
        error(err, 0)
      end,
    } })
    local t = go(function() return a:request("slow", nil, T) end)
    settle(function() return next(b.inbound) ~= nil end)
    b:close("server shutting down")
    assert.is_true(errors.is(handler_err, "cancelled"))
    assert.equal("server shutting down", handler_err.message)
    claude.sleep(0.01)
    assert.equal(0, #log_b)
    a:close()
    local _, r, err, kind = t:join(T)
    assert.is_nil(r)
    assert.equal("closed", kind)
    assert.is_true(errors.is(err, "closed"))
    -- a closed peer ignores requests and refuses new ones
    assert.is_true(b:receive { jsonrpc = "2.0", id = 1, method = "slow" })
    assert.is_nil(next(b.inbound))
    assert.equal("closed", select(3, b:notify("n")))
  end)

  it("returns nil, err (kind connection) when sending fails", function()
    local a = rpc.new { codec = rpc.jsonrpc,
      send = function() return nil, "EPIPE: broken pipe" end }
    local r, err, kind = go(function() return a:request("m", nil, T) end):wait(T)
    assert.is_nil(r)
    assert.equal("connection", kind)
    assert.equal("EPIPE: broken pipe", err.message)
    assert.equal(0, a:pending_count())
    local n, nerr = a:notify("n")
    assert.is_nil(n)
    assert.is_true(errors.is(nerr, "connection"))
  end)

  it("answers an invalid request with an error and reports what is not a message", function()
    local a, sent = lone(rpc.jsonrpc)
    local ok, why = a:receive { jsonrpc = "2.0", id = 4, method = 12 }
    assert.is_false(ok)
    assert.equal("'method' must be a string", why)
    assert.same({ jsonrpc = "2.0", id = 4, error = { code = rpc.INVALID_REQUEST,
      message = "'method' must be a string" } }, sent[1])
    assert.same({ false, "a JSON-RPC message must be an object, got a JSON string" },
      { a:receive("hello") })
    assert.equal(1, #sent)
    local c = lone(rpc.control)
    assert.same({ false, "not a message of this protocol" }, { c:receive { type = "assistant" } })
  end)

  it("is answered from outside a handler with respond and respond_error", function()
    local a, sent = lone(rpc.jsonrpc)
    assert.is_true(a:respond(5, { ok = true }))
    assert.is_true(a:respond(6))
    assert.is_true(a:respond_error(7, -32000, "no", { why = 1 }))
    assert.same({ jsonrpc = "2.0", id = 5, result = { ok = true } }, sent[1])
    assert.is_true(json.is_object(json.decode(json.encode(sent[2])).result)
      or next(sent[2].result) == nil)
    assert.same({ code = -32000, message = "no", data = { why = 1 } }, sent[3].error)
    assert.matches("^claude.rpc.Peer %(request, peer, 0 pending%)$", tostring(a))
  end)
end)
