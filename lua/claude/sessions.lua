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
local core = require "claude.core"
local json = require "claude.json"
local errors = require "claude.errors"

local M = {}

local HEAD = 65536 -- bytes read at each end of a transcript to list it
local MAX_SANITIZED = 200

local UUID = "^%x%x%x%x%x%x%x%x%-%x%x%x%x%-%x%x%x%x%-%x%x%x%x%-%x%x%x%x%x%x%x%x%x%x%x%x$"

local function is_uuid(s)
  return type(s) == "string" and s:match(UUID) ~= nil
end

-- Misuse, reported at the line of the public function's caller.
local function misuse(fname, msg)
  errors.misuse("bad argument to 'sessions.%s' (%s)", fname, msg)
end

local OPTION_NAMES = { directory = true, cwd = true, config_dir = true, include_worktrees = true,
  limit = true, offset = true, up_to_message_id = true, title = true }

local function check_opts(fname, opts, allowed)
  if opts == nil then return {} end
  if type(opts) ~= "table" then misuse(fname, "options table expected, got " .. type(opts), 1) end
  for k, v in pairs(opts) do
    if not (OPTION_NAMES[k] and allowed[k]) then
      misuse(fname, "unknown option '" .. tostring(k) .. "'", 1)
    end
    local want = (k == "limit" or k == "offset") and "number"
      or k == "include_worktrees" and "boolean" or "string"
    if type(v) ~= want then
      misuse(fname, "option '" .. k .. "': " .. want .. " expected, got " .. type(v), 1)
    end
  end
  if opts.cwd and opts.directory then misuse(fname, "give 'directory' or 'cwd', not both", 1) end
  return opts
end

local function set(...)
  local t = {}
  for i = 1, select("#", ...) do t[select(i, ...)] = true end
  return t
end

local function projects_dir(opts)
  local dir = opts.config_dir or os.getenv("CLAUDE_CONFIG_DIR")
  if not dir or dir == "" then dir = (os.getenv("HOME") or "") .. "/.claude" end
  return dir .. "/projects"
end

-- The CLI's 32-bit string hash in base 36, for project paths too long to
-- be a directory name.
local function simple_hash(s)
  local h = 0
  for _, c in utf8.codes(s, true) do
    h = ((h << 5) - h + c) & 0xffffffff
  end
  if h >= 0x80000000 then h = h - 0x100000000 end
  h = math.abs(h)
  if h == 0 then return "0" end
  local digits, out = "0123456789abcdefghijklmnopqrstuvwxyz", {}
  while h > 0 do
    local d = h % 36
    table.insert(out, 1, digits:sub(d + 1, d + 1))
    h = h // 36
  end
  return table.concat(out)
end

--- The name of the project directory the CLI uses for `path`: every
-- character that is not an ASCII letter or digit becomes '-'.
function M.project_key(path)
  local sanitized = path:gsub("[^%w]", "-")
  if #sanitized <= MAX_SANITIZED then return sanitized end
  return sanitized:sub(1, MAX_SANITIZED) .. "-" .. simple_hash(path)
end

local function is_dir(path)
  local st = core.stat(path)
  return st and st.type == "directory"
end

