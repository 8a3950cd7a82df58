--- The URI templates of resource templates (RFC 6570 levels 1 and 2: `{var}` and `{+var}`),
-- matched against a read's URI to give its variables (claude.mcp.tool's `resource`).
-- @module claude.mcp.uri_template
local M = {}

local fmt = string.format

local function percent_decode(s)
  return (s:gsub("%%(%x%x)", function(h) return string.char(tonumber(h, 16)) end))
end

--- A matcher of template `tpl`.
-- @tparam string tpl
-- @treturn[1] function `(uri) -> params | nil`: the decoded variables of a URI the template
--   matches
-- @return[2] nil, why the template is not one this module matches
function M.matcher(tpl)
  local names, plus, parts, pos = {}, {}, { "^" }, 1
  while true do
    local s, e, op, var = tpl:find("{([+]?)([%w_%.]+)}", pos)
    local lit = tpl:sub(pos, (s or 0) - 1)
    if s == nil then lit = tpl:sub(pos) end
    if lit:find("[{}]") then
      return nil, fmt("unsupported URI template expression in '%s' (only {var} and {+var})", tpl)
    end
    parts[#parts + 1] = lit:gsub("[%^%$%(%)%%%.%[%]%*%+%-%?]", "%%%0")
    if not s then break end
    names[#names + 1], plus[#plus + 1] = var, op == "+"
    parts[#parts + 1] = op == "+" and "(.+)" or "([^/?#]+)"
    pos = e + 1
  end
  if #names == 0 then return nil, fmt("'%s' has no {variable}", tpl) end
  parts[#parts + 1] = "$"
  local pattern = table.concat(parts)
  return function(uri)
    local caps = { uri:match(pattern) }
    if caps[1] == nil then return nil end
    local params = {}
    for i = 1, #names do params[names[i]] = percent_decode(caps[i]) end
    return params
  end
end

return M
