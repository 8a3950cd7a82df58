--- ECMA-262 regular expressions, as JSON Schema's `pattern` uses them: the subset that can
-- be matched right without captures, by code point. `compile(src)` gives
-- `function(str) -> boolean`, or throws (`errors.throw`) a `schema` failure for a syntax
-- error and an `unsupported` one for lookbehind, backreferences or `\p{...}`.
-- @module claude.schema.regex
local errors = require "claude.errors"
local common = require "claude.schema.common"

local M = {}

local utf8_len, utf8_codes = utf8.len, utf8.codes
local bad = common.bad

local function unsupported(what)
  errors.throw("unsupported", what .. " is not supported by this regular expression engine")
end

local function to_codepoints(s)
  local cps, n = {}, 0
  if not s:find("[\128-\255]") or not utf8_len(s) then
    for i = 1, #s do cps[i] = s:byte(i) end
    return cps, #s
  end
  for _, c in utf8_codes(s) do n = n + 1; cps[n] = c end
  return cps, n
end

local function is_digit(c) return c >= 48 and c <= 57 end
local function is_word(c)
  return (c >= 48 and c <= 57) or (c >= 65 and c <= 90) or (c >= 97 and c <= 122) or c == 95
end
local SPACE = { [9] = true, [10] = true, [11] = true, [12] = true, [13] = true, [32] = true,
  [0xA0] = true, [0x1680] = true, [0x2028] = true, [0x2029] = true, [0x202F] = true,
  [0x205F] = true, [0x3000] = true, [0xFEFF] = true }
local function is_space(c) return SPACE[c] or (c >= 0x2000 and c <= 0x200A) end
local function is_line_end(c) return c == 10 or c == 13 or c == 0x2028 or c == 0x2029 end
local CLASS_ESC = {
  d = is_digit, w = is_word, s = is_space,
  D = function(c) return not is_digit(c) end,
  W = function(c) return not is_word(c) end,
  S = function(c) return not is_space(c) end,
}
local CTRL_ESC = { t = 9, n = 10, v = 11, f = 12, r = 13 }

