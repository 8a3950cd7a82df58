--- The HTTP transports' side of OAuth (Streamable HTTP and the 2024-11-05 HTTP+SSE one):
-- the work a 401 or a 403 starts runs in tasks the transport owns, which its close cancels
-- (an authorization may wait for a person signing in), and whose failure is reported as an
-- `auth` problem rather than lost. The provider (claude.oauth.provider) decides.
--
-- A transport using it has `name`, `url`, `provider`, `events` (`problem`), `closing` and
-- `tasks` (a set of tasks).
-- @module claude.mcp.client.authorize
local async = require "claude.async"
local errors = require "claude.errors"

local M = {}

--- Runs `fn` in a task of the transport.
function M.in_task(self, fn)
  local task
  task = async.spawn(function()
    local ok, err = pcall(fn)
    if task then self.tasks[task] = nil end
    if not ok and not self.closing and not errors.is(err, "cancelled") then
      self.events.problem(errors.new("auth", "MCP server '" .. self.name .. "' (" .. self.url
        .. "): the authorization failed: " .. errors.message(err)))
    end
  end)
  if not task:done() then self.tasks[task] = true end
end

--- A 401, or a 403 with a Bearer challenge: the provider authorizes (in a task), then
-- `again()` sends the request anew, or `failed(err)` ends it.
function M.reauthorize(self, status, headers, sent, attempt, again, failed)
  M.in_task(self, function()
    local retry, err = self.provider:challenge(status, headers, sent, attempt)
    if self.closing then return end
    if retry then return again() end
    failed(err)
  end)
end

--- Cancels the transport's tasks (from its close).
function M.cancel_tasks(self)
  for task in pairs(self.tasks) do
    if task ~= async.current() then task:cancel("the MCP client was closed") end
  end
  self.tasks = {}
end

return M
