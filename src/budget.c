/*
 * budget.c -- running a coroutine under limits: core.budget{...}, b:resume.
 *
 * A budget bounds what one call (a tool's coroutine) may take:
 *
 *   run           seconds it may hold the loop in one resume, without yielding
 *   instructions  Lua instructions over the whole call (counted every
 *                 HOOK_PERIOD instructions)
 *   memory        net bytes allocated while it runs, over the whole call
 *
 * b:resume(co, ...) works like coroutine.resume, with the budget current
 * while co runs. A count hook on co (inherited by every coroutine created
 * while it runs) adds up instructions and looks at the clock; an allocator
 * wrapper, installed in the state once a budget with `memory` exists,
 * attributes allocations to the current budgets and refuses one that would
 * go over. Once a budget is exceeded it stays stopped: the hook fires at
 * every instruction, yields the thread where it can and raises an error where
 * it cannot (inside a C function such as table.sort's comparator), so a
 * pcall does not keep the call alive; growth is refused. The resumer then
 * sees `false, message, reason` and the coroutine is closed (its
 * to-be-closed variables run, under a small grace budget), never resumed
 * again. A timer can stop a waiting call the same way: b:stop("seconds").
 *
 * Budgets nest: a budgeted call may run another coroutine under its own
 * budget; both are current then, and the outer one's limits still hold.
 * Nothing runs when no budget is used: no hook is set, the allocator is the
 * state's own. Per lua_State: the state (current budgets, the allocator
 * being wrapped) hangs off the registry; no C globals. See docs/budgets.md.
 */
#include <stdlib.h>
#include <string.h>

#include "core.h"

/* Instructions between two looks at the budget. */
#define HOOK_PERIOD 1000
/* The grace a stopped call's to-be-closed variables get, together. */
#define CLOSE_RUN_NS ((uint64_t)100 * 1000 * 1000)
#define CLOSE_INSTRUCTIONS 1000000
#define CLOSE_MEMORY ((lua_Integer)16 * 1024 * 1024)

#define BUDGET_MT "claude.Budget"
#define STATE_MT "claude.BudgetState"

typedef struct budget budget;

/* One per lua_State, malloc'ed: it must outlive every allocation it sees. */
typedef struct budget_state {
  budget *current;   /* innermost budget being resumed, or NULL */
  lua_Alloc orig;    /* the allocator wrapped, once wrapped */
  void *orig_ud;
  int wrapped;
} budget_state;

/* The registry's handle on the state; its __gc puts the allocator back. */
typedef struct sentinel {
  budget_state *st; /* NULL once the state is going away */
} sentinel;

struct budget {
  sentinel *sent;
  /* limits, 0 for none */
  uint64_t run_ns;
  lua_Integer instructions;
  lua_Integer memory;
  /* use */
  lua_Integer used_instructions;
  lua_Integer used_memory; /* net: frees while it runs count back */
  uint64_t slice_start;
  lua_Integer resumes;
  /* while running */
  budget *outer;
  lua_State *co;
  int running;
  /* why it stopped, or NULL: one of REASONS, or the string given to stop */
  const char *stopped;
  char custom[32];
};

static const char STATE_KEY = 's';

static const char R_RUN[] = "run", R_INSTRUCTIONS[] = "instructions", R_MEMORY[] = "memory",
                  R_OUTER[] = "outer";

static void budget_hook(lua_State *L, lua_Debug *ar);

/* ---- the per-state part -------------------------------------------------- */

static void *budget_alloc(void *ud, void *ptr, size_t osize, size_t nsize);

/* __gc of the sentinel, at lua_close: the state's allocator goes back to the
 * one wrapped, and the state is freed. If something wrapped the allocator
 * after us, ours must stay reachable: the state is kept (inert). */
