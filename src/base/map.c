/* map.c — open-addressing uint64 -> uint64 map with linear probing. */
#include "base/map.h"

#include "base/hash.h"

enum { SLOT_EMPTY = 0, SLOT_FULL = 1, SLOT_DELETED = 2 };

void loom_map_init(loom_map *m, loom_allocator *alloc) {
  *m = (loom_map){.alloc = alloc ? alloc : loom_allocator_system()};
}

static void free_tables(loom_allocator *a, uint64_t *keys, uint64_t *values, uint8_t *state,
                        size_t cap) {
  loom_free(a, keys, cap * sizeof(uint64_t));
  loom_free(a, values, cap * sizeof(uint64_t));
  loom_free(a, state, cap);
}

void loom_map_destroy(loom_map *m) {
  free_tables(m->alloc, m->keys, m->values, m->state, m->cap);
  loom_map_init(m, m->alloc);
}

void loom_map_clear(loom_map *m) {
  for (size_t i = 0; i < m->cap; i++) m->state[i] = SLOT_EMPTY;
  m->len = m->deleted = 0;
}

/* Slot holding `key`, or the slot where it would be inserted (first tombstone or empty). */
static size_t probe(const loom_map *m, uint64_t key, bool *found) {
  size_t mask = m->cap - 1;
  size_t i = (size_t)loom_hash_u64(key) & mask;
  size_t first_deleted = SIZE_MAX;
  for (;;) {
    uint8_t s = m->state[i];
    if (s == SLOT_EMPTY) {
      *found = false;
      return first_deleted != SIZE_MAX ? first_deleted : i;
    }
    if (s == SLOT_FULL && m->keys[i] == key) {
      *found = true;
      return i;
    }
    if (s == SLOT_DELETED && first_deleted == SIZE_MAX) first_deleted = i;
    i = (i + 1) & mask;
  }
}

static bool rehash(loom_map *m, size_t new_cap) {
  uint64_t *keys = loom_alloc_array(m->alloc, new_cap, sizeof(uint64_t));
  uint64_t *values = loom_alloc_array(m->alloc, new_cap, sizeof(uint64_t));
  uint8_t *state = loom_alloc_zero(m->alloc, new_cap);
  if (!keys || !values || !state) {
    free_tables(m->alloc, keys, values, state, new_cap);
    return false;
  }
  loom_map old = *m;
  m->keys = keys;
  m->values = values;
  m->state = state;
  m->cap = new_cap;
  m->len = m->deleted = 0;
  for (size_t i = 0; i < old.cap; i++) {
    if (old.state[i] != SLOT_FULL) continue;
    bool found;
    size_t j = probe(m, old.keys[i], &found);
    m->keys[j] = old.keys[i];
    m->values[j] = old.values[i];
    m->state[j] = SLOT_FULL;
    m->len++;
  }
  free_tables(m->alloc, old.keys, old.values, old.state, old.cap);
  return true;
}

bool loom_map_put(loom_map *m, uint64_t key, uint64_t value) {
  /* Keep (full + deleted + 1) / cap <= 0.7. */
  if ((m->len + m->deleted + 1) * 10 > m->cap * 7) {
    size_t new_cap = m->cap ? m->cap : 16;
    while ((m->len + 1) * 10 > new_cap * 7 / 2) { /* leave room to grow after rehash */
      if (!loom_size_mul(new_cap, 2, &new_cap)) return false;
    }
    if (!rehash(m, new_cap)) return false;
  }
  bool found;
  size_t i = probe(m, key, &found);
  if (!found) {
    if (m->state[i] == SLOT_DELETED) m->deleted--;
    m->state[i] = SLOT_FULL;
    m->keys[i] = key;
    m->len++;
  }
  m->values[i] = value;
  return true;
}

bool loom_map_get(const loom_map *m, uint64_t key, uint64_t *out_value) {
  if (m->len == 0) return false;
  bool found;
  size_t i = probe(m, key, &found);
  if (found && out_value) *out_value = m->values[i];
  return found;
}

bool loom_map_contains(const loom_map *m, uint64_t key) { return loom_map_get(m, key, NULL); }

bool loom_map_remove(loom_map *m, uint64_t key) {
  if (m->len == 0) return false;
  bool found;
  size_t i = probe(m, key, &found);
  if (!found) return false;
  m->state[i] = SLOT_DELETED;
  m->len--;
  m->deleted++;
  return true;
}

bool loom_map_next(const loom_map *m, size_t *iter, uint64_t *out_key, uint64_t *out_value) {
  for (size_t i = *iter; i < m->cap; i++) {
    if (m->state[i] != SLOT_FULL) continue;
    if (out_key) *out_key = m->keys[i];
    if (out_value) *out_value = m->values[i];
    *iter = i + 1;
    return true;
  }
  *iter = m->cap;
  return false;
}
