--- `claude.openapi`: an OpenAPI 3.0 or 3.1 document made tools that call its HTTP API.
--
--     local tools = assert(claude.openapi.tools("petstore.json", {
--       base_url = "https://petstore.example.com/v3",
--       auth = { api_key = os.getenv("PETSTORE_KEY") },
--     }))
--     local server = claude.server("petstore", tools)
--
-- Each chosen operation becomes a tool (claude.openapi.operation plans it, with
-- claude.openapi.schema for its input schema); a call sends the request through
-- claude.http.client behind a URL guard (claude.openapi.call). See docs/openapi.md.
-- @module claude.openapi
local errors = require "claude.errors"
local document = require "claude.openapi.document"
local refs = require "claude.openapi.refs"
local schemas = require "claude.openapi.schema"
local operation = require "claude.openapi.operation"
local call = require "claude.openapi.call"

local M = {}

local misuse = errors.misuse

local DEFAULTS = { timeout = 30, max_response = 1024 * 1024, max_document = 16 * 1024 * 1024,
  max_schema_nodes = 20000, max_tools = 1000, max_documents = 100 }

local OPTIONS = { base_url = "string", variables = "table", include = "table|function",
  exclude = "table|function", names = "table", auth = "table", headers = "table",
  guard = "table|boolean", timeout = "number", max_response = "number",
  max_document = "number", max_schema_nodes = "number", max_tools = "number",
  max_documents = "number", prepare = "function" }

local function check_options(opts, fname, n)
  if opts == nil then return {} end
  if type(opts) ~= "table" then
    misuse("bad argument #%d to '%s' (table expected, got %s)", n, fname, errors.typename(opts))
  end
  errors.check_fields(opts, OPTIONS, fname)
  for k, want in pairs(OPTIONS) do errors.check_field(opts[k], k, fname, want, true) end
  for _, k in ipairs { "timeout", "max_response", "max_document", "max_schema_nodes",
      "max_tools", "max_documents" } do
    local v = opts[k]
    if v ~= nil and (v <= 0 or (k ~= "timeout" and math.type(v) ~= "integer")) then
      errors.bad_field(k, fname, "positive %s expected, got %s",
        k == "timeout" and "number" or "integer", tostring(v))
    end
  end
  if opts.guard == true then errors.bad_field("guard", fname, "a guard or false expected") end
  if type(opts.guard) == "table" and type(opts.guard.check) ~= "function" then
    errors.bad_field("guard", fname, "a claude.guard.url expected")
  end
  operation.check_selection(opts.include, "include", misuse)
  operation.check_selection(opts.exclude, "exclude", misuse)
  for k, v in pairs(opts.names or {}) do
    if type(k) ~= "string" or type(v) ~= "string" then
      errors.bad_field("names", fname, "operationId -> tool name strings expected")
    end
  end
  for k, v in pairs(opts.headers or {}) do
    if type(k) ~= "string" or (type(v) ~= "string" and type(v) ~= "number") then
      errors.bad_field("headers", fname, "name -> string values expected")
    end
  end
  for k, v in pairs(opts.auth or {}) do
    local t = type(v)
    if type(k) ~= "string" or (t ~= "string" and t ~= "table" and t ~= "function") then
      errors.bad_field("auth", fname, "security scheme name -> credentials (string, "
        .. "{username, password} or function) expected, got %s for '%s'", t, tostring(k))
    end
  end
  return opts
end

-- The base URL of a server object, its variables filled (`opts.variables` over the
-- defaults); a relative one is resolved against the document's own URL.
local function server_url(servers, where, opts, doc_url)
  local s = type(servers) == "table" and servers[1]
  if not s then s = { url = "/" } end
  if type(s.url) ~= "string" then document.fail(where, "a server needs a 'url'") end
  local vars = type(s.variables) == "table" and s.variables or {}
  local given = opts.variables or {}
  local url = s.url:gsub("{([^}]+)}", function(name)
    local var = vars[name]
    if type(var) ~= "table" then
      document.fail(where, "server variable {%s} is not defined", name)
    end
    local v = given[name] ~= nil and tostring(given[name]) or var.default
    if type(v) ~= "string" then
      document.fail(where, "server variable {%s} has no default", name)
    end
    if type(var.enum) == "table" and given[name] ~= nil then
      local ok = false
      for _, e in ipairs(var.enum) do
        if e == v then ok = true end
      end
      if not ok then
        document.fail(where, "server variable {%s} cannot be '%s' (enum: %s)", name, v,
          table.concat(var.enum, ", "))
      end
    end
    return v
  end)
  if not url:match("^%a[%w+.-]*://") then
    local origin, base
    if doc_url then origin, base = doc_url:match("^(%a[%w+.-]*://[^/?#]+)([^?#]*)") end
    if not origin then
      document.fail(where, "the server URL '%s' is relative: give base_url", url)
    end
    if url:sub(1, 1) == "/" then
      url = origin .. url
    else
      url = origin .. base:gsub("[^/]*$", "") .. url
    end
  end
  return (url:gsub("/+$", ""))
end

-- The media type to ask for: JSON when a success response offers it, else anything.
local function accept_of(docs, op_where)
  local op = docs:lookup(op_where)
  local responses = type(op) == "table" and op.responses
  if type(responses) ~= "table" then return "*/*" end
  for code, r in pairs(responses) do
    if tostring(code):match("^2") or code == "default" then
      local resp = docs:deref(r, op_where)
      if type(resp) == "table" and type(resp.content) == "table" then
        for media in pairs(resp.content) do
          if media:lower():find("json") then return "application/json" end
        end
      end
    end
  end
  return "*/*"
