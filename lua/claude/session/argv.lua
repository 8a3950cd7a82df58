--- Finding the claude CLI and turning session options into its command line
-- and environment, as the official SDKs do (same flags, same order). Bad options are
-- misuse (`claude.errors.misuse`), blamed on the caller of `claude.query`/`claude.connect`.
-- @module claude.session.argv
local core = require "claude.core"
local json = require "claude.json"
local errors = require "claude.errors"
local process = require "claude.process"
local shapes = require "claude.session.options"
local compat = require "claude.session.compat"

local M = {}

local misuse = errors.misuse

M.ENTRYPOINT = "sdk-lua"

-- What a missing CLI's message says: both ways forward, and the CLI a set-up installed
-- (looked for only then: claude.session.installed_cli)
local function ways_forward()
  local hint = "install it with: npm install -g @anthropic-ai/claude-code (or pass "
    .. "options.cli_path), or run offline against a scripted model with --demo "
    .. "(claudelua --demo script.lua, or CLAUDELUA_DEMO=1)"
  local installed = require("claude.session.installed_cli").find()
  if installed then
    hint = hint .. "; the set-up put a CLI at " .. installed .. " (--demo runs it; to run it "
      .. "without --demo, put it on PATH: ln -s " .. installed .. " ~/.local/bin/claude)"
  end
  return hint
end

-- Option name -> expected Lua type(s), checked before anything starts.
local OPTION_TYPES = {
  cli_path = "string|table", system_prompt = "string|table", tools = "table",
  allowed_tools = "table", disallowed_tools = "table", permission_mode = "string",
  permission_prompt_tool_name = "string", model = "string", fallback_model = "string",
  max_turns = "number", max_budget_usd = "number", thinking = "table",
  max_thinking_tokens = "number", effort = "string", cwd = "string", add_dirs = "table",
  env = "table", settings = "string|table", setting_sources = "table", resume = "string",
  continue = "boolean", continue_conversation = "boolean", fork_session = "boolean",
  session_id = "string", agents = "table", plugins = "table", sandbox = "table",
  output_format = "table", include_partial_messages = "boolean",
  include_hook_events = "boolean", stderr = "function", extra_args = "table",
  mcp_servers = "table|string", strict_mcp_config = "boolean", can_use_tool = "function",
  hooks = "table", user = "string", betas = "table", max_buffer_size = "number",
  initialize_timeout = "number", control_timeout = "number", close_timeout = "number",
  on_elicitation = "function", on_user_dialog = "function",
  skills = "string|table", task_budget = "number|table", resume_session_at = "string",
  resume_drops_turn = "string", enable_file_checkpointing = "boolean",
  session_store = "table", session_store_flush = "string", load_timeout_ms = "number",
  agent = "string", tool_budget = "table|boolean", forward_subagent_text = "boolean",
  -- the TypeScript Agent SDK's (docs/api.md maps them)
  tool_config = "table", prompt_suggestions = "boolean", agent_progress_summaries = "boolean",
  title = "string", persist_session = "boolean", plan_mode_instructions = "string",
  tool_aliases = "table", supported_dialog_kinds = "table", per_task_stop_affordance = "boolean",
  verbatim_prompts = "boolean", debug = "boolean", debug_file = "string",
  managed_settings = "table|string", allow_dangerously_skip_permissions = "boolean",
  permission_prompts = "string", project_config_root = "string",
  spawn = "function", record = "string|table",
  mcp_servers_delivery = "string", plugin_delivery = "string",
  -- forward compatibility (claude.session.compat): refuse every name claudelua does not
  -- know; answer the CLI's control requests of subtypes it does not know
  strict = "boolean", on_control_request = "function",
}
M.OPTION_TYPES = OPTION_TYPES

-- The public function whose options were checked last, for the messages of build_args
-- (a session is opened synchronously: checked, then built).
local checked_for = "query"

