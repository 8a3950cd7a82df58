--- Hooks: Lua functions the CLI calls at points of its loop (PreToolUse,
-- PostToolUse, Stop, ...), registered in initialize with callback ids.
--
-- `options.hooks` maps an event name to a function, or to a list of
-- matchers `{ matcher = "Bash|Write", hooks = { fn, ... }, timeout = 30 }`
-- (a bare function in the list matches every tool). A hook is called as
-- `fn(input, tool_use_id, ctx)` and returns the hook output (or nil for
-- `{}`); snake_case keys are accepted and sent in the CLI's camelCase, and
-- the output is checked before it is sent, so a typo is a clear error here
-- instead of a rejected answer there.
-- @module claude.session.hooks
local json = require "claude.json"
local errors = require "claude.errors"
local compat = require "claude.session.compat"

local M = {}

M.EVENTS = {}
for _, e in ipairs {
  "PreToolUse", "PostToolUse", "PostToolUseFailure", "PostToolBatch", "UserPromptSubmit",
  "UserPromptExpansion", "Stop", "StopFailure", "SubagentStart", "SubagentStop", "PreCompact",
  "PostCompact", "Interrupt", "Notification", "PermissionRequest", "PermissionDenied",
  "SessionStart", "SessionEnd", "Setup", "PreModelSwitch", "PostModelSwitch", "TeammateIdle",
  "TaskCreated", "TaskCompleted", "Elicitation", "ElicitationResult", "ConfigChange",
  "WorktreeCreate", "WorktreeRemove", "InstructionsLoaded", "CwdChanged", "FileChanged",
  "DirectoryAdded", "MessageDisplay", "PreSkillShellCommand",
} do M.EVENTS[e] = true end

-- The fields of a matcher table.
local MATCHER_KEYS = { matcher = true, hooks = true, hook = true, timeout = true,
  on_failure = true }

-- Registration runs under claude.query/connect: a misuse blames their caller.
local fname = "query"
local function bad(msg) errors.bad_field("hooks", fname, "%s", msg) end

