/* gen_nn.c — generators of the contraction-heavy programs: batched matmul, linear, batch norm
 * (attention: gen_attn.c; convolution and pooling: gen_window.c). Built directly as IR (tp_build.h);
 * each generator's comment shows its program's text. */
#include <math.h>

#include "tensorprog/gen_internal.h"

/* An untyped "acc(0.0)": a cast of the f32 literal. */
static loom_tp_expr *zero_as(loom_arena *a, loom_dtype acc) { return loom_tp_cast(a, acc, loom_tp_const_f(a, LOOM_DTYPE_F32, 0.0)); }

/* C[b.., m?, n?] = sum over rk of A[b.., m?, rk] * B[b.., rk, n?] (batch axes broadcast, prefixes
 * a / b for guarded ones):
 *   for i<b> .. { for im in 0..m { for jn in 0..n {   (the outermost parallel)
 *     C[..] = 0  for rk in 0..k reduce { C[..] = C[..] + A[..] * B[..] }
 * or with a wider acc: alloc S: Local[(1,), acc]  S[0] = acc(0.0)
 *     for rk reduce { S[0] = S[0] + acc(A[..]) * acc(B[..]) }  C[..] = t(S[0]) */
static loom_status gen_matmul(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, loom_dtype acc, int ra,
                              const loom_tp_bcast *ma, int rb, const loom_tp_bcast *mb, bool tb, loom_tp_func **result) {
  if (ra < 1 || rb < 1) return LOOM_ERROR(INVALID_ARGUMENT, "matmul generator needs ranks >= 1 (given %d and %d)", ra, rb);
  if (tb && rb < 2) return LOOM_ERROR(INVALID_ARGUMENT, "matmul generator: a transposed B needs rank >= 2 (given %d)", rb);
  /* A 1-D operand has no batch axes and no m (A) or n (B) axis: NumPy's vector forms. */
  bool has_m = ra >= 2, has_n = rb >= 2;
  int nba = has_m ? ra - 2 : 0, nbb = has_n ? rb - 2 : 0, NB = nba > nbb ? nba : nbb;
  LOOM_PROPAGATE(loom_tpg_check_rank(NB + 2));
  loom_tpb b;
  loom_tpb_init(&b, a, cx, name);
  /* Batch dims via the broadcast helper, then the matrix dims m, k / k, n. */
  const loom_sym_expr *pa[LOOM_TP_GEN_MAX_RANK], *pb[LOOM_TP_GEN_MAX_RANK], *pc[LOOM_TP_GEN_MAX_RANK];
  loom_tpg_bcast_dims(&b, "a", nba, NB, ma, pa);
  int ka = nba, kb = nbb, kc = NB;
  if (has_m) pa[ka++] = loom_tpb_shape_sym(&b, "m");
  pa[ka++] = loom_tpb_shape_sym(&b, "k");
  const loom_tp_buffer *A = loom_tpb_buffer(&b, "A", t, ra, pa);
  loom_tpg_bcast_dims(&b, "b", nbb, NB, mb, pb);
  if (tb) pb[kb++] = loom_tpb_shape_sym(&b, "n"); /* B[b.., n, k] */
  pb[kb++] = loom_tpb_shape_sym(&b, "k");
  if (has_n && !tb) pb[kb++] = loom_tpb_shape_sym(&b, "n");
  const loom_sym_expr *ndim_n = has_n ? pb[tb ? kb - 2 : kb - 1] : NULL;
  const loom_tp_buffer *B = loom_tpb_buffer(&b, "B", t, rb, pb);
  loom_tpg_dims_d(&b, NB, pc);
  if (has_m) pc[kc++] = loom_tpb_shape_sym(&b, "m");
  if (has_n) pc[kc++] = ndim_n;
  const loom_tp_buffer *Cb = loom_tpb_buffer(&b, "C", t, kc, pc);
  loom_tp_expr *ci[LOOM_TP_GEN_MAX_RANK], *ai[LOOM_TP_GEN_MAX_RANK], *bi[LOOM_TP_GEN_MAX_RANK];
  loom_tpg_nest(&b, NB, pc, ci);
  int nc = NB;
  loom_tp_expr *im = NULL, *jn = NULL;
  if (has_m) ci[nc++] = im = loom_tpb_idx(&b, loom_tpb_for(&b, "im", pc[NB], NB ? LOOM_TP_LOOP_SERIAL : LOOM_TP_LOOP_PARALLEL, false));
  if (has_n)
    ci[nc++] = jn = loom_tpb_idx(&b, loom_tpb_for(&b, "jn", ndim_n, NB || has_m ? LOOM_TP_LOOP_SERIAL : LOOM_TP_LOOP_PARALLEL, false));
  const loom_sym_expr *kdim = pa[ka - 1];
  bool widen = acc != t;
  const loom_tp_buffer *S = NULL;
  loom_tp_expr *z0 = loom_tpb_idx(&b, loom_sym_const(cx, 0));
  if (widen) {
    const loom_sym_expr *one = loom_sym_const(cx, 1);
    S = loom_tpb_alloc(&b, "S", acc, 1, &one, LOOM_TP_SCOPE_LOCAL);
    loom_tpb_store(&b, S, &z0, zero_as(a, acc));
  } else {
    loom_tpb_store(&b, Cb, ci, loom_tpg_reduce_init(&b, LOOM_TP_REDUCE_SUM, t));
  }
  loom_tp_expr *rk = loom_tpb_idx(&b, loom_tpb_for(&b, "rk", kdim, LOOM_TP_LOOP_SERIAL, true));
  loom_tpg_bcast_index(&b, pa, nba, NB, ma, ci, ai);
  loom_tpg_bcast_index(&b, pb, nbb, NB, mb, ci, bi);
  ka = nba;
  kb = nbb;
  if (has_m) ai[ka++] = im;
  ai[ka++] = rk;
  if (tb) bi[kb++] = jn;
  bi[kb++] = rk;
  if (has_n && !tb) bi[kb++] = jn;
  loom_tp_expr *x = loom_tpb_load(&b, A, ai), *y = loom_tpb_load(&b, B, bi);
  if (widen) {
    loom_tp_expr *prod = loom_tp_op2(a, LOOM_TP_OP_MUL, loom_tp_cast(a, acc, x), loom_tp_cast(a, acc, y));
    loom_tpb_store(&b, S, &z0, loom_tp_op2(a, LOOM_TP_OP_ADD, loom_tpb_load(&b, S, &z0), prod));
    loom_tpb_end(&b);
    loom_tpb_store(&b, Cb, ci, loom_tp_cast(a, t, loom_tpb_load(&b, S, &z0)));
  } else {
    loom_tpb_store(&b, Cb, ci, loom_tp_op2(a, LOOM_TP_OP_ADD, loom_tpb_load(&b, Cb, ci), loom_tp_op2(a, LOOM_TP_OP_MUL, x, y)));
  }
  return loom_tpb_finish(&b, result);
}