static int state_gc(lua_State *L) {
  sentinel *s = (sentinel *)lua_touserdata(L, 1);
  budget_state *st = s->st;
  void *ud;
  if (st == NULL) return 0;
  s->st = NULL;
  st->current = NULL;
  if (!st->wrapped) {
    free(st);
  } else if (lua_getallocf(L, &ud) == budget_alloc && ud == st) {
    lua_setallocf(L, st->orig, st->orig_ud);
    free(st);
  }
  return 0;
}

/* The state's sentinel, made on first use. */
static sentinel *get_sentinel(lua_State *L) {
  sentinel *s;
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &STATE_KEY) == LUA_TUSERDATA) {
    s = (sentinel *)lua_touserdata(L, -1);
    lua_pop(L, 1);
    return s;
  }
  lua_pop(L, 1);
  s = (sentinel *)lua_newuserdatauv(L, sizeof *s, 0);
  s->st = NULL;
  if (luaL_newmetatable(L, STATE_MT)) {
    lua_pushcfunction(L, state_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_setmetatable(L, -2);
  s->st = (budget_state *)calloc(1, sizeof *s->st);
  if (s->st == NULL) luaL_error(L, "budget: out of memory");
  lua_rawsetp(L, LUA_REGISTRYINDEX, &STATE_KEY);
  return s;
}

/* The state from inside a hook (NULL when budgets are gone). */
static budget_state *hook_state(lua_State *L) {
  budget_state *st = NULL;
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &STATE_KEY) == LUA_TUSERDATA)
    st = ((sentinel *)lua_touserdata(L, -1))->st;
  lua_pop(L, 1);
  return st;
}

/* Marks b stopped for `why` (the first reason stays) and makes the hook of
 * its coroutine fire at the next instruction. */
static void stop(budget *b, const char *why) {
  if (b->stopped == NULL) b->stopped = why;
  if (b->running && b->co != NULL) lua_sethook(b->co, budget_hook, LUA_MASKCOUNT, 1);
}

/* The allocator while budgets with `memory` exist: every block goes through
 * the wrapped allocator; while budgets are current, what they grow is added
 * up, and growth past a limit (or after it) is refused, which Lua raises as
 * a memory error. Frees and shrinks always go through. */
static void *budget_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  budget_state *st = (budget_state *)ud;
  budget *b = st->current;
  lua_Integer delta;
  void *r;
  if (b == NULL) return st->orig(st->orig_ud, ptr, osize, nsize);
  delta = (lua_Integer)nsize - (lua_Integer)(ptr != NULL ? osize : 0);
  if (delta > 0) {
    for (; b != NULL; b = b->outer) {
      if (b->memory > 0 && (b->stopped == R_MEMORY || b->used_memory + delta > b->memory)) {
        stop(b, R_MEMORY);
        return NULL;
      }
    }
  }
  r = st->orig(st->orig_ud, ptr, osize, nsize);
  if (r != NULL || nsize == 0)
    for (b = st->current; b != NULL; b = b->outer) b->used_memory += delta;
  return r;
}

/* Wraps the state's allocator (once). */
static void wrap_allocator(lua_State *L, budget_state *st) {
  if (st->wrapped) return;
  st->orig = lua_getallocf(L, &st->orig_ud);
  lua_setallocf(L, budget_alloc, st);
  st->wrapped = 1;
}

/* ---- the hook ------------------------------------------------------------ */

static void push_stop_message(lua_State *L, const budget *b) {
  if (b->stopped == R_RUN)
    lua_pushfstring(L, "budget exceeded: run (held the loop for more than %f s without "
                    "yielding)", (double)b->run_ns / 1e9);
  else if (b->stopped == R_INSTRUCTIONS)
    lua_pushfstring(L, "budget exceeded: instructions (more than %I)", b->instructions);
  else if (b->stopped == R_MEMORY)
    lua_pushfstring(L, "budget exceeded: memory (more than %I bytes)", b->memory);
  else if (b->stopped == R_OUTER)
    lua_pushliteral(L, "budget exceeded: the enclosing call's budget");
  else
    lua_pushfstring(L, "budget exceeded: %s", b->stopped);
}

