/* test_legalize_paged.c — paged_attention (graph/op_paged.c, tensorprog/gen_paged.c): the
 * reference against the dense `attention` op on each sequence's gathered keys (an independent
 * oracle), the legalized program (tensor-program interpreter) and the compiled kernel (JIT, 1
 * and 2 threads) against the reference, on
 * ragged batches with chunked prefill, decode, empty batches, pages in shuffled order, absent
 * pages and sequences, grouped-query heads; and inference's error messages. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "graph/legalize.h"
#include "loom.h"
#include "support/loom_test.h"

static const char *const paged_text =
    "fn @main(q: Tensor[(t, h, d), f32], k: Tensor[(t, hk, d), f32], v: Tensor[(t, hk, dv), f32],\n"
    "         kc: Tensor[(n, pg, hk, d), %s], vc: Tensor[(n, pg, hk, dv), %s], bt: Tensor[(b, m), i64],\n"
    "         ctx: Tensor[(b,), i64], seq: Tensor[(t,), i64], pos: Tensor[(t,), i64]) -> Tensor[(t, h, dv), f32] {\n"
    "  dataflow {\n    y = paged_attention(q, k, v, kc, vc, bt, ctx, seq, pos%s)\n    output y\n  }\n  return y\n}\n";

static const char *const dense_text =
    "fn @main(q: Tensor[(1, h, s, d), f32], k: Tensor[(1, hk, u, d), f32], v: Tensor[(1, hk, u, dv), f32]) -> Tensor[(1, h, s, dv), f32] {\n"
    "  dataflow {\n    y = attention(q, k, v, causal=true%s)\n    output y\n  }\n  return y\n}\n";

static loom_graph_module *parse(const char *fmt, const char *attrs) {
  char text[2048];
  snprintf(text, sizeof text, fmt, attrs);
  loom_source src = {"paged.loom", text, strlen(text)};
  loom_diag_list dl;
  loom_diag_list_init(&dl, NULL);
  loom_graph_module *m = NULL;
  loom_status s = loom_graph_parse(&src, &dl, &m);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  loom_diag_list_destroy(&dl);
  return m;
}

/* The paged module's text: caches of dtype ct, call attributes attrs. */
static void paged_src(char *text, size_t n, const char *ct, const char *attrs) { snprintf(text, n, paged_text, ct, ct, attrs); }

static uint64_t rng_state;
static double frand(void) {
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  return (double)(rng_state >> 11) / 9007199254740992.0 * 2 - 1;
}

static void tensor(loom_graph_value *v, loom_dtype dt, int nd, int64_t a, int64_t b, int64_t c, int64_t d) {
  int64_t shape[4] = {a, b, c, d};
  cr_assert_null(loom_graph_value_tensor(dt, nd, shape, v));
  if (loom_dtype_is_float(dt))
    for (size_t i = 0; i < v->t.numel; i++) loom_graph_tensor_set_f64(&v->t, i, frand());
}

/* The module compiled (JIT) and run at 1 and 2 threads on the same inputs: within 1e-5 of ref. */
static void check_compiled(const char *ct, const char *attrs, loom_graph_value *in, const loom_graph_value *ref) {
  char text[2048];
  paged_src(text, sizeof text, ct, attrs);
  loom_compile_options o = {.emit = LOOM_TARGET_EMIT_JIT};
  loom_compiled *c;
  loom_status st = loom_compile_buffer(text, strlen(text), "paged.loom", "loom", &o, &c);
  cr_assert_null(st, "%s", loom_status_text(st, 0));
  loom_rt *rt;
  cr_assert_null(loom_compiled_open(c, NULL, &rt));
  loom_tensor *args[9];
  for (int i = 0; i < 9; i++)
    cr_assert_null(loom_rt_tensor_borrow(rt, in[i].t.dtype, in[i].t.ndim, in[i].t.shape, in[i].t.data,
                                         in[i].t.numel * loom_dtype_size(in[i].t.dtype), &args[i]));
  for (uint32_t threads = 1; threads <= 2; threads++) {
    cr_assert_null(loom_rt_set_threads(rt, threads));
    loom_rt_outputs out;
    st = loom_rt_call(rt, "main", args, 9, &out);
    cr_assert_null(st, "%s", loom_status_text(st, 0));
    const loom_tensor *y = (const loom_tensor *)out.items[0];
    cr_assert_eq(loom_tensor_numel(y), ref->t.numel);
    for (size_t i = 0; i < ref->t.numel; i++) {
      double a = loom_graph_tensor_get_f64(&ref->t, i), b = ((const float *)y->data)[i];
      cr_assert(fabs(a - b) <= 1e-5 * (1 + fabs(a)), "compiled, %u threads, elem %zu: want %.9g got %.9g", threads, i, a, b);
    }
    loom_rt_outputs_free(&out);
  }
  for (int i = 0; i < 9; i++) loom_tensor_release(args[i]);
  loom_rt_close(rt);
  loom_compiled_free(c);
}

