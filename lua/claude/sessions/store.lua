--- Session stores (the `session_store` option's interface: `append(key, entries)`,
-- `load(key)`, and optionally `list_sessions(project_key)`, `list_session_summaries
-- (project_key)`, `delete(key)`, `list_subkeys(key)`): an in-memory store for tests and
-- development, the running summary a store keeps beside each transcript
-- (`fold_summary`), and copying a local transcript into a store (`import_to_store`).
-- Keys are `{ project_key =, session_id =, subpath = }` (`subpath` for a subagent's
-- transcript, `subagents/agent-<id>`). Internal to `claude.sessions`, which exports these.
-- @module claude.sessions.store
local core = require "claude.core"
local json = require "claude.json"
local errors = require "claude.errors"
local files = require "claude.sessions.files"
local tree = require "claude.fs.tree"

local M = {}

local function key_string(key)
  return key.project_key .. "\0" .. key.session_id .. "\0" .. (key.subpath or "")
end

local function check_key(key, n, fname)
  if type(key) ~= "table" or type(key.project_key) ~= "string"
    or type(key.session_id) ~= "string" then
    errors.argerror(n, fname, "a key { project_key =, session_id = } expected, got %s",
      errors.typename(key))
  end
end

-- Fields of a transcript line that replace the summary's value each time they appear.
local LAST_WINS = { customTitle = "customTitle", aiTitle = "aiTitle", lastPrompt = "lastPrompt",
  summary = "summaryHint", gitBranch = "gitBranch" }

local function iso_ms(s)
  return type(s) == "string" and files.iso_ms(s) or nil
end

local function check_prev(prev)
  if prev ~= nil and (type(prev) ~= "table" or type(prev.data) ~= "table") then
    errors.argerror(1, "sessions.fold_summary", "a summary or nil expected, got %s",
      errors.typename(prev))
  end
end

