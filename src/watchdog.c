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
 *                  with a `run` limit, or the first interrupting watcher. The
 *                  state publishes the deadline of the resume running
 *                  (claude_watch_deadline, two atomic stores per resume, no
 *                  lock); the thread sleeps until it, and when it finds it
 *                  passed, pokes the state's thread. When nothing runs it
 *                  sleeps until told: a SIGURG sent to it (it blocks every
 *                  signal and waits in sigtimedwait), once per busy period,
 *                  not per resume; a signal handler can send one too.
 *   the poke       SIGURG sent to the state's thread (pthread_kill): it is
 *                  ignored by default, so a stray one is harmless, and our
 *                  handler passes on those that are not ours.
 *   interrupts     a signal watched with `interrupt` (core.signal's fourth
 *                  argument) goes on to libuv's handler, so the Lua watcher
 *                  runs once the loop is free, and wakes the thread: when the
 *                  loop has not seen it INTERRUPT_DELAY later, Lua holds the
 *                  loop, and the thread pokes the state. Not at once: Lua
 *                  that gives the loop back soon (a tool call that ends, the
 *                  code between calls) is not to be interrupted, or a signal
 *                  that asks for a graceful stop would fail the call that
 *                  happened to run. The same signal again before the loop saw
 *                  the first ends the process (_exit(128 + signal)), as the
 *                  second Ctrl-C does in lua.c.
 *
 * A hook cannot reach Lua that runs with hooks off (a __gc metamethod; see
 * budget/hook.c), nor a C function that runs long. There the thread is the
 * last resort: an interrupting signal the loop has not seen INTERRUPT_GRACE
 * after it came ends the process (128 + signal), so that the first SIGTERM
 * always works; and, when the state asked for it (core.stuck_exit), a
 * budgeted call still running `stuck` seconds past its deadline while its
 * thread keeps the CPU busy (a thread blocked in a system call is left
 * alone: it comes back) ends it with status 70, for a supervisor to restart.
 * Busy means wanting the CPU: the time the thread ran and the time it waited
 * for a CPU while runnable (the kernel's schedstat), so that a spin on a
 * machine whose CPUs other processes hold is still a spin.
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
#include <stdio.h>
#include <fcntl.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <uv.h>

#include "watch.h"

#define MAX_SLOTS 64
/* While a deadline stays passed, poke again this often: an arm can be lost
 * when the handler lands while the state's thread changes the same hook. */
#define REPOKE_NS ((uint64_t)100 * 1000 * 1000)
#define SIG_POKE SIGURG
/* An interrupting signal the loop has not seen this long after it came: the
 * Lua holding the loop cannot be interrupted, the process ends. */
#define INTERRUPT_GRACE_NS ((uint64_t)1000 * 1000 * 1000)
/* An interrupting signal the loop has not seen this long after it came: Lua
 * holds the loop, and is interrupted (a turn of a loop that is not held ends
 * far sooner). */
#define INTERRUPT_DELAY_NS ((uint64_t)100 * 1000 * 1000)
/* A stuck call is one whose thread wanted the CPU (ran, or waited for a CPU
 * while runnable) at least 1/STUCK_BUSY of the time: a thread blocked in a
 * system call wants next to none. */
#define STUCK_BUSY 4
/* The status a stuck call ends the process with (EX_SOFTWARE). */
#define STUCK_STATUS 70

typedef struct slot {
  _Atomic(claude_watch *) w; /* NULL: free; RESERVED while being taken */
  _Atomic uintptr_t owner;   /* the state's thread (pthread_t), 0 while unknown */
  atomic_long owner_tid;     /* the same thread's kernel id, for its schedstat */
  atomic_int poke;           /* CLAUDE_POKE_* waiting for the owner's handler */
  atomic_uint interest;      /* 1 << signum: signals that interrupt this state */
  atomic_uint pending;       /* 1 << signum: arrived, the loop's watcher not yet run */
  atomic_uint received;      /* 1 << signum: interrupting signals that arrived */
  _Atomic uintptr_t watcher; /* the watchdog thread (pthread_t), 0 while none */
  _Atomic uint64_t pending_at[32]; /* when each pending signal came (CLOCK_MONOTONIC) */
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
    /* an interrupt whose signal the loop saw meanwhile (claude_watch_seen, on
     * this thread) is over: the Lua running now is not what held the loop */
    if ((what & CLAUDE_POKE_INTERRUPT) && !(atomic_load(&s->pending) & atomic_load(&s->interest)))
      what &= ~CLAUDE_POKE_INTERRUPT;
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

/* CLOCK_MONOTONIC in nanoseconds (uv_hrtime's clock), from a signal
 * handler too: clock_gettime is async-signal-safe. */
static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void on_interrupt(int sig, siginfo_t *si, void *uc) {
  int saved = errno, i;
  unsigned bit = 1u << sig;
  for (i = 0; i < MAX_SLOTS; i++) {
    slot *s = &slots[i];
    claude_watch *w = atomic_load(&s->w);
    uintptr_t watcher;
    if (w == NULL || w == RESERVED || !(atomic_load(&s->interest) & bit)) continue;
    atomic_fetch_or(&s->received, bit);
    /* the loop has not seen the last one: it is stuck, end the process */
    if (atomic_load(&s->pending) & bit) _exit(128 + sig);
    atomic_store(&s->pending_at[sig], mono_ns()); /* before the bit: the thread reads both */
    atomic_fetch_or(&s->pending, bit);
    /* the watchdog interrupts the Lua holding the loop, if it does, and times
     * how long the loop takes to see the signal; without one, at once */
    watcher = atomic_load(&s->watcher);
    if (watcher != 0) pthread_kill(id_thread(watcher), SIG_POKE);
    else poke(s, CLAUDE_POKE_INTERRUPT);
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
    atomic_store(&s->watcher, 0);
    w->owner = pthread_self();
    atomic_store(&s->owner, thread_id(w->owner));
    atomic_store(&s->owner_tid, (long)syscall(SYS_gettid));
    atomic_store(&s->w, w);
    w->slot = i;
    return 0;
  }
  return -1;
}

/* ---- the thread ---------------------------------------------------------- */

/* Ends the process from the watchdog: "label: text" on stderr, then _exit
 * (the state's thread is stuck: nothing else can run). */
static void die(claude_watch *w, int status, const char *text) {
  char msg[512];
  snprintf(msg, sizeof msg, "%s: %s\n", w->label[0] ? w->label : "claudelua", text);
  if (write(2, msg, strlen(msg)) < 0) { /* nothing left to tell */
  }
  _exit(status);
}

static const char *signal_name(int sig) {
  switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    case SIGQUIT: return "SIGQUIT";
    case SIGUSR1: return "SIGUSR1";
    case SIGUSR2: return "SIGUSR2";
    default: return "a signal";
  }
}

/* An interrupting signal the loop has not seen INTERRUPT_DELAY after it came
 * interrupts the Lua holding the loop (once per arrival: `interrupted[sig]`
 * is the arrival poked for); INTERRUPT_GRACE after, it ends the process.
 * Returns when to look again (UINT64_MAX: when told). */
static uint64_t check_interrupts(claude_watch *w, slot *s, uint64_t now, uint64_t *interrupted) {
  unsigned pending = atomic_load(&s->pending);
  uint64_t next = UINT64_MAX;
  int sig;
  for (sig = 1; pending != 0 && sig < 32; sig++) {
    uint64_t at;
    if (!(pending & (1u << sig))) continue;
    at = atomic_load(&s->pending_at[sig]);
    if (interrupted[sig] != at) {
      if (now < at + INTERRUPT_DELAY_NS) {
        if (at + INTERRUPT_DELAY_NS < next) next = at + INTERRUPT_DELAY_NS;
        continue;
      }
      interrupted[sig] = at;
      poke(s, CLAUDE_POKE_INTERRUPT);
    }
    if (now >= at + INTERRUPT_GRACE_NS) {
      char text[256];
      snprintf(text, sizeof text, "%s: the Lua code holding the loop could not be interrupted "
               "within %.0f s (a __gc metamethod that spins, or a C function that runs "
               "long); exiting", signal_name(sig), (double)INTERRUPT_GRACE_NS / 1e9);
      die(w, 128 + sig, text);
    }
    if (at + INTERRUPT_GRACE_NS < next) next = at + INTERRUPT_GRACE_NS;
  }
  return next;
}

uint64_t claude_thread_wanted_ns(long tid) {
  char path[64] = "/proc/thread-self/schedstat", buf[96];
  uint64_t field[2] = {0, 0};
  ssize_t n;
  int fd, k = 0, i;
  if (tid > 0) { /* (no snprintf: this runs in signal handlers too) */
    char digits[24], *p = digits + sizeof digits;
    const char *head = "/proc/self/task/", *tail = "/schedstat";
    size_t at = 0;
    do *--p = (char)('0' + tid % 10);
    while ((tid /= 10) != 0);
    while (*head) path[at++] = *head++;
    while (p < digits + sizeof digits) path[at++] = *p++;
    while (*tail) path[at++] = *tail++;
    path[at] = '\0';
  }
  do fd = open(path, O_RDONLY | O_CLOEXEC);
  while (fd < 0 && errno == EINTR);
  if (fd < 0) return 0;
  do n = read(fd, buf, sizeof buf);
  while (n < 0 && errno == EINTR);
  close(fd);
  for (i = 0; i < n && k < 2; i++) { /* "ran waited slices\n", in nanoseconds */
    if (buf[i] >= '0' && buf[i] <= '9') field[k] = field[k] * 10 + (uint64_t)(buf[i] - '0');
    else if (buf[i] == ' ') k++;
    else break;
  }
  return k < 1 ? 0 : field[0] + field[1] + 1;
}

/* The CPU the state's thread wanted so far, in nanoseconds: its schedstat,
 * else the CPU time it used (a kernel without schedstats: a spin under load
 * may then read as idle); 0 when unknown. */
static uint64_t owner_cpu(slot *s) {
  uintptr_t owner = atomic_load(&s->owner);
  long tid = atomic_load(&s->owner_tid);
  uint64_t wanted = tid > 0 ? claude_thread_wanted_ns(tid) : 0;
  clockid_t cid;
  struct timespec ts;
  if (wanted != 0) return wanted;
  if (owner == 0 || pthread_getcpuclockid(id_thread(owner), &cid) != 0 ||
      clock_gettime(cid, &ts) != 0)
    return 0;
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec + 1;
}

/* Whether the state's thread is runnable now (running, or waiting for a
 * CPU), not blocked: the state letter of /proc/self/task/TID/stat, after the
 * command's closing parenthesis. 1 when the kernel does not say. */
static int owner_runnable(slot *s) {
  char path[64], buf[256], *p;
  long tid = atomic_load(&s->owner_tid);
  ssize_t n;
  int fd;
  if (tid <= 0) return 1;
  snprintf(path, sizeof path, "/proc/self/task/%ld/stat", tid);
  if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) return 1;
  n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 1;
  buf[n] = '\0';
  p = strrchr(buf, ')');
  return p == NULL || p[1] != ' ' || p[2] == 'R';
}

