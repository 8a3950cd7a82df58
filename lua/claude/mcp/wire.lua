--- The answers on the wire: how every transport spells a JSON-RPC answer (a result, a tool's
-- text result, an error), and what a result carries beyond its payload, per era.
--
-- A tool call's answer is written around its values, with no message table made: `RPC` id
-- `TEXT` text and the end of a text result of its era (`TEXT_END`, or `text_end(meta)` in the
-- modern era), or `RPC` id `RESULT` result `"}"`: by the transports' `write_pieces` (stdio,
-- the session's control channel, whose envelope goes around these) or as one string
-- (`answer_text`, HTTP, built in C by `core.json_pieces`, the same encoding). The same answer as
-- a message table is `answer`, a text result as a table `text_result`.
--
-- In the modern era (2026-07-28 on) every result says its `resultType`, the cacheable ones
-- (`era.CACHEABLE`) carry caching hints (`ttlMs`, `cacheScope`) and the server names itself in
-- `_meta`; the legacy era has none of these. Era-generic: both halves (the server stamps, the
-- client reads) use it, and the payloads (a CallToolResult, a list) stay the same in both eras.
-- @module claude.mcp.wire
local core = require "claude.core"
local json = require "claude.json"
local era = require "claude.mcp.era"
local errors = require "claude.errors"

local M = {}

local type, fmt, tostring = type, string.format, tostring
local json_pieces, jarray, rpc_error = core.json_pieces, json.array, core.jsonrpc_error

---------------------------------------------------------------------------------------------
-- Answers
---------------------------------------------------------------------------------------------

--- The raw pieces of an answer, written around its id and its result or text.
local RPC <const> = '{"jsonrpc":"2.0","id":'
local TEXT <const> = ',"result":{"content":[{"type":"text","text":'
local RESULT <const> = ',"result":'
M.RPC, M.TEXT, M.RESULT = RPC, TEXT, RESULT