/* A scenario: sequences with `cached[s]` keys in the cache and `fresh[s]` tokens in the step. */
typedef struct scenario {
  int nseq, h, hk, d, dv, pg, npages;
  int cached[20], fresh[20];
  bool bad_page;     /* one page of sequence 0 made -1 (absent) */
  bool bad_seq;      /* the last token's sequence made out of range */
  loom_dtype cache;  /* the caches' dtype (0: f32) */
} scenario;

/* Builds the inputs, runs the reference paged op, the legalized program and, per sequence, the
 * dense attention over the gathered keys; all three must agree. */
static void run(const scenario *sc, const char *attrs) {
  rng_state = 12345;
  int T = 0, M = 1;
  for (int s = 0; s < sc->nseq; s++) {
    T += sc->fresh[s];
    int need = (sc->cached[s] + sc->pg - 1) / sc->pg;
    if (need > M) M = need;
  }
  loom_graph_value in[9];
  tensor(&in[0], LOOM_DTYPE_F32, 3, T, sc->h, sc->d, 0);
  tensor(&in[1], LOOM_DTYPE_F32, 3, T, sc->hk, sc->d, 0);
  tensor(&in[2], LOOM_DTYPE_F32, 3, T, sc->hk, sc->dv, 0);
  loom_dtype ct = sc->cache ? sc->cache : LOOM_DTYPE_F32;
  tensor(&in[3], ct, 4, sc->npages, sc->pg, sc->hk, sc->d);
  tensor(&in[4], ct, 4, sc->npages, sc->pg, sc->hk, sc->dv);
  tensor(&in[5], LOOM_DTYPE_I64, 2, sc->nseq, M, 0, 0);
  tensor(&in[6], LOOM_DTYPE_I64, 1, sc->nseq, 0, 0, 0);
  tensor(&in[7], LOOM_DTYPE_I64, 1, T, 0, 0, 0);
  tensor(&in[8], LOOM_DTYPE_I64, 1, T, 0, 0, 0);
  /* pages handed out from the end, so block tables are not the identity */
  int next_page = sc->npages - 1, t0 = 0;
  for (int s = 0; s < sc->nseq; s++) {
    for (int j = 0; j < M; j++) {
      bool used = j * sc->pg < sc->cached[s];
      loom_graph_tensor_set_i64(&in[5].t, (size_t)(s * M + j), used ? next_page-- : 7777);
    }
    loom_graph_tensor_set_i64(&in[6].t, (size_t)s, sc->cached[s]);
    for (int i = 0; i < sc->fresh[s]; i++) {
      loom_graph_tensor_set_i64(&in[7].t, (size_t)(t0 + i), s);
      loom_graph_tensor_set_i64(&in[8].t, (size_t)(t0 + i), sc->cached[s] + i);
    }
    t0 += sc->fresh[s];
  }
  cr_assert_geq(next_page, -1, "scenario needs more pages");
  if (sc->bad_page) loom_graph_tensor_set_i64(&in[5].t, 0, -1);
  if (sc->bad_seq && T) loom_graph_tensor_set_i64(&in[7].t, (size_t)T - 1, sc->nseq + 3);

  char text[2048];
  paged_src(text, sizeof text, loom_dtype_name(ct), attrs);
  loom_graph_module *m = parse("%s", text);
  loom_graph_value ref, got;
  loom_status s = loom_graph_eval(m, "main", 9, in, NULL, &ref);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  loom_diag_list dl;
  loom_diag_list_init(&dl, NULL);
  size_t done = 0, kept = 0;
  cr_assert_null(loom_graph_legalize(m, &dl, &done, &kept));
  cr_assert_eq(done, 1);
  cr_assert_eq(kept, 0);
  loom_diag_list_destroy(&dl);
  s = loom_graph_eval(m, "main", 9, in, NULL, &got);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  check_compiled(loom_dtype_name(ct), attrs, in, &ref);
  for (size_t i = 0; i < ref.t.numel; i++) {
    double a = loom_graph_tensor_get_f64(&ref.t, i), b = loom_graph_tensor_get_f64(&got.t, i);
    cr_assert(fabs(a - b) <= 1e-5 * (1 + fabs(a)), "legalized elem %zu: want %.9g got %.9g", i, a, b);
  }

  /* the dense oracle, sequence by sequence (not with an absent page: it would read the page) */
  loom_graph_module *dm = parse(dense_text, attrs);
  t0 = 0;
  for (int sq = 0; sq < sc->nseq && !sc->bad_page; sq++) {
    int S = sc->fresh[sq], U = sc->cached[sq] + S;
    loom_graph_value din[3], dout;
    cr_assert_null(loom_graph_value_tensor(LOOM_DTYPE_F32, 4, (int64_t[]){1, sc->h, S, sc->d}, &din[0]));
    cr_assert_null(loom_graph_value_tensor(LOOM_DTYPE_F32, 4, (int64_t[]){1, sc->hk, U, sc->d}, &din[1]));
    cr_assert_null(loom_graph_value_tensor(LOOM_DTYPE_F32, 4, (int64_t[]){1, sc->hk, U, sc->dv}, &din[2]));
    for (int i = 0; i < S; i++)
      for (int hh = 0; hh < sc->h; hh++)
        for (int r = 0; r < sc->d; r++)
          loom_graph_tensor_set_f64(&din[0].t, (size_t)((hh * S + i) * sc->d + r),
                                    loom_graph_tensor_get_f64(&in[0].t, (size_t)(((t0 + i) * sc->h + hh) * sc->d + r)));
    for (int j = 0; j < U; j++)
      for (int kv = 0; kv < sc->hk; kv++)
        for (int w = 0; w < 2; w++) {
          int dim = w ? sc->dv : sc->d;
          for (int r = 0; r < dim; r++) {
            double x;
            if (j < sc->cached[sq]) {
              int64_t page = loom_graph_tensor_get_i64(&in[5].t, (size_t)(sq * M + j / sc->pg));
              x = loom_graph_tensor_get_f64(&in[3 + w].t, (size_t)(((page * sc->pg + j % sc->pg) * sc->hk + kv) * dim + r));
            } else {
              x = loom_graph_tensor_get_f64(&in[1 + w].t, (size_t)(((t0 + j - sc->cached[sq]) * sc->hk + kv) * dim + r));
            }
            loom_graph_tensor_set_f64(&din[1 + w].t, (size_t)((kv * U + j) * dim + r), x);
          }
        }
    s = loom_graph_eval(dm, "main", 3, din, NULL, &dout);
    cr_assert_null(s, "%s", loom_status_text(s, 0));
    for (int i = 0; i < S; i++) {
      bool absent_seq = sc->bad_seq && t0 + i == T - 1;
      for (int hh = 0; hh < sc->h; hh++)
        for (int e = 0; e < sc->dv; e++) {
          double want = absent_seq ? 0 : loom_graph_tensor_get_f64(&dout.t, (size_t)((hh * S + i) * sc->dv + e));
          double have = loom_graph_tensor_get_f64(&ref.t, (size_t)(((t0 + i) * sc->h + hh) * sc->dv + e));
          cr_assert(fabs(want - have) <= 1e-9 * (1 + fabs(want)), "seq %d token %d head %d elem %d: dense %.12g paged %.12g", sq, i, hh, e,
                    want, have);
        }
    }
    loom_graph_value_free(&dout);
    for (int i = 0; i < 3; i++) loom_graph_value_free(&din[i]);
    t0 += S;
  }
  loom_graph_value_free(&ref);
  loom_graph_value_free(&got);
  for (int i = 0; i < 9; i++) loom_graph_value_free(&in[i]);
  loom_graph_module_destroy(m);
  loom_graph_module_destroy(dm);
}

