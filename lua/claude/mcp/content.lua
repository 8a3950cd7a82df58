--- MCP content values and the conversion of tool results.
--
-- `text`, `image`, `audio`, `resource` and `resource_link` build content blocks that a tool
-- may return (alone or as a list). `result` turns whatever a tool's `execute` returned into an
-- MCP `CallToolResult`; `read_result` and `prompt_result` do the same for resources and
-- prompts.
-- Misuse of the constructors raises at the caller's line (`claude.errors`).
-- @module claude.mcp.content
local core = require "claude.core"
local json = require "claude.json"
local schema = require "claude.schema"
local errors = require "claude.errors"
local wire = require "claude.mcp.wire"

local M = {}

-- Is `e` what a tool raised to ask its client (claude.mcp.input)? That module is loaded by
-- the transports that can ask (the modern era's); without it, nothing can have been raised.
local loaded = package.loaded
local function is_unwind(e)
  local m = loaded["claude.mcp.input"]
  return m ~= nil and m.is_unwind(e)
end

local jarray, jobject, null = json.array, json.object, json.null
local number_text = core.number_text
local type, tostring, fmt = type, tostring, string.format
local kind = schema.kind

-- Content values built here, so that a returned list of them is told from plain data.
local built = setmetatable({}, { __mode = "k" })

local function mark(t)
  built[t] = true
  return t
end

--- Is `v` a content value built by this module?
-- @param v
-- @treturn boolean
function M.is_content(v)
  return built[v] == true
end

--- The type of `v` for messages: its metatable's `__name` (claude.Server,
-- ...) or its Lua type.
-- @function typename
local typename = errors.typename
M.typename = typename

local misuse, public, fail = errors.misuse, errors.public, errors.fail

local function argerror(n, fname, msg)
  misuse("bad argument #%d to '%s' (%s)", n, fname, msg)
end

local function fielderror(field, fname, msg)
  misuse("bad field '%s' to '%s' (%s)", field, fname, msg)
end

---------------------------------------------------------------------------------------------
-- base64 and media types
---------------------------------------------------------------------------------------------

--- Base64-encode a string of bytes (standard alphabet, padded; in C).
-- @function base64
-- @tparam string s
-- @treturn string
M.base64 = core.base64_encode

local SNIFF = {
  { "^\137PNG\r\n\26\n", "image/png" }, { "^\255\216\255", "image/jpeg" },
  { "^GIF8[79]a", "image/gif" }, { "^RIFF....WEBP", "image/webp" },
  { "^RIFF....WAVE", "audio/wav" }, { "^ID3", "audio/mpeg" }, { "^\255[\242\243\250\251]",
  "audio/mpeg" }, { "^OggS", "audio/ogg" }, { "^fLaC", "audio/flac" },
}

--- Guess a media type from the first bytes of `data` (PNG, JPEG, GIF, WebP, WAV, MP3, Ogg,
-- FLAC).
-- @tparam string data raw bytes
-- @treturn string|nil
function M.sniff(data)
  for _, s in ipairs(SNIFF) do
    if data:find(s[1]) then return s[2] end
  end
  return nil
end

---------------------------------------------------------------------------------------------
-- Content constructors
---------------------------------------------------------------------------------------------

--- A text block.
-- @tparam string|number s
-- @treturn table `{type = "text", text = s}`
-- @function text
M.text = public(function(s)
  if type(s) == "number" then s = M.format_number(s) end
  if type(s) ~= "string" then argerror(1, "text", "string expected, got " .. typename(s)) end
  return mark { type = "text", text = s }
end)

