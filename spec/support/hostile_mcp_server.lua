-- A stdio MCP server whose answers a spec scripts, for the client's readers against a hostile
-- server: `claudelua spec/support/hostile_mcp_server.lua ERA PLAN`. ERA is "legacy"
-- (initialize) or "modern" (server/discover, then any envelope taken); PLAN is Lua source
-- returning `{ [method] = function(params, n) -> raw | nil }`: the raw JSON text of the
-- request's result (written as it is), `{ error = raw }` for an error, nil for no answer at
-- all; `n` counts that method's requests from 1. Instead of a function, a list of raw texts:
-- the n-th answers the n-th request (the last one all later ones), its "%d" replaced by n;
-- `false` is no answer. A method the plan has no entry for answers -32601.
local json = require "claude.json"

local era, source = arg[1], arg[2]
local plan = assert(load(source, "=plan", "t"))()
local counts = {}

local function write(line)
  io.stdout:write(line, "\n")
  io.stdout:flush()
end

local function answer(id, raw)
  local idj = json.encode(id)
  if type(raw) == "table" then
    return write('{"jsonrpc":"2.0","id":' .. idj .. ',"error":' .. raw.error .. '}')
  end
  write('{"jsonrpc":"2.0","id":' .. idj .. ',"result":' .. raw .. '}')
end

local V = "2026-07-28"
local DISCOVER = json.encode { resultType = "complete", supportedVersions = { V },
  capabilities = { tools = { listChanged = false } },
  serverInfo = { name = "hostile", version = "0.1" } }

for line in io.stdin:lines() do
  local msg = json.decode(line)
  local id, method, params = msg.id, msg.method, msg.params
  if id ~= nil and method ~= nil then
    if method == "server/discover" then
      if era == "modern" then
        answer(id, DISCOVER)
      else
        answer(id, { error = '{"code":-32601,"message":"Method not found"}' })
      end
    elseif method == "initialize" and era == "legacy" then
      answer(id, json.encode { protocolVersion = params.protocolVersion,
        capabilities = { tools = json.object(), tasks = json.object() },
        serverInfo = { name = "hostile", version = "0.1" } })
    elseif plan[method] then
      counts[method] = (counts[method] or 0) + 1
      local entry, n = plan[method], counts[method]
      local raw
      if type(entry) == "function" then
        raw = entry(params, n)
      else
        raw = entry[math.min(n, #entry)]
        if raw then raw = raw:gsub("%%d", tostring(n)) else raw = nil end
      end
      if raw ~= nil then answer(id, raw) end
    else
      answer(id, { error = '{"code":-32601,"message":"Method not found"}' })
    end
  end
end
