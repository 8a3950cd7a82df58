--- Docs that run (spec/e2e/docs_spec.lua): the fenced blocks of README.md and docs/*.md, and
-- the directives that say how each one runs, in an HTML comment right before it. A directive
-- never adds a command, an input or a variable a reader would not see (docs/testing.md):
--
--   <!-- doc: fragment (why) -->   not run: a piece of a larger program (keep these few)
--   <!-- doc: check (why) -->      not run, checked: Lua compiles; a shell block parses, and
--                                  the repository files it names exist (its comments aside);
--                                  for blocks another spec runs, or too long to run here
--   <!-- doc: output -->           this block is the stdout of the block before it (exact,
--                                  but a line `...` stands for any lines, and `...` in a
--                                  line for any text)
--   <!-- doc: file NAME -->        the block (of any language: a view, a scenario, a script
--                                  a later block runs) is saved as NAME in the doc's
--                                  directory, not run; the block or the text around it names
--                                  the file
--   <!-- doc: servers N -->        a shell block whose lines start servers: each line runs on
--                                  its own; one still running after N s (default 2) started
--   <!-- doc: until N -->          a Lua program that serves: stopped (SIGINT) after N s
--   <!-- doc: exit N -->           the status expected (default 0)
--
-- Directives combine with ';' (`<!-- doc: file tools.lua; check -->`). Visible in the block:
--   a first line `-- needs: WHAT` / `# needs: WHAT`   a real remote service (or a machine
--                                  the reader has and the suite has not): checked, not run
--   a Lua first line `-- NAME.lua -- run with: COMMAND`   how the block runs; without it a
--                                  Lua block runs as `claudelua NAME.lua` (no demo: one that
--                                  asks the model fails, asking for the line)
-- A `sh` block runs with bash -e in the doc's directory, with only the PATH the README's
-- set-up gives (PREFIX/bin:/usr/bin:/bin), HOME there and no demo mode: a block that needs
-- the scripted model says `--demo`. A Lua line `print(...) --> text` says what it prints:
-- those texts must come out in order (blanks and tabs alike). Blocks of other languages are
-- not run (`json` ones must parse, `js` ones pass `node --check`, `c` declarations must be
-- in include/claudelua/).
local json = require "claude.json"

local M = {}

M.RUN_LANGS = { lua = true, sh = true }

local function trim(s) return (s:gsub("^%s+", ""):gsub("%s+$", "")) end

--- Parses one directive comment's text into a table.
function M.directives(text, into)
  local d = into or {}
  for part in text:gmatch("[^;]+") do
    part = trim(part)
    local word, rest = part:match("^(%S+)%s*(.-)$")
    if word == "fragment" or word == "check" or word == "output" then
      d[word] = rest ~= "" and rest or true
    elseif word == "file" then
      d[word] = rest
    elseif word == "servers" or word == "until" or word == "exit" then
      d[word] = tonumber(rest) or (word == "servers" and 2) or error("doc: " .. word
        .. " needs a number")
    elseif word then
      error("unknown doc directive '" .. word .. "'")
    end
  end
  return d
end

--- The fenced blocks of a Markdown text: `{ lang, code, line, d = directives }`.
function M.blocks(text)
  local out = {}
  local pending, lineno, inside = nil, 0, nil
  local comment -- a multi-line directive being read
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    lineno = lineno + 1
    if inside then
      if line:match("^" .. inside.fence .. "%s*$") then
        out[#out + 1] = inside
        inside = nil
      else
        inside.lines[#inside.lines + 1] = line
      end
    elseif comment then
      comment = comment .. " " .. line
      if line:find("-->", 1, true) then
        pending = M.directives(comment:match("^(.-)%-%->"), pending)
        comment = nil
      end
    else
      local fence, lang = line:match("^(```+)%s*([%w_+-]*)")
      if fence then
        inside = { lang = lang ~= "" and lang or "none", fence = fence, lines = {},
          line = lineno, d = pending or {} }
        pending = nil
      else
        local c = line:match("^<!%-%-%s*doc:%s*(.*)$")
        if c then
          local body = c:match("^(.-)%-%->")
          if body then pending = M.directives(body, pending) else comment = c end
        elseif line:find("%S") then
          pending = nil -- a directive belongs to the block right after it
        end
      end
    end
  end
  for _, b in ipairs(out) do
    b.code = table.concat(b.lines, "\n") .. "\n"
    b.lines = nil
    local first = b.code:match("^[^\n]*")
    if b.lang == "lua" then
      b.saved = b.d.file ~= nil -- `file NAME` on a Lua block: a script a later block runs
      b.d.file = b.d.file or first:match("^%-%-%s*([%w_./-]+%.lua)")
      b.run_with = first:match("^%-%-.-run with:%s*(.-)%s*$")
      b.run_with = b.run_with and b.run_with:gsub("%s+%(.*$", "")
    end
    b.needs = first:match("^%-%-%s*needs:%s*(.-)%s*$") or first:match("^#%s*needs:%s*(.-)%s*$")
  end
  -- output blocks belong to the block before them
  for i = #out, 2, -1 do
    if out[i].d.output then
      out[i - 1].expect = out[i].code
      out[i].is_output = true
    end
  end
  return out
end

--- The `--> text` a Lua block says its prints show, in order: on the line of a `print`, or
-- alone on the line after it.
function M.arrows(code)
  local out, after_print = {}, false
  for line in code:gmatch("[^\n]+") do
    local said = line:match("print%b().-%-%->%s*(.-)%s*$")
      or (after_print and line:match("^%s*%-%->%s*(.-)%s*$"))
    if said then out[#out + 1] = said end
    after_print = line:find("print(", 1, true) ~= nil and not said
  end
  return out
end

local function norm(s) return trim((s:gsub("[ \t]+", " "))) end

--- Checks `out` against the `--> text`s: each one a later line than the one before.
-- @return true, or nil and why
function M.check_arrows(arrows, out)
  local lines = {}
  for l in out:gmatch("([^\n]*)\n?") do lines[#lines + 1] = norm(l) end
  local at = 1
  for _, want in ipairs(arrows) do
    local found
    for i = at, #lines do
      if lines[i] == norm(want) then
        found = i
        break
      end
    end
    if not found then
      return nil, string.format("the output lacks %q (after line %d):\n%s", want, at - 1, out)
    end
    at = found + 1
  end
  return true
end

-- A line of an expected output as a pattern: `...` inside it stands for any text.
local function line_matches(pattern, line)
  pattern, line = pattern:gsub("%s+$", ""), line:gsub("%s+$", "")
  if not pattern:find("...", 1, true) then return pattern == line end
  local parts = {}
  for piece in (pattern .. "..."):gmatch("(.-)%.%.%.") do
    parts[#parts + 1] = piece:gsub("%p", "%%%0")
  end
  return line:match("^" .. table.concat(parts, ".-") .. "$") ~= nil
end

--- Matches `out` against an expected output where a line `...` stands for any lines, and
-- `...` in a line for any text.
function M.check_output(expect, out)
  local pattern = {}
  for line in expect:gsub("\n$", ""):gmatch("([^\n]*)\n?") do pattern[#pattern + 1] = line end
  local lines = {}
  for line in out:gsub("\n$", ""):gmatch("([^\n]*)\n?") do lines[#lines + 1] = line end
  local function match(pi, li)
    if pi > #pattern then return li > #lines end
    if trim(pattern[pi]) == "..." then
      for k = li, #lines + 1 do
        if match(pi + 1, k) then return true end
      end
      return false
    end
    if li > #lines or not line_matches(pattern[pi], lines[li]) then return false end
    return match(pi + 1, li + 1)
  end
  if match(1, 1) then return true end
  return nil, "the output differs from the doc's:\n--- doc\n" .. expect .. "--- got\n" .. out
end

--- Whether a `json` block parses (`...` placeholders make it a sketch: skipped).
function M.json_ok(code)
  if code:find("...", 1, true) then return true end
  local ok, err = pcall(json.decode, code)
  return ok, err
end

return M
