--- The tool DSL: tools, resources, resource templates, prompts, and servers that hold them.
-- (Over ~600 lines: the five constructors and the server share one set of field
-- checks and one misuse path; apart, each would need the others' internals.)
--
--     local add = tool.tool("add", "Add two numbers", { a = "number", b = "number" },
--       function(args) return args.a + args.b end)
--     local calc = tool.server("calc", { add }, { version = "1.0.0" })
--
-- Every misuse raises at definition time, blaming the caller and naming the field
-- (`claude.errors`):
-- `bad field 'execute' to 'tool' (function expected, got nil)`.
-- @module claude.mcp.tool
local json = require "claude.json"
local schema = require "claude.schema"
local content = require "claude.mcp.content"
local errors = require "claude.errors"
local budget = require "claude.mcp.budget"
local calls = require "claude.mcp.tool_call"
local apps = require "claude.mcp.apps"
local uri_template = require "claude.mcp.uri_template"
-- claude.mcp.metadata (icons, a server's title...) is loaded by the first item or server
-- that has any: a start-up without them compiles none of it
local function icons_of(spec, fname)
  if spec.icons == nil then return nil end
  return require("claude.mcp.metadata").item_icons(spec, fname)
end

local M = {}

local jarray, jobject, null = json.array, json.object, json.null
local type, pairs, ipairs, fmt = type, pairs, ipairs, string.format

local Tool = { __name = "claude.Tool" }
local Resource = { __name = "claude.Resource" }
local ResourceTemplate = { __name = "claude.ResourceTemplate" }
local Prompt = { __name = "claude.Prompt" }
local Server = { __name = "claude.Server" }
local methods = {}
Server.__index = methods

Tool.__tostring = function(t) return "claude.Tool: " .. t.name end
Resource.__tostring = function(r) return "claude.Resource: " .. r.uri end
ResourceTemplate.__tostring = function(r) return "claude.ResourceTemplate: " .. r.uri_template end
Prompt.__tostring = function(p) return "claude.Prompt: " .. p.name end
Server.__tostring = function(s)
  local n = #s.tool_list
  return fmt("claude.Server: %s (%d tool%s)", s.name, n, n == 1 and "" or "s")
end

local misuse, public = errors.misuse, errors.public

local typename = content.typename

-- A location: "field 'x'" by default, "argument #n" when the caller says so.
local function where(labels, field)
  return labels and labels[field] or "field '" .. field .. "'"
end

local function bad(fname, labels, field, f, ...)
  misuse("bad %s to '%s' (%s)", where(labels, field), fname, f:format(...))
end

local function want(fname, labels, spec, field, expected, optional)
  local v = spec[field]
  if v == nil and optional then return nil end
  if type(v) ~= expected then
    bad(fname, labels, field, "%s expected, got %s", expected, typename(v))
  end
  return v
end

local function no_unknown(fname, spec, allowed, prefix)
  for k in pairs(spec) do
    if not allowed[k] then errors.unknown_field(k, allowed, fname, prefix) end
  end
end

local function set(list)
  local s = {}
  for _, k in ipairs(list) do s[k] = true end
  return s
end

local PROMPT_ARGUMENT_FIELDS = set { "name", "description", "required" }
local COMPLETION_REF_FIELDS = set { "type", "name", "uri" }

local NAME = "^[%w_%-]+$"

local function check_name(fname, labels, spec, field)
  local name = want(fname, labels, spec, field, "string")
  if not name:find(NAME) or #name > 64 then
    bad(fname, labels, field, "'%s' is not a valid name (1-64 of A-Z a-z 0-9 _ -)", name)
  end
  return name
end

---------------------------------------------------------------------------------------------
-- Tools
---------------------------------------------------------------------------------------------

local TOOL_FIELDS = set { "name", "title", "description", "input_schema", "output_schema",
  "annotations", "execute", "max_result_size_chars", "always_load", "search_hint", "meta",
  "budget", "task", "view", "visibility", "icons", "formats" }
local OPTION_FIELDS = set { "title", "output_schema", "annotations", "max_result_size_chars",
  "always_load", "search_hint", "meta", "budget", "task", "view", "visibility", "icons",
  "formats" }
local TASK_SUPPORT = { [true] = "optional", optional = "optional", required = "required" }

local ANNOTATIONS = {
  read_only = "readOnlyHint", readOnlyHint = "readOnlyHint",
  destructive = "destructiveHint", destructiveHint = "destructiveHint",
  idempotent = "idempotentHint", idempotentHint = "idempotentHint",
  open_world = "openWorldHint", openWorldHint = "openWorldHint",
  title = "title",
}

local function positive_int(v)
  return math.type(v) == "integer" and v > 0
end

local function build_schema(fname, labels, spec, field, formats)
  local s = spec[field]
  if s == nil then return nil end
  if type(s) ~= "table" then bad(fname, labels, field, "table expected, got %s", typename(s)) end
  local js, plain = schema.parse(s)
  if not js then bad(fname, labels, field, "%s", plain.message) end
  if plain and field == "input_schema" then return js, nil end -- compiled by the 1st call
  local validate, verr = schema.compile(js, formats)
  if not validate then bad(fname, labels, field, "%s", verr.message) end
  return js, validate
end

local function build_tool(spec, labels)
  local F = "tool"
  no_unknown(F, spec, TOOL_FIELDS)
  local name = check_name(F, labels, spec, "name")
  local title = want(F, labels, spec, "title", "string", true)
  local description = want(F, labels, spec, "description", "string", true)
  local execute = want(F, labels, spec, "execute", "function")
  -- `format` asserted in its schemas (claude.schema's `formats`), or the default
  local formats = spec.formats
  if formats ~= nil then
    schema._check_formats(formats, F)
    formats = { formats = formats }
  end
  local input_schema, validate = build_schema(F, labels, spec, "input_schema", formats)
  if not input_schema then input_schema = { type = "object", properties = jobject() } end
  local output_schema, validate_output = build_schema(F, labels, spec, "output_schema", formats)

  local annotations, meta
  local a = want(F, labels, spec, "annotations", "table", true)
  local max = spec.max_result_size_chars
  if a then
    for k, v in pairs(a) do
      local field = "annotations." .. tostring(k)
      if k == "max_result_size_chars" or k == "maxResultSizeChars" then
        max = v
      elseif not ANNOTATIONS[k] then
        errors.unknown_field(k, ANNOTATIONS, F, "annotations")
      elseif k == "title" and type(v) ~= "string" then
        bad(F, nil, field, "string expected, got %s", typename(v))
      elseif k ~= "title" and type(v) ~= "boolean" then
        bad(F, nil, field, "boolean expected, got %s", typename(v))
      else
        annotations = annotations or jobject()
        annotations[ANNOTATIONS[k]] = v
      end
    end
  end
  if max ~= nil then
    if not positive_int(max) then
      bad(F, labels, "max_result_size_chars", "positive integer expected, got %s",
        math.type(max) or typename(max))
    end
    meta = { ["anthropic/maxResultSizeChars"] = max }
  end
  if want(F, labels, spec, "always_load", "boolean", true) then
    meta = meta or {}
    meta["anthropic/alwaysLoad"] = true
  end
  local hint = want(F, labels, spec, "search_hint", "string", true) -- for the CLI's tool search
  if hint then
    meta = meta or {}
    meta["anthropic/searchHint"] = hint
  end
  local extra = want(F, labels, spec, "meta", "table", true)
  if extra then
    meta = meta or {}
    for k, v in pairs(extra) do
      if type(k) ~= "string" then bad(F, labels, "meta", "keys must be strings") end
      meta[k] = v
    end
  end
  -- MCP Apps: the view the tool shows, who may call it (claude.mcp.apps)
  local view
  if spec.view ~= nil or spec.visibility ~= nil then
    meta, view = apps.tool_meta(meta, spec.view, spec.visibility)
  end

  local task = spec.task
  if task ~= nil and task ~= false then
    task = TASK_SUPPORT[task]
    if not task then
      bad(F, labels, "task", "true, 'optional' or 'required' expected, got %s",
        type(spec.task) == "string" and "'" .. spec.task .. "'" or typename(spec.task))
    end
  else
    task = nil
  end
  local listing = {
    name = name, title = title, description = description, inputSchema = input_schema,
    outputSchema = output_schema, annotations = annotations, _meta = meta,
    icons = icons_of(spec, F),
  }
  local t = setmetatable({
    kind = "tool", name = name, title = title, description = description,
    input_schema = input_schema, output_schema = output_schema, annotations = annotations,
    meta = meta, execute = execute, validate = validate, validate_output = validate_output,
    listing = listing, budget = budget.check(spec.budget, "tool '" .. name .. "'"),
    task = task, view = view,
  }, Tool)
  if not validate then t.validate = schema._on_first_call(input_schema, t, "validate") end
  return t
end

local function tool(first, ...)
  if type(first) == "table" then
    if select("#", ...) > 0 then misuse("bad argument #2 to 'tool' (no value expected)") end
    return build_tool(first)
  end
  if type(first) ~= "string" then
    misuse("bad argument #1 to 'tool' (string or table expected, got %s)", typename(first))
  end
  -- tool(name, [description,] [schema,] execute [, options])
  local args, n = { ... }, select("#", ...)
  local spec, labels, i = { name = first }, { name = "argument #1" }, 1
  for _, field in ipairs { "description", "input_schema" } do
    local expected = field == "description" and "string" or "table"
    if type(args[i]) == expected then
      spec[field], labels[field] = args[i], "argument #" .. (i + 1)
      i = i + 1
    end
  end
  if type(args[i]) ~= "function" then
    misuse("bad argument #%d to 'tool' (function expected, got %s)", i + 1, typename(args[i]))
  end
  spec.execute, labels.execute = args[i], "argument #" .. (i + 1)
  local opts = args[i + 1]
  if opts ~= nil then
    if type(opts) ~= "table" then
      misuse("bad argument #%d to 'tool' (table of options expected, got %s)", i + 2,
        typename(opts))
    end
    for k, v in pairs(opts) do
      if not OPTION_FIELDS[k] then errors.unknown_field(k, OPTION_FIELDS, "tool") end
      spec[k] = v
    end
  end
  if n > i + 1 then misuse("bad argument #%d to 'tool' (too many arguments)", i + 3) end
  return build_tool(spec, labels)
end

--- Define a tool. Two forms:
--
--     tool(name, [description,] [schema,] execute [, options])
--     tool{ name =, title =, description =, input_schema =, output_schema =, annotations =,
--           max_result_size_chars =, always_load =, meta =, view =, visibility =, execute = }
--
-- `schema`/`input_schema` is shorthand or a full JSON Schema (see `claude.schema`);
-- `options` takes the table form's other fields. `annotations` accepts `read_only`,
-- `destructive`, `idempotent`, `open_world`, `title` (or the MCP names `readOnlyHint`, ...),
-- and `max_result_size_chars`. `task = true` (or `"optional"`) lets a call go on as a task of
-- the tasks extension when its client accepts tasks (it becomes one when it waits, or at
-- `ctx.task()`); `task = "required"`: only clients that accept tasks may call it.
-- `view` (a `view`, or the `ui://` URI of a resource of the server) is the HTML view hosts of
-- MCP Apps show beside the tool's answer, `visibility` who may call it (`{"model", "app"}`
-- by default; `{"app"}`: only the views); a server serves a tool's view with the tool.
-- `icons` (claude.mcp.metadata) go in its listing; `formats` asserts `format` in its schemas
-- (claude.schema's option of that name).
-- `execute(args, ctx)` returns the result (see `claude.content.result`).
-- @treturn claude.Tool
M.tool = public(tool)

---------------------------------------------------------------------------------------------
-- Resources and prompts
---------------------------------------------------------------------------------------------

local RESOURCE_FIELDS = set { "uri", "uri_template", "name", "title", "description",
  "mime_type", "size", "annotations", "read", "text", "blob", "bytes", "cache", "meta", "icons" }

local function resource(spec)
  local F = "resource"
  if type(spec) ~= "table" then
    misuse("bad argument #1 to 'resource' (table expected, got %s)", typename(spec))
  end
  no_unknown(F, spec, RESOURCE_FIELDS)
  local uri = want(F, nil, spec, "uri", "string", true)
  local tpl = want(F, nil, spec, "uri_template", "string", true)
  if (uri == nil) == (tpl == nil) then
    bad(F, nil, uri and "uri_template" or "uri", "exactly one of uri and uri_template expected")
  end
  local r = {
    name = want(F, nil, spec, "name", "string"),
    title = want(F, nil, spec, "title", "string", true),
    description = want(F, nil, spec, "description", "string", true),
    mime_type = want(F, nil, spec, "mime_type", "string", true),
    annotations = want(F, nil, spec, "annotations", "table", true),
    read = want(F, nil, spec, "read", "function", true),
    cache = spec.cache ~= nil and require("claude.mcp.wire").check_cache(spec.cache, F) or nil,
    meta = want(F, nil, spec, "meta", "table", true),
  }
  local listing = { name = r.name, title = r.title, description = r.description,
    mimeType = r.mime_type, annotations = r.annotations, _meta = r.meta,
    icons = icons_of(spec, F) }
  local static = spec.text ~= nil or spec.blob ~= nil or spec.bytes ~= nil
  if tpl then
    if static then bad(F, nil, "read", "a resource template needs a read function") end
    want(F, nil, spec, "read", "function")
    local match, err = uri_template.matcher(tpl)
    if not match then bad(F, nil, "uri_template", "%s", err) end
    r.kind, r.uri_template, r.match, listing.uriTemplate = "resource_template", tpl, match, tpl
    r.listing = listing
    return setmetatable(r, ResourceTemplate)
  end
  if spec.size ~= nil and math.type(spec.size) ~= "integer" then
    bad(F, nil, "size", "integer expected, got %s", typename(spec.size))
  end
  if static then
    if r.read then bad(F, nil, "read", "either read or text/blob/bytes, not both") end
    local fixed = { text = spec.text, blob = spec.blob, bytes = spec.bytes }
    for k, v in pairs(fixed) do
      if type(v) ~= "string" then bad(F, nil, k, "string expected, got %s", typename(v)) end
    end
    r.read = function() return fixed end
  elseif not r.read then
    bad(F, nil, "read", "function expected, got nil")
  end
  r.kind, r.uri, r.size, listing.uri, listing.size = "resource", uri, spec.size, uri, spec.size
  r.listing = listing
  return setmetatable(r, Resource)
end

--- Define a resource (`uri =`) or a resource template (`uri_template =`, RFC 6570 `{var}` and
-- `{+var}`).
--
--     resource{ uri =, name =, title =, description =, mime_type =, size =, annotations =,
--               cache =, meta =,
--               read = function(uri, params, ctx) ... end }   -- or text = / blob = / bytes =
--
-- `cache = {ttl_ms =, scope =}` are the caching hints of its reads in the modern era (the
-- server's by default); `meta` is the `_meta` of its listing.
-- `read` returns a string (text), `{text = | blob = | bytes =, mime_type =}`, a
-- `content.resource` value, a list of these, or `nil, message`. For a template, `params`
-- holds the decoded variables; for a plain resource it is empty.
-- @tparam table spec
-- @treturn claude.Resource|claude.ResourceTemplate
M.resource = public(resource)

--- Define a resource template: the same as `resource` with `uri_template` required.
-- @tparam table spec
-- @treturn claude.ResourceTemplate
-- @function resource_template
M.resource_template = public(function(spec)
  if type(spec) == "table" and spec.uri_template == nil then
    misuse("bad field 'uri_template' to 'resource_template' (string expected, got nil)")
  end
  return resource(spec)
end)

local view_core = public(function(spec, source)
  local r_spec, file = apps.view_spec(spec, source)
  local r = resource(r_spec)
  r.app_view, r.view_file = true, file
  return r
end)

--- Define a view of MCP Apps (the `io.modelcontextprotocol/ui` extension): an HTML
-- resource of the MIME type `text/html;profile=mcp-app` that hosts show in a sandboxed
-- iframe beside the answer of the tools that name it (their `view` option).
--
--     view{ uri = "ui://name/view.html", name =, title =, description =,
--           file = "view.html" | html = "<!doctype html>...",
--           csp = { connect_domains =, resource_domains =, frame_domains =,
--                   base_uri_domains = },
--           permissions = { camera =, microphone =, geolocation =, clipboard_write = },
--           domain =, prefers_border =, cache = }
--
-- `file` is read now, relative to the Lua file that calls `view` (the script's, `arg[0]`, in
-- `return view{...}`, where Lua no longer knows the caller; `claudelua mcp --watch` reloads
-- when it changes); `csp` lists the origins the view may reach beyond itself, which
-- hosts turn into its Content Security Policy. See docs/mcp-apps.md.
-- @tparam table spec
-- @treturn claude.Resource
function M.view(spec)
  -- the caller's file; in `return view{...}` (a tail call) Lua no longer knows it
  local source = not debug.getinfo(1, "t").istailcall and debug.getinfo(2, "S").source or nil
  return view_core(spec, source)
end

--- Does the client of a request render views (it declared the MCP Apps extension with the
-- views' MIME type, in `initialize` or in the request's envelope)?
-- @param ctx a tool's `ctx` (or a client's capabilities)
-- @treturn boolean
-- @function renders_views
M.renders_views = apps.renders_views

--- A tool's result for its view: `text` for the model (and clients without views), `data`
-- the `structuredContent` the view renders, `meta` the result's `_meta` (for the view only).
-- @tparam string text
-- @tparam[opt] table data
-- @tparam[opt] table meta
-- @treturn table
-- @function view_result
M.view_result = public(apps.result)

local PROMPT_FIELDS = set { "name", "title", "description", "arguments", "get", "icons" }

local function prompt_argument(a, i)
  local field = fmt("arguments[%d]", i)
  if type(a) == "string" then
    local name, q, rest = a:match("^%s*([%w_%-]+)(%??)%s*(.-)%s*$")
    local desc = rest and rest:match("^:%s*(.*)$")
    if not name or (rest ~= "" and not desc) then
      bad("prompt", nil, field, "bad argument spec '%s' (expected e.g. 'city', 'days?' or "
        .. "'city: the city name')", a)
    end
    return { name = name, description = desc ~= "" and desc or nil, required = q ~= "?" }
  end
  if type(a) ~= "table" then bad("prompt", nil, field, "string or table expected, got %s",
    typename(a)) end
  no_unknown("prompt", a, PROMPT_ARGUMENT_FIELDS, field)
  for k, t in pairs { name = "string", description = "string", required = "boolean" } do
    if a[k] ~= nil and type(a[k]) ~= t or (k == "name" and a[k] == nil) then
      bad("prompt", nil, field .. "." .. k, "%s expected, got %s", t, typename(a[k]))
    end
  end
  return { name = a.name, description = a.description, required = a.required ~= false }
end

local function prompt(spec)
  local F = "prompt"
  if type(spec) ~= "table" then
    misuse("bad argument #1 to 'prompt' (table expected, got %s)", typename(spec))
  end
  no_unknown(F, spec, PROMPT_FIELDS)
  local p = {
    kind = "prompt",
    name = check_name(F, nil, spec, "name"),
    title = want(F, nil, spec, "title", "string", true),
    description = want(F, nil, spec, "description", "string", true),
    get = want(F, nil, spec, "get", "function"),
  }
  local list = want(F, nil, spec, "arguments", "table", true) or {}
  if next(list) ~= nil and list[1] == nil then
    bad(F, nil, "arguments", "a list expected (e.g. { 'city', 'days?' })")
  end
  local args, seen = jarray(), {}
  for i, a in ipairs(list) do
    local arg = prompt_argument(a, i)
    if seen[arg.name] then bad(F, nil, "arguments", "duplicate argument '%s'", arg.name) end
    seen[arg.name] = true
    args[i] = arg
  end
  p.arguments = args
  p.listing = { name = p.name, title = p.title, description = p.description, arguments = args,
    icons = icons_of(spec, F) }
  p.validate = function(given)
    if given == nil or given == null then given = {} end
    if type(given) ~= "table" then return nil, "arguments must be an object" end
    for i = 1, #args do
      local a = args[i]
      local v = given[a.name]
      if v == nil or v == null then
        if a.required then return nil, "missing required argument '" .. a.name .. "'" end
      elseif type(v) ~= "string" then
        return nil, "argument '" .. a.name .. "' must be a string"
      end
    end
    return true
  end
  return setmetatable(p, Prompt)
end

--- Define a prompt.
--
--     prompt{ name =, title =, description =, arguments = { "topic", "tone?: the tone",
--             { name = "n", description = "...", required = false } },
--             get = function(args, ctx) ... end }
--
-- Arguments are required unless marked `?` or `required = false`. `get` returns a string (one
-- user message), a content value, a list of messages `{role =, content =}`, or
-- `{description =, messages =}`; see `claude.content.prompt_result`.
-- @tparam table spec
-- @treturn claude.Prompt
M.prompt = public(prompt)

local Completion = { __name = "claude.Completion" }
Completion.__tostring = function(c) return "claude.Completion: " .. c.key end

local function completion(spec)
  local F = "completion"
  if type(spec) ~= "table" then
    misuse("bad argument #1 to 'completion' (table expected, got %s)", typename(spec))
  end
  no_unknown(F, spec, set { "ref", "complete" })
  local ref = want(F, nil, spec, "ref", "table")
  no_unknown(F, ref, COMPLETION_REF_FIELDS, "ref")
  local key
  if ref.type == "ref/prompt" then
    if type(ref.name) ~= "string" then
      bad(F, nil, "ref.name", "string expected, got %s", typename(ref.name))
    end
    key = "ref/prompt " .. ref.name
  elseif ref.type == "ref/resource" then
    if type(ref.uri) ~= "string" then
      bad(F, nil, "ref.uri", "string expected, got %s", typename(ref.uri))
    end
    key = "ref/resource " .. ref.uri
  else
    bad(F, nil, "ref.type", "'ref/prompt' or 'ref/resource' expected, got %s",
      type(ref.type) == "string" and "'" .. ref.type .. "'" or typename(ref.type))
  end
  return setmetatable({ kind = "completion", key = key, ref = ref,
    complete = want(F, nil, spec, "complete", "function") }, Completion)
end

--- Define the completion of a prompt's or a resource template's arguments, for
-- `completion/complete`; it goes in the server's list beside the tools.
--
--     completion{ ref = { type = "ref/prompt", name = "greet" },   -- or ref/resource, uri =
--                 complete = function(argument, ctx) return { "value", ... } end }
--
-- `argument` is `{name =, value =}` (the partial value typed so far); `ctx.arguments` holds
-- the arguments already given. `complete` returns a list of strings (at most 100 are sent),
-- or the MCP result table `{completion = {values =, total =, hasMore =}}`, or `nil, err`.
-- @tparam table spec
-- @treturn claude.Completion
M.completion = public(completion)

---------------------------------------------------------------------------------------------
-- Servers
---------------------------------------------------------------------------------------------

local KINDS = {
  [Tool] = { "tools", "tool_list", "name", "tool name" },
  [Resource] = { "resources", "resource_list", "uri", "resource uri" },
  [ResourceTemplate] = { "resource_templates", "resource_template_list", "uri_template",
    "resource template" },
  [Prompt] = { "prompts", "prompt_list", "name", "prompt name" },
  [Completion] = { "completions", "completion_list", "key", "completion" },
}

local LISTS = { tools = "tool_list", resources = "resource_list",
  resource_templates = "resource_template_list", prompts = "prompt_list" }

-- Tells the sessions serving `s` that one of its lists changed (they send
-- the client `notifications/<list>/list_changed`).
local function changed(s, what)
  for _, fn in pairs(s._watchers) do fn(s, what) end
end

-- -> nil | message
local function add(s, item)
  local k = KINDS[getmetatable(item)]
  if not k then
    return "claude.Tool, claude.Resource or claude.Prompt expected, got " .. typename(item)
  end
  local map, list, key = s[k[1]], s[k[2]], item[k[3]]
  if map[key] then
    if map[key] == item and item.app_view then return nil end -- a view of several tools
    return fmt("duplicate %s '%s'", k[4], key)
  end
  local view = item.view -- a tool's view is served with it
  if view and k[1] == "tools" then
    local err = add(s, view)
    if err then return err end
  end
  map[key] = item
  list[#list + 1] = item
  s.revision = s.revision + 1
  if LISTS[k[1]] then changed(s, k[1]) end
  return nil
end

-- -> the removed item | nil, message
local function remove(s, what, key)
  local map, list = s[what], s[LISTS[what]]
  local item = map[key]
  if not item then return nil, fmt("no %s '%s'", what:gsub("s$", ""), tostring(key)) end
  map[key] = nil
  for i = #list, 1, -1 do
    if list[i] == item then table.remove(list, i) end
  end
  s.revision = s.revision + 1
  changed(s, what)
  return item
end

local SERVER_OPTIONS = set { "version", "state", "instructions", "subscribe", "list_changed",
  "page_size", "budget", "auth", "cache", "skills", "timeout", "always_load", "title",
  "description", "website_url", "icons", "middleware" }

local function server(name, items, opts)
  if type(name) ~= "string" or not name:find(NAME) then
    misuse("bad argument #1 to 'server' (%s)", type(name) == "string"
      and fmt("'%s' is not a valid name (A-Z a-z 0-9 _ -)", name)
      or "string expected, got " .. typename(name))
  end
  local imt = getmetatable(items)
  if items ~= nil and (type(items) ~= "table" or KINDS[imt] or imt == Server) then
    misuse("bad argument #2 to 'server' (a list of tools expected, got %s)", typename(items))
  end
  if opts ~= nil and type(opts) ~= "table" then
    misuse("bad argument #3 to 'server' (table expected, got %s)", typename(opts))
  end
  opts = opts or {}
  no_unknown("server", opts, SERVER_OPTIONS)
  local version = want("server", nil, opts, "version", "string", true) or "1.0.0"
  local list_changed = want("server", nil, opts, "list_changed", "boolean", true)
  -- the CLI's per-call timeout of its tools (ms; initialize's sdkMcpServerConfigs)
  local timeout = want("server", nil, opts, "timeout", "number", true)
  local always_load = want("server", nil, opts, "always_load", "boolean", true)
  local page_size = opts.page_size
  if page_size ~= nil and not positive_int(page_size) then
    bad("server", nil, "page_size", "positive integer expected, got %s",
      math.type(page_size) or typename(page_size))
  end
  local s = setmetatable({
    kind = "server", type = "sdk", name = name, version = version, state = opts.state,
    instructions = want("server", nil, opts, "instructions", "string", true),
    subscribe = want("server", nil, opts, "subscribe", "boolean", true) or false,
    list_changed = list_changed, page_size = page_size, timeout = timeout,
    always_load = always_load,
    -- serverInfo's title, description, websiteUrl and icons (claude.mcp.metadata), or nil
    server_info = (opts.title ~= nil or opts.description ~= nil or opts.website_url ~= nil
      or opts.icons ~= nil) and require("claude.mcp.metadata").server_info(name, version, opts)
      or nil,
    -- caching hints of its lists and reads in the modern era (claude.mcp.wire)
    cache = opts.cache ~= nil and require("claude.mcp.wire").check_cache(opts.cache, "server")
      or nil,
    tools = {}, tool_list = {}, resources = {}, resource_list = {},
    resource_templates = {}, resource_template_list = {}, prompts = {}, prompt_list = {},
    completions = {}, completion_list = {},
    revision = 0, _lists = {}, _watchers = setmetatable({}, { __mode = "k" }),
    _subscribers = setmetatable({}, { __mode = "k" }),
    budget = budget.check(opts.budget, "server '" .. name .. "'"),
    -- OAuth bearer checks when served over HTTP (claude.mcp.server.auth, loaded only then)
    auth = opts.auth,
    -- around its requests (claude.mcp.middleware), or nil: the routers' plain way
    middleware = opts.middleware and require("claude.mcp.middleware").check(opts.middleware),
  }, Server)
  if opts.auth ~= nil then require("claude.oauth.resource").check(opts.auth, "server") end
  items = items or {}
  local n = #items
  for k in pairs(items) do
    if math.type(k) ~= "integer" or k < 1 or k > n then
      misuse("bad argument #2 to 'server' (a list of tools expected, found key '%s')",
        tostring(k))
    end
  end
  for i = 1, n do
    local err = add(s, items[i])
    if err then misuse("bad argument #2 to 'server' (item %d: %s)", i, err) end
  end
  if opts.skills ~= nil then
    if type(opts.skills) ~= "string" and type(opts.skills) ~= "table" then
      bad("server", nil, "skills", "a folder or a list of folders expected, got %s",
        typename(opts.skills))
    end
    methods.add_skills(s, opts.skills)
  end
  return s
end

--- Create an in-process MCP server.
-- @tparam string name the server name (tools are `mcp__<name>__<tool>`)
-- @tparam[opt] {claude.Tool|claude.Resource|claude.ResourceTemplate|claude.Prompt,...} items
-- @tparam[opt] table opts `{version = "1.0.0", state = any, instructions = string,
--   subscribe = false, list_changed = nil, page_size = 100}`: `subscribe` offers resource
--   subscriptions (`server:resource_updated(uri)` notifies the subscribers), `list_changed`
--   announces tools, resources and prompts added or removed while serving (default; false:
--   never), `auth` the OAuth bearer checks of `claudelua mcp --http` (claude.mcp.server.auth;
--   false: none, on purpose; an in-process session ignores it, stdio refuses it), `cache`
--   the caching hints of its lists and reads in the modern era (`{ttl_ms = 0, scope =
--   "private"}` by default; a resource's own `cache` wins for its reads), `skills` a folder
--   (or a list of folders) of Agent Skills to serve (`server:add_skills`); `title`,
--   `description`, `website_url` and `icons` its `serverInfo` (claude.mcp.metadata),
--   `middleware` a list of functions around its requests (claude.mcp.middleware)
-- @treturn claude.Server
M.server = public(server)

local function check_self(s, fname)
  if getmetatable(s) ~= Server then
    misuse("bad self to '%s' (claude.Server expected, got %s)", fname, typename(s))
  end
end

--- Add middleware `m` after the server's others, innermost (claude.mcp.middleware).
-- @function use
methods.use = public(function(s, m)
  check_self(s, "use")
  s.middleware = require("claude.mcp.middleware").append(s.middleware, m)
  changed(s, "middleware") -- (the routers forget the calls they route without it)
  return s
end)

--- Add a tool, resource, resource template or prompt; duplicate names raise.
-- Bumps `server.revision`.
-- @tparam claude.Tool|claude.Resource|claude.ResourceTemplate|claude.Prompt item
-- @treturn claude.Server the server itself
-- @function add
methods.add = public(function(s, item)
  check_self(s, "add")
  local err = add(s, item)
  if err then misuse("bad argument #1 to 'add' (%s)", err) end
  return s
end)

--- Serve the skills of one or more folders (the skills extension of the modern era,
-- `claude.mcp.skills`): each directory holding a `SKILL.md` is a skill; each skill's
-- `SKILL.md` becomes a resource (`skill://<name>/SKILL.md`, named and described by its
-- frontmatter), its other files are read through the resource template `skill://{+path}`,
-- and clients of the modern era list them with `skills/list` and `skills/get`. Replaces the
-- skills served before, if any. A folder that is not one, a skill without a valid name or
-- description, two skills of one name: a misuse.
-- @tparam string|{string,...} dirs
-- @treturn claude.Server the server itself
-- @function add_skills
methods.add_skills = public(function(s, dirs)
  check_self(s, "add_skills")
  local skills = require "claude.mcp.skills" -- loaded by the servers that serve skills only
  local catalog = skills.load(dirs)
  local old = s.skills
  if old then
    for _, r in ipairs(old.items) do
      if r.kind == "resource" then remove(s, "resources", r.uri)
      else remove(s, "resource_templates", r.uri_template) end
    end
  end
  local items, files = {}, catalog.files
  for _, e in ipairs(catalog.skills) do
    local path = skills.path(e.uri)
    items[#items + 1] = resource { uri = e.uri, name = e.frontmatter.name,
      description = e.frontmatter.description, mime_type = "text/markdown",
      size = files[path].size, read = function() return { text = files[path].bytes } end }
  end
  items[#items + 1] = resource { uri_template = skills.SCHEME .. "{+path}", name = "skills",
    description = "The files of the skills this server serves", read = function(uri)
      local f = files[skills.path(uri)]
      if not f then return nil, "no skill file at " .. uri end
      if f.text then return { text = f.bytes, mime_type = f.mime } end
      return { bytes = f.bytes, mime_type = f.mime }
    end }
  catalog.items, catalog.sources = items, type(dirs) == "string" and { dirs } or dirs
  s.skills = catalog
  for _, r in ipairs(items) do
    local err = add(s, r)
    if err then misuse("bad argument #1 to 'add_skills' (%s)", err) end
  end
  return s
end)

local REMOVABLE = { tools = true, resources = true, resource_templates = true, prompts = true }

--- Remove a tool (or, with `what`, a resource by uri, a resource template by
-- uri template, a prompt by name). A session using the server tells the CLI.
-- @tparam string key the name (or uri)
-- @tparam[opt="tools"] string what `"tools"`, `"resources"`, `"resource_templates"`, `"prompts"`
-- @return the removed item, or nil and a message when there is none
-- @function remove
methods.remove = public(function(s, key, what)
  check_self(s, "remove")
  what = what or "tools"
  if not REMOVABLE[what] then misuse("bad argument #2 to 'remove' (unknown list '%s')",
    tostring(what)) end
  if type(key) ~= "string" then
    misuse("bad argument #1 to 'remove' (string expected, got %s)", typename(key))
  end
  return remove(s, what, key)
end)

--- Tell the clients subscribed to `uri` that the resource changed
-- (`notifications/resources/updated`; the server needs `subscribe = true`). The connections
-- of `claudelua mcp` (claude.mcp.server.connection) register in `server._subscribers`.
-- @tparam string uri
-- @function resource_updated
methods.resource_updated = public(function(s, uri)
  check_self(s, "resource_updated")
  if type(uri) ~= "string" then
    misuse("bad argument #1 to 'resource_updated' (string expected, got %s)", typename(uri))
  end
  if not s.subscribe then
    misuse("bad argument #1 to 'resource_updated' (the server '%s' was made without "
      .. "subscribe = true)", s.name)
  end
  for _, fn in pairs(s._subscribers) do fn(uri) end
end)

--- The names the CLI knows this server's tools by, in definition order.
-- @treturn {string,...} `{"mcp__<server>__<tool>", ...}`
function methods:tool_names()
  local out = {}
  for i, t in ipairs(self.tool_list) do out[i] = "mcp__" .. self.name .. "__" .. t.name end
  return out
end

--- The listing array for `tools/list`, `resources/list`, `resources/templates/list` or
-- `prompts/list`, cached until the next `add`.
-- @tparam string what `"tools"`, `"resources"`, `"resource_templates"` or `"prompts"`
-- @treturn table a JSON array of listing entries
-- @function list
methods.list = public(function(s, what)
  local field = LISTS[what]
  if not field then misuse("bad argument #1 to 'list' (unknown list '%s')", tostring(what)) end
  local cached = s._lists[what]
  if cached and cached.revision == s.revision then return cached.list end
  local out = jarray()
  for i, item in ipairs(s[field]) do out[i] = item.listing end
  if what == "tools" and s.always_load then -- on each tool (copied: it may be in other servers)
    for i, l in ipairs(out) do
      local copy, meta = {}, { ["anthropic/alwaysLoad"] = true }
      for k, v in pairs(l) do copy[k] = v end
      for k, v in pairs(l._meta or {}) do meta[k] = v end
      copy._meta = meta
      out[i] = copy
    end
  end
  s._lists[what] = { revision = s.revision, list = out }
  return out
end)

-- server:mount / server:unmount: claude.mcp.mount (which makes items of these classes)
methods.mount = function(...) return require("claude.mcp.mount").mount(M, ...) end
methods.unmount = function(...) return require("claude.mcp.mount").unmount(M, ...) end
M._classes = { resource = Resource, resource_template = ResourceTemplate, prompt = Prompt,
  completion = Completion }

--- Is `v` a server made by `server`? -> boolean
function M.is_server(v)
  return getmetatable(v) == Server
end

--- Is `v` a tool made by `tool`? -> boolean
function M.is_tool(v)
  return getmetatable(v) == Tool
end

-- Calling a tool (the router's, the middleware's): claude.mcp.tool_call
M.error_handler, M.call = calls.error_handler, calls.call

return M
