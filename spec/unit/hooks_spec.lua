-- Hook outputs: snake_case keys become the CLI's camelCase for every event's
-- hookSpecificOutput fields, and a field the event does not take is an error.
local hooks = require "claude.session.hooks"

describe("hook outputs", function()
  local ROWS = {
    { "PreToolUse", { permission_decision = "ask", permission_decision_reason = "r",
      updated_input = { file_path = "/x" }, additional_context = "c" },
      { permissionDecision = "ask", permissionDecisionReason = "r",
        updatedInput = { file_path = "/x" }, additionalContext = "c" } },
    { "PostToolUse", { additional_context = "c", updated_tool_output = "o",
      updated_mcp_tool_output = { content = {} }, classifier_context = "k" },
      { additionalContext = "c", updatedToolOutput = "o", updatedMCPToolOutput = { content = {} },
        classifierContext = "k" } },
    { "UserPromptSubmit", { session_title = "t", suppress_original_prompt = true },
      { sessionTitle = "t", suppressOriginalPrompt = true } },
    { "SessionStart", { initial_user_message = "m", watch_paths = { "/w" },
      reload_skills = true }, { initialUserMessage = "m", watchPaths = { "/w" },
      reloadSkills = true } },
    { "PermissionDenied", { retry = true }, { retry = true } },
    { "WorktreeCreate", { worktree_path = "/wt" }, { worktreePath = "/wt" } },
    { "MessageDisplay", { display_content = "shown" }, { displayContent = "shown" } },
    { "CwdChanged", { watch_paths = { "/a" } }, { watchPaths = { "/a" } } },
    { "Elicitation", { action = "accept", content = { x = 1 } },
      { action = "accept", content = { x = 1 } } },
    { "PermissionRequest", { decision = { behavior = "allow", updated_input = { a = 1 },
      updated_permissions = {} } },
      { decision = { behavior = "allow", updatedInput = { a = 1 }, updatedPermissions = {} } } },
  }
  for _, row in ipairs(ROWS) do
    local event, given, want = row[1], row[2], row[3]
    it(event, function()
      local out = hooks.output(event, { hook_specific_output = given })
      want.hookEventName = event
      assert.same({ hookSpecificOutput = want }, out)
    end)
  end

  it("maps Python's continue_ and async_", function()
    assert.same({ ["continue"] = false, stopReason = "s" },
      hooks.output("Stop", { continue_ = false, stop_reason = "s" }))
    assert.same({ async = true, asyncTimeout = 5 },
      hooks.output("Stop", { async_ = true, async_timeout = 5 }))
  end)

  local BAD = {
    -- (strict: a name close to none is a newer CLI's otherwise, and passes)
    { "Stop", { hook_specific_output = { retry = true } },
      "unknown hook_specific_output field 'retry'", true },
    { "PreToolUse", { hook_specific_output = { display_content = "x" } },
      "unknown hook_specific_output field 'displayContent'", true },
    { "Stop", { hook_specific_output = { additional_contxt = "x" } },
      "unknown hook_specific_output field 'additional_contxt' (did you mean "
      .. "'additionalContext'?)" },
    { "PermissionRequest", { hook_specific_output = { decision = { behavior = "maybe" } } },
      "behavior must be \"allow\" or \"deny\"" },
    { "PermissionRequest", { hook_specific_output = { decision = { behavior = "deny",
      reason = "x" } } }, "unknown decision field 'reason'" },
    { "Stop", { stop_reasons = "x" }, "unknown field 'stop_reasons'" },
  }
  for _, row in ipairs(BAD) do
    it("refuses: " .. row[3], function()
      local ok, err = pcall(hooks.output, row[1], row[2], row[4])
      assert.is_false(ok)
      assert.matches(row[3], err, 1, true)
    end)
  end
end)
