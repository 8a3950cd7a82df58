--- An HTTP/1.1 server on claude's loop, each request handled in its own task.
--
-- `core.http_listen` (C, over h2o) parses requests, frames bodies and keeps
-- connections alive; this wrapper runs `on_request(req, res)` in a task, so a
-- handler may wait (sleep, run a tool, read a queue) before it answers, and a
-- handler that raises gets a 500 (or its stream aborted) while the error goes
-- to `claude.on_error`. The request table and the response object are
-- described in docs/http-server.md.
-- @module claude.http.server
local core = require "claude.core"
local async = require "claude.async"
local errors = require "claude.errors"

local M = {}

local TEXT = { ["content-type"] = "text/plain; charset=utf-8" }

-- The body of a request's task: the handler, and a 500 or an abort if it raised.
local function handle(on_request, req, res)
  local ok, err = xpcall(on_request, async.traceback, req, res)
  if not ok then
    local state = res:state()
    if state == "new" then
      res:respond(500, TEXT, "internal server error\n")
    elseif state == "streaming" then
      res:abort()
    end
    error(err, 0)
  end
end

--- Listens for HTTP requests.
-- @tparam table opts `{ on_request = function(req, res) end, host = "127.0.0.1",
--   port = 0 (any free port), max_body = 4 MiB (larger bodies get 413 without
--   a call), max_header = 64 KiB (larger request heads get 431),
--   high_water = 1 MiB (res:write returns false above it),
--   idle_timeout = 10 (seconds a connection may wait for a request),
--   close_grace = 5 (seconds close waits for open connections), backlog = 128 }`
-- @return the server (`:port()`, `:address()`, `:close()`), or nil, an error
--   of kind `connection` (with `code`, e.g. "EADDRINUSE") and the code
function M.listen(opts)
  if type(opts) ~= "table" then
    error("bad argument #1 to 'listen' (table expected, got " .. type(opts) .. ")", 2)
  end
  local on_request = opts.on_request
  if type(on_request) ~= "function" then
    error("bad field 'on_request' (function expected, got " .. type(on_request) .. ")", 2)
  end
  local o = {}
  for k, v in pairs(opts) do o[k] = v end
  o.on_request = function(req, res) async.spawn(handle, on_request, req, res) end
  local ok, srv, msg, code = pcall(core.http_listen, o)
  if not ok then error(srv, 2) end -- a bad option: the caller's mistake
  if not srv then
    return nil, errors.new("connection", msg, { code = code }), code
  end
  return srv
end

return M
