/* sample.c — one token from a row of logits: greedy (the first maximum), or temperature,
 * top-k and top-p (nucleus) sampling with the request's own seeded stream, so a request with
 * a seed gives the same tokens for the same logits, whatever else runs beside it. */
#include <math.h>
#include <stdlib.h>

#include "serve/serve_internal.h"

uint64_t loom_serve_rng_next(loom_serve_rng *r) {
  uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double loom_serve_rng_uniform(loom_serve_rng *r) { return (double)(loom_serve_rng_next(r) >> 11) / 9007199254740992.0; }

static int64_t argmax(const float *x, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; i++)
    if (x[i] > x[best] || (x[best] != x[best] && x[i] == x[i])) best = i; /* a NaN never wins */
  return best;
}

/* Sorts the candidate indices by logit, largest first (ties: lower index first). */
static const float *sort_logits;
static int by_logit(const void *a, const void *b) {
  int32_t i = *(const int32_t *)a, j = *(const int32_t *)b;
  float x = sort_logits[i], y = sort_logits[j];
  if (x != y) return x > y ? -1 : 1;
  return (i > j) - (i < j);
}

/* Sampling: the candidates sorted by logit (qsort's comparator reads a file-level pointer, so
 * this part runs on the engine's one thread), the top k kept, softmax at the temperature, the
 * smallest prefix whose mass reaches top_p kept, then one uniform draw over what is left. */
int64_t loom_serve_sample(const float *logits, int64_t n, const loom_serve_sampling *s, loom_serve_rng *r, void *scratch) {
  if (n <= 1) return 0;
  if (!(s->temperature > 0) || s->top_k == 1) return argmax(logits, n);
  double *p = scratch;
  int32_t *idx = (int32_t *)(p + n);
  for (int64_t i = 0; i < n; i++) idx[i] = (int32_t)i;
  sort_logits = logits;
  qsort(idx, (size_t)n, sizeof *idx, by_logit);
  int64_t k = s->top_k > 0 && s->top_k < n ? s->top_k : n;
  double mx = logits[idx[0]], sum = 0;
  for (int64_t i = 0; i < k; i++) sum += (p[i] = exp(((double)logits[idx[i]] - mx) / s->temperature));
  if (!(sum > 0) || sum != sum) return idx[0];
  int64_t keep = k;
  if (s->top_p < 1) {
    double c = 0;
    for (int64_t i = 0; i < k; i++) {
      c += p[i] / sum;
      if (c >= s->top_p) {
        keep = i + 1;
        break;
      }
    }
  }
  double mass = 0;
  for (int64_t i = 0; i < keep; i++) mass += p[i];
  double u = loom_serve_rng_uniform(r) * mass, c = 0;
  for (int64_t i = 0; i < keep; i++) {
    c += p[i];
    if (u < c) return idx[i];
  }
  return idx[keep - 1];
}