/* The resume whose deadline `d` passed still runs: once it has for `stuck_ns`
 * (when asked) with its thread busy, the process ends. A thread that was
 * mostly idle meanwhile (blocked in a system call) starts a new period. */
typedef struct stuck {
  uint64_t deadline, since, cpu;
  int blocked; /* the thread was seen blocked during the period */
} stuck;

static void check_stuck(claude_watch *w, slot *s, stuck *k, uint64_t d, uint64_t now) {
  uint64_t limit = atomic_load(&w->stuck_ns), cpu;
  if (limit == 0) { /* (no look at the thread's time where no one asked) */
    k->deadline = 0;
    return;
  }
  if (d != k->deadline) {
    k->deadline = d;
    k->since = now;
    k->cpu = owner_cpu(s);
    k->blocked = 0;
    return;
  }
  /* a look each REPOKE_NS: a thread blocked in a system call at any of them
   * is not stuck, even if it wanted the CPU for a while around it (a fork
   * under load, the wake-up when the call returns) */
  if (!owner_runnable(s)) k->blocked = 1;
  if (now - k->since < limit) return;
  cpu = owner_cpu(s);
  if (!k->blocked &&
      (cpu == 0 || k->cpu == 0 || (cpu - k->cpu) * STUCK_BUSY >= now - k->since)) {
    char text[256];
    snprintf(text, sizeof text, "a budgeted call held the loop %.1f s past its run budget, "
             "busy where a budget cannot stop it (a __gc metamethod that spins, or a C "
             "function that runs long); exiting", (double)(now - d) / 1e9);
    die(w, STUCK_STATUS, text);
  }
  k->since = now;
  k->cpu = cpu;
  k->blocked = 0;
}

