-- The `spawn` option against the fake CLI of claude.testing: what a spawn function is
-- given, a wrapper command that runs the CLI, and the failures of a spawn function.
-- The real CLI over ssh: spec/e2e/session_ssh_spec.lua.
local claude = require "claude"
local process = require "claude.process"
local testing = require "claude.testing"
local harness = require "support.harness"

describe("the spawn option", function()
  before_each(harness.before)
  after_each(function()
    testing.cleanup()
    harness.after()
  end)

  it("gets the command, its arguments and the variables the session sets", function()
    local opts, fake = testing.fake_cli("cli:expect_initialize()")
    local seen
    local s = assert(claude.connect(testing.merge(opts, {
      env = { MY_VAR = "1" }, model = "m",
      spawn = function(spec)
        seen = spec
        -- run it through env(1), as a wrapper would
        local wrapped = {}
        for k, v in pairs(spec) do wrapped[k] = v end
        wrapped[1] = "/usr/bin/env"
        wrapped.args = { spec.command, table.unpack(spec.args) }
        return process.spawn(wrapped)
      end,
    })))
    s:close()
    assert.equal(opts.cli_path[1], seen.command)
    assert.equal(opts.cli_path[2], seen.args[1]) -- the fake's program, then its script
    assert.equal("1", seen.env_changes.MY_VAR)
    assert.equal("sdk-lua", seen.env_changes.CLAUDE_CODE_ENTRYPOINT)
    assert.is_false(seen.env_changes.CLAUDECODE)
    assert.equal("1", seen.env.MY_VAR) -- the whole environment, for a local child
    assert.equal("json", seen.stdout)
    local log = fake:read_log()
    assert.equal(0, log.exit_code)
    assert.equal("m", log:flag("--model"))
  end)

  it("a spawn function that fails is a connection error; a wrong result, a misuse", function()
    local opts = testing.fake_cli("cli:expect_initialize()")
    local s, err = claude.connect(testing.merge(opts, { spawn = function()
      return nil, "no host"
    end }))
    assert.is_nil(s)
    assert.equal("connection", err.kind)
    assert.matches("could not start the CLI: no host", err.message, 1, true)
    s, err = claude.connect(testing.merge(opts, { spawn = function() error("boom") end }))
    assert.is_nil(s)
    assert.matches("the spawn function failed: .*boom", err.message)
    local ok, msg = pcall(claude.connect, testing.merge(opts, { spawn = function()
      return {}
    end }))
    assert.is_false(ok)
    assert.matches("must return a claude.process", tostring(msg), 1, true)
  end)

  it("claude.ssh checks its options", function()
    assert.has_error(function() claude.ssh {} end,
      "bad field 'host' to 'ssh' (a host name expected)")
    local ok, msg = pcall(claude.ssh, { host = "h", prot = 22 })
    assert.is_false(ok)
    assert.matches("unknown field 'prot' to 'ssh' %(did you mean 'port'%?%)", msg)
  end)
end)
