--- A scripted Anthropic Messages API on 127.0.0.1, in Lua on `claude.http.server`: the real
-- `claude` CLI talks to it instead of the real API (`ANTHROPIC_BASE_URL`), so a script runs
-- offline, with no key and no network. It is what `claudelua --demo` runs (claude.testing.demo).
--
--     local api <close> = require("claude.testing.messages_api").start()   -- the tool tour
--     local api <close> = messages_api.start { scenario = { turns = {
--       { content = { { type = "text", text = "Let me add." },
--                     { type = "tool_use", name = "mcp__calc__add", input = { a = 1, b = 2 } } } },
--       { content = { { type = "text", text = "1 + 2 = {{last_tool_result}}" } } },
--     } } }
--     for msg in claude.query("What is 1 + 2?", api:options { mcp_servers = ... }) do ... end
--
-- Without a scenario (or once its turns are used up) each answer is read from the request:
-- the model calls the MCP tools the CLI offers (`mcp__server__tool`) that it has not called
-- since the last prompt, one a turn: those the request's session would run or ask about
-- (claude.testing.tool_permission), of them those the prompt names when it names any, with
-- arguments from the tool's input schema and the prompt (claude.testing.tool_arguments);
-- then it answers with a text that reports what they returned. It counts no tokens: a
-- demo costs nothing.
-- The scenario's turns are those of the test suite's mock (docs/testing-with-the-real-cli.md):
-- `content` blocks (`text`, `tool_use`, `thinking`) with the templates `{{last_tool_result}}`,
-- `{{last_user_text}}`; `match` (a text the last prompt must contain), `status` and
-- `error_message` (an API error), `repeat`, `delay_ms`, `chunks` and `chunk_delay_ms` (a
-- stream in pieces), `stop_reason`, `usage`, `headers`.
-- Streams speak the SSE form the CLI reads (message_start, content_block_start/delta/stop,
-- message_delta, message_stop); `count_tokens` is answered too. See docs/demo.md.
-- @module claude.testing.messages_api
local json = require "claude.json"
local async = require "claude.async"
local errors = require "claude.errors"
local http = require "claude.http.server"
local tool_arguments = require "claude.testing.tool_arguments"
local tool_permission = require "claude.testing.tool_permission"

local M = {}

local Api = {}
Api.__index = Api

local B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

local function rid(prefix, n)
  local t = {}
  for i = 1, n or 22 do
    local k = math.random(62)
    t[i] = B62:sub(k, k)
  end
  return prefix .. table.concat(t)
end

