--- An OpenAPI 3.0 or 3.1 document: read from a file, fetched from a URL (the HTTP client,
-- behind a URL guard) or given as a table, JSON or YAML; its version checked. The documents
-- its `$ref`s name are claude.openapi.refs'.
--
-- A fault of the document is thrown (`claude.errors.throw`, kind `openapi`) with `where`, the
-- JSON pointer of the place (`#/paths/~1pets/get/parameters/0`), in the message too;
-- `claude.openapi` catches it and returns it.
-- @module claude.openapi.document
local json = require "claude.json"
local errors = require "claude.errors"

local M = {}

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

--- The bytes of the file at `path`, at most `max`; or nil, err, kind.
function M.read_file(path, max)
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

--- The body of `url`, behind `opts.guard`, at most `max` bytes; or nil, err, kind.
function M.fetch(url, opts, max)
  local target = { url = url }
  if opts.guard then
    local checked, err = opts.guard:check(url)
    if not checked then return nil, err, err.kind end
    target.resolve = checked.resolve
  end
  local resp, err = require("claude.http.client").request { url = url, timeout = opts.timeout,
    max_body = max, resolve = target.resolve,
    headers = { accept = "application/json, application/yaml;q=0.9, */*;q=0.8" } }
  if not resp then
    if err.kind == "overflow" then
      return errors.fail("overflow", string.format("openapi: the document at %s is over "
        .. "max_document (%d bytes)", url, opts.max_document))
    end
    return nil, err, err.kind
  end
  return resp.body
end

--- The document of a text: JSON when it starts with `{`, else YAML (claude.yaml: aliases
-- bounded, one document); `name` is how messages call it.
-- @return the document, or nil and the error (kind `openapi`, or `unsupported` without libyaml)
function M.decode(text, name)
  local doc, err
  if text:match("^%s*{") then
    doc, err = json.decode(text)
    if doc == nil then
      return nil, errors.new("openapi", "openapi: " .. name .. " is not valid JSON: "
        .. tostring(err), { where = "#" })
    end
    return doc
  end
  local kind
  doc, err, kind = require("claude.yaml").decode(text)
  if doc == nil then
    if kind == "unsupported" then return nil, err end
    return nil, errors.new("openapi", "openapi: " .. name .. " is not valid YAML: "
      .. errors.message(err), { where = "#" })
  end
  return doc
end

--- Reads the document of `source`: a table as it is, a URL fetched (`opts.guard`,
-- `opts.timeout`, `opts.max_document`), else a file path.
-- @return the document and its size in bytes (0 for a table), or nil, err, kind
function M.load(source, opts)
  if type(source) == "table" then return source, 0 end
  local text, err, kind
  if source:match("^[hH][tT][tT][pP][sS]?://") then
    text, err, kind = M.fetch(source, opts, opts.max_document)
  else
    text, err, kind = M.read_file(source, opts.max_document)
  end
  if not text then return nil, err, kind end
  local doc, derr = M.decode(text, source)
  if doc == nil then return nil, derr, derr.kind end
  return doc, #text
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
