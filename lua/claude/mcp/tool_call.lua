--- Calling a tool as `tools/call` does: its arguments validated, `execute` run protected
-- (a failure's traceback to stderr, once per tool's message handler), its outcome converted.
-- claude.mcp.tool makes tools; this module runs them.
-- @module claude.mcp.tool_call
local errors = require "claude.errors"
local json = require "claude.json"
local content = require "claude.mcp.content"
local budget = require "claude.mcp.budget"

local M = {}

local fmt = string.format
local jobject, null = json.object, json.null
local number_text = content.format_number

-- Is `e` what a tool raised to ask its client (claude.mcp.input)? That module is loaded by
-- the transports that can ask (the modern era's); without it, nothing can have been raised.
local loaded = package.loaded
local function is_unwind(e)
  local m = loaded["claude.mcp.input"]
  return m ~= nil and m.is_unwind(e)
end

local function report(name)
  return function(e)
    -- a cancelled call is no failure, nor one that asks the client (claude.mcp.input), nor
    -- a JSON-RPC error the tool raised on purpose (kind rpc)
    if errors.is(e, "cancelled") or errors.is(e, "rpc") or is_unwind(e) then return e end
    local msg = type(e) == "string" and e or content.message(e)
    io.stderr:write(fmt("claude: tool '%s' failed: %s\n", name, debug.traceback(msg, 2)))
    return e
  end
end

--- The message handler a call of tool `t` runs `execute` under (`xpcall`): a failure's
-- traceback to stderr. Made once per tool.
-- @tparam claude.Tool t
-- @treturn function
function M.error_handler(t)
  local on_error = t.report_error
  if not on_error then
    on_error = budget.trusted_handler(report(t.name))
    t.report_error = on_error
  end
  return on_error
end
local error_handler = M.error_handler

--- Call a tool as `tools/call` does: validate `args`, run `execute(args, ctx)` protected
-- (a traceback goes to stderr), and convert the outcome. Never raises; may yield if
-- `execute` does.
-- @tparam claude.Tool t
-- @tparam[opt] table args the call's arguments (nil or `json.null` mean `{}`)
-- @param[opt] ctx passed to `execute`
-- @tparam[opt] boolean as_text a result of one text block comes back as its text (a string),
--   for callers that write the JSON envelope themselves
-- @treturn table|string CallToolResult (or its text)
function M.call(t, args, ctx, as_text)
  if args == nil or args == null then args = jobject() end
  local ok, err = t.validate(args)
  if not ok then return content.error("Input validation error: " .. err.message) end
  local on_error = t.report_error or error_handler(t) -- made once per tool: the hot path
  if not as_text then return content.result(t, xpcall(t.execute, on_error, args, ctx)) end
  -- content.result_text, inline: a string or a number is the text of the result
  local done, r, e = xpcall(t.execute, on_error, args, ctx)
  if done and not t.validate_output then
    local tr = type(r)
    if tr == "string" then return r end
    if tr == "number" then return number_text(r) end
  end
  return content.result(t, done, r, e)
end

return M
