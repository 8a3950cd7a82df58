/*
 * hook.c -- reaching the coroutines a budgeted call runs: the chain of
 * resumes, the watchdog's arm, and the count hook that stops them.
 *
 * Every resume through b:resume or core.resume pushes a node naming its
 * coroutine on the state's chain (budget.h's push_node, on the resumer's C
 * stack) while lua_resume runs. A call that stays within its budget is not
 * watched by anything that costs per instruction: the count hook is set only
 *
 *   - from the start of a resume, when a current budget has `instructions`
 *     (every HOOK_PERIOD instructions), or when the call makes a coroutine
 *     (memory.c hears of it): Lua copies the hook of its maker into it,
 *     and coroutine.resume runs it unseen by the chain;
 *   - by the watchdog (watchdog.c), when a resume's `run` deadline passed
 *     while it still runs: watch_arm, in a signal handler on the state's
 *     thread, sets the hook on every budgeted coroutine of the chain, to fire
 *     at its next instruction; an interrupt (SIGINT) sets it on the innermost;
 *   - by a stop (the meter refused a growth, b:stop, the hook itself).
 *
 * The hook counts, looks at the clock, and once a current budget is exceeded
 * fires at every instruction: it yields the thread where it can and raises an
 * error where it cannot (inside a C function such as table.sort's
 * comparator), so a pcall does not keep the call alive. An arm that finds
 * nothing to stop settles the thread back to counting, or takes the hook off.
 *
 * Where Lua turns hooks off, the hook cannot run:
 *
 *   - an error raised by a hook calls the xpcall message handler inside the
 *     hook, hooks off: a handler that spins would spin for good. Under an
 *     xpcall whose handler is not known to return at once, the hook raises
 *     a memory error instead, for which Lua calls no handler (raise).
 *   - a __gc metamethod runs with hooks off. The hook stays set and fires as
 *     soon as the finalizer returns; one that never returns cannot be
 *     stopped by a hook. When the watchdog finds that the hook it armed never
 *     ran (hooks_off), the call's budget stops and the state's growth is
 *     refused until the call's resume ends: a finalizer (or a C function)
 *     that allocates gets a memory error and ends. One that spins without
 *     allocating is left to the watchdog's last resort (watchdog.c).
 */
#include <time.h>

#include "budget/budget.h"

const char claude_budget_key = 's';
const char claude_budget_trusted_key = 't';
const char claude_budget_r_run[] = "run", claude_budget_r_instructions[] = "instructions",
           claude_budget_r_memory[] = "memory", claude_budget_r_outer[] = "outer";

/* ---- the chain of resumes ------------------------------------------------- */

/* An interrupt armed on a coroutine that returned before it ran another
 * instruction goes to the resume that goes on. */
void claude_budget_pass_interrupt(budget_state *st) {
  run_node *n = st->top;
  if (n == NULL) {
    st->interrupt = NULL;
    return;
  }
  st->interrupt = n->co;
  lua_sethook(n->co, claude_budget_hook, LUA_MASKCOUNT, 1);
}

/* Makes the hook fire at the next instruction of every coroutine from the
 * innermost resume to `last` (included; NULL: all the budgeted ones). */
static void arm(budget_state *st, run_node *last) {
  run_node *n;
  for (n = st->top; n != NULL; n = n->outer) {
    if (last != NULL || n->budgeted) lua_sethook(n->co, claude_budget_hook, LUA_MASKCOUNT, 1);
    if (n == last) break;
  }
}

/* The hook the watchdog armed for this deadline a poke ago (REPOKE_NS) never
 * ran while the thread kept the CPU busy: the call runs where Lua turns
 * hooks off (a __gc metamethod), or in a C function that computes. Its
 * exceeded budgets stop, and the state may not grow until its resume ends
 * (room far below 0, also in set_limit while st->stuck is set: what the
 * emergency collection of a refused allocation frees never makes room), so
 * that Lua code there that allocates gets a memory error. In the handler:
 * the room is written while the allocator may be between its test and its
 * count (the count lands on the new room: still far below 0), or in the
 * middle of the count (the write is lost: the next poke writes again). A
 * free is never refused (meter.h). */
static void hooks_off(budget_state *st) {
  claude_meter *m = st->meter;
  uint64_t now = uv_hrtime();
  budget *b;
  for (b = st->current; b != NULL; b = b->outer) {
    if (b->run_ns == 0 || now - b->slice_start <= b->run_ns) continue;
    if (b->stopped == NULL) b->stopped = R_RUN;
    if (st->stuck == NULL) st->stuck = b;
  }
  st->limiter = NULL; /* a refusal now is no `memory` budget's */
  if (st->stuck != NULL && m != NULL && m->room >= 0) {
    long long net = meter_net(m);
    m->room = -CLAUDE_METER_NO_LIMIT; /* frees meanwhile never make room */
    m->base = net + m->room;
  }
}

