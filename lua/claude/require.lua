--- A `require` that a task can wait inside.
--
-- Lua's own `require` is a C function that calls the module's loader
-- without a continuation, so a module whose main chunk waits (starts a
-- server, reads a file, sleeps) cannot be required from a task: the wait
-- has to yield across that C call. This one runs the searchers and the
-- loader from Lua, with the same results, the same `package.loaded` and
-- the same error text; the claudelua host installs it as the global
-- `require` before the script starts.
-- @module claude.require
local LOADED = debug.getregistry()._LOADED -- the table Lua's require fills
local concat, type = table.concat, type
-- what goes before each searcher's message: Lua 5.3's searchers begin theirs with it
local WHY_PREFIX = _VERSION == "Lua 5.3" and "" or "\n\t"

local function find_loader(name)
  local searchers = package.searchers
  if type(searchers) ~= "table" then error("'package.searchers' must be a table", 3) end
  local why, i = {}, 1
  while true do
    local searcher = searchers[i]
    if searcher == nil then
      error(("module '%s' not found:%s"):format(name, concat(why)), 3)
    end
    local loader, data = searcher(name)
    if type(loader) == "function" then return loader, data end
    if type(loader) == "string" then why[#why + 1] = WHY_PREFIX .. loader end
    i = i + 1
  end
end

--- Loads module `name` as `require` does, from Lua, so that its main chunk
-- may wait when the caller is a task.
-- @tparam string name
-- @return the module, and the loader's data (the file it came from)
local function require_yieldable(name)
  if type(name) ~= "string" and type(name) ~= "number" then
    error(("bad argument #1 to 'require' (string expected, got %s)"):format(type(name)), 2)
  end
  name = tostring(name)
  local module = LOADED[name]
  if module then return module end
  local loader, data = find_loader(name)
  local result = loader(name, data)
  if result ~= nil then LOADED[name] = result end
  if LOADED[name] == nil then LOADED[name] = true end
  return LOADED[name], data
end

return require_yieldable
