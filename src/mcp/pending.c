/*
 * pending.c -- core.pending(): the outbound requests of a JSON-RPC peer that
 * wait for their answer, their callbacks and methods by id (claude.rpc), kept
 * where the answer is read: a stream's envelope reader bound to the set
 * (stream:envelope("response", set)) finds the answer's request here and
 * calls its callback with the result, with no Lua in between.
 * (Over 600 lines: the ring, the wake-up of a waiting task and the deadlines
 * are one set's state: each reads and changes the others' slots.)
 *
 * The same set as lua/claude/pending.lua (which serves ids that are not
 * integers), the same ring: a request numbered n lives at slot n % size, a
 * request still waiting when the ring comes round to its slot moves to a hash
 * of its own, and the ring doubles when that hash holds half as many. The
 * ids are C integers; the callbacks and methods live in the uservalue's
 * tables (1: the ring's callbacks, 2: its methods, 3 and 4: the hash's).
 *
 *   set:add(id, n, callback, method[, wait[, timeout]])  set:take(id) -> callback, method
 *   set:get(id) -> callback, method    set:ids() -> {id...}    set:waiting() -> n
 *   set:close() (its timer closed; a request added later makes it anew)
 *
 * A request added with a `wait` is the running task's, about to wait in async.wait_call in its
 * coroutine (a task with no budget): its answer, read by the reader bound to the set, wakes
 * that coroutine from C with `true, result` (claude_pending_wake: claude_task_wake, with no
 * Lua between the line and the task). Taking the request from the set is the wake's claim;
 * the task's own state is async's wait's to change (src/task.c). A request that moved to the
 * hash is answered the usual way, its callback called.
 *
 * A request added with a timeout (seconds) has a deadline here, and the set one timer for
 * all of them, which costs nothing until it bites: armed for the earliest deadline when a
 * request's is earlier than the one it is armed for (rarely, since deadlines mostly come in
 * order), it finds the requests whose deadline passed, ends each one's wait as timed out
 * (claude_task_timed_out), and arms itself for the next. It keeps the loop alive only while
 * a request with a deadline waits.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/pending.h"
#include "task.h"

#define MT_PENDING "claude.core.Pending"
#define INITIAL_SIZE 64
enum { USED = 1, USED_USUAL = CLAUDE_PENDING_USUAL, USED_OBJECT = CLAUDE_PENDING_OBJECT };

enum { UV_CALLBACKS = 1, UV_METHODS, UV_OLD_CALLBACKS, UV_OLD_METHODS, UV_OLD_DUE, UV_COUNT };

/* The set's timer of deadlines: malloc'ed, closed with the set or with the context. */
typedef struct deadline_timer {
  claude_handle hdr;
  uv_timer_t handle;
  claude_pending *set; /* NULL once either is gone */
  uint64_t armed;      /* the deadline it is armed for (uv_hrtime), 0: not armed */
} deadline_timer;

struct claude_pending {
  lua_Integer *ids;     /* the ring: the id at each slot */
  unsigned char *used;  /* whether the slot holds one: USED, or USED_USUAL (a modern call's,
                         * whose usual complete answer the reader delivers marked), or
                         * USED_OBJECT (a legacy call's, whose object result is marked) */
  lua_State **cos;      /* the coroutine a slot's request wakes, or NULL (anchored by its task) */
  uint64_t *due;        /* a slot's deadline (uv_hrtime), 0: none */
  lua_Integer size;
  lua_Integer count;    /* requests waiting, in the ring and the hash */
  lua_Integer old_count;
  lua_Integer timed;     /* requests with a deadline, in the ring and the hash */
  lua_Integer old_timed; /* of them in the hash (UV_OLD_DUE: id -> deadline) */
  deadline_timer *timer; /* made with the first deadline */
  void *budgets;         /* the state's budgets, claude_task_wake's cache */
};

