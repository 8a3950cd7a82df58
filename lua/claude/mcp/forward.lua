--- A tool that forwards its calls to a remote MCP server through a client of claude.mcp:
-- the bridge's (`client:as_server`) and the mount's (`server:mount`), and how a remote's
-- errors and the caller's `_meta` cross over.
-- @module claude.mcp.forward
local core = require "claude.core"
local errors = require "claude.errors"
local content = require "claude.mcp.content"

local M = {}

local function accept() return true end

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
-- `tool` is claude.mcp.tool, handed in: that module's servers mount through this one.
-- @treturn claude.Tool
function M.forwarder(tool, client, remote, local_name, opts)
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

return M