-- About four characters a token, never zero (what count_tokens answers).
local function tokens(s) return math.max(1, math.ceil(#s / 4)) end

-- The CLI wraps context it adds in <system-reminder>...</system-reminder>: the templates and
-- `match` see the text without them.
local function strip_reminders(s)
  if type(s) ~= "string" then return "" end
  if not s:find("<system-reminder>", 1, true) then return s end
  s = s:gsub("<system%-reminder>.-</system%-reminder>", "")
  return (s:gsub("^%s+", ""):gsub("%s+$", ""))
end

local function result_text(block)
  local c, text = block.content, ""
  if type(c) == "string" then
    text = strip_reminders(c)
  elseif type(c) == "table" then
    local parts = {}
    for _, p in ipairs(c) do
      if type(p) == "table" and p.type == "text" then
        local t = strip_reminders(p.text)
        if t ~= "" then parts[#parts + 1] = t end
      end
    end
    text = table.concat(parts, "\n")
  end
  text = text:gsub("\n+$", "")
  return (block.is_error and "ERROR: " or "") .. text
end

-- The index of the last user message with text of its own (a prompt, not tool results),
-- and that text.
local function last_prompt(messages)
  for i = #messages, 1, -1 do
    local m = messages[i]
    if type(m) == "table" and m.role == "user" then
      if type(m.content) == "string" then
        local t = strip_reminders(m.content)
        if t ~= "" then return i, t end
      elseif type(m.content) == "table" then
        for j = #m.content, 1, -1 do
          local b = m.content[j]
          if type(b) == "table" and b.type == "text" then
            local t = strip_reminders(b.text)
            if t ~= "" then return i, t end
          end
        end
      end
    end
  end
  return 0, ""
end

-- Tool uses (by id: name, input) and results (in order) after message `from`.
local function calls_since(messages, from)
  local uses, results, called = {}, {}, {}
  for i = from + 1, #messages do
    local m = messages[i]
    if type(m) == "table" and type(m.content) == "table" then
      for _, b in ipairs(m.content) do
        if type(b) == "table" and b.type == "tool_use" and m.role == "assistant" then
          uses[b.id] = b
          called[b.name] = true
        elseif type(b) == "table" and b.type == "tool_result" then
          results[#results + 1] = b
        end
      end
    end
  end
  return uses, results, called
end

local function last_tool_result(messages)
  local _, results = calls_since(messages, 0)
  return results[#results] and result_text(results[#results]) or ""
end

local function apply_templates(v, ctx)
  if type(v) == "string" then
    return (v:gsub("{{([%w_]+)}}", function(name)
      if name == "last_tool_result" then return ctx.last_tool_result end
      if name == "last_user_text" then return ctx.last_user_text end
      if name == "user_text_length" then return tostring(utf8.len(ctx.last_user_text) or 0) end
    end))
  elseif type(v) == "table" then
    local out = {}
    for k, x in pairs(v) do out[k] = apply_templates(x, ctx) end
    return setmetatable(out, getmetatable(v))
  end
  return v
end

--- Arguments for a tool from its input schema and a prompt (claude.testing.tool_arguments).
-- `skip`: numbers of the prompt taken by calls before.
function M.arguments(schema, text, skip)
  return tool_arguments.arguments(schema, text, { skip = skip })
end

-- ------------------------------------------------------------ the tool tour

-- `mcp__calc__add` -> `add`
local function short(name)
  return name:match("^mcp__.-__(.+)$") or name
end

local function format_args(input)
  local keys, parts = {}, {}
  for k in pairs(input or {}) do keys[#keys + 1] = k end
  table.sort(keys)
  for _, k in ipairs(keys) do
    local v = input[k]
    parts[#parts + 1] = k .. "=" .. (type(v) == "table" and json.encode(v) or tostring(v))
  end
  return table.concat(parts, ", ")
end

-- Whether the prompt names the tool (`echo`, `get-sum` or "get sum"), as a word.
local function mentions(prompt, short_name)
  local parts = {}
  for w in short_name:gsub("(%l)(%u)", "%1 %2"):lower():gmatch("[^%s_%-%.]+") do
    parts[#parts + 1] = w:gsub("%p", "%%%0")
  end
  if #parts == 0 then return false end
  return prompt:lower():find("%f[%w]" .. table.concat(parts, "[%s_%-%.]*") .. "%f[^%w]") ~= nil
end

-- The options of the session this process runs whose CLI sent the request (nil: not one of
-- this process's). Its init message, written before the request, may still be on its way.
local function session_options(session_id)
  local sessions = package.loaded["claude.session"]
  if type(session_id) ~= "string" or type(sessions) ~= "table" then return nil end
  for _ = 1, 50 do
    local s, unnamed = sessions.find(session_id)
    if s then return s.options end
    if not unnamed then return nil end
    async.sleep(0.01)
  end
end

-- The MCP tools the model would call for the prompt: those the session would run or ask
-- about; of them, those the prompt names when it names any.
local function choose_tools(body, prompt, session)
  local offered, named = {}, {}
  for _, tool in ipairs(type(body.tools) == "table" and body.tools or {}) do
    local name = type(tool) == "table" and tool.name
    if type(name) == "string" and name:match("^mcp__")
      and tool_permission.decide(session, name) ~= "deny" then
      offered[#offered + 1] = tool
      if mentions(prompt, short(name)) then named[#named + 1] = tool end
    end
  end
  return #named > 0 and named or offered
end

-- The default answer to a request: the next MCP tool not called since the prompt, or the
-- report of what they returned.
local function tour(body, session)
  local messages = type(body.messages) == "table" and body.messages or {}
  local from, prompt = last_prompt(messages)
  local uses, results, called = calls_since(messages, from)
  local used = 0 -- the prompt's numbers the calls so far took
  for _, use in pairs(uses) do
    for _, v in pairs(type(use.input) == "table" and use.input or {}) do
      if type(v) == "number" then used = used + 1 end
    end
  end
  for _, tool in ipairs(choose_tools(body, prompt, session)) do
    local name = tool.name
    if not called[name] then
      return { content = {
        { type = "text", text = "(demo) Calling " .. short(name) .. "." },
        { type = "tool_use", name = name, input = tool_arguments.arguments(tool.input_schema,
          prompt, { skip = used, tool = short(name) }) },
      } }
    end
  end
  local lines = {}
  for _, r in ipairs(results) do
    local use = uses[r.tool_use_id]
    local call = use and (short(use.name) .. "(" .. format_args(use.input) .. ")") or "a tool"
    lines[#lines + 1] = call .. (r.is_error and " failed: " or " returned: ")
      .. result_text(r):gsub("^ERROR: ", "")
  end
  local text
  if #lines > 0 then
    text = "(demo) " .. table.concat(lines, "\n(demo) ")
  else
    text = "(demo) A scripted answer to: " .. prompt
  end
  return { content = { { type = "text", text = text } } }
end

-- ------------------------------------------------------------ answering

local ERROR_TYPES = {
  [400] = "invalid_request_error", [401] = "authentication_error", [403] = "permission_error",
  [404] = "not_found_error", [413] = "request_too_large", [429] = "rate_limit_error",
  [500] = "api_error", [529] = "overloaded_error",
}

local JSON = { ["content-type"] = "application/json" }

local function send_json(res, status, obj, headers)
  local h = { ["content-type"] = "application/json" }
  for k, v in pairs(headers or {}) do h[k] = v end
  res:respond(status, h, json.encode(obj))
end

local function api_error(res, status, message, headers)
  local kind = ERROR_TYPES[status] or (status >= 500 and "api_error" or "invalid_request_error")
  local id = rid("req_011", 21)
  local h = { ["request-id"] = id }
  for k, v in pairs(headers or {}) do h[k] = v end
  send_json(res, status, { type = "error", error = { type = kind, message = message or kind },
    request_id = id }, h)
end

local function build_blocks(turn, ctx)
  local out = {}
  for i, b in ipairs(turn.content or {}) do
    if b.type == "tool_use" then
      out[i] = { type = "tool_use", id = b.id or rid("toolu_01"), name = b.name,
        input = apply_templates(b.input or json.object {}, ctx) }
    elseif b.type == "thinking" then
      out[i] = { type = "thinking", thinking = apply_templates(b.thinking or "", ctx),
        signature = b.signature or rid("sig_", 40) }
    else
      out[i] = { type = "text", text = apply_templates(b.text or "", ctx) }
    end
  end
  return out
end

local function sse(event, data)
  return "event: " .. event .. "\ndata: " .. json.encode(data) .. "\n\n"
end

-- `s` in `n` nearly equal pieces (by character), at least one.
local function split(s, n)
  local chars = {}
  for _, c in utf8.codes(s) do chars[#chars + 1] = utf8.char(c) end
  n = math.max(1, math.min(math.tointeger(n) or 1, #chars))
  local size, out = math.ceil(#chars / n), {}
  for i = 1, n do
    local piece = table.concat(chars, "", (i - 1) * size + 1, math.min(#chars, i * size))
    if piece ~= "" or i == 1 then out[#out + 1] = piece end
  end
  return out
end

-- Sends a stream: at once, or with `chunks` deltas a block `chunk_delay_ms` apart.
local function stream(res, turn, blocks, usage, model, headers)
  local h = { ["content-type"] = "text/event-stream; charset=utf-8", ["cache-control"] = "no-cache",
    ["anthropic-organization-id"] = "00000000-0000-0000-0000-000000000000" }
  for k, v in pairs(headers) do h[k] = v end
  res:start(200, h)
  local chunks, delay = turn.chunks or 1, (turn.chunk_delay_ms or 0) / 1000
  local out = {}
  local function emit(event, data, flush)
    out[#out + 1] = sse(event, data)
    if flush and delay > 0 then
      local ok = res:write(table.concat(out))
      out = {}
      if ok == nil then return false end
      async.sleep(delay)
    end
    return true
  end
  local start_usage = {}
  for k, v in pairs(usage) do start_usage[k] = v end
  emit("message_start", { type = "message_start", message = {
    id = rid("msg_01"), type = "message", role = "assistant", model = model,
    content = json.array {}, stop_reason = json.null, stop_sequence = json.null,
    usage = start_usage } })
  for i, b in ipairs(blocks) do
    local index = i - 1
    local start, pieces, delta
    if b.type == "tool_use" then
      start = { type = "tool_use", id = b.id, name = b.name, input = json.object {} }
      pieces = split(json.encode(b.input), chunks)
      delta = function(p) return { type = "input_json_delta", partial_json = p } end
    elseif b.type == "thinking" then
      start = { type = "thinking", thinking = "", signature = "" }
      pieces = split(b.thinking, chunks)
      delta = function(p) return { type = "thinking_delta", thinking = p } end
    else
      start = { type = "text", text = "" }
      pieces = split(b.text, chunks)
      delta = function(p) return { type = "text_delta", text = p } end
    end
    emit("content_block_start", { type = "content_block_start", index = index,
      content_block = start })
    if i == 1 then emit("ping", { type = "ping" }) end
    for _, p in ipairs(pieces) do
      if not emit("content_block_delta", { type = "content_block_delta", index = index,
        delta = delta(p) }, true) then return end
    end
    if b.type == "thinking" then
      emit("content_block_delta", { type = "content_block_delta", index = index,
        delta = { type = "signature_delta", signature = b.signature } })
    end
    emit("content_block_stop", { type = "content_block_stop", index = index })
  end
  emit("message_delta", { type = "message_delta",
    delta = { stop_reason = turn.stop_reason, stop_sequence = json.null }, usage = usage })
  emit("message_stop", { type = "message_stop" })
  res:finish(table.concat(out))
end

function Api:_next_turn(prompt)
  local turns = self.scenario and self.scenario.turns
  if not turns or self.turn > #turns then return nil end
  local index = self.turn
  local turn = turns[index]
  self.served = self.served + 1
  if self.served >= math.max(1, math.tointeger(turn["repeat"]) or 1) then
    self.turn, self.served = self.turn + 1, 0
  end
  if type(turn.match) == "string" and not prompt:find(turn.match, 1, true) then
    return { content = { { type = "text", text = string.format(
      "MOCK MISMATCH: expected %q in the last user text, got %q (turn %d)",
      turn.match, prompt:sub(1, 500), index - 1) } } }, index
  end
  return turn, index
end

function Api:_messages(req, res, body)
  local messages = type(body.messages) == "table" and body.messages or {}
  local _, prompt = last_prompt(messages)
  local scripted, index = self:_next_turn(prompt)
  local turn = {}
  for k, v in pairs(scripted
    or tour(body, session_options(req.headers["x-claude-code-session-id"]))) do
    turn[k] = v
  end
  local rec = { kind = "request", path = req.path, turn_index = index and index - 1,
    model = body.model, stream = body.stream == true, last_user_text = prompt,
    tools = {}, tool_results = {} }
  for _, t in ipairs(type(body.tools) == "table" and body.tools or {}) do
    rec.tools[#rec.tools + 1] = type(t) == "table" and t.name or nil
  end
  local last = messages[#messages]
  if type(last) == "table" and last.role == "user" and type(last.content) == "table" then
    for _, b in ipairs(last.content) do
      if type(b) == "table" and b.type == "tool_result" then
        rec.tool_results[#rec.tool_results + 1] = { tool_use_id = b.tool_use_id,
          is_error = b.is_error == true, text = result_text(b) }
      end
    end
  end
  self:_log(rec)
  if turn.delay_ms then async.sleep(turn.delay_ms / 1000) end
  if turn.status and turn.status ~= 200 then
    return api_error(res, turn.status, turn.error_message, turn.headers)
  end
  local ctx = { last_user_text = prompt, last_tool_result = last_tool_result(messages) }
  local blocks = build_blocks(turn, ctx)
  if not turn.stop_reason then
    turn.stop_reason = "end_turn"
    for _, b in ipairs(blocks) do
      if b.type == "tool_use" then turn.stop_reason = "tool_use" end
    end
  end
  -- no tokens: the CLI prices tokens at list prices it alone knows, and a demo costs nothing
  -- (total_cost_usd, modelUsage, /cost and budgets all say 0); a turn's `usage` may set some
  local usage = { input_tokens = 0, cache_creation_input_tokens = 0, cache_read_input_tokens = 0,
    output_tokens = 0 }
  for k, v in pairs(turn.usage or {}) do usage[k] = v end
  local model = body.model or "claude-sonnet-4-5"
  local headers = { ["request-id"] = rid("req_011", 21) }
  for k, v in pairs(turn.headers or {}) do headers[k] = v end
  if body.stream then return stream(res, turn, blocks, usage, model, headers) end
  send_json(res, 200, { id = rid("msg_01"), type = "message", role = "assistant", model = model,
    content = blocks, stop_reason = turn.stop_reason, stop_sequence = json.null, usage = usage },
    headers)
end

function Api:_log(rec)
  self.records[#self.records + 1] = rec
  if self.on_request then self.on_request(rec) end
end

function Api:_handle(req, res)
  -- HTTPS_PROXY points here: a proxied request or a CONNECT means the CLI tried to reach a
  -- real host. Refused and logged.
  if req.method == "CONNECT" or req.target:match("^%a+://") then
    self:_log { kind = "tripwire", method = req.method, url = req.target }
    return res:respond(403, JSON, '{"type":"error","error":{"type":"permission_error",'
      .. '"message":"demo: no network"}}')
  end
  local body = json.object {}
  if req.body ~= "" then
    local ok, decoded = pcall(json.decode, req.body)
    if not ok or type(decoded) ~= "table" then
      return api_error(res, 400, "demo: invalid JSON body")
    end
    body = decoded
  end
  if req.method == "POST" and req.path == "/v1/messages" then
    return self:_messages(req, res, body)
  elseif req.method == "POST" and req.path == "/v1/messages/count_tokens" then
    local countable = {}
    for k, v in pairs(body) do if k ~= "metadata" then countable[k] = v end end
    self:_log { kind = "count_tokens", path = req.path }
    return send_json(res, 200, { input_tokens = tokens(json.encode(countable)) })
  end
  self:_log { kind = "not_found", method = req.method, path = req.target }
  send_json(res, 404, { type = "error", error = { type = "not_found_error",
    message = "demo: no route for " .. req.method .. " " .. req.path } })
end

local START_FIELDS = { scenario = "table", host = "string", port = "number",
  on_request = "function", ref = "boolean" }

--- Starts the scripted API.
-- @tparam[opt] table opts `{ scenario = { turns = {...} } (default: the tool tour),
--   host = "127.0.0.1", port = 0 (a free one), on_request = function(record) (each request
--   as it is logged), ref = false (true: the server keeps the claudelua host running) }`
-- @return the API (`port`, `url`, `:env()`, `:options(extra)`, `:requests()`,
--   `:tool_results()`, `:close()`), or nil, an error, its kind
function M.start(opts)
  opts = opts or {}
  errors.check_fields(opts, START_FIELDS, "start")
  for k, want in pairs(START_FIELDS) do errors.check_field(opts[k], k, "start", want, true) end
  if opts.scenario ~= nil and type(opts.scenario.turns) ~= "table" then
    errors.misuse("bad field 'scenario' to 'start' ({ turns = {...} } expected)")
  end
  local self = setmetatable({ scenario = opts.scenario, turn = 1, served = 0, records = {},
    on_request = opts.on_request }, Api)
  local srv, err, kind = http.listen { host = opts.host or "127.0.0.1", port = opts.port or 0,
    max_body = 64 * 1024 * 1024, ref = opts.ref == true,
    on_request = function(req, res) return self:_handle(req, res) end }
  if not srv then return nil, err, kind end
  self.server = srv
  self.port = srv:port()
  self.url = "http://" .. (opts.host or "127.0.0.1") .. ":" .. self.port
  return self
end

--- The environment that points the CLI at this API: the base URL, a dummy key, no
-- non-essential traffic, no retries, and a proxy that refuses every other host.
function Api:env()
  return {
    ANTHROPIC_BASE_URL = self.url, ANTHROPIC_API_KEY = "demo-key",
    ANTHROPIC_AUTH_TOKEN = false, CLAUDE_CODE_OAUTH_TOKEN = false,
    CLAUDE_CODE_USE_BEDROCK = false, CLAUDE_CODE_USE_VERTEX = false,
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = "1", ENABLE_TOOL_SEARCH = "false",
    CLAUDE_CODE_MAX_RETRIES = "0", HTTPS_PROXY = self.url, HTTP_PROXY = self.url,
    NO_PROXY = "127.0.0.1,localhost",
  }
end

--- Session options for the CLI against this API, merged with `extra` (its `env` merged too).
function Api:options(extra)
  local opts = { env = self:env() }
  for k, v in pairs(extra or {}) do
    if k == "env" then
      for ek, ev in pairs(v) do opts.env[ek] = ev end
    else
      opts[k] = v
    end
  end
  return opts
end

--- The requests served, as records (`last_user_text`, `tools`, `tool_results`, ...).
function Api:requests()
  local out = {}
  for _, r in ipairs(self.records) do
    if r.kind == "request" then out[#out + 1] = r end
  end
  return out
end

--- The tool results the model received, in order.
function Api:tool_results()
  local out = {}
  for _, r in ipairs(self:requests()) do
    for _, t in ipairs(r.tool_results) do out[#out + 1] = t end
  end
  return out
end

--- Replaces the scenario (its turns start again from the first).
function Api:script(scenario)
  self.scenario, self.turn, self.served = scenario, 1, 0
end

--- Stops the server.
function Api:close()
  if self.server then
    self.server:close()
    self.server = nil
  end
end
Api.__close = Api.close

return M