--- Checks option names and types; a misuse (see `claude.errors`) names the first bad one.
-- @tparam table options
-- @tparam[opt] string fname the public function given them, for messages ("query")
function M.check_options(options, fname)
  fname = fname or "query"
  checked_for = fname
  if options == nil then return {} end
  if type(options) ~= "table" then
    misuse("bad argument #%d to '%s' (table expected, got %s)", fname == "query" and 2 or 1,
      fname, type(options))
  end
  local strict = options.strict == true
  for key, value in pairs(options) do
    local want = type(key) == "string" and OPTION_TYPES[key]
    if want then
      errors.check_field(value, key, fname, want)
    else -- a newer CLI's option: sent in initialize (M.initialize_fields)
      compat.unknown(key, value, OPTION_TYPES, fname, nil, strict,
        "'" .. compat.camel(tostring(key)) .. "' in initialize")
    end
  end
  shapes.check(options, 1, fname)
  if options.supported_dialog_kinds and #options.supported_dialog_kinds > 0
    and not options.on_user_dialog then
    misuse("bad field 'supported_dialog_kinds' to '%s' (it needs an on_user_dialog callback to "
      .. "answer those dialogs)", fname)
  end
  return options
end

local function home()
  return os.getenv("HOME") or ""
end

--- Finds the CLI: `cli_path`, else `claude` on PATH, else the usual install
-- places.
-- @return argv prefix (a list), or nil, a `cli_not_found` error, its kind
function M.find(cli_path, path_env)
  if type(cli_path) == "table" then
    if type(cli_path[1]) ~= "string" then
      misuse("bad field 'cli_path' to '%s' (argv list must start with a string)", checked_for)
    end
    local exe, err = process.which(cli_path[1], path_env)
    if not exe then
      return errors.fail("cli_not_found", "claude CLI not found at " .. cli_path[1]
        .. " (" .. tostring(err) .. ")")
    end
    local argv = { exe }
    for i = 2, #cli_path do argv[i] = cli_path[i] end
    return argv
  end
  if cli_path then
    local exe = process.which(cli_path, path_env)
    if exe then return { exe } end
    return errors.fail("cli_not_found", "claude CLI not found at " .. cli_path
      .. "; " .. ways_forward())
  end
  local exe = process.which("claude", path_env)
  if exe then return { exe } end
  local h = home()
  for _, candidate in ipairs {
    h .. "/.npm-global/bin/claude", "/usr/local/bin/claude", h .. "/.local/bin/claude",
    h .. "/node_modules/.bin/claude", h .. "/.yarn/bin/claude", h .. "/.claude/local/claude",
  } do
    if core.is_executable(candidate) then return { candidate } end
  end
  return errors.fail("cli_not_found", "claude CLI not found on PATH or in the usual "
    .. "install places; " .. ways_forward())
end

local function join(list, name)
  for i, v in ipairs(list) do
    if type(v) ~= "string" then
      misuse("bad field '%s' to '%s' (item %d is a %s, string expected)", name, checked_for, i,
        type(v))
    end
  end
  return table.concat(list, ",")
end

-- Values that may come from outside go as --flag=value, so a value that
-- starts with '-' cannot be read as another flag.
local function add(argv, ...)
  local n = #argv
  for i = 1, select("#", ...) do argv[n + i] = select(i, ...) end
end

--- The in-process servers (claude.Server objects) and the external server
-- configs of `mcp_servers`.
function M.split_servers(mcp_servers)
  local sdk, external, names = {}, {}, {}
  if type(mcp_servers) == "string" then return sdk, external, names end
  for name, server in pairs(mcp_servers or {}) do
    if type(name) ~= "string" then
      misuse("bad field 'mcp_servers' to '%s' (keys are server names)", checked_for)
    end
    local mt = getmetatable(server)
    if mt and mt.__name == "claude.mcp.Client" then
      -- a connected MCP client: served in-process, so the CLI uses our connection
      server = require("claude.mcp.bridge").for_session(server, name)
    end
    if type(server) == "table" and server.kind == "server" then
      sdk[name] = server
      names[#names + 1] = name
    elseif type(server) == "table" then
      external[name] = shapes.server_config(name, server, 5)
    else
      misuse("bad field 'mcp_servers' to '%s' (entry '%s' is a %s; expected claude.server(...) "
        .. "or a server config table)", checked_for, name, type(server))
    end
  end
  table.sort(names)
  return sdk, external, names
end

--- The first CLI that reads external servers' configs from `initialize` (`mcpServers`,
-- under `--await-initialize`).
M.SERVERS_IN_INITIALIZE = "2.1.326"

