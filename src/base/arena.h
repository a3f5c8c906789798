/* arena.h — bump allocation in chained blocks, freed all at once.
 *
 * IR of one module or compilation lives in an arena. Allocation is a pointer
 * bump; requests larger than a quarter block get a block of their own. A mark
 * records the current position so scratch work can be rolled back:
 *
 *     loom_arena_mark m = loom_arena_get_mark(&a);
 *     ... scratch allocations ...
 *     loom_arena_reset_to(&a, m);
 *
 * Allocation returns NULL when memory runs out or the size overflows. */
#ifndef LOOM_BASE_ARENA_H
#define LOOM_BASE_ARENA_H

#include <stddef.h>
#include "base/alloc.h"

typedef struct loom_arena_block loom_arena_block;

typedef struct loom_arena {
  loom_allocator *alloc;   /* where blocks come from */
  loom_arena_block *head;  /* newest block; older ones chain through ->prev */
  size_t block_size;       /* default size of a new block */
  size_t bytes_reserved;   /* sum of block sizes held */
} loom_arena;

typedef struct loom_arena_mark {
  loom_arena_block *block; /* head at the time of the mark */
  size_t used;             /* bytes used in that block */
} loom_arena_mark;

/* `alloc` NULL means the system allocator; `block_size` 0 means 64 KiB. */
void loom_arena_init(loom_arena *a, loom_allocator *alloc, size_t block_size);
void loom_arena_destroy(loom_arena *a);

void *loom_arena_alloc(loom_arena *a, size_t size, size_t align);
void *loom_arena_alloc_zero(loom_arena *a, size_t size, size_t align);
/* `count` elements of `elem` bytes, zeroed. */
void *loom_arena_array(loom_arena *a, size_t count, size_t elem, size_t align);
/* A NUL-terminated copy of `len` bytes of `s`. */
char *loom_arena_strndup(loom_arena *a, const char *s, size_t len);
char *loom_arena_strdup(loom_arena *a, const char *s);
/* printf into the arena. */
char *loom_arena_printf(loom_arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

loom_arena_mark loom_arena_get_mark(const loom_arena *a);
/* Frees everything allocated after `m`. */
void loom_arena_reset_to(loom_arena *a, loom_arena_mark m);
/* Frees everything; the arena stays usable. */
void loom_arena_reset(loom_arena *a);

#define LOOM_ARENA_NEW(a, T) ((T *)loom_arena_alloc_zero((a), sizeof(T), _Alignof(T)))
#define LOOM_ARENA_ARRAY(a, T, n) ((T *)loom_arena_array((a), (n), sizeof(T), _Alignof(T)))

#endif
