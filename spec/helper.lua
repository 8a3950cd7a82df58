-- Loaded by busted before the specs (see .busted): finds the built module.
local build = os.getenv("CLAUDELUA_BUILD") or "build"
if _VERSION == "Lua 5.3" then
  -- The module of Lua 5.3 hosts (lua5.3/claude.so) carries its Lua half, as its text for
  -- 5.3 (CMakeLists.txt): the files under lua/ leave the path, and `require "claude"` puts
  -- every Lua module of it in package.preload, as in a 5.3 host (docs/embedding.md). Each
  -- spec file then loads them afresh, as on 5.4.
  package.path = package.path:gsub("lua/%?%.lua;", ""):gsub("lua/%?/init%.lua;", "")
  package.cpath = build .. "/lua5.3/?.so;" .. package.cpath
  require "claude"
  for name in pairs(package.loaded) do
    if name == "claude" or name:find("^claude%.") then package.loaded[name] = nil end
  end
  -- the specs' own files are 5.4's text: spec/support/lua53.lua reads them for 5.3
  local lua53 = require "support.lua53"
  local loadfile = loadfile
  rawset(_G, "loadfile", function(path, ...)
    if type(path) == "string" and path:find("^spec/") then return lua53.loadfile(path, ...) end
    return loadfile(path, ...)
  end)
  table.insert(package.searchers, 2, lua53.searcher)
  local busted = require "busted"
  busted.subscribe({ "test", "end" }, function() lua53.close_all() end)
  busted.subscribe({ "file", "end" }, function() lua53.close_all() end)
else
  package.cpath = build .. "/?.so;" .. package.cpath
end
