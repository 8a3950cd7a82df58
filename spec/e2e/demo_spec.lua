-- Demo mode: a new user's own script, unchanged, runs offline with one command
-- (`claudelua --demo script.lua`, or CLAUDELUA_DEMO=1): the real CLI against the
-- scripted Messages API in Lua (claude.testing.messages_api), on 127.0.0.1.
local harness = require "support.harness"

local host = harness.claudelua
if host:sub(1, 1) ~= "/" then host = harness.root .. "/" .. host end
local q = harness.quote

-- The README's first example, as a user saves it.
local CALC = [[
local claude = require "claude"
local calc = claude.server("calc", {
  claude.tool("add", "Add two numbers", { a = "number", b = "number" }, function(args)
    return args.a + args.b
  end),
  claude.tool("shout", "Upper-cases a word", { word = { type = "string", enum = { "hi", "yo" } } },
    function(args) return args.word:upper() end),
})
for msg in claude.query("What is 15 + 27?", {
  mcp_servers = { calc = calc },
  allowed_tools = calc:tool_names(),
}) do
  if msg.type == "assistant" then
    local text = claude.text(msg)
    if text then print(text) end
  end
  if msg.type == "result" then print("RESULT", msg.subtype, msg.result) end
end
]]

local function run(cmd)
  local code, out, err = harness.sh("timeout 90 sh -c " .. q(cmd))
  assert(code == 0, cmd .. " exited with " .. code .. "\nstdout:\n" .. out .. "\nstderr:\n" .. err)
  return out, err
end

