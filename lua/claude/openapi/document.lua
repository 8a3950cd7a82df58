--- An OpenAPI 3.0 or 3.1 document: read from a file, fetched from a URL (the HTTP client,
-- behind a URL guard) or given as a table; its version checked; local `$ref`s followed.
--
-- A fault of the document is thrown (`claude.errors.throw`, kind `openapi`) with `where`, the
-- JSON pointer of the place (`#/paths/~1pets/get/parameters/0`), in the message too;
-- `claude.openapi` catches it and returns it.
-- @module claude.openapi.document
local json = require "claude.json"
local errors = require "claude.errors"

local M = {}

local MAX_REF_CHAIN = 32 -- a $ref to a $ref to ...: deeper than any real document goes

--- A JSON pointer token: `~` and `/` escaped (RFC 6901).
function M.escape(token)
  return (tostring(token):gsub("~", "~0"):gsub("/", "~1"))
end

--- `where` extended by the tokens given.
function M.at(where, ...)
  local parts = { where }
  for i = 1, select("#", ...) do parts[#parts + 1] = M.escape((select(i, ...))) end
  return table.concat(parts, "/")
end

--- Throws the document's fault at `where`.
function M.fail(where, fmt, ...)
  local msg = fmt:format(...)
  errors.throw("openapi", where .. ": " .. msg, { where = where })
end

local function decode_pointer_token(t)
  t = t:gsub("%%(%x%x)", function(h) return string.char(tonumber(h, 16)) end)
  return (t:gsub("~1", "/"):gsub("~0", "~"))
end

-- The value at a local reference `#/a/b` of `doc`, or nil and why.
local function lookup(doc, ref)
  if ref == "#" then return doc end
  if ref:sub(1, 2) ~= "#/" then return nil, "only local references (#/...) are followed" end
  local v = doc
  for raw in (ref:sub(3) .. "/"):gmatch("([^/]*)/") do
    if type(v) ~= "table" then return nil, "it leads nowhere" end
    local token = decode_pointer_token(raw)
    local n = json.is_array(v) and tonumber(token)
    if n and token:match("^%d+$") then v = v[n + 1] else v = v[token] end
    if v == nil then return nil, "no '" .. token .. "' there" end
  end
  return v
end

--- Follows the `$ref`s of an object that is not a schema (a parameter, a request body, a
-- path item...) to the object itself; chains are followed up to a bound, cycles refused.
-- @return the object, and where it is (its pointer, or `where` when it was no reference)
function M.deref(doc, value, where)
  local origin, seen, chain = where, {}, {}
  for _ = 1, MAX_REF_CHAIN do
    if type(value) ~= "table" or type(value["$ref"]) ~= "string" then return value, where end
    local ref = value["$ref"]
    chain[#chain + 1] = ref
    if seen[ref] then M.fail(origin, "circular $ref: %s", table.concat(chain, " -> ")) end
    seen[ref] = true
    local target, why = lookup(doc, ref)
    if target == nil then M.fail(origin, "$ref '%s' cannot be resolved: %s", ref, why) end
    value, where = target, ref
  end
  M.fail(origin, "$ref chain longer than %d", MAX_REF_CHAIN)
end

M.lookup = lookup

local function read_file(path, max)
  local f, err = io.open(path, "rb")
  if not f then return errors.fail("ENOENT", "openapi: cannot read " .. tostring(err)) end
  local size = f:seek("end")
  if size and size > max then
    f:close()
    return errors.fail("overflow", string.format("openapi: %s is %d bytes, over max_document "
      .. "(%d)", path, size, max))
  end
  f:seek("set")
  local text = f:read("a")
  f:close()
  return text
end

local function fetch(url, opts)
  local target = { url = url }
  if opts.guard then
    local checked, err = opts.guard:check(url)
    if not checked then return nil, err, err.kind end
    target.resolve = checked.resolve
  end
  local resp, err = require("claude.http.client").request { url = url, timeout = opts.timeout,
    max_body = opts.max_document, resolve = target.resolve,
    headers = { accept = "application/json" } }
  if not resp then
    if err.kind == "overflow" then
      return errors.fail("overflow", string.format("openapi: the document at %s is over "
        .. "max_document (%d bytes)", url, opts.max_document))
    end
    return nil, err, err.kind
  end
  return resp.body
end

--- Reads the document of `source`: a table as it is, a URL fetched (`opts.guard`,
-- `opts.timeout`, `opts.max_document`), else a file path.
-- @return the document and its URL (nil unless fetched), or nil, err, kind
function M.load(source, opts)
  local text, err, kind
  local url
  if type(source) == "table" then return source end
  if source:match("^[hH][tT][tT][pP][sS]?://") then
    url = source
    text, err, kind = fetch(source, opts)
  else
    text, err, kind = read_file(source, opts.max_document)
  end
  if not text then return nil, err, kind end
  if not text:match("^%s*{") then
    return errors.fail("openapi", "openapi: " .. source .. " is not a JSON document "
      .. "(YAML is not read: convert it to JSON first)", { where = "#" })
  end
  local doc, derr = json.decode(text)
  if doc == nil then
    return errors.fail("openapi", "openapi: " .. source .. " is not valid JSON: "
      .. tostring(derr), { where = "#" })
  end
  return doc, url
end

--- The major.minor version of a document ("3.0" or "3.1"); throws for any other.
function M.version(doc)
  if type(doc) ~= "table" then M.fail("#", "an object expected, got %s", type(doc)) end
  local v = doc.openapi
  if v == nil then
    if doc.swagger then
      M.fail("#/swagger", "Swagger %s is not OpenAPI 3: convert it first", tostring(doc.swagger))
    end
    M.fail("#", "no 'openapi' version field: not an OpenAPI 3 document")
  end
  local minor = type(v) == "string" and v:match("^3%.([01])%.%d+")
  if not minor then M.fail("#/openapi", "version '%s' is not 3.0.x or 3.1.x", tostring(v)) end
  return "3." .. minor
end

return M
