--- The JSON configuration files of MCP clients, edited as a person would: one entry added or
-- replaced, every other byte of meaning kept, the members in the order they were, numbers
-- and strings as they were written, and the result laid out as the clients write it
-- (two-space indents, `JSON.stringify(value, null, 2)`). And the unified diff of two texts,
-- to show what changed. For `claudelua mcp install` (claude.mcp.server.install).
-- @module claude.mcp.server.config_file
local json = require "claude.json"

local M = {}

-- A parsed document is made of nodes: { t = "o", keys = {...}, map = {key = node} },
-- { t = "a", node, ... } and { t = "s", raw = "the JSON text of a scalar" }.

local function fail(text, pos, what)
  local line = select(2, text:sub(1, pos):gsub("\n", "")) + 1
  error({ config_error = string.format("line %d: %s", line, what) }, 0)
end

local parse_value

local function skip(text, pos)
  pos = text:find("[^ \t\r\n]", pos) or #text + 1
  local c2 = text:sub(pos, pos + 1)
  if c2 == "//" or c2 == "/*" then
    fail(text, pos, "a comment (this editor keeps plain JSON only: add the entry by hand)")
  end
  return pos
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

parse_value = function(text, pos)
  pos = skip(text, pos)
  local c = text:sub(pos, pos)
  if c == "{" then
    local node = { t = "o", keys = {}, map = {} }
    pos = skip(text, pos + 1)
    if text:sub(pos, pos) == "}" then return node, pos + 1 end
    while true do
      pos = skip(text, pos)
      if text:sub(pos, pos) ~= '"' then fail(text, pos, "a member name expected") end
      local raw
      raw, pos = parse_string(text, pos)
      local key = json.decode(raw)
      pos = skip(text, pos)
      if text:sub(pos, pos) ~= ":" then fail(text, pos, "':' expected") end
      local value
      value, pos = parse_value(text, pos + 1)
      if node.map[key] == nil then node.keys[#node.keys + 1] = key end
      node.map[key] = value
      pos = skip(text, pos)
      local d = text:sub(pos, pos)
      if d == "}" then return node, pos + 1 end
      if d ~= "," then fail(text, pos, "',' or '}' expected") end
      pos = pos + 1
    end
  elseif c == "[" then
    local node = { t = "a" }
    pos = skip(text, pos + 1)
    if text:sub(pos, pos) == "]" then return node, pos + 1 end
    while true do
      local value
      value, pos = parse_value(text, pos)
      node[#node + 1] = value
      pos = skip(text, pos)
      local d = text:sub(pos, pos)
      if d == "]" then return node, pos + 1 end
      if d ~= "," then fail(text, pos, "',' or ']' expected") end
      pos = pos + 1
    end
  elseif c == '"' then
    local raw
    raw, pos = parse_string(text, pos)
    return { t = "s", raw = raw }, pos
  end
  local raw = text:match("^%-?[%d.eE+%-]+", pos) or text:match("^true", pos)
    or text:match("^false", pos) or text:match("^null", pos)
  if not raw then fail(text, pos, "a value expected") end
  return { t = "s", raw = raw }, pos + #raw
end

--- Parses a JSON text into nodes that keep its order and its scalars' spelling.
-- @tparam string text
-- @return the root node, or nil and why
function M.parse(text)
  local ok, node = pcall(function()
    local node, pos = parse_value(text, 1)
    pos = skip(text, pos)
    if pos <= #text then fail(text, pos, "text after the value") end
    return node
  end)
  if not ok then
    if type(node) == "table" then return nil, node.config_error end
    error(node, 0)
  end
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

--- Sets `obj[key] = value` (a node): in place when the key is there, else last.
function M.set(obj, key, value)
  if obj.map[key] == nil then obj.keys[#obj.keys + 1] = key end
  obj.map[key] = value
end

--- The child object `key` of `obj`, made (empty, last) when missing; nil when it is there
-- and not an object.
function M.child(obj, key)
  local c = obj.map[key]
  if c == nil then
    c = M.object()
    M.set(obj, key, c)
  end
  return c.t == "o" and c or nil
end

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

local function encode(node, indent, out)
  if node.t == "s" then
    out[#out + 1] = node.raw
  elseif node.t == "a" then
    if #node == 0 then out[#out + 1] = "[]" return end
    out[#out + 1] = "[\n"
    for i, x in ipairs(node) do
      out[#out + 1] = indent .. "  "
      encode(x, indent .. "  ", out)
      out[#out + 1] = i < #node and ",\n" or "\n"
    end
    out[#out + 1] = indent .. "]"
  else
    if #node.keys == 0 then out[#out + 1] = "{}" return end
    out[#out + 1] = "{\n"
    for i, k in ipairs(node.keys) do
      out[#out + 1] = indent .. "  " .. json.encode(k) .. ": "
      encode(node.map[k], indent .. "  ", out)
      out[#out + 1] = i < #node.keys and ",\n" or "\n"
    end
    out[#out + 1] = indent .. "}"
  end
end

--- The text of a node tree, laid out with two-space indents and a final newline.
function M.encode(node)
  local out = {}
  encode(node, "", out)
  out[#out + 1] = "\n"
  return table.concat(out)
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
