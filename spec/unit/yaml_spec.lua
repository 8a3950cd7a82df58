-- claude.yaml: YAML documents as claude.json's values (libyaml's parser, the core schema),
-- and the bounds that make a hostile document fail fast: nesting, aliases, size.
local json = require "claude.json"
local yaml = require "claude.yaml"
local harness = require "support.harness"

local function decode(text, opts)
  local v, err, kind = yaml.decode(text, opts)
  assert(v ~= nil, err and err.message)
  assert.is_nil(kind)
  return v
end

local function refused(text, opts)
  local v, err, kind = yaml.decode(text, opts)
  assert.is_nil(v)
  return err.message, kind
end

-- a billion laughs: each level an alias of nine of the level below
local function laughs(levels)
  local lines = { 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]' }
  for i = 2, levels do
    local this, prev = string.char(96 + i), string.char(95 + i)
    lines[i] = string.format("%s: &%s [%s]", this, this, ("*" .. prev .. ","):rep(9):sub(1, -2))
  end
  return table.concat(lines, "\n")
end

describe("claude.yaml", function()
  before_each(harness.before)
  after_each(harness.after)

  it("resolves plain scalars by the core schema; quoted ones are strings", function()
    local v = decode([[
int: 42
neg: -7
plus: +3
octal: 0o17
hex: 0x1F
float: 2.5
exp: 1e3
version: 3.0.3
quoted: "42"
single: 'true'
yes_is_text: yes
bools: [true, True, FALSE]
nulls: [~, null, NULL, ]
empty:
date: 2024-01-31
inf: -.inf
]])
    assert.equal(42, v.int)
    assert.equal("integer", math.type(v.int))
    assert.equal(-7, v.neg)
    assert.equal(3, v.plus)
    assert.equal(15, v.octal)
    assert.equal(31, v.hex)
    assert.equal(2.5, v.float)
    assert.equal("float", math.type(v.exp))
    assert.equal(1000, v.exp)
    assert.equal("3.0.3", v.version)
    assert.equal("42", v.quoted)
    assert.equal("true", v.single)
    assert.equal("yes", v.yes_is_text) -- YAML 1.1's booleans are text in 1.2
    assert.same({ true, true, false }, v.bools)
    assert.same({ json.null, json.null, json.null }, v.nulls)
    assert.equal(json.null, v.empty)
    assert.equal("2024-01-31", v.date)
    assert.equal(-math.huge, v.inf)
  end)

  it("gives claude.json's values: [] marked, integers exact, keys as written", function()
    local v = decode("a: []\nb: {}\n200: ok\n0x10: hex key\nbig: 9223372036854775807\n"
      .. "huge: 9223372036854775808\n")
    assert.equal('[]', json.encode(v.a))
    assert.equal('{}', json.encode(v.b))
    assert.equal("ok", v["200"])
    assert.equal("hex key", v["0x10"])
    assert.equal(math.maxinteger, v.big)
    assert.equal("float", math.type(v.huge))
    -- JSON is YAML: the same value either way
    local text = '{"a": [1, 2.5, "x", null, true, {"b": []}], "c": {}}'
    assert.same(json.decode(text), decode(text))
  end)

  it("reads block and flow collections, multi-line strings, tags, comments", function()
    local v = decode([[
%YAML 1.2
---
# a comment
literal: |
  line 1
    indented
  line 3
folded: >-
  one
  two

  three
flow: {a: [1, {b: c}], "d e": f}
tags: [!!str 12, !!int "12", !!float 1, !!bool "true", !!null "", ! 7]
seq:
  - x
  - - nested
...
]])
    assert.equal("line 1\n  indented\nline 3\n", v.literal)
    assert.equal("one two\nthree", v.folded)
    assert.same({ a = { 1, { b = "c" } }, ["d e"] = "f" }, v.flow)
    assert.same({ "12", 12, 1.0, true, json.null, "7" }, v.tags)
    assert.equal("float", math.type(v.tags[3]))
    assert.same({ "x", { "nested" } }, v.seq)
  end)

  it("shares anchored values through aliases, and merges with <<", function()
    local v = decode([[
base: &base {x: 1, y: 2}
more: &more {z: 3}
same: *base
merged:
  <<: [*base, *more]
  y: 20
]])
    assert.equal(v.base, v.same)
    assert.same({ x = 1, y = 20, z = 3 }, v.merged)
    assert.same({ x = 1, y = 2 }, v.base) -- a merge copies: the anchored value is unchanged
  end)

  it("refuses a billion laughs at the node bound, however the aliases nest", function()
    local msg, kind = refused(laughs(9))
    assert.equal("yaml", kind)
    assert.matches("more than 1000000 nodes, aliases counted", msg)
    msg = refused(laughs(4), { max_nodes = 1000 })
    assert.matches("^yaml: line 4, column %d+: more than 1000 nodes", msg)
    -- below the bound the same shape is read, its aliases shared, not copied
    local v = decode(laughs(4), { max_nodes = 10000 })
    assert.equal(v.c[1], v.c[9])
  end)

  it("refuses an alias inside the node it names, and one to no anchor", function()
    assert.matches("the alias %*a names no complete node", refused("a: &a [1, *a]\n"))
    assert.matches("the alias %*nope names no complete node", refused("a: *nope\n"))
  end)

  it("refuses deep nesting, second documents, other tags, complex and repeated keys",
    function()
      assert.matches("nested deeper than 512", refused(("["):rep(600) .. ("]"):rep(600)))
      assert.matches("nested deeper than 3", refused("a: {b: {c: {d: 1}}}", { max_depth = 3 }))
      assert.matches("a second document", refused("a: 1\n---\nb: 2\n"))
      assert.matches("tag !ruby/object is not read", refused("a: !ruby/object {}\n"))
      assert.matches("tag tag:yaml.org,2002:binary is not read", refused("a: !!binary aGk=\n"))
      assert.matches("this scalar is no int", refused("a: !!int twelve\n"))
      assert.matches("a key must be a scalar", refused("? [a, b]\n: 1\n"))
      assert.matches("line 3, column 1: the key 'a' is given twice", refused("a: 1\nb: 2\na: 3\n"))
      assert.matches("the merge key << takes a mapping", refused("a:\n  <<: 1\n"))
      assert.matches("no document", refused(""))
    end)

  it("says where the text is not YAML, and bounds its size", function()
    local msg, kind = refused("a: [1, 2\nb: 3\n")
    assert.equal("yaml", kind)
    assert.matches("^yaml: line %d+, column %d+: .*flow sequence", msg)
    assert.matches("control characters are not allowed", refused("a: \1\n"))
    msg, kind = refused("a: 1234567890", { max_bytes = 8 })
    assert.equal("overflow", kind)
    assert.matches("13 bytes, over max_bytes %(8%)", msg)
  end)

  it("raises for misuse at the caller's line", function()
    local line = debug.getinfo(1, "l").currentline
    local ok, err = pcall(function() yaml.decode(42) end)
    assert.is_false(ok)
    assert.matches("yaml_spec.lua:" .. line + 1 .. ": bad argument #1 to 'yaml.decode'", err)
    assert.has_error(function() yaml.decode("a: 1", { max_dept = 3 }) end)
    assert.has_error(function() yaml.decode("a: 1", { max_depth = 0 }) end)
  end)
end)