-- image/audio: (raw_bytes [, mime_type]) or { data = base64 | bytes = raw, mime_type = }
local function media(kind_name, prefix, v, mime)
  local data
  if type(v) == "string" then
    data, mime = M.base64(v), mime or M.sniff(v)
  elseif type(v) == "table" then
    if mime ~= nil then argerror(2, kind_name, "no second argument with a table") end
    mime = v.mime_type or v.mimeType
    if v.data ~= nil then
      if type(v.data) ~= "string" then
        fielderror("data", kind_name, "base64 string expected, got " .. typename(v.data))
      end
      data = v.data
    elseif type(v.bytes) == "string" then
      data, mime = M.base64(v.bytes), mime or M.sniff(v.bytes)
    else
      fielderror("bytes", kind_name, "string expected, got " .. typename(v.bytes))
    end
  else
    argerror(1, kind_name, "string or table expected, got " .. typename(v))
  end
  if type(mime) ~= "string" then
    argerror(2, kind_name, "mime type expected (it could not be told from the data)")
  end
  if mime:sub(1, #prefix) ~= prefix then
    argerror(2, kind_name, fmt("%s mime type expected, got '%s'", prefix, mime))
  end
  local block = { type = kind_name, data = data, mimeType = mime }
  if type(v) == "table" and v.annotations ~= nil then block.annotations = v.annotations end
  return mark(block)
end

--- An image block. `image(bytes [, mime_type])` base64-encodes raw bytes (the type is sniffed
-- from PNG/JPEG/GIF/WebP data when omitted); `image{ data = base64, mime_type = }` takes
-- data already in base64; `image{ bytes = raw, mime_type = }` encodes it.
-- @tparam string|table data_or_table
-- @tparam[opt] string mime_type
-- @treturn table `{type = "image", data = base64, mimeType = mime_type}`
-- @function image
M.image = public(function(data_or_table, mime_type)
  return media("image", "image/", data_or_table, mime_type)
end)

--- An audio block; the same forms as `image` (WAV, MP3, Ogg and FLAC are sniffed).
-- @tparam string|table data_or_table
-- @tparam[opt] string mime_type
-- @treturn table `{type = "audio", data = base64, mimeType = mime_type}`
-- @function audio
M.audio = public(function(data_or_table, mime_type)
  return media("audio", "audio/", data_or_table, mime_type)
end)

-- { uri =, text = | blob = base64 | bytes = raw, mime_type = } -> MCP resource contents
local function contents(t, fname, uri)
  uri = t.uri or uri
  if type(uri) ~= "string" then
    fielderror("uri", fname, "string expected, got " .. typename(uri))
  end
  local out = { uri = uri }
  local mime = t.mime_type or t.mimeType
  if mime ~= nil and type(mime) ~= "string" then
    fielderror("mime_type", fname, "string expected, got " .. typename(mime))
  end
  out.mimeType = mime
  if type(t.text) == "string" then
    out.text = t.text
  elseif type(t.blob) == "string" then
    out.blob = t.blob
  elseif type(t.bytes) == "string" then
    out.blob = M.base64(t.bytes)
  else
    fielderror("text", fname, "one of text, blob (base64) or bytes (raw) expected")
  end
  return out
end

--- An embedded resource block.
-- @tparam table t `{uri =, text = | blob = base64 | bytes = raw, mime_type =, annotations =}`
-- @treturn table `{type = "resource", resource = {uri, mimeType, text | blob}}`
-- @function resource
M.resource = public(function(t)
  if type(t) ~= "table" then argerror(1, "resource", "table expected, got " .. typename(t)) end
  local block = { type = "resource", resource = contents(t, "resource") }
  block.annotations = t.annotations
  return mark(block)
end)

--- A link to a resource.
-- @tparam table t `{uri =, name =, title =, description =, mime_type =, size =}`
-- @treturn table `{type = "resource_link", uri, name, ...}`
-- @function resource_link
M.resource_link = public(function(t)
  if type(t) ~= "table" then argerror(1, "resource_link", "table expected, got " .. typename(t)) end
  for _, f in ipairs { "uri", "name" } do
    if type(t[f]) ~= "string" then
      fielderror(f, "resource_link", "string expected, got " .. typename(t[f]))
    end
  end
  return mark {
    type = "resource_link", uri = t.uri, name = t.name, title = t.title,
    description = t.description, mimeType = t.mime_type or t.mimeType, size = t.size,
    annotations = t.annotations,
  }
end)

---------------------------------------------------------------------------------------------
-- Results
---------------------------------------------------------------------------------------------

--- Format a number as text: integers (and integral floats) without `.0`, other floats in
-- the shortest form that reads back exactly (in C: `tostring` would go through `snprintf`
-- for the integer a tool like `add` returns).
-- @tparam number n
-- @treturn string
-- @function format_number
M.format_number = core.number_text

--- The text of an error value for the model: a string loses its `file:line: ` prefix; a table
-- gives its `message` field unless it has a `__tostring`.
-- @param e an error value
-- @treturn string
local function message(e)
  if type(e) == "string" then return (e:gsub("^[^\n:]*:%d+: ", "", 1)) end
  if type(e) == "table" and type(e.message) == "string" then
    local mt = getmetatable(e)
    if not (mt and mt.__tostring) then return e.message end
  end
  return tostring(e)
end
M.message = message

--- An `isError` result carrying `msg`.
-- @tparam string msg
-- @treturn table `{content = [{type = "text", text = msg}], isError = true}`
function M.error(msg)
  return { content = jarray { { type = "text", text = tostring(msg) } }, isError = true }
end

local text_result = wire.text_result

--- A `CallToolResult` with one text block (`claude.mcp.wire`'s).
-- @tparam string s
-- @treturn table
-- @function text_result
M.text_result = text_result

local function content_list(t)
  if built[t] then return jarray { t } end
  local n = #t
  if n == 0 or not built[t[1]] then return nil end
  local out, count = jarray(), 0
  for i = 1, n do
    if not built[t[i]] then return nil end
    out[i] = t[i]
  end
  for _ in next, t do count = count + 1 end
  if count ~= n then return nil end
  return out
end

-- CallToolResults made elsewhere (the answer of a server we proxy), sent as they are.
local finished = setmetatable({}, { __mode = "k" })

--- Marks `r`, a complete `CallToolResult`, `ReadResourceResult` or `GetPromptResult` (from
-- another MCP server, say), to be sent as it is when a tool, a read or a prompt returns it.
-- @tparam table r
-- @treturn table r
function M.finished_result(r)
  finished[r] = true
  return r
end

local function structured(t)
  local ok, text = pcall(json.encode, t)
  if not ok then return M.error("result could not be encoded as JSON: " .. message(text)) end
  local r = text_result(text)
  local k = kind(t)
  if k == "object" then r.structuredContent = t
  elseif k == "empty" then r.structuredContent = jobject() end
  return r
end

--- Turn what a tool's `execute` returned into an MCP `CallToolResult`.
-- `ok` is the first result of `pcall(execute, ...)`: when false, the next value is the error.
-- A string becomes text; a number or boolean becomes text (`42`, not `42.0`); a content value
-- or a list of them is sent as is; any other table becomes JSON text plus `structuredContent`
-- (arrays: text only); `nil, message` and errors become `isError` results. With an
-- `output_schema`, the result must be a table matching it. A tool that unwound to ask the
-- client (`claude.mcp.input`) gives back what it raised, and so does one that raised an error
-- of kind `rpc` with an integer `code` (the call is answered with that JSON-RPC error).
-- @tparam[opt] table tool a tool object (for `validate_output`), or nil
-- @tparam boolean ok
-- @param ... the values returned, or the error raised
-- @treturn table CallToolResult
function M.result(tool, ok, ...)
  local r, e = ...
  if not ok then
    -- the tool asks the client (modern era): the transport answers input_required
    if is_unwind(r) then return r end
    -- an error of kind rpc with an integer code: the call answers with that JSON-RPC error
    if errors.is(r, "rpc") and math.type(r.code) == "integer" then return r end
    return M.error(message(r))
  end
  if r == nil then
    if e ~= nil then return M.error(type(e) == "string" and e or message(e)) end
    return { content = jarray() }
  end
  local validate = tool and tool.validate_output
  if validate then
    if type(r) ~= "table" or r == null or content_list(r) then
      return M.error("Output validation error: the tool has an output schema but returned "
        .. (type(r) == "table" and "content" or "a " .. type(r)))
    end
    local good, why = validate(r)
    if not good then return M.error("Output validation error: " .. why.message) end
    return structured(r)
  end
  local tr = type(r)
  if tr == "string" then return text_result(r) end
  if tr == "number" then return text_result(M.format_number(r)) end
  if tr == "boolean" then return text_result(tostring(r)) end
  if r == null then return text_result("null") end
  if tr == "table" then
    if finished[r] then return r end
    local list = content_list(r)
    if list then return { content = list } end
    return structured(r)
  end
  local mt = getmetatable(r)
  if mt and mt.__tostring then return text_result(tostring(r)) end
  return M.error(fmt("the tool returned a %s, which is not a valid result", typename(r)))
end

--- Like `result`, but a result that is one text block (the tool returned a string or a
-- number) comes back as that text: for callers that write the JSON themselves.
-- @return table or string
function M.result_text(tool, ok, r, ...)
  if ok and not tool.validate_output then
    local tr = type(r)
    if tr == "string" then return r end
    if tr == "number" then return number_text(r) end
  end
  return M.result(tool, ok, r, ...)
end

-- One item returned by a resource's read(): -> contents table
local function read_item(v, res, uri)
  if type(v) == "string" then return { uri = uri, mimeType = res.mime_type, text = v } end
  if built[v] and v.type == "resource" then return v.resource end
  if type(v) == "table" then
    local t = {
      uri = v.uri or uri, mime_type = v.mime_type or v.mimeType or res.mime_type,
      text = v.text, blob = v.blob, bytes = v.bytes,
    }
    local ok, c = pcall(contents, t, "read")
    if ok then return c end
    return fail("result", message(c))
  end
  return fail("result", "read() returned a " .. typename(v))
end

--- Turn what a resource's `read` returned into an MCP `ReadResourceResult`.
-- `read` may return a string (text), a table `{text = | blob = | bytes =, mime_type =, uri =}`,
-- a `content.resource` value, or a list of these; `nil, message` and errors are failures.
-- @tparam table res the resource or resource template object
-- @tparam string uri the URI that was read
-- @tparam boolean ok
-- @param ... the values returned, or the error raised
-- @treturn[1] table `{contents = [...]}`
-- @return[2] nil, a `result` error (its message is for a JSON-RPC error), `"result"`
function M.read_result(res, uri, ok, ...)
  local r, e = ...
  if not ok then return fail("result", message(r)) end
  if r == nil then
    return fail("result", e ~= nil and message(e) or "resource not found: " .. uri)
  end
  if finished[r] then return r end -- a remote's answer (claude.mcp.mount)
  local items = (type(r) == "table" and r[1] ~= nil) and r or { r }
  local out = jarray()
  for i = 1, #items do
    local c, err = read_item(items[i], res, uri)
    if not c then return nil, err, "result" end
    out[i] = c
  end
  return { contents = out }
end

local function prompt_content(c)
  if type(c) == "string" then return { type = "text", text = c } end
  if built[c] then return c end
  if type(c) == "table" and type(c.type) == "string" then return c end
  return nil
end

--- Turn what a prompt's `get` returned into an MCP `GetPromptResult`.
-- `get` may return a string (one user message), a content value, a list of messages
-- (`{role = "user" | "assistant", content = string | content}` or plain strings), or a table
-- `{description =, messages = {...}}`; `nil, message` and errors are failures.
-- @tparam table prompt the prompt object
-- @tparam boolean ok
-- @param ... the values returned, or the error raised
-- @treturn[1] table `{description =, messages = [...]}`
-- @return[2] nil, a `result` error (its message is for a JSON-RPC error), `"result"`
function M.prompt_result(prompt, ok, ...)
  local r, e = ...
  if not ok then return fail("result", message(r)) end
  if r == nil then
    return fail("result", e ~= nil and message(e) or "the prompt returned nothing")
  end
  if finished[r] then return r end -- a remote's answer (claude.mcp.mount)
  local description = prompt and prompt.description
  local list
  if type(r) == "string" or built[r] then
    list = { r }
  elseif type(r) == "table" and r.messages ~= nil then
    description = r.description or description
    list = r.messages
    if type(list) ~= "table" then return fail("result", "'messages' must be a list") end
  elseif type(r) == "table" then
    list = r
  else
    return fail("result", "get() returned a " .. typename(r))
  end
  local out = jarray()
  for i = 1, #list do
    local m = list[i]
    local role, c = "user", m
    if type(m) == "table" and not built[m] and m.type == nil then role, c = m.role, m.content end
    if role ~= "user" and role ~= "assistant" then
      return fail("result", fmt("message %d: role must be 'user' or 'assistant'", i))
    end
    local block = prompt_content(c)
    if not block then
      return fail("result", fmt("message %d: bad content (%s)", i, typename(c)))
    end
    out[i] = { role = role, content = block }
  end
  return { description = description, messages = out }
end

return M