loom_status loom_tp_gen_matmul(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, loom_dtype acc, int ra,
                               const loom_tp_bcast *ma, int rb, const loom_tp_bcast *mb, loom_tp_func **result) {
  return gen_matmul(a, cx, name, t, acc, ra, ma, rb, mb, false, result);
}

/* As matmul with B[b.., n, k]: `... * B[b.., jn, rk]`. */
loom_status loom_tp_gen_matmul_transposed_b(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t,
                                            loom_dtype acc, int ra, const loom_tp_bcast *ma, int rb,
                                            const loom_tp_bcast *mb, loom_tp_func **result) {
  return gen_matmul(a, cx, name, t, acc, ra, ma, rb, mb, true, result);
}

/* C[b.., m?, jn] = sum over rk of A[b.., m?, rk] * B[floordiv(jn, P), rk, floormod(jn, P)]: B a
 * weight laid out panel by panel, (q, k, P), n = P*q (graph/pass_pack.c); batch axes are A's.
 * ragged: n is C's own shape symbol, (q - 1) * P < n <= q * P (the last panel zero-padded past
 * n; the caller's graph inference proves the bound, the padding is never read). */
loom_status loom_tp_gen_matmul_packed_b(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, loom_dtype acc,
                                        int ra, int64_t panel, bool ragged, loom_tp_func **result) {
  if (ra < 1 || panel < 1)
    return LOOM_ERROR(INVALID_ARGUMENT, "packed matmul generator needs rank >= 1 and a panel >= 1 (given %d and %lld)", ra,
                      (long long)panel);
  bool has_m = ra >= 2;
  int NB = has_m ? ra - 2 : 0;
  LOOM_PROPAGATE(loom_tpg_check_rank(NB + 2));
  loom_tpb b;
  loom_tpb_init(&b, a, cx, name);
  const loom_sym_expr *pa[LOOM_TP_GEN_MAX_RANK], *pb[3], *pc[LOOM_TP_GEN_MAX_RANK];
  loom_tpg_dims_d(&b, NB, pa);
  int ka = NB;
  if (has_m) pa[ka++] = loom_tpb_shape_sym(&b, "m");
  pa[ka++] = loom_tpb_shape_sym(&b, "k");
  const loom_tp_buffer *A = loom_tpb_buffer(&b, "A", t, ra, pa);
  const loom_sym_expr *P = loom_sym_const(cx, panel);
  pb[0] = loom_tpb_shape_sym(&b, "q");
  pb[1] = pa[ka - 1];
  pb[2] = P;
  const loom_tp_buffer *B = loom_tpb_buffer(&b, "B", t, 3, pb);
  for (int i = 0; i < NB; i++) pc[i] = pa[i];
  int kc = NB;
  if (has_m) pc[kc++] = pa[NB];
  const loom_sym_expr *n = ragged ? loom_tpb_shape_sym(&b, "n") : loom_sym_mul(cx, P, pb[0]);
  if (!n) return LOOM_OOM();
  pc[kc++] = n;
  const loom_tp_buffer *Cb = loom_tpb_buffer(&b, "C", t, kc, pc);
  loom_tp_expr *ci[LOOM_TP_GEN_MAX_RANK], *ai[LOOM_TP_GEN_MAX_RANK], *bi[3];
  loom_tpg_nest(&b, NB, pc, ci);
  int nc = NB;
  if (has_m) ci[nc++] = loom_tpb_idx(&b, loom_tpb_for(&b, "im", pc[NB], NB ? LOOM_TP_LOOP_SERIAL : LOOM_TP_LOOP_PARALLEL, false));
  const loom_sym_expr *jv = loom_tpb_for(&b, "jn", n, NB || has_m ? LOOM_TP_LOOP_SERIAL : LOOM_TP_LOOP_PARALLEL, false);
  ci[nc++] = loom_tpb_idx(&b, jv);
  bool widen = acc != t;
  const loom_tp_buffer *S = NULL;
  loom_tp_expr *z0 = loom_tpb_idx(&b, loom_sym_const(cx, 0));
  if (widen) {
    const loom_sym_expr *one = loom_sym_const(cx, 1);
    S = loom_tpb_alloc(&b, "S", acc, 1, &one, LOOM_TP_SCOPE_LOCAL);
    loom_tpb_store(&b, S, &z0, zero_as(a, acc));
  } else {
    loom_tpb_store(&b, Cb, ci, loom_tpg_reduce_init(&b, LOOM_TP_REDUCE_SUM, t));
  }
  loom_tp_expr *rk = loom_tpb_idx(&b, loom_tpb_for(&b, "rk", pa[ka - 1], LOOM_TP_LOOP_SERIAL, true));
  for (int i = 0; i < nc - 1; i++) ai[i] = ci[i];
  ai[nc - 1] = rk;
  bi[0] = loom_tpb_idx(&b, loom_sym_floordiv(cx, jv, P));
  bi[1] = rk;
  bi[2] = loom_tpb_idx(&b, loom_sym_floormod(cx, jv, P));
  loom_tp_expr *x = loom_tpb_load(&b, A, ai), *y = loom_tpb_load(&b, B, bi);
  if (widen) {
    loom_tp_expr *prod = loom_tp_op2(a, LOOM_TP_OP_MUL, loom_tp_cast(a, acc, x), loom_tp_cast(a, acc, y));
    loom_tpb_store(&b, S, &z0, loom_tp_op2(a, LOOM_TP_OP_ADD, loom_tpb_load(&b, S, &z0), prod));
    loom_tpb_end(&b);
    loom_tpb_store(&b, Cb, ci, loom_tp_cast(a, t, loom_tpb_load(&b, S, &z0)));
  } else {
    loom_tpb_store(&b, Cb, ci, loom_tp_op2(a, LOOM_TP_OP_ADD, loom_tpb_load(&b, Cb, ci), loom_tp_op2(a, LOOM_TP_OP_MUL, x, y)));
  }
  return loom_tpb_finish(&b, result);
}

/* The pair word of two centred int8 values (the i16 halves dot2 multiplies): the low half
 * `lo - z`, the high half `hi - z` (0 past the last column, when k is odd). `t` indexes the
 * pair, `k` the values. */
static loom_tp_expr *pair_word(loom_tpb *b, loom_tp_expr *lo, loom_tp_expr *hi, loom_tp_expr *z) {
  static const char *const names[] = {"lo", "hi", "z"};
  loom_tp_expr *vals[3] = {lo, hi, z};
  return loom_tpb_parse(b, "((lo - z) && 65535) || shl((hi - z) * i32(2 * t + 1 < k), 16)", names, vals, 3, NULL);
}

