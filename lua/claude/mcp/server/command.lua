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

local arguments = require "claude.mcp.server.arguments"
local failure, usage_error, tasks_of = arguments.failure, arguments.usage_error,
  arguments.tasks_of

-- The command line (claude.mcp.server.arguments)
M.parse, M.FLAGS = arguments.parse, arguments.FLAGS

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
