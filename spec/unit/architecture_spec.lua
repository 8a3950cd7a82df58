-- The shape of the tree (docs/architecture.md): rooms a reader can see into, arrows that
-- point one way, and long files that say why they are long.
local MAX_TOP = 12        -- files at the top of lua/claude/ and src/
local LONG = 600          -- lines; a longer file says why in its first lines
local MAX_C_LINES = 900   -- lines; no file of src/ is longer

local function lines_of(cmd)
  local out = {}
  local p = assert(io.popen(cmd))
  for l in p:lines() do out[#out + 1] = l end
  p:close()
  return out
end

local function slurp(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

-- lua/claude/mcp/server/init.lua -> claude.mcp.server
local function module_name(path)
  return (path:gsub("^lua/", ""):gsub("/init%.lua$", ""):gsub("%.lua$", ""):gsub("/", "."))
end

-- Every `require "claude..."` of every module, the lazy ones inside functions too.
local function require_graph()
  local edges = {}
  for _, path in ipairs(lines_of("find lua/claude -name '*.lua' | sort")) do
    local m = module_name(path)
    edges[m] = {}
    for r in slurp(path):gmatch('require%s*%(?%s*"(claude[%w_.]*)"') do
      if r ~= m then edges[m][r] = true end
    end
  end
  return edges
end

-- The strongly connected components with more than one member (Tarjan).
local function cycles(edges)
  local index, low, stack, on, n, found = {}, {}, {}, {}, 0, {}
  local function visit(v)
    n = n + 1
    index[v], low[v] = n, n
    stack[#stack + 1], on[v] = v, true
    for w in pairs(edges[v]) do
      if edges[w] then
        if not index[w] then
          visit(w)
          low[v] = math.min(low[v], low[w])
        elseif on[w] then
          low[v] = math.min(low[v], index[w])
        end
      end
    end
    if low[v] == index[v] then
      local c = {}
      repeat
        local w = table.remove(stack)
        on[w] = nil
        c[#c + 1] = w
      until w == v
      if #c > 1 then
        table.sort(c)
        found[#found + 1] = table.concat(c, " <-> ")
      end
    end
  end
  local names = {}
  for v in pairs(edges) do names[#names + 1] = v end
  table.sort(names)
  for _, v in ipairs(names) do
    if not index[v] then visit(v) end
  end
  return found
end

describe("the tree", function()
  it("has no require cycle among the claude modules", function()
    local edges = require_graph()
    assert.is_true(next(edges) ~= nil)
    assert.same({}, cycles(edges))
  end)

  it("finds a cycle when there is one (the check itself)", function()
    assert.same({ "a <-> b" }, cycles { a = { b = true }, b = { a = true }, c = { a = true } })
  end)

  it("has no two units of src/ that need each other (tools/include_graph.sh)", function()
    local p = assert(io.popen("bash tools/include_graph.sh -q 2>&1; echo \"exit $?\""))
    local out = p:read("a")
    p:close()
    assert.matches("0 circles", out)
    assert.matches("exit 0\n$", out)
  end)

  -- the byte streams know no protocol: a protocol plugs its reader in (io.h's
  -- claude_line_reader), and src/mcp/ includes src/io/, never the other way
  it("has src/io/ include nothing from src/mcp/, nor name an MCP function", function()
    assert.same({}, lines_of("grep -ln 'include \"mcp/' src/io/*.c src/io/*.h"))
    assert.same({}, lines_of("grep -ln 'claude_envelope\\|claude_pending\\|claude_call_id' "
      .. "src/io/*.c src/io/*.h"))
  end)

  it("keeps at most a dozen files at the top of lua/claude/ and of src/", function()
    assert.is_true(#lines_of("find lua/claude -maxdepth 1 -name '*.lua'") <= MAX_TOP)
    assert.is_true(#lines_of("find src -maxdepth 1 -name '*.c'") <= MAX_TOP)
  end)

  it("has no file over 600 lines that does not say why in its first lines", function()
    local silent = {}
    local files = lines_of("find lua src -name '*.lua' -o -name '*.c' -o -name '*.h' | sort")
    for _, path in ipairs(files) do
      local text = slurp(path)
      local _, n = text:gsub("\n", "")
      -- "Over 600 lines: why" or "One file: why" near the top
      local head = text:match(("[^\n]*\n?"):rep(25)) or text
      if n > LONG and not (head:find("600 lines") or head:find("One file")) then
        silent[#silent + 1] = path
      end
    end
    assert.same({}, silent)
  end)

  it("has no file of src/ over 900 lines", function()
    local long = {}
    for _, path in ipairs(lines_of("find src -name '*.c' -o -name '*.h' | sort")) do
      local _, n = slurp(path):gsub("\n", "")
      if n > MAX_C_LINES then long[#long + 1] = path end
    end
    assert.same({}, long)
  end)

  it("has no module requiring one that is not there", function()
    local missing = {}
    for m, deps in pairs(require_graph()) do
      for d in pairs(deps) do
        if d == "claude.core" then goto c_module end -- the C half
        local path = "lua/" .. d:gsub("%.", "/")
        local f = io.open(path .. ".lua") or io.open(path .. "/init.lua")
        if f then f:close() else missing[#missing + 1] = m .. " -> " .. d end
        ::c_module::
      end
    end
    table.sort(missing)
    assert.same({}, missing)
  end)
end)
