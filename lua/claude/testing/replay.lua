--- Replaying a recorded session (the `record` option of a session) as the CLI: the fake
-- CLI of `claude.testing` plays the recording's CLI side and checks that the code under
-- test sends what was recorded.
--
--     local opts, replay = testing.replay("spec/fixtures/agent.jsonl")
--     run_my_agent(testing.merge(opts, my_options))   -- as against the real CLI
--     assert(replay:check())                          -- true, or nil and the first difference
--
-- The replay goes through the recording in order. The CLI's messages are written as
-- recorded; where the recording has messages the session wrote, the replay reads what the
-- code sends and compares (after the recording's redaction, and with the session's own
-- request ids mapped onto the recorded ones; a run of such messages may come in any order).
-- The first difference ends the replay like a CLI that dies: exit 3, with the difference on
-- stderr, e.g.
--
--     request 3 (control_response to can_use_tool): field response.response.behavior:
--     recorded "allow", sent "deny"
--
-- so the session under test fails with a `process` error that says it, and
-- `replay:check()` returns it.
-- @module claude.testing.replay
local json = require "claude.json"
local errors = require "claude.errors"

local M = {}

local fmt = string.format

---------------------------------------------------------------------------
-- Reading a recording

--- The records of a recording file: the header, then the list of records.
-- @return header, records | nil, err, kind (`io`, `recording`)
function M.load(path)
  local f, err = io.open(path, "rb")
  if not f then return errors.fail("io", "cannot read the recording: " .. tostring(err)) end
  local header, records, n = nil, {}, 0
  for line in f:lines() do
    n = n + 1
    if line:find("%S") then
      local rec = json.decode(line)
      if type(rec) ~= "table" then
        f:close()
        return errors.fail("recording", fmt("%s:%d: not a JSON object", path, n))
      end
      if header == nil then
        if rec.recording == nil then
          f:close()
          return errors.fail("recording", path .. ": not a claudelua recording (no header)")
        end
        header = rec
      else
        records[#records + 1] = rec
      end
    end
  end
  f:close()
  if not header then return errors.fail("recording", path .. ": empty") end
  return header, records
end

---------------------------------------------------------------------------
-- Comparing

local function is_null(v) return v == nil or v == json.null end

local function show(v)
  if v == nil then return "nothing" end
  local ok, s = pcall(json.encode, v)
  s = ok and s or tostring(v)
  if #s > 120 then s = s:sub(1, 117) .. "..." end
  return s
end

local function join(path, k)
  if type(k) == "number" then return path .. "[" .. k .. "]" end
  if path == "" then return tostring(k) end
  return path .. "." .. tostring(k)
end

-- `ignore`: a set of paths (with `*` for any one key) not compared.
local function ignored(ignore, path)
  if ignore[path] then return true end
  for pattern in pairs(ignore) do
    if pattern:find("*", 1, true) then
      local lua = "^" .. pattern:gsub("[%.%[%]%-]", "%%%0"):gsub("%*", "[^%%.%%[]+") .. "$"
      if path:find(lua) then return true end
    end
  end
  return false
end

--- The first difference between `recorded` and `sent`: its path and a description, or nil
-- when they are the same.
function M.diff(recorded, sent, ignore, path)
  ignore, path = ignore or {}, path or ""
  if path ~= "" and ignored(ignore, path) then return nil end
  if is_null(recorded) and is_null(sent) then
    if recorded == sent then return nil end
    return path, fmt("recorded %s, sent %s", show(recorded), show(sent))
  end
  if type(recorded) ~= "table" or type(sent) ~= "table" or recorded == json.null
    or sent == json.null then
    if recorded == sent then return nil end
    return path, fmt("recorded %s, sent %s", show(recorded), show(sent))
  end
  if json.is_array(recorded) ~= json.is_array(sent) and (next(recorded) or next(sent)) then
    return path, fmt("recorded %s, sent %s", show(recorded), show(sent))
  end
  local keys, seen = {}, {}
  for k in pairs(recorded) do keys[#keys + 1] = k; seen[k] = true end
  for k in pairs(sent) do if not seen[k] then keys[#keys + 1] = k end end
  table.sort(keys, function(a, b)
    if type(a) == type(b) then return a < b end
    return type(a) == "number"
  end)
  for _, k in ipairs(keys) do
    local p, why = M.diff(recorded[k], sent[k], ignore, join(path, k))
    if p then return p, why end
  end
  return nil
end

---------------------------------------------------------------------------
-- Playing (in the fake CLI's process)

-- What a message the session wrote is, for messages: `user`, `control_request/interrupt`,
-- `control_response to can_use_tool`.
local function describe(msg, cli_requests)
  if msg.type == "control_request" and type(msg.request) == "table" then
    return "control_request/" .. tostring(msg.request.subtype)
  elseif msg.type == "control_response" and type(msg.response) == "table" then
    local asked = cli_requests[msg.response.request_id]
    return "control_response to " .. (asked or "an unknown request")
  end
  return tostring(msg.type)
end

-- The key two messages must share to be compared at all.
local function kind_of(msg)
  if msg.type == "control_request" and type(msg.request) == "table" then
    return "control_request/" .. tostring(msg.request.subtype)
  elseif msg.type == "control_response" and type(msg.response) == "table" then
    return "control_response/" .. tostring(msg.response.request_id)
  end
  return tostring(msg.type)
end

local Player = {}
Player.__index = Player

function Player:fail(message, ...)
  self.cli:fail(message, ...)
end

-- The message the session sent, as the recording would hold it: redacted, its request
-- ids turned into the recorded ones.
function Player:normal(msg)
  msg = self.redact(msg)
  if msg.type == "control_request" then
    msg.request_id = nil
  elseif msg.type == "control_cancel_request" and self.back[msg.request_id] then
    msg.request_id = self.back[msg.request_id]
  end
  return msg
end

-- Reads the messages the session sends for the run of recorded ones `group` (records),
-- in any order; fails at the first difference.
function Player:expect_group(group)
  local left = {}
  for i, rec in ipairs(group) do left[i] = rec end
  while #left > 0 do
    local sent = self.cli:read()
    local first = left[1]
    if sent == nil then
      self:fail("request %d (%s): recorded, but the code closed the CLI's input instead",
        first.n, describe(first.msg, self.cli_requests))
    end
    local norm = self:normal(sent)
    local hit, candidate
    for i, rec in ipairs(left) do
      local want = rec.msg
      if want.type == "control_request" then
        want = setmetatable({}, { __index = want })
        for k, v in pairs(rec.msg) do want[k] = v end
        want.request_id = nil
      end
      if not M.diff(want, norm, self.ignore) then
        hit = i
        break
      end
      if not candidate and kind_of(rec.msg) == kind_of(sent) then candidate = i end
    end
    if hit then
      local rec = table.remove(left, hit)
      if rec.msg.type == "control_request" then
        self.ids[rec.msg.request_id] = sent.request_id
        self.back[sent.request_id] = rec.msg.request_id
      end
    else
      local rec = left[candidate or 1]
      local want = rec.msg
      if want.type == "control_request" then
        local copy = {}
        for k, v in pairs(want) do copy[k] = v end
        copy.request_id = nil
        want = copy
      end
      local path, why = M.diff(want, norm, self.ignore)
      if candidate then
        self:fail("request %d (%s): field %s: %s", rec.n, describe(rec.msg, self.cli_requests),
          path, why)
      end
      self:fail("request %d (%s): recorded %s, sent %s (%s)", rec.n,
        describe(rec.msg, self.cli_requests), show(rec.msg), show(sent),
        describe(sent, self.cli_requests))
    end
  end
end

-- Writes a message of the CLI's, with the session's request ids where it answers one.
function Player:write(msg)
  if msg.type == "control_request" and type(msg.request) == "table" then
    self.cli_requests[msg.request_id] = msg.request.subtype
  elseif msg.type == "control_response" and type(msg.response) == "table" then
    local id = self.ids[msg.response.request_id]
    if id then
      local response = {}
      for k, v in pairs(msg.response) do response[k] = v end
      response.request_id = id
      local copy = {}
      for k, v in pairs(msg) do copy[k] = v end
      copy.response = response
      msg = copy
    end
  end
  self.cli:send(msg)
end

--- Plays the recording at `path` as the CLI (the fake CLI's script calls this with its
-- `cli`). `opts`: `{ ignore = { "path.of.field", "*.uuid", ... }, check_argv = true,
-- realtime = false, secrets = {...}, fields = {...} }`.
function M.play(cli, path, opts)
  opts = opts or {}
  local header, records = M.load(path)
  if not header then cli:fail("%s", errors.message(records)) end
  local record = require "claude.session.record"
  local redact, _, argv_of = record.redactor { secrets = opts.secrets,
    fields = opts.fields }
  local ignore = {}
  for _, p in ipairs(opts.ignore or {}) do ignore[p] = true end
  local self = setmetatable({ cli = cli, redact = redact, ignore = ignore, ids = {}, back = {},
    cli_requests = {} }, Player)
  if opts.check_argv ~= false then
    local recorded = header.argv or {}
    local sent = argv_of(cli.argv)
    -- a JSON flag (--mcp-config, --settings) compares as JSON: its members in any order
    local function json_of(a) return type(a) == "string" and a:match("^%s*{") and json.decode(a) end
    for i = 1, math.max(#recorded, #sent) do
      local r, s = json_of(recorded[i]), json_of(sent[i])
      local same = recorded[i] == sent[i] or (r and s and M.diff(r, s) == nil)
      if not same then
        local prev = recorded[i - 1]
        local flag = type(prev) == "string" and prev:match("^%-%-") and (" (" .. prev .. ")")
          or ""
        cli:fail("argv[%d]%s: recorded %s, sent %s", i, flag, show(recorded[i]),
          show(sent[i]))
      end
    end
  end
  local n, i, last_t = 0, 1, 0
  while i <= #records do
    local rec = records[i]
    if rec.dir == "to_cli" then
      local group = {}
      while i <= #records and records[i].dir == "to_cli" do
        n = n + 1
        records[i].n = n
        group[#group + 1] = records[i]
        i = i + 1
      end
      self:expect_group(group)
    else
      if rec.dir == "from_cli" then
        if opts.realtime and rec.t and rec.t > last_t then
          cli:sleep(math.min(5, rec.t - last_t))
        end
        self:write(rec.msg)
      elseif rec.dir == "stderr" then
        cli:stderr(rec.line)
      elseif rec.dir == "eof" then
        local more = cli:read()
        if more ~= nil then
          cli:fail("the recording closed the CLI's input after request %d; the code sent %s "
            .. "(%s)", n, show(more), describe(more, self.cli_requests))
        end
      elseif rec.dir == "exit" then
        if rec.signal and rec.signal ~= 0 then
          io.stdout:flush()
          local stat = io.open("/proc/self/stat")
          local pid = stat and stat:read("n")
          if stat then stat:close() end
          if pid then require("claude.core").kill(math.tointeger(pid), rec.signal) end
        end
        cli:_exit(rec.code or 0)
      end
      last_t = rec.t or last_t
      i = i + 1
    end
  end
end

return M
