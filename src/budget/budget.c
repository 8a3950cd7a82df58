/*
 * budget.c -- running coroutines under limits: core.budget{...}, b:resume;
 * and core.resume, so that the state knows which coroutines it runs.
 *
 * A budget bounds what one call (a tool's coroutine) may take:
 *
 *   run           seconds it may hold the loop in one resume, without yielding
 *   instructions  Lua instructions over the whole call (counted every
 *                 HOOK_PERIOD instructions)
 *   memory        net bytes allocated while it runs, over the whole call
 *
 * b:resume(co, ...) works like coroutine.resume, with the budget current
 * while co runs. A call that stays within its `run` and `memory` is not
 * watched by anything that costs per instruction:
 *
 *   run      each resume publishes its deadline to the watchdog
 *            (watchdog.c); only when it passes while the resume still runs
 *            is a count hook set, from a signal handler on the state's
 *            thread, on every coroutine being resumed inside the call
 *            (hook.c).
 *   memory   the state's allocator keeps a meter (meter.h, memory.c)
 *            and refuses a growth past the limit: a compare per allocation.
 *   instructions  needs the count hook from the start: once one is set, Lua
 *            5.4's VM takes its hook path at every instruction (Lua code
 *            about 1.5 times as slow).
 *
 * Which coroutines run: every resume through b:resume or core.resume (the
 * resume of claude's tasks) pushes a node naming its coroutine, on the C
 * stack, while lua_resume runs; the watchdog and interrupts arm those. A
 * coroutine the call makes itself (coroutine.wrap) is resumed by
 * coroutine.resume, unseen; Lua copies the hook of its maker into it, so
 * when a budgeted call makes one (the meter sees a LUA_TTHREAD allocation)
 * the coroutine it runs in gets the count hook first: a call that makes
 * coroutines pays for the hook, as every call did before the watchdog.
 *
 * Once a budget is exceeded it stays stopped: the hook fires at every
 * instruction, yields the thread where it can and raises an error where it
 * cannot (inside a C function such as table.sort's comparator), so a pcall
 * does not keep the call alive; growth is refused. The resumer then sees
 * `false, message, reason` and the coroutine is closed (its to-be-closed
 * variables run, under a small grace budget), never resumed again. A timer
 * can stop a waiting call the same way: b:stop("seconds").
 *
 * Budgets nest: a budgeted call may run another coroutine under its own
 * budget; both are current then, and the outer one's limits still hold.
 * Per lua_State: the state (current budgets, the running chain, the meter)
 * hangs off the registry and arms the watchdog of the state's context; the
 * only C globals are the signal handlers' (watchdog.c). See docs/budgets.md.
 *
 * This file: the per-state part (the registry's sentinel, its __gc), the Lua
 * API, and the run of one budgeted resume (run_under), the tool-call path:
 * the small helpers of the other files it runs at every resume (the chain's
 * push and pop, the meter's switch) are inline in budget.h.
 */
#include <stdlib.h>
#include <string.h>

#include "budget/budget.h"

/* The grace a stopped call's to-be-closed variables get, together. */
#define CLOSE_RUN_NS ((uint64_t)100 * 1000 * 1000)
#define CLOSE_INSTRUCTIONS 1000000
#define CLOSE_MEMORY ((lua_Integer)16 * 1024 * 1024)

#define BUDGET_MT "claude.Budget"
#define STATE_MT "claude.BudgetState"

static const char offer_key = 'o'; /* the host's metered allocator, offered early */

/* The host's offer of its metered allocator (claude_budget_use_meter), kept
 * in the registry until the state's budgets are made. */
typedef struct offer {
  claude_meter *m;
  lua_Alloc fn;
  void *ud;
} offer;

/* ---- the per-state part --------------------------------------------------- */

/* __gc of the sentinel, at lua_close: the watchdog's pokes arm nothing any
 * more, the state's allocator goes back to the one wrapped, and the state is
 * freed. If something wrapped the allocator after us, ours must stay
 * reachable: the state is kept (inert). The context's __gc comes after this
 * one (it is older), and closes the watch; the context is looked up anyway,
 * never touched once closed. */
