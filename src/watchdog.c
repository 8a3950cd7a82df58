/*
 * watchdog.c -- stopping Lua that holds the loop, from outside it.
 *
 * Two things must reach Lua code that runs without yielding: a budget's
 * `run` limit, and an interrupting signal (SIGINT in the claudelua host,
 * SIGTERM for `claudelua mcp`). Both end the same way as in lua.c: a count
 * hook is set, from a signal handler on the thread that runs the state, on
 * the coroutines being resumed there (budget/ keeps that chain and owns the
 * hook). lua_sethook is meant for that (lua.c's SIGINT handler does it); we
 * never call it from another thread, where it would walk a list of call
 * frames the running thread changes under it.
 *
 *   the watchdog   one thread per state, started by the first budgeted resume
 *                  with a `run` limit. The state publishes the deadline of
 *                  the resume running (claude_watch_deadline, two atomic
 *                  stores per resume, no lock); the thread sleeps until it,
 *                  and when it finds it passed, pokes the state's thread.
 *                  When nothing runs it sleeps until told (one signal on a
 *                  condition variable per busy period, not per resume).
 *   the poke       SIGURG sent to the state's thread (pthread_kill): it is
 *                  ignored by default, so a stray one is harmless, and our
 *                  handler passes on those that are not ours.
 *   interrupts     a signal watched with `interrupt` (core.signal's fourth
 *                  argument) pokes the state too, then goes on to libuv's
 *                  handler, so the Lua watcher runs once the loop is free.
 *                  The same signal again before the loop saw the first ends
 *                  the process (_exit(128 + signal)), as the second Ctrl-C
 *                  does in lua.c.
 *
 * Signal handlers are process-wide, so this file keeps a small process-wide
 * table: one slot per state that uses it, with the thread it runs on and the
 * pokes waiting, all atomics. A handler touches the state of a slot only on
 * the slot's own thread, where the state cannot be freed meanwhile.
 *
 * The watch is the state's context's (claude_ctx): made with it, closed in
 * its __gc after its objects (signal watchers) are gone. What a poke does is
 * the budgets' arm, set while their state exists (claude_watch_set_arm).
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <uv.h>

#include "watch.h"

#define MAX_SLOTS 64
/* While a deadline stays passed, poke again this often: an arm can be lost
 * when the handler lands while the state's thread changes the same hook. */
#define REPOKE_NS ((uint64_t)100 * 1000 * 1000)
#define SIG_POKE SIGURG

typedef struct slot {
  _Atomic(claude_watch *) w; /* NULL: free; RESERVED while being taken */
  _Atomic uintptr_t owner;   /* the state's thread (pthread_t), 0 while unknown */
  atomic_int poke;           /* CLAUDE_POKE_* waiting for the owner's handler */
  atomic_uint interest;      /* 1 << signum: signals that interrupt this state */
  atomic_uint pending;       /* 1 << signum: arrived, the loop's watcher not yet run */
  atomic_uint received;      /* 1 << signum: interrupting signals that arrived */
} slot;

static slot slots[MAX_SLOTS];
static claude_watch reserved_mark;
#define RESERVED (&reserved_mark)

static pthread_once_t poke_once = PTHREAD_ONCE_INIT;
static struct sigaction poke_old;
static int poke_installed;
static struct sigaction interrupt_old[NSIG];

_Static_assert(sizeof(pthread_t) <= sizeof(uintptr_t), "pthread_t fits an integer");

static uintptr_t thread_id(pthread_t t) {
  uintptr_t u = 0;
  memcpy(&u, &t, sizeof t);
  return u;
}

static pthread_t id_thread(uintptr_t u) {
  pthread_t t;
  memset(&t, 0, sizeof t);
  memcpy(&t, &u, sizeof t);
  return t;
}

/* Hands a signal that is not ours to the handler that was there before. */
static void chain(const struct sigaction *old, int sig, siginfo_t *si, void *uc) {
  if (old->sa_flags & SA_SIGINFO) {
    if (old->sa_sigaction != NULL) old->sa_sigaction(sig, si, uc);
  } else if (old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN &&
             old->sa_handler != NULL) {
    old->sa_handler(sig);
  }
}

/* Runs the pokes waiting for this thread; returns whether there were any. */
static int run_pokes(uintptr_t self) {
  int i, any = 0;
  for (i = 0; i < MAX_SLOTS; i++) {
    slot *s = &slots[i];
    claude_watch *w = atomic_load(&s->w);
    claude_watch_arm_fn arm;
    int what;
    if (w == NULL || w == RESERVED || atomic_load(&s->owner) != self) continue;
    what = atomic_exchange(&s->poke, 0);
    if (what == 0) continue;
    any = 1;
    /* owner == self: only this thread frees w or changes its arm, and it is
     * in this handler (claude_watch_set_arm stores ud before arm) */
    arm = atomic_load(&w->arm);
    if (arm != NULL) arm(atomic_load(&w->ud), what);
  }
  return any;
}

