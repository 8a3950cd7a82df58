--- Where the CLI keeps its transcripts and what can be read from them
-- without a full parse: the project directories, a session's file, the
-- option checks shared by `claude.sessions`' functions, and the fields a
-- listing needs. Internal to `claude.sessions`.
-- @module claude.sessions.files
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
  limit = true, offset = true, up_to_message_id = true, title = true, store = true }

local function check_opts(fname, opts, allowed)
  if opts == nil then return {} end
  if type(opts) ~= "table" then misuse(fname, "options table expected, got " .. type(opts)) end
  for k, v in pairs(opts) do
    if not (OPTION_NAMES[k] and allowed[k]) then
      errors.unknown_field(k, allowed, "sessions." .. fname)
    end
    local want = (k == "limit" or k == "offset") and "number"
      or k == "include_worktrees" and "boolean" or k == "store" and "table" or "string"
    errors.check_field(v, k, "sessions." .. fname, want)
  end
  if opts.cwd and opts.directory then misuse(fname, "give 'directory' or 'cwd', not both") end
  if opts.store ~= nil and type(opts.store.load) ~= "function" then
    misuse(fname, "'store' must be a session store (with load(key))")
  end
  return opts
end

--- The store key of a session for the options' project (`directory` or `cwd`, else the
-- current directory), as the SDKs key stores: the project's directory name.
function M.store_key(session_id, opts)
  local dir = opts.directory or opts.cwd or core.cwd()
  return { project_key = M.project_key(core.realpath(dir) or dir), session_id = session_id }
end

--- Calls `store[method](store, ...)`; a store that raises is a `session_store` error.
-- @return its results | nil, err, kind
function M.store_call(store, method, ...)
  local fn = store[method]
  if type(fn) ~= "function" then
    return errors.fail("session_store", "the session store has no " .. method .. "()")
  end
  local r = table.pack(pcall(fn, store, ...))
  if not r[1] then
    return errors.fail("session_store", "session_store." .. method .. " failed: "
      .. errors.message(r[2]), { cause = r[2] })
  end
  return table.unpack(r, 2, r.n)
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
function M.iso_ms(s)
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


local function truthy(v) return v ~= nil and v ~= false and v ~= json.null end

M.HEAD, M.is_uuid, M.misuse, M.check_opts, M.set = HEAD, is_uuid, misuse, check_opts, set
M.is_dir, M.candidate_dirs, M.read_all, M.find_file = is_dir, candidate_dirs, read_all, find_file
M.not_found, M.string_field, M.first_prompt, M.truthy = not_found, string_field, first_prompt,
  truthy

return M
