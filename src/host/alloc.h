/*
 * alloc.h -- the claudelua host's Lua allocator (private to the host).
 */
#ifndef CLAUDE_ALLOC_H
#define CLAUDE_ALLOC_H

#include <stddef.h>

#include "budget/meter.h"

typedef struct claude_alloc claude_alloc;

claude_alloc *claude_alloc_new(void);
void claude_alloc_free(claude_alloc *a);
void *claude_alloc_fn(void *ud, void *ptr, size_t osize, size_t nsize);
/* The same, keeping the meter below (for claude_budget_use_meter). */
void *claude_alloc_metered_fn(void *ud, void *ptr, size_t osize, size_t nsize);
claude_meter *claude_alloc_meter(claude_alloc *a);
/* Gives the slabs whose every block is free back to the system; returns how
 * many bytes. For after a load (it walks the free lists), not per call. */
size_t claude_alloc_trim(claude_alloc *a);

/* The registry field where the host puts a function that calls
 * claude_alloc_trim on its state's allocator (core.memory_trim, os.c). */
#define CLAUDE_ALLOC_TRIM_KEY "claude.alloc_trim"

#endif
