--- The command line of `claudelua mcp`: its flags parsed and checked into the options the
-- command (claude.mcp.server.command) serves with, and the errors that end it with a message.
-- @module claude.mcp.server.arguments
local errors = require "claude.errors"

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

M.failure, M.usage_error = failure, usage_error

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
function M.tasks_of(o)
  if o.tasks then return o.tasks end
  local env = os.getenv("CLAUDELUA_MCP_TASKS")
  if env == nil or env == "" then return nil end
  return tasks_arg("CLAUDELUA_MCP_TASKS", env)
end

-- The flags, for "did you mean"
M.FLAGS = { ["-h"] = 1, ["--help"] = 1, ["--http"] = 1, ["--stateless"] = 1,
  ["--allowed-origins"] = 1, ["--allowed-hosts"] = 1, ["--no-auth"] = 1,
  ["--session-timeout"] = 1, ["--server"] = 1, ["--watch"] = 1, ["--grace"] = 1,
  ["--max-message"] = 1, ["--request-timeout"] = 1, ["--tasks"] = 1, ["--task-lease"] = 1,
  ["--node"] = 1, ["--proxy"] = 1, ["--proxy-header"] = 1, ["--proxy-oauth"] = 1,
  ["--proxy-token-store"] = 1, ["--proxy-timeout"] = 1 }
for flag in pairs(AUTH_FLAGS) do M.FLAGS[flag] = 1 end

return M