/* Every HOOK_PERIOD instructions of a thread that runs under a budget (and
 * at every instruction once one is exceeded): counts, looks at the clock,
 * and stops the thread when a current budget is exceeded. A thread left
 * with the hook after its call ended takes it off. */
static void budget_hook(lua_State *L, lua_Debug *ar) {
  budget_state *st = hook_state(L);
  budget *b, *hit = NULL;
  uint64_t now = 0;
  int count = lua_gethookcount(L);
  (void)ar;
  if (st == NULL || st->current == NULL) {
    lua_sethook(L, NULL, 0, 0);
    return;
  }
  for (b = st->current; b != NULL; b = b->outer) {
    b->used_instructions += count;
    if (b->stopped == NULL) {
      if (b->instructions > 0 && b->used_instructions > b->instructions) {
        stop(b, R_INSTRUCTIONS);
      } else if (b->run_ns > 0) {
        if (now == 0) now = uv_hrtime();
        if (now - b->slice_start > b->run_ns) stop(b, R_RUN);
      }
    }
    if (b->stopped != NULL && hit == NULL) hit = b;
  }
  if (hit == NULL) return;
  if (count != 1) lua_sethook(L, budget_hook, LUA_MASKCOUNT, 1);
  if (lua_isyieldable(L)) {
    lua_yield(L, 0);
    return;
  }
  push_stop_message(L, hit);
  lua_error(L);
}

/* ---- core.budget{...} and its methods ------------------------------------ */

static budget *check_budget(lua_State *L, int idx) {
  return (budget *)luaL_checkudata(L, idx, BUDGET_MT);
}

/* limits[name]: a positive number, or nil/false for none. */
static double limit_field(lua_State *L, const char *name) {
  double v = 0;
  int t = lua_getfield(L, 1, name);
  if (t == LUA_TNUMBER && (v = lua_tonumber(L, -1)) > 0) {
    lua_pop(L, 1);
    return v;
  }
  if (t != LUA_TNIL && !(t == LUA_TBOOLEAN && !lua_toboolean(L, -1)))
    luaL_error(L, "bad budget field '%s' (a positive number or false expected, got %s)", name,
               t == LUA_TNUMBER ? "a number not above 0" : luaL_typename(L, -1));
  lua_pop(L, 1);
  return 0;
}

/* core.budget{run = s, instructions = n, memory = bytes} -> a claude.Budget;
 * each limit nil or false for none. */
static int l_budget(lua_State *L) {
  budget *b;
  double run, ins, mem;
  sentinel *s;
  luaL_checktype(L, 1, LUA_TTABLE);
  run = limit_field(L, "run");
  ins = limit_field(L, "instructions");
  mem = limit_field(L, "memory");
  s = get_sentinel(L);
  b = (budget *)lua_newuserdatauv(L, sizeof *b, 0);
  memset(b, 0, sizeof *b);
  b->sent = s;
  b->run_ns = run > 0 ? (uint64_t)((run < 1e9 ? run : 1e9) * 1e9) + 1 : 0; /* 1e9 s: forever */
  b->instructions = ins > 0 ? (ins < 9e18 ? (lua_Integer)ins : LUA_MAXINTEGER) : 0;
  b->memory = mem > 0 ? (mem < 9e18 ? (lua_Integer)mem : LUA_MAXINTEGER) : 0;
  luaL_setmetatable(L, BUDGET_MT);
  if (b->memory > 0) wrap_allocator(L, s->st);
  return 1;
}

/* Closes the suspended (or failed) coroutine co of the stopped budget b:
 * its to-be-closed variables run under one grace budget together, so that
 * a cleanup that spins or allocates without end is cut short too. */
