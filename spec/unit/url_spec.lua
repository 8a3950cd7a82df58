-- claude.url: the strict parser the URL guard and OAuth share.
local url = require "claude.url"

describe("claude.url.parse", function()
  it("splits an absolute URL into its parts", function()
    assert.same({ scheme = "https", host = "as.example", port = 8443, tail = "/a/b?x=1#f",
      path = "/a/b", query = "x=1", fragment = "f" },
      url.parse("HTTPS://AS.Example.:8443/a/b?x=1#f"))
    assert.same({ scheme = "http", host = "::1", tail = "", path = "" }, url.parse("http://[::1]"))
  end)

  for _, row in ipairs {
    { "https://a.example:0/", "a malformed port" },
    { "https://a.example:65536/", "a malformed port" },
    { "https://a.example:x/", "a malformed port" },
    { "https://user@a.example/", "user information in the URL" },
    { "https://a.example\\@b.example/", "blanks, control characters or backslashes" },
    { "https://a .example/", "blanks, control characters or backslashes" },
    { "https://a%2eexample/", "a percent sign in the host" },
    { "https://[zz]/", "a malformed IPv6 host" },
    { "https:///path", "no host" },
    { "/relative", "not an absolute URL" },
    { 42, "not a string" },
  } do
    it("refuses " .. tostring(row[1]), function()
      local u, why = url.parse(row[1])
      assert.is_nil(u)
      assert.equal(row[2], why)
    end)
  end
end)
