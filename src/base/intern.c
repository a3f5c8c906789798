/* intern.c — hash table of strings with chains in an arena. */
#include "base/intern.h"

#include <string.h>
#include "base/hash.h"

typedef struct entry {
  struct entry *next; /* next string with the same hash */
  size_t len;
  char str[];         /* NUL-terminated */
} entry;

void loom_interner_init(loom_interner *in, loom_allocator *alloc) {
  loom_arena_init(&in->arena, alloc, 16 * 1024);
  loom_map_init(&in->by_hash, alloc);
  in->count = 0;
}

void loom_interner_destroy(loom_interner *in) {
  loom_map_destroy(&in->by_hash);
  loom_arena_destroy(&in->arena);
  in->count = 0;
}

const char *loom_intern(loom_interner *in, const char *s, size_t len) {
  uint64_t h = loom_hash_bytes(s, len);
  uint64_t head = 0;
  loom_map_get(&in->by_hash, h, &head);
  for (entry *e = (entry *)(uintptr_t)head; e; e = e->next) {
    if (e->len == len && memcmp(e->str, s, len) == 0) return e->str;
  }
  size_t size;
  if (!loom_size_add(sizeof(entry), len, &size) || !loom_size_add(size, 1, &size)) return NULL;
  entry *e = loom_arena_alloc(&in->arena, size, _Alignof(entry));
  if (!e) return NULL;
  e->next = (entry *)(uintptr_t)head;
  e->len = len;
  if (len) memcpy(e->str, s, len);
  e->str[len] = '\0';
  if (!loom_map_put(&in->by_hash, h, (uint64_t)(uintptr_t)e)) return NULL;
  in->count++;
  return e->str;
}

const char *loom_intern_cstr(loom_interner *in, const char *s) {
  return loom_intern(in, s, strlen(s));
}