-- Compile `src` into `function(str) -> boolean`; throws a `schema` failure on a syntax error
-- and an `unsupported` one on a construct this engine does not implement.
local function regex(src)
  local P, np = to_codepoints(src)
  local pos = 1
  local S, N = nil, 0  -- the subject while matching

  local function ch(c) return utf8.char(c) end
  local function syntax(msg) bad("", "invalid pattern /%s/: %s", src, msg) end
  local function eat(c)
    if P[pos] == c then pos = pos + 1; return true end
    return false
  end

  local function hex(count)
    local v = 0
    for _ = 1, count do
      local c = P[pos]
      local d = c and tonumber(ch(c), 16)
      if not d then return nil end
      v = v * 16 + d
      pos = pos + 1
    end
    return v
  end

  -- After a backslash: -> code point, or nil plus a predicate for class escapes.
  local function escape(in_class)
    local c = P[pos]
    if not c then syntax("\\ at end of pattern") end
    pos = pos + 1
    local e = ch(c)
    if CLASS_ESC[e] then return nil, CLASS_ESC[e] end
    if CTRL_ESC[e] then return CTRL_ESC[e] end
    if e == "b" and in_class then return 8 end
    if e == "0" and not (P[pos] and is_digit(P[pos])) then return 0 end
    if is_digit(c) or e == "k" or e == "p" or e == "P" then unsupported("\\" .. e) end
    if e == "c" and P[pos] and ((P[pos] >= 65 and P[pos] <= 90) or
        (P[pos] >= 97 and P[pos] <= 122)) then
      pos = pos + 1
      return P[pos - 1] % 32
    end
    if e == "x" then
      local save = pos
      local v = hex(2)
      if v then return v end
      pos = save
      return c
    end
    if e == "u" then
      if eat(123) then  -- \u{...}
        local v, digits = 0, 0
        while P[pos] and P[pos] ~= 125 do
          local d = tonumber(ch(P[pos]), 16)
          if not d then syntax("bad \\u{...} escape") end
          v, digits, pos = v * 16 + d, digits + 1, pos + 1
        end
        if not eat(125) or digits == 0 or v > 0x10FFFF then syntax("bad \\u{...} escape") end
        return v
      end
      local save = pos
      local v = hex(4)
      if not v then pos = save; return c end
      if v >= 0xD800 and v <= 0xDBFF and P[pos] == 92 and P[pos + 1] == 117 then
        save = pos
        pos = pos + 2
        local lo = hex(4)
        if lo and lo >= 0xDC00 and lo <= 0xDFFF then
          return 0x10000 + (v - 0xD800) * 0x400 + (lo - 0xDC00)
        end
        pos = save
      end
      return v
    end
    return c  -- identity escape: \. \/ \- ...
  end

  local function class()
    local negate = eat(94)  -- ^
    local singles, ranges, preds = {}, {}, {}
    while true do
      local c = P[pos]
      if not c then syntax("missing ]") end
      if c == 93 then pos = pos + 1; break end
      local lo, pred
      pos = pos + 1
      if c == 92 then lo, pred = escape(true) else lo = c end
      if pred then
        preds[#preds + 1] = pred
      elseif P[pos] == 45 and P[pos + 1] and P[pos + 1] ~= 93 then  -- a range
        pos = pos + 1
        local hc, hi, hpred = P[pos], P[pos], nil
        pos = pos + 1
        if hc == 92 then hi, hpred = escape(true) end
        if hpred then  -- [a-\d]: '-' is literal
          singles[lo], singles[45] = true, true
          preds[#preds + 1] = hpred
        else
          if hi < lo then syntax("range out of order in character class") end
          ranges[#ranges + 1] = { lo, hi }
        end
      else
        singles[lo] = true
      end
    end
    local nr, npred = #ranges, #preds
    return function(c)
      local hit = singles[c] or false
      if not hit then
        for i = 1, nr do
          local r = ranges[i]
          if c >= r[1] and c <= r[2] then hit = true; break end
        end
      end
      if not hit then
        for i = 1, npred do
          if preds[i](c) then hit = true; break end
        end
      end
      if negate then return not hit end
      return hit
    end
  end

  -- A matcher is m(i, k) -> boolean; k(j) continues after a match ending before j.
  local function char_matcher(pred)
    return function(i, k)
      if i <= N and pred(S[i]) then return k(i + 1) end
      return false
    end
  end

  local function quantify(m, pred, min, max, greedy)
    if pred then
      return function(i, k)
        local j, limit = i, max and i + max or N + 1
        if limit > N + 1 then limit = N + 1 end
        while j < limit and pred(S[j]) do j = j + 1 end
        if j - i < min then return false end
        if greedy then
          for e = j, i + min, -1 do
            if k(e) then return true end
          end
        else
          for e = i + min, j do
            if k(e) then return true end
          end
        end
        return false
      end
    end
    local function rep(i, count, k)
      if count < min then
        return m(i, function(j) return rep(j, count + 1, k) end)
      end
      if max and count >= max then return k(i) end
      local function more(j)
        if j == i then return false end
        return rep(j, count + 1, k)
      end
      if greedy then return m(i, more) or k(i) end
      return k(i) or m(i, more)
    end
    return function(i, k) return rep(i, 0, k) end
  end

  -- {n}, {n,}, {n,m} at pos (just after '{'); -> min, max or nil when not a quantifier
  local function braces()
    local save = pos
    local function int()
      local v
      while P[pos] and is_digit(P[pos]) do v = (v or 0) * 10 + P[pos] - 48; pos = pos + 1 end
      return v
    end
    local min = int()
    if not min then pos = save; return nil end
    local max = min
    if eat(44) then max = int() end
    if not eat(125) then pos = save; return nil end
    if max and max < min then syntax("numbers out of order in {} quantifier") end
    return min, max or false
  end

  local disjunction

  local function term()
    local c = P[pos]
    pos = pos + 1
    local m, pred
    if c == 94 then  -- ^
      return function(i, k) return i == 1 and k(i) end
    elseif c == 36 then  -- $
      return function(i, k) return i == N + 1 and k(i) end
    elseif c == 92 and (P[pos] == 98 or P[pos] == 66) then  -- \b \B
      local want = P[pos] == 98
      pos = pos + 1
      return function(i, k)
        local a = i > 1 and is_word(S[i - 1])
        local b = i <= N and is_word(S[i])
        return (a ~= b) == want and k(i)
      end
    elseif c == 40 then  -- (
      local look
      if eat(63) then  -- ?
        if eat(58) then  -- (?:
          look = nil
        elseif eat(61) then look = true
        elseif eat(33) then look = false
        elseif P[pos] == 60 and P[pos + 1] ~= 61 and P[pos + 1] ~= 33 then  -- (?<name>
          while P[pos] and P[pos] ~= 62 do pos = pos + 1 end
          if not eat(62) then syntax("bad group name") end
        else
          unsupported("lookbehind")
        end
      end
      local inner = disjunction()
      if not eat(41) then syntax("missing )") end
      if look ~= nil then
        local accept = function() return true end
        return function(i, k)
          if (inner(i, accept) and true or false) == look then return k(i) end
          return false
        end
      end
      m = inner
    elseif c == 46 then  -- .
      pred = function(x) return not is_line_end(x) end
    elseif c == 91 then  -- [
      pred = class()
    elseif c == 92 then  -- backslash
      local cp, p = escape(false)
      pred = p or function(x) return x == cp end
    elseif c == 42 or c == 43 or c == 63 then  -- * + ?
      syntax("nothing to repeat")
    elseif c == 123 and braces() then
      syntax("nothing to repeat")
    elseif c == 41 then
      syntax("unmatched )")
    else
      pred = function(x) return x == c end
    end
    m = m or char_matcher(pred)
    -- quantifier
    local q, min, max = P[pos], nil, nil
    if q == 42 then min, max = 0, false
    elseif q == 43 then min, max = 1, false
    elseif q == 63 then min, max = 0, 1
    elseif q == 123 then
      pos = pos + 1
      min, max = braces()
      if not min then pos = pos - 1 end
    end
    if min then
      if q ~= 123 then pos = pos + 1 end
      local greedy = not eat(63)
      return quantify(m, pred, min, max or nil, greedy)
    end
    return m
  end

  local function seq(a, b)
    return function(i, k)
      return a(i, function(j) return b(j, k) end)
    end
  end

  function disjunction()
    local alts = {}
    repeat
      local items = {}
      while P[pos] and P[pos] ~= 124 and P[pos] ~= 41 do items[#items + 1] = term() end
      local m = items[#items] or function(i, k) return k(i) end
      for i = #items - 1, 1, -1 do m = seq(items[i], m) end
      alts[#alts + 1] = m
    until not eat(124)
    if #alts == 1 then return alts[1] end
    return function(i, k)
      for a = 1, #alts do
        if alts[a](i, k) then return true end
      end
      return false
    end
  end

  local top = disjunction()
  if pos <= np then syntax("unmatched )") end
  local accept = function() return true end
  local function search(str)
    S, N = to_codepoints(str)
    for start = 1, N + 1 do
      if top(start, accept) then return true end
    end
    return false
  end
  return function(str)
    local ok, r = pcall(search, str)
    S = nil
    if not ok then return nil end  -- too deep for the Lua stack
    return r
  end
end

--- Compile `src`; throws as the module's description says.
-- @tparam string src
-- @treturn function `(s) -> boolean` (nil when the subject was too long to match)
M.compile = regex

return M