static claude_pending *check_set(lua_State *L, int idx) {
  return (claude_pending *)claude_check_object(L, idx, MT_PENDING);
}

/* The slot of number n (Lua's n % size: never negative). */
static lua_Integer slot_of(const claude_pending *p, lua_Integer n) {
  lua_Integer r = n % p->size;
  return r < 0 ? r + p->size : r;
}

/* Pushes uservalue `which` of the set at idx. */
static void push_uv(lua_State *L, int idx, int which) { lua_getiuservalue(L, idx, which); }

/* Frees the ring's arrays (the set's, or new ones that could not all be made). */
static void free_ring(lua_Integer *ids, unsigned char *used, lua_State **cos, uint64_t *due) {
  free(ids);
  free(used);
  free(cos);
  free(due);
}

static int alloc_ring(lua_State *L, claude_pending *p, lua_Integer size) {
  lua_Integer *ids = (lua_Integer *)calloc((size_t)size, sizeof *ids);
  unsigned char *used = (unsigned char *)calloc((size_t)size, 1);
  lua_State **cos = (lua_State **)calloc((size_t)size, sizeof *cos);
  uint64_t *due = (uint64_t *)calloc((size_t)size, sizeof *due);
  if (ids == NULL || used == NULL || cos == NULL || due == NULL) {
    free_ring(ids, used, cos, due);
    return luaL_error(L, "out of memory");
  }
  free_ring(p->ids, p->used, p->cos, p->due);
  p->ids = ids;
  p->used = used;
  p->cos = cos;
  p->due = due;
  p->size = size;
  return 0;
}

/* New ring tables for the set at idx, of p->size slots. */
static void new_ring_tables(lua_State *L, int idx, const claude_pending *p) {
  lua_createtable(L, (int)p->size, 0);
  lua_setiuservalue(L, idx, UV_CALLBACKS);
  lua_createtable(L, (int)p->size, 0);
  lua_setiuservalue(L, idx, UV_METHODS);
}

static void add(lua_State *L, int idx, claude_pending *p, lua_Integer id, lua_Integer n,
                int cb, int method, lua_State *co, uint64_t due, unsigned char used);

/* Doubles the ring and places every request again (their numbers are their ids: this set
 * serves integer ids only). */
static void grow(lua_State *L, int idx, claude_pending *p) {
  lua_Integer i, old_size = p->size, *old_ids = p->ids;
  unsigned char *old_used = p->used;
  lua_State **old_cos = p->cos;
  uint64_t *old_due = p->due;
  int top = lua_gettop(L), cbs, methods, ocbs, omethods, odue;
  push_uv(L, idx, UV_CALLBACKS);
  cbs = lua_gettop(L);
  push_uv(L, idx, UV_METHODS);
  methods = lua_gettop(L);
  push_uv(L, idx, UV_OLD_CALLBACKS);
  ocbs = lua_gettop(L);
  push_uv(L, idx, UV_OLD_METHODS);
  omethods = lua_gettop(L);
  push_uv(L, idx, UV_OLD_DUE);
  odue = lua_gettop(L);
  p->ids = NULL;
  p->used = NULL;
  p->cos = NULL;
  p->due = NULL;
  alloc_ring(L, p, old_size * 2);
  new_ring_tables(L, idx, p);
  lua_newtable(L);
  lua_setiuservalue(L, idx, UV_OLD_CALLBACKS);
  lua_newtable(L);
  lua_setiuservalue(L, idx, UV_OLD_METHODS);
  lua_newtable(L);
  lua_setiuservalue(L, idx, UV_OLD_DUE);
  p->count = p->old_count = p->timed = p->old_timed = 0; /* (counted again as they go in) */
  for (i = 0; i < old_size; i++) {
    if (!old_used[i]) continue;
    lua_rawgeti(L, cbs, i + 1);
    lua_rawgeti(L, methods, i + 1);
    add(L, idx, p, old_ids[i], old_ids[i], lua_gettop(L) - 1, lua_gettop(L), old_cos[i],
        old_due[i], old_used[i]);
    lua_pop(L, 2);
  }
  free_ring(old_ids, old_used, old_cos, old_due);
  lua_pushnil(L);
  while (lua_next(L, ocbs)) { /* id, callback */
    lua_Integer id = lua_tointeger(L, -2);
    uint64_t due;
    lua_pushvalue(L, -2);
    lua_rawget(L, omethods);
    lua_pushvalue(L, -3);
    lua_rawget(L, odue);
    due = (uint64_t)lua_tointeger(L, -1); /* nil: 0, none */
    lua_pop(L, 1);
    add(L, idx, p, id, id, lua_gettop(L) - 1, lua_gettop(L), NULL, due, USED);
    lua_pop(L, 2);
  }
  lua_settop(L, top);
}

