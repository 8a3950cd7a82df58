/*
 * alloc.h -- the claudelua host's Lua allocator (private to the host).
 */
#ifndef CLAUDE_ALLOC_H
#define CLAUDE_ALLOC_H

#include <stddef.h>

typedef struct claude_alloc claude_alloc;

claude_alloc *claude_alloc_new(void);
void claude_alloc_free(claude_alloc *a);
void *claude_alloc_fn(void *ud, void *ptr, size_t osize, size_t nsize);

#endif
