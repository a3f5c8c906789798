/* test_fuzz_onnx.c — a bounded, deterministic fuzzing run of the ONNX loaders.
 *
 * Drives LLVMFuzzerTestOneInput (fuzz_onnx_model.c) with a mutation loop over real
 * conformance models and test-data files: truncations, bit flips, interesting bytes,
 * corrupted length fields (found by walking the wire format), and duplicated or
 * deleted chunks. It runs for LOOM_FUZZ_SECONDS (default 8) or LOOM_FUZZ_ITERS
 * iterations, whichever ends first, under ASan + UBSan; any crash, overflow or leak
 * fails it. The seed is loom_test_seed() (LOOM_TEST_SEED), printed with the counts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fuzz/fuzz_onnx.h"
#include "support/loom_test.h"

#define NODE_DIR "../shared/conformance/onnx-backend-1.22/node"

/* Seeds: models with subgraphs, attributes of many kinds, initializers, and test data. */
static const char *const seeds[] = {
    NODE_DIR "/test_add/model.onnx",
    NODE_DIR "/test_if/model.onnx",
    NODE_DIR "/test_loop11/model.onnx",
    NODE_DIR "/test_scan9_sum/model.onnx",
    NODE_DIR "/test_constant/model.onnx",
    NODE_DIR "/test_conv_with_strides_padding/model.onnx",
    NODE_DIR "/test_resize_upsample_scales_linear/model.onnx",
    NODE_DIR "/test_gemm_default_scalar_bias/model.onnx",
    NODE_DIR "/test_lstm_defaults/model.onnx",
    NODE_DIR "/test_layer_normalization_2d_axis0_expanded/model.onnx",
    NODE_DIR "/test_sequence_map_add_2_sequences/model.onnx",
    NODE_DIR "/test_ai_onnx_ml_label_encoder_string_int/model.onnx",
    NODE_DIR "/test_add/test_data_set_0/input_0.pb",
    NODE_DIR "/test_cast_FLOAT16_to_FLOAT/test_data_set_0/input_0.pb",
    NODE_DIR "/test_constant/test_data_set_0/output_0.pb",
};

typedef struct blob {
  uint8_t *data;
  size_t len;
} blob;

static blob read_blob(const char *path) {
  blob b = {0};
  FILE *f = fopen(path, "rb");
  if (!f) return b;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  b.data = malloc(n > 0 ? (size_t)n : 1);
  b.len = fread(b.data, 1, n > 0 ? (size_t)n : 0, f);
  fclose(f);
  return b;
}

/* Offsets of the length varints of length-delimited fields, found by walking the wire
 * format and descending into every payload that itself parses as fields. */
typedef struct offsets {
  size_t *at;
  size_t len, cap;
} offsets;

static bool varint(const uint8_t *p, const uint8_t *end, uint64_t *v, size_t *used) {
  *v = 0;
  for (size_t i = 0; i < 10 && p + i < end; i++) {
    *v |= (uint64_t)(p[i] & 0x7f) << (7 * i);
    if (!(p[i] & 0x80)) return *used = i + 1, true;
  }
  return false;
}

static bool scan(const uint8_t *base, const uint8_t *p, const uint8_t *end, offsets *o, int depth) {
  while (p < end) {
    uint64_t key, v;
    size_t used;
    if (!varint(p, end, &key, &used) || (key >> 3) == 0) return false;
    p += used;
    switch (key & 7) {
    case 0: if (!varint(p, end, &v, &used)) return false; p += used; break;
    case 1: if (end - p < 8) return false; p += 8; break;
    case 5: if (end - p < 4) return false; p += 4; break;
    case 2:
      if (!varint(p, end, &v, &used) || v > (uint64_t)(end - p - used)) return false;
      if (o->len == o->cap) o->at = realloc(o->at, (o->cap = o->cap ? o->cap * 2 : 64) * sizeof *o->at);
      o->at[o->len++] = (size_t)(p - base);
      p += used;
      if (depth < 40) {
        size_t mark = o->len;
        if (!scan(base, p, p + v, o, depth + 1)) o->len = mark; /* not a message: forget its insides */
      }
      p += v;
      break;
    default: return false;
    }
  }
  return true;
}

/* Rewrites the varint at `at` (keeping its byte count) to `value`, truncated to what fits. */
static void rewrite_varint(uint8_t *buf, size_t len, size_t at, uint64_t value) {
  size_t n = 0;
  while (at + n < len && (buf[at + n] & 0x80)) n++;
  n++;
  if (at + n > len) return;
  for (size_t i = 0; i < n; i++) {
    buf[at + i] = (uint8_t)(value & 0x7f) | (i + 1 < n ? 0x80 : 0);
    value >>= 7;
  }
}