static int state_gc(lua_State *L) {
  sentinel *s = (sentinel *)lua_touserdata(L, 1);
  budget_state *st = s->st;
  claude_ctx *ctx = claude_ctx_find(L);
  if (st == NULL) return 0;
  s->st = NULL;
  if (ctx != NULL && &ctx->watch == st->watch) claude_watch_set_arm(st->watch, NULL, NULL);
  st->current = NULL;
  st->top = NULL;
  st->interrupt = NULL;
  if (claude_budget_meter_close(L, st)) free(st);
  return 0;
}

/* Takes the host's metered allocator (claude_budget_use_meter), if it
 * offered one before the state was made. */
static void take_offer(lua_State *L, budget_state *st) {
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &offer_key) == LUA_TUSERDATA) {
    offer *o = (offer *)lua_touserdata(L, -1);
    st->host_meter = o->m;
    st->host_fn = o->fn;
    st->host_ud = o->ud;
    lua_pushnil(L);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &offer_key);
  }
  lua_pop(L, 1);
}

/* The state's sentinel, made on first use, after the context. */
static sentinel *get_sentinel(lua_State *L) {
  sentinel *s;
  claude_ctx *ctx;
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &claude_budget_key) == LUA_TUSERDATA) {
    s = (sentinel *)lua_touserdata(L, -1);
    lua_pop(L, 1);
    return s;
  }
  lua_pop(L, 1);
  ctx = claude_ctx_get(L); /* older than the sentinel: finalized after it */
  s = (sentinel *)lua_newuserdatauv(L, sizeof *s, 0);
  s->st = NULL;
  if (luaL_newmetatable(L, STATE_MT)) {
    lua_pushcfunction(L, state_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_setmetatable(L, -2);
  s->st = (budget_state *)calloc(1, sizeof *s->st);
  if (s->st == NULL) luaL_error(L, "budget: out of memory");
  take_offer(L, s->st);
  /* the base library's protected calls, which the hook looks for (hook.c) */
  lua_getglobal(L, "pcall");
  s->st->pcall_fn = lua_tocfunction(L, -1);
  lua_getglobal(L, "xpcall");
  s->st->xpcall_fn = lua_tocfunction(L, -1);
  lua_pop(L, 2);
  s->st->watch = &ctx->watch;
  claude_watch_set_arm(&ctx->watch, claude_budget_watch_arm, s->st);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &claude_budget_key);
  return s;
}

/* Before the state's budgets exist (the host offers its allocator before it
 * opens any library), the offer waits in the registry: making the budgets
 * would make the context and its loop at every start. */
void claude_budget_use_meter(lua_State *L, claude_meter *m, lua_Alloc metered, void *ud) {
  offer *o;
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &claude_budget_key) == LUA_TUSERDATA) {
    budget_state *st = ((sentinel *)lua_touserdata(L, -1))->st;
    lua_pop(L, 1);
    if (st == NULL || st->meter != NULL) return;
    st->host_meter = m;
    st->host_fn = metered;
    st->host_ud = ud;
    return;
  }
  lua_pop(L, 1);
  o = (offer *)lua_newuserdatauv(L, sizeof *o, 0);
  o->m = m;
  o->fn = metered;
  o->ud = ud;
  lua_rawsetp(L, LUA_REGISTRYINDEX, &offer_key);
}

/* ---- core.budget{...} and its methods ------------------------------------- */

/* The methods are closures over the metatable: a userdata is a budget when
 * its metatable is that one (cheaper than luaL_checkudata's look-up of the
 * metatable by name, on the tool-call path). */
static budget *check_budget(lua_State *L, int idx) {
  budget *b = (budget *)lua_touserdata(L, idx);
  if (b != NULL && lua_getmetatable(L, idx)) {
    int same = lua_rawequal(L, -1, lua_upvalueindex(1));
    lua_pop(L, 1);
    if (same) return b;
  }
  luaL_typeerror(L, idx, BUDGET_MT);
  return NULL;
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
  if (s->st == NULL) return luaL_error(L, "budget: the state is closing");
  b = (budget *)lua_newuserdatauv(L, sizeof *b, 0);
  memset(b, 0, sizeof *b);
  b->sent = s;
  b->run_ns = run > 0 ? (uint64_t)((run < 1e9 ? run : 1e9) * 1e9) + 1 : 0; /* 1e9 s: forever */
  b->instructions = ins > 0 ? (ins < 9e18 ? (lua_Integer)ins : LUA_MAXINTEGER) : 0;
  b->memory = mem > 0 ? (mem < 9e18 ? (lua_Integer)mem : LUA_MAXINTEGER) : 0;
  luaL_setmetatable(L, BUDGET_MT);
  /* memory needs the meter; run needs its news of coroutines being made */
  if (b->memory > 0 || b->run_ns > 0) claude_budget_need_meter(L, s->st);
  return 1;
}

