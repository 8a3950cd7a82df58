--- The options of `claude.mcp.connect`: names, types, defaults. A bad
-- option is a misuse, raised at the caller's line and naming the option.
-- @module claude.mcp.client.options
local errors = require "claude.errors"
local era = require "claude.mcp.era"

local M = {}

local misuse = errors.misuse

-- Option name -> expected Lua type(s).
local TYPES = {
  -- stdio
  command = "string", args = "table", env = "table", cwd = "string", stderr = "function",
  -- HTTP
  url = "string", headers = "table", transport = "string", auth = "table",
  -- both
  name = "string", timeout = "number", connect_timeout = "number", max_retries = "number",
  retry_delay = "number", max_retry_delay = "number", max_message_size = "number",
  protocol = "string", protocol_version = "string", probe_timeout = "number",
  client_info = "table", cache = "boolean", log_level = "string", tasks = "boolean",
  max_input_rounds = "number", max_pages = "number", max_list_bytes = "number",
  max_schema_bytes = "number",
  on_notification = "function", on_sampling = "function", on_elicitation = "function",
  roots = "table", on_roots = "function", on_state = "function", on_error = "function",
  forward_requests = "boolean",
}
M.TYPES = TYPES

local DEFAULTS = {
  timeout = 60, connect_timeout = 30, max_retries = 3, retry_delay = 0.5, max_retry_delay = 30,
}

local TRANSPORTS = { streamable_http = "http", sse = "sse" }

local LOG_LEVELS = { debug = true, info = true, notice = true, warning = true, error = true,
  critical = true, alert = true, emergency = true }
M.LOG_LEVELS = LOG_LEVELS

local function revisions()
  return table.concat(era.MODERN_VERSIONS, ", ") .. ", " .. table.concat(era.LEGACY_VERSIONS,
    ", ")
end

--- Checks `protocol` (and the older `protocol_version`, a pin to one revision).
function M.check_protocol(o, kind, fname)
  if o.protocol ~= nil and o.protocol_version ~= nil then
    misuse("bad options to '%s' ('protocol' and 'protocol_version' exclude each other)", fname)
  end
  local p = o.protocol or o.protocol_version
  if p == nil then return end
  local field = o.protocol and "protocol" or "protocol_version"
  local ok = era.LEGACY[p] or era.MODERN_SET[p]
    or (field == "protocol" and (p == "auto" or p == "legacy"))
  if not ok then
    errors.bad_field(field, fname, "%s%s expected, got '%s'", field == "protocol"
      and "'auto', 'legacy' or a revision: " or "a revision: ", revisions(), p)
  end
  if kind == "sse" and era.MODERN_SET[p] then
    errors.bad_field(field, fname, "the HTTP+SSE transport of 2024-11-05 speaks the legacy "
      .. "era only, not %s", p)
  end
end

--- How a client finds its era: `{ legacy = true, version = v? }` (the `initialize`
-- handshake), `{ version = v? }` (the `server/discover` probe; with `version`, pinned to it:
-- no fallback), from the checked options.
function M.mode(o)
  local p = o.protocol or o.protocol_version or "auto"
  if p == "auto" then return {} end
  if p == "legacy" then return { legacy = true } end
  if era.LEGACY[p] then return { legacy = true, version = p } end
  return { version = p }
end

--- Checks `opts` and returns a copy with the defaults filled in, and the
-- transport's kind (`"stdio"`, `"http"` or `"sse"`).
function M.check(opts, fname)
  if type(opts) ~= "table" then
    misuse("bad argument #1 to '%s' (table expected, got %s)", fname, errors.typename(opts))
  end
  local o = {}
  for key, value in pairs(opts) do
    local want = type(key) == "string" and TYPES[key]
    if not want then errors.unknown_field(key, TYPES, fname) end
    errors.check_field(value, key, fname, want)
    o[key] = value
  end
  for k, v in pairs(DEFAULTS) do
    if o[k] == nil then o[k] = v end
    if o[k] < 0 then errors.bad_field(k, fname, "non-negative number expected") end
  end
  if math.type(o.max_retries) ~= "integer" then
    errors.bad_field("max_retries", fname, "integer expected")
  end
  if o.command and o.url then
    misuse("bad options to '%s' ('command' and 'url' exclude each other)", fname)
  end
  local kind
  if o.command then
    kind = "stdio"
    for _, k in ipairs { "headers", "transport", "auth" } do
      if o[k] ~= nil then misuse("bad field '%s' to '%s' (only with 'url')", k, fname) end
    end
  elseif o.url then
    if not o.url:find("^https?://") then
      misuse("bad field 'url' to '%s' (an http:// or https:// URL expected, got '%s')", fname,
        o.url)
    end
    kind = "http"
    if o.transport then
      kind = TRANSPORTS[o.transport]
      if not kind then
        misuse("bad field 'transport' to '%s' ('streamable_http' or 'sse' expected, got '%s')",
          fname, o.transport)
      end
    end
    for _, k in ipairs { "args", "env", "cwd", "stderr" } do
      if o[k] ~= nil then misuse("bad field '%s' to '%s' (only with 'command')", k, fname) end
    end
  else
    misuse("bad argument #1 to '%s' ('command' (stdio) or 'url' (HTTP) expected)", fname)
  end
  for i, a in ipairs(o.args or {}) do
    if type(a) ~= "string" and type(a) ~= "number" then
      misuse("bad field 'args' to '%s' (item %d: string expected, got %s)", fname, i,
        errors.typename(a))
    end
  end
  if o.roots then
    for i, r in ipairs(o.roots) do
      if type(r) ~= "string" and not (type(r) == "table" and type(r.uri) == "string") then
        misuse("bad field 'roots' to '%s' (item %d: a URI or { uri = ..., name = ... } "
          .. "expected)", fname, i)
      end
    end
  end
  if o.auth then
    o.auth = require("claude.oauth.options").check(o.auth, fname)
    for k in pairs(o.headers or {}) do
      if type(k) == "string" and k:lower() == "authorization" then
        misuse("bad options to '%s' ('auth' and an Authorization header exclude each other)",
          fname)
      end
    end
  end
  M.check_protocol(o, kind, fname)
  if o.probe_timeout ~= nil and o.probe_timeout <= 0 then
    errors.bad_field("probe_timeout", fname, "positive number expected")
  end
  if o.max_input_rounds ~= nil and (math.type(o.max_input_rounds) ~= "integer"
      or o.max_input_rounds < 1) then
    errors.bad_field("max_input_rounds", fname, "positive integer expected")
  end
  for _, k in ipairs { "max_pages", "max_list_bytes", "max_schema_bytes" } do
    if o[k] ~= nil and (math.type(o[k]) ~= "integer" or o[k] < 1) then
      errors.bad_field(k, fname, "positive integer expected")
    end
  end
  if o.log_level ~= nil and not LOG_LEVELS[o.log_level] then
    errors.bad_field("log_level", fname, "one of debug, info, notice, warning, error, "
      .. "critical, alert, emergency expected, got '%s'", o.log_level)
  end
  o.name = o.name or (o.command and o.command:match("[^/]*$"))
    or o.url:match("^%a[%w+.-]*://([^/?#]+)") or o.url
  return o, kind
end

return M
