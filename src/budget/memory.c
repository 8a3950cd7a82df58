/*
 * memory.c -- the memory limit of budgets: the state's allocator keeps a
 * meter (meter.h) and refuses a growth past the limit, a compare per
 * allocation.
 *
 * A budget's `memory` is the net bytes allocated while its call runs, over
 * the whole call (frees while it runs count back). The meter knows how many
 * bytes the state may still grow by (`room`); before each resume the budgets
 * set it to the tightest limit of the current ones (set_limit), and after the
 * outermost one it goes back to none (budget.h's no_limit).
 *
 * The meter, made when the first budget with `memory` or `run` is: the
 * claudelua host's allocator has a metered variant (host/alloc.c), swapped in only
 * while a budget is current, so that the allocations of the loop and of
 * everything between tool calls are not counted at all; any other state
 * (stock lua5.4, an embedding application) gets budget_alloc wrapped around
 * its allocator for good.
 *
 * The meter also tells when a coroutine is made inside a budgeted call: Lua
 * copies its maker's hook into it, and coroutine.resume runs it unseen by the
 * chain of resumes, so the maker gets the count hook first (hook.c).
 */
#include <limits.h>

#include "budget/budget.h"

static long long add_sat(long long a, lua_Integer b) {
  return a > 0 && b > LLONG_MAX - a ? LLONG_MAX : a + (long long)b;
}

/* The meter's limit: the tightest of the current budgets with `memory`
 * (one stopped for memory refuses every growth), as room to grow. A stuck
 * call (hook.c) refuses every growth even after frees: room far below 0. */
void claude_budget_set_limit(budget_state *st) {
  long long limit = LLONG_MAX, l, net;
  claude_meter *m = st->meter;
  budget *b;
  st->limiter = NULL;
  if (m == NULL) return;
  if (st->stuck != NULL) { /* refuses every growth, whatever is freed meanwhile */
    net = meter_net(m);
    m->room = -CLAUDE_METER_NO_LIMIT;
    m->base = net + m->room;
    return;
  }
  if (st->memories > 0) {
    for (b = st->current; b != NULL; b = b->outer) {
      if (b->memory <= 0) continue;
      l = b->stopped == R_MEMORY ? LLONG_MIN
                                 : add_sat(b->mem_mark - (long long)b->used_memory, b->memory);
      if (l < limit) {
        limit = l;
        st->limiter = b;
      }
    }
  }
  net = meter_net(m);
  if (limit <= net) {
    m->room = 0;
  } else {
    /* limit > net: the difference is exact in unsigned arithmetic */
    unsigned long long d = (unsigned long long)limit - (unsigned long long)net;
    m->room = d < (unsigned long long)CLAUDE_METER_NO_LIMIT ? (long long)d
                                                            : CLAUDE_METER_NO_LIMIT;
  }
  m->base = net + m->room; /* |net| stays far below 2^60: no overflow */
}

/* The allocator's news, on the thread that runs the state: a growth was
 * refused (the budget it broke stops), or a coroutine is being made inside a
 * budgeted call (it will copy its maker's hook: the innermost resume gets
 * the count hook first, for the rest of its resume). */
static void meter_event(claude_meter *m, int what) {
  budget_state *st = (budget_state *)m->ud;
  run_node *n;
  if (st->current == NULL) return;
  if (what == CLAUDE_METER_THREAD) {
    n = st->top;
    if (n != NULL && n->budgeted && !n->counting) {
      n->counting = 1;
      if (lua_gethook(n->co) != claude_budget_hook)
        lua_sethook(n->co, claude_budget_hook, LUA_MASKCOUNT, HOOK_PERIOD);
    }
    return;
  }
  if (st->limiter != NULL) {
    claude_budget_stop(st, st->limiter, R_MEMORY);
    claude_budget_set_limit(st);
  }
}

/* The allocator in a state whose own allocator keeps no meter: every block
 * goes through the wrapped one, under our meter. */
static void *budget_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  budget_state *st = (budget_state *)ud;
  long long delta;
  void *r;
  if (!claude_meter_admit(&st->own_meter, ptr, osize, nsize, &delta)) return NULL;
  r = st->orig(st->orig_ud, ptr, osize, nsize);
  if (r != NULL || nsize == 0) claude_meter_count(&st->own_meter, delta);
  return r;
}

/* A meter for the state (once): the host allocator's metered variant, or
 * ours around the state's allocator. The host's is swapped in only while a
 * budget is current (meter_on, meter_off): the allocations of the loop, of
 * the session, of everything between tool calls, are not counted at all. */
void claude_budget_need_meter(lua_State *L, budget_state *st) {
  claude_meter *m;
  if (st->meter != NULL) return;
  if (st->host_meter != NULL) {
    m = st->host_meter;
    st->plain_fn = lua_getallocf(L, &st->plain_ud);
    st->swapping = 1;
  } else {
    m = &st->own_meter;
    st->orig = lua_getallocf(L, &st->orig_ud);
    lua_setallocf(L, budget_alloc, st);
  }
  claude_meter_init(m);
  m->event = meter_event;
  m->ud = st;
  st->meter = m;
}

/* The state's allocator goes back to the one wrapped. If something wrapped
 * it after us, ours must stay reachable: st is kept (inert). */
int claude_budget_meter_close(lua_State *L, budget_state *st) {
  void *ud;
  if (st->meter != NULL) {
    st->meter->event = NULL;
    st->meter->room = CLAUDE_METER_NO_LIMIT;
  }
  if (st->meter != &st->own_meter) return 1; /* not wrapped */
  if (lua_getallocf(L, &ud) == budget_alloc && ud == st) {
    lua_setallocf(L, st->orig, st->orig_ud);
    return 1;
  }
  return 0;
}
