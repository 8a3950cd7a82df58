--- The stdio transport of the MCP client: the server is a child process,
-- messages are newline-delimited JSON on its stdin and stdout, its stderr is
-- kept (the last lines go into the error when it dies).
--
-- A transport tells its owner what happens through `events`:
-- `message(value)` for each decoded message, `problem(err)` for trouble that
-- ends no call (a line that is not JSON), `lost(err)` when messages were lost
-- and the calls in flight cannot know whether their answer was among them
-- (a line over the size limit), and `closed(err)` once, when the transport is
-- gone by itself (the server exited). `close()` ends it without `closed`.
-- @module claude.mcp.client.stdio
local core = require "claude.core"
local json = require "claude.json"
local process = require "claude.process"
local errors = require "claude.errors"

local M = {}

local TAIL_LINES = 40
local RPC_RESULT = core.RPC_RESULT

local Transport = {}
Transport.__index = Transport
Transport.__name = "claude.mcp.StdioTransport"

function Transport:__tostring()
  return string.format("claude.mcp.StdioTransport (%s, pid %s)", self.command,
    tostring(self.proc and self.proc.pid))
end

local function tail(self)
  return table.concat(self.stderr_lines, "\n")
end

local HEAD, METHOD, PARAMS = '{"jsonrpc":"2.0","id":', ',"method":', ',"params":'
local CALL, ARGS = ',"method":"tools/call","params":{"name":', ',"arguments":'

-- The transport's writers of requests with no table made for them: the envelope written
-- around the values in C (`write_pieces`); what cannot be written so goes through `send`,
-- which says why, as it would have.
local function writers(self)
  local proc = self.proc
  local raw = proc.raw
  local write_pieces = raw.write_pieces
  -- {jsonrpc = "2.0", id = id, method = method, params = params}
  self.send_request = function(id, method, params)
    if not (proc.closed or proc.finished or self.closing) then
      local ok
      if params == nil then
        ok = write_pieces(raw, HEAD, id, METHOD, method, "}\n")
      else
        ok = write_pieces(raw, HEAD, id, METHOD, method, PARAMS, params, "}\n")
      end
      if ok then return true end
    end
    return self:send({ jsonrpc = "2.0", id = id, method = method, params = params })
  end
  -- tools/call of `name` with `args` (a table; json.object() when nil, as `call_tool` sends);
  -- `ending`, when given, ends the params: `,"_meta":...}}` and a newline (the modern era's
  -- envelope, as JSON: claude.mcp.client.modern.call_tail)
  local function write_call(id, name, args, ending)
    if not (proc.closed or proc.finished or self.closing) then
      if write_pieces(raw, HEAD, id, CALL, name, ARGS, args, ending or "}}\n") then
        return true
      end
    end
    local params = { name = name, arguments = args }
    if ending then params._meta = json.decode(ending:match('^,"_meta":(.*)}}\n$')) end
    return self:send({ jsonrpc = "2.0", id = id, method = "tools/call", params = params })
  end
  -- the same, written in C while stdin is open (closing the transport, or the process's end,
  -- closes it first), write_call's way otherwise
  self.write_call = raw:pieces_writer(HEAD, CALL, ARGS, "}}\n", write_call)
end

--- Starts the server process.
-- @tparam table opts `command`, `args`, `env`, `cwd`, `stderr` (fn(line)),
--   `max_message_size` (bytes)
-- @tparam table events see the module
-- @return the transport | nil, err, kind
function M.open(opts, events)
  local self = setmetatable({ command = opts.command, stderr_lines = {}, closing = false },
    Transport)
  local lines = self.stderr_lines
  local user_stderr = opts.stderr
  local proc, err, kind = process.spawn {
    opts.command, args = opts.args, env = opts.env, cwd = opts.cwd, stdout = "json",
    max_line = opts.max_message_size, eof_grace = 0.5,
    stderr = function(line)
      lines[#lines + 1] = line
      if #lines > TAIL_LINES then table.remove(lines, 1) end
      if user_stderr then user_stderr(line) end
    end,
    on_stdout = function(value, e, line, ekind)
      -- the envelope reader's answer to a call: id, result
      if value == RPC_RESULT then return events.result(e, line) end
      if value ~= nil then return events.message(value) end
      if not e then return end -- EOF: the exit tells the story
      if ekind == "overflow" then
        events.lost(errors.new("overflow", "the MCP server '" .. opts.name
          .. "' sent a message over max_message_size (" .. e .. "); it was dropped"))
      elseif ekind == "json" then
        events.undecodable(line, errors.new("protocol", "the MCP server '" .. opts.name
          .. "' wrote a line that is not JSON (" .. e .. "): " .. tostring(line):sub(1, 200),
          { line = line }))
      else
        events.problem(errors.new("connection", "reading from the MCP server '" .. opts.name
          .. "' failed: " .. e))
      end
    end,
    on_exit = function(code, signal)
      if self.closing then return end
      local how = signal ~= 0 and ("was killed by signal " .. signal)
        or ("exited with code " .. code)
      events.closed(errors.new("connection", "the MCP server '" .. opts.name .. "' " .. how,
        { exit_code = code, signal = signal, stderr_tail = tail(self) }))
    end,
  }
  if not proc then
    return nil, errors.new("connection", "cannot start the MCP server '" .. opts.name .. "' ("
      .. tostring(opts.command) .. "): " .. errors.message(err), { cause = err, code = kind }),
      "connection"
  end
  -- answers reach the client as their id and result (no envelope table) where it reads so
  if events.result then proc.raw:read_with(core.envelope_reader("response")) end
  self.proc = proc
  self.pid = proc.pid
  writers(self)
  return self
end

--- Writes one message.
-- @return true | nil, err
function Transport:send(msg)
  local proc = self.proc
  if proc.finished or self.closing then
    return nil, errors.new("connection", "the MCP server process is not running")
  end
  local ok, err = proc:write_json(msg)
  if not ok then
    return nil, errors.new("connection", "cannot write to the MCP server: "
      .. errors.message(err))
  end
  return true
end

--- The answers of the requests waiting in `set` (a core.pending) go straight to them: the
-- reader of stdout finds them there (read_with(core.envelope_reader("response", set))).
function Transport:bind_answers(set)
  if not self.closing and not self.proc.closed then
    self.proc.raw:read_with(core.envelope_reader("response", set))
  end
end

--- The last lines the server wrote on stderr.
function Transport:stderr_tail()
  return tail(self)
end

--- Ends the server as the MCP spec asks: its stdin closed, then SIGTERM and
-- SIGKILL each after a grace period. Waits when it can (in a task, or
-- outside the loop); from inside a callback the ladder goes on by itself.
function Transport:close()
  if self.closing then return end
  self.closing = true
  local proc = self.proc
  local ok = pcall(proc.close, proc, { eof_grace = 2, term_grace = 2, kill_grace = 2 })
  if not ok then proc:kill(2) end
end

return M
