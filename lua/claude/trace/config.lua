--- What the standard `OTEL_*` variables (and `claude.trace.enable`'s options over them) say
-- about exporting traces: the OTLP/HTTP endpoint, its headers, the resource, the batching.
-- @module claude.trace.config
local core = require "claude.core"
local errors = require "claude.errors"

local M = {}

local function truthy(v) return v ~= nil and v:lower() == "true" end

-- `OTEL_TRACES_EXPORTER`: a comma-separated list; "none" alone turns traces off
local function exporters(getenv)
  local v = getenv("OTEL_TRACES_EXPORTER")
  if v == nil or v == "" then return nil end
  local set = {}
  for name in v:gmatch("[^,%s]+") do set[name:lower()] = true end
  return set
end

--- Whether the environment asks for traces: `OTEL_TRACES_EXPORTER` names `otlp`, or it is
-- unset and an OTLP endpoint variable is; never under `OTEL_SDK_DISABLED=true`.
-- @tparam function getenv
-- @treturn boolean
function M.wanted(getenv)
  if truthy(getenv("OTEL_SDK_DISABLED")) then return false end
  local set = exporters(getenv)
  if set then return set.otlp == true end
  return (getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
    or "") ~= ""
end

local function unescape(s)
  return (s:gsub("%%(%x%x)", function(h) return string.char(tonumber(h, 16)) end))
end

--- `k1=v1,k2=v2` (W3C baggage's shape, the values percent-decoded: `OTEL_*_HEADERS`,
-- `OTEL_RESOURCE_ATTRIBUTES`) as a table.
-- @tparam string s
-- @treturn table
function M.pairs_list(s)
  local t = {}
  for item in (s or ""):gmatch("[^,]+") do
    local k, v = item:match("^%s*([^=]-)%s*=%s*(.-)%s*$")
    if k and k ~= "" then t[unescape(k)] = unescape(v) end
  end
  return t
end

local function millis(getenv, name, default)
  local v = tonumber(getenv(name) or "")
  if v and v >= 0 then return v / 1000 end
  return default
end

local function count(getenv, name, default)
  local v = math.tointeger(tonumber(getenv(name) or ""))
  if v and v > 0 then return v end
  return default
end

local OPTIONS = { endpoint = true, headers = true, service_name = true, resource = true,
  timeout = true, schedule_delay = true, max_queue = true, max_batch = true, exporter = true,
  cli = true, protocol = true }

local PROTOCOLS = { ["http/protobuf"] = true, ["http/json"] = true }
local warned = false -- (grpc's warning: once a process)

--- The OTLP protocol of the export: `enable`'s `protocol`, else
-- `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`, else `OTEL_EXPORTER_OTLP_PROTOCOL`, else
-- "http/protobuf" (the specification's default). "http/protobuf" or "http/json"; `grpc` is
-- not supported: one warning on stderr, and the export goes as "http/protobuf".
-- @tparam[opt] string given
-- @tparam function getenv
-- @treturn string
function M.protocol(given, getenv)
  if given ~= nil and not PROTOCOLS[given] then
    errors.bad_field("protocol", "enable", "'http/protobuf' or 'http/json' expected, got %s",
      type(given) == "string" and "'" .. given .. "'" or errors.typename(given))
  end
  local p = given or getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
    or getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
  if p == nil or p == "" then return "http/protobuf" end
  p = p:lower()
  if PROTOCOLS[p] then return p end
  if not warned then
    warned = true
    io.stderr:write("claude: tracing: OTEL_EXPORTER_OTLP_PROTOCOL=", p, " is not supported ",
      "(claudelua exports OTLP/HTTP: http/protobuf or http/json); sending http/protobuf\n")
  end
  return "http/protobuf"
end

--- The exporter's settings: `enable`'s options over the environment's. Returns nil and why
-- when `OTEL_SDK_DISABLED=true`.
-- @tparam table opts
-- @tparam function getenv
-- @treturn table `{ endpoint, protocol, headers, resource, timeout, schedule_delay,
--   max_queue, max_batch, exporter, cli }`
function M.resolve(opts, getenv)
  errors.check_fields(opts, OPTIONS, "enable")
  if truthy(getenv("OTEL_SDK_DISABLED")) then
    return nil, "OTEL_SDK_DISABLED is true"
  end
  local endpoint = opts.endpoint or getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
  if endpoint == nil or endpoint == "" then -- the base URL's signal path (OTLP/HTTP)
    local base = getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
    if base == nil or base == "" then base = "http://localhost:4318" end
    endpoint = base:gsub("/+$", "") .. "/v1/traces"
  end
  errors.check_field(endpoint, "endpoint", "enable", "string")
  local protocol = M.protocol(opts.protocol, getenv)
  local headers = M.pairs_list(getenv("OTEL_EXPORTER_OTLP_HEADERS"))
  for k, v in pairs(M.pairs_list(getenv("OTEL_EXPORTER_OTLP_TRACES_HEADERS"))) do
    headers[k] = v
  end
  if opts.headers ~= nil then
    errors.check_field(opts.headers, "headers", "enable", "table")
    for k, v in pairs(opts.headers) do headers[k] = v end
  end
  local resource = M.pairs_list(getenv("OTEL_RESOURCE_ATTRIBUTES"))
  if opts.resource ~= nil then
    errors.check_field(opts.resource, "resource", "enable", "table")
    for k, v in pairs(opts.resource) do resource[k] = v end
  end
  local service = opts.service_name or getenv("OTEL_SERVICE_NAME")
  if service ~= nil and service ~= "" then resource["service.name"] = service end
  if resource["service.name"] == nil then resource["service.name"] = "unknown_service:claudelua" end
  resource["telemetry.sdk.name"] = "claudelua"
  resource["telemetry.sdk.language"] = "lua"
  resource["telemetry.sdk.version"] = core.version
  if opts.exporter ~= nil then
    errors.check_field(opts.exporter, "exporter", "enable", "function")
  end
  return {
    endpoint = endpoint, protocol = protocol, headers = headers, resource = resource,
    timeout = opts.timeout or millis(getenv, "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
      millis(getenv, "OTEL_EXPORTER_OTLP_TIMEOUT", 10)),
    schedule_delay = opts.schedule_delay or millis(getenv, "OTEL_BSP_SCHEDULE_DELAY", 5),
    max_queue = opts.max_queue or count(getenv, "OTEL_BSP_MAX_QUEUE_SIZE", 2048),
    max_batch = opts.max_batch or count(getenv, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512),
    exporter = opts.exporter, cli = opts.cli == true,
  }
end

return M
