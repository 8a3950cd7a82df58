/*
 * schema/idn.h -- core.idna_lookup: IDNA2008 checks of a host name on
 * libidn2, for JSON Schema's `hostname`, `idn-hostname` and `idn-email`
 * formats (private).
 */
#ifndef CLAUDE_SCHEMA_IDN_H
#define CLAUDE_SCHEMA_IDN_H

#include "context.h"

void claude_open_idn(lua_State *L);

#endif
