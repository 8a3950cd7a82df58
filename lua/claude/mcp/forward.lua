--- A tool that forwards its calls to a remote MCP server through a client of claude.mcp:
-- the bridge's (`client:as_server`) and the mount's (`server:mount`), and how a remote's
-- errors and the caller's `_meta` cross over.
-- @module claude.mcp.forward
local core = require "claude.core"
local async = require "claude.async"
local errors = require "claude.errors"
local content = require "claude.mcp.content"

local M = {}

local fmt = string.format

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

-- The remote's requests while a call runs (sampling, elicitation, roots), asked of the
-- caller's client through `ctx`, in the legacy era as requests of its own.
local function legacy_asker(ctx)
  return function(method, params) return ctx.request(method, params) end
end

-- The modern era asks by ending the request with input_required and running it again with
-- the answers (claude.mcp.server.modern): the remote's call runs in a task of its own, and
-- its requests are asked as `ctx.input` under keys counted in the call (the same in every
-- run); one not answered yet ends the remote call and unwinds the tool's own task.
-- A remote tool call: made, and for a tool that must run as a task, the task waited for
-- (the local tool is an ordinary one whose call waits: the task is the remote's affair).
local function remote_call(client, name, args, call_opts)
  local r, err, kind = client:call_tool(name, args, call_opts)
  if r == nil or not call_opts.task then return r, err, kind end
  return r:wait { timeout = call_opts.timeout }
end

local function modern_call(ctx, client, name, args, call_opts)
  local input = require "claude.mcp.input" -- (loaded by the modern era's transports)
  local n, unwound, woke = 0, nil, async.event()
  call_opts.on_request = function(method, params)
    -- one the caller cannot answer is the remote's to handle (not -32021 to the caller: the
    -- remote may ask it of its own accord, outside the call)
    if not input.declared(ctx.client_capabilities, method) then
      return nil, errors.new("unsupported", fmt("the client did not declare the %s capability",
        input.CAPABILITY[method] or method), { code = -32601 })
    end
    n = n + 1
    local key = "forwarded-" .. n
    local ok, answers, err, kind = pcall(ctx.input, { [key] = { method = method,
      params = params } })
    if ok then
      if answers == nil then return nil, err, kind end
      return answers[key]
    end
    unwound = unwound or answers
    woke:set()
    return nil, errors.new("cancelled", "the request waits for its client's input")
  end
  local task = async.spawn_observed(function()
    local r = table.pack(pcall(remote_call, client, name, args, call_opts))
    woke:set()
    return r
  end)
  local ok, e = pcall(woke.wait, woke)
  if not ok or unwound then
    task:cancel(ok and "the request waits for its client's input" or errors.message(e))
    error(ok and unwound or e, 0)
  end
  local r = task:wait()
  if not r[1] then error(r[2], 0) end
  return table.unpack(r, 2, r.n)
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
  -- a tool the remote runs only as a task: called as one, and waited for; its progress is
  -- the task's status messages
  local tasked = type(remote.execution) == "table" and remote.execution.taskSupport == "required"
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
      local steps = 0
      local call_opts = { timeout = timeout, on_progress = progress, task = tasked or nil,
        on_status = tasked and progress and function(task)
          steps = steps + 1
          progress(steps, nil, task.status_message)
        end or nil }
      if relay then M.forwarded(ctx, call_opts) end
      local r, err
      if ctx and client.opts.forward_requests then
        if ctx.era == "modern" then
          r, err = modern_call(ctx, client, name, args, call_opts)
        else
          call_opts.on_request = legacy_asker(ctx)
          r, err = remote_call(client, name, args, call_opts)
        end
      else
        r, err = remote_call(client, name, args, call_opts)
      end
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
