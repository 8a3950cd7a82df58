--- Which era a server speaks (claude.mcp.era): the client asks `server/discover` (the
-- probe, with a string id that never takes one of the connection's ids) and reads the
-- answer as the MCP specification and the TypeScript SDK v2 do:
--
-- * a discover result listing a modern revision we speak: modern, at the newest of them;
-- * -32022 whose `data.supported` lists a modern revision we speak: ask again at it, once;
-- * a discover result without one, -32022 listing legacy revisions only, any other JSON-RPC
--   error, an HTTP 4xx without a usable body: legacy (`initialize`);
-- * HTTP 401/403 after the authorization failed, 5xx, 2xx without an answer, no
--   connection, an HTTP timeout: an error;
-- * stdio: no answer within the probe timeout, or the process exited: legacy.
--
-- A stdio server that exits on the probe is started again for `initialize`; an answer to
-- the probe that comes after its timeout is dropped.
-- @module claude.mcp.client.negotiate
local async = require "claude.async"
local core = require "claude.core"
local errors = require "claude.errors"
local json = require "claude.json"
local era = require "claude.mcp.era"

local M = {}

M.PROBE_ID = "server-discover-probe-"

local function speaks(v)
  return type(v) == "string" and era.MODERN_SET[v] == true
end

-- The first of our modern revisions that `list` holds.
local function mutual(list)
  if type(list) ~= "table" then return nil end
  local theirs = {}
  for _, v in ipairs(list) do if type(v) == "string" then theirs[v] = true end end
  for _, v in ipairs(era.MODERN_VERSIONS) do
    if theirs[v] then return v end
  end
  return nil
end

-- The JSON-RPC error in an HTTP error body, whatever its id.
local function body_error(body)
  if type(body) ~= "string" or body == "" then return nil end
  local v = json.decode(body)
  if type(v) == "table" and type(v.error) == "table" then return v.error end
  return nil
end

--- The verdict of one probe (pure).
-- @tparam table outcome one of `{ result = r }`, `{ error = { code, message, data } }`,
--   `{ failed = err }` (the transport's error: `err.status`, `err.body` for HTTP),
--   `{ timeout = true }`, `{ closed = err }`
-- @tparam string transport `"stdio"` or `"http"`
-- @return `{ kind = "modern", version =, discover = r }`, `{ kind = "corrective", version = }`,
--   `{ kind = "legacy", why = }` or `{ kind = "error", err = }`
function M.classify(outcome, transport)
  if outcome.result ~= nil then
    local r = outcome.result
    if type(r) ~= "table" or type(r.supportedVersions) ~= "table" then
      return { kind = "legacy", why = "server/discover answered without supportedVersions" }
    end
    local v = mutual(r.supportedVersions)
    if v then return { kind = "modern", version = v, discover = r } end
    return { kind = "legacy", why = "server/discover lists no revision this client speaks" }
  end
  local e = outcome.error
  local failed = outcome.failed
  if failed and failed.kind == "auth" then return { kind = "error", err = failed } end
  if not e and failed and failed.status then
    local status = failed.status
    if status == 401 or status == 403 or status >= 500 or status < 400 then
      return { kind = "error", err = failed }
    end
    e = body_error(failed.body)
    if not e then return { kind = "legacy", why = "HTTP " .. status } end
  end
  if e then
    if e.code == era.ERRORS.unsupported_version then
      local supported = type(e.data) == "table" and e.data.supported
      local v = mutual(supported)
      if v then return { kind = "corrective", version = v } end
      if type(supported) == "table" then
        for _, s in ipairs(supported) do
          if era.is_modern(s) then
            return { kind = "error", err = errors.new("protocol", "the server speaks protocol "
              .. "revision " .. tostring(s) .. ", which this client does not (it speaks "
              .. table.concat(era.MODERN_VERSIONS, ", ") .. " and "
              .. table.concat(era.LEGACY_VERSIONS, ", ") .. ")", { supported = supported }) }
          end
        end
      end
    end
    return { kind = "legacy", why = "server/discover: " .. tostring(e.message)
      .. " (" .. tostring(e.code) .. ")" }
  end
  if outcome.timeout or outcome.closed then
    if transport == "stdio" then
      return { kind = "legacy", why = outcome.timeout and "no answer to server/discover"
        or "the server exited on server/discover", respawn = outcome.closed ~= nil }
    end
    return { kind = "error", err = outcome.closed or errors.new("timeout",
      "server/discover was not answered") }
  end
  return { kind = "error", err = failed or errors.new("protocol", "server/discover failed") }
end

--- Sends one probe on a connection and waits for its outcome. The connection routes the
-- answer (or its transport's failure, or its end) to `conn.probe`.
-- @tparam table conn `transport`, `probe` (set here), `dropped` (ids whose late answers go)
-- @tparam table msg the request
-- @tparam number timeout seconds, the time an authorization takes left out
-- @param[opt] provider the OAuth provider (its `authorizing_seconds`)
-- @treturn table the outcome for `classify`
function M.probe(conn, msg, timeout, provider)
  local ev = async.event()
  local outcome
  conn.probe = { id = msg.id, done = function(o)
    if outcome then return end
    outcome = o
    ev:set()
  end }
  local ok, err = conn.transport:send(msg)
  if not ok then conn.probe.done({ failed = err }) end
  local start = core.now()
  local spent = provider and provider:authorizing_seconds() or 0
  while not outcome do
    local auth = provider and (provider:authorizing_seconds() - spent) or 0
    local left = timeout - (core.now() - start - auth)
    if left <= 0 then break end
    ev:wait(left)
  end
  conn.probe = nil
  if not outcome then
    conn.dropped[msg.id] = true
    return { timeout = true }
  end
  return outcome
end

--- The `server/discover` request of a probe.
-- @tparam integer n the probe's number on this client
-- @tparam table meta the envelope
function M.request(n, meta)
  return { jsonrpc = "2.0", id = M.PROBE_ID .. n, method = "server/discover",
    params = { _meta = meta } }
end

M.speaks = speaks

return M
