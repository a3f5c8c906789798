/* loom_fuzz.c — the mutation loop behind loom_fuzz_run. */
#include "support/loom_fuzz.h"

#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "support/loom_test.h"

static const uint8_t interesting[] = {0x00, 0x01, 0x7f, 0x80, 0xff, '0', '9', '(', ')', '[', ']', '{', '}',
                                      ',', ':', '=', '-', '+', '*', '/', '@', '\n', ' ', '"', '\\', 0x0a, 0x08};

/* Applies 1-4 random mutations to buf (capacity cap), returns the new length. */
static size_t mutate(loom_test_rng *r, uint8_t *buf, size_t len, size_t cap, const uint8_t *other, size_t other_len,
                     const loom_fuzz_opts *o) {
  int rounds = 1 + (int)(loom_test_rng_next(r) % 4);
  for (int k = 0; k < rounds; k++) {
    size_t pos = len ? (size_t)(loom_test_rng_next(r) % len) : 0;
    switch (loom_test_rng_next(r) % (o->ndict ? 9 : 7)) {
      case 0: /* bit flip */
        if (len) buf[pos] ^= (uint8_t)(1u << (loom_test_rng_next(r) % 8));
        break;
      case 1: /* interesting byte */
        if (len) buf[pos] = interesting[loom_test_rng_next(r) % sizeof interesting];
        break;
      case 2: /* truncate */
        len = pos;
        break;
      case 3: { /* delete a chunk */
        size_t n = len - pos ? (size_t)(loom_test_rng_next(r) % (len - pos)) + 1 : 0;
        if (n > 16) n = 16;
        memmove(buf + pos, buf + pos + n, len - pos - n);
        len -= n;
        break;
      }
      case 4: { /* duplicate a chunk */
        size_t n = len - pos ? (size_t)(loom_test_rng_next(r) % (len - pos)) + 1 : 0;
        if (n > 32) n = 32;
        if (len + n > cap) break;
        memmove(buf + pos + n, buf + pos, len - pos);
        len += n;
        break;
      }
      case 5: { /* insert random bytes */
        size_t n = 1 + (size_t)(loom_test_rng_next(r) % 4);
        if (len + n > cap) break;
        memmove(buf + pos + n, buf + pos, len - pos);
        for (size_t i = 0; i < n; i++) buf[pos + i] = (uint8_t)loom_test_rng_next(r);
        len += n;
        break;
      }
      case 7:
      case 8: { /* insert a token of the input language */
        const char *t = o->dict[loom_test_rng_next(r) % o->ndict];
        size_t n = strlen(t);
        if (len + n > cap) break;
        memmove(buf + pos + n, buf + pos, len - pos);
        memcpy(buf + pos, t, n);
        len += n;
        break;
      }
      case 6: { /* splice in a piece of another seed */
        if (!other_len) break;
        size_t from = (size_t)(loom_test_rng_next(r) % other_len);
        size_t n = 1 + (size_t)(loom_test_rng_next(r) % 64);
        if (n > other_len - from) n = other_len - from;
        if (pos + n > cap) break;
        memcpy(buf + pos, other + from, n);
        if (pos + n > len) len = pos + n;
        break;
      }
    }
  }
  return len;
}

size_t loom_fuzz_run(const loom_fuzz_opts *opts, const uint8_t *const *seeds, const size_t *seed_lens, size_t nseeds,
                     loom_fuzz_target target, void *ud) {
  double seconds = opts->max_seconds;
  const char *env = getenv("LOOM_FUZZ_SECONDS");
  if (env && atof(env) > seconds) seconds = atof(env);
  loom_test_rng r = {opts->seed ? opts->seed : loom_test_seed()};
  size_t maxlen = 0;
  for (size_t i = 0; i < nseeds; i++)
    if (seed_lens[i] > maxlen) maxlen = seed_lens[i];
  size_t cap = maxlen * 2 + 256; /* room for insertions */
  uint8_t *buf = malloc(cap);
  uint8_t *copy = malloc(cap); /* exact-size copy so ASan sees reads past the end */
  size_t runs = 0;
  uint64_t t0 = loom_clock_ns();
  for (size_t i = 0; i < nseeds; i++, runs++) target(seeds[i], seed_lens[i], ud);
  while (nseeds && runs < opts->max_iterations && (double)(loom_clock_ns() - t0) / 1e9 < seconds) {
    size_t si = (size_t)(loom_test_rng_next(&r) % nseeds), oi = (size_t)(loom_test_rng_next(&r) % nseeds);
    memcpy(buf, seeds[si], seed_lens[si]);
    size_t len = mutate(&r, buf, seed_lens[si], cap, seeds[oi], seed_lens[oi], opts);
    uint8_t *exact = realloc(copy, len ? len : 1);
    if (!exact) break;
    copy = exact;
    memcpy(copy, buf, len);
    target(copy, len, ud);
    runs++;
  }
  free(buf);
  free(copy);
  return runs;
}
