--- Allows or refuses commands by their argument vector, with no shell.
--
-- `claude.guard.command{ allow = {...}, deny = {...} }` returns a guard;
-- `g:check(cmd)` takes an argv list, or a command line that it splits the way
-- a POSIX shell splits plain words and quotes, and returns the argv or
-- `nil, err, "guard"`. A command line that needs a shell to mean what it says
-- (`;`, `|`, `&`, redirections, `$`, backquotes, globs, `~`, a leading
-- `NAME=value`) is refused, not interpreted: the argv returned is exactly what
-- runs when passed to `claude.process.spawn`.
--
-- `allow` lists program names (`"git"`), full paths (`"/usr/bin/git"`), or maps a
-- name to the first arguments it may take (`git = { "status", "log" }`). With
-- `allow` given, nothing else runs. `deny` lists names refused wherever they
-- live (`"rm"` also refuses `/bin/rm`); `deny_args` lists Lua patterns no
-- argument may match. With `deny` alone, programs that run other programs
-- (shells, `env`, `sudo`, `xargs`, ...) are refused too, since they would
-- carry any denied command past the list; prefer `allow`.
-- @module claude.guard.command
local errors = require "claude.errors"
local common = require "claude.guard.common"

local violation = common.violation

local CommandGuard = common.class("claude.guard.Command")

-- Programs that run their arguments as another command.
local RUNNERS = common.set {
  "sh", "bash", "dash", "zsh", "ksh", "csh", "tcsh", "fish", "busybox", "env", "sudo", "su",
  "doas", "xargs", "nohup", "timeout", "nice", "ionice", "chroot", "setsid", "stdbuf",
  "strace", "ltrace", "time", "watch", "script", "runuser", "setpriv", "unshare", "nsenter",
  "exec", "eval", "command", "builtin", "python", "python3", "perl", "ruby", "node", "lua",
  "lua5.4", "awk", "gawk", "find",
}

local function basename(p) return p:match("[^/]*$") end

-- Splits a command line into words: blanks separate, '...' is literal,
-- "..." keeps blanks and allows \" and \\, a backslash outside quotes
-- escapes the next character. Anything a shell would expand or act on fails.
local function split(line)
  local words, word, i, n = {}, nil, 1, #line
  local function add(s) word = (word or "") .. s end
  while i <= n do
    local c = line:sub(i, i)
    if c == " " or c == "\t" then
      if word then words[#words + 1] = word; word = nil end
    elseif c == "'" then
      local close = line:find("'", i + 1, true)
      if not close then return nil, "an unclosed single quote" end
      add(line:sub(i + 1, close - 1))
      i = close
    elseif c == '"' then
      local j, buf = i + 1, {}
      while true do
        local d = line:sub(j, j)
        if d == "" then return nil, "an unclosed double quote" end
        if d == '"' then break end
        if d == "$" or d == "`" then return nil, "'" .. d .. "' inside double quotes" end
        if d == "\\" and line:sub(j + 1, j + 1):match('["\\]') then
          j = j + 1
          d = line:sub(j, j)
        end
        buf[#buf + 1] = d
        j = j + 1
      end
      add(table.concat(buf))
      i = j
    elseif c == "\\" then
      if i == n then return nil, "a trailing backslash" end
      add(line:sub(i + 1, i + 1))
      i = i + 1
    elseif c:match("[;&|<>()$`*?%[%]{}~!#\n\r]") then
      return nil, "'" .. (c == "\n" and "\\n" or c == "\r" and "\\r" or c) .. "'"
    else
      add(c)
    end
    i = i + 1
  end
  if word then words[#words + 1] = word end
  return words
end

--- Makes a command guard.
-- @tparam table opts `allow` (list of names or paths, or name -> list of first
--   arguments), `deny` (list of names), `deny_args` (list of Lua patterns)
-- @treturn claude.guard.Command
local function new(opts)
  common.check_options("guard.command", opts, { allow = "table", deny = "table",
    deny_args = "table" })
  if not opts.allow and not opts.deny then
    errors.misuse("bad argument #1 to 'guard.command' (an 'allow' or a 'deny' list expected)")
  end
  local allow
  if opts.allow then
    allow = {}
    for k, v in pairs(opts.allow) do
      if type(k) == "number" and type(v) == "string" then
        allow[v] = true
      elseif type(k) == "string" and type(v) == "table" then
        common.check_strings("guard.command", "allow." .. k, v)
        allow[k] = common.set(v)
      else
        errors.misuse("bad field 'allow' to 'guard.command' (names, or name = { args } "
          .. "expected, got %s = %s)", tostring(k), type(v))
      end
    end
  end
  common.check_strings("guard.command", "deny", opts.deny)
  common.check_strings("guard.command", "deny_args", opts.deny_args)
  return setmetatable({ allow = allow, deny = common.set(opts.deny),
    deny_args = opts.deny_args or {} }, CommandGuard)
end

function CommandGuard:describe()
  local names = {}
  for k in pairs(self.allow or self.deny) do names[#names + 1] = k end
  table.sort(names)
  return (self.allow and "allow " or "deny ") .. table.concat(names, ", ")
end

--- Checks a command.
-- @tparam string|table cmd a command line or an argv list
-- @treturn table the argv
-- @return or nil, err, "guard"
function CommandGuard:check(cmd)
  local argv
  if type(cmd) == "string" then
    local why
    argv, why = split(cmd)
    if not argv then
      return violation("command.shell_syntax", "'%s' needs a shell (%s)", cmd, why)
    end
  elseif type(cmd) == "table" then
    argv = {}
    for i, a in ipairs(cmd) do
      if type(a) ~= "string" then
        return violation("command.invalid", "argument %d is a %s, not a string", i, type(a))
      end
      argv[i] = a
    end
  else
    return violation("command.invalid", "expected a command, got %s", type(cmd))
  end
  if #argv == 0 then return violation("command.invalid", "the command is empty") end
  for i, a in ipairs(argv) do
    if a:find("\0", 1, true) then
      return violation("command.invalid", "argument %d contains a NUL byte", i)
    end
  end
  local prog = argv[1]
  local name = basename(prog)
  if prog:find("=", 1, true) and not prog:find("/", 1, true) then
    return violation("command.shell_syntax", "'%s' sets a variable, which needs a shell", prog)
  end
  if self.deny[name] then
    return violation("command.denied", "'%s' is denied", name)
  end
  if self.allow then
    local rule = self.allow[prog]
    if rule == nil and prog:find("/", 1, true) then
      -- a path runs only when it is listed as that path
      return violation("command.not_allowed", "'%s' is not an allowed program", prog)
    end
    if rule == nil then
      return violation("command.not_allowed", "'%s' is not an allowed program", prog)
    end
    if type(rule) == "table" and not rule[argv[2] or ""] then
      return violation("command.not_allowed", "'%s %s' is not allowed", prog, argv[2] or "")
    end
  elseif RUNNERS[name] then
    return violation("command.runner", "'%s' runs other commands, which a deny list cannot "
      .. "check", name)
  end
  for i = 2, #argv do
    for _, pattern in ipairs(self.deny_args) do
      if argv[i]:find(pattern) then
        return violation("command.denied_argument", "argument '%s' is denied", argv[i])
      end
    end
  end
  return argv
end

return { new = errors.public(new), CommandGuard = CommandGuard, split = split }
