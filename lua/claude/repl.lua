--- The interactive mode of the `claudelua` host (`claudelua -i`), as `lua -i` has it: a line
-- is an expression whose values are printed (`1 + 1`, or `=1 + 1` as in Lua 5.1), or a
-- statement, continued over lines while it is incomplete. Each one runs as a task on the
-- loop, so it may wait (`claude.sleep(1)`, a `claude.query` loop) and Ctrl-C cancels it;
-- between prompts the loop goes on (tasks, servers and sessions started at the prompt keep
-- running). The line reader is the host's (src/host/repl.c: readline on a terminal when
-- libreadline is there, for editing, Tab completion of Lua names and a history kept across
-- sessions). What a task prints while the prompt waits is written above the prompt line.
-- The global `claude` is the module.
-- @module claude.repl
local async = require "claude.async"
local core = require "claude.core"

local M = {}

local KEYWORDS = { "and", "break", "do", "else", "elseif", "end", "false", "for", "function",
  "goto", "if", "in", "local", "nil", "not", "or", "repeat", "return", "then", "true", "until",
  "while" }

-- The names an __index function provides, as its metatable's `__fields` lists them (the
-- claude module's submodules, loaded on first use).
local function listed(mt, k)
  local list = type(mt) == "table" and rawget(mt, "__fields")
  if type(list) ~= "table" then return nil end
  if k == nil then return list end
  for _, name in ipairs(list) do
    if name == k then return true end
  end
end

-- The value of `t[k]` without running code: raw fields, then __index tables (and the names
-- an __index function lists, which load a module).
local function field(t, k)
  for _ = 1, 8 do
    local v = type(t) == "table" and rawget(t, k) or nil
    if v ~= nil then return v end
    local mt = getmetatable(t)
    local index = type(mt) == "table" and rawget(mt, "__index")
    if type(index) == "function" and listed(mt, k) then
      local ok, value = pcall(index, t, k)
      return ok and value or nil
    end
    if type(index) ~= "table" then return nil end
    t = index
  end
end