--- Folds `entries` (decoded transcript lines) into the running summary of `key`: `prev`
-- (nil for the first batch) is not changed. Set-once fields (`isSidechain`, `createdAt`,
-- `cwd`, `firstPrompt`) keep their first value; `customTitle`, `aiTitle`, `lastPrompt`,
-- `summaryHint`, `gitBranch`, `tag` the last. `opts.mtime` stamps the summary (the store's
-- own write time; default the previous one's). The TypeScript SDK's `foldSessionSummary`,
-- same `data` fields.
-- @return `{ session_id =, mtime =, data = {...} }`
-- @function fold_summary
M.fold_summary = errors.public(function(prev, key, entries, opts)
  check_prev(prev)
  check_key(key, 2, "sessions.fold_summary")
  errors.check(entries, 3, "sessions.fold_summary", "table")
  errors.check(opts, 4, "sessions.fold_summary", "table", true)
  local mtime = opts and opts.mtime or prev and prev.mtime or 0
  local data = {}
  for k, v in pairs(prev and prev.data or {}) do data[k] = v end
  for _, e in ipairs(entries) do
    if type(e) == "table" then
      local at = iso_ms(e.timestamp)
      if data.isSidechain == nil then data.isSidechain = e.isSidechain == true end
      if data.createdAt == nil and at then data.createdAt = at end
      if data.cwd == nil and type(e.cwd) == "string" and e.cwd ~= "" then data.cwd = e.cwd end
      if not data.firstPromptLocked and e.type == "user" then
        local prompt = files.first_prompt(json.encode(e))
        if prompt then data.firstPrompt, data.firstPromptLocked = prompt, true end
      end
      for field, name in pairs(LAST_WINS) do
        if type(e[field]) == "string" then data[name] = e[field] end
      end
      if e.type == "tag" then
        data.tag = type(e.tag) == "string" and e.tag ~= "" and e.tag or nil
      elseif e.type == "relocated" and type(e.relocatedCwd) == "string"
        and e.relocatedCwd ~= "" then
        data.cwd = e.relocatedCwd
      end
    end
  end
  return { session_id = prev and prev.session_id or key.session_id, mtime = mtime,
    data = data }
end)

--- What `claude.sessions.list` gives for a session from its summary (nil for a subagent's,
-- or one with nothing to show).
function M.info_of_summary(summary, project_path)
  local d = summary.data
  if d.isSidechain == true then return nil end
  local title = d.customTitle or d.aiTitle
  local text = title or d.lastPrompt or d.summaryHint or d.firstPrompt
  if not text then return nil end
  return { session_id = summary.session_id, summary = text, last_modified = summary.mtime,
    custom_title = title, first_prompt = d.firstPrompt, git_branch = d.gitBranch,
    cwd = d.cwd or project_path, tag = d.tag, created_at = d.createdAt }
end

---------------------------------------------------------------------------
-- The in-memory store

local Memory = {}
Memory.__index = Memory
Memory.__name = "claude.sessions.MemoryStore"

function Memory:__tostring()
  return string.format("claude.sessions.MemoryStore (%d sessions)", self:size())
end

-- A clock that never goes back and never repeats, for the mtimes.
local function stamp(self)
  local now = math.floor(core.now() * 1000)
  if now <= self.last_mtime then now = self.last_mtime + 1 end
  self.last_mtime = now
  return now
end

--- Appends entries under `key` (and folds them into its summary, for a main transcript).
function Memory:append(key, entries)
  check_key(key, 1, "append")
  local k = key_string(key)
  local list = self.entries[k]
  if not list then
    list = {}
    self.entries[k] = list
  end
  for _, e in ipairs(entries) do list[#list + 1] = e end
  local mtime = stamp(self)
  self.mtimes[k] = mtime
  if not key.subpath then
    self.summaries[k] = M.fold_summary(self.summaries[k], key, entries, { mtime = mtime })
  end
end

--- The entries under `key`, or nil when there are none.
function Memory:load(key)
  check_key(key, 1, "load")
  local list = self.entries[key_string(key)]
  if not list then return nil end
  return { table.unpack(list) }
end

local function main_keys(self, project_key)
  local out = {}
  for k in pairs(self.entries) do
    local p, id, sub = k:match("^(.-)%z(.-)%z(.*)$")
    if p == project_key and sub == "" then out[#out + 1] = id end
  end
  table.sort(out)
  return out
end

--- The sessions of a project: `{ { session_id =, mtime = }, ... }`.
function Memory:list_sessions(project_key)
  local out = {}
  for _, id in ipairs(main_keys(self, project_key)) do
    out[#out + 1] = { session_id = id, mtime = self.mtimes[project_key .. "\0" .. id .. "\0"] }
  end
  return out
end

--- The summaries of a project's sessions (as `fold_summary` keeps them).
function Memory:list_session_summaries(project_key)
  local out = {}
  for _, id in ipairs(main_keys(self, project_key)) do
    out[#out + 1] = self.summaries[project_key .. "\0" .. id .. "\0"]
  end
  return out
end

--- Deletes `key`; without a `subpath`, the session's subagent transcripts too.
function Memory:delete(key)
  check_key(key, 1, "delete")
  local prefix = key.project_key .. "\0" .. key.session_id .. "\0"
  for k in pairs(self.entries) do
    if k == key_string(key) or (not key.subpath and k:sub(1, #prefix) == prefix) then
      self.entries[k], self.mtimes[k], self.summaries[k] = nil, nil, nil
    end
  end
end

--- The subpaths stored under a session (its subagents' transcripts).
function Memory:list_subkeys(key)
  check_key(key, 1, "list_subkeys")
  local prefix = key.project_key .. "\0" .. key.session_id .. "\0"
  local out = {}
  for k in pairs(self.entries) do
    if k:sub(1, #prefix) == prefix and #k > #prefix then out[#out + 1] = k:sub(#prefix + 1) end
  end
  table.sort(out)
  return out
end

--- Every entry under `key` (a list, maybe empty): for tests.
function Memory:get_entries(key)
  return self:load(key) or {}
end

--- The number of main transcripts stored.
function Memory:size()
  local n = 0
  for k in pairs(self.entries) do
    if k:sub(-1) == "\0" then n = n + 1 end
  end
  return n
end

--- Forgets everything.
function Memory:clear()
  self.entries, self.mtimes, self.summaries = {}, {}, {}
end

--- A store that keeps everything in memory, for tests and development (the TypeScript
-- SDK's `InMemorySessionStore`): give it as the `session_store` option.
function M.memory_store()
  return setmetatable({ entries = {}, mtimes = {}, summaries = {}, last_mtime = 0 }, Memory)
end
M.Memory = Memory

---------------------------------------------------------------------------
-- Importing a local transcript

local IMPORT_OPTS = files.set("directory", "cwd", "config_dir", "include_worktrees",
  "include_subagents", "batch_size")

local function decode_lines(text)
  local out = {}
  for line in text:gmatch("[^\n]+") do
    local e = json.decode(line)
    if type(e) == "table" then out[#out + 1] = e end
  end
  return out
end

local function append_batches(store, key, entries, size)
  for i = 1, #entries, size do
    local batch = { table.unpack(entries, i, math.min(#entries, i + size - 1)) }
    local ok, err = pcall(store.append, store, key, batch)
    if not ok then
      return errors.fail("session_store", "session_store.append failed for session "
        .. key.session_id .. ": " .. tostring(err), { cause = err })
    end
  end
  return true
end

--- Copies a local session (and its subagents' transcripts, unless
-- `opts.include_subagents` is false) into `store`, in batches of `opts.batch_size`
-- entries (500). The project key is the session's own project directory.
-- @return true | nil, err, kind (`not_found`, `session_store`)
-- @function import_to_store
M.import_to_store = errors.public(function(session_id, store, opts)
  if not files.is_uuid(session_id) then
    files.misuse("import_to_store", "a session id (a UUID) expected")
  end
  if type(store) ~= "table" or type(store.append) ~= "function" then
    files.misuse("import_to_store", "a store with an append(key, entries) function expected")
  end
  opts = opts or {}
  if type(opts) ~= "table" then files.misuse("import_to_store", "options table expected") end
  errors.check_fields(opts, IMPORT_OPTS, "sessions.import_to_store")
  errors.check_field(opts.batch_size, "batch_size", "sessions.import_to_store", "number", true)
  local path, dir = files.find_file(session_id, files.check_opts("import_to_store",
    { directory = opts.directory, cwd = opts.cwd, config_dir = opts.config_dir,
      include_worktrees = opts.include_worktrees }, IMPORT_OPTS))
  if not path then return files.not_found(session_id, opts) end
  local size = math.max(1, math.floor(opts.batch_size or 500))
  local project = opts.directory or opts.cwd
  local key = { project_key = project and files.project_key(core.realpath(project) or project)
    or dir:match("([^/]+)$"), session_id = session_id }
  local ok, err = append_batches(store, key, decode_lines(files.read_all(path) or ""), size)
  if not ok then return nil, err, err.kind end
  if opts.include_subagents == false then return true end
  -- every transcript under <session>/subagents, nested folders too; the subpath is the
  -- file's path under the session's folder, without .jsonl (as the TypeScript SDK keys it)
  local base = dir .. "/" .. session_id
  -- each folder once, none through a link out of the session's folder (claude.fs.tree)
  local found = {}
  for rel, st in tree.walk(base .. "/subagents") do
    if st.type == "file" and rel:match("%.jsonl$") then found[#found + 1] = "subagents/" .. rel end
  end
  for _, sub in ipairs(found) do
    local sub_key = { project_key = key.project_key, session_id = session_id,
      subpath = (sub:gsub("%.jsonl$", "")) }
    ok, err = append_batches(store, sub_key, decode_lines(files.read_all(base .. "/" .. sub)
      or ""), size)
    if not ok then return nil, err, err.kind end
    local meta = files.read_all(base .. "/" .. sub:gsub("%.jsonl$", ".meta.json"))
    local decoded = meta and json.decode(meta)
    if type(decoded) == "table" then
      decoded.type = "agent_metadata"
      ok, err = append_batches(store, sub_key, { decoded }, size)
      if not ok then return nil, err, err.kind end
    end
  end
  return true
end)

return M
