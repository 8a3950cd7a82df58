/*
 * regex.c -- ECMA-262 regular expressions (JSON Schema's `pattern`) on
 * PCRE2: core.regex(pattern) -> match(s) -> boolean | nil, message. The
 * compiled pattern and its matcher; the pattern is first spelled in PCRE2's
 * syntax by schema/regex_translate.c.
 *
 * libpcre2-8 is loaded by soname on the first call (dynlib.h), like libcurl:
 * linked, it would be mapped by every start that never sees a pattern.
 *
 * The translation is compiled in UTF mode without PCRE2_UCP, so that `\d`,
 * `\w` and `\b` are ASCII as in ECMA-262. A lookbehind PCRE2 refuses (not of
 * fixed length) is compiled again with the lookbehinds made callouts: each
 * matches its body, compiled on its own, end-anchored, against the text
 * before the current position.
 *
 * Every match runs under match, depth and heap limits: a pattern that would
 * backtrack for ever ends with a "limit" result, which the validator treats
 * as a failure (never as a match).
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdint.h>
#include <string.h>

#include "schema/regex.h"
#include "schema/regex_translate.h"
#include "dynlib.h"

#ifndef CLAUDE_PCRE2_SONAME
#define CLAUDE_PCRE2_SONAME "libpcre2-8.so.0"
#endif

/* Generous for real patterns; a runaway one stops in well under a second. */
#define MATCH_LIMIT 1000000u
#define DEPTH_LIMIT 100000u
#define HEAP_LIMIT_KIB 16384u
/* An emulated lookbehind runs a match per callout: both are bounded. */
#define LOOKBEHIND_CALLS_MAX 2000u
#define LOOKBEHIND_MATCH_LIMIT 100000u

#define PCRE2_FUNCTIONS(X)                                                                     \
  X(pcre2_code *, pcre2_compile_8,                                                             \
    (PCRE2_SPTR, PCRE2_SIZE, uint32_t, int *, PCRE2_SIZE *, pcre2_compile_context *))          \
  X(void, pcre2_code_free_8, (pcre2_code *))                                                   \
  X(int, pcre2_get_error_message_8, (int, PCRE2_UCHAR *, PCRE2_SIZE))                          \
  X(int, pcre2_jit_compile_8, (pcre2_code *, uint32_t))                                        \
  X(pcre2_match_data *, pcre2_match_data_create_from_pattern_8,                                \
    (const pcre2_code *, pcre2_general_context *))                                             \
  X(void, pcre2_match_data_free_8, (pcre2_match_data *))                                       \
  X(pcre2_match_context *, pcre2_match_context_create_8, (pcre2_general_context *))            \
  X(void, pcre2_match_context_free_8, (pcre2_match_context *))                                 \
  X(int, pcre2_set_match_limit_8, (pcre2_match_context *, uint32_t))                           \
  X(int, pcre2_set_depth_limit_8, (pcre2_match_context *, uint32_t))                           \
  X(int, pcre2_set_heap_limit_8, (pcre2_match_context *, uint32_t))                            \
  X(int, pcre2_set_callout_8,                                                                  \
    (pcre2_match_context *, int (*)(pcre2_callout_block *, void *), void *))                   \
  X(int, pcre2_match_8,                                                                        \
    (const pcre2_code *, PCRE2_SPTR, PCRE2_SIZE, PCRE2_SIZE, uint32_t, pcre2_match_data *,     \
     pcre2_match_context *))

typedef struct pcre2_api {
#define PCRE2_MEMBER(ret, name, args) ret(*name) args;
  PCRE2_FUNCTIONS(PCRE2_MEMBER)
#undef PCRE2_MEMBER
} pcre2_api;

static pcre2_api pcre;
static const char *const names[] = {
#define PCRE2_NAME(ret, name, args) #name,
  PCRE2_FUNCTIONS(PCRE2_NAME)
#undef PCRE2_NAME
};
static claude_dynlib lib = CLAUDE_DYNLIB_INIT(CLAUDE_PCRE2_SONAME, names, pcre);

static void open_once(void) {
  claude_dynlib_open(&lib);
}

#define REGEX_MT "claude.core.Regex"

