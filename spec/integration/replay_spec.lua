-- Replaying a session recorded from the real CLI (spec/fixtures/recordings/agent.jsonl,
-- made by spec/e2e/record_spec.lua: hooks, a permission, an in-process tool, an interrupt)
-- with claude.testing.replay: offline and deterministic, the same code passes; changed
-- code fails with a difference that names the field.
local claude = require "claude"
local errors = require "claude.errors"
local testing = require "claude.testing"
local replay = require "claude.testing.replay"
local harness = require "support.harness"
local agent = require "support.recorded_agent"

local FIXTURE = "spec/fixtures/recordings/agent.jsonl"

-- Runs the agent (changed by `change`) against a replay of the fixture; returns what the
-- run gave (or the error it raised) and the replay's verdict.
local function replayed(change, opts)
  local ropts, r = testing.replay(FIXTURE, opts)
  local ok, out = pcall(agent.run, (agent.options(ropts, change)), 10)
  local good, err = r:check()
  return ok, out, good, err
end

describe("replaying a recorded session", function()
  before_each(harness.before)
  after_each(function()
    testing.cleanup()
    harness.after()
  end)

  it("the recorded code passes, answered as the real CLI answered", function()
    local ok, out, good, err = replayed()
    assert(ok, out)
    assert.same({ { subtype = "success", result = "sum: 5" },
      { subtype = "error_during_execution" }, { subtype = "success", result = "after: again" } },
      out)
    assert.is_true(good, err)
  end)

  it("a changed permission answer fails, naming the field", function()
    local ok, out, good, err = replayed { decision = "deny" }
    assert.is_false(ok)
    -- the session sees a CLI that died, and says why
    assert.is_true(errors.is(out, "process"), tostring(out))
    local diff = 'control_response to can_use_tool): field response.response.behavior: '
      .. 'recorded "allow", sent "deny"'
    assert.matches(diff, out.stderr_tail, 1, true)
    assert.is_nil(good)
    assert.equal("replay", err.kind)
    assert.matches("^request %d+ %(" .. diff:gsub("%p", "%%%0"), err.message)
  end)

  it("a changed hook output fails too, unless its field is ignored", function()
    local _, _, good, err = replayed { hook = "calc is risky" }
    assert.is_nil(good)
    assert.matches("control_response to hook_callback): field "
      .. "response.response.hookSpecificOutput.additionalContext: recorded \"calc is safe\", "
      .. "sent \"calc is risky\"", err.message, 1, true)
    local ok, out, good2, err2 = replayed({ hook = "calc is risky" }, { ignore = {
      "response.response.hookSpecificOutput.additionalContext" } })
    assert(ok, out)
    assert.is_true(good2, err2)
  end)

  it("a changed command line fails before anything is sent", function()
    local ok, out, good, err = replayed { model = "claude-opus-4-8" }
    assert.is_false(ok)
    assert.is_nil(good)
    assert.matches('argv[7] (--model): recorded "claude-sonnet-4-5", sent "claude-opus-4-8"',
      err.message, 1, true)
    assert.matches("argv", tostring(out))
  end)

  it("code that stops early: the replay says what it still expected", function()
    local ropts, r = testing.replay(FIXTURE)
    local s = assert(claude.connect((agent.options(ropts))))
    s:close()
    local good, err = r:check()
    assert.is_nil(good)
    assert.matches("request 2 %(user%): recorded, but the code closed the CLI's input", err.message)
  end)

  it("diff: the first field that differs, by path", function()
    assert.is_nil(replay.diff({ a = { 1, 2 } }, { a = { 1, 2 } }))
    assert.same({ "a[2]", "recorded 2, sent 3" },
      { replay.diff({ a = { 1, 2 } }, { a = { 1, 3 } }) })
    assert.same({ "b", "recorded nothing, sent true" }, { replay.diff({}, { b = true }) })
    assert.is_nil(replay.diff({ x = { uuid = "1" } }, { x = { uuid = "2" } },
      { ["*.uuid"] = true }))
  end)

  it("a file that is not a recording is a misuse", function()
    local path = harness.tempfile('{"type":"user"}\n', ".jsonl")
    assert.has_error(function() testing.replay(path) end)
    os.remove(path)
  end)
end)
