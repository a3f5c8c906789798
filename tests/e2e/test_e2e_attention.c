/* test_e2e_attention.c — the compiled attention (tensorprog/gen_attn.c: the flash kernel from 8
 * query rows, the row kernel below and for f64) against the interpreter's reference in double
 * (tests/e2e/data/attention.loom), at 1 and 2 threads: query lengths 0, 1, 7 (the row kernel),
 * 8, primes, 31 / 33 / 127 / 129 / 513 (tile tails), key lengths equal, larger and smaller (a
 * decode step with a cache; causal rows with no key), grouped-query ratios 1 / 2 / 4 / 8, head
 * dims 32 / 64 / 80 / 128 and symbolic, masks along the keys only (read in the lanes) or along
 * queries and keys (packed per key step), additive with -inf entries and bool, rows with every
 * key masked (0, or NaN with empty_nan), and the composed matmul / softmax / matmul form the
 * `attention` pass rewrites (with the heads split from rows: layout bshd). Inputs are spread enough that a row's maximum moves from key step
 * to key step (the online softmax rescales). The programs are checked to hold the flash tiles
 * and the composed functions to call them. */
#define _POSIX_C_SOURCE 200809L /* strndup */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "e2e/e2e_util.h"
#include "targets/cpu/codegen.h"

static const char *const path = "tests/e2e/data/attention.loom";

/* One shape: batch, query heads, K/V heads, queries, keys, head dims (symbolic dims only). */
typedef struct shape {
  int64_t b, h, hk, s, t, d, e;
} shape;

/* The value of input `p` at flat index i: q, k, v spread over about [-amp, amp] (amp 2.5: a
 * score's spread of several units after the scale), a float mask of small values with a -inf
 * every 7th, a bool mask false every 4th; with `empty_rows` the bool mask is false on the whole
 * rows of every third query. */
static double value(size_t p, size_t i, loom_dtype dt, const int64_t *dims, int rank, bool empty_rows) {
  if (dt == LOOM_DTYPE_BOOL) {
    if (empty_rows && rank == 4 && (i / (size_t)dims[3]) % (size_t)dims[2] % 3 == 1) return 0;
    return (i * 5 + p) % 4 != 0;
  }
  if (p == 3) return i % 7 == 3 ? -INFINITY : 0.5 * sin((double)i * 0.9);
  return 2.5 * sin((double)i * (0.7 + 0.11 * (double)p) + (double)p);
}

/* The runtime tensor of parameter p of @fn at shape sh. */
static loom_tensor *input(e2e_model *md, const char *fn, size_t p, const e2e_bind *b, size_t nb, bool empty_rows) {
  loom_graph_func *f = loom_graph_module_find_func(md->ref, fn);
  const loom_sinfo *si = f->params[p]->sinfo;
  int64_t dims[8];
  for (int d = 0; d < si->ndim; d++) e2e_eval_env(md->ref, si->dims[d], b, nb, &dims[d]);
  loom_tensor *x;
  cr_assert_null(loom_rt_tensor_new(md->rt, si->dtype, si->ndim, dims, &x));
  loom_graph_tensor view = {.dtype = si->dtype, .data = x->data};
  size_t n = loom_tensor_numel(x);
  for (size_t i = 0; i < n; i++) loom_graph_tensor_set_f64(&view, i, value(p, i, si->dtype, dims, si->ndim, empty_rows));
  return x;
}