typedef struct regex {
  pcre2_code *code;
  pcre2_match_data *md;
  pcre2_match_context *mctx;
  /* emulated lookbehinds: callout n runs sub[n - 1], end-anchored, on the
   * text before the position (the sub-patterns are uservalue 1's items) */
  int nsub;
  struct regex *sub[CLAUDE_REGEX_LOOKBEHIND_MAX];
  char negate[CLAUDE_REGEX_LOOKBEHIND_MAX];
  unsigned calls; /* callouts run by the current top-level match */
  struct regex *top;
} regex;

static int regex_gc(lua_State *L) {
  regex *re = (regex *)luaL_checkudata(L, 1, REGEX_MT);
  if (re->md) pcre.pcre2_match_data_free_8(re->md);
  if (re->mctx) pcre.pcre2_match_context_free_8(re->mctx);
  if (re->code) pcre.pcre2_code_free_8(re->code);
  re->md = NULL, re->mctx = NULL, re->code = NULL;
  return 0;
}

static int run(regex *re, const char *s, size_t len, uint32_t options);

static int lookbehind(pcre2_callout_block *cb, void *data) {
  regex *re = (regex *)data, *sub;
  int n = (int)cb->callout_number, rc;
  if (n < 1 || n > re->nsub) return PCRE2_ERROR_CALLOUT;
  if (++re->top->calls > LOOKBEHIND_CALLS_MAX) return PCRE2_ERROR_MATCHLIMIT;
  sub = re->sub[n - 1];
  sub->top = re->top;
  rc = run(sub, (const char *)cb->subject, cb->current_position, PCRE2_ENDANCHORED);
  if (rc < 0 && rc != PCRE2_ERROR_NOMATCH) return rc;
  /* 0: go on; 1: fail here and backtrack */
  return ((rc >= 0) != (re->negate[n - 1] != 0)) ? 0 : 1;
}

/* pcre2_match's result (>= 0 matched, NOMATCH, or an error). */
static int run(regex *re, const char *s, size_t len, uint32_t options) {
  int rc = pcre.pcre2_match_8(re->code, (PCRE2_SPTR)s, len, 0, options, re->md, re->mctx);
  if (rc == PCRE2_ERROR_JIT_STACKLIMIT) /* the interpreter keeps its stack on the heap */
    rc = pcre.pcre2_match_8(re->code, (PCRE2_SPTR)s, len, 0, options | PCRE2_NO_JIT, re->md,
                            re->mctx);
  return rc;
}

/* match(s) -> true | false | nil, message (a limit, or a bad subject) */
static int l_match(lua_State *L) {
  regex *re = (regex *)lua_touserdata(L, lua_upvalueindex(1));
  size_t len;
  const char *s = luaL_checklstring(L, 1, &len);
  int rc;
  if (re->code == NULL) return luaL_error(L, "the regular expression was freed");
  re->calls = 0;
  re->top = re;
  rc = run(re, s, len, 0);
  if (rc >= 0) {
    lua_pushboolean(L, 1);
    return 1;
  }
  if (rc == PCRE2_ERROR_NOMATCH) {
    lua_pushboolean(L, 0);
    return 1;
  }
  luaL_pushfail(L);
  if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT || rc == PCRE2_ERROR_HEAPLIMIT)
    lua_pushliteral(L, "the pattern took too many steps to match (a limit of the regex engine)");
  else {
    PCRE2_UCHAR msg[256];
    pcre.pcre2_get_error_message_8(rc, msg, sizeof msg);
    lua_pushfstring(L, "the pattern could not be matched: %s", (const char *)msg);
  }
  return 2;
}

/* Translates and compiles src[0..n) into a new Regex on the stack; returns
 * 0, or pushes a message and returns -1 (*unsupported set when the pattern
 * is valid but cannot be handled). The sub-patterns of emulated lookbehinds
 * hang off its uservalue. */
