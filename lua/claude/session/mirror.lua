--- The session mirror: with `options.session_store` the CLI runs with
-- `--session-mirror` and sends each batch of lines it appends to a
-- transcript as a `transcript_mirror` message `{ filePath =, entries = }`.
-- They are collected here and handed to `store:append(key, entries)` at
-- each result (or at once, with `session_store_flush = "eager"`), in their
-- order, from a task of their own, so a slow store never holds up the
-- session. As in the Python SDK, a failing append is tried three times in
-- all and then reported; the transcript on disk is complete either way.
-- @module claude.session.mirror
local async = require "claude.async"
local core = require "claude.core"
local json = require "claude.json"
local errors = require "claude.errors"

local M = {}

local MAX_PENDING = 500          -- entries that start a flush without waiting for a result
local BACKOFF = { 0.2, 0.8 }     -- seconds between the attempts of one append

local Mirror = {}
Mirror.__index = Mirror

--- The CLI's projects directory for its environment `env`, with a final '/'.
function M.projects_dir(env)
  local config = env.CLAUDE_CONFIG_DIR
  if not config or config == "" then
    config = (env.HOME or os.getenv("HOME") or "") .. "/.claude"
  end
  return config .. "/projects/"
end

--- Resuming from the store: when `options.resume` names a session that has
-- no transcript on this machine, `store:load(key)` gives its entries, and
-- they are written where the CLI looks for them (the main transcript; the
-- CLI then resumes as usual). Waits at most `load_timeout_ms`.
-- @return true | nil, err
function M.materialize(options, env)
  local store, id = options.session_store, options.resume
  if not (store and id and type(store.load) == "function") then return true end
  local cwd = options.cwd or core.cwd()
  local key = { project_key = require("claude.sessions").project_key(core.realpath(cwd) or cwd),
    session_id = id }
  local dir = M.projects_dir(env) .. key.project_key
  local path = dir .. "/" .. id .. ".jsonl"
  local st = core.stat(path)
  if st and st.size > 0 then return true end -- the local copy is complete
  local timeout = (options.load_timeout_ms or 60000) / 1000
  local task = async.spawn(store.load, store, key)
  local ok, entries = task:join(timeout)
  if not ok then
    if task.status ~= "done" and task.status ~= "failed" then task:cancel("load timed out") end
    return errors.fail("session_store", "session_store.load failed for session " .. id
      .. ": " .. tostring(entries), { cause = entries })
  end
  if entries == nil then return true end -- never stored: the CLI says so
  if type(entries) ~= "table" then
    return errors.fail("session_store", "session_store.load returned a " .. type(entries)
      .. ", a list of entries expected")
  end
  core.mkdir(M.projects_dir(env):sub(1, -2))
  core.mkdir(dir)
  local f, err = io.open(path, "wb")
  if not f then return errors.fail("io", "cannot write " .. path .. ": " .. tostring(err)) end
  for _, e in ipairs(entries) do f:write(json.encode(e), "\n") end
  f:close()
  return true
end

--- A mirror for `options` (the session's), whose CLI runs with `env`.
function M.new(options, env)
  return setmetatable({
    store = options.session_store,
    eager = options.session_store_flush == "eager",
    projects = M.projects_dir(env),
    pending = {}, count = 0,
    running = nil, -- the task appending, if any
  }, Mirror)
end

--- The store key of a transcript path: `{ project_key, session_id [, subpath] }`.
function Mirror:key(path)
  if type(path) ~= "string" then return nil end
  local rel
  if path:sub(1, #self.projects) == self.projects then
    rel = path:sub(#self.projects + 1)
  else -- a config dir given some other way: the part after the last /projects/
    rel = path:match(".*/projects/(.+)$")
  end
  if not rel then return nil end
  local project, rest = rel:match("^([^/]+)/(.+)$")
  if not project then return nil end
  local id = rest:match("^([^/]+)%.jsonl$")
  if id then return { project_key = project, session_id = id } end
  local sid, sub = rest:match("^([^/]+)/(.+/.+)$")
  if sid then
    return { project_key = project, session_id = sid, subpath = sub:gsub("%.jsonl$", "") }
  end
end

--- Takes one `transcript_mirror` message.
function Mirror:enqueue(msg)
  local entries = msg.entries
  if type(entries) ~= "table" or #entries == 0 then return end
  local batches = self.pending
  local last = batches[#batches]
  if last and last.path == msg.filePath then
    for _, e in ipairs(entries) do last.entries[#last.entries + 1] = e end
  else
    local copy = {}
    for i, e in ipairs(entries) do copy[i] = e end
    batches[#batches + 1] = { path = msg.filePath, entries = copy }
  end
  self.count = self.count + #entries
  if self.eager or self.count >= MAX_PENDING then self:flush() end
end

local function append(store, key, entries)
  local err
  for attempt = 1, #BACKOFF + 1 do
    local ok, e = pcall(store.append, store, key, entries)
    if ok then return true end
    err = e
    if attempt <= #BACKOFF then async.sleep(BACKOFF[attempt]) end
  end
  io.stderr:write("claude: session_store.append failed for session ", tostring(key.session_id),
    ": ", tostring(err), "\n")
  return false
end

-- Appends batches until none is left; one task at a time keeps the order.
local function drain(self)
  while #self.pending > 0 do
    local batches = self.pending
    self.pending, self.count = {}, 0
    for _, b in ipairs(batches) do
      local key = self:key(b.path)
      if key then
        append(self.store, key, b.entries)
      else
        io.stderr:write("claude: session mirror: a transcript outside the projects directory: ",
          tostring(b.path), "\n")
      end
    end
  end
  self.running = nil
end

--- Hands what is pending to the store (from a task; returns at once).
function Mirror:flush()
  if self.running or #self.pending == 0 then return end
  self.running = async.spawn(drain, self)
end

--- Waits until everything handed over so far is appended (at most `timeout` s).
function Mirror:wait(timeout)
  self:flush()
  local task = self.running
  if task then pcall(task.join, task, timeout) end
end

return M
