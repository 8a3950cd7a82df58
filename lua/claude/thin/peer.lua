--- The thin client's end of the remote protocol (docs/embedding.md#the-remote-protocol):
-- JSON-RPC 2.0, one message per line, over any byte stream. It knows neither the process
-- nor the loop: its owner feeds it what arrives (`peer:feed(bytes)`), gives it `send(line)`,
-- and tells it when the other side is gone (`peer:fail(err)`).
-- @module claude.thin.peer
local json = require "claude.thin.json"
local tasks = require "claude.thin.tasks"

local M = {}

local Peer = {}
Peer.__index = Peer

--- An error of the thin client: `kind`, `message`, and a `tostring` that reads well.
function M.error(kind, message)
  return setmetatable({ kind = kind, message = message },
    { __tostring = function(e) return e.message end })
end

--- Makes a peer. `opts`: `send(line)` (writes one line, its newline included), `handlers`
-- (method -> `fn(params)` returning the result or raising; each runs as a task, so it may
-- wait), `on_notification(method, params)`.
function M.new(opts)
  return setmetatable({ send = opts.send, handlers = opts.handlers or {},
    on_notification = opts.on_notification, pending = {}, next_id = 0, buffer = "",
    failed = false }, Peer)
end

local function write(self, msg)
  msg.jsonrpc = "2.0"
  return self.send(json.encode(msg) .. "\n")
end

--- Sends request `method`; `callback(result)` or `callback(nil, err)` gets the answer.
-- @return the request's id
function Peer:start(method, params, callback)
  self.next_id = self.next_id + 1
  local id = self.next_id
  if self.failed then
    callback(nil, self.failed)
    return id
  end
  self.pending[id] = callback
  write(self, { id = id, method = method, params = params == nil and json.null or params })
  return id
end

--- Sends request `method` and waits for its answer (inside a task).
-- @return the result | nil, err, kind
function Peer:request(method, params)
  local _, result, err = tasks.await(function(done) self:start(method, params, done) end)
  if err then return nil, err, err.kind end
  return result
end

function Peer:notify(method, params)
  if self.failed then return end
  write(self, { method = method, params = params })
end

--- Stops waiting for request `id`: the other side is told, the callback never runs.
function Peer:cancel(id, reason)
  if not self.pending[id] then return false end
  self.pending[id] = nil
  self:notify("notifications/cancelled", { requestId = id, reason = reason })
  return true
end

local function answer(self, id, method, ok, result, err)
  if self.failed then return end
  if ok and result == nil and err ~= nil then ok, result = false, err end
  if ok then
    local encoded, value = pcall(json.encode, result == nil and json.null or result)
    if encoded then
      return self.send('{"jsonrpc":"2.0","id":' .. json.encode(id) .. ',"result":' .. value
        .. "}\n")
    end
    result = "the result of '" .. method .. "' cannot be encoded as JSON: " .. value
  end
  local message = type(result) == "table" and result.message or tostring(result)
  write(self, { id = id, error = { code = -32603, message = message } })
end

local function handle(self, msg)
  local id, method = msg.id, msg.method
  if method ~= nil and id ~= nil then
    local handler = self.handlers[method]
    if not handler then
      return write(self, { id = id, error = { code = -32601, message = "Method not found: "
        .. tostring(method) } })
    end
    return tasks.spawn(function()
      answer(self, id, method, pcall(handler, msg.params))
    end)
  elseif method ~= nil then
    if self.on_notification then self.on_notification(method, msg.params) end
  elseif id ~= nil then
    local callback = self.pending[id]
    if not callback then return end
    self.pending[id] = nil
    if msg.error ~= nil then
      local e = type(msg.error) == "table" and msg.error or {}
      local message = type(e.message) == "string" and e.message or "error " .. tostring(e.code)
      callback(nil, M.error("remote", message))
    else
      callback(msg.result)
    end
  end
end

--- Takes bytes that arrived; handles each whole line. A line that is not JSON is reported
-- and skipped.
function Peer:feed(bytes)
  local buffer = self.buffer .. bytes
  local start = 1
  while true do
    local nl = buffer:find("\n", start, true)
    if not nl then break end
    local line = buffer:sub(start, nl - 1)
    start = nl + 1
    if line:find("%S") then
      local msg, err = json.decode(line)
      if type(msg) == "table" then
        handle(self, msg)
      else
        tasks.host.report("claude: from claudelua remote: " .. tostring(err or line))
      end
    end
  end
  self.buffer = buffer:sub(start)
end

--- The other side is gone: every pending request ends with `err`, and so do later ones.
function Peer:fail(err)
  if self.failed then return end
  self.failed = err
  local pending = self.pending
  self.pending = {}
  for _, callback in pairs(pending) do callback(nil, err) end
end

return M
