--- The operations of an OpenAPI document, each planned as a tool: its name, its input
-- schema (parameters and request body merged), and how each argument goes into the request.
--
-- Argument names: a parameter is named by its `name`, a property of an object request body
-- by its own name (the body is flattened), any other body is the argument `body`. When a
-- name is taken twice (a path `id` and a query `id`, or a parameter and a body property),
-- the parameters of that name get their location after an underscore: `id_path`,
-- `id_query`; the body's property keeps its name. Characters a tool argument cannot hold
-- (outside `A-Z a-z 0-9 _ . -`) become `_`, and a name still taken gets `_2`, `_3`...
-- @module claude.openapi.operation
local json = require "claude.json"
local errors = require "claude.errors"
local document = require "claude.openapi.document"

local M = {}

local METHODS = { "get", "put", "post", "delete", "options", "head", "patch", "trace" }
local LOCATIONS = { path = true, query = true, header = true, cookie = true }
-- header parameters OpenAPI says to ignore: the request's own fields
local IGNORED_HEADERS = { accept = true, ["content-type"] = true, authorization = true }
local MAX_NAME = 64

local fail, at = document.fail, document.at

local function sanitize(name, max)
  name = tostring(name):gsub("[^%w_%-.]", "_")
  if name == "" then name = "_" end
  return name:sub(1, max or MAX_NAME)
end

