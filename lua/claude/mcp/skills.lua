--- A folder of Agent Skills, as an MCP server serves them (the skills extension,
-- `io.modelcontextprotocol/skills`): each directory holding a `SKILL.md` is a skill, its
-- files are `skill://` resources, and its entry in `skills/list` names its frontmatter and
-- every file with its SHA-256 digest and size, so that a client can fetch and check them.
--
--     local catalog = skills.load { "skills/" }   -- raises a misuse for a bad folder
--     catalog.skills          -- the entries, by uri
--     catalog.files[path]     -- { bytes =, mime =, text = bool } by path ("pdf/SKILL.md")
--     catalog.dirs[path]      -- the direct children of a directory ("pdf", "pdf/scripts")
--
-- A skill's name (its frontmatter's `name`) is the name of its directory: 1 to 64 of a-z, 0-9
-- and `-`, no `-` at either end or twice in a row. The files are read once, when the catalog
-- is made. Names starting with `.` are skipped. A link is served only when its real path
-- is inside the folder given (a link to `~/.ssh` is not), and a folder once.
-- @module claude.mcp.skills
local core = require "claude.core"
local json = require "claude.json"
local errors = require "claude.errors"
local tree = require "claude.fs.tree"

local M = {}

local jarray, jobject = json.array, json.object
local type, fmt, concat = type, string.format, table.concat

--- The extension's id.
M.ID = "io.modelcontextprotocol/skills"

