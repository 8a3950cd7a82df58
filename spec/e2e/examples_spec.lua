-- The examples, run in demo mode (the real CLI against the scripted API) with
-- build/claudelua, from another directory to check they find their files.
local harness = require "support.harness"

local host = harness.claudelua
if host:sub(1, 1) ~= "/" then host = harness.root .. "/" .. host end

-- Runs examples/<name> from /tmp, in demo mode by the environment ("env"), by
-- the host's --demo ("host") or by --demo among the script's arguments
-- ("flag"); returns its stdout.
local function run(name, how)
  local script = harness.root .. "/examples/" .. name
  local cmd
  if how == "host" then
    cmd = "cd /tmp && exec " .. harness.quote(host) .. " --demo " .. harness.quote(script)
  elseif how == "flag" then
    cmd = "cd /tmp && exec " .. harness.quote(host) .. " " .. harness.quote(script) .. " --demo"
  else
    cmd = "cd /tmp && CLAUDELUA_DEMO=1 exec " .. harness.quote(host) .. " " .. harness.quote(script)
  end
  local code, out, err = harness.sh("timeout 60 sh -c " .. harness.quote(cmd))
  assert(code == 0, name .. " exited with " .. code .. "\nstdout:\n" .. out .. "\nstderr:\n" .. err)
  assert.matches("scripted Messages API on http://127.0.0.1:", err, 1, true)
  return out
end

local function has(out, text)
  assert(out:find(text, 1, true), "expected " .. string.format("%q", text)
    .. " in the output:\n" .. out)
end

describe("examples (demo mode)", function()
  it("query.lua prints the answer and the cost: none in demo mode", function()
    local out = run("query.lua", "env")
    has(out, "15 + 27 = 42.")
    assert.matches("%[success in %d+ ms, 1 turn%(s%), demo: no cost%]", out)
    assert.is_nil(out:find("$", 1, true))
  end)

  it("query.lua not logged in: says the query failed, not [success ...] first", function()
    -- the real CLI with an empty HOME and no key: an API error ends the turn, with a result
    -- whose subtype is "success" and is_error true
    local cli = require("support.e2e").cli()
    local dir = harness.tempdir()
    os.execute("mkdir -p " .. harness.quote(dir .. "/bin") .. " && ln -s " .. harness.quote(cli)
      .. " " .. harness.quote(dir .. "/bin/claude"))
    local code, out, err = harness.sh("cd /tmp && env -u ANTHROPIC_API_KEY -u "
      .. "CLAUDE_CODE_OAUTH_TOKEN -u CLAUDELUA_DEMO HOME=" .. harness.quote(dir) .. " PATH="
      .. harness.quote(dir .. "/bin:/usr/bin:/bin") .. " timeout 60 " .. harness.quote(host)
      .. " " .. harness.quote(harness.root .. "/examples/query.lua"))
    os.execute("rm -rf " .. harness.quote(dir))
    assert.equal(1, code, out .. err)
    assert.is_nil(out:find("[success", 1, true), out)
    assert.is_nil(out:find("Not logged in", 1, true), out)
    assert.matches("^the query failed: Not logged in[^\n]*\n$", err)
  end)

  it("query.lua also takes --demo", function()
    has(run("query.lua", "flag"), "15 + 27 = 42.")
  end)

  it("session.lua runs three turns with an interrupt in the middle", function()
    local out = run("session.lua", "host")
    has(out, "Red, yellow and blue.")
    has(out, "Once upon a time")
    has(out, "[interrupted]")
    has(out, "[error_during_execution, demo: no cost]")
    has(out, "You first asked me to name the three primary colours.")
    assert.matches("%[session [%x%-]+: success%]", out)
    -- the story was cut off
    assert.is_nil(out:find("mixed them all", 1, true))
  end)

  it("permissions.lua allows, changes the input, and denies", function()
    local out = run("permissions.lua", "flag")
    has(out, "[asked: mcp__calc__add")
    has(out, "[tool_result: 5]")
    has(out, "[asked: mcp__calc__multiply")
    has(out, "[tool_result: 10]") -- 2.4 * 4.6 rounded to 2 * 5
    has(out, "[tool_result (error): Division by zero is not allowed in this session.]")
    has(out, "[success, 1 denial(s), demo: no cost]")
  end)

  it("hooks.lua sees the prompt and the tools, and blocks one call", function()
    local out = run("hooks.lua", "env")
    has(out, "[UserPromptSubmit:")
    has(out, "[PreToolUse mcp__calc__add")
    has(out, "[PostToolUse mcp__calc__add -> ")
    has(out, "[PreToolUse mcp__calc__divide")
    has(out, "Division by zero is blocked by a hook.]")
    assert.is_nil(out:find("[PostToolUse mcp__calc__divide", 1, true))
    has(out, "[Stop]")
    has(out, "[success, demo: no cost]")
  end)
  it("calculator.lua: the model calls mcp__calc__add with 15 and 27 and receives 42", function()
    local out = run("calculator.lua", "flag")
    has(out, "-> mcp__calc__add(a=15, b=27)")
    has(out, "<- mcp__calc__add: 42")
    has(out, "<- mcp__calc__divide (error): division by zero")
    has(out, "15 + 27 = 42. Dividing by zero failed: ERROR: division by zero")
  end)

  it("app_state.lua: tools change the script's live store between turns", function()
    local out = run("app_state.lua", "host")
    has(out, "after turn 1: apples=3 pears=5")
    has(out, "after turn 2: apples=4 pears=5")
    assert.matches("history: restock apples %+2 %(toolu_", out)
  end)
end)
