-- Starts `claudelua mcp --http 127.0.0.1:0 ...` for a spec and returns the process and the URL
-- it serves (read from the line it prints to stderr once it listens).
local async = require "claude.async"
local http = require "claude.http.client"
local json = require "claude.json"
local process = require "claude.process"
local harness = require "support.harness"

local M = {}

--- Spawn the server. `args` go after `--http 127.0.0.1:0` (options, then the tools file);
-- `env`, when given, is added to the environment.
-- @return the process (close it with <close>), the URL of the first server, the stderr lines
function M.start(args, env)
  local lines, ready, url = {}, async.event(), nil
  local argv = { "mcp", "--http", "127.0.0.1:0" }
  for _, a in ipairs(args) do argv[#argv + 1] = a end
  -- harness.claudelua is relative to the root, or absolute (ctest gives CLAUDELUA_BUILD)
  local exe = harness.claudelua:sub(1, 1) == "/" and harness.claudelua
    or harness.root .. "/" .. harness.claudelua
  local p = assert(process.spawn { exe, args = argv, env = env,
    stderr = function(line)
      lines[#lines + 1] = line
      url = url or line:match("serving (http://%S+)")
      if url then ready:set() end
    end })
  -- (generous: the host's integration run shares the machine with builds)
  ready:wait(60)
  if not url then
    p:signal("kill") -- (nil, "process has exited" when it died by itself)
    local code, sig = p:wait(5)
    p:close()
    error(string.format("the server did not start (exit %s, signal %s):\n%s", tostring(code),
      tostring(sig), table.concat(lines, "\n")), 2)
  end
  return p, url, lines
end

--- POSTs the JSON-RPC message `msg` (with the usual content type and accept, and `headers`)
-- and returns the answer to it: the JSON body, or the answer among an event stream's data
-- lines (nil when neither holds one), and the response (an HTTP error's too).
function M.post(url, msg, headers)
  local h = { ["content-type"] = "application/json",
    accept = "application/json, text/event-stream" }
  for k, v in pairs(headers or {}) do h[k] = v end
  local resp, err = http.request { method = "POST", url = url, headers = h,
    body = json.encode(msg), timeout = 30 }
  if not resp then
    assert(err.kind == "http", tostring(err))
    resp = { status = err.status, headers = err.headers, body = err.body }
  end
  if (resp.headers["content-type"] or ""):match("^text/event%-stream") then
    for data in resp.body:gmatch("data: ([^\n]*)") do
      local m = data ~= "" and json.decode(data)
      if type(m) == "table" and m.id == msg.id and m.method == nil then return m, resp end
    end
    return nil, resp
  end
  return resp.body ~= "" and json.decode(resp.body) or nil, resp
end

return M
