--- YAML read: one document decoded to the values claude.json gives (`null` is `json.null`,
-- an empty sequence is marked as an array), so that YAML and JSON documents read alike.
-- libyaml parses it (core.yaml_decode); YAML 1.2's core schema resolves plain scalars.
-- See docs/yaml.md.
-- @module claude.yaml
local core = require "claude.core"
local errors = require "claude.errors"

local M = {}

--- The default bounds: nesting, and nodes with aliases counted as what they stand for.
M.MAX_DEPTH = 512
M.MAX_NODES = 1000000

local OPTIONS = { max_depth = "number", max_nodes = "number", max_bytes = "number" }

--- Decodes the one document of a YAML text.
-- @tparam string text
-- @tparam[opt] table opts `max_depth` (512), `max_nodes` (1,000,000, aliases counted as
--   the nodes they stand for), `max_bytes` (none)
-- @return the value; or nil, err, kind: `yaml` (err.message says the line and column),
--   `overflow` (over `max_bytes`), `unsupported` (libyaml is not installed)
M.decode = errors.public(function(text, opts)
  errors.check(text, 1, "yaml.decode", "string")
  errors.check(opts, 2, "yaml.decode", "table", true)
  opts = opts or {}
  errors.check_fields(opts, OPTIONS, "yaml.decode")
  for k in pairs(OPTIONS) do
    local v = opts[k]
    if v ~= nil and (math.type(v) ~= "integer" or v <= 0) then
      errors.bad_field(k, "yaml.decode", "positive integer expected, got %s", tostring(v))
    end
  end
  if opts.max_bytes and #text > opts.max_bytes then
    return errors.fail("overflow", string.format("yaml: %d bytes, over max_bytes (%d)", #text,
      opts.max_bytes))
  end
  local depth = math.min(opts.max_depth or M.MAX_DEPTH, 100000)
  local v, err, kind = core.yaml_decode(text, depth, opts.max_nodes or M.MAX_NODES)
  if err ~= nil then return errors.fail(kind or "yaml", err) end
  return v
end)

return M
