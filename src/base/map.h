/* map.h — hash map from uint64 keys to uint64 values (open addressing).
 *
 * Keys are any 64-bit value (pointers, ids, hashes); values are 64-bit too, so a
 * pointer or an index fits. Linear probing with tombstones; the table doubles at
 * 70% load (tombstones included) and keeps its capacity a power of two.
 *
 *     loom_map m; loom_map_init(&m, NULL);
 *     if (!loom_map_put(&m, key, value)) return LOOM_OOM();
 *     uint64_t v; if (loom_map_get(&m, key, &v)) ...
 *     loom_map_destroy(&m); */
#ifndef LOOM_BASE_MAP_H
#define LOOM_BASE_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "base/alloc.h"

typedef struct loom_map {
  loom_allocator *alloc;
  uint64_t *keys;   /* cap entries */
  uint64_t *values; /* cap entries */
  uint8_t *state;   /* cap entries: 0 empty, 1 full, 2 deleted */
  size_t cap;       /* 0 or a power of two */
  size_t len;       /* full entries */
  size_t deleted;   /* tombstones */
} loom_map;

void loom_map_init(loom_map *m, loom_allocator *alloc);
void loom_map_destroy(loom_map *m);
/* Removes every entry, keeping the capacity. */
void loom_map_clear(loom_map *m);
/* Inserts or replaces. False (map unchanged) when memory runs out. */
bool loom_map_put(loom_map *m, uint64_t key, uint64_t value);
bool loom_map_get(const loom_map *m, uint64_t key, uint64_t *out_value);
bool loom_map_contains(const loom_map *m, uint64_t key);
/* Removes `key`; false when it was not there. */
bool loom_map_remove(loom_map *m, uint64_t key);
/* Iteration: `for (size_t it = 0; loom_map_next(&m, &it, &k, &v);)`. */
bool loom_map_next(const loom_map *m, size_t *iter, uint64_t *out_key, uint64_t *out_value);

#endif
