--- The `requestState` of multi round-trip requests (modern era): what a server hands its
-- client with an `input_required` result and gets back, byte for byte, with the retry. The
-- client must not be able to change it, so it is signed (HMAC-SHA256, libcrypto through
-- `core.key_from_secret`), bound to the request it belongs to (method and tool, prompt or
-- resource) and dated; and since the retry may reach another process behind a load balancer,
-- the key can be shared between processes.
--
--     local s = state.new { key = secret_bytes, ttl = 600 }   -- no key: one of this process
--     local token = s:seal(payload, "tools/call\0ask")
--     local payload, why = s:open(token, "tools/call\0ask")    -- nil, why when not ours
--
-- The format (the one the TypeScript SDK uses): `v1.<b64url(JSON {p, exp, b})>.<b64url(mac)>`.
-- The payload is readable by the client (signed, not encrypted): put no secret in it.
-- @module claude.mcp.server.state
local core = require "claude.core"
local json = require "claude.json"
local errors = require "claude.errors"

local M = {}

local b64e, b64d = core.base64url_encode, core.base64url_decode
local type, os_time = type, os.time

--- Seconds a state stays valid by default: a retry may wait for a person's answer.
M.TTL = 600

--- The environment variable a key may come from (`claudelua mcp`; the bytes of its value).
M.ENV = "CLAUDELUA_MCP_STATE_KEY"

--- The shortest key accepted, in bytes: a shared key is a password of the cluster.
M.MIN_KEY = 16

local State = { __name = "claude.mcp.RequestState" }
State.__index = State

local own_key -- this process's random key, made on first use

--- A sealer.
-- @tparam[opt] table opts `key` (a string of at least 16 bytes, shared by the processes
--   that may get each other's retries; default: 32 random bytes of this process), `ttl`
--   (seconds, default 600)
-- @treturn claude.mcp.RequestState
-- @function new
M.new = errors.public(function(opts)
  opts = opts or {}
  errors.check_fields(opts, { key = true, ttl = true }, "new")
  local key = opts.key
  if key ~= nil then
    errors.check_field(key, "key", "new", "string")
    if #key < M.MIN_KEY then
      errors.bad_field("key", "new", "a key of at least %d bytes expected, got %d", M.MIN_KEY,
        #key)
    end
  end
  local ttl = opts.ttl or M.TTL
  if type(ttl) ~= "number" or ttl <= 0 then
    errors.bad_field("ttl", "new", "positive number expected, got %s", tostring(ttl))
  end
  return setmetatable({ _secret = key, ttl = ttl, shared = key ~= nil }, State)
end)

-- The signing key, made on the first seal or open: libcrypto (and the random key of a
-- process without a shared one) costs a server's start-up more than its first answer needs.
local function key_of(self)
  local k = self._key
  if k then return k end
  local secret = self._secret
  if not secret then
    own_key = own_key or assert(core.random_bytes(32))
    secret = own_key
  end
  local err
  k, err = core.key_from_secret(secret)
  if not k then error(err, 0) end
  self._key, self._secret = k, nil
  return k
end

--- Seal `payload` (a JSON value) for the request `bind` names.
-- @param payload
-- @tparam string bind
-- @treturn string
function State:seal(payload, bind)
  local body = "v1." .. b64e(json.encode { p = payload, exp = os_time() + self.ttl, b = bind })
  return body .. "." .. b64e(assert(key_of(self):sign("HS256", body)))
end

--- Open a state: its payload, when it is one of ours (a good signature), for the request
-- `bind` names, and not expired.
-- @param token what the client sent back
-- @tparam string bind
-- @return the payload, or nil and why not
function State:open(token, bind)
  if type(token) ~= "string" or #token > 4 * 1024 * 1024 then return nil, "not a state" end
  local body, mac = token:match("^(v1%.[%w_%-]+)%.([%w_%-]+)$")
  if not body then return nil, "not a state" end
  local sig = b64d(mac)
  if not sig or not key_of(self):verify("HS256", body, sig) then
    return nil, "bad signature"
  end
  local text = b64d(body:sub(4))
  local t = text and json.decode(text)
  if type(t) ~= "table" then return nil, "not a state" end
  if t.b ~= bind then return nil, "for another request" end
  if type(t.exp) ~= "number" or t.exp < os_time() then return nil, "expired" end
  return t.p
end

return M
