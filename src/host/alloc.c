/*
 * alloc.c -- the claudelua host's Lua allocator.
 *
 * Lua allocates and frees small blocks (tables, strings, closures) at a high
 * rate: a tool call makes and drops a dozen tables. Blocks up to POOL_MAX
 * bytes come from per-size free lists carved out of 64 KiB slabs, which is
 * several times cheaper than malloc/free; larger blocks go to realloc/free.
 * Lua always tells the allocator a block's size when it frees or resizes it,
 * so no header is needed. Memory of small blocks is kept for reuse;
 * claude_alloc_trim gives back the slabs whose blocks are all free (after a
 * load went: core.memory_trim), by a walk of the free lists that costs
 * nothing per allocation. Sanitizer builds use plain realloc/free, so that
 * ASan still sees every block.
 *
 * claude_alloc_metered_fn is the same under the state's memory meter
 * (budget/meter.h): tool budgets switch the state to it when the first one needs it,
 * so that a budget's `memory` costs a compare per allocation here instead of
 * a wrapper around us, and a state without budgets nothing.
 */
#include <stdlib.h>
#include <string.h>

#include "host/alloc.h"

#define GRAIN 16
#define POOL_MAX 512
#define NCLASS (POOL_MAX / GRAIN)
#define SLAB_SIZE ((size_t)64 * 1024)

typedef struct block {
  struct block *next;
} block;

typedef struct slab {
  struct slab *next;
  size_t carved; /* bytes given out of it (set when the next slab starts) */
} slab;

struct claude_alloc {
  claude_meter meter;
  block *free[NCLASS];
  slab *slabs;
  char *bump, *bump_end;
};

#ifndef CLAUDELUA_PLAIN_ALLOC
static int class_of(size_t size) { return (int)((size + GRAIN - 1) / GRAIN) - 1; }

static void *pool_get(claude_alloc *a, int c) {
  size_t size = (size_t)(c + 1) * GRAIN;
  block *b = a->free[c];
  if (b != NULL) {
    a->free[c] = b->next;
    return b;
  }
  if ((size_t)(a->bump_end - a->bump) < size) {
    slab *s = (slab *)malloc(SLAB_SIZE);
    if (s == NULL) return NULL;
    if (a->slabs != NULL) a->slabs->carved = (size_t)(a->bump - ((char *)a->slabs + GRAIN));
    s->carved = 0;
    s->next = a->slabs;
    a->slabs = s;
    a->bump = (char *)s + GRAIN; /* keeps blocks 16-byte aligned */
    a->bump_end = (char *)s + SLAB_SIZE;
  }
  b = (block *)a->bump;
  a->bump += size;
  return b;
}

static void pool_put(claude_alloc *a, int c, void *p) {
  block *b = (block *)p;
  b->next = a->free[c];
  a->free[c] = b;
}

#endif

/* The allocation itself: osize is the block's size whenever ptr is not NULL. */
static inline void *pool_alloc(claude_alloc *a, void *ptr, size_t osize, size_t nsize) {
#ifdef CLAUDELUA_PLAIN_ALLOC
  (void)a;
  (void)osize;
  if (nsize == 0) {
    free(ptr);
    return NULL;
  }
  return realloc(ptr, nsize);
#else
  int small_old = ptr != NULL && osize <= POOL_MAX;
  if (nsize == 0) {
    if (ptr == NULL) return NULL;
    if (small_old) pool_put(a, class_of(osize), ptr);
    else free(ptr);
    return NULL;
  }
  if (nsize <= POOL_MAX) {
    void *p;
    if (small_old && class_of(osize) == class_of(nsize)) return ptr;
    p = pool_get(a, class_of(nsize));
    if (p == NULL) return NULL;
    if (ptr != NULL) {
      memcpy(p, ptr, osize < nsize ? osize : nsize);
      if (small_old) pool_put(a, class_of(osize), ptr);
      else free(ptr);
    }
    return p;
  }
  if (ptr == NULL || !small_old) return realloc(ptr, nsize);
  {
    void *p = malloc(nsize); /* small to large */
    if (p == NULL) return NULL;
    memcpy(p, ptr, osize);
    pool_put(a, class_of(osize), ptr);
    return p;
  }
#endif
}