LOOM_TEST(legalize_paged, prefill_decode_mixed) {
  /* a chunk of a prompt after cached keys, a fresh prompt, and two decodes, page size 3 (prime) */
  scenario sc = {.nseq = 4, .h = 4, .hk = 2, .d = 5, .dv = 3, .pg = 3, .npages = 12, .cached = {4, 0, 7, 1}, .fresh = {3, 5, 1, 1}};
  run(&sc, "");
  run(&sc, ", scale=0.3");
}

/* Contexts 0, 1, primes and page-boundary lengths (one less, equal, one more than a page or two)
 * in one batch: the walk over pages stops at each row's own context, not the batch's longest. */
LOOM_TEST(legalize_paged, context_lengths_at_page_edges) {
  scenario sc = {.nseq = 4, .h = 4, .hk = 4, .d = 16, .dv = 16, .pg = 4, .npages = 12, .cached = {0, 1, 13, 16}, .fresh = {1, 1, 1, 1}};
  run(&sc, "");
  scenario sc2 = {.nseq = 4, .h = 2, .hk = 2, .d = 8, .dv = 8, .pg = 16, .npages = 8, .cached = {15, 16, 17, 31}, .fresh = {1, 3, 1, 2}};
  run(&sc2, "");
  scenario sc3 = {.nseq = 3, .h = 2, .hk = 1, .d = 7, .dv = 5, .pg = 5, .npages = 12, .cached = {5, 10, 29}, .fresh = {4, 1, 6}};
  run(&sc3, ", scale=0.2");
}

