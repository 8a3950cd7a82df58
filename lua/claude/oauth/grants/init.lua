--- The OAuth grants a client of an MCP server can use, one file each. A grant is a table:
--
-- * `name`: the `auth.grant` value;
-- * `interactive`: a person signs in (a token without a refresh token cannot be renewed
--   without one; `offline_access` is asked for when the server offers it);
-- * `registration`: the `grant_types` (and `response_types`) a dynamic registration asks for;
-- * `check(o, fname)`: the option's rules for this grant (a misuse names the field);
-- * `obtain(provider, d, scope)`: gets tokens from the authorization server `d` for `scope`
--   and keeps them (`provider:keep`): true, or nil, err, kind.
--
-- A new grant is a new file here and a line in `GRANTS`.
-- @module claude.oauth.grants
local M = {}

local GRANTS = {
  authorization_code = "claude.oauth.grants.authorization_code",
  client_credentials = "claude.oauth.grants.client_credentials",
  jwt_bearer = "claude.oauth.grants.jwt_bearer",
}

--- The names, for messages: `'a', 'b' or 'c'`.
function M.names()
  local list = {}
  for name in pairs(GRANTS) do list[#list + 1] = "'" .. name .. "'" end
  table.sort(list)
  return table.concat(list, ", ", 1, #list - 1) .. " or " .. list[#list]
end

--- The grant named `name`, or nil.
-- @tparam string name
function M.get(name)
  local path = GRANTS[name]
  return path and require(path)
end

return M