/* The CPU the calling thread wanted so far, in nanoseconds: the time it ran
 * and waited for a CPU while runnable (claude_thread_wanted_ns), else its CPU
 * time (async-signal-safe). */
static uint64_t thread_cpu(void) {
  struct timespec ts;
  uint64_t wanted = claude_thread_wanted_ns(0);
  if (wanted != 0) return wanted;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The watchdog's poke, in a signal handler on the state's thread: only
 * lua_sethook, which lua.c's SIGINT handler also calls there (and, when the
 * hook it set last time never ran, the meter: hooks_off). */
void claude_budget_watch_arm(void *ud, int what) {
  budget_state *st = (budget_state *)ud;
  run_node *n = st->top;
  if ((what & CLAUDE_POKE_INTERRUPT) && n != NULL) {
    st->interrupt = n->co;
    lua_sethook(n->co, claude_budget_hook, LUA_MASKCOUNT, 1);
  }
  if ((what & CLAUDE_POKE_BUDGET) && claude_watch_due(st->watch)) {
    uint64_t d = atomic_load(&st->watch->deadline), now = uv_hrtime(), cpu = thread_cpu();
    /* the same resume, no hook since, and the thread busy (not blocked in a
     * system call, nor in a nested loop's poll) at least a quarter of the time:
     * running, or runnable and waiting for a CPU that other processes hold */
    if (d == st->armed_deadline && st->hook_runs == st->armed_runs &&
        (cpu - st->armed_cpu) * 4 >= now - st->armed_at)
      hooks_off(st);
    st->armed_deadline = d;
    st->armed_runs = st->hook_runs;
    st->armed_at = now;
    st->armed_cpu = cpu;
    arm(st, NULL);
  }
}

/* Marks b stopped for `why` (the first reason stays) and makes the hook of
 * every coroutine running inside its call fire at the next instruction. */
void claude_budget_stop(budget_state *st, budget *b, const char *why) {
  if (b->stopped == NULL) b->stopped = why;
  if (b->node != NULL && st != NULL) arm(st, b->node);
}

/* ---- the hook ------------------------------------------------------------- */

void claude_budget_push_stop_message(lua_State *L, const budget *b) {
  if (b->stopped == R_RUN) /* in microseconds: 1.0 s, not 1.000000001 s */
    lua_pushfstring(L, "budget exceeded: run (held the loop for more than %f s without "
                    "yielding)", (double)((b->run_ns + 500) / 1000) / 1e6);
  else if (b->stopped == R_INSTRUCTIONS)
    lua_pushfstring(L, "budget exceeded: instructions (more than %I)", b->instructions);
  else if (b->stopped == R_MEMORY)
    lua_pushfstring(L, "budget exceeded: memory (more than %I bytes)", b->memory);
  else if (b->stopped == R_OUTER)
    lua_pushliteral(L, "budget exceeded: the enclosing call's budget");
  else
    lua_pushfstring(L, "budget exceeded: %s", b->stopped);
}

/* Whether an error raised now in L may call a message handler that is not
 * known to return at once: the innermost protected call of L (Lua calls the
 * handler of L's own) is an xpcall, and its handler (the xpcall's second
 * argument) is a Lua function core.trusted_handler did not mark. pcall has
 * none; a C function's lua_pcall with a handler is not seen (C handlers are
 * taken to return). */
static int handler_may_spin(lua_State *L, const budget_state *st) {
  lua_Debug ar;
  int level, spin = 0;
  if (st->xpcall_fn == NULL) return 0;
  for (level = 0; lua_getstack(L, level, &ar); level++) {
    lua_CFunction f;
    lua_getinfo(L, "f", &ar);
    f = lua_tocfunction(L, -1);
    lua_pop(L, 1);
    if (f == NULL || (f != st->pcall_fn && f != st->xpcall_fn)) continue;
    if (f == st->pcall_fn) return 0;
    if (lua_getlocal(L, &ar, 2) == NULL) return 1;
    if (!lua_iscfunction(L, -1)) {
      spin = 1;
      if (lua_rawgetp(L, LUA_REGISTRYINDEX, &claude_budget_trusted_key) == LUA_TTABLE) {
        lua_pushvalue(L, -2);
        spin = lua_rawget(L, -2) == LUA_TNIL;
        lua_pop(L, 1);
      }
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
    return spin;
  }
  return 0;
}

/* Raises the error on top of L from the hook. Lua calls the message handler
 * of an error raised here inside the hook, with hooks off, where nothing
 * could stop a handler that spins: when one may run, the error goes as a
 * memory error, which calls no handler (lua_error raises one for the memory
 * error message, "not enough memory": Lua 5.4.2 and later). Its xpcall then
 * returns false, "not enough memory"; the budget's reason reaches the
 * resumer all the same. */
static void raise_from_hook(lua_State *L, const budget_state *st) {
  if (handler_may_spin(L, st)) {
    lua_pop(L, 1);
    lua_pushliteral(L, "not enough memory");
  }
  lua_error(L);
}

/* The state from inside a hook (NULL when budgets are gone). */
static budget_state *hook_state(lua_State *L) {
  budget_state *st = NULL;
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &claude_budget_key) == LUA_TUSERDATA)
    st = ((sentinel *)lua_touserdata(L, -1))->st;
  lua_pop(L, 1);
  return st;
}

