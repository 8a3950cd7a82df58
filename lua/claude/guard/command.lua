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
-- name to a rule: its list part names the subcommands it may take
-- (`git = { "status", "log" }`), a string key gives a subcommand its own rule
-- (`git = { "status", diff = { options = { "--stat" } } }`), `options` lists the
-- only options allowed (`"--format="` with a trailing `=` takes a value) and
-- `deny_options` options refused in any spelling (`--opt=v`, `--opt v`, an
-- abbreviation, inside a cluster `-xo`). With `allow` given, nothing else runs.
-- `deny` lists names refused wherever they live (`"rm"` also refuses
-- `/bin/rm`); `deny_args` lists Lua patterns no argument may match. With
-- `deny` alone, programs that run other programs (shells, interpreters of any
-- version, `env`, `sudo`, `taskset`-like wrappers, ...) are refused too, since
-- they would carry any denied command past the list; prefer `allow`. In both
-- modes the options by which well-known programs run another program or
-- reach files outside their job (`git diff --output`, `--no-index`,
-- `tar --to-command`, `find -exec`, ...) are refused.
-- @module claude.guard.command
local errors = require "claude.errors"
local common = require "claude.guard.common"

local violation = common.violation

local CommandGuard = common.class("claude.guard.Command")

-- Programs that run their arguments (or a script, or an editor command) as another
-- command, by name. Shells are also known by their name's end (`*sh`: rbash, mksh, ssh,
-- tclsh), and interpreters and wrappers by their name without a version (python3.11,
-- perl5.36.0, node18).
local RUNNERS = common.set {
  -- shells and multi-call binaries not named *sh
  "busybox", "toybox", "xonsh", "nu", "elvish", "screen", "tmux", "script", "expect", "rlwrap",
  -- interpreters, debuggers, editors with a shell escape, build tools
  "python", "pypy", "perl", "ruby", "jruby", "irb", "node", "nodejs", "deno", "bun", "lua",
  "luajit", "php", "wish", "awk", "gawk", "mawk", "nawk", "sed", "gsed", "r", "rscript", "julia",
  "guile", "racket", "sbcl", "clisp", "ocaml", "ghci", "runghc", "runhaskell", "scala", "groovy",
  "java", "jshell", "dotnet", "osascript", "gdb", "lldb", "sqlite", "vim", "vi", "nvim", "view",
  "ex", "ed", "emacs", "make", "gmake", "bmake", "cmake",
  -- wrappers that run their arguments
  "env", "sudo", "sudoedit", "su", "doas", "pkexec", "run0", "runuser", "setpriv", "sg", "newgrp",
  "chroot", "unshare", "nsenter", "setsid", "nohup", "timeout", "nice", "ionice", "chrt",
  "taskset", "numactl", "prlimit", "flock", "setarch", "linux32", "linux64", "uname26", "i386",
  "i486", "i586", "i686", "x86_64", "ia64", "ppc", "ppc32", "ppc64", "s390", "s390x", "sparc",
  "sparc32", "sparc64", "mips", "mips32", "mips64", "parisc", "parisc32", "parisc64",
  "systemd-run", "systemd-nspawn", "systemd-inhibit", "systemd-cat", "machinectl",
  "cgexec", "firejail", "bwrap", "proot", "fakeroot", "fakechroot", "faketime", "eatmydata",
  "nocache", "stdbuf", "unbuffer", "watch", "time", "strace", "ltrace", "valgrind", "perf",
  "catchsegv", "xargs", "parallel", "find", "exec", "eval", "command", "builtin", "sshpass",
  "start-stop-daemon", "daemonize", "chpst", "setuidgid", "softlimit", "envdir", "envuidgid",
  "tini", "dumb-init", "entr", "torsocks", "proxychains", "proxychains4", "tsocks", "trickle",
  "chronic", "ifne", "xvfb-run", "dbus-run-session", "dbus-launch", "ssh-agent", "mpirun",
  "mpiexec", "srun", "at", "batch", "xterm",
  -- runners of packages and containers
  "npx", "pnpx", "bunx", "uvx", "pipx", "npm", "yarn", "pnpm", "docker", "podman", "nerdctl",
  "kubectl", "lxc",
}