static void on_poke(int sig, siginfo_t *si, void *uc) {
  int saved = errno;
  if (!run_pokes(thread_id(pthread_self()))) chain(&poke_old, sig, si, uc);
  errno = saved;
}

static void install_poke(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_poke;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigfillset(&sa.sa_mask);
  poke_installed = sigaction(SIG_POKE, &sa, &poke_old) == 0;
}

/* Asks the state's thread to run `what` in its handler. */
static void poke(slot *s, int what) {
  uintptr_t owner = atomic_load(&s->owner);
  atomic_fetch_or(&s->poke, what);
  if (owner == 0) return;
  if (owner == thread_id(pthread_self())) run_pokes(owner);
  else pthread_kill(id_thread(owner), SIG_POKE);
}

static void on_interrupt(int sig, siginfo_t *si, void *uc) {
  int saved = errno, i;
  unsigned bit = 1u << sig;
  for (i = 0; i < MAX_SLOTS; i++) {
    slot *s = &slots[i];
    claude_watch *w = atomic_load(&s->w);
    if (w == NULL || w == RESERVED || !(atomic_load(&s->interest) & bit)) continue;
    atomic_fetch_or(&s->received, bit);
    /* the loop has not seen the last one: it is stuck, end the process */
    if (atomic_fetch_or(&s->pending, bit) & bit) _exit(128 + sig);
    poke(s, CLAUDE_POKE_INTERRUPT);
  }
  if (sig > 0 && sig < NSIG) chain(&interrupt_old[sig], sig, si, uc);
  errno = saved;
}

/* Takes a slot for w (its thread is the caller); 0, or -1 when all are taken. */
static int take_slot(claude_watch *w) {
  int i;
  if (w->slot >= 0) return 0;
  pthread_once(&poke_once, install_poke);
  if (!poke_installed) return -1;
  for (i = 0; i < MAX_SLOTS; i++) {
    claude_watch *expected = NULL;
    slot *s = &slots[i];
    if (!atomic_compare_exchange_strong(&s->w, &expected, RESERVED)) continue;
    atomic_store(&s->poke, 0);
    atomic_store(&s->interest, 0);
    atomic_store(&s->pending, 0);
    atomic_store(&s->received, 0);
    w->owner = pthread_self();
    atomic_store(&s->owner, thread_id(w->owner));
    atomic_store(&s->w, w);
    w->slot = i;
    return 0;
  }
  return -1;
}

/* ---- the thread ---------------------------------------------------------- */

/* Sleeps until `at` (uv_hrtime nanoseconds; UINT64_MAX: until told), unless
 * a deadline before it was published meanwhile. Holds w->mu. */
static void sleep_until(claude_watch *w, uint64_t at, uint64_t seen) {
  uint64_t d;
  atomic_store(&w->wake_at, at);
  d = atomic_load(&w->deadline);
  if (w->stop || (d != seen && d != 0 && d < at)) return;
  if (at == UINT64_MAX) {
    pthread_cond_wait(&w->cv, &w->mu);
  } else {
    struct timespec ts;
    ts.tv_sec = (time_t)(at / 1000000000u);
    ts.tv_nsec = (long)(at % 1000000000u);
    pthread_cond_timedwait(&w->cv, &w->mu, &ts);
  }
}

/* Sleeps until the published deadline; pokes when it passed. Between resumes
 * (no deadline) it looks again one `run` later while resumes come and go,
 * so that each new deadline is later than when it wakes and needs no signal;
 * after a quiet period it sleeps until told. */
static void *watch_main(void *arg) {
  claude_watch *w = (claude_watch *)arg;
  uint64_t poked = 0, poked_at = 0, seen = UINT64_MAX;
  pthread_mutex_lock(&w->mu);
  while (!w->stop) {
    uint64_t d = atomic_load(&w->deadline), now = uv_hrtime(), n = atomic_load(&w->resumes);
    if (d != 0 && now >= d) {
      if (d != poked || now - poked_at >= REPOKE_NS) {
        poke(&slots[w->slot], CLAUDE_POKE_BUDGET);
        poked = d;
        poked_at = now;
      }
      sleep_until(w, now + REPOKE_NS, d);
    } else if (d != 0) {
      sleep_until(w, d, d);
    } else if (n != seen) {
      seen = n;
      sleep_until(w, now + atomic_load_explicit(&w->period, memory_order_relaxed), d);
    } else {
      sleep_until(w, UINT64_MAX, d);
    }
  }
  pthread_mutex_unlock(&w->mu);
  return NULL;
}