/* After an arm found nothing to stop: the thread goes back to counting if it
 * counts (its resume does, or it is a coroutine a call made, which we cannot
 * tell apart), else the hook comes off. */
static void settle(budget_state *st, lua_State *L) {
  run_node *n;
  for (n = st->top; n != NULL && n->co != L; n = n->outer) {
  }
  if (n != NULL ? !n->counting && !(n->budgeted && st->counting > 0) : st->current == NULL)
    lua_sethook(L, NULL, 0, 0);
  else
    lua_sethook(L, claude_budget_hook, LUA_MASKCOUNT, HOOK_PERIOD);
}

/* Every HOOK_PERIOD instructions of a thread that counts, and at the next
 * instruction of one armed (the watchdog, an interrupt, a stop): raises an
 * interrupt, counts, looks at the clock, and stops the thread when a current
 * budget is exceeded. A thread left with the hook after its call ended takes
 * it off. */
void claude_budget_hook(lua_State *L, lua_Debug *ar) {
  budget_state *st = hook_state(L);
  budget *b, *hit = NULL;
  uint64_t now = 0;
  int count = lua_gethookcount(L);
  (void)ar;
  if (st == NULL) {
    lua_sethook(L, NULL, 0, 0);
    return;
  }
  st->hook_runs++;
  if (st->interrupt == L) {
    st->interrupt = NULL;
    settle(st, L);
    luaL_where(L, 1);
    lua_pushliteral(L, "interrupted");
    lua_concat(L, 2);
    raise_from_hook(L, st);
    return;
  }
  if (st->current == NULL) {
    lua_sethook(L, NULL, 0, 0);
    return;
  }
  for (b = st->current; b != NULL; b = b->outer) {
    b->used_instructions += count;
    if (b->stopped == NULL) {
      if (b->instructions > 0 && b->used_instructions > b->instructions) {
        claude_budget_stop(st, b, R_INSTRUCTIONS);
      } else if (b->run_ns > 0) {
        if (now == 0) now = uv_hrtime();
        if (now - b->slice_start > b->run_ns) claude_budget_stop(st, b, R_RUN);
      }
    }
    if (b->stopped != NULL && hit == NULL) hit = b;
  }
  if (hit == NULL) {
    if (count == 1) settle(st, L);
    return;
  }
  if (lua_gethookcount(L) != 1) lua_sethook(L, claude_budget_hook, LUA_MASKCOUNT, 1);
  if (lua_isyieldable(L)) {
    lua_yield(L, 0);
    return;
  }
  claude_budget_push_stop_message(L, hit);
  raise_from_hook(L, st);
}

/* ---- the Lua side ---------------------------------------------------------- */

/* core.stuck_exit(seconds | false [, label]): a budgeted call still running
 * `seconds` past its `run` deadline, its thread busy where no hook reaches
 * (a __gc metamethod that spins, a C function that runs long), ends the
 * process with status 70 and a line on stderr that starts with `label`
 * ("claudelua"); the label also starts the line of an interrupting signal
 * that could not interrupt (watchdog.c). false or 0: never (the default). */
int claude_budget_l_stuck_exit(lua_State *L) {
  claude_ctx *ctx = claude_ctx_get(L);
  double secs = 0;
  const char *label = luaL_optstring(L, 2, "claudelua");
  if (!(lua_isboolean(L, 1) && !lua_toboolean(L, 1))) {
    secs = luaL_checknumber(L, 1);
    luaL_argcheck(L, secs >= 0, 1, "seconds >= 0 or false expected");
  }
  claude_watch_set_stuck(&ctx->watch, (uint64_t)((secs < 1e9 ? secs : 1e9) * 1e9), label);
  return 0;
}

/* core.trusted_handler(fn) -> fn: marks fn as an xpcall message handler
 * that returns at once. An error a budget or an interrupt raises from the
 * hook calls the handler with hooks off, where nothing could stop one that
 * spins: under an xpcall with any other Lua handler it is raised as a memory
 * error, which calls none (hook.c). claude's tasks mark theirs. */
int claude_budget_l_trusted_handler(lua_State *L) {
  luaL_checktype(L, 1, LUA_TFUNCTION);
  claude_registry_weak(L, &claude_budget_trusted_key, "k");
  lua_pushvalue(L, 1);
  lua_pushboolean(L, 1);
  lua_rawset(L, -3);
  lua_settop(L, 1);
  return 1;
}
