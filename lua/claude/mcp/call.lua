--- The call record: one `tools/call` on its way from a reader to the router, and the one
-- shape every reader hands over, whatever read it (the C envelope readers of stdio and of
-- the CLI's control channel, the HTTP transport, the generic JSON decoder):
--
--     local call = require "claude.mcp.call"
--     local ID, TOOL, ARGS = call.ID, call.TOOL, call.ARGS
--     local rec = call.new { [call.SERVER] = "calc", [call.REPLY] = reply } -- once
--     rec[ID], rec[TOOL], rec[ARGS] = 7, "add", { a = 1, b = 2 }   -- each call (or C fills it)
--     router:call(rec)
--
-- A record belongs to the transport that fills it, and is filled again for the next call:
-- the router reads what it needs before it runs anything, and a call that waits keeps its
-- own copy in its request context. It is ours, never the client's: what a client sent is
-- read out of it (`ID`, `TOOL`, `ARGS`, `META`), and the server's own state for the call
-- lives in `REQ`, which the transport makes.
--
-- Its fields are slots by number, named by this module's constants: a reader in C fills
-- nine of them with `lua_rawseti`, a quarter of what a store by name costs there (about
-- 1,100 instructions a call by name, measured with `bench/call_cost`), and Lua reads a slot
-- as fast as a field. The readers fill the first seven, the control reader the next two; the
-- transport sets the rest:
--
--   ID           the JSON-RPC id (an integer or a string)
--   TOOL         the tool's name
--   ARGS         the arguments as decoded: a table, json.null, or nil when absent
--   META         `_meta`: the decoded table; core.MCP_CALL for the claude CLI's shape (a
--                progress token and a tool use id, nothing else: `TOKEN` and `TOOL_USE_ID`
--                are its values); the JSON text of the modern era's envelope (`VERSION` is
--                its protocol version; with the two values it makes `_meta`:
--                `envelope_meta`); or nil
--   TOKEN, TOOL_USE_ID, VERSION   as above (nil otherwise)
--   TAG          the transport's address of the answer, handed back to `REPLY` (the control
--                request's id on the CLI's channel, the JSON-RPC id on stdio)
--   SERVER       the server's name (the control reader fills it from the request)
--   REPLY        `reply(tag, result, id, text)`: writes the call's answer (see
--                `claude.mcp.router`'s `call`)
--   AUTH         the request's verified token (the principal: `ctx.auth`), or nil
--   REQ          what the transport knows of the client and keeps for the request
--                (`ctx._req`: `protocol_version`, `client_capabilities`, `client_info`,
--                `era`), or nil
--
-- @module claude.mcp.call
local core = require "claude.core"
local json = require "claude.json"
local era = require "claude.mcp.era"

local M = {}

local MCP_CALL, call_id = core.MCP_CALL, core.call_id

--- The slots of a record (mcp/record.c fills the first nine in this order).
M.ID, M.TOOL, M.ARGS, M.META, M.TOKEN, M.TOOL_USE_ID, M.VERSION = 1, 2, 3, 4, 5, 6, 7
M.TAG, M.SERVER, M.REPLY, M.AUTH, M.REQ = 8, 9, 10, 11, 12
local ID, TOOL, ARGS, META, TOKEN, TOOL_USE_ID, VERSION =
  M.ID, M.TOOL, M.ARGS, M.META, M.TOKEN, M.TOOL_USE_ID, M.VERSION
local SIZE = M.REQ

--- A new record with the values given (by slot), sized for every slot, so that filling it
-- never grows it.
-- @tparam[opt] table slots initial values, `{ [call.SERVER] = name, ... }`
-- @treturn table
function M.new(slots)
  -- (an array part of SIZE slots, kept when they are emptied)
  local rec = { false, false, false, false, false, false, false, false, false, false, false,
    false }
  for i = 1, SIZE do rec[i] = nil end
  for k, v in pairs(slots or {}) do rec[k] = v end
  return rec
end

--- Fill `rec` with a call's parts (a decoded `tools/call`: the generic decoder's path).
-- @tparam table rec
-- @param id
-- @tparam string tool
-- @param args
-- @param meta `_meta` as decoded (a table), or nil
-- @treturn table rec
function M.fill(rec, id, tool, args, meta)
  rec[ID], rec[TOOL], rec[ARGS], rec[META] = id, tool, args, meta
  rec[TOKEN], rec[TOOL_USE_ID], rec[VERSION] = nil, nil, nil
  return rec
end

local TOOL_USE_KEY = "claudecode/toolUseId" -- (the tool use id's key in _meta)

--- The `_meta` of a request whose envelope (the modern era's) a reader kept as its text: the
-- envelope decoded, with the token and the tool use id beside.
-- @tparam string text the envelope's JSON text (an object of its members alone)
-- @param[opt] token
-- @param[opt] tool_use_id
-- @treturn table
function M.envelope_meta(text, token, tool_use_id)
  local meta = json.decode(text)
  meta.progressToken, meta[TOOL_USE_KEY] = token, tool_use_id
  return meta
end

--- The `_meta` of the call in `rec` as a table (the claude CLI's shape and the modern
-- envelope's text made into one), or nil. (While its line is handled: the control reader's
-- held tool use id is made a string.)
-- @tparam table rec
-- @treturn table|nil
function M.meta(rec)
  local meta = rec[META]
  if meta == MCP_CALL then
    return { progressToken = rec[TOKEN], [TOOL_USE_KEY] = call_id(rec[TOOL_USE_ID]) }
  elseif type(meta) == "string" then
    return M.envelope_meta(meta, rec[TOKEN], call_id(rec[TOOL_USE_ID]))
  end
  return type(meta) == "table" and meta or nil
end

--- Whether the call in `rec` carries the usual envelope of the modern era
-- (`claude.mcp.era.usual_envelope`): as its text, which the reader checked but for the
-- version (`VERSION`), or as a table.
-- @tparam table rec
-- @treturn boolean
function M.usual_modern(rec)
  local version = rec[VERSION]
  if version ~= nil then return version == era.LATEST_MODERN end
  return era.usual_envelope(rec[META])
end

--- The JSON-RPC message the call in `rec` was (for a receiver that wants it whole).
-- @tparam table rec
-- @treturn table
function M.message(rec)
  local meta = rec[META] -- (as decoded, json.null too, unless a reader kept it apart)
  if meta == MCP_CALL or type(meta) == "string" then meta = M.meta(rec) end
  return { jsonrpc = "2.0", id = rec[ID], method = "tools/call",
    params = { name = rec[TOOL], arguments = rec[ARGS], _meta = meta } }
end

return M
