-- The rule that tells a typo from a newer CLI's name (claude.session.compat): a name close
-- to a known one keeps its did-you-mean error; one close to none passes to the CLI with one
-- warning naming the CLI claudelua knows; `strict = true` refuses both.
local json = require "claude.json"
local argv = require "claude.session.argv"
local hooks = require "claude.session.hooks"
local compat = require "claude.session.compat"
local errors = require "claude.errors"

local function check(options)
  argv.check_options(options, "connect")
  hooks.register(options.hooks, "connect", options.strict)
end

-- Each row: what is written, the typo of it, and where its name is passed.
local ROWS = {
  { "an option", { nebula_window = 5 }, { modle = "x" },
    "unknown field 'modle' to 'connect' (did you mean 'model'?)", "nebula_window" },
  { "an agent field", { agents = { a = { prompt = "p", warp_drive_level = 2 } } },
    { agents = { a = { prompt = "p", modle = "x" } } },
    "unknown field 'agents.a.modle' to 'connect' (did you mean 'agents.a.model'?)",
    "agents.a.warp_drive_level" },
  { "a hook event", { hooks = { SolarFlare = print } }, { hooks = { PreToolUze = print } },
    "unknown field 'hooks.PreToolUze' to 'connect' (did you mean 'hooks.PreToolUse'?)",
    "hooks.SolarFlare" },
  { "a server config field",
    { mcp_servers = { s = { type = "http", url = "http://x", quasar_beam = true } } },
    { mcp_servers = { s = { type = "http", url = "http://x", header = {} } } },
    "unknown field 'mcp_servers.s.header' to 'connect' (did you mean 'mcp_servers.s.headers'?)",
    "mcp_servers.s.quasar_beam" },
}

describe("a newer CLI's name or a typo", function()
  local warnings
  local sink
  before_each(function()
    compat.reset()
    warnings = {}
    sink = compat.set_sink(function(msg) warnings[#warnings + 1] = msg end)
  end)
  after_each(function() compat.set_sink(sink) end)

  for _, row in ipairs(ROWS) do
    local what, new, typo, typo_err, full = row[1], row[2], row[3], row[4], row[5]
    it(what .. ": a typo keeps its did-you-mean error", function()
      local ok, err = pcall(check, typo)
      assert.is_false(ok)
      assert.matches(typo_err, err, 1, true)
      assert.same({}, warnings)
    end)

    it(what .. ": a name close to none passes, with one warning for it", function()
      check(new)
      check(new) -- a second session: no second warning
      assert.equal(1, #warnings)
      assert.matches("unknown field '" .. full .. "' to 'connect': not a name of CLI "
        .. compat.CLI_VERSION .. " (the newest claudelua knows), so passed to the CLI",
        warnings[1], 1, true)
    end)

    it(what .. ": strict = true refuses it", function()
      new.strict = true
      local ok, err = pcall(check, new)
      new.strict = nil
      assert.is_false(ok)
      assert.matches("unknown field '" .. full .. "' to 'connect'", err, 1, true)
      assert.same({}, warnings)
    end)
  end

  it("an agent's auto_compact_window under 100000: refused (the CLI drops every agent)",
    function()
    local ok, err = pcall(check, { agents = { a = { prompt = "p", auto_compact_window = 5e4 } } })
    assert.is_false(ok)
    assert.matches("bad field 'agents.a.auto_compact_window' to 'connect' (an integer of at "
      .. "least 100000", err, 1, true)
    check { agents = { a = { prompt = "p", auto_compact_window = 100000 } } }
  end)

  it("a value no JSON carries is refused, not passed on", function()
    local ok, err = pcall(check, { nebula_callback = print })
    assert.is_false(ok)
    assert.matches("a function cannot be passed on to the CLI", err, 1, true)
  end)

  it("the option goes in initialize, in camelCase; the agent field too", function()
    local fields = argv.initialize_fields { nebula_window = 5 }
    assert.equal(5, fields.nebulaWindow)
    local agents = argv.agents_wire { a = { prompt = "p", warp_drive_level = 2,
      omit_claude_md = true, critical_system_reminder_experimental = "r" } }
    assert.same({ prompt = "p", warpDriveLevel = 2, omitClaudeMd = true,
      criticalSystemReminder_EXPERIMENTAL = "r" }, agents.a)
  end)

  it("a typo: a few edits, cut short or run on by two; a longer run-on is a name", function()
    local known = { max_turns = true, model = true }
    assert.is_true(errors.is_typo("max_turn", known))
    assert.is_true(errors.is_typo("max_tursn", known))
    assert.is_true(errors.is_typo("models", known))
    assert.is_false(errors.is_typo("max_turns_per_agent", known))
    assert.is_false(errors.is_typo("nebula_window", known))
  end)

  it("knows the CLI that package.json pins", function()
    local f = assert(io.open("package.json", "rb"))
    local pin = json.decode(f:read("a")).claudelua.cli
    f:close()
    assert.equal(pin, compat.CLI_VERSION)
  end)
end)
