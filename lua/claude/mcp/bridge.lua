--- A connected MCP client as an in-process server: `client:as_server{...}`
-- returns a `claude.server` whose tools forward to the client. Given to a
-- session (`mcp_servers = { gh = client }`), the CLI uses our connection
-- (one connection shared by every session, each call guarded and logged in
-- Lua); served by `claudelua mcp`, it is a proxy next to Lua tools.
-- @module claude.mcp.bridge
local core = require "claude.core"
local errors = require "claude.errors"
local tool = require "claude.mcp.tool"
local content = require "claude.mcp.content"

local M = {}

local misuse = errors.misuse

local OPTIONS = { name = "string", filter = "function|table", guard = "function",
  on_call = "function", timeout = "number", prefix = "string" }

local function accept() return true end

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

--- Raises what a remote request failed with as the JSON-RPC error our server answers: the
-- remote's own error (code, message, data) when it answered one, else -32603 with the
-- client's message (a closed connection, a timeout).
-- @param err the client's error
function M.relay(err)
  if errors.is(err, "remote") and math.type(err.code) == "integer" then
    error(errors.new("rpc", err.remote_message or err.message, { code = err.code,
      data = err.data }), 0)
  end
  error(errors.new("rpc", errors.message(err), { code = -32603 }), 0)
end

--- Adds to a client request's options `opts` what it forwards of the request `ctx` serves:
-- the trace context, and the caller's `_meta` keys that are neither the protocol's (the
-- envelope, the progress token) nor the claude CLI's.
-- @param ctx a request's ctx, or nil
-- @tparam table opts
-- @treturn table opts
function M.forwarded(ctx, opts)
  if not ctx then return opts end
  opts.traceparent, opts.tracestate = ctx.traceparent, ctx.tracestate
  local meta = rawget(ctx, "_meta")
  if type(meta) ~= "table" then return opts end
  for k, v in pairs(meta) do
    if type(k) == "string" and k ~= "progressToken" and k ~= "traceparent"
      and k ~= "tracestate" and not k:find("^io%.modelcontextprotocol/")
      and not k:find("^claudecode/") then
      opts.meta = opts.meta or {}
      opts.meta[k] = v
    end
  end
  return opts
end

--- The local tool that forwards to `remote` (a tool description of the server): the bridge's
-- and claude.mcp.mount's. `opts`: `guard`, `on_call`, `timeout`, and `relay` (the remote's
-- JSON-RPC errors, and a dead connection, answer the call as JSON-RPC errors; else they are
-- `isError` results) with the request's `_meta` forwarded, `result` (`fn(r) -> r`, applied to
-- each result).
-- @treturn claude.Tool
function M.forwarder(client, remote, local_name, opts)
  local guard, on_call, timeout, relay = opts.guard, opts.on_call, opts.timeout, opts.relay
  local name = remote.name
  local t = tool.tool {
    name = local_name,
    title = type(remote.title) == "string" and remote.title or nil,
    description = type(remote.description) == "string" and remote.description or nil,
    execute = function(args, ctx)
      local started = on_call and core.now()
      if guard then
        local checked, gerr = guard(name, args, ctx)
        if checked == nil then
          if on_call then
            on_call { tool = name, args = args, error = gerr, refused = true, seconds = 0 }
          end
          return nil, gerr or "refused by the guard"
        end
        if type(checked) == "table" then args = checked end
      end
      -- progress is asked for only when our caller asked for it (a token came)
      local progress = ctx and ctx._token ~= nil and function(p, total, message)
        ctx.progress(p, total, message)
      end or nil
      local call_opts = { timeout = timeout, on_progress = progress }
      if relay then M.forwarded(ctx, call_opts) end
      local r, err = client:call_tool(name, args, call_opts)
      if on_call then
        on_call { tool = name, args = args, result = r, error = err,
          seconds = core.now() - started }
      end
      if not r then
        if relay then M.relay(err) end
        return nil, err
      end
      if opts.result then r = opts.result(r) end
      return content.finished_result(r)
    end,
  }
  -- the server's own schema, as it is; the server validates its arguments
  local schema = type(remote.inputSchema) == "table" and remote.inputSchema
    or t.input_schema
  t.input_schema, t.listing.inputSchema, t.validate = schema, schema, accept
  if type(remote.outputSchema) == "table" then t.listing.outputSchema = remote.outputSchema end
  if type(remote.annotations) == "table" then
    t.annotations, t.listing.annotations = remote.annotations, remote.annotations
  end
  return t
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
        items[#items + 1] = M.forwarder(client, remote, local_name, opts)
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
