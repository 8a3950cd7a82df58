-- claude.pending: the outbound requests of a peer, by id (a ring in the array part for the
-- newest, a hash for those that outlive a lap).
local pending = require "claude.pending"
local rpc = require "claude.rpc"

local function cb() end

describe("claude.pending", function()
  it("adds, finds and takes requests by id, in any order", function()
    local p = pending.new()
    for n = 1, 10 do p:add(n, n, cb, "m" .. n) end
    assert.equal(10, p.count)
    assert.same({ cb, "m3" }, { p:get(3) })
    assert.same({ cb, "m7" }, { p:take(7) })
    assert.is_nil(p:take(7))
    assert.is_nil(p:get(7))
    for _, n in ipairs { 10, 1, 5, 2 } do assert.equal("m" .. n, select(2, p:take(n))) end
    assert.equal(5, p.count)
    local ids = p:ids()
    table.sort(ids)
    assert.same({ 3, 4, 6, 8, 9 }, ids)
  end)

  it("keeps a request that outlives a lap of the ring, and grows the ring when many do", function()
    local p = pending.new()
    local size = p.size
    p:add(1, 1, cb, "slow")
    for n = 2, size * 3 do -- the ring comes round to request 1's slot twice
      p:add(n, n, cb, "fast")
      assert.equal("fast", select(2, p:take(n)))
    end
    assert.equal("slow", select(2, p:get(1)))
    assert.equal(1, p.count)
    -- many long waits: the ring doubles, nothing is lost
    local first = size * 3 + 1
    for n = first, first + size * 2 do p:add(n, n, cb, "long " .. n) end
    assert.is_true(p.size > size)
    assert.equal(size * 2 + 2, p.count)
    for n = first, first + size * 2 do assert.equal("long " .. n, select(2, p:take(n))) end
    assert.equal("slow", select(2, p:take(1)))
    assert.equal(0, p.count)
    assert.same({}, p:ids())
  end)

  it("numbers string ids with the codec's seq (the control protocol's)", function()
    local p = pending.new(rpc.control.seq)
    local ids = {}
    for n = 1, 600 do
      ids[n] = rpc.control.new_id(n)
      p:add(ids[n], n, cb, "control " .. n)
    end
    for n = 600, 1, -1 do assert.equal("control " .. n, select(2, p:take(ids[n]))) end
    assert.equal(0, p.count)
  end)

  it("answers nil for ids that were never sent, whatever their type", function()
    local p = pending.new(rpc.control.seq)
    p:add(1, 1, cb, "m")
    for _, id in ipairs { 2, -1, 1.5, 0 / 0, math.maxinteger, "1", "req_1_00000000", {}, true } do
      assert.is_nil(p:get(id))
      assert.is_nil(p:take(id))
    end
    assert.equal(1, p.count)
  end)
end)

-- core.pending: the same set in C, for integer ids (JSON-RPC's), where a transport's reader
-- finds the answer's request (read_with(core.envelope_reader("response", set))).
describe("core.pending", function()
  local core = require "claude.core"

  it("adds, finds and takes requests by id, as claude.pending does", function()
    local p = core.pending()
    for n = 1, 10 do p:add(n, n, cb, "m" .. n) end
    assert.equal(10, p:waiting())
    assert.same({ cb, "m3" }, { p:get(3) })
    assert.same({ cb, "m7" }, { p:take(7) })
    assert.is_nil(p:take(7))
    assert.is_nil(p:get(7))
    for _, n in ipairs { 10, 1, 5, 2 } do assert.equal("m" .. n, select(2, p:take(n))) end
    assert.equal(5, p:waiting())
    local ids = p:ids()
    table.sort(ids)
    assert.same({ 3, 4, 6, 8, 9 }, ids)
  end)

  it("keeps what outlives a lap of the ring, grows when many do, loses nothing", function()
    local p, lua = core.pending(), pending.new()
    local size = lua.size
    for _, set in ipairs { p, lua } do
      set:add(1, 1, cb, "slow")
      for n = 2, size * 3 do
        set:add(n, n, cb, "fast")
        assert.equal("fast", select(2, set:take(n)))
      end
      assert.equal("slow", select(2, set:get(1)))
      local first = size * 3 + 1
      for n = first, first + size * 5 do set:add(n, n, cb, "long " .. n) end
      assert.equal(size * 5 + 2, set:waiting())
      for n = first + size * 5, first, -1 do
        assert.equal("long " .. n, select(2, set:take(n)))
      end
      assert.equal("slow", select(2, set:take(1)))
      assert.equal(0, set:waiting())
      assert.same({}, set:ids())
    end
  end)

  it("answers nil for ids that were never sent, whatever their type", function()
    local p = core.pending()
    p:add(1, 1, cb, "m")
    for _, id in ipairs { 2, -1, 65, 1.5, 1.0, 0 / 0, math.maxinteger, "1", {}, true } do
      assert.is_nil(p:get(id))
      assert.is_nil(p:take(id))
    end
    assert.equal(1, p:waiting())
    assert.has_error(function() p:add("x", 1, cb, "m") end)
  end)

  it("holds the same requests as claude.pending through a random run", function()
    local p, lua = core.pending(), pending.new()
    local rnd, live, n = 7, {}, 0
    local function random(k)
      rnd = (rnd * 1103515245 + 12345) % 2147483648
      return rnd % k + 1
    end
    for _ = 1, 20000 do
      if random(3) > 1 or #live == 0 then
        n = n + 1
        p:add(n, n, cb, n)
        lua:add(n, n, cb, n)
        live[#live + 1] = n
      else
        local i = random(#live)
        local id = live[i]
        live[i] = live[#live]
        live[#live] = nil
        assert.equal(select(2, lua:take(id)), select(2, p:take(id)))
      end
      assert.equal(lua.count, p:waiting())
    end
    local a, b = p:ids(), lua:ids()
    table.sort(a)
    table.sort(b)
    assert.same(b, a)
  end)
end)