/* C[b.., m, n] = sum over k of (i32(A[b.., m, k]) - ZA) * (i32(B[k, n]) - ZB): the int8 matmul,
 * as i16 pairs multiplied by dot2 (one vpmaddwd per 8 lanes, exact: |a - za|, |b - zb| <= 255):
 *   alloc A2: Local[(b.., m, kh), i32]   kh = floordiv(k + 1, 2)
 *   for b.. parallel { for im { for t { A2[.., im, t] = pair(A[.., im, 2t], A[.., im, min(2t+1, k-1)]) } } }
 *   alloc B2: Local[(kh, n), i32]
 *   for t parallel { for jn { B2[t, jn] = pair(B[2t, jn], B[min(2t+1, k-1), jn]) } }
 *   for b.. { for im { for jn { C[..] = 0  for t reduce { C[..] = C[..] + dot2(A2[.., im, t], B2[t, jn]) } } } }
 * (a batch-less A: the im loop is the parallel one). ZA and ZB (A's and B's dtypes) have rza / rzb
 * axes of extent 1; every centred value lies in [-255, 255], so the i16 halves are exact. */
/* panel > 0: B is given as BP (q, kh, panel) pair words in panels (no ZB, no B2 nest) and read
 * as BP[floordiv(jn, panel), r, floormod(jn, panel)]; ragged: C's n is its own symbol, the last
 * panel zero-padded past it ((q - 1) * panel < n <= q * panel, proven by graph inference). */
static loom_status gen_matmul_integer(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype ta, loom_dtype tb,
                                      int ra, int rza, int rzb, int64_t panel, bool ragged, loom_tp_func **result) {
  if (ra < 2 || rza < 0 || rzb < 0 || rza > LOOM_TP_GEN_MAX_RANK || rzb > LOOM_TP_GEN_MAX_RANK || panel < 0)
    return LOOM_ERROR(INVALID_ARGUMENT, "matmul_integer generator needs rank >= 2 (given %d)", ra);
  LOOM_PROPAGATE(loom_tpg_check_rank(ra));
  int NB = ra - 2;
  loom_tpb b;
  loom_tpb_init(&b, a, cx, name);
  const loom_sym_expr *pa[LOOM_TP_GEN_MAX_RANK], *pc[LOOM_TP_GEN_MAX_RANK], *pb[2], *ones[LOOM_TP_GEN_MAX_RANK];
  loom_tpg_dims_d(&b, NB, pa);
  pa[NB] = loom_tpb_shape_sym(&b, "m");
  pa[NB + 1] = loom_tpb_shape_sym(&b, "k");
  const loom_tp_buffer *A = loom_tpb_buffer(&b, "A", ta, ra, pa);
  const loom_sym_expr *k = pa[NB + 1], *kh = loom_sym_floordiv(cx, loom_sym_add(cx, k, loom_sym_const(cx, 1)), loom_sym_const(cx, 2));
  const loom_sym_expr *P = loom_sym_const(cx, panel), *pp[3];
  const loom_tp_buffer *B = NULL, *BP = NULL, *ZB = NULL;
  if (panel) {
    pp[0] = loom_tpb_shape_sym(&b, "q"), pp[1] = kh, pp[2] = P;
    BP = loom_tpb_buffer(&b, "BP", LOOM_DTYPE_I32, 3, pp);
    pb[1] = ragged ? loom_tpb_shape_sym(&b, "n") : loom_sym_mul(cx, P, pp[0]);
  } else {
    pb[0] = pa[NB + 1];
    pb[1] = loom_tpb_shape_sym(&b, "n");
    B = loom_tpb_buffer(&b, "B", tb, 2, pb);
  }
  for (int i = 0; i < LOOM_TP_GEN_MAX_RANK; i++) ones[i] = loom_sym_const(cx, 1);
  const loom_tp_buffer *ZA = loom_tpb_buffer(&b, "ZA", ta, rza, ones);
  if (!panel) ZB = loom_tpb_buffer(&b, "ZB", tb, rzb, ones);
  for (int i = 0; i <= NB; i++) pc[i] = pa[i];
  pc[NB + 1] = pb[1];
  const loom_tp_buffer *Cb = loom_tpb_buffer(&b, "C", LOOM_DTYPE_I32, ra, pc);
  const loom_sym_expr *two = loom_sym_const(cx, 2), *one = loom_sym_const(cx, 1);
  loom_tp_expr *z0[LOOM_TP_GEN_MAX_RANK], *ai[LOOM_TP_GEN_MAX_RANK], *ci[LOOM_TP_GEN_MAX_RANK], *bi[2];
  for (int i = 0; i < LOOM_TP_GEN_MAX_RANK; i++) z0[i] = loom_tpb_idx(&b, loom_sym_const(cx, 0));
  /* A2: the rows of A as pair words */
  const loom_sym_expr *pa2[LOOM_TP_GEN_MAX_RANK];
  for (int i = 0; i <= NB; i++) pa2[i] = pa[i];
  pa2[NB + 1] = kh;
  loom_tp_buffer *A2 = loom_tpb_alloc(&b, "A2", LOOM_DTYPE_I32, ra, pa2, LOOM_TP_SCOPE_LOCAL);
  if (A2) A2->uninit = true; /* every pair word written below before the product reads it: no zero fill (a calloc of
                              * 0.9 MB per call for a 3 x 3 64 -> 64 QLinearConv at 28 x 28) */
  loom_tpg_nest(&b, NB, pa, ai);
  ai[NB] = loom_tpb_idx(&b, loom_tpb_for(&b, "im", pa[NB], NB ? LOOM_TP_LOOP_SERIAL : LOOM_TP_LOOP_PARALLEL, false));
  const loom_sym_expr *t = loom_tpb_for(&b, "t", kh, LOOM_TP_LOOP_SERIAL, false);
  const loom_sym_expr *lo_i = loom_sym_mul(cx, two, t);
  const loom_sym_expr *hi_i = loom_sym_min(cx, loom_sym_add(cx, lo_i, one), loom_sym_sub(cx, k, one));
  loom_tp_expr *a2i[LOOM_TP_GEN_MAX_RANK];
  for (int i = 0; i <= NB; i++) a2i[i] = ai[i];
  a2i[NB + 1] = loom_tpb_idx(&b, t);
  ai[NB + 1] = loom_tpb_idx(&b, lo_i);
  loom_tp_expr *lo = loom_tp_cast(a, LOOM_DTYPE_I32, loom_tpb_load(&b, A, ai));
  ai[NB + 1] = loom_tpb_idx(&b, hi_i);
  loom_tp_expr *hi = loom_tp_cast(a, LOOM_DTYPE_I32, loom_tpb_load(&b, A, ai));
  loom_tpb_store(&b, A2, a2i, pair_word(&b, lo, hi, loom_tp_cast(a, LOOM_DTYPE_I32, loom_tpb_load(&b, ZA, z0))));
  loom_tpb_end_n(&b, NB + 2);
  /* B2: the columns of B as pair words along k (given in panels: BP) */
  const loom_tp_buffer *B2 = NULL;
  if (!panel) {
    const loom_sym_expr *pb2[2] = {kh, pb[1]};
    loom_tp_buffer *b2 = loom_tpb_alloc(&b, "B2", LOOM_DTYPE_I32, 2, pb2, LOOM_TP_SCOPE_LOCAL);
    if (b2) b2->uninit = true; /* written whole below, as A2 */
    B2 = b2;
    t = loom_tpb_for(&b, "t", kh, LOOM_TP_LOOP_PARALLEL, false);
    loom_tp_expr *jb = loom_tpb_idx(&b, loom_tpb_for(&b, "jn", pb[1], LOOM_TP_LOOP_SERIAL, false));
    lo_i = loom_sym_mul(cx, two, t);
    hi_i = loom_sym_min(cx, loom_sym_add(cx, lo_i, one), loom_sym_sub(cx, k, one));
    loom_tp_expr *b2i[2] = {loom_tpb_idx(&b, t), jb};
    bi[0] = loom_tpb_idx(&b, lo_i), bi[1] = jb;
    lo = loom_tp_cast(a, LOOM_DTYPE_I32, loom_tpb_load(&b, B, bi));
    bi[0] = loom_tpb_idx(&b, hi_i);
    hi = loom_tp_cast(a, LOOM_DTYPE_I32, loom_tpb_load(&b, B, bi));
    loom_tpb_store(&b, B2, b2i, pair_word(&b, lo, hi, loom_tp_cast(a, LOOM_DTYPE_I32, loom_tpb_load(&b, ZB, z0))));
    loom_tpb_end_n(&b, 2);
  }
  /* the matmul of the pair words */
  loom_tpg_nest(&b, NB, pc, ci);
  ci[NB] = loom_tpb_idx(&b, loom_tpb_for(&b, "im", pc[NB], NB ? LOOM_TP_LOOP_SERIAL : LOOM_TP_LOOP_PARALLEL, false));
  const loom_sym_expr *jv = loom_tpb_for(&b, "jn", pc[NB + 1], LOOM_TP_LOOP_SERIAL, false);
  ci[NB + 1] = loom_tpb_idx(&b, jv);
  loom_tpb_store(&b, Cb, ci, loom_tpb_lit_i(&b, LOOM_DTYPE_I32, 0));
  loom_tp_expr *r = loom_tpb_idx(&b, loom_tpb_for(&b, "r", kh, LOOM_TP_LOOP_SERIAL, true));
  for (int i = 0; i <= NB; i++) a2i[i] = ci[i];
  a2i[NB + 1] = r;
  loom_tp_expr *bw[3] = {r, ci[NB + 1], NULL};
  if (panel) {
    bw[0] = loom_tpb_idx(&b, loom_sym_floordiv(cx, jv, P)), bw[1] = r, bw[2] = loom_tpb_idx(&b, loom_sym_floormod(cx, jv, P));
  }
  loom_tp_expr *d = loom_tp_op2(a, LOOM_TP_OP_DOT2, loom_tpb_load(&b, A2, a2i), loom_tpb_load(&b, panel ? BP : B2, bw));
  loom_tpb_store(&b, Cb, ci, loom_tp_op2(a, LOOM_TP_OP_ADD, loom_tpb_load(&b, Cb, ci), d));
  return loom_tpb_finish(&b, result);
}