/* Sleeps until `at` (uv_hrtime nanoseconds; UINT64_MAX: until told), unless
 * a deadline before it was published meanwhile (`seen` is the one looked
 * at). Told: a SIG_POKE sent to this thread, which blocks it; one sent
 * before it waits is pending, not lost. */
static void sleep_until(claude_watch *w, uint64_t at, uint64_t seen) {
  sigset_t poke_set;
  uint64_t d, now;
  atomic_store(&w->wake_at, at);
  d = atomic_load(&w->deadline);
  if (atomic_load(&w->stop) || (d != seen && d != 0 && d < at)) return;
  sigemptyset(&poke_set);
  sigaddset(&poke_set, SIG_POKE);
  if (at == UINT64_MAX) {
    sigwaitinfo(&poke_set, NULL);
    return;
  }
  now = uv_hrtime();
  if (at > now) {
    struct timespec ts;
    ts.tv_sec = (time_t)((at - now) / 1000000000u);
    ts.tv_nsec = (long)((at - now) % 1000000000u);
    sigtimedwait(&poke_set, NULL, &ts);
  }
}

/* Sleeps until the published deadline; pokes when it passed. Between resumes
 * (no deadline) it looks again one `run` later while resumes come and go,
 * so that each new deadline is later than when it wakes and needs no signal;
 * after a quiet period it sleeps until told. Interrupts and stuck calls may
 * end the process. */
