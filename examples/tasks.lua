-- tasks.lua -- the loop, tasks and processes, no Claude needed.
-- Run: build/claudelua examples/tasks.lua
local claude = require "claude"

-- Three commands at once; each task waits on its own process.
local commands = { { "uname", "-sr" }, { "sh", "-c", "sleep 0.2; echo slept" }, { "date", "-u" } }
local tasks = {}
for i, cmd in ipairs(commands) do
  tasks[i] = claude.spawn(function()
    local p <close> = assert(claude.process.spawn { cmd[1], args = { table.unpack(cmd, 2) } })
    local line = p:read_line(5)
    local code = p:wait(5)
    return string.format("%-5s exit %d: %s", cmd[1], code, line)
  end)
end

local started = claude.core.now()
for _, t in ipairs(tasks) do print(t:wait()) end
print(string.format("all done in %.2f s (they ran side by side)", claude.core.now() - started))

-- Exact JSON: integers stay integers, [] stays [].
local msg = claude.json.decode('{"a":15,"b":27,"tags":[]}')
print("15 + 27 =", msg.a + msg.b, claude.json.encode(msg.tags))
