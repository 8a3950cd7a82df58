-- claude inside Debian's own haproxy 2.6, which links Lua 5.3: examples/haproxy/claude.lua
-- loaded with lua-load and the module of 5.3 hosts (build/lua5.3/claude.so). A task of
-- HAProxy's steps claude's loop; services wait on claude tasks. One endpoint calls a Lua
-- MCP tool through claude.mcp (a `claudelua mcp` child), another runs a demo-mode
-- claude.query (with an in-process tool that runs inside HAProxy). The process stays
-- idle when nothing happens, a plain endpoint answers while a slow tool call is waiting,
-- and a reload (`-sf`) under traffic loses no request.
local claude = require "claude"
local core = require "claude.core"
local process = require "claude.process"
local http = require "claude.http.client"
local http_server = require "claude.http.server"
local harness = require "support.harness"

local function absolute(path)
  return path:sub(1, 1) == "/" and path or harness.root .. "/" .. path
end
local BUILD = absolute(harness.build)
local MODULE = BUILD .. "/lua5.3/claude.so"
local CLI = os.getenv("CLAUDELUA_CLI")

local function missing()
  if not os.execute("command -v haproxy >/dev/null 2>&1") then
    return "haproxy is not installed (tools/packages.sh lab installs Debian's)"
  end
  local vv = io.popen("haproxy -vv 2>&1"):read("a")
  if not vv:find("Lua version : Lua 5%.3") then
    return "this haproxy does not link Lua 5.3"
  end
  if not io.open(MODULE) then
    return MODULE .. " was not built (no liblua5.3-dev, or a sanitized build)"
  end
  if not (CLI and core.is_executable(CLI)) then
    return "CLAUDELUA_CLI is not set to the claude CLI (demo mode runs it)"
  end
end

local function free_port()
  local srv = assert(http_server.listen { host = "127.0.0.1", port = 0,
    on_request = function(_, res) res:respond(404, {}, "") end })
  local port = srv:port()
  srv:close()
  return port
end

local function config(port)
  return table.concat({
    "global", "  nbthread 1", "  tune.lua.service-timeout 120s",
    "  lua-load " .. harness.root .. "/examples/haproxy/claude.lua",
    "defaults", "  mode http", "  timeout connect 5s", "  timeout client 120s",
    "  timeout server 120s",
    "frontend web", "  bind 127.0.0.1:" .. port,
    "  http-request use-service lua.claude_tool if { path /tool }",
    "  http-request use-service lua.claude_ask if { path /ask }",
    "  http-request use-service lua.plain",
  }, "\n") .. "\n"
end

local function get(url, timeout)
  local resp, err = http.request { url = url, timeout = timeout or 60 }
  if not resp then
    if err and err.kind == "http" then return err.status, err.body end
    return nil, tostring(err)
  end
  return resp.status, resp.body
end

-- CPU seconds (user + system) of a process, from /proc/PID/stat
local function cpu_seconds(pid)
  local f = assert(io.open("/proc/" .. pid .. "/stat"))
  local stat = f:read("a")
  f:close()
  local fields = {}
  for v in stat:match("%) (.*)$"):gmatch("%S+") do fields[#fields + 1] = v end
  local hz = tonumber(io.popen("getconf CLK_TCK"):read("l")) or 100
  return (tonumber(fields[12]) + tonumber(fields[13])) / hz -- utime, stime (fields 14, 15)
end

describe("claude inside Debian's haproxy (Lua 5.3)", function()
  it("serves a tool call and a demo query, idles, never blocks, reloads cleanly",
    harness.task(function()
      local why = missing()
      if why then return pending(why) end
      local dir = harness.tempdir()
      local port = free_port()
      local cfg = dir .. "/haproxy.cfg"
      local f = assert(io.open(cfg, "w"))
      f:write(config(port))
      f:close()
      local env = { LUA_CPATH_5_3 = BUILD .. "/lua5.3/?.so;;", LUA_PATH_5_3 = ";;",
        CLAUDELUA = BUILD .. "/claudelua",
        CLAUDELUA_DEMO = "1", CLAUDELUA_CLI = CLI }
      local function start(extra)
        local args = { "-db", "-f", cfg }
        for _, a in ipairs(extra or {}) do args[#args + 1] = a end
        return assert(process.spawn { "haproxy", args = args, env = env, stderr = "collect",
          stdout = "ignore" })
      end
      local base = "http://127.0.0.1:" .. port
      local function wait_up(proc)
        for _ = 1, 300 do
          if get(base .. "/plain", 2) == 200 then return end
          assert(not proc.finished, "haproxy exited: " .. proc:stderr())
          claude.sleep(0.1)
        end
        error("haproxy did not answer: " .. proc:stderr())
      end
      local lb = start()
      wait_up(lb)

      -- a Lua MCP tool through claude.mcp (the client connects on the first call)
      assert.same({ 200, "HELLO, HAPROXY" },
        { get(base .. "/tool?name=upper&text=hello%2C+haproxy") })

      -- a demo-mode claude.query, whose agent calls a tool that runs inside HAProxy
      local status, body = get(base .. "/ask?q=Which+proxies", 120)
      assert.equal(200, status, body)
      assert.matches("proxies%(%) returned: frontends: web; backends: %(none%)", body)

      -- idle: the stepping task naps 20 ms at a time; the CPU it takes over 3 s, a ratio
      claude.sleep(1)
      local cpu0, t0 = cpu_seconds(lb.pid), core.now()
      claude.sleep(3)
      local ratio = (cpu_seconds(lb.pid) - cpu0) / (core.now() - t0)
      assert.is_true(ratio < 0.02, string.format("idle haproxy used %.1f%% CPU", ratio * 100))

      -- never blocked: a tool call waits on a file while the plain endpoint answers
      local gate = dir .. "/gate"
      local slow = claude.spawn(get, base .. "/tool?name=wait_for&path=" .. gate, 120)
      claude.sleep(0.3)
      for _ = 1, 5 do assert.same({ 200, "plain\n" }, { get(base .. "/plain", 30) }) end
      assert.same({ 200, "HELLO" }, { get(base .. "/tool?name=upper&text=hello", 30) })
      assert.is_false(slow:done()) -- still waiting: the gate is shut
      f = assert(io.open(gate, "w"))
      f:close()
      assert.same({ true, 200, "there: " .. gate }, { slow:join(60) })

      -- a reload under traffic: a new haproxy takes over (-sf), the old one finishes its
      -- requests and exits; no request fails
      local stop, failures, served = false, {}, 0
      local traffic = claude.spawn(function()
        while not stop do
          local s, b = get(base .. "/tool?name=upper&text=x", 60)
          if s == 200 and b == "X" then served = served + 1
          else failures[#failures + 1] = tostring(s) .. " " .. tostring(b) end
        end
      end)
      claude.sleep(0.5)
      local lb2 = start { "-sf", tostring(lb.pid) }
      assert.equal(0, lb:wait(60), lb:stderr())
      claude.sleep(0.5)
      stop = true
      traffic:join(60)
      assert.same({}, failures)
      assert.is_true(served > 0)
      assert.same({ 200, "HELLO" }, { get(base .. "/tool?name=upper&text=hello") })
      lb2:signal("usr1") -- soft stop
      assert.equal(0, lb2:wait(60), lb2:stderr())
      lb:close()
      lb2:close()
    end, 600))
end)