--- The end of a text result of the legacy era: `body` ends a message, `line` a message and
-- its line (the stdio transports').
M.TEXT_END = { body = "}]}}", line = "}]}}\n" }
local TEXT_END = M.TEXT_END

--- The end of a text result of the modern era, for a server whose `_meta` is `meta`
-- (`server_meta`): its `resultType` and `_meta` after the content; made once per server.
-- @tparam table meta
-- @treturn table `{ body =, line = }`, as `TEXT_END`
function M.text_end(meta)
  local body = '}],"resultType":"complete","_meta":' .. json.encode(meta) .. "}}"
  return { body = body, line = body .. "\n" }
end

--- A `CallToolResult` with one text block; with `meta` (the modern era), stamped complete
-- with the server's `_meta`.
-- @tparam string s
-- @tparam[opt] table meta
-- @treturn table
function M.text_result(s, meta)
  local r = { content = jarray { { type = "text", text = s } } }
  if meta then r.resultType, r._meta = "complete", meta end
  return r
end
local text_result = M.text_result

--- The answer to request `id` as a message: its result, or its text result when `text` (or
-- when the result is a string); `meta` stamps a text result (`text_result`).
-- @param id
-- @param result a result table, or the text of a text result
-- @tparam[opt] boolean text
-- @tparam[opt] table meta
-- @treturn table
function M.answer(id, result, text, meta)
  if text or type(result) == "string" then result = text_result(result, meta) end
  return { jsonrpc = "2.0", id = id, result = result }
end

--- The answer to request `id` as its JSON text (what `answer` encodes to), made in one C
-- call: its text result ended by `ends` (`TEXT_END` unless given), or its result table.
-- @param id
-- @param result
-- @tparam[opt] boolean text
-- @tparam[opt] table ends
-- @return the text, or nil, err, "encode" for a value JSON cannot carry
function M.answer_text(id, result, text, ends)
  if text or type(result) == "string" then
    return json_pieces(RPC, id, TEXT, result, (ends or TEXT_END).body)
  end
  return json_pieces(RPC, id, RESULT, result, "}")
end

--- A JSON-RPC error answer as its JSON text (`id` nil: null).
-- @param id
-- @tparam integer code
-- @tparam string message
-- @param[opt] data
-- @treturn string
function M.error_text(id, code, message, data)
  return json.encode(rpc_error(id, code, message, data))
end

--- The answer to request `id` whose result JSON cannot carry (`err`, the encoder's): an
-- internal error that says so, so that the client still gets an answer.
-- @param id
-- @param err
-- @treturn table
function M.unencodable(id, err)
  return rpc_error(id, -32603, "Internal error: the result cannot be encoded as JSON: "
    .. tostring(err))
end

---------------------------------------------------------------------------------------------
-- The stamps of the modern era
---------------------------------------------------------------------------------------------
local SERVER_INFO, CACHEABLE = era.META.server_info, era.CACHEABLE

--- The caching hints of a server that sets none: the client may keep a result but must
-- check it again before using it (`ttlMs = 0`), and only for itself (`private`): a list or a
-- read may depend on who asks (the token of an OAuth server).
M.DEFAULT_CACHE = { ttl_ms = 0, scope = "private" }

local SCOPES = { public = true, private = true }
local CACHE_FIELDS = { ttl_ms = true, scope = true }

--- Check a `cache` option (`{ ttl_ms = integer >= 0, scope = "public" | "private" }`, both
-- optional), raising a misuse naming `field` of `fname`; nil stays nil.
-- @param v the option
-- @tparam string fname the function it was given to
-- @tparam[opt="cache"] string field
-- @treturn table|nil `{ ttl_ms =, scope = }`, the defaults filled in
function M.check_cache(v, fname, field)
  field = field or "cache"
  if v == nil then return nil end
  errors.check_field(v, field, fname, "table")
  errors.check_fields(v, CACHE_FIELDS, fname, field)
  local ttl, scope = v.ttl_ms, v.scope
  if ttl ~= nil and not (math.type(ttl) == "integer" and ttl >= 0) then
    errors.bad_field(field .. ".ttl_ms", fname, "non-negative integer expected, got %s",
      type(ttl) == "number" and tostring(ttl) or errors.typename(ttl))
  end
  if scope ~= nil and not SCOPES[scope] then
    errors.bad_field(field .. ".scope", fname, "'public' or 'private' expected, got %s",
      type(scope) == "string" and fmt("'%s'", scope) or errors.typename(scope))
  end
  return { ttl_ms = ttl or M.DEFAULT_CACHE.ttl_ms, scope = scope or M.DEFAULT_CACHE.scope }
end

--- The `_meta` a server puts in each of its results: `{ [serverInfo key] = {name, version} }`.
-- @tparam string name
-- @tparam string version
-- @treturn table
function M.server_meta(name, version)
  return { [SERVER_INFO] = { name = name, version = version } }
end

--- Stamp a result of `method` for the modern era, in place: `resultType` ("complete" unless
-- set), the caching hints of a cacheable result (those of `cache` unless set), and the
-- entries of `meta` in its `_meta` (a `_meta` of its own is copied, not changed).
-- @tparam string method
-- @tparam table result
-- @tparam table meta from `server_meta`
-- @tparam[opt] table cache `{ ttl_ms =, scope = }` (default `DEFAULT_CACHE`)
-- @treturn table result
function M.stamp(method, result, meta, cache)
  if result.resultType == nil then result.resultType = "complete" end
  if CACHEABLE[method] then
    cache = cache or M.DEFAULT_CACHE
    if result.ttlMs == nil then result.ttlMs = cache.ttl_ms end
    if result.cacheScope == nil then result.cacheScope = cache.scope end
  end
  local own = result._meta
  if own == nil then
    result._meta = meta
  elseif type(own) == "table" and own ~= meta then
    local m = {}
    for k, v in pairs(own) do m[k] = v end
    for k, v in pairs(meta) do if m[k] == nil then m[k] = v end end
    result._meta = m
  end
  return result
end

--- The kind of a result read from a peer: its `resultType`, "complete" when absent (a
-- legacy peer's, or a modern one that left it out).
-- @tparam table result
-- @treturn string
function M.result_type(result)
  local t = type(result) == "table" and result.resultType
  return type(t) == "string" and t or "complete"
end

return M
