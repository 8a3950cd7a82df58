--- The typed requests a tool makes of its client (MCP 2025-11-25), behind `ctx.sample`,
-- `ctx.elicit_url` and `ctx.elicit_complete` (claude.mcp.router's request context): the Lua
-- fields checked and turned into the protocol's shapes, the client's answer checked and
-- given back with typed fields beside the protocol's own.
--
--     local r = ctx.sample{ messages = "What is 2 + 2?", max_tokens = 100,
--                           tools = { add }, tool_choice = "auto" }
--     -- r.text, r.tool_uses = { {id =, name =, input =}, ... }, r.stop_reason, r.model
--     local a = ctx.elicit_url{ message = "Sign in", url = "https://example.com/auth" }
--     -- a.action = "accept" | "decline" | "cancel", a.id (the elicitationId)
-- @module claude.mcp.requests
local json = require "claude.json"
local errors = require "claude.errors"
local core = require "claude.core"

local M = {}

local type, pairs, ipairs, next, fmt = type, pairs, ipairs, next, string.format
local misuse, typename = errors.misuse, errors.typename
local jarray = json.array

local function bad(fname, field, f, ...) return errors.bad_field(field, fname, f, ...) end

local function want(fname, t, field, expected, optional)
  return errors.check_field(t[field], field, fname, expected, optional)
end

-- Has the client declared `capabilities[a][b]`? nil when its capabilities are not known.
local function declared(ctx, a, b)
  local caps = ctx.client_capabilities
  if type(caps) ~= "table" then return nil end
  local c = caps[a]
  return type(c) == "table" and c[b] ~= nil
end

local function unsupported(message)
  local err = errors.new("unsupported", message)
  return nil, err, err.kind
end

local function remote(method, message)
  local err = errors.new("remote", fmt("%s: %s", method, message))
  return nil, err, err.kind
end

---------------------------------------------------------------------------------------------
-- sampling/createMessage
---------------------------------------------------------------------------------------------

-- the Lua names of CreateMessageRequest's params, and the protocol's own (passed as they are)
local SAMPLE_FIELDS = { messages = "messages", max_tokens = "maxTokens", system = "systemPrompt",
  temperature = "temperature", stop_sequences = "stopSequences", metadata = "metadata",
  model_preferences = "modelPreferences", include_context = "includeContext",
  tools = "tools", tool_choice = "toolChoice" }
local WIRE_FIELDS = { maxTokens = true, systemPrompt = true, stopSequences = true,
  modelPreferences = true, includeContext = true, toolChoice = true, task = true,
  _meta = true }
local TOOL_CHOICE = { auto = true, required = true, none = true }
local ROLES = { user = true, assistant = true }

local function content_block(fname, field, c)
  if type(c) == "string" then return { type = "text", text = c } end
  if type(c) ~= "table" or type(c.type) ~= "string" then
    bad(fname, field, "a string or a content block {type = ...} expected, got %s", typename(c))
  end
  return c
end

local function message(fname, i, m)
  local field = fmt("messages[%d]", i)
  if type(m) == "string" then return { role = "user", content = { type = "text", text = m } } end
  if type(m) ~= "table" then bad(fname, field, "string or table expected, got %s", typename(m)) end
  if not ROLES[m.role] then
    bad(fname, field .. ".role", "'user' or 'assistant' expected, got %s",
      type(m.role) == "string" and fmt("'%s'", m.role) or typename(m.role))
  end
  local c = m.content
  if type(c) == "table" and c.type == nil and c[1] ~= nil then
    local list = jarray()
    for j, block in ipairs(c) do
      list[j] = content_block(fname, fmt("%s.content[%d]", field, j), block)
    end
    c = list
  else
    c = content_block(fname, field .. ".content", c)
  end
  return { role = m.role, content = c, _meta = m._meta }
end

-- a claude.Tool, or {name =, description =, input_schema = shorthand or JSON Schema}, or the
-- protocol's {name =, inputSchema =}
local function sampling_tool(fname, i, t)
  local field = fmt("tools[%d]", i)
  local mcp_tool = require "claude.mcp.tool"
  if mcp_tool.is_tool(t) then
    local l = t.listing
    return { name = l.name, title = l.title, description = l.description,
      inputSchema = l.inputSchema, outputSchema = l.outputSchema, annotations = l.annotations }
  end
  if type(t) ~= "table" then
    bad(fname, field, "a claude.Tool or a table expected, got %s", typename(t))
  end
  if type(t.name) ~= "string" or t.name == "" then
    bad(fname, field .. ".name", "string expected, got %s", typename(t.name))
  end
  local input = t.input_schema or t.inputSchema
  if input == nil then
    input = { type = "object", properties = json.object() }
  else
    local js, err = require("claude.schema").parse(input)
    if not js then bad(fname, field .. ".input_schema", "%s", err.message) end
    input = js
  end
  if t.description ~= nil and type(t.description) ~= "string" then
    bad(fname, field .. ".description", "string expected, got %s", typename(t.description))
  end
  return { name = t.name, title = t.title, description = t.description, inputSchema = input }
end

local function sample_params(p)
  local F = "sample"
  if type(p) ~= "table" then misuse("bad argument #1 to 'sample' (table expected, got %s)",
    typename(p)) end
  local out = {}
  for k, v in pairs(p) do
    local wire = SAMPLE_FIELDS[k]
    if wire then
      if wire ~= k and p[wire] ~= nil then bad(F, k, "given twice (as '%s' too)", wire) end
      out[wire] = v
    elseif WIRE_FIELDS[k] then
      out[k] = v
    else
      errors.unknown_field(k, SAMPLE_FIELDS, F)
    end
  end
  local msgs = out.messages
  if type(msgs) == "string" then msgs = { msgs } end
  if type(msgs) ~= "table" or (next(msgs) ~= nil and msgs[1] == nil) then
    bad(F, "messages", "a string or a list of messages expected, got %s", typename(msgs))
  end
  local list = jarray()
  for i, m in ipairs(msgs) do list[i] = message(F, i, m) end
  out.messages = list
  local max = out.maxTokens
  if math.type(max) ~= "integer" or max < 1 then
    bad(F, "max_tokens", "positive integer expected, got %s", math.type(max) or typename(max))
  end
  if out.systemPrompt ~= nil then want(F, out, "systemPrompt", "string") end
  if out.temperature ~= nil then want(F, out, "temperature", "number") end
  if out.tools ~= nil then
    local tools = want(F, out, "tools", "table")
    local wire = jarray()
    for i, t in ipairs(tools) do wire[i] = sampling_tool(F, i, t) end
    out.tools = wire
  end
  local choice = out.toolChoice
  if type(choice) == "string" then
    if not TOOL_CHOICE[choice] then
      bad(F, "tool_choice", "'auto', 'required' or 'none' expected, got '%s'", choice)
    end
    out.toolChoice = { mode = choice }
  elseif choice ~= nil and (type(choice) ~= "table" or not TOOL_CHOICE[choice.mode]) then
    bad(F, "tool_choice", "'auto', 'required' or 'none' expected, got %s", typename(choice))
  end
  if out.toolChoice and not out.tools then
    bad(F, "tool_choice", "given without tools")
  end
  return out
end

-- The answer, checked: `role`, `content` (a block or a list of blocks), `model`; and typed:
-- `blocks` (always a list), `text` (the text blocks, joined), `tool_uses`, `stop_reason`.
local function sample_result(r)
  local M_ = "sampling/createMessage"
  if type(r) ~= "table" then return remote(M_, "the client's answer is not an object") end
  local c = r.content
  if type(c) ~= "table" then return remote(M_, "the client's answer has no content") end
  local blocks = (c.type == nil and c[1] ~= nil) and c or { c }
  local text, uses = {}, {}
  for i, b in ipairs(blocks) do
    if type(b) ~= "table" or type(b.type) ~= "string" then
      return remote(M_, fmt("content block %d has no type", i))
    end
    if b.type == "text" and type(b.text) == "string" then text[#text + 1] = b.text end
    if b.type == "tool_use" then
      if type(b.id) ~= "string" or type(b.name) ~= "string" or type(b.input) ~= "table" then
        return remote(M_, fmt("content block %d: a tool_use needs id, name and input", i))
      end
      uses[#uses + 1] = { id = b.id, name = b.name, input = b.input }
    end
  end
  r.blocks, r.text, r.tool_uses = blocks, table.concat(text), uses
  r.stop_reason = type(r.stopReason) == "string" and r.stopReason or nil
  return r
end

--- `ctx.sample(params, timeout)`: a `sampling/createMessage` request, waiting for its answer.
-- @param ctx the request context
-- @tparam function send `(ctx, method, params, timeout) -> result | nil, err, kind`
-- @treturn function
function M.sample(ctx, send)
  return errors.public(function(params, timeout)
    local p = sample_params(params)
    if p.tools and declared(ctx, "sampling", "tools") == false then
      return unsupported("sampling with tools: the client did not declare sampling.tools")
    end
    local r, err, kind = send(ctx, "sampling/createMessage", p, timeout)
    if r == nil then return nil, err, kind end
    return sample_result(r)
  end)
end

---------------------------------------------------------------------------------------------
-- elicitation/create in URL mode, notifications/elicitation/complete
---------------------------------------------------------------------------------------------

local ELICIT_URL_FIELDS = { message = true, url = true, id = true }
local ACTIONS = { accept = true, decline = true, cancel = true }

--- `ctx.elicit_url{message =, url =, id =}`: ask the user to open `url` (out of band: the
-- answer says only whether they agreed); `id` (the `elicitationId`, legacy era only: the
-- modern one has none) is made when not given.
-- @param ctx
-- @tparam function send as for `sample`
-- @treturn function
function M.elicit_url(ctx, send)
  return errors.public(function(spec, timeout)
    local F = "elicit_url"
    if type(spec) ~= "table" then
      misuse("bad argument #1 to 'elicit_url' (table expected, got %s)", typename(spec))
    end
    errors.check_fields(spec, ELICIT_URL_FIELDS, F)
    local msg = want(F, spec, "message", "string")
    local url = want(F, spec, "url", "string")
    if not url:find("^[%a][%w%+%-%.]*://[^%s]+$") then
      bad(F, "url", "an absolute URL expected, got '%s'", url)
    end
    local id = want(F, spec, "id", "string", true)
      or (core.random_bytes(12):gsub(".", function(c) return fmt("%02x", c:byte()) end))
    if declared(ctx, "elicitation", "url") == false then
      return unsupported("URL-mode elicitation: the client did not declare elicitation.url")
    end
    -- the modern era dropped elicitationId and the completion notification it keyed
    local modern = ctx.era == "modern"
    local r, err, kind = send(ctx, "elicitation/create", { mode = "url", message = msg,
      url = url, elicitationId = not modern and id or nil }, timeout)
    if r == nil then return nil, err, kind end
    if type(r) ~= "table" or not ACTIONS[r.action] then
      return remote("elicitation/create", "the client's answer has no action")
    end
    r.id = not modern and id or nil
    return r
  end)
end

--- `ctx.elicit_complete(id)`: tell the client the out-of-band interaction of a URL-mode
-- elicitation is over (`notifications/elicitation/complete`); false when the transport
-- cannot notify, or in the modern era (which has no such notification).
-- @param ctx
-- @treturn function
function M.elicit_complete(ctx)
  return errors.public(function(id)
    if type(id) ~= "string" then
      misuse("bad argument #1 to 'elicit_complete' (string expected, got %s)", typename(id))
    end
    local notify = ctx._router._notify
    if not notify or ctx.era == "modern" then return false end
    notify(ctx.server, { jsonrpc = "2.0", method = "notifications/elicitation/complete",
      params = { elicitationId = id } }, ctx)
    return true
  end)
end

return M