/* Grouped-query heads (8 query heads on 2 key/value heads) with the head widths of a real model
 * (64: the vectorised dot products' full vectors), a long context (211 keys, prime) next to a
 * short one, a prefill chunk after cached keys and a fresh prompt. */
LOOM_TEST(legalize_paged, gqa_long_context) {
  scenario sc = {.nseq = 3, .h = 8, .hk = 2, .d = 64, .dv = 64, .pg = 16, .npages = 20, .cached = {211, 2, 0}, .fresh = {1, 5, 7}};
  run(&sc, "");
  scenario sc2 = {.nseq = 2, .h = 4, .hk = 1, .d = 67, .dv = 33, .pg = 7, .npages = 40, .cached = {97, 64}, .fresh = {2, 1}};
  run(&sc2, "");
}

/* Many sequences (a decode batch of 17 as the server runs: more tokens than the thread pool's
 * chunks, contexts 0, 1, a page -1 / 0 / +1, primes, long ones) and few with long contexts (one
 * decode of 509 keys; a 40-token prefill chunk after 100 cached next to a decode), page sizes
 * 8, 16 and 5. */
LOOM_TEST(legalize_paged, many_and_few_sequences) {
  scenario many = {.nseq = 17, .h = 4, .hk = 4, .d = 16, .dv = 16, .pg = 8, .npages = 140,
                   .cached = {0, 1, 7, 8, 9, 13, 31, 64, 97, 127, 211, 2, 3, 5, 17, 300, 99},
                   .fresh = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}};
  run(&many, "");
  scenario one = {.nseq = 1, .h = 2, .hk = 1, .d = 64, .dv = 64, .pg = 16, .npages = 32, .cached = {509}, .fresh = {1}};
  run(&one, "");
  scenario chunk = {.nseq = 2, .h = 2, .hk = 2, .d = 8, .dv = 8, .pg = 5, .npages = 24, .cached = {100, 3}, .fresh = {40, 1}};
  run(&chunk, ", scale=0.5");
}

/* Half-width caches (f16, bf16) under f32 queries: the program widens each cached element as it
 * reads it; the reference, the interpreted program, the compiled one at 1 and 2 threads and the
 * dense oracle (on the cache's values widened) agree. */
