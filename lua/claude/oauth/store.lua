--- Token stores for `auth.store`: `{ load = function(key), save =
-- function(key, record) }`, the key being the MCP server's canonical URL.
-- `file` keeps every server's record in one JSON file that only its owner
-- can read or write (0600), replaced atomically on each save; `memory`
-- keeps them for the life of the process.
-- @module claude.oauth.store
local core = require "claude.core"
local json = require "claude.json"
local errors = require "claude.errors"

local M = {}

local function copy(t)
  if type(t) ~= "table" then return t end
  local out = {}
  for k, v in pairs(t) do out[k] = copy(v) end
  return out
end

local FileStore = { __name = "claude.oauth.FileStore" }

function FileStore:__tostring()
  return "claude.oauth.FileStore (" .. self.path .. ")"
end

-- The whole file: key -> record (an empty table when there is no file yet).
local function read_all(path)
  local f, err, code = io.open(path, "rb")
  if not f then
    if code == 2 then return {} end -- ENOENT: nothing saved yet
    return errors.fail("auth", "cannot read the token store: " .. tostring(err))
  end
  local text = f:read("a")
  f:close()
  if text == "" then return {} end
  local all, derr = json.decode(text)
  if type(all) ~= "table" then
    return errors.fail("auth", string.format("the token store %s is not a JSON object (%s)",
      path, tostring(derr or type(all))))
  end
  return all
end

-- Makes `dir` and each missing folder above it (0700): `~/.config/app/` on a fresh account.
local function make_dirs(dir)
  if dir == "" or core.stat(dir) then return end
  make_dirs(dir:match("^(.*)/[^/]*$") or "")
  core.mkdir(dir)
end

--- A store in a JSON file, mode 0600 (its directory is made, 0700, if
-- missing, with the folders above it). `load(key)` gives the record saved for `key` (or nil);
-- `save(key, record)` saves it (nil forgets it), the other keys staying;
-- both return nil, err, "auth" when the file cannot be read or written.
-- @tparam string path
-- @return the store
function M.file(path)
  local self = { path = path }
  function self.load(key)
    local all, err, kind = read_all(path)
    if not all then return nil, err, kind end
    local rec = all[key]
    return type(rec) == "table" and rec or nil
  end
  function self.save(key, record)
    local all, err, kind = read_all(path)
    if not all then return nil, err, kind end
    all[key] = copy(record)
    make_dirs(path:match("^(.*)/[^/]+$") or "")
    local ok, werr = core.write_private(path, json.encode(json.object(all)))
    if not ok then
      return errors.fail("auth", "cannot write the token store: " .. tostring(werr))
    end
    return true
  end
  return setmetatable(self, FileStore)
end

--- A store in memory: records live as long as the store.
-- @return the store
function M.memory()
  local records = {}
  return setmetatable({
    load = function(key) return copy(records[key]) end,
    save = function(key, record)
      records[key] = copy(record)
      return true
    end,
  }, { __name = "claude.oauth.MemoryStore",
    __tostring = function() return "claude.oauth.MemoryStore" end })
end

return M
