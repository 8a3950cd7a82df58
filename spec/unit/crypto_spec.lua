-- core.random_bytes and core.sha256 (OpenSSL's libcrypto), for OAuth.
local core = require "claude.core"

local function hex(s)
  return (s:gsub(".", function(c) return string.format("%02x", c:byte()) end))
end

describe("core.sha256", function()
  -- FIPS 180-2 test vectors, and the PKCE example of RFC 7636 (appendix B)
  local rows = {
    { "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
    { "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" },
    { "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1" },
    { "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk",
      "13d31e961a1ad8ec2f16b10c4c982e0876a878ad6df144566ee1894acb70f9c3" },
    { string.rep("a", 1000000),
      "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0" },
  }
  for _, row in ipairs(rows) do
    it("digests " .. (#row[1] > 20 and (#row[1] .. " bytes") or ("'" .. row[1] .. "'")), function()
      local d = core.sha256(row[1])
      assert.equal(32, #d)
      assert.equal(row[2], hex(d))
    end)
  end

  it("takes binary strings", function()
    assert.equal("6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
      hex(core.sha256("\0")))
  end)

  it("rejects a non-string", function()
    assert.has_error(function() core.sha256({}) end)
  end)
end)

describe("core.random_bytes", function()
  it("gives n bytes, different each time", function()
    local a, b = core.random_bytes(32), core.random_bytes(32)
    assert.equal(32, #a)
    assert.equal(32, #b)
    assert.not_equal(a, b)
    assert.equal("", core.random_bytes(0))
    assert.equal(1 << 20, #core.random_bytes(1 << 20))
  end)

  it("rejects a bad size", function()
    assert.has_error(function() core.random_bytes(-1) end)
    assert.has_error(function() core.random_bytes((1 << 20) + 1) end)
    assert.has_error(function() core.random_bytes("x") end)
  end)
end)