loom_status loom_tp_gen_matmul_integer(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype ta, loom_dtype tb,
                                       int ra, int rza, int rzb, loom_tp_func **result) {
  return gen_matmul_integer(a, cx, name, ta, tb, ra, rza, rzb, 0, false, result);
}

loom_status loom_tp_gen_matmul_integer_packed_b(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype ta, int ra,
                                                int rza, int64_t panel, bool ragged, loom_tp_func **result) {
  if (panel < 1) return LOOM_ERROR(INVALID_ARGUMENT, "packed matmul_integer generator needs a panel >= 1");
  return gen_matmul_integer(a, cx, name, ta, ta, ra, rza, 0, panel, ragged, result);
}

/* The int8 matmul in byte quads (dot4: vpdpbusd with AVX512-VNNI; dot4s with `pairs`: vpmaddubsw
 * and vpmaddwd on AVX2), B given as BQ (q, kq, panel)
 * i32 words of four signed bytes b[4t + i, j] - zb (0 past k; pass_pack.c makes them of a
 * constant weight whose centred values fit a signed byte) and CS (q * panel) their column sums:
 *   alloc A4: Local[(b.., m, kq), i32]   kq = floordiv(k + 3, 4)
 *   for b.. parallel { for im { for t { A4[.., im, t] = bytes u(A[.., im, 4t + i]) (0 past k) } } }
 *   for b.. { for im { for jn { C = -u(ZA) * CS[jn]  for r reduce { C = C + dot4(A4[.., im, r], BQ[..]) } } } }
 * u(a) = a for u8, a + 128 for i8 (an unsigned byte): sum (a - za)(b - zb) = sum u(a)(b - zb) -
 * u(za) sum (b - zb), exact in i32.
 * kwhole > 0 (a u8 A whose k is that constant, a multiple of 4): no A4 -- the nest reads A's
 * quads in place, `A[.., im, 4r] || shl(A[.., im, 4r + 1], 8) || ..` as dot4's operand, which
 * LLVM combines into one little-endian i32 load (broadcast by the register tile): no Local of
 * m * k bytes allocated, zeroed and filled serially per call. */