/* @fn at each shape, 1 and 2 threads: the worst relative error below tol. */
static void check(e2e_model *md, const char *fn, const shape *shapes, size_t n, double tol) {
  loom_graph_func *f = loom_graph_module_find_func(md->ref, fn);
  cr_assert_not_null(f, "no @%s", fn);
  bool empty_rows = strcmp(fn, "empty") == 0;
  for (size_t k = 0; k < n; k++) {
    const shape *sh = &shapes[k];
    e2e_bind b[7] = {{"b", sh->b}, {"h", sh->h}, {"hk", sh->hk}, {"s", sh->s}, {"t", sh->t}, {"d", sh->d}, {"e", sh->e}};
    loom_tensor *in[4] = {NULL};
    for (size_t p = 0; p < f->nparams; p++) in[p] = input(md, fn, p, b, 7, empty_rows);
    for (uint32_t threads = 1; threads <= 2; threads++) {
      cr_assert_null(loom_rt_set_threads(md->rt, threads));
      e2e_io io = {.ngiven = (uint32_t)f->nparams, .nan_ok = empty_rows};
      for (size_t p = 0; p < f->nparams; p++) io.given[p] = in[p];
      double err = e2e_check(md, fn, b, 7, false, &io);
      e2e_io_free(&io);
      cr_assert_lt(err, tol, "@%s at b=%lld h=%lld hk=%lld s=%lld t=%lld d=%lld e=%lld, %u threads: relative error %g", fn,
                   (long long)sh->b, (long long)sh->h, (long long)sh->hk, (long long)sh->s, (long long)sh->t,
                   (long long)sh->d, (long long)sh->e, threads, err);
    }
    for (size_t p = 0; p < f->nparams; p++) loom_tensor_release(in[p]);
  }
}

/* Queries 0 and 1, the row kernel (7), the first flash size (8), primes, the tile's tails
 * (31, 33; 127, 129) and key lengths unlike the query length (a cache; causal rows with no key). */
static const shape common[] = {
    {1, 2, 2, 0, 5, 0, 0},     {1, 2, 2, 5, 0, 0, 0},     {1, 1, 1, 1, 1, 0, 0},   {2, 3, 3, 7, 7, 0, 0},
    {1, 2, 2, 8, 8, 0, 0},     {1, 2, 2, 13, 29, 0, 0},   {2, 2, 2, 31, 31, 0, 0}, {1, 2, 2, 33, 40, 0, 0},
    {1, 2, 2, 40, 33, 0, 0},   {1, 2, 2, 127, 127, 0, 0}, {1, 1, 1, 129, 129, 0, 0}, {1, 1, 1, 3, 257, 0, 0},
};

/* Grouped-query ratios 1, 2, 4, 8 and a long sequence. */
static const shape grouped[] = {
    {1, 8, 8, 37, 45, 0, 0}, {1, 8, 4, 37, 45, 0, 0}, {1, 8, 2, 37, 45, 0, 0}, {1, 8, 1, 37, 45, 0, 0},
    {2, 8, 2, 9, 1, 0, 0},   {1, 8, 1, 1, 67, 0, 0},  {1, 1, 1, 513, 513, 0, 0},
};

LOOM_TEST(e2e_attention, grouped_query_and_causal_at_tails_and_cache_lengths) {
  e2e_model md = e2e_compile(path);
  check(&md, "gqa", common, LOOM_ARRAY_LEN(common), 2e-5);
  check(&md, "gqa", grouped, LOOM_ARRAY_LEN(grouped), 2e-5);
  check(&md, "gqa_causal", common, LOOM_ARRAY_LEN(common), 2e-5);
  check(&md, "gqa_causal", grouped, LOOM_ARRAY_LEN(grouped), 2e-5);
  e2e_model_free(&md);
}

LOOM_TEST(e2e_attention, head_dims_32_64_80_128_and_symbolic) {
  e2e_model md = e2e_compile(path);
  check(&md, "d32", common, LOOM_ARRAY_LEN(common), 2e-5);
  check(&md, "d80", common, LOOM_ARRAY_LEN(common), 2e-5);
  check(&md, "d128", common, LOOM_ARRAY_LEN(common), 2e-5);
  static const shape sym[] = {{1, 2, 2, 33, 40, 64, 64}, {1, 2, 2, 13, 29, 17, 5}, {2, 1, 1, 8, 8, 1, 1}, {1, 1, 1, 5, 9, 3, 7},
                              {1, 2, 2, 40, 33, 96, 48}};
  check(&md, "dsym", sym, LOOM_ARRAY_LEN(sym), 2e-5);
  check(&md, "f64", common, LOOM_ARRAY_LEN(common), 1e-12);
  e2e_model_free(&md);
}