--- Numbers the hook functions (hook_0, hook_1, ... across all events, in
-- registration order) and keeps the table initialize sends.
-- @tparam table? spec the `hooks` option
-- @tparam[opt] string public_name the function given it, for messages ("query")
-- @tparam[opt] boolean strict the session's `strict`: no event or output field of a newer CLI
function M.register(spec, public_name, strict)
  fname = public_name or "query"
  local reg = { count = 0, by_id = {}, wire = nil, strict = strict == true }
  if spec == nil then return reg end
  local events = {}
  for event in pairs(spec) do
    if type(event) ~= "string" or not M.EVENTS[event] then -- a newer CLI's event?
      compat.unknown(event, nil, M.EVENTS, fname, "hooks", strict, "a hook event")
    end
    events[#events + 1] = event
  end
  table.sort(events)
  local wire = {}
  for _, event in ipairs(events) do
    local matchers = spec[event]
    if type(matchers) == "function" then matchers = { matchers } end
    if type(matchers) ~= "table" then
      bad(event .. ": a function or a list of matchers expected, got " .. type(matchers))
    end
    local out = {}
    for i, m in ipairs(matchers) do
      if type(m) == "function" then m = { hooks = { m } } end
      if type(m) ~= "table" then bad(event .. "[" .. i .. "]: a matcher table expected") end
      local fns = m.hooks or { m.hook }
      if type(fns) ~= "table" or #fns == 0 then
        bad(event .. "[" .. i .. "]: 'hooks' must list at least one function")
      end
      if m.matcher ~= nil and type(m.matcher) ~= "string" then
        bad(event .. "[" .. i .. "]: 'matcher' must be a string")
      end
      if m.timeout ~= nil and type(m.timeout) ~= "number" then
        bad(event .. "[" .. i .. "]: 'timeout' must be a number of seconds")
      end
      errors.check_fields(m, MATCHER_KEYS, fname, "hooks." .. event .. "[" .. i .. "]")
      local on_failure = m.on_failure
      if on_failure ~= nil and on_failure ~= "continue" and on_failure ~= "block" then
        bad(event .. "[" .. i .. "]: 'on_failure' must be \"continue\" or \"block\", got "
          .. tostring(on_failure))
      end
      local ids = json.array()
      for j, fn in ipairs(fns) do
        if type(fn) ~= "function" then
          bad(event .. "[" .. i .. "].hooks[" .. j .. "]: function expected, got " .. type(fn))
        end
        local id = "hook_" .. reg.count
        reg.count = reg.count + 1
        reg.by_id[id] = { fn = fn, event = event }
        ids[#ids + 1] = id
      end
      out[#out + 1] = { matcher = m.matcher or json.null, hookCallbackIds = ids,
        timeout = m.timeout, onFailure = on_failure }
    end
    if #out > 0 then wire[event] = json.array(out) end
  end
  if next(wire) then reg.wire = wire end
  return reg
end

--- The `hooks` field of initialize (null when there are none).
function M.wire(reg)
  return reg.wire or json.null
end

-- snake_case output keys and the CLI's names for them (Python's
-- `continue_` and `async_` too, so its examples read across).
local CAMEL = {
  suppress_output = "suppressOutput", stop_reason = "stopReason",
  system_message = "systemMessage", hook_specific_output = "hookSpecificOutput",
  async_timeout = "asyncTimeout", continue_ = "continue", async_ = "async",
  hook_event_name = "hookEventName",
  permission_decision = "permissionDecision",
  permission_decision_reason = "permissionDecisionReason", updated_input = "updatedInput",
  additional_context = "additionalContext", updated_mcp_tool_output = "updatedMCPToolOutput",
  updated_tool_output = "updatedToolOutput", session_title = "sessionTitle",
  suppress_original_prompt = "suppressOriginalPrompt", initial_user_message = "initialUserMessage",
  watch_paths = "watchPaths", updated_permissions = "updatedPermissions",
  classifier_context = "classifierContext", permission_display = "permissionDisplay",
  reload_skills = "reloadSkills", display_content = "displayContent",
  worktree_path = "worktreePath", terminal_sequence = "terminalSequence",
}

-- The hookSpecificOutput fields each event takes (the CLI's schema);
-- events not listed take none beyond hookEventName.
local SPECIFIC = {}
for event, keys in pairs {
  PreToolUse = "permissionDecision permissionDecisionReason updatedInput additionalContext "
    .. "permissionDisplay",
  PostToolUse = "additionalContext classifierContext updatedMCPToolOutput updatedToolOutput",
  PostToolUseFailure = "additionalContext", PostToolBatch = "additionalContext",
  UserPromptSubmit = "additionalContext sessionTitle suppressOriginalPrompt",
  UserPromptExpansion = "additionalContext suppressOriginalPrompt",
  Stop = "additionalContext", SubagentStart = "additionalContext",
  SubagentStop = "additionalContext", Notification = "additionalContext",
  Setup = "additionalContext", PostModelSwitch = "additionalContext",
  PreModelSwitch = "permissionDecision permissionDecisionReason",
  -- CLI 2.1.332: a shell command in a skill's or a command's text, before it runs
  PreSkillShellCommand = "permissionDecision permissionDecisionReason updatedInput",
  PermissionRequest = "decision", PermissionDenied = "retry",
  SessionStart = "additionalContext initialUserMessage sessionTitle watchPaths reloadSkills",
  Elicitation = "action content", ElicitationResult = "action content",
  CwdChanged = "watchPaths", FileChanged = "watchPaths",
  WorktreeCreate = "worktreePath", MessageDisplay = "displayContent",
} do
  local set = { hookEventName = true }
  for k in keys:gmatch("%S+") do set[k] = true end
  SPECIFIC[event] = set
end
local NO_SPECIFIC = { hookEventName = true }

-- A PermissionRequest hook's decision: { behavior = "allow"|"deny", ... }.
local PERMISSION_DECISION = { behavior = true, updatedInput = true, updatedPermissions = true,
  message = true, interrupt = true }

local TOP_KEYS = { ["continue"] = true, suppressOutput = true, stopReason = true, decision = true,
  reason = true, systemMessage = true, hookSpecificOutput = true, async = true,
  asyncTimeout = true, terminalSequence = true }

local DECISIONS = { allow = true, deny = true, ask = true, defer = true }

local function camel(t)
  local out = {}
  for k, v in pairs(t) do out[CAMEL[k] or k] = v end
  return out
end

-- An output field claudelua does not know: a typo raises, a newer CLI's passes on
-- (claude.session.compat), with a warning once.
local function unknown_output(event, where, k, known, strict)
  if strict or type(k) ~= "string" or errors.is_typo(k, known) then
    error("hook for " .. event .. " returned an unknown "
      .. (where == "" and "" or "hook_specific_output ") .. "field '" .. tostring(k) .. "'"
      .. errors.suggestion(tostring(k), known), 0)
  end
  compat.warn("output." .. where .. k, "hooks." .. event, "it is")
end

--- Checks a hook's output and puts it in wire form; raises on mistakes.
-- @tparam string event
-- @param out what the hook returned
-- @tparam[opt] boolean strict no field of a newer CLI
function M.output(event, out, strict)
  if out == nil then return json.object() end
  if type(out) ~= "table" then
    error("hook for " .. event .. " returned a " .. type(out) .. "; a table (or nil) expected", 0)
  end
  out = camel(out)
  for k in pairs(out) do
    if not TOP_KEYS[k] then unknown_output(event, "", k, TOP_KEYS, strict) end
  end
  if out.decision ~= nil and out.decision ~= "approve" and out.decision ~= "block" then
    error("hook for " .. event .. ": 'decision' must be \"approve\" or \"block\", got "
      .. tostring(out.decision), 0)
  end
  local hso = out.hookSpecificOutput
  if hso ~= nil then
    if type(hso) ~= "table" then
      error("hook for " .. event .. ": hookSpecificOutput must be a table", 0)
    end
    hso = camel(hso)
    hso.hookEventName = hso.hookEventName or event
    if hso.hookEventName ~= event then
      error("hook for " .. event .. ": hookEventName is '" .. tostring(hso.hookEventName)
        .. "', it must be '" .. event .. "'", 0)
    end
    if hso.permissionDecision ~= nil and not DECISIONS[hso.permissionDecision] then
      error("hook for " .. event .. ": permissionDecision must be allow, deny, ask or defer, "
        .. "got '" .. tostring(hso.permissionDecision) .. "'", 0)
    end
    -- (an event of a newer CLI: its fields are not known here, so all pass)
    local allowed = SPECIFIC[event] or (M.EVENTS[event] and NO_SPECIFIC)
    for k in pairs(allowed and hso or {}) do
      if not allowed[k] then
        unknown_output(event, "hookSpecificOutput.", k, allowed, strict)
      end
    end
    if event == "PermissionRequest" and hso.decision ~= nil then
      if type(hso.decision) ~= "table" then
        error("hook for PermissionRequest: decision must be a table {behavior=...}", 0)
      end
      local d = camel(hso.decision)
      for k in pairs(d) do
        if not PERMISSION_DECISION[k] then
          error("hook for PermissionRequest: unknown decision field '" .. tostring(k) .. "'", 0)
        end
      end
      if d.behavior ~= "allow" and d.behavior ~= "deny" then
        error("hook for PermissionRequest: decision.behavior must be \"allow\" or \"deny\", got "
          .. tostring(d.behavior), 0)
      end
      hso.decision = d
    end
    out.hookSpecificOutput = hso
  end
  if next(out) == nil then return json.object() end
  return out
end

--- Runs the hook a hook_callback request names.
function M.run(reg, req, ctx)
  local entry = reg.by_id[req.callback_id]
  if not entry then error("unknown hook callback id '" .. tostring(req.callback_id) .. "'", 0) end
  local tool_use_id = req.tool_use_id
  if tool_use_id == json.null then tool_use_id = nil end
  return M.output(entry.event, entry.fn(req.input, tool_use_id, ctx), reg.strict)
end

return M
