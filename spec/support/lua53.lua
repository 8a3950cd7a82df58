-- The specs on Lua 5.3 (spec/helper.lua): their files are written for 5.4, and 5.3 cannot
-- parse `local x <const>` or `local x <close>`. At load (the spec files, and the modules of
-- spec/), `<const>` goes (a constant is a plain local, with the same value), and a `<close>`
-- variable is closed when its test (or, outside a test, its file) ends: later than on 5.4,
-- which closes at the end of the block: a spec that watches the close happen is pending on
-- 5.3 (`if _VERSION == "Lua 5.3" then return pending(why) end`), and one that needs a close
-- before its end for another reason closes explicitly, so it runs the same on both. The
-- product itself has no such transform: its Lua half has no `<close>`, and its text for 5.3
-- drops `<const>` at build time (cmake/embed_lua.cmake).
local M = {}

local later = {} -- the values to close, in the order of their declarations

--- The wrapper a `<close>` declaration's values go through.
function M.later(v, ...)
  if v ~= nil and v ~= false then later[#later + 1] = v end
  return v, ...
end

--- Closes what M.later kept, the last first (as 5.4 closes); called by spec/helper.lua.
function M.close_all()
  for i = #later, 1, -1 do
    local v = later[i]
    later[i] = nil
    local mt = debug.getmetatable(v)
    local close = type(mt) == "table" and mt.__close
    if close then
      local ok, err = pcall(close, v, nil)
      if not ok then io.stderr:write("lua53: a <close> handler raised: ", tostring(err), "\n") end
    end
  end
end

-- Whether text loads as a chunk (syntax only).
local function parses(text) return load(text, "=check", "t") ~= nil end

-- The end of the expression list that starts the text of lines[first] at column col: the
-- line, and the column of its last character of code (before a trailing comment).
local function expression_end(lines, first, col)
  local text = lines[first]:sub(col)
  for n = first, #lines do
    if n > first then text = text .. "\n" .. lines[n] end
    if parses("local _ = " .. text) then
      local line = lines[n]
      local head = #text - #line -- where line starts in text
      local from = 1
      while true do -- a `--` that starts a comment leaves code that parses before it
        local at = line:find("--", from, true)
        if not at then break end
        if parses("local _ = " .. text:sub(1, head + at - 1)) then
          return n, (line:sub(1, at - 1):find("%s*$")) - 1
        end
        from = at + 2
      end
      return n, (line:find("%s*$")) - 1
    end
  end
  error("lua53: cannot find the end of a <close> declaration at line " .. first)
end

-- For each line, whether it starts inside a long string or comment (`[[...]]`, `--[==[`):
-- the text of a script a spec writes out is left as it is.
local function long_lines(text)
  local inside, n, i = {}, 1, 1
  local close -- the closing bracket of the long string we are in
  local quote -- the quote of the short string we are in
  inside[1] = false
  while i <= #text do
    local c = text:sub(i, i)
    if c == "\n" then
      n = n + 1
      inside[n] = close ~= nil
      quote = nil
      i = i + 1
    elseif close then
      if text:sub(i, i + #close - 1) == close then
        i = i + #close
        close = nil
      else
        i = i + 1
      end
    elseif quote then
      if c == "\\" then i = i + 2
      else
        if c == quote then quote = nil end
        i = i + 1
      end
    elseif c == '"' or c == "'" then
      quote = c
      i = i + 1
    else
      local level = text:match("^%[(=*)%[", i) or text:match("^%-%-%[(=*)%[", i)
      if level then
        close = "]" .. level .. "]"
        i = i + #text:match("^%-?%-?%[=*%[", i)
      elseif text:sub(i, i + 1) == "--" then -- a line comment: to the end of the line
        i = text:find("\n", i, true) or #text + 1
      else
        i = i + 1
      end
    end
  end
  return inside
end

--- The text for 5.3 of a spec file's text (same lines, so messages keep their numbers).
function M.transform(text)
  local lines = {}
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do lines[#lines + 1] = line end
  local inside = long_lines(text)
  for i, line in ipairs(lines) do
    if not inside[i] and line:find("^%s*local%s") then
      lines[i] = line:gsub("%s*<%s*const%s*>", "")
    end
  end
  local closes = false
  -- the last first: a declaration inside another's expression is rewritten before it
  for i = #lines, 1, -1 do
    local line = lines[i]
    local head, names, rhs = line:match("^(%s*local%s+)([^=]-<%s*close%s*>[^=]-=)()")
    if head and not inside[i] then
      closes = true
      local stripped = names:gsub("%s*<%s*close%s*>", "")
      lines[i] = head .. stripped .. " M53_later(" .. line:sub(rhs)
      local col = #head + #stripped + #" M53_later(" + 1
      local n, last = expression_end(lines, i, col)
      lines[n] = lines[n]:sub(1, last) .. ")" .. lines[n]:sub(last + 1)
    end
  end
  text = table.concat(lines, "\n")
  if closes then
    text = 'local M53_later = require("support.lua53").later; ' .. text
  end
  return text
end

--- loadfile for the spec files (busted loads them with the global one).
function M.loadfile(path, ...)
  local f, err = io.open(path, "rb")
  if not f then return nil, err end
  local text = f:read("a")
  f:close()
  text = M.transform((text:gsub("^#![^\n]*", "")))
  if select("#", ...) >= 2 then return load(text, "@" .. path, (...) or "bt", (select(2, ...))) end
  return load(text, "@" .. path, (...) or "bt")
end

--- A package.searchers entry for the modules under spec/ (support.*).
function M.searcher(name)
  local path = package.searchpath(name, "spec/?.lua")
  if not path then return "\n\tno file of spec/ for '" .. name .. "'" end
  local chunk, err = M.loadfile(path)
  if not chunk then error(err, 0) end
  return chunk, path
end

return M
