--- `claudelua remote`: claudelua driven over its stdin and stdout by a host that cannot load
-- it (Neovim and other LuaJIT hosts: `claude.thin`). One JSON-RPC 2.0 message per line,
-- both ways (docs/embedding.md#the-remote-protocol):
--
-- - host -> remote: `initialize`, `query` (runs one conversation, its messages sent back as
--   `message` notifications, answered at its end), `mcp/connect`, `mcp/list_tools`,
--   `mcp/call_tool`, `mcp/close`, and `notifications/cancelled` to stop a query;
-- - remote -> host: `tool` (an in-process tool of the host was called: the host runs it and
--   answers with its result), and the `message` notifications.
--
-- The host's tools become tools of in-process servers here (`claude.server`), whose execute
-- forwards the call to the host and waits for its answer; the session, the router and the
-- MCP client are the same as for any script.
-- @module claude.remote
local core = require "claude.core"
local async = require "claude.async"
local errors = require "claude.errors"
local json = require "claude.json"
local rpc = require "claude.rpc"
local tool = require "claude.mcp.tool"

local M = {}

--- The protocol's version: `initialize` answers with it, and a host that speaks another
-- refuses to go on.
M.PROTOCOL = 1

M.USAGE = [[
usage: claudelua remote
Serves claudelua to a host that cannot load it (Neovim, LuaJIT: claude.thin) over stdin and
stdout, one JSON-RPC 2.0 message per line (docs/embedding.md#the-remote-protocol). stderr
carries logs. It ends at stdin EOF. CLAUDELUA_DEMO=1 runs every query in demo mode.
]]

local function fail(what, fmt, ...)
  error(errors.new(what, string.format(fmt, ...), { traceback = false }), 0)
end

-- The host's tool descriptions (`servers = { name = { tools = { {name=, description=,
-- input_schema=}, ... } } }`) as in-process servers whose tools call the host.
local function host_servers(peer, specs)
  local servers = {}
  for server_name, spec in pairs(specs or {}) do
    local tools = {}
    for i, t in ipairs(spec.tools or {}) do
      local schema = t.input_schema
      if schema == json.null or (type(schema) == "table" and next(schema) == nil) then
        schema = nil
      end
      tools[i] = tool.tool {
        name = t.name, description = t.description ~= json.null and t.description or nil,
        input_schema = schema,
        -- the host may wait for its user (an edit to accept): no limit but the session's
        budget = { run = false },
        execute = function(args)
          local result, err = peer:request("tool",
            { server = server_name, tool = t.name, arguments = args }, false)
          if err then error(err.message, 0) end
          if result == json.null then return nil end
          return result
        end,
      }
    end
    servers[server_name] = tool.server(server_name, tools)
  end
  return servers
end

local Remote = {}
Remote.__index = Remote

-- A client the host opened (`mcp/connect`), by the handle it was given.
local function client_of(self, params)
  local c = self.clients[params and params.client]
  if not c then fail("closed", "no MCP client %s", tostring(params and params.client)) end
  return c
end

local function query(self, params, ctx)
  if type(params) ~= "table" or params.prompt == nil then
    fail("invalid", "query: 'prompt' expected")
  end
  local options = params.options ~= json.null and params.options or {}
  local servers = options.mcp_servers ~= json.null and options.mcp_servers or {}
  options.mcp_servers = servers
  for name, server in pairs(host_servers(self.peer, params.servers)) do servers[name] = server end
  -- a client the host opened, given to the session as a server of its own
  for name, entry in pairs(servers) do
    if type(entry) == "table" and entry.remote_client ~= nil then
      servers[name] = client_of(self, { client = entry.remote_client })
    end
  end
  local stream = params.stream or ctx.id
  local claude = require "claude"
  for msg in claude.query(params.prompt, options) do
    self.peer:notify("message", { stream = stream, message = msg })
  end
  return {}
end

local function mcp_connect(self, params)
  local client, err = require("claude.mcp").connect(params.options or {})
  if not client then error(err, 0) end
  self.next_client = self.next_client + 1
  self.clients[self.next_client] = client
  return { client = self.next_client, server_info = client.server_info,
    protocol_version = client.protocol_version }
end

local function mcp_list_tools(self, params)
  local list, err = client_of(self, params):list_tools()
  if not list then error(err, 0) end
  return { tools = list }
end

local function mcp_call_tool(self, params)
  local result, err = client_of(self, params):call_tool(params.name, params.arguments or {})
  if not result then error(err, 0) end
  return result
end

local function mcp_close(self, params)
  local c = client_of(self, params)
  self.clients[params.client] = nil
  c:close()
  return {}
end

--- Serves one host on a stream (`send(msg)` writes one message): the handlers of the
-- protocol on a `claude.rpc` peer. `remote.peer:receive(msg)` takes what the host sent;
-- `remote:close()` cancels the queries running and closes the MCP clients.
-- @tparam function send
-- @return the remote
function M.new(send)
  local self = setmetatable({ clients = {}, next_client = 0 }, Remote)
  local function bound(fn) return function(params, ctx) return fn(self, params, ctx) end end
  self.peer = rpc.new {
    codec = rpc.jsonrpc, send = send, name = "host", timeout = false,
    handlers = {
      initialize = function()
        return { protocol = M.PROTOCOL, version = core.version, lua = _VERSION }
      end,
      query = bound(query),
      ["mcp/connect"] = bound(mcp_connect),
      ["mcp/list_tools"] = bound(mcp_list_tools),
      ["mcp/call_tool"] = bound(mcp_call_tool),
      ["mcp/close"] = bound(mcp_close),
    },
  }
  return self
end

function Remote:close(reason)
  self.peer:close(reason or "the host closed the pipe")
  for id, c in pairs(self.clients) do
    self.clients[id] = nil
    c:close()
  end
end

--- `claudelua remote [--help]`: serves the host on stdin and stdout until stdin ends.
function M.main(...)
  local first = ...
  if first == "--help" or first == "-h" then return io.stdout:write(M.USAGE) end
  if first ~= nil then
    io.stderr:write(M.USAGE)
    fail("usage", "remote: unknown argument '%s'", tostring(first))
  end
  local ended = async.event()
  local remote
  local stream, err = core.stdio {
    mode = "json",
    on_line = function(value, lerr)
      if value ~= nil then return remote.peer:receive(value) end
      if lerr == nil then return ended:set() end -- stdin EOF: the host has gone
      io.stderr:write("claudelua remote: ", tostring(lerr), "\n")
    end,
  }
  if not stream then fail("io", "remote: cannot open stdio: %s", tostring(err)) end
  -- the protocol alone on stdout: print and io.write go to stderr
  assert(core.stdout_to_stderr())
  io.output(io.stderr)
  remote = M.new(function(msg) return stream:write_json(msg) end)
  ended:wait()
  remote:close()
  stream:close_write()
end

return M
