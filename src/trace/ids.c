/*
 * ids.c -- core.span_start(new_trace) -> span_id, unix_nanos[, trace_id]: what a new span
 * needs from the system, in one call. The ids are random (W3C Trace Context asks for
 * randomness, not secrecy: xoshiro256** seeded once from getrandom(2)), as lower-case hex,
 * never all zeros; the time is the wall clock in nanoseconds (OTLP's span times).
 *
 * The generator's state is a userdata upvalue (per lua_State, no C global). The process
 * never forks without exec (claude_spawn), so no child shares a state.
 */
#include <stdint.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include <lauxlib.h>

#include "trace/trace.h"

typedef struct ids_rng {
  uint64_t s[4];
} ids_rng;

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t next(ids_rng *r) {
  uint64_t *s = r->s, result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

/* splitmix64: spreads a weak seed (no getrandom) over the whole state */
static uint64_t splitmix(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static void seed(ids_rng *r) {
  size_t got = 0;
  int i;
  while (got < sizeof r->s) {
    ssize_t n = getrandom((char *)r->s + got, sizeof r->s - got, 0);
    if (n <= 0) break;
    got += (size_t)n;
  }
  if (got < sizeof r->s || (r->s[0] | r->s[1] | r->s[2] | r->s[3]) == 0) {
    struct timespec ts;
    uint64_t x;
    clock_gettime(CLOCK_REALTIME, &ts);
    x = ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) ^ (uint64_t)(uintptr_t)r;
    for (i = 0; i < 4; i++) r->s[i] = splitmix(&x);
  }
}

static void put_hex(char *out, uint64_t v) {
  static const char digits[] = "0123456789abcdef";
  int i;
  for (i = 15; i >= 0; i--) {
    out[i] = digits[v & 15];
    v >>= 4;
  }
}

static uint64_t nonzero(ids_rng *r) {
  uint64_t v;
  while ((v = next(r)) == 0) {}
  return v;
}

static int l_span_start(lua_State *L) {
  ids_rng *r = (ids_rng *)lua_touserdata(L, lua_upvalueindex(1));
  struct timespec ts;
  char hex[32];
  put_hex(hex, nonzero(r));
  lua_pushlstring(L, hex, 16);
  if (clock_gettime(CLOCK_REALTIME, &ts) != 0) return luaL_error(L, "no wall clock");
  lua_pushinteger(L, (lua_Integer)ts.tv_sec * 1000000000 + ts.tv_nsec);
  if (!lua_toboolean(L, 1)) return 2;
  put_hex(hex, nonzero(r));
  put_hex(hex + 16, next(r));
  lua_pushlstring(L, hex, 32);
  return 3;
}

void claude_open_trace_ids(lua_State *L) {
  ids_rng *r = (ids_rng *)lua_newuserdatauv(L, sizeof(ids_rng), 0);
  seed(r);
  lua_pushcclosure(L, l_span_start, 1);
  lua_setfield(L, -2, "span_start");
}
