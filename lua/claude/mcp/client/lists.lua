--- The MCP client's lists (tools, resources, their templates, prompts): every page,
-- followed by its cursor within the bounds (claude.mcp.client.pages), kept in the modern
-- era for as long as the server says (claude.mcp.client.cache); a modern server's tools
-- with their x-mcp-header declarations checked.
-- @module claude.mcp.client.lists
local json = require "claude.json"
local errors = require "claude.errors"
local class = require "claude.mcp.client.class"
local request = require("claude.mcp.client.request").request
local param_headers = require "claude.mcp.client.param_headers"
local pages = require "claude.mcp.client.pages"
local output = require "claude.mcp.client.output"

local M = {}

local public = errors.public
local check_self, check_opts, timeout_of = class.check_self, class.check_opts, class.timeout_of
local report = class.report

local LIST_OPTIONS = { timeout = true, cache = true, max_pages = true, max_bytes = true }

--- A cacheable request (modern era: claude.mcp.client.cache): the kept result while it is
-- valid, else the server's, kept for as long as it says.
function M.cached(self, method, key, params, timeout, use_cache)
  if self.era == "modern" and use_cache ~= false then
    local hit = self.cache:get(method, key)
    if hit then return hit end
  end
  local r, err, kind = request(self, method, params, timeout)
  if r == nil then return nil, err, kind end
  if self.era == "modern" then self.cache:put(method, key, r) end
  return r
end

-- Tools of the modern era whose x-mcp-header declarations are invalid are dropped (a
-- header that cannot be built right would make every call of them fail); the others'
-- declarations are kept for the Mcp-Param-* headers of their calls.
local function scan_tools(self, tools)
  local kept, decls = json.array(), {}
  for _, t in ipairs(tools) do
    local d, why = nil, "not a tool description"
    if type(t) == "table" and type(t.name) == "string" then
      d, why = param_headers.scan(t.inputSchema)
    end
    if d then
      kept[#kept + 1] = t
      decls[t.name] = d
    else
      report(self, errors.new("protocol", string.format("the MCP server '%s' lists tool "
        .. "'%s' with %s; it is left out", self.name, type(t) == "table"
        and tostring(t.name) or "?", why)))
    end
  end
  self.tool_headers = decls
  return kept
end

--- A list method: every page, followed by its cursor, within the bounds (claude.mcp.client.
-- pages; the timeout is the whole walk's).
function M.all(self, method, field, opts, fname)
  check_self(self, fname)
  check_opts(opts, 1, fname)
  if opts then
    errors.check_fields(opts, LIST_OPTIONS, fname)
    for _, k in ipairs { "max_pages", "max_bytes" } do
      local v = opts[k]
      if v ~= nil and (math.type(v) ~= "integer" or v < 1) then
        errors.bad_field(k, fname, "positive integer expected, got %s", tostring(v))
      end
    end
  end
  local timeout = timeout_of(self, opts, fname)
  local use_cache = opts and opts.cache
  local out, err, kind = pages.collect(self, function(cursor, left)
    return M.cached(self, method, cursor, cursor and { cursor = cursor } or nil, left, use_cache)
  end, method, field, timeout, opts)
  if not out then return nil, err, kind end
  if method == "tools/list" and self.era == "modern" then out = scan_tools(self, out) end
  return out
end

--- The server's tools, every page of them.
-- @tparam[opt] table opts `{ timeout = s }`
-- @return a list of tool descriptions | nil, err, kind
-- @function list_tools
M.list_tools = public(function(self, opts)
  local tools, err, kind = M.all(self, "tools/list", "tools", opts, "list_tools")
  if tools then self.output_schemas = output.schemas(tools) end
  return tools, err, kind
end)

--- The server's resources, every page of them.
-- @function list_resources
M.list_resources = public(function(self, opts)
  return M.all(self, "resources/list", "resources", opts, "list_resources")
end)

--- The server's resource templates, every page of them.
-- @function list_resource_templates
M.list_resource_templates = public(function(self, opts)
  return M.all(self, "resources/templates/list", "resourceTemplates", opts,
    "list_resource_templates")
end)

--- The server's prompts, every page of them.
-- @function list_prompts
M.list_prompts = public(function(self, opts)
  return M.all(self, "prompts/list", "prompts", opts, "list_prompts")
end)

return M
