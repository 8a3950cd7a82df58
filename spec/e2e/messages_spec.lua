-- Every kind of message a user meets in a session, as claudelua delivers
-- it, against the REAL claude CLI (pinned in package.json) and the scripted Messages
-- API: system/init, system/status, stream_event, user tool results, a
-- background shell and a subagent (background_tasks_changed, task_started,
-- task_progress, task_updated, task_notification), compact_boundary, hook events,
-- api_retry, rate_limit_event and the result subtypes. When the pin moves,
-- these specs say which shape changed. docs/sessions.md lists them.
-- Run: busted spec/e2e/messages_spec.lua
local claude = require "claude"
local json = require "claude.json"
local e2e = require "support.e2e"
local harness = require "support.harness"

local T = 30

local text = e2e.text
local use = e2e.use

local function find(msgs, type_, subtype, from)
  for i = from or 1, #msgs do
    local m = msgs[i]
    if m.type == type_ and (subtype == nil or m.subtype == subtype) then return m, i end
  end
end

local function all(msgs, type_, subtype)
  local out = {}
  for _, m in ipairs(msgs) do
    if m.type == type_ and (subtype == nil or m.subtype == subtype) then out[#out + 1] = m end
  end
  return out
end

-- The messages up to and including the `n`th result of the session.
local function until_results(s, n)
  local out, seen = {}, 0
  while seen < n do
    local msg = assert(s:next_message(T))
    out[#out + 1] = msg
    if msg.type == "result" then seen = seen + 1 end
  end
  return out
end

local function is_uuid(v)
  return type(v) == "string" and v:match("^%x+%-%x+%-%x+%-%x+%-%x+$") ~= nil
end

-- The fields every message of the session carries.
local function assert_common(msg, session_id)
  assert.equal(session_id, msg.session_id)
  assert.is_true(is_uuid(msg.uuid), msg.type .. "/" .. tostring(msg.subtype) .. " has a uuid")
end

local function content(msg) return msg.message.content end

describe("messages a session delivers, on the real CLI", function()
  before_each(harness.before)
  after_each(harness.after)

  it("a plain turn: init, status, stream events, assistant, result", function()
    local mock <close> = e2e.start { turns = { { content = { text("hello there") } } } }
    local s <close> = assert(claude.connect(mock:options { include_partial_messages = true }))
    assert(s:send("hi"))
    local msgs = harness.collect(s:receive(T))
    local init = msgs[1]
    assert.equal("system", init.type)
    assert.equal("init", init.subtype)
    local sid = init.session_id
    assert.is_true(is_uuid(sid))
    assert.equal(e2e.cli_version(), init.claude_code_version)
    assert.equal("claude-sonnet-4-5", init.model)
    assert.equal("default", init.permissionMode)
    assert.equal("ANTHROPIC_API_KEY", init.apiKeySource)
    assert.equal(mock.dir .. "/work", init.cwd)
    assert.is_true(#init.tools > 0 and type(init.tools[1]) == "string")
    assert.is_table(init.mcp_servers)
    assert.is_table(init.slash_commands)
    assert.is_table(init.agents)
    assert.equal("default", init.output_style)
    -- with include_partial_messages the CLI says it is calling the API
    local status = find(msgs, "system", "status")
    assert_common(status, sid)
    assert.equal("requesting", status.status)
    -- the raw API stream, in order, with the assistant message after the block's deltas
    local kinds = {}
    for _, m in ipairs(msgs) do
      if m.type == "stream_event" then
        assert_common(m, sid)
        assert.equal(json.null, m.parent_tool_use_id)
        kinds[#kinds + 1] = m.event.type
      elseif m.type == "assistant" then
        kinds[#kinds + 1] = "(assistant)"
      end
    end
    assert.same({ "message_start", "content_block_start", "content_block_delta", "(assistant)",
      "content_block_stop", "message_delta", "message_stop" }, kinds)
    local delta
    for _, m in ipairs(all(msgs, "stream_event")) do
      if m.event.type == "content_block_delta" then delta = m end
    end
    assert.same({ type = "text_delta", text = "hello there" }, delta.event.delta)
    local a = find(msgs, "assistant")
    assert_common(a, sid)
    assert.equal(json.null, a.parent_tool_use_id)
    assert.equal("assistant", a.message.role)
    assert.same({ { type = "text", text = "hello there" } }, content(a))
    assert.is_string(a.message.id)
    assert.equal("hello there", claude.text(a))
    local r = msgs[#msgs]
    assert.equal("result", r.type)
    assert_common(r, sid)
    assert.equal("success", r.subtype)
    assert.is_false(r.is_error)
    assert.equal("hello there", r.result)
    assert.equal(1, r.num_turns)
    assert.equal("end_turn", r.stop_reason)
    assert.equal("completed", r.terminal_reason)
    assert.same({}, r.permission_denials)
    assert.is_number(r.duration_ms)
    assert.is_number(r.duration_api_ms)
    assert.is_number(r.total_cost_usd)
    assert.is_number(r.usage.input_tokens)
    assert.is_number(r.usage.output_tokens)
    assert.is_table(r.modelUsage["claude-sonnet-4-5"])
  end)

  it("a background shell: background_tasks_changed, task_started, then its notification", function()
    -- the command ends when the test says so, not after some time
    local gate_dir = harness.tempdir()
    local gate = gate_dir .. "/go"
    local mock <close> = e2e.start { turns = {
      { content = { use("Bash", { command = "while [ ! -e '" .. gate
        .. "' ]; do sleep 0.1; done; echo done-bg", description = "waits for go",
        run_in_background = true }) } },
      { content = { text("started") } },
      { content = { text("notified") } },
    } }
    local s <close> = assert(claude.connect(mock:options { allowed_tools = { "Bash" } }))
    assert(s:send("go"))
    local first = harness.collect(s:receive(T))
    local sid = first[1].session_id
    local use_msg = find(first, "assistant")
    local tool_use_id = content(use_msg)[1].id
    local changed = find(first, "system", "background_tasks_changed")
    assert_common(changed, sid)
    assert.equal(1, #changed.tasks)
    local task = changed.tasks[1]
    assert.equal("local_bash", task.task_type)
    assert.equal("waits for go", task.description)
    assert.is_string(task.task_id)
    assert.is_string(task.run_id)
    local started = find(first, "system", "task_started")
    assert_common(started, sid)
    assert.equal(task.task_id, started.task_id)
    assert.equal(task.run_id, started.run_id)
    assert.equal(tool_use_id, started.tool_use_id)
    assert.equal("local_bash", started.task_type)
    assert.is_true(started.is_backgrounded)
    -- the tool result: a user message holding tool_result blocks
    local u = find(first, "user")
    assert_common(u, sid)
    assert.equal(json.null, u.parent_tool_use_id)
    local tr = content(u)[1]
    assert.equal("tool_result", tr.type)
    assert.equal(tool_use_id, tr.tool_use_id)
    assert.matches("Command running in background with ID: " .. task.task_id, tr.content,
      1, true)
    assert.is_not_nil(u.tool_use_result)
    assert.equal("success", first[#first].subtype)
    -- the task ends after the turn: the CLI reports it and starts a turn of its own
    local gf = assert(io.open(gate, "wb"))
    gf:close()
    local later = until_results(s, 1)
    local updated = find(later, "system", "task_updated")
    assert_common(updated, sid)
    assert.equal(task.task_id, updated.task_id)
    assert.equal("completed", updated.patch.status)
    assert.is_number(updated.patch.end_time)
    local note, note_at = find(later, "system", "task_notification")
    assert_common(note, sid)
    assert.equal(task.task_id, note.task_id)
    assert.equal(tool_use_id, note.tool_use_id)
    assert.equal("completed", note.status)
    assert.equal('Background command "waits for go" completed (exit code 0)', note.summary)
    assert.is_string(note.output_file)
    local emptied = all(later, "system", "background_tasks_changed")
    assert.same({}, emptied[#emptied].tasks)
    local _, init_at = find(later, "system", "init")
    assert.is_true(note_at < init_at)
    local r = later[#later]
    assert.equal("success", r.subtype)
    assert.equal("notified", r.result)
    assert.equal(3, #mock:requests())
    os.execute("rm -rf " .. gate_dir)
  end)

  it("stop_task stops a background shell: task_notification with status 'stopped'", function()
    local mock <close> = e2e.start { turns = {
      { content = { use("Bash", { command = "sleep 600", description = "sleeps",
        run_in_background = true }) } },
      { content = { text("started") } },
      { content = { text("stopped") } },
    } }
    local s <close> = assert(claude.connect(mock:options { allowed_tools = { "Bash" } }))
    assert(s:send("go"))
    local started = find(harness.collect(s:receive(T)), "system", "task_started")
    assert.same({}, assert(s:stop_task(started.task_id)))
    local note
    repeat
      local msg = assert(s:next_message(T))
      if msg.type == "system" and msg.subtype == "task_notification" then note = msg end
    until note
    assert.equal(started.task_id, note.task_id)
    assert.equal("stopped", note.status)
    assert.is_string(note.summary)
  end)

  it("a subagent: task_started, its messages under its call's id, task_progress, the notification",
    function()
    for _, forward in ipairs { false, true } do
      local mock <close> = e2e.start { turns = {
        { content = { use("Agent", { description = "look", prompt = "look around",
          subagent_type = "general-purpose", run_in_background = false }) } },
        { content = { use("Bash", { command = "echo sub", description = "sub" }) } },
        { content = { text("sub says {{last_tool_result}}") } },
        { content = { text("main done") } },
      } }
      local msgs = harness.collect(claude.query("go", mock:options {
        allowed_tools = { "Bash", "Agent" }, forward_subagent_text = forward }))
      local sid = msgs[1].session_id
      local agent_use = content(find(msgs, "assistant"))[1]
      assert.equal("Agent", agent_use.name)
      local started = find(msgs, "system", "task_started")
      assert_common(started, sid)
      assert.equal("local_agent", started.task_type)
      assert.equal("general-purpose", started.subagent_type)
      assert.equal("look around", started.prompt)
      assert.equal(agent_use.id, started.tool_use_id)
      assert.is_false(started.is_backgrounded)
      -- the subagent's own conversation, marked with the Agent call's id
      local nested = {}
      for _, m in ipairs(msgs) do
        if (m.type == "user" or m.type == "assistant") and m.parent_tool_use_id == agent_use.id then
          nested[#nested + 1] = m.type .. ":" .. content(m)[1].type
        end
      end
      local want = { "user:text", "assistant:tool_use", "user:tool_result" }
      if forward then want[#want + 1] = "assistant:text" end
      assert.same(want, nested)
      local progress = find(msgs, "system", "task_progress")
      assert_common(progress, sid)
      assert.equal(started.task_id, progress.task_id)
      assert.equal("Bash", progress.last_tool_name)
      assert.equal(1, progress.usage.tool_uses)
      local note = find(msgs, "system", "task_notification")
      assert.equal(started.task_id, note.task_id)
      assert.equal("completed", note.status)
      assert.equal("sub says sub", note.summary)
      assert.is_number(note.usage.total_tokens)
      local r = msgs[#msgs]
      assert.equal("success", r.subtype)
      assert.equal("main done", r.result)
      -- a foreground agent does not count as a background task
      assert.is_nil(find(msgs, "system", "background_tasks_changed"))
      mock:stop()
    end
  end)

  it("/compact: status compacting, compact_boundary, the summary as a user message", function()
    local mock <close> = e2e.start { turns = {
      { content = { text("first answer") } },
      { content = { text("<summary>we said hello</summary>") } },
      { content = { text("after: {{last_user_text}}") } },
    } }
    local s <close> = assert(claude.connect(mock:options()))
    assert(s:send("hello"))
    harness.collect(s:receive(T))
    assert(s:send("/compact"))
    local msgs = harness.collect(s:receive(T))
    local sid = msgs[1].session_id
    local statuses = all(msgs, "system", "status")
    assert.equal("compacting", statuses[1].status)
    assert.equal(json.null, statuses[2].status)
    assert.equal("success", statuses[2].compact_result)
    local boundary = find(msgs, "system", "compact_boundary")
    assert_common(boundary, sid)
    assert.equal("manual", boundary.compact_metadata.trigger)
    assert.is_number(boundary.compact_metadata.pre_tokens)
    assert.is_number(boundary.compact_metadata.post_tokens)
    assert.is_true(is_uuid(boundary.logical_parent_uuid))
    local users = all(msgs, "user")
    assert.matches("This session is being continued from a previous conversation",
      claude.text(users[1]), 1, true)
    assert.matches("we said hello", claude.text(users[1]), 1, true)
    assert.equal("<local-command-stdout>Compacted </local-command-stdout>", claude.text(users[2]))
    assert.equal("success", msgs[#msgs].subtype)
    -- the next turn starts from the summary
    assert(s:send("next"))
    local after = harness.collect(s:receive(T))
    assert.equal("after: next", after[#after].result)
    local reqs = mock:requests()
    assert.equal(1, reqs[3].n_messages) -- the summary and "next", in one user message
    assert.equal("next", reqs[3].last_user_text)
  end)

  it("include_hook_events: hook_started and hook_response for a command hook", function()
    local mock <close> = e2e.start { turns = {
      { content = { use("Bash", { command = "echo 1", description = "one" }) } },
      { content = { text("done") } },
    } }
    local called = 0
    local msgs = harness.collect(claude.query("go", mock:options {
      allowed_tools = { "Bash" }, include_hook_events = true,
      hooks = { PreToolUse = function() called = called + 1 end },
      settings = { hooks = { PostToolUse = { { matcher = "Bash",
        hooks = { { type = "command", command = "echo '{}'" } } } } } },
    }))
    local sid = msgs[1].session_id
    local started = find(msgs, "system", "hook_started")
    assert_common(started, sid)
    assert.equal("PostToolUse", started.hook_event)
    assert.equal("PostToolUse:Bash", started.hook_name)
    assert.is_string(started.hook_id)
    local response = find(msgs, "system", "hook_response")
    assert_common(response, sid)
    assert.equal(started.hook_id, response.hook_id)
    assert.equal("success", response.outcome)
    assert.equal(0, response.exit_code)
    assert.equal("{}\n", response.stdout)
    assert.equal("", response.stderr)
    -- a callback hook of the session runs, but is not reported as a hook event
    assert.equal(1, called)
    assert.equal(1, #all(msgs, "system", "hook_started"))
    assert.equal("done", msgs[#msgs].result)
  end)

  it("an API retry: system/api_retry before the answer", function()
    local mock <close> = e2e.start { turns = {
      { status = 529, error_message = "busy" },
      { content = { text("ok after retry") } },
    } }
    local msgs = harness.collect(claude.query("go", mock:options {
      env = { CLAUDE_CODE_MAX_RETRIES = "2" } }))
    local retry = find(msgs, "system", "api_retry")
    assert_common(retry, msgs[1].session_id)
    assert.equal(1, retry.attempt)
    assert.equal(2, retry.max_retries)
    assert.equal(529, retry.error_status)
    assert.equal("overloaded", retry.error)
    assert.is_number(retry.retry_delay_ms)
    assert.equal("ok after retry", msgs[#msgs].result)
  end)

  it("rate_limit_event: with a subscription token and the API's rate limit headers", function()
    local mock <close> = e2e.start { turns = { { content = { text("hi") }, headers = {
      ["anthropic-ratelimit-unified-status"] = "allowed_warning",
      ["anthropic-ratelimit-unified-reset"] = "1895487467",
      ["anthropic-ratelimit-unified-representative-claim"] = "five_hour",
      ["anthropic-ratelimit-unified-5h-utilization"] = "0.9",
      ["anthropic-ratelimit-unified-5h-reset"] = "1895487467",
      ["anthropic-ratelimit-unified-5h-surpassed-threshold"] = "0.75",
    } } } }
    local msgs = harness.collect(claude.query("go", mock:options { env = {
      ANTHROPIC_API_KEY = false, CLAUDE_CODE_OAUTH_TOKEN = "sk-ant-oat01-test" } }))
    local ev = find(msgs, "rate_limit_event")
    assert_common(ev, msgs[1].session_id)
    assert.same({ status = "allowed_warning", rateLimitType = "five_hour", utilization = 0.9,
      surpassedThreshold = 0.75, resetsAt = 1895487467, isUsingOverage = false },
      ev.rate_limit_info)
    assert.equal("hi", msgs[#msgs].result)
    assert.same({}, mock:records("tripwire"))
    -- with an API key (no subscription) the CLI sends none
    mock:stop()
    local mock2 <close> = e2e.start { turns = { { content = { text("hi") }, headers = {
      ["anthropic-ratelimit-unified-status"] = "allowed_warning" } } } }
    assert.is_nil(find(harness.collect(claude.query("go", mock2:options())), "rate_limit_event"))
  end)

  it("result subtypes: error_max_turns and error_max_budget_usd", function()
    local mock <close> = e2e.start { turns = {
      { content = { use("Bash", { command = "echo 1", description = "one" }) } },
      { content = { text("never") } },
    } }
    local msgs = harness.collect(claude.query("go", mock:options {
      allowed_tools = { "Bash" }, max_turns = 1 }))
    local r = msgs[#msgs]
    assert.equal("error_max_turns", r.subtype)
    assert.is_true(r.is_error)
    assert.is_nil(r.result)
    assert.equal(2, r.num_turns) -- the turn that would have been the second
    assert.equal("max_turns", r.terminal_reason)
    assert.is_table(r.errors)
    mock:stop()
    local mock2 <close> = e2e.start { turns = {
      { content = { use("Bash", { command = "echo 1", description = "one" }) } },
      { content = { text("never") } },
    } }
    msgs = harness.collect(claude.query("go", mock2:options {
      allowed_tools = { "Bash" }, max_budget_usd = 0.0001 }))
    r = msgs[#msgs]
    assert.equal("error_max_budget_usd", r.subtype)
    assert.is_true(r.is_error)
    assert.is_table(r.errors)
    assert.is_true(r.total_cost_usd > 0.0001)
  end)
end)
