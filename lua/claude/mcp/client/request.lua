--- The MCP client's request path: a request on the client's connection (waiting while it
-- reconnects), in its era (the modern one's rounds: claude.mcp.client.modern), with the
-- client's timeout rules (with OAuth a request's clock stops while an authorization runs).
-- @module claude.mcp.client.request
local core = require "claude.core"
local async = require "claude.async"
local errors = require "claude.errors"
local modern = require "claude.mcp.client.modern"

local M = {}

local pack = table.pack

-- With OAuth a request's clock stops while an authorization runs (a person
-- may be signing in in a browser): its timeout counts the rest of the time.
-- The same as peer:request otherwise.
local function timed_by_auth(provider, peer, method, params, timeout)
  local start, spent = core.now(), provider:authorizing_seconds()
  local id, answered, timed_out = nil, false, false
  local timer = core.timer()
  local r = pack(pcall(async.await, function(done)
    local serr
    id, serr = peer:start(method, params, function(...)
      answered = true -- also by the cancellation below
      return done(...)
    end)
    if not id then return done(nil, serr) end
    local function check()
      if answered then return end -- the answer came in the same turn of the loop
      local left = timeout - (core.now() - start - (provider:authorizing_seconds() - spent))
      if left > 0 then return timer:start(left, check) end
      timed_out = true
      peer:cancel(id, "timed out") -- the server is told, as for any timeout
    end
    timer:start(timeout, check)
    return function() timer:stop() end
  end))
  timer:close()
  if not r[1] then -- the waiting task was cancelled
    if id and errors.is(r[2], "cancelled") then peer:cancel(id, errors.message(r[2])) end
    error(r[2], 0)
  end
  if timed_out then
    return errors.fail("timeout", string.format("request '%s' timed out after %g s", method,
      timeout))
  end
  local result, err = r[3], r[4]
  if err then return nil, err, err.kind end
  return result
end

--- A request on a peer, with the client's timeout rules.
local function peer_request(self, peer, method, params, timeout)
  if self.provider and timeout then
    return timed_by_auth(self.provider, peer, method, params, timeout)
  end
  return peer:request(method, params, timeout)
end
M.peer_request = peer_request

--- The connection's peer once the client is connected (waiting while it
-- reconnects), or nil, err, kind.
function M.peer_of(self, timeout)
  if self.closed then return errors.fail("closed", "the MCP client '" .. self.name
    .. "' is closed") end
  if self.state ~= "connected" then
    if self.state == "disconnected" then
      local err = self.error or errors.new("connection", "the MCP client '" .. self.name
        .. "' is not connected")
      return nil, err, err.kind
    end
    local ok, err = self.ready:wait(timeout)
    if not ok then return nil, err, err.kind end
    return M.peer_of(self, timeout)
  end
  return self.conn.peer
end

--- A request on the current connection: the result | nil, err, kind. In the modern era
-- with the envelope, the answer followed through its rounds (claude.mcp.client.modern);
-- a task's handle comes back as `r, "task"`. `ropts`: `extensions`, `name` (modern).
function M.request(self, method, params, timeout, ropts)
  local peer, err, kind = M.peer_of(self, timeout or nil)
  if not peer then return nil, err, kind end
  if self.era ~= "modern" then return peer_request(self, peer, method, params, timeout) end
  return modern.request(self, self.send_one, method, params, ropts, timeout)
end

--- The function sending one request of the modern era, `send(method, params, timeout,
-- plain)` (each round of one; the connection may change between). The first round of a
-- tools/call that carries the client's envelope as it stands is written by a transport that
-- can (stdio: write_call) around its name and arguments, the envelope's JSON made once
-- (modern.call_tail).
function M.send_one(self)
  return function(method, params, timeout, plain)
    local peer, err, kind = M.peer_of(self, timeout or nil)
    if not peer then return nil, err, kind end
    -- plain: a tools/call's first round, params {name, arguments, _meta} (claude.mcp.client.
    -- modern)
    local write = plain and not self.provider and self.conn.transport.write_call
    if write then
      local tail = modern.call_tail(self, params._meta)
      if tail then
        return peer:request_written({ method = method, write = write, tail = tail }, timeout,
          params.name, params.arguments)
      end
    end
    return peer_request(self, peer, method, params, timeout)
  end
end

--- The request of a task handle (claude.mcp.client.tasks): `request` with this client.
function M.task_request(self)
  return function(method, params, timeout, ropts)
    return M.request(self, method, params, timeout, ropts)
  end
end

return M
