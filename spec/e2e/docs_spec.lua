-- Docs that run: every `lua` and `sh` block of README.md and docs/*.md runs as a reader
-- would run it after the README's set-up (only PREFIX/bin:/usr/bin:/bin on PATH, no forced
-- demo mode, no hidden commands), or is checked without running where it needs a real
-- remote service, as docs/testing.md ("The docs' own blocks") and
-- spec/support/doc_blocks.lua describe; the output a doc shows is compared. A doc that
-- drifts from the code fails here. Fragments stay under a tenth of the blocks.
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

-- The README's set-up, once per run: `cmake --install` to a PREFIX, and the pinned CLI
-- linked as tools/setup.sh links it (PREFIX/lib/claudelua/cli/claude, PREFIX/bin/claude).
local prefix
local function installed()
  if prefix then return prefix end
  prefix = harness.tempdir() .. "/prefix"
  local code, out, err = harness.sh("cmake --install " .. q(build) .. " --prefix " .. q(prefix))
  assert(code == 0, "cmake --install failed:\n" .. out .. err)
  os.execute("mkdir -p " .. q(prefix .. "/lib/claudelua/cli") .. " && ln -s " .. q(e2e.cli())
    .. " " .. q(prefix .. "/lib/claudelua/cli/claude") .. " && ln -s "
    .. q(prefix .. "/lib/claudelua/cli/claude") .. " " .. q(prefix .. "/bin/claude"))
  return prefix
end

-- The doc's directory: the repository's folders linked in, as in a checkout.
local function sandbox(name)
  local dir = harness.tempdir() .. "/" .. name:gsub("[/.]", "_")
  os.execute("mkdir -p " .. q(dir .. "/home"))
  -- spec/ is the doc's own (a doc may write a spec there), with the repository's support/
  os.execute("mkdir -p " .. q(dir .. "/spec") .. " && ln -s " .. q(root .. "/spec/support") .. " "
    .. q(dir .. "/spec/support"))
  for _, sub in ipairs { "examples", "lua", "tools", "bench", "node_modules", "docs",
    "include", "src", "cmake", "CMakeLists.txt", "package.json", "package-lock.json",
    "claudelua-scm-1.rockspec", ".ci" } do
    os.execute("ln -s " .. q(root .. "/" .. sub) .. " " .. q(dir .. "/" .. sub))
  end
  os.execute("ln -s " .. q(build) .. " " .. q(dir .. "/build"))
  -- a folder the reader trusts, as a first `claude` there makes it: CLI 2.1.337 checks the
  -- health of MCP servers (`claude mcp list`) only there
  write(dir .. "/home/.claude.json", json.encode { projects = {
    [claude.core.realpath(dir)] = { hasTrustDialogAccepted = true } } })
  return dir
end

-- What a reader's shell has after the set-up: nothing of this process's environment.
local function env_prefix(dir)
  return "env -i HOME=" .. q(dir .. "/home") .. " PATH=" .. q(installed() .. "/bin:/usr/bin:/bin")
    .. " LANG=C.UTF-8 TMPDIR=" .. q(os.getenv("TMPDIR") or "/tmp")
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

-- What the CLI answers a query with no login (the sandbox's HOME has none).
local NOT_LOGGED_IN = "Not logged in"

-- A Lua block's file: the name its first line gives, or one of its own.
local function lua_file(b) return b.d.file or ("block_" .. b.line .. ".lua") end

local function run_block(b, name, dir)
  local id = "block_" .. b.line
  local d = b.d
  if b.expect and (d.check or b.needs or b.saved) then
    fail(b, name, "it shows an output but does not run")
  end
  if b.lang == "lua" then
    local file = lua_file(b)
    local path = dir .. "/" .. file
    os.execute("mkdir -p " .. q(path:match("^(.*)/")))
    write(path, b.code)
    if b.saved and not d.check then return end
    if d.check or b.needs then
      local chunk, err = loadfile(path, "t")
      assert(chunk, err)
      return
    end
    local cmd = env_prefix(dir) .. " timeout "
      .. (d["until"] and ("--preserve-status -s INT " .. d["until"]) or "90") .. " "
      .. (b.run_with or ("claudelua " .. q(file))) .. " < /dev/null"
    local code, out, err = run_sh(dir, cmd)
    -- no login here: a block that asks the model without saying `--demo` gets the CLI's answer
    if not b.run_with and (out .. err):find(NOT_LOGGED_IN, 1, true) then
      fail(b, name, "it needs the model: give it a first line `-- " .. file
        .. " -- run with: claudelua --demo " .. file .. "`", code, out, err)
    end
    return check_result(b, name, code, out, err)
  end
  -- sh
  local path = dir .. "/" .. id .. ".sh"
  write(path, b.code)
  local code, out, err = run_sh(dir, "bash -n " .. q(path))
  if code ~= 0 then fail(b, name, "the shell block does not parse", code, out, err) end
  check_paths(b.code)
  if d.check or b.needs then return end
  if d.servers then
    local outs, errs = {}, {}
    for _, line in ipairs(command_lines(b.code)) do
      write(path, line .. "\n")
      code, out, err = run_sh(dir, env_prefix(dir) .. " timeout --preserve-status -s INT "
        .. d.servers .. " bash " .. q(path) .. " < /dev/null")
      outs[#outs + 1], errs[#errs + 1] = out, err
      if code ~= 0 and code ~= 130 then
        fail(b, name, "`" .. line .. "` failed", code, out, err)
      end
    end
    return check_result(b, name, 0, table.concat(outs), table.concat(errs))
  end
  code, out, err = run_sh(dir, env_prefix(dir) .. " timeout 120 bash -e " .. q(path)
    .. " < /dev/null")
  return check_result(b, name, code, out, err)
end

-- The C declarations a block shows, each as include/claudelua/'s headers have it.
local headers
local function check_c(code)
  if not headers then
    headers = {}
    for _, h in ipairs(claude.core.scandir(root .. "/include/claudelua")) do
      headers[#headers + 1] = read(root .. "/include/claudelua/" .. h)
    end
    headers = table.concat(headers, "\n"):gsub("%s+", " ")
  end
  for decl in code:gsub("/%*.-%*/", ""):gsub("//[^\n]*", ""):gmatch("[^;{}]+;") do
    decl = decl:gsub("%s+", " "):gsub("^ ", "")
    assert(headers:find(decl, 1, true), "include/claudelua/ does not declare: " .. decl)
  end
