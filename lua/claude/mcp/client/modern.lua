--- The client's requests in the modern era (claude.mcp.era): each carries the `_meta`
-- envelope (the revision, the client's capabilities and info, the log level it wants);
-- each answer says what it is in `resultType`:
--
-- * `complete`: the result (the discriminator removed);
-- * `input_required` (multi round-trip, SEP-2322): the server needs input first. Its
--   `inputRequests` are answered by the client's callbacks (claude.mcp.client.input) and
--   the request is sent again, on a new id, with the original params, the answers as
--   `inputResponses` and the server's `requestState` exactly as it came; a round without
--   requests (state only) waits a quarter of a second first. At most `max_input_rounds`
--   rounds (10);
-- * `task` (the tasks extension): returned to the caller (claude.mcp.client.tasks);
-- * none: from a modern server a broken answer (`protocol`; a legacy server's results
--   have none and are complete), never sent again.
--
-- A request refused with -32022 (unsupported revision) whose `data.supported` lists a
-- modern revision we speak is sent again once at that revision, which the client keeps.
-- @module claude.mcp.client.modern
local async = require "claude.async"
local errors = require "claude.errors"
local json = require "claude.json"
local era = require "claude.mcp.era"
local input = require "claude.mcp.client.input"
local UNCHECKED = require("claude.rpc").UNCHECKED

local M = {}

local META = era.META
M.MAX_ROUNDS = 10
M.STATE_PAUSE = 0.25

--- The envelope of every request: a new table each time.
-- @param self the client
-- @tparam[opt] string version the revision claimed (default: the client's)
-- @tparam[opt] table extensions more `capabilities.extensions` for this request
function M.envelope(self, version, extensions)
  local caps = self.offered
  if extensions or self.extensions then
    local c = json.object()
    for k, v in pairs(caps) do c[k] = v end
    local ext = json.object()
    for k, v in pairs(self.extensions or {}) do ext[k] = v end
    for k, v in pairs(extensions or {}) do ext[k] = v end
    c.extensions = ext
    caps = c
  end
  local meta = {
    [META.protocol_version] = version or self.protocol_version,
    [META.client_capabilities] = caps,
    [META.client_info] = self.client_info,
  }
  if self.log_level then meta[META.log_level] = self.log_level end
  return meta
end

--- Forgets the envelope made for the client's protocol version and log level, and the way
-- of the usual call made with it: every place that changes either calls it, and every new
-- connection's handshake (call_tool reads `usual_way` with no check of its own).
function M.changed(self)
  self.envelope_now, self.usual_way = false, false
end

-- The client's envelope as it stands, made once for as long as it does not change (every
-- request carries it: the same table, which nothing changes).
local function current_envelope(self)
  local e = self.envelope_now
  if e and e.version == self.protocol_version and e.log_level == self.log_level then
    return e.meta
  end
  e = { version = self.protocol_version, log_level = self.log_level,
    meta = M.envelope(self), tail = false }
  self.envelope_now, self.usual_way = e, false
  return e.meta
end

--- The end of a `tools/call` request whose `_meta` is the client's envelope as it stands:
-- `,"_meta":<the envelope>}}` and the newline, JSON made once for as long as the envelope
-- does not change (a transport writes the rest around the name and arguments: write_call).
-- nil when `meta` is not that envelope.
-- @param self the client
-- @tparam table meta the `_meta` of a request's params
function M.call_tail(self, meta)
  local e = self.envelope_now
  if not e or meta ~= e.meta then return nil end
  local tail = e.tail
  if not tail then
    tail = ',"_meta":' .. json.encode(meta) .. "}}\n"
    e.tail = tail
  end
  return tail
end

--- `call_tail` of the envelope as it stands (made now if need be).
function M.usual_tail(self)
  return M.call_tail(self, current_envelope(self))
end

--- `params` with the envelope in its `_meta`, over what `_meta` held: a new table, unless
-- `owned` (the caller's own table, changed in place).
function M.params(self, params, extensions, owned)
  local p = params
  if not (owned and p) then
    p = {}
    for k, v in pairs(params or {}) do p[k] = v end
  end
  local user = p._meta
  if extensions == nil and (user == nil or next(user) == nil) then
    p._meta = current_envelope(self)
    return p
  end
  local meta = {}
  if type(user) == "table" then
    for k, v in pairs(user) do meta[k] = v end
  end
  for k, v in pairs(M.envelope(self, nil, extensions)) do meta[k] = v end
  p._meta = meta
  return p
end

local function protocol(self, method, what)
  return errors.fail("protocol", string.format("the MCP server '%s' answered %s %s", self.name,
    method, what))
end

-- The option that gives each capability a server may require.
local OPTIONS = { elicitation = "on_elicitation", sampling = "on_sampling",
  roots = "roots or on_roots" }

-- -32021: the server needs a capability the client did not declare; when it is one a
-- callback gives, the error says which.
local function missing(self, method, name, err)
  local caps = type(err.data) == "table" and err.data.requiredCapabilities
  local wanted = {}
  if type(caps) == "table" then
    for cap in pairs(caps) do
      if type(cap) == "string" then wanted[#wanted + 1] = cap end
    end
  end
  table.sort(wanted)
  local give = {}
  for _, cap in ipairs(wanted) do
    if OPTIONS[cap] then give[#give + 1] = "'" .. OPTIONS[cap] .. "'" end
  end
  local what = method .. (name and (" '" .. name .. "'") or "")
  return errors.fail("unsupported", string.format("the MCP server '%s' needs the client's "
    .. "%s capability for %s, which it did not declare%s", self.name,
    wanted[1] and table.concat(wanted, ", ") or "(unnamed)", what,
    give[1] and (" (give claude.mcp.connect " .. table.concat(give, ", ") .. ")") or ""),
    { code = err.code, data = err.data, remote_message = err.remote_message, cause = err })
end

local EMPTY = {}

--- Sends a request of the modern era and follows its answer to the end.
-- @param self the client
-- @tparam function send `send(method, params, timeout, plain)` -> result | nil, err, kind
--   (one request; `plain`: the first round of a tools/call whose params are its own)
-- @tparam string method
-- @tparam[opt] table params without the envelope
-- @tparam[opt] table opts `extensions` (per-request capability extensions), `name` (what
--   the request is about, for messages), `owned` (`params` may be changed), `first` (the
--   answer to the first round, which the caller sent itself: `{ result, err, kind }` as
--   Peer:request_written gives them, `rpc.UNCHECKED` for an answer its reader did not check),
--   `on_request` (what answers the server's input requests instead of the client's options)
-- @return the result (and `"task"` for a task's handle) | nil, err, kind
function M.request(self, send, method, params, opts, timeout)
  opts = opts or EMPTY
  local extensions, name, owned, first = opts.extensions, opts.name, opts.owned, opts.first
  local p = M.params(self, params, extensions, owned)
  local rounds, corrected = 0, false
  local max = self.opts.max_input_rounds or M.MAX_ROUNDS
  -- the first round of a call whose params are its own: `send` may write them from their
  -- values (their keys: name, arguments, and _meta, the envelope)
  local plain = owned and extensions == nil and method == "tools/call"
  while true do
    local r, err, kind
    if first then -- the first round's answer, the caller's
      r, err, kind, first = first.result, first.err, first.kind, nil
      if err == UNCHECKED then err = nil end
    else
      r, err, kind = send(method, p, timeout, plain)
    end
    plain = false
    if r == nil then -- (false is an answer: not an object, below)
      local data = kind == "remote" and err.code == era.ERRORS.unsupported_version
        and type(err.data) == "table" and err.data
      if data and not corrected and type(data.supported) == "table" then
        local v
        for _, s in ipairs(data.supported) do
          if era.MODERN_SET[s] then v = v or s end
        end
        if v then
          corrected = true
          self.protocol_version = v
          M.changed(self)
          local meta = {}
          for k, mv in pairs(p._meta) do meta[k] = mv end
          meta[META.protocol_version] = v
          p._meta = meta
          goto again
        end
      end
      if kind == "remote" and err.code == era.ERRORS.missing_capability then
        return missing(self, method, name, err)
      end
      return nil, err, kind
    end
    if type(r) ~= "table" then return protocol(self, method, "with a result that is not "
      .. "an object") end
    do
      local rt = r.resultType
      if rt == "complete" then
        r.resultType = nil
        return r
      elseif rt == nil then
        return protocol(self, method, "without resultType (a server of protocol revision "
          .. tostring(self.protocol_version) .. " must say it)")
      elseif rt == "task" then
        return r, "task"
      elseif rt ~= "input_required" then
        return protocol(self, method, "with resultType '" .. tostring(rt):sub(1, 40)
          .. "', which this client does not know")
      end
      rounds = rounds + 1
      if rounds > max then
        return protocol(self, method, string.format("with input_required %d times in a row; "
          .. "the client stops at %d rounds (max_input_rounds)", rounds, max))
      end
      local requests, responses = r.inputRequests, nil
      if requests ~= nil and requests ~= json.null and type(requests) ~= "table" then
        return protocol(self, method, "with inputRequests that is not an object")
      end
      if requests ~= nil and requests ~= json.null and next(requests) ~= nil then
        responses, err, kind = input.answer(self, requests, { method = method,
          name = name, on_request = opts.on_request })
        if not responses then return nil, err, kind end
      elseif type(r.requestState) ~= "string" then
        return protocol(self, method, "with input_required asking for nothing")
      end
      local nextp = {}
      for k, v in pairs(p) do nextp[k] = v end
      nextp.inputResponses = responses
      nextp.requestState = type(r.requestState) == "string" and r.requestState or nil
      p = nextp
      if not responses then async.sleep(M.STATE_PAUSE) end
    end
    ::again::
  end
end

return M
