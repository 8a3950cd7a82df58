--- Claude Code's settings without a CLI: the cascade a session would see
-- (`resolve`), the trust filter the CLI applies to an escalating default permission mode
-- (`filter_escalating_default_mode`), and which models a managed `deniedModels` list
-- blocks (`match_denied_models`). The TypeScript Agent SDK's `resolveSettings`,
-- `filterEscalatingDefaultMode` and `matchDeniedModels`, as `claude.settings`.
--
-- `resolve` reads the settings files and merges them as the CLI does (objects key by key,
-- lists joined without repeats, other values replaced), low to high precedence: user,
-- project, local, flag (the `settings` option), managed (policy). What it does not do:
-- validate values against the CLI's schema (the CLI drops a whole file that holds an
-- invalid value), read MDM profiles or the registry, or run a policy helper.
-- @module claude.session.settings
local core = require "claude.core"
local json = require "claude.json"
local errors = require "claude.errors"

local M = {}

local SOURCES = { "user", "project", "local", "flag", "managed" }
local SOURCE_OF = { user = true, project = true, ["local"] = true }

local function read_json(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local text = f:read("a")
  f:close()
  local v, err = json.decode(text)
  if type(v) ~= "table" or json.is_array(v) then
    return nil, path .. ": " .. (err and tostring(err) or "a JSON object expected")
  end
  return v
end

local function is_object(v)
  return type(v) == "table" and v ~= json.null and not json.is_array(v)
end

local function copy(v)
  if type(v) ~= "table" or v == json.null then return v end
  local out = setmetatable({}, getmetatable(v))
  for k, x in pairs(v) do out[k] = copy(x) end
  return out
end

-- `b` merged into `a` (a copy): objects key by key, lists joined without repeats.
local function merge(a, b)
  if is_object(a) and is_object(b) then
    local out = copy(a)
    for k, v in pairs(b) do out[k] = merge(out[k], v) end
    return out
  end
  if type(a) == "table" and json.is_array(a) and type(b) == "table" and json.is_array(b) then
    local out, seen = json.array(), {}
    for _, list in ipairs { a, b } do
      for _, v in ipairs(list) do
        local key = json.encode(v)
        if not seen[key] then
          seen[key] = true
          out[#out + 1] = copy(v)
        end
      end
    end
    return out
  end
  return copy(b)
end
M.merge = merge

-- The managed settings' values that only tighten: a managed_settings option keeps these
-- (and `permissions.deny`/`ask`), as the CLI's policy tier takes it.
local RESTRICTIVE = {
  { "allowManagedPermissionRulesOnly", true }, { "allowManagedHooksOnly", true },
  { "allowManagedMcpServersOnly", true }, { "enforceAvailableModels", true },
  { "disableAllHooks", true }, { "disableClaudeAiConnectors", true },
  { "disableCommandPluginSources", true }, { "disableSideloadFlags", true },
  { "disableSkillShellExecution", true }, { "disableRemoteControl", true },
  { "disableAgentView", true }, { "disableWorkflows", true }, { "disableArtifact", true },
  { "disableBundledSkills", true }, { "disableAutoMode", "disable" },
  { "permissions.disableBypassPermissionsMode", "disable" },
  { "permissions.disableAutoMode", "disable" },
  { "permissions.blockReadsOutsideWorkingDirectories", true },
  { "permissions.blockWritesOutsideWorkingDirectories", true },
  { "permissions.denyInsteadOfPrompting", true },
  { "sandbox.enabled", true }, { "sandbox.failIfUnavailable", true },
  { "sandbox.network.allowManagedDomainsOnly", true }, { "sandbox.network.strictAllowlist", true },
  { "sandbox.filesystem.allowManagedReadPathsOnly", true },
  { "availableModelsMatch", "exact" },
}

local function get_path(t, path)
  for part in path:gmatch("[^.]+") do
    if type(t) ~= "table" then return nil end
    t = t[part]
  end
  return t
end

local function set_path(t, path, v)
  local parts = {}
  for part in path:gmatch("[^.]+") do parts[#parts + 1] = part end
  for i = 1, #parts - 1 do
    t[parts[i]] = t[parts[i]] or {}
    t = t[parts[i]]
  end
  t[parts[#parts]] = v
end

local function restrictive_only(settings)
  local out = {}
  for _, r in ipairs(RESTRICTIVE) do
    if get_path(settings, r[1]) == r[2] then set_path(out, r[1], r[2]) end
  end
  for _, k in ipairs { "deny", "ask" } do
    local rules = get_path(settings, "permissions." .. k)
    if type(rules) == "table" and #rules > 0 then
      set_path(out, "permissions." .. k, json.array(copy(rules)))
    end
  end
  if type(settings.deniedModels) == "table" then out.deniedModels = copy(settings.deniedModels) end
  return out
end

local RESOLVE_OPTS = { cwd = true, setting_sources = true, managed_settings = true,
  server_managed_settings = true, settings = true, config_dir = true, managed_dir = true }

--- The settings a session would see, without starting a CLI.
-- @tparam[opt] table opts `{ cwd = dir (the current one), setting_sources = {"user",
--   "project", "local"} (all), settings = table|path (the flag tier, as the session
--   option), managed_settings = table (only its restrictive values are kept),
--   server_managed_settings = table (the remote policy, as it is), config_dir = dir
--   ($CLAUDE_CONFIG_DIR, else ~/.claude), managed_dir = dir (/etc/claude-code) }`
-- @return `{ effective = {...}, provenance = { key = { source =, path = } },
--   sources = { { source =, settings =, path = }, ... } (low to high), errors = {...} }`
-- @function resolve
M.resolve = errors.public(function(opts)
  errors.check(opts, 1, "settings.resolve", "table", true)
  opts = opts or {}
  errors.check_fields(opts, RESOLVE_OPTS, "settings.resolve")
  local cwd = opts.cwd or core.cwd()
  local config = opts.config_dir or os.getenv("CLAUDE_CONFIG_DIR")
  if not config or config == "" then config = (os.getenv("HOME") or "") .. "/.claude" end
  local allowed = {}
  for _, s in ipairs(opts.setting_sources or { "user", "project", "local" }) do
    if not SOURCE_OF[s] then
      errors.bad_field("setting_sources", "settings.resolve",
        "'user', 'project' or 'local' expected, got %s", tostring(s))
    end
    allowed[s] = true
  end
  local paths = { user = config .. "/settings.json", project = cwd .. "/.claude/settings.json",
    ["local"] = cwd .. "/.claude/settings.local.json" }
  local found, errs = {}, {}
  local function take(source, settings, path)
    if settings and next(settings) then
      found[#found + 1] = { source = source, settings = settings, path = path }
    end
  end
  for _, source in ipairs { "user", "project", "local" } do
    if allowed[source] then
      local v, err = read_json(paths[source])
      if err then errs[#errs + 1] = err end
      take(source, v, paths[source])
    end
  end
  local flag = opts.settings
  if type(flag) == "string" then
    local v, err = read_json(flag)
    if not v and not err then v, err = json.decode(flag) end
    if type(v) ~= "table" then errs[#errs + 1] = tostring(err) else take("flag", v, flag) end
  elseif type(flag) == "table" then
    take("flag", copy(flag))
  end
  -- the policy tier: the server's settings, else the managed file and its drop-ins, else the
  -- restrictive part of the managed_settings option
  local managed
  if opts.server_managed_settings then
    managed = copy(opts.server_managed_settings)
  else
    local dir = opts.managed_dir or "/etc/claude-code"
    local v, err = read_json(dir .. "/managed-settings.json")
    if err then errs[#errs + 1] = err end
    managed = v
    local names = core.scandir(dir .. "/managed-settings.d") or {}
    table.sort(names)
    for _, name in ipairs(names) do
      if name:match("%.json$") and not name:match("^%.") then
        local d, derr = read_json(dir .. "/managed-settings.d/" .. name)
        if derr then errs[#errs + 1] = derr end
        if d then managed = merge(managed or {}, d) end
      end
    end
    if not managed and opts.managed_settings then
      managed = restrictive_only(opts.managed_settings)
    end
  end
  take("managed", managed)
  local effective = {}
  for _, s in ipairs(found) do effective = merge(effective, s.settings) end
  local provenance = {}
  for key in pairs(effective) do
    for i = #found, 1, -1 do
      if found[i].settings[key] ~= nil then
        provenance[key] = { source = found[i].source, path = found[i].path }
        break
      end
    end
  end
  return { effective = effective, provenance = provenance, sources = found, errors = errs }
end)
M.SOURCES = SOURCES

-- Default modes that widen what runs without asking, and the sources they are not taken
-- from (repository-committed files: anyone who can push sets them).
local ESCALATING = { bypassPermissions = true, auto = true, acceptEdits = true }
local CLASSIFIER_MODES = { auto = true, bypassPermissions = true }

--- `resolved.effective` without `permissions.defaultMode` when that mode escalates
-- (bypassPermissions, auto, acceptEdits) and was set by the project's settings (for
-- auto and bypassPermissions, the local settings too), as the CLI filters it.
-- @function filter_escalating_default_mode
M.filter_escalating_default_mode = errors.public(function(resolved)
  if type(resolved) ~= "table" or type(resolved.effective) ~= "table" then
    errors.argerror(1, "settings.filter_escalating_default_mode",
      "a table from settings.resolve expected, got %s", errors.typename(resolved))
  end
  local effective = resolved.effective
  local perms = effective.permissions
  local mode = type(perms) == "table" and perms.defaultMode
  if not mode or not ESCALATING[mode] then return effective end
  local sources = resolved.sources or {}
  for i = #sources, 1, -1 do
    local s = sources[i]
    local p = type(s.settings) == "table" and s.settings.permissions
    if type(p) == "table" and p.defaultMode ~= nil then
      local untrusted = s.source == "project" or (CLASSIFIER_MODES[mode] and s.source == "local")
      if not untrusted then return effective end
      local out = copy(effective)
      out.permissions.defaultMode = nil
      return out
    end
  end
  return effective
end)

---------------------------------------------------------------------------
-- deniedModels

local FAMILIES = { "sonnet", "opus", "haiku", "fable" }
local FAMILY = { sonnet = true, opus = true, haiku = true, fable = true }
local ALIASES = { sonnet = true, opus = true, haiku = true, fable = true, best = true,
  ["sonnet[1m]"] = true, ["opus[1m]"] = true, ["fable[1m]"] = true, opusplan = true,
  default = true }
local REGIONS = { us = true, eu = true, apac = true, jp = true, au = true, ["us-gov"] = true,
  global = true }

local function trim(s) return (s:gsub("^%s+", ""):gsub("%s+$", "")) end
local function cap(s) return s:sub(1, 1):upper() .. s:sub(2) end

-- Control characters shown as '?', long names cut, as the CLI quotes a setting.
local function quote(s)
  s = s:gsub("[%z\1-\31\127]", "?")
  if utf8.len(s) and utf8.len(s) > 128 then s = s:sub(1, utf8.offset(s, 129) - 1) .. "\u{2026}" end
  return s
end

-- claude-<family>-<major>[-<minor>] or the legacy claude-<major>[-<minor>]-<family>.
local function base_of(s)
  local fam, major, rest = s:match("^claude%-(%a+)%-(%d%d?)(.*)$")
  if fam and not rest:match("^%d") then
    local minor, after = rest:match("^%-(%d%d?)(.*)$")
    if minor and after:match("^%d") then minor = nil end
    local base = "claude-" .. fam .. "-" .. major .. (minor and ("-" .. minor) or "")
    return { family = fam, major = tonumber(major), minor = tonumber(minor), base = base }
  end
  local maj, tail = s:match("^claude%-(%d%d?)(.*)$")
  if maj and not tail:match("^%d") then
    local min, t2 = tail:match("^%-(%d%d?)(.*)$")
    if min and t2:match("^%d") then min = nil end
    local f = (min and t2 or tail):match("^%-(%a+)")
    if f then
      local base = "claude-" .. maj .. (min and ("-" .. min) or "") .. "-" .. f
      return { family = f, major = tonumber(maj), minor = tonumber(min), base = base,
        legacy = true }
    end
  end
end

local function plain_trailer(t)
  -- (-fast|-latest)? then (-vN@date|[-@]date)? then (-vN(:N)?)?
  local rest = t:gsub("^%-fast", "", 1)
  if rest == t then rest = t:gsub("^%-latest", "", 1) end
  local r2 = rest:gsub("^%-v%d%d?%d?@%d%d%d%d%d%d%d%d", "", 1)
  if r2 == rest then r2 = rest:gsub("^[%-@]%d%d%d%d%d%d%d%d", "", 1) end
  local r3 = r2:gsub("^%-v%d%d?%d?:%d%d?%d?$", "", 1)
  if r3 == r2 then r3 = r2:gsub("^%-v%d%d?%d?$", "", 1) end
  return r3 == ""
end

-- A model id's parts, or nil (the CLI's parser: provider prefixes and paths stripped).
local function parse_model(s)
  local t = s:lower():gsub("^%s+", ""):gsub("%s+$", "")
  if t == "" or t:find("%s") then return nil end
  t = t:gsub("%[[12]m%]$", "")
  t = t:match("([^/]*)$")
  local region, rest = t:match("^([%a%-]+)%.anthropic%.(claude%-.*)$")
  if rest then
    if not REGIONS[region] then return nil end
    t = rest
  else
    local r2 = t:match("^anthropic%.(claude%-.*)$")
    if r2 then t = r2 end
  end
  local b = base_of(t)
  if not b then return nil end
  local after = t:sub(#b.base + 1)
  if after ~= "" and not after:match("^[%-@]") then return nil end
  local id = { family = b.family, major = b.major, minor = b.minor, base = b.base }
  if not plain_trailer(after) then id.trailer = after end
  return id
end

-- Edit distance of one (restricted Damerau-Levenshtein), enough to say "did you mean".
local function one_edit(a, b)
  if a == b then return false end
  if math.abs(#a - #b) > 1 then return false end
  if #a == #b then
    local diff = {}
    for i = 1, #a do if a:sub(i, i) ~= b:sub(i, i) then diff[#diff + 1] = i end end
    if #diff == 1 then return true end
    return #diff == 2 and diff[2] == diff[1] + 1 and a:sub(diff[1], diff[1]) == b:sub(diff[2],
      diff[2]) and a:sub(diff[2], diff[2]) == b:sub(diff[1], diff[1])
  end
  local long, short = a, b
  if #b > #a then long, short = b, a end
  for i = 1, #long do
    if long:sub(1, i - 1) .. long:sub(i + 1) == short then return true end
  end
  return false
end

local function literal_warning(entry, value)
  local n = string.format('"%s" blocks only the exact model name "%s"; other spellings of the '
    .. 'same model are not blocked.', quote(entry), quote(value))
  local dashed = value:gsub("(%d)%.(%d)", "%1-%2")
  if dashed ~= value then
    local s = dashed:match("^claude%-") and dashed or ("claude-" .. dashed)
    if parse_model(s) then
      return string.format('%s To block a version, write it with a hyphen: "%s".', n, quote(s))
    end
  end
  local fam, major, minor = value:match("^(%a+)%s+(%d+)%.(%d+)$")
  if not fam then fam, major = value:match("^(%a+)%s+(%d+)$") end
  if fam and FAMILY[fam] then
    if minor then
      return string.format('%s To block a version, write its model ID, for example '
        .. '"claude-%s-%s-%s".', n, fam, major, minor)
    end
    return string.format('%s To block only version %s, write "claude-%s-%s-0"; "claude-%s-%s" '
      .. 'blocks every %s %s.x model.', n, major, fam, major, fam, major, cap(fam), major)
  end
  if value:match("^%a+$") then
    for _, f in ipairs(FAMILIES) do
      if one_edit(value, f) then
        return string.format('%s If you meant the %s family, write "%s".', n, cap(f), f)
      end
    end
    return string.format("%s To block a model family other than sonnet, opus, haiku or fable, "
      .. "list its versioned IDs.", n)
  end
  return n
end

-- One deniedModels entry: what it blocks (or nil), and a warning about it (or nil).
local function parse_entry(raw)
  local t = trim(raw):lower()
  local n = trim((t:gsub("%[[12][mM]%]", "")))
  local tag = n ~= t and " Context-size tags such as [1m] are ignored: the entry blocks the "
    .. "model at every context size." or ""
  if n == "" then return nil, "An empty deniedModels entry was ignored." end
  if FAMILY[n] then
    return { kind = "family", family = n },
      tag ~= "" and string.format('"%s" blocks every %s model.%s', quote(raw), cap(n), tag) or nil
  end
  if ALIASES[n] then
    return nil, string.format('"%s" was ignored: it names a different model depending on the '
      .. 'release and settings. Name the model instead, for example "claude-opus-5-5".',
      quote(raw))
  end
  local id = parse_model(n)
  local s = (id or n:match("^claude%-")) and n or ("claude-" .. n)
  if not id and s ~= n then id = parse_model(s) end
  if id then
    local at = s:find(id.base, 1, true)
    local last = at
    while at do
      last = at
      at = s:find(id.base, at + 1, true)
    end
    local rest = last and s:sub(last + #id.base) or ""
    local ignored = id.trailer == nil and rest ~= "" and string.format(' "%s" is ignored.',
      quote(rest)) or ""
    local what = id.minor == nil and string.format("every %s %d.x model", cap(id.family), id.major)
      or string.format("%s %d.%d in every spelling and snapshot", cap(id.family), id.major,
        id.minor)
    return { kind = "model", id = id }, (tag ~= "" or ignored ~= "")
      and string.format('"%s" blocks %s.%s%s', quote(raw), what, ignored, tag) or nil
  end
  return { kind = "literal", value = n }, literal_warning(raw, n)
end

-- `word` in `s` with no letter or digit on either side.
local function has_word(s, word)
  local from = 1
  while true do
    local i, j = s:find(word, from, true)
    if not i then return false end
    local before, after = s:sub(i - 1, i - 1), s:sub(j + 1, j + 1)
    if (i == 1 or not before:match("%w")) and (after == "" or not after:match("%w")) then
      return true
    end
    from = i + 1
  end
end

local function blocks(entry, name, id)
  if entry.kind == "literal" then return name == entry.value end
  if entry.kind == "family" then
    return (id and id.family == entry.family) or has_word(name, entry.family)
  end
  local e = entry.id
  if not id or e.family ~= id.family or e.major ~= id.major then return false end
  if e.minor ~= nil and (id.minor or 0) ~= e.minor then return false end
  if e.trailer == nil then return true end
  local t = id.trailer or ""
  return t == e.trailer or t:sub(1, #e.trailer + 1) == e.trailer .. "-"
end

--- Which of `models` a managed `deniedModels` list blocks, by the CLI's rules for model
-- names (families, versions in every spelling, exact names), with a warning for each
-- entry that does not do what it seems to. Not the CLI's enforcement: `false` promises
-- nothing (an alias or a custom name may stand for a blocked model).
-- @tparam table models names
-- @tparam table|nil denied the `deniedModels` setting
-- @return `{ denied = { boolean... }, warnings = { text... } }`
-- @function match_denied_models
M.match_denied_models = errors.public(function(models, denied)
  local list = type(models) == "table" and models or {}
  local warnings, seen = {}, {}
  local function warn(w)
    if w and not seen[w] then
      seen[w] = true
      warnings[#warnings + 1] = w
    end
  end
  local model_notes = {}
  if type(models) ~= "table" then
    model_notes[1] = '"models" is not a list of model names, so nothing was matched.'
  else
    for _, m in ipairs(list) do
      if type(m) ~= "string" then
        model_notes[#model_notes + 1] = string.format('"models" contained a non-string entry '
          .. '(%s), which is not a model name, so it cannot be matched.',
          m == json.null and "null" or type(m) == "table" and "object" or type(m))
      end
    end
  end
  local out = json.array()
  if denied ~= nil and denied ~= json.null and (type(denied) ~= "table"
    or (next(denied) ~= nil and not json.is_array(denied) and #denied == 0)) then
    for i = 1, #list do out[i] = false end
    warn('"deniedModels" was present but is not a list of model names, so it was ignored and '
      .. 'blocks no models until it is fixed.')
    for _, n in ipairs(model_notes) do warn(n) end
    return { denied = out, warnings = warnings }
  end
  local entries = {}
  for _, e in ipairs(type(denied) == "table" and denied or {}) do
    if type(e) == "string" then
      entries[#entries + 1] = e
    else
      warn(string.format('"deniedModels" contained a non-string entry (%s); the entry was '
        .. 'ignored.', e == json.null and "null" or type(e) == "table" and "object" or type(e)))
    end
  end
  local parsed = {}
  for _, e in ipairs(entries) do
    local entry, w = parse_entry(e)
    parsed[#parsed + 1] = entry or false
    warn(w)
  end
  for _, n in ipairs(model_notes) do warn(n) end
  for i, m in ipairs(list) do
    local hit = false
    if type(m) == "string" then
      local name = (trim(m):gsub("%[[12][mM]%]", "")):lower()
      local id = parse_model(name)
      for _, entry in ipairs(parsed) do
        if entry and blocks(entry, name, id) then hit = true break end
      end
    end
    out[i] = hit
  end
  return { denied = out, warnings = json.array(warnings) }
end)

return M
