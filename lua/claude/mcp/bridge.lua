--- A connected MCP client as an in-process server: `client:as_server{...}`
-- returns a `claude.server` whose tools forward to the client. Given to a
-- session (`mcp_servers = { gh = client }`), the CLI uses our connection
-- (one connection shared by every session, each call guarded and logged in
-- Lua); served by `claudelua mcp`, it is a proxy next to Lua tools.
-- @module claude.mcp.bridge
local errors = require "claude.errors"
local tool = require "claude.mcp.tool"
local forward = require "claude.mcp.forward"

local M = {}

local misuse = errors.misuse

local OPTIONS = { name = "string", filter = "function|table", guard = "function",
  on_call = "function", timeout = "number", prefix = "string" }

local function check(opts)
  if opts == nil then return {} end
  if type(opts) ~= "table" then
    misuse("bad argument #1 to 'as_server' (table expected, got %s)", errors.typename(opts))
  end
  for k, v in pairs(opts) do
    local want = OPTIONS[k]
    if not want then errors.unknown_field(k, OPTIONS, "as_server") end
    if not ("|" .. want .. "|"):find("|" .. type(v) .. "|", 1, true) then
      misuse("bad field '%s' to 'as_server' (%s expected, got %s)", k,
        (want:gsub("|", " or ")), errors.typename(v))
    end
  end
  return opts
end

local function selected(filter, t)
  if filter == nil then return true end
  if type(filter) == "function" then return filter(t) and true or false end
  for _, name in ipairs(filter) do
    if name == t.name then return true end
  end
  return false
end

--- The server for `client` (see the module).
-- @tparam claude.mcp.Client client
-- @tparam[opt] table opts `name` (default: the client's name), `filter` (a
--   list of tool names, or `fn(tool) -> boolean`), `guard` (`fn(tool_name,
--   args, ctx)` returning the arguments to send (changed or not), or nil and
--   an error: the model gets it as an `isError` result), `on_call`
--   (`fn{ tool, args, result, error, refused, seconds }` after each call),
--   `timeout` (per call), `prefix` (prepended to each tool's name)
-- @return a claude.Server | nil, err, kind (listing the tools failed)
function M.server(client, opts)
  opts = check(opts)
  local name = opts.name or (client.name:gsub("[^%w_%-]", "_"))
  local tools, err, kind = client:list_tools()
  if not tools then return nil, err, kind end
  local items, seen = {}, {}
  for _, remote in ipairs(tools) do
    if type(remote) == "table" and type(remote.name) == "string"
      and selected(opts.filter, remote) then
      local local_name = ((opts.prefix or "") .. remote.name):gsub("[^%w_%-]", "_"):sub(1, 64)
      if not seen[local_name] then
        seen[local_name] = true
        items[#items + 1] = forward.forwarder(tool, client, remote, local_name, opts)
      end
    end
  end
  local s = tool.server(name, items, {
    version = type(client.server_info.version) == "string" and client.server_info.version or nil,
    instructions = client.instructions,
  })
  s.client = client
  return s
end

--- The server a session uses for `client` under `name`: made once per
-- client and name, then reused.
function M.for_session(client, name)
  local cache = client.bridges
  if not cache then
    cache = {}
    client.bridges = cache
  end
  local s = cache[name]
  if s then return s end
  local err
  s, err = M.server(client, { name = name })
  if not s then error(err, 0) end
  cache[name] = s
  return s
end

return M
