--- The OAuth client of one MCP server: it holds the tokens, and the HTTP
-- transports ask it for the `Authorization` header and report the 401s and
-- 403s they get.
--
-- * Before a request: `ready()` says whether the header can be had at once;
--   if not, `prepare()` (in a task) reads the store the first time, waits
--   for an authorization under way, and refreshes a token about to expire.
-- * After a 401: `challenge()` discovers the authorization server (once;
--   again when a challenge names other metadata), refreshes the token if
--   it can, else authorizes anew (authorization code with PKCE, `state` and
--   the resource indicator; or, without a person, client credentials or a
--   JWT bearer assertion the application brings), and says whether to send
--   the request again. A request is sent again once after a 401.
-- * After a 403 `insufficient_scope`: authorizes anew for the scopes held
--   and those the challenge asks for (step-up), at most twice per request,
--   and not at all when the token already has them.
--
-- One authorization runs at a time: requests that meet one under way wait
-- for it and use its token. The time spent authorizing is counted
-- (`authorizing_seconds`) so that the client's call timeouts can leave it
-- out: a person may be signing in.
-- @module claude.oauth.provider
local core = require "claude.core"
local async = require "claude.async"
local errors = require "claude.errors"
local url = require "claude.url"
local discovery = require "claude.oauth.discovery"
local registration = require "claude.oauth.registration"
local token = require "claude.oauth.token"
local grants = require "claude.oauth.grants"
local dpop_mod = require "claude.oauth.dpop"

local M = {}

local fail = errors.fail

M.REFRESH_MARGIN = 30  -- seconds before expiry when a token is refreshed before use
M.STEP_UP_LIMIT = 2    -- step-up authorizations for one request
local MAX_ROUNDS = 6   -- challenges answered for one request, whatever they were

local Provider = {}
Provider.__index = Provider
Provider.__name = "claude.oauth.Provider"

function Provider:__tostring()
  return "claude.oauth.Provider (" .. self.key .. ")"
end

--- Makes the provider of one client.
-- @tparam table auth the checked `auth` option
-- @tparam string server_url the MCP endpoint
-- @tparam table opts `name` (the server's, for messages), `report` (a
--   function for problems that fail nothing: a store that cannot save),
--   `protocol_version` (a function giving the version to announce)
function M.new(auth, server_url, opts)
  local server = assert(url.parse_canonical(server_url))
  return setmetatable({ auth = auth, grant = grants.get(auth.grant), server = server,
    key = url.canonical(server),
    name = opts.name or server.authority, report = opts.report or function() end,
    protocol_version = opts.protocol_version or function() return nil end,
    loaded = false, record = nil, discovery = nil, hint = {}, flight = nil, spent = 0,
    started = nil, stale = nil }, Provider)
end

local function includes(list, v)
  if type(list) ~= "table" then return false end
  for _, x in ipairs(list) do if x == v then return true end end
  return false
end

