--- The interactive mode of the `claudelua` host (`claudelua -i`), as `lua -i` has it: a line
-- is an expression whose values are printed (`1 + 1`, or `=1 + 1` as in Lua 5.1), or a
-- statement, continued over lines while it is incomplete. Each one runs as a task on the
-- loop, so it may wait (`claude.sleep(1)`, a `claude.query` loop) and Ctrl-C cancels it;
-- between prompts the loop goes on (tasks, servers and sessions started at the prompt keep
-- running). The line reader is the host's (src/host/repl.c: readline on a terminal when
-- libreadline is there, for editing and history). The global `claude` is the module.
-- @module claude.repl
local async = require "claude.async"
local core = require "claude.core"

local M = {}

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
    done:set()
  end)
  done:wait()
  state.interrupt_read = nil
  if line == INTERRUPTED then error(INTERRUPTED, 0) end
  return line
end

-- The chunk of `line`: `return line` when it is an expression, else the statement, read
-- on over more lines while it is incomplete. Returns chunk or nil, err; and the text read
-- (for the history); `false` at the end of input.
local function read_chunk(reader, state, env)
  local line = read(reader, "> ", state)
  if line == nil then return false end
  if line:sub(1, 1) == "=" then line = "return " .. line:sub(2) end
  local chunk = load("return " .. line, "=stdin", "t", env)
  if chunk then return chunk, nil, line end
  local text = line
  local err
  while true do
    chunk, err = load(text, "=stdin", "t", env)
    if chunk or not incomplete(err) then break end
    local more = read(reader, ">> ", state)
    if more == nil then break end
    text = text .. "\n" .. more
  end
  return chunk, err, text
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
  if reader.tty then io.stdout:write("\n") end
  claude._on_interrupt = previous
  reader:close()
end

return M
