--- A scripted fake of the `claude` CLI, for specs: run as the CLI, it speaks
-- stream-json on stdin/stdout and plays a script.
--
--     claudelua lua/claude/testing/fake_cli.lua SCRIPT.lua [argv the SDK passes...]
--     lua5.4 lua/claude/testing/fake_cli.lua SCRIPT.lua ...   (LUA_PATH, LUA_CPATH set)
--
-- SCRIPT.lua is a chunk that gets the `cli` object as `...` and as the name
-- `cli`; when it returns a function, that function is called with `cli`:
--
--     return function(cli)
--       cli:expect_initialize()
--       local _, text = cli:expect_user()
--       cli:assistant("You said: " .. text)
--       cli:result()
--     end
--
-- (Over 600 lines: the CLI's vocabulary is one object a script drives; its control
-- requests are already apart in fake_cli_control.lua.)
--
-- It is a `claude.testing.peer` (reading, expecting, writing, the log, the exit
-- codes) with the CLI's vocabulary: its argv, its messages, its control requests. A line
-- that is not JSON ends it as the real CLI does (exit 1, stderr
-- `Error parsing streaming input line: ...`). With `CLAUDELUA_FAKE_LOG=path` the log goes
-- to `path` (see `claude.testing.read_log`).
--
-- Its control requests, both ways, are `claude.testing.fake_cli_control`.
-- See docs/testing.md.
-- @module claude.testing.fake_cli
local json = require "claude.json"
local core = require "claude.core"
local errors = require "claude.errors"
local peer = require "claude.testing.peer"

local null, jarray, jobject = json.null, json.array, json.object
local fmt = string.format

local M = {}

--- The CLI version the fake claims to be.
M.version = "2.1.337"
M.build_time = "2026-08-28T00:00:00Z"
M.default_model = "claude-sonnet-4-5"

--- Exit codes.
M.EXIT_MALFORMED, M.EXIT_SCRIPT, M.EXIT_EXPECTATION = peer.EXIT_MALFORMED, peer.EXIT_SCRIPT,
  peer.EXIT_EXPECTATION

-- Built-in tool names of `system/init` (captured from 2.1.197).
local BUILTIN_TOOLS = { "Task", "Bash", "Edit", "NotebookEdit", "Read", "Skill", "TaskCreate",
  "TaskGet", "TaskList", "TaskOutput", "TaskStop", "TaskUpdate", "WebFetch", "WebSearch", "Write" }
local SLASH_COMMANDS = { "debug", "code-review", "simplify", "clear", "compact", "config",
  "context", "init", "review", "security-review", "usage" }
local AGENTS = { "claude", "Explore", "general-purpose", "Plan", "statusline-setup" }

-- Prices per token of the models the fake knows (input, output), for costs.
local PRICES = {
  ["claude-sonnet-4-5"] = { 3e-6, 15e-6 },
  ["claude-opus-4-8"] = { 5e-6, 25e-6 },
  ["claude-haiku-4-5"] = { 1e-6, 5e-6 },
}

---------------------------------------------------------------------------
-- Ids and small helpers

local B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

local function base62(n)
  local t = {}
  for i = 1, n do
    local k = math.random(1, 62)
    t[i] = B62:sub(k, k)
  end
  return table.concat(t)
end

--- A random version 4 UUID.
function M.uuid()
  local t = {}
  for i = 1, 16 do t[i] = math.random(0, 255) end
  t[7] = (t[7] & 0x0f) | 0x40
  t[9] = (t[9] & 0x3f) | 0x80
  local h = fmt(string.rep("%02x", 16), table.unpack(t))
  return fmt("%s-%s-%s-%s-%s", h:sub(1, 8), h:sub(9, 12), h:sub(13, 16), h:sub(17, 20),
    h:sub(21, 32))
end

--- Ids shaped like the real ones: `toolu_01…`, `msg_01…`, `req_011…`.
function M.tool_use_id() return "toolu_01" .. base62(22) end
function M.message_id() return "msg_01" .. base62(24) end
function M.api_request_id() return "req_011" .. base62(23) end

local function timestamp()
  return os.date("!%Y-%m-%dT%H:%M:%S.000Z")
