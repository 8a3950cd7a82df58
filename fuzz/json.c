/*
 * json.c -- libFuzzer target: the JSON decoder. Text that decodes must
 * encode (but for infinity, which 1e400 decodes to) and decode again to the
 * same values; text that does not gets a message naming the byte; the id
 * scanner for undecodable lines never fails.
 */
#include <stdint.h>
#include <string.h>

#include "harness.h"

static const char CHECK[] =
  "local core = ...\n"
  "local function same(a, b)\n" /* without recursion: values nest 20000 deep */
  "  local stack = { a, b }\n"
  "  while #stack > 0 do\n"
  "    local y, x = table.remove(stack), table.remove(stack)\n"
  "    if type(x) == 'table' then\n"
  "      assert(type(y) == 'table' and getmetatable(x) == getmetatable(y), 'shape differs')\n"
  "      for k, v in pairs(x) do\n"
  "        assert(y[k] ~= nil, 'key lost')\n"
  "        stack[#stack + 1] = v\n"
  "        stack[#stack + 1] = y[k]\n"
  "      end\n"
  "      for k in pairs(y) do assert(x[k] ~= nil, 'key added') end\n"
  "    else\n"
  "      assert(x == y, 'value differs')\n"
  "    end\n"
  "  end\n"
  "end\n"
  "return function(text)\n"
  "  local r, id, t = core.json_peek_ids(text)\n"
  "  assert(r == nil or type(r) == 'string')\n"
  "  assert(id == nil or type(id) == 'string' or math.type(id) == 'integer')\n"
  "  assert(t == nil or type(t) == 'string')\n"
  "  local v, err = core.json_decode(text)\n"
  "  if v == nil then\n"
  "    assert(type(err) == 'string' and err:find('^invalid JSON: .* at byte %d+ %('), err)\n"
  "    return\n"
  "  end\n"
  "  local ok, out = pcall(core.json_encode, v)\n"
  "  if not ok then\n"
  "    assert(out:find('cannot encode infinity', 1, true), out)\n"
  "    return\n"
  "  end\n"
  "  local w, again_err = core.json_decode(out)\n" /* w may be false */
  "  assert(again_err == nil, again_err)\n"
  "  same(v, w)\n"
  "  assert(#core.json_encode(w) == #out, 'the second encoding differs')\n"
  "end\n";

static lua_State *L;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (L == NULL) L = fuzz_state("fuzz/json", CHECK);
  fuzz_check(L, "fuzz/json", data, size);
  return 0;
}
