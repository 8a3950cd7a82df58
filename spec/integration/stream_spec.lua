-- claude.core.Stream: the stream under a child's pipes, on the host's own stdin and stdout
-- (core.stdio) and on a descriptor (core.stream_open).
local core = require "claude.core"
local json = require "claude.json"
local process = require "claude.process"
local harness = require "support.harness"

-- A claudelua script that echoes each JSON line it reads on stdin as {"echo":value}, reports
-- bad lines, answers {"bad":true} with a write_pieces that cannot be encoded, and at EOF
-- writes {"eof":...} with the stream's state, then checks that nothing leaked.
local ECHO = [[
local core = require "claude.core"
local before, s = core.stats(), nil
s = assert(core.%s { mode = "json", on_line = function(v, err, line, kind)
  if v == nil and err == nil then -- EOF
    s:write_pieces('{"eof":', tostring(s), '}\n')
    s:close_write()
    assert(select(3, s:write("late")) == "closed")
  elseif v == nil then
    s:write_json { error = err, line = line, kind = kind }
  elseif type(v) == "table" and v.bad then
    local ok, e, k = s:write_pieces('{"partial":', "x", ',"f":', print, '}\n')
    s:write_json { ok = ok or false, err = e, kind = k }
  else
    assert(s:write_pieces('{"echo":', v, '}\n'))
  end
end })
core.run("default")
local after = core.stats()
local leaked = (after.handles - before.handles) .. " handles, " .. (after.refs - before.refs)
  .. " refs, " .. (after.objects.stream or 0) .. " streams"
io.stderr:write(leaked, " left\n")
os.exit(leaked == "0 handles, 0 refs, 0 streams" and 0 or 3)
]]

local INPUT = '{"a":1}\nnot json\n[1,2]\n{"bad":true}\n"last, without a newline"'