loom_status loom_tp_gen_matmul_integer_quads(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype ta, int ra, int rza,
                                             int64_t panel, bool ragged, int64_t kwhole, bool pairs, loom_tp_func **result) {
  if (ra < 2 || rza < 0 || rza > LOOM_TP_GEN_MAX_RANK || panel < 1 || (ta != LOOM_DTYPE_U8 && ta != LOOM_DTYPE_I8))
    return LOOM_ERROR(INVALID_ARGUMENT, "quad matmul_integer generator needs rank >= 2, a panel >= 1 and u8 / i8 (given %d, %lld)", ra,
                      (long long)panel);
  if (kwhole < 0 || kwhole % 4 || (kwhole && ta != LOOM_DTYPE_U8))
    return LOOM_ERROR(INVALID_ARGUMENT, "quad matmul_integer generator reads A in place only for u8 and k a multiple of 4 (given %s, k=%lld)",
                      loom_dtype_name(ta), (long long)kwhole);
  LOOM_PROPAGATE(loom_tpg_check_rank(ra));
  int NB = ra - 2;
  loom_tpb b;
  loom_tpb_init(&b, a, cx, name);
  const loom_sym_expr *pa[LOOM_TP_GEN_MAX_RANK], *pc[LOOM_TP_GEN_MAX_RANK], *ones[LOOM_TP_GEN_MAX_RANK], *pq[3];
  loom_tpg_dims_d(&b, NB, pa);
  pa[NB] = loom_tpb_shape_sym(&b, "m");
  pa[NB + 1] = kwhole ? loom_sym_const(cx, kwhole) : loom_tpb_shape_sym(&b, "k");
  const loom_tp_buffer *A = loom_tpb_buffer(&b, "A", ta, ra, pa);
  const loom_sym_expr *k = pa[NB + 1], *kq = loom_sym_floordiv(cx, loom_sym_add(cx, k, loom_sym_const(cx, 3)), loom_sym_const(cx, 4));
  const loom_sym_expr *P = loom_sym_const(cx, panel);
  pq[0] = loom_tpb_shape_sym(&b, "q"), pq[1] = kq, pq[2] = P;
  const loom_tp_buffer *BQ = loom_tpb_buffer(&b, "BQ", LOOM_DTYPE_I32, 3, pq);
  const loom_sym_expr *n = ragged ? loom_tpb_shape_sym(&b, "n") : loom_sym_mul(cx, P, pq[0]);
  for (int i = 0; i < LOOM_TP_GEN_MAX_RANK; i++) ones[i] = loom_sym_const(cx, 1);
  const loom_tp_buffer *ZA = loom_tpb_buffer(&b, "ZA", ta, rza, ones);
  const loom_tp_buffer *CS = loom_tpb_buffer(&b, "CS", LOOM_DTYPE_I32, 1, &n);
  for (int i = 0; i <= NB; i++) pc[i] = pa[i];
  pc[NB + 1] = n;
  const loom_tp_buffer *Cb = loom_tpb_buffer(&b, "C", LOOM_DTYPE_I32, ra, pc);
  loom_tp_expr *z0[LOOM_TP_GEN_MAX_RANK], *ai[LOOM_TP_GEN_MAX_RANK], *ci[LOOM_TP_GEN_MAX_RANK], *a4i[LOOM_TP_GEN_MAX_RANK];
  for (int i = 0; i < LOOM_TP_GEN_MAX_RANK; i++) z0[i] = loom_tpb_idx(&b, loom_sym_const(cx, 0));
  const loom_sym_expr *pa4[LOOM_TP_GEN_MAX_RANK];
  for (int i = 0; i <= NB; i++) pa4[i] = pa[i];
  pa4[NB + 1] = kq;
  static const char *const names[] = {"a0", "a1", "a2", "a3"};
  loom_tp_buffer *A4 = kwhole ? NULL : loom_tpb_alloc(&b, "A4", LOOM_DTYPE_I32, ra, pa4, LOOM_TP_SCOPE_LOCAL);
  if (A4) A4->uninit = true; /* every quad written below (the whole ones, then the partial last) before it is read */
  int64_t off = ta == LOOM_DTYPE_I8 ? 128 : 0;
  if (!kwhole) { /* A's rows as quads in A4 */
    loom_tpg_nest(&b, NB, pa, ai);
    ai[NB] = loom_tpb_idx(&b, loom_tpb_for(&b, "im", pa[NB], NB ? LOOM_TP_LOOP_SERIAL : LOOM_TP_LOOP_PARALLEL, false));
    for (int i = 0; i <= NB; i++) a4i[i] = ai[i];
    /* the whole quads (no bound to check: the loop vectorises), then the last, partial one */
    const loom_sym_expr *kf = loom_sym_floordiv(cx, k, loom_sym_const(cx, 4));
    for (int part = 0; part < 2; part++) {
      const loom_sym_expr *t = part ? kf : loom_tpb_for(&b, "t", kf, LOOM_TP_LOOP_SERIAL, false);
      if (part) loom_tpb_if(&b, loom_tp_op2(a, LOOM_TP_OP_LT, loom_tpb_idx(&b, loom_sym_mul(cx, loom_sym_const(cx, 4), kf)), loom_tpb_idx(&b, k)));
      a4i[NB + 1] = loom_tpb_idx(&b, t);
      loom_tp_expr *byte[4];
      for (int q = 0; q < 4; q++) {
        const loom_sym_expr *kk = loom_sym_add(cx, loom_sym_mul(cx, loom_sym_const(cx, 4), t), loom_sym_const(cx, q));
        if (part) kk = loom_sym_min(cx, kk, loom_sym_sub(cx, k, loom_sym_const(cx, 1)));
        ai[NB + 1] = loom_tpb_idx(&b, kk);
        byte[q] = loom_tp_op2(a, LOOM_TP_OP_ADD, loom_tp_cast(a, LOOM_DTYPE_I32, loom_tpb_load(&b, A, ai)), loom_tpb_lit_i(&b, LOOM_DTYPE_I32, off));
      }
      loom_tp_expr *word = part ? loom_tpb_parse(&b,
                                                 "(a0 && 255) || shl((a1 && 255) * i32(4 * floordiv(k, 4) + 1 < k), 8)"
                                                 " || shl((a2 && 255) * i32(4 * floordiv(k, 4) + 2 < k), 16)",
                                                 names, byte, 3, NULL)
                                : loom_tpb_parse(&b, "(a0 && 255) || shl(a1 && 255, 8) || shl(a2 && 255, 16) || shl(a3 && 255, 24)", names,
                                                 byte, 4, NULL);
      loom_tpb_store(&b, A4, a4i, word);
      loom_tpb_end(&b);
    }
    loom_tpb_end_n(&b, NB + 1);
  }
  /* the matmul of the quads, from -u(za) * CS */
  loom_tpg_nest(&b, NB, pc, ci);
  ci[NB] = loom_tpb_idx(&b, loom_tpb_for(&b, "im", pc[NB], NB ? LOOM_TP_LOOP_SERIAL : LOOM_TP_LOOP_PARALLEL, false));
  const loom_sym_expr *jv = loom_tpb_for(&b, "jn", pc[NB + 1], LOOM_TP_LOOP_SERIAL, false);
  ci[NB + 1] = loom_tpb_idx(&b, jv);
  loom_tp_expr *jx = loom_tpb_idx(&b, jv);
  loom_tp_expr *zu = loom_tp_op2(a, LOOM_TP_OP_ADD, loom_tp_cast(a, LOOM_DTYPE_I32, loom_tpb_load(&b, ZA, z0)), loom_tpb_lit_i(&b, LOOM_DTYPE_I32, off));
  loom_tpb_store(&b, Cb, ci, loom_tp_op2(a, LOOM_TP_OP_SUB, loom_tpb_lit_i(&b, LOOM_DTYPE_I32, 0),
                                         loom_tp_op2(a, LOOM_TP_OP_MUL, zu, loom_tpb_load(&b, CS, &jx))));
  const loom_sym_expr *rv = loom_tpb_for(&b, "r", kq, LOOM_TP_LOOP_SERIAL, true);
  loom_tp_expr *r = loom_tpb_idx(&b, rv);
  for (int i = 0; i <= NB; i++) a4i[i] = ci[i];
  a4i[NB + 1] = r;
  loom_tp_expr *aw;
  if (kwhole) { /* A's quad in place: bytes 4r .. 4r + 3 of the row, low byte first */
    loom_tp_expr *byte[4];
    for (int q = 0; q < 4; q++) {
      a4i[NB + 1] = loom_tpb_idx(&b, loom_sym_add(cx, loom_sym_mul(cx, loom_sym_const(cx, 4), rv), loom_sym_const(cx, q)));
      byte[q] = loom_tp_cast(a, LOOM_DTYPE_I32, loom_tpb_load(&b, A, a4i));
    }
    aw = loom_tpb_parse(&b, "a0 || shl(a1, 8) || shl(a2, 16) || shl(a3, 24)", names, byte, 4, NULL);
  } else {
    aw = loom_tpb_load(&b, A4, a4i);
  }
  loom_tp_expr *bw[3] = {loom_tpb_idx(&b, loom_sym_floordiv(cx, jv, P)), r, loom_tpb_idx(&b, loom_sym_floormod(cx, jv, P))};
  loom_tp_expr *d = loom_tp_op2(a, pairs ? LOOM_TP_OP_DOT4S : LOOM_TP_OP_DOT4, aw, loom_tpb_load(&b, BQ, bw));
  loom_tpb_store(&b, Cb, ci, loom_tp_op2(a, LOOM_TP_OP_ADD, loom_tpb_load(&b, Cb, ci), d));
  return loom_tpb_finish(&b, result);
}

