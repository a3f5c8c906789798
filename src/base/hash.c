/* hash.c — byte hashing. */
#include "base/hash.h"

uint64_t loom_hash_bytes(const void *data, size_t len) {
  const unsigned char *p = data;
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < len; i++) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
  return loom_hash_u64(h ^ len);
}