local function words(s)
  local out = {}
  for w in (s or ""):gmatch("%S+") do out[#out + 1] = w end
  return out
end

-- The scopes of `a` and then those of `b` not in `a`, one blank between.
local function union(a, b)
  local out, seen = {}, {}
  for _, list in ipairs { words(a), words(b) } do
    for _, w in ipairs(list) do
      if not seen[w] then
        seen[w] = true
        out[#out + 1] = w
      end
    end
  end
  return out[1] and table.concat(out, " ") or nil
end

local function covers(held, wanted)
  local have = {}
  for _, w in ipairs(words(held)) do have[w] = true end
  for _, w in ipairs(words(wanted)) do if not have[w] then return false end end
  return true
end

-- An error of this server's authorization, its message prefixed once.
local function wrap(self, err)
  if not errors.is(err) then err = errors.new("auth", tostring(err)) end
  if not err.server then
    err.server = self.name
    err.message = string.format("authorizing with the MCP server '%s' (%s) failed: %s",
      self.name, self.key, err.message)
  end
  err.kind = "auth"
  return err
end

---------------------------------------------------------------------------------------------
-- The store
---------------------------------------------------------------------------------------------

local function copy(t)
  local out = {}
  for k, v in pairs(t) do out[k] = type(v) == "table" and copy(v) or v end
  return out
end

function Provider:load()
  if self.loaded then return end
  self.loaded = true
  local store = self.auth.store
  if not store then return end
  local ok, rec, err = pcall(store.load, self.key)
  if not ok or (rec == nil and err ~= nil) then
    self.report(errors.new("auth", "the token store could not load '" .. self.key .. "': "
      .. errors.message(ok and err or rec)))
  elseif type(rec) == "table" then
    self.record = copy(rec)
    local r = self.record
    -- a record of an older version: its one client belongs to its issuer
    if type(r.client) == "table" and r.issuer then
      r.clients = r.clients or {}
      r.clients[r.issuer] = r.clients[r.issuer] or r.client
    end
    r.client = nil
  end
end

function Provider:save()
  local store = self.auth.store
  if not store then return end
  local ok, done, err = pcall(store.save, self.key, self.record and copy(self.record) or nil)
  if not ok or (done == nil and err ~= nil) then
    self.report(errors.new("auth", "the token store could not save '" .. self.key .. "': "
      .. errors.message(ok and err or done)))
  end
end

-- Keeps new tokens (and a client registered for them) and saves them.
function Provider:keep(d, client, tokens, requested)
  local r = self.record or {}
  r.access_token, r.token_type = tokens.access_token, tokens.token_type
  r.dpop_jwk = tokens.token_type == "DPoP" and self.dpop and self.dpop:jwk() or nil
  r.refresh_token, r.expires_at = tokens.refresh_token, tokens.expires_at
  -- the scope granted when the server says it, else the one asked for
  r.scope = tokens.scope or requested
  r.scope_granted = tokens.scope ~= nil or nil
  r.issuer = d.issuer
  if client.registered then
    r.clients = r.clients or {}
    r.clients[d.issuer] = client
  end
  self.record = r
  self.stale = nil
  self:save()
end

-- Forgets the tokens (revoked, refused); a registered client stays.
function Provider:drop_tokens()
  local r = self.record
  if not r then return end
  r.access_token, r.refresh_token, r.expires_at, r.scope, r.scope_granted = nil, nil, nil, nil, nil
  self:save()
end

---------------------------------------------------------------------------------------------
-- What the transports ask
---------------------------------------------------------------------------------------------

--- The `Authorization` header value for the next request (and with a DPoP-bound token
-- the `DPoP` proof for `method` and `target`), or nil.
-- @tparam[opt] string method default "POST"
-- @tparam[opt] string target default the MCP endpoint
function Provider:header(method, target)
  local r = self.record
  if not (r and r.access_token) then return nil end
  if r.token_type == "DPoP" then
    local d = self:dpop_key()
    local proof = d and d:proof(method or "POST", target or self.key, r.access_token)
    return "DPoP " .. r.access_token, proof or nil
  end
  return "Bearer " .. r.access_token
end

--- The `Authorization` header value alone (no proof made), or nil: what a request carried
-- is compared with it.
function Provider:authorization()
  local r = self.record
  if not (r and r.access_token) then return nil end
  return (r.token_type == "DPoP" and "DPoP " or "Bearer ") .. r.access_token
end

-- The DPoP key of this client: the one its tokens are bound to (from the store), else new.
function Provider:dpop_key()
  if self.dpop then return self.dpop end
  local r = self.record
  local d, err = dpop_mod.new(r and r.dpop_jwk)
  if not d then
    self.report(err)
    return nil
  end
  self.dpop = d
  return d
end

--- The DPoP key to bind tokens of the authorization server `d` to, or nil: `auth.dpop`,
-- else DPoP when the server offers it (`dpop_signing_alg_values_supported`).
function Provider:proofs(d)
  local want = self.auth.dpop
  if want == nil then want = dpop_mod.offered(d.meta) end
  if not want then return nil end
  return self:dpop_key()
end

-- A token that expires within the margin and can be renewed without a person.
function Provider:expiring()
  local r = self.record
  if not (r and r.access_token and r.expires_at) or self.stale == r.access_token then
    return false
  end
  -- without a refresh token, only a grant that needs no person renews a token
  if not r.refresh_token and self.grant.interactive then return false end
  return os.time() >= r.expires_at - M.REFRESH_MARGIN
end

--- Is an answer of this status an authorization matter: a 401, or a 403
-- whose Bearer challenge says `insufficient_scope`?
-- @tparam integer status
-- @tparam[opt] table headers the response's headers (lower-case names)
function Provider:wants(status, headers) -- luacheck: ignore 212/self
  if status == 401 then return true end
  return status == 403 and headers ~= nil
    and discovery.bearer(headers["www-authenticate"]).error == "insufficient_scope"
end

--- True when `header()` can be used at once (no wait is needed first).
function Provider:ready()
  return self.loaded and self.flight == nil and not self:expiring()
end

--- Seconds spent in authorizations so far, the one under way included.
function Provider:authorizing_seconds()
  return self.spent + (self.started and (core.now() - self.started) or 0)
end

-- Runs fn as the one authorization under way, or waits for the one that
-- is: returns true, ok, err when it ran fn; false, ok, err when it joined.
function Provider:run(fn)
  while self.flight do
    local f = self.flight
    f.done:wait()
    -- one cancelled with its task (its client closed) is no answer: run anew
    if not f.cancelled then return false, f.ok, f.err end
  end
  local f = { done = async.event() }
  self.flight = f
  self.started = core.now()
  local ok, a, b = pcall(fn)
  self.spent = self.spent + (core.now() - self.started)
  self.started = nil
  self.flight = nil
  if not ok then
    if errors.is(a, "cancelled") then
      f.ok, f.err, f.cancelled = false, a, true
      f.done:set()
      error(a, 0)
    end
    f.ok, f.err = false, wrap(self, a)
  elseif not a then
    f.ok, f.err = false, wrap(self, b)
  else
    f.ok = true
  end
  f.done:set()
  return true, f.ok, f.err
end

--- Before a request that `ready()` said must wait (in a task): reads the
-- store, waits for an authorization under way, renews a token about to
-- expire. Never fails: a token that could not be renewed is sent all the
-- same, and the server's 401 leads to a new authorization.
function Provider:prepare()
  self:load()
  if self.flight then self.flight.done:wait() end
  if self:expiring() then
    local stale = self.record.access_token
    local _, ok = self:run(function() return self:renew() end)
    if not ok and self.record and self.record.access_token == stale then self.stale = stale end
  end
end

--- After a 401, or a 403 with a Bearer challenge (in a task).
-- @tparam integer status
-- @tparam table headers the response's headers (lower-case names)
-- @param sent the `Authorization` value the request carried (or nil)
-- @tparam table attempt one table per request, the same for each of its sends
-- @return true to send the request again | false when the answer is not an
--   authorization matter | nil, err, "auth"
function Provider:challenge(status, headers, sent, attempt)
  self:load()
  local params = discovery.bearer(headers and headers["www-authenticate"])
  attempt.rounds = (attempt.rounds or 0) + 1
  if attempt.rounds > MAX_ROUNDS then
    return nil, wrap(self, errors.new("auth", "the server kept refusing the request (HTTP "
      .. status .. ") after " .. MAX_ROUNDS .. " authorizations")), "auth"
  end
  local current = self:authorization()
  local renewed = current ~= nil and current ~= sent -- another request renewed it meanwhile
  local fn
  if status == 401 and params.error == "use_dpop_nonce" and self.dpop
    and self.dpop:nonce_from(self.key, headers) then
    -- RFC 9449 section 9: the resource server wants its nonce in the proof: once more
    return true
  end
  if status == 401 then
    if renewed then return true end
    if attempt.unauthorized then
      return nil, wrap(self, errors.new("auth", "the server refused the token it was just "
        .. "given (HTTP 401" .. (params.error and (", " .. params.error) or "") .. ")")), "auth"
    end
    fn = function() return self:reauthorize(params, sent) end
  elseif status == 403 and params.error == "insufficient_scope" then
    if renewed then return true end
    attempt.step_ups = (attempt.step_ups or 0) + 1
    if attempt.step_ups > M.STEP_UP_LIMIT then
      return nil, wrap(self, errors.new("auth", string.format("the server still wants "
        .. "scope '%s' after %d step-up authorizations (HTTP 403 insufficient_scope)",
        tostring(params.scope), M.STEP_UP_LIMIT))), "auth"
    end
    fn = function() return self:step_up(params) end
  else
    return false
  end
  local ran, ok, err = self:run(fn)
  if ran and status == 401 then attempt.unauthorized = true end
  if ok then return true end
  return nil, err, "auth"
end

---------------------------------------------------------------------------------------------
-- The flows
---------------------------------------------------------------------------------------------

-- The discovery, kept until a challenge names other resource metadata, or (`fresh`) a
-- token that worked is refused: the resource may have moved to another authorization
-- server (SEP-2352), which its metadata then names.
function Provider:discover(params, fresh)
  local d = self.discovery
  local named = params.resource_metadata
  if d and not fresh and (named == nil or named == d.resource_metadata_url) then return d end
  local err, kind
  d, err, kind = discovery.discover(self.server, params,
    { ["MCP-Protocol-Version"] = self.protocol_version() })
  if not d then return nil, err, kind end
  local r = self.record
  if r and r.issuer and r.issuer ~= d.issuer then
    -- tokens of another authorization server are never shown to this one (its clients
    -- stay, each under its own issuer, and are never shown to another either)
    r.access_token, r.refresh_token, r.expires_at, r.scope, r.scope_granted =
      nil, nil, nil, nil, nil
    r.issuer = nil
    self:save()
  end
  self.discovery = d
  return d
end

-- The scope to ask for: the challenge's, else the resource's
-- scopes_supported, else auth.scope; with offline_access when the
-- authorization server offers it (a refresh token then comes).
function Provider:select_scope(d, challenged)
  local scope = challenged ~= "" and challenged or nil
  if not scope and d.scopes_supported and d.scopes_supported[1] then
    scope = table.concat(d.scopes_supported, " ")
  end
  scope = scope or self.auth.scope
  if scope and self.grant.interactive
    and includes(d.meta.scopes_supported, "offline_access") then
    scope = union(scope, "offline_access")
  end
  return scope
end

-- The client to present: pre-registered, a client ID metadata document, the
-- one registered before (with this issuer), or (unless `known` is asked for:
-- a refresh token belongs to the client it was issued to) a new registration.
function Provider:client(d, scope, known)
  local a = self.auth
  if a.client_id then
    return { client_id = a.client_id, client_secret = a.client_secret,
      assertion = a.client_assertion, token_endpoint_auth_method = a.token_endpoint_auth_method,
      private_key = a.private_key, private_key_alg = a.private_key_alg,
      private_key_kid = a.private_key_kid }
  end
  local doc = registration.metadata_document(d.meta, a.client_metadata_url)
  if doc then return doc end
  local r = self.record
  local c = r and r.clients and r.clients[d.issuer]
  if c and c.client_id and not (c.client_secret_expires_at and c.client_secret_expires_at > 0
      and os.time() >= c.client_secret_expires_at) then
    return c
  end
  if known then return fail("auth", "the client the tokens were issued to is not known") end
  local err, kind
  c, err, kind = registration.register(d, { client_name = a.client_name,
    redirect_uri = a.redirect_uri, grant = self.grant, scope = scope,
    application_type = a.application_type })
  if not c then return nil, err, kind end
  self.record = self.record or {}
  self.record.clients = self.record.clients or {}
  self.record.clients[d.issuer] = c
  self:save()
  return c
end

-- A token refused: a refresh when there is a refresh token for it, else
-- (or when the refresh fails) a new authorization.
function Provider:reauthorize(params, sent)
  self.hint = params
  local d, err, kind = self:discover(params, sent ~= nil)
  if not d then return nil, err, kind end
  local r = self.record
  if r and r.refresh_token and (sent == nil or sent == self:authorization()) then
    if self:refresh(d) then return true end
  end
  return self:authorize(d, self:select_scope(d, params.scope))
end

-- A 403 insufficient_scope: a new authorization for more scopes.
function Provider:step_up(params)
  local d, err, kind = self:discover(params)
  if not d then return nil, err, kind end
  local r = self.record or {}
  if r.scope_granted and params.scope and covers(r.scope, params.scope) then
    return fail("auth", string.format("the server wants scope '%s', which the token "
      .. "already has (HTTP 403 insufficient_scope): authorizing again would not help",
      params.scope))
  end
  local scope = union(r.scope, params.scope)
  if not scope then scope = self:select_scope(d, nil) end
  return self:authorize(d, scope)
end

-- A token about to expire: a refresh, or new client credentials.
function Provider:renew()
  local d, err, kind = self:discover(self.hint)
  if not d then return nil, err, kind end
  if self.record.refresh_token or self.grant.interactive then
    return self:refresh(d)
  end
  return self:authorize(d, self.record.scope) -- a grant without a person: simply again
end

function Provider:refresh(d)
  local r = self.record
  local client, err, kind = self:client(d, r.scope, true)
  if not client then return nil, err, kind end
  local tokens
  tokens, err, kind = token.request(d, client, { grant_type = "refresh_token",
    refresh_token = r.refresh_token }, "the token refresh", self:proofs(d))
  if not tokens then
    -- revoked or expired (invalid_grant), or refused: the tokens are of no more use
    if err.status then self:drop_tokens() end
    return nil, err, kind
  end
  tokens.refresh_token = tokens.refresh_token or r.refresh_token
  self:keep(d, client, tokens, r.scope)
  return true
end

-- A new authorization, by the grant's own flow (claude.oauth.grants).
function Provider:authorize(d, scope)
  return self.grant.obtain(self, d, scope)
end

-- A client the authorization server `issuer` no longer knows: registered again next time.
function Provider:forget_client(issuer)
  local clients = self.record and self.record.clients
  if clients and clients[issuer] then
    clients[issuer] = nil
    self:save()
  end
end

M.Provider = Provider
return M
