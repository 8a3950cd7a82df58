-- claude.mcp against the real @modelcontextprotocol/server-everything
-- (pinned in package.json), over stdio, Streamable HTTP and the HTTP+SSE
-- transport of 2024-11-05: the same cases on every transport.
local claude = require "claude"
local json = require "claude.json"
local process = require "claude.process"
local harness = require "support.harness"
local http = require "claude.http.client"

local T = 20
local NODE = harness.root .. "/node_modules/.bin/node"
local EVERYTHING = harness.root .. "/node_modules/@modelcontextprotocol/server-everything/dist/"
  .. "index.js"

local function text(r) return r.content[1].text end

-- Starts server-everything over HTTP on a free port; returns the process and its URL. The
-- port comes from below Linux's ephemeral range (32768 and up), where no connection of this
-- machine holds one; and the server says "listening" before its listen can still fail, so
-- the port is tried before it is used.
local function http_server(mode)
  for _ = 1, 5 do
    local port = math.random(20000, 32000)
    local proc = assert(process.spawn { NODE, args = { EVERYTHING, mode or "streamableHttp" },
      env = { PORT = port }, stderr = "lines", stdout = "ignore" })
    while true do
      local line = proc:read_stderr_line(T)
      if not line then break end
      if line:find("listening on port") or line:find("running on port") then
        local url = string.format("http://127.0.0.1:%d/%s", port, mode == "sse" and "sse" or "mcp")
        local _, err = http.request { url = string.format("http://127.0.0.1:%d/", port),
          timeout = T }
        if not err or err.kind == "http" then return proc, url end -- any HTTP answer will do
        break
      end
      if line:find("already in use") then break end
    end
    proc:close(1)
  end
  error("server-everything did not start")
end

local transports = {
  stdio = function(extra)
    local o = { command = NODE, args = { EVERYTHING, "stdio" }, timeout = T }
    for k, v in pairs(extra or {}) do o[k] = v end
    return o, nil
  end,
  streamable_http = function(extra)
    local proc, url = http_server()
    local o = { url = url, timeout = T }
    for k, v in pairs(extra or {}) do o[k] = v end
    return o, proc
  end,
  -- the HTTP+SSE transport of 2024-11-05, reached by falling back from Streamable HTTP
  sse = function(extra)
    local proc, url = http_server("sse")
    local o = { url = url, timeout = T }
    for k, v in pairs(extra or {}) do o[k] = v end
    return o, proc
  end,
}

