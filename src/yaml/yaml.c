/*
 * yaml.c -- core.yaml_decode(text, max_depth, max_nodes) -> value | nil,
 * message[, "unsupported"]: the one document of a YAML stream as the values
 * claude.json's decoder gives, so that YAML and JSON documents read alike.
 *
 * JSON-compatible YAML: mappings (keys are strings, the key's text as
 * written; a key given twice is refused), sequences (an empty one marked as a
 * JSON array), scalars resolved by YAML 1.2's core schema when plain (null,
 * booleans, integers in decimal, 0o and 0x, floats with .inf and .nan; any
 * other plain scalar, and every quoted one, is a string), the core tags
 * (!!str, !!int, !!float, !!bool, !!null, !!map, !!seq), anchors and aliases
 * (an alias is the anchored value itself, shared, not copied) and YAML 1.1's
 * merge key `<<`. Other tags, complex keys and a second document are refused.
 *
 * Bounds: nesting (max_depth), and the nodes of the document with every alias
 * counted as the nodes it stands for (max_nodes), so that a billion laughs
 * (aliases of aliases, each doubling what a reader of the value walks) is
 * refused at the first alias past the bound; an alias inside the node it
 * names has no value yet and is refused too. The parse is libyaml's event
 * parser (no recursion on the C stack); the values are built on the Lua
 * stack. libyaml is loaded by soname on the first call (dynlib.h).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <yaml.h>

#include <lauxlib.h>
#include <lua.h>

#include "dynlib.h"
#include "json/json.h"
#include "yaml/yaml.h"

#ifndef CLAUDE_YAML_SONAME
#define CLAUDE_YAML_SONAME "libyaml-0.so.2"
#endif

#define DECODER_MT "claude.yaml.decoder"
#define TAG_PREFIX "tag:yaml.org,2002:"

typedef struct yaml_api {
  int (*parser_initialize)(yaml_parser_t *);
  void (*parser_delete)(yaml_parser_t *);
  void (*parser_set_input_string)(yaml_parser_t *, const unsigned char *, size_t);
  int (*parser_parse)(yaml_parser_t *, yaml_event_t *);
  void (*event_delete)(yaml_event_t *);
} yaml_api;

static yaml_api yaml;
static const char *const names[] = {"yaml_parser_initialize", "yaml_parser_delete",
                                    "yaml_parser_set_input_string", "yaml_parser_parse",
                                    "yaml_event_delete"};
static claude_dynlib lib = CLAUDE_DYNLIB_INIT(CLAUDE_YAML_SONAME, names, yaml);

static void open_once(void) {
  claude_dynlib_open(&lib);
}

/* An open mapping or sequence. Its Lua values sit in FRAME_SLOTS stack slots:
 * the container, the pending key, the anchor's name, the merge sources. */
typedef struct frame {
  int is_map;
  int key_pending; /* a mapping's key is in its slot, its value to come */
  int merging;     /* ... and that key is the merge key `<<` */
  lua_Integer n;   /* a sequence's items so far */
  lua_Integer start; /* the document's node count before this node */
  yaml_mark_t key_mark; /* where the pending key is */
} frame;

enum { SLOT_CONTAINER, SLOT_KEY, SLOT_ANCHOR, SLOT_MERGES, FRAME_SLOTS };
/* the fixed slots below the frames' */
enum { ARG_TEXT = 1, ARG_DEPTH, ARG_NODES, S_DECODER, S_FRAMES, S_ANCHORS, S_SIZES, S_ROOT,
       S_FIRST_FRAME };

/* The parser and its current event: a userdata, so that an error raised
 * while building (out of memory) still frees them (__gc). */
typedef struct decoder {
  yaml_parser_t parser;
  yaml_event_t event;
  int parser_live, event_live;
  frame *frames;
  int depth, max_depth;
  lua_Integer nodes, max_nodes;
  char err[256];
} decoder;

static void release(decoder *d) {
  if (d->event_live) yaml.event_delete(&d->event);
  if (d->parser_live) yaml.parser_delete(&d->parser);
  d->event_live = d->parser_live = 0;
}

