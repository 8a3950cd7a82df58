--- What a session would do with a call of an MCP tool, read from its options as the CLI reads
-- them: run it ("allow"), ask someone (its `can_use_tool`, its permission prompt tool, a
-- PreToolUse hook: "ask"), or refuse it without asking ("deny": not allowed, and nobody to
-- ask in a session without a terminal). The demo's model calls only the tools a session
-- would run or ask about, as a model that knows its tools would, instead of collecting a
-- denial for each of the others. Project or user settings files it cannot see may allow more;
-- such a tool is then left out, never called and refused.
-- @module claude.testing.tool_permission

local M = {}

-- A permission rule names the tool (`mcp__calc__add`), its server (`mcp__calc`,
-- `mcp__calc__*`), or the tool with a content pattern (`mcp__calc__add(...)`).
local function matches(rule, name)
  if type(rule) ~= "string" then return false end
  if rule == name or rule:match("^([^%(]+)%(") == name then return true end
  local server = name:match("^(mcp__.-)__")
  return server ~= nil and (rule == server or rule == server .. "__*")
end

local function any(rules, name)
  for _, rule in ipairs(type(rules) == "table" and rules or {}) do
    if matches(rule, name) then return true end
  end
  return false
end

local function has_pre_tool_use(hooks)
  return type(hooks) == "table" and hooks.PreToolUse ~= nil
end

--- "allow", "ask" or "deny" for a call of the tool `name` in a session opened with `options`
-- (nil options: a session this process does not know, which might allow anything: "allow").
function M.decide(options, name)
  if type(options) ~= "table" then return "allow" end
  local settings = type(options.settings) == "table" and options.settings.permissions
  settings = type(settings) == "table" and settings or {}
  if any(options.disallowed_tools, name) or any(settings.deny, name) then return "deny" end
  if options.permission_mode == "bypassPermissions" or any(options.allowed_tools, name)
    or any(settings.allow, name) then
    return "allow"
  end
  if options.can_use_tool or options.permission_prompt_tool_name
    or has_pre_tool_use(options.hooks) or options.permission_mode == "auto" then
    return "ask"
  end
  return "deny"
end

return M