/* lua_Alloc: the pool. */
void *claude_alloc_fn(void *ud, void *ptr, size_t osize, size_t nsize) {
  return pool_alloc((claude_alloc *)ud, ptr, osize, nsize);
}

/* lua_Alloc: the pool, under the meter. */
void *claude_alloc_metered_fn(void *ud, void *ptr, size_t osize, size_t nsize) {
  claude_alloc *a = (claude_alloc *)ud;
  long long delta;
  void *r;
  if (!claude_meter_admit(&a->meter, ptr, osize, nsize, &delta)) return NULL;
  r = pool_alloc(a, ptr, osize, nsize);
  if (r != NULL || nsize == 0) claude_meter_count(&a->meter, delta);
  return r;
}

claude_meter *claude_alloc_meter(claude_alloc *a) { return &a->meter; }

claude_alloc *claude_alloc_new(void) {
  claude_alloc *a = (claude_alloc *)calloc(1, sizeof(claude_alloc));
  if (a != NULL) claude_meter_init(&a->meter);
  return a;
}

#ifndef CLAUDELUA_PLAIN_ALLOC
/* A slab during a trim: its address, the bytes carved out of it, the bytes
 * of them found free. */
typedef struct trim_entry {
  char *base;
  size_t carved, freed;
} trim_entry;

static int by_base(const void *x, const void *y) {
  const char *a = ((const trim_entry *)x)->base, *b = ((const trim_entry *)y)->base;
  return a < b ? -1 : a > b;
}

/* The slab holding p (sorted table of n). */
static trim_entry *slab_of(trim_entry *t, size_t n, const char *p) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (p < t[mid].base) hi = mid;
    else if (p >= t[mid].base + SLAB_SIZE) lo = mid + 1;
    else return &t[mid];
  }
  return NULL;
}
#endif

size_t claude_alloc_trim(claude_alloc *a) {
#ifdef CLAUDELUA_PLAIN_ALLOC
  (void)a;
  return 0;
#else
  size_t n = 0, i, given = 0;
  trim_entry *t;
  slab *s, **link;
  int c;
  if (a == NULL || a->slabs == NULL) return 0;
  for (s = a->slabs->next; s != NULL; s = s->next) n++; /* the current slab stays */
  if (n == 0) return 0;
  t = (trim_entry *)malloc(n * sizeof *t);
  if (t == NULL) return 0;
  for (i = 0, s = a->slabs->next; s != NULL; s = s->next, i++) {
    t[i].base = (char *)s;
    t[i].carved = s->carved;
    t[i].freed = 0;
  }
  qsort(t, n, sizeof *t, by_base);
  /* the walks of the free lists are what a trim costs (a cache miss a block: about
   * 0.3 s for 3 million free blocks): the second only when a slab can go */
  for (c = 0; c < NCLASS; c++) {
    block *b;
    for (b = a->free[c]; b != NULL; b = b->next) {
      trim_entry *e = slab_of(t, n, (char *)b);
      if (e != NULL) e->freed += (size_t)(c + 1) * GRAIN;
    }
  }
  for (i = 0; i < n && t[i].freed != t[i].carved; i++) {
  }
  if (i == n) {
    free(t);
    return 0;
  }
  /* the free lists without the blocks of wholly free slabs */
  for (c = 0; c < NCLASS; c++) {
    block **bl = &a->free[c];
    while (*bl != NULL) {
      trim_entry *e = slab_of(t, n, (char *)*bl);
      if (e != NULL && e->freed == e->carved) *bl = (*bl)->next;
      else bl = &(*bl)->next;
    }
  }
  for (link = &a->slabs->next; *link != NULL;) {
    trim_entry *e = slab_of(t, n, (char *)*link);
    s = *link;
    if (e != NULL && e->freed == e->carved) {
      *link = s->next;
      free(s);
      given += SLAB_SIZE;
    } else {
      link = &s->next;
    }
  }
  free(t);
  return given;
#endif
}

/* After lua_close: gives the slabs back. */
void claude_alloc_free(claude_alloc *a) {
  slab *s;
  if (a == NULL) return;
  while ((s = a->slabs) != NULL) {
    a->slabs = s->next;
    free(s);
  }
  free(a);
}