static void close_under(lua_State *L, budget_state *st, budget *b, lua_State *co) {
  budget grace;
  memset(&grace, 0, sizeof grace);
  grace.sent = b->sent;
  grace.run_ns = CLOSE_RUN_NS;
  grace.instructions = CLOSE_INSTRUCTIONS;
  grace.memory = st->wrapped ? CLOSE_MEMORY : 0;
  grace.outer = st->current;
  grace.co = co;
  grace.running = 1;
  st->current = &grace;
  lua_sethook(co, budget_hook, LUA_MASKCOUNT, HOOK_PERIOD);
  grace.slice_start = uv_hrtime();
#if LUA_VERSION_RELEASE_NUM >= 50406
  lua_closethread(co, L);
#else
  (void)L;
  lua_resetthread(co);
#endif
  lua_settop(co, 0); /* an error object the closing left */
  st->current = grace.outer;
}

/* Returns false, message, reason for a stopped budget (3 results). */
static int push_stopped(lua_State *L, const budget *b) {
  lua_pushboolean(L, 0);
  push_stop_message(L, b);
  lua_pushstring(L, b->stopped == R_OUTER ? "outer" : b->stopped);
  return 3;
}

/* b:resume(co, ...) -> true, ... | false, err | false, message, reason.
 * Like coroutine.resume, with b current while co runs. When b is (or gets)
 * exceeded, or was stopped, co is closed and the result is false, a message
 * naming the budget, and its name ("run", "instructions", "memory", or what
 * b:stop was given; "outer" when the enclosing call's budget stopped). */
static int b_resume(lua_State *L) {
  budget *b = check_budget(L, 1);
  lua_State *co = lua_tothread(L, 2);
  budget_state *st = b->sent->st;
  int narg = lua_gettop(L) - 2, status, nres;
  lua_Debug ar;
  budget *o;
  luaL_argexpected(L, co != NULL, 2, "coroutine");
  if (st == NULL) return luaL_error(L, "budget: the state is closing");
  if (b->running) return luaL_error(L, "budget: already running a coroutine");
  if (co == L || (lua_status(co) == LUA_OK && lua_getstack(co, 0, &ar) > 0)) {
    lua_pushboolean(L, 0);
    lua_pushliteral(L, "cannot resume non-suspended coroutine");
    return 2;
  }
  if (b->stopped != NULL) {
    if (lua_status(co) != LUA_OK || lua_gettop(co) > 0) close_under(L, st, b, co);
    return push_stopped(L, b);
  }
  if (lua_status(co) == LUA_OK && lua_gettop(co) == 0) {
    lua_pushboolean(L, 0);
    lua_pushliteral(L, "cannot resume dead coroutine");
    return 2;
  }
  if (!lua_checkstack(co, narg)) {
    lua_pushboolean(L, 0);
    lua_pushliteral(L, "too many arguments to resume");
    return 2;
  }
  lua_xmove(L, co, narg);
  if (lua_gethook(co) != budget_hook || lua_gethookcount(co) != HOOK_PERIOD)
    lua_sethook(co, budget_hook, LUA_MASKCOUNT, HOOK_PERIOD);
  b->outer = st->current;
  b->co = co;
  b->running = 1;
  st->current = b;
  b->resumes++;
  if (b->run_ns > 0) b->slice_start = uv_hrtime();
  status = lua_resume(co, L, narg, &nres);
  st->current = b->outer;
  b->outer = NULL;
  b->co = NULL;
  b->running = 0;
  if (b->stopped == NULL)
    for (o = st->current; o != NULL; o = o->outer)
      if (o->stopped != NULL) b->stopped = R_OUTER;
  if (b->stopped != NULL) {
    if (status == LUA_OK || status == LUA_YIELD) lua_pop(co, nres);
    if (status != LUA_OK || lua_gettop(co) > 0) close_under(L, st, b, co);
    /* the thread that resumed co stops too when its own budget did */
    if (b->stopped == R_OUTER && lua_gethook(L) == budget_hook)
      lua_sethook(L, budget_hook, LUA_MASKCOUNT, 1);
    return push_stopped(L, b);
  }
  if (status == LUA_OK || status == LUA_YIELD) {
    if (!lua_checkstack(L, nres + 1)) {
      lua_pop(co, nres);
      lua_pushboolean(L, 0);
      lua_pushliteral(L, "too many results to resume");
      return 2;
    }
    lua_pushboolean(L, 1);
    lua_xmove(co, L, nres);
    return nres + 1;
  }
  lua_pushboolean(L, 0);
  lua_xmove(co, L, 1); /* the error object */
  return 2;
}

