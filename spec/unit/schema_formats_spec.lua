-- `format` as an assertion (the `formats` option of claude.schema.compile, a tool's
-- `formats`, claude.schema.defaults). The official suite's optional/format/ files run in
-- schema_suite_spec.lua when they are there; these are the project's own cases, a few per
-- format, from the RFCs each follows.
local schema = require "claude.schema"
local tool = require "claude.mcp.tool"

local CASES = {
  email = { ok = { "joe.bloggs@example.com", '"joe bloggs"@example.com', "a@[127.0.0.1]",
    "a@[IPv6:::1]", "te~st@example.com" },
    bad = { "2962", ".a@example.com", "a..b@example.com", "a@", "@example.com",
      "a@[127.0.0.300]", "a b@example.com", "a@exa_mple.com" } },
  ["idn-email"] = { ok = { "실례@실례.테스트", "δοκιμή@example.com" },
    bad = { "user＠example.com", "2962" } },
  hostname = { ok = { "www.example.com", "a--b.com", "xn--9n2bp8q.xn--9t4b11yi5a" },
    bad = { "", "example.", "-a.com", "a_b.com", "xn--X", "xn--al-0ea", ("a"):rep(64) } },
  ["idn-hostname"] = { ok = { "실례.테스트", "l·l", "a。b", "α͵β" },
    bad = { "a..b", "l·a", "〮실례.테스트", "0a.א", "xn--example-" } },
  ipv4 = { ok = { "192.168.0.1", "0.0.0.0" }, bad = { "256.1.1.1", "01.2.3.4", "1.2.3" } },
  ipv6 = { ok = { "::1", "1:2:3:4:5:6:7:8", "::ffff:192.168.0.1", "d6::" },
    bad = { "12345::", "1::2::3", ":2:3:4:5:6:7:8", "[::1]", "fe80::a%eth1" } },
  uri = { ok = { "http://foo.bar/?baz=qux#quux", "urn:a:b", "ldap://[2001:db8::7]/c=GB" },
    bad = { "/abc", "abc", "http://example.com/%6G", "http://a b", "1http://x" } },
  ["uri-reference"] = { ok = { "", "/abc", "#frag", "./this:that", "//" },
    bad = { "1:b", "/a\"b", "//a@b@c/" } },
  iri = { ok = { "http://ƒøø.ßår/?∂éœ=πîx#πîüx" }, bad = { "/abc", "http://a/\n" } },
  ["iri-reference"] = { ok = { "âππ", "#ƒrägmênt" }, bad = { "#ƒräg\\mênt" } },
  uuid = { ok = { "2eb8aa08-aa98-11ea-b4aa-73b441d16380" },
    bad = { "2eb8aa08aa9811eab4aa73b441d16380", "2eb8aa08-aa98-11ea-b4ga-73b441d16380" } },
  ["date-time"] = { ok = { "1963-06-19T08:30:06.283185Z", "1998-12-31T23:59:60Z",
    "1998-12-31T15:59:60.123-08:00" },
    bad = { "1998-12-31T22:59:60Z", "1990-02-31T15:59:59Z", "1985-04-12T23:20:50+01" } },
  date = { ok = { "2020-02-29", "0400-02-29" }, bad = { "2021-02-29", "2100-02-29", "2020-1-1" } },
  time = { ok = { "08:30:06Z", "23:59:60+00:00", "15:59:60-08:00" },
    bad = { "12:00:00", "24:00:00Z", "22:59:60Z", "08:30:06 PST" } },
  duration = { ok = { "P4DT12H30M5S", "P2W", "PT36H", "P1Y2M" },
    bad = { "P", "PT", "P1YT", "P2D1Y", "P1Y2W", "PT0.5S" } },
  ["json-pointer"] = { ok = { "", "/foo/0", "/a~1b", "/" }, bad = { "a", "/~2", "/foo~" } },
  ["relative-json-pointer"] = { ok = { "1", "0/foo", "0#", "120/a" },
    bad = { "/a", "-1/a", "01/a", "0##", "" } },
  regex = { ok = { "^[a-z]+$", "\\d{3}" }, bad = { "^(abc]", "\\a" } },
  ["uri-template"] = { ok = { "http://example.com/{term:1}/{term}", "{+var}", "{x,y}", "" },
    bad = { "{term", "{}", "{a,,b}", "{v:0}", "foo}bar" } },
}

