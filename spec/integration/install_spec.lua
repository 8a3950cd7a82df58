-- Installing: `cmake --install` and `luarocks make` put the module where Lua
-- looks, and the installed claudelua finds its Lua files by itself.
local harness = require "support.harness"

local tempdir = harness.tempdir

local smoke = [[ -e 'local c = require "claude"
  local t = c.spawn(function() c.sleep(0.01) return "ok" end)
  print(t:wait(), package.searchpath("claude", package.path))' ]]

describe("installing", function()
  it("with cmake --install into a prefix", function()
    local prefix = tempdir()
    local code, _, err = harness.sh("cmake --install " .. harness.quote(harness.build)
      .. " --prefix " .. prefix)
    assert.equal(0, code, err)
    local out
    code, out, err = harness.sh("cd / && env -i " .. prefix .. "/bin/claudelua" .. smoke)
    assert.equal(0, code, err)
    assert.equal("ok\t" .. prefix .. "/bin/../share/lua/5.4/claude/init.lua\n", out)
    code, out, err = harness.sh("cd / && " .. harness.lua_preload .. "LUA_PATH='" .. prefix
      .. "/share/lua/5.4/?.lua;" .. prefix .. "/share/lua/5.4/?/init.lua;;' LUA_CPATH='"
      .. prefix .. "/lib/lua/5.4/?.so;;' lua5.4" .. smoke)
    assert.equal(0, code, err)
    assert.matches("^ok\t", out)
    os.execute("rm -rf " .. prefix)
  end)

  it("with luarocks make --deps-mode=none", function()
    if harness.sh("command -v luarocks") ~= 0 then
      return pending("luarocks is not installed (.ci/run installs it)")
    end
    local tree = tempdir()
    local code, out, err = harness.sh("luarocks --lua-version=5.4 --tree=" .. tree
      .. " make --deps-mode=none claudelua-scm-1.rockspec")
    assert.equal(0, code, out .. err)
    code, out, err = harness.sh("cd / && env -i " .. tree .. "/bin/claudelua" .. smoke)
    assert.equal(0, code, err)
    assert.equal("ok\t" .. tree .. "/bin/../share/lua/5.4/claude/init.lua\n", out)
    os.execute("rm -rf " .. tree)
  end)
end)