/* Y[b.., n] = (Bias[n]) + sum over rk of X[b.., rk] * W[n, rk]; loops i<b>.. (the first
 * parallel), jn; a wider acc accumulates in S as matmul's. */
loom_status loom_tp_gen_linear(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, loom_dtype acc, int rank,
                               bool bias, loom_tp_func **result) {
  if (rank < 1) return LOOM_ERROR(INVALID_ARGUMENT, "linear needs an input of rank >= 1");
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  loom_tpb b;
  loom_tpb_init(&b, a, cx, name);
  const loom_sym_expr *px[LOOM_TP_GEN_MAX_RANK], *py[LOOM_TP_GEN_MAX_RANK], *pw[2];
  loom_tpg_dims_d(&b, rank - 1, px);
  px[rank - 1] = loom_tpb_shape_sym(&b, "k");
  const loom_tp_buffer *X = loom_tpb_buffer(&b, "X", t, rank, px);
  pw[0] = loom_tpb_shape_sym(&b, "n");
  pw[1] = px[rank - 1];
  const loom_tp_buffer *W = loom_tpb_buffer(&b, "W", t, 2, pw), *Bias = bias ? loom_tpb_buffer(&b, "Bias", t, 1, pw) : NULL;
  for (int j = 0; j < rank - 1; j++) py[j] = px[j];
  py[rank - 1] = pw[0];
  const loom_tp_buffer *Y = loom_tpb_buffer(&b, "Y", t, rank, py);
  loom_tp_expr *yi[LOOM_TP_GEN_MAX_RANK], *xi[LOOM_TP_GEN_MAX_RANK], *wi[2];
  loom_tpg_nest(&b, rank - 1, px, yi);
  loom_tp_expr *jn = loom_tpb_idx(&b, loom_tpb_for(&b, "jn", pw[0], rank == 1 ? LOOM_TP_LOOP_PARALLEL : LOOM_TP_LOOP_SERIAL, false));
  yi[rank - 1] = jn;
  for (int j = 0; j < rank - 1; j++) xi[j] = yi[j];
  loom_tp_expr *z0 = loom_tpb_idx(&b, loom_sym_const(cx, 0));
  const loom_tp_buffer *S = NULL;
  if (acc != t) {
    const loom_sym_expr *one = loom_sym_const(cx, 1);
    S = loom_tpb_alloc(&b, "S", acc, 1, &one, LOOM_TP_SCOPE_LOCAL);
    loom_tpb_store(&b, S, &z0, bias ? loom_tp_cast(a, acc, loom_tpb_load(&b, Bias, &jn)) : zero_as(a, acc));
  } else {
    loom_tpb_store(&b, Y, yi, bias ? loom_tpb_load(&b, Bias, &jn) : loom_tpg_reduce_init(&b, LOOM_TP_REDUCE_SUM, t));
  }
  loom_tp_expr *rk = loom_tpb_idx(&b, loom_tpb_for(&b, "rk", px[rank - 1], LOOM_TP_LOOP_SERIAL, true));
  xi[rank - 1] = rk;
  wi[0] = jn;
  wi[1] = rk;
  loom_tp_expr *x = loom_tpb_load(&b, X, xi), *w = loom_tpb_load(&b, W, wi);
  if (acc != t) {
    loom_tp_expr *prod = loom_tp_op2(a, LOOM_TP_OP_MUL, loom_tp_cast(a, acc, x), loom_tp_cast(a, acc, w));
    loom_tpb_store(&b, S, &z0, loom_tp_op2(a, LOOM_TP_OP_ADD, loom_tpb_load(&b, S, &z0), prod));
    loom_tpb_end(&b);
    loom_tpb_store(&b, Y, yi, loom_tp_cast(a, t, loom_tpb_load(&b, S, &z0)));
  } else {
    loom_tpb_store(&b, Y, yi, loom_tp_op2(a, LOOM_TP_OP_ADD, loom_tpb_load(&b, Y, yi), loom_tp_op2(a, LOOM_TP_OP_MUL, x, w)));
  }
  return loom_tpb_finish(&b, result);
}

/* Y[i..] = (X[i..] - mean[i1]) * rsqrt(var[i1] + t(eps)) * gamma[i1] + beta[i1] (the per-channel
 * vectors of extent d1). */
