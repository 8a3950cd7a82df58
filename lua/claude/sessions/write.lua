--- Writing saved sessions: `rename`, `tag`, `delete` and `fork` of
-- `claude.sessions` (see there). Lines are appended the way the CLI
-- writes them, so the CLI and the Python SDK read them back.
-- @module claude.sessions.write
local core = require "claude.core"
local json = require "claude.json"
local errors = require "claude.errors"
local files = require "claude.sessions.files"

local HEAD, is_uuid, misuse, check_opts, set = files.HEAD, files.is_uuid, files.misuse,
  files.check_opts, files.set
local read_all, find_file, not_found = files.read_all, files.find_file, files.not_found
local string_field, first_prompt, truthy = files.string_field, files.first_prompt, files.truthy

local M = {}
-- written by hand: readers find tag lines by their start, '{"type":"tag"'.
local function append(fname, session_id, line, opts)
  local path = find_file(session_id, opts)
  if not path then return not_found(session_id, opts) end
  -- the CLI never links a transcript: a link there would have us append to its target
  if core.is_symlink(path) then
    return errors.fail("io", fname .. ": " .. path .. " is a link: not written through")
  end
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
local STORE_MUTATE_OPTS = set("directory", "cwd", "config_dir", "include_worktrees", "store")

-- Appends `entry` to the session in `opts.store` (it must hold the session), as the SDKs
-- write a title or a tag through a store: one entry with its own uuid and timestamp.
local function store_append(session_id, entry, opts)
  local key = files.store_key(session_id, opts)
  local have, err, kind = files.store_call(opts.store, "load", key)
  if err then return nil, err, kind end
  if not have or #have == 0 then return not_found(session_id, opts) end
  entry.uuid = M.uuid4()
  entry.timestamp = os.date("!%Y-%m-%dT%H:%M:%S.000Z")
  local _, aerr, akind = files.store_call(opts.store, "append", key, { entry })
  if aerr then return nil, aerr, akind end
  return true
end

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
  opts = check_opts("rename", opts, STORE_MUTATE_OPTS)
  if opts.store then
    return store_append(session_id, { type = "custom-title",
      customTitle = title:match("^%s*(.-)%s*$"), sessionId = session_id }, opts)
  end
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
  opts = check_opts("tag", opts, STORE_MUTATE_OPTS)
  if opts.store then
    return store_append(session_id, { type = "tag", tag = tag or "", sessionId = session_id },
      opts)
  end
  return append("tag", session_id, '{"type":"tag","tag":' .. json.encode(tag or "")
    .. ',"sessionId":"' .. session_id .. '"}', opts)
end)

-- Removes `path` and what is under it. A link is removed itself, never followed: a link
-- in a session's folder to a folder elsewhere must not empty that folder.
local function remove_tree(path)
  local st = core.lstat(path)
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
  opts = check_opts("delete", opts, STORE_MUTATE_OPTS)
  if opts.store then
    local _, err, kind = files.store_call(opts.store, "delete", files.store_key(session_id, opts))
    if err then return nil, err, kind end
    return true
  end
  local path, dir = find_file(session_id, opts)
  if not path then return not_found(session_id, opts) end
  local ok, err = os.remove(path)
  if not ok then return errors.fail("io", "cannot delete " .. path .. ": " .. tostring(err)) end
  remove_tree(dir .. "/" .. session_id)
  return true
end)

local function iso_now()
  local t = os.time()
  return os.date("!%Y-%m-%dT%H:%M:%S", t) .. ".000Z"
end

-- Writes the archived mark beside the transcript (`<project>/<id>/archived.json`), as
-- the CLI and the TypeScript SDK keep it: a later prompt in the session clears it.
local function set_archived(fname, session_id, archived, opts)
  check_id(fname, session_id)
  opts = check_opts(fname, opts, MUTATE_OPTS)
  local path = find_file(session_id, opts)
  if not path then return not_found(session_id, opts) end
  local dir = path:match("^(.*)%.jsonl$")
  -- the mark goes in the session's own folder, never through a link out of it
  if core.is_symlink(dir) then
    return errors.fail("io", fname .. ": " .. dir .. " is a link: not written through")
  end
  core.mkdir(dir)
  local file = dir .. "/archived.json"
  local function write_mark(at)
    -- replaced whole (a link there is replaced, not followed), readable as the CLI's is
    local ok, err = core.write_atomic(file, '{"archived":' .. tostring(archived) .. ',"at":'
      .. json.encode(at) .. ',"by":"sdk"}', 420)
    if not ok then return errors.fail("io", fname .. ": cannot write " .. file .. ": "
      .. tostring(err)) end
    return true
  end
  -- the time to the millisecond, as the transcript's timestamps have it: the clock of the
  -- file system that keeps both (os.time has whole seconds only)
  local ok, err, kind = write_mark(iso_now())
  if not ok then return nil, err, kind end
  local st = core.stat(file)
  if st and st.mtime then
    local ms = math.floor(st.mtime)
    ok, err, kind = write_mark(os.date("!%Y-%m-%dT%H:%M:%S", ms // 1000)
      .. string.format(".%03dZ", ms % 1000))
    if not ok then return nil, err, kind end
  end
  return true
end

--- Archives a session: it stays on disk, and `list` shows it with `archived = true`
-- until a prompt is sent in it.
-- @return true, or nil, err (`not_found`, `io`)
M.archive = errors.public(function(session_id, opts)
  return set_archived("archive", session_id, true, opts)
end)

--- Takes a session out of the archive.
-- @return true, or nil, err (`not_found`, `io`)
M.unarchive = errors.public(function(session_id, opts)
  return set_archived("unarchive", session_id, false, opts)
end)

local function uuid4()
  local b = { assert(core.random_bytes(16)):byte(1, 16) }
  b[7] = (b[7] & 0x0f) | 0x40
  b[9] = (b[9] & 0x3f) | 0x80
  return string.format("%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
    table.unpack(b))
end
M.uuid4 = uuid4

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