-- The string keys of `t` and of its __index tables that are names, starting with `prefix`.
local function names(t, prefix, into, seen)
  local function add(k)
    if type(k) == "string" and not seen[k] and k:match("^[%a_][%w_]*$")
        and k:sub(1, #prefix) == prefix then
      seen[k] = true
      into[#into + 1] = k
    end
  end
  for _ = 1, 8 do
    if type(t) == "table" then
      for k in next, t do add(k) end
    end
    local mt = getmetatable(t)
    for _, k in ipairs(listed(mt) or {}) do add(k) end
    local index = type(mt) == "table" and rawget(mt, "__index")
    if type(index) ~= "table" then return end
    t = index
  end
end

--- The completions of `word` (the text before the cursor back to a blank or an operator):
-- the globals and keywords that start with it, or for `a.b.c` and `a.b:c` the fields of
-- `a.b` (and of its __index tables; a string's methods) that start with `c`. Nothing runs
-- to find them (no __index function is called).
-- @tparam string word
-- @tparam[opt] table env the globals (default `_ENV`)
-- @treturn {string,...} the whole words, sorted
function M.complete(word, env)
  env = env or _ENV
  local path, sep, last = word:match("^(.-)([.:])([%a_]?[%w_]*)$")
  local found, seen = {}, {}
  if not path then
    if not word:match("^[%a_]?[%w_]*$") then return found end
    names(env, word, found, seen)
    for _, k in ipairs(KEYWORDS) do
      if not seen[k] and k:sub(1, #word) == word then found[#found + 1] = k end
    end
    table.sort(found)
    return found
  end
  local t = env
  for part in (path .. "."):gmatch("(.-)%.") do
    if not part:match("^[%a_][%w_]*$") then return found end
    t = field(t, part)
    if t == nil then return found end
  end
  if type(t) == "string" then t = string end
  names(t, last, found, seen)
  table.sort(found)
  for i, k in ipairs(found) do found[i] = path .. sep .. k end
  return found
end

-- The history file: $XDG_STATE_HOME/claudelua/history (~/.local/state/claudelua/history).
local function history_path()
  local state = os.getenv("XDG_STATE_HOME")
  if not state or state:sub(1, 1) ~= "/" then
    local home = os.getenv("HOME")
    if not home or home == "" then return nil end
    state = home .. "/.local/state"
  end
  local dir = ""
  for part in (state .. "/claudelua"):gmatch("[^/]+") do
    dir = dir .. "/" .. part
    core.mkdir(dir)
  end
  return dir .. "/history"
end

-- While a prompt waits, what the program prints (print, io.write, io.stdout:write,
-- io.stderr:write) goes above the prompt line: the output functions are wrapped until
-- the REPL ends. Returns the function that puts them back.
local function print_above_prompt(reader, state)
  local methods = getmetatable(io.stdout).__index
  local write, io_write, print_ = methods.write, io.write, print
  local stdout, stderr = io.stdout, io.stderr
  local function text(...)
    local parts = table.pack(...)
    for i = 1, parts.n do parts[i] = tostring(parts[i]) end
    return parts
  end
  methods.write = function(f, ...)
    if state.prompting and (f == stdout or f == stderr) then
      reader:above(table.concat(text(...)), f == stderr)
      return f
    end
    return write(f, ...)
  end
  io.write = function(...) -- luacheck: ignore 122
    if state.prompting and io.output() == stdout then
      reader:above(table.concat(text(...)))
      return stdout
    end
    return io_write(...)
  end
  print = function(...) -- luacheck: ignore 121
    if state.prompting then return reader:above(table.concat(text(...), "\t") .. "\n") end
    return print_(...)
  end
  return function()
    methods.write, io.write, print = write, io_write, print_ -- luacheck: ignore 121 122
  end
end

-- Lua's mark of a chunk that ends too soon: more lines may complete it.
local function incomplete(err)
  return type(err) == "string" and err:sub(-5) == "<eof>"
end

local INTERRUPTED = {}

-- Reads one line (nil at the end of input) while the loop runs; raises INTERRUPTED when
-- Ctrl-C drops it.
local function read(reader, prompt, state)
  local done = async.event()
  local line
  state.interrupt_read = function()
    reader:interrupt()
    line = INTERRUPTED
    done:set()
  end
  reader:read(prompt, function(l)
    line = l
    state.prompting = false
    done:set()
  end)
  state.prompting = true
  done:wait()
  state.prompting = false
  state.interrupt_read = nil
  if line == INTERRUPTED then error(INTERRUPTED, 0) end
  return line
end

-- The chunk of `line`: `return line` when it is an expression, else the statement, read
-- on over more lines while it is incomplete. Returns chunk or nil, err; and the text typed
-- (for the history); `false` at the end of input.
local function read_chunk(reader, state, env)
  local typed = read(reader, "> ", state)
  if typed == nil then return false end
  local line = typed
  if line:sub(1, 1) == "=" then line = "return " .. line:sub(2) end
  local chunk = load("return " .. line, "=stdin", "t", env)
  if chunk then return chunk, nil, typed end -- the history has what was typed
  local text = line
  local err
  while true do
    chunk, err = load(text, "=stdin", "t", env)
    if chunk or not incomplete(err) then break end
    local more = read(reader, ">> ", state)
    if more == nil then break end
    text = text .. "\n" .. more
    typed = typed .. "\n" .. more
  end
  return chunk, err, typed
end

local function show(values)
  local parts = {}
  for i = 1, values.n do parts[i] = tostring(values[i]) end
  io.stdout:write(table.concat(parts, "\t"), "\n")
  io.stdout:flush()
end

--- Runs the loop of prompts until the end of input.
-- @param reader the host's line reader (`read`, `add_history`, `interrupt`, `close`)
-- @tparam[opt] table env the globals of the chunks (default `_ENV`)
function M.run(reader, env)
  local claude = require "claude"
  env = env or _ENV
  if env.claude == nil then env.claude = claude end -- the module at hand, as `claude`
  local state = {}
  local restore_output
  if reader.tty then
    reader:complete(function(word) return M.complete(word, env) end)
    local path = history_path()
    if path then pcall(reader.history_file, reader, path) end
    restore_output = print_above_prompt(reader, state)
  end
  -- Ctrl-C: cancels the line running, or drops the line being typed
  local previous = claude._on_interrupt
  claude._on_interrupt = function()
    if state.swallow and core.now() < state.swallow then
      -- the Ctrl-C that already stopped a line spinning in Lua, seen by the loop now
      state.swallow = nil
    elseif state.evaluating then
      state.evaluating:cancel("interrupted")
    elseif state.interrupt_read then
      state.interrupt_read()
    end
    return true
  end
  while true do
    local ok, chunk, err, text = pcall(read_chunk, reader, state, env)
    if not ok then
      if chunk ~= INTERRUPTED then error(chunk, 0) end
      chunk, err = nil, nil -- Ctrl-C at a prompt: a fresh one
    elseif chunk == false then
      break
    end
    if text and text:find("%S") then reader:add_history(text) end
    if chunk then
      local task = async.spawn_observed(function() return table.pack(chunk()) end)
      state.evaluating = task
      local tok, values = task:join()
      state.evaluating = nil
      if tok and values.n > 0 then
        show(values)
      elseif not tok then
        -- the traceback ends where the REPL's own frames start
        local msg = tostring(values):gsub("\n[^\n]*claude/repl%.lua:.*$", "")
        if msg:match("^cancelled: interrupted") then
          msg = "interrupted"
        elseif msg:match("^[^\n]*: interrupted\n") or msg:match("^[^\n]*: interrupted$") then
          msg = "interrupted"
          state.swallow = core.now() + 0.5
        end
        io.stderr:write(msg, "\n")
        io.stderr:flush()
      end
    elseif err then
      io.stderr:write(err, "\n")
      io.stderr:flush()
    end
  end
  if restore_output then restore_output() end
  if reader.tty then io.stdout:write("\n") end
  claude._on_interrupt = previous
  reader:close()
end

return M