end

local merge, encode, describe, contains = peer.merge, peer.encode, peer.describe, peer.contains

-- The subtype of a message as `expect` matches it: the request's for a
-- control_request, the response's for a control_response, else its own.
local function subtype_of(msg)
  if msg.type == "control_request" and type(msg.request) == "table" then
    return msg.request.subtype
  elseif msg.type == "control_response" and type(msg.response) == "table" then
    return msg.response.subtype
  end
  return msg.subtype
end
M.subtype_of = subtype_of

M.contains = contains

--- True when `msg` matches `what`: a subtype string, a table of fields it
-- must contain, or a predicate function; `kind` is its type (nil: any).
-- Returns false and a reason otherwise.
function M.matches(msg, kind, what)
  return peer.matches(msg, kind, what, subtype_of)
end

-- The text of a message's content: a string, or its text blocks joined.
local function content_text(content)
  if type(content) == "string" then return content end
  if type(content) ~= "table" then return nil end
  local parts = {}
  for _, block in ipairs(content) do
    if type(block) == "table" and block.type == "text" and type(block.text) == "string" then
      parts[#parts + 1] = block.text
    end
  end
  return table.concat(parts, "\n")
end
M.content_text = content_text

-- "mcp__calc__add" -> "Add"; "Bash" -> "Bash".
local function display_name(tool_name)
  local short = tool_name:match("^mcp__.-__(.+)$") or tool_name
  return (short:gsub("^%l", string.upper))
end
M.display_name = display_name

-- A simple JS regex (as hook matchers are written) to a Lua test:
-- alternatives with `|`, `.` and `.*`; nil, "" and "*" match everything.
local function matcher_matches(matcher, name)
  if matcher == nil or matcher == null or matcher == "" or matcher == "*" then return true end
  if name == nil then return false end
  for alt in (matcher .. "|"):gmatch("([^|]*)|") do
    local pat = alt:gsub("[%%%-%+%?%(%)%[%]%^%$]", "%%%0")
    if name:find("^" .. pat .. "$") then return true end
  end
  return false
end
M.matcher_matches = matcher_matches

local function read_pid()
  local f = io.open("/proc/self/stat")
  if not f then return null end
  local pid = f:read("n")
  f:close()
  return pid and math.tointeger(pid) or null
end

---------------------------------------------------------------------------
-- The cli object


local Cli = {}
Cli.__index = Cli
setmetatable(Cli, { __index = peer.Peer })
Cli.__name = "claude.FakeCli"
M.Cli = Cli

function Cli:__tostring()
  return fmt("claude.FakeCli (session %s)", self.session_id)
end

--- Makes a cli object.
-- @tparam table o `{ argv = {...}, input = file (stdin), output = file (stdout),
--   log = file|nil, chunkname = "@script.lua" }`
function M.new(o)
  local self = peer.new({ input = o.input, output = o.output, log = o.log,
    chunkname = o.chunkname, program = "fake_cli" }, Cli)
  self.argv = o.argv or {}
  self.env = setmetatable({}, { __index = function(_, k) return os.getenv(k) end })
  self.pending = {}      -- request_id -> true for our requests awaiting a response
  self.responses = {}    -- request_id -> response that arrived early
  self.cancelled = {}    -- request_id -> true: late answers dropped
  self.servers = {}      -- MCP server name -> { next_id, tools, connected }
  self.cost = { total = 0, models = {} }
  self.session_id = self:flag_value("--session-id") or self:flag_value("--resume") or M.uuid()
  self.model = self:flag_value("--model") or M.default_model
  self.permission_mode = self:flag_value("--permission-mode") or "default"
  self.cwd = core.cwd()
  self.turn = self:_new_turn()
  return self
end

function Cli:_new_turn() -- luacheck: ignore 212/self
  return { started = core.now(), messages = {}, order = {}, permission_denials = jarray(),
    prompt_id = M.uuid(), last_text = nil }
end

---------------------------------------------------------------------------
-- argv and environment

--- The value of a flag: `--model X` and `--model=X` give "X"; a flag
-- followed by another `--flag` (or by nothing) gives true; absent, nil.
-- Repeated flags: the first; see `flags`.
function Cli:flag(name)
  return (self:flags(name))[1]
end

--- Every value of a repeated flag, in order (a list, maybe empty).
function Cli:flags(name)
  local out, argv = {}, self.argv or {}
  local prefix = name .. "="
  local i = 1
  while i <= #argv do
    local a = argv[i]
    if a == name then
      local nxt = argv[i + 1]
      if nxt == nil or nxt:sub(1, 2) == "--" then
        out[#out + 1] = true
      else
        out[#out + 1] = nxt
        i = i + 1
      end
    elseif a:sub(1, #prefix) == prefix then
      out[#out + 1] = a:sub(#prefix + 1)
    end
    i = i + 1
  end
  return out
end

-- Like flag, but only a string value.
function Cli:flag_value(name)
  local v = self:flag(name)
  if type(v) == "string" then return v end
  return nil
end

--- True when the flag is present (in either form).
function Cli:has_flag(name)
  return self:flag(name) ~= nil
end

--- The flag's value decoded as JSON (`--mcp-config`, `--settings`...); nil
-- when absent; fails the script when it is not valid JSON.
function Cli:json_flag(name)
  local v = self:flag_value(name)
  if v == nil then return nil end
  local t, err = json.decode(v)
  if t == nil then self:fail("flag %s is not valid JSON (%s): %s", name, err, describe(v)) end
  return t
end

---------------------------------------------------------------------------
-- Reading

-- Answers to requests of ours are kept for `await_response` (a late answer to a cancelled
-- one is dropped, as the real CLI does), and `keep_alive` is skipped.
function Cli:consume(msg)
  if msg.type == "control_response" and type(msg.response) == "table" then
    local id = msg.response.request_id
    if self.pending[id] then
      self.pending[id] = nil
      self.responses[id] = msg.response
      return true
    end
    return self.cancelled[id] ~= nil
  end
  return msg.type == "keep_alive"
end

-- A line that is not a JSON object ends the process as the real CLI does.
function Cli:malformed(line, err)
  self:_exit(M.EXIT_MALFORMED, fmt("Error parsing streaming input line: %s: SyntaxError: %s",
    line, err or "not a JSON object"))
end

-- `expect`'s string form: the request's subtype for a control_request, the response's for
-- a control_response, else the message's own.
function Cli:subtype_of(msg) -- luacheck: ignore 212/self
  return subtype_of(msg)
end


--- Reads a control_request of `subtype` (and fields, matched against its
-- `request`); returns the envelope and its `request`.
function Cli:expect_control(subtype, fields)
  local what = subtype
  if fields ~= nil then what = { request = merge({ subtype = subtype }, fields) } end
  local msg = self:expect("control_request", what)
  return msg, msg.request
end

--- The initialize response body, shaped like the real one; `fields`
-- override its keys.
function Cli:initialize_response(fields) -- luacheck: ignore 212/self
  local commands = jarray()
  for _, name in ipairs({ "debug", "code-review", "simplify", "review" }) do
    commands[#commands + 1] = { name = name, description = "The " .. name .. " command",
      argumentHint = "" }
  end
  local agents = jarray()
  for _, name in ipairs(AGENTS) do
    agents[#agents + 1] = { name = name, description = "The " .. name .. " agent" }
  end
  return merge({
    commands = commands,
    agents = agents,
    output_style = "default",
    available_output_styles = jarray({ "default", "Explanatory", "Learning" }),
    models = jarray({
      { value = "default", resolvedModel = "claude-opus-4-8[1m]",
        displayName = "Default (recommended)", description = "Opus 4.8 with 1M context",
        supportsEffort = true },
      { value = "sonnet", resolvedModel = "claude-sonnet-4-5", displayName = "Sonnet",
        description = "Sonnet 4.5", supportsEffort = true },
      { value = "haiku", resolvedModel = "claude-haiku-4-5", displayName = "Haiku",
        description = "Haiku 4.5", supportsEffort = false },
    }),
    account = { tokenSource = "none", apiKeySource = "ANTHROPIC_API_KEY",
      apiProvider = "firstParty" },
    pid = read_pid(),
  }, fields)
end

-- Records what `initialize` registered: hooks (callback id -> event and
-- matcher) and sdk MCP servers.
function Cli:_take_initialize(request)
  self.initialize = request
  self.hook_callbacks = {}
  if type(request.hooks) == "table" then
    for event, matchers in pairs(request.hooks) do
      for _, m in ipairs(matchers) do
        for _, id in ipairs(m.hookCallbackIds or {}) do
          self.hook_callbacks[#self.hook_callbacks + 1] =
            { id = id, event = event, matcher = m.matcher }
        end
      end
    end
  end
end

--- Reads the `initialize` control_request and answers it with
-- `initialize_response(fields)`. Returns the envelope and its `request`.
-- To talk to sdk MCP servers before answering (as the real CLI does), use
-- `expect_control("initialize")`, then `mcp_connect`, then
-- `respond(req, cli:initialize_response())`.
function Cli:expect_initialize(fields)
  local msg, request = self:expect_control("initialize")
  self:_take_initialize(request)
  -- as the real CLI: what initialize delivered (servers, plugins) is reported taken
  local applied = { mcp_servers_applied = request.mcpServers ~= nil or nil,
    plugins_applied = request.plugins ~= nil or nil }
  self:respond(msg, self:initialize_response(merge(applied, fields)))
  return msg, request
end

--- Reads a user message and starts a new turn. Fails unless `message.role`
-- is "user" and, when `expected` is given, its text equals it (a string) or
-- matches it (a table of fields, or a predicate on the text).
-- @return the message, its text
function Cli:expect_user(expected)
  local msg = self:expect("user")
  if type(msg.message) ~= "table" or msg.message.role ~= "user" then
    self:fail("a user message needs message.role == \"user\", got %s", describe(msg))
  end
  local text = content_text(msg.message.content)
  if type(expected) == "string" and text ~= expected then
    self:fail("expected the user text %q, got %q", expected, tostring(text))
  elseif type(expected) == "table" and not contains(msg, expected) then
    self:fail("expected a user message with %s, got %s", describe(expected), describe(msg))
  elseif type(expected) == "function" and not expected(text, msg) then
    self:fail("the user text %q does not satisfy the predicate", tostring(text))
  end
  self.turn = self:_new_turn()
  return msg, text
end

--- Sends a `system` line of `subtype` (e.g. "status", "api_retry").
function Cli:system(subtype, fields)
  return self:send(merge({ type = "system", subtype = subtype, session_id = self.session_id,
    uuid = M.uuid() }, fields))
end

--- Sends `system/init`, as the real CLI does at the start of each turn:
-- the model, permission mode, built-in tools plus the tools of connected
-- MCP servers. `fields` override.
function Cli:system_init(fields)
  local tools, servers = jarray(), jarray()
  for _, t in ipairs(BUILTIN_TOOLS) do tools[#tools + 1] = t end
  local names = {}
  for name in pairs(self.servers) do names[#names + 1] = name end
  table.sort(names)
  for _, name in ipairs(names) do
    local s = self.servers[name]
    if s.connected then
      servers[#servers + 1] = { name = name, status = "connected" }
      for _, t in ipairs(s.tools or {}) do tools[#tools + 1] = "mcp__" .. name .. "__" .. t.name end
    end
  end
  return self:system("init", merge({
    cwd = self.cwd, tools = tools, mcp_servers = servers, model = self.model,
    permissionMode = self.permission_mode, slash_commands = jarray(SLASH_COMMANDS),
    apiKeySource = "ANTHROPIC_API_KEY", claude_code_version = M.version,
    output_style = "default", agents = jarray(AGENTS), skills = jarray(), plugins = jarray(),
    analytics_disabled = true, product_feedback_disabled = true, fast_mode_state = "off",
  }, fields))
end

local function usage_for(blocks)
  local n = 0
  for _, b in ipairs(blocks) do
    n = n + #(b.text or b.thinking or (b.input and encode(b.input)) or "")
  end
  return math.max(1, (n + 3) // 4)
end

-- Counts one API call of the turn (a message id): its tokens and cost.
function Cli:_account(id, model, input_tokens, output_tokens)
  local turn = self.turn
  local m = turn.messages[id]
  if not m then
    m = { model = model, input = input_tokens, output = 0 }
    turn.messages[id] = m
    turn.order[#turn.order + 1] = id
  end
  m.output = m.output + output_tokens
end

--- Sends an assistant message: one line per content block, all with the same
-- `message.id`, as the real CLI does. `content` is a string (one text block)
-- or a list of blocks; `fields` may set `model`, `message_id` (continue an
-- earlier message), `input_tokens`, `parent_tool_use_id`, `error`, or any
-- top-level key.
-- @return the message id
function Cli:assistant(content, fields)
  if type(content) == "string" then content = { { type = "text", text = content } } end
  if type(content) ~= "table" then
    return errors.blame("bad argument #1 to 'assistant' (string or list of blocks expected, "
      .. "got %s)", type(content))
  end
  fields = merge({}, fields)
  local model = fields.model or self.model
  local id = fields.message_id or M.message_id()
  local input_tokens = fields.input_tokens or 25000
  local request_id = M.api_request_id()
  fields.model, fields.message_id, fields.input_tokens = nil, nil, nil
  self:_account(id, model, input_tokens, usage_for(content))
  for _, block in ipairs(content) do
    local line = {
      type = "assistant",
      message = {
        id = id, type = "message", role = "assistant", model = model,
        content = jarray({ block }), stop_reason = null, stop_sequence = null,
        usage = { input_tokens = input_tokens, cache_creation_input_tokens = 0,
          cache_read_input_tokens = 0, output_tokens = 1, service_tier = "standard" },
        context_management = null,
      },
      parent_tool_use_id = null, session_id = self.session_id, uuid = M.uuid(),
      request_id = request_id,
    }
    if block.type == "tool_use" and type(block.name) == "string"
      and block.name:find("^mcp__") then
      line.tool_use_meta = jarray({ { id = block.id, display_name = display_name(block.name),
        server_display_name = block.name:match("^mcp__(.-)__") } })
    end
    if block.type == "text" then self.turn.last_text = block.text end
    self:send(merge(line, fields))
  end
  return id
end

--- Sends an assistant `tool_use` block for tool `name` with `input`.
-- `fields` as for `assistant` (plus `id` for the tool_use id).
-- @return the tool_use id
function Cli:tool_use(name, input, fields)
  if type(name) ~= "string" then
    return errors.blame("bad argument #1 to 'tool_use' (string expected, got %s)", type(name))
  end
  fields = merge({}, fields)
  local id = fields.id or M.tool_use_id()
  fields.id = nil
  self:assistant({ { type = "tool_use", id = id, name = name,
    input = input or jobject() } }, fields)
  self.last_tool_use = { id = id, name = name, input = input or jobject() }
  return id
end

--- Sends a `user` line from the CLI (a replay, an interruption notice...).
function Cli:user(content, fields)
  if type(content) == "string" then content = jarray({ { type = "text", text = content } }) end
  return self:send(merge({ type = "user", message = { role = "user", content = content },
    parent_tool_use_id = null, session_id = self.session_id, uuid = M.uuid(),
    timestamp = timestamp() }, fields))
end

--- Sends the user line carrying a tool_result, as the CLI does after a
-- tool ran: `content` is a string or a list of blocks (an MCP result's
-- `content`); an error result carries string content and `is_error`.
function Cli:tool_result(tool_use_id, content, is_error, fields)
  local block = { tool_use_id = tool_use_id, type = "tool_result", content = content }
  local echo = content
  if is_error then
    block.is_error = true
    if type(content) ~= "string" then block.content = content_text(content) or "" end
    echo = "Error: " .. block.content
  end
  return self:user(jarray({ block }), merge({ tool_use_result = echo }, fields))
end

--- Sends a `stream_event` line (with `--include-partial-messages`).
function Cli:stream_event(event, fields)
  return self:send(merge({ type = "stream_event", event = event, session_id = self.session_id,
    parent_tool_use_id = null, uuid = M.uuid() }, fields))
end

--- Sends the `result` that ends a turn. Defaults are realistic and follow
-- the turn: `result` is the last assistant text, `num_turns` the API calls,
-- `usage` their tokens, `total_cost_usd` and `modelUsage` accumulate over
-- the process; `permission_denials` lists denied `can_use_tool` requests.
-- A `subtype` other than "success" gives an error result
-- (`is_error`, `errors`, `terminal_reason` "aborted_streaming").
function Cli:result(fields)
  fields = fields or {}
  local turn = self.turn
  local input, output, cost = 0, 0, 0
  for _, id in ipairs(turn.order) do
    local m = turn.messages[id]
    local price = PRICES[m.model] or PRICES[M.default_model]
    local c = m.input * price[1] + m.output * price[2]
    input, output, cost = input + m.input, output + m.output, cost + c
    local mu = self.cost.models[m.model]
    if not mu then
      mu = { inputTokens = 0, outputTokens = 0, cacheReadInputTokens = 0,
        cacheCreationInputTokens = 0, webSearchRequests = 0, costUSD = 0,
        contextWindow = 200000, maxOutputTokens = 32000 }
      self.cost.models[m.model] = mu
    end
    mu.inputTokens, mu.outputTokens = mu.inputTokens + m.input, mu.outputTokens + m.output
    mu.costUSD = mu.costUSD + c
  end
  self.cost.total = self.cost.total + cost
  local model_usage = jobject()
  for k, v in pairs(self.cost.models) do model_usage[k] = merge({}, v) end
  local elapsed = math.floor((core.now() - turn.started) * 1000 + 0.5)
  local subtype = fields.subtype or "success"
  local r = {
    type = "result", subtype = subtype, is_error = false, api_error_status = null,
    duration_ms = elapsed, duration_api_ms = math.max(0, elapsed - 5), ttft_ms = elapsed // 2,
    num_turns = math.max(1, #turn.order), result = turn.last_text or "",
    stop_reason = "end_turn", session_id = self.session_id, total_cost_usd = self.cost.total,
    usage = { input_tokens = input, cache_creation_input_tokens = 0,
      cache_read_input_tokens = 0, output_tokens = output,
      server_tool_use = { web_search_requests = 0, web_fetch_requests = 0 },
      service_tier = "standard",
      cache_creation = { ephemeral_1h_input_tokens = 0, ephemeral_5m_input_tokens = 0 },
      inference_geo = "", iterations = jarray(), speed = "standard" },
    modelUsage = model_usage, permission_denials = turn.permission_denials,
    terminal_reason = "completed", fast_mode_state = "off", uuid = M.uuid(),
  }
  if subtype ~= "success" then
    r.is_error, r.stop_reason, r.terminal_reason = true, null, "aborted_streaming"
    r.result, r.api_error_status = nil, nil
    r.errors = jarray({
      "[ede_diagnostic] result_type=user last_content_type=n/a stop_reason=null" })
  end
  local msg = self:send(merge(r, fields))
  self.turn = self:_new_turn()
  return msg
end

--- A whole plain turn after `expect_user`: `system_init()`,
-- `assistant(content)`, `result(result_fields)`. Returns the result.
function Cli:reply(content, result_fields)
  self:system_init()
  self:assistant(content)
  return self:result(result_fields)
end


---------------------------------------------------------------------------
-- The program

require("claude.testing.fake_cli_control").install(Cli, M)

--- Runs the fake: `script_path` and the CLI's argv. Never returns.
function M.main(script_path, ...)
  if type(script_path) ~= "string" then
    io.stderr:write("usage: fake_cli.lua SCRIPT.lua [cli arguments...]\n")
    os.exit(M.EXIT_SCRIPT)
  end
  io.stdout:setvbuf("full")
  local log = peer.open_log(os.getenv("CLAUDELUA_FAKE_LOG"), "fake_cli")
  local cli = M.new({ argv = { ... }, log = log, chunkname = "@" .. script_path })
  cli:_log({ event = "start", argv = jarray({ ... }), env = core.environ(), cwd = cli.cwd,
    pid = read_pid(), script = script_path, session_id = cli.session_id })
  peer.run(cli, script_path, "cli")
end

-- Required as a module (`require "claude.testing.fake_cli"`): the functions.
-- Run as a program: the fake.
if ... == "claude.testing.fake_cli" then return M end
M.main(...)
