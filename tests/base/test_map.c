/* test_map.c — hash map: growth, replacement, deletion, many keys, iteration, OOM. */
#include "base/map.h"
#include "support/loom_test.h"

LOOM_TEST(map, empty_map_finds_nothing) {
  loom_map m;
  loom_map_init(&m, NULL);
  cr_assert_not(loom_map_get(&m, 0, NULL));
  cr_assert_not(loom_map_remove(&m, 7));
  size_t it = 0;
  cr_assert_not(loom_map_next(&m, &it, NULL, NULL));
  loom_map_destroy(&m);
}

LOOM_TEST(map, growth_keeps_every_key) {
  loom_map m;
  loom_map_init(&m, NULL);
  for (uint64_t k = 0; k < 200000; k++) cr_assert(loom_map_put(&m, k * 0x9e3779b97f4a7c15ULL, k));
  cr_assert_eq(m.len, 200000);
  for (uint64_t k = 0; k < 200000; k++) {
    uint64_t v = 0;
    cr_assert(loom_map_get(&m, k * 0x9e3779b97f4a7c15ULL, &v));
    cr_assert_eq(v, k);
  }
  cr_assert_not(loom_map_contains(&m, 1));
  loom_map_destroy(&m);
}

LOOM_TEST(map, put_replaces_and_remove_deletes) {
  loom_map m;
  loom_map_init(&m, NULL);
  cr_assert(loom_map_put(&m, 5, 50));
  cr_assert(loom_map_put(&m, 5, 51));
  cr_assert_eq(m.len, 1);
  uint64_t v;
  cr_assert(loom_map_get(&m, 5, &v));
  cr_assert_eq(v, 51);
  cr_assert(loom_map_remove(&m, 5));
  cr_assert_not(loom_map_contains(&m, 5));
  cr_assert_not(loom_map_remove(&m, 5));
  cr_assert_eq(m.len, 0);
  loom_map_destroy(&m);
}

LOOM_TEST(map, churn_with_deletions_stays_consistent) {
  /* Insert and delete in waves so tombstones build up and get rehashed away. */
  loom_map m;
  loom_map_init(&m, NULL);
  loom_test_rng rng = {loom_test_seed()};
  static uint8_t present[4096];
  static uint64_t value[4096];
  for (int step = 0; step < 200000; step++) {
    uint64_t k = (uint64_t)loom_test_rng_range(&rng, 0, 4095);
    if (loom_test_rng_next(&rng) & 1) {
      cr_assert(loom_map_put(&m, k, (uint64_t)step));
      present[k] = 1;
      value[k] = (uint64_t)step;
    } else {
      cr_assert_eq(loom_map_remove(&m, k), present[k] != 0);
      present[k] = 0;
    }
  }
  size_t n = 0;
  for (uint64_t k = 0; k < 4096; k++) {
    uint64_t v;
    cr_assert_eq(loom_map_get(&m, k, &v), present[k] != 0, "key %llu", (unsigned long long)k);
    if (present[k]) cr_assert_eq(v, value[k]);
    n += present[k];
  }
  cr_assert_eq(m.len, n);
  size_t seen = 0, it = 0;
  uint64_t k, v;
  while (loom_map_next(&m, &it, &k, &v)) {
    cr_assert(present[k]);
    seen++;
  }
  cr_assert_eq(seen, n);
  loom_map_destroy(&m);
}

LOOM_TEST(map, out_of_memory_leaves_map_usable) {
  loom_map m;
  loom_map_init(&m, NULL);
  for (uint64_t k = 0; k < 11; k++) cr_assert(loom_map_put(&m, k, k));
  /* The next insert must grow; make every allocation of that growth fail. */
  bool failed = false;
  for (uint64_t k = 11; k < 100 && !failed; k++) {
    loom_alloc_fail_after(0);
    failed = !loom_map_put(&m, k, k);
    loom_alloc_fail_after(-1);
    if (!failed) continue;
    for (uint64_t j = 0; j < k; j++) cr_assert(loom_map_contains(&m, j));
    cr_assert_not(loom_map_contains(&m, k));
  }
  cr_assert(failed, "some insert had to grow the table");
  cr_assert(loom_map_put(&m, 1000, 1));
  loom_map_destroy(&m);
}