loom_status loom_tp_gen_batch_norm(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank,
                                   double eps, loom_tp_func **result) {
  if (rank < 2) return LOOM_ERROR(INVALID_ARGUMENT, "batch_norm needs rank >= 2");
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  loom_tpb b;
  loom_tpb_init(&b, a, cx, name);
  const loom_sym_expr *d[LOOM_TP_GEN_MAX_RANK];
  loom_tpg_dims_d(&b, rank, d);
  const loom_tp_buffer *X = loom_tpb_buffer(&b, "X", t, rank, d), *v[4];
  static const char *const names[4] = {"gamma", "beta", "mean", "var"};
  for (int i = 0; i < 4; i++) v[i] = loom_tpb_buffer(&b, names[i], t, 1, &d[1]);
  const loom_tp_buffer *Y = loom_tpb_buffer(&b, "Y", t, rank, d);
  loom_tp_expr *yi[LOOM_TP_GEN_MAX_RANK];
  loom_tpg_nest(&b, rank, d, yi);
  loom_tp_expr *c = yi[1];
  loom_tp_expr *eps_t = loom_tp_cast(a, t, loom_tp_const_f(a, LOOM_DTYPE_F32, eps));
  loom_tp_expr *inv = loom_tp_op1(a, LOOM_TP_OP_RSQRT, loom_tp_op2(a, LOOM_TP_OP_ADD, loom_tpb_load(&b, v[3], &c), eps_t));
  loom_tp_expr *centred = loom_tp_op2(a, LOOM_TP_OP_SUB, loom_tpb_load(&b, X, yi), loom_tpb_load(&b, v[2], &c));
  loom_tp_expr *scaled = loom_tp_op2(a, LOOM_TP_OP_MUL, loom_tp_op2(a, LOOM_TP_OP_MUL, centred, inv), loom_tpb_load(&b, v[0], &c));
  loom_tpb_store(&b, Y, yi, loom_tp_op2(a, LOOM_TP_OP_ADD, scaled, loom_tpb_load(&b, v[1], &c)));
  return loom_tpb_finish(&b, result);
}

/* The kinds of pass group_norm makes over one group's elements. */
typedef enum gn_pass {
  GN_SUM,    /* S[q] = S[q] + x */
  GN_SQUARE, /* let dv: st = x - centre   S[q] = S[q] + dv * dv */
  GN_MAXABS, /* S[q] = max(S[q], abs(x)) */
  GN_OUTPUT, /* Y[..] = T((x - centre) * rstd * C(gamma[ch]) + C(beta[ch])) */
} gn_pass;

/* What one group_norm pass needs: the buffers, the group, and what x is divided by (NULL: none). */
typedef struct gn_ctx {
  loom_tpb *b;
  const loom_tp_buffer *X, *gamma, *beta, *Y, *S;
  const loom_sym_expr *const *d;
  const loom_sym_expr *i0, *g, *cg;
  int rank;
  loom_dtype t, st;
  loom_tp_expr *scale;
} gn_ctx;

/* One pass over the group's channels g*cg + rc and every spatial position (reducing unless
 * it writes Y); x = C(X[i0, ch, r..]) [/ scale]. */
static void gn_pass_emit(gn_ctx *c, gn_pass kind, int q, loom_tp_expr *centre, loom_tp_expr *rstd) {
  loom_tpb *b = c->b;
  loom_arena *a = b->a;
  loom_sym_ctx *cx = b->cx;
  bool red = kind != GN_OUTPUT;
  const loom_sym_expr *rc = loom_tpb_for(b, "rc", c->cg, LOOM_TP_LOOP_SERIAL, red);
  loom_tp_expr *xi[LOOM_TP_GEN_MAX_RANK];
  xi[0] = loom_tpb_idx(b, c->i0);
  xi[1] = loom_tpb_idx(b, loom_sym_add(cx, loom_sym_mul(cx, c->g, c->cg), rc));
  for (int k = 2; k < c->rank; k++) xi[k] = loom_tpb_idx(b, loom_tpb_for(b, loom_tpg_var('r', k), c->d[k], LOOM_TP_LOOP_SERIAL, red));
  loom_tp_expr *x = loom_tpb_load(b, c->X, xi);
  if (c->st != c->t) x = loom_tp_cast(a, c->st, x);
  if (c->scale) x = loom_tp_op2(a, LOOM_TP_OP_DIV, x, loom_tp_expr_copy(a, c->scale));
  loom_tp_expr *sq = loom_tpb_idx(b, loom_sym_const(cx, q));
  loom_tp_expr *acc = loom_tpb_load(b, c->S, &sq), *v = NULL;
  switch (kind) {
  case GN_SUM: v = loom_tp_op2(a, LOOM_TP_OP_ADD, acc, x); break;
  case GN_MAXABS: v = loom_tp_op2(a, LOOM_TP_OP_MAX, acc, loom_tp_op1(a, LOOM_TP_OP_ABS, x)); break;
  case GN_SQUARE: {
    loom_tp_expr *dv = loom_tpb_let(b, "dv", loom_tp_op2(a, LOOM_TP_OP_SUB, x, loom_tp_expr_copy(a, centre)));
    v = loom_tp_op2(a, LOOM_TP_OP_ADD, acc, loom_tp_op2(a, LOOM_TP_OP_MUL, dv, loom_tp_expr_copy(a, dv)));
    break;
  }
  case GN_OUTPUT: {
    loom_tp_expr *gm = loom_tpb_load(b, c->gamma, &xi[1]), *bt = loom_tpb_load(b, c->beta, &xi[1]);
    if (c->st != c->t) {
      gm = loom_tp_cast(a, c->st, gm);
      bt = loom_tp_cast(a, c->st, bt);
    }
    loom_tp_expr *centred = loom_tp_op2(a, LOOM_TP_OP_SUB, x, loom_tp_expr_copy(a, centre));
    loom_tp_expr *y = loom_tp_op2(a, LOOM_TP_OP_ADD,
                                  loom_tp_op2(a, LOOM_TP_OP_MUL, loom_tp_op2(a, LOOM_TP_OP_MUL, centred, loom_tp_expr_copy(a, rstd)), gm), bt);
    loom_tpb_store(b, c->Y, xi, c->st != c->t ? loom_tp_cast(a, c->t, y) : y);
    break;
  }
  }
  if (v) loom_tpb_store(b, c->S, &sq, v);
  loom_tpb_end_n(b, c->rank - 1);
}

