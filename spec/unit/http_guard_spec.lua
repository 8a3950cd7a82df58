-- claude.mcp.server.origin: the Host and Origin checks of the Streamable HTTP transport, as a
-- table of rows: options, headers, and whether the request may go on.
local guard = require "claude.mcp.server.origin"

local LOOP = { host = "127.0.0.1" }
local ANY = { host = "0.0.0.0" }

local ROWS = {
  -- options, headers, allowed
  { LOOP, { host = "127.0.0.1:8080" }, true },
  { LOOP, { host = "localhost:8080" }, true },
  { LOOP, { host = "LOCALHOST" }, true },
  { LOOP, { host = "[::1]:8080" }, true },
  { LOOP, { host = "evil.example.com" }, false },
  { LOOP, { host = "evil.example.com:8080" }, false },
  { LOOP, {}, false },
  { LOOP, { host = "localhost", origin = "http://localhost:3000" }, true },
  { LOOP, { host = "localhost", origin = "https://127.0.0.1" }, true },
  { LOOP, { host = "localhost", origin = "http://evil.example.com" }, false },
  { LOOP, { host = "localhost", origin = "null" }, false },
  { { host = "::1" }, { host = "[::1]:9" }, true },
  -- a Host no browser can send, which a prefix match would read as [::1]
  { LOOP, { host = "[::1]evil.example.com" }, false },
  { LOOP, { host = "[::1]evil.example.com:80" }, false },
  { LOOP, { host = "[::1]:80evil" }, false },
  { LOOP, { host = "[::1]:80:80" }, false },
  { LOOP, { host = "[::1" }, false },
  { LOOP, { host = "localhost:80x" }, false },
  { LOOP, { host = "[::1]:" }, true },
  { LOOP, { host = "localhost", origin = "http://[::1]evil.example.com" }, false },
  { LOOP, { host = "localhost", origin = "http://[::1]:3000" }, true },
  { { host = "127.0.0.5" }, { host = "127.0.0.5:9" }, true },
  { ANY, { host = "mcp.example.com" }, true },
  { ANY, { host = "x", origin = "http://anything.example" }, true },
  { { host = "0.0.0.0", allowed_hosts = { "mcp.example.com" } }, { host = "mcp.example.com:443" },
    true },
  { { host = "0.0.0.0", allowed_hosts = { "mcp.example.com" } }, { host = "localhost" }, false },
  { { host = "0.0.0.0", allowed_origins = { "https://app.example.com/" } },
    { host = "x", origin = "https://APP.example.com" }, true },
  { { host = "0.0.0.0", allowed_origins = { "https://app.example.com" } },
    { host = "x", origin = "https://other.example.com" }, false },
  { { host = "127.0.0.1", allowed_origins = { "*" } },
    { host = "localhost", origin = "https://other.example.com" }, true },
  { { host = "127.0.0.1", dns_rebinding_protection = false }, { host = "evil.example.com" },
    true },
}

-- The verdict `why` of row i is the one the row says.
local function as_row_says(i, why)
  if ROWS[i][3] then
    assert.is_nil(why, "row " .. i)
  else
    assert.matches("^Forbidden: ", why, 1, false, "row " .. i)
  end
end

describe("claude.mcp.server.origin", function()
  it("allows and forbids as each row says", function()
    for i, row in ipairs(ROWS) do
      as_row_says(i, guard.forbidden(guard.new(row[1]), row[2]))
    end
  end)

  -- the passes are kept per value (a request runs no pattern for a Host seen before): every
  -- row gives the same verdict through one guard per options, asked many times, in any order
  it("gives each row's verdict again through a guard that kept the passes before", function()
    local guards = {}
    for round = 1, 3 do
      for k = 1, #ROWS do
        local i = round == 2 and #ROWS + 1 - k or k
        local row = ROWS[i]
        guards[row[1]] = guards[row[1]] or guard.new(row[1])
        as_row_says(i, guard.forbidden(guards[row[1]], row[2]))
      end
    end
    -- past its bound the guard forgets what it kept, and goes on saying the same
    local g = guard.new(LOOP)
    for n = 1, 200 do
      assert.is_nil(guard.forbidden(g, { host = "localhost:" .. n,
        origin = "http://localhost:" .. n }))
      assert.matches("^Forbidden: ", guard.forbidden(g, { host = "evil.example.com:" .. n }))
    end
    assert.is_true(g.nok <= 64)
  end)
end)
