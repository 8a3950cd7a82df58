/*
 * schema/regex.h -- core.regex: ECMA-262 patterns, as JSON Schema uses them,
 * matched by PCRE2 (private).
 */
#ifndef CLAUDE_SCHEMA_REGEX_H
#define CLAUDE_SCHEMA_REGEX_H

#include "context.h"

void claude_open_regex(lua_State *L);

#endif