end

-- Every block counts once: run (or used by a run), compared (output, C declarations),
-- checked (parsed, compiled, not run), or a fragment (none of these).
local counts = { run = 0, compared = 0, checked = 0, fragment = 0 }
local function kind_of(b)
  if b.is_output or b.lang == "c" then return "compared" end
  if doc_blocks.RUN_LANGS[b.lang] then
    return b.d.fragment and "fragment" or (b.d.check or b.needs) and "checked" or "run"
  end
  if b.d.file then return "run" end
  if b.lang == "json" or b.lang == "js" then return "checked" end
  return "fragment"
end

for _, name in ipairs(docs) do
  if ONLY and ONLY ~= name then goto continue end
  describe(name, function()
    local blocks = doc_blocks.blocks(read(root .. "/" .. name))
    local dir
    setup(function() dir = sandbox(name) end)
    teardown(function() os.execute("rm -rf " .. q(dir:match("^(.*)/[^/]*$"))) end)
    for _, b in ipairs(blocks) do
      local kind = kind_of(b)
      counts[kind] = counts[kind] + 1
      if b.is_output or kind == "fragment" then goto next end
      if doc_blocks.RUN_LANGS[b.lang] then
        it(string.format("line %d: %s (%s)", b.line, b.lang, kind), function()
          run_block(b, name, dir)
        end)
      elseif b.lang == "json" then
        it(string.format("line %d: json parses", b.line), function()
          assert(doc_blocks.json_ok(b.code))
        end)
      elseif b.lang == "js" then
        it(string.format("line %d: js parses", b.line), function()
          local path = dir .. "/block_" .. b.line .. ".mjs"
          write(path, b.code)
          local code, out, err = harness.sh("node --check " .. q(path))
          if code ~= 0 then fail(b, name, "node --check refuses it", code, out, err) end
        end)
      elseif b.lang == "c" then
        it(string.format("line %d: c declared", b.line), function() check_c(b.code) end)
      end
      if b.d.file and not doc_blocks.RUN_LANGS[b.lang] then -- a view, a scenario
        it(string.format("line %d: %s saved as %s", b.line, b.lang, b.d.file), function()
          local path = dir .. "/" .. b.d.file
          os.execute("mkdir -p " .. q(path:match("^(.*)/")))
          write(path, b.code)
        end)
      end
      ::next::
    end
  end)
  ::continue::
end

describe("the docs", function()
  it("mark under a tenth of their blocks as fragments", function()
    local total = counts.run + counts.compared + counts.checked + counts.fragment
    io.stderr:write(string.format("[docs] %d blocks: %d run, %d compared, %d checked, "
      .. "%d fragments\n", total, counts.run, counts.compared, counts.checked, counts.fragment))
    if not ONLY then assert(counts.fragment * 10 < total, "too many fragments") end
  end)
end)
