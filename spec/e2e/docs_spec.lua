-- Docs that run: every `lua` and `sh` block of README.md and docs/*.md runs as written (or is
-- marked as a fragment, or checked without running, in a way spec/support/doc_blocks.lua
-- describes), against the real CLI and the scripted Messages API where it needs a model,
-- and its printed output is compared where the doc shows it. A doc that drifts from the code
-- fails here. Fragments stay under a tenth of the blocks.
local harness = require "support.harness"
local e2e = require "support.e2e"
local doc_blocks = require "support.doc_blocks"
local claude = require "claude"
local json = require "claude.json"

local q = harness.quote
local root = harness.root
local host = claude.core.realpath(harness.claudelua:sub(1, 1) == "/" and harness.claudelua
  or root .. "/" .. harness.claudelua)
local build = host:match("^(.*)/[^/]*$")

local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

local function write(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

local docs = { "README.md" }
for _, name in ipairs(claude.core.scandir(root .. "/docs")) do
  if name:match("%.md$") then docs[#docs + 1] = "docs/" .. name end
end
table.sort(docs)

local ONLY = os.getenv("DOCS_ONLY") -- DOCS_ONLY=docs/guards.md: one file

-- The doc's directory: the repository's folders linked in, claudelua and claude on PATH.
local function sandbox(name)
  local dir = harness.tempdir() .. "/" .. name:gsub("[/.]", "_")
  os.execute("mkdir -p " .. q(dir .. "/bin") .. " " .. q(dir .. "/home"))
  -- spec/ is the doc's own (a doc may write a spec there), with the repository's support/
  os.execute("mkdir -p " .. q(dir .. "/spec") .. " && ln -s " .. q(root .. "/spec/support") .. " "
    .. q(dir .. "/spec/support"))
  for _, sub in ipairs { "examples", "lua", "tools", "bench", "node_modules", "docs",
    "include", "src", "cmake", "CMakeLists.txt", "package.json", "package-lock.json",
    "claudelua-scm-1.rockspec", ".ci" } do
    os.execute("ln -s " .. q(root .. "/" .. sub) .. " " .. q(dir .. "/" .. sub))
  end
  os.execute("ln -s " .. q(build) .. " " .. q(dir .. "/build"))
  os.execute("ln -s " .. q(host) .. " " .. q(dir .. "/bin/claudelua"))
  os.execute("ln -s " .. q(e2e.cli()) .. " " .. q(dir .. "/bin/claude"))
  -- a folder the reader trusts, as a first `claude` there makes it: CLI 2.1.337 checks the
  -- health of MCP servers (`claude mcp list`) only there
  write(dir .. "/home/.claude.json", json.encode { projects = {
    [claude.core.realpath(dir)] = { hasTrustDialogAccepted = true } } })
  return dir
end

local function env_prefix(dir, d)
  local parts = { "env -u CLAUDE_CONFIG_DIR -u CLAUDELUA_LUA_PATH", "HOME=" .. q(dir .. "/home"),
    "PATH=" .. q(dir .. "/bin:" .. os.getenv("PATH")), "CLAUDELUA_DEMO=1" }
  for k, v in pairs(d.env or {}) do parts[#parts + 1] = k .. "=" .. q(v) end
  return table.concat(parts, " ")
end

local function stdin_of(dir, d, id)
  if not d.stdin then return "/dev/null" end
  local path = dir .. "/" .. id .. ".stdin"
  write(path, (d.stdin:gsub("\\n", "\n")))
  return path
end

local function run_sh(dir, cmd)
  return harness.sh("cd " .. q(dir) .. " && " .. cmd)
end

-- Logical lines of a shell block (continuations joined, comments and blanks dropped).
local function command_lines(code)
  local out, cur = {}, ""
  for line in code:gmatch("([^\n]*)\n") do
    if cur == "" and (line:match("^%s*#") or not line:find("%S")) then goto next end
    if line:match("\\$") then
      cur = cur .. line:sub(1, -2) .. " "
    else
      out[#out + 1] = cur .. line
      cur = ""
    end
    ::next::
  end
  return out
end

-- The repository paths a shell block names must exist (outside its comments, which may name
-- what a command makes).
local function check_paths(code)
  code = code:gsub("[^\n]*", function(line) return (line:gsub("^#.*", ""):gsub("%s#.*", "")) end)
  for word in code:gmatch("[%w_./-]+") do
    local first = word:match("^%.?/?([%w_.-]+)/")
    -- a file (with an extension) or a folder (ending in /) of the repository
    local repo_dir = ({ tools = 1, bench = 1, spec = 1, examples = 1, lua = 1, docs = 1,
      [".ci"] = 1, src = 1 })[first]
    if repo_dir and (word:match("%.%w+$") or word:match("/$")) then
      local path = root .. "/" .. word:gsub("^%./", ""):gsub("/$", "")
      assert(claude.core.stat(path) or word:find("*", 1, true),
        "the block names " .. word .. ", which the repository does not have")
    end
  end
end

local function fail(b, name, what, code, out, err)
  error(string.format("%s:%d: %s (status %s)\n--- stdout\n%s--- stderr\n%s", name, b.line, what,
    tostring(code), out or "", err or ""), 0)
end

local function check_result(b, name, code, out, err)
  local want = b.d.exit or 0
  if b.d["until"] then
    if code ~= 0 and code ~= 130 then
      fail(b, name, "it failed before it was stopped", code, out, err)
    end
  elseif code ~= want then
    fail(b, name, "exit status " .. tostring(code) .. ", not " .. want, code, out, err)
  end
  if b.lang == "lua" then
    local ok, why = doc_blocks.check_arrows(doc_blocks.arrows(b.code), out)
    if not ok then fail(b, name, why, code, out, err) end
  end
  if b.expect then
    local ok, why = doc_blocks.check_output(b.expect, out)
    if not ok then fail(b, name, why, code, out, err) end
  end
end

local function run_block(b, name, dir)
  local id = "block_" .. b.line
  local d = b.d
  if b.lang == "lua" then
    local file = d.file or (id .. ".lua")
    local path = dir .. "/" .. file
    os.execute("mkdir -p " .. q(path:match("^(.*)/")))
    write(path, b.code)
    if d.check then
      local chunk, err = loadfile(path, "t")
      assert(chunk, err)
      return
    end
    local cmd = env_prefix(dir, d) .. " timeout "
      .. (d["until"] and ("--preserve-status -s INT " .. d["until"]) or "90") .. " "
      .. (d.cmd or ("claudelua " .. q(file))) .. " < " .. q(stdin_of(dir, d, id))
    local code, out, err = run_sh(dir, cmd)
    return check_result(b, name, code, out, err)
  end
  -- sh
  local path = dir .. "/" .. id .. ".sh"
  write(path, b.code)
  local code, out, err = run_sh(dir, "bash -n " .. q(path))
  if code ~= 0 then fail(b, name, "the shell block does not parse", code, out, err) end
  check_paths(b.code)
  if d.check then return end
  if d.servers then
    local outs, errs = {}, {}
    for _, line in ipairs(command_lines(b.code)) do
      write(path, line .. "\n")
      code, out, err = run_sh(dir, env_prefix(dir, d) .. " timeout --preserve-status -s INT "
        .. d.servers .. " bash " .. q(path) .. " < " .. q(stdin_of(dir, d, id)))
      outs[#outs + 1], errs[#errs + 1] = out, err
      if code ~= 0 and code ~= 130 then
        fail(b, name, "`" .. line .. "` failed", code, out, err)
      end
    end
    return check_result(b, name, 0, table.concat(outs), table.concat(errs))
  end
  code, out, err = run_sh(dir, env_prefix(dir, d) .. " timeout 120 bash -e " .. q(path)
    .. " < " .. q(stdin_of(dir, d, id)))
  return check_result(b, name, code, out, err)
end

local counts = { run = 0, check = 0, fragment = 0 }

for _, name in ipairs(docs) do
  if ONLY and ONLY ~= name then goto continue end
  describe(name, function()
    local blocks = doc_blocks.blocks(read(root .. "/" .. name))
    local dir
    setup(function() dir = sandbox(name) end)
    teardown(function() os.execute("rm -rf " .. q(dir:match("^(.*)/[^/]*$"))) end)
    for _, b in ipairs(blocks) do
      if b.is_output then goto next end
      if doc_blocks.RUN_LANGS[b.lang] then
        local kind = b.d.fragment and "fragment" or b.d.check and "check" or "run"
        counts[kind] = counts[kind] + 1
        if kind == "fragment" then goto next end
        it(string.format("line %d: %s (%s)", b.line, b.lang, kind), function()
          run_block(b, name, dir)
        end)
      else
        if b.lang == "json" then
          it(string.format("line %d: json parses", b.line), function()
            assert(doc_blocks.json_ok(b.code))
          end)
        end
        if b.d.file then -- a file the next blocks use (a view, a scenario)
          it(string.format("line %d: %s saved as %s", b.line, b.lang, b.d.file), function()
            local path = dir .. "/" .. b.d.file
            os.execute("mkdir -p " .. q(path:match("^(.*)/")))
            write(path, b.code)
          end)
        end
      end
      ::next::
    end
  end)
  ::continue::
end

describe("the docs", function()
  it("mark under a tenth of their Lua and shell blocks as fragments", function()
    local total = counts.run + counts.check + counts.fragment
    io.stderr:write(string.format("[docs] %d Lua and shell blocks: %d run, %d checked, "
      .. "%d fragments\n", total, counts.run, counts.check, counts.fragment))
    if not ONLY then assert(counts.fragment * 10 < total, "too many fragments") end
  end)
end)