/* b becomes the innermost current budget, for the resume of `node`: the
 * meter's room, the chain (last: a handler sees the node whole). */
static inline void enter(lua_State *L, budget_state *st, budget *b, run_node *node) {
  b->outer = st->current;
  b->node = node;
  if (st->current == NULL) meter_on(L, st);
  st->current = b;
  if (b->instructions > 0) st->counting++;
  if (st->meter != NULL) {
    b->mem_mark = meter_net(st->meter);
    if (b->memory > 0) st->memories++;
    claude_budget_set_limit(st);
  }
  push_node(st, node);
}

/* The resume of `node` under b ended: what enter did, undone; b keeps the
 * memory it used. */
static inline void leave(lua_State *L, budget_state *st, budget *b, run_node *node) {
  pop_node(st, node);
  st->current = b->outer;
  if (b->instructions > 0) st->counting--;
  if (st->meter != NULL) {
    b->used_memory += meter_net(st->meter) - b->mem_mark;
    if (b->memory > 0) st->memories--;
    if (st->stuck == b) st->stuck = NULL; /* the state may grow again */
    if (st->current != NULL) claude_budget_set_limit(st);
    else no_limit(st->meter);
  }
  if (st->current == NULL) meter_off(L, st);
  b->outer = NULL;
  b->node = NULL;
}

/* Runs co (narg arguments already moved) with b current; returns
 * lua_resume's status. */
static int run_under(lua_State *L, budget_state *st, budget *b, lua_State *co, int narg,
                     int *nres) {
  run_node node;
  uint64_t now = 0, outer_deadline = 0;
  int status, watched = 0;
  int count = b->instructions > 0 || st->counting > 0;
  lua_Hook h = lua_gethook(co);
  if (h == claude_budget_hook && b->resumes == 0 && !count) {
    lua_sethook(co, NULL, 0, 0); /* left by the last call of a pooled coroutine */
    h = NULL;
  }
  node.co = co;
  node.budgeted = 1;
  node.counting = h == claude_budget_hook && lua_gethookcount(co) == HOOK_PERIOD;
  if (b->run_ns > 0) {
    now = uv_hrtime();
    /* no watchdog: the hook looks at the clock */
    if (st->watch->status == CLAUDE_WATCH_NONE) count = 1;
  }
  if (count && !node.counting) {
    lua_sethook(co, claude_budget_hook, LUA_MASKCOUNT, HOOK_PERIOD);
    node.counting = 1;
  }
  b->resumes++;
  b->slice_start = now;
  enter(L, st, b, &node);
  if (b->run_ns > 0 && st->watch->status != CLAUDE_WATCH_NONE) {
    uint64_t d = now + b->run_ns;
    outer_deadline = atomic_load_explicit(&st->watch->deadline, memory_order_relaxed);
    if (outer_deadline == 0 || d < outer_deadline) {
      claude_watch_deadline(st->watch, d, b->run_ns);
      watched = 1;
      /* the thread could not be started: count after all */
      if (st->watch->status == CLAUDE_WATCH_NONE && !node.counting) {
        lua_sethook(co, claude_budget_hook, LUA_MASKCOUNT, HOOK_PERIOD);
        node.counting = 1;
      }
    }
  }
  status = lua_resume(co, L, narg, nres);
  if (watched) claude_watch_deadline(st->watch, outer_deadline, 0);
  leave(L, st, b, &node);
  return status;
}

/* Closes the suspended (or failed) coroutine co of the stopped budget b:
 * its to-be-closed variables run under one grace budget together, so that
 * a cleanup that spins or allocates without end is cut short too (its
 * instructions are counted, and the count hook looks at the clock). */
static void close_under(lua_State *L, budget_state *st, budget *b, lua_State *co) {
  budget grace;
  run_node node;
  memset(&grace, 0, sizeof grace);
  grace.sent = b->sent;
  grace.run_ns = CLOSE_RUN_NS;
  grace.instructions = CLOSE_INSTRUCTIONS;
  grace.memory = st->meter != NULL ? CLOSE_MEMORY : 0;
  node.co = co;
  node.budgeted = 1;
  node.counting = 1;
  lua_sethook(co, claude_budget_hook, LUA_MASKCOUNT, HOOK_PERIOD);
  grace.slice_start = uv_hrtime();
  enter(L, st, &grace, &node);
#if LUA_VERSION_RELEASE_NUM >= 50406
  lua_closethread(co, L);
#else
  (void)L;
  lua_resetthread(co);
#endif
  lua_settop(co, 0); /* an error object the closing left */
  leave(L, st, &grace, &node);
}

