/*
 * yaml.h -- core.yaml_decode: one YAML document as the Lua values claude.json
 * gives (yaml.c). Private to claude.core.
 */
#ifndef CLAUDE_YAML_H
#define CLAUDE_YAML_H

#include <lua.h>

/* Adds yaml_decode to the module table on top of the stack. */
void claude_open_yaml(lua_State *L);

#endif
