/* op_paged.c — paged_attention: attention of a ragged batch of tokens over a key/value cache
 * kept in fixed-size pages (the serving engine's cache, docs/serve.md): attributes, inference,
 * the reference implementation and legalization (tensorprog/gen_paged.c).
 *
 *   y = paged_attention(q, k, v, k_cache, v_cache, block_tables, ctx_lens, seq_ids, positions, scale=0.25)
 *
 * q (t, h, d), k (t, hk, d), v (t, hk, dv): the step's t tokens (of every sequence, each
 * sequence's tokens contiguous and in order); k_cache (n, pg, hk, d), v_cache (n, pg, hk, dv):
 * n pages of pg slots; block_tables (b, m) i64: page of sequence s's key j is
 * block_tables[s, j / pg], slot j % pg; ctx_lens (b,) i64: keys of sequence s already cached;
 * seq_ids (t,), positions (t,) i64: each token's sequence and absolute position. Token i of
 * sequence s, nw = positions[i] - ctx_lens[s], attends to the cached keys 0 .. ctx_lens[s] - 1
 * and to the step's tokens i - nw .. i. Pages outside [0, n), step tokens before 0 and
 * sequences outside [0, b) contribute no key (a row without keys is 0), so no operand value
 * reads outside a tensor. y (t, h, dv). The op reads the cache; writing the step's k and v
 * into it is the caller's (the engine's) job. The caches are q's dtype, or f16 / bf16 under an
 * f32 or f64 q (half the bytes a key: the program widens each cached element as it reads it). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/hash.h"
#include "graph/legalize_internal.h"

static const loom_graph_attr_spec paged_attrs[] = {{"scale", LOOM_GRAPH_ATTR_FLOAT, .required = false}, {0}};

/* The operands' names, for messages. */
static const char *const operand_names[9] = {"q", "k", "v", "k_cache", "v_cache", "block_tables", "ctx_lens", "seq_ids", "positions"};

/* Operand i: a tensor of rank `rank` and, for the float operands, q's dtype; the integer
 * operands i64. */
static loom_status operand(loom_graph_icx *ic, size_t i, int rank, loom_dtype want, const loom_sinfo **out) {
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, i, true, out));
  if ((*out)->ndim != rank)
    return loom_graph_icx_error(ic, "operand %zu (%s) must have rank %d, got %d", i, operand_names[i], rank, (*out)->ndim);
  if (want == LOOM_DTYPE_UNKNOWN) {
    if ((*out)->dtype != LOOM_DTYPE_UNKNOWN && !loom_dtype_is_float((*out)->dtype))
      return loom_graph_icx_error(ic, "operand %zu (%s) has dtype %s; a float dtype is required", i, operand_names[i],
                                  loom_dtype_name((*out)->dtype));
  } else if ((*out)->dtype != want) {
    return loom_graph_icx_error(ic, "operand %zu (%s) has dtype %s; %s is required", i, operand_names[i], loom_dtype_name((*out)->dtype),
                                loom_dtype_name(want));
  }
  return LOOM_OK;
}

/* A cache dtype the program reads under queries of dtype t: t itself, or a half-width float
 * (f16, bf16) under f32 / f64 queries. */
static bool cache_dtype_ok(loom_dtype t, loom_dtype ct) {
  return ct == t || ((ct == LOOM_DTYPE_F16 || ct == LOOM_DTYPE_BF16) && (t == LOOM_DTYPE_F32 || t == LOOM_DTYPE_F64));
}

