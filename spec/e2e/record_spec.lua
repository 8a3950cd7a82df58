-- Recording a session with the REAL claude CLI (the `record` option), against the scripted
-- Messages API: the whole wire traffic both ways, secrets redacted, and a replay of it
-- (claude.testing.replay) that the same code passes. With CLAUDELUA_RECORD_FIXTURE=1 the
-- recording becomes spec/fixtures/recordings/agent.jsonl, which
-- spec/integration/replay_spec.lua replays offline.
-- Run: busted spec/e2e/record_spec.lua
local claude = require "claude"
local json = require "claude.json"
local testing = require "claude.testing"
local e2e = require "support.e2e"
local harness = require "support.harness"
local agent = require "support.recorded_agent"

local FIXTURE = "spec/fixtures/recordings/agent.jsonl"

local function lines_of(path)
  local out = {}
  for line in io.lines(path) do out[#out + 1] = json.decode(line) end
  return out
end

describe("recording a session with the real CLI", function()
  before_each(harness.before)
  after_each(function()
    testing.cleanup()
    harness.after()
  end)

  it("records hooks, a permission, an in-process tool and an interrupt, and replays them",
    function()
    local mock <close> = e2e.start { turns = agent.TURNS }
    local file = harness.tempfile("", ".jsonl")
    local base = mock:options { record = file, env = {
      MY_SERVICE_TOKEN = "tok-6b1f0e2a9c4d" } }
    local opts, seen = agent.options(base)
    local results = agent.run(opts)
    assert.same({ { subtype = "success", result = "sum: 5" },
      { subtype = "error_during_execution" }, { subtype = "success", result = "after: again" } },
      results)
    assert.same({ "mcp__calc__add" }, seen.hooks)
    assert.same({ "mcp__calc__add" }, seen.asked)

    local recs = lines_of(file)
    local header = recs[1]
    assert.equal("claudelua/1", header.recording)
    assert.equal("--output-format", header.argv[1])
    assert.equal("[redacted]", header.env.ANTHROPIC_API_KEY)
    assert.equal("[redacted]", header.env.MY_SERVICE_TOKEN)
    assert.equal(mock.dir .. "/work", header.cwd)
    local text = assert(io.open(file, "rb")):read("a")
    assert.is_nil(text:find("tok-6b1f0e2a9c4d", 1, true))
    -- both ways, every kind the agent met
    local seen_kinds = {}
    for i = 2, #recs do
      local r = recs[i]
      local m = r.msg
      local key = r.dir
      if m then
        key = key .. ":" .. tostring(m.type)
        if m.type == "control_request" then key = key .. "/" .. m.request.subtype end
      end
      seen_kinds[key] = true
      assert.is_number(r.t)
    end
    for _, k in ipairs { "to_cli:control_request/initialize", "to_cli:user",
      "from_cli:control_request/hook_callback", "from_cli:control_request/can_use_tool",
      "from_cli:control_request/mcp_message", "to_cli:control_response",
      "to_cli:control_request/interrupt", "from_cli:stream_event", "from_cli:result",
      "eof", "exit" } do
      assert.is_true(seen_kinds[k], k)
    end

    -- the same code passes the replay, with no CLI and no API
    local ropts, replay = testing.replay(file)
    local again = agent.run((agent.options(ropts)))
    assert.same(results, again)
    assert(replay:check())
    if os.getenv("CLAUDELUA_RECORD_FIXTURE") == "1" then
      os.execute("mkdir -p spec/fixtures/recordings && cp " .. file .. " " .. FIXTURE)
    end
    os.remove(file)
  end)

  it("redacts secrets in messages too: API keys, tokens, update_environment_variables",
    function()
    local mock <close> = e2e.start { turns = { { content = { e2e.text("ok") } } } }
    local file = harness.tempfile("", ".jsonl")
    local s <close> = assert(claude.connect(mock:options { record = { path = file,
      secrets = { "hunter2-hunter2" } } }))
    assert(s:update_environment_variables { CLAUDE_CODE_OAUTH_TOKEN = "sk-ant-oat01-abcdef" })
    assert(s:send("my key is sk-ant-api03-XYZXYZXYZ and my password hunter2-hunter2"))
    harness.collect(s:receive(30))
    s:close()
    local text = assert(io.open(file, "rb")):read("a")
    assert.is_nil(text:find("sk-ant-oat01-abcdef", 1, true))
    assert.is_nil(text:find("XYZXYZXYZ", 1, true))
    assert.is_nil(text:find("hunter2-hunter2", 1, true))
    assert.matches("my key is sk-ant-[redacted] and my password [redacted]", text, 1, true)
    os.remove(file)
  end)
end)