-- The project directory of `path` under `root`, tolerating another hash
-- suffix for long paths.
local function find_project_dir(root, path)
  local key = M.project_key(path)
  if is_dir(root .. "/" .. key) then return root .. "/" .. key end
  if #key <= MAX_SANITIZED then return nil end
  local prefix = key:sub(1, MAX_SANITIZED) .. "-"
  for _, name in ipairs(core.scandir(root) or {}) do
    if name:sub(1, #prefix) == prefix and is_dir(root .. "/" .. name) then
      return root .. "/" .. name
    end
  end
end

-- The worktrees of the git repository holding `dir` (none without git).
local function worktrees(dir)
  local p = io.popen("git -C '" .. dir:gsub("'", "'\\''") .. "' worktree list --porcelain "
    .. "2>/dev/null")
  if not p then return {} end
  local out = {}
  for line in p:lines() do
    local wt = line:match("^worktree (.*)$")
    if wt then out[#out + 1] = wt end
  end
  p:close()
  return out
end

-- The project directories to look in: { {dir, project_path}, ... }.
local function candidate_dirs(opts)
  local root = projects_dir(opts)
  local directory = opts.directory or opts.cwd
  local out = {}
  if directory then
    local canonical = core.realpath(directory) or directory
    local seen = {}
    local function add(path)
      local dir = find_project_dir(root, path)
      if dir and not seen[dir] then
        seen[dir] = true
        out[#out + 1] = { dir, path }
      end
    end
    add(canonical)
    if opts.include_worktrees ~= false then
      for _, wt in ipairs(worktrees(canonical)) do add(wt) end
    end
  else
    for _, name in ipairs(core.scandir(root) or {}) do
      if is_dir(root .. "/" .. name) then out[#out + 1] = { root .. "/" .. name } end
    end
  end
  return out
end

local function read_all(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local text = f:read("a")
  f:close()
  return text
end

-- The first non-empty transcript of `id`: its path and project directory.
local function find_file(id, opts)
  for _, c in ipairs(candidate_dirs(opts)) do
    local path = c[1] .. "/" .. id .. ".jsonl"
    local st = core.stat(path)
    if st and st.type == "file" and st.size > 0 then return path, c[1], c[2], st end
  end
end

local function not_found(id, opts)
  local where = (opts.directory or opts.cwd) and (" in the project of " .. (opts.directory
    or opts.cwd)) or ""
  return errors.fail("not_found", "session " .. id .. " not found" .. where)
end

-- Field extraction without a full parse (it also works on the cut lines of
-- a head or tail): the first, or the last, "key":"value" string.
local function string_field(text, key, last)
  local found
  for _, pattern in ipairs { '"' .. key .. '":"', '"' .. key .. '": "' } do
    local from = 1
    while true do
      local s, e = text:find(pattern, from, true)
      if not s then break end
      local i = e + 1
      while i <= #text do
        local c = text:byte(i)
        if c == 92 then i = i + 2
        elseif c == 34 then break
        else i = i + 1 end
      end
      if i > #text then break end
      local raw = text:sub(e + 1, i - 1)
      local value = raw:find("\\", 1, true) and json.decode('"' .. raw .. '"') or raw
      if not last then return value end
      found, from = value, i + 1
    end
    if found and not last then return found end
  end
  return found
end

local SKIP_PROMPT = { "^<local%-command%-stdout>", "^<session%-start%-hook>", "^<tick>", "^<goal>",
  "^%[Request interrupted by user[^%]]*%]", "^%s*<ide_opened_file>.*</ide_opened_file>%s*$",
  "^%s*<ide_selection>.*</ide_selection>%s*$" }

-- The first prompt a user typed, from the head of a transcript.
local function first_prompt(head)
  local command
  for line in head:gmatch("[^\n]+") do
    if (line:find('"type":"user"', 1, true) or line:find('"type": "user"', 1, true))
      and not line:find('"tool_result"', 1, true) and not line:find('"isMeta":true', 1, true)
      and not line:find('"isCompactSummary":true', 1, true) then
      local entry = json.decode(line)
      local content = type(entry) == "table" and entry.type == "user"
        and type(entry.message) == "table" and entry.message.content
      local texts = {}
      if type(content) == "string" then texts[1] = content
      elseif type(content) == "table" then
        for _, b in ipairs(content) do
          if type(b) == "table" and b.type == "text" and type(b.text) == "string" then
            texts[#texts + 1] = b.text
          end
        end
      end
      for _, raw in ipairs(texts) do
        local text = raw:gsub("\n", " "):match("^%s*(.-)%s*$")
        if text ~= "" then
          local name = text:match("<command%-name>(.-)</command%-name>")
          if name then
            command = command or name
          else
            local skip = false
            for _, p in ipairs(SKIP_PROMPT) do
              if text:find(p) then skip = true break end
            end
            if not skip then
              if utf8.len(text) and utf8.len(text) > 200 then
                text = text:sub(1, utf8.offset(text, 201) - 1):gsub("%s+$", "") .. "\u{2026}"
              end
              return text
            end
          end
        end
      end
    end
  end
  return command
end

-- Epoch milliseconds of an ISO 8601 UTC time ("2026-11-24T01:02:03.456Z").
local function iso_ms(s)
  local y, mo, d, h, mi, sec, frac = s:match("^(%d+)-(%d+)-(%d+)T(%d+):(%d+):(%d+)%.?(%d*)")
  if not y then return nil end
  y, mo = tonumber(y), tonumber(mo)
  -- days from the civil date (Howard Hinnant's algorithm)
  if mo <= 2 then y = y - 1 end
  local era = y // 400
  local yoe = y - era * 400
  local doy = (153 * (mo + (mo > 2 and -3 or 9)) + 2) // 5 + tonumber(d) - 1
  local doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
  local days = era * 146097 + doe - 719468
  local ms = frac ~= "" and tonumber((frac .. "00"):sub(1, 3)) or 0
  return ((days * 24 + tonumber(h)) * 60 + tonumber(mi)) * 60000 + tonumber(sec) * 1000 + ms
end

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
    session_id = id, summary = summary, last_modified = st.mtime, file_size = st.size,
    custom_title = title, first_prompt = prompt,
    git_branch = string_field(tail, "gitBranch", true) or string_field(head, "gitBranch"),
    cwd = string_field(head, "cwd") or project_path,
    tag = tag ~= "" and tag or nil,
    created_at = stamp and iso_ms(stamp),
  }
end

--- The saved sessions, newest first: tables with `session_id`, `summary`
-- (the title, else the last or first prompt), `last_modified` and
-- `created_at` (epoch ms), `file_size`, `custom_title`, `first_prompt`,
-- `git_branch`, `cwd` and `tag`.
-- @tparam[opt] table opts `directory`/`cwd`, `config_dir`, `include_worktrees`,
-- `limit`, `offset`
M.list = errors.public(function(opts)
  opts = check_opts("list", opts, set("directory", "cwd", "config_dir", "include_worktrees",
    "limit", "offset"))
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
  local offset, limit = opts.offset or 0, opts.limit
  if offset > 0 or (limit and limit > 0) then
    local page = {}
    for i = offset + 1, limit and limit > 0 and math.min(#out, offset + limit) or #out do
      page[#page + 1] = out[i]
    end
    out = page
  end
  return out
end)

--- One session's summary (as in `list`), or nil, err (`not_found`).
M.get_info = errors.public(function(session_id, opts)
  if type(session_id) ~= "string" then misuse("get_info", "session id string expected") end
  opts = check_opts("get_info", opts, set("directory", "cwd", "config_dir", "include_worktrees"))
  if not is_uuid(session_id) then return not_found(session_id, opts) end
  for _, c in ipairs(candidate_dirs(opts)) do
    local path = c[1] .. "/" .. session_id .. ".jsonl"
    local st = core.stat(path)
    local info = st and st.type == "file" and info_of(session_id, path, st, c[2])
    if info then return info end
  end
  return not_found(session_id, opts)
end)

local CHAIN_TYPES = set("user", "assistant", "progress", "system", "attachment")

local function entries_of(text)
  local out = {}
  for line in text:gmatch("[^\n]+") do
    local e = json.decode(line)
    if type(e) == "table" and CHAIN_TYPES[e.type] and type(e.uuid) == "string" then
      out[#out + 1] = e
    end
  end
  return out
end

local function truthy(v) return v ~= nil and v ~= false and v ~= json.null end

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
    "include_worktrees", "limit", "offset"))
  if not is_uuid(session_id) then return not_found(session_id, opts) end
  local path = find_file(session_id, opts)
  local text = path and read_all(path)
  if not text then return not_found(session_id, opts) end
  local out = {}
  for _, e in ipairs(chain(entries_of(text))) do
    if (e.type == "user" or e.type == "assistant") and not truthy(e.isMeta)
      and not truthy(e.isSidechain) and not truthy(e.teamName) then
      out[#out + 1] = { type = e.type, uuid = e.uuid, session_id = e.sessionId or "",
        message = e.message, parent_tool_use_id = json.null }
    end
  end
  local offset, limit = opts.offset or 0, opts.limit
  if offset > 0 or (limit and limit > 0) then
    local page = {}
    for i = offset + 1, limit and limit > 0 and math.min(#out, offset + limit) or #out do
      page[#page + 1] = out[i]
    end
    out = page
  end
  return out
end)

-- Appends one JSON line to an existing, non-empty transcript. `line` is
-- written by hand: readers find tag lines by their start, '{"type":"tag"'.
local function append(fname, session_id, line, opts)
  local path = find_file(session_id, opts)
  if not path then return not_found(session_id, opts) end
  local f, err = io.open(path, "ab")
  if not f then return errors.fail("io", "cannot write " .. path .. ": " .. tostring(err)) end
  local ok, werr = f:write(line, "\n")
  f:close()
  if not ok then
    return errors.fail("io", fname .. ": cannot write " .. path .. ": " .. tostring(werr))
  end
  return true
end

local MUTATE_OPTS = set("directory", "cwd", "config_dir", "include_worktrees")

local function check_id(fname, session_id)
  if not is_uuid(session_id) then
    misuse(fname, "a session id (a UUID) expected, got " .. (type(session_id) == "string"
      and ("'" .. session_id .. "'") or type(session_id)), 1)
  end
end

--- Sets a session's title (the last one written wins).
-- @return true, or nil, err (`not_found`, `io`)
M.rename = errors.public(function(session_id, title, opts)
  check_id("rename", session_id)
  if type(title) ~= "string" or not title:find("%S") then
    misuse("rename", "a non-empty title expected")
  end
  opts = check_opts("rename", opts, MUTATE_OPTS)
  return append("rename", session_id, '{"type":"custom-title","customTitle":'
    .. json.encode(title:match("^%s*(.-)%s*$")) .. ',"sessionId":"' .. session_id .. '"}', opts)
end)

-- Invisible characters a tag must not carry (zero-width, directional
-- marks, private use), so the CLI's filters see what the user sees.
local INVISIBLE = { 0x200B, 0x200C, 0x200D, 0x200E, 0x200F, 0x2060, 0xFEFF, 0x202A, 0x202B,
  0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069 }
local INVISIBLE_SET = {}
for _, c in ipairs(INVISIBLE) do INVISIBLE_SET[c] = true end

local function clean_tag(tag)
  if not utf8.len(tag) then return tag end
  local out = {}
  for _, c in utf8.codes(tag) do
    if not INVISIBLE_SET[c] and not (c >= 0xE000 and c <= 0xF8FF) then
      out[#out + 1] = utf8.char(c)
    end
  end
  return table.concat(out):match("^%s*(.-)%s*$")
end

--- Tags a session (`nil` clears the tag; the last one written wins).
-- @return true, or nil, err
M.tag = errors.public(function(session_id, tag, opts)
  check_id("tag", session_id)
  if tag ~= nil then
    if type(tag) ~= "string" then misuse("tag", "a tag string or nil expected") end
    tag = clean_tag(tag)
    if tag == "" then misuse("tag", "a non-empty tag expected (nil clears it)") end
  end
  opts = check_opts("tag", opts, MUTATE_OPTS)
  return append("tag", session_id, '{"type":"tag","tag":' .. json.encode(tag or "")
    .. ',"sessionId":"' .. session_id .. '"}', opts)
end)

local function remove_tree(path)
  local st = core.stat(path)
  if not st then return end
  if st.type == "directory" then
    for _, name in ipairs(core.scandir(path) or {}) do remove_tree(path .. "/" .. name) end
    core.rmdir(path)
  else
    os.remove(path)
  end
end

--- Deletes a session's transcript and its subagent transcripts.
-- @return true, or nil, err (`not_found`, `io`)
M.delete = errors.public(function(session_id, opts)
  check_id("delete", session_id)
  opts = check_opts("delete", opts, MUTATE_OPTS)
  local path, dir = find_file(session_id, opts)
  if not path then return not_found(session_id, opts) end
  local ok, err = os.remove(path)
  if not ok then return errors.fail("io", "cannot delete " .. path .. ": " .. tostring(err)) end
  remove_tree(dir .. "/" .. session_id)
  return true
end)

local function uuid4()
  local f = assert(io.open("/dev/urandom", "rb"))
  local b = { f:read(16):byte(1, 16) }
  f:close()
  b[7] = (b[7] & 0x0f) | 0x40
  b[9] = (b[9] & 0x3f) | 0x80
  return string.format("%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
    table.unpack(b))
end
M.uuid4 = uuid4

local function iso_now()
  local t = os.time()
  return os.date("!%Y-%m-%dT%H:%M:%S", t) .. ".000Z"
end

local FORK_TYPES = set("user", "assistant", "attachment", "system", "progress")

--- Copies a session into a new one with fresh ids (up to and including
-- `up_to_message_id` if given), in the same project, titled `title` or
-- "<original title> (fork)". The CLI can `resume` it.
-- @return { session_id = new id }, or nil, err
M.fork = errors.public(function(session_id, opts)
  check_id("fork", session_id)
  opts = check_opts("fork", opts, set("directory", "cwd", "config_dir", "include_worktrees",
    "up_to_message_id", "title"))
  if opts.up_to_message_id then check_id("fork", opts.up_to_message_id) end
  local path, dir = find_file(session_id, opts)
  local text = path and read_all(path)
  if not text then return not_found(session_id, opts) end
  local transcript, replacements = {}, {}
  for line in text:gmatch("[^\n]+") do
    local e = json.decode(line)
    if type(e) == "table" then
      if FORK_TYPES[e.type] and type(e.uuid) == "string" and not truthy(e.isSidechain) then
        transcript[#transcript + 1] = e
      elseif e.type == "content-replacement" and e.sessionId == session_id
        and type(e.replacements) == "table" then
        for _, r in ipairs(e.replacements) do replacements[#replacements + 1] = r end
      end
    end
  end
  if opts.up_to_message_id then
    local cut
    for i, e in ipairs(transcript) do
      if e.uuid == opts.up_to_message_id then cut = i break end
    end
    if not cut then
      return errors.fail("not_found", "message " .. opts.up_to_message_id
        .. " not found in session " .. session_id)
    end
    for i = #transcript, cut + 1, -1 do transcript[i] = nil end
  end
  local mapping, by_uuid, writable = {}, {}, {}
  for _, e in ipairs(transcript) do
    mapping[e.uuid], by_uuid[e.uuid] = uuid4(), e
    if e.type ~= "progress" then writable[#writable + 1] = e end
  end
  if #writable == 0 then
    return errors.fail("empty", "session " .. session_id .. " has no messages to fork")
  end
  local new_id, now = uuid4(), iso_now()
  local lines = {}
  for i, original in ipairs(writable) do
    local parent
    local pid = original.parentUuid
    while type(pid) == "string" do
      local p = by_uuid[pid]
      if not p then break end
      if p.type ~= "progress" then parent = mapping[pid] break end
      pid = p.parentUuid
    end
    local forked = {}
    for k, v in pairs(original) do forked[k] = v end
    forked.uuid = mapping[original.uuid]
    forked.parentUuid = parent or json.null
    if type(original.logicalParentUuid) == "string" then
      forked.logicalParentUuid = mapping[original.logicalParentUuid] or json.null
    end
    forked.sessionId = new_id
    forked.timestamp = i == #writable and now or original.timestamp or now
    forked.isSidechain = false
    forked.forkedFrom = { sessionId = session_id, messageUuid = original.uuid }
    forked.teamName, forked.agentName, forked.slug, forked.sourceToolAssistantUUID = nil, nil,
      nil, nil
    lines[#lines + 1] = json.encode(forked)
  end
  if #replacements > 0 then
    lines[#lines + 1] = json.encode { type = "content-replacement", sessionId = new_id,
      replacements = replacements, uuid = uuid4(), timestamp = now }
  end
  local title = opts.title and opts.title:match("^%s*(.-)%s*$")
  if not title or title == "" then
    local head, tail = text:sub(1, HEAD), text:sub(-HEAD)
    title = (string_field(tail, "customTitle", true) or string_field(head, "customTitle", true)
      or string_field(tail, "aiTitle", true) or string_field(head, "aiTitle", true)
      or first_prompt(head) or "Forked session") .. " (fork)"
  end
  lines[#lines + 1] = json.encode { type = "custom-title", sessionId = new_id,
    customTitle = title, uuid = uuid4(), timestamp = now }
  local target = dir .. "/" .. new_id .. ".jsonl"
  local f, err = io.open(target, "wb")
  if not f then return errors.fail("io", "cannot write " .. target .. ": " .. tostring(err)) end
  f:write(table.concat(lines, "\n"), "\n")
  f:close()
  return { session_id = new_id }
end)

return M
