--- Drops environment variables that look like secrets before a child gets
-- them.
--
-- `claude.guard.env{ ... }` returns a guard; `g:filter(env)` returns a copy of
-- the `NAME -> value` table `env` (default: this process's environment)
-- without the variables whose name has a secret-like word as one of its
-- `_`-separated parts (`KEY`, `TOKEN`, `SECRET`, `PASSWORD`, `AUTH`, `PWD`, ...)
-- or ends in `PASSWORD`, `PASSWD`, `PASSPHRASE` or `PWD` (`PGPASSWORD`,
-- `MYSQL_PWD`; not the shell's `PWD` and `OLDPWD`), or whose value looks like
-- a credential (`sk-...`, `ghp_...`, `AKIA...`, a private key, a JWT, a URL
-- whose userinfo has a password, even with no user, or is a token), and the sorted list of the
-- names it dropped. `allow` keeps names regardless; `deny` drops more.
-- `g:check(name, value)` is the test for one variable: the value, or
-- `nil, err, "guard"`.
-- @module claude.guard.env
local core = require "claude.core"
local errors = require "claude.errors"
local common = require "claude.guard.common"

local violation = common.violation

local EnvGuard = common.class("claude.guard.Env")

local SECRET_WORDS = common.set {
  "KEY", "KEYS", "APIKEY", "TOKEN", "TOKENS", "SECRET", "SECRETS", "PASSWORD", "PASSWD",
  "PASS", "PASSPHRASE", "CREDENTIAL", "CREDENTIALS", "CREDS", "AUTH",
  "AUTHORIZATION", "COOKIE", "COOKIES", "PRIVATE", "SIGNATURE", "PAT",
  "BEARER", "OAUTH", "DSN", "PWD",
}

-- Parts that end in one of these are secrets too: PGPASSWORD, SQLCMDPASSWORD, LDAPPASSWORD,
-- DBPWD. MYSQL_PWD has PWD as a part; only the shell's own PWD and OLDPWD are directories.
local SECRET_SUFFIXES = { "PASSWORD", "PASSWD", "PASSPHRASE", "PWD" }
local NOT_SECRET = common.set { "PWD", "OLDPWD" }

local SECRET_VALUES = {
  "^sk%-", "^sk_live_", "^rk_live_", "^gh[pousr]_", "^github_pat_", "^glpat%-", "^xox[abpors]%-",
  "^AKIA[0-9A-Z]+$", "^ASIA[0-9A-Z]+$", "^AIza", "^ya29%.", "%-%-%-%-%-BEGIN [%u ]*PRIVATE KEY",
  "^eyJ[%w_-]+%.eyJ[%w_-]+%.", "^npm_", "^pypi%-",
}

local function secret_name(name)
  name = name:upper()
  if NOT_SECRET[name] then return nil end
  for word in name:gmatch("[^_]+") do
    if SECRET_WORDS[word] then return word end
    for _, suffix in ipairs(SECRET_SUFFIXES) do
      if #word > #suffix and word:sub(-#suffix) == suffix then return suffix end
    end
  end
end

local function secret_value(value)
  for _, p in ipairs(SECRET_VALUES) do
    if value:find(p) then return true end
  end
  -- URLs anywhere in the value: an authority (up to / ? # or a blank) with userinfo (up to
  -- its last @) that has a password, even an empty user's (redis://:pw@host), or is itself
  -- a token (https://ghp_...@github.com)
  for authority in value:gmatch("://([^/?#%s]*)") do
    local userinfo = authority:match("^(.*)@")
    if userinfo and (userinfo:find(":", 1, true) or secret_value(userinfo)) then return true end
  end
end

--- Makes an environment guard.
-- @tparam[opt] table opts `allow` (names always kept), `deny` (names always
--   dropped)
-- @treturn claude.guard.Env
local function new(opts)
  opts = opts or {}
  common.check_options("guard.env", opts, { allow = "table", deny = "table" })
  common.check_strings("guard.env", "allow", opts.allow)
  common.check_strings("guard.env", "deny", opts.deny)
  return setmetatable({ allow = common.set(opts.allow), deny = common.set(opts.deny) }, EnvGuard)
end

function EnvGuard:describe()
  local n = 0
  for _ in pairs(self.allow) do n = n + 1 end
  return n .. " names always kept"
end

--- Checks one variable.
-- @treturn string the value, or nil, err, "guard"
function EnvGuard:check(name, value)
  if self.allow[name] then return value end
  if self.deny[name] then return violation("env.denied", "%s is denied", name) end
  local word = secret_name(name)
  if word then
    return violation("env.secret_name", "%s looks like a secret (its name has %s)", name, word)
  end
  if type(value) == "string" and secret_value(value) then
    return violation("env.secret_value", "%s holds what looks like a credential", name)
  end
  return value
end

--- A copy of `env` without the secrets, and the names dropped.
-- @tparam[opt] table env default: this process's environment
-- @treturn table the kept variables
-- @treturn table the sorted names dropped
function EnvGuard:filter(env)
  env = env or core.environ()
  local kept, dropped = {}, {}
  for name, value in pairs(env) do
    if self:check(name, value) then kept[name] = value else dropped[#dropped + 1] = name end
  end
  table.sort(dropped)
  return kept, dropped
end

--- The guard's own tests, for what else must hide secrets (a session's recording):
-- `secret_name(name)` (the secret-like word it has, or nil) and `secret_value(value)`
-- (true when the value looks like a credential).
return { new = errors.public(new), EnvGuard = EnvGuard, secret_name = secret_name,
  secret_value = secret_value }
