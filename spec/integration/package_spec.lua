-- Packaging: one self-contained claudelua (the Lua files compiled in), and
-- libclaudelua with its header, claudelua.pc and CMake package, used by the
-- example application in examples/embed/ built against an installed copy.
local harness = require "support.harness"

local q, tempdir = harness.quote, harness.tempdir
local root = harness.root
local build = harness.build:sub(1, 1) == "/" and harness.build or (root .. "/" .. harness.build)

local function sh(cmd) return harness.sh("(" .. cmd .. ")") end

-- A sanitized build installs a sanitized library: the examples linking it
-- are built with the same flags.
local SANITIZE = os.getenv("CLAUDELUA_SANITIZER_PRELOAD")
  and "-fsanitize=address,undefined -fno-omit-frame-pointer" or nil

describe("the claudelua executable", function()
  it("runs with no Lua files anywhere: copied alone into an empty directory", function()
    local dir = tempdir()
    assert.equal(0, (sh("cp " .. q(build .. "/claudelua") .. " " .. dir)))
    local code, out, err = sh("cd " .. dir .. " && env -i ./claudelua -e " .. q([[
      local claude = require "claude"
      local t = claude.spawn(function() claude.sleep(0.01) return "ok" end)
      print(t:wait(), debug.getinfo(claude.run, "S").source, require("claude.json").encode({1}))]]))
    assert.equal(0, code, err)
    assert.equal("ok\t=claude/init.lua\t[1]\n", out)
    os.execute("rm -rf " .. dir)
  end)

  it("runs a query against the fake CLI from an empty directory", function()
    local dir = tempdir()
    assert.equal(0, (sh("cp " .. q(build .. "/claudelua") .. " " .. dir)))
    local code, out, err = sh("cd " .. dir .. " && env -i ./claudelua -e " .. q([[
      local claude, testing = require "claude", require "claude.testing"
      local options, fake = testing.fake_cli [=[
        cli:expect_initialize()
        local _, text = cli:expect_user()
        cli:system_init()
        cli:assistant("You said: " .. text)
        cli:result()
      ]=]
      for msg in claude.query("hi", options) do
        if msg.type == "result" then print(claude.text(msg)) end
      end
      fake:cleanup()
      testing.cleanup()]]))
    assert.equal(0, code, err)
    assert.equal("You said: hi\n", out)
    assert.equal(0, (sh("rm " .. dir .. "/claudelua && rmdir " .. dir))) -- nothing left behind
  end)

  it("takes the Lua files from CLAUDELUA_LUA_PATH first, except under -E", function()
    local dir = tempdir()
    assert.equal(0, (sh("cp -r " .. q(root .. "/lua/claude") .. " " .. dir)))
    local f = assert(io.open(dir .. "/claude/devmark.lua", "w"))
    f:write('return "the directory"\n')
    f:close()
    local probe = q([[local c = require "claude"
      print(select(2, pcall(require, "claude.devmark")):match("^[^\n]*"),
            debug.getinfo(c.run, "S").source)]])
    local code, out, err = sh("CLAUDELUA_LUA_PATH=" .. dir .. " " .. q(build .. "/claudelua")
      .. " -e " .. probe)
    assert.equal(0, code, err)
    assert.equal("the directory\t@" .. dir .. "/claude/init.lua\n", out)
    code, out, err = sh("CLAUDELUA_LUA_PATH=" .. dir .. " " .. q(build .. "/claudelua")
      .. " -E -e " .. probe)
    assert.equal(0, code, err)
    assert.equal("module 'claude.devmark' not found:\t=claude/init.lua\n", out)
    os.execute("rm -rf " .. dir)
  end)

  it("ignores other copies of the Lua files on package.path", function()
    local dir = tempdir()
    os.execute("mkdir -p " .. dir .. "/claude")
    local f = assert(io.open(dir .. "/claude/init.lua", "w"))
    f:write('error("an older installed copy was loaded")\n')
    f:close()
    local code, out, err = sh("LUA_PATH=" .. q(dir .. "/?.lua;" .. dir .. "/?/init.lua;;") .. " "
      .. q(build .. "/claudelua") .. " -e " .. q('print(require("claude")._VERSION)'))
    assert.equal(0, code, err)
    assert.matches("^claude %d+%.%d+%.%d+\n$", out)
    os.execute("rm -rf " .. dir)
  end)

  it("answers --version and --help, and rejects an unknown long option", function()
    local code, out = sh(q(build .. "/claudelua") .. " --version")
    assert.equal(0, code)
    assert.matches("^claudelua %d+%.%d+%.%d+ %(Lua 5%.4%.%d+, libuv %d+%.%d+%.%d+%)\n$", out)
    code, out = sh(q(build .. "/claudelua") .. " --help")
    assert.equal(0, code)
    assert.matches("^usage: .-CLAUDELUA_LUA_PATH", out)
    local err
    code, out, err = sh(q(build .. "/claudelua") .. " --frobnicate")
    assert.equal(1, code)
    assert.equal("", out)
    assert.matches("unrecognized option '%-%-frobnicate'", err)
  end)
end)