end

local ANNOTATIONS = { GET = { read_only = true }, HEAD = { read_only = true },
  OPTIONS = { read_only = true }, PUT = { idempotent = true },
  DELETE = { destructive = true, idempotent = true } }

local function description(plan)
  local parts = {}
  if type(plan.summary) == "string" then parts[#parts + 1] = plan.summary end
  if type(plan.description) == "string" and plan.description ~= plan.summary then
    parts[#parts + 1] = plan.description
  end
  if #parts == 0 then parts[1] = plan.method .. " " .. plan.path end
  if plan.deprecated then parts[#parts + 1] = "(Deprecated.)" end
  return table.concat(parts, "\n\n")
end

local function make_tool(plan, api)
  local annotations = { open_world = true }
  for k, v in pairs(ANNOTATIONS[plan.method] or {}) do annotations[k] = v end
  if type(plan.summary) == "string" then annotations.title = plan.summary end
  local ok, t = pcall(require("claude.mcp.tool").tool, {
    name = plan.name, description = description(plan), input_schema = plan.input_schema,
    output_schema = plan.output_schema, annotations = annotations,
    execute = function(args, ctx) return call.run(plan, api, args, ctx) end,
  })
  if not ok then document.fail(plan.where, "%s", (tostring(t):gsub("^[^:]*:%d+: ", ""))) end
  return t
end

local function build(source, opts)
  local doc, bytes, kind = document.load(source, opts)
  if not doc then return nil, bytes, kind end
  local docs = refs.new(doc, type(source) == "string" and source or nil, bytes, opts)
  local doc_url = docs.url
  local version = document.version(doc)
  if doc.info ~= nil and type(doc.info) ~= "table" then
    document.fail("#/info", "an object expected")
  end
  local conv = schemas.new(docs, version, opts.max_schema_nodes)
  local plans, skipped = operation.plan_all(docs, conv, opts,
    schemas.new(docs, version, opts.max_schema_nodes, "response"))
  if #plans > opts.max_tools then
    document.fail("#/paths", "%d operations chosen, over max_tools (%d): choose with include",
      #plans, opts.max_tools)
  end
  local api = { auth = opts.auth, headers = opts.headers or {}, guard = opts.guard,
    timeout = opts.timeout, max_response = opts.max_response, prepare = opts.prepare }
  local tools, ops = {}, {}
  for i, plan in ipairs(plans) do
    plan.base_url = opts.base_url and opts.base_url:gsub("/+$", "")
      or server_url(plan.servers, plan.servers == doc.servers and "#/servers"
        or document.at(plan.where, "servers"), opts, doc_url)
    plan.accept = accept_of(docs, plan.where)
    tools[i] = make_tool(plan, api)
    ops[i] = { tool = plan.name, method = plan.method, path = plan.path,
      operation_id = plan.operation_id, base_url = plan.base_url,
      output_schema = plan.output_schema ~= nil, output_fault = plan.output_fault }
  end
  local info = type(doc.info) == "table" and doc.info or {}
  return tools, { openapi = doc.openapi, title = info.title, version = info.version,
    description = info.description, operations = ops, skipped = skipped }
end

local function prepare(source, opts, fname, n)
  if type(source) ~= "string" and type(source) ~= "table" then
    misuse("bad argument #%d to '%s' (a path, a URL or a table expected, got %s)", n, fname,
      errors.typename(source))
  end
  opts = check_options(opts, fname, n + 1)
  local o = {}
  for k, v in pairs(opts) do o[k] = v end
  for k, v in pairs(DEFAULTS) do if o[k] == nil then o[k] = v end end
  if o.guard == nil then o.guard = require("claude.guard.url").new() end
  if o.guard == false then o.guard = nil end
  return o
end

--- The tools of an OpenAPI document.
-- @param source a file path, an http(s) URL (fetched behind the guard) or a decoded table
-- @tparam[opt] table opts see docs/openapi.md
-- @return a list of claude.Tool and a description of the API (`title`, `version`,
--   `operations`, `skipped`), or nil, err, kind (`openapi` for a fault of the document,
--   with `err.where`; `guard`, `http`, `overflow`... for its fetching)
M.tools = errors.public(function(source, opts)
  opts = prepare(source, opts, "openapi.tools", 1)
  return errors.catch(pcall(build, source, opts))
end)

--- A server of the document's tools, named `name`, with its title, version and
-- description from the document's `info`.
-- @treturn claude.Server, table the server and the API's description; or nil, err, kind
M.server = errors.public(function(name, source, opts)
  if type(name) ~= "string" then
    misuse("bad argument #1 to 'openapi.server' (string expected, got %s)",
      errors.typename(name))
  end
  opts = prepare(source, opts, "openapi.server", 2)
  local tools, api, kind = errors.catch(pcall(build, source, opts))
  if not tools then return nil, api, kind end
  local sopts = { version = type(api.version) == "string" and api.version or nil,
    title = type(api.title) == "string" and api.title or nil,
    description = type(api.description) == "string" and api.description or nil }
  local ok, server = pcall(require("claude.mcp.tool").server, name, tools, sopts)
  if not ok then misuse("%s", (tostring(server):gsub("^[^:]*:%d+: ", ""))) end
  return server, api
end)

return M
