-- cli-drift.lua: the names of an Agent SDK's sdk.d.ts, what is new in them against an older
-- one, and which docs/api.md does not map. Run by tools/cli-drift (which fetches the SDKs);
-- by hand:
--
--   lua5.4 tools/cli-drift.lua NEW/sdk.d.ts [OLD/sdk.d.ts] docs/api.md
--
-- Prints "new:" and "unmapped:" lines, one name each (`category name`); exits 1 when a name
-- is unmapped. Categories mapped in docs/api.md, "The official SDKs, mapped": function,
-- method (Query's), option, hook_event, agent_field, server_field (every MCP server config,
-- and createSdkMcpServer's options), tool_extra (tool()'s), permission_field
-- (PermissionResult's), message (type, or type/subtype). Reported as new, not mapped (they
-- reach the script as the CLI sends them, or are values): message_field, hook_input_field,
-- startup_reason, field (any declaration's, nested ones too), value (a union's literal).
local new_path, old_path, doc_path = arg[1], arg[2], arg[3]
if not doc_path then old_path, doc_path = nil, arg[2] end
if not (new_path and doc_path) then
  io.stderr:write("usage: lua5.4 tools/cli-drift.lua NEW/sdk.d.ts [OLD/sdk.d.ts] docs/api.md\n")
  os.exit(2)
end

local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

