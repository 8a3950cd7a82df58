--- `claude.mcp` of the thin client: the tool DSL (`claude.mcp.tool`, `claude.mcp.server`)
-- and MCP clients (`claude.mcp.connect`) that live in the `claudelua remote` process; their
-- methods wait inside a task, as on Lua 5.4.
-- @module claude.thin.mcp
return function(claude, connection)
  local M = { tool = claude.tool, server = claude.server }

  local Client = {}
  Client.__index = Client
  Client.__tostring = function(c)
    return "claude.thin.mcp.Client (" .. (c.remote_client and "open" or "closed") .. ")"
  end

  local function call(self, method, params)
    if not self.remote_client then
      return nil, setmetatable({ kind = "closed", message = "the MCP client is closed" },
        { __tostring = function(e) return e.message end }), "closed"
    end
    params.client = self.remote_client
    return self.peer:request(method, params)
  end

  --- The server's tools (the list of `tools/list`).
  function Client:list_tools()
    local r, err, kind = call(self, "mcp/list_tools", {})
    if not r then return nil, err, kind end
    return r.tools
  end

  --- Calls a tool of the server: the `tools/call` result (`content`, `isError`, ...).
  function Client:call_tool(name, arguments)
    if type(name) ~= "string" then
      error("bad argument #1 to 'call_tool' (string expected, got " .. type(name) .. ")", 2)
    end
    return call(self, "mcp/call_tool", { name = name, arguments = arguments or {} })
  end

  function Client:close()
    if not self.remote_client then return end
    call(self, "mcp/close", {})
    self.remote_client = nil
  end

  --- `claude.mcp.connect(options)` -> client | nil, err, kind: the options of Lua 5.4 that
  -- are data (`command`, `args`, `env`, `cwd`, `url`, `headers`, `transport`, `name`,
  -- `timeout`, `connect_timeout`); inside a task.
  function M.connect(options)
    if type(options) ~= "table" then
      error("bad argument #1 to 'connect' (table expected, got " .. type(options) .. ")", 2)
    end
    for k, v in pairs(options) do
      if type(v) == "function" then
        error("bad option '" .. tostring(k) .. "' to 'connect' (a function cannot cross the "
          .. "pipe to claudelua remote)", 2)
      end
    end
    local peer = connection()
    local r, err, kind = peer:request("mcp/connect", { options = options })
    if not r then return nil, err, kind end
    return setmetatable({ peer = peer, remote_client = r.client, server_info = r.server_info,
      protocol_version = r.protocol_version }, Client)
  end

  return M
end
