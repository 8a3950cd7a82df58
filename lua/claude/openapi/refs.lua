--- The documents of one load: the OpenAPI document and those its `$ref`s name, each read once.
--
-- A place in them is a location: the document's name, `#`, a JSON pointer. The document
-- itself is named "" (`#/components/schemas/Pet`); a file beside it by its path from the
-- document's folder (`schemas/pet.yaml#/properties/name`); a URL by itself. A `$ref` is read
-- against the document it is in: relative files stay beneath the folder of the document
-- (read with core.read_beneath: no `..`, absolute path or link leads out), relative URLs are
-- resolved against its URL (RFC 3986), and every URL goes through the URL guard. The count
-- of documents (`max_documents`) and their bytes together (`max_document`) are bounded.
-- @module claude.openapi.refs
local core = require "claude.core"
local json = require "claude.json"
local errors = require "claude.errors"
local document = require "claude.openapi.document"

local M = {}

local MAX_REF_CHAIN = 32 -- a $ref to a $ref to ...: deeper than any real document goes

local fail = document.fail

local Set = {}
Set.__index = Set

--- The set of a document read from `origin` (a path, a URL, or nil for a table).
-- @tparam table root the document
-- @tparam[opt] string origin
-- @tparam integer bytes the root's size, counted in `max_document`
-- @tparam table opts `guard`, `timeout`, `max_document`, `max_documents`
function M.new(root, origin, bytes, opts)
  local s = setmetatable({ root = root, docs = { [""] = root }, opts = opts, count = 1,
    bytes = bytes or 0 }, Set)
  if origin and origin:match("^[hH][tT][tT][pP][sS]?://") then
    s.url = origin:gsub("#.*$", "")
  elseif origin then
    s.folder = origin:match("^(.*)/[^/]*$") or "."
    if s.folder == "" then s.folder = "/" end
    s.file = origin:match("[^/]*$")
  end
  return s
end

local function split(location)
  local hash = location:find("#", 1, true)
  if not hash then return location, "" end
  return location:sub(1, hash - 1), location:sub(hash + 1)
end

local function unescape(s)
  return (s:gsub("%%(%x%x)", function(h) return string.char(tonumber(h, 16)) end))
end