LOOM_TEST(e2e_attention, masks_in_the_lanes_and_packed_additive_and_bool) {
  e2e_model md = e2e_compile(path);
  check(&md, "keys_mask", common, LOOM_ARRAY_LEN(common), 2e-5);
  check(&md, "full_mask_causal", common, LOOM_ARRAY_LEN(common), 2e-5);
  check(&md, "bool_mask", common, LOOM_ARRAY_LEN(common), 2e-5);
  check(&md, "bool_keys_causal", common, LOOM_ARRAY_LEN(common), 2e-5);
  /* every third row masked completely: NaN with empty_nan (the composed form's value) */
  check(&md, "empty", common, LOOM_ARRAY_LEN(common), 2e-5);
  /* (batch, seq, heads, dim): the projections' rows read and the result written in place */
  check(&md, "bshd", common, LOOM_ARRAY_LEN(common), 2e-5);
  check(&md, "bshd", grouped, LOOM_ARRAY_LEN(grouped), 2e-5);
  e2e_model_free(&md);
}

/* The attention program a compiled function calls (its first call_tp of a program whose name
 * holds "attention"). */
static char *program_of(e2e_model *md, const char *fn) {
  loom_graph_module *cm = loom_compiled_module(md->c);
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_graph_print_func(cm, loom_graph_module_find_func(cm, fn), &sb);
  const char *call = strstr(loom_strbuf_cstr(&sb), "call_tp(@");
  while (call && (strstr(call, "attention") == NULL || strstr(call, "attention") > strchr(call, ',')))
    call = strstr(call + 1, "call_tp(@");
  cr_assert_not_null(call, "@%s calls no attention program:\n%s", fn, loom_strbuf_cstr(&sb));
  char name[256];
  size_t n = strcspn(call + 9, ",");
  cr_assert_lt(n, sizeof name);
  memcpy(name, call + 9, n);
  name[n] = 0;
  loom_strbuf_free(&sb);
  loom_strbuf_init(&sb, NULL);
  loom_graph_print_module(cm, &sb);
  char head[300];
  snprintf(head, sizeof head, "prim @%s(", name);
  const char *p = strstr(loom_strbuf_cstr(&sb), head);
  cr_assert_not_null(p, "no program @%s", name);
  const char *e = strstr(p + 1, "\nprim @");
  char *text = strndup(p, e ? (size_t)(e - p) : strlen(p));
  loom_strbuf_free(&sb);
  return text;
}