static void arm(lua_State *L, int idx, claude_pending *p, uint64_t due);

/* One more request with a deadline (due); the loop waits for the timer while one waits. */
static void timed_in(lua_State *L, int idx, claude_pending *p, uint64_t due) {
  if (p->timed++ == 0 && p->timer != NULL) uv_ref((uv_handle_t *)&p->timer->handle);
  if (p->timer == NULL || p->timer->armed == 0 || due < p->timer->armed) arm(L, idx, p, due);
}

/* One request fewer with a deadline (answered, abandoned, or expired). */
static void timed_out(claude_pending *p) {
  if (--p->timed == 0 && p->timer != NULL) uv_unref((uv_handle_t *)&p->timer->handle);
}

/* Frees slot s of a request taken from the set (answered or abandoned): its deadline, if
 * any, no longer holds the loop; returns the coroutine it would have woken, or NULL. */
static lua_State *free_slot(claude_pending *p, lua_Integer s) {
  lua_State *co = p->cos[s];
  p->cos[s] = NULL;
  if (p->due[s] != 0) {
    p->due[s] = 0;
    timed_out(p);
  }
  p->used[s] = 0;
  p->count--;
  return co;
}

/* Adds request `id` (number n) with the callback and method at stack slots cb, method; co:
 * the coroutine its answer resumes, or NULL; due: its deadline, or 0; used: USED or
 * USED_USUAL or USED_OBJECT. */
static void add(lua_State *L, int idx, claude_pending *p, lua_Integer id, lua_Integer n,
                int cb, int method, lua_State *co, uint64_t due, unsigned char used) {
  lua_Integer s = slot_of(p, n);
  int top = lua_gettop(L);
  push_uv(L, idx, UV_CALLBACKS);
  push_uv(L, idx, UV_METHODS);
  if (p->used[s]) { /* a request one lap older still waits: to the hash with it */
    lua_Integer held = p->ids[s];
    push_uv(L, idx, UV_OLD_CALLBACKS);
    lua_rawgeti(L, top + 1, s + 1);
    lua_rawseti(L, -2, held);
    push_uv(L, idx, UV_OLD_METHODS);
    lua_rawgeti(L, top + 2, s + 1);
    lua_rawseti(L, -2, held);
    if (p->due[s] != 0) { /* its deadline goes with it (its coroutine and mark do not) */
      push_uv(L, idx, UV_OLD_DUE);
      lua_pushinteger(L, (lua_Integer)p->due[s]);
      lua_rawseti(L, -2, held);
      p->old_timed++;
    }
    p->old_count++;
  }
  p->ids[s] = id;
  p->used[s] = used;
  p->cos[s] = co;
  p->due[s] = due;
  lua_pushvalue(L, cb);
  lua_rawseti(L, top + 1, s + 1);
  lua_pushvalue(L, method);
  lua_rawseti(L, top + 2, s + 1);
  p->count++;
  lua_settop(L, top);
  if (due != 0) timed_in(L, idx, p, due);
  if (p->old_count > p->size / 2) grow(L, idx, p);
}

