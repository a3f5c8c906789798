/* pages.c — the page allocator of the paged K/V cache: a stack of free page ids. A sequence
 * takes pages as it grows and gives them all back when it finishes or is preempted; taking
 * is all or nothing, so a step never half-allocates. */
#include <stdlib.h>

#include "serve/serve_internal.h"

loom_status loom_serve_pages_init(loom_serve_pages *p, int64_t npages, int64_t page_size) {
  if (npages < 1 || npages > INT32_MAX || page_size < 1)
    return LOOM_ERROR(INVALID_ARGUMENT, "the K/V cache needs 1 .. %d pages of at least 1 slot (given %lld pages of %lld)", INT32_MAX,
                      (long long)npages, (long long)page_size);
  p->free_ids = malloc((size_t)npages * sizeof *p->free_ids);
  if (!p->free_ids) return LOOM_OOM();
  /* page 0 on top: a fresh cache hands pages out in order */
  for (int64_t i = 0; i < npages; i++) p->free_ids[i] = (int32_t)(npages - 1 - i);
  p->nfree = p->npages = npages;
  p->page_size = page_size;
  return LOOM_OK;
}

void loom_serve_pages_destroy(loom_serve_pages *p) {
  free(p->free_ids);
  p->free_ids = NULL;
}

int64_t loom_serve_pages_for(const loom_serve_pages *p, int64_t ntokens) { return (ntokens + p->page_size - 1) / p->page_size; }

bool loom_serve_pages_take(loom_serve_pages *p, int64_t n, int32_t *out) {
  if (n < 0 || n > p->nfree) return false;
  for (int64_t i = 0; i < n; i++) out[i] = p->free_ids[--p->nfree];
  return true;
}

void loom_serve_pages_give(loom_serve_pages *p, const int32_t *ids, int64_t n) {
  for (int64_t i = 0; i < n; i++) p->free_ids[p->nfree++] = ids[i];
}