local function check_output(lines, read_state)
  local out = {}
  for i, line in ipairs(lines) do out[i] = assert(json.decode(line)) end
  assert.equal(6, #out, table.concat(lines, "\n"))
  assert.same({ echo = { a = 1 } }, out[1])
  assert.equal("json", out[2].kind)
  assert.equal("not json", out[2].line)
  assert.same({ echo = { 1, 2 } }, out[3])
  -- nothing of the unit that could not be encoded was written
  assert.same({ ok = false, err = "piece 4: json: cannot encode a function", kind = "encode" },
    out[4])
  assert.same({ echo = "last, without a newline" }, out[5])
  assert.equal("claude.core.Stream (" .. read_state .. ", writable)", out[6].eof)
end

describe("streams", function()
  before_each(harness.before)
  after_each(harness.after)

  it("read JSON lines from the host's stdin (a pipe) and write to its stdout", function()
    local p <close> = assert(process.spawn { harness.claudelua,
      args = { "-e", ECHO:format("stdio") }, stdout = "lines", stderr = "lines" })
    assert(p:write(INPUT))
    p:close_stdin()
    local lines = {}
    for line in p:lines(10) do lines[#lines + 1] = line end
    assert.same({ 0, 0 }, { p:wait(10) })
    check_output(lines, "read ended")
    assert.equal("0 handles, 0 refs, 0 streams left", p:read_stderr_line(5))
  end)

  it("read a regular file on stdin and write a regular file on stdout", function()
    local input = harness.tempfile(INPUT)
    local code, out, err = harness.sh(harness.claudelua .. " -e " .. harness.quote(
      ECHO:format("stdio")) .. " < " .. input)
    os.remove(input)
    assert.equal(0, code, err)
    assert.equal("0 handles, 0 refs, 0 streams left\n", err)
    local lines = {}
    for line in out:gmatch("[^\n]+") do lines[#lines + 1] = line end
    check_output(lines, "read ended")
  end)

  it("open a descriptor with stream_open: a child's fd 0, one end of a socket pair", function()
    -- read as lines with stream_open(0); the answers go out on a stdio stream that only writes
    local script = [[
      local core = require "claude.core"
      local out = assert(core.stdio())
      local s
      s = assert(core.stream_open(0, { on_line = function(line)
        if line then out:write(line:upper() .. "\n") else out:close_write(); s:close() end
      end }))
      io.stderr:write(tostring(s), "\n")
      core.run("default")
    ]]
    local p <close> = assert(process.spawn { harness.claudelua, args = { "-e", script },
      stdout = "lines", stderr = "lines" })
    assert(p:write("one\ntwo\n"))
    p:close_stdin()
    assert.equal("ONE", p:read_line(10))
    assert.equal("TWO", p:read_line(10))
    assert.is_nil(p:read_line(10))
    assert.same({ 0, 0 }, { p:wait(10) })
    assert.equal("claude.core.Stream (reading, writable)", p:read_stderr_line(5))
  end)

  it("run over a TCP connection given as a descriptor", function()
    -- node echoes what it reads in upper case and ends when we end; bash connects fd 3
    local server <close> = assert(process.spawn { "node", args = { "-e", [[
      const srv = require("net").createServer((c) => {
        c.on("data", (d) => c.write(d.toString().toUpperCase()));
        c.on("end", () => { c.end(); srv.close(); });
      });
      srv.listen(0, "127.0.0.1", () => console.log(srv.address().port));
    ]] }, stdout = "lines" })
    local port = assert(tonumber(server:read_line(10)))
    local script = [[
      local core = require "claude.core"
      local s
      s = assert(core.stream_open(3, { on_line = function(line)
        if line then io.write(line, "\n") else s:close() end
      end }))
      io.stderr:write(tostring(s), "\n")
      assert(s:write("hello\n"))
      assert(s:write_pieces('{"n":', 1, ',"v":', { "x" }, '}\n'))
      s:close_write()
      core.run("default")
      io.stderr:write(core.stats().objects.stream or 0, " streams left\n")
    ]]
    local code, out, err = harness.sh("bash -c " .. harness.quote(
      'exec 3<>/dev/tcp/127.0.0.1/' .. port .. ' && exec "$0" -e "$1"') .. " "
      .. harness.quote(harness.claudelua) .. " " .. harness.quote(script))
    assert.equal(0, code, err)
    assert.equal('HELLO\n{"N":1,"V":["X"]}\n', out)
    assert.equal("claude.core.Stream (reading, writable)\n0 streams left\n", err)
    assert.same({ 0, 0 }, { server:wait(10) })
  end)

  it("say what is wrong with a descriptor or an option", function()
    local s, err, code = core.stream_open(987)
    assert.is_nil(s)
    assert.equal("EBADF", code)
    assert.matches("^EBADF: ", err)
    assert.has_error(function() core.stream_open("x") end)
    assert.has_error(function() core.stream_open(-1) end,
      "bad argument #1 to 'stream_open' (not a file descriptor)")
    assert.has_error(function() core.stream_open(0, { mode = "xml" }) end,
      "bad field 'mode' (\"lines\" or \"json\" expected, got 'xml')")
    assert.has_error(function() core.stream_open(0, { on_line = 1 }) end,
      "bad field 'on_line' (function expected, got number)")
    assert.has_error(function() core.stream_open(0, { max_line = 0 }) end,
      "bad field 'max_line' (positive integer expected, got number)")
    assert.has_error(function() core.stdio(1) end)
  end)

  it("name every userdata type apart", function()
    local t <close> = core.timer()
    assert.equal("claude.core.Timer (stopped)", tostring(t))
    local sig <close> = core.signal("usr2", function() end, true)
    assert.equal("claude.core.Signal (usr2)", tostring(sig))
    sig:close()
    assert.equal("claude.core.Signal (closed)", tostring(sig))
    local p <close> = assert(process.spawn { "true" })
    assert.matches("^claude.core.Process %(pid %d+, ", tostring(p.raw))
    assert.equal("claude.core.Timer", getmetatable(t).__name)
    assert.equal("claude.core.Process", getmetatable(p.raw).__name)
    p:wait(5)
  end)
end)
