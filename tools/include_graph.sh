#!/usr/bin/env bash
# The dependency graph of src/ at the level of units, and whether it has a circle.
#
#   bash tools/include_graph.sh [-q] [src]      (-q: only the summary and the circles)
#
# A unit is a header with the .c files that define what it declares (budget/budget.h with
# budget.c, hook.c and memory.c; watch.h with watchdog.c); a .c file that defines nothing a
# header declares is a unit of its own (core.c, timer.c). The claude_open_* functions do not
# count for that: they are core.c's, which calls each of them.
#
# Unit A depends on unit B when a file of A includes B's header (#include "...", resolved
# from the file's folder, then from src/), or when a .c file of A names a function or
# variable that a .c file of B defines (a call, a registration, a table entry). The second
# kind is also checked file by file: the .c files of one unit must not call around in a
# circle either (multi.c and transfer.c of the HTTP client).
#
# Prints each unit with its files and the units it depends on, then the circles, if any,
# and exits 1 when there is one. Plain lua5.4 (a dependency of the project): no build.
set -euo pipefail
cd "$(dirname "$0")/.."
exec lua5.4 - "$@" <<'LUA'
local quiet = arg[1] == "-q"
local root = arg[quiet and 2 or 1] or "src"

local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

local function exists(path)
  local f = io.open(path, "rb")
  if f then f:close() end
  return f ~= nil
end