/* set:add(id, n, callback, method[, wait[, timeout]]) -> true: the deadline is the set's.
 * wait (how the request waits, one value): the callback is the running task (async.caller),
 * which its answer resumes in this coroutine: true, or "usual" (a modern tools/call's: its
 * usual complete answer resumes it marked), or "object" (a legacy one's: a result that is an
 * object is marked; claude_pending_usual); nil or false: the callback is called. */
/* luaL_checkinteger, with one look at the value when it is one (the error path only else) */
static lua_Integer check_integer(lua_State *L, int i) {
  int isnum;
  lua_Integer v = lua_tointegerx(L, i, &isnum);
  return isnum ? v : luaL_checkinteger(L, i);
}

static int pending_add(lua_State *L) {
  claude_pending *p = check_set(L, 1);
  lua_Integer id = check_integer(L, 2), n = check_integer(L, 3);
  lua_State *co = lua_toboolean(L, 6) && lua_isyieldable(L) ? L : NULL;
  uint64_t due = 0;
  unsigned char used;
  if (lua_type(L, 7) == LUA_TNUMBER) {
    double secs = lua_tonumber(L, 7);
    if (!(secs > 0)) secs = 0;   /* (NaN too) */
    if (secs > 1e9) secs = 1e9;  /* (31 years: no overflow) */
    due = uv_hrtime() + (uint64_t)(secs * 1e9) + 1; /* (never 0) */
  }
  used = co == NULL || lua_type(L, 6) != LUA_TSTRING ? USED
         : *lua_tostring(L, 6) == 'o' ? USED_OBJECT : USED_USUAL;
  lua_settop(L, 5);
  add(L, 1, p, id, n, 4, 5, co, due, used);
  lua_pushboolean(L, 1);
  return 1;
}

/* Finds request `id` (the value at idx_id) of the set at idx: pushes its callback and method
 * and returns 1, removing it when `take` (*co: the coroutine it wakes, or NULL); or pushes
 * nothing and returns 0. */
static int find(lua_State *L, int idx, claude_pending *p, int idx_id, int take, lua_State **co) {
  int isint;
  lua_Integer id = lua_tointegerx(L, idx_id, &isint);
  if (isint && lua_isinteger(L, idx_id)) {
    lua_Integer s = slot_of(p, id);
    if (p->used[s] && p->ids[s] == id) {
      int base = lua_gettop(L);
      push_uv(L, idx, UV_CALLBACKS);
      push_uv(L, idx, UV_METHODS);
      lua_rawgeti(L, base + 1, s + 1);
      lua_rawgeti(L, base + 2, s + 1); /* callbacks, methods, callback, method */
      if (take) { /* (the slot keeps no reference) */
        lua_State *wakes = free_slot(p, s);
        if (co != NULL) *co = wakes;
        lua_pushboolean(L, 0);
        lua_rawseti(L, base + 1, s + 1);
        lua_pushboolean(L, 0);
        lua_rawseti(L, base + 2, s + 1);
      }
      lua_rotate(L, base + 1, 2);
      lua_settop(L, base + 2);
      return 1;
    }
  }
  if (p->old_count == 0 || lua_isnil(L, idx_id)) return 0;
  push_uv(L, idx, UV_OLD_CALLBACKS);
  lua_pushvalue(L, idx_id);
  if (lua_rawget(L, -2) == LUA_TNIL) {
    lua_pop(L, 2);
    return 0;
  }
  push_uv(L, idx, UV_OLD_METHODS);
  lua_pushvalue(L, idx_id);
  lua_rawget(L, -2); /* old_cbs, callback, old_methods, method */
  if (take) {
    lua_pushvalue(L, idx_id);
    lua_pushnil(L);
    lua_rawset(L, -6);
    lua_pushvalue(L, idx_id);
    lua_pushnil(L);
    lua_rawset(L, -4);
    p->old_count--;
    p->count--;
    if (p->old_timed > 0) {
      push_uv(L, idx, UV_OLD_DUE);
      lua_pushvalue(L, idx_id);
      if (lua_rawget(L, -2) != LUA_TNIL) {
        lua_pushvalue(L, idx_id);
        lua_pushnil(L);
        lua_rawset(L, -4);
        p->old_timed--;
        timed_out(p);
      }
      lua_pop(L, 2);
    }
  }
  lua_remove(L, -2);
  lua_remove(L, -3);
  return 1;
}

