-- The messages of a first hour with the `claudelua` command (issue 36): help at every level,
-- one line with one prefix for a mistake, where a JSON file is wrong, a busy port by its
-- number, a refusal that reads as a sentence, and a start-up line for a person at a
-- terminal (none for a client's pipe).
local harness = require "support.harness"

local host, q = harness.claudelua, harness.quote

-- two servers, calc first
local TOOLS = harness.root .. "/spec/support/mcp_http_tools.lua"

describe("claudelua's messages", function()
  local tools = TOOLS
  before_each(harness.before)
  after_each(harness.after)

  it("-h shows the help at the top level, as --help, mcp -h and mcp install -h do", function()
    for _, args in ipairs { "-h", "--help", "mcp -h", "mcp install -h" } do
      local code, out, err = harness.sh(host .. " " .. args)
      assert.equal(0, code, args .. ": " .. err)
      assert.matches("^usage: ", out, 1)
      assert.equal("", err)
    end
  end)

  it("a command's mistake: one line, one prefix (the command's name, no error kind)", function()
    local code, _, err = harness.sh(host .. " mcp no-such-file.lua < /dev/null")
    assert.equal(1, code)
    assert.matches("^[^\n]*claudelua mcp: cannot open no%-such%-file%.lua[^\n]*\n$", err)
    code, _, err = harness.sh(host .. " mcp install --client cursr " .. q(tools))
    assert.equal(1, code)
    assert.matches("^[^\n]*claudelua mcp install: unknown client 'cursr'[^\n]*\n$", err)
    assert.is_nil(err:find("usage:", 1, true))
  end)

  it("a busy port: 'port N is in use', in one line", function()
    local code, out, err = harness.sh("python3 -c " .. q([==[
import socket, subprocess, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen()
port = s.getsockname()[1]
r = subprocess.run([sys.argv[1], "mcp", "--http", str(port), sys.argv[2]],
                   capture_output=True, text=True, timeout=20)
print(port)
sys.stderr.write(r.stderr)
sys.exit(r.returncode)
]==]) .. " " .. q(host) .. " " .. q(tools))
    assert.equal(1, code, err)
    local port = assert(out:match("^(%d+)\n$"), out)
    assert.matches("^[^\n]*claudelua mcp: port " .. port .. " is in use [^\n]*\n$", err)
  end)

  it("0.0.0.0 without authentication: refused in a sentence for the command's user", function()
    local code, _, err = harness.sh(host .. " mcp --http 0.0.0.0:0 " .. q(tools))
    assert.equal(1, code)
    assert.matches("^[^\n]*claudelua mcp: 0%.0%.0%.0 can be reached from other machines, and "
      .. "server 'calc' has no authentication: [^\n]*%-%-no%-auth[^\n]*\n$", err)
    assert.is_nil(err:find("bad field", 1, true))
  end)

  it("a broken --demo scenario: the line and column of the mistake", function()
    local bad = harness.tempfile('{\n  "turns": [\n    {"text": "hi",}\n  ]\n}\n', ".json")
    local code, _, err = harness.sh(host .. " --demo=" .. q(bad) .. " -e 'print(1)'")
    os.remove(bad)
    assert.equal(1, code)
    assert.matches("^[^\n]*: demo scenario: [^\n]*%.json: line 3, column 19: invalid JSON: "
      .. "[^\n]*\n$", err)
  end)

  it("claudelua mcp at a terminal says it serves, on stderr; over a pipe it says nothing",
    function()
      local input = harness.tempfile("<C-c>\n")
      local code, out = harness.sh("python3 spec/support/pty_run.py 20 NO-PROMPT " .. host
        .. " mcp --server calc " .. q(tools) .. " < " .. input)
      os.remove(input)
      assert.equal(130, code, out)
      assert.matches("^claudelua mcp: serving 'calc' over stdio %(", out)
      local err
      code, out, err = harness.sh(host .. " mcp --server calc " .. q(tools) .. " < /dev/null")
      assert.equal(0, code, err)
      assert.equal("", out)
      assert.equal("", err)
    end)
end)
