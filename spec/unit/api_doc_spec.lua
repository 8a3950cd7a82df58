-- docs/api.md against the module: every exported function is documented, and
-- every function documented exists (in Lua, or in the public C header).
local claude = require "claude"
local testing = require "claude.testing"

local function slurp(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

-- The names of the `### ` headings: `claude.spawn`, `task:wait`, `claude_preload`.
local function documented()
  local names = {}
  for line in slurp("docs/api.md"):gmatch("[^\n]+") do
    if line:match("^### ") then
      for name in line:gmatch("`([%w_.:]+)%(") do names[name] = true end
    end
  end
  return names
end

-- Modules whose every function is public, by the name a user reaches them under (a field
-- of `require "claude"`), and the functions of them that serve other modules only (not
-- documented).
local MODULES = {
  ["claude"] = {},
  ["claude.async"] = { spawn_observed = true, spawn_transient = true, traceback = true,
    limit = true, worker = true, wait_call = true, by_coroutine = true,
    wait_woken = true, wake_all = true },
  ["claude.process"] = {}, ["claude.queue"] = {}, ["claude.errors"] = {},
  ["claude.json"] = {}, ["claude.testing"] = {}, ["claude.content"] = {},
  ["claude.schema"] = {}, ["claude.mcp.tool"] = { error_handler = true }, ["claude.mcp"] = {},
  ["claude.mcp.middleware"] = { check = true, append = true },
  ["claude.guard"] = {}, ["claude.trace"] = { _pending = true, _adopt = true },
  ["claude.sessions"] = {}, ["claude.settings"] = { merge = true },
  ["claude.http.client"] = {}, ["claude.http.server"] = {},
  ["claude.rpc"] = {}, ["claude.oauth"] = {}, ["claude.oauth.jwt"] = {},
  ["claude.oauth.jwks"] = {},
  ["claude.mcp.http"] = {},
  ["claude.openapi"] = {},
  ["claude.yaml"] = {},
  -- the transport's side of the checks
  ["claude.mcp.http_auth"] = { check = true, problem = true, endpoint = true, authenticate = true,
    serve_metadata = true, redact = true },
}

-- `claude.a.b` as fields of `require "claude"` (lazy ones load their module): a documented
-- name must be reachable as written, without a `require` of its own.
local function field(name)
  local v = claude
  for part in name:sub(#"claude" + 2):gmatch("[^.]+") do
    if type(v) ~= "table" then return nil end
    v = v[part]
  end
  return v
end

local fake_options, fake = testing.fake_cli("cli:expect_initialize()")
local log_path = os.tmpname()
-- Objects by the name the reference gives them, as their method tables.
local CLASSES = {
  task = require("claude.async").Task,
  event = getmetatable(require("claude.async").event()).__index,
  process = require("claude.process").Process,
  queue = require("claude.queue").Queue,
  session = require("claude.session").Session,
  server = getmetatable(claude.server("api_doc", {})).__index,
  fake = getmetatable(fake).__index,
  log = getmetatable(testing.read_log(log_path)).__index,
  key = getmetatable(require("claude.oauth.jwt").secret(string.rep("k", 32))).__index,
  keyset = require("claude.oauth.jwks").KeySet,
  store = require("claude.sessions.store").Memory,
  warm = require("claude.session.warm").Warm,
  spare = require("claude.session.warm").Spare,
  replay = getmetatable(select(2, testing.replay("spec/fixtures/recordings/agent.jsonl"))).__index,
}
fake:cleanup()
testing.cleanup()
os.remove(log_path)
assert(fake_options)

local function resolve(name)
  local object, method = name:match("^(%w+):([%w_]+)$")
  if object then
    local class = CLASSES[object]
    return class and rawget(class, method)
  end
  return name:match("^claude%.") and field(name) or nil
end

describe("docs/api.md", function()
  local names = documented()

  it("documents functions that exist", function()
    local missing = {}
    for name in pairs(names) do
      local is_c = not name:find("[.:]")
      if not is_c and type(resolve(name)) ~= "function" then missing[#missing + 1] = name end
    end
    table.sort(missing)
    assert.same({}, missing)
  end)

  it("documents every function the public modules export", function()
    local undocumented = {}
    for module, internal in pairs(MODULES) do
      for key, value in pairs(module == "claude" and claude or field(module)) do
        if type(value) == "function" and not key:match("^_") and not internal[key]
          and not names[module .. "." .. key] then
          undocumented[#undocumented + 1] = module .. "." .. key
        end
      end
    end
    for object, class in pairs(CLASSES) do
      for key, value in pairs(class) do
        local name = object .. ":" .. key
        if type(value) == "function" and not key:match("^_") and not names[name] then
          undocumented[#undocumented + 1] = name
        end
      end
    end
    table.sort(undocumented)
    assert.same({}, undocumented)
  end)

  it("documents exactly the functions of the public C header", function()
    local header, exported, c_documented = slurp("include/claudelua/claude.h"), {}, {}
    for line in header:gmatch("[^\n]+") do
      local name = line:match("^CLAUDE_EXPORT [^(]-([%w_]+)%(")
      if name then exported[name] = true end
    end
    for name in pairs(names) do
      if not name:find("[.:]") then c_documented[name] = true end
    end
    assert.is_true(exported.claude_preload)
    assert.same(exported, c_documented)
  end)

  it("gives a parameter or return type for every Lua function", function()
    local text, untyped = slurp("docs/api.md"), {}
    -- a heading, then the text up to the next heading (every heading: a match of its own
    -- must not eat the line break the next one starts with)
    local starts = {}
    for pos in text:gmatch("()\n##") do starts[#starts + 1] = pos end
    starts[#starts + 1] = #text + 1
    for i = 1, #starts - 1 do
      local heading, body = text:sub(starts[i] + 1, starts[i + 1]):match("^### ([^\n]+)\n(.*)$")
      if heading then
      if heading:find("[.:][%w_]+%(") and not heading:find("->", 1, true)
        and not body:find("\n%- `") and not heading:find("%(%)`$") then
        untyped[#untyped + 1] = heading
      end
      end
    end
    assert.same({}, untyped)
  end)
end)
