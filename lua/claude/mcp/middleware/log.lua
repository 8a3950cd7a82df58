--- The ready-made middleware `log`: a line per request, when it ends: the server, the method,
-- the tool or prompt (or the URI), who asked, how long it took and how it ended.
--
--     claude: mcp calc tools/call add by alice 0.21 ms ok
--
-- To stderr, or to `write(line, entry)`: `entry` holds the same as values (`server`,
-- `method`, `name`, `uri`, `principal`, `seconds`, `outcome`: "ok", "tool error",
-- "input required", "cancelled" or "error"; `code` and `message` for an error).
-- @module claude.mcp.middleware.log
local core = require "claude.core"
local errors = require "claude.errors"

local M = {}

local now, fmt, type = core.now, string.format, type

-- How a request ended, from what `next` gave: outcome, code, message.
local function outcome(r, err)
  if r ~= nil then return type(r) == "table" and r.isError and "tool error" or "ok" end
  if type(err) == "table" then
    if err.kind == "cancelled" then return "cancelled", nil, err.message end
    if err.kind == "input_required" then return "input required" end
    if err.kind == "missing_capability" then
      return "error", -32021, "missing required client capability"
    end
    if err.kind == "rpc" then return "error", err.code, err.message end
  end
  return "error", nil, errors.message(err)
end

local function stderr_line(line)
  io.stderr:write(line, "\n")
end

--- A middleware that logs each request.
-- @tparam[opt] table opts `write = function(line, entry)` (default: a line to stderr)
-- @treturn function
-- @function new
M.new = errors.public(function(opts)
  errors.check(opts, 1, "log", "table", true)
  opts = opts or {}
  errors.check_fields(opts, { write = true }, "log")
  local write = opts.write or stderr_line
  if type(write) ~= "function" then
    errors.bad_field("write", "log", "function expected, got %s", errors.typename(write))
  end
  return function(req, ctx, next)
    local t0 = now()
    local r, err = next()
    local p = req.params
    local auth = ctx.auth
    local entry = { server = ctx.server, method = req.method,
      name = type(p) == "table" and type(p.name) == "string" and p.name or nil,
      uri = type(p) == "table" and type(p.uri) == "string" and p.uri or nil,
      principal = ctx.principal, seconds = now() - t0 }
    entry.outcome, entry.code, entry.message = outcome(r, err)
    local who = auth and (auth.subject or auth.client_id)
    write(fmt("claude: mcp %s %s%s%s %.2f ms %s%s", entry.server, entry.method,
      (entry.name or entry.uri) and " " .. (entry.name or entry.uri) or "",
      who and " by " .. who or "", entry.seconds * 1000, entry.outcome,
      entry.code and fmt(" %d %s", entry.code, entry.message) or ""), entry)
    return r, err
  end
end)

return M
