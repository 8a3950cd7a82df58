-- A task handle of the MCP client (claude.mcp.client.tasks): the statuses it reports.
local tasks = require "claude.mcp.client.tasks"

describe("a task handle", function()
  local function handle(seen)
    local client = { name = "s", era = "modern" }
    return assert(tasks.new(client, function() end, { taskId = "task-1", status = "working" },
      { name = "slow", on_status = function(t) seen[#seen + 1] = t.status end }))
  end

  -- a notification sent before the end and read after it (or a poll answer that raced the
  -- end) must not send the task back to work
  it("keeps a status that ended: a later 'working' is stale", function()
    for _, ended in ipairs { "completed", "failed", "cancelled" } do
      local seen = {}
      local t = handle(seen)
      t:notified("notifications/tasks/status", { taskId = "task-1", status = ended })
      t:notified("notifications/tasks/status", { taskId = "task-1", status = "working" })
      t:notified("notifications/tasks/status", { taskId = "task-1", status = "input_required" })
      assert.equal(ended, t.status)
      assert.same({ "working", ended }, seen)
    end
  end)

  it("reports each change once, in order, up to the end", function()
    local seen = {}
    local t = handle(seen)
    for _, s in ipairs { "working", "input_required", "input_required", "working", "completed" } do
      t:notified("notifications/tasks/status", { taskId = "task-1", status = s })
    end
    assert.same({ "working", "input_required", "working", "completed" }, seen)
  end)
end)
