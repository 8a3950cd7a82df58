-- The MCP conformance suite 0.2.0-alpha.12 against spec/conformance/client.lua in the host,
-- at the modern era: every client scenario of `--requirements 2026-07-28` (the scored ones
-- and those it runs unscored: the authorization extensions (DPoP, workload identity,
-- enterprise-managed authorization, client credentials), JSON Schema 2020-12), each alone
-- at 2026-07-28 with the strict verdict. The client's output is searched for every token,
-- code and secret the suite hands out. The legacy era: mcp_conformance_client_spec.lua.
local luassert = require "luassert"
local conformance = require "support.conformance_client"

local jobs = {}
for _, s in ipairs(conformance.requirements("2026-07-28")) do
  jobs[#jobs + 1] = { name = s.name, version = "2026-07-28", force = not s.scored }
end

describe("the MCP conformance suite's client scenarios at 2026-07-28", function()
  local results
  lazy_setup(function() results = conformance.run_all(jobs) end)
  for _, job in ipairs(jobs) do
    it(job.name .. " at " .. job.version, function()
      conformance.check(luassert, job.name, results[job.name .. "@" .. job.version])
    end)
  end
end)
