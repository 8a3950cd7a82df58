-- The MCP conformance suite 0.2.0-alpha.12 against spec/conformance/client.lua in the host,
-- at the legacy era: every client scenario of `--requirements 2025-11-25` (the scored ones
-- and those it runs unscored: the authorization extensions, JSON Schema 2020-12), each alone
-- at 2025-11-25 with the strict verdict, and the 2025-03-26 backward compatibility scenarios
-- at 2025-03-26 (conformance 0.1.16, pinned beside it, checks nothing these do not). The
-- client's output is searched for every token, code and secret the suite hands out.
-- The modern era: mcp_conformance_client_2026_spec.lua.
local luassert = require "luassert"
local conformance = require "support.conformance_client"

local jobs = {}
for _, s in ipairs(conformance.requirements("2025-11-25")) do
  jobs[#jobs + 1] = { name = s.name, version = "2025-11-25", force = not s.scored }
end
for _, s in ipairs(conformance.only("2025-03-26")) do
  jobs[#jobs + 1] = { name = s.name, version = "2025-03-26" }
end

describe("the MCP conformance suite's client scenarios at 2025-11-25", function()
  local results
  lazy_setup(function() results = conformance.run_all(jobs) end)
  for _, job in ipairs(jobs) do
    it(job.name .. " at " .. job.version, function()
      conformance.check(luassert, job.name, results[job.name .. "@" .. job.version])
    end)
  end
end)
