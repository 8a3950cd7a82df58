-- Every object type of the library has a `__name` of its own (so that type errors and
-- `claude.errors.typename` read well) and a `__tostring`.
local claude = require "claude"
local core = require "claude.core"
local async = require "claude.async"
local errors = require "claude.errors"
local queue = require "claude.queue"
local router = require "claude.mcp.router"
local testing = require "claude.testing"
local fake_cli = require "claude.testing.fake_cli"
local peer = require "claude.testing.peer"

-- name -> a function making one object of that type (and a cleanup, if it needs one)
local function makers()
  local t = claude.tool("t", function() return "ok" end)
  local ctx
  local probe = claude.tool("probe", function(_, c) ctx = c end)
  return {
    { "claude.Tool", function() return t end },
    { "claude.Resource", function()
      return claude.resource { uri = "u://a", name = "a", text = "x" }
    end },
    { "claude.ResourceTemplate", function()
      return claude.resource_template { uri_template = "u://{x}", name = "a", read = print }
    end },
    { "claude.Prompt", function() return claude.prompt { name = "p", get = print } end },
    { "claude.Server", function() return claude.server("s", { t }) end },
    { "claude.Router", function() return router.new { s = claude.server("s") } end },
    { "claude.RequestContext", function()
      router.new { s = claude.server("s", { probe }) }:handle("s", { jsonrpc = "2.0", id = 1,
        method = "tools/call", params = { name = "probe", arguments = {} } })
      return ctx
    end },
    { "claude.Task", function() return claude.spawn(function() end) end },
    { "claude.Event", function() return async.event() end },
    { "claude.Queue", function() return queue.new() end },
    { "claude.Error", function() return errors.new("timeout", "late") end },
    { "claude.core.Timer", function() return core.timer() end, function(o) o:close() end },
    { "claude.core.Process", function() -- the C userdata under claude.process
      local p = assert(claude.process.spawn { "true" })
      p:wait(10)
      return p.raw, function() p:close() end
    end },
    { "claude.Session", function()
      local opts, fake = testing.fake_cli("cli:expect_initialize()")
      local s = assert(claude.connect(opts))
      return s, function() s:close(); fake:cleanup() end
    end },
    { "claude.FakeCliHandle", function()
      local _, fake = testing.fake_cli("cli:expect_eof()")
      return fake, function() fake:cleanup() end
    end },
    { "claude.FakeCliLog", function()
      local path = os.tmpname()
      local log = assert(testing.read_log(path))
      os.remove(path)
      return log
    end },
    { "claude.FakeCli", function() return fake_cli.new { argv = {} } end },
    { "claude.testing.Peer", function() return peer.new {} end },
  }
end

describe("object types", function()
  it("each has a __name of its own and a __tostring", function()
    local seen = {}
    for _, row in ipairs(makers()) do
      local name, make = row[1], row[2]
      local obj, cleanup = make()
      local mt = getmetatable(obj)
      assert.is_table(mt, name)
      assert.equal(name, mt.__name)
      assert.is_nil(seen[mt.__name], "two types named " .. name)
      seen[mt.__name] = mt
      assert.is_function(mt.__tostring, name .. " has no __tostring")
      local text = tostring(obj)
      assert.is_string(text)
      assert.is_nil(text:find("^" .. name:gsub("%.", "%%.") .. ": 0x"), text) -- not the default
      if cleanup then cleanup(obj) elseif row[3] then row[3](obj) end
    end
  end)

  it("claude.process's object is named apart from the C userdata under it", function()
    local p = assert(claude.process.spawn { "true" })
    p:wait(10)
    local lua_name, c_name = getmetatable(p).__name, getmetatable(p.raw).__name
    local text = tostring(p)
    p:close()
    assert.equal("claude.Process", lua_name)
    assert.equal("claude.core.Process", c_name)
    assert.matches("^claude%.Process %(pid %d+, finished%)$", text)
  end)
end)
