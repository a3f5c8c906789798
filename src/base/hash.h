/* hash.h — hashing helpers shared by the map, interning and hash-consing. */
#ifndef LOOM_BASE_HASH_H
#define LOOM_BASE_HASH_H

#include <stddef.h>
#include <stdint.h>

/* 64-bit FNV-1a over bytes, finished with a mix so low bits are well spread. */
uint64_t loom_hash_bytes(const void *data, size_t len);

/* A strong 64-bit mix (splitmix64's finaliser). */
static inline uint64_t loom_hash_u64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

/* Order-dependent combination of a running hash with one more value. */
static inline uint64_t loom_hash_combine(uint64_t h, uint64_t v) {
  return loom_hash_u64(h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)));
}

#endif