int claude_pending_usual(lua_State *L, int idx, lua_Integer id) {
  claude_pending *p = (claude_pending *)lua_touserdata(L, idx);
  lua_Integer s = slot_of(p, id);
  return p->ids[s] == id && p->used[s] > USED ? p->used[s] : 0;
}

int claude_pending_take(lua_State *L, int idx, int idx_id, lua_State **co) {
  claude_pending *p = (claude_pending *)lua_touserdata(L, idx);
  *co = NULL;
  if (lua_isinteger(L, idx_id)) { /* find's way, its method left where it is (a string) */
    lua_Integer id = lua_tointeger(L, idx_id), s = slot_of(p, id);
    if (p->used[s] && p->ids[s] == id) {
      *co = free_slot(p, s);
      push_uv(L, idx, UV_CALLBACKS);
      lua_rawgeti(L, -1, s + 1);
      lua_pushboolean(L, 0); /* (the slot keeps no reference to the task) */
      lua_rawseti(L, -3, s + 1);
      lua_copy(L, -1, -2); /* (lua_remove's rotation, without it) */
      lua_pop(L, 1);
      return 1;
    }
  }
  if (!find(L, idx, p, idx_id, 1, co)) return 0;
  lua_pop(L, 1);
  return 1;
}

/* The registry key of the table of sets by their timer (weak values: a timer finds its set). */
static const char SETS_KEY = 't';

/* ---- deadlines ------------------------------------------------------------ */

static void timer_closed(uv_handle_t *h) {
  deadline_timer *t = (deadline_timer *)h->data;
  claude_handle_closed(t->hdr.ctx);
  free(t);
}

static void timer_teardown(claude_handle *h) {
  deadline_timer *t = (deadline_timer *)h;
  if (t->set != NULL) t->set->timer = NULL;
  t->set = NULL;
  uv_close((uv_handle_t *)&t->handle, timer_closed);
}

/* The set's timer goes (with the set). */
static void close_timer(claude_pending *p) {
  deadline_timer *t = p->timer;
  if (t == NULL) return;
  claude_object_unlink(&t->hdr);
  timer_teardown(&t->hdr);
}

/* Protected (claude_pcall), the timer's light userdata as argument: the requests whose
 * deadline passed end their waits as timed out, each in a protected call of its own, and the
 * timer is armed for the next deadline. */
