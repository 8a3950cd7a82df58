--- `claudelua mcp [options] tools.lua [args]`: serve the `claude.server` values a tools file
-- returns to any MCP client, over stdio (the default) or Streamable HTTP (`--http`).
--
-- The tools file runs like a script (`...` and `arg` hold its arguments; it may wait) and
-- returns a `claude.server`, a list of them, or a table name -> server. Over stdio one server
-- is served (the only one, or the one `--server NAME` names); over HTTP all of them, side by
-- side. See docs/mcp-server.md.
-- @module claude.mcp.server.command
local core = require "claude.core"
local async = require "claude.async"
local errors = require "claude.errors"
local tool = require "claude.mcp.tool"
local apps = require "claude.mcp.apps"
local state = require "claude.mcp.server.state"

local M = {}

local AUTH_FLAGS, LIST_FLAGS, auth_option

-- The bounds (claude.mcp.server.http's options of the same names).
local BOUND_FLAGS = { ["--max-sessions"] = "max_sessions", ["--max-calls"] = "max_calls",
  ["--max-session-calls"] = "max_session_calls", ["--max-post-calls"] = "max_post_calls",
  ["--max-batch"] = "max_batch", ["--history-bytes"] = "history_bytes",
  ["--max-queued"] = "max_queued", ["--write-timeout"] = "write_timeout",
  ["--max-connections"] = "max_connections", ["--max-tasks"] = "max_tasks",
  ["--max-client-tasks"] = "max_client_tasks", ["--task-input-timeout"] = "task_input_timeout",
  ["--task-ttl"] = "task_ttl", ["--task-result-bytes"] = "task_result_bytes",
  ["--max-subscriptions"] = "max_subscriptions", ["--max-uri"] = "max_uri" }

-- Errors of the command line and of the tools file end the command with their message
-- alone, after the command's name (`command`: claudelua mcp: ...; no traceback: one of the
-- command itself would say nothing).
local function failure(kind, fmt, ...)
  error(errors.new(kind, string.format(fmt, ...), { command = "mcp", traceback = false }), 0)
end

local function usage_error(fmt, ...)
  failure("usage", "%s (claudelua mcp --help for usage)", string.format(fmt, ...))
end

-- The OAuth flags -> the fields of the `auth` option (claude.mcp.server.auth).
AUTH_FLAGS = { ["--introspection-url"] = "introspection_url", ["--client-id"] = "client_id",
  ["--jwks-url"] = "jwks_url", ["--issuer"] = "issuer",
  ["--authorization-server"] = "authorization_servers", ["--resource"] = "resource",
  ["--required-scopes"] = "required_scopes", ["--scopes-supported"] = "scopes_supported",
  ["--audience"] = "audience" }
LIST_FLAGS = { authorization_servers = true, required_scopes = true, scopes_supported = true,
  audience = true }

-- The transport's `auth` from the flags: a table, false (--no-auth) or nil.
auth_option = function(o)
  local f = o.auth_flags
  o.auth_flags = nil
  if o.no_auth then
    if f then usage_error("--no-auth and the OAuth options exclude each other") end
    return false
  end
  if not f then return nil end
  if not o.http then usage_error("the OAuth options need --http") end
  if not (f.introspection_url or f.jwks_url) then
    usage_error("the OAuth options need --introspection-url or --jwks-url")
  end
  if f.introspection_url then
    f.client_secret = os.getenv("CLAUDELUA_MCP_CLIENT_SECRET")
    if f.client_secret and not f.client_id then
      usage_error("CLAUDELUA_MCP_CLIENT_SECRET is set but --client-id is not")
    end
  end
  if f.audience and #f.audience == 1 then f.audience = f.audience[1] end
  local field, why = require("claude.oauth.resource").problem(f)
  if field then -- the flag's name for the option's field
    for flag, key in pairs(AUTH_FLAGS) do
      if key == field then field = flag end
    end
    usage_error("%s: %s", field, why)
  elseif field == false then
    usage_error("%s", why)
  end
  return f
end

local function number_arg(opt, v)
  local n = tonumber(v)
  if not n or n < 0 then usage_error("%s needs a non-negative number, got '%s'", opt,
    tostring(v)) end
  return n
end

