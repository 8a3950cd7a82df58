--- A folder's tree, walked without leaving it: the one walk of the skills loader and of the
-- session store (subagents, import). A folder may hold links made by somebody else (a
-- cloned repository, a shared config dir): a link is taken only when its real path is
-- inside the root's, and a folder is entered once (by device and inode), so two links to
-- `.` cannot make a walk loop and a link to `~/.ssh` is not read.
--
--     for rel, st in tree.walk(root) do ... end        -- every entry under root, sorted
--     tree.inside(root_real, path)                      -- path's real path, or nil
--
-- `rel` is the entry's path under the root ("a/b.md"); `st` is `core.stat` of what it leads
-- to (`st.link` is true for an entry that is a link). An entry is given before what is
-- under it. What cannot be listed is skipped; names starting with "." are skipped when
-- `opts.hidden` is false.
-- @module claude.fs.tree
local core = require "claude.core"

local M = {}

local sort = table.sort

--- The real path of `path` when it is `root_real` or under it, else nil (also when it
-- does not exist).
-- @tparam string root_real the root's real path (core.realpath)
-- @tparam string path
-- @treturn string|nil
function M.inside(root_real, path)
  local real = core.realpath(path)
  if not real then return nil end
  if real == root_real or root_real == "/" then return real end
  if real:sub(1, #root_real + 1) == root_real .. "/" then return real end
  return nil
end

-- A folder's identity, for the set of folders entered.
local function id_of(st)
  return st.dev .. ":" .. st.ino
end

--- The entry at `path` as a walk under `root_real` takes it: its stat (links followed, with
-- `link = true`), or nil when it is a link out of the root, a dangling one, or gone.
-- @tparam string root_real
-- @tparam string path
-- @treturn table|nil
function M.entry(root_real, path)
  local st = core.lstat(path)
  if not st then return nil end
  if st.type ~= "link" then return st end
  if not M.inside(root_real, path) then return nil end
  local target = core.stat(path)
  if target then target.link = true end
  return target
end

--- Every entry under `root`, an iterator of `rel, st` (see the module). Folders are entered
-- once each, links out of the root are not taken.
-- @tparam string root a folder
-- @tparam[opt] table opts `hidden` (false: skip names starting with "."), `depth` (the
--   deepest level entered, default 32), `within` (the real path links must stay in,
--   default the root's own: a folder under a larger root it may link across)
-- @return the iterator (nothing at all when root is no folder)
function M.walk(root, opts)
  opts = opts or {}
  local max_depth = opts.depth or 32
  local root_real = core.realpath(root)
  local root_st = root_real and core.stat(root_real)
  if opts.within and not M.inside(opts.within, root) then root_st = nil end
  root_real = opts.within or root_real
  local seen = {}
  if root_st then seen[id_of(root_st)] = true end
  return coroutine.wrap(function()
    if not (root_st and root_st.type == "directory") then return end
    local function visit(dir, rel, depth)
      local names = core.scandir(dir)
      if not names then return end
      sort(names)
      for _, name in ipairs(names) do
        if opts.hidden ~= false or name:sub(1, 1) ~= "." then
          local path, r = dir .. "/" .. name, rel == "" and name or rel .. "/" .. name
          local st = M.entry(root_real, path)
          if st and st.type == "directory" then
            local id = id_of(st)
            if not seen[id] then -- a folder already entered (a loop, or a second link)
              seen[id] = true
              coroutine.yield(r, st)
              if depth < max_depth then visit(path, r, depth + 1) end
            end
          elseif st then
            coroutine.yield(r, st)
          end
        end
      end
    end
    visit(root, "", 1)
  end)
end

return M
