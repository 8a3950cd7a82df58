--- Confines file paths to a root directory.
--
-- `claude.guard.path{ root = dir }` returns a guard; `g:check(path)` returns the
-- path's canonical form when it lies inside the root, else `nil, err, "guard"`.
-- Relative paths are taken from the root. Symbolic links are followed the way
-- the kernel would follow them (`a/link/../b` is where `link` leads, then up),
-- so neither `..` nor a link can lead out; a part that does not exist yet may
-- not be followed by `..`, and a link that leads nowhere is refused, since
-- creating the file would create it wherever the link points.
--
-- Use the path `check` returns, not the one you were given. Like every check
-- before use, it cannot stop a process that changes the tree between the
-- check and the use; keep such processes out of the root.
-- @module claude.guard.path
local core = require "claude.core"
local errors = require "claude.errors"
local common = require "claude.guard.common"

local violation = common.violation

local PathGuard = common.class("claude.guard.Path")

local function split(path)
  local parts = {}
  for part in path:gmatch("[^/]+") do parts[#parts + 1] = part end
  return parts
end

local function join(root, parts, first, last)
  local s = root
  for i = first, last do
    s = (s == "/" and "" or s) .. "/" .. parts[i]
  end
  return s
end

local function inside(path, root)
  return path == root or path:sub(1, #root + 1) == (root == "/" and "/" or root .. "/")
end

--- Makes a path guard.
-- @tparam table opts `root` (string, a directory that exists), `allow_missing`
--   (boolean, default true: a path that does not exist yet passes when it would
--   be created inside the root), `allow_root` (boolean, default true: the root
--   itself passes)
-- @treturn claude.guard.Path
local function new(opts)
  common.check_options("guard.path", opts,
    { root = "string", allow_missing = "boolean", allow_root = "boolean" })
  if not opts.root then
    errors.misuse("bad field 'root' to 'guard.path' (string expected, got nil)")
  end
  local root, err = core.realpath(opts.root)
  if not root then
    errors.misuse("bad field 'root' to 'guard.path' (%s: %s)", opts.root, err)
  end
  return setmetatable({
    root = root,
    allow_missing = opts.allow_missing ~= false,
    allow_root = opts.allow_root ~= false,
  }, PathGuard)
end

function PathGuard:describe() return "root " .. self.root end

--- Checks one path.
-- @tparam string path absolute, or relative to the root
-- @treturn string the canonical path inside the root
-- @return or nil, err, "guard"
function PathGuard:check(path)
  if type(path) ~= "string" or path == "" then
    return violation("path.invalid", "expected a path, got %s",
      type(path) == "string" and "an empty string" or type(path))
  end
  if path:find("\0", 1, true) then return violation("path.invalid", "path contains a NUL byte") end
  local full = path:sub(1, 1) == "/" and path or self.root .. "/" .. path
  local parts = split(full)
  -- The longest prefix that exists, canonical; the rest must be plain names.
  local i, real = #parts, nil
  while i >= 0 do
    real = core.realpath(join("", parts, 1, i) ~= "" and join("", parts, 1, i) or "/")
    if real then break end
    i = i - 1
  end
  for j = i + 1, #parts do
    local part = parts[j]
    if part == ".." then
      return violation("path.dotdot_after_missing",
        "'%s': '..' follows '%s', which does not exist", path, parts[j - 1] or "/")
    end
    if j == i + 1 and core.is_symlink(join(real, parts, j, j)) then
      return violation("path.dangling_link", "'%s': '%s' is a link that leads nowhere",
        path, join(real, parts, j, j))
    end
  end
  if i < #parts and not self.allow_missing then
    return violation("path.missing", "'%s' does not exist", path)
  end
  local rest = {}
  for j = i + 1, #parts do
    if parts[j] ~= "." then rest[#rest + 1] = parts[j] end
  end
  local canonical = join(real, rest, 1, #rest)
  if not inside(canonical, self.root) then
    return violation("path.outside_root", "'%s' leads to '%s', outside %s", path, canonical,
      self.root)
  end
  if canonical == self.root and not self.allow_root then
    return violation("path.is_root", "'%s' is the root itself", path)
  end
  return canonical
end

return { new = errors.public(new), PathGuard = PathGuard }
