--- A scripted peer that speaks JSON lines on stdin/stdout, for specs: the part of a fake
-- program (the fake CLI, later fake MCP servers and clients) that does not depend on what
-- the lines mean. A script reads and expects messages and writes answers, sequentially:
-- reads block (`io.read`), since the peer is a process of its own.
--
-- A fake is a class whose `__index` chain ends here (`setmetatable(Fake, { __index =
-- peer.Peer })`), made with `peer.new(o, Fake)`, and run with `peer.run(self, script_path,
-- name)`. It may override `consume(msg)` (take a message before the script sees it: answers
-- to its own requests, keep-alives), `malformed(line, err)` (a line that is not a JSON
-- object) and `subtype_of(msg)` (what `expect`'s string form matches).
--
-- Exit codes: 0 done; 1 a malformed line; 2 the script is broken (cannot load, raised an
-- error); 3 an expectation failed (stderr says what was expected, what came and where in
-- the script). With a log file, every line received and sent is appended to it as a JSON
-- line (`claude.testing.read_log` reads it).
-- @module claude.testing.peer
local json = require "claude.json"
local core = require "claude.core"
local errors = require "claude.errors"

local M = {}

local fmt = string.format

--- Exit codes.
M.EXIT_MALFORMED, M.EXIT_SCRIPT, M.EXIT_EXPECTATION = 1, 2, 3

---------------------------------------------------------------------------
-- Small helpers

--- `base` with the keys of `over` laid on top (over's `nil`s keep base); returns `base`.
function M.merge(base, over)
  if over then
    for k, v in pairs(over) do base[k] = v end
  end
  return base
end

--- JSON text of `v`, or `<tostring(v)>` when it cannot be encoded.
function M.encode(v)
  local ok, s = pcall(json.encode, v)
  if ok then return s end
  return "<" .. tostring(v) .. ">"
end
local encode = M.encode

--- Short text of a message, for failure messages.
function M.describe(v, max)
  local s = type(v) == "string" and v or encode(v)
  max = max or 300
  if #s > max then s = s:sub(1, max) .. fmt("... (%d bytes)", #s) end
  return s
end
local describe = M.describe

--- True when `value` contains everything in `pattern` (tables compared as subsets,
-- recursively; other values with ==). Returns false and the path of the first difference.
local function contains(value, pattern, path)
  path = path or ""
  if type(pattern) ~= "table" or pattern == json.null then
    if value == pattern then return true end
    return false, path
  end
  if type(value) ~= "table" then return false, path end
  for k, v in pairs(pattern) do
    local ok, where = contains(value[k], v, path .. "." .. tostring(k))
    if not ok then return false, where end
  end
  return true
end
M.contains = contains

local function plain_subtype(msg) return msg.subtype end

--- True when `msg` matches `what`: a subtype string (as `subtype_of(msg)` gives it; default
-- `msg.subtype`), a table of fields it must contain, or a predicate function; `kind` is its
-- `type` (nil: any). Returns false and a reason otherwise.
function M.matches(msg, kind, what, subtype_of)
  if type(msg) ~= "table" then return false, "not a JSON object" end
  if kind ~= nil and msg.type ~= kind then return false, fmt("type is %q", tostring(msg.type)) end
  if what == nil then return true end
  if type(what) == "string" then
    local sub = (subtype_of or plain_subtype)(msg)
    if sub == what then return true end
    return false, fmt("subtype is %q", tostring(sub))
  elseif type(what) == "table" then
    local ok, where = contains(msg, what)
    if ok then return true end
    return false, "field " .. where:sub(2)
  elseif type(what) == "function" then
    if what(msg) then return true end
    return false, "predicate"
  end
  errors.misuse("bad argument #2 to 'expect' (string, table or function expected, got %s)",
    type(what))
end

---------------------------------------------------------------------------
-- The peer object

local Failure = { __name = "claude.testing.Failure" }
Failure.__tostring = function(f) return f.message end

local Peer = {}
Peer.__index = Peer
Peer.__name = "claude.testing.Peer"
M.Peer = Peer

function Peer:__tostring()
  return fmt("claude.testing.Peer (%s)", self.program)
end

--- Makes a peer (of `class`, default `Peer`).
-- @tparam table o `{ input = file (stdin), output = file (stdout), log = file|nil,
--   chunkname = "@script.lua", program = "name" (in messages) }`
-- @tparam[opt] table class a metatable whose `__index` chain reaches `Peer`
function M.new(o, class)
  return setmetatable({
    input = o.input or io.stdin,
    output = o.output or io.stdout,
    log_file = o.log,
    chunkname = o.chunkname,
    program = o.program or "peer",
    backlog = {},       -- entries {line, msg} read ahead, for the next read
    started = core.now(),
    json = json,
  }, class or Peer)
end

function Peer:_log(record)
  local f = self.log_file
  if not f then return end
  record.t = math.floor((core.now() - self.started) * 1e6 + 0.5) / 1e6
  f:write(encode(record), "\n")
  f:flush()
end

--- Raises an expectation failure: the peer exits 3 with `message` on stderr, naming the
-- script line that expected.
function Peer:fail(message, ...)
  if select("#", ...) > 0 then message = fmt(message, ...) end
  local where
  for level = 2, 60 do
    local info = debug.getinfo(level, "Sl")
    if not info then break end
    if info.source == self.chunkname and info.currentline > 0 then
      where = info.short_src .. ":" .. info.currentline
      break
    end
  end
  error(setmetatable({ message = message, where = where }, Failure), 0)
end

---------------------------------------------------------------------------
-- Reading

--- Takes `msg` before the script sees it (answers to the peer's own requests...): true
-- when it was consumed. The default takes nothing.
function Peer:consume(msg) -- luacheck: ignore 212
  return false
end

--- A line that is not a JSON object arrived: the default exits 1 saying so.
function Peer:malformed(line, err)
  self:_exit(M.EXIT_MALFORMED, fmt("%s: a line that is not a JSON object (%s): %s",
    self.program, err or "not an object", line))
end

--- What `expect`'s string form matches in `msg`; the default is `msg.subtype`.
function Peer:subtype_of(msg) -- luacheck: ignore 212/self
  return msg.subtype
end

-- Reads one line from stdin (not the backlog): its entry `{line, msg}`; false when the line
-- was consumed here (empty, or taken by `consume`); nil at EOF.
function Peer:_read_input()
  if self.eof then return nil end
  local line = self.input:read("l")
  if line == nil then
    self.eof = true
    self:_log({ event = "eof" })
    return nil
  end
  self:_log({ event = "received", line = line })
  if not line:find("%S") then return false end
  local msg, err = json.decode(line)
  if type(msg) ~= "table" then return self:malformed(line, err) end
  if self:consume(msg) then return false end
  return { line = line, msg = msg }
end

function Peer:_next()
  local b = self.backlog
  if #b > 0 then return table.remove(b, 1) end
  while true do
    local e = self:_read_input()
    if e ~= false then return e end
  end
end

--- The next message (a table), or nil at EOF. Empty lines and consumed messages are
-- skipped.
function Peer:read()
  local e = self:_next()
  return e and e.msg
end

--- The next line as text, or nil at EOF.
function Peer:read_line()
  local e = self:_next()
  return e and e.line
end

--- Puts a message back: the next `read` returns it.
function Peer:unread(msg)
  table.insert(self.backlog, 1, { line = encode(msg), msg = msg })
end

local function expectation(kind, what)
  local s = kind or "any message"
  if type(what) == "string" then
    s = s .. "/" .. what
  elseif type(what) == "table" then
    s = s .. " with " .. describe(what, 200)
  elseif type(what) == "function" then
    s = s .. " matching a predicate"
  end
  return s
end

--- Reads the next message and fails unless it is of type `kind` and matches `what` (a
-- subtype, a table of fields it must contain, or a predicate).
-- @return the message
-- @function expect
Peer.expect = errors.public(function(self, kind, what)
  local e = self:_next()
  if e == nil then
    self:fail("expected %s, got EOF (stdin closed)", expectation(kind, what))
  end
  local ok, why = M.matches(e.msg, kind, what, function(m) return self:subtype_of(m) end)
  if not ok then
    self:fail("expected %s, got %s (mismatch: %s)", expectation(kind, what),
      describe(e.line), why)
  end
  return e.msg
end)

--- Reads on and fails unless stdin reaches EOF next.
function Peer:expect_eof()
  local e = self:_next()
  if e ~= nil then
    self:fail("expected EOF (stdin closed), got %s", describe(e.line))
  end
end

--- Reads every message until EOF; returns them as a list.
function Peer:drain()
  local out = {}
  for msg in self.read, self do out[#out + 1] = msg end
  return out
end

---------------------------------------------------------------------------
-- Writing

function Peer:_write_line(line)
  local out = self.output
  local ok = out:write(line, "\n")
  if ok then ok = out:flush() end
  if not ok then self:_exit(1, self.program .. ": stdout closed") end
  self:_log({ event = "sent", line = line })
end

--- Sends a message (a table, encoded as one JSON line).
function Peer:send(msg)
  if type(msg) ~= "table" then
    return errors.blame("bad argument #1 to 'send' (table expected, got %s)", type(msg))
  end
  self:_write_line(json.encode(msg))
  return msg
end

--- Writes `text` as it is, plus a newline unless `newline` is false: for malformed JSON,
-- huge lines, a last line without newline.
function Peer:write_raw(text, newline)
  local out = self.output
  local ok = out:write(text, newline == false and "" or "\n")
  if ok then ok = out:flush() end
  if not ok then self:_exit(1, self.program .. ": stdout closed") end
  self:_log({ event = "sent", line = text })
end

--- Writes `text` to stderr (with a newline if it has none).
function Peer:stderr(text)
  if text:sub(-1) ~= "\n" then text = text .. "\n" end
  io.stderr:write(text)
  io.stderr:flush()
  self:_log({ event = "stderr", text = text })
end

--- Sleeps `seconds`.
function Peer:sleep(seconds) -- luacheck: ignore 212/self
  require("claude.async").sleep(seconds)
end

function Peer:_exit(code, message)
  if message then
    io.stderr:write(message, message:sub(-1) == "\n" and "" or "\n")
    io.stderr:flush()
  end
  pcall(self.output.flush, self.output)
  self:_log({ event = "exit", code = code, message = message })
  if self.log_file then self.log_file:close() end
  os.exit(code)
end

--- Exits now with `code` (default 0), after flushing stdout.
function Peer:exit(code)
  self:_exit(code or 0)
end

---------------------------------------------------------------------------
-- The program

--- Opens the log file at `path` for appending (nil for no path); exits 2 when it cannot.
function M.open_log(path, program)
  if not path or path == "" then return nil end
  local f, err = io.open(path, "a")
  if not f then
    io.stderr:write(program or "peer", ": cannot open the log: ", err, "\n")
    os.exit(M.EXIT_SCRIPT)
  end
  return f
end

--- Runs the script at `script_path` with the peer as `...` and as the global `name`; a
-- function it returns is called with the peer too. Then expects EOF and exits (see the
-- exit codes). Never returns.
function M.run(self, script_path, name)
  local env = setmetatable({ [name] = self }, { __index = _G })
  local chunk, lerr = loadfile(script_path, "t", env)
  if not chunk then
    self:_exit(M.EXIT_SCRIPT, self.program .. ": cannot load the script: " .. lerr)
  end
  local function handler(err)
    if getmetatable(err) == Failure then return err end
    return debug.traceback(tostring(err), 2)
  end
  local ok, err = xpcall(function()
    local f = chunk(self)
    if type(f) == "function" then f(self) end
    self:expect_eof()
  end, handler)
  if ok then self:_exit(0) end
  if getmetatable(err) == Failure then
    self:_exit(M.EXIT_EXPECTATION, self.program .. ": expectation failed"
      .. (err.where and (" at " .. err.where) or "") .. ": " .. err.message)
  end
  self:_exit(M.EXIT_SCRIPT, self.program .. ": script error: " .. tostring(err))
end

return M
