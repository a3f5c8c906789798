/* vec.c — growth of LOOM_VEC vectors. */
#include "base/vec.h"

#include <string.h>

bool loom_vec_reserve_raw(loom_allocator *alloc, void *data_slot, size_t *cap, size_t elem,
                          size_t need) {
  if (need <= *cap) return true;
  size_t new_cap = *cap ? *cap : 8;
  while (new_cap < need) {
    if (!loom_size_mul(new_cap, 2, &new_cap)) return false;
  }
  size_t old_bytes, new_bytes;
  if (!loom_size_mul(*cap, elem, &old_bytes) || !loom_size_mul(new_cap, elem, &new_bytes))
    return false;
  void *data;
  memcpy(&data, data_slot, sizeof(data)); /* the slot holds a T*, read as void* */
  void *grown = loom_realloc(alloc, data, old_bytes, new_bytes);
  if (!grown) return false;
  memcpy(data_slot, &grown, sizeof(grown));
  *cap = new_cap;
  return true;
}
