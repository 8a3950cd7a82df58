-- A CLI newer than claudelua (claude.session.compat, docs/sessions.md#forward-compatibility),
-- played by the fake CLI with invented names: what it sends (message types, fields, system
-- subtypes, hook inputs, hook events, control requests) reaches the script whole and raises
-- nothing; what the script writes with a newer CLI's names (an option, an agent field, a
-- hook event, a server config field, hook output and permission answer fields) reaches the
-- CLI, after one warning each.
local claude = require "claude"
local json = require "claude.json"
local testing = require "claude.testing"
local compat = require "claude.session.compat"
local harness = require "support.harness"

describe("a future CLI", function()
  local warnings
  local sink
  before_each(function()
    harness.before()
    compat.reset()
    warnings = {}
    sink = compat.set_sink(function(msg) warnings[#warnings + 1] = msg end)
  end)
  after_each(function()
    compat.set_sink(sink)
    testing.cleanup()
    harness.after()
  end)

  it("sends messages, fields, system subtypes and control requests no claudelua knows: "
    .. "each reaches the script whole", function()
    local opts = testing.fake_cli [[
      cli:expect_initialize()
      cli:expect_user()
      cli:system_init({ quantum_capabilities = { "warp_v9" }, zephyr_budget = 7 })
      cli:send({ type = "hologram_frame", session_id = cli.session_id, uuid = "u-holo",
        frame = { depth = 3, lattice = { 1, 2 } } })
      cli:system("nebula_checkpoint", { nebula_id = "n-1", shard_count = 4 })
      cli:assistant("hi", { prism_score = 0.5 })
      -- a control request of a subtype no claudelua knows: the script answers it
      local answer = assert(cli:request("telepathy_probe", { wavelength = 42,
        nested = { deep = { deeper = true } } }))
      cli:assistant("probe said " .. answer.echo)
      cli:result({ glacier_tokens = 11, stardust = { grains = 2 } })
    ]]
    local seen_request
    local got = {}
    for msg in claude.query("go", testing.merge(opts, {
      on_control_request = function(subtype, req)
        seen_request = { subtype = subtype, req = req }
        return { echo = "ok:" .. req.wavelength }
      end,
    })) do
      got[#got + 1] = msg
    end
    local by = {}
    for _, m in ipairs(got) do by[m.subtype or m.type] = by[m.subtype or m.type] or m end
    assert.same({ "warp_v9" }, by.init.quantum_capabilities)
    assert.equal(7, by.init.zephyr_budget)
    assert.same({ depth = 3, lattice = { 1, 2 } }, by.hologram_frame.frame)
    assert.equal("system", by.nebula_checkpoint.type)
    assert.equal(4, by.nebula_checkpoint.shard_count)
    assert.equal(0.5, by.assistant.prism_score)
    assert.equal(11, by.success.glacier_tokens)
    assert.same({ grains = 2 }, by.success.stardust)
    assert.equal("probe said ok:42", claude.text(got[#got - 1]))
    assert.equal("telepathy_probe", seen_request.subtype)
    assert.same({ deep = { deeper = true } }, seen_request.req.nested)
    assert.same({}, warnings) -- what the CLI sends is never warned about
  end)

  it("a control request no claudelua knows, with no on_control_request: the error answer "
    .. "the CLI expects, and the session goes on", function()
    local opts = testing.fake_cli [[
      cli:expect_initialize()
      cli:expect_user()
      local ok, err = cli:request("telepathy_probe", { wavelength = 1 })
      if ok or not err:find("Unsupported control request subtype: telepathy_probe", 1, true)
      then cli:fail("unexpected answer: " .. tostring(err)) end
      cli:reply("still here")
    ]]
    local s <close> = assert(claude.connect(opts))
    assert(s:send("go"))
    local last
    for msg in s:receive(30) do last = msg end
    assert.equal("still here", last.result)
  end)

  it("hook inputs with new fields, and a hook event of its own: every field reaches the hook",
    function()
    local opts, fake = testing.fake_cli [[
      cli:expect_initialize()
      cli:expect_user()
      local outs = cli:run_hooks("PreToolUse", { tool_name = "Bash", tool_input = {},
        tool_use_id = "toolu_1", mcp_server = { name = "x", built_in = true,
        aurora_level = 3 } })
      local future = cli:run_hooks("SolarFlare", { flare_class = "X9", corona = { k = 1 } })
      if not (outs[1] and future[1]) then cli:fail("a hook did not answer") end
      cli:send({ type = "system", subtype = "hook_outputs", session_id = cli.session_id,
        uuid = "u-outs", pre = outs[1], flare = future[1] })
      cli:reply("done")
    ]]
    local inputs = {}
    local got = {}
    for msg in claude.query("go", testing.merge(opts, { hooks = {
      PreToolUse = function(input)
        inputs.pre = input
        return { hook_specific_output = { permission_decision = "allow",
          thunder_rationale = "new" }, moonlight_mode = true }
      end,
      SolarFlare = function(input)
        inputs.flare = input
        return { hook_specific_output = { shield_up = true } }
      end,
    } })) do got[#got + 1] = msg end
    assert.same({ name = "x", built_in = true, aurora_level = 3 }, inputs.pre.mcp_server)
    assert.equal("X9", inputs.flare.flare_class)
    assert.same({ k = 1 }, inputs.flare.corona)
    assert.equal("SolarFlare", inputs.flare.hook_event_name)
    -- what the hooks returned reached the CLI, the newer names as written
    local outs
    for _, m in ipairs(got) do if m.subtype == "hook_outputs" then outs = m end end
    assert.equal(true, outs.pre.moonlight_mode)
    assert.equal("new", outs.pre.hookSpecificOutput.thunder_rationale)
    assert.equal("allow", outs.pre.hookSpecificOutput.permissionDecision)
    assert.same({ shield_up = true, hookEventName = "SolarFlare" },
      outs.flare.hookSpecificOutput)
    -- the event was registered with the CLI
    local init = fake:read_log():find("control_request", "initialize")
    assert.is_table(init.request.hooks.SolarFlare)
    -- the event, and the two output fields of a known event (a new event's are its own)
    assert.equal(3, #warnings, table.concat(warnings, "\n"))
  end)

  it("a newer CLI's option, agent field and server config field reach the CLI, each after "
    .. "one warning that names the CLI claudelua knows", function()
    local opts, fake = testing.fake_cli [[
      cli:expect_initialize()
      cli:expect_user()
      local d = cli:can_use_tool("Bash", { command = "ls" })
      cli:send({ type = "system", subtype = "decision", session_id = cli.session_id,
        uuid = "u-d", decision = d })
      cli:reply("ok")
    ]]
    local got = {}
    for msg in claude.query("go", testing.merge(opts, {
      hyperlane_routing = { lanes = 3 },
      agents = { scout = { description = "d", prompt = "p", warp_signature = "w" } },
      mcp_servers = { far = { type = "http", url = "http://127.0.0.1:9/mcp",
        quasar_transport = "beam" } },
      can_use_tool = function()
        return { behavior = "allow", updated_input = { command = "ls" },
          decision_classification = "config", tool_use_id = "toolu_x",
          galaxy_audit = "kept" }
      end,
    })) do got[#got + 1] = msg end
    local log = fake:read_log()
    local init = log:find("control_request", "initialize").request
    assert.same({ lanes = 3 }, init.hyperlaneRouting)
    assert.equal("w", init.agents.scout.warpSignature)
    -- (the servers go in initialize by default, or on the command line with "argv")
    local flag = log:flag("--mcp-config")
    local servers = flag and json.decode(flag).mcpServers or init.mcpServers
    assert.equal("beam", servers.far.quasar_transport)
    local d
    for _, m in ipairs(got) do if m.subtype == "decision" then d = m.decision end end
    assert.equal("config", d.decisionClassification)
    assert.equal("toolu_x", d.toolUseID)
    assert.equal("kept", d.galaxy_audit)
    assert.equal(4, #warnings, table.concat(warnings, "\n"))
    for _, w in ipairs(warnings) do
      assert.matches("not a name of CLI " .. compat.CLI_VERSION, w, 1, true)
    end
  end)
end)
