/*
 * meter.h -- the memory meter of tool budgets (private to the core and the
 * host).
 *
 * A budget's `memory` limit is kept by the state's allocator: it knows how
 * many bytes the state may still grow by (`room`) and refuses a growth past
 * it, a compare and a subtraction per allocation. The claudelua host's
 * allocator (host/alloc.c) has a metered variant and hands it to the budgets
 * (claude_budget_use_meter), which switch the state to it when the first
 * budget that needs it is made: a state without budgets pays nothing. In any
 * other state (stock lua5.4, an embedding application's allocator)
 * memory.c wraps the allocator with lua_setallocf and keeps the meter
 * in the wrapper, an indirect call more per allocation.
 */
#ifndef CLAUDE_METER_H
#define CLAUDE_METER_H

#include <stddef.h>

#include <lua.h>

typedef struct claude_meter claude_meter;

enum { CLAUDE_METER_REFUSED, CLAUDE_METER_THREAD };

/* room when no limit holds: far from overflowing either way */
#define CLAUDE_METER_NO_LIMIT ((long long)1 << 60)

struct claude_meter {
  /* bytes the state may still grow by (>= 0); the allocator takes each change
   * off it (a free gives room back) and refuses a growth larger than it */
  long long room;
  /* the budgets' side: net bytes held = base - room */
  long long base;
  /* the budgets' side, called on the allocating thread: a growth was refused,
   * or a coroutine (lua_State) is about to be made; NULL when nobody listens */
  void (*event)(claude_meter *m, int what);
  void *ud;
};

static inline void claude_meter_init(claude_meter *m) {
  m->room = CLAUDE_METER_NO_LIMIT;
  m->base = CLAUDE_METER_NO_LIMIT;
  m->event = NULL;
  m->ud = NULL;
}

/* Before the allocator does (ptr, osize) -> nsize: the change in bytes held
 * (*delta), and 0 when the growth must be refused (the caller returns NULL).
 * When ptr is NULL, osize is the kind of object Lua is making (lua_Alloc). A
 * free or shrink is never refused, even when room is below 0 (a stuck call
 * refuses every growth, budget/hook.c); the second test runs only on the way
 * to a refusal. */
static inline int claude_meter_admit(claude_meter *m, void *ptr, size_t osize, size_t nsize,
                                     long long *delta) {
  long long d;
  if (ptr == NULL) {
    d = (long long)nsize;
    if (osize == LUA_TTHREAD && m->event != NULL) m->event(m, CLAUDE_METER_THREAD);
  } else {
    d = (long long)nsize - (long long)osize;
  }
  *delta = d;
  if (d > m->room && d > 0) {
    if (m->event != NULL) m->event(m, CLAUDE_METER_REFUSED);
    return 0;
  }
  return 1;
}

/* After it succeeded (or freed). */
static inline void claude_meter_count(claude_meter *m, long long delta) { m->room -= delta; }

/* budget.c: the state's allocator offers `metered` (with its `ud`), which
 * keeps `m`; both must outlive the state. Budgets switch the state to it
 * when they first need a meter, instead of wrapping the allocator. */
void claude_budget_use_meter(lua_State *L, claude_meter *m, lua_Alloc metered, void *ud);

#endif