static loom_status infer_paged(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_sinfo *q, *k, *v, *kc, *vc, *bt, *cl, *sq, *ps;
  LOOM_PROPAGATE(operand(ic, 0, 3, LOOM_DTYPE_UNKNOWN, &q));
  LOOM_PROPAGATE(operand(ic, 1, 3, q->dtype, &k));
  LOOM_PROPAGATE(operand(ic, 2, 3, q->dtype, &v));
  LOOM_PROPAGATE(operand(ic, 3, 4, LOOM_DTYPE_UNKNOWN, &kc));
  LOOM_PROPAGATE(operand(ic, 4, 4, kc->dtype, &vc));
  if (q->dtype != LOOM_DTYPE_UNKNOWN && kc->dtype != LOOM_DTYPE_UNKNOWN && !cache_dtype_ok(q->dtype, kc->dtype))
    return loom_graph_icx_error(ic, "operand 3 (k_cache) has dtype %s; %s, or f16 / bf16 under an f32 or f64 q, is required",
                                loom_dtype_name(kc->dtype), loom_dtype_name(q->dtype));
  LOOM_PROPAGATE(operand(ic, 5, 2, LOOM_DTYPE_I64, &bt));
  LOOM_PROPAGATE(operand(ic, 6, 1, LOOM_DTYPE_I64, &cl));
  LOOM_PROPAGATE(operand(ic, 7, 1, LOOM_DTYPE_I64, &sq));
  LOOM_PROPAGATE(operand(ic, 8, 1, LOOM_DTYPE_I64, &ps));
  /* tokens t */
  LOOM_PROPAGATE(loom_graph_icx_same_dim(ic, 1, 0, k->dims[0], 0, 0, q->dims[0]));
  LOOM_PROPAGATE(loom_graph_icx_same_dim(ic, 2, 0, v->dims[0], 0, 0, q->dims[0]));
  LOOM_PROPAGATE(loom_graph_icx_same_dim(ic, 7, 0, sq->dims[0], 0, 0, q->dims[0]));
  LOOM_PROPAGATE(loom_graph_icx_same_dim(ic, 8, 0, ps->dims[0], 0, 0, q->dims[0]));
  /* head dim d, kv heads hk, value dim dv */
  LOOM_PROPAGATE(loom_graph_icx_same_dim(ic, 1, 2, k->dims[2], 0, 2, q->dims[2]));
  LOOM_PROPAGATE(loom_graph_icx_same_dim(ic, 2, 1, v->dims[1], 1, 1, k->dims[1]));
  LOOM_PROPAGATE(loom_graph_icx_same_dim(ic, 3, 2, kc->dims[2], 1, 1, k->dims[1]));
  LOOM_PROPAGATE(loom_graph_icx_same_dim(ic, 3, 3, kc->dims[3], 0, 2, q->dims[2]));
  LOOM_PROPAGATE(loom_graph_icx_same_dim(ic, 4, 0, vc->dims[0], 3, 0, kc->dims[0]));
  LOOM_PROPAGATE(loom_graph_icx_same_dim(ic, 4, 1, vc->dims[1], 3, 1, kc->dims[1]));
  LOOM_PROPAGATE(loom_graph_icx_same_dim(ic, 4, 2, vc->dims[2], 1, 1, k->dims[1]));
  LOOM_PROPAGATE(loom_graph_icx_same_dim(ic, 4, 3, vc->dims[3], 2, 2, v->dims[2]));
  /* sequences b */
  LOOM_PROPAGATE(loom_graph_icx_same_dim(ic, 6, 0, cl->dims[0], 5, 0, bt->dims[0]));
  loom_sym_ctx *cx = ic->cx;
  if (q->dims[1] != k->dims[1]) {
    const loom_sym_expr *r = loom_sym_floormod(cx, q->dims[1], k->dims[1]);
    loom_sym_truth t = loom_sym_prove_eq(cx, r, loom_sym_const(cx, 0));
    if (t == LOOM_SYM_FALSE)
      return loom_graph_icx_error(ic, "operand 0 (q) axis 1 is %s heads, not a multiple of operand 1 (k) axis 1 (%s)",
                                  loom_graph_sym_str(ic->m, q->dims[1]), loom_graph_sym_str(ic->m, k->dims[1]));
    if (t == LOOM_SYM_UNKNOWN) {
      char why[256];
      snprintf(why, sizeof why, "paged_attention: %s query heads must be a multiple of %s key/value heads",
               loom_graph_sym_str(ic->m, q->dims[1]), loom_graph_sym_str(ic->m, k->dims[1]));
      LOOM_PROPAGATE(loom_graph_icx_guard(ic, loom_sym_cmp(cx, LOOM_SYM_EQ, r, loom_sym_const(cx, 0)), why));
    }
  }
  const loom_sym_expr *d[3] = {q->dims[0], q->dims[1], v->dims[2]};
  *out = loom_sinfo_tensor(ic->m, q->dtype, 3, d, q->device);
  return LOOM_OK;
}