describe("claudelua --demo", function()
  local dir
  local function save(name, text)
    local f = assert(io.open(dir .. "/" .. name, "wb"))
    f:write(text)
    f:close()
  end
  before_each(function()
    dir = harness.tempdir()
    save("calc.lua", CALC)
  end)
  after_each(function() os.execute("rm -rf " .. q(dir)) end)

  it("runs a user's script offline: the model calls each tool, arguments from its schema",
    function()
    local out, err = run("cd " .. q(dir) .. " && exec " .. q(host) .. " --demo calc.lua")
    assert.matches("scripted Messages API on http://127.0.0.1:%d+: offline, no key, no cost", err)
    assert.truthy(out:find("(demo) Calling add.", 1, true), out)
    assert.truthy(out:find("(demo) Calling shout.", 1, true), out)
    assert.truthy(out:find("add(a=15, b=27) returned: 42", 1, true), out)
    assert.truthy(out:find("shout(word=hi) returned: HI", 1, true), out)
    assert.truthy(out:find("RESULT\tsuccess\t(demo)", 1, true), out)
  end)

  it("is also CLAUDELUA_DEMO=1, and calls only the tools the session allows", function()
    save("calc2.lua", (CALC:gsub("allowed_tools = calc:tool_names%(%),",
      "allowed_tools = { \"mcp__calc__add\" },")))
    local out = run("cd " .. q(dir) .. " && CLAUDELUA_DEMO=1 exec " .. q(host) .. " calc2.lua")
    assert.truthy(out:find("add(a=15, b=27) returned: 42", 1, true), out)
    assert.is_nil(out:find("shout", 1, true), out)
    assert.is_nil(out:find("requested permissions", 1, true), out)
  end)

  it("asks for permission where the session would: its can_use_tool decides", function()
    save("calc3.lua", (CALC:gsub("allowed_tools = calc:tool_names%(%),", [[
      allowed_tools = { "mcp__calc__add" },
      can_use_tool = function(name)
        return { behavior = "deny", message = "no shouting: " .. name }
      end,]])))
    local out = run("cd " .. q(dir) .. " && exec " .. q(host) .. " --demo calc3.lua")
    assert.truthy(out:find("add(a=15, b=27) returned: 42", 1, true), out)
    assert.truthy(out:find("shout(word=hi) failed: no shouting: mcp__calc__shout", 1, true), out)
  end)

  it("fills arguments from the schema and the prompt, calls the tools it names, costs nothing",
    function()
    save("weather.lua", [[
      local claude = require "claude"
      local w = claude.server("w", {
        claude.tool("weather", "The forecast", { city = "string",
          days = { type = "integer", minimum = 1, maximum = 7 },
          units = { type = "string", enum = { "metric", "imperial" } } },
          function(a) return a.city .. ", " .. a.days .. " days, " .. tostring(a.units) end),
        claude.tool("send_report", "Mails a report", { to = { type = "string", format = "email" },
          subject = "string" }, function(a) return "sent to " .. a.to end),
      })
      for m in claude.query(arg[1], { mcp_servers = { w = w }, allowed_tools = w:tool_names() }) do
        if m.type == "result" then
          print(m.result)
          print("cost", m.total_cost_usd, m.modelUsage and next(m.modelUsage)
            and select(2, next(m.modelUsage)).costUSD)
        end
      end
    ]])
    local out = run("cd " .. q(dir) .. " && exec " .. q(host) .. " --demo weather.lua "
      .. q("What is the weather in Lisbon for the next 3 days, in imperial units?"))
    assert.equal("(demo) weather(city=Lisbon, days=3, units=imperial) returned: "
      .. "Lisbon, 3 days, imperial\ncost\t0\t0\n", out)
    out = run("cd " .. q(dir) .. " && exec " .. q(host) .. " --demo weather.lua 'How are things?'")
    assert.truthy(out:find("weather(city=Paris, days=7, units=metric) returned: Paris, 7 days",
      1, true), out)
    assert.truthy(out:find("send_report(subject=Hello, to=ada@example.com) returned: sent to "
      .. "ada@example.com", 1, true), out)
  end)

  it("takes the model's turns from --demo=scenario.json", function()
    save("scenario.json", [[{"turns": [
      {"content": [{"type": "tool_use", "name": "mcp__calc__add", "input": {"a": 2, "b": 3}}]},
      {"content": [{"type": "text", "text": "Scripted: {{last_tool_result}}"}]}]}]])
    local out = run("cd " .. q(dir) .. " && exec " .. q(host) .. " --demo=scenario.json calc.lua")
    assert.truthy(out:find("Scripted: 5", 1, true), out)
  end)

  it("runs -e chunks and stdin in demo mode too", function()
    local out = run("cd " .. q(dir) .. " && echo " .. q([[
      local claude = require "claude"
      for m in claude.query("hello", {}) do if m.type == "result" then print(m.result) end end
    ]]) .. " | " .. q(host) .. " --demo -")
    assert.equal("(demo) A scripted answer to: hello\n", out)
  end)

  it("in the REPL on a terminal, a claude.query waits at the prompt", function()
    local input = harness.tempfile(table.concat({
      [[calc = claude.server("calc", { claude.tool("add", "Add", { a = "number", b = "number" },]]
        .. [[ function(a) return a.a + a.b end) })]],
      [[for m in claude.query("2 + 3?", { mcp_servers = { calc = calc }, ]]
        .. [[allowed_tools = calc:tool_names() }) do print(m.type, claude.text(m)) end]],
      "print('done')", "<C-d>" }, "\n") .. "\n")
    local code, out = harness.sh("cd " .. q(dir) .. " && python3 " .. q(harness.root
      .. "/spec/support/pty_run.py") .. " 60 '> ' " .. q(host) .. " --demo -i < " .. q(input))
    os.remove(input)
    assert.equal(0, code, out)
    assert.truthy(out:find("result\t(demo) add(a=2, b=3) returned: 5", 1, true), out)
    assert.truthy(out:find("\ndone\n", 1, true), out)
  end)

  it("says in one line what to install when there is no CLI", function()
    -- a copy of the executable outside the checkout, with no CLI on PATH
    os.execute("cp " .. q(host) .. " " .. q(dir .. "/claudelua"))
    local code, out, err = harness.sh("cd " .. q(dir)
      .. " && env -u CLAUDELUA_CLI PATH=/usr/bin:/bin "
      .. "./claudelua --demo calc.lua")
    assert.equal(1, code)
    assert.equal("", out)
    assert.matches("^[^\n]*demo mode needs the claude CLI[^\n]*"
      .. "npm install %-g @anthropic%-ai/claude%-code[^\n]*\n$", err)
  end)
end)
