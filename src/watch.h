/*
 * watch.h -- the watch of a lua_State (watchdog.c): reaching Lua that holds
 * the loop from outside it. A thread pokes the state when a budgeted
 * resume's `run` deadline passed, and so do signals that interrupt; a poke
 * runs w->arm(w->ud, what) in a signal handler on the state's thread. Where
 * no poke can help (Lua runs with hooks off), the thread ends the process:
 * an interrupting signal the loop did not see within a second, and, when
 * asked (claude_watch_set_stuck), a budgeted call busy long past its
 * deadline. One per state, in its context (claude_ctx, context.h, which
 * includes this header, not the other way round); the budgets set the arm
 * while they exist (claude_watch_set_arm). Private to claude.core.
 */
#ifndef CLAUDE_WATCH_H
#define CLAUDE_WATCH_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

enum { CLAUDE_POKE_BUDGET = 1, CLAUDE_POKE_INTERRUPT = 2 };
enum { CLAUDE_WATCH_IDLE = 0, CLAUDE_WATCH_RUNS = 1, CLAUDE_WATCH_NONE = -1 };

typedef void (*claude_watch_arm_fn)(void *ud, int what);

typedef struct claude_watch {
  _Atomic uint64_t deadline; /* uv_hrtime when the running resume's `run` ends; 0: none */
  _Atomic uint64_t wake_at;  /* when the thread looks next; UINT64_MAX: when told */
  _Atomic uint64_t resumes;  /* deadlines published: resumes come and go */
  _Atomic uint64_t period;   /* the `run` of the last one, in nanoseconds */
  /* what a poke runs, and its argument: read by a signal handler on the
   * state's thread, so each pair is whole before the handler can see it */
  _Atomic(claude_watch_arm_fn) arm;
  void *_Atomic ud;
  /* a budgeted call busy this long past its deadline ends the process (0: never);
   * written on the state's thread, read by the watchdog */
  _Atomic uint64_t stuck_ns;
  int slot;    /* in the process-wide table of watched states, or -1 */
  int status; /* CLAUDE_WATCH_*: no thread yet, it runs, or NONE: no thread (none could
                * be made, or closed): budgets count instead */
  atomic_int stop;
  pthread_t owner; /* the thread the state runs on */
  pthread_t thread;
  int interest[32]; /* interrupting watchers per signal number */
  char label[64];   /* what the process calls itself when it ends it ("claudelua") */
} claude_watch;

void claude_watch_init(claude_watch *w);
/* What a poke runs from now on (arm NULL: nothing); on the state's thread. */
void claude_watch_set_arm(claude_watch *w, claude_watch_arm_fn arm, void *ud);
void claude_watch_close(claude_watch *w);
void claude_watch_wake(claude_watch *w);
void claude_watch_owner(claude_watch *w);
/* Publishes the deadline of the resume starting (`run` nanoseconds from now)
 * or ending (0: none runs; or the enclosing resume's again). On the state's
 * thread; the hot path of every budgeted resume: no lock, and no signal to
 * the thread while it wakes before the deadline (claude_watch_wake). */
static inline void claude_watch_deadline(claude_watch *w, uint64_t d, uint64_t run) {
  atomic_store(&w->deadline, d);
  if (d != 0) {
    uint64_t n = atomic_load_explicit(&w->resumes, memory_order_relaxed);
    atomic_store_explicit(&w->resumes, n + 1, memory_order_relaxed);
    if (run != 0 && atomic_load_explicit(&w->period, memory_order_relaxed) != run)
      atomic_store_explicit(&w->period, run, memory_order_relaxed);
    if (!pthread_equal(w->owner, pthread_self())) claude_watch_owner(w);
    if (d < atomic_load(&w->wake_at)) claude_watch_wake(w);
  }
}
/* The CPU time thread `tid` (0: the calling thread) wanted so far, in
 * nanoseconds: the time it ran plus the time it waited for a CPU while
 * runnable (the kernel's schedstat), so that a spin reads as busy on a
 * machine whose CPUs other processes hold; 0 when the kernel does not say.
 * Async-signal-safe. */
uint64_t claude_thread_wanted_ns(long tid);
/* Whether the published deadline has passed (for the handler's arm). */
int claude_watch_due(claude_watch *w);
/* A budgeted call still busy `ns` past its `run` deadline ends the process
 * (status 70, a line on stderr starting with `label`); 0: never. */
void claude_watch_set_stuck(claude_watch *w, uint64_t ns, const char *label);
/* A watcher of signal `sig` that interrupts comes (on) or goes; -1 if it
 * cannot (no slot left). */
int claude_watch_interest(claude_watch *w, int sig, int on);
/* The loop ran the watcher of `sig`: a next one is not a second in a row. */
void claude_watch_seen(claude_watch *w, int sig);
/* Whether signal `sig`, watched to interrupt, arrived. */
int claude_watch_received(claude_watch *w, int sig);

#endif