/* Returns false, message, reason for a stopped budget (3 results). */
static int push_stopped(lua_State *L, const budget *b) {
  lua_pushboolean(L, 0);
  claude_budget_push_stop_message(L, b);
  lua_pushstring(L, b->stopped == R_OUTER ? "outer" : b->stopped);
  return 3;
}

/* b:resume(co, ...) -> true, ... | false, err | false, message, reason.
 * Like coroutine.resume, with b current while co runs. When b is (or gets)
 * exceeded, or was stopped, co is closed and the result is false, a message
 * naming the budget, and its name ("run", "instructions", "memory", or what
 * b:stop was given; "outer" when the enclosing call's budget stopped). */
static int resume_budget(lua_State *L, budget *b) {
  lua_State *co = lua_tothread(L, 2);
  budget_state *st = b->sent->st;
  int narg = lua_gettop(L) - 2, status, nres;
  lua_Debug ar;
  budget *o;
  luaL_argexpected(L, co != NULL, 2, "coroutine");
  if (st == NULL) return luaL_error(L, "budget: the state is closing");
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
  status = run_under(L, st, b, co, narg, &nres);
  if (b->stopped == NULL)
    for (o = st->current; o != NULL; o = o->outer)
      if (o->stopped != NULL) b->stopped = R_OUTER;
  if (b->stopped != NULL) {
    if (status == LUA_OK || status == LUA_YIELD) lua_pop(co, nres);
    if (status != LUA_OK || lua_gettop(co) > 0) close_under(L, st, b, co);
    /* the thread that resumed co stops too when its own budget did */
    if (b->stopped == R_OUTER && lua_gethook(L) == claude_budget_hook)
      lua_sethook(L, claude_budget_hook, LUA_MASKCOUNT, 1);
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

static int b_resume(lua_State *L) {
  budget *b = check_budget(L, 1);
  if (b->node != NULL) return luaL_error(L, "budget: already running a coroutine");
  return resume_budget(L, b);
}

/* Starts b over for a new call: nothing used, not stopped. */
static void reset(budget *b) {
  b->used_instructions = 0;
  b->used_memory = 0;
  b->resumes = 0;
  b->stopped = NULL;
  b->custom[0] = '\0';
}

/* b:start(co, ...) -> as b:resume: the first resume of a new call, for a
 * budget reused from call to call (b:reset(), then b:resume(co, ...)). */
static int b_start(lua_State *L) {
  budget *b = check_budget(L, 1);
  if (b->node != NULL) return luaL_error(L, "budget: already running a coroutine");
  reset(b);
  return resume_budget(L, b);
}

/* b:stop([reason]) -> b: stops the budget (a wall-time timer's way), reason
 * "seconds" unless given. A running call stops at its next instruction; a
 * waiting one when b:resume is next called for it (which closes it). */
static int b_stop(lua_State *L) {
  budget *b = check_budget(L, 1);
  size_t len;
  const char *why = luaL_optlstring(L, 2, "seconds", &len);
  if (b->stopped == NULL) {
    if (len >= sizeof b->custom) len = sizeof b->custom - 1;
    memcpy(b->custom, why, len);
    b->custom[len] = '\0';
    claude_budget_stop(b->sent->st, b, b->custom);
  }
  lua_settop(L, 1);
  return 1;
}

/* b:reset() -> b: a budget whose call ended (or that never ran one) starts
 * over for a new call: nothing used, not stopped. Saves making one per call. */
static int b_reset(lua_State *L) {
  budget *b = check_budget(L, 1);
  if (b->node != NULL) return luaL_error(L, "budget: cannot reset while it runs a coroutine");
  reset(b);
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
 * HOOK_PERIOD, while the call counts), net bytes allocated (once the state
 * has a meter), resumes. */
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
 * budgeted calls), and whether the state has a memory meter. */
static int l_budget_current(lua_State *L) {
  budget_state *st = get_sentinel(L)->st;
  lua_Integer n = 0;
  budget *b;
  for (b = st ? st->current : NULL; b != NULL; b = b->outer) n++;
  lua_pushinteger(L, n);
  lua_pushboolean(L, st != NULL && st->meter != NULL);
  return 2;
}

/* core.resume(co, ...) -> like coroutine.resume, and the state knows co
 * runs (claude's tasks resume through it): the watchdog and interrupts can
 * reach it. The sentinel is the upvalue. */
/* The part of core.resume a C caller runs (claude_resume): co resumed with the narg values on
 * its stack, as the running coroutine of the chain (a budget's watchdog and an interrupt can
 * reach it). */
static int resume_plain(budget_state *st, lua_State *L, lua_State *co, int narg, int *nres) {
  run_node node;
  int status;
  if (st != NULL) {
    node.co = co;
    node.budgeted = st->current != NULL;
    node.counting = 0;
    push_node(st, &node);
  }
  status = lua_resume(co, L, narg, nres);
  if (st != NULL) pop_node(st, &node);
  return status;
}

void *claude_resume_state(lua_State *L) {
  budget_state *st = NULL;
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &claude_budget_key) == LUA_TUSERDATA)
    st = ((sentinel *)lua_touserdata(L, -1))->st;
  lua_pop(L, 1);
  return st;
}