static int decoder_gc(lua_State *L) {
  release((decoder *)luaL_checkudata(L, 1, DECODER_MT));
  return 0;
}

/* Sets d->err ("line L, column C: ...", of `mark`) and returns 0. */
static int fail_at(decoder *d, yaml_mark_t mark, const char *fmt, const char *arg) {
  int n = snprintf(d->err, sizeof d->err, "line %lu, column %lu: ",
                   (unsigned long)mark.line + 1, (unsigned long)mark.column + 1);
  if (n > 0 && (size_t)n < sizeof d->err) snprintf(d->err + n, sizeof d->err - (size_t)n, fmt, arg);
  return 0;
}

/* ... at the current event */
static int fail(decoder *d, const char *fmt, const char *arg) {
  return fail_at(d, d->event.start_mark, fmt, arg);
}

static int slot(int depth, int which) {
  return S_FIRST_FRAME + (depth - 1) * FRAME_SLOTS + which;
}

static int count_nodes(decoder *d, lua_Integer n) {
  if (n > d->max_nodes - d->nodes) {
    char bound[32];
    snprintf(bound, sizeof bound, "%lld", (long long)d->max_nodes);
    return fail(d, "more than %s nodes, aliases counted as the nodes they stand for", bound);
  }
  d->nodes += n;
  return 1;
}

static int is_one_of(const char *s, const char *const *words) {
  for (; *words != NULL; words++)
    if (strcmp(s, *words) == 0) return 1;
  return 0;
}

static const char *const NULLS[] = {"", "~", "null", "Null", "NULL", NULL};
static const char *const TRUES[] = {"true", "True", "TRUE", NULL};
static const char *const FALSES[] = {"false", "False", "FALSE", NULL};

static int all_in(const char *s, const char *set) {
  if (*s == '\0') return 0;
  return s[strspn(s, set)] == '\0';
}

/* [-+]?( \.[0-9]+ | [0-9]+(\.[0-9]*)? )([eE][-+]?[0-9]+)? -- the core schema's
 * float, which also matches its decimal integers */
static int is_decimal(const char *s) {
  const char *p = s;
  size_t digits;
  if (*p == '-' || *p == '+') p++;
  digits = strspn(p, "0123456789");
  p += digits;
  if (*p == '.') {
    size_t frac = strspn(p + 1, "0123456789");
    if (digits == 0 && frac == 0) return 0;
    p += 1 + frac;
  } else if (digits == 0) {
    return 0;
  }
  if (*p == 'e' || *p == 'E') {
    p++;
    if (*p == '-' || *p == '+') p++;
    if (!all_in(p, "0123456789")) return 0;
    return 1;
  }
  return *p == '\0';
}

/* 0o and 0x integers; one too large for an integer is a float, as decimal ones are */
static int push_radix(lua_State *L, const char *digits, int radix) {
  lua_Unsigned v = 0;
  double f = 0;
  int overflow = 0;
  for (; *digits; digits++) {
    int c = *digits, x = c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
    if (v > (LUA_MAXINTEGER - (lua_Unsigned)x) / (lua_Unsigned)radix) overflow = 1;
    if (!overflow) v = v * (lua_Unsigned)radix + (lua_Unsigned)x;
    f = f * radix + x;
  }
  if (overflow) lua_pushnumber(L, (lua_Number)f);
  else lua_pushinteger(L, (lua_Integer)v);
  return 1;
}

/* Pushes the number of s (a core-schema int when `integer`, else int or float);
 * 0 when s is none. */