LOOM_TEST(legalize_paged, half_width_caches) {
  scenario many = {.nseq = 17, .h = 4, .hk = 4, .d = 16, .dv = 16, .pg = 8, .npages = 140, .cache = LOOM_DTYPE_F16,
                   .cached = {0, 1, 7, 8, 9, 13, 31, 64, 97, 127, 211, 2, 3, 5, 17, 300, 99},
                   .fresh = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}};
  run(&many, "");
  scenario gqa = {.nseq = 3, .h = 8, .hk = 2, .d = 64, .dv = 64, .pg = 16, .npages = 20, .cache = LOOM_DTYPE_F16, .cached = {211, 2, 0},
                  .fresh = {1, 5, 7}};
  run(&gqa, ", scale=0.125");
  scenario odd = {.nseq = 3, .h = 2, .hk = 1, .d = 7, .dv = 5, .pg = 5, .npages = 12, .cache = LOOM_DTYPE_BF16, .cached = {5, 10, 29},
                  .fresh = {4, 1, 6}};
  run(&odd, "");
  scenario absent = {.nseq = 2, .h = 2, .hk = 2, .d = 3, .dv = 2, .pg = 2, .npages = 6, .cache = LOOM_DTYPE_F16, .cached = {3, 1},
                     .fresh = {1, 1}, .bad_page = true};
  run(&absent, "");
}

LOOM_TEST(legalize_paged, one_token_one_page) {
  scenario sc = {.nseq = 1, .h = 1, .hk = 1, .d = 1, .dv = 1, .pg = 1, .npages = 1, .cached = {0}, .fresh = {1}};
  run(&sc, "");
  scenario sc2 = {.nseq = 1, .h = 2, .hk = 1, .d = 8, .dv = 8, .pg = 16, .npages = 2, .cached = {17}, .fresh = {1}};
  run(&sc2, "");
}

LOOM_TEST(legalize_paged, empty_batch) {
  scenario sc = {.nseq = 1, .h = 2, .hk = 2, .d = 4, .dv = 4, .pg = 4, .npages = 2, .cached = {0}, .fresh = {0}};
  run(&sc, "");
}

/* An absent page drops its keys: checked against the reference only (the dense oracle would
 * read the page), then a token whose sequence is out of range gives zeros. */
LOOM_TEST(legalize_paged, absent_pages_and_sequences) {
  scenario sc = {.nseq = 2, .h = 2, .hk = 1, .d = 3, .dv = 2, .pg = 2, .npages = 6, .cached = {0, 3}, .fresh = {2, 2}, .bad_seq = true};
  run(&sc, "");
  scenario sc2 = {.nseq = 2, .h = 2, .hk = 2, .d = 3, .dv = 2, .pg = 2, .npages = 6, .cached = {3, 1}, .fresh = {1, 1}, .bad_page = true};
  run(&sc2, "");
}

