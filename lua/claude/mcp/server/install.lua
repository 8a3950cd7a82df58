--- `claudelua mcp install [options] tools.lua [args]`: adds a tools file to the MCP
-- configuration of a client, as `claudelua mcp tools.lua` over stdio: Claude Code, Claude
-- Desktop, Cursor or VS Code. The entry names the claudelua executable and the tools file by
-- their absolute paths; the rest of the configuration is kept as it was; the change is shown
-- as a diff, and only the entry's bytes change; the same entry again is "already installed";
-- a different entry of the same name is replaced only with `--force`. Claude Code's own
-- `claude mcp add-json` writes its entry when the `claude` CLI is found (else the file is
-- written the way it writes it). See docs/mcp-server.md.
-- @module claude.mcp.server.install
local core = require "claude.core"
local json = require "claude.json"
local errors = require "claude.errors"
local process = require "claude.process"
local config_file = require "claude.mcp.server.config_file"

local M = {}

M.USAGE = [[
usage: claudelua mcp install [options] tools.lua [args]

Add tools.lua to an MCP client's configuration, served by `claudelua mcp tools.lua [args]`
over stdio, with absolute paths. The rest of the configuration is kept; the change is shown
as a diff.

Options:
  --client NAME     claude-code (default), claude-desktop, cursor or vscode
  --scope SCOPE     user (default; vscode: project), project (the current directory's
                    .mcp.json, .cursor/mcp.json or .vscode/mcp.json), or local (claude-code:
                    this project, in your user configuration)
  --name NAME       the server's name in the configuration (default: the name of the
                    claude.server the file returns)
  --server NAME     the server to serve when the file returns several
  --env KEY=VALUE   an environment variable for the server (repeatable)
  --force           replace an entry of the same name
  --dry-run         show the diff, write nothing
  -h, --help        show this help
]]

-- The command's errors: their message alone, after the command's name (claudelua mcp
-- install: ...), no traceback.
local function fail(kind, message)
  error(errors.new(kind, message, { command = "mcp install", traceback = false }), 0)
end

local function failure(fmt, ...) fail("install", string.format(fmt, ...)) end

local function usage_error(fmt, ...)
  fail("usage", string.format(fmt, ...) .. " (claudelua mcp install --help for usage)")
end

local FLAGS = { ["--client"] = 1, ["--scope"] = 1, ["--name"] = 1, ["--server"] = 1,
  ["--env"] = 1, ["--force"] = 1, ["--dry-run"] = 1, ["-h"] = 1, ["--help"] = 1 }
local CLIENTS = { ["claude-code"] = 1, ["claude-desktop"] = 1, cursor = 1, vscode = 1 }
local SCOPES = { user = 1, project = 1, ["local"] = 1 }

