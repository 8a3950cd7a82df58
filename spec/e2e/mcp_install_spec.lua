-- `claudelua mcp install`: the entry each client reads, written into a scratch HOME with
-- absolute paths, keeping what was there; and for Claude Code, the real CLI's
-- `claude mcp list` shows it connected (it starts `claudelua mcp tools.lua` over stdio).
local harness = require "support.harness"
local e2e = require "support.e2e"
local json = require "claude.json"
local claude = require "claude"

local host = harness.claudelua
if host:sub(1, 1) ~= "/" then host = harness.root .. "/" .. host end
host = claude.core.realpath(host)
local q = harness.quote

local TOOLS = [[
local claude = require "claude"
return claude.server("calc", {
  claude.tool("add", "Add two numbers", { a = "number", b = "number" }, function(args)
    return args.a + args.b
  end),
})
]]

local function write(path, text)
  os.execute("mkdir -p " .. q(path:match("^(.*)/")))
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

local function read(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s
end

describe("claudelua mcp install", function()
  local dir, home, proj, tools
  -- runs claudelua mcp install ARGS in the project with HOME=home, PATH without `claude`
  -- unless `path` is given
  local function install(args, path)
    return harness.sh("cd " .. q(proj) .. " && env -u CLAUDE_CONFIG_DIR -u XDG_CONFIG_HOME HOME="
      .. q(home) .. " PATH=" .. q(path or "/usr/bin:/bin") .. " " .. q(host)
      .. " mcp install " .. args)
  end

  -- the tools of an entry, started as the client would
  local function check_entry(e)
    assert.equal(host, e.command)
    assert.same({ "mcp", tools }, e.args)
    harness.task(function()
      local c <close> = assert(claude.mcp.connect { command = e.command, args = e.args,
        env = e.env })
      assert.equal("42", c:call_tool("add", { a = 15, b = 27 }).content[1].text)
    end, 30)()
  end

  before_each(function()
    dir = harness.tempdir()
    home, proj = dir .. "/home", dir .. "/home/proj"
    tools = proj .. "/tools.lua"
    write(tools, TOOLS)
  end)
  after_each(function() os.execute("rm -rf " .. q(dir)) end)

  for _, case in ipairs {
    { "claude-desktop", "user", "/home/.config/Claude/claude_desktop_config.json", "mcpServers" },
    { "cursor", "user", "/home/.cursor/mcp.json", "mcpServers" },
    { "cursor", "project", "/home/proj/.cursor/mcp.json", "mcpServers" },
    { "vscode", "project", "/home/proj/.vscode/mcp.json", "servers", "stdio" },
    { "vscode", "user", "/home/.config/Code/User/mcp.json", "servers", "stdio" },
    { "claude-code", "project", "/home/proj/.mcp.json", "mcpServers", "stdio" },
    { "claude-code", "user", "/home/.claude.json", "mcpServers", "stdio" },
  } do
    local client, scope, file, key, type_ = case[1], case[2], case[3], case[4], case[5]
    it(client .. " (" .. scope .. "): adds the entry, keeps the rest, shows the diff", function()
      local path = dir .. file
      local before = '{\n  "theme": "dark",\n  "' .. key .. '": {\n    "other": {\n'
        .. '      "command": "x",\n      "args": [\n        "1.50"\n      ]\n    }\n  },\n'
        .. '  "n": 1.50\n}\n'
      write(path, before)
      local code, out, err = install("--client " .. client .. " --scope " .. scope
        .. " --env TOKEN=abc tools.lua")
      assert.equal(0, code, err)
      local after = read(path)
      local doc = json.decode(after)
      assert.equal("dark", doc.theme)
      assert.same({ command = "x", args = { "1.50" } }, doc[key].other)
      assert.truthy(after:find('"n": 1.50', 1, true)) -- numbers as they were written
      local e = doc[key].calc
      assert.equal(type_, e.type)
      assert.same({ TOKEN = "abc" }, e.env)
      check_entry(e)
      -- the diff: only additions, in the servers object
      assert.truthy(out:find("--- " .. path .. "\n+++ " .. path .. "\n@@ ", 1, true), out)
      assert.truthy(out:find('\n+    "calc": {\n', 1, true), out)
      assert.is_nil(out:find("\n%-"), out)
      -- the same entry again (a set-up script run twice): nothing to do, status 0
      code, out, err = install("--client " .. client .. " --scope " .. scope
        .. " --env TOKEN=abc tools.lua")
      assert.equal(0, code, err)
      assert.matches("^'calc' is already installed in [^\n]*: nothing to do\n$", out)
      assert.equal(after, read(path))
      -- a different entry of that name: refused with the diff, the file unchanged
      code, out, err = install("--client " .. client .. " --scope " .. scope .. " tools.lua")
      assert.equal(1, code)
      assert.truthy(out:find('\n-      "env": {\n-        "TOKEN": "abc"\n-      }\n', 1, true)
        or out:find('\n-      "env": {', 1, true), out)
      assert.matches("^[^\n]*claudelua mcp install: [^\n]* has a different server named 'calc' "
        .. "%(the diff above%): %-%-force replaces it", err)
      assert.equal(after, read(path))
      -- --force replaces it: the entry's bytes only
      code = install("--client " .. client .. " --scope " .. scope .. " --force tools.lua")
      assert.equal(0, code)
      local forced = read(path)
      assert.is_nil(json.decode(forced)[key].calc.env)
      local calc_at = forced:find('    "calc": {', 1, true)
      assert.equal(after:sub(1, calc_at), forced:sub(1, calc_at))
    end)
  end

  it("keeps every byte outside the entry: compact JSON stays compact", function()
    local path = home .. "/.cursor/mcp.json"
    local before = '{"theme":{"a":1,"b":[1, 2.50]},"mcpServers":{"other":{"command":"x"}}}\n'
    write(path, before)
    local code, _, err = install("--client cursor tools.lua")
    assert.equal(0, code, err)
    local after = read(path)
    local prefix = '{"theme":{"a":1,"b":[1, 2.50]},"mcpServers":{"other":{"command":"x"},'
    assert.equal(prefix, after:sub(1, #prefix))
    assert.equal("}}\n", after:sub(-3))
    assert.is_nil(after:find("\n.", 1)) -- still one line
    check_entry(json.decode(after).mcpServers.calc)
    -- a file laid out with four spaces: the new entry too, the rest as it was
    before = '{\n    "theme": {"a":1},\n    "mcpServers": {\n        "other": {"command":"x"}\n'
      .. '    }\n}\n'
    write(path, before)
    code, _, err = install("--client cursor tools.lua")
    assert.equal(0, code, err)
    after = read(path)
    local head = '{\n    "theme": {"a":1},\n    "mcpServers": {\n'
      .. '        "other": {"command":"x"},\n        "calc": {\n            "command": '
    assert.equal(head, after:sub(1, #head))
    local tail = '"\n            ]\n        }\n    }\n}\n'
    assert.equal(tail, after:sub(-#tail))
  end)

  it("a file with comments: the entry to paste, or already installed", function()
    local path = proj .. "/.vscode/mcp.json"
    local jsonc = '{\n  // mine\n  "servers": {\n    "x": { "command": "y" }, /* kept */\n  }\n}\n'
    write(path, jsonc)
    for _, dry in ipairs { "--dry-run ", "" } do
      local code, out, err = install("--client vscode " .. dry .. "tools.lua")
      assert.equal(dry == "" and 1 or 0, code, err)
      assert.truthy(out:find(path .. ' has comments, which claudelua does not rewrite; add '
        .. 'this to its "servers" object:\n\n  "calc": {\n    "type": "stdio",\n', 1, true), out)
      if dry == "" then
        assert.matches("^[^\n]*claudelua mcp install: [^\n]*has comments: the entry shown "
          .. "above was not added", err)
      end
      assert.equal(jsonc, read(path))
    end
    -- pasted: the next run finds it there
    local _, out = install("--client vscode --dry-run tools.lua")
    local entry = out:match("\n\n(.-)\n%(dry run")
    write(path, jsonc:gsub("/%* kept %*/", "/* kept */\n" .. entry:gsub("%%", "%%%%") .. ","))
    local code
    code, out = install("--client vscode tools.lua")
    assert.equal(0, code, out)
    assert.matches("already installed", out)
  end)

  it("--dry-run shows the diff and writes nothing; broken JSON: the line and column", function()
    local code, out = install("--client cursor --dry-run tools.lua")
    assert.equal(0, code)
    assert.truthy(out:find("--- /dev/null\n+++ " .. home .. "/.cursor/mcp.json", 1, true), out)
    assert.is_nil(read(home .. "/.cursor/mcp.json"))
    write(proj .. "/.vscode/mcp.json", '{\n  "servers": {\n    "x": 1,,\n  }\n}\n')
    local _, err
    code, _, err = install("--client vscode tools.lua")
    assert.equal(1, code)
    assert.matches("mcp%.json: line 3, column 12: a member name expected\n$", err)
  end)

  it("writes through a config that is a link, atomically, keeping its mode; or says why not",
    function()
    local link, target = home .. "/.cursor/mcp.json", home .. "/dotfiles/cursor/mcp.json"
    write(target, '{\n  "mcpServers": {}\n}\n')
    os.execute("chmod 640 " .. q(target) .. " && mkdir -p " .. q(home .. "/.cursor")
      .. " && ln -s ../dotfiles/cursor/mcp.json " .. q(link))
    local code, _, err = install("--client cursor tools.lua")
    assert.equal(0, code, err)
    assert.is_true(claude.core.is_symlink(link))
    check_entry(json.decode(read(target)).mcpServers.calc)
    assert.equal(tonumber("640", 8), claude.core.stat(target).mode)
    -- no temporary file left beside the target
    assert.same({ "mcp.json" }, claude.core.scandir(home .. "/dotfiles/cursor"))
    -- a link to nothing: refused, saying why, the link left alone
    os.execute("rm " .. q(target))
    code, _, err = install("--client cursor --force tools.lua")
    assert.equal(1, code)
    assert.matches("is a link to a file that does not exist", err)
    assert.is_true(claude.core.is_symlink(link))
  end)

  it("says what is wrong in one line", function()
    local code, _, err = install("--client cursr tools.lua")
    assert.equal(1, code)
    assert.matches("unknown client 'cursr' %(did you mean 'cursor'%?%)", err)
    code, _, err = install("--scpoe user tools.lua")
    assert.equal(1, code)
    assert.matches("unknown option '%-%-scpoe' %(did you mean '%-%-scope'%?%)", err)
    write(proj .. "/bad.lua", "error('no config')\n")
    code, _, err = install("bad.lua")
    assert.equal(1, code)
    assert.matches("^[^\n]*bad%.lua:1: no config\n$", err)
    -- one prefix: the command's name, no error kind
    assert.matches("^[^\n]*claudelua mcp install: [^\n]*bad%.lua failed: ", err)
  end)

  it("Claude Code through its own CLI: claude mcp list shows the server connected", function()
    local bin = dir .. "/bin"
    os.execute("mkdir -p " .. q(bin) .. " && ln -s " .. q(e2e.cli()) .. " " .. q(bin .. "/claude"))
    local path = bin .. ":/usr/bin:/bin"
    local code, out, err = install("tools.lua", path)
    assert.equal(0, code, err)
    assert.truthy(out:find("with claude mcp add-json", 1, true), out)
    local config = json.decode(read(home .. "/.claude.json"))
    assert.same({ "mcp", tools }, config.mcpServers.calc.args)
    -- the entry the CLI wrote is ours: a second run has nothing to do
    code, out, err = install("tools.lua", path)
    assert.equal(0, code, err)
    assert.matches("already installed", out)
    -- CLI 2.1.337 checks a server's health only in a folder the user trusts (it says "Not
    -- checked (folder not trusted; run `claude` here)"): trusted, as a first `claude` there
    -- would make it
    config.projects = { [claude.core.realpath(proj)] = { hasTrustDialogAccepted = true } }
    local f = assert(io.open(home .. "/.claude.json", "wb"))
    f:write(json.encode(config))
    f:close()
    local list
    code, list = harness.sh("cd " .. q(proj) .. " && env -u CLAUDE_CONFIG_DIR HOME=" .. q(home)
      .. " PATH=" .. q(path) .. " timeout 60 claude mcp list")
    assert.equal(0, code, list)
    assert.matches("calc: " .. host:gsub("%p", "%%%0") .. " mcp " .. tools:gsub("%p", "%%%0")
      .. " %- ✔ Connected", list)
  end)
end)
