-- claude inside Debian's pandoc 2.17, which links Lua 5.3: examples/pandoc/check_lua.lua, a
-- Lua filter that sends each `lua` code block to a tool of a `claudelua mcp` child and puts
-- the tool's verdict after the block, loaded with the module of 5.3 hosts.
local harness = require "support.harness"

local function absolute(path)
  return path:sub(1, 1) == "/" and path or harness.root .. "/" .. path
end
local BUILD = absolute(harness.build)

local function missing()
  if not os.execute("command -v pandoc >/dev/null 2>&1") then
    return "pandoc is not installed (tools/packages.sh lab installs Debian's)"
  end
  local probe = harness.tempfile("io.write(_VERSION) return {}", ".lua")
  local _, version = harness.sh("pandoc -f markdown -t plain --lua-filter "
    .. harness.quote(probe) .. " </dev/null")
  if not version:find("Lua 5%.3") then
    return "this pandoc runs " .. version .. ", not Lua 5.3"
  end
  if not io.open(BUILD .. "/lua5.3/claude.so") then
    return BUILD .. "/lua5.3/claude.so was not built (no liblua5.3-dev, or a sanitized build)"
  end
end

local DOC = [=[
# Blocks

```lua
print("hello")
```

```lua
local x = = 1
```

```sh
echo not lua
```
]=]

describe("claude inside Debian's pandoc (Lua 5.3)", function()
  it("runs a Lua filter whose tool checks each Lua block", function()
    local why = missing()
    if why then return pending(why) end
    local doc = harness.tempfile(DOC, ".md")
    local code, out, err = harness.sh(string.format(
      "PATH=%s:\"$PATH\" LUA_CPATH_5_3=%s LUA_PATH_5_3=';;' pandoc --lua-filter %s -t markdown %s",
      harness.quote(BUILD), harness.quote(BUILD .. "/lua5.3/?.so;;"),
      harness.quote(harness.root .. "/examples/pandoc/check_lua.lua"), harness.quote(doc)))
    assert.equal(0, code, err)
    assert.matches('print%("hello"%)\n```\n\n%*compiles%*', out)
    assert.matches("local x = = 1\n```\n\n%*does not compile: block:1: unexpected symbol near "
      .. "\\'=\\'%*", out)
    assert.matches("echo not lua\n```$", (out:gsub("%s+$", "")))
    assert.is_nil(out:find("not lua\n```\n\n%*")) -- a block of another language is left alone
  end)
end)