describe("claude.schema formats", function()
  for name, case in pairs(CASES) do
    it(name .. " is asserted with formats = true", function()
      local v = assert(schema.compile({ type = "string", format = name }, { formats = true }))
      for _, s in ipairs(case.ok) do
        local ok, err = v(s)
        assert(ok == true, name .. " refused " .. s .. ": " .. tostring(err and err.message))
      end
      for _, s in ipairs(case.bad) do
        local ok, err, kind = v(s)
        assert(ok == nil, name .. " accepted " .. s)
        assert.equal("validation", kind)
        assert.equal("is not a valid " .. name .. " (keyword /format)", err.message)
        assert.equal("/format", err.keyword_location)
      end
    end)
  end

  it("is an annotation by default, and for formats not chosen or unknown", function()
    assert.is_true(schema.compile({ format = "email" })("nope"))
    local v = schema.compile({ properties = { a = { format = "email" }, b = { format = "uuid" },
      c = { format = "no-such" } } }, { formats = { "uuid" } })
    assert.is_true(v({ a = "nope", c = "x" }))
    assert.is_nil(v({ b = "nope" }))
    assert.is_true(schema.compile({ format = "email" }, { formats = false })("nope"))
  end)

  it("checks strings only", function()
    local v = schema.compile({ format = "ipv4" }, { formats = true })
    assert.is_true(v(12))
    assert.is_true(v({}))
  end)

  it("names the property in the message", function()
    local v = schema.compile({ type = "object", properties = { mail = { type = "string",
      format = "email" } } }, { formats = true })
    local _, err = v({ mail = "x" })
    assert.equal("mail: is not a valid email (keyword /properties/mail/format)", err.message)
    assert.equal("/mail", err.instance_location)
  end)

  it("refuses a bad formats option at the caller's line", function()
    local _, err = pcall(function() schema.compile({}, { formats = "yes" }) end)
    assert.matches("schema_formats_spec.lua:%d+: bad option 'formats' to 'compile' %(true, "
      .. "false or a list", err)
    assert.error_matches(function() schema.compile({}, { formats = { "e-mail" } }) end,
      "bad option 'formats' to 'compile' %(item 1: one of date, date%-time, .* got 'e%-mail'%)")
    assert.error_matches(function() schema.compile({}, { formats = { x = "email" } }) end,
      "bad option 'formats' to 'compile'")
  end)

  it("takes a global default from claude.schema.defaults", function()
    finally(function() schema.defaults({ formats = false }) end)
    schema.defaults({ formats = { "email" } })
    assert.is_nil(schema.compile({ format = "email" })("nope"))
    assert.is_true(schema.compile({ format = "email" }, { formats = false })("nope"))
    assert.error_matches(function() schema.defaults({ loader = {} }) end,
      "bad option 'loader' to 'defaults' %(a schema's own, not a default%)")
    assert.error_matches(function() schema.defaults({ formatz = true }) end,
      "bad option 'formatz' to 'defaults' %(unknown%) %(did you mean 'formats'%?%)")
  end)

  it("is a tool's option", function()
    local t = tool.tool("send", "send mail", { type = "object", properties = {
      to = { type = "string", format = "email" } }, required = { "to" } },
      function(args) return "sent to " .. args.to end, { formats = true })
    local r = tool.call(t, { to = "nope" })
    assert.is_true(r.isError)
    assert.matches("to: is not a valid email", r.content[1].text)
    assert.equal("sent to a@b.co", tool.call(t, { to = "a@b.co" }).content[1].text)
    local lax = tool.tool { name = "lax", input_schema = { type = "object", properties = {
      to = { type = "string", format = "email" } } }, execute = function() return "ok" end }
    assert.equal("ok", tool.call(lax, { to = "nope" }).content[1].text)
    assert.error_matches(function()
      tool.tool { name = "x", formats = 1, execute = function() end }
    end, "bad option 'formats' to 'tool'")
  end)
end)
