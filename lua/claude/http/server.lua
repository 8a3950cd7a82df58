--- An HTTP/1.1 server on claude's loop: the layer under every server of claude's
-- (a user's, the MCP Streamable HTTP transport, the OAuth loopback redirect).
--
-- `core.http_listen` (C, over h2o) parses requests, frames bodies and keeps
-- connections alive; this wrapper calls `on_request(req, res)` protected. A
-- handler that raises gets a 500 (or its stream aborted) while the error goes
-- to `claude.on_error`: the one place where a server's bug becomes an answer.
-- By default each request runs in its own task, so a handler may wait (sleep,
-- run a tool, read a queue) before it answers; `tasks = false` calls it from
-- the loop's callback instead (it must not wait, but may hand the request to a
-- task of its own through `M.handle`), for a server that answers most requests
-- at once and would pay a task for each. The request table and the response
-- object are described in docs/http-server.md.
-- @module claude.http.server
local core = require "claude.core"
local async = require "claude.async"
local errors = require "claude.errors"

local M = {}

local TEXT = { ["content-type"] = "text/plain; charset=utf-8" }

local function plain_500(res)
  res:respond(500, TEXT, "internal server error\n")
end

--- Calls `on_request(req, res)` protected: if it raises, the request is answered (by
-- `internal_error(res)`, default a plain 500) when nothing was sent yet, its stream aborted
-- when it was streaming, and the error raised again for `claude.on_error`.
-- @tparam function on_request
-- @tparam table req
-- @param res the response object
-- @tparam[opt] function internal_error how a failed request is answered
function M.handle(on_request, req, res, internal_error)
  local ok, err = xpcall(on_request, async.traceback, req, res)
  if not ok then
    local state = res:state()
    if state == "new" then
      (internal_error or plain_500)(res)
    elseif state == "streaming" then
      res:abort()
    end
    error(err, 0)
  end
end

local handle = M.handle

-- Servers that keep the claudelua host running (claude._main waits for them after the
-- script's tasks, as Node waits for a listening server), until they close.
local holding = setmetatable({}, { __mode = "k" })

--- How many servers listen that keep the host running (`ref`, the default).
-- @treturn integer
function M.holding()
  local n = 0
  for srv in pairs(holding) do
    if tostring(srv):find("(closed)", 1, true) then holding[srv] = nil else n = n + 1 end
  end
  return n
end

-- Every option listen knows (a misspelt bound would otherwise stay at its default unseen).
local KNOWN = { on_request = true, host = true, port = true, max_body = true, max_header = true,
  high_water = true, max_queued = true, write_timeout = true, max_connections = true,
  idle_timeout = true, close_grace = true, backlog = true, tasks = true, internal_error = true,
  ref = true, lean = true }

--- Listens for HTTP requests.
-- @tparam table opts `{ on_request = function(req, res) end, host = "127.0.0.1",
--   port = 0 (any free port), max_body = 4 MiB (larger bodies get 413 without
--   a call), max_header = 64 KiB (larger request heads get 431),
--   high_water = 1 MiB (res:write returns false above it),
--   max_queued = 16 MiB (a write that finds more waiting drops the client),
--   write_timeout = 60 (seconds a client may take nothing before it is dropped),
--   max_connections = 1024 (more get 503; fewer under a low ulimit -n),
--   idle_timeout = 10 (seconds a connection may wait for a request),
--   close_grace = 5 (seconds close waits for open connections), backlog = 128,
--   tasks = true (false: on_request runs in the loop's callback and must not wait),
--   internal_error = function(res) (answers a request whose handler raised; a plain 500),
--   ref = true (false: the server keeps no loop running: not the claudelua host, nor an
--   application's own uv_run or claude.step),
--   lean = false (true: requests without `target`, `version`, `raw_headers`) }`
-- @return the server (`:port()`, `:address()`, `:close()`), or nil, an error
--   of kind `connection` (with `code`, e.g. "EADDRINUSE") and `"connection"`
-- @function listen
M.listen = errors.public(function(opts)
  errors.check(opts, 1, "listen", "table")
  errors.check_fields(opts, KNOWN, "listen")
  local on_request, internal_error = opts.on_request, opts.internal_error
  if type(on_request) ~= "function" then
    errors.misuse("bad field 'on_request' to 'listen' (function expected, got %s)",
      errors.typename(on_request))
  end
  local o = {}
  for k, v in pairs(opts) do o[k] = v end
  o.tasks, o.internal_error = nil, nil
  if opts.ref ~= nil and type(opts.ref) ~= "boolean" then
    errors.misuse("bad field 'ref' to 'listen' (boolean expected, got %s)",
      errors.typename(opts.ref))
  end
  if opts.tasks == false then
    o.on_request = function(req, res) handle(on_request, req, res, internal_error) end
  else
    o.on_request = function(req, res)
      async.spawn(handle, on_request, req, res, internal_error)
    end
  end
  local ok, srv, msg, code = pcall(core.http_listen, o)
  if not ok then -- core's "bad field 'x' (...)": the caller's mistake, in its words
    local why = tostring(srv):gsub("^[^\n]-:%d+: ", ""):gsub("^bad field '([^']*)' ",
      "bad field '%1' to 'listen' ")
    errors.misuse("%s", why)
  end
  if not srv then
    return nil, errors.new("connection", msg, { code = code }), "connection"
  end
  if opts.ref ~= false then holding[srv] = true end
  return srv
end)

return M
