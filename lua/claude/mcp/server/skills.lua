--- The skills extension (`io.modelcontextprotocol/skills`) of the modern era, for a server
-- with skills (`server:add_skills`, claude.mcp.skills): `skills/list` (the entries, paged),
-- `skills/get` (one entry by the URI of its SKILL.md; -32602 for one not served) and
-- `resources/directory/read` (the direct children of a skill's directory; -32602 for a URI
-- that is no directory). The files themselves are the server's `skill://` resources.
-- @module claude.mcp.server.skills
local core = require "claude.core"
local json = require "claude.json"
local wire = require "claude.mcp.wire"
local catalog_mod = require "claude.mcp.skills"

local M = {}

local rpc_error, jarray, jobject = core.jsonrpc_error, json.array, json.object
local type, fmt, tonumber = type, string.format, tonumber

--- The extension's id.
M.ID = catalog_mod.ID

local PAGE = 100

local Skills = { __name = "claude.mcp.Skills" }
Skills.__index = Skills

-- the page of `list` that starts at cursor "<prefix>:<offset>" (nil: the first)
local function page(list, cursor, prefix, size)
  local from = 0
  if cursor ~= nil then
    local n = type(cursor) == "string" and tonumber(cursor:match("^" .. prefix .. ":(%d+)$"))
    if not n or n > #list then return nil end
    from = math.tointeger(n)
  end
  local out = jarray()
  for i = from + 1, math.min(#list, from + size) do out[#out + 1] = list[i] end
  local next_cursor = from + size < #list and (prefix .. ":" .. (from + size)) or nil
  return out, next_cursor
end

--- The extension of one modern server.
-- @param modern its `claude.mcp.server.modern`
function M.new(modern)
  local self = setmetatable({ id = M.ID, _modern = modern }, Skills)
  local function answer(msg, out, result)
    local server = modern:server()
    out:send({ jsonrpc = "2.0", id = msg.id, result = wire.stamp(msg.method, result,
      modern._meta, server.cache) })
  end
  local function catalog(msg, out)
    local c = modern:server().skills
    if not c then
      out:send(rpc_error(msg.id, -32601, fmt("Method not found: '%s' (the server serves no "
        .. "skills)", msg.method)))
    end
    return c
  end
  self.methods = {
    ["skills/list"] = function(_, msg, out)
      local c = catalog(msg, out)
      if not c then return end
      local server = modern:server()
      local list, next_cursor = page(c.skills, msg.params.cursor, "skills",
        server.page_size or PAGE)
      if not list then
        return out:send(rpc_error(msg.id, -32602, "Invalid params: invalid cursor"))
      end
      answer(msg, out, { skills = list, nextCursor = next_cursor })
    end,
    ["skills/get"] = function(_, msg, out)
      local c = catalog(msg, out)
      if not c then return end
      local uri = msg.params.uri
      local path = catalog_mod.path(uri)
      local entry = path and c.by_uri[catalog_mod.uri(path)]
      if not entry then
        return out:send(rpc_error(msg.id, -32602, fmt("Invalid params: no skill is served at %s",
          tostring(uri)), { uri = uri }))
      end
      answer(msg, out, { skill = entry })
    end,
    ["resources/directory/read"] = function(_, msg, out)
      local c = catalog(msg, out)
      if not c then return end
      local uri = msg.params.uri
      local path = catalog_mod.path(uri)
      local children = path and catalog_mod.children(c, path)
      if not children then
        return out:send(rpc_error(msg.id, -32602, fmt("Invalid params: %s is not a directory",
          tostring(uri)), { uri = uri }))
      end
      local list, next_cursor = page(children, msg.params.cursor, "dir", PAGE * 10)
      if not list then
        return out:send(rpc_error(msg.id, -32602, "Invalid params: invalid cursor"))
      end
      answer(msg, out, { resources = list, nextCursor = next_cursor })
    end,
  }
  return self
end

--- The capability the server declares (`{directoryRead = true}`), or nil without skills.
-- @treturn table|nil
function Skills:capability()
  if not self._modern:server().skills then return nil end
  return jobject { directoryRead = true }
end

return M