describe("libclaudelua", function()
  local prefix

  setup(function()
    prefix = tempdir()
    local code, out, err = sh("cmake --install " .. q(build) .. " --prefix " .. prefix)
    assert.equal(0, code, out .. err)
  end)

  teardown(function()
    if prefix then os.execute("rm -rf " .. prefix) end
  end)

  it("installs a shared and a static library that do not link Lua, and the headers", function()
    local code, out = sh("ls " .. prefix .. "/lib " .. prefix .. "/include/claudelua")
    assert.equal(0, code)
    assert.matches("libclaudelua%.a", out)
    assert.matches("libclaudelua%.so", out)
    assert.matches("claude%.h", out)
    code, out = sh("ldd " .. prefix .. "/lib/libclaudelua.so")
    assert.equal(0, code)
    assert.matches("libuv", out)
    assert.not_matches("liblua", out)
    code, out = sh("nm -D --defined-only " .. prefix .. "/lib/libclaudelua.so")
    assert.equal(0, code)
    for _, name in ipairs { "claude_preload", "luaopen_claude", "luaopen_claude_core",
                            "claude_set_loop", "claude_get_loop" } do
      assert.matches(" T " .. name .. "\n", out)
    end
  end)

  local function check_example(dir)
    -- from /, so that no Lua file of the checkout can be found
    local code, out, err = sh("cd / && env -i " .. dir .. "/query " .. prefix .. "/bin/claudelua")
    assert.equal(0, code, err)
    assert.equal("answer: You said: hello from C\nloop close: ok\n", out)
    -- no interpreter named: claude.testing runs the fake with claudelua from PATH
    code, out, err = sh("cd / && env -i PATH=" .. prefix .. "/bin:/usr/bin:/bin "
      .. dir .. "/query")
    assert.equal(0, code, err)
    assert.equal("answer: You said: hello from C\nloop close: ok\n", out)
    code, out, err = sh("cd / && env -i " .. dir .. "/host")
    assert.equal(0, code, err)
    assert.equal("second woke after 0.01 s\nfirst woke after 0.25 s\n"
      .. "state finished: first\nstate finished: second\nloop close: ok\n", out)
  end

  it("builds examples/embed with pkg-config (claudelua.pc) and runs a query", function()
    local out_dir = tempdir()
    local flags = SANITIZE and (" CFLAGS=" .. q(SANITIZE) .. " LDFLAGS=" .. q(SANITIZE)) or ""
    local code, out, err = sh("PKG_CONFIG_PATH=" .. prefix .. "/lib/pkgconfig make -s -C "
      .. q(root .. "/examples/embed") .. " O=" .. out_dir .. flags)
    assert.equal(0, code, out .. err)
    check_example(out_dir)
    os.execute("rm -rf " .. out_dir)
  end)

  it("builds examples/embed with find_package(claudelua) and runs a query", function()
    local out_dir = tempdir()
    local flags = SANITIZE and (" -DCMAKE_C_FLAGS=" .. q(SANITIZE)
      .. " -DCMAKE_EXE_LINKER_FLAGS=" .. q(SANITIZE)) or ""
    local code, out, err = sh("cmake -S " .. q(root .. "/examples/embed") .. " -B " .. out_dir
      .. " -DCMAKE_PREFIX_PATH=" .. prefix .. flags .. " && cmake --build " .. out_dir)
    assert.equal(0, code, out .. err)
    check_example(out_dir)
    os.execute("rm -rf " .. out_dir)
  end)
end)

describe("libclaudelua in its build tree", function()
  it("builds examples/embed with pkg-config before installing (claudelua-uninstalled.pc)",
    function()
    local code, out = sh("PKG_CONFIG_PATH=" .. q(build)
      .. " pkg-config --cflags --libs claudelua-uninstalled")
    assert.equal(0, code, out)
    assert.equal("-I" .. root .. "/include -L" .. build .. " -lclaudelua",
      out:match("^(.-) %-luv"), out)
    -- pkg-config's convention: asked for claudelua, it takes the -uninstalled file it finds
    local out_dir = tempdir()
    local flags = SANITIZE and (" CFLAGS=" .. q(SANITIZE) .. " LDFLAGS=" .. q(SANITIZE)) or ""
    local err
    code, out, err = sh("PKG_CONFIG_PATH=" .. q(build) .. " make -s -C "
      .. q(root .. "/examples/embed") .. " O=" .. out_dir .. flags)
    assert.equal(0, code, out .. err)
    code, out, err = sh("cd / && env -i " .. out_dir .. "/query " .. q(build .. "/claudelua"))
    assert.equal(0, code, err)
    assert.equal("answer: You said: hello from C\nloop close: ok\n", out)
    os.execute("rm -rf " .. out_dir)
  end)
end)