--- The limits of one skill (the specification's): files, and bytes in all.
M.MAX_FILES, M.MAX_BYTES = 512, 16 * 1024 * 1024

--- The scheme of the resources.
M.SCHEME = "skill://"

local MIME = { md = "text/markdown", markdown = "text/markdown", txt = "text/plain",
  json = "application/json", yaml = "application/yaml", yml = "application/yaml",
  py = "text/x-python", sh = "text/x-shellscript", lua = "text/x-lua", js = "text/javascript",
  ts = "text/x-typescript", html = "text/html", css = "text/css", csv = "text/csv",
  xml = "application/xml", png = "image/png", jpg = "image/jpeg", jpeg = "image/jpeg",
  gif = "image/gif", svg = "image/svg+xml", pdf = "application/pdf" }

local function hex(s)
  return (s:gsub(".", function(c) return fmt("%02x", c:byte()) end))
end

-- A path segment in a URI: what is not unreserved or a sub-delimiter is percent-encoded.
local function encode_segment(s)
  return (s:gsub("[^%w%-%._~!%$&'%(%)%*%+,;=:@]", function(c)
    return fmt("%%%02X", c:byte())
  end))
end

--- The URI of a path ("pdf/SKILL.md" -> "skill://pdf/SKILL.md").
-- @tparam string path
-- @treturn string
function M.uri(path)
  local parts = {}
  for seg in path:gmatch("[^/]+") do parts[#parts + 1] = encode_segment(seg) end
  return M.SCHEME .. concat(parts, "/")
end

--- The path of a `skill://` URI (percent-decoded, no trailing slash), or nil.
-- @tparam string uri
-- @treturn string|nil
function M.path(uri)
  if type(uri) ~= "string" or uri:sub(1, #M.SCHEME) ~= M.SCHEME then return nil end
  local p = uri:sub(#M.SCHEME + 1):gsub("/+$", "")
  return (p:gsub("%%(%x%x)", function(h) return string.char(tonumber(h, 16)) end))
end

---------------------------------------------------------------------------------------------
-- Frontmatter: the YAML subset SKILL.md files use
---------------------------------------------------------------------------------------------

local function scalar(v)
  v = v:gsub("%s+#.*$", ""):match("^%s*(.-)%s*$")
  local q = v:match('^"(.*)"$')
  if q then
    return (q:gsub('\\(.)', { n = "\n", t = "\t", ['"'] = '"', ["\\"] = "\\" }))
  end
  q = v:match("^'(.*)'$")
  if q then return (q:gsub("''", "'")) end
  if v == "true" then return true end
  if v == "false" then return false end
  if v == "null" or v == "~" or v == "" then return json.null end
  return math.tointeger(tonumber(v)) or tonumber(v) or v
end

--- Parse a SKILL.md frontmatter (the YAML between its `---` lines): `key: value` scalars
-- (plain, quoted), `key: |` and `key: >` blocks, and one level of nested mappings and lists.
-- @tparam string text the whole file
-- @return the frontmatter table, or nil and why
function M.frontmatter(text)
  if text:byte(1) == 0xEF and text:sub(1, 3) == "\239\187\191" then text = text:sub(4) end
  local body = text:match("^%-%-%-\r?\n(.-)\r?\n%-%-%-[ \t]*\r?\n") or
    text:match("^%-%-%-\r?\n(.-)\r?\n%-%-%-[ \t]*$")
  if not body then return nil, "no frontmatter (a '---' line, YAML, a '---' line)" end
  local out, lines = jobject(), {}
  for line in (body .. "\n"):gmatch("(.-)\r?\n") do lines[#lines + 1] = line end
  local i = 1
  while i <= #lines do
    local line = lines[i]
    if line:match("^%s*$") or line:match("^%s*#") then
      i = i + 1
    else
      local key, rest = line:match("^([%w_%-%.]+):%s*(.-)%s*$")
      if not key then return nil, fmt("line %d: 'key: value' expected", i) end
      i = i + 1
      if rest == "|" or rest == ">" or rest == "|-" or rest == ">-" then
        local block = {}
        while i <= #lines and (lines[i]:match("^%s+") or lines[i] == "") do
          block[#block + 1] = lines[i]:match("^%s*(.-)$")
          i = i + 1
        end
        out[key] = concat(block, rest:sub(1, 1) == "|" and "\n" or " ")
      elseif rest == "" then -- a nested mapping or list, indented
        local map, list = nil, nil
        while i <= #lines and (lines[i]:match("^%s+%S") or lines[i]:match("^%-")) do
          local item = lines[i]:match("^%s*%-%s+(.*)$")
          if item then
            list = list or jarray()
            list[#list + 1] = scalar(item)
          else
            local k, v = lines[i]:match("^%s+([%w_%-%./]+):%s*(.-)%s*$")
            if not k then return nil, fmt("line %d: 'key: value' expected", i) end
            map = map or jobject()
            map[k] = scalar(v)
          end
          i = i + 1
        end
        out[key] = list or map or json.null
      else
        local items = rest:match("^%[(.*)%]$")
        if items then
          local list = jarray()
          for it in items:gmatch("[^,]+") do list[#list + 1] = scalar(it) end
          out[key] = list
        else
          out[key] = scalar(rest)
        end
      end
    end
  end
  return out
end

---------------------------------------------------------------------------------------------
-- Loading a folder
---------------------------------------------------------------------------------------------

--- Is `name` a valid skill name (Agent Skills: 1-64 of a-z 0-9 -, no leading, trailing or
-- double `-`)?
-- @tparam string name
-- @treturn boolean
function M.valid_name(name)
  return type(name) == "string" and #name >= 1 and #name <= 64 and name:find("^[a-z0-9%-]+$")
    ~= nil and not name:find("^%-") and not name:find("%-$") and not name:find("%-%-")
end

-- The file at `rel` under the folder `base` (whose real path is `base_real`), or nil and
-- why, and `"out"` when it leads out of the folder. The kernel refuses a path that leads
-- out when it opens it (core.read_beneath), so no name the walk checked can be swapped for
-- a link before the read; without openat2, the real path is checked first (that race then
-- remains). The kernel also refuses an absolute link, even one that stays inside.
local function read_file(base, base_real, rel)
  local bytes, err, code = core.read_beneath(base, rel, M.MAX_BYTES)
  if code == "EXDEV" then return nil, "it leads out of the skills folder", "out" end
  if code ~= "ENOSYS" then return bytes, err end
  local path = base .. "/" .. rel
  if not tree.inside(base_real, path) then
    return nil, "it leads out of the skills folder", "out"
  end
  local f, oerr = io.open(path, "rb")
  if not f then return nil, oerr end
  local s = f:read("a")
  f:close()
  return s
end

local function mime_of(name, bytes)
  local ext = name:match("%.([%w]+)$")
  local m = ext and MIME[ext:lower()]
  if m then return m end
  return utf8.len(bytes) and "text/plain" or "application/octet-stream"
end

local function is_dir(path)
  local st = core.stat(path)
  return st and st.type == "directory"
end

local function fail(fmt_, ...)
  errors.misuse("bad field 'skills' to 'server' (" .. fmt_ .. ")", ...)
end

-- Every file of the skill folder `rel` under `root` into `out` (`{ catalog path, bytes }`,
-- sorted, regular files only), its folders' children into `dirs`. Links are taken only
-- inside `root_real`: a skill linking to ~/.ssh serves nothing from there (claude.fs.tree).
-- `single`: `root/rel` is the folder given (its real path `root_real`), not `root`.
local function walk(root, rel, root_real, single, out, dirs)
  local dir = root .. "/" .. rel
  if not tree.inside(root_real, dir) then
    fail("%s leads out of the skills folder %s", dir, root_real)
  end
  dirs[rel] = jarray()
  local total = 0
  for r, st in tree.walk(dir, { hidden = false, within = root_real }) do
    local path = rel .. "/" .. r
    local parent = path:match("^(.*)/[^/]+$")
    if st.type == "directory" then
      dirs[path] = jarray()
      local children = dirs[parent]
      children[#children + 1] = path
    elseif st.type == "file" then -- not a FIFO or a device: a read would wait forever
      local bytes, err, out_of = read_file(single and dir or root, root_real,
        single and r or path)
      if not bytes and not out_of then fail("cannot read %s: %s", dir .. "/" .. r, err) end
      if bytes then
        local children = dirs[parent]
        children[#children + 1] = path
        out[#out + 1] = { path, bytes }
        total = total + #bytes
        if #out > M.MAX_FILES then
          fail("skill '%s' has more than %d files", rel, M.MAX_FILES)
        end
        if total > M.MAX_BYTES then fail("skill '%s' is over %d bytes", rel, M.MAX_BYTES) end
      end
    end
  end
end

-- The skill in directory `rel` under `root` (the skills folder, real path `root_real`;
-- `single`: the folder of one skill, given itself, real path `root_real`).
local function load_skill(self, root, rel, root_real, single)
  local dir = root .. "/" .. rel
  local name = rel:match("([^/]+)$")
  local files = {}
  walk(root, rel, root_real, single, files, self.dirs)
  local resources, front = jarray(), nil
  for _, file in ipairs(files) do
    local path, bytes = file[1], file[2]
    local mime = mime_of(path, bytes)
    self.files[path] = { bytes = bytes, mime = mime, text = utf8.len(bytes) ~= nil,
      size = #bytes }
    local uri = M.uri(path)
    local entry = { uri = uri, digest = "sha256:" .. hex(assert(core.sha256(bytes))),
      size = #bytes }
    if path == rel .. "/SKILL.md" then
      local why
      front, why = M.frontmatter(bytes)
      if not front then fail("%s: %s", root .. "/" .. path, why) end
      table.insert(resources, 1, entry) -- SKILL.md first
    else
      resources[#resources + 1] = entry
    end
  end
  if not front then
    fail("%s/SKILL.md leads out of the skills folder %s", dir, root_real)
  end
  if front.name ~= name then
    fail("%s/SKILL.md: its name '%s' is not its directory's '%s'", dir, tostring(front.name),
      name)
  end
  if not M.valid_name(name) then
    fail("%s: '%s' is not a valid skill name (1-64 of a-z 0-9 -, no '-' at either end or "
      .. "twice)", dir, name)
  end
  if type(front.description) ~= "string" or front.description == "" then
    fail("%s/SKILL.md: the frontmatter needs a description", dir)
  end
  if self.names[name] then fail("two skills named '%s'", name) end
  self.names[name] = true
  local entry = { uri = M.uri(rel .. "/SKILL.md"), frontmatter = front, resources = resources }
  self.skills[#self.skills + 1] = entry
  self.by_uri[entry.uri] = entry
end

-- Finds the skills under `root`: a directory with a SKILL.md is one (not looked into
-- further for others), the others are looked into; links only inside the root.
local function find(self, root)
  local root_real = core.realpath(root)
  local skill_dirs = {}
  for r, st in tree.walk(root, { hidden = false }) do
    local above = r
    repeat above = above:match("^(.*)/[^/]+$") until not above or skill_dirs[above]
    local skill = tree.entry(root_real, root .. "/" .. r .. "/SKILL.md")
    if st.type == "directory" and not above and skill and skill.type == "file" then
      skill_dirs[r] = true
      load_skill(self, root, r, root_real)
      -- the directories above a skill, for resources/directory/read
      local up = r
      while up:find("/") do
        local parent = up:match("^(.*)/[^/]+$")
        local children = self.dirs[parent] or jarray()
        self.dirs[parent] = children
        local seen = false
        for _, c in ipairs(children) do if c == up then seen = true end end
        if not seen then children[#children + 1] = up end
        up = parent
      end
    end
  end
end

--- Load the skills of one or more folders.
-- @tparam string|{string,...} dirs
-- @treturn table the catalog
-- @raise a misuse naming the folder or file at fault
function M.load(dirs)
  if type(dirs) == "string" then dirs = { dirs } end
  local self = { skills = jarray(), by_uri = {}, files = {}, dirs = {}, names = {} }
  for _, root in ipairs(dirs) do
    if type(root) ~= "string" or not is_dir(root) then
      fail("'%s' is not a directory", tostring(root))
    end
    root = root:gsub("/+$", "")
    local st = core.stat(root .. "/SKILL.md")
    if st and st.type == "file" then -- the folder of one skill
      local parent, name = root:match("^(.*)/([^/]+)$")
      if not parent then parent, name = ".", root end
      load_skill(self, parent == "" and "/" or parent, name, core.realpath(root), true)
    else
      find(self, root)
    end
  end
  table.sort(self.skills, function(a, b) return a.uri < b.uri end)
  return self
end

--- The direct children of the directory at `path` as `resources/directory/read` lists them,
-- or nil when `path` is no directory of the catalog.
-- @tparam table catalog
-- @tparam string path
-- @treturn table|nil
function M.children(catalog, path)
  local list = catalog.dirs[path]
  if not list then return nil end
  local out = jarray()
  for _, p in ipairs(list) do
    local f = catalog.files[p]
    local name = p:match("([^/]+)$")
    if f then
      out[#out + 1] = { uri = M.uri(p), name = name, mimeType = f.mime, size = f.size }
    else
      out[#out + 1] = { uri = M.uri(p), name = name, mimeType = "inode/directory" }
    end
  end
  return out
end

return M
