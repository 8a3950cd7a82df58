-- Where the configs of external MCP servers go by default (mcp_servers_delivery): in
-- initialize, off the CLI's command line, where the CLI reads them there (2.1.326 on) or
-- its version cannot be told; on the command line for a CLI known older. Against the fake
-- CLI, started under a versioned install's name (~/.local/share/claude/versions/X.Y.Z).
local claude = require "claude"
local testing = require "claude.testing"
local cli = require "claude.session.argv"
local harness = require "support.harness"

local q = harness.quote
local SERVERS = { gh = { command = "gh-mcp", env = { GITHUB_TOKEN = "ghp_secret0123456789" } } }

-- Connects to an idle fake (run as `cli_path` when given, a versioned file name); returns
-- the fake's argv and the initialize request it got.
local function seen(options, version)
  local opts, fake = testing.fake_cli("cli:expect_initialize()")
  local dir
  if version then
    dir = harness.tempdir()
    local path = dir .. "/versions/" .. version
    os.execute("mkdir -p " .. q(dir .. "/versions"))
    local f = assert(io.open(path, "wb"))
    local argv = {}
    for i, a in ipairs(opts.cli_path) do argv[i] = q(a) end
    f:write("#!/bin/sh\nexec ", table.concat(argv, " "), ' "$@"\n')
    f:close()
    os.execute("chmod +x " .. q(path))
    opts.cli_path = path
  end
  local s = assert(claude.connect(testing.merge(opts, options)))
  s:close()
  local log = fake:read_log()
  if dir then os.execute("rm -rf " .. q(dir)) end
  return log.argv, log:find("control_request", "initialize").request
end

local function has(list, value)
  for _, v in ipairs(list) do if v == value then return true end end
  return false
end

describe("mcp_servers_delivery by default", function()
  before_each(harness.before)
  after_each(function()
    testing.cleanup()
    harness.after()
  end)

  it("initialize for a CLI that reads it there: no secret on the command line", function()
    local argv, init = seen({ mcp_servers = SERVERS }, "2.1.332")
    assert.is_false(has(argv, "--mcp-config"))
    assert.is_true(has(argv, "--await-initialize"))
    assert.same(SERVERS, init.mcpServers)
    for _, a in ipairs(argv) do assert.is_nil(a:find("ghp_secret", 1, true)) end
    -- the first version that reads them
    argv = seen({ mcp_servers = SERVERS }, cli.SERVERS_IN_INITIALIZE)
    assert.is_false(has(argv, "--mcp-config"))
  end)

  it("argv for a CLI known older", function()
    local argv, init = seen({ mcp_servers = SERVERS }, "2.1.325")
    assert.is_true(has(argv, "--mcp-config"))
    assert.is_false(has(argv, "--await-initialize"))
    assert.is_nil(init.mcpServers)
  end)

  it("initialize when the version cannot be told (an interpreter and a script)", function()
    local argv, init = seen { mcp_servers = SERVERS }
    assert.is_false(has(argv, "--mcp-config"))
    assert.same(SERVERS, init.mcpServers)
  end)

  it("the option wins either way", function()
    local argv = seen({ mcp_servers = SERVERS, mcp_servers_delivery = "argv" }, "2.1.332")
    assert.is_true(has(argv, "--mcp-config"))
    local _, init = seen({ mcp_servers = SERVERS, mcp_servers_delivery = "initialize" },
      "2.1.332")
    assert.same(SERVERS, init.mcpServers)
  end)

  it("tells an npm install's version from its package.json, without running it", function()
    local dir = harness.tempdir()
    os.execute("mkdir -p " .. q(dir .. "/claude-code/bin") .. " && printf '%s' "
      .. q('{"name":"@anthropic-ai/claude-code","version":"2.1.301"}') .. " > "
      .. q(dir .. "/claude-code/package.json") .. " && printf '#!/bin/sh\\nexit 9\\n' > "
      .. q(dir .. "/claude-code/bin/claude.exe"))
    assert.equal("2.1.301", cli.cli_version(dir .. "/claude-code/bin/claude.exe"))
    assert.equal("argv", cli.servers_delivery({}, dir .. "/claude-code/bin/claude.exe"))
    assert.is_nil(cli.cli_version(dir .. "/nothing"))
    os.execute("rm -rf " .. q(dir))
  end)
end)
