--- MCP Apps, the `io.modelcontextprotocol/ui` extension (SEP-1865): a tool names an HTML
-- view, a `ui://` resource of the MIME type `text/html;profile=mcp-app`; a host that renders
-- views shows it in a sandboxed iframe beside the tool's answer, hands it the call's arguments
-- and result, and lets it call the server's tools. Others see a plain tool.
--
-- This module is the extension's logic for the tool DSL (claude.mcp.tool: `claude.view`, the
-- `view` and `visibility` options of a tool) and for the server (the capability it declares
-- in `initialize` and `server/discover`, the view files `--watch` follows). It imports neither.
-- See docs/mcp-apps.md.
-- @module claude.mcp.apps
local core = require "claude.core"
local json = require "claude.json"
local errors = require "claude.errors"
local content = require "claude.mcp.content"
local schema = require "claude.schema"

local M = {}

local jarray, jobject, null = json.array, json.object, json.null
local type, pairs, ipairs, fmt = type, pairs, ipairs, string.format
local misuse, typename = errors.misuse, errors.typename

--- The extension's id, the key of `capabilities.extensions`.
M.ID = "io.modelcontextprotocol/ui"
--- The MIME type of a view.
M.MIME = "text/html;profile=mcp-app"
--- The URI scheme of views.
M.SCHEME = "ui://"
--- The tool `_meta` key older hosts read the view's URI from (deprecated by the extension,
-- still set beside `_meta.ui.resourceUri`, as the extension's server helpers do).
M.LEGACY_KEY = "ui/resourceUri"

-- The CSP fields of a view (Lua name -> wire name); the wire names are accepted too.
local CSP = { connect_domains = "connectDomains", resource_domains = "resourceDomains",
  frame_domains = "frameDomains", base_uri_domains = "baseUriDomains" }
