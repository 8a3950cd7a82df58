--- What MCP 2025-11-25 lets a server say of itself and of its tools, resources and prompts
-- beyond their names: `icons` (on all of them), and the server's `title`, `description` and
-- `websiteUrl` (its `serverInfo`, the schema's `Implementation`). Checked here, at definition,
-- and turned into their wire shapes (claude.mcp.tool).
--
--     icons = { { src = "https://example.com/icon.png", mime_type = "image/png",
--                 sizes = { "48x48" }, theme = "light" } }
-- @module claude.mcp.metadata
local json = require "claude.json"
local errors = require "claude.errors"

local M = {}

local type, pairs, ipairs, fmt = type, pairs, ipairs, string.format
local typename = errors.typename

local function bad(fname, field, f, ...) return errors.bad_field(field, fname, f, ...) end

local ICON_FIELDS = { src = true, mime_type = true, mimeType = true, sizes = true, theme = true }
local THEMES = { light = true, dark = true }

-- The schemes an icon's `src` may have: the specification's https URLs and data URIs (and
-- http, for servers on a private network); a client refuses the others.
local function icon_source(src)
  return src:find("^[Hh][Tt][Tt][Pp][Ss]?://[^%s]+$") ~= nil
    or src:find("^data:image/[%w%.%+%-]+[;,]") ~= nil
end

--- Check a list of icons and give its wire shape.
-- @param v the field's value
-- @tparam string fname the function named in a misuse
-- @tparam[opt="icons"] string field
-- @treturn table a JSON array of `{src =, mimeType =, sizes =, theme =}`
function M.icons(v, fname, field)
  field = field or "icons"
  if type(v) ~= "table" or (next(v) ~= nil and v[1] == nil) then
    bad(fname, field, "a list of icons expected, got %s", typename(v))
  end
  local out = json.array()
  for k in pairs(v) do
    if math.type(k) ~= "integer" or k < 1 or k > #v then
      bad(fname, field, "a list of icons expected, found key '%s'", tostring(k))
    end
  end
  for i, icon in ipairs(v) do
    local at = fmt("%s[%d]", field, i)
    if type(icon) == "string" then icon = { src = icon } end
    if type(icon) ~= "table" then bad(fname, at, "table expected, got %s", typename(icon)) end
    errors.check_fields(icon, ICON_FIELDS, fname, at)
    if type(icon.src) ~= "string" or not icon_source(icon.src) then
      bad(fname, at .. ".src", "an https:// URL or a data:image/ URI expected, got %s",
        type(icon.src) == "string" and fmt("'%s'", icon.src) or typename(icon.src))
    end
    local mime = icon.mime_type or icon.mimeType
    if mime ~= nil and (type(mime) ~= "string" or not mime:find("^[%w%-%.%+]+/[%w%-%.%+]+$")) then
      bad(fname, at .. ".mime_type", "a MIME type expected, got %s",
        type(mime) == "string" and fmt("'%s'", mime) or typename(mime))
    end
    local sizes = icon.sizes
    if sizes ~= nil then
      if type(sizes) ~= "table" then
        bad(fname, at .. ".sizes", "a list of sizes expected, got %s", typename(sizes))
      end
      for j, size in ipairs(sizes) do
        if type(size) ~= "string" or not (size == "any" or size:find("^%d+x%d+$")) then
          bad(fname, fmt("%s.sizes[%d]", at, j), "'WxH' or 'any' expected, got %s",
            type(size) == "string" and fmt("'%s'", size) or typename(size))
        end
      end
      sizes = json.array({ table.unpack(sizes) })
    end
    if icon.theme ~= nil and not THEMES[icon.theme] then
      bad(fname, at .. ".theme", "'light' or 'dark' expected, got %s",
        type(icon.theme) == "string" and fmt("'%s'", icon.theme) or typename(icon.theme))
    end
    out[i] = { src = icon.src, mimeType = mime, sizes = sizes, theme = icon.theme }
  end
  return out
end

--- The optional `icons` of a tool, resource or prompt spec: its wire shape, or nil.
-- @tparam table spec
-- @tparam string fname
-- @treturn table|nil
function M.item_icons(spec, fname)
  if spec.icons == nil then return nil end
  return M.icons(spec.icons, fname)
end

--- A server's `serverInfo` (the schema's `Implementation`) when its options say more than
-- its name and version (`title`, `description`, `website_url`, `icons`), else nil: the
-- protocol's own `{name, version}` is then made where it is sent.
-- @tparam string name
-- @tparam string version
-- @tparam table opts the server's options
-- @treturn table|nil
function M.server_info(name, version, opts)
  local F = "server"
  if opts.title == nil and opts.description == nil and opts.website_url == nil
      and opts.icons == nil then
    return nil
  end
  for _, k in ipairs { "title", "description", "website_url" } do
    if opts[k] ~= nil and type(opts[k]) ~= "string" then
      bad(F, k, "string expected, got %s", typename(opts[k]))
    end
  end
  local url = opts.website_url
  if url ~= nil and not url:find("^[Hh][Tt][Tt][Pp][Ss]?://[^%s/]+[^%s]*$") then
    bad(F, "website_url", "an http:// or https:// URL expected, got '%s'", url)
  end
  return { name = name, version = version, title = opts.title, description = opts.description,
    websiteUrl = url, icons = opts.icons ~= nil and M.icons(opts.icons, F) or nil }
end

return M