static int expire_p(lua_State *L) {
  deadline_timer *t = (deadline_timer *)lua_touserdata(L, 1);
  claude_pending *p = t->set;
  uint64_t now = uv_hrtime(), next = 0;
  lua_Integer i;
  int set, first, last, k;
  if (p == NULL) return 0;
  lua_rawgetp(L, LUA_REGISTRYINDEX, &SETS_KEY);
  if (lua_rawgetp(L, -1, t) != LUA_TUSERDATA) return 0;
  set = lua_gettop(L);
  push_uv(L, set, UV_CALLBACKS);
  first = lua_gettop(L) + 1;
  for (i = 0; i < p->size; i++) /* expired first, all of them, then told */
    if (p->used[i] && p->due[i] != 0 && p->due[i] <= now) {
      p->due[i] = 0;
      timed_out(p);
      luaL_checkstack(L, 2, "expire");
      lua_rawgeti(L, first - 1, i + 1);
    }
  if (p->old_timed > 0) {
    int odue, ocbs;
    push_uv(L, set, UV_OLD_DUE);
    odue = lua_gettop(L);
    push_uv(L, set, UV_OLD_CALLBACKS);
    ocbs = lua_gettop(L);
    lua_pushnil(L);
    while (lua_next(L, odue)) { /* id, due */
      uint64_t due = (uint64_t)lua_tointeger(L, -1);
      lua_pop(L, 1);
      if (due <= now) {
        lua_pushvalue(L, -1);
        lua_pushnil(L);
        lua_rawset(L, odue); /* (clearing a field while traversing is allowed) */
        p->old_timed--;
        timed_out(p);
        luaL_checkstack(L, 3, "expire");
        lua_pushvalue(L, -1);
        lua_rawget(L, ocbs);
        lua_insert(L, odue); /* below the tables and the key */
        odue++;
        ocbs++;
      }
    }
    lua_pop(L, 2);
  }
  last = lua_gettop(L);
  for (k = first; k <= last; k++) claude_task_timed_out(t->hdr.ctx, L, k);
  /* the next deadline (the requests may have changed meanwhile) */
  if (t->set == NULL || p->timed == 0) return 0;
  for (i = 0; i < p->size; i++)
    if (p->used[i] && p->due[i] != 0 && (next == 0 || p->due[i] < next)) next = p->due[i];
  if (p->old_timed > 0) {
    push_uv(L, set, UV_OLD_DUE);
    lua_pushnil(L);
    while (lua_next(L, -2)) {
      uint64_t due = (uint64_t)lua_tointeger(L, -1);
      if (next == 0 || due < next) next = due;
      lua_pop(L, 1);
    }
  }
  if (next != 0) arm(L, set, p, next);
  return 0;
}

static void timer_fired(uv_timer_t *h) {
  deadline_timer *t = (deadline_timer *)h->data;
  claude_ctx *ctx = t->hdr.ctx;
  lua_State *L;
  t->armed = 0;
  if (ctx->closing || t->set == NULL) return;
  L = claude_cb_state(ctx);
  lua_pushcfunction(L, expire_p);
  lua_pushlightuserdata(L, t);
  claude_pcall(ctx, L, 1);
}

/* Arms the timer of the set at idx for deadline `due` (made the first time). */
static void arm(lua_State *L, int idx, claude_pending *p, uint64_t due) {
  deadline_timer *t = p->timer;
  uint64_t now;
  if (t == NULL) {
    claude_ctx *ctx = claude_ctx_get(L);
    t = (deadline_timer *)calloc(1, sizeof *t);
    if (t == NULL) luaL_error(L, "out of memory");
    uv_timer_init(ctx->loop, &t->handle);
    t->handle.data = t;
    t->set = p;
    claude_handle_opened(ctx);
    claude_object_link(ctx, &t->hdr, "timer", timer_teardown);
    p->timer = t;
    if (p->timed == 0) uv_unref((uv_handle_t *)&t->handle);
    idx = lua_absindex(L, idx);
    claude_registry_weak(L, &SETS_KEY, "v");
    lua_pushvalue(L, idx);
    lua_rawsetp(L, -2, t);
    lua_pop(L, 1);
  }
  now = uv_hrtime();
  t->armed = due;
  /* (rounded up: a timer that fires before the deadline only arms itself again) */
  uv_update_time(t->hdr.ctx->loop);
  uv_timer_start(&t->handle, timer_fired, due > now ? (due - now + 999999) / 1000000 : 0, 0);
  claude_wake(t->hdr.ctx);
}

int claude_pending_wake(lua_State *L, int set, lua_State *co, int task, int result,
                        int usual) {
  claude_pending *p = (claude_pending *)lua_touserdata(L, set);
  int n = usual ? 3 : 1;
  lua_pushvalue(L, result);
  if (usual) { /* (no error, checked: Peer:request_written's) */
    lua_pushnil(L);
    lua_pushboolean(L, 1);
  }
  if (claude_task_wake(L, &p->budgets, co, task, n)) return 1;
  lua_pop(L, n);
  return 0;
}