/* Starts the thread (every signal blocked in it: they are the loop's). */
static int start_thread(claude_watch *w) {
  pthread_condattr_t ca;
  sigset_t all, old;
  int err;
  if (take_slot(w) != 0) return -1;
  if (pthread_mutex_init(&w->mu, NULL) != 0) return -1;
  if (pthread_condattr_init(&ca) != 0) {
    pthread_mutex_destroy(&w->mu);
    return -1;
  }
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* uv_hrtime's clock */
  err = pthread_cond_init(&w->cv, &ca);
  pthread_condattr_destroy(&ca);
  if (err != 0) {
    pthread_mutex_destroy(&w->mu);
    return -1;
  }
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  err = pthread_create(&w->thread, NULL, watch_main, w);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (err != 0) {
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    return -1;
  }
  w->status = CLAUDE_WATCH_RUNS;
  return 0;
}

/* ---- the state's side ---------------------------------------------------- */

/* A watch with no thread, no slot and nothing to arm yet. */
void claude_watch_init(claude_watch *w) {
  memset(w, 0, sizeof *w);
  atomic_init(&w->deadline, 0);
  atomic_init(&w->wake_at, UINT64_MAX);
  atomic_init(&w->resumes, 0);
  atomic_init(&w->period, 0);
  atomic_init(&w->arm, NULL);
  atomic_init(&w->ud, NULL);
  w->slot = -1;
}

/* A handler that lands between two of these stores sees no arm, never an
 * arm with another's ud: the arm goes first, its ud is in place before the
 * new arm appears. */
void claude_watch_set_arm(claude_watch *w, claude_watch_arm_fn arm, void *ud) {
  atomic_store(&w->arm, NULL);
  atomic_store(&w->ud, ud);
  atomic_store(&w->arm, arm);
}

/* The cold half of claude_watch_deadline: the thread must look at the new
 * deadline now (it is idle, or sleeps past it), or does not exist yet. */
void claude_watch_wake(claude_watch *w) {
  if (w->status == CLAUDE_WATCH_NONE) return;
  if (w->status == CLAUDE_WATCH_IDLE && start_thread(w) != 0) {
    w->status = CLAUDE_WATCH_NONE;
    return;
  }
  pthread_mutex_lock(&w->mu);
  pthread_cond_signal(&w->cv);
  pthread_mutex_unlock(&w->mu);
}

/* The state now runs on another thread than before (an application may move
 * a lua_State between threads): pokes go there. */
void claude_watch_owner(claude_watch *w) {
  w->owner = pthread_self();
  if (w->slot >= 0) atomic_store(&slots[w->slot].owner, thread_id(w->owner));
}

int claude_watch_interest(claude_watch *w, int sig, int on) {
  struct sigaction cur, sa;
  slot *s;
  if (sig <= 0 || sig >= 32) return -1;
  if (on) {
    if (take_slot(w) != 0) return -1;
    s = &slots[w->slot];
    if (w->interest[sig]++ == 0) atomic_fetch_or(&s->interest, 1u << sig);
    /* after libuv's handler (installed by uv_signal_start), in front of it */
    if (sigaction(sig, NULL, &cur) == 0 && !((cur.sa_flags & SA_SIGINFO) &&
                                             cur.sa_sigaction == on_interrupt)) {
      memset(&sa, 0, sizeof sa);
      sa.sa_sigaction = on_interrupt;
      sa.sa_flags = SA_SIGINFO | SA_RESTART;
      /* every signal blocked meanwhile, as libuv's handler expects: it takes a lock */
      sigfillset(&sa.sa_mask);
      interrupt_old[sig] = cur;
      sigaction(sig, &sa, NULL);
    }
    return 0;
  }
  if (w->slot < 0 || w->interest[sig] == 0) return 0;
  s = &slots[w->slot];
  if (--w->interest[sig] == 0) {
    atomic_fetch_and(&s->interest, ~(1u << sig));
    atomic_fetch_and(&s->pending, ~(1u << sig));
  }
  return 0;
}

void claude_watch_seen(claude_watch *w, int sig) {
  if (w->slot >= 0 && sig > 0 && sig < 32)
    atomic_fetch_and(&slots[w->slot].pending, ~(1u << sig));
}

int claude_watch_received(claude_watch *w, int sig) {
  if (w->slot < 0 || sig <= 0 || sig >= 32) return 0;
  return (atomic_load(&slots[w->slot].received) & (1u << sig)) != 0;
}

int claude_watch_due(claude_watch *w) {
  uint64_t d = atomic_load(&w->deadline);
  return d != 0 && uv_hrtime() >= d;
}

/* Stops and joins the thread, gives the slot back. On the state's thread. */
void claude_watch_close(claude_watch *w) {
  if (w->status == CLAUDE_WATCH_RUNS) {
    pthread_mutex_lock(&w->mu);
    w->stop = 1;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
  }
  if (w->slot >= 0) {
    slot *s = &slots[w->slot];
    atomic_store(&s->interest, 0);
    atomic_store(&s->owner, 0);
    atomic_store(&s->w, NULL);
    w->slot = -1;
  }
  w->status = CLAUDE_WATCH_NONE; /* nothing starts it again */
}
