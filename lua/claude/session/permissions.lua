--- The can_use_tool callback: the CLI asks before a tool runs (when its
-- rules say "ask"), and the callback allows, changes or denies the call.
--
-- The callback is `fn(tool_name, input, context)` and returns one of:
-- `true` / `claude.allow([updated_input [, updated_permissions]])`, or
-- `false [, message]` / `claude.deny(message [, interrupt])`, or the table
-- form `{ behavior = "allow"|"deny", updated_input=, updated_permissions=,
-- message=, interrupt= }` (camelCase accepted). Anything else is reported on
-- stderr and answered as a deny that says why, so a mistake never leaves
-- the CLI waiting or allows by accident.
-- @module claude.session.permissions
local json = require "claude.json"

local M = {}

--- An allow result.
function M.allow(updated_input, updated_permissions)
  return { behavior = "allow", updated_input = updated_input,
    updated_permissions = updated_permissions }
end

--- A deny result.
function M.deny(message, interrupt)
  return { behavior = "deny", message = message, interrupt = interrupt }
end

local function context(req, ctx)
  local function opt(v) if v ~= json.null then return v end end
  return {
    tool_use_id = opt(req.tool_use_id), suggestions = opt(req.permission_suggestions),
    blocked_path = opt(req.blocked_path), decision_reason = opt(req.decision_reason),
    title = opt(req.title), display_name = opt(req.display_name),
    description = opt(req.description), agent_id = opt(req.agent_id),
    request = req, cancelled = function() return ctx.cancelled end,
  }
end

local function invalid(what)
  local msg = "can_use_tool returned " .. what .. "; expected true, false[, message], "
    .. "claude.allow(...) or claude.deny(...)"
  io.stderr:write("claude: ", msg, "\n")
  return { behavior = "deny", message = "Permission callback error: " .. msg }
end

--- The wire answer for a can_use_tool request.
function M.decide(fn, req, ctx)
  if not fn then error("can_use_tool callback is not provided", 0) end
  local input = req.input
  if type(input) ~= "table" then input = json.object() end
  local r, extra = fn(req.tool_name, input, context(req, ctx))
  if r == true then return { behavior = "allow", updatedInput = input } end
  if r == false or r == nil then
    if r == nil and extra == nil then return invalid("nothing") end
    return { behavior = "deny", message = extra or "Denied by the can_use_tool callback" }
  end
  if type(r) == "string" then r = { behavior = r, message = extra } end
  if type(r) ~= "table" then return invalid("a " .. type(r)) end
  if r.behavior == "allow" then
    local updated = r.updated_input or r.updatedInput or input
    if type(updated) ~= "table" then return invalid("an updated input that is not a table") end
    if next(updated) == nil then updated = json.object() end
    local answer = { behavior = "allow", updatedInput = updated }
    local perms = r.updated_permissions or r.updatedPermissions
    if perms then answer.updatedPermissions = json.array(perms) end
    return answer
  elseif r.behavior == "deny" then
    local answer = { behavior = "deny",
      message = r.message or "Denied by the can_use_tool callback" }
    if r.interrupt then answer.interrupt = true end
    return answer
  end
  return invalid("a table with behavior '" .. tostring(r.behavior) .. "'")
end

return M
