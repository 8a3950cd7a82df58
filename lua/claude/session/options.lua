--- The shapes of the session options that are tables: every nested field
-- is known and checked, so a typo or a wrong type is an error naming the
-- field instead of something the CLI drops without a word. Also the wire
-- forms these options take (an MCP server config for `--mcp-config`, the
-- skills rules for `--allowedTools`).
-- @module claude.session.options
local json = require "claude.json"
local errors = require "claude.errors"
local compat = require "claude.session.compat"

local M = {}

-- Misuse: the public entry point (claude.query, claude.connect) reports it
-- at its caller's line. (The `level` arguments below only count nesting.)
local fname = "query" -- the public function whose options are checked (M.check sets it)
local strict = false  -- the options' `strict` (M.check sets it)

local function fail(option, msg)
  errors.bad_field(option, fname, "%s", msg)
end

local function is_list(t)
  if type(t) ~= "table" then return false end
  local n = 0
  for _ in pairs(t) do n = n + 1 end
  return n == #t
end

-- Checks `t` against `fields` (name -> checker(value, where) returning an
-- error message or nil); `where` names the table in messages. With `pass` (a table that
-- goes to the CLI as JSON), an unknown name may be a newer CLI's (claude.session.compat).
local function check_fields(where, t, fields, pass)
  for k, v in pairs(t) do
    local check = type(k) == "string" and fields[k]
    if check then
      local msg = check(v)
      if msg then fail(where .. "." .. k, msg) end
    elseif pass then
      compat.unknown(k, v, fields, fname, where, strict)
    else
      errors.unknown_field(k, fields, fname, where)
    end
  end
end

local function of_type(want)
  return function(v)
    if type(v) ~= want then return want .. " expected, got " .. type(v) end
  end
end

