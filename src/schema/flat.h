/*
 * schema/flat.h -- core.flat_validator: the common tool input (an object of
 * string, number and boolean properties) checked in one C call (private).
 */
#ifndef CLAUDE_SCHEMA_FLAT_H
#define CLAUDE_SCHEMA_FLAT_H

#include "context.h"

void claude_open_flat(lua_State *L);

#endif
