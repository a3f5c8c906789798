/* alloc.c — the system allocator and fault injection. */
#include "base/alloc.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static atomic_long fail_countdown = -1; /* < 0: off; 0: fail now; n: n more succeed */
static atomic_long injected_failures = 0;

void loom_alloc_fail_after(long n) {
  atomic_store(&fail_countdown, n);
  atomic_store(&injected_failures, 0);
}

long loom_alloc_injected_failures(void) { return atomic_load(&injected_failures); }

/* True when this allocation must fail because of injection. */
static bool inject_failure(void) {
  long c = atomic_load(&fail_countdown);
  if (c < 0) return false;
  if (c == 0) {
    atomic_fetch_add(&injected_failures, 1);
    return true;
  }
  atomic_fetch_sub(&fail_countdown, 1);
  return false;
}

static void *sys_alloc(void *ctx, size_t size, size_t align) {
  (void)ctx;
  if (size == 0) size = 1;
  if (align <= 16) return malloc(size);
  size_t rounded;
  if (!loom_size_align_up(size, align, &rounded)) return NULL;
  return aligned_alloc(align, rounded);
}

static void *sys_realloc(void *ctx, void *ptr, size_t old_size, size_t new_size) {
  (void)ctx;
  (void)old_size;
  return realloc(ptr, new_size ? new_size : 1);
}

static void sys_free(void *ctx, void *ptr, size_t size) {
  (void)ctx;
  (void)size;
  free(ptr);
}

static loom_allocator system_allocator = {sys_alloc, sys_realloc, sys_free, NULL};

loom_allocator *loom_allocator_system(void) { return &system_allocator; }

void *loom_alloc_aligned(loom_allocator *a, size_t size, size_t align) {
  if (!a) a = &system_allocator;
  if (align == 0 || (align & (align - 1)) != 0) return NULL;
  if (inject_failure()) return NULL;
  return a->alloc(a->ctx, size, align);
}

void *loom_alloc(loom_allocator *a, size_t size) { return loom_alloc_aligned(a, size, 16); }

void *loom_alloc_zero(loom_allocator *a, size_t size) {
  void *p = loom_alloc(a, size);
  if (p) memset(p, 0, size);
  return p;
}

void *loom_alloc_array(loom_allocator *a, size_t count, size_t elem) {
  size_t size;
  if (!loom_size_mul(count, elem, &size)) return NULL;
  return loom_alloc(a, size);
}

void *loom_realloc(loom_allocator *a, void *ptr, size_t old_size, size_t new_size) {
  if (!a) a = &system_allocator;
  if (!ptr) return loom_alloc(a, new_size);
  if (inject_failure()) return NULL;
  return a->realloc(a->ctx, ptr, old_size, new_size);
}

void loom_free(loom_allocator *a, void *ptr, size_t size) {
  if (!ptr) return;
  if (!a) a = &system_allocator;
  a->free(a->ctx, ptr, size);
}

void *loom_alloc_large(size_t size) {
  if (inject_failure()) return NULL;
  if (size == 0) size = 1;
  void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return NULL;
#ifdef MADV_HUGEPAGE
  if (size >= ((size_t)2 << 20)) (void)madvise(p, size, MADV_HUGEPAGE); /* advice only: 4 KiB pages if refused */
#endif
  return p;
}

void loom_free_large(void *ptr, size_t size) {
  if (ptr) munmap(ptr, size ? size : 1);
}