static void *watch_main(void *arg) {
  claude_watch *w = (claude_watch *)arg;
  slot *s = &slots[w->slot];
  uint64_t poked = 0, poked_at = 0, seen = UINT64_MAX;
  uint64_t interrupted[32] = {0}; /* per signal, the arrival interrupted */
  stuck k = {0, 0, 0, 0};
  while (!atomic_load(&w->stop)) {
    uint64_t d = atomic_load(&w->deadline), now = uv_hrtime(), n = atomic_load(&w->resumes);
    uint64_t at, next;
    if (d != 0 && now >= d) {
      if (d != poked || now - poked_at >= REPOKE_NS) {
        poke(s, CLAUDE_POKE_BUDGET);
        poked = d;
        poked_at = now;
      }
      check_stuck(w, s, &k, d, now);
      at = now + REPOKE_NS;
    } else if (d != 0) {
      at = d;
    } else if (n != seen) {
      seen = n;
      at = now + atomic_load_explicit(&w->period, memory_order_relaxed);
    } else {
      at = UINT64_MAX;
    }
    next = check_interrupts(w, s, now, interrupted);
    sleep_until(w, next < at ? next : at, d);
  }
  return NULL;
}

/* Starts the thread (every signal blocked in it: they are the loop's, and it
 * waits for its own SIG_POKE). */
static int start_thread(claude_watch *w) {
  sigset_t all, old;
  int err;
  if (take_slot(w) != 0) return -1;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  err = pthread_create(&w->thread, NULL, watch_main, w);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (err != 0) return -1;
  atomic_store(&slots[w->slot].watcher, thread_id(w->thread));
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
  atomic_init(&w->stuck_ns, 0);
  atomic_init(&w->stop, 0);
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
  if (w->status == CLAUDE_WATCH_IDLE) {
    if (start_thread(w) != 0) w->status = CLAUDE_WATCH_NONE;
    return; /* a new thread looks at the deadline first */
  }
  pthread_kill(w->thread, SIG_POKE);
}

/* The state now runs on another thread than before (an application may move
 * a lua_State between threads): pokes go there. */
void claude_watch_owner(claude_watch *w) {
  w->owner = pthread_self();
  if (w->slot >= 0) {
    atomic_store(&slots[w->slot].owner_tid, (long)syscall(SYS_gettid));
    atomic_store(&slots[w->slot].owner, thread_id(w->owner));
  }
}

int claude_watch_interest(claude_watch *w, int sig, int on) {
  struct sigaction cur, sa;
  slot *s;
  if (sig <= 0 || sig >= 32) return -1;
  if (on) {
    if (take_slot(w) != 0) return -1;
    /* the thread times the loop's answer to the signal */
    if (w->status == CLAUDE_WATCH_IDLE && start_thread(w) != 0) w->status = CLAUDE_WATCH_NONE;
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

void claude_watch_set_stuck(claude_watch *w, uint64_t ns, const char *label) {
  size_t n = label != NULL ? strlen(label) : 0;
  if (n >= sizeof w->label) n = sizeof w->label - 1;
  if (n > 0) memcpy(w->label, label, n);
  w->label[n] = '\0';
  atomic_store(&w->stuck_ns, ns);
}

int claude_watch_due(claude_watch *w) {
  uint64_t d = atomic_load(&w->deadline);
  return d != 0 && uv_hrtime() >= d;
}

/* Stops and joins the thread, gives the slot back. On the state's thread. */
void claude_watch_close(claude_watch *w) {
  if (w->slot >= 0) { /* no handler wakes the thread any more */
    atomic_store(&slots[w->slot].interest, 0);
    atomic_store(&slots[w->slot].watcher, 0);
  }
  if (w->status == CLAUDE_WATCH_RUNS) {
    atomic_store(&w->stop, 1);
    pthread_kill(w->thread, SIG_POKE);
    pthread_join(w->thread, NULL);
  }
  if (w->slot >= 0) {
    slot *s = &slots[w->slot];
    atomic_store(&s->owner, 0);
    atomic_store(&s->w, NULL);
    w->slot = -1;
  }
  w->status = CLAUDE_WATCH_NONE; /* nothing starts it again */
}