-- `rel` read against the file `from` (paths from the root's folder), dot segments removed;
-- nil when it climbs out of the folder.
local function join_file(from, rel)
  local parts = {}
  for seg in (from:match("^(.*)/[^/]*$") or ""):gmatch("[^/]+") do parts[#parts + 1] = seg end
  for seg in rel:gmatch("[^/]+") do
    if seg == ".." then
      if #parts == 0 then return nil end
      parts[#parts] = nil
    elseif seg ~= "." then
      parts[#parts + 1] = seg
    end
  end
  return table.concat(parts, "/")
end

-- A reference read against the absolute URL `base` (RFC 3986, 5.2).
local function join_url(base, ref)
  if ref:match("^%a[%w+.-]*:") then return ref end
  local scheme, authority, path = base:match("^(%a[%w+.-]*:)(//[^/?#]*)([^?#]*)")
  if ref:sub(1, 2) == "//" then return scheme .. ref end
  local rpath, rest = ref:match("^([^?#]*)(.*)$")
  if rpath == "" then return scheme .. authority .. path .. rest end
  if rpath:sub(1, 1) ~= "/" then rpath = path:gsub("[^/]*$", "") .. rpath end
  if rpath:sub(1, 1) ~= "/" then rpath = "/" .. rpath end
  local out = {}
  local segs = {}
  for seg in (rpath:sub(2) .. "/"):gmatch("([^/]*)/") do segs[#segs + 1] = seg end
  for i, seg in ipairs(segs) do
    if seg == ".." then
      out[#out] = nil
      if i == #segs then out[#out + 1] = "" end
    elseif seg == "." then
      if i == #segs then out[#out + 1] = "" end
    else
      out[#out + 1] = seg
    end
  end
  return scheme .. authority .. "/" .. table.concat(out, "/") .. rest
end

-- The name of the document the address of `ref` names, read from the document `from`.
function Set:name_of(ref, address, from, where)
  local base_url = from == "" and self.url or (from:match("^%a[%w+.-]*://") and from)
  local absolute = address:match("^%a[%w+.-]*:")
  if absolute or base_url then
    local url = absolute and address or join_url(base_url, address)
    if not url:match("^[hH][tT][tT][pP][sS]?://") then
      fail(where, "$ref '%s': only http and https URLs are read", ref)
    end
    return url == self.url and "" or url
  end
  if not self.folder then
    fail(where, "$ref '%s' is relative: it needs the document's path or URL, and this one "
      .. "was given as a table", ref)
  end
  local rel = join_file(from == "" and self.file or from, unescape(address))
  if rel == nil or address:sub(1, 1) == "/" then
    fail(where, "$ref '%s' leads out of the document's folder", ref)
  end
  return rel == self.file and "" or rel
end

-- Reads the document `name` (a URL, or a path from the root's folder) once.
function Set:load(name, where)
  if self.docs[name] ~= nil then return self.docs[name] end
  local opts = self.opts
  if self.count >= opts.max_documents then
    fail(where, "more than %d documents referred to (max_documents)", opts.max_documents)
  end
  local room = opts.max_document - self.bytes
  local text, err, kind
  if name:match("^%a[%w+.-]*://") then
    text, err, kind = document.fetch(name, opts, room)
  else
    text, err, kind = core.read_beneath(self.folder, name, room)
    if kind == "ENOSYS" then -- no openat2: the real path checked, then read
      local real, inside = core.realpath(self.folder .. "/" .. name), core.realpath(self.folder)
      if real and inside and real:sub(1, #inside + 1) == inside .. "/" then
        text, err, kind = document.read_file(real, room)
      else
        text, err, kind = nil, "it leads out of the document's folder", "EXDEV"
      end
    end
    if kind == "EXDEV" then err = "it leads out of the document's folder (a link)" end
    -- a file that is not there is a fault of the document that names it
    if kind == "EFBIG" then
      kind, err = "overflow", "over max_document with the documents before it"
    elseif kind then
      kind = "openapi"
    end
  end
  if not text then
    errors.throw(kind or "openapi", string.format("%s: %s cannot be read: %s", where, name,
      errors.message(err)), { where = where })
  end
  self.count, self.bytes = self.count + 1, self.bytes + #text
  local doc, derr = document.decode(text, name)
  if doc == nil then errors.throw(derr.kind, derr.message, { where = where }) end
  self.docs[name] = doc
  return doc
end

--- The absolute location of the reference `ref` found at `where`, its document read.
function Set:resolve(ref, where)
  local from = split(where)
  local address, fragment = split(ref)
  local name = address == "" and from or self:name_of(ref, address, from, where)
  self:load(name, where)
  return name .. "#" .. unescape(fragment)
end

local function decode_pointer_token(t)
  return (t:gsub("~1", "/"):gsub("~0", "~"))
end

--- The value at a location, or nil and why.
function Set:lookup(location)
  local name, pointer = split(location)
  local v = self.docs[name]
  if v == nil then return nil, "its document is not read" end
  if pointer == "" then return v end
  if pointer:sub(1, 1) ~= "/" then
    return nil, "only JSON pointers (#/...) are followed, not anchors"
  end
  for raw in (pointer:sub(2) .. "/"):gmatch("([^/]*)/") do
    if type(v) ~= "table" then return nil, "it leads nowhere" end
    local token = decode_pointer_token(raw)
    local n = json.is_array(v) and tonumber(token)
    if n and token:match("^%d+$") then v = v[n + 1] else v = v[token] end
    if v == nil then return nil, "no '" .. token .. "' there" end
  end
  return v
end

--- The value a `$ref` found at `where` names, and its location; throws when it names none.
function Set:target(ref, where)
  local location = self:resolve(ref, where)
  local v, why = self:lookup(location)
  if v == nil then fail(where, "$ref '%s' cannot be resolved: %s", ref, why) end
  return v, location
end

--- Follows the `$ref`s of an object that is not a schema (a parameter, a request body, a
-- path item...) to the object itself; chains are followed up to a bound, cycles refused.
-- @return the object, and its location (`where` when it was no reference)
function Set:deref(value, where)
  local origin, seen, chain = where, {}, {}
  for _ = 1, MAX_REF_CHAIN do
    if type(value) ~= "table" or type(value["$ref"]) ~= "string" then return value, where end
    local ref = value["$ref"]
    local location = self:resolve(ref, where)
    chain[#chain + 1] = ref
    if seen[location] then fail(origin, "circular $ref: %s", table.concat(chain, " -> ")) end
    seen[location] = true
    local target, why = self:lookup(location)
    if target == nil then fail(origin, "$ref '%s' cannot be resolved: %s", ref, why) end
    value, where = target, location
  end
  fail(origin, "$ref chain longer than %d", MAX_REF_CHAIN)
end

return M
