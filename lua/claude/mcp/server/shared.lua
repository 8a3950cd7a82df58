--- What the replicas of one server behind a load balancer share: the tasks extension's
-- records and the events a listen hears. One interface, two stores:
--
-- * memory (`M.memory`, the default): one process, nothing to run. Every method does nothing:
--   the process's own tasks (claude.mcp.server.tasks) are all there is, its listens hear
--   its own events.
-- * Redis (`--tasks redis://[[user:]password@]host[:port][/db]`,
--   claude.mcp.server.shared_redis): each replica
--   still runs its own tasks and keeps them in memory; their records are mirrored into
--   Redis, where any replica finds them, and the events go through Redis pub/sub.
--
-- The methods, for a modern server (claude.mcp.server.modern) whose `node` names the replica:
--
--     shared:attach(modern)          -- the server whose listens hear the others' events
--     shared:saved(rec, view[, after[, tell]])
--                                    -- a task of ours was made or changed (view: DetailedTask;
--                                    -- `after()` once stored; `tell`: its status changed, the
--                                    -- other replicas' listens hear it)
--     shared:forgot(rec)             -- a task of ours was forgotten
--     shared:find(id)                -- (in a task) another replica's task: its view, or nil,
--                                    -- and err, kind when the store cannot be reached
--     shared:forward(view, op, p)    -- (in a task) "update"/"cancel" of another replica's task
--     shared:publish(event)          -- an event of ours for the other replicas' listens
--     shared:unavailable()           -- why no task can be created now, or nil
--     shared:close()
-- @module claude.mcp.server.shared
local M = {}

local Memory = { __name = "claude.mcp.SharedMemory", remote = false }
Memory.__index = Memory
local function nothing() return nil end
for _, k in ipairs { "attach", "saved", "forgot", "find", "forward", "publish", "unavailable",
  "close" } do
  Memory[k] = nothing
end

--- The store of one process (the default): shares nothing.
M.memory = setmetatable({}, Memory)

--- The store a transport's `tasks` option names: nil (memory), or `redis://...`.
-- @param tasks the option
-- @tparam table opts `node` (this replica's name), `lease` (seconds), `log`
-- @return a factory `scope(name) -> store` for each endpoint (a table to call; its `close`,
--   when it has one, ends what it opened), or nil, err for a bad option
function M.open(tasks, opts)
  if tasks == nil or tasks == "memory" then
    return setmetatable({}, { __call = function() return M.memory end })
  end
  if type(tasks) == "string" and tasks:find("^rediss?://") then -- (rediss: refused, saying why)
    return require("claude.mcp.server.shared_redis").open(tasks, opts)
  end
  return nil, "'tasks' must be \"memory\" or a redis://[[user:]password@]host[:port][/db] URL, got "
    .. (type(tasks) == "string" and "'" .. require("claude.mcp.server.redis").redact(tasks) .. "'"
      or tostring(tasks))
end

return M
