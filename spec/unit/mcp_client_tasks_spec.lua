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

  -- a notification says `failed` alone; the reason is the task's, from tasks/get (on a
  -- loaded machine the notification often comes before the client's next poll)
  it("asks the server why a task failed when a notification told only that it did", function()
    local asked = {}
    local client = { name = "s", era = "modern" }
    local t = assert(tasks.new(client, function(method, params)
      asked[#asked + 1] = method
      return { taskId = params.taskId, status = "failed",
        error = { code = -32603, message = "the job broke" } }
    end, { taskId = "task-1", status = "working" }, { name = "failing" }))
    t:notified("notifications/tasks", { taskId = "task-1", status = "failed" })
    local r, err, kind = t:wait()
    assert.is_nil(r)
    assert.equal("remote", kind)
    assert.matches("the job broke", err.message, 1, true)
    assert.same({ "tasks/get" }, asked)
  end)
end)
