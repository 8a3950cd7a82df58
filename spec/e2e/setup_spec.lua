-- The README's first command (the product's set-up, tools/setup.sh) run as a newcomer runs
-- it: in a fresh copy of the checkout (its files, no build/, no node_modules/), with a clean
-- HOME and a PATH of /usr/bin:/bin. It must put `claudelua` on the PATH it tells the user to
-- set, run the demo, and ask for no package of the test lab.
--
-- How "no package of the test lab" is checked: this machine has every package already, so
-- the set-up would ask apt-get for nothing. The set-up runs with a few commands shadowed
-- (a directory of shims ahead of /usr/bin): dpkg-query answers "not installed" for every
-- package, so the set-up asks apt-get for its whole list; apt-get only writes down what it
-- is asked for (nothing is installed, the build uses the packages already here); sudo runs
-- its command; node, npm and npx write down that they were called (the product's set-up
-- needs neither). The rest is real: the build, `cmake --install`, the pinned CLI fetched
-- from the npm registry, the demo.
local harness = require "support.harness"

local q = harness.quote
local root = harness.root

-- The test lab's packages (tools/packages.sh lab), named here rather than read from that
-- file, so that moving one into the product's set is caught.
local LAB = { "chromium", "openssh-server", "haproxy", "wrk", "nodejs", "npm", "clang",
              "valgrind", "lua-busted", "luarocks" }

-- The README's first command: the first line of its first sh block, without its comment.
local function readme_first_command()
  local f = assert(io.open(root .. "/README.md", "rb"))
  local text = f:read("a")
  f:close()
  local block = assert(text:match("\n```sh\n(.-)\n```"), "README.md has no sh block")
  local line = assert(block:match("^[^\n]+"))
  return (line:gsub("%s+#.*$", ""))
end

local function write(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
  assert(os.execute("chmod +x " .. q(path)))
end

describe("the README's first command (the product's set-up)", function()
  local dir

  teardown(function()
    if dir then os.execute("rm -rf " .. q(dir)) end
  end)

  it("puts claudelua on PATH, runs the demo, and asks for no package of the test lab",
    function()
    local command = readme_first_command()
    dir = harness.tempdir()
    local src, home, shims = dir .. "/src", dir .. "/home", dir .. "/shims"
    assert(os.execute("mkdir -p " .. q(src) .. " " .. q(home) .. " " .. q(shims)))
    -- the checkout's files as a clone has them (with the uncommitted ones being worked on)
    local code, out, err = harness.sh("git -C " .. q(root) .. " ls-files -z --cached --others "
      .. "--exclude-standard | tar -C " .. q(root) .. " --null -T - --ignore-failed-read -cf - "
      .. "| tar -xf - -C " .. q(src))
    assert.equal(0, code, out .. err)

    local log = dir .. "/asked"
    write(shims .. "/dpkg-query", "#!/bin/sh\nexit 1\n")
    write(shims .. "/apt-get", "#!/bin/sh\necho \"apt-get $*\" >> " .. q(log) .. "\n")
    write(shims .. "/sudo", '#!/bin/sh\nexec "$@"\n')
    for _, name in ipairs { "node", "npm", "npx" } do
      write(shims .. "/" .. name, "#!/bin/sh\necho \"" .. name .. " $*\" >> " .. q(log)
        .. "\nexit 1\n")
    end

    code, out, err = harness.sh("cd " .. q(src) .. " && env -i HOME=" .. q(home)
      .. " PATH=" .. q(shims .. ":/usr/bin:/bin") .. " TMPDIR=" .. q(dir) .. " LANG=C.UTF-8"
      .. " timeout 280 " .. command)
    assert.equal(0, code, "stdout:\n" .. out .. "\nstderr:\n" .. err)

    -- what was asked for: the product's packages, none of the lab's, no node or npm
    local _, asked = harness.sh("cat " .. q(log))
    assert.matches("apt%-get install [^\n]* cmake ", asked)
    assert.matches(" libuv1%-dev ", asked)
    for _, package in ipairs(LAB) do
      assert.is_nil(asked:match("[ \n]" .. package:gsub("%-", "%%-") .. "[ \n]"),
        package .. " was asked for:\n" .. asked)
    end
    assert.is_nil(asked:match("^np[mx] ") or asked:match("\nnp[mx] ") or asked:match("node "),
      asked)
    assert.is_nil(err:lower():match("npm warn"), err)

    -- the demo ran, with the CLI the set-up installed
    assert.matches("-> mcp__calc__add(a=15, b=27)\n<- mcp__calc__add: 42\n", out, 1, true)
    assert.matches("[demo] the claude CLI (" .. home .. "/.local/lib/claudelua/cli/claude)", err,
      1, true)

    -- the PATH the set-up tells the user to set finds claudelua (and the CLI's link)
    local path_line = out:match('\n  export PATH="([^"\n]+)"\n')
    assert.equal("$HOME/.local/bin:$PATH", path_line, out)
    local path = path_line:gsub("%$HOME", home):gsub("%$PATH", "/usr/bin:/bin")
    code, out, err = harness.sh("cd " .. q(home) .. " && env -i HOME=" .. q(home) .. " PATH="
      .. q(path) .. " sh -c 'command -v claudelua; command -v claude'")
    assert.equal(0, code, err)
    assert.equal(home .. "/.local/bin/claudelua\n" .. home .. "/.local/bin/claude\n", out)
    -- and runs a script offline from anywhere, with no checkout around
    write(home .. "/calc.lua", [[
local claude = require "claude"
local calc = claude.server("calc", {
  claude.tool("add", "Add two numbers", { a = "number", b = "number" }, function(args)
    return args.a + args.b
  end),
})
for msg in claude.query("What is 15 + 27?", { mcp_servers = { calc = calc },
                                               allowed_tools = calc:tool_names() }) do
  if msg.type == "result" then print(msg.result) end
end
]])
    code, out, err = harness.sh("cd " .. q(home) .. " && env -i HOME=" .. q(home) .. " PATH="
      .. q(path) .. " TMPDIR=" .. q(dir) .. " timeout 120 claudelua --demo calc.lua")
    assert.equal(0, code, err)
    assert.matches("add(a=15, b=27) returned: 42", out, 1, true)
  end)
end)
