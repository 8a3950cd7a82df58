/*
 * schema/regex_translate.h -- an ECMA-262 pattern spelled in PCRE2's syntax
 * (schema/regex_translate.c), for core.regex (schema/regex.c) (private).
 */
#ifndef CLAUDE_SCHEMA_REGEX_TRANSLATE_H
#define CLAUDE_SCHEMA_REGEX_TRANSLATE_H

#include <stddef.h>

#include "context.h"

#define CLAUDE_REGEX_LOOKBEHIND_MAX 200 /* callout numbers are 1..255 */

/* A lookbehind made a callout: its body's bytes in the source. */
typedef struct claude_regex_lookbehind {
  size_t start, end;
  int negate;
} claude_regex_lookbehind;

typedef struct claude_regex_translation {
  const char *err; /* a syntax error, or a construct not translated; NULL */
  int unsupported; /* err is a construct the translation does not cover, not bad syntax */
  int nlb;         /* the lookbehinds made callouts (callout k + 1 is lb[k]) */
  claude_regex_lookbehind lb[CLAUDE_REGEX_LOOKBEHIND_MAX];
} claude_regex_translation;

/* Translates src[0, n) and pushes the PCRE2 pattern: 0; or -1, nothing pushed,
 * out->err says why. With `callouts`, every lookbehind becomes a callout
 * (out->lb), for a pattern whose lookbehinds PCRE2 refused. */
int claude_regex_translate(lua_State *L, const char *src, size_t n, int callouts,
                           claude_regex_translation *out);

#endif
