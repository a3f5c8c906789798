/* arena.c — chained-block bump allocator with marks. */
#include "base/arena.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

struct loom_arena_block {
  loom_arena_block *prev; /* older block */
  size_t size;            /* bytes of data[] */
  size_t used;            /* bytes of data[] handed out */
  bool large;             /* from loom_alloc_large (a big block of the system allocator's arena) */
  _Alignas(16) unsigned char data[];
};

void loom_arena_init(loom_arena *a, loom_allocator *alloc, size_t block_size) {
  a->alloc = alloc ? alloc : loom_allocator_system();
  a->head = NULL;
  a->block_size = block_size ? block_size : 64 * 1024;
  a->bytes_reserved = 0;
}

static void free_block(loom_arena *a, loom_arena_block *b) {
  a->bytes_reserved -= b->size;
  if (b->large) loom_free_large(b, sizeof(*b) + b->size);
  else loom_free(a->alloc, b, sizeof(*b) + b->size);
}

void loom_arena_destroy(loom_arena *a) {
  loom_arena_reset(a);
}

/* Pushes a block with at least `size` bytes (aligned to `align`) of room. */
static loom_arena_block *push_block(loom_arena *a, size_t size, size_t align) {
  size_t data_size = a->block_size;
  size_t need;
  if (!loom_size_add(size, align, &need)) return NULL;
  if (need > data_size / 4) data_size = need; /* large request: a block of its own */
  size_t total;
  if (!loom_size_add(sizeof(loom_arena_block), data_size, &total)) return NULL;
  /* a big block of the system allocator (a weight, a packed constant): a mapping of its own */
  bool large = a->alloc == loom_allocator_system() && total >= LOOM_ALLOC_LARGE_MIN;
  loom_arena_block *b = large ? loom_alloc_large(total) : loom_alloc_aligned(a->alloc, total, 16);
  if (!b) return NULL;
  b->large = large;
  b->prev = a->head;
  b->size = data_size;
  b->used = 0;
  a->head = b;
  a->bytes_reserved += data_size;
  return b;
}

/* Offset in `b` where `size` bytes aligned to `align` fit, or SIZE_MAX. */
static size_t fit(const loom_arena_block *b, size_t size, size_t align) {
  uintptr_t base = (uintptr_t)b->data;
  uintptr_t at = (base + b->used + (align - 1)) & ~(uintptr_t)(align - 1);
  size_t off = (size_t)(at - base);
  if (off > b->size || b->size - off < size) return SIZE_MAX;
  return off;
}

void *loom_arena_alloc(loom_arena *a, size_t size, size_t align) {
  if (align == 0 || (align & (align - 1)) != 0) return NULL;
  if (size == 0) size = 1;
  loom_arena_block *b = a->head;
  size_t off = b ? fit(b, size, align) : SIZE_MAX;
  if (off == SIZE_MAX) {
    b = push_block(a, size, align);
    if (!b) return NULL;
    off = fit(b, size, align);
    if (off == SIZE_MAX) return NULL; /* cannot happen: the block was sized for it */
  }
  b->used = off + size;
  return b->data + off;
}

void *loom_arena_alloc_zero(loom_arena *a, size_t size, size_t align) {
  void *p = loom_arena_alloc(a, size, align);
  if (p) memset(p, 0, size);
  return p;
}

void *loom_arena_array(loom_arena *a, size_t count, size_t elem, size_t align) {
  size_t size;
  if (!loom_size_mul(count, elem, &size)) return NULL;
  return loom_arena_alloc_zero(a, size, align);
}

char *loom_arena_strndup(loom_arena *a, const char *s, size_t len) {
  size_t size;
  if (!loom_size_add(len, 1, &size)) return NULL;
  char *p = loom_arena_alloc(a, size, 1);
  if (!p) return NULL;
  if (len) memcpy(p, s, len);
  p[len] = '\0';
  return p;
}

char *loom_arena_strdup(loom_arena *a, const char *s) {
  return loom_arena_strndup(a, s, strlen(s));
}

char *loom_arena_printf(loom_arena *a, const char *fmt, ...) {
  va_list ap, ap2;
  va_start(ap, fmt);
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *p = n < 0 ? NULL : loom_arena_alloc(a, (size_t)n + 1, 1);
  if (p) vsnprintf(p, (size_t)n + 1, fmt, ap2);
  va_end(ap2);
  return p;
}

loom_arena_mark loom_arena_get_mark(const loom_arena *a) {
  return (loom_arena_mark){a->head, a->head ? a->head->used : 0};
}

void loom_arena_reset_to(loom_arena *a, loom_arena_mark m) {
  while (a->head && a->head != m.block) {
    loom_arena_block *prev = a->head->prev;
    free_block(a, a->head);
    a->head = prev;
  }
  if (a->head) a->head->used = m.used;
}

void loom_arena_reset(loom_arena *a) {
  loom_arena_reset_to(a, (loom_arena_mark){NULL, 0});
}
