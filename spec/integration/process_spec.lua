local claude = require "claude"
local process = require "claude.process"
local errors = require "claude.errors"
local harness = require "support.harness"

local function sh(script, opts)
  opts = opts or {}
  opts[1] = "sh"
  opts.args = { "-c", script }
  return assert(process.spawn(opts))
end

local function alive(pid)
  local f = io.open("/proc/" .. pid .. "/stat")
  if not f then return false end
  local stat = f:read("a")
  f:close()
  return not stat:match("^%d+ %b() Z")
end

describe("processes", function()
  before_each(harness.before)
  after_each(harness.after)

  it("read stdout as lines and report the exit code", function()
    local p <close> = sh("echo one; echo two; exit 3")
    assert.equal("one", p:read_line())
    assert.equal("two", p:read_line())
    assert.is_nil(p:read_line())
    assert.same({ 3, 0 }, { p:wait() })
  end)

  it("still have their signal method after the exit (nil, err, ESRCH)", function()
    local p <close> = sh("exit 0")
    p:wait(5)
    local ok, err, kind = p:signal("kill")
    assert.is_nil(ok)
    assert.matches("exited", tostring(err))
    assert.equal("ESRCH", kind)
  end)

  it("finish only after the exit and EOF on every pipe", function()
    -- sh exits at once; its background child keeps stdout open a while
    local p <close> = sh("(sleep 0.2; echo late) & exit 0")
    assert.same({ 0, 0 }, { p:wait(5) })
    assert.equal("late", p:read_line(0))
  end)

  it("deliver a last line without newline, written just before exit", function()
    local p <close> = sh("printf 'no newline'; exit 0")
    p:wait()
    assert.equal("no newline", p:read_line(0))
    assert.is_nil(p:read_line(0))
  end)

  it("join a line split across many reads", function()
    local p <close> = sh("printf ab; sleep 0.05; printf cd; sleep 0.05; echo ef")
    assert.equal("abcdef", p:read_line(5))
    p:wait()
  end)

  it("deliver a 32 MiB line whole", function()
    local n = 32 * 1024 * 1024
    local p <close> = sh("head -c " .. n .. " /dev/zero | tr '\\0' x; echo; echo after")
    local line = assert(p:read_line(30))
    assert.equal(n, #line)
    assert.is_nil(line:find("[^x]"))
    assert.equal("after", p:read_line(5))
    p:wait()
  end)

  it("report a line over the ceiling and go on with the next", function()
    local p <close> = sh("head -c 5000 /dev/zero | tr '\\0' x; echo; echo ok", { max_line = 1000 })
    local line, err = p:read_line(5)
    assert.is_nil(line)
    assert.is_true(errors.is(err, "overflow"))
    assert.matches("exceeds the limit of 1000 bytes", err.message)
    assert.equal("ok", p:read_line(5))
    p:wait()
  end)

  it("decode stdout as JSON lines with stdout = \"json\"", function()
    local p <close> = sh([[printf '{"a":15,"b":[]}\n42\nnot json\nnull\n']], { stdout = "json" })
    local v = p:read_line(5)
    assert.equal(15, v.a)
    assert.equal("integer", math.type(v.a))
    assert.equal("[]", claude.json.encode(v.b))
    assert.equal(42, p:read_line(5))
    local bad, err = p:read_line(5)
    assert.is_nil(bad)
    assert.is_true(errors.is(err, "json_decode"))
    assert.equal("not json", err.line)
    assert.equal(claude.json.null, p:read_line(5))
    assert.is_nil(p:read_line(5))
    p:wait()
  end)

  it("write to stdin and close it", function()
    local p <close> = assert(process.spawn { "cat" })
    -- an empty write first: nothing queued yet, no buffer (a memcpy from NULL, UBSan said)
    assert.is_true(p:write(""))
    assert.is_true(p:write("hello\nworld\n"))
    p:close_stdin()
    assert.equal("hello", p:read_line(5))
    assert.equal("world", p:read_line(5))
    assert.same({ 0, 0 }, { p:wait(5) })
  end)

  it("go on with the lines of a read after a callback raised on one of them", function()
    local core = require "claude.core"
    local got, reported, exited = {}, {}, require("claude.async").event()
    claude.on_error(function(e) reported[#reported + 1] = tostring(e) end)
    local raw = assert(core.spawn_process {
      file = "/bin/sh", args = { "-c", [[printf 'a\nb\nc\n{"d":1}\n' ]] }, stdout = "json",
      on_stdout = function(v, err)
        if v == nil and err == nil then return end -- EOF
        got[#got + 1] = v or err
        if v == nil then error("boom on a line that is not JSON") end
      end,
      on_exit = function() exited:set() end,
    })
    assert.is_true(exited:wait(5))
    claude.sleep(0.05)
    claude.on_error(nil)
    raw:close()
    -- a, b, c are not JSON: each is reported, and the line after it still arrives
    assert.equal(4, #got)
    assert.equal(1, got[4].d)
    assert.equal(3, #reported)
    assert.matches("boom on a line that is not JSON", reported[1])
  end)

  it("write pieces whole, or nothing of them", function()
    local p <close> = assert(process.spawn { "cat", stdout = "json" })
    local raw = p.raw
    assert.is_true(raw:write_pieces('{"id":', "r1", ',"text":', "42", "}\n"))
    -- a value that cannot be encoded: nothing of the unit is written, and the error says which
    assert.same({ nil, "piece 4: json: cannot encode a function at $.f", "encode" },
      { raw:write_pieces('{"id":', "r2", ',"v":', { f = print }, "}\n") })
    assert.same({ nil, "piece 2: json: cannot encode a function at $[1]", "encode" },
      { raw:write_pieces("[", { print }, "]\n") })
    -- a raw piece that is not a string is misuse
    assert.has_error(function() raw:write_pieces({}, 1, "\n") end,
      "bad argument #1 to 'write_pieces' (string expected, got table)")
    assert.is_true(raw:write_pieces('{"id":', "r4", ',"v":', { ok = true, n = 2 }, "}\n"))
    assert.is_true(raw:write_pieces('{"only":"raw"}\n'))
    p:close_stdin()
    assert.same({ id = "r1", text = "42" }, p:read_line(5))
    local v = p:read_line(5)
    assert.equal("r4", v.id)
    assert.same({ ok = true, n = 2 }, v.v)
    assert.same({ only = "raw" }, p:read_line(5))
    assert.is_nil(p:read_line(5))
    p:wait(5)
  end)

  it("write three values between raw pieces with a pieces_writer, or hand them to its fallback",
    function()
    local p <close> = assert(process.spawn { "cat", stdout = "json" })
    local fallen = {}
    local write = p.raw:pieces_writer('{"id":', ',"name":', ',"v":', "}\n",
      function(a, b, c, d)
        fallen[#fallen + 1] = { a, b, c, d }
        return nil, "fell back"
      end)
    assert.is_true(write(1, "add", { x = 1 }))
    assert.is_true(write(2, "sub", {}, ',"more":true}\n')) -- its own last piece
    -- a value JSON cannot hold: nothing written, the fallback called with the same values
    assert.same({ nil, "fell back" }, { write(3, "bad", { f = print }) })
    assert.same({ 3, "bad", print }, { fallen[1][1], fallen[1][2], fallen[1][3].f })
    assert.has_error(function() p.raw:pieces_writer('{"id":', 1, "", "", print) end)
    p:close_stdin()
    -- stdin closed: the fallback's
    assert.same({ nil, "fell back" }, { write(4, "late", {}) })
    assert.equal(4, fallen[2][1])
    assert.same({ id = 1, name = "add", v = { x = 1 } }, p:read_line(5))
    assert.same({ id = 2, name = "sub", v = {}, more = true }, p:read_line(5))
    assert.is_nil(p:read_line(5))
    p:wait(5)
  end)

  it("take env (merged onto the parent's) and cwd", function()
    local p <close> = sh("echo \"$CLAUDELUA_TEST_VAR\"; echo \"${HOME:+home}\"; pwd",
      { env = { CLAUDELUA_TEST_VAR = "set" }, cwd = "/tmp" })
    assert.equal("set", p:read_line(5))
    assert.equal("home", p:read_line(5))
    assert.equal("/tmp", p:read_line(5))
    p:wait()
  end)

  it("remove env keys mapped to false", function()
    local p <close> = sh("echo \"[${HOME}]\"", { env = { HOME = false } })
    assert.equal("[]", p:read_line(5))
    p:wait()
  end)

  it("collect stderr, or read it as lines", function()
    local p <close> = sh("echo e1 >&2; echo e2 >&2")
    p:wait()
    assert.equal("e1\ne2", p:stderr())
    local q <close> = sh("echo l1 >&2", { stderr = "lines" })
    assert.equal("l1", q:read_stderr_line(5))
    q:wait()
    local seen = {}
    local r <close> = sh("echo cb >&2", { stderr = function(line) seen[#seen + 1] = line end })
    r:wait()
    assert.same({ "cb" }, seen)
  end)

  it("return ENOENT for a missing command", function()
    local p, err, code = process.spawn { "claudelua-no-such-command" }
    assert.is_nil(p)
    assert.equal("ENOENT", code)
    assert.matches("claudelua%-no%-such%-command", tostring(err))
    assert.equal("ENOENT", err.kind)
  end)

  it("time out a wait", function()
    local p <close> = assert(process.spawn { "sleep", args = { "5" } })
    local code, err = p:wait(0.05)
    assert.is_nil(code)
    assert.is_true(errors.is(err, "timeout"))
  end)

  it("kill with SIGTERM, then SIGKILL after the grace period, leaving no zombie", function()
    local p <close> = assert(process.spawn { "sleep", args = { "30" } })
    p:kill()
    assert.same({ 0, 15 }, { p:wait(5) })
    assert.is_false(alive(p.pid))
    local stubborn <close> = sh("trap '' TERM; echo ready; sleep 30")
    assert.equal("ready", stubborn:read_line(5))
    stubborn:kill(0.1)
    assert.same({ 0, 9 }, { stubborn:wait(5) })
    assert.is_false(alive(stubborn.pid))
  end)

  it("kill a running child when closed", function()
    if _VERSION == "Lua 5.3" then return pending("Lua 5.3 has no to-be-closed variables") end
    local pid
    do
      local p <close> = assert(process.spawn { "sleep", args = { "30" } })
      pid = p.pid
    end
    assert.is_false(alive(pid))
  end)

  it("run many at once from tasks", function()
    local tasks = {}
    for i = 1, 10 do
      tasks[i] = claude.spawn(function()
        local p <close> = sh("echo " .. i)
        local line = p:read_line(5)
        p:wait(5)
        return tonumber(line)
      end)
    end
    for i = 1, 10 do assert.equal(i, tasks[i]:wait(10)) end
  end)
end)

describe("children of the host", function()
  local function host_leaves_no_child(script)
    local path = harness.tempfile(script, ".lua")
    local code, out = harness.sh(harness.claudelua .. " " .. path)
    os.remove(path)
    local pid = tonumber(out:match("pid (%d+)"))
    assert.is_number(pid, out)
    -- the kernel delivers the parent-death signal at once; allow it a moment
    for _ = 1, 50 do
      if not alive(pid) then break end
      os.execute("sleep 0.02")
    end
    assert.is_false(alive(pid))
    return code
  end

  -- The child says it is running before the host goes: the parent-death
  -- signal is armed (by setpriv) before the child's program starts, so a host
  -- that dies in the first instant of its child's life is not this test.
  local spawn_sleep = [[
    local process = require "claude.process"
    local p = assert(process.spawn { "sh", args = { "-c", "echo ready; exec sleep 60" } })
    assert(p:read_line(10) == "ready")
    print("pid " .. p.pid); io.stdout:flush()
  ]]

  it("do not outlive a script that fails", function()
    assert.equal(1, host_leaves_no_child(spawn_sleep .. "error('fail')"))
  end)

  it("do not outlive os.exit", function()
    assert.equal(0, host_leaves_no_child(spawn_sleep .. "os.exit(0)"))
  end)

  it("do not outlive a host killed with SIGKILL", function()
    host_leaves_no_child(spawn_sleep .. "io.stdout:flush(); os.execute('kill -9 $PPID')")
  end)
end)

describe("a child's stdio", function()
  before_each(harness.before)
  after_each(harness.after)

  local function fds()
    return #assert(claude.core.scandir("/proc/self/fd"))
  end

  it("are a pipe(2) in, sockets out, and EOF on stdin reaches the child", function()
    local p <close> = sh("test -p /proc/self/fd/0 && echo pipe0; "
      .. "for f in 1 2; do test -S /proc/self/fd/$f && echo socket$f; done; cat; echo end",
      { stderr = "lines" })
    assert.equal("pipe0", p:read_line(5))
    assert.equal("socket1", p:read_line(5))
    assert.equal("socket2", p:read_line(5))
    p:write("echoed\n")
    assert.equal("echoed", p:read_line(5))
    p:close_stdin()
    assert.equal("end", p:read_line(5))
    assert.same({ 0, 0 }, { p:wait(5) })
  end)

  it("leave no descriptor behind when the spawn fails", function()
    local before = fds()
    for _ = 1, 20 do
      local p, err = process.spawn { "sh", args = { "-c", "true" }, cwd = "/nonexistent/dir" }
      assert.is_nil(p)
      assert.matches("ENOENT", err)
    end
    assert.equal(before, fds())
  end)
end)

describe("the EOF grace after exit", function()
  before_each(harness.before)
  after_each(harness.after)

  it("stops waiting for a pipe a grandchild keeps open; close ends the grandchild", function()
    local p = sh("echo before; sleep 30 & echo $!; exit 0", { eof_grace = 0.1 })
    assert.same({ 0, 0 }, { p:wait(3) })
    assert.equal("before", p:read_line(0))
    local grandchild = tonumber(p:read_line(0))
    assert.is_nil(p:read_line(0))
    assert.is_true(alive(grandchild))
    p:close()
    for _ = 1, 50 do
      if not alive(grandchild) then break end
      claude.sleep(0.02)
    end
    assert.is_false(alive(grandchild))
  end)
end)

-- A host's descriptors that are not close-on-exec (issue 34, item 16: HAProxy's listening
-- socket held by an MCP server): the child gets its stdio only, and the host keeps its own.
describe("a child's descriptors", function()
  local SCRIPT = [[
    local claude = require "claude"
    local fds = {}
    local p = assert(claude.process.spawn { "ls", args = { "/proc/self/fd" } })
    for line in p:lines() do fds[#fds + 1] = line end
    p:wait(20)
    -- the host's fd 7 is still open and still not close-on-exec
    local info = assert(io.open("/proc/self/fdinfo/7")):read("a")
    local flags = tonumber(info:match("flags:%s*(%d+)"), 8)
    print(table.concat(fds, " "), flags & 0x80000 == 0 and "kept" or "changed")
  ]]

  local function run(host)
    local script = harness.tempfile(SCRIPT, ".lua")
    -- fd 7 and 9 opened by the shell, inherited by the host, not close-on-exec
    return harness.sh("sh -c " .. harness.quote("exec 7</etc/hostname 9>/dev/null; exec "
      .. host .. " " .. harness.quote(script)))
  end

  it("are its stdio alone (claudelua), the host's own left as they were", function()
    local code, out, err = run("timeout 60 " .. harness.quote(harness.claudelua))
    assert.equal(0, code, err)
    -- 0, 1, 2 and the one ls opens for the folder
    assert.equal("0 1 2 3\tkept\n", out)
  end)

  it("are its stdio alone (stock lua5.4 with the module)", function()
    local code, out, err = run("env " .. harness.lua_preload
      .. "LUA_PATH='lua/?.lua;lua/?/init.lua;;' "
      .. "LUA_CPATH=" .. harness.quote(harness.build .. "/?.so;;") .. " timeout 60 lua5.4")
    assert.equal(0, code, err)
    assert.equal("0 1 2 3\tkept\n", out)
  end)
end)
