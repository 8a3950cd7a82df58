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

#endif