static int push_number(lua_State *L, const char *s, int integer) {
  if (s[0] == '0' && s[1] == 'o' && all_in(s + 2, "01234567")) return push_radix(L, s + 2, 8);
  if (s[0] == '0' && s[1] == 'x' && all_in(s + 2, "0123456789abcdefABCDEF"))
    return push_radix(L, s + 2, 16);
  if (integer) {
    const char *p = s + (*s == '-' || *s == '+');
    if (!all_in(p, "0123456789")) return 0;
  } else {
    const char *p = s + (*s == '-' || *s == '+');
    if (strcmp(p, ".inf") == 0 || strcmp(p, ".Inf") == 0 || strcmp(p, ".INF") == 0) {
      lua_pushnumber(L, *s == '-' ? -HUGE_VAL : HUGE_VAL);
      return 1;
    }
    if (p == s && (strcmp(s, ".nan") == 0 || strcmp(s, ".NaN") == 0 || strcmp(s, ".NAN") == 0)) {
      lua_pushnumber(L, (lua_Number)NAN);
      return 1;
    }
    if (!is_decimal(s)) return 0;
  }
  return lua_stringtonumber(L, s) != 0;
}

/* Pushes the value of the scalar event, resolved by its tag or, plain and
 * untagged, by the core schema. */
static int push_scalar(lua_State *L, decoder *d) {
  const yaml_event_t *ev = &d->event;
  const char *s = (const char *)ev->data.scalar.value;
  size_t len = ev->data.scalar.length;
  const char *tag = (const char *)ev->data.scalar.tag;
  int has_nul = memchr(s, '\0', len) != NULL;
  if (tag == NULL && ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) tag = "!";
  if (tag == NULL) { /* plain: the core schema */
    if (is_one_of(s, NULLS)) lua_pushlightuserdata(L, NULL);
    else if (is_one_of(s, TRUES)) lua_pushboolean(L, 1);
    else if (is_one_of(s, FALSES)) lua_pushboolean(L, 0);
    else if (has_nul || !push_number(L, s, 0)) lua_pushlstring(L, s, len);
    return 1;
  }
  if (strcmp(tag, "!") == 0 || strcmp(tag, TAG_PREFIX "str") == 0) {
    lua_pushlstring(L, s, len);
    return 1;
  }
  if (strncmp(tag, TAG_PREFIX, sizeof TAG_PREFIX - 1) == 0 && !has_nul) {
    const char *type = tag + sizeof TAG_PREFIX - 1;
    if (strcmp(type, "null") == 0 && is_one_of(s, NULLS)) {
      lua_pushlightuserdata(L, NULL);
      return 1;
    }
    if (strcmp(type, "bool") == 0 && (is_one_of(s, TRUES) || is_one_of(s, FALSES))) {
      lua_pushboolean(L, is_one_of(s, TRUES));
      return 1;
    }
    if (strcmp(type, "int") == 0 && push_number(L, s, 1)) return 1;
    if (strcmp(type, "float") == 0 && push_number(L, s, 0)) {
      lua_pushnumber(L, lua_tonumber(L, -1)); /* !!float 1 is 1.0 */
      lua_remove(L, -2);
      return 1;
    }
    if (strcmp(type, "null") == 0 || strcmp(type, "bool") == 0 || strcmp(type, "int") == 0 ||
        strcmp(type, "float") == 0)
      return fail(d, "this scalar is no %s", type);
  }
  return fail(d, "tag %s is not read (the core schema's tags are)", tag);
}

/* Is a collection's tag one that is read: none, "!" or the core's of its kind? */
static int collection_tag_ok(decoder *d, const char *tag, const char *kind) {
  char want[32];
  if (tag == NULL || strcmp(tag, "!") == 0) return 1;
  snprintf(want, sizeof want, TAG_PREFIX "%s", kind);
  if (strcmp(tag, want) == 0) return 1;
  return fail(d, "tag %s is not read here", tag);
}

static int is_map_value(lua_State *L, int idx) {
  int map;
  if (lua_type(L, idx) != LUA_TTABLE) return 0;
  if (lua_rawgeti(L, idx, 1) != LUA_TNIL) {
    lua_pop(L, 1);
    return 0;
  }
  lua_pop(L, 1);
  /* an empty sequence carries the array mark */
  if (!lua_getmetatable(L, idx)) return 1;
  luaL_getmetatable(L, CLAUDE_JSON_ARRAY_MT);
  map = !lua_rawequal(L, -1, -2);
  lua_pop(L, 2);
  return map;
}