-- The store of --tasks (or of CLAUDELUA_MCP_TASKS, where a URL's password stays out of `ps`),
-- checked; a message never shows a password.
local function tasks_arg(where, v)
  if v == "memory" then return v end
  local ok, why = require("claude.mcp.server.redis").parse_url(v)
  if not ok then
    if not v:find("^rediss?://") then
      why = "'memory' or a redis://[[user:]password@]host[:port][/db] URL expected"
    end
    usage_error("%s: %s", where, why)
  end
  return v
end

--- Parse the command line (the arguments after `mcp`).
-- @tparam {string,...} argv
-- @treturn table `{ file =, args = {...}, http = {host =, port =} | nil, server =, watch =,
--   stateless =, grace =, max_message =, request_timeout =, stuck_exit =, help = }`
function M.parse(argv)
  local o = { args = {}, grace = 5, stuck_exit = 10 }
  local i = 1
  while i <= #argv do
    local a = argv[i]
    local function value()
      i = i + 1
      local v = argv[i]
      if v == nil then usage_error("option '%s' needs a value", a) end
      return v
    end
    if a == "-h" or a == "--help" then
      o.help = true
    elseif a == "--http" then
      local v = value()
      local host, port = v:match("^(.*):(%d+)$")
      if not host then host, port = "127.0.0.1", v:match("^(%d+)$") end
      if host and host:match("^%[.*%]$") then host = host:sub(2, -2) end
      port = tonumber(port)
      if not port or port > 65535 or host == "" then
        usage_error("--http needs [HOST:]PORT, got '%s'", v)
      end
      o.http = { host = host, port = port }
    elseif a == "--stateless" then
      o.stateless = true
    -- HTTP options (claude.mcp.server.http)
    elseif a == "--allowed-origins" or a == "--allowed-hosts" then
      local list = {}
      for item in value():gmatch("[^,%s]+") do list[#list + 1] = item end
      o[a:sub(3):gsub("%-", "_")] = list
    elseif AUTH_FLAGS[a] then
      local key, v = AUTH_FLAGS[a], value()
      o.auth_flags = o.auth_flags or {}
      if LIST_FLAGS[key] then
        local list = o.auth_flags[key] or {}
        for item in v:gmatch("[^,%s]+") do list[#list + 1] = item end
        o.auth_flags[key] = list
      else
        o.auth_flags[key] = v
      end
    elseif a == "--no-auth" then
      o.no_auth = true
    elseif BOUND_FLAGS[a] then
      local v = value()
      local n = v == "none" and math.huge or tonumber(v)
      if not n or n <= 0 then
        usage_error("%s needs a positive number or 'none', got '%s'", a, v)
      end
      o.bounds = o.bounds or {}
      o.bounds[BOUND_FLAGS[a]] = n
      o.bound_flag = o.bound_flag or a
    elseif a == "--session-timeout" then
      local t = number_arg(a, value())
      o.session_timeout = t > 0 and t or false
    elseif a == "--server" then
      o.server = value()
    elseif a == "--watch" then
      o.watch = true
    elseif a == "--proxy" then
      o.proxy = true
    elseif a == "--proxy-header" then
      local v = value()
      local k, hv = v:match("^%s*([^:%s]+)%s*:%s*(.-)%s*$")
      if not k then usage_error("--proxy-header needs 'Name: value', got '%s'", v) end
      o.headers = o.headers or {}
      o.headers[k] = hv
    elseif a == "--proxy-oauth" then
      o.oauth = true
    elseif a == "--proxy-token-store" then
      o.token_store = value()
    elseif a == "--proxy-timeout" then
      o.proxy_timeout = number_arg(a, value())
    elseif a == "--grace" then
      o.grace = number_arg(a, value())
    elseif a == "--max-message" then
      o.max_message = math.tointeger(number_arg(a, value()))
      if not o.max_message or o.max_message < 1 then
        usage_error("--max-message needs a positive integer")
      end
    elseif a == "--request-timeout" then
      local t = number_arg(a, value())
      o.request_timeout = t > 0 and t or false
    elseif a == "--node" then
      o.node = value()
      if not o.node:find("^[%w_%-]+$") then
        usage_error("--node needs a name of letters, digits, '-' and '_', got '%s'", o.node)
      end
    elseif a == "--tasks" then
      o.tasks = tasks_arg("--tasks", value())
    elseif a == "--task-lease" then
      o.task_lease = number_arg(a, value())
      if o.task_lease <= 0 then usage_error("--task-lease needs a positive number") end
    elseif a == "--skills" then
      o.skills = o.skills or {}
      o.skills[#o.skills + 1] = value()
    elseif a == "--state-key-file" then
      o.state_key_file = value()
    elseif a == "--state-ttl" then
      o.state_ttl = number_arg(a, value())
      if o.state_ttl <= 0 then usage_error("--state-ttl needs a positive number") end
    elseif a == "--stuck-exit" then
      o.stuck_exit = number_arg(a, value())
    elseif a == "--" then
      i = i + 1
      break
    elseif a:sub(1, 1) == "-" and a ~= "-" then
      usage_error("unknown option '%s'%s", a, errors.suggestion(a, M.FLAGS))
    else
      break
    end
    i = i + 1
  end
  o.file = argv[i]
  for j = i + 1, #argv do o.args[#o.args + 1] = argv[j] end
  if not o.file and not o.help then
    usage_error(o.proxy and "--proxy needs a URL or a command" or "no tools file given")
  end
  for k, flag in pairs { headers = "--proxy-header", oauth = "--proxy-oauth",
    token_store = "--proxy-token-store", proxy_timeout = "--proxy-timeout" } do
    if o[k] ~= nil and not o.proxy then usage_error("%s needs --proxy", flag) end
  end
  if o.proxy and o.watch then usage_error("--watch has no file to watch with --proxy") end
  if o.proxy and not o.help and (o.headers or o.oauth)
    and not require("claude.mcp.server.proxy").is_url(o.file) then
    usage_error("%s needs an http(s) URL to proxy", o.oauth and "--proxy-oauth"
      or "--proxy-header")
  end
  if o.stateless and not o.http then usage_error("--stateless needs --http") end
  if o.bounds and not o.http then usage_error("%s needs --http", o.bound_flag) end
  for _, k in ipairs { "allowed_origins", "allowed_hosts", "session_timeout", "no_auth",
    "node", "tasks", "task_lease" } do
    if o[k] ~= nil and not o.http then usage_error("--%s needs --http", k:gsub("_", "-")) end
  end
  o.auth = auth_option(o)
  return o
end

-- --tasks, else CLAUDELUA_MCP_TASKS, else nil (memory).
local function tasks_of(o)
  if o.tasks then return o.tasks end
  local env = os.getenv("CLAUDELUA_MCP_TASKS")
  if env == nil or env == "" then return nil end
  return tasks_arg("CLAUDELUA_MCP_TASKS", env)
end

-- The requestState key: --state-key-file, else CLAUDELUA_MCP_STATE_KEY, else none (each
-- process makes its own).
local function state_key(o)
  local key = os.getenv(state.ENV)
  if o.state_key_file then
    local f, err = io.open(o.state_key_file, "rb")
    if not f then usage_error("--state-key-file: %s", err) end
    key = f:read("a"):gsub("%s+$", "")
    f:close()
  end
  if key == "" then key = nil end
  if key and #key < state.MIN_KEY then
    usage_error("the requestState key (%s) has %d bytes: at least %d are needed",
      o.state_key_file and "--state-key-file" or state.ENV, #key, state.MIN_KEY)
  end
  return key
end

-- What the file returned -> { {name, server}, ... } in a stable order | nil, message
local function servers_of(value, file)
  local list = {}
  if tool.is_server(value) then
    list[1] = { value.name, value }
  elseif type(value) == "table" and value[1] ~= nil then
    for i, s in ipairs(value) do
      if not tool.is_server(s) then
        return nil, string.format("%s: item %d of the returned list is a %s, not a "
          .. "claude.server", file, i, errors.typename(s))
      end
      list[i] = { s.name, s }
    end
  elseif type(value) == "table" and next(value) ~= nil then
    for k, s in pairs(value) do
      if type(k) ~= "string" or not tool.is_server(s) then
        return nil, string.format("%s: the returned table maps '%s' to a %s (a table "
          .. "name -> claude.server expected)", file, tostring(k), errors.typename(s))
      end
      list[#list + 1] = { k, s }
    end
    table.sort(list, function(a, b) return a[1] < b[1] end)
  else
    return nil, string.format("%s returned %s: it must return a claude.server, a list of "
      .. "them, or a table name -> server", file, errors.typename(value))
  end
  local seen = {}
  for _, e in ipairs(list) do
    if seen[e[1]] then return nil, string.format("%s: two servers named '%s'", file, e[1]) end
    seen[e[1]] = true
  end
  return list
end

-- --skills DIR: every server serves those skills too.
local function add_skills(list, dirs)
  for _, e in ipairs(list) do
    local server = e[2]
    local all = {}
    for _, d in ipairs(server.skills and server.skills.sources or {}) do all[#all + 1] = d end
    for _, d in ipairs(dirs) do all[#all + 1] = d end
    local ok, err = pcall(server.add_skills, server, all)
    if not ok then return nil, (tostring(err):gsub("^[^\n]-:%d+: ", "")) end
  end
  return list
end

--- Run a tools file and return its servers.
-- @tparam string file
-- @tparam {string,...} args
-- @tparam[opt] {string,...} skills folders of skills every server serves too (`--skills`)
-- @return `{ {name, server}, ... }` | nil, message
function M.load(file, args, skills)
  local chunk, err = loadfile(file)
  if not chunk then return nil, err end
  local ok, value = xpcall(chunk, async.traceback, table.unpack(args))
  if not ok then
    -- one line: where the file raised and why (its traceback would show our frames too)
    return nil, string.format("%s failed: %s", file, errors.is(value) and value.message
      or (tostring(value):gsub("\n.*$", "")))
  end
  local list
  list, err = servers_of(value, file)
  if list and skills then return add_skills(list, skills) end
  return list, err
end

local function pick(list, name)
  if name then
    for _, e in ipairs(list) do
      if e[1] == name then return e[2] end
    end
    local names = {}
    for i, e in ipairs(list) do names[i] = e[1] end
    return nil, string.format("no server named '%s' (the file has: %s)", name,
      table.concat(names, ", "))
  end
  if #list > 1 then
    local names = {}
    for i, e in ipairs(list) do names[i] = e[1] end
    return nil, string.format("the file returns %d servers (%s): stdio serves one, name it "
      .. "with --server NAME, or serve them all with --http", #list, table.concat(names, ", "))
  end
  return list[1][2]
end

local function read_all(file)
  local f = io.open(file, "rb")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s
end

--- Calls `fn(signame)` ("term" or "int") when the server is asked to stop, over either
-- transport. SIGTERM also interrupts a tool that holds the loop, so that the server can
-- stop (SIGINT does already: the host's own watcher, claude._main).
-- @return a function that stops watching
function M.stop_signals(fn)
  local term = core.signal("term", function() fn("term") end, true, true)
  local int = core.signal("int", function() fn("int") end, true)
  return function()
    term:close()
    int:close()
  end
end

-- file -> content, for the tools file and the view files of its servers (MCP Apps)
local function snapshot(file, list)
  local files = { [file] = read_all(file) or false }
  for _, f in ipairs(list and apps.files(list) or {}) do files[f] = read_all(f) or false end
  return files
end

--- `--watch`: polls `file` (its content, so that editors that write a new file and rename
-- it are seen) and the files its views were read from (`list`, the servers served now),
-- reloads it on a change and hands the new `{ {name, server}, ... }` to
-- `apply`; a file that fails to load, or an `apply` that raises, keeps the previous tools
-- and says why on stderr. For the transports (stdio here, HTTP in claude.mcp.server.http).
-- @tparam string file
-- @tparam {string,...} args the file's arguments
-- @tparam function apply
-- @tparam[opt] {string,...} skills
-- @tparam[opt] table list the servers served now
-- @return the watching task (cancel it to stop)
function M.watch(file, args, apply, skills, list)
  local files = snapshot(file, list)
  return async.spawn(function()
    while true do
      async.sleep(0.3)
      local changed = false
      for f, last in pairs(files) do
        local now = read_all(f)
        if now and now ~= last then
          files[f], changed = now, true
        end
      end
      if changed then
        local new, err = M.load(file, args, skills)
        if new then
          files = snapshot(file, new)
          local ok, aerr = pcall(apply, new)
          if ok then
            io.stderr:write("claudelua mcp: reloaded ", file, "\n")
          else
            io.stderr:write("claudelua mcp: reloading ", file, ": ", tostring(aerr),
              "; keeping the previous tools\n")
          end
        else
          io.stderr:write("claudelua mcp: reloading ", file, " failed, keeping the previous "
            .. "tools: ", tostring(err), "\n")
        end
      end
    end
  end)
end

-- OAuth protects a server others reach over the network; stdio is a pipe from the one
-- client that started us. A server that asks for it is refused rather than served open.
local function no_auth_over_stdio(server)
  if server.auth then
    return nil, string.format("server '%s' has an auth option: OAuth is for HTTP "
      .. "(claudelua mcp --http [HOST:]PORT); over stdio the client that starts the server "
      .. "is the only one that reaches it (set auth = false to serve it over stdio)",
      server.name)
  end
  return server
end

local function serve_stdio(o, t, list)
  local server, err = pick(list, o.server)
  if server then server, err = no_auth_over_stdio(server) end
  if not server then
    t:close()
    usage_error("%s", err)
  end
  t:serve(server)
  if o.terminal then -- a person started it: say it runs (a client's pipe gets no chatter)
    io.stderr:write(string.format("claudelua mcp: serving '%s' over stdio (stdin and stdout "
      .. "carry MCP's JSON-RPC: an MCP client starts this command; Ctrl-D or Ctrl-C stops "
      .. "it)\n", server.name))
    io.stderr:flush()
  end
  local watcher
  if o.watch then
    watcher = M.watch(o.file, o.args, function(new)
      local s, perr = pick(new, o.server or server.name)
      if s then s, perr = no_auth_over_stdio(s) end
      if not s then error(perr, 0) end
      server = s
      t.conn:set_server(s)
    end, o.skills, list)
  end
  local unwatch = M.stop_signals(function(signame)
    t:shutdown(o.grace, "server stopped (SIG" .. signame:upper() .. ")")
  end)
  local ok, werr = pcall(t.wait, t)
  if not ok then -- the main task was cancelled (SIGINT): drain, then go
    t:shutdown(o.grace, "server interrupted")
    pcall(t.wait, t)
  end
  if watcher then watcher:cancel("server stopped") end
  unwatch()
  if not ok and not errors.is(werr, "cancelled") then error(werr, 0) end
end

-- `--http`: serves every server of the list until SIGINT or SIGTERM; calls in flight get
-- `grace` seconds.
local function serve_http(o, list)
  -- the Streamable HTTP transport needs libh2o, loaded on its first use
  local ok, http = pcall(require, "claude.mcp.server.http")
  if not ok then
    failure("unsupported", "--http: the Streamable HTTP transport is not in this build: %s",
      tostring(http))
  end
  local origin = require "claude.mcp.server.origin"
  local t, err
  local opts = {
    host = o.http.host, port = o.http.port, stateless = o.stateless,
    state_key = state_key(o), state_ttl = o.state_ttl, node = o.node, tasks = tasks_of(o),
    task_lease = o.task_lease,
    max_body = o.max_message, request_timeout = o.request_timeout,
    session_timeout = o.session_timeout, allowed_hosts = o.allowed_hosts,
    allowed_origins = o.allowed_origins, auth = o.auth,
    log = function(msg) io.stderr:write("claudelua mcp: ", msg, "\n") end,
  }
  for k, v in pairs(o.bounds or {}) do opts[k] = v end
  -- listen refuses these too, worded for a Lua caller; the command's user gets sentences
  local wildcard = core.address_class(o.http.host) == "unspecified"
  if wildcard and o.auth and o.auth.resource == nil then
    usage_error("on %s the server's public URL cannot be guessed: give it with --resource "
      .. "URL (e.g. https://mcp.example.com/mcp), the URL its clients reach", o.http.host)
  end
  if not origin.is_loopback(o.http.host) and o.auth == nil then
    for _, e in ipairs(list) do
      if e[2].auth == nil then
        failure("usage", "%s can be reached from other machines, and server '%s' has no "
          .. "authentication: anyone there could call its tools. Protect it with the OAuth "
          .. "options (--jwks-url, --introspection-url: claudelua mcp --help) or an auth "
          .. "option in %s, serve it on 127.0.0.1, or pass --no-auth to serve it open on "
          .. "purpose", o.http.host, e[1], o.file)
      end
    end
  end
  ok, t, err = pcall(http.listen, list, opts)
  if not ok then -- another option listen refuses: the command's mistake
    usage_error("%s", tostring(t):gsub("^[^\n]-:%d+: ", ""))
  end
  if not t and tostring(errors.message(err)):find("EADDRINUSE", 1, true) then
    failure("connection", "port %d is in use (on %s): stop what listens there, or pick "
      .. "another port with --http", o.http.port, o.http.host)
  end
  if not t then error(err, 0) end
  io.stderr:write(string.format("claudelua mcp: serving %s (%s)\n", t:url(), list[1][1]))
  for _, e in ipairs(list) do
    local url = t:url(e[1])
    io.stderr:write(string.format("claudelua mcp: serving %s (%s)\n", url, e[1]))
    local path = url:match("^%a+://[^/]+(/.*)$")
    local a = t:auth_of(path)
    if a then
      io.stderr:write(string.format("claudelua mcp: %s needs an OAuth bearer token (resource "
        .. "%s, metadata %s)\n", e[1], a.resource, a.metadata_url))
    elseif not origin.is_loopback(o.http.host) then
      io.stderr:write(string.format("claudelua mcp: WARNING: %s is served to anyone who "
        .. "reaches %s, without authentication (--no-auth)\n", e[1], o.http.host))
    end
  end
  io.stderr:flush()
  local stop = async.event()
  local unwatch = M.stop_signals(function() stop:set() end)
  local watcher = o.watch and M.watch(o.file, o.args, function(new) t:set_servers(new) end,
    o.skills, list)
  pcall(stop.wait, stop)
  if watcher then watcher:cancel("server stopped") end
  local deadline = core.now() + o.grace
  while t:pending() > 0 and core.now() < deadline do async.sleep(0.01) end
  t:close("server stopped")
  unwatch()
end

-- The flags, for "did you mean"
M.FLAGS = { ["-h"] = 1, ["--help"] = 1, ["--http"] = 1, ["--stateless"] = 1,
  ["--allowed-origins"] = 1, ["--allowed-hosts"] = 1, ["--no-auth"] = 1,
  ["--session-timeout"] = 1, ["--server"] = 1, ["--watch"] = 1, ["--grace"] = 1,
  ["--max-message"] = 1, ["--request-timeout"] = 1, ["--tasks"] = 1, ["--task-lease"] = 1,
  ["--node"] = 1, ["--proxy"] = 1, ["--proxy-header"] = 1, ["--proxy-oauth"] = 1,
  ["--proxy-token-store"] = 1, ["--proxy-timeout"] = 1 }
for flag in pairs(AUTH_FLAGS) do M.FLAGS[flag] = 1 end

--- The command: `claudelua mcp` with the arguments after `mcp`.
function M.main(...)
  if ... == "install" then -- handed our loader: install does not require this module back
    return require("claude.mcp.server.install").main(M.load, select(2, ...))
  end
  local o = M.parse({ ... })
  if o.help then
    io.stdout:write(require "claude.mcp.server.usage")
    return
  end
  rawset(_G, "arg", { [0] = o.file, table.unpack(o.args) })
  -- the last resort against a tool that holds the loop where no budget reaches (docs/budgets.md)
  core.stuck_exit(o.stuck_exit, "claudelua mcp")
  -- checked before the transport takes fds 0 and 1
  o.terminal = core.isatty(0) and core.isatty(2)
  local t
  if not o.http then
    -- before the tools file runs, so that nothing it prints reaches the protocol: the
    -- transport reads and writes copies of fds 0 and 1, then fd 1 becomes stderr
    local stdio = require "claude.mcp.server.stdio"
    local err
    t, err = stdio.open { max_message = o.max_message, grace = o.grace,
      request_timeout = o.request_timeout, state_key = state_key(o), state_ttl = o.state_ttl }
    if not t then error(err, 0) end
    local ok, rerr = stdio.redirect_stdout()
    if not ok then error(rerr, 0) end
  end
  local list, err
  if o.proxy then
    list, err = require("claude.mcp.server.proxy").load(o)
    if list and o.skills then list, err = add_skills(list, o.skills) end
  else
    list, err = M.load(o.file, o.args, o.skills)
  end
  if not list then
    if t then t:close() end
    failure("load", "%s", err)
  end
  -- The start is over: one full collection makes the heap the servers run with the base of
  -- the collector's major collections (generational: src/host/main.c). Left at the small heap
  -- of before the modules loaded, the first major collection falls among the first few
  -- thousand calls (docs/performance.md, "Start-up").
  collectgarbage()
  if o.http then return serve_http(o, list) end
  return serve_stdio(o, t, list)
end

return M