-- The declarations of a d.ts: name -> { fields = {name, ...}, union = {member, ...},
-- literals = { type =, subtype = } }. A block runs from `... NAME = {` (or `interface NAME
-- ... {`) at column 0 to its `};` / `}` at column 0; its fields are the lines indented by
-- four spaces (a nested object's deeper lines are not).
local function declarations(text)
  local decls, cur = {}, nil
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    if cur then
      if line:match("^}") then
        cur = nil
      else
        local f = line:match("^    ([%w_$]+)%??%s*:") or line:match("^    ([%w_$]+)%??%s*[(<]")
          or line:match("^    '([^']+)'%??%s*:")
        if f and not cur.seen[f] then
          cur.seen[f] = true
          cur.fields[#cur.fields + 1] = f
        end
        local any = line:match("^%s+([%w_$]+)%??%s*:")
        if any then
          cur.all[any] = true
          for lit in line:gmatch("'([^']+)'") do cur.all[any .. " '" .. lit .. "'"] = true end
        end
        local k, lit = line:match("^    (%w+): '([^']+)';")
        if (k == "type" or k == "subtype") and not cur.literals[k] then cur.literals[k] = lit end
      end
    else
      local name, rest = line:match("^export declare type ([%w_]+)%s*=%s*(.*)$")
      if not name then name, rest = line:match("^declare type ([%w_]+)%s*=%s*(.*)$") end
      local iname = line:match("^export declare interface ([%w_]+)")
        or line:match("^declare interface ([%w_]+)")
      if iname then
        cur = { fields = {}, seen = {}, literals = {}, all = {} }
        decls[iname] = cur
      elseif name then
        local d = { fields = {}, seen = {}, literals = {}, union = {}, all = {} }
        decls[name] = d
        if rest:match("{%s*$") then cur = d end -- `= {` or `= Base & {`
        for m in rest:gsub("{.*$", ""):gmatch("([%w_]+)") do
          if m ~= "declare" then d.union[#d.union + 1] = m end
        end
        for lit in rest:gmatch("'([^']+)'") do d.union[#d.union + 1] = "'" .. lit .. "'" end
      end
    end
  end
  return decls
end

-- Every name of the SDK, as a set of "category name".
local function names(text)
  local decls = declarations(text)
  local out = {}
  local function add(cat, name) out[cat .. " " .. name] = true end
  for f in ("\n" .. text):gmatch("\nexport declare function ([%w_]+)") do add("function", f) end
  for _, f in ipairs((decls.Query or { fields = {} }).fields) do add("method", f) end
  for _, f in ipairs((decls.Options or { fields = {} }).fields) do add("option", f) end
  for _, f in ipairs((decls.AgentDefinition or { fields = {} }).fields) do
    add("agent_field", f)
  end
  for _, t in ipairs { "McpStdioServerConfig", "McpSSEServerConfig", "McpHttpServerConfig",
    "McpSdkServerConfig", "CreateSdkMcpServerOptions" } do
    for _, f in ipairs((decls[t] or { fields = {} }).fields) do add("server_field", f) end
  end
  for _, f in ipairs((decls.PermissionResult or { fields = {} }).fields) do
    add("permission_field", f)
  end
  local events = text:match("HOOK_EVENTS: readonly %[([^%]]*)%]") or ""
  for e in events:gmatch("'([^']+)'") do add("hook_event", e) end
  local extras = text:match("export declare function tool<.-_extras%?: {(.-)}%)") or ""
  for f in extras:gmatch("\n%s+([%w_]+)%??:") do add("tool_extra", f) end
  for name, d in pairs(decls) do
    if name:match("HookInput$") then
      for _, f in ipairs(d.fields) do add("hook_input_field", name .. "." .. f) end
    end
  end
  for _, r in ipairs((decls.SDKStartupFailureReason or { union = {} }).union) do
    local v = r:match("^'(.*)'$")
    if v then add("startup_reason", v) end
  end
  -- every field of every declaration, nested ones too, and every literal of a union
  for name, d in pairs(decls) do
    for f in pairs(d.all) do add("field", name .. "." .. f) end
    for _, m in ipairs(d.union or {}) do
      if m:match("^'") then add("value", name .. " " .. m) end
    end
  end
  -- messages: the members of SDKMessage, unions resolved
  local seen = {}
  local function message(tname)
    local d = decls[tname]
    if not d or seen[tname] then return end
    seen[tname] = true
    if d.literals.type then
      local key = d.literals.type .. (d.literals.subtype and ("/" .. d.literals.subtype) or "")
      add("message", key)
      for _, f in ipairs(d.fields) do add("message_field", key .. "." .. f) end
    end
    for _, m in ipairs(d.union or {}) do message(m) end
  end
  message("SDKMessage")
  return out
end

-- Every identifier inside a backtick span of docs/api.md's mapping ("The official SDKs,
-- mapped", up to the next level-2 heading), and its snake_case and camelCase forms.
local function mapped(doc)
  local section = doc:match("\n## The official SDKs, mapped\n(.-)\n## ") or ""
  local set = {}
  for span in section:gmatch("`([^`\n]+)`") do
    for id in span:gmatch("[%a_][%w_]*") do
      set[id] = true
      set[(id:gsub("(%l)(%u)", "%1_%2"):lower())] = true
      set[(id:gsub("_(%l)", string.upper))] = true
    end
    set[span] = true
  end
  return set
end

local MAPPED = { ["function"] = true, method = true, option = true, hook_event = true,
  agent_field = true, server_field = true, tool_extra = true, permission_field = true,
  message = true }

local function sorted(set)
  local list = {}
  for k in pairs(set) do list[#list + 1] = k end
  table.sort(list)
  return list
end

local new = names(read(new_path))
local old = old_path and names(read(old_path)) or {}
local doc = mapped(read(doc_path))

local fresh, unmapped = 0, 0
for _, key in ipairs(sorted(new)) do
  if old_path and not old[key] then
    fresh = fresh + 1
    print("new: " .. key)
  end
end
for _, key in ipairs(sorted(new)) do
  local cat, name = key:match("^(%S+) (.*)$")
  if MAPPED[cat] then
    local ok = doc[name]
    if cat == "message" then
      local t, sub = name:match("^([^/]+)/?(.*)$")
      ok = doc[name] or (sub ~= "" and doc[sub]) or (sub == "" and doc[t])
    end
    if not ok then
      unmapped = unmapped + 1
      print("unmapped: " .. key)
    end
  end
end
local total = 0
for key in pairs(new) do
  if MAPPED[key:match("^%S+")] then total = total + 1 end
end
print(string.format("names: %d mapped of %d (%d unmapped); new since the older SDK: %s",
  total - unmapped, total, unmapped, old_path and tostring(fresh) or "(no older SDK given)"))
os.exit(unmapped == 0 and 0 or 1)
