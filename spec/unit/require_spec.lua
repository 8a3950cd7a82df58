local claude = require "claude"
local async = require "claude.async"

local creq = claude.require
-- the data Lua's preload searcher gives a loader (Lua 5.3's gives none)
local PRELOAD = _VERSION ~= "Lua 5.3" and ":preload:" or nil

describe("claude.require", function()
  local names = {}
  local function preload(name, loader)
    names[#names + 1] = name
    package.preload[name] = loader
  end
  after_each(function()
    for _, name in ipairs(names) do
      package.preload[name], package.loaded[name] = nil, nil
    end
    names = {}
  end)

  it("is Lua's require for a loaded module: the same table", function()
    assert.equal(string, creq "string")
    assert.equal(require "claude.json", creq "claude.json")
  end)

  it("runs the loader once, with the name and the searcher's data, and caches it", function()
    local calls = 0
    preload("spec_req_a", function(name, data)
      calls = calls + 1
      return { name = name, data = data }
    end)
    local m, data = creq "spec_req_a"
    assert.same({ name = "spec_req_a", data = PRELOAD }, m)
    assert.equal(PRELOAD, data)
    assert.equal(m, creq "spec_req_a")
    assert.equal(m, package.loaded.spec_req_a)
    assert.equal(1, calls)
  end)

  it("gives true for a module that returns nothing, and keeps what it put in package.loaded",
    function()
      preload("spec_req_nil", function() end)
      preload("spec_req_set", function(name) package.loaded[name] = "set" end)
      assert.is_true(creq "spec_req_nil")
      assert.equal("set", creq "spec_req_set")
    end)

  it("lets a task wait inside the module's main chunk", function()
    preload("spec_req_wait", function()
      claude.sleep(0.001)
      return "waited"
    end)
    local t = async.spawn(function() return creq "spec_req_wait" end)
    assert.same({ "waited", PRELOAD }, { t:wait() })
  end)

  it("fails as require does for a missing module, at the caller's line", function()
    local ok, err = pcall(function() local m = creq "spec_req_missing"; return m end)
    assert.is_false(ok)
    assert.matches("require_spec.lua:%d+: module 'spec_req_missing' not found:\n\tno field "
      .. "package.preload%['spec_req_missing'%]", err)
    local lua_ok, lua_err = pcall(require, "spec_req_missing")
    assert.is_false(lua_ok)
    assert.equal(lua_err:match("not found:.*"), err:match("not found:.*"))
  end)

  it("passes a loader's error through, and loads nothing", function()
    preload("spec_req_err", function() error("broken module") end)
    local ok, err = pcall(creq, "spec_req_err")
    assert.is_false(ok)
    assert.matches("broken module", err)
    assert.is_nil(package.loaded.spec_req_err)
  end)

  it("rejects a name that is not a string, at the caller's line", function()
    local ok, err = pcall(function() local m = creq {}; return m end)
    assert.is_false(ok)
    assert.matches("require_spec.lua:%d+: bad argument #1 to 'require' %(string expected, "
      .. "got table%)", err)
  end)
end)