/* Statistics in st (f32, f64 for f64), C(x) = st(x) and T(x) = t(x) where they differ; per
 * group the channels g*cg + rc (cg = floordiv(d1, groups)) and every spatial position, with
 * `for rc in 0..cg { for r<k> in 0..d<k> {` (reducing) over them in each pass; the variance
 * is mean-shifted, and a group whose squares overflow is normalised again on x / max|x| (as
 * loom_tp_gen_layer_norm does; gen_reduce.c says why it divides):
 *   for i0 in 0..d0 parallel { for g in 0..groups { alloc S: Local[(2,), st]
 *     S[0] = S[0] + C(X[i0, ch, r..])                   let mean: st = S[0] / st(cg*d2*..)
 *     let dv: st = C(X[..]) - mean  S[1] = S[1] + dv*dv
 *     if likely(S[1] < inf) { let rstd: st = rsqrt(S[1] / st(cg*d2*..) + st(eps))
 *       Y[i0, ch, r..] = T((C(X[..]) - mean) * rstd * C(gamma[ch]) + C(beta[ch]))
 *     } else { S[0] = 0.0  S[0] = max(S[0], abs(C(X[..])))   let c: st = S[0]
 *       S[1] = 0.0  S[1] = S[1] + C(X[..]) / c                let ms: st = S[1] / st(cg*d2*..)
 *       S[0] = 0.0  let dv: st = C(X[..]) / c - ms  S[0] = S[0] + dv*dv
 *       let rstd2: st = rsqrt(max(S[0] / st(cg*d2*..) + st(eps) / c / c, st(smallest normal)))
 *       Y[i0, ch, r..] = T((C(X[..]) / c - ms) * rstd2 * C(gamma[ch]) + C(beta[ch])) } } } */
loom_status loom_tp_gen_group_norm(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank,
                                   int64_t groups, double eps, loom_tp_func **result) {
  if (rank < 2) return LOOM_ERROR(INVALID_ARGUMENT, "group_norm needs rank >= 2");
  if (groups < 1) return LOOM_ERROR(INVALID_ARGUMENT, "group_norm needs num_groups >= 1");
  if (!loom_dtype_is_float(t)) return LOOM_ERROR(INVALID_ARGUMENT, "group_norm of %s is not supported", loom_dtype_name(t));
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  loom_dtype st = loom_tpg_stat_type(t);
  loom_tpb b;
  loom_tpb_init(&b, a, cx, name);
  const loom_sym_expr *d[LOOM_TP_GEN_MAX_RANK];
  loom_tpg_dims_d(&b, rank, d);
  gn_ctx c = {.b = &b, .d = d, .rank = rank, .t = t, .st = st};
  c.X = loom_tpb_buffer(&b, "X", t, rank, d);
  c.gamma = loom_tpb_buffer(&b, "gamma", t, 1, &d[1]);
  c.beta = loom_tpb_buffer(&b, "beta", t, 1, &d[1]);
  c.Y = loom_tpb_buffer(&b, "Y", t, rank, d);
  c.i0 = loom_tpb_for(&b, "i0", d[0], LOOM_TP_LOOP_PARALLEL, false);
  c.g = loom_tpb_for(&b, "g", loom_sym_const(cx, groups), LOOM_TP_LOOP_SERIAL, false);
  const loom_sym_expr *two = loom_sym_const(cx, 2);
  c.cg = loom_sym_floordiv(cx, d[1], loom_sym_const(cx, groups));
  c.S = loom_tpb_alloc(&b, "S", st, 1, &two, LOOM_TP_SCOPE_LOCAL);
  const loom_sym_expr *cnt = c.cg;
  for (int k = 2; k < rank; k++) cnt = loom_sym_mul(cx, cnt, d[k]);
  loom_tp_expr *s0 = loom_tpb_idx(&b, loom_sym_const(cx, 0)), *s1 = loom_tpb_idx(&b, loom_sym_const(cx, 1));
  loom_tp_expr *e = loom_tp_cast(a, st, loom_tp_const_f(a, LOOM_DTYPE_F32, eps));
  gn_pass_emit(&c, GN_SUM, 0, NULL, NULL);
  loom_tp_expr *mean = loom_tpb_let(&b, "mean", loom_tp_op2(a, LOOM_TP_OP_DIV, loom_tpb_load(&b, c.S, &s0), loom_tp_cast(a, st, loom_tpb_idx(&b, cnt))));
  gn_pass_emit(&c, GN_SQUARE, 1, mean, NULL);
  /* the common case: no square overflowed */
  loom_tpb_if(&b, loom_tp_op1(a, LOOM_TP_OP_LIKELY, loom_tp_op2(a, LOOM_TP_OP_LT, loom_tpb_load(&b, c.S, &s1), loom_tp_const_f(a, st, INFINITY))));
  loom_tp_expr *var = loom_tp_op2(a, LOOM_TP_OP_DIV, loom_tpb_load(&b, c.S, &s1), loom_tp_cast(a, st, loom_tpb_idx(&b, cnt)));
  loom_tp_expr *rstd = loom_tpb_let(&b, "rstd", loom_tp_op1(a, LOOM_TP_OP_RSQRT, loom_tp_op2(a, LOOM_TP_OP_ADD, var, loom_tp_expr_copy(a, e))));
  gn_pass_emit(&c, GN_OUTPUT, 0, mean, rstd);
  /* huge values: everything again on x / max|x| */
  loom_tpb_else(&b);
  loom_tpb_store(&b, c.S, &s0, loom_tp_const_f(a, st, 0.0));
  gn_pass_emit(&c, GN_MAXABS, 0, NULL, NULL);
  loom_tp_expr *cm = loom_tpb_let(&b, "c", loom_tpb_load(&b, c.S, &s0));
  c.scale = cm;
  loom_tpb_store(&b, c.S, &s1, loom_tp_const_f(a, st, 0.0));
  gn_pass_emit(&c, GN_SUM, 1, NULL, NULL);
  loom_tp_expr *ms = loom_tpb_let(&b, "ms", loom_tp_op2(a, LOOM_TP_OP_DIV, loom_tpb_load(&b, c.S, &s1), loom_tp_cast(a, st, loom_tpb_idx(&b, cnt))));
  loom_tpb_store(&b, c.S, &s0, loom_tp_const_f(a, st, 0.0));
  gn_pass_emit(&c, GN_SQUARE, 0, ms, NULL);
  loom_tp_expr *var2 = loom_tp_op2(a, LOOM_TP_OP_DIV, loom_tpb_load(&b, c.S, &s0), loom_tp_cast(a, st, loom_tpb_idx(&b, cnt)));
  loom_tp_expr *eps2 = loom_tp_op2(a, LOOM_TP_OP_DIV, loom_tp_op2(a, LOOM_TP_OP_DIV, e, loom_tp_expr_copy(a, cm)), loom_tp_expr_copy(a, cm));
  loom_tp_expr *floor = loom_tp_const_f(a, st, st == LOOM_DTYPE_F64 ? 2.2250738585072014e-308 : 1.1754943508222875e-38);
  loom_tp_expr *rstd2 = loom_tpb_let(&b, "rstd2", loom_tp_op1(a, LOOM_TP_OP_RSQRT, loom_tp_op2(a, LOOM_TP_OP_MAX, loom_tp_op2(a, LOOM_TP_OP_ADD, var2, eps2), floor)));
  gn_pass_emit(&c, GN_OUTPUT, 0, ms, rstd2);
  return loom_tpb_finish(&b, result);
}
