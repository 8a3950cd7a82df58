--- The CLI's saved sessions: listing, reading, renaming, tagging, deleting
-- and forking the transcripts it writes under
-- `<config dir>/projects/<project>/<session id>.jsonl` (the config dir is
-- `$CLAUDE_CONFIG_DIR`, else `~/.claude`), read and written the way the
-- Python SDK does, so both see the same sessions.
--
-- Every function takes an optional table of options last: `directory` (or
-- `cwd`): the project directory the session ran in (default: search every
-- project); `config_dir`: the CLI's config directory; `include_worktrees`
-- (default true): also the other git worktrees of `directory`.
-- @module claude.sessions
local files = require "claude.sessions.files"
local read = require "claude.sessions.read"
local write = require "claude.sessions.write"

local M = {}

--- The name of the project directory the CLI uses for `path`: every
-- character that is not an ASCII letter or digit becomes '-'.
-- @function project_key
M.project_key = files.project_key

--- A random (version 4) UUID, as the CLI gives sessions and messages.
-- @function uuid4
M.uuid4 = write.uuid4

for _, part in ipairs { read, write } do
  for name, fn in pairs(part) do
    if M[name] == nil then M[name] = fn end
  end
end

return M
