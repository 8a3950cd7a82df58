--- Recording a session's whole wire traffic (the `record` option), for
-- `claude.testing.replay`: JSON lines, a header first, then one line per message each
-- way, per stderr line, for the end of the CLI's input and for its exit:
--
--     {"recording":"claudelua/1","argv":[...],"env":{...},"cwd":...,"started_at":...}
--     {"t":0.0012,"dir":"to_cli","msg":{...}}      what the session wrote
--     {"t":0.7031,"dir":"from_cli","msg":{...}}    what the CLI wrote
--     {"t":...,"dir":"stderr","line":"..."}
--     {"t":...,"dir":"eof"}                        the session closed the CLI's input
--     {"t":...,"dir":"exit","code":0,"signal":0}
--
-- `t` is seconds since the start. Secrets are redacted before anything is written (see
-- `M.redactor`): the values of environment variables and headers whose names say they are
-- secret (the env guard's test; in the header, the session's `env` and every `env` or
-- `headers` object of a message, such as an MCP server's config), and those values
-- wherever they appear; fields named like credentials; values shaped like API keys; the
-- password of a URL; every value of `update_environment_variables`. The file is made 0600.
-- The same redaction runs at replay on what the code under test sends, so the two compare.
-- @module claude.session.record
local core = require "claude.core"
local json = require "claude.json"
local errors = require "claude.errors"
local env_guard = require "claude.guard.env"

local M = {}

M.FORMAT = "claudelua/1"
M.REDACTED = "[redacted]"

-- Environment variables and headers whose values are secrets: the env guard's own test
-- (a secret-like word as a part of the name: GITHUB_PERSONAL_ACCESS_TOKEN, MYSQL_PWD,
-- X-API-Key), so the two never disagree.
local function secret_name(name)
  return env_guard.secret_name((name:gsub("%-", "_"))) ~= nil
end
M.secret_name = secret_name

-- The password of every URL in `s` (postgres://user:pass@host -> user:[redacted]@host), and
-- a userinfo that is itself a token (https://ghp_...@github.com).
local function scrub_urls(s)
  if not s:find("://", 1, true) then return s end
  return (s:gsub("(://)([^/?#%s]*)", function(sep, authority)
    local userinfo, host = authority:match("^(.*)@(.*)$")
    if not userinfo then return nil end
    local user = userinfo:match("^([^:]*):")
    if user then return sep .. user .. ":" .. M.REDACTED .. "@" .. host end
    if env_guard.secret_value(userinfo) then return sep .. M.REDACTED .. "@" .. host end
  end))
end

-- Fields of messages whose values are credentials (exact names; `input_tokens` and
-- `apiKeySource` are not secrets, so no guessing by words here).
local SECRET_FIELDS = {}
for _, k in ipairs { "accessToken", "refreshToken", "authToken", "idToken", "access_token",
  "refresh_token", "id_token", "client_secret", "clientSecret", "apiKey", "api_key",
  "password", "authorization", "Authorization", "x-api-key", "X-Api-Key", "cookie", "Cookie",
  "token", "secret" } do
  SECRET_FIELDS[k] = true
end

-- Values shaped like keys and tokens, wherever they are.
local SECRET_SHAPES = { "sk%-ant%-[%w_%-]+", "sk%-[%w_%-][%w_%-][%w_%-][%w_%-]+[%w_%-]",
  "Bearer [%w%._~%+/%-]+=*" }

--- A redaction function `(value) -> redacted copy` with the default rules plus
-- `opts.secrets` (values to hide wherever they are), `opts.fields` (more field names) and
-- `opts.env` (an environment whose secret-named values are hidden wherever they are).
function M.redactor(opts)
  opts = opts or {}
  local fields = setmetatable({}, { __index = SECRET_FIELDS })
  for _, k in ipairs(opts.fields or {}) do fields[k] = true end
  local values = {}
  for _, v in ipairs(opts.secrets or {}) do
    if type(v) == "string" and #v >= 4 then values[#values + 1] = v end
  end
  for k, v in pairs(opts.env or {}) do
    if type(v) == "string" and #v >= 4 and secret_name(k) then values[#values + 1] = v end
  end
  table.sort(values, function(a, b) return #a > #b end) -- the longest first
  local learned = {}
  for _, v in ipairs(values) do learned[v] = true end
  local function scrub(s)
    for _, v in ipairs(values) do
      if s:find(v, 1, true) then
        local out, from = {}, 1
        while true do
          local i, j = s:find(v, from, true)
          if not i then break end
          out[#out + 1] = s:sub(from, i - 1)
          out[#out + 1] = M.REDACTED
          from = j + 1
        end
        out[#out + 1] = s:sub(from)
        s = table.concat(out)
      end
    end
    for _, shape in ipairs(SECRET_SHAPES) do
      if s:find(shape) then
        s = s:gsub(shape, function(m)
          local keep = m:match("^Bearer ") and "Bearer " or m:match("^sk%-ant%-") and "sk-ant-"
            or "sk-"
          return keep .. M.REDACTED
        end)
      end
    end
    return scrub_urls(s)
  end
  -- A value of an environment or of headers is a secret when its name or its shape says so.
  local function secret_member(name, v)
    return type(v) == "string" and ((type(name) == "string" and secret_name(name))
      or (not v:find("://", 1, true) and env_guard.secret_value(v) ~= nil))
  end
  -- Every secret value of an `env` or `headers` object in `v`, learned before `v` is
  -- walked, so that it is hidden wherever else it is (an argument; a config the CLI echoes).
  local function learn(v, key)
    if type(v) ~= "table" or v == json.null then return end
    local vars = (key == "env" or key == "headers") and not json.is_array(v)
    for k, x in pairs(v) do
      if vars and secret_member(k, x) and #x >= 4 and not learned[x] then
        learned[x] = true
        values[#values + 1] = x
        table.sort(values, function(a, b) return #a > #b end)
      end
      learn(x, k)
    end
  end
  local function member(name, v)
    if secret_member(name, v) then return M.REDACTED end
    return type(v) == "string" and scrub(v) or v
  end
  local function walk(v, key)
    if type(v) == "string" then
      if key and fields[key] then return M.REDACTED end
      return scrub(v)
    end
    if type(v) ~= "table" or v == json.null then return v end
    local out = setmetatable({}, getmetatable(v))
    if (key == "env" or key == "headers") and not json.is_array(v) then
      for k, x in pairs(v) do out[k] = type(x) == "table" and walk(x, k) or member(k, x) end
      return out
    end
    for k, x in pairs(v) do out[k] = walk(x, k) end
    -- new values of the CLI's environment: tokens, every one
    if v.type == "update_environment_variables" and type(out.variables) == "table" then
      for k in pairs(out.variables) do out.variables[k] = M.REDACTED end
    end
    return out
  end
  local redact = function(v)
    learn(v)
    return walk(v)
  end
  --- The environment with its secret-named values hidden.
  local function env_of(env)
    learn(env, "env")
    local out = {}
    for k, v in pairs(env or {}) do
      if v == false then out[k] = false
      else out[k] = member(k, tostring(v)) end
    end
    return out
  end
  -- A flag's value: JSON text (--settings, --mcp-config) redacted field by field.
  local function argv_of(argv)
    local out = json.array()
    for i, a in ipairs(argv) do
      local decoded = type(a) == "string" and a:match("^%s*{") and json.decode(a)
      out[i] = type(decoded) == "table" and json.encode(redact(decoded)) or scrub(a)
    end
    return out
  end
  return redact, env_of, argv_of
end

local Recorder = {}
Recorder.__index = Recorder
Recorder.__name = "claude.session.Recorder"

function Recorder:_line(rec)
  if not self.file then return end
  rec.t = math.floor((core.now() - self.started) * 1e4 + 0.5) / 1e4
  local ok, line = pcall(json.encode, rec)
  if not ok then line = json.encode { t = rec.t, dir = rec.dir, unencodable = tostring(line) } end
  self.file:write(line, "\n")
  self.file:flush()
end

--- A message the session wrote to the CLI.
function Recorder:to_cli(msg)
  self:_line { dir = "to_cli", msg = self.redact(msg) }
end

--- A message the CLI wrote.
function Recorder:from_cli(msg)
  self:_line { dir = "from_cli", msg = self.redact(msg) }
end

--- A line the CLI wrote on stderr.
function Recorder:stderr(line)
  if self.with_stderr then self:_line { dir = "stderr", line = self.scrub_line(line) } end
end

--- The session closed the CLI's input.
function Recorder:eof()
  self:_line { dir = "eof" }
end

--- The CLI exited; the recording ends.
function Recorder:exit(code, signal)
  self:_line { dir = "exit", code = code, signal = signal }
  self:close()
end

function Recorder:close()
  if self.file then
    self.file:close()
    self.file = nil
  end
end

local RECORD_OPTS = { path = true, secrets = true, fields = true, stderr = true }

--- Checks the `record` option (a path, or `{ path =, secrets = {...}, fields = {...},
-- stderr = true }`); raises a misuse naming the field.
function M.check(record, fname)
  if type(record) == "string" then return end
  errors.check_fields(record, RECORD_OPTS, fname, "record")
  if type(record.path) ~= "string" then
    errors.bad_field("record.path", fname, "a file path expected")
  end
  for _, k in ipairs { "secrets", "fields" } do
    if record[k] ~= nil and type(record[k]) ~= "table" then
      errors.bad_field("record." .. k, fname, "a list of strings expected")
    end
  end
end

--- Opens a recording for a session about to start `argv` (the CLI's arguments) with
-- `env` (its whole environment) and `changes` (the variables the session set).
-- @return the recorder | nil, err, kind (`io`)
function M.open(record, argv, env, changes, cwd)
  if type(record) == "string" then record = { path = record } end
  -- made 0600 before anything is in it (what is redacted is not all that is private)
  local made, merr = core.write_private(record.path, "")
  if not made then return errors.fail("io", "cannot open the recording: " .. tostring(merr)) end
  local f, err = io.open(record.path, "wb")
  if not f then return errors.fail("io", "cannot open the recording: " .. tostring(err)) end
  local redact, env_of, argv_of = M.redactor { secrets = record.secrets, fields = record.fields,
    env = env }
  local self = setmetatable({ file = f, started = core.now(), redact = redact,
    with_stderr = record.stderr ~= false }, Recorder)
  self.scrub_line = function(line) return redact(line) end
  self:_line { recording = M.FORMAT, argv = argv_of(argv), env = env_of(changes),
    cwd = cwd, started_at = os.date("!%Y-%m-%dT%H:%M:%SZ") }
  return self
end

return M
