/* alloc.h — pluggable allocators, and the fault-injection hook tests use.
 *
 * Every long-lived object in Loom takes a `loom_allocator *`. Allocation
 * functions return NULL on failure (never abort); callers turn that into a
 * LOOM_OOM() status. Sizes are overflow-checked by the helpers below.
 *
 * Fault injection (SQLite style): loom_alloc_fail_after(n) makes the n+1-th
 * following allocation through ANY allocator fail, so a test can walk n = 0, 1,
 * 2, ... and check every allocation site reports out-of-memory cleanly. */
#ifndef LOOM_BASE_ALLOC_H
#define LOOM_BASE_ALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct loom_allocator {
  /* Returns `size` bytes aligned to `align` (a power of two), or NULL. */
  void *(*alloc)(void *ctx, size_t size, size_t align);
  /* Resizes a block from this allocator (align <= 16), or returns NULL and leaves it intact. */
  void *(*realloc)(void *ctx, void *ptr, size_t old_size, size_t new_size);
  /* Releases a block (NULL is a no-op). */
  void (*free)(void *ctx, void *ptr, size_t size);
  void *ctx; /* the allocator's state */
} loom_allocator;

/* The process-wide allocator over malloc/aligned_alloc. */
loom_allocator *loom_allocator_system(void);

/* Allocation through `a` (NULL means the system allocator), with fault injection. */
void *loom_alloc(loom_allocator *a, size_t size);
void *loom_alloc_aligned(loom_allocator *a, size_t size, size_t align);
void *loom_alloc_zero(loom_allocator *a, size_t size);
void *loom_realloc(loom_allocator *a, void *ptr, size_t old_size, size_t new_size);
void loom_free(loom_allocator *a, void *ptr, size_t size);
/* `count * elem` bytes, NULL on overflow or failure. */
void *loom_alloc_array(loom_allocator *a, size_t count, size_t elem);

/* Large buffers (weights, packed constants, an arena's big blocks): an anonymous mapping of their
 * own, which the kernel may back with transparent huge pages (madvise MADV_HUGEPAGE). A fresh
 * 4 KiB page costs a fault, a zeroing and a cgroup charge; 340 MB of them (GPT-2's 12 layers)
 * took 430-600 ms to fill on the shared machine, 2 MiB pages 170-350 ms. Page aligned; NULL on
 * failure (fault injection applies). Free with loom_free_large and the same size. */
#define LOOM_ALLOC_LARGE_MIN ((size_t)1 << 20) /* the size from which callers use it */
void *loom_alloc_large(size_t size);
void loom_free_large(void *ptr, size_t size);

/* Fault injection: the allocation after `n` more successful ones fails, and every
 * one after that fails too until reset. n < 0 turns injection off. */
void loom_alloc_fail_after(long n);
/* How many allocations failed because of injection since it was last set. */
long loom_alloc_injected_failures(void);

/* Checked size arithmetic: false on overflow. */
static inline bool loom_size_mul(size_t a, size_t b, size_t *out) {
  return !__builtin_mul_overflow(a, b, out);
}
static inline bool loom_size_add(size_t a, size_t b, size_t *out) {
  return !__builtin_add_overflow(a, b, out);
}
/* Rounds `x` up to a multiple of `align` (power of two); false on overflow. */
static inline bool loom_size_align_up(size_t x, size_t align, size_t *out) {
  size_t r;
  if (__builtin_add_overflow(x, align - 1, &r)) return false;
  *out = r & ~(align - 1);
  return true;
}

#endif