-- Whether the program name (a basename) runs other commands.
local function is_runner(name)
  local lower = name:lower()
  local bare = lower:match("^(.-)[%d._-]*$") -- python3.11 -> python, perl5.36.0 -> perl
  return RUNNERS[lower] or RUNNERS[bare] or lower:find("sh$") or bare:find("sh$")
    or lower:find("^ld[.-].*%.so") -- the dynamic loader runs any binary: ld-linux-x86-64.so.2
end

-- Options of well-known programs that run another program, or read or write files their
-- job does not name, refused in both modes (an `options` list that names one lets it
-- through): `global` before the subcommand, `all` anywhere, `subs` for one subcommand.
-- `outside` lists the subcommands whose path operands must stay in the work tree, and
-- `bundled` marks a first argument that is a cluster without its dash (tar xIf).
local BUILTIN = {
  git = {
    -- config, paths and pagers that name programs (core.pager, aliases, hooks)
    global = { "-c", "--config-env", "-C", "--exec-path", "--git-dir", "--work-tree",
      "--namespace", "--super-prefix", "-p", "--paginate" },
    -- writes a file, compares any two files, runs a diff, pager, hook or remote program,
    -- reads a file as the work tree's
    all = { "--output", "--output-directory", "--no-index", "--ext-diff", "--open-files-in-pager",
      "--contents", "--exec", "--upload-pack", "--receive-pack", "--config", "--template",
      "--extcmd", "--separate-git-dir" },
    subs = { grep = { "-O" }, ["format-patch"] = { "-o" }, archive = { "-o" }, rebase = { "-x" },
      difftool = { "-x" }, clone = { "-u", "-c" }, ["ls-remote"] = { "-u" } },
    -- `git diff a b` with a path outside the work tree is `git diff --no-index a b`
    outside = { diff = true },
  },
  find = { all = { "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0",
    "-fprintf", "-fls" } },
  tar = { bundled = true, all = { "--to-command", "-I", "--use-compress-program",
    "--checkpoint-action", "-F", "--info-script", "--new-volume-script", "--rmt-command",
    "--rsh-command" } },
  rsync = { all = { "-e", "--rsh", "--rsync-path" } },
  scp = { all = { "-S", "-o", "-F" } },
  sftp = { all = { "-S", "-D", "-o", "-F" } },
  ssh = { all = { "-o", "-F" } }, -- ProxyCommand, LocalCommand
  zip = { all = { "-TT", "--unzip-command" } },
  sort = { all = { "--compress-program" } },
  man = { all = { "-P", "--pager", "-H", "--html" } },
  wget = { all = { "--use-askpass", "-e", "--execute" } },
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

-- ---- options ---------------------------------------------------------------

local function is_option(a) return #a > 1 and a:sub(1, 1) == "-" and a ~= "--" end

-- Whether the argument `a` spells the option `opt`. "--name": itself, with "=value", or a
-- prefix of it (GNU getopt and git take an unambiguous abbreviation: --outp is --output).
-- "-x": the letter anywhere in a one-dash cluster (-sSo, -ofile), since which letters take
-- a value is not known. A one-dash word ("-exec", "-TT"): itself, or with "=value".
local function spells(a, opt)
  if opt:sub(1, 2) == "--" then
    local name = a:match("^(%-%-[^=]+)")
    return name ~= nil and #name >= 3 and opt:sub(1, #name) == name
  elseif #opt == 2 then
    return a:sub(1, 1) == "-" and a:sub(2, 2) ~= "-" and a:find(opt:sub(2), 2, true) ~= nil
  end
  return a == opt or a:sub(1, #opt + 1) == opt .. "="
end

-- The option among `denied` (a list) that `a` spells, unless `allowed` lists it.
local function denied_option(a, denied, allowed)
  for _, opt in ipairs(denied) do
    if spells(a, opt) and not (allowed and allowed[opt] ~= nil) then return opt end
  end
end

-- A path operand that may leave the work tree: absolute, or with a ".." component.
local function leaves_tree(a)
  if a:sub(1, 1) == "/" then return true end
  for part in a:gmatch("[^/]+") do
    if part == ".." then return true end
  end
  return false
end

-- Checks argv[from..] against the options of a rule: every spelling of a `denied`
-- option is refused; with `allowed` (option -> takes a value), every option must be in
-- it. A value that an allowed option takes is no option. "--" ends the options; when the
-- option before it may take it as its value (an option not written "--opt=v": what takes
-- a value is only known from an `allowed` list, which may be mistaken), the rest is still
-- looked at for denied options. `operand(a)` returns a message for a refused operand.
local function check_options(argv, from, denied, allowed, label, operand)
  local value_next, maybe_value, ended = false, false, false
  for i = from, #argv do
    local a = argv[i]
    local opt = is_option(a) and denied_option(a, denied, allowed)
    if opt then
      return violation("command.denied_option", "option '%s' of '%s' is denied", opt, label)
    end
    if value_next then -- the value of the option before: neither an option nor an operand
      value_next, maybe_value = false, false
    elseif a == "--" and not ended then
      if not maybe_value then -- certainly the end: operands only from here
        for j = i + 1, #argv do
          local why = operand and operand(argv[j])
          if why then return violation("command.denied_argument", "%s", why) end
        end
        return true
      end
      ended, maybe_value = allowed ~= nil, false
    elseif is_option(a) and not ended then
      maybe_value = not a:find("=", 1, true)
      if allowed and a:sub(1, 2) == "--" then
        local name, eq = a:match("^([^=]*)(=?)")
        local takes = allowed[name]
        if takes == nil then
          return violation("command.not_allowed", "option '%s' of '%s' is not allowed", name,
            label)
        end
        value_next = takes and eq == ""
      elseif allowed then -- one-letter options in a cluster; one that takes a value ends it
        local j = allowed[a] == nil and 2 or #a + 1
        if j > #a then value_next = allowed[a] end -- listed as a whole: -la, find's -name=
        while j <= #a do
          local takes = allowed["-" .. a:sub(j, j)]
          if takes == nil then
            return violation("command.not_allowed", "option '-%s' of '%s' is not allowed",
              a:sub(j, j), label)
          end
          if takes then
            value_next = j == #a
            break
          end
          j = j + 1
        end
      end
    else
      maybe_value = false
      local why = operand and operand(a)
      if why then return violation("command.denied_argument", "%s", why) end
    end
  end
  return true
end

-- ---- rules -----------------------------------------------------------------

-- An allow rule from its table: `subs` (name -> rule, or nil: any arguments), `allowed`
-- (option -> takes a value, or nil), `deny` (the options refused).
local function compile(t, where)
  local rule = { deny = {} }
  local function bad(field, fmt, ...)
    errors.misuse("bad field '%s' to 'guard.command' (" .. fmt .. ")", field, ...)
  end
  local function option_list(field, list)
    if type(list) ~= "table" then
      bad(where .. "." .. field, "list expected, got %s", type(list))
    end
    for i, o in ipairs(list) do
      if type(o) ~= "string" or not is_option((o:gsub("=$", ""))) then
        bad(string.format("%s.%s[%d]", where, field, i), "an option such as '--name' or '-x' "
          .. "expected, got %s", type(o) == "string" and "'" .. o .. "'" or type(o))
      end
    end
    return list
  end
  for k, v in pairs(t) do
    if math.type(k) == "integer" then
      if type(v) ~= "string" then
        bad(string.format("%s[%d]", where, k), "a subcommand name expected, got %s", type(v))
      end
      rule.subs = rule.subs or {}
      rule.subs[v] = { deny = {} }
    elseif k == "options" then
      rule.allowed = {}
      for _, o in ipairs(option_list(k, v)) do
        local name, eq = o:match("^(.-)(=?)$")
        rule.allowed[name] = eq == "="
      end
    elseif k == "deny_options" then
      rule.deny = option_list(k, v)
    elseif type(k) == "string" and type(v) == "table" then
      rule.subs = rule.subs or {}
      rule.subs[k] = compile(v, where .. "." .. k)
    else
      bad(where .. "." .. tostring(k), "a subcommand's rule (a table) expected, got %s", type(v))
    end
  end
  return rule
end

-- The built-in options refused for `name`'s subcommand `sub`.
local function builtin_denied(b, sub)
  local list = {}
  for _, o in ipairs(b.all or {}) do list[#list + 1] = o end
  for _, o in ipairs(b.subs and sub and b.subs[sub] or {}) do list[#list + 1] = o end
  return list
end

-- Where the subcommand of a program with `global` options is (git -P log): after them,
-- the denied ones refused.
local function skip_global(b, argv, label)
  local i = 2
  while argv[i] and is_option(argv[i]) do
    local opt = denied_option(argv[i], b.global)
    if opt then
      return violation("command.denied_option", "option '%s' of '%s' is denied", opt, label)
    end
    i = i + 1
  end
  return i
end

--- Makes a command guard.
-- @tparam table opts `allow` (list of names or paths, or name -> rule: a list of
--   subcommands, `sub = rule`, `options`, `deny_options`), `deny` (list of names),
--   `deny_args` (list of Lua patterns)
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
        allow[v] = { deny = {} }
      elseif type(k) == "string" and type(v) == "table" then
        allow[k] = compile(v, "allow." .. k)
      else
        errors.misuse("bad field 'allow' to 'guard.command' (names, or name = { rule } "
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
  local b = BUILTIN[name]
  local from, label, sub, allowed, denied = 2, prog, nil, nil, {}
  if self.allow then
    -- a path runs only when it is listed as that path
    local rule = self.allow[prog]
    if rule == nil then
      return violation("command.not_allowed", "'%s' is not an allowed program", prog)
    end
    -- down the subcommands; deny_options add up, the nearest options list applies
    while true do
      for _, o in ipairs(rule.deny) do denied[#denied + 1] = o end
      allowed = rule.allowed or allowed
      if not rule.subs then break end
      local next_rule = rule.subs[argv[from] or ""]
      if not next_rule then
        return violation("command.not_allowed", "'%s %s' is not allowed", label,
          argv[from] or "")
      end
      sub = sub or argv[from]
      label = label .. " " .. argv[from]
      from = from + 1
      rule = next_rule
    end
  elseif is_runner(name) then
    return violation("command.runner", "'%s' runs other commands, which a deny list cannot "
      .. "check", name)
  end
  if b then
    if b.global and from == 2 then -- no subcommand rule placed it: find it
      local at, err, kind = skip_global(b, argv, label)
      if not at then return at, err, kind end
      sub = argv[at]
    end
    for _, o in ipairs(builtin_denied(b, sub)) do denied[#denied + 1] = o end
    if b.bundled and argv[from] and argv[from]:sub(1, 1) ~= "-" then
      -- tar xIf cmd a.tar: the first argument is a cluster without its dash, whose
      -- letters that take a value take the next arguments, in order
      local cluster, values = argv[from], 0
      local opt = denied_option("-" .. cluster, denied, allowed)
      if opt then
        return violation("command.denied_option", "option '%s' of '%s' is denied", opt, label)
      end
      for j = 1, allowed and #cluster or 0 do
        local takes = allowed["-" .. cluster:sub(j, j)]
        if takes == nil then
          return violation("command.not_allowed", "option '-%s' of '%s' is not allowed",
            cluster:sub(j, j), label)
        end
        if takes then values = values + 1 end
      end
      for j = from + 1, allowed and math.min(from + values, #argv) or 0 do
        opt = opt or (is_option(argv[j]) and denied_option(argv[j], denied, allowed))
      end
      if opt then -- a value that is a denied option: values are checked against those too
        return violation("command.denied_option", "option '%s' of '%s' is denied", opt, label)
      end
      from = from + 1 + (allowed and values or 0)
    end
  end
  local operand
  if b and b.outside and sub and b.outside[sub] then
    operand = function(a)
      if leaves_tree(a) then
        return string.format("'%s' may lie outside the work tree, where '%s %s' reads any file",
          a, name, sub)
      end
    end
  end
  local ok, err, kind = check_options(argv, from, denied, allowed, label, operand)
  if not ok then return ok, err, kind end
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