/* The merge key's value (on top, popped) joins the frame's merge sources: a
 * mapping, or a sequence of mappings (the earlier ones win). */
static int add_merge(lua_State *L, decoder *d, int depth) {
  int merges = slot(depth, SLOT_MERGES), v = lua_gettop(L);
  lua_Integer n;
  if (lua_isnil(L, merges)) {
    lua_newtable(L);
    lua_replace(L, merges);
  }
  n = (lua_Integer)lua_rawlen(L, merges);
  if (is_map_value(L, v)) {
    lua_rawseti(L, merges, n + 1);
    return 1;
  }
  if (lua_type(L, v) == LUA_TTABLE) {
    lua_Integer i, len = (lua_Integer)lua_rawlen(L, v);
    for (i = 1; i <= len; i++) {
      lua_rawgeti(L, v, i);
      if (!is_map_value(L, -1)) break;
      lua_rawseti(L, merges, n + i);
    }
    if (i > len) {
      lua_pop(L, 1);
      return 1;
    }
  }
  return fail(d, "%s", "the merge key << takes a mapping or a sequence of mappings");
}

/* The value on top (popped) goes where the open node wants it: the root, a
 * sequence's next item or the value of a mapping's pending key. */
static int add_value(lua_State *L, decoder *d) {
  frame *f;
  int container, key;
  if (d->depth == 0) {
    lua_replace(L, S_ROOT);
    return 1;
  }
  f = &d->frames[d->depth - 1];
  container = slot(d->depth, SLOT_CONTAINER);
  if (!f->is_map) {
    lua_rawseti(L, container, ++f->n);
    return 1;
  }
  f->key_pending = 0;
  if (f->merging) {
    f->merging = 0;
    return add_merge(L, d, d->depth);
  }
  key = slot(d->depth, SLOT_KEY);
  lua_pushvalue(L, key);
  if (lua_rawget(L, container) != LUA_TNIL)
    return fail_at(d, f->key_mark, "the key '%s' is given twice", lua_tostring(L, key));
  lua_pop(L, 1);
  lua_pushvalue(L, key);
  lua_insert(L, -2);
  lua_rawset(L, container);
  return 1;
}

/* The anchor of the event that started a node (NULL: none) names the value on
 * top, which stands for the nodes counted since `start`. */
static void name_value(lua_State *L, decoder *d, int anchor_idx, lua_Integer start) {
  lua_pushvalue(L, anchor_idx);
  lua_pushvalue(L, -2);
  lua_rawset(L, S_ANCHORS);
  lua_pushvalue(L, anchor_idx);
  lua_pushinteger(L, d->nodes - start);
  lua_rawset(L, S_SIZES);
}

static int on_scalar(lua_State *L, decoder *d) {
  frame *f = d->depth > 0 ? &d->frames[d->depth - 1] : NULL;
  lua_Integer start = d->nodes;
  if (!count_nodes(d, 1)) return 0;
  if (f != NULL && f->is_map && !f->key_pending) { /* a key: its text */
    const yaml_event_t *ev = &d->event;
    lua_pushlstring(L, (const char *)ev->data.scalar.value, ev->data.scalar.length);
    lua_replace(L, slot(d->depth, SLOT_KEY));
    f->key_pending = 1;
    f->key_mark = ev->start_mark;
    f->merging = ev->data.scalar.tag == NULL && ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
                 strcmp((const char *)ev->data.scalar.value, "<<") == 0;
    return 1;
  }
  if (!push_scalar(L, d)) return 0;
  if (d->event.data.scalar.anchor != NULL) {
    lua_pushstring(L, (const char *)d->event.data.scalar.anchor);
    lua_insert(L, -2);
    name_value(L, d, lua_gettop(L) - 1, start);
    lua_remove(L, -2);
  }
  return add_value(L, d);
}