/* One mutation of `src` into `dst` (same capacity plus 64 bytes). Returns the new length. */
static size_t mutate(loom_test_rng *r, const blob *src, const offsets *lens, uint8_t *dst) {
  size_t len = src->len;
  memcpy(dst, src->data, len);
  if (len == 0) return 0;
  int rounds = (int)loom_test_rng_range(r, 1, 3);
  for (int k = 0; k < rounds; k++) {
    switch (loom_test_rng_range(r, 0, 6)) {
    case 0: /* truncate */
      len = (size_t)loom_test_rng_range(r, 0, (int64_t)len - 1);
      if (len == 0) return 0;
      break;
    case 1: /* flip bits */
      for (int i = (int)loom_test_rng_range(r, 1, 8); i > 0; i--)
        dst[loom_test_rng_range(r, 0, (int64_t)len - 1)] ^= (uint8_t)(1u << loom_test_rng_range(r, 0, 7));
      break;
    case 2: { /* interesting byte */
      static const uint8_t vals[] = {0x00, 0xff, 0x7f, 0x80, 0x01, 0x08, 0x12};
      dst[loom_test_rng_range(r, 0, (int64_t)len - 1)] = vals[loom_test_rng_range(r, 0, 6)];
      break;
    }
    case 3:
    case 4: /* corrupt a length field (only in the unshortened prefix) */
      if (lens->len) {
        size_t at = lens->at[loom_test_rng_range(r, 0, (int64_t)lens->len - 1)];
        if (at >= len) break;
        uint64_t old = 0;
        for (size_t i = 0; i < 10 && at + i < len; i++) {
          old |= (uint64_t)(dst[at + i] & 0x7f) << (7 * i);
          if (!(dst[at + i] & 0x80)) break;
        }
        static const int64_t deltas[] = {-2, -1, 1, 2, 1000};
        uint64_t nv = loom_test_rng_range(r, 0, 3) == 0 ? UINT64_MAX
                      : loom_test_rng_range(r, 0, 4) == 0 ? 0
                                                          : old + (uint64_t)deltas[loom_test_rng_range(r, 0, 4)];
        rewrite_varint(dst, len, at, nv);
      }
      break;
    case 5: { /* delete a chunk */
      size_t a = (size_t)loom_test_rng_range(r, 0, (int64_t)len - 1);
      size_t n = (size_t)loom_test_rng_range(r, 1, 16);
      if (a + n > len) n = len - a;
      memmove(dst + a, dst + a + n, len - a - n);
      len -= n;
      if (len == 0) return 0;
      break;
    }
    case 6: { /* duplicate a chunk (grows by at most 16 per round, 48 in all) */
      size_t a = (size_t)loom_test_rng_range(r, 0, (int64_t)len - 1);
      size_t n = (size_t)loom_test_rng_range(r, 1, 16);
      if (a + n > len) n = len - a;
      memmove(dst + a + n, dst + a, len - a);
      len += n;
      break;
    }
    }
  }
  return len;
}

LOOM_TEST(onnx, fuzz_model_loader) {
  const char *env_s = getenv("LOOM_FUZZ_SECONDS"), *env_n = getenv("LOOM_FUZZ_ITERS");
  double seconds = env_s ? atof(env_s) : 8.0;
  long max_iters = env_n ? atol(env_n) : 1000000;
  size_t n_seeds = sizeof seeds / sizeof seeds[0];
  blob blobs[sizeof seeds / sizeof seeds[0]];
  offsets lens[sizeof seeds / sizeof seeds[0]];
  size_t max_len = 0;
  for (size_t i = 0; i < n_seeds; i++) {
    blobs[i] = read_blob(seeds[i]);
    cr_assert_not_null(blobs[i].data, "missing seed %s", seeds[i]);
    lens[i] = (offsets){0};
    scan(blobs[i].data, blobs[i].data, blobs[i].data + blobs[i].len, &lens[i], 0);
    if (blobs[i].len > max_len) max_len = blobs[i].len;
    /* Every seed itself goes through once. */
    LLVMFuzzerTestOneInput(blobs[i].data, blobs[i].len);
  }
  uint8_t *buf = malloc(max_len + 64);
  uint64_t seed = loom_test_seed();
  loom_test_rng r = {seed};
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  long iters = 0;
  for (; iters < max_iters; iters++) {
    if ((iters & 63) == 0) {
      clock_gettime(CLOCK_MONOTONIC, &t1);
      if ((double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9 > seconds) break;
    }
    size_t which = (size_t)loom_test_rng_range(&r, 0, (int64_t)n_seeds - 1);
    size_t len = mutate(&r, &blobs[which], &lens[which], buf);
    LLVMFuzzerTestOneInput(buf, len);
  }
  printf("onnx fuzz: %ld iterations (seed %llu): %zu loaded, %zu rejected with a status; %zu raw_data in place\n", iters,
         (unsigned long long)seed, loom_fuzz_onnx_ok, loom_fuzz_onnx_errors, loom_fuzz_onnx_views);
  fflush(stdout);
  free(buf);
  for (size_t i = 0; i < n_seeds; i++) {
    free(blobs[i].data);
    free(lens[i].at);
  }
  cr_assert_gt(iters, 100);
  cr_assert_gt(loom_fuzz_onnx_views, 0, "no input had a raw_data left in place: the in-place loader was not exercised");
}
