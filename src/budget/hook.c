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
 */
#include "budget/budget.h"

const char claude_budget_key = 's';
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

/* The watchdog's poke, in a signal handler on the state's thread: only
 * lua_sethook, which lua.c's SIGINT handler also calls there. */
void claude_budget_watch_arm(void *ud, int what) {
  budget_state *st = (budget_state *)ud;
  run_node *n = st->top;
  if ((what & CLAUDE_POKE_INTERRUPT) && n != NULL) {
    st->interrupt = n->co;
    lua_sethook(n->co, claude_budget_hook, LUA_MASKCOUNT, 1);
  }
  if ((what & CLAUDE_POKE_BUDGET) && claude_watch_due(st->watch)) arm(st, NULL);
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
  if (st->interrupt == L) {
    st->interrupt = NULL;
    settle(st, L);
    luaL_error(L, "interrupted");
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
  lua_error(L);
}