static int on_alias(lua_State *L, decoder *d) {
  frame *f = d->depth > 0 ? &d->frames[d->depth - 1] : NULL;
  const char *anchor = (const char *)d->event.data.alias.anchor;
  lua_pushstring(L, anchor);
  if (lua_rawget(L, S_SIZES) == LUA_TNIL)
    return fail(d, "the alias *%s names no complete node (none before it, or one it is inside)",
                anchor);
  if (!count_nodes(d, lua_tointeger(L, -1))) return 0;
  lua_pop(L, 1);
  lua_pushstring(L, anchor);
  lua_rawget(L, S_ANCHORS);
  if (f != NULL && f->is_map && !f->key_pending) {
    if (lua_type(L, -1) != LUA_TSTRING && lua_type(L, -1) != LUA_TNUMBER)
      return fail(d, "the alias *%s is a key but names no string or number", anchor);
    lua_pushstring(L, lua_tostring(L, -1)); /* a number key: its text */
    lua_replace(L, slot(d->depth, SLOT_KEY));
    lua_pop(L, 1);
    f->key_pending = 1;
    f->key_mark = d->event.start_mark;
    f->merging = 0;
    return 1;
  }
  return add_value(L, d);
}

static int on_start(lua_State *L, decoder *d, int is_map) {
  frame *f = d->depth > 0 ? &d->frames[d->depth - 1] : NULL;
  const yaml_event_t *ev = &d->event;
  const char *anchor = (const char *)(is_map ? ev->data.mapping_start.anchor
                                             : ev->data.sequence_start.anchor);
  const char *tag = (const char *)(is_map ? ev->data.mapping_start.tag
                                          : ev->data.sequence_start.tag);
  lua_Integer start = d->nodes;
  if (f != NULL && f->is_map && !f->key_pending)
    return fail(d, "%s", "a key must be a scalar (this one is a mapping or a sequence)");
  if (!collection_tag_ok(d, tag, is_map ? "map" : "seq")) return 0;
  if (d->depth >= d->max_depth) {
    char bound[32];
    snprintf(bound, sizeof bound, "%d", d->max_depth);
    return fail(d, "nested deeper than %s", bound);
  }
  if (!count_nodes(d, 1)) return 0;
  luaL_checkstack(L, FRAME_SLOTS + 8, "yaml: nesting");
  lua_newtable(L);
  lua_pushnil(L);
  if (anchor != NULL) lua_pushstring(L, anchor);
  else lua_pushnil(L);
  lua_pushnil(L);
  f = &d->frames[d->depth++];
  memset(f, 0, sizeof *f);
  f->is_map = is_map;
  f->start = start;
  return 1;
}

static int on_end(lua_State *L, decoder *d) {
  frame *f = &d->frames[d->depth - 1];
  int container = slot(d->depth, SLOT_CONTAINER), merges = slot(d->depth, SLOT_MERGES);
  int anchor = slot(d->depth, SLOT_ANCHOR);
  if (f->is_map && !lua_isnil(L, merges)) { /* the merged keys the mapping has not */
    lua_Integer i, n = (lua_Integer)lua_rawlen(L, merges);
    for (i = 1; i <= n; i++) {
      lua_rawgeti(L, merges, i);
      lua_pushnil(L);
      while (lua_next(L, -2)) {
        lua_pushvalue(L, -2);
        if (lua_rawget(L, container) == LUA_TNIL) {
          lua_pop(L, 1);
          lua_pushvalue(L, -2);
          lua_insert(L, -2);
          lua_rawset(L, container);
        } else {
          lua_pop(L, 2);
        }
      }
      lua_pop(L, 1);
    }
  }
  lua_pushvalue(L, container);
  if (!f->is_map && f->n == 0) luaL_setmetatable(L, CLAUDE_JSON_ARRAY_MT);
  if (!lua_isnil(L, anchor)) name_value(L, d, anchor, f->start);
  lua_replace(L, container);
  lua_settop(L, container);
  d->depth--;
  return add_value(L, d);
}

