-- Installing: `cmake --install` and `luarocks make` give a claudelua with its
-- Lua files compiled in, and put the module where stock lua5.4 looks; the
-- build finds Lua 5.4 by any common pkg-config name or from LUA_INCDIR.
local harness = require "support.harness"

local q, tempdir = harness.quote, harness.tempdir

local smoke = [[ -e 'local c = require "claude"
  local t = c.spawn(function() c.sleep(0.01) return "ok" end)
  print(t:wait(), debug.getinfo(c.run, "S").source)' ]]

-- A pkg-config directory holding the .pc files of the libraries the build
-- needs (libuv, h2o, and what they require), and no Lua .pc file: with it as
-- PKG_CONFIG_LIBDIR, Lua can only be found some other way.
local function libuv_only()
  local dir = tempdir()
  local libs = "libuv libh2o libcurl libcrypto libpcre2-8 libidn2 hiredis yaml-0.1"
  local code, out = harness.sh("pkg-config --print-requires --print-requires-private "
    .. libs .. " 2>/dev/null; echo " .. libs)
  assert.equal(0, code)
  for name in out:gmatch("[%w_.+-]+") do
    local c, pcdir = harness.sh("pkg-config --variable=pcfiledir " .. name)
    if c == 0 then
      harness.sh("cp " .. q(pcdir:gsub("\n$", "") .. "/" .. name .. ".pc") .. " " .. dir)
    end
  end
  return dir
end

-- Configures (no build) the checkout into a new directory; returns the exit
-- code and the output.
local function configure(env, args)
  local dir = tempdir()
  local code, out, err = harness.sh("cd " .. q(harness.root) .. " && " .. env .. " cmake -S . -B "
    .. dir .. " " .. (args or ""))
  os.execute("rm -rf " .. dir)
  return code, (out .. err):gsub("%s+", " ") -- CMake wraps long messages
end

describe("installing", function()
  it("with cmake --install into a prefix", function()
    local prefix = tempdir()
    local code, _, err = harness.sh("cmake --install " .. q(harness.build)
      .. " --prefix " .. prefix)
    assert.equal(0, code, err)
    local out
    code, out, err = harness.sh("cd / && env -i " .. prefix .. "/bin/claudelua" .. smoke)
    assert.equal(0, code, err)
    assert.equal("ok\t=claude/init.lua\n", out)
    code, out, err = harness.sh("cd / && " .. harness.lua_preload .. "LUA_PATH='" .. prefix
      .. "/share/lua/5.4/?.lua;" .. prefix .. "/share/lua/5.4/?/init.lua;;' LUA_CPATH='"
      .. prefix .. "/lib/lua/5.4/?.so;;' lua5.4" .. smoke)
    assert.equal(0, code, err)
    assert.equal("ok\t@" .. prefix .. "/share/lua/5.4/claude/init.lua\n", out)
    os.execute("rm -rf " .. prefix)
  end)

  it("with luarocks make --deps-mode=none, with no pkg-config file for Lua", function()
    if harness.sh("command -v luarocks") ~= 0 then
      return pending("luarocks is not installed (.ci/run installs it)")
    end
    local tree, pcdir, src = tempdir(), libuv_only(), tempdir()
    -- from a copy: luarocks builds inside the source tree (build.luarocks/),
    -- and the suite runs this spec twice at once (plain and inside the host)
    local code, _, err = harness.sh("cd " .. q(harness.root) .. " && cp -r CMakeLists.txt cmake "
      .. "src include lua examples claudelua-scm-1.rockspec " .. src)
    assert.equal(0, code, err)
    local out
    code, out, err = harness.sh("cd " .. src .. " && PKG_CONFIG_LIBDIR="
      .. pcdir .. " luarocks --lua-version=5.4 --tree=" .. tree
      .. " make --deps-mode=none claudelua-scm-1.rockspec")
    assert.equal(0, code, out .. err)
    assert.matches("Lua 5.4: LUA_INCDIR=", out .. err)
    code, out, err = harness.sh("cd / && env -i " .. tree .. "/bin/claudelua" .. smoke)
    assert.equal(0, code, err)
    assert.equal("ok\t=claude/init.lua\n", out)
    os.execute("rm -rf " .. tree .. " " .. pcdir .. " " .. src)
  end)
end)

describe("configuring", function()
  it("finds Lua 5.4 under the pkg-config name lua (as Fedora and Arch call it)", function()
    local pcdir = libuv_only()
    local code, out = harness.sh("pkg-config --variable=pcfiledir lua5.4")
    assert.equal(0, code)
    assert.equal(0, (harness.sh("cp " .. q(out:gsub("\n$", "") .. "/lua5.4.pc") .. " "
      .. pcdir .. "/lua.pc")))
    local log
    code, log = configure("PKG_CONFIG_LIBDIR=" .. pcdir)
    assert.equal(0, code, log)
    assert.matches("Lua 5.4: pkg%-config lua 5%.4", log)
    os.execute("rm -rf " .. pcdir)
  end)

  it("says what is missing when no Lua 5.4 can be found", function()
    local pcdir = libuv_only()
    local code, log = configure("PKG_CONFIG_LIBDIR=" .. pcdir)
    assert.is_not.equal(0, code)
    assert.matches("Lua 5%.4 not found: no pkg%-config file %(lua5%.4;lua54;lua%-5%.4;lua%) "
      .. "says 5%.4; install liblua5%.4%-dev, or pass %-DLUA_INCDIR", log)
    os.execute("rm -rf " .. pcdir)
  end)

  it("refuses a lua.h that is not Lua 5.4", function()
    local dir = tempdir()
    local f = assert(io.open(dir .. "/lua.h", "w"))
    f:write('#define LUA_VERSION_MAJOR\t"5"\n#define LUA_VERSION_MINOR\t"3"\n')
    f:close()
    local libdir = harness.sh("pkg-config --variable=libdir lua5.4") == 0 and
      select(2, harness.sh("pkg-config --variable=libdir lua5.4")):gsub("\n$", "") or "/usr/lib"
    local code, log = configure("", "-DLUA_INCDIR=" .. dir .. " -DLUA_LIBDIR=" .. libdir)
    assert.is_not.equal(0, code)
    assert.matches(dir:gsub("%p", "%%%0") .. "/lua%.h is not Lua 5%.4", log)
    os.execute("rm -rf " .. dir)
  end)
end)
