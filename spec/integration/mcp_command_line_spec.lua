-- The command line of `claudelua mcp`: its help, its mistakes, and a tools file that
-- raises, each said the way the docs promise (one line on stderr, status 1).
local harness = require "support.harness"

local host, q = harness.claudelua, harness.quote

describe("claudelua mcp, the command line", function()
  before_each(harness.before)
  after_each(harness.after)

  it("--help lists the general options before the OAuth ones, and install", function()
    local code, out = harness.sh(host .. " mcp --help")
    assert.equal(0, code)
    local oauth = assert(out:find("\nOAuth", 1, true))
    for _, flag in ipairs { "--server NAME", "--watch", "--grace", "--max-message",
      "--request-timeout", "-h, --help", "--stateless" } do
      local at = assert(out:find(flag, 1, true), flag)
      assert(at < oauth, flag .. " is listed under the OAuth heading")
    end
    assert.truthy(out:find("claudelua mcp install", 1, true))
    code, out = harness.sh(host .. " mcp install --help")
    assert.equal(0, code)
    assert.truthy(out:find("--client NAME", 1, true))
  end)

  it("suggests the option meant", function()
    local code, _, err = harness.sh(host .. " mcp --htp 8080 tools.lua")
    assert.equal(1, code)
    assert.matches("unknown option '%-%-htp' %(did you mean '%-%-http'%?%)", err)
    _, _, err = harness.sh(host .. " mcp --wacth tools.lua")
    assert.matches("did you mean '%-%-watch'%?", err)
  end)

  it("says what is wrong with --tasks (or CLAUDELUA_MCP_TASKS), never its password",
    function()
    local path = harness.tempfile("return require('claude').server('s', {})\n", ".lua")
    local function run(args, env)
      local code, out, err = harness.sh((env or "") .. host .. " mcp --http 127.0.0.1:0 "
        .. args .. " " .. q(path) .. " < /dev/null")
      assert.is_nil(err:find("pw-secret", 1, true), err)
      return code, out, err
    end
    local code, _, err = run("--tasks rediss://:pw-secret@127.0.0.1:6380")
    assert.equal(1, code)
    assert.matches("^[^\n]*%-%-tasks: rediss:// %(Redis over TLS%) is not supported: [^\n]*"
      .. "has no TLS", err)
    _, _, err = run("--tasks postgres://u:pw-secret@db/x")
    assert.matches("%-%-tasks: 'memory' or a redis://", err)
    _, _, err = run("", "CLAUDELUA_MCP_TASKS=redis://:pw-secret@h:99999 ")
    assert.matches("CLAUDELUA_MCP_TASKS: bad port in 'redis://%*%*%*@h:99999'", err)
    os.remove(path)
  end)

  it("a tools file that raises: one line, where and why", function()
    local path = harness.tempfile("local function f() error('bad config') end\nf()\n", ".lua")
    local code, out, err = harness.sh(host .. " mcp " .. q(path) .. " < /dev/null")
    os.remove(path)
    assert.equal(1, code)
    assert.equal("", out)
    assert.matches("^[^\n]*%.lua failed: [^\n]*%.lua:1: bad config\n$", err)
  end)
end)