/* set:take(id) -> callback, method | nil */
static int pending_take(lua_State *L) {
  claude_pending *p = check_set(L, 1);
  luaL_checkany(L, 2);
  return find(L, 1, p, 2, 1, NULL) ? 2 : 0;
}

/* set:get(id) -> callback, method | nil */
static int pending_get(lua_State *L) {
  claude_pending *p = check_set(L, 1);
  luaL_checkany(L, 2);
  return find(L, 1, p, 2, 0, NULL) ? 2 : 0;
}

/* set:ids() -> the ids of the requests that wait */
static int pending_ids(lua_State *L) {
  claude_pending *p = check_set(L, 1);
  lua_Integer i, n = 0;
  lua_createtable(L, (int)p->count, 0);
  for (i = 0; i < p->size; i++)
    if (p->used[i]) {
      lua_pushinteger(L, p->ids[i]);
      lua_rawseti(L, -2, ++n);
    }
  push_uv(L, 1, UV_OLD_CALLBACKS);
  lua_pushnil(L);
  while (lua_next(L, -2)) {
    lua_pop(L, 1);
    lua_pushvalue(L, -1);
    lua_rawseti(L, -4, ++n);
  }
  lua_pop(L, 1);
  return 1;
}

/* set:close(): its timer of deadlines goes now, not when the set is collected (the peer
 * that held it failed or closed: nothing waits in it any more) */
static int pending_close(lua_State *L) {
  close_timer(check_set(L, 1));
  return 0;
}

/* set:waiting() -> the number of requests that wait */
static int pending_waiting(lua_State *L) {
  lua_pushinteger(L, check_set(L, 1)->count);
  return 1;
}

static int pending_gc(lua_State *L) {
  claude_pending *p = check_set(L, 1);
  close_timer(p);
  free_ring(p->ids, p->used, p->cos, p->due);
  p->ids = NULL;
  p->used = NULL;
  p->cos = NULL;
  p->due = NULL;
  p->size = 0;
  return 0;
}

static int pending_tostring(lua_State *L) {
  lua_pushfstring(L, MT_PENDING " (%I waiting)", (lua_Integer)check_set(L, 1)->count);
  return 1;
}

/* core.pending() -> an empty set */
static int l_pending(lua_State *L) {
  claude_pending *p = (claude_pending *)lua_newuserdatauv(L, sizeof *p, UV_COUNT - 1);
  memset(p, 0, sizeof *p);
  luaL_setmetatable(L, MT_PENDING);
  alloc_ring(L, p, INITIAL_SIZE);
  new_ring_tables(L, lua_gettop(L), p);
  lua_newtable(L);
  lua_setiuservalue(L, -2, UV_OLD_CALLBACKS);
  lua_newtable(L);
  lua_setiuservalue(L, -2, UV_OLD_METHODS);
  lua_newtable(L);
  lua_setiuservalue(L, -2, UV_OLD_DUE);
  return 1;
}

int claude_is_pending(lua_State *L, int idx) {
  return luaL_testudata(L, idx, MT_PENDING) != NULL;
}

static const luaL_Reg methods[] = {{"add", pending_add}, {"take", pending_take},
                                   {"get", pending_get}, {"ids", pending_ids},
                                   {"waiting", pending_waiting}, {"close", pending_close},
                                   {NULL, NULL}};

void claude_open_pending(lua_State *L) {
  luaL_newmetatable(L, MT_PENDING);
  luaL_newlibtable(L, methods);
  claude_class_upvalues(L, MT_PENDING); /* claude_check_object's */
  luaL_setfuncs(L, methods, 2);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, pending_gc);
  lua_setfield(L, -2, "__gc");
  lua_pushcfunction(L, pending_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pop(L, 1);
  lua_pushcfunction(L, l_pending);
  lua_setfield(L, -2, "pending");
}
