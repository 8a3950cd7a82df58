-- examples/haproxy/claude.lua -- claude inside HAProxy (Debian 12's haproxy 2.6, Lua 5.3;
-- docs/embedding.md). Loaded with `lua-load` (haproxy.cfg beside this file):
--   /tool?name=upper&text=...   calls a tool of an MCP server (`claudelua mcp tools.lua`)
--   /ask?q=...                  runs a claude.query (demo mode: CLAUDELUA_DEMO=1 in haproxy's env)
-- claude's loop runs in a task of HAProxy's that steps it (`claude.step(0)` never waits). A
-- service starts its work as a claude task and naps (`core.msleep`) until the task is done:
-- HAProxy's own loop never waits on claude. A waiting call made straight from a service
-- (iterating `claude.query`, a client's `call_tool`) would run claude's loop inside it and
-- stop the whole process until it returned.
-- Environment: CLAUDE_HAPROXY_TOOLS (the tools file; default: tools.lua beside this file),
-- CLAUDELUA (the claudelua that serves it; default: claudelua on PATH).
local claude = require "claude"
local core = rawget(_G, "core") -- HAProxy's API

-- demo mode (docs/demo.md), offline: the claudelua host starts it from CLAUDELUA_DEMO, a
-- script in another host starts it itself
if (os.getenv("CLAUDELUA_DEMO") or "") ~= "" then
  local ok, err = require("claude.testing.demo").start { quiet = true }
  if not ok then error(tostring(err), 0) end
end

local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local TOOLS = os.getenv("CLAUDE_HAPROXY_TOOLS") or (here .. "tools.lua")
local CLAUDELUA = os.getenv("CLAUDELUA") or "claudelua"

-- The tasks services wait on: while one runs, the loop is stepped every millisecond.
local awaited = setmetatable({}, { __mode = "k" })
local function busy()
  for task in pairs(awaited) do
    if not task:done() then return true end
    awaited[task] = nil
  end
  return false
end

core.register_task(function()
  while true do
    claude.step(0)
    core.msleep(busy() and 1 or 20) -- idle: 50 steps a second, each a few microseconds
  end
end)

-- fn(...) as a claude task, waited on without blocking HAProxy: true, results | false, err.
local function await(fn, ...)
  local task = claude.spawn(fn, ...)
  awaited[task] = true
  while not task:done() do core.msleep(1) end
  return task:join()
end

-- The MCP client, connected once, by the first call that needs it (inside a task).
local connecting
local function client()
  connecting = connecting or claude.spawn(function()
    return assert(claude.mcp.connect { command = CLAUDELUA, args = { "mcp", TOOLS } })
  end)
  local ok, c = connecting:join()
  if not ok then connecting = nil; error(c, 0) end
  return c
end

local function reply(applet, status, body)
  applet:set_status(status)
  applet:add_header("content-type", "text/plain")
  applet:add_header("content-length", tostring(#body))
  applet:start_response()
  applet:send(body)
end

local function unescape(s)
  return (s:gsub("+", " "):gsub("%%(%x%x)", function(h) return string.char(tonumber(h, 16)) end))
end

-- /tool?name=upper&text=abc: the tool `name`, the other parameters its arguments
core.register_service("claude_tool", "http", function(applet)
  local args = {}
  for k, v in (applet.qs or ""):gmatch("([^&=]+)=([^&]*)") do args[k] = unescape(v) end
  local name = args.name or "upper"
  args.name = nil
  local ok, result = await(function()
    local r = assert(client():call_tool(name, args))
    return r.content[1].text
  end)
  reply(applet, ok and 200 or 500, tostring(result))
end)

core.register_service("claude_ask", "http", function(applet)
  local ok, result = await(function(prompt)
    local server = claude.server("haproxy", {
      claude.tool("proxies", "The frontends and backends of this HAProxy", function()
        local function names(proxies)
          local list = {}
          for name in pairs(proxies) do list[#list + 1] = name end
          table.sort(list)
          return #list > 0 and table.concat(list, ", ") or "(none)"
        end
        return "frontends: " .. names(core.frontends) .. "; backends: " .. names(core.backends)
      end),
    })
    for msg in claude.query(prompt, { mcp_servers = { haproxy = server },
                                      allowed_tools = server:tool_names(), max_turns = 4 }) do
      if msg.type == "result" then return claude.text(msg) or "" end
    end
  end, unescape((applet.qs or ""):match("q=([^&]*)") or "hello"))
  reply(applet, ok and 200 or 500, tostring(result))
end)

-- a plain service, no claude: it answers while the others wait
core.register_service("plain", "http", function(applet) reply(applet, 200, "plain\n") end)
