--- The stdio transport of an MCP server: one client on the host's stdin and stdout, one
-- JSON-RPC message per line (`claude.mcp.server.connection` does the protocol).
--
--     local t = stdio.open{ max_message = 16 * 1024 * 1024 }
--     stdio.redirect_stdout()
--     t:serve(server)     -- what came before waited for it
--     t:wait()            -- inside a task: until stdin ends (calls in flight finish first)
--     t:shutdown(grace)   -- stop: calls in flight get `grace` seconds, then are cancelled
--
-- stdout carries the protocol alone: the stream writes to a copy of fd 1 made when it opens,
-- and `redirect_stdout()` points fd 1 at stderr, so `print`, `io.write` and children that
-- inherit stdout cannot corrupt it. A tool call's text result is written with its envelope
-- in C (`write_pieces`), no response table built.
-- @module claude.mcp.server.stdio
local core = require "claude.core"
local async = require "claude.async"
local errors = require "claude.errors"
local connection = require "claude.mcp.server.connection"
local state = require "claude.mcp.server.state"
local call = require "claude.mcp.call"
local wire = require "claude.mcp.wire"

local M = {}

--- Default limit of one message, in bytes.
M.MAX_MESSAGE = 16 * 1024 * 1024

local RPC, TEXT, RESULT, TEXT_END = wire.RPC, wire.TEXT, wire.RESULT, wire.TEXT_END.line
local unencodable = wire.unencodable

local Transport = { __name = "claude.mcp.StdioTransport" }
Transport.__index = Transport
Transport.__tostring = function(t)
  return "claude.mcp.StdioTransport (" .. (t.finished.is_set and "finished" or "serving") .. ")"
end

--- Point fd 1 at stderr (after `open`: the protocol keeps its own copy of stdout), and make
-- `print` and `io.write` write there too, unbuffered.
function M.redirect_stdout()
  local ok, err = core.stdout_to_stderr()
  if not ok then return nil, err end
  io.output(io.stderr)
  return true
end

-- Ends the transport once nothing is in flight, or when the grace is over.
local function drain(self, grace, reason)
  if self.draining then return end
  self.draining = true
  async.spawn(function()
    local conn, deadline = self.conn, core.now() + (grace or 0)
    while conn:pending() > 0 and core.now() < deadline do async.sleep(0.01) end
    conn:close(reason)
    self.stream:close_write()
    self.finished:set()
  end)
end

local MCP_CALL = core.MCP_CALL

local function on_line(self, value, err, line, kind)
  local conn = self.conn
  -- a tools/call the envelope reader filled the transport's call record with
  if value == MCP_CALL then return conn:call(err) end
  if value ~= nil then return conn:receive(value) end
  if err == nil then return drain(self, self.grace, "stdin closed") end
  if kind == "overflow" then return conn:receive_oversized(err) end
  if kind == "json" then return conn:receive_invalid(err, line) end
  io.stderr:write("claudelua mcp: reading stdin: ", tostring(err), "\n")
end

--- Open the transport: start reading stdin. What arrives before `serve` waits for it.
-- @tparam[opt] table opts `max_message` (bytes, default 16 MiB), `grace` (seconds calls in
--   flight get to finish at stdin EOF, default 5), `request_timeout` (seconds a request to the
--   client may take, default 60), `state_key`, `state_ttl` (the signing key and lifetime of
--   the modern era's `requestState`: claude.mcp.server.state)
-- @return the transport | nil, err, kind
function M.open(opts)
  opts = opts or {}
  local self = setmetatable({ finished = async.event(), draining = false,
    grace = opts.grace or 5, request_timeout = opts.request_timeout, early = {},
    state = state.new { key = opts.state_key, ttl = opts.state_ttl } }, Transport)
  -- the call record the reader fills with each tools/call (claude.mcp.call)
  local record = call.new()
  local stream, serr, code = core.stdio {
    mode = "json", max_line = opts.max_message or M.MAX_MESSAGE,
    on_line = function(value, err, line, kind)
      local conn = self.conn
      if conn then
        -- a tools/call (on_line's first case, inline)
        if value == MCP_CALL then return conn:call(err) end
        return on_line(self, value, err, line, kind)
      end
      -- (the record is filled again by the next line: an early call waits as its message)
      if value == MCP_CALL then value, err = call.message(err), nil end
      local early = self.early
      early[#early + 1] = table.pack(value, err, line, kind)
    end,
  }
  if not stream then return errors.fail("io", "cannot open stdio: " .. tostring(serr),
    { code = code }) end
  -- a tools/call reaches the connection as the call record, no message tables; once the
  -- connection's era is pinned, the reader hands it where that era serves it (bind_calls)
  self.record, self.reader = record, core.envelope_reader("request", record)
  stream:read_with(self.reader)
  self.stream = stream
  return self
end

--- Serve `server` on the transport (once).
-- @tparam claude.Server server
-- @treturn claude.mcp.Connection
function Transport:serve(server)
  local stream = self.stream
  local write_pieces = stream.write_pieces -- looked up once: every answer writes so
  local function send(msg)
    local ok, err, kind = stream:write_json(msg)
    if not ok and kind == "encode" then
      -- a value JSON cannot carry: the client still gets an answer
      local id = type(msg) == "table" and msg.id
      if id ~= nil and msg.result ~= nil then return stream:write_json(unencodable(id, err)) end
    end
    return ok, err
  end
  self.conn = connection.new {
    server = server, send = send, request_timeout = self.request_timeout, state = self.state,
    transport = "pipe",
    flush = function() return stream:flush() end,
    record = self.record,
    bind_calls = function(target) self.reader:target(target) end,
    -- `ends`: the end of a text result of the modern era (claude.mcp.wire's text_end)
    send_result = function(id, result, _, ends, text)
      local ok, err, kind
      if text or type(result) == "string" then
        ok, err, kind = write_pieces(stream, RPC, id, TEXT, result, ends and ends.line or TEXT_END)
      else
        ok, err, kind = write_pieces(stream, RPC, id, RESULT, result, "}\n")
      end
      if not ok and kind == "encode" then return stream:write_json(unencodable(id, err)) end
      return ok, err
    end,
  }
  local early = self.early
  self.early = nil
  for i = 1, #early do on_line(self, table.unpack(early[i], 1, early[i].n)) end
  return self.conn
end

--- Stop serving: stop answering new requests, give calls in flight `grace` seconds, cancel
-- what is left, end stdout.
-- @tparam[opt] number grace seconds (default the transport's)
-- @tparam[opt] string reason
function Transport:shutdown(grace, reason)
  drain(self, grace or self.grace, reason or "server shutting down")
end

--- Wait until the transport has finished (stdin ended or `shutdown`, and the drain is over).
function Transport:wait()
  self.finished:wait()
end

--- Close at once: calls in flight are cancelled, stdin and stdout closed.
function Transport:close()
  if self.conn then self.conn:close("server closed") end
  self.stream:close()
  self.finished:set()
end

return M
