-- The MCP conformance suite (@modelcontextprotocol/conformance, pinned) runs
-- every client scenario it lists (its own list: a new pin brings its new
-- scenarios) against spec/conformance/client.lua in the host: the transport
-- scenarios and every authorization scenario, the extensions among them
-- (client credentials with a secret and with private_key_jwt, cross-app
-- access). The client's stdout and stderr are searched for every token,
-- code and secret the suite's servers hand out, and for the credentials of
-- the scenario's context (the private key, the ID token).
local harness = require "support.harness"
local conformance = require "support.conformance"
local json = require "claude.json"

local root = harness.root

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
  local code, out, err = harness.sh("cd " .. harness.quote(dir) .. " && "
    .. harness.quote(conformance.node) .. " " .. harness.quote(conformance.suite)
    .. " client --command " .. harness.quote(conformance.claudelua .. " " .. root
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

-- What the suite's authorization servers issue: tokens (the ID-JAG's a JWT), the code,
-- secrets; any JWT at all (an ID token, an ID-JAG, a client assertion) and PEM key text.
local SECRETS = { "test-token", "cc-token", "test-auth-code", "test-secret", "test-client-secret",
  "pre-registered-secret", "conformance-test-secret", "conformance-test-xaa-secret", "eyJ",
  "PRIVATE KEY" }

-- The credentials of the scenario's context, which the suite prints ("With context: {...}"):
-- the ID token, the secrets, and each line of the private key's PEM body.
local function context_secrets(out)
  local ctx = json.decode(out:match("With context: ([^\n]+)") or "{}") or {}
  local found = {}
  for _, k in ipairs { "idp_id_token", "client_secret" } do
    if type(ctx[k]) == "string" then found[#found + 1] = ctx[k] end
  end
  for line in (ctx.private_key_pem or ""):gmatch("[^\n]+") do
    if not line:find("-----", 1, true) and #line >= 16 then found[#found + 1] = line end
  end
  return found
end

describe("the MCP conformance suite's client scenarios", function()
  for _, scenario in ipairs(conformance.scenarios("Client")) do
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
      local from_context = context_secrets(out)
      if scenario == "auth/client-credentials-jwt" or scenario:find("cross%-app%-access") then
        assert.truthy(#from_context > 0, "no credentials found in the scenario's context")
      end
      for _, secret in ipairs(from_context) do
        assert.is_nil(client:find(secret, 1, true), "a credential in the client's output")
      end
    end)
  end
end)