/* The reference: per token and head, the scores of its keys (cached ones through the block
 * table, then the step's), a softmax in doubles and the weighted sum of the values. */
static loom_status eval_paged(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  const loom_graph_tensor *q = &args[0].t, *k = &args[1].t, *v = &args[2].t, *kc = &args[3].t, *vc = &args[4].t;
  const loom_graph_tensor *bt = &args[5].t, *cl = &args[6].t, *sq = &args[7].t, *ps = &args[8].t;
  int64_t T = q->shape[0], H = q->shape[1], D = q->shape[2], HK = k->shape[1], DV = v->shape[2];
  int64_t N = kc->shape[0], PG = kc->shape[1], B = bt->shape[0], M = bt->shape[1];
  if (!HK || H % HK || k->shape[0] != T || v->shape[0] != T || k->shape[2] != D || v->shape[1] != HK || kc->shape[2] != HK ||
      kc->shape[3] != D || vc->shape[0] != N || vc->shape[1] != PG || vc->shape[2] != HK || vc->shape[3] != DV ||
      cl->shape[0] != B || sq->shape[0] != T || ps->shape[0] != T)
    return LOOM_ERROR(INVALID_ARGUMENT, "paged_attention: incompatible shapes: q (%lld, %lld, %lld), k (.., %lld, %lld), cache (%lld, %lld, ..)",
                      (long long)T, (long long)H, (long long)D, (long long)HK, (long long)k->shape[2], (long long)N, (long long)PG);
  double scale = loom_graph_call_attr(ec->call, "scale") ? loom_graph_call_float(ec->call, "scale") : 1.0 / sqrt((double)(D ? D : 1));
  int64_t shape[3] = {T, H, DV};
  LOOM_PROPAGATE(loom_graph_value_tensor(q->dtype, 3, shape, out));
  size_t nkeys = (size_t)(M * PG + T);
  double *p = malloc((nkeys ? nkeys : 1) * sizeof *p), *acc = malloc((size_t)(DV ? DV : 1) * sizeof *acc);
  int64_t *key_at = malloc((nkeys ? nkeys : 1) * sizeof *key_at); /* cache row (page * pg + slot) or -1 - step token */
  if (!p || !acc || !key_at) {
    free(p), free(acc), free(key_at);
    loom_graph_value_free(out);
    return LOOM_OOM();
  }
  for (int64_t i = 0; i < T; i++) {
    int64_t s = loom_graph_tensor_get_i64(sq, (size_t)i);
    for (int64_t h = 0; h < H; h++) {
      int64_t kv = h / (H / HK);
      size_t n = 0;
      if (s >= 0 && s < B) {
        int64_t c = loom_graph_tensor_get_i64(cl, (size_t)s), nw = loom_graph_tensor_get_i64(ps, (size_t)i) - c;
        for (int64_t j = 0; j < M * PG && j < c; j++) {
          int64_t blk = loom_graph_tensor_get_i64(bt, (size_t)(s * M + j / PG));
          if (blk >= 0 && blk < N) key_at[n++] = blk * PG + j % PG;
        }
        for (int64_t u = 0; u <= nw && nw <= i && u < T; u++) key_at[n++] = -1 - (i - nw + u);
      }
      double mx = -INFINITY, sum = 0;
      for (size_t x = 0; x < n; x++) {
        double sc = 0;
        for (int64_t r = 0; r < D; r++) {
          double kr = key_at[x] >= 0 ? loom_graph_tensor_get_f64(kc, (size_t)((key_at[x] * HK + kv) * D + r))
                                     : loom_graph_tensor_get_f64(k, (size_t)(((-1 - key_at[x]) * HK + kv) * D + r));
          sc += loom_graph_tensor_get_f64(q, (size_t)((i * H + h) * D + r)) * kr;
        }
        p[x] = sc * scale;
        if (p[x] > mx) mx = p[x];
      }
      for (size_t x = 0; x < n; x++) sum += (p[x] = mx == -INFINITY ? 0 : exp(p[x] - mx));
      for (int64_t e = 0; e < DV; e++) acc[e] = 0;
      for (size_t x = 0; x < n && sum > 0; x++)
        for (int64_t e = 0; e < DV; e++)
          acc[e] += p[x] / sum * (key_at[x] >= 0 ? loom_graph_tensor_get_f64(vc, (size_t)((key_at[x] * HK + kv) * DV + e))
                                                 : loom_graph_tensor_get_f64(v, (size_t)(((-1 - key_at[x]) * HK + kv) * DV + e)));
      for (int64_t e = 0; e < DV; e++) loom_graph_tensor_set_f64(&out->t, (size_t)((i * H + h) * DV + e), acc[e]);
    }
  }
  free(p), free(acc), free(key_at);
  return LOOM_OK;
}

