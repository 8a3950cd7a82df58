-- A listening HTTP server keeps `claudelua script.lua` running after the script's
-- tasks end, as in Node, until it closes (or SIGINT); `ref = false` does not.
local harness = require "support.harness"
local process = require "claude.process"

local host = harness.claudelua

local function script(text)
  return harness.tempfile(text, ".lua")
end

describe("the claudelua host and listening servers", function()
  before_each(harness.before)
  after_each(harness.after)

  it("waits for a listening server until it closes", harness.task(function()
    local path = script([[
        local http = require "claude.http.server"
        local srv
        srv = assert(http.listen { on_request = function(req, res)
          res:respond(200, {}, "bye\n")
          srv:close()
        end })
        print(srv:port())
        io.stdout:flush()
      ]])
      local p <close> = assert(process.spawn { host, args = { path } })
      local port = assert(tonumber(p:read_line(10)))
      require("claude").sleep(0.3)
      assert.is_nil(p:wait(0.3)) -- still running: the server holds it
      local curl <close> = assert(process.spawn { "curl", args = { "-s",
        "http://127.0.0.1:" .. port .. "/" } })
      assert.equal("bye", curl:read_line(10))
      assert.equal(0, p:wait(10))
      os.remove(path)
  end, 30))

  it("does not wait for a server listening with ref = false", function()
    local path = script([[
      local http = require "claude.http.server"
      local srv = assert(http.listen { ref = false, on_request = function() end })
      print(srv:port() > 0)
    ]])
    local code, out = harness.sh("timeout 10 " .. host .. " " .. path)
    assert.equal(0, code)
    assert.equal("true\n", out)
    os.remove(path)
  end)

  it("a bad ref is the caller's mistake", function()
    assert.has_error(function()
      require("claude.http.server").listen { ref = 1, on_request = function() end }
    end, "bad field 'ref' to 'listen' (boolean expected, got number)")
  end)
end)
