--- The two eras of the MCP protocol, as both halves (the server, the client) tell them
-- apart: the legacy era (revisions up to 2025-11-25: an `initialize` handshake, sessions,
-- requests from the server to the client) and the modern one (2026-07-28 on: every
-- request carries its own `_meta` envelope, no handshake, no session, multi round-trip
-- results instead of requests to the client). Revision strings compare in time order as
-- strings. Each era consults only its own list: a modern revision is never offered in an
-- `initialize`, and `server/discover` never lists a legacy one.
-- @module claude.mcp.era
local M = {}

--- The first revision of the modern era.
M.MODERN = "2026-07-28"

--- The revisions spoken in each era, newest first.
M.LEGACY_VERSIONS = { "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05" }
M.MODERN_VERSIONS = { "2026-07-28" }

--- The newest revision of each era.
M.LATEST_LEGACY, M.LATEST_MODERN = M.LEGACY_VERSIONS[1], M.MODERN_VERSIONS[1]

local function set(list)
  local s = {}
  for _, v in ipairs(list) do s[v] = true end
  return s
end

M.LEGACY = set(M.LEGACY_VERSIONS)
M.MODERN_SET = set(M.MODERN_VERSIONS)

--- Is `v` a revision of the modern era (spoken or not)?
-- @tparam string v
-- @treturn boolean
function M.is_modern(v)
  return type(v) == "string" and v >= M.MODERN
end

--- The reserved `_meta` keys of the modern envelope and of results.
M.META = {
  protocol_version = "io.modelcontextprotocol/protocolVersion",       -- required
  client_capabilities = "io.modelcontextprotocol/clientCapabilities", -- required
  client_info = "io.modelcontextprotocol/clientInfo",                 -- should, not required
  log_level = "io.modelcontextprotocol/logLevel",                     -- none: no log for it
  server_info = "io.modelcontextprotocol/serverInfo",                 -- in each result
  subscription_id = "io.modelcontextprotocol/subscriptionId",         -- listen streams
}

--- The modern era's error codes (and the HTTP status each gets).
M.ERRORS = {
  header_mismatch = -32020,          -- a header disagrees with the body (400)
  missing_capability = -32021,       -- the client did not declare what is needed (400)
  unsupported_version = -32022,      -- data: { supported = {...}, requested = v } (400)
}

--- Methods of one era only: called in the other, they are not found (-32601).
M.LEGACY_ONLY = set { "initialize", "ping", "logging/setLevel", "resources/subscribe",
  "resources/unsubscribe", "notifications/initialized" }
M.MODERN_ONLY = set { "server/discover", "subscriptions/listen" }

--- Results that carry caching hints (`ttlMs`, `cacheScope`) in the modern era.
M.CACHEABLE = set { "server/discover", "tools/list", "prompts/list", "resources/list",
  "resources/templates/list", "resources/read", "skills/list", "skills/get",
  "resources/directory/read" }

--- Requests whose result may be `input_required` (multi round-trip) in the modern era.
M.MAY_NEED_INPUT = set { "tools/call", "prompts/get", "resources/read" }

--- The param whose value a modern HTTP request repeats in its `Mcp-Name` header, per method.
M.NAME_PARAM = { ["tools/call"] = "name", ["prompts/get"] = "name", ["resources/read"] = "uri",
  ["tasks/get"] = "taskId", ["tasks/update"] = "taskId", ["tasks/cancel"] = "taskId" }

--- The tasks extension (SEP-2663): its key in `capabilities.extensions`.
M.TASKS = "io.modelcontextprotocol/tasks"

local array_mt = require("claude.json").array_mt

--- Whether `meta` (a request's `_meta`) is the usual envelope of the modern era: the latest
-- version, the client's capabilities (an object), no log level. Such a request passes the
-- server's envelope checks at once (but for the HTTP header, which the transport compares).
-- @param meta
-- @treturn boolean
function M.usual_envelope(meta)
  local caps = type(meta) == "table" and meta[M.META.client_capabilities]
  return type(caps) == "table" and meta[M.META.protocol_version] == M.LATEST_MODERN
    and caps[1] == nil and getmetatable(caps) ~= array_mt and meta[M.META.log_level] == nil
end

--- The protocol revision a modern request claims in its envelope, or nil (a legacy one).
-- @tparam table msg a decoded JSON-RPC request
-- @treturn string?
function M.claimed(msg)
  local params = type(msg) == "table" and msg.params
  local meta = type(params) == "table" and params._meta
  local v = type(meta) == "table" and meta[M.META.protocol_version]
  return type(v) == "string" and v or nil
end

return M