-- A name not yet in `taken` (which it then joins): `base`, else `base_2`, `base_3`...
local function claim(taken, base, max)
  max = max or MAX_NAME
  local name, n = base, 1
  while taken[name] do
    n = n + 1
    local suffix = "_" .. n
    name = base:sub(1, max - #suffix) .. suffix
  end
  taken[name] = true
  return name
end

--- A tool name for an operation: its operationId, else `method_path` (`get_pets_petId`).
local function base_name(method, path, op)
  if type(op.operationId) == "string" and op.operationId ~= "" then
    return (op.operationId:gsub("[^%w_%-]", "_")):sub(1, MAX_NAME)
  end
  local s = method .. "_" .. path:gsub("[{}]", ""):gsub("[^%w_%-]+", "_")
  return (s:gsub("_+$", ""):gsub("__+", "_")):sub(1, MAX_NAME)
end

-- `*` matches within a path segment, `**` across segments; anchored at both ends.
local function glob(pattern)
  local p = pattern:gsub("[%^%$%(%)%%%.%[%]%+%-%?]", "%%%0")
  p = p:gsub("%*%*", "\1"):gsub("%*", "[^/]*"):gsub("\1", ".*")
  return "^" .. p .. "$"
end

local function any_of(list, test)
  for _, v in ipairs(list or {}) do
    if test(v) then return true end
  end
  return false
end

-- Does the operation match the selection `sel` (a function, or a table of lists)?
local function matches(sel, info)
  if type(sel) == "function" then return sel(info) and true or false end
  return any_of(sel.operations, function(id) return id == info.operation_id end)
    or any_of(sel.tags, function(tag)
      return any_of(info.tags, function(t) return t == tag end)
    end)
    or any_of(sel.paths, function(p) return info.path:find(glob(p)) ~= nil end)
    or any_of(sel.methods, function(m) return m:upper() == info.method end)
end

--- Is the operation chosen by `opts.include` and `opts.exclude`?
function M.chosen(opts, info)
  if opts.include and not matches(opts.include, info) then return false end
  if opts.exclude and matches(opts.exclude, info) then return false end
  return true
end

--- Checks an `include`/`exclude` option: a function, or a table of lists of strings.
function M.check_selection(sel, field, misuse)
  if sel == nil or type(sel) == "function" then return end
  if type(sel) ~= "table" then
    misuse("bad field '%s' to 'openapi' (table or function expected, got %s)", field, type(sel))
  end
  local KNOWN = { operations = true, tags = true, paths = true, methods = true }
  for k, list in pairs(sel) do
    if not KNOWN[k] then
      misuse("unknown field '%s.%s' to 'openapi' (operations, tags, paths or methods)", field,
        tostring(k))
    end
    if type(list) ~= "table" then
      misuse("bad field '%s.%s' to 'openapi' (list of strings expected, got %s)", field, k,
        type(list))
    end
    for i, v in ipairs(list) do
      if type(v) ~= "string" then
        misuse("bad field '%s.%s[%d]' to 'openapi' (string expected, got %s)", field, k, i,
          type(v))
      end
    end
  end
end

-- The parameters of an operation: the path item's, overridden by the operation's of the same
-- name and location.
local function parameters(docs, item, op, item_where, op_where)
  local list, index = {}, {}
  local function add(params, where)
    if params == nil then return end
    if type(params) ~= "table" then fail(where, "an array of parameters expected") end
    for i, raw in ipairs(params) do
      local pwhere = at(where, i - 1)
      local p, pw = docs:deref(raw, pwhere)
      if type(p) ~= "table" then fail(pwhere, "a parameter object expected") end
      if type(p.name) ~= "string" or p.name == "" then fail(pw, "a parameter needs a 'name'") end
      if not LOCATIONS[p["in"]] then
        fail(pw, "parameter '%s': 'in' must be path, query, header or cookie, got %s", p.name,
          tostring(p["in"]))
      end
      if p.schema == nil and p.content == nil then p = setmetatable({ schema = {} },
        { __index = p }) end
      local key = p["in"] .. ":" .. p.name
      if index[key] then
        list[index[key]] = { p = p, where = pw }
      else
        list[#list + 1] = { p = p, where = pw }
        index[key] = #list
      end
    end
  end
  add(item.parameters, at(item_where, "parameters"))
  add(op.parameters, at(op_where, "parameters"))
  local out = {}
  for _, e in ipairs(list) do
    local p = e.p
    if not (p["in"] == "header" and IGNORED_HEADERS[p.name:lower()]) then out[#out + 1] = e end
  end
  return out
end

local JSON_MEDIA = "^application/[%w.+-]*json$"
-- The media types of a request body we can send, best first.
local function pick_media(content)
  local best, rank
  for media in pairs(content) do
    local m = media:lower():match("^%s*([^;%s]+)")
    local r = m == "application/json" and 1 or (m and m:find(JSON_MEDIA) and 2)
      or m == "application/x-www-form-urlencoded" and 3 or m == "multipart/form-data" and 4
      or (m and m:find("^text/")) and 5 or (m == "application/octet-stream" or m == "*/*")
      and 6 or nil
    if r and (not rank or r < rank or (r == rank and media < best)) then best, rank = media, r end
  end
  return best, rank
end
local KIND_OF_RANK = { "json", "json", "form", "multipart", "text", "raw" }

-- Can the body schema `s` be spread into the arguments? An object with named properties
-- and nothing that would be lost (composition, additional properties).
local function flattenable(s)
  if type(s) ~= "table" or type(s.properties) ~= "table" or next(s.properties) == nil then
    return false
  end
  if s.type ~= nil and s.type ~= "object" then return false end
  if s.allOf or s.anyOf or s.oneOf or s["not"] or s.patternProperties or s["if"] then
    return false
  end
  return s.additionalProperties == nil or s.additionalProperties == false
end

local function sorted_keys(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys)
  return keys
end

-- A parameter's schema for the tool, and the media type of its `content` if it has one.
local function parameter_schema(conv, p, where, acc)
  local s, swhere, media = p.schema, at(where, "schema"), nil
  if s == nil then
    if type(p.content) ~= "table" then fail(where, "a parameter needs 'schema' or 'content'") end
    media = next(p.content)
    local m = p.content[media]
    s, swhere = type(m) == "table" and m.schema or {}, at(where, "content", media, "schema")
  end
  local out = conv:schema(s, swhere, acc)
  if type(out) == "table" then -- 2020-12 reads these beside a $ref too
    if type(p.description) == "string" then out.description = p.description end
    if p.deprecated == true then out.deprecated = true end
    if p.example ~= nil and out.examples == nil then out.examples = json.array { p.example } end
  end
  return out, media
end

-- The request body of `op`: nil, a plan, or false and why it cannot be sent.
local function body_plan(docs, conv, op, where, acc)
  if op.requestBody == nil then return nil end
  local rb, rw = docs:deref(op.requestBody, at(where, "requestBody"))
  if type(rb) ~= "table" or type(rb.content) ~= "table" then
    fail(rw, "a request body needs 'content'")
  end
  local media, rank = pick_media(rb.content)
  if not media then
    local types = sorted_keys(rb.content)
    return false, "its request body's media types (" .. table.concat(types, ", ")
      .. ") are not sent: JSON, forms and text are"
  end
  local m = rb.content[media]
  local mwhere = at(rw, "content", media)
  local plan = { media = media:match("^%s*([^;%s]+)"), kind = KIND_OF_RANK[rank],
    required = rb.required == true, description = rb.description,
    encoding = type(m) == "table" and m.encoding or nil }
  local s = type(m) == "table" and m.schema or nil
  local target, twhere = nil, at(mwhere, "schema")
  if s ~= nil then target, twhere = conv:target(s, twhere) end
  if plan.kind ~= "text" and plan.kind ~= "raw" and flattenable(target) then
    plan.properties = {}
    local required = {}
    for _, r in ipairs(type(target.required) == "table" and target.required or {}) do
      required[r] = true
    end
    for _, name in ipairs(sorted_keys(target.properties)) do
      local ps = target.properties[name]
      local resolved = type(ps) == "table" and conv:target(ps, at(twhere, "properties", name))
      if not (type(resolved) == "table" and resolved.readOnly == true) then
        plan.properties[#plan.properties + 1] = { name = name,
          schema = conv:schema(ps, at(twhere, "properties", name), acc),
          required = plan.required and required[name] or false }
      end
    end
  elseif plan.kind == "text" or plan.kind == "raw" then
    plan.schema = json.object { type = "string" }
  else
    plan.schema = s ~= nil and conv:schema(s, at(mwhere, "schema"), acc) or json.object()
  end
  return plan
end

local function json_media(content)
  for _, media in ipairs(sorted_keys(content)) do
    local m = media:lower():match("^%s*([^;%s]+)")
    if m and m:find(JSON_MEDIA) then return media end
  end
end

local function is_object_schema(t)
  if type(t) ~= "table" then return false end
  if t.type == "object" then return true end
  return t.type == nil and (t.properties ~= nil or t.allOf ~= nil
    or t.additionalProperties ~= nil)
end

-- The output schema of `op` (converted by `conv`, of responses): its 2xx responses' JSON
-- schemas, when every one of them has one and each is an object (a response without one
-- gives no structured result, which an output schema would refuse); nil otherwise.
local function output_of(docs, conv, op, where)
  local responses = op.responses
  if type(responses) ~= "table" then return nil end
  local acc, list, seen = { refs = {}, nodes = 0 }, json.array(), {}
  for _, code in ipairs(sorted_keys(responses)) do
    local c = tostring(code)
    if c:match("^2%d%d$") or c:upper() == "2XX" then
      local r, rw = docs:deref(responses[code], at(where, "responses", c))
      local content = type(r) == "table" and r.content
      local media = type(content) == "table" and json_media(content)
      local s = media and type(content[media]) == "table" and content[media].schema
      if s == nil or s == false then return nil end
      local swhere = at(rw, "content", media, "schema")
      if not is_object_schema(conv:target(s, swhere)) then return nil end
      local out = conv:schema(s, swhere, acc)
      local key = json.encode(out)
      if not seen[key] then
        seen[key] = true
        list[#list + 1] = out
      end
    end
  end
  if #list == 0 then return nil end
  local out = list[1]
  if #list > 1 then
    out = json.object { type = "object", anyOf = list }
  elseif out.type ~= "object" then -- a $ref, or an allOf: the root says object itself
    out = json.object { type = "object", allOf = list }
  end
  out["$defs"] = conv:defs_of(acc, where)
  return out
end

-- `output_of`, or nil and why when the responses' schemas are at fault: the operation is
-- still a tool, without an output schema (its results are not checked).
local function output_schema(docs, conv, op, where)
  local out, err = errors.catch(pcall(output_of, docs, conv, op, where))
  if err == nil then return out end
  if err.kind ~= "openapi" then errors.throw(err.kind, err.message, err) end
  for k, d in pairs(conv.defs) do -- left half-converted by the fault
    if d.schema == nil then conv.defs[k] = nil end
  end
  return nil, err.message
end

-- The security requirements of an operation: a list of alternatives, each a list of
-- `{ name =, scheme = }` (the scheme object resolved).
local function security(docs, op, where)
  local reqs, rwhere = op.security, at(where, "security")
  if reqs == nil then reqs, rwhere = docs.root.security, "#/security" end
  if reqs == nil then return {} end
  if type(reqs) ~= "table" then fail(rwhere, "an array of security requirements expected") end
  local components = docs.root.components
  local schemes = type(components) == "table" and components.securitySchemes or {}
  local out = {}
  for i, req in ipairs(reqs) do
    local alt = {}
    for _, name in ipairs(sorted_keys(req)) do
      local s, sw = docs:deref(schemes[name],
        at("#/components/securitySchemes", name))
      if type(s) ~= "table" then
        fail(at(rwhere, i - 1), "security scheme '%s' is not in components.securitySchemes", name)
      end
      alt[#alt + 1] = { name = name, scheme = s, where = sw }
    end
    out[#out + 1] = alt
  end
  return out
end

--- Plans every chosen operation of the document.
-- @param docs the claude.openapi.refs set of the document
-- @param conv a claude.openapi.schema converter (of requests)
-- @tparam table opts `include`, `exclude`, `names`
-- @param out_conv a converter of responses (the tools' output schemas)
-- @treturn table the plans, in the document's order of paths (sorted) and methods
-- @treturn table the operations left out, each `{ method, path, operation_id, reason }`
function M.plan_all(docs, conv, opts, out_conv)
  local paths = docs.root.paths
  if paths == nil then return {}, json.array() end
  if type(paths) ~= "table" then fail("#/paths", "an object expected") end
  local plans, skipped, taken = {}, json.array(), {}
  for _, path in ipairs(sorted_keys(paths)) do
    local pwhere = at("#/paths", path)
    if path:sub(1, 1) ~= "/" then fail(pwhere, "a path must start with '/'") end
    local item, iwhere = docs:deref(paths[path], pwhere)
    if type(item) ~= "table" then fail(pwhere, "a path item object expected") end
    for _, method in ipairs(METHODS) do
      local op = item[method]
      if op ~= nil then
        local owhere = at(iwhere, method)
        if type(op) ~= "table" then fail(owhere, "an operation object expected") end
        local tags = type(op.tags) == "table" and op.tags or {}
        local info = { method = method:upper(), path = path, tags = tags,
          operation_id = type(op.operationId) == "string" and op.operationId or nil }
        if M.chosen(opts, info) then
          local plan, why = M.plan(docs, conv, item, op, info, iwhere, owhere, opts, taken,
            out_conv)
          if plan then
            plans[#plans + 1] = plan
          else
            info.reason = why
            skipped[#skipped + 1] = info
          end
        end
      end
    end
  end
  return plans, skipped
end

--- Plans one operation (see the module's description for the argument names).
-- @return the plan, or false and why the operation is left out
function M.plan(docs, conv, item, op, info, iwhere, owhere, opts, taken, out_conv)
  local acc = { refs = {}, nodes = 0 }
  local body, why = body_plan(docs, conv, op, owhere, acc)
  if body == false then return false, why end
  local params = parameters(docs, item, op, iwhere, owhere)
  local keys, properties, required = {}, json.object(), json.array()
  -- the body's properties keep their names; parameters give way
  local body_names, count = {}, {}
  if body and body.properties then
    for _, bp in ipairs(body.properties) do body_names[bp.name] = true end
  elseif body then
    body_names.body = true
  end
  for _, e in ipairs(params) do count[e.p.name] = (count[e.p.name] or 0) + 1 end
  local plan = { method = info.method, path = info.path, operation_id = info.operation_id,
    tags = info.tags, where = owhere, params = {}, body = body,
    security = security(docs, op, owhere),
    servers = op.servers or item.servers or docs.root.servers,
    summary = op.summary, description = op.description, deprecated = op.deprecated == true }
  local function add(key, schema, is_required)
    properties[key] = schema
    if is_required then required[#required + 1] = key end
  end
  if body and body.properties then
    for _, bp in ipairs(body.properties) do
      bp.key = claim(keys, sanitize(bp.name))
      add(bp.key, bp.schema, bp.required)
    end
  elseif body then
    body.key = claim(keys, "body")
    local s = body.schema
    if type(s) == "table" and type(body.description) == "string" and s.description == nil then
      s.description = body.description
    end
    add(body.key, s, body.required)
  end
  for _, e in ipairs(params) do
    local p = e.p
    local name = p.name
    if count[name] > 1 or body_names[name] then name = name .. "_" .. p["in"] end
    local schema, media = parameter_schema(conv, p, e.where, acc)
    local key = claim(keys, sanitize(name))
    local is_required = p["in"] == "path" or p.required == true
    plan.params[#plan.params + 1] = { key = key, name = p.name, location = p["in"],
      style = p.style, explode = p.explode, allow_reserved = p.allowReserved == true,
      media = media, required = is_required }
    add(key, schema, is_required)
  end
  for name in info.path:gmatch("{([^}]+)}") do
    local found = false
    for _, pp in ipairs(plan.params) do
      if pp.location == "path" and pp.name == name then found = true end
    end
    if not found then
      fail(owhere, "the path names {%s} but the operation has no path parameter '%s'", name,
        name)
    end
  end
  local input = json.object { type = "object", properties = properties }
  if #required > 0 then input.required = required end
  input.additionalProperties = false
  input["$defs"] = conv:defs_of(acc, owhere)
  plan.input_schema = input
  plan.output_schema, plan.output_fault = output_schema(docs, out_conv, op, owhere)
  local names = opts.names or {}
  local chosen = info.operation_id and names[info.operation_id]
    or names[info.method .. " " .. info.path]
  plan.name = claim(taken, chosen or base_name(info.method:lower(), info.path, op))
  return plan
end

return M