LOOM_TEST(e2e_attention, the_composed_form_runs_the_flash_kernel) {
  e2e_model md = e2e_compile(path);
  /* the op's programs: flash tiles sized to the head dims and to this machine's vectors (32
   * queries x 8 keys with AVX-512, 16 x 6 with AVX2, 8 x 6 with 16-byte vectors: gen_attn.c
   * flash_tile), the row kernel below 8 queries */
  int vb = loom_cpu_vector_bytes(NULL), qt = vb >= 64 ? 32 : vb >= 32 ? 16 : 8, kt = vb >= 64 ? 8 : 6;
  static const char *const tiles[][2] = {{"gqa", "alloc Qt: Local[(64, %d), f32]"},
                                         {"d80", "alloc Ot: Local[(80, %d), f32]"},
                                         {"dsym", "alloc Qt: Local[(dq, %d), f32]"},
                                         {"keys_mask", "alloc S: Local[(%d, %d), f32]"},
                                         {"bool_mask", "alloc Mt: Local[(%d, %d), f32]"},
                                         {"composed_causal", "alloc Qt: Local[(64, %d), f32]"},
                                         {"composed_gqa", "alloc Qt: Local[(64, %d), f32]"},
                                         {"bshd", "alloc Qt: Local[(64, %d), f32]"}};
  for (size_t i = 0; i < LOOM_ARRAY_LEN(tiles); i++) {
    char want[64];
    if (i == 3 || i == 4) snprintf(want, sizeof want, tiles[i][1], kt, qt);
    else snprintf(want, sizeof want, tiles[i][1], qt);
    char *text = program_of(&md, tiles[i][0]);
    cr_assert(strstr(text, "attention_f32") != NULL, "@%s: %.200s", tiles[i][0], text);
    cr_assert(strstr(text, want) != NULL, "@%s lacks '%s':\n%s", tiles[i][0], want, text);
    cr_assert(strstr(text, "if d2 < 8 {") != NULL, "@%s: no row kernel for few queries", tiles[i][0]);
    free(text);
  }
  char *f64 = program_of(&md, "f64");
  cr_assert(strstr(f64, "alloc Qt") == NULL, "%s", f64);
  free(f64);
  /* the composed forms, rewritten by the `attention` pass, against the interpreter running them
   * as written (matmul, scale, causal bias, softmax, matmul) */
  static const shape causal[] = {{1, 2, 2, 1, 1, 0, 0},    {2, 3, 3, 7, 7, 0, 0},     {1, 2, 2, 8, 8, 0, 0},
                                 {1, 2, 2, 37, 37, 0, 0},  {1, 1, 1, 129, 129, 0, 0}};
  check(&md, "composed_causal", causal, LOOM_ARRAY_LEN(causal), 2e-5);
  static const shape gqa[] = {{1, 8, 2, 1, 67, 0, 0}, {2, 8, 2, 9, 1, 0, 0}, {1, 8, 2, 37, 45, 0, 0}, {1, 8, 2, 0, 3, 0, 0}};
  check(&md, "composed_gqa", gqa, LOOM_ARRAY_LEN(gqa), 2e-5);
  /* heads split from the projection's rows, K^T as one permute_dims, where(not(tril), -inf, S)
   * (a PyTorch export's form): no transposition is left, and no slice either: the kernel reads
   * q, k and v in the projection's rows (simplify's views before copies, then fusion) */
  check(&md, "composed_bshd", causal, LOOM_ARRAY_LEN(causal), 2e-5);
  char *bshd = program_of(&md, "composed_bshd");
  cr_assert(strstr(bshd, "attention_f32_causal") != NULL && strstr(bshd, "q4_rows: Buffer[(b, s, 12, 16), f32]") != NULL,
            "%.400s", bshd);
  free(bshd);
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_graph_module *cm = loom_compiled_module(md.c);
  loom_graph_print_func(cm, loom_graph_module_find_func(cm, "composed_bshd"), &sb);
  cr_assert(strstr(loom_strbuf_cstr(&sb), "permute") == NULL && strstr(loom_strbuf_cstr(&sb), "slice") == NULL, "%s",
            loom_strbuf_cstr(&sb));
  loom_strbuf_free(&sb);
  e2e_model_free(&md);
}

/* A transformer exported from PyTorch (models/tiny_transformer: heads split from rows, K^T as one
 * transposition, masked_fill(~tril, -inf)): compiled, its two attentions are the op in layout
 * bshd reading q, k and v in the projection's rows, and no transposition or slice is left;
 * against the interpreter running the export as written. */
LOOM_TEST(e2e_attention, a_pytorch_export_runs_the_flash_kernel) {
  e2e_model md = e2e_compile("models/tiny_transformer/model.onnx");
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_graph_module *cm = loom_compiled_module(md.c);
  loom_graph_print_func(cm, loom_graph_module_find_func(cm, "main"), &sb);
  const char *text = loom_strbuf_cstr(&sb), *a = strstr(text, "attention_f32_causal_nan_bshd");
  cr_assert(a != NULL && strstr(a + 1, "attention_f32_causal_nan_bshd") != NULL, "%s", text);
  cr_assert(strstr(text, "permute") == NULL && strstr(text, "slice") == NULL, "%s", text);
  loom_strbuf_free(&sb);
  static const int64_t shapes[][2] = {{1, 1}, {2, 7}, {1, 8}, {3, 16}, {1, 61}, {4, 33}};
  for (size_t i = 0; i < LOOM_ARRAY_LEN(shapes); i++)
    for (uint32_t threads = 1; threads <= 2; threads++) {
      cr_assert_null(loom_rt_set_threads(md.rt, threads));
      e2e_bind b[2] = {{"batch", shapes[i][0]}, {"seq", shapes[i][1]}};
      double err = e2e_check(&md, "main", b, 2, false, NULL);
      cr_assert_lt(err, 1e-5, "(%lld, %lld), %u threads: relative error %g", (long long)shapes[i][0], (long long)shapes[i][1],
                   threads, err);
    }
  e2e_model_free(&md);
}
