-- fuzz/client.lua -- the Lua half of the client target (fuzz/client.c): what a hostile MCP
-- server answers, through the client's readers of task answers and of pages
-- (claude.mcp.client.tasks, .pages, and the modern answer's rounds in .modern). The first
-- byte picks the surface, the rest are answers, one a line, each given to the next request
-- the surface makes: a JSON value is the request's result, `!` and text a JSON-RPC error
-- (`remote`), a line that does not decode a `protocol` failure; past the last line every
-- request times out. Every outcome must be a value or `nil, err, kind` (an error object, a
-- kind), never a raise, and every surface must end (the requests are bounded by the lines).
local async = require "claude.async"
local errors = require "claude.errors"
local json = require "claude.json"
local modern = require "claude.mcp.client.modern"
local pages = require "claude.mcp.client.pages"
local tasks = require "claude.mcp.client.tasks"

-- no real pauses between polls or rounds: the answers are all there
async.sleep = function() end -- luacheck: ignore 122

local function lines_of(text)
  local out = {}
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do out[#out + 1] = line end
  return out
end

-- A request function over the answers: result | nil, err, kind.
local function answering(answers)
  local n = 0
  return function()
    n = n + 1
    local line = answers[n]
    if line == nil then return errors.fail("timeout", "no more answers") end
    if line:sub(1, 1) == "!" then
      return nil, errors.new("remote", line:sub(2), { code = -32000 }), "remote"
    end
    local ok, v, derr = pcall(json.decode, line)
    if not ok or v == nil then
      return errors.fail("protocol", "undecodable: " .. tostring(ok and derr or v))
    end
    return v
  end
end

local function client(request)
  local self = { name = "fz", era = "modern", opts = { max_input_rounds = 3, max_pages = 8,
    max_list_bytes = 4096 }, offered = json.object(), client_info = { name = "fz" },
    protocol_version = "2026-07-28", envelope_now = false, envelope_tail = false,
    extensions = nil, log_level = nil }
  self.handlers = {
    ["elicitation/create"] = function() return { action = "decline" } end,
    ["roots/list"] = function() return { roots = json.array() } end,
  }
  self.request = request
  return self
end

-- An outcome is a value, or nil, an error object and its kind.
local function outcome(what, ok, r, err, kind)
  if not ok then error(what .. " raised: " .. tostring(r), 0) end
  if r == nil then
    assert(errors.is(err), what .. ": a failure without an error object")
    assert(type(kind) == "string" and kind == err.kind, what .. ": a failure without its kind")
  end
  return r
end

-- A task as the server made it (modern or legacy), waited for.
local function task(self, era, info)
  self.era = era
  local t, err, kind = tasks.new(self, function(...) return self.request(...) end, info,
    { name = "x", timeout = false })
  outcome("tasks.new", true, t, err, kind)
  if not t then return end
  outcome("Task:get", pcall(t.get, t))
  outcome("Task:wait", pcall(t.wait, t))
  outcome("Task:cancel", pcall(t.cancel, t))
  if era == "modern" then
    outcome("Task:update", pcall(t.update, t, json.object()))
    t:notified("notifications/tasks", self.request())
  end
end

local SURFACES = {
  -- a modern tools/call: its rounds, then a task when it becomes one
  function(self)
    local r, how, kind = modern.request(self, function() return self.request() end,
      "tools/call", { name = "x", arguments = json.object() }, { name = "x", owned = true },
      false)
    r = outcome("modern.request", true, r, how, kind)
    if r and how == "task" then task(self, "modern", r) end
  end,
  -- a legacy task: its first description from the first answer
  function(self)
    local info = self.request()
    if type(info) == "table" and type(info.task) == "table" then info = info.task end
    task(self, "legacy", info)
  end,
  -- a modern task: its first description from the first answer
  function(self) task(self, "modern", self.request()) end,
  -- the pages of a list
  function(self)
    outcome("pages.collect", pcall(pages.collect, self, function() return self.request() end,
      "tools/list", "tools", 5, nil))
  end,
}

return function(text)
  if #text == 0 then return end
  local surface = SURFACES[text:byte(1) % #SURFACES + 1]
  local self = client(answering(lines_of(text:sub(2))))
  surface(self)
end
