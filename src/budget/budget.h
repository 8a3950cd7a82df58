/*
 * budget.h -- the private declarations of tool budgets, shared by budget.c
 * (the per-state part, core.budget{...} and the run of a budgeted resume),
 * hook.c (the chain of resumes, the watchdog's arm, the count hook) and
 * memory.c (the memory limit). See budget.c for the design.
 *
 * What every budgeted resume runs (pushing its node on the chain, switching
 * the meter on and off) is static inline here: the tool-call path pays no
 * call for crossing a file boundary.
 */
#ifndef CLAUDE_BUDGET_H
#define CLAUDE_BUDGET_H

#include <stdatomic.h>

#include "budget/meter.h"
#include "context.h"

/* Adds core.budget, core.budget_current and core.resume to the module table
 * on top of the stack (budget.c). */
void claude_open_budget(lua_State *L);

/* core.resume for C: resumes co with the narg values on its stack (lua_resume's status and
 * *nres), as the running coroutine that a budget's watchdog and an interrupt reach. */
int claude_resume(lua_State *L, lua_State *co, int narg, int *nres);
/* claude_resume in two steps, for a caller that resumes often (core.pending's reader): the
 * state's budgets, or NULL while there are none (once made they last as long as the state:
 * keep a non-NULL one), then the resume with them. */
void *claude_resume_state(lua_State *L);
int claude_resume_in(void *budgets, lua_State *L, lua_State *co, int narg, int *nres);

/* Instructions between two looks at the budget, when counting. */
#define HOOK_PERIOD 1000

typedef struct budget budget;

/* A coroutine being resumed (b:resume, core.resume, a stopped call's
 * closing): lives on the resumer's C stack while lua_resume runs. A signal
 * handler on the state's thread reads the chain: a node is whole before it
 * is linked. */
typedef struct run_node {
  lua_State *co;
  struct run_node *outer;
  unsigned char budgeted; /* inside a budgeted call: the watchdog arms it */
  unsigned char counting; /* has the count hook for the whole resume */
} run_node;

/* One per lua_State, malloc'ed: it must outlive every allocation it sees.
 * Made after the state's context (claude_ctx), so that its sentinel's __gc
 * runs before the context's at lua_close: the watch is there while st is. */
typedef struct budget_state {
  budget *current;                /* innermost budget being resumed, or NULL */
  run_node *volatile top;         /* innermost resume, or NULL */
  lua_State *volatile interrupt;  /* where an interrupt waits to be raised */
  int counting;                   /* current budgets with `instructions` */
  int memories;                   /* current budgets with `memory` */
  claude_meter *meter;            /* the host allocator's, own_meter, or NULL */
  claude_meter own_meter;         /* kept by budget_alloc, our wrapper */
  claude_meter *host_meter;       /* the host's metered allocator, not in use yet */
  lua_Alloc host_fn;
  void *host_ud;
  lua_Alloc plain_fn;             /* the host's allocator without the meter */
  void *plain_ud;
  int swapping;                   /* the host's: metered only while a budget is current */
  budget *limiter;                /* the budget the meter's room comes from */
  lua_Alloc orig;                 /* the allocator wrapped (meter == &own_meter) */
  void *orig_ud;
  claude_watch *watch;            /* the context's; arms the chain while st exists */
  /* where Lua turns hooks off (hook.c) */
  volatile unsigned hook_runs;    /* the hook ran: counted at each run */
  unsigned armed_runs;            /* hook_runs when the watchdog last armed... */
  uint64_t armed_deadline;        /* ...for this deadline, */
  uint64_t armed_at, armed_cpu;   /* at this time, the thread having used this much CPU */
  budget *stuck;                  /* its resume ran on, the hook never: growth is refused */
  lua_CFunction pcall_fn, xpcall_fn; /* the base library's, to find protected calls */
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
  long long mem_mark; /* the meter's count when this resume began */
  /* while running (node is NULL when it does not run) */
  budget *outer;
  run_node *node;
  /* why it stopped, or NULL: one of the reasons below, or the string given
   * to stop */
  const char *stopped;
  char custom[32];
};

/* The registry key of the state's sentinel (its address; defined with the
 * hook, which finds the state by it: budget.c calls the hook, not back). */
extern const char claude_budget_key;

/* Why a budget stopped: compared by address, so one object each
 * (hook.c). */
extern const char claude_budget_r_run[], claude_budget_r_instructions[],
    claude_budget_r_memory[], claude_budget_r_outer[];
#define R_RUN claude_budget_r_run
#define R_INSTRUCTIONS claude_budget_r_instructions
#define R_MEMORY claude_budget_r_memory
#define R_OUTER claude_budget_r_outer

/* ---- hook.c: the chain of resumes and the count hook ---- */

/* The count hook (lua_Hook). */
void claude_budget_hook(lua_State *L, lua_Debug *ar);
/* The watchdog's poke (claude_watch's arm), in a signal handler. */
void claude_budget_watch_arm(void *ud, int what);
/* Marks b stopped for `why` (the first reason stays) and arms the
 * coroutines running inside its call. */
void claude_budget_stop(budget_state *st, budget *b, const char *why);
/* Pushes the message of the stopped budget b. */
void claude_budget_push_stop_message(lua_State *L, const budget *b);
/* An interrupt waiting on a coroutine whose resume ended goes on. */
void claude_budget_pass_interrupt(budget_state *st);
/* core.stuck_exit and core.trusted_handler. */
int claude_budget_l_stuck_exit(lua_State *L);
int claude_budget_l_trusted_handler(lua_State *L);
/* The registry key of the set of message handlers known to return at once
 * (core.trusted_handler): an error a hook raises may call them. */
extern const char claude_budget_trusted_key;

static inline void push_node(budget_state *st, run_node *n) {
  n->outer = st->top;
  atomic_signal_fence(memory_order_seq_cst); /* whole before a handler sees it */
  st->top = n;
}

static inline void pop_node(budget_state *st, run_node *n) {
  st->top = n->outer;
  atomic_signal_fence(memory_order_seq_cst);
  if (st->interrupt == n->co) claude_budget_pass_interrupt(st);
}

/* ---- memory.c: the memory limit ---- */

/* A meter for the state, once (the host's metered allocator, or a wrapper). */
void claude_budget_need_meter(lua_State *L, budget_state *st);
/* The meter's room: the tightest limit of the current budgets. */
void claude_budget_set_limit(budget_state *st);
/* At lua_close: the meter stops listening and a wrapped allocator is put
 * back; returns whether st may be freed (no allocator of ours left). */
int claude_budget_meter_close(lua_State *L, budget_state *st);

/* Net bytes the state holds, as the meter counts them. */
static inline long long meter_net(const claude_meter *m) { return m->base - m->room; }

/* No budget is current: no limit. */
static inline void no_limit(claude_meter *m) {
  long long net = meter_net(m);
  m->room = CLAUDE_METER_NO_LIMIT;
  m->base = net + CLAUDE_METER_NO_LIMIT;
}

/* Before the outermost budget becomes current, after it is not any more:
 * the host's metered allocator is in only while a budget is current. */
static inline void meter_on(lua_State *L, budget_state *st) {
  if (st->swapping) lua_setallocf(L, st->host_fn, st->host_ud);
}

static inline void meter_off(lua_State *L, budget_state *st) {
  if (st->swapping) lua_setallocf(L, st->plain_fn, st->plain_ud);
}

#endif