-- "a/./b/../c" -> "a/c"
local function normalize(path)
  local parts = {}
  for p in path:gmatch("[^/]+") do
    if p == ".." and #parts > 0 and parts[#parts] ~= ".." then
      parts[#parts] = nil
    elseif p ~= "." then
      parts[#parts + 1] = p
    end
  end
  return table.concat(parts, "/")
end

local files = {}
do
  local p = assert(io.popen("find '" .. root .. "' -type f \\( -name '*.c' -o -name '*.h' \\) | sort"))
  for line in p:lines() do files[#files + 1] = line:sub(#root + 2) end
  p:close()
end
local is_file = {}
for _, f in ipairs(files) do is_file[f] = true end

-- The text without comments, strings, character constants and preprocessor lines.
local function strip(s)
  local out, i, n = {}, 1, #s
  while i <= n do
    local c, d = s:sub(i, i), s:sub(i, i + 1)
    if d == "/*" then
      local e = s:find("*/", i + 2, true) or n
      out[#out + 1] = " "
      i = e + 2
    elseif d == "//" then
      i = s:find("\n", i, true) or n + 1
    elseif c == '"' or c == "'" then
      local j = i + 1
      while j <= n and s:sub(j, j) ~= c do
        if s:sub(j, j) == "\\" then j = j + 1 end
        j = j + 1
      end
      out[#out + 1] = c .. c
      i = j + 1
    elseif c == "#" and (i == 1 or s:sub(i - 1, i - 1) == "\n" or
                         s:sub(1, i - 1):match("\n[ \t]*$")) then
      -- a directive, with its continuation lines
      local j = i
      repeat
        local e = s:find("\n", j, true) or n + 1
        local cont = s:sub(e - 1, e - 1) == "\\"
        j = e + 1
      until not cont or j > n
      out[#out + 1] = "\n"
      i = j
    else
      out[#out + 1] = c
      i = i + 1
    end
  end
  return table.concat(out)
end

-- The statements at file scope: the text before each ';' or before each top-level '{'
-- (whose block is skipped), and whether a block followed.
local function statements(text)
  local list, depth, start = {}, 0, 1
  for i = 1, #text do
    local c = text:sub(i, i)
    if c == "{" then
      if depth == 0 then list[#list + 1] = {text = text:sub(start, i - 1), block = true} end
      depth = depth + 1
    elseif c == "}" then
      depth = depth - 1
      if depth == 0 then start = i + 1 end
    elseif c == ";" and depth == 0 then
      list[#list + 1] = {text = text:sub(start, i - 1), block = false}
      start = i + 1
    end
  end
  return list
end

local function exported(name) return name:match("^claude_") or name:match("^luaopen_") end

local info = {} -- file -> {includes = {...}, names = set of identifiers, defines/declares = set}
for _, f in ipairs(files) do
  local src = read(root .. "/" .. f)
  local t = {includes = {}, names = {}, defines = {}, declares = {}}
  local dir = f:match("^(.*)/[^/]*$")
  for inc in src:gmatch('#%s*include%s*"([^"]+)"') do
    local here = normalize((dir and dir .. "/" or "") .. inc)
    if is_file[here] then
      t.includes[#t.includes + 1] = here
    elseif is_file[normalize(inc)] then
      t.includes[#t.includes + 1] = normalize(inc)
    end
  end
  local text = strip(src)
  for id in text:gmatch("[%a_][%w_]*") do t.names[id] = true end
  for _, st in ipairs(statements(text)) do
    local s = st.text
    local head = s:match("^%s*(.-)%s*$")
    if not head:match("^static") and not head:match("^typedef") then
      local fn = s:match("([%a_][%w_]*)%s*%(")
      -- the names of the variables (one per declarator: the last identifier before its
      -- initializer or its brackets)
      local vars = {}
      if not fn and not head:match("^struct") and not head:match("^enum") then
        for piece in (s:gsub("%b[]", "") .. ","):gmatch("([^,]*),") do
          local name = (piece:match("^(.-)=") or piece):match("([%a_][%w_]*)%s*$")
          if name and exported(name) then vars[#vars + 1] = name end
        end
      end
      if f:match("%.c$") then
        if fn and st.block and exported(fn) then t.defines[fn] = true end
        if not head:match("^extern") then
          for _, name in ipairs(vars) do t.defines[name] = true end
        end
      else
        if fn and exported(fn) then t.declares[fn] = true end
        if head:match("^extern") then
          for _, name in ipairs(vars) do t.declares[name] = true end
        end
      end
    end
  end
  info[f] = t
end

-- units
local unit_of, members = {}, {}
local function join(f, u)
  unit_of[f] = u
  members[u] = members[u] or {}
  table.insert(members[u], f)
end
for _, f in ipairs(files) do
  if f:match("%.h$") then join(f, f:sub(1, -3)) end
end
local definer = {}
for _, f in ipairs(files) do
  if f:match("%.c$") then
    for name in pairs(info[f].defines) do definer[name] = f end
    local stem = f:sub(1, -3)
    if is_file[stem .. ".h"] then
      join(f, stem)
    else
      local best, most = nil, 0
      for _, h in ipairs(files) do
        if h:match("%.h$") then
          local k = 0
          for name in pairs(info[f].defines) do
            if not name:match("^claude_open_") and info[h].declares[name] then k = k + 1 end
          end
          if k > most then best, most = h, k end
        end
      end
      join(f, best and unit_of[best] or stem)
    end
  end
end

-- arrows: unit -> set of units (with why), and .c -> set of .c (calls)
local deps, calls = {}, {}
local function arrow(g, a, b)
  if a == b then return end
  g[a] = g[a] or {}
  g[a][b] = true
end
for _, f in ipairs(files) do
  local t = info[f]
  for _, h in ipairs(t.includes) do arrow(deps, unit_of[f], unit_of[h]) end
  if f:match("%.c$") then
    for name in pairs(t.names) do
      local d = definer[name]
      if d and d ~= f then
        arrow(deps, unit_of[f], unit_of[d])
        arrow(calls, f, d)
      end
    end
  end
end

local function sorted_keys(set)
  local list = {}
  for k in pairs(set or {}) do list[#list + 1] = k end
  table.sort(list)
  return list
end

-- Tarjan: the strongly connected components of more than one node
local function circles(nodes, g)
  local index, low, on, stack, out, n = {}, {}, {}, {}, {}, 0
  local function visit(v)
    n = n + 1
    index[v], low[v] = n, n
    stack[#stack + 1] = v
    on[v] = true
    for _, w in ipairs(sorted_keys(g[v])) do
      if not index[w] then
        visit(w)
        low[v] = math.min(low[v], low[w])
      elseif on[w] then
        low[v] = math.min(low[v], index[w])
      end
    end
    if low[v] == index[v] then
      local comp = {}
      repeat
        local w = table.remove(stack)
        on[w] = nil
        comp[#comp + 1] = w
      until w == v
      if #comp > 1 then
        table.sort(comp)
        out[#out + 1] = comp
      end
    end
  end
  for _, v in ipairs(nodes) do
    if not index[v] then visit(v) end
  end
  return out
end

local units = sorted_keys(members)
local narrows = 0
for _, u in ipairs(units) do
  local to = sorted_keys(deps[u])
  narrows = narrows + #to
  if not quiet then
    local names = {}
    for _, f in ipairs(members[u]) do names[#names + 1] = f:match("[^/]*$") end
    table.sort(names)
    print(string.format("%-16s [%s] -> %s", u, table.concat(names, " "),
                        #to > 0 and table.concat(to, " ") or "-"))
  end
end
local cfiles = {}
for _, f in ipairs(files) do
  if f:match("%.c$") then cfiles[#cfiles + 1] = f end
end
local unit_circles, file_circles = circles(units, deps), circles(cfiles, calls)
for _, c in ipairs(unit_circles) do print("circle (units): " .. table.concat(c, " <-> ")) end
for _, c in ipairs(file_circles) do print("circle (.c calls): " .. table.concat(c, " <-> ")) end
local top = 0
for _, f in ipairs(cfiles) do
  if not f:find("/") then top = top + 1 end
end
print(string.format("%s: %d units, %d arrows, %d circles (%d between units, %d between .c files); " ..
                    "%d of %d .c files at the top", root, #units, narrows,
                    #unit_circles + #file_circles, #unit_circles, #file_circles, top, #cfiles))
os.exit((#unit_circles + #file_circles) == 0 and 0 or 1)
LUA
