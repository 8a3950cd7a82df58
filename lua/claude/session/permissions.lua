--- The can_use_tool callback: the CLI asks before a tool runs (when its
-- rules say "ask"), and the callback allows, changes or denies the call.
--
-- The callback is `fn(tool_name, input, context)` and returns one of:
-- `true` / `claude.allow([updated_input [, updated_permissions]])`, or
-- `false [, message]` / `claude.deny(message [, interrupt])`, or the table
-- form `{ behavior = "allow"|"deny", updated_input=, updated_permissions=,
-- message=, interrupt=, decision_classification=, tool_use_id= }` (camelCase accepted;
-- a field of a newer CLI passes on, see claude.session.compat). Anything else is reported on
-- stderr and answered as a deny that says why, so a mistake never leaves
-- the CLI waiting or allows by accident.
-- @module claude.session.permissions
local json = require "claude.json"
local errors = require "claude.errors"
local compat = require "claude.session.compat"

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

-- The fields of the table form, and the CLI's name of each.
local WIRE = { behavior = "behavior", updated_input = "updatedInput",
  updatedInput = "updatedInput", updated_permissions = "updatedPermissions",
  updatedPermissions = "updatedPermissions", message = "message", interrupt = "interrupt",
  decision_classification = "decisionClassification",
  decisionClassification = "decisionClassification", tool_use_id = "toolUseID",
  toolUseID = "toolUseID" }

-- The answer's fields beyond behavior and its own (who decided, for the CLI's record;
-- the tool call it answers), and a newer CLI's fields as they are; or nil, the reason
-- a field is refused (a typo, or any unknown field when strict).
local function extras(r, answer, strict)
  for k, v in pairs(r) do
    local wire = WIRE[k]
    if wire == "decisionClassification" or wire == "toolUseID" then
      if type(v) ~= "string" then return nil, "a " .. k .. " that is not a string" end
      answer[wire] = v
    elseif not wire then
      if strict or type(k) ~= "string" or errors.is_typo(k, WIRE) then
        return nil, "an unknown field '" .. tostring(k) .. "'" .. errors.suggestion(tostring(k),
          WIRE)
      end
      compat.warn(k, "can_use_tool's answer", "it is")
      answer[k] = v
    end
  end
  return answer
end

--- The wire answer for a can_use_tool request.
-- @tparam function fn the callback
-- @tparam table req the request
-- @tparam table ctx
-- @tparam[opt] boolean strict the session's `strict`: no field of a newer CLI
function M.decide(fn, req, ctx, strict)
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
    local ok, why = extras(r, answer, strict)
    return ok or invalid(why)
  elseif r.behavior == "deny" then
    local answer = { behavior = "deny",
      message = r.message or "Denied by the can_use_tool callback" }
    if r.interrupt then answer.interrupt = true end
    local ok, why = extras(r, answer, strict)
    return ok or invalid(why)
  end
  return invalid("a table with behavior '" .. tostring(r.behavior) .. "'")
end

return M