-- The permissions a view may ask for (Permission Policy features of the host's iframe).
local PERMISSIONS = { camera = "camera", microphone = "microphone",
  geolocation = "geolocation", clipboard_write = "clipboardWrite" }
local VISIBILITY = { model = true, app = true }

local function wire_names(map)
  local all = {}
  for k, v in pairs(map) do
    all[k], all[v] = v, v
  end
  return all
end
local CSP_ANY, PERMISSIONS_ANY = wire_names(CSP), wire_names(PERMISSIONS)

local function bad(fname, field, f, ...)
  misuse("bad field '%s' to '%s' (%s)", field, fname, f:format(...))
end

local function want(fname, spec, field, expected, optional)
  local v = spec[field]
  if v == nil and optional then return nil end
  if type(v) ~= expected then bad(fname, field, "%s expected, got %s", expected, typename(v)) end
  return v
end

local function is_list(t)
  local n = 0
  for _ in pairs(t) do n = n + 1 end
  return n == #t
end

-- A list of origins for the host's CSP: strings that cannot end a directive or start another
-- (no blank, `;` or `,`), e.g. "https://api.example.com", "https://*.example.com".
local function origins(fname, field, list)
  if type(list) ~= "table" or not is_list(list) then
    bad(fname, field, "a list of origins expected, got %s", typename(list))
  end
  local out = jarray()
  for i, o in ipairs(list) do
    if type(o) ~= "string" or o == "" or o:find("[%s;,'\"]") then
      bad(fname, fmt("%s[%d]", field, i), "an origin such as 'https://api.example.com' "
        .. "expected, got %s", type(o) == "string" and fmt("%q", o) or typename(o))
    end
    out[i] = o
  end
  return out
end

-- The view's `_meta.ui` (McpUiResourceMeta): csp, permissions, domain, prefersBorder.
local function resource_meta(fname, spec)
  local ui
  local csp = want(fname, spec, "csp", "table", true)
  if csp then
    local out = jobject()
    for k, v in pairs(csp) do
      local wire = CSP_ANY[k]
      if not wire then errors.unknown_field(k, CSP, fname, "csp") end
      out[wire] = origins(fname, "csp." .. k, v)
    end
    ui = { csp = out }
  end
  local perms = want(fname, spec, "permissions", "table", true)
  if perms then
    local out = jobject()
    for k, v in pairs(perms) do
      local wire = PERMISSIONS_ANY[k]
      if not wire then errors.unknown_field(k, PERMISSIONS, fname, "permissions") end
      if type(v) ~= "boolean" then
        bad(fname, "permissions." .. k, "boolean expected, got %s", typename(v))
      end
      if v then out[wire] = jobject() end
    end
    ui = ui or {}
    ui.permissions = out
  end
  local domain = want(fname, spec, "domain", "string", true)
  local border = want(fname, spec, "prefers_border", "boolean", true)
  if domain or border ~= nil then
    ui = ui or {}
    ui.domain, ui.prefersBorder = domain, border
  end
  return ui
end

local function read_file(path)
  local f, err = io.open(path, "rb")
  if not f then return nil, err end
  local s = f:read("a")
  f:close()
  return s
end

-- `file` relative to the directory of the Lua file `source` (a chunk name, "@path") names;
-- without one, of the script run (`arg[0]`), else of the working directory.
local function resolve(file, source)
  if file:sub(1, 1) == "/" then return file end
  if source == nil then
    local script = type(rawget(_G, "arg")) == "table" and rawget(_G, "arg")[0]
    source = type(script) == "string" and "@" .. script or nil
  end
  local dir = type(source) == "string" and source:match("^@(.*)/[^/]*$")
  if type(source) == "string" and source:sub(1, 1) == "@" and not dir then dir = "." end
  local path = (dir and dir .. "/" or "") .. file
  if path:sub(1, 1) ~= "/" then path = core.cwd() .. "/" .. path end
  return (path:gsub("/%./", "/"))
end

local VIEW_FIELDS = { uri = true, name = true, title = true, description = true, file = true,
  html = true, csp = true, permissions = true, domain = true, prefers_border = true,
  cache = true }

--- The resource spec (for claude.mcp.tool's `resource`) of `claude.view{...}`, and the path
-- of its file, if any. Raises a misuse naming the field.
-- @tparam table spec
-- @tparam[opt] string source the chunk name of the Lua file that defines the view
-- @treturn table the resource's spec
-- @treturn string|nil the file the view was read from
function M.view_spec(spec, source)
  local F = "view"
  if type(spec) ~= "table" then
    misuse("bad argument #1 to 'view' (table expected, got %s)", typename(spec))
  end
  for k in pairs(spec) do
    if not VIEW_FIELDS[k] then errors.unknown_field(k, VIEW_FIELDS, F) end
  end
  local uri = want(F, spec, "uri", "string")
  if uri:sub(1, #M.SCHEME) ~= M.SCHEME or #uri == #M.SCHEME then
    bad(F, "uri", "a ui:// URI expected, got %q", uri)
  end
  local file = want(F, spec, "file", "string", true)
  local html = want(F, spec, "html", "string", true)
  if (file == nil) == (html == nil) then
    bad(F, file and "html" or "file", "exactly one of file and html expected")
  end
  local path
  if file then
    path = resolve(file, source)
    local text, err = read_file(path)
    if not text then bad(F, "file", "cannot read the view: %s", err) end
    html = text
  end
  local ui = resource_meta(F, spec)
  local meta = ui and { ui = ui } or nil
  -- the content of every read: the HTML and, as the extension asks, its _meta.ui (a host
  -- reads the CSP from the content first, from the listing when the content has none)
  local block = content.resource { uri = uri, text = html, mime_type = M.MIME }
  block.resource._meta = meta
  return {
    uri = uri, name = want(F, spec, "name", "string", true) or uri,
    title = want(F, spec, "title", "string", true),
    description = want(F, spec, "description", "string", true),
    mime_type = M.MIME, meta = meta, cache = spec.cache, size = #html,
    read = function() return block end,
  }, path
end

--- A tool's `_meta` with the extension's members: `ui = {resourceUri =, visibility =}` and the
-- older `ui/resourceUri`. Raises a misuse naming the field.
-- @tparam[opt] table meta the tool's `_meta` so far
-- @param view a view (a resource of `claude.view`) or a `ui://` URI, or nil
-- @param visibility a list of `"model"` and `"app"`, or nil
-- @treturn table the `_meta`
-- @return the view object, when `view` was one
function M.tool_meta(meta, view, visibility)
  local F = "tool"
  local uri, object
  if type(view) == "string" then
    uri = view
  elseif type(view) == "table" and view.app_view then
    uri, object = view.uri, view
  elseif view ~= nil then
    bad(F, "view", "a view (claude.view) or a ui:// URI expected, got %s", typename(view))
  end
  if uri and (uri:sub(1, #M.SCHEME) ~= M.SCHEME or #uri == #M.SCHEME) then
    bad(F, "view", "a ui:// URI expected, got %q", uri)
  end
  local vis
  if visibility ~= nil then
    if type(visibility) ~= "table" or not is_list(visibility) or #visibility == 0 then
      bad(F, "visibility", "a list of 'model' and 'app' expected, got %s",
        type(visibility) == "table" and "an empty or keyed table" or typename(visibility))
    end
    vis = jarray()
    local seen = {}
    for i, v in ipairs(visibility) do
      if not VISIBILITY[v] or seen[v] then
        bad(F, fmt("visibility[%d]", i), "'model' or 'app' (once each) expected, got %s",
          type(v) == "string" and fmt("'%s'", v) or typename(v))
      end
      seen[v] = true
      vis[i] = v
    end
  end
  meta = meta or {}
  local ui = {}
  if type(meta.ui) == "table" then
    for k, v in pairs(meta.ui) do ui[k] = v end
  end
  ui.resourceUri, ui.visibility = uri or ui.resourceUri, vis or ui.visibility
  meta.ui = ui
  if uri then meta[M.LEGACY_KEY] = uri end
  return meta, object
end

--- A tool's result for its view, as the extension advises: `text` for the model (and for
-- clients without views), `data` the `structuredContent` the view renders, `meta` the
-- result's `_meta` (for the view, not the model's context). Raises a misuse for bad types.
-- @tparam string text
-- @tparam[opt] table data a JSON object
-- @tparam[opt] table meta
-- @treturn table a finished CallToolResult
function M.result(text, data, meta)
  if type(text) ~= "string" then
    misuse("bad argument #1 to 'view_result' (string expected, got %s)", typename(text))
  end
  local kind = data ~= nil and schema.kind(data)
  if data ~= nil and kind ~= "object" and kind ~= "empty" then
    misuse("bad argument #2 to 'view_result' (a table of fields expected, got %s)",
      kind == "array" and "a list" or typename(data))
  end
  if meta ~= nil and type(meta) ~= "table" then
    misuse("bad argument #3 to 'view_result' (table expected, got %s)", typename(meta))
  end
  if kind == "empty" then data = jobject() end
  return content.finished_result { content = jarray { { type = "text", text = text } },
    structuredContent = data, _meta = meta }
end

-- A server's capability, cached until its next change.
local declared = setmetatable({}, { __mode = "k" })

--- The extension's capability for a server that has views or tools that name one
-- (`{mimeTypes = {MIME}}`), or nil: what `initialize` and `server/discover` declare.
-- @tparam claude.Server server
-- @treturn table|nil
function M.capability(server)
  local c = declared[server]
  if c and c.revision == server.revision then return c.value end
  local value
  for _, r in ipairs(server.resource_list) do
    if r.app_view or r.mime_type == M.MIME then value = true end
  end
  for _, t in ipairs(server.tool_list) do
    if type(t.meta) == "table" and (t.meta.ui ~= nil or t.meta[M.LEGACY_KEY] ~= nil) then
      value = true
    end
  end
  if value then value = jobject { mimeTypes = jarray { M.MIME } } end
  declared[server] = { revision = server.revision, value = value }
  return value
end

--- Does the client (its capabilities, or a tool's `ctx`) render views: did it declare the
-- extension with the views' MIME type?
-- @param caps a client's capabilities, or a `ctx` (its `client_capabilities`)
-- @treturn boolean
function M.renders_views(caps)
  if type(caps) == "table" and caps.client_capabilities ~= nil then
    caps = caps.client_capabilities
  end
  local ext = type(caps) == "table" and caps.extensions
  local ui = type(ext) == "table" and ext[M.ID]
  local types = type(ui) == "table" and ui.mimeTypes
  if type(types) ~= "table" then return false end
  for _, t in ipairs(types) do
    if t == M.MIME then return true end
  end
  return false
end

--- The extension as the modern era's server lists its extensions (claude.mcp.server.modern):
-- no method of its own, a capability while the server has views.
-- @param modern the modern server (`modern:server()`)
function M.extension(modern)
  return { id = M.ID, methods = {},
    capability = function() return M.capability(modern:server()) end }
end

--- Adds the extension to the capabilities of an `initialize` answer, when the server has views.
-- @tparam claude.Server server
-- @tparam table caps the answer's `capabilities`
function M.declare(server, caps)
  local c = M.capability(server)
  if not c then return end
  local ext = caps.extensions
  if type(ext) ~= "table" or ext == null then
    ext = jobject()
    caps.extensions = ext
  end
  ext[M.ID] = c
end

--- The files the views of `list` (`{ {name, server}, ... }`) were read from: what `--watch`
-- follows beside the tools file.
-- @tparam table list
-- @treturn {string,...}
function M.files(list)
  local out, seen = {}, {}
  for _, e in ipairs(list) do
    for _, r in ipairs(e[2].resource_list) do
      local f = r.view_file
      if f and not seen[f] then
        seen[f] = true
        out[#out + 1] = f
      end
    end
  end
  return out
end

return M