static int compile(lua_State *L, const char *src, size_t n, int *unsupported, int level) {
  regex *re;
  claude_regex_translation t;
  int pass, k, errcode;
  PCRE2_SIZE erroff;
  const char *pat;
  size_t plen;
  uint32_t options = PCRE2_UTF | PCRE2_DOLLAR_ENDONLY | PCRE2_MATCH_UNSET_BACKREF |
                     PCRE2_MATCH_INVALID_UTF | PCRE2_NEVER_BACKSLASH_C;
  if (level > 0) options |= PCRE2_ENDANCHORED; /* a lookbehind's body ends where it is */
  if (level > 8) {
    *unsupported = 1;
    lua_pushliteral(L, "lookbehinds nested too deeply");
    return -1;
  }
  re = (regex *)lua_newuserdatauv(L, sizeof *re, 1);
  memset(re, 0, sizeof *re);
  luaL_setmetatable(L, REGEX_MT);
  for (pass = 0; pass < 2; pass++) { /* natively, then with callouts for lookbehinds */
    int callouts = pass;
    if (claude_regex_translate(L, src, n, callouts, &t) < 0) {
      *unsupported = t.unsupported;
      lua_pushstring(L, t.err);
      return -1;
    }
    pat = lua_tolstring(L, -1, &plen);
    /* callouts must run where they are written */
    if (callouts) options |= PCRE2_NO_AUTO_POSSESS | PCRE2_NO_START_OPTIMIZE;
    re->code = pcre.pcre2_compile_8((PCRE2_SPTR)pat, plen, options, &errcode, &erroff, NULL);
    lua_pop(L, 1);
    if (re->code) break;
    if (!callouts && (errcode == PCRE2_ERROR_LOOKBEHIND_NOT_FIXED_LENGTH ||
                      errcode == PCRE2_ERROR_LOOKBEHIND_TOO_LONG ||
                      errcode == PCRE2_ERROR_LOOKBEHIND_TOO_COMPLICATED))
      continue;
    {
      PCRE2_UCHAR msg[256];
      pcre.pcre2_get_error_message_8(errcode, msg, sizeof msg);
      lua_pushstring(L, (const char *)msg);
      return -1;
    }
  }
  /* the sub-patterns of the lookbehinds made callouts */
  if (t.nlb > 0) {
    lua_createtable(L, t.nlb, 0);
    for (k = 0; k < t.nlb; k++) {
      if (compile(L, src + t.lb[k].start, t.lb[k].end - t.lb[k].start, unsupported, level + 1) < 0)
        return -1;
      re->sub[k] = (regex *)lua_touserdata(L, -1);
      re->negate[k] = (char)t.lb[k].negate;
      lua_rawseti(L, -2, k + 1);
    }
    re->nsub = t.nlb;
    lua_setiuservalue(L, -2, 1);
  }
  if (pcre.pcre2_jit_compile_8(re->code, PCRE2_JIT_COMPLETE) != 0) {
    /* no JIT here (or not for this pattern): the interpreter matches the same */
  }
  re->md = pcre.pcre2_match_data_create_from_pattern_8(re->code, NULL);
  re->mctx = pcre.pcre2_match_context_create_8(NULL);
  if (!re->md || !re->mctx) {
    lua_pushliteral(L, "out of memory");
    return -1;
  }
  pcre.pcre2_set_match_limit_8(re->mctx, level > 0 ? LOOKBEHIND_MATCH_LIMIT : MATCH_LIMIT);
  pcre.pcre2_set_depth_limit_8(re->mctx, DEPTH_LIMIT);
  pcre.pcre2_set_heap_limit_8(re->mctx, HEAP_LIMIT_KIB);
  if (re->nsub > 0) pcre.pcre2_set_callout_8(re->mctx, lookbehind, re);
  return 0;
}

/* core.regex(pattern) -> match | nil, message, kind ("schema": not an
 * ECMA-262 pattern; "unsupported": libpcre2-8 is missing, or a corner the
 * translation does not cover) */
static int l_regex(lua_State *L) {
  size_t n;
  const char *src = luaL_checklstring(L, 1, &n);
  char why[256];
  int unsupported = 0;
  if (claude_dynlib_load(&lib, open_once, why, sizeof why) != 0) {
    luaL_pushfail(L);
    lua_pushfstring(L, "libpcre2-8 could not be loaded (patterns cannot be checked): %s", why);
    lua_pushliteral(L, "unsupported");
    return 3;
  }
  if (compile(L, src, n, &unsupported, 0) < 0) {
    luaL_pushfail(L);
    lua_pushvalue(L, -2);
    lua_pushstring(L, unsupported ? "unsupported" : "schema");
    return 3;
  }
  lua_pushcclosure(L, l_match, 1);
  return 1;
}

void claude_open_regex(lua_State *L) {
  static const luaL_Reg meta[] = {{"__gc", regex_gc}, {NULL, NULL}};
  luaL_newmetatable(L, REGEX_MT);
  luaL_setfuncs(L, meta, 0);
  lua_pop(L, 1);
  lua_pushcfunction(L, l_regex);
  lua_setfield(L, -2, "regex");
}