local function one_of(...)
  local set, names = {}, {}
  for i = 1, select("#", ...) do
    local s = select(i, ...)
    set[s] = true
    names[#names + 1] = "'" .. s .. "'"
  end
  return function(v)
    if not set[v] then return table.concat(names, " or ") .. " expected, got " .. tostring(v) end
  end
end

local function string_list(v)
  if not is_list(v) then return "a list of strings expected, got " .. type(v) end
  for i, s in ipairs(v) do
    if type(s) ~= "string" then
      return "item " .. i .. " is a " .. type(s) .. ", string expected"
    end
  end
end

local function string_map(v)
  if type(v) ~= "table" then return "a table of strings expected, got " .. type(v) end
  if v[1] ~= nil then return "a table of name = string expected, got a list" end
  for k, s in pairs(v) do
    if type(k) ~= "string" or type(s) ~= "string" then
      return "entry '" .. tostring(k) .. "' must be a string (got " .. type(s) .. ")"
    end
  end
end

local is_string, is_number, is_boolean, is_table = of_type("string"), of_type("number"),
  of_type("boolean"), of_type("table")

--- `system_prompt` as a table: a preset or a file.
local function string_or_list(v)
  if type(v) == "string" then return end
  return string_list(v)
end

local SYSTEM_PROMPT = {
  preset = { type = one_of("preset"), preset = one_of("claude_code"), append = is_string,
    exclude_dynamic_sections = is_boolean, snapshot = is_boolean },
  file = { type = one_of("file"), path = is_string },
  custom = { type = one_of("custom"), prompt = string_or_list, snapshot = is_boolean },
}

local THINKING = { type = one_of("adaptive", "enabled", "disabled"), budget_tokens = is_number,
  display = is_string }

-- The fields of each MCP server config type, as the CLI's own schema has
-- them (an unknown field would be dropped by it, or the whole server).
local OAUTH = function(v)
  if type(v) ~= "table" then return "table expected, got " .. type(v) end
end
-- `tools` of http and sse servers: the permission policy of each tool
local POLICY = { name = is_string,
  permission_policy = one_of("always_allow", "always_ask", "always_deny"),
  org_max_permission = one_of("allow", "ask", "blocked") }
local function tool_policies(v)
  if not is_list(v) then return "a list of {name=, permission_policy=} expected" end
  for i, p in ipairs(v) do
    if type(p) ~= "table" or type(p.name) ~= "string" then
      return "item " .. i .. ": {name=, permission_policy=} expected"
    end
    check_fields("tools[" .. i .. "]", p, POLICY, true)
  end
end
local REMOTE = { type = is_string, url = is_string, headers = string_map, headersHelper = is_string,
  oauth = OAUTH, timeout = is_number, alwaysLoad = is_boolean, displayName = is_string,
  tools = tool_policies }
local SERVER_FIELDS = {
  stdio = { type = one_of("stdio"), command = is_string, args = string_list, env = string_map,
    timeout = is_number, alwaysLoad = is_boolean },
  http = REMOTE,
  sse = REMOTE,
  ws = { type = one_of("ws"), url = is_string, headers = string_map, headersHelper = is_string,
    timeout = is_number, alwaysLoad = is_boolean },
}

--- Checks one external server config and returns its wire form: lists as
-- JSON arrays (so `args = {}` is `[]`, not `{}`), maps as JSON objects.
function M.server_config(name, config, level)
  local kind = config.type
  if kind == nil and config.command ~= nil then kind = "stdio" end
  if kind == "sdk" then
    fail("mcp_servers", "entry '" .. name .. "': an in-process server is given as "
      .. "claude.server(...), not as a {type='sdk'} config", level + 1)
  end
  local fields = SERVER_FIELDS[kind]
  if not fields then
    fail("mcp_servers", "entry '" .. name .. "': type 'stdio', 'http', 'sse' or 'ws' expected"
      .. (kind == nil and " (or a 'command')" or ", got '" .. tostring(kind) .. "'"), level + 1)
  end
  check_fields("mcp_servers." .. name, config, fields, true)
  local required = kind == "stdio" and "command" or "url"
  if config[required] == nil or config[required] == "" then
    fail("mcp_servers", name .. ": '" .. required .. "' is required", level + 1)
  end
  local wire = {}
  for k, v in pairs(config) do wire[k] = v end
  if wire.args then wire.args = json.array { table.unpack(wire.args) } end
  if wire.tools then wire.tools = json.array { table.unpack(wire.tools) } end
  for _, k in ipairs { "env", "headers" } do
    if wire[k] then
      local copy = json.object()
      for ek, ev in pairs(wire[k]) do copy[ek] = ev end
      wire[k] = copy
    end
  end
  return json.object(wire)
end

-- Characters the CLI's --allowedTools tokenizer splits on, and control
-- characters, which never occur in a skill's directory name.
local function check_skill_name(name, i, level)
  local where = "item " .. i
  if type(name) ~= "string" then fail("skills", where .. " is a " .. type(name)
    .. ", string expected", level + 1) end
  local why
  if name:match("^%s*$") then why = "a name must not be empty"
  elseif name:match("^%s") or name:match("%s$") then
    why = "leading or trailing spaces never match (the Skill tool trims the name)"
  elseif name:find("[(),%c\127]") or name:find("\239\187\191", 1, true) then
    why = "parentheses, commas, control characters and byte-order marks are not allowed"
  elseif name == "*" then why = "use skills = \"all\" to enable every skill"
  elseif name:match(":%*$") or name:match(" %*$") then
    why = "wildcard suffixes are not allowed; list each skill by its name"
  elseif name:sub(1, 1) == "/" then why = "a skill name does not start with '/'"
  elseif name:find("\\\\", 1, true) then why = "consecutive backslashes are not allowed"
  elseif name:sub(-1) == "\\" then why = "a name must not end with a backslash"
  end
  if why then fail("skills", where .. " '" .. name .. "': " .. why, level + 1) end
end

--- The effective allowed tools and setting sources once `skills` is
-- applied: "all" adds `Skill`, a list adds `Skill(name)` for each, and
-- either makes the default setting sources user and project (so the CLI
-- finds installed skills).
function M.apply_skills(options)
  local allowed = {}
  for i, t in ipairs(options.allowed_tools or {}) do allowed[i] = t end
  local sources = options.setting_sources
  local skills = options.skills
  if skills == nil then return allowed, sources end
  local have = {}
  for _, t in ipairs(allowed) do have[t] = true end
  local function add(rule)
    if not have[rule] then
      have[rule] = true
      allowed[#allowed + 1] = rule
    end
  end
  if skills == "all" then
    add("Skill")
  else
    for _, name in ipairs(skills) do add("Skill(" .. name .. ")") end
  end
  return allowed, sources or { "user", "project" }
end

-- Checks of each table-valued option; each raises at `level`.
local CHECKS = {}

function CHECKS.system_prompt(v, level)
  if type(v) == "string" then return end
  if v.type == nil and is_list(v) then
    local msg = string_list(v)
    if msg then fail("system_prompt", msg, level + 1) end
    return
  end
  local fields = SYSTEM_PROMPT[v.type]
  if not fields then
    fail("system_prompt", "a string, a list of strings, {type='preset', append=...}, "
      .. "{type='custom', prompt=...} or {type='file', path=...} expected", level + 1)
  end
  check_fields("system_prompt", v, fields)
  if v.type == "file" and type(v.path) ~= "string" then
    fail("system_prompt", "'path' is required with type 'file'", level + 1)
  elseif v.type == "custom" and v.prompt == nil then
    fail("system_prompt", "'prompt' is required with type 'custom'", level + 1)
  end
end

-- The TypeScript SDK's toolConfig, in snake_case: each field becomes a variable of the
-- CLI's environment (argv.build_env).
local TOOL_CONFIG = { ask_user_question = function(v)
  if type(v) ~= "table" then return "table expected, got " .. type(v) end
end }
local ASK_USER_QUESTION = { preview_format = one_of("markdown", "html"),
  extended_questions = is_boolean, optional_descriptions = is_boolean }

function CHECKS.tool_config(v)
  check_fields("tool_config", v, TOOL_CONFIG)
  if v.ask_user_question then
    check_fields("tool_config.ask_user_question", v.ask_user_question, ASK_USER_QUESTION)
  end
end

function CHECKS.tool_aliases(v, level)
  local msg = string_map(v)
  if msg then fail("tool_aliases", msg, level + 1) end
end

function CHECKS.supported_dialog_kinds(v, level)
  local msg = string_list(v)
  if msg then fail("supported_dialog_kinds", msg, level + 1) end
end

for _, name in ipairs { "mcp_servers_delivery", "plugin_delivery" } do
  CHECKS[name] = function(v, level)
    local msg = one_of("argv", "initialize")(v)
    if msg then fail(name, msg, level + 1) end
  end
end

function CHECKS.record(v)
  require("claude.session.record").check(v, fname)
end

function CHECKS.permission_prompts(v, level)
  local msg = one_of("host", "none")(v)
  if msg then fail("permission_prompts", msg, level + 1) end
end

function CHECKS.tools(v, level)
  if v.type ~= nil or v.preset ~= nil then
    check_fields("tools", v, { type = one_of("preset"), preset = one_of("claude_code") })
    return
  end
  local msg = string_list(v)
  if msg then fail("tools", msg, level + 1) end
end

for _, name in ipairs { "allowed_tools", "disallowed_tools", "betas", "add_dirs",
  "setting_sources" } do
  CHECKS[name] = function(v, level)
    local msg = string_list(v)
    if msg then fail(name, msg, level + 1) end
  end
end

function CHECKS.thinking(v, level)
  if THINKING.type(v.type) then
    fail("thinking", "type 'adaptive', 'enabled' or 'disabled' expected", level + 1)
  end
  check_fields("thinking", v, THINKING)
end

function CHECKS.output_format(v, level)
  if v.type ~= "json_schema" or type(v.schema) ~= "table" then
    fail("output_format", "{type='json_schema', schema={...}} expected", level + 1)
  end
  check_fields("output_format", v, { type = is_string, schema = is_table })
end

function CHECKS.plugins(v, level)
  if not is_list(v) then fail("plugins", "a list expected", level + 1) end
  for i, p in ipairs(v) do
    if type(p) ~= "table" or p.type ~= "local" or type(p.path) ~= "string" then
      fail("plugins", "item " .. i .. ": {type='local', path=...} expected", level + 1)
    end
    check_fields("plugins[" .. i .. "]", p, { type = is_string, path = is_string })
  end
end

function CHECKS.task_budget(v, level)
  if type(v) == "number" then return end
  check_fields("task_budget", v, { total = is_number })
  if type(v.total) ~= "number" then fail("task_budget", "'total' is required", level + 1) end
end

function CHECKS.skills(v, level)
  if type(v) == "string" then
    if v ~= "all" then
      fail("skills", "\"all\" or a list of skill names expected, got \"" .. v
        .. "\" (did you mean { \"" .. v .. "\" }?)", level + 1)
    end
    return
  end
  if not is_list(v) then fail("skills", "\"all\" or a list of skill names expected", level + 1) end
  for i, name in ipairs(v) do check_skill_name(name, i, level + 1) end
end

function CHECKS.env(v, level)
  for k, s in pairs(v) do
    if type(k) ~= "string" or (type(s) ~= "string" and type(s) ~= "number" and s ~= false) then
      fail("env", "entry '" .. tostring(k) .. "' must be a string, a number or false, got "
        .. type(s),
        level + 1)
    end
  end
end

function CHECKS.session_store(v, level)
  if type(v.append) ~= "function" then
    fail("session_store", "a store with an append(key, entries) function expected", level + 1)
  end
end

function CHECKS.session_store_flush(v, level)
  if v ~= "batched" and v ~= "eager" then
    fail("session_store_flush", "'batched' or 'eager' expected, got '" .. v .. "'", level + 1)
  end
end

function CHECKS.mcp_servers(v, level)
  if type(v) == "string" then return end -- a path or JSON text, for the CLI to read
  for name, server in pairs(v) do
    if type(name) ~= "string" then fail("mcp_servers", "keys are server names", level + 1) end
    if type(server) ~= "table" then
      fail("mcp_servers", "entry '" .. name .. "' is a " .. type(server)
        .. "; expected claude.server(...) or a server config table", level + 1)
    end
    local mt = getmetatable(server)
    -- a claude.server, or a connected claude.mcp client (served in-process by the session)
    if server.kind ~= "server" and not (mt and mt.__name == "claude.mcp.Client") then
      M.server_config(name, server, level + 1)
    end
  end
end

-- Agent definition fields: snake_case and the CLI's camelCase both work.
M.AGENT_KEYS = {
  description = "description", prompt = "prompt", tools = "tools",
  disallowed_tools = "disallowedTools", model = "model", skills = "skills", memory = "memory",
  mcp_servers = "mcpServers", initial_prompt = "initialPrompt", max_turns = "maxTurns",
  background = "background", effort = "effort", permission_mode = "permissionMode",
  -- the TypeScript Agent SDK 0.3.337's
  omit_claude_md = "omitClaudeMd", auto_compact_window = "autoCompactWindow",
  observer = "observer", observer_message = "observerMessage",
  critical_system_reminder_experimental = "criticalSystemReminder_EXPERIMENTAL",
}
local AGENT_WIRE = {}
for _, wire in pairs(M.AGENT_KEYS) do AGENT_WIRE[wire] = wire end

function CHECKS.agents(v, level)
  for name, def in pairs(v) do
    if type(def) ~= "table" then
      fail("agents", "entry '" .. tostring(name) .. "' must be a table", level + 1)
    end
    for k, fv in pairs(def) do
      if not (M.AGENT_KEYS[k] or AGENT_WIRE[k]) then -- a newer CLI's: camelCase on the wire
        compat.unknown(k, fv, M.AGENT_KEYS, fname, "agents." .. tostring(name), strict,
          "'" .. compat.camel(tostring(k)) .. "'")
      end
    end
    -- CLI 2.1.337 drops every agent, without a word, for a window under 100000 tokens
    local window = def.auto_compact_window or def.autoCompactWindow
    if window ~= nil and (math.type(window) ~= "integer" or window < 100000) then
      fail("agents." .. tostring(name) .. ".auto_compact_window",
        "an integer of at least 100000 tokens expected, got " .. tostring(window))
    end
  end
end

--- Checks the nested fields of every option that has them; raises at
-- `level` naming the first bad one.
function M.check(options, level, public_name)
  fname = public_name or "query"
  strict = options.strict == true
  for name, check in pairs(CHECKS) do
    local v = options[name]
    if v ~= nil then check(v, level + 1) end
  end
end

return M