local function version_less(a, b)
  local x, y = { a:match("^(%d+)%.(%d+)%.(%d+)") }, { b:match("^(%d+)%.(%d+)%.(%d+)") }
  for i = 1, 3 do
    local p, q = tonumber(x[i]), tonumber(y[i])
    if p ~= q then return p < q end
  end
  return false
end

local versions = {} -- real path and mtime -> version, or false: looked at once per binary

--- The version of the CLI at `exe`, without running it: the name of the file a native
-- install leads to (`~/.local/share/claude/versions/2.1.332`), else the `package.json` of
-- the npm package holding it; nil when neither says.
-- @tparam string exe
-- @treturn string|nil
function M.cli_version(exe)
  local real = core.realpath(exe)
  local st = real and core.stat(real)
  if not st then return nil end
  local key = real .. "\0" .. st.mtime -- an update in place is another binary
  if versions[key] ~= nil then return versions[key] or nil end
  local v = real:match("/(%d+%.%d+%.%d+)$")
  local dir = real:match("^(.*)/[^/]*$")
  for _ = 1, 2 do -- bin/claude.exe, or the platform package's claude
    if v or not dir then break end
    local f = io.open(dir .. "/package.json", "rb")
    local text = f and f:read(65536)
    if f then f:close() end
    local ok, doc = pcall(json.decode, text or "")
    if ok and type(doc) == "table" and type(doc.name) == "string"
      and doc.name:find("^@anthropic%-ai/claude%-code") and type(doc.version) == "string" then
      v = doc.version:match("^%d+%.%d+%.%d+")
    end
    dir = dir:match("^(.*)/[^/]*$")
  end
  versions[key] = v or false
  return v
end

--- Where the external servers' configs go: the option's choice, else `"initialize"` (off
-- the command line, where every local user can read their env and headers) unless the
-- CLI at `exe` (nil: run by a spawn function, somewhere else) is known to be older than
-- `SERVERS_IN_INITIALIZE`; then `"argv"`. A CLI whose version cannot be told without
-- running it gets `"initialize"`: one too old then fails `connect`, saying why.
-- @treturn string
function M.servers_delivery(options, exe)
  if options.mcp_servers_delivery then return options.mcp_servers_delivery end
  local v = exe and M.cli_version(exe)
  if v and version_less(v, M.SERVERS_IN_INITIALIZE) then return "argv" end
  return "initialize"
end

