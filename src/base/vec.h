/* vec.h — growable typed vectors.
 *
 *     typedef LOOM_VEC(int) int_vec;
 *     int_vec v = {0};
 *     if (!LOOM_VEC_PUSH(alloc, &v, 42)) return LOOM_OOM();
 *     for (size_t i = 0; i < v.len; i++) use(v.data[i]);
 *     LOOM_VEC_FREE(alloc, &v);
 *
 * `alloc` NULL means the system allocator. Growth doubles the capacity; every
 * size computation is overflow-checked, and failure leaves the vector intact. */
#ifndef LOOM_BASE_VEC_H
#define LOOM_BASE_VEC_H

#include <stdbool.h>
#include <stddef.h>
#include "base/alloc.h"

#define LOOM_VEC(T) \
  struct {          \
    T *data;        \
    size_t len;     \
    size_t cap;     \
  }

/* Makes room for `need` elements of `elem` bytes in the vector whose data pointer is at
 * `*data_slot`. Returns false (vector unchanged) on overflow or out of memory. */
bool loom_vec_reserve_raw(loom_allocator *alloc, void *data_slot, size_t *cap, size_t elem,
                          size_t need);

#define LOOM_VEC_RESERVE(alloc, v, n) \
  loom_vec_reserve_raw((alloc), &(v)->data, &(v)->cap, sizeof(*(v)->data), (n))
/* Appends `x`; evaluates to false on failure. */
#define LOOM_VEC_PUSH(alloc, v, x)                                              \
  (((v)->len < (v)->cap || LOOM_VEC_RESERVE((alloc), (v), (v)->len + 1))        \
       ? ((v)->data[(v)->len++] = (x), true)                                    \
       : false)
#define LOOM_VEC_POP(v) ((v)->data[--(v)->len])
#define LOOM_VEC_LAST(v) ((v)->data[(v)->len - 1])
#define LOOM_VEC_FREE(alloc, v)                                         \
  do {                                                                  \
    loom_free((alloc), (v)->data, (v)->cap * sizeof(*(v)->data));       \
    (v)->data = NULL;                                                   \
    (v)->len = (v)->cap = 0;                                            \
  } while (0)

#endif