/* ---- legalization ------------------------------------------------------------------------------ */

typedef struct paged_params {
  char scale_text[64]; /* the scale as a literal ("" without one: 1/sqrt(d)) */
  loom_dtype t;        /* q, k, v and y */
  loom_dtype ct;       /* the caches (t, or f16 / bf16) */
} paged_params;
LOOM_TP_GEN_PARAMS(paged_params, 64 + 2 * 4);

static loom_status gen_paged(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const paged_params *p = params;
  return loom_tp_gen_paged_attention(loom_graph_module_arena(m), loom_graph_module_sym(m), name, p->t, p->ct,
                                     p->scale_text[0] ? p->scale_text : NULL, tp);
}

static loom_status legal_paged(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out, loom_graph_legal *r) {
  (void)out;
  const loom_sinfo *q;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &q));
  const loom_sinfo *kc;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 3, &kc));
  for (size_t i = 1; i < 9; i++) {
    const loom_sinfo *x;
    LOOM_PROPAGATE(loom_legal_tensor_arg(call, i, &x));
    if (x->dtype != (i < 3 ? q->dtype : i < 5 ? kc->dtype : LOOM_DTYPE_I64) || !cache_dtype_ok(q->dtype, kc->dtype))
      return loom_legal_unsupported(call, "for these operand dtypes");
  }
  paged_params p = {.t = q->dtype, .ct = kc->dtype};
  const loom_graph_attr *sc = loom_graph_call_attr(call, "scale");
  if (sc) loom_legal_literal(LOOM_DTYPE_F64, sc->kind == LOOM_GRAPH_ATTR_INT ? (double)sc->i : sc->f, p.scale_text, sizeof p.scale_text);
  char name[128];
  snprintf(name, sizeof name, "paged_attention_%s%s%s_%016llx", loom_dtype_name(q->dtype), p.ct == p.t ? "" : "_kv",
           p.ct == p.t ? "" : loom_dtype_name(p.ct), (unsigned long long)loom_hash_bytes(p.scale_text, strlen(p.scale_text)));
  return LOOM_LEGAL_PROGRAM(m, name, gen_paged, p, &r->tp);
}

const loom_graph_op_impl loom_graph_op_impl_paged_attention = {paged_attrs, infer_paged, eval_paged, legal_paged, NULL};