--- Parses the arguments after `mcp install`.
-- @treturn table `{ client, scope, name, server, env = {{k, v}...}, force, dry_run, help,
--   file, args }`
function M.parse(argv)
  local o = { client = "claude-code", env = {}, args = {} }
  local i = 1
  while i <= #argv do
    local a = argv[i]
    local function value()
      i = i + 1
      if argv[i] == nil then usage_error("option '%s' needs a value", a) end
      return argv[i]
    end
    if a == "-h" or a == "--help" then
      o.help = true
    elseif a == "--client" then
      o.client = value()
      if not CLIENTS[o.client] then
        usage_error("unknown client '%s'%s (claude-code, claude-desktop, cursor, vscode)",
          o.client, errors.suggestion(o.client, CLIENTS))
      end
    elseif a == "--scope" then
      o.scope = value()
      if not SCOPES[o.scope] then
        usage_error("unknown scope '%s'%s (user, project, local)", o.scope,
          errors.suggestion(o.scope, SCOPES))
      end
    elseif a == "--name" then
      o.name = value()
    elseif a == "--server" then
      o.server = value()
    elseif a == "--env" then
      local v = value()
      local k, val = v:match("^([%a_][%w_]*)=(.*)$")
      if not k then usage_error("--env needs KEY=VALUE, got '%s'", v) end
      o.env[#o.env + 1] = { k, val }
    elseif a == "--force" then
      o.force = true
    elseif a == "--dry-run" then
      o.dry_run = true
    elseif a == "--" then
      i = i + 1
      break
    elseif a:sub(1, 1) == "-" then
      usage_error("unknown option '%s'%s", a, errors.suggestion(a, FLAGS))
    else
      break
    end
    i = i + 1
  end
  o.file = argv[i]
  for j = i + 1, #argv do o.args[#o.args + 1] = argv[j] end
  if not o.file and not o.help then usage_error("no tools file given") end
  o.scope = o.scope or (o.client == "vscode" and "project" or "user")
  if o.scope == "local" and o.client ~= "claude-code" then
    usage_error("--scope local is Claude Code's only")
  end
  if o.scope == "project" and o.client == "claude-desktop" then
    usage_error("Claude Desktop has no project configuration: --scope user")
  end
  if o.name and not o.name:match("^[%w_%-]+$") then
    usage_error("--name '%s': letters, digits, '_' and '-' only", o.name)
  end
  return o
end

local function home()
  local h = os.getenv("HOME")
  if not h or h == "" then failure("HOME is not set") end
  return h
end

local function is_mac()
  return core.is_executable("/usr/bin/sw_vers")
end

--- The configuration file of a client and scope, and the key of its servers.
-- @treturn string path
-- @treturn string key (`mcpServers` or `servers`)
function M.location(client, scope, cwd)
  cwd = cwd or core.cwd()
  local config = (os.getenv("XDG_CONFIG_HOME") or "") ~= "" and os.getenv("XDG_CONFIG_HOME")
    or home() .. "/.config"
  local mac = is_mac() and home() .. "/Library/Application Support"
  if client == "claude-code" then
    if scope == "project" then return cwd .. "/.mcp.json", "mcpServers" end
    local dir = os.getenv("CLAUDE_CONFIG_DIR")
    return ((dir and dir ~= "") and dir or home()) .. "/.claude.json", "mcpServers"
  elseif client == "claude-desktop" then
    return (mac or config) .. "/Claude/claude_desktop_config.json", "mcpServers"
  elseif client == "cursor" then
    if scope == "project" then return cwd .. "/.cursor/mcp.json", "mcpServers" end
    return home() .. "/.cursor/mcp.json", "mcpServers"
  else -- vscode
    if scope == "project" then return cwd .. "/.vscode/mcp.json", "servers" end
    return (mac or config) .. "/Code/User/mcp.json", "servers"
  end
end

local function read(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s
end

local function mkdirs(dir)
  local path = ""
  for part in dir:gmatch("[^/]+") do
    path = path .. "/" .. part
    core.mkdir(path)
  end
end

-- The entry's fields, in the order the clients write them.
local function entry(client, command, args, env)
  local fields = {}
  if client ~= "claude-desktop" and client ~= "cursor" then fields[1] = { "type", "stdio" } end
  fields[#fields + 1] = { "command", command }
  fields[#fields + 1] = { "args", config_file.node(json.array(args)) }
  if #env > 0 then fields[#fields + 1] = { "env", config_file.node(env) } end
  return config_file.node(fields)
end

-- Plain values equal, the way a client reads them (an empty `env` is no `env`).
local function same(a, b)
  if type(a) ~= "table" or type(b) ~= "table" then return a == b end
  for k, v in pairs(a) do
    if not (k == "env" and next(v) == nil and b[k] == nil) and not same(v, b[k]) then
      return false
    end
  end
  for k, v in pairs(b) do
    if a[k] == nil and not (k == "env" and next(v) == nil) then return false end
  end
  return true
end

-- What installing the entry would do to the configuration file: `{ path, key, old, new,
-- installed = the entry is there as it is, replaces = a different one is there, jsonc =
-- the file has comments (then no `new`) }`.
local function plan(o, name, node, cwd)
  local path, key = M.location(o.client, o.scope, cwd)
  local keys = { key, name }
  if o.scope == "local" then keys = { "projects", cwd, key, name } end
  local old = read(path)
  local p = { path = path, key = key, old = old }
  local root
  if old and old:find("%S") then
    local err, why
    root, err, why = config_file.parse(old)
    if why == "comments" then
      p.jsonc = true
      root, err = config_file.parse(old, true)
    end
    if not root then failure("%s: %s", path, err) end
    if root.t ~= "o" then failure("%s: not a JSON object", path) end
  end
  local there = root and config_file.lookup(root, keys)
  p.installed = there and same(config_file.value(there), config_file.value(node))
  p.replaces = there and not p.installed
  if p.jsonc then return p end
  local new, bad = config_file.splice(old, root, keys, node)
  if not new then failure("%s: '%s' is not an object", path, bad) end
  p.new = new
  return p
end

-- A file with comments (VS Code's JSONC) is not rewritten: the entry to paste is shown.
local function show_entry(p, name, node, dry_run)
  local text = config_file.encode({ t = "o", keys = { name }, map = { [name] = node } })
  io.stdout:write(string.format("%s has comments, which claudelua does not rewrite; add this "
    .. "to its \"%s\" object:\n\n%s\n", p.path, p.key,
    text:gsub("^{\n", ""):gsub("\n}\n$", "")))
  if dry_run then
    io.stdout:write(string.format("(dry run: %s not written)\n", p.path))
    return
  end
  failure("%s has comments: the entry shown above was not added (paste it there, %s)",
    p.path, p.replaces and "in place of the one named '" .. name .. "'" or "then save")
end

-- Writes the new text. A config that is a link (a dotfiles setup) is written through: the
-- file it leads to gets the text, atomically (a new file beside it, renamed over it) and
-- with its own mode; the link stays. A new file is 0600, as a token may be in its env.
local function write(path, text)
  local target, mode = path, 384 -- 0600
  if core.is_symlink(path) then
    target = core.realpath(path)
    if not target then
      failure("%s is a link to a file that does not exist: create that file (or remove the "
        .. "link) and run this again", path)
    end
  end
  local st = core.stat(target)
  if st and st.type ~= "file" then failure("%s is not a regular file", target) end
  if st then mode = st.mode end
  mkdirs(target:match("^(.*)/[^/]*$"))
  local ok, err = core.write_atomic(target, text, mode)
  if not ok then failure("cannot write %s: %s", target, tostring(err)) end
end

-- Claude Code through its own CLI: `claude mcp add-json` (after `claude mcp remove` when an
-- entry is replaced). Returns the new text of the file, or nil when there is no CLI.
local function with_claude_cli(o, name, node, cwd, p)
  local cli = process.which("claude")
  if not cli then return nil end
  local function run(args)
    local proc = assert(process.spawn { cli, args = args, cwd = cwd,
      stdin = "ignore", stderr = "collect" })
    -- closed by hand, not <close>: the Lua half runs on Lua 5.3 too (docs/architecture.md)
    local ok, code, out = pcall(function()
      local lines = {}
      for line in proc:lines(60) do lines[#lines + 1] = line end
      return proc:wait(60), table.concat(lines, "\n") .. proc:stderr()
    end)
    proc:close()
    if not ok then error(code, 0) end
    return code, out
  end
  if p.replaces then run { "mcp", "remove", "--scope", o.scope, name } end
  local code, out = run { "mcp", "add-json", "--scope", o.scope, name,
    json.encode(config_file.value(node)) }
  if code ~= 0 then failure("claude mcp add-json failed (%s): %s", tostring(code), out) end
  return read(p.path) or ""
end

--- The command: `claudelua mcp install` with the arguments after `install`.
-- @tparam function load the tools file's loader (claude.mcp.server.command's `load`)
function M.main(load, ...)
  local o = M.parse({ ... })
  if o.help then
    io.stdout:write(M.USAGE)
    return
  end
  local file = core.realpath(o.file)
  if not file then failure("%s: no such file", o.file) end
  local command = core.exepath()
  command = core.realpath(command) or command
  -- the file must load (and say its name): what the client will run
  local list, err = load(file, o.args)
  if not list then failure("%s", err) end
  local server = list[1]
  if o.server then
    server = nil
    for _, e in ipairs(list) do
      if e[1] == o.server then server = e end
    end
    if not server then failure("%s returns no server named '%s'", o.file, o.server) end
  elseif #list > 1 then
    local names = {}
    for i, e in ipairs(list) do names[i] = e[1] end
    failure("%s returns %d servers (%s): name the one to install with --server NAME",
      o.file, #list, table.concat(names, ", "))
  end
  local name = o.name or server[1]
  if not name:match("^[%w_%-]+$") then
    failure("the server's name '%s' is not a configuration name (letters, digits, '_', '-'): "
      .. "give one with --name", name)
  end
  local args = { "mcp" }
  if o.server then
    args[#args + 1] = "--server"
    args[#args + 1] = o.server
  end
  args[#args + 1] = file
  for _, a in ipairs(o.args) do args[#args + 1] = a end
  local node = entry(o.client, command, args, o.env)
  local cwd = core.cwd()
  local client = ({ ["claude-code"] = "Claude Code", ["claude-desktop"] = "Claude Desktop",
    cursor = "Cursor", vscode = "VS Code" })[o.client]
  local p = plan(o, name, node, cwd)
  if p.installed then -- run twice (a set-up script): nothing to do
    io.stdout:write(string.format("'%s' is already installed in %s (%s scope, %s): nothing "
      .. "to do\n", name, client, o.scope, p.path))
    return
  end
  if p.jsonc then return show_entry(p, name, node, o.dry_run) end
  if p.replaces and not o.force then
    io.stdout:write(config_file.diff(p.old, p.new, p.path))
    failure("%s has a different server named '%s' (the diff above): --force replaces it, "
      .. "--name picks another", p.path, name)
  end
  local new, by_cli = p.new, nil
  if not o.dry_run then
    if o.client == "claude-code" then by_cli = with_claude_cli(o, name, node, cwd, p) end
    if by_cli then new = by_cli else write(p.path, new) end
  end
  local path = p.path
  io.stdout:write(config_file.diff(p.old, new, path))
  if o.dry_run then
    io.stdout:write(string.format("(dry run: %s not written)\n", path))
  else
    io.stdout:write(string.format("%s '%s' %s %s (%s scope)%s: %s %s\n",
      p.replaces and "Replaced" or "Added", name, p.replaces and "in" or "to", client, o.scope,
      by_cli and " with claude mcp add-json" or "", command, table.concat(args, " ")))
    if o.client ~= "claude-code" then
      io.stdout:write("Restart ", client, " (or reload its MCP servers) to start it.\n")
    end
  end
end

return M