--- The command line for `options`, after the CLI's own argv prefix. `delivery` is where
-- the external servers go (`servers_delivery`; default the option's, else `"argv"`).
function M.build_args(options, delivery)
  local argv = { "--output-format", "stream-json", "--verbose" }
  local sp = options.system_prompt
  if sp == nil then
    add(argv, "--system-prompt", "")
  elseif type(sp) == "string" then
    add(argv, "--system-prompt", sp)
  elseif sp.type == "file" then
    add(argv, "--system-prompt-file", sp.path)
  elseif sp.type == "preset" then
    -- exclude_dynamic_sections goes in initialize (M.initialize_fields)
    if sp.append then add(argv, "--append-system-prompt", sp.append) end
  -- a list of blocks, and the custom form, go in initialize (M.initialize_fields), as the
  -- TypeScript SDK sends them
  elseif sp.type ~= "custom" and sp.type ~= nil then
    misuse("bad field 'system_prompt' to '%s' (a string, a list of strings, {type='preset', "
      .. "append=...}, {type='custom', prompt=...} or {type='file', path=...} expected)",
      checked_for)
  end
  local tools = options.tools
  if tools then
    if tools.type == "preset" then add(argv, "--tools", "default")
    else add(argv, "--tools", join(tools, "tools")) end
  end
  local allowed_tools, setting_sources = shapes.apply_skills(options)
  if #allowed_tools > 0 then
    add(argv, "--allowedTools", join(allowed_tools, "allowed_tools"))
  end
  if options.max_turns and options.max_turns > 0 then
    add(argv, "--max-turns", tostring(math.tointeger(options.max_turns) or options.max_turns))
  end
  if options.max_budget_usd then add(argv, "--max-budget-usd", tostring(options.max_budget_usd)) end
  if options.disallowed_tools and #options.disallowed_tools > 0 then
    add(argv, "--disallowedTools", join(options.disallowed_tools, "disallowed_tools"))
  end
  local budget = options.task_budget
  if budget then
    budget = type(budget) == "table" and budget.total or budget
    add(argv, "--task-budget", tostring(math.tointeger(budget) or budget))
  end
  if options.model then add(argv, "--model", options.model) end
  if options.fallback_model then add(argv, "--fallback-model", options.fallback_model) end
  if options.betas and #options.betas > 0 then
    add(argv, "--betas", join(options.betas, "betas"))
  end
  if options.debug_file then add(argv, "--debug-file=" .. options.debug_file)
  elseif options.debug then add(argv, "--debug") end
  if options.can_use_tool then
    if options.permission_prompt_tool_name then
      misuse("options 'can_use_tool' and 'permission_prompt_tool_name' cannot be combined")
    end
    add(argv, "--permission-prompt-tool", "stdio")
  elseif options.permission_prompt_tool_name then
    add(argv, "--permission-prompt-tool", options.permission_prompt_tool_name)
  end
  if options.permission_prompts then
    add(argv, "--permission-prompts=" .. options.permission_prompts)
  end
  if options.permission_mode then add(argv, "--permission-mode", options.permission_mode) end
  if options.allow_dangerously_skip_permissions then
    add(argv, "--allow-dangerously-skip-permissions")
  end
  if options.agent then add(argv, "--agent=" .. options.agent) end
  if options.continue or options.continue_conversation then add(argv, "--continue") end
  if options.resume then add(argv, "--resume=" .. options.resume) end
  if options.session_id then add(argv, "--session-id=" .. options.session_id) end
  local settings = options.settings
  if options.sandbox then
    local merged = {}
    if type(settings) == "table" then
      for k, v in pairs(settings) do merged[k] = v end
    end
    if type(settings) == "string" then
      local f = io.open(settings, "rb")
      local text = f and f:read("a") or settings
      if f then f:close() end
      merged = json.decode(text) or {}
    end
    merged.sandbox = options.sandbox
    settings = merged
  end
  if settings then
    add(argv, "--settings", type(settings) == "table" and json.encode(settings) or settings)
  end
  if options.project_config_root then
    add(argv, "--project-config-root=" .. options.project_config_root)
  end
  for _, dir in ipairs(options.add_dirs or {}) do add(argv, "--add-dir", dir) end
  local _, external = M.split_servers(options.mcp_servers)
  local servers_in_init = (delivery or options.mcp_servers_delivery) == "initialize"
  if type(options.mcp_servers) == "string" then
    add(argv, "--mcp-config", options.mcp_servers) -- a file, or JSON text
  elseif next(external) and not servers_in_init then
    add(argv, "--mcp-config", json.encode { mcpServers = external })
  end
  if options.include_partial_messages then add(argv, "--include-partial-messages") end
  if options.include_hook_events then add(argv, "--include-hook-events") end
  if options.strict_mcp_config then add(argv, "--strict-mcp-config") end
  if options.fork_session then add(argv, "--fork-session") end
  if options.resume_session_at then
    add(argv, "--resume-session-at=" .. options.resume_session_at)
  end
  -- even empty: the CLI then refuses it, rather than the guard silently not being there
  if options.resume_drops_turn then
    add(argv, "--resume-drops-turn=" .. options.resume_drops_turn)
  end
  if options.session_store then add(argv, "--session-mirror") end
  if options.persist_session == false then add(argv, "--no-session-persistence") end
  local managed = options.managed_settings
  if managed then
    add(argv, "--managed-settings", type(managed) == "table" and json.encode(managed) or managed)
  end
  if setting_sources then
    add(argv, "--setting-sources=" .. join(setting_sources, "setting_sources"))
  end
  -- servers or plugins delivered in initialize: the CLI waits for it before it starts them
  -- (the configs' headers and variables stay off the command line)
  local plugins_in_init = options.plugin_delivery == "initialize"
  if (servers_in_init and next(external)) or (plugins_in_init and options.plugins
    and #options.plugins > 0) then
    add(argv, "--await-initialize")
  end
  for i, plugin in ipairs(options.plugins or {}) do
    if type(plugin) ~= "table" or plugin.type ~= "local" or type(plugin.path) ~= "string" then
      misuse("bad field 'plugins' to '%s' (item %d: {type='local', path=...} expected)",
        checked_for, i)
    end
    if not plugins_in_init then add(argv, "--plugin-dir", plugin.path) end
  end
  local keys = {}
  for k in pairs(options.extra_args or {}) do keys[#keys + 1] = k end
  table.sort(keys)
  for _, k in ipairs(keys) do
    local v = options.extra_args[k]
    if v == true or v == json.null then add(argv, "--" .. k)
    elseif type(v) == "string" and v:sub(1, 1) == "-" then add(argv, "--" .. k .. "=" .. v)
    elseif v ~= false then add(argv, "--" .. k, tostring(v)) end
  end
  local thinking = options.thinking
  if thinking then
    if thinking.type == "adaptive" then add(argv, "--thinking", "adaptive")
    elseif thinking.type == "enabled" then
      add(argv, "--max-thinking-tokens", tostring(thinking.budget_tokens or 32000))
    elseif thinking.type == "disabled" then add(argv, "--thinking", "disabled")
    else
      misuse("bad field 'thinking' to '%s' (type 'adaptive', 'enabled' or 'disabled' expected)",
        checked_for)
    end
    if thinking.display then add(argv, "--thinking-display", thinking.display) end
  elseif options.max_thinking_tokens then
    add(argv, "--max-thinking-tokens", tostring(math.tointeger(options.max_thinking_tokens)))
  end
  if options.effort then add(argv, "--effort", options.effort) end
  local of = options.output_format
  if of then
    if of.type ~= "json_schema" or type(of.schema) ~= "table" then
      misuse("bad field 'output_format' to '%s' ({type='json_schema', schema={...}} expected)",
        checked_for)
    end
    add(argv, "--json-schema", json.encode(of.schema))
  end
  add(argv, "--input-format", "stream-json")
  return argv
end

local AGENT_KEYS = shapes.AGENT_KEYS

--- `agents` for initialize: snake_case keys become the CLI's camelCase.
function M.agents_wire(agents)
  local out = {}
  for name, def in pairs(agents) do
    if type(def) ~= "table" then
      misuse("bad field 'agents' to '%s' (entry '%s' must be a table)", checked_for,
        tostring(name))
    end
    local wire = {}
    -- a field of a newer CLI (options.lua warned about it) in its camelCase
    for k, v in pairs(def) do wire[AGENT_KEYS[k] or compat.camel(k)] = v end
    out[name] = wire
  end
  return out
end

--- Fields of initialize that come from options: the preset system
-- prompt's `exclude_dynamic_sections`, a `skills` list (the CLI then
-- loads only those skills into the system prompt) and
-- `forward_subagent_text` (subagents' text and thinking blocks are sent
-- as messages too, not only their tool calls).
function M.initialize_fields(options, delivery)
  local out = {}
  local sp = options.system_prompt
  if type(sp) == "table" and sp.exclude_dynamic_sections ~= nil then
    out.excludeDynamicSections = sp.exclude_dynamic_sections
  end
  if type(sp) == "table" then
    -- the list form, and the custom form's prompt (a string or a list), as a list of blocks
    local blocks = sp.type == nil and sp or sp.type == "custom" and sp.prompt or nil
    if type(blocks) == "string" then blocks = { blocks } end
    if blocks then out.systemPrompt = json.array { table.unpack(blocks) } end
    if sp.snapshot ~= nil then out.systemPromptSnapshot = sp.snapshot end
  end
  if options.title then out.title = options.title end
  if options.plan_mode_instructions then
    out.planModeInstructions = options.plan_mode_instructions
  end
  if options.tool_aliases then out.toolAliases = json.object(options.tool_aliases) end
  if options.prompt_suggestions ~= nil then out.promptSuggestions = options.prompt_suggestions end
  if options.agent_progress_summaries ~= nil then
    out.agentProgressSummaries = options.agent_progress_summaries
  end
  if options.supported_dialog_kinds then
    out.supportedDialogKinds = json.array { table.unpack(options.supported_dialog_kinds) }
  end
  if options.per_task_stop_affordance ~= nil then
    out.perTaskStopAffordance = options.per_task_stop_affordance
  end
  if (delivery or options.mcp_servers_delivery) == "initialize"
    and type(options.mcp_servers) == "table" then
    local _, external = M.split_servers(options.mcp_servers)
    if next(external) then out.mcpServers = json.object(external) end
  end
  if options.plugin_delivery == "initialize" and options.plugins and #options.plugins > 0 then
    local list = json.array()
    for i, p in ipairs(options.plugins) do list[i] = { type = p.type, path = p.path } end
    out.plugins = list
  end
  if type(options.skills) == "table" then
    out.skills = json.array { table.unpack(options.skills) }
  end
  if options.forward_subagent_text then out.forwardSubagentText = true end
  -- the options of a newer CLI (check_options warned about each), in its camelCase
  for k, v in pairs(options) do
    if type(k) == "string" and not OPTION_TYPES[k] then out[compat.camel(k)] = v end
  end
  return out
end

--- The CLI's environment: ours minus CLAUDECODE (so a host started from
-- inside Claude Code can still start it), plus the entrypoint, plus
-- `options.env` (which may override the entrypoint; `false` removes a key).
-- tool_config.ask_user_question's fields and the CLI's variables for them.
local QUESTION_ENV = { preview_format = "CLAUDE_CODE_QUESTION_PREVIEW_FORMAT",
  extended_questions = "CLAUDE_CODE_QUESTION_EXTENDED",
  optional_descriptions = "CLAUDE_CODE_QUESTION_OPTIONAL_DESCRIPTIONS" }

--- The variables the session sets in the CLI's environment, over those it inherits:
-- the entrypoint, `CLAUDECODE` removed (`false`), the start-up failure results (a CLI
-- that refuses to start says why in a result), `tool_config`'s variables, then
-- `options.env` (which may override any of them; `false` removes a key).
function M.env_changes(options)
  local env = { CLAUDECODE = false, CLAUDE_CODE_ENTRYPOINT = M.ENTRYPOINT, PWD = options.cwd,
    CLAUDE_CODE_STARTUP_FAILURE_RESULTS = "1" }
  local question = options.tool_config and options.tool_config.ask_user_question
  for k, name in pairs(question and QUESTION_ENV or {}) do
    local v = question[k]
    if v == true then env[name] = "1" elseif v then env[name] = v end
  end
  if options.enable_file_checkpointing then
    env.CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING = "true"
  end
  for k, v in pairs(options.env or {}) do env[k] = v end
  return env
end

--- The CLI's environment: ours with `env_changes` applied.
function M.build_env(options)
  return process.environment(M.env_changes(options))
end

return M
