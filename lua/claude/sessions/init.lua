--- The CLI's saved sessions: listing, reading, renaming, tagging, archiving, deleting
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
local store = require "claude.sessions.store"

local M = {}

--- The name of the project directory the CLI uses for `path`: every
-- character that is not an ASCII letter or digit becomes '-'.
-- @function project_key
M.project_key = files.project_key

--- A random (version 4) UUID, as the CLI gives sessions and messages.
-- @function uuid4
M.uuid4 = write.uuid4

--- A session store that keeps everything in memory (for tests and development).
-- @function memory_store
M.memory_store = store.memory_store

--- Folds transcript entries into a store's running summary of a session.
-- @function fold_summary
M.fold_summary = store.fold_summary

--- Copies a local session (and its subagents) into a session store.
-- @function import_to_store
M.import_to_store = store.import_to_store

for _, part in ipairs { read, write } do
  for name, fn in pairs(part) do
    if M[name] == nil then M[name] = fn end
  end
end

return M
