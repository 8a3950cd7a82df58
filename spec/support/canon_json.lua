-- Canonical JSON for comparing messages: sorted keys, `[]` told from `{}` by the decoder's
-- markers (a table the decoder did not mark is an array when it has a sequence).
local json = require "claude.json"

local function canon(v)
  -- 1e400 decodes to infinity, which no JSON spells: compared as the text that decodes to it
  if v == math.huge or v == -math.huge then return v > 0 and "1e999" or "-1e999" end
  if type(v) ~= "table" then return json.encode(v) end
  local mt, n, parts = getmetatable(v), #v, {}
  if mt == json.array_mt or (mt ~= json.object_mt and n > 0) then
    for i = 1, n do parts[i] = canon(v[i]) end
    return "[" .. table.concat(parts, ",") .. "]"
  end
  local keys = {}
  for k in pairs(v) do keys[#keys + 1] = k end
  table.sort(keys)
  for i, k in ipairs(keys) do parts[i] = json.encode(k) .. ":" .. canon(v[k]) end
  return "{" .. table.concat(parts, ",") .. "}"
end

return canon