for _, name in ipairs { "stdio", "streamable_http", "sse" } do
  local options = transports[name]

  describe("claude.mcp with server-everything over " .. name, function()
    local server_proc
    before_each(harness.before)
    after_each(function()
      if server_proc then server_proc:close(1) end
      server_proc = nil
      harness.after()
    end)

    local function connect(extra)
      local o
      o, server_proc = options(extra)
      return assert(claude.mcp.connect(o))
    end

    it("lists and calls tools, reads resources and a template, gets prompts", function()
      local c <close> = connect()
      assert.equal("connected", c.state)
      assert.equal(name == "streamable_http" and "http" or name, c.transport_kind)
      assert.equal("mcp-servers/everything", c.server_info.name)
      -- a server of the legacy era: the probe fell back to initialize
      assert.equal("legacy", c.era)
      assert.is_string(c.instructions)
      local names = {}
      for _, t in ipairs(assert(c:list_tools())) do names[t.name] = true end
      assert.is_true(names.echo)
      assert.is_true(names["get-sum"])
      assert.equal("The sum of 2 and 3 is 5.", text(assert(c:call_tool("get-sum",
        { a = 2, b = 3 }))))
      assert.equal("Echo: hi", text(assert(c:call_tool("echo", { message = "hi" }))))
      local resources = assert(c:list_resources())
      assert.is_true(#resources > 0)
      local r = assert(c:read_resource(resources[1].uri))
      assert.equal(resources[1].uri, r.contents[1].uri)
      local templates = assert(c:list_resource_templates())
      assert.is_true(#templates > 0)
      r = assert(c:read_resource("demo://resource/dynamic/text/7"))
      assert.matches("7", r.contents[1].text)
      local prompts = {}
      for _, p in ipairs(assert(c:list_prompts())) do prompts[p.name] = true end
      assert.is_true(prompts["args-prompt"])
      local p = assert(c:get_prompt("args-prompt", { city = "Lyon" }))
      assert.matches("Lyon", json.encode(p))
      local completion = assert(c:complete({ type = "ref/prompt", name = "completable-prompt" },
        { name = "department", value = "Eng" }))
      assert.same({ "Engineering" }, completion.values)
      assert.is_true(assert(c:ping()))
      assert.is_true(c:close())
      assert.equal("disconnected", c.state)
    end)

    it("gives an unknown tool's error as a result or a remote error", function()
      local c <close> = connect()
      local r, err, kind = c:call_tool("no-such-tool", {})
      if r then
        assert.is_true(r.isError)
      else
        assert.equal("remote", kind)
        assert.is_number(err.code)
      end
    end)

    it("delivers progress and notifications, sets the log level, subscribes", function()
      local notes = {}
      local got_log = require("claude.async").event()
      local c <close> = connect { on_notification = function(method, params)
        notes[#notes + 1] = method
        if method == "notifications/message" then got_log:set() end
        return params
      end }
      local steps = {}
      local r = assert(c:call_tool("trigger-long-running-operation", { duration = 0.2,
        steps = 2 }, { on_progress = function(p, total) steps[#steps + 1] = { p, total } end }))
      assert.matches("completed", text(r))
      assert.same({ { 1, 2 }, { 2, 2 } }, steps)
      assert.is_true(assert(c:set_log_level("debug")))
      assert(c:call_tool("toggle-simulated-logging", {}))
      assert.is_true(got_log:wait(T))
      assert.is_true(assert(c:subscribe("demo://resource/static/document/architecture.md")))
      assert.is_true(assert(c:unsubscribe("demo://resource/static/document/architecture.md")))
      local seen = {}
      for _, m in ipairs(notes) do seen[m] = true end
      assert.is_true(seen["notifications/message"])
    end)

    it("answers the server's sampling request and its elicitation", function()
      local c <close> = connect {
        on_sampling = function(req)
          return { role = "assistant", model = "lua", stopReason = "endTurn",
            content = { type = "text", text = "sampled: " .. req.messages[1].content.text } }
        end,
        on_elicitation = function(req)
          assert(req.requestedSchema.properties.name)
          return { action = "accept", content = { name = "Ada" } }
        end,
      }
      local r = assert(c:call_tool("trigger-sampling-request", { prompt = "ping" }))
      assert.matches("sampled: ", json.encode(r), 1, true)
      r = assert(c:call_tool("trigger-elicitation-request", {}))
      assert.matches("User provided the requested information", json.encode(r), 1, true)
      assert.matches("Ada", json.encode(r), 1, true)
    end)

    it("cancels a long call on timeout and goes on", function()
      local c <close> = connect()
      local r, _, kind = c:call_tool("trigger-long-running-operation",
        { duration = 30, steps = 30 }, { timeout = 0.3 })
      assert.is_nil(r)
      assert.equal("timeout", kind)
      assert.equal("Echo: on", text(assert(c:call_tool("echo", { message = "on" }))))
    end)

    it("runs 32 calls at once on one connection", function()
      local c <close> = connect()
      local tasks = {}
      for i = 1, 32 do
        tasks[i] = claude.spawn(function()
          return c:call_tool("get-sum", { a = i, b = 1 })
        end)
      end
      for i = 1, 32 do
        local r = assert(select(2, tasks[i]:join(T)))
        assert.equal(string.format("The sum of %d and 1 is %d.", i, i + 1), text(r))
      end
    end)

    it("serves the client's tools through as_server, with a guard", function()
      local c <close> = connect()
      local calls = {}
      local s = assert(c:as_server { name = "ev", filter = { "get-sum", "echo" },
        guard = function(tool, args)
          if tool == "echo" and args.message == "secret" then return nil, "refused" end
          return args
        end,
        on_call = function(info) calls[#calls + 1] = info.tool end })
      assert.equal(2, #s.tool_list)
      local router = require("claude.mcp.router").new { ev = s }
      local r = router:handle("ev", { jsonrpc = "2.0", id = 1, method = "tools/call",
        params = { name = "get-sum", arguments = { a = 4, b = 5 } } })
      assert.equal("The sum of 4 and 5 is 9.", text(r.result))
      r = router:handle("ev", { jsonrpc = "2.0", id = 2, method = "tools/call",
        params = { name = "echo", arguments = { message = "secret" } } })
      assert.is_true(r.result.isError)
      assert.equal("refused", text(r.result))
      assert.same({ "get-sum", "echo" }, calls)
    end)
  end)
end
