--- The JSON configuration files of MCP clients, edited as a person would: one entry added or
-- replaced by splicing its bytes into the text, every other byte kept (members in their
-- order, numbers and strings as written, the layout of unrelated parts); a new entry is laid
-- out as the file is (its indent unit, or on one line in a one-line file). And the unified
-- diff of two texts, to show what changed. For `claudelua mcp install`
-- (claude.mcp.server.install).
-- @module claude.mcp.server.config_file
local json = require "claude.json"

local M = {}

-- A parsed document is made of nodes: { t = "o", keys = {...}, map = {key = node},
-- at = {key = where its name starts} }, { t = "a", node, ... } and { t = "s", raw = "the
-- JSON text of a scalar" }; each parsed node has `s` and `e`, where its text starts and
-- ends (one past the end).

local function fail(text, pos, what, comments)
  local before = text:sub(1, pos - 1)
  local line = select(2, before:gsub("\n", "")) + 1
  local column = pos - (before:match(".*()\n") or 0)
  error({ config_error = string.format("line %d, column %d: %s", line, column, what),
    comments = comments }, 0)
end

local parse_value

-- Skips blanks, and comments when `jsonc` (VS Code's files allow them).
local function skip(text, pos, jsonc)
  while true do
    pos = text:find("[^ \t\r\n]", pos) or #text + 1
    local c2 = text:sub(pos, pos + 1)
    if c2 ~= "//" and c2 ~= "/*" then return pos end
    if not jsonc then
      fail(text, pos, "a comment (this editor keeps plain JSON only: add the entry by hand)",
        true)
    end
    local close = c2 == "//" and text:find("\n", pos + 2, true) or
      c2 == "/*" and select(2, text:find("*/", pos + 2, true))
    if not close then
      if c2 == "/*" then fail(text, pos, "an unterminated comment") end
      return #text + 1
    end
    pos = close + 1
  end
end

local function parse_string(text, pos)
  local i = pos + 1
  while true do
    local c = text:find('["\\]', i)
    if not c then fail(text, pos, "an unterminated string") end
    if text:sub(c, c) == '"' then return text:sub(pos, c), c + 1 end
    i = c + 2
  end
end

parse_value = function(text, pos, jsonc)
  pos = skip(text, pos, jsonc)
  local start, node = pos
  local c = text:sub(pos, pos)
  if c == "{" then
    node = { t = "o", keys = {}, map = {}, at = {}, s = start }
    pos = skip(text, pos + 1, jsonc)
    while text:sub(pos, pos) ~= "}" do
      if text:sub(pos, pos) ~= '"' then fail(text, pos, "a member name expected") end
      local at = pos
      local raw
      raw, pos = parse_string(text, pos)
      local key = json.decode(raw)
      pos = skip(text, pos, jsonc)
      if text:sub(pos, pos) ~= ":" then fail(text, pos, "':' expected") end
      local value
      value, pos = parse_value(text, pos + 1, jsonc)
      if node.map[key] == nil then node.keys[#node.keys + 1] = key end
      node.map[key], node.at[key] = value, at
      pos = skip(text, pos, jsonc)
      local d = text:sub(pos, pos)
      if d == "," then
        pos = skip(text, pos + 1, jsonc)
        if not jsonc and text:sub(pos, pos) == "}" then
          fail(text, pos, "a member name expected")
        end
      elseif d ~= "}" then
        fail(text, pos, "',' or '}' expected")
      end
    end
    pos = pos + 1
  elseif c == "[" then
    node = { t = "a", s = start }
    pos = skip(text, pos + 1, jsonc)
    while text:sub(pos, pos) ~= "]" do
      local value
      value, pos = parse_value(text, pos, jsonc)
      node[#node + 1] = value
      pos = skip(text, pos, jsonc)
      local d = text:sub(pos, pos)
      if d == "," then
        pos = skip(text, pos + 1, jsonc)
        if not jsonc and text:sub(pos, pos) == "]" then fail(text, pos, "a value expected") end
      elseif d ~= "]" then
        fail(text, pos, "',' or ']' expected")
      end
    end
    pos = pos + 1
  elseif c == '"' then
    local raw
    raw, pos = parse_string(text, pos)
    node = { t = "s", raw = raw, s = start }
  else
    local raw = text:match("^%-?[%d.eE+%-]+", pos) or text:match("^true", pos)
      or text:match("^false", pos) or text:match("^null", pos)
    if not raw then fail(text, pos, "a value expected") end
    node, pos = { t = "s", raw = raw, s = start }, pos + #raw
  end
  node.e = pos
  return node, pos
end

--- Parses a JSON text into nodes that keep its order, its scalars' spelling and where
-- each one is in the text.
-- @tparam string text
-- @tparam[opt] boolean jsonc allow comments and trailing commas (VS Code's JSONC)
-- @return the root node, or nil, why (with the line and column) and, when the text has
--   comments and `jsonc` was not given, "comments"
function M.parse(text, jsonc)
  local ok, node = pcall(function()
    local node, pos = parse_value(text, 1, jsonc)
    pos = skip(text, pos, jsonc)
    if pos <= #text then fail(text, pos, "text after the value") end
    return node
  end)
  if not ok then
    if type(node) == "table" then
      return nil, node.config_error, node.comments and "comments" or nil
    end
    error(node, 0)
  end
  if jsonc then return node end
  local jok, err = pcall(json.decode, text) -- what the scan lets through (bad escapes, say)
  if not jok then return nil, tostring(err) end
  return node
end

--- A node from a Lua value: strings, numbers, booleans, lists (`json.array`), and objects
-- given as a list of `{ key, value }` pairs (in that order).
function M.node(v)
  if type(v) ~= "table" then return { t = "s", raw = json.encode(v) } end
  if v.t then return v end
  if getmetatable(v) == getmetatable(json.array {}) or (v[1] ~= nil and type(v[1]) ~= "table")
      or next(v) == nil then
    local node = { t = "a" }
    for i, x in ipairs(v) do node[i] = M.node(x) end
    return node
  end
  local node = { t = "o", keys = {}, map = {} }
  for _, pair in ipairs(v) do
    node.keys[#node.keys + 1] = pair[1]
    node.map[pair[1]] = M.node(pair[2])
  end
  return node
end

--- An empty object node.
function M.object() return { t = "o", keys = {}, map = {} } end

--- A node as plain Lua values (objects as tables), for reading.
function M.value(node)
  if node.t == "s" then return json.decode(node.raw) end
  local out = {}
  if node.t == "a" then
    for i, x in ipairs(node) do out[i] = M.value(x) end
  else
    for _, k in ipairs(node.keys) do out[k] = M.value(node.map[k]) end
  end
  return out
end

-- `unit` is the indent of one level; nil lays the node out on one line (`sep` after ',' and
-- ':', "" or " ").
local function encode(node, indent, unit, out, sep)
  if node.t == "s" then
    out[#out + 1] = node.raw
    return
  end
  local array = node.t == "a"
  local n = array and #node or #node.keys
  if n == 0 then out[#out + 1] = array and "[]" or "{}" return end
  local inner = unit and indent .. unit
  out[#out + 1] = (array and "[" or "{") .. (unit and "\n" or "")
  for i = 1, n do
    if unit then out[#out + 1] = inner end
    local child = node[i]
    if not array then
      local k = node.keys[i]
      out[#out + 1] = json.encode(k) .. ":" .. (unit and " " or sep)
      child = node.map[k]
    end
    encode(child, inner, unit, out, sep)
    if i < n then out[#out + 1] = unit and ",\n" or "," .. sep end
  end
  out[#out + 1] = (unit and "\n" .. indent or "") .. (array and "]" or "}")
end

--- The text of a node tree, laid out with two-space indents and a final newline.
function M.encode(node)
  local out = {}
  encode(node, "", "  ", out)
  out[#out + 1] = "\n"
  return table.concat(out)
end

-- The blanks that start the line of `pos`.
local function line_indent(text, pos)
  local line_start = (text:sub(1, pos - 1):match(".*\n()") or 1)
  return text:match("^[ \t]*", line_start)
end

--- The node at `keys` (a list of member names from `root`), or nil.
function M.lookup(root, keys)
  local node = root
  for _, k in ipairs(keys) do
    node = node.t == "o" and node.map[k] or nil
    if not node then return nil end
  end
  return node
end

--- The text with `value` (a node) at `keys` below `root` (parsed from `text`): the bytes
-- of the value there replaced, or a member added to the deepest object on the way (with
-- the objects still missing), every other byte kept. The added text follows the file's
-- layout: its indent unit where the object spans lines, one line where it does not.
-- @return the new text, or nil and the name of a member on the way that is not an object
function M.splice(text, root, keys, value)
  if not text or not text:find("%S") then
    root = M.object()
    text = nil
  end
  local obj, depth = root, 1
  while depth < #keys do
    local child = obj.map[keys[depth]]
    if child == nil then break end
    if child.t ~= "o" then return nil, keys[depth] end
    obj, depth = child, depth + 1
  end
  for i = #keys, depth + 1, -1 do -- the objects still missing, innermost first
    value = { t = "o", keys = { keys[i] }, map = { [keys[i]] = value } }
  end
  local key = keys[depth]
  if not text then return M.encode({ t = "o", keys = { key }, map = { [key] = value } }) end
  local unit = text:match("\n([ \t]+)%S") or "  "
  -- an empty object: laid out on lines unless the file is one line with something in it
  local spans_lines = text:sub(obj.s, obj.e - 1):find("\n")
    or (#obj.keys == 0 and (#root.keys == 0 or text:gsub("%s+$", ""):find("\n")))
  local sep = text:sub(obj.s, obj.e - 1):find('":%s') and " " or ""
  local function laid_out(node, indent)
    local out = {}
    encode(node, indent, spans_lines and unit or nil, out, sep)
    return table.concat(out)
  end
  local old = obj.map[key]
  if old then
    local indent = line_indent(text, obj.at[key])
    return text:sub(1, old.s - 1) .. laid_out(value, indent) .. text:sub(old.e)
  end
  local name = json.encode(key)
  if #obj.keys > 0 then -- after the last member
    local last = obj.keys[#obj.keys]
    local at = obj.map[last].e
    if spans_lines then
      local indent = line_indent(text, obj.at[last])
      return text:sub(1, at - 1) .. ",\n" .. indent .. name .. ": " .. laid_out(value, indent)
        .. text:sub(at)
    end
    return text:sub(1, at - 1) .. "," .. sep .. name .. ":" .. sep .. laid_out(value, "")
      .. text:sub(at)
  end
  local outer = line_indent(text, obj.s)
  local body = spans_lines
    and "{\n" .. outer .. unit .. name .. ": " .. laid_out(value, outer .. unit) .. "\n"
      .. outer .. "}"
    or "{" .. name .. ":" .. sep .. laid_out(value, "") .. "}"
  return text:sub(1, obj.s - 1) .. body .. text:sub(obj.e)
end

local function lines(text)
  local out = {}
  for l in (text or ""):gmatch("([^\n]*)\n") do out[#out + 1] = l end
  local rest = (text or ""):match("([^\n]+)$")
  if rest then out[#out + 1] = rest end
  return out
end

--- The unified diff (3 lines of context) from text `a` to text `b`, or "" when equal.
-- @tparam string|nil a the old text (nil: the file did not exist)
-- @tparam string b
-- @tparam string name the file, for the header
function M.diff(a, b, name)
  local x, y = lines(a), lines(b)
  -- the common head and tail, then the longest common subsequence of the middle
  local head = 0
  while head < #x and head < #y and x[head + 1] == y[head + 1] do head = head + 1 end
  local tail = 0
  while tail < #x - head and tail < #y - head and x[#x - tail] == y[#y - tail] do
    tail = tail + 1
  end
  local n, m = #x - head - tail, #y - head - tail
  local L = {}
  for i = n + 1, 1, -1 do
    L[i] = {}
    for j = m + 1, 1, -1 do
      if i > n or j > m then
        L[i][j] = 0
      elseif x[head + i] == y[head + j] then
        L[i][j] = L[i + 1][j + 1] + 1
      else
        L[i][j] = math.max(L[i + 1][j], L[i][j + 1])
      end
    end
  end
  -- the edit script over the whole texts: { op, line }, op " ", "-" or "+"
  local ops = {}
  for i = 1, head do ops[#ops + 1] = { " ", x[i] } end
  local i, j = 1, 1
  while i <= n or j <= m do
    if i <= n and j <= m and x[head + i] == y[head + j] then
      ops[#ops + 1] = { " ", x[head + i] }
      i, j = i + 1, j + 1
    elseif i <= n and (j > m or L[i + 1][j] >= L[i][j + 1]) then
      ops[#ops + 1] = { "-", x[head + i] } -- deletions first, as diff -u shows them
      i = i + 1
    else
      ops[#ops + 1] = { "+", y[head + j] }
      j = j + 1
    end
  end
  for k = #x - tail + 1, #x do ops[#ops + 1] = { " ", x[k] } end
  -- hunks: changes with 3 lines of context, joined when their contexts meet
  local out, k = {}, 1
  while k <= #ops do
    if ops[k][1] ~= " " then
      local first = math.max(1, k - 3)
      local last, gap = k, 0
      local e = k
      while e <= #ops do
        if ops[e][1] ~= " " then
          last, gap = e, 0
        else
          gap = gap + 1
          if gap > 6 then break end
        end
        e = e + 1
      end
      last = math.min(#ops, last + 3)
      local a0, b0, ac, bc = 0, 0, 0, 0
      for q = 1, first - 1 do
        if ops[q][1] ~= "+" then a0 = a0 + 1 end
        if ops[q][1] ~= "-" then b0 = b0 + 1 end
      end
      local body = {}
      for q = first, last do
        if ops[q][1] ~= "+" then ac = ac + 1 end
        if ops[q][1] ~= "-" then bc = bc + 1 end
        body[#body + 1] = ops[q][1] .. ops[q][2]
      end
      out[#out + 1] = string.format("@@ -%d,%d +%d,%d @@", ac > 0 and a0 + 1 or a0, ac,
        bc > 0 and b0 + 1 or b0, bc)
      for _, l in ipairs(body) do out[#out + 1] = l end
      k = last + 1
    else
      k = k + 1
    end
  end
  if #out == 0 then return "" end
  table.insert(out, 1, "+++ " .. name)
  table.insert(out, 1, "--- " .. (a and name or "/dev/null"))
  return table.concat(out, "\n") .. "\n"
end

return M