static int parse_error(decoder *d) {
  const yaml_parser_t *p = &d->parser;
  if (p->error == YAML_MEMORY_ERROR) {
    snprintf(d->err, sizeof d->err, "out of memory");
  } else if (p->context != NULL) {
    snprintf(d->err, sizeof d->err, "line %lu, column %lu: %s (%s)",
             (unsigned long)p->problem_mark.line + 1, (unsigned long)p->problem_mark.column + 1,
             p->problem != NULL ? p->problem : "error", p->context);
  } else {
    snprintf(d->err, sizeof d->err, "line %lu, column %lu: %s",
             (unsigned long)p->problem_mark.line + 1, (unsigned long)p->problem_mark.column + 1,
             p->problem != NULL ? p->problem : "error");
  }
  return 0;
}

/* Runs the parse; 1 with the value in S_ROOT, or 0 with d->err set. */
static int run(lua_State *L, decoder *d) {
  int documents = 0;
  for (;;) {
    int ok = 1;
    yaml_event_type_t type;
    if (!yaml.parser_parse(&d->parser, &d->event)) return parse_error(d);
    d->event_live = 1;
    type = d->event.type;
    switch (type) {
      case YAML_DOCUMENT_START_EVENT:
        if (documents++ > 0) ok = fail(d, "%s", "a second document (one is read)");
        break;
      case YAML_SCALAR_EVENT: ok = on_scalar(L, d); break;
      case YAML_ALIAS_EVENT: ok = on_alias(L, d); break;
      case YAML_SEQUENCE_START_EVENT: ok = on_start(L, d, 0); break;
      case YAML_MAPPING_START_EVENT: ok = on_start(L, d, 1); break;
      case YAML_SEQUENCE_END_EVENT:
      case YAML_MAPPING_END_EVENT: ok = on_end(L, d); break;
      default: break;
    }
    if (ok && type == YAML_STREAM_END_EVENT && documents == 0)
      ok = fail(d, "%s", "no document");
    yaml.event_delete(&d->event);
    d->event_live = 0;
    if (!ok) return 0;
    if (type == YAML_STREAM_END_EVENT) return 1;
  }
}

static int l_yaml_decode(lua_State *L) {
  size_t len;
  const char *text = luaL_checklstring(L, ARG_TEXT, &len);
  lua_Integer max_depth = luaL_checkinteger(L, ARG_DEPTH);
  lua_Integer max_nodes = luaL_checkinteger(L, ARG_NODES);
  decoder *d;
  char why[256];
  luaL_argcheck(L, max_depth > 0 && max_depth <= 100000, ARG_DEPTH, "1..100000 expected");
  luaL_argcheck(L, max_nodes > 0, ARG_NODES, "a positive integer expected");
  lua_settop(L, ARG_NODES);
  if (claude_dynlib_load(&lib, open_once, why, sizeof why) != 0) {
    luaL_pushfail(L);
    lua_pushfstring(L, "libyaml could not be loaded (YAML is not read): %s", why);
    lua_pushliteral(L, "unsupported");
    return 3;
  }
  d = (decoder *)lua_newuserdatauv(L, sizeof *d, 0);
  memset(d, 0, sizeof *d);
  luaL_setmetatable(L, DECODER_MT);
  d->frames = (frame *)lua_newuserdatauv(L, sizeof(frame) * (size_t)max_depth, 0);
  d->max_depth = (int)max_depth;
  d->max_nodes = max_nodes;
  lua_newtable(L); /* S_ANCHORS: name -> value */
  lua_newtable(L); /* S_SIZES: name -> the nodes it stands for */
  lua_pushnil(L);  /* S_ROOT */
  if (!yaml.parser_initialize(&d->parser)) return luaL_error(L, "yaml: out of memory");
  d->parser_live = 1;
  yaml.parser_set_input_string(&d->parser, (const unsigned char *)text, len);
  if (!run(L, d)) {
    release(d);
    luaL_pushfail(L);
    lua_pushfstring(L, "yaml: %s", d->err);
    return 2;
  }
  release(d);
  lua_pushvalue(L, S_ROOT);
  return 1;
}

void claude_open_yaml(lua_State *L) {
  if (luaL_newmetatable(L, DECODER_MT)) {
    lua_pushcfunction(L, decoder_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_pop(L, 1);
  lua_pushcfunction(L, l_yaml_decode);
  lua_setfield(L, -2, "yaml_decode");
}