LOOM_TEST(legalize_paged, inference_errors) {
  static const struct {
    const char *params, *call, *msg;
  } cases[] = {
      {"q: Tensor[(t, 4, 8), f32], k: Tensor[(t, 3, 8), f32], v: Tensor[(t, 3, 8), f32], kc: Tensor[(n, p, 3, 8), f32], "
       "vc: Tensor[(n, p, 3, 8), f32], bt: Tensor[(b, m), i64], c: Tensor[(b,), i64], s: Tensor[(t,), i64], o: Tensor[(t,), i64]",
       "paged_attention(q, k, v, kc, vc, bt, c, s, o)", "not a multiple of operand 1 (k) axis 1 (3)"},
      {"q: Tensor[(t, 4, 8), f32], k: Tensor[(t, 4, 8), f32], v: Tensor[(t, 4, 8), f32], kc: Tensor[(n, p, 4, 8), f32], "
       "vc: Tensor[(n, p, 4, 8), f32], bt: Tensor[(b, m), i32], c: Tensor[(b,), i64], s: Tensor[(t,), i64], o: Tensor[(t,), i64]",
       "paged_attention(q, k, v, kc, vc, bt, c, s, o)", "operand 5 (block_tables) has dtype i32; i64 is required"},
      {"q: Tensor[(t, 4, 8), f32], k: Tensor[(t, 4, 8), f32], v: Tensor[(t, 4, 8), f32], kc: Tensor[(n, 4, 8), f32], "
       "vc: Tensor[(n, p, 4, 8), f32], bt: Tensor[(b, m), i64], c: Tensor[(b,), i64], s: Tensor[(t,), i64], o: Tensor[(t,), i64]",
       "paged_attention(q, k, v, kc, vc, bt, c, s, o)", "operand 3 (k_cache) must have rank 4, got 3"},
      {"q: Tensor[(t, 4, 8), f32], k: Tensor[(t, 4, 8), f32], v: Tensor[(t, 4, 8), f32], kc: Tensor[(n, p, 4, 6), f32], "
       "vc: Tensor[(n, p, 4, 8), f32], bt: Tensor[(b, m), i64], c: Tensor[(b,), i64], s: Tensor[(t,), i64], o: Tensor[(t,), i64]",
       "paged_attention(q, k, v, kc, vc, bt, c, s, o)", "operand 3 axis 3 is 6, operand 0 axis 2 is 8"},
      {"q: Tensor[(t, 4, 8), i32], k: Tensor[(t, 4, 8), f32], v: Tensor[(t, 4, 8), f32], kc: Tensor[(n, p, 4, 8), f32], "
       "vc: Tensor[(n, p, 4, 8), f32], bt: Tensor[(b, m), i64], c: Tensor[(b,), i64], s: Tensor[(t,), i64], o: Tensor[(t,), i64]",
       "paged_attention(q, k, v, kc, vc, bt, c, s, o)", "operand 0 (q) has dtype i32; a float dtype is required"},
      {"q: Tensor[(t, 4, 8), f32], k: Tensor[(t, 4, 8), f32], v: Tensor[(t, 4, 8), f32], kc: Tensor[(n, p, 4, 8), f32], "
       "vc: Tensor[(n, p, 4, 8), f32], bt: Tensor[(b, m), i64], c: Tensor[(b,), i64], s: Tensor[(t,), i64], o: Tensor[(t,), i64]",
       "paged_attention(q, k, v, kc, vc, bt, c, s)", "paged_attention"},
      {"q: Tensor[(t, 4, 8), f32], k: Tensor[(t, 4, 8), f32], v: Tensor[(t, 4, 8), f32], kc: Tensor[(n, p, 4, 8), f16], "
       "vc: Tensor[(n, p, 4, 8), f32], bt: Tensor[(b, m), i64], c: Tensor[(b,), i64], s: Tensor[(t,), i64], o: Tensor[(t,), i64]",
       "paged_attention(q, k, v, kc, vc, bt, c, s, o)", "operand 4 (v_cache) has dtype f32; f16 is required"},
      {"q: Tensor[(t, 4, 8), f16], k: Tensor[(t, 4, 8), f16], v: Tensor[(t, 4, 8), f16], kc: Tensor[(n, p, 4, 8), f32], "
       "vc: Tensor[(n, p, 4, 8), f32], bt: Tensor[(b, m), i64], c: Tensor[(b,), i64], s: Tensor[(t,), i64], o: Tensor[(t,), i64]",
       "paged_attention(q, k, v, kc, vc, bt, c, s, o)", "operand 3 (k_cache) has dtype f32; f16, or f16 / bf16 under an f32 or f64 q, is required"},
      {"q: Tensor[(t, 4, 8), f32], k: Tensor[(t, 4, 8), f32], v: Tensor[(t, 4, 8), f32], kc: Tensor[(n, p, 4, 8), i32], "
       "vc: Tensor[(n, p, 4, 8), i32], bt: Tensor[(b, m), i64], c: Tensor[(b,), i64], s: Tensor[(t,), i64], o: Tensor[(t,), i64]",
       "paged_attention(q, k, v, kc, vc, bt, c, s, o)", "operand 3 (k_cache) has dtype i32; a float dtype is required"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char text[2048];
    snprintf(text, sizeof text, "fn @main(%s) -> Object {\n  dataflow {\n    y = %s\n    output y\n  }\n  return y\n}\n", cases[i].params,
             cases[i].call);
    loom_source src = {"bad.loom", text, strlen(text)};
    loom_diag_list dl;
    loom_diag_list_init(&dl, NULL);
    loom_graph_module *m = NULL;
    loom_status s = loom_graph_parse(&src, &dl, &m);
    cr_assert_not_null(s, "case %zu parsed", i);
    char *all = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&all, &len);
    fprintf(f, "%s\n", loom_status_text(s, 0));
    loom_diag_list_print(f, &dl);
    fclose(f);
    cr_assert(strstr(all, cases[i].msg), "case %zu: '%s' not in: %s", i, cases[i].msg, all);
    free(all);
    loom_status_free(s);
    loom_diag_list_destroy(&dl);
    loom_graph_module_destroy(m);
  }
}