/* b:stop([reason]) -> b: stops the budget (a wall-time timer's way), reason
 * "seconds" unless given. A running call stops at its next hook; a waiting
 * one when b:resume is next called for it (which closes it). */
static int b_stop(lua_State *L) {
  budget *b = check_budget(L, 1);
  size_t len;
  const char *why = luaL_optlstring(L, 2, "seconds", &len);
  if (b->stopped == NULL) {
    if (len >= sizeof b->custom) len = sizeof b->custom - 1;
    memcpy(b->custom, why, len);
    b->custom[len] = '\0';
    stop(b, b->custom);
  }
  lua_settop(L, 1);
  return 1;
}

/* b:stopped() -> the reason b stopped, or nil. */
static int b_stopped(lua_State *L) {
  budget *b = check_budget(L, 1);
  if (b->stopped == NULL) lua_pushnil(L);
  else lua_pushstring(L, b->stopped == R_OUTER ? "outer" : b->stopped);
  return 1;
}

/* b:usage() -> {instructions, memory, resumes}: instructions counted (to
 * HOOK_PERIOD), net bytes allocated (counted once a memory budget exists in
 * the state), resumes. */
static int b_usage(lua_State *L) {
  budget *b = check_budget(L, 1);
  lua_createtable(L, 0, 3);
  lua_pushinteger(L, b->used_instructions);
  lua_setfield(L, -2, "instructions");
  lua_pushinteger(L, b->used_memory);
  lua_setfield(L, -2, "memory");
  lua_pushinteger(L, b->resumes);
  lua_setfield(L, -2, "resumes");
  return 1;
}

static int b_tostring(lua_State *L) {
  budget *b = check_budget(L, 1);
  lua_pushfstring(L, "claude.Budget (run %f s, instructions %I, memory %I%s%s)",
                  (double)b->run_ns / 1e9, b->instructions, b->memory,
                  b->stopped ? ", stopped: " : "", b->stopped ? b->stopped : "");
  return 1;
}

/* core.budget_current() -> the number of budgets current now (0 outside
 * budgeted calls), and whether the allocator is wrapped. */
static int l_budget_current(lua_State *L) {
  budget_state *st = get_sentinel(L)->st;
  lua_Integer n = 0;
  budget *b;
  for (b = st ? st->current : NULL; b != NULL; b = b->outer) n++;
  lua_pushinteger(L, n);
  lua_pushboolean(L, st != NULL && st->wrapped);
  return 2;
}

static const luaL_Reg budget_methods[] = {
  {"resume", b_resume}, {"stop", b_stop}, {"stopped", b_stopped}, {"usage", b_usage},
  {NULL, NULL}};

/* Adds budget and budget_current to the module table on top of the stack. */
void claude_open_budget(lua_State *L) {
  if (luaL_newmetatable(L, BUDGET_MT)) {
    lua_pushcfunction(L, b_tostring);
    lua_setfield(L, -2, "__tostring");
    luaL_newlib(L, budget_methods);
    lua_setfield(L, -2, "__index");
  }
  lua_pop(L, 1);
  lua_pushcfunction(L, l_budget);
  lua_setfield(L, -2, "budget");
  lua_pushcfunction(L, l_budget_current);
  lua_setfield(L, -2, "budget_current");
}
