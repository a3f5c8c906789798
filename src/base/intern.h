/* intern.h — string interning: equal strings get the same pointer.
 *
 * Names of variables, operators and functions are interned once, then compared
 * and hashed by pointer. Interned strings live until the interner is destroyed. */
#ifndef LOOM_BASE_INTERN_H
#define LOOM_BASE_INTERN_H

#include <stddef.h>
#include "base/arena.h"
#include "base/map.h"

typedef struct loom_interner {
  loom_arena arena; /* the strings themselves */
  loom_map by_hash; /* hash -> first entry of a collision chain */
  size_t count;     /* distinct strings held */
} loom_interner;

void loom_interner_init(loom_interner *in, loom_allocator *alloc);
void loom_interner_destroy(loom_interner *in);
/* The interned copy of `len` bytes of `s` (need not be NUL-terminated), or NULL when
 * memory runs out. The result is NUL-terminated. */
const char *loom_intern(loom_interner *in, const char *s, size_t len);
const char *loom_intern_cstr(loom_interner *in, const char *s);

#endif
