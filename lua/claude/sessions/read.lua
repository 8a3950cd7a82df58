--- Reading saved sessions: `list`, `get_info` and `get_messages` of
-- `claude.sessions` (see there).
-- @module claude.sessions.read
local core = require "claude.core"
local json = require "claude.json"
local errors = require "claude.errors"
local files = require "claude.sessions.files"
local stores = require "claude.sessions.store"
local tree = require "claude.fs.tree"

local HEAD, is_uuid, misuse, check_opts, set = files.HEAD, files.is_uuid, files.misuse,
  files.check_opts, files.set
local candidate_dirs, read_all, find_file, not_found = files.candidate_dirs, files.read_all,
  files.find_file, files.not_found
local string_field, first_prompt, truthy = files.string_field, files.first_prompt, files.truthy
local store_key, store_call = files.store_key, files.store_call

local M = {}
local iso_ms = files.iso_ms

local function read_lite(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local size = f:seek("end")
  if size == 0 then f:close() return nil end
  f:seek("set", 0)
  local head = f:read(HEAD)
  local tail = head
  if size > HEAD then
    f:seek("set", size - HEAD)
    tail = f:read(HEAD)
  end
  f:close()
  return head, tail
end

-- Epoch ms of the last prompt a user sent in `text` (lines of a transcript), or nil.
local function last_prompt_at(text)
  local last
  for line in text:gmatch("[^\n]+") do
    if (line:find('"user"', 1, true) or line:find('"queued_command"', 1, true))
      and not line:find('"tool_result"', 1, true) then
      local e = json.decode(line)
      local at = type(e) == "table" and type(e.timestamp) == "string" and iso_ms(e.timestamp)
      if at and (not last or at > last) then last = at end
    end
  end
  return last
end

-- Whether the session of transcript `path` is archived: its mark
-- (`<project>/<id>/archived.json`, written by `archive`) says so and no prompt came
-- after it. `head`, `tail`: the transcript's ends, when already read.
local function archived(path, id, head, tail)
  local mark_text = read_all(path:match("^(.*)/[^/]*$") .. "/" .. id .. "/archived.json")
  local mark = mark_text and json.decode(mark_text)
  if type(mark) ~= "table" or mark.archived ~= true then return false end
  local at = type(mark.at) == "string" and iso_ms(mark.at)
  if not at then return true end
  if not head then head, tail = read_lite(path) end
  local later = (tail and last_prompt_at(tail) or 0) > at
    or (head and head ~= tail and (last_prompt_at(head) or 0) > at)
  return not later
end

-- The summary of one transcript, or nil (a subagent's, or one with no
-- prompt at all).
local function info_of(id, path, st, project_path)
  local head, tail = read_lite(path)
  if not head then return nil end
  local first_line = head:match("^[^\n]*")
  if first_line:find('"isSidechain":true', 1, true) then return nil end
  local title = string_field(tail, "customTitle", true) or string_field(head, "customTitle", true)
    or string_field(tail, "aiTitle", true) or string_field(head, "aiTitle", true)
  local prompt = first_prompt(head)
  local summary = title or string_field(tail, "lastPrompt", true)
    or string_field(tail, "summary", true) or prompt
  if not summary then return nil end
  local tag
  for line in tail:gmatch("[^\n]+") do
    if line:sub(1, 13) == '{"type":"tag"' then tag = string_field(line, "tag", true) end
  end
  local stamp = string_field(head, "timestamp")
  return {
    archived = archived(path, id, head, tail),
    session_id = id, summary = summary, last_modified = st.mtime, file_size = st.size,
    custom_title = title, first_prompt = prompt,
    git_branch = string_field(tail, "gitBranch", true) or string_field(head, "gitBranch"),
    cwd = string_field(head, "cwd") or project_path,
    tag = tag ~= "" and tag or nil,
    created_at = stamp and iso_ms(stamp),
  }
end

-- The page `opts.offset` (default 0) and `opts.limit` (default all) ask for.
local function page(list, opts)
  local offset, limit = opts.offset or 0, opts.limit
  if offset == 0 and not (limit and limit > 0) then return list end
  local out = {}
  for i = offset + 1, limit and limit > 0 and math.min(#list, offset + limit) or #list do
    out[#out + 1] = list[i]
  end
  return out
end

--- The saved sessions, newest first: tables with `session_id`, `summary`
-- (the title, else the last or first prompt), `last_modified` and
-- `created_at` (epoch ms), `file_size`, `custom_title`, `first_prompt`,
-- `git_branch`, `cwd` and `tag`.
-- @tparam[opt] table opts `directory`/`cwd`, `config_dir`, `include_worktrees`,
-- `limit`, `offset`
-- A project's sessions in a store, as `list` gives them: from the store's summaries, or
-- (a store without them) from each session's entries folded.
local function store_list(opts, only)
  local store = opts.store
  local key = store_key("", opts)
  local summaries = {}
  if type(store.list_session_summaries) == "function" and not only then
    local list, err, kind = store_call(store, "list_session_summaries", key.project_key)
    if err then return nil, err, kind end
    summaries = list or {}
  else
    local ids = only and { { session_id = only, mtime = 0 } } or {}
    if not only then
      local list, err, kind = store_call(store, "list_sessions", key.project_key)
      if err then return nil, err, kind end
      ids = list or {}
    end
    for _, item in ipairs(ids) do
      key.session_id = item.session_id
      local entries, err, kind = store_call(store, "load", key)
      if err then return nil, err, kind end
      if entries then
        summaries[#summaries + 1] = stores.fold_summary(nil, key, entries, { mtime = item.mtime })
      end
    end
  end
  local out = {}
  for _, summary in ipairs(summaries) do
    local info = stores.info_of_summary(summary, opts.directory or opts.cwd)
    if info and (not only or info.session_id == only) then out[#out + 1] = info end
  end
  table.sort(out, function(a, b)
    if a.last_modified ~= b.last_modified then return a.last_modified > b.last_modified end
    return a.session_id < b.session_id
  end)
  return out
end

M.list = errors.public(function(opts)
  opts = check_opts("list", opts, set("directory", "cwd", "config_dir", "include_worktrees",
    "limit", "offset", "store"))
  if opts.store then
    local list, err, kind = store_list(opts)
    if not list then return nil, err, kind end
    return page(list, opts)
  end
  local by_id = {}
  for _, c in ipairs(candidate_dirs(opts)) do
    for _, name in ipairs(core.scandir(c[1]) or {}) do
      local id = name:match("^(.*)%.jsonl$")
      if is_uuid(id) then
        local path = c[1] .. "/" .. name
        local st = core.stat(path)
        local info = st and st.type == "file" and info_of(id, path, st, c[2])
        if info and (not by_id[id] or by_id[id].last_modified < info.last_modified) then
          by_id[id] = info
        end
      end
    end
  end
  local out = {}
  for _, info in pairs(by_id) do out[#out + 1] = info end
  table.sort(out, function(a, b)
    if a.last_modified ~= b.last_modified then return a.last_modified > b.last_modified end
    return a.session_id < b.session_id
  end)
  return page(out, opts)
end)

--- One session's summary (as in `list`), or nil, err (`not_found`).
M.get_info = errors.public(function(session_id, opts)
  if type(session_id) ~= "string" then misuse("get_info", "session id string expected") end
  opts = check_opts("get_info", opts, set("directory", "cwd", "config_dir", "include_worktrees",
    "store"))
  if not is_uuid(session_id) then return not_found(session_id, opts) end
  if opts.store then
    local list, err, kind = store_list(opts, session_id)
    if not list then return nil, err, kind end
    if list[1] then return list[1] end
    return not_found(session_id, opts)
  end
  for _, c in ipairs(candidate_dirs(opts)) do
    local path = c[1] .. "/" .. session_id .. ".jsonl"
    local st = core.stat(path)
    local info = st and st.type == "file" and info_of(session_id, path, st, c[2])
    if info then return info end
  end
  return not_found(session_id, opts)
end)

local CHAIN_TYPES = set("user", "assistant", "progress", "system", "attachment")

-- The entries of the conversation chain: from a transcript's text, or a store's entries.
local function entries_of(text)
  local out = {}
  local function take(e)
    if type(e) == "table" and CHAIN_TYPES[e.type] and type(e.uuid) == "string" then
      out[#out + 1] = e
    end
  end
  if type(text) == "table" then
    for _, e in ipairs(text) do take(e) end
  else
    for line in text:gmatch("[^\n]+") do take(json.decode(line)) end
  end
  return out
end

-- The conversation as the CLI resumes it: from the newest main-chain leaf
-- back to the root along parentUuid, in order.
local function chain(entries)
  local by_uuid, index, parents = {}, {}, {}
  for i, e in ipairs(entries) do
    by_uuid[e.uuid], index[e.uuid] = e, i
    if type(e.parentUuid) == "string" then parents[e.parentUuid] = true end
  end
  local leaves = {}
  for _, e in ipairs(entries) do
    if not parents[e.uuid] then
      local cur, seen = e, {}
      while cur and not seen[cur.uuid] do
        seen[cur.uuid] = true
        if cur.type == "user" or cur.type == "assistant" then
          leaves[#leaves + 1] = cur
          break
        end
        cur = type(cur.parentUuid) == "string" and by_uuid[cur.parentUuid] or nil
      end
    end
  end
  local best, best_main
  for _, leaf in ipairs(leaves) do
    local main = not truthy(leaf.isSidechain) and not truthy(leaf.teamName)
      and not truthy(leaf.isMeta)
    if main and (not best_main or index[leaf.uuid] > index[best_main.uuid]) then
      best_main = leaf
    end
    if not best or index[leaf.uuid] > index[best.uuid] then best = leaf end
  end
  local out, seen = {}, {}
  local cur = best_main or best
  while cur and not seen[cur.uuid] do
    seen[cur.uuid] = true
    table.insert(out, 1, cur)
    cur = type(cur.parentUuid) == "string" and by_uuid[cur.parentUuid] or nil
  end
  return out
end

--- The user and assistant messages of a saved session, in order: tables
-- `{ type, uuid, session_id, message, parent_tool_use_id }` (`message` is
-- the API message, as in a live session). Returns nil, err (`not_found`).
-- @tparam[opt] table opts `directory`/`cwd`, `config_dir`, `limit`, `offset`
M.get_messages = errors.public(function(session_id, opts)
  if type(session_id) ~= "string" then misuse("get_messages", "session id string expected") end
  opts = check_opts("get_messages", opts, set("directory", "cwd", "config_dir",
    "include_worktrees", "limit", "offset", "store"))
  if not is_uuid(session_id) then return not_found(session_id, opts) end
  local text
  if opts.store then
    local entries, err, kind = store_call(opts.store, "load", store_key(session_id, opts))
    if err then return nil, err, kind end
    text = entries
  else
    local path = find_file(session_id, opts)
    text = path and read_all(path)
  end
  if not text then return not_found(session_id, opts) end
  local out = {}
  for _, e in ipairs(chain(entries_of(text))) do
    if (e.type == "user" or e.type == "assistant") and not truthy(e.isMeta)
      and not truthy(e.isSidechain) and not truthy(e.teamName) then
      out[#out + 1] = { type = e.type, uuid = e.uuid, session_id = e.sessionId or "",
        message = e.message, parent_tool_use_id = json.null }
    end
  end
  return page(out, opts)
end)

-- The subagent transcripts of a session: agent id -> path (nested folders too).
local function subagent_files(session_id, opts)
  local path = find_file(session_id, opts)
  if not path then return nil end
  local out = {}
  -- nested folders too, each once and none through a link out of the folder (claude.fs.tree)
  local dir = path:match("^(.*)%.jsonl$") .. "/subagents"
  for rel, st in tree.walk(dir) do
    local agent = st.type == "file" and rel:match("agent%-([^/]+)%.jsonl$")
    if agent then out[agent] = out[agent] or dir .. "/" .. rel end
  end
  return out
end

-- A session's subagents in a store: agent id -> subpath (nil when the store has no such
-- session).
local function store_subagents(session_id, opts)
  local key = store_key(session_id, opts)
  local subkeys, err, kind = store_call(opts.store, "list_subkeys", key)
  if err then return nil, err, kind end
  local out = {}
  for _, sub in ipairs(subkeys or {}) do
    local agent = sub:match("agent%-([^/]+)$")
    if agent then out[agent] = sub end
  end
  if next(out) == nil then
    local main
    main, err, kind = store_call(opts.store, "load", key)
    if err then return nil, err, kind end
    if not main then return nil end
  end
  return out
end

--- The ids of a session's subagents (their transcripts), sorted; `{}` when it has none.
-- @return the list | nil, err (`not_found`: no such session)
M.list_subagents = errors.public(function(session_id, opts)
  if type(session_id) ~= "string" then misuse("list_subagents", "session id string expected") end
  opts = check_opts("list_subagents", opts, set("directory", "cwd", "config_dir",
    "include_worktrees", "store"))
  local found, err, kind
  if opts.store and is_uuid(session_id) then
    found, err, kind = store_subagents(session_id, opts)
    if err then return nil, err, kind end
  else
    found = is_uuid(session_id) and subagent_files(session_id, opts)
  end
  if not found then return not_found(session_id, opts) end
  local out = {}
  for id in pairs(found) do out[#out + 1] = id end
  table.sort(out)
  return out
end)

--- A subagent's messages, in order (as `get_messages` gives a session's); `{}` when the
-- session has no such subagent.
-- @return the list | nil, err (`not_found`: no such session)
M.get_subagent_messages = errors.public(function(session_id, agent_id, opts)
  if type(session_id) ~= "string" then
    misuse("get_subagent_messages", "session id string expected")
  end
  if type(agent_id) ~= "string" then misuse("get_subagent_messages", "agent id string expected") end
  opts = check_opts("get_subagent_messages", opts, set("directory", "cwd", "config_dir",
    "include_worktrees", "limit", "offset", "store"))
  local found, text, err, kind
  if opts.store and is_uuid(session_id) then
    found, err, kind = store_subagents(session_id, opts)
    if err then return nil, err, kind end
    if found and found[agent_id] then
      local key = store_key(session_id, opts)
      key.subpath = found[agent_id]
      text, err, kind = store_call(opts.store, "load", key)
      if err then return nil, err, kind end
    end
  else
    found = is_uuid(session_id) and subagent_files(session_id, opts)
    text = found and found[agent_id] and read_all(found[agent_id])
  end
  if not found then return not_found(session_id, opts) end
  if not text then return {} end
  local out = {}
  for _, e in ipairs(chain(entries_of(text))) do
    if (e.type == "user" or e.type == "assistant") and not truthy(e.isMeta) then
      out[#out + 1] = { type = e.type, uuid = e.uuid, session_id = e.sessionId or session_id,
        message = e.message, parent_tool_use_id = json.null,
        parent_agent_id = type(e.agentId) == "string" and e.agentId or json.null }
    end
  end
  return page(out, opts)
end)

return M
