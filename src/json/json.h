/*
 * json.h -- JSON for claude.core: the encoder and the module's entry points
 * (json.c) and the decoder (json_decode.c), which builds Lua values directly.
 * Private to claude.core.
 */
#ifndef CLAUDE_JSON_H
#define CLAUDE_JSON_H

#include <stddef.h>

#include <lua.h>
#include <lauxlib.h>

#define CLAUDE_JSON_ARRAY_MT "claude.json.array"
#define CLAUDE_JSON_OBJECT_MT "claude.json.object"
/* The decoder's nesting limit, counted from the outermost value (a message),
 * far above what a model sends; the encoder takes twice as much, so that a
 * decoded value still encodes inside envelopes. Neither uses the C stack
 * per level. */
#define CLAUDE_JSON_MAX_DEPTH 20000
/* Adds the json functions to the module table on top of the stack. */
void claude_open_json(lua_State *L);
/* Pushes the value and returns 1, or pushes nil and a message and returns 0;
 * raises only for memory errors. */
int claude_json_decode_push(lua_State *L, const char *s, size_t len);
/* Decodes the one value at s (blanks before it skipped), as part of a larger
 * text in which it is nested `outer` containers deep (the depth limit counts
 * from that text's outermost value): pushes it, sets *after to the byte after
 * it and returns 1; or pushes nothing and returns 0 (the whole text, decoded,
 * says why). Raises only for memory errors. */
int claude_json_decode_at(lua_State *L, const char *s, const char *end, int outer,
                          const char **after);
/* core.json_peek_ids(line) -> request_id, id, type (json_decode.c) */
int claude_json_peek_ids(lua_State *L);
/* Appends s (n bytes) as a JSON string (the encoder's escaping) to the malloc'ed *buf; 1, or
 * 0 when out of memory. */
int claude_json_append_string(char **buf, size_t *len, size_t *cap, const char *s, size_t n);
int claude_json_encode_buffer(lua_State *L, int idx, char **out, size_t *len);
int claude_json_encode_append(lua_State *L, int idx, char **buf, size_t *len, size_t *cap);

/* Raw strings and JSON values joined (raw1 v1 raw2 v2 ... rawN): the pieces of a message
 * written around its values, by a stream's write_pieces and by core.json_pieces. */
typedef struct claude_pieces {
  int first;                 /* the first piece's stack slot, when `at` is NULL */
  const int *at;             /* else each piece's index (stack slots or upvalues) */
  int n;                     /* how many pieces: the raw ones at the even positions */
  const char *const *raws;   /* raw piece k (position 2k) as bytes when raws[k] is not NULL */
  const size_t *raw_lens;    /* (a string the caller keeps alive: no look at the stack) */
  /* a light userdata piece: 1 with bytes a reader held back (a JSON string's content), -1
   * when no longer held, 0 when not one; NULL: none is */
  int (*held)(void *ud, lua_State *L, int idx, const char **s, size_t *len);
  void *held_ud;
} claude_pieces;
/* Appends the pieces to *buf (*len bytes used of *cap), integers as their digits and other
 * values JSON-encoded in place. Returns 1; or 0 with "piece K: ..." pushed and *len as it
 * was. Raises (with *len as it was) for a raw piece that is no string, or out of memory. */
int claude_json_pieces_append(lua_State *L, const claude_pieces *p, char **buf, size_t *len,
                              size_t *cap);

#endif