int claude_resume_in(void *budgets, lua_State *L, lua_State *co, int narg, int *nres) {
  return resume_plain((budget_state *)budgets, L, co, narg, nres);
}

int claude_resume(lua_State *L, lua_State *co, int narg, int *nres) {
  return resume_plain((budget_state *)claude_resume_state(L), L, co, narg, nres);
}

static int l_resume(lua_State *L) {
  budget_state *st = ((sentinel *)lua_touserdata(L, lua_upvalueindex(1)))->st;
  lua_State *co = lua_tothread(L, 1);
  int narg = lua_gettop(L) - 1, status, nres;
  luaL_argexpected(L, co != NULL, 1, "thread");
  if (!lua_checkstack(co, narg)) {
    lua_pushboolean(L, 0);
    lua_pushliteral(L, "too many arguments to resume");
    return 2;
  }
  lua_xmove(L, co, narg);
  status = resume_plain(st, L, co, narg, &nres);
  if (status == LUA_OK || status == LUA_YIELD) {
    if (!lua_checkstack(L, nres + 1)) {
      lua_pop(co, nres);
      lua_pushboolean(L, 0);
      lua_pushliteral(L, "too many results to resume");
      return 2;
    }
    lua_xmove(co, L, nres);
    lua_pushboolean(L, 1);
    lua_insert(L, -(nres + 1));
    return nres + 1;
  }
  lua_xmove(co, L, 1); /* the error object (no-op when co is L) */
  lua_pushboolean(L, 0);
  lua_insert(L, -2);
  return 2;
}

static const luaL_Reg budget_methods[] = {
  {"resume", b_resume}, {"start", b_start}, {"stop", b_stop}, {"reset", b_reset},
  {"stopped", b_stopped}, {"usage", b_usage}, {NULL, NULL}};

/* Adds budget, budget_current and resume to the module table on top of the
 * stack. */
void claude_open_budget(lua_State *L) {
  if (luaL_newmetatable(L, BUDGET_MT)) {
    lua_pushvalue(L, -1);
    lua_pushcclosure(L, b_tostring, 1);
    lua_setfield(L, -2, "__tostring");
    luaL_newlibtable(L, budget_methods);
    lua_pushvalue(L, -2);
    luaL_setfuncs(L, budget_methods, 1); /* the metatable: check_budget's upvalue */
    lua_setfield(L, -2, "__index");
  }
  lua_pop(L, 1);
  lua_pushcfunction(L, l_budget);
  lua_setfield(L, -2, "budget");
  lua_pushcfunction(L, l_budget_current);
  lua_setfield(L, -2, "budget_current");
  lua_pushcfunction(L, claude_budget_l_stuck_exit);
  lua_setfield(L, -2, "stuck_exit");
  lua_pushcfunction(L, claude_budget_l_trusted_handler);
  lua_setfield(L, -2, "trusted_handler");
  get_sentinel(L);
  lua_rawgetp(L, LUA_REGISTRYINDEX, &claude_budget_key);
  lua_pushcclosure(L, l_resume, 1);
  lua_setfield(L, -2, "resume");
}
