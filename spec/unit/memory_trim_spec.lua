-- core.memory_trim: the memory a load left behind goes back to the system (a full collection,
-- the claudelua host allocator's free slabs, glibc's free pages), and what is alive stays
-- intact. Inside the host (ctest's host/unit) the slabs are given back; under plain lua there
-- are none to give (false).
local core = require "claude.core"

local in_host = core.memory_trim() ~= false

-- Small blocks of many sizes (tables, strings, closures), some kept.
local function load(n, keep_every)
  local kept, garbage = {}, {}
  for i = 1, n do
    local t = { i, tostring(i), string.rep("x", i % 400), function() return i end }
    if i % keep_every == 0 then kept[#kept + 1] = t else garbage[#garbage + 1] = t end
  end
  return kept, garbage
end

local function intact(kept, keep_every)
  for j, t in ipairs(kept) do
    local i = j * keep_every
    if t[1] ~= i or t[2] ~= tostring(i) or #t[3] ~= i % 400 or t[4]() ~= i then
      return false
    end
  end
  return true
end

describe("core.memory_trim", function()
  it("gives back what a load left (in the claudelua host) and keeps what lives", function()
    local kept = load(2000, 1)
    local garbage = load(200000, 1) -- alive at once: slabs of their own
    assert.equal(200000, #garbage)
    garbage = nil -- luacheck: ignore 311
    local released = core.memory_trim()
    if not in_host then
      assert.is_false(released)
    else
      -- 200,000 dead small blocks: most of their slabs are wholly free
      assert.is_true(released > 8 * 1024 * 1024, tostring(released))
    end
    assert.is_true(intact(kept, 1))
    -- the allocator goes on: new blocks, some in the slabs that stayed
    local more = load(50000, 3)
    assert.is_true(intact(more, 3))
    assert.is_true(intact(kept, 1))
    assert.is_true(core.memory_trim() ~= nil)
    assert.is_true(intact(more, 3))
    assert.is_true(intact(kept, 1))
  end)

  it("gives back nothing when no slab is wholly free, and keeps everything", function()
    local kept = load(20000, 1)
    core.memory_trim()
    local released = core.memory_trim()
    if in_host then assert.equal(0, released) end
    assert.is_true(intact(kept, 1))
  end)
end)
