local harness = require "support.harness"

describe("embedding", function()
  it("runs two lua_States on an application's own libuv loop", function()
    local code, out, err = harness.sh(harness.build .. "/embed_host lua")
    assert.equal(0, code, err)
    assert.equal("second woke after 0.01 s\nfirst woke after 0.02 s\n"
      .. "state finished: first\nstate finished: second\nloop close: ok\n", out)
  end)

  it("lets another event loop (luv) drive claude through pollfd/timeout/step", function()
    local code, out, err = harness.sh(harness.lua_preload
      .. "LUA_PATH='lua/?.lua;lua/?/init.lua;;' LUA_CPATH="
      .. harness.quote(harness.build .. "/?.so;;") .. " lua5.4 examples/foreign_loop.lua")
    assert.equal(0, code, err)
    assert.equal("task 1, task 2, task 3\nthe application's timer ticked: true\n", out)
  end)
end)
