/* gen_nn.c — generators of the contraction-heavy programs: batched matmul, linear, batch norm
 * and attention (convolution and pooling: gen_window.c). */
#include <stdio.h>
#include <string.h>

#include "base/strbuf.h"
#include "tensorprog/gen_internal.h"

/* An untyped "acc(0.0)": a cast of the f32 literal. */
static loom_tp_expr *zero_as(loom_arena *a, loom_dtype acc) { return loom_tp_cast(a, acc, loom_tp_const_f(a, LOOM_DTYPE_F32, 0.0)); }

/* C[b.., m?, n?] = sum over rk of A[b.., m?, rk] * B[b.., rk, n?] (batch axes broadcast, prefixes
 * a / b for guarded ones):
 *   for i<b> .. { for im in 0..m { for jn in 0..n {   (the outermost parallel)
 *     C[..] = 0  for rk in 0..k reduce { C[..] = C[..] + A[..] * B[..] }
 * or with a wider acc: alloc S: Local[(1,), acc]  S[0] = acc(0.0)
 *     for rk reduce { S[0] = S[0] + acc(A[..]) * acc(B[..]) }  C[..] = t(S[0]) */
loom_status loom_tp_gen_matmul(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, loom_dtype acc, int ra,
                               const loom_tp_bcast *ma, int rb, const loom_tp_bcast *mb, loom_tp_func **result) {
  if (ra < 1 || rb < 1) return LOOM_ERROR(INVALID_ARGUMENT, "matmul generator needs ranks >= 1 (given %d and %d)", ra, rb);
  /* A 1-D operand has no batch axes and no m (A) or n (B) axis: NumPy's vector forms. */
  bool has_m = ra >= 2, has_n = rb >= 2;
  int nba = has_m ? ra - 2 : 0, nbb = has_n ? rb - 2 : 0, NB = nba > nbb ? nba : nbb;
  LOOM_PROPAGATE(loom_tpg_check_rank(NB + 2));
  loom_tpb b;
  loom_tpb_init(&b, a, cx, name);
  /* Batch dims via the broadcast helper, then the matrix dims m, k / k, n. */
  const loom_sym_expr *pa[LOOM_TP_GEN_MAX_RANK], *pb[LOOM_TP_GEN_MAX_RANK], *pc[LOOM_TP_GEN_MAX_RANK];
  loom_tpg_b_bcast_dims(&b, "a", nba, NB, ma, pa);
  int ka = nba, kb = nbb, kc = NB;
  if (has_m) pa[ka++] = loom_tpb_shape_sym(&b, "m");
  pa[ka++] = loom_tpb_shape_sym(&b, "k");
  const loom_tp_buffer *A = loom_tpb_buffer(&b, "A", t, ra, pa);
  loom_tpg_b_bcast_dims(&b, "b", nbb, NB, mb, pb);
  pb[kb++] = loom_tpb_shape_sym(&b, "k");
  if (has_n) pb[kb++] = loom_tpb_shape_sym(&b, "n");
  const loom_tp_buffer *B = loom_tpb_buffer(&b, "B", t, rb, pb);
  loom_tpg_b_dims_d(&b, NB, pc);
  if (has_m) pc[kc++] = loom_tpb_shape_sym(&b, "m");
  if (has_n) pc[kc++] = loom_tpb_shape_sym(&b, "n");
  const loom_tp_buffer *Cb = loom_tpb_buffer(&b, "C", t, kc, pc);
  loom_tp_expr *ci[LOOM_TP_GEN_MAX_RANK], *ai[LOOM_TP_GEN_MAX_RANK], *bi[LOOM_TP_GEN_MAX_RANK];
  loom_tpg_b_nest(&b, NB, pc, ci);
  int nc = NB;
  loom_tp_expr *im = NULL, *jn = NULL;
  if (has_m) ci[nc++] = im = loom_tpb_idx(&b, loom_tpb_for(&b, "im", pc[NB], NB ? LOOM_TP_LOOP_SERIAL : LOOM_TP_LOOP_PARALLEL, false));
  if (has_n)
    ci[nc++] = jn = loom_tpb_idx(&b, loom_tpb_for(&b, "jn", pb[kb - 1], NB || has_m ? LOOM_TP_LOOP_SERIAL : LOOM_TP_LOOP_PARALLEL, false));
  const loom_sym_expr *kdim = pa[ka - 1];
  bool widen = acc != t;
  const loom_tp_buffer *S = NULL;
  loom_tp_expr *z0 = loom_tpb_idx(&b, loom_sym_const(cx, 0));
  if (widen) {
    const loom_sym_expr *one = loom_sym_const(cx, 1);
    S = loom_tpb_alloc(&b, "S", acc, 1, &one, LOOM_TP_SCOPE_LOCAL);
    loom_tpb_store(&b, S, &z0, zero_as(a, acc));
  } else {
    loom_tpb_store(&b, Cb, ci, loom_tpg_b_reduce_init(&b, LOOM_TP_REDUCE_SUM, t));
  }
  loom_tp_expr *rk = loom_tpb_idx(&b, loom_tpb_for(&b, "rk", kdim, LOOM_TP_LOOP_SERIAL, true));
  loom_tpg_b_bcast_index(&b, pa, nba, NB, ma, ci, ai);
  loom_tpg_b_bcast_index(&b, pb, nbb, NB, mb, ci, bi);
  ka = nba;
  kb = nbb;
  if (has_m) ai[ka++] = im;
  ai[ka++] = rk;
  bi[kb++] = rk;
  if (has_n) bi[kb++] = jn;
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

/* Y[b.., n] = (Bias[n]) + sum over rk of X[b.., rk] * W[n, rk]; loops i<b>.. (the first
 * parallel), jn; a wider acc accumulates in S as matmul's. */
loom_status loom_tp_gen_linear(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, loom_dtype acc, int rank,
                               bool bias, loom_tp_func **result) {
  if (rank < 1) return LOOM_ERROR(INVALID_ARGUMENT, "linear needs an input of rank >= 1");
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  loom_tpb b;
  loom_tpb_init(&b, a, cx, name);
  const loom_sym_expr *px[LOOM_TP_GEN_MAX_RANK], *py[LOOM_TP_GEN_MAX_RANK], *pw[2];
  loom_tpg_b_dims_d(&b, rank - 1, px);
  px[rank - 1] = loom_tpb_shape_sym(&b, "k");
  const loom_tp_buffer *X = loom_tpb_buffer(&b, "X", t, rank, px);
  pw[0] = loom_tpb_shape_sym(&b, "n");
  pw[1] = px[rank - 1];
  const loom_tp_buffer *W = loom_tpb_buffer(&b, "W", t, 2, pw), *Bias = bias ? loom_tpb_buffer(&b, "Bias", t, 1, pw) : NULL;
  for (int j = 0; j < rank - 1; j++) py[j] = px[j];
  py[rank - 1] = pw[0];
  const loom_tp_buffer *Y = loom_tpb_buffer(&b, "Y", t, rank, py);
  loom_tp_expr *yi[LOOM_TP_GEN_MAX_RANK], *xi[LOOM_TP_GEN_MAX_RANK], *wi[2];
  loom_tpg_b_nest(&b, rank - 1, px, yi);
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
    loom_tpb_store(&b, Y, yi, bias ? loom_tpb_load(&b, Bias, &jn) : loom_tpg_b_reduce_init(&b, LOOM_TP_REDUCE_SUM, t));
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
  loom_tpg_b_dims_d(&b, rank, d);
  const loom_tp_buffer *X = loom_tpb_buffer(&b, "X", t, rank, d), *v[4];
  static const char *const names[4] = {"gamma", "beta", "mean", "var"};
  for (int i = 0; i < 4; i++) v[i] = loom_tpb_buffer(&b, names[i], t, 1, &d[1]);
  const loom_tp_buffer *Y = loom_tpb_buffer(&b, "Y", t, rank, d);
  loom_tp_expr *yi[LOOM_TP_GEN_MAX_RANK];
  loom_tpg_b_nest(&b, rank, d, yi);
  loom_tp_expr *c = yi[1];
  loom_tp_expr *eps_t = loom_tp_cast(a, t, loom_tp_const_f(a, LOOM_DTYPE_F32, eps));
  loom_tp_expr *inv = loom_tp_op1(a, LOOM_TP_OP_RSQRT, loom_tp_op2(a, LOOM_TP_OP_ADD, loom_tpb_load(&b, v[3], &c), eps_t));
  loom_tp_expr *centred = loom_tp_op2(a, LOOM_TP_OP_SUB, loom_tpb_load(&b, X, yi), loom_tpb_load(&b, v[2], &c));
  loom_tp_expr *scaled = loom_tp_op2(a, LOOM_TP_OP_MUL, loom_tp_op2(a, LOOM_TP_OP_MUL, centred, inv), loom_tpb_load(&b, v[0], &c));
  loom_tpb_store(&b, Y, yi, loom_tp_op2(a, LOOM_TP_OP_ADD, scaled, loom_tpb_load(&b, v[1], &c)));
  return loom_tpb_finish(&b, result);
}

/* Statistics in st (f32, f64 for f64), C(x) = st(x) and T(x) = t(x) where they differ; per
 * group the channels g*cg + rc (cg = floordiv(d1, groups)) and every spatial position, in three
 * passes over `for rc in 0..cg { for r<k> in 0..d<k> {` (the first two reduce):
 *   for i0 in 0..d0 parallel { for g in 0..groups { alloc S: Local[(2,), st]
 *     S[0] = S[0] + C(X[i0, ch, r..])                  let mean: st = S[0] / st(cg*d2*..)
 *     let dv: st = C(X[..]) - mean  S[1] = S[1] + dv*dv  let rstd: st = rsqrt(S[1] / st(cg*d2*..) + st(eps))
 *     Y[i0, ch, r..] = T((C(X[..]) - mean) * rstd * C(gamma[ch]) + C(beta[ch])) } } */
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
  loom_tpg_b_dims_d(&b, rank, d);
  const loom_tp_buffer *X = loom_tpb_buffer(&b, "X", t, rank, d);
  const loom_tp_buffer *gamma = loom_tpb_buffer(&b, "gamma", t, 1, &d[1]), *beta = loom_tpb_buffer(&b, "beta", t, 1, &d[1]);
  const loom_tp_buffer *Y = loom_tpb_buffer(&b, "Y", t, rank, d);
  const loom_sym_expr *i0 = loom_tpb_for(&b, "i0", d[0], LOOM_TP_LOOP_PARALLEL, false);
  const loom_sym_expr *g = loom_tpb_for(&b, "g", loom_sym_const(cx, groups), LOOM_TP_LOOP_SERIAL, false);
  const loom_sym_expr *two = loom_sym_const(cx, 2), *cg = loom_sym_floordiv(cx, d[1], loom_sym_const(cx, groups));
  const loom_tp_buffer *S = loom_tpb_alloc(&b, "S", st, 1, &two, LOOM_TP_SCOPE_LOCAL);
  const loom_sym_expr *cnt = cg;
  for (int k = 2; k < rank; k++) cnt = loom_sym_mul(cx, cnt, d[k]);
  loom_tp_expr *s0 = loom_tpb_idx(&b, loom_sym_const(cx, 0)), *s1 = loom_tpb_idx(&b, loom_sym_const(cx, 1));
  loom_tp_expr *mean = NULL, *rstd = NULL;
  for (int p = 0; p < 3; p++) {
    bool red = p < 2;
    /* the group's elements: its channels, then every spatial position */
    const loom_sym_expr *rc = loom_tpb_for(&b, "rc", cg, LOOM_TP_LOOP_SERIAL, red);
    loom_tp_expr *xi[LOOM_TP_GEN_MAX_RANK];
    xi[0] = loom_tpb_idx(&b, i0);
    xi[1] = loom_tpb_idx(&b, loom_sym_add(cx, loom_sym_mul(cx, g, cg), rc));
    for (int k = 2; k < rank; k++) xi[k] = loom_tpb_idx(&b, loom_tpb_for(&b, loom_tpg_var('r', k), d[k], LOOM_TP_LOOP_SERIAL, red));
    loom_tp_expr *x = loom_tpb_load(&b, X, xi);
    if (st != t) x = loom_tp_cast(a, st, x);
    if (p == 0) {
      loom_tpb_store(&b, S, &s0, loom_tp_op2(a, LOOM_TP_OP_ADD, loom_tpb_load(&b, S, &s0), x));
    } else if (p == 1) {
      loom_tp_expr *dv = loom_tpb_let(&b, "dv", loom_tp_op2(a, LOOM_TP_OP_SUB, x, loom_tp_expr_copy(a, mean)));
      loom_tpb_store(&b, S, &s1, loom_tp_op2(a, LOOM_TP_OP_ADD, loom_tpb_load(&b, S, &s1),
                                             loom_tp_op2(a, LOOM_TP_OP_MUL, dv, loom_tp_expr_copy(a, dv))));
    } else {
      loom_tp_expr *gm = loom_tpb_load(&b, gamma, &xi[1]), *bt = loom_tpb_load(&b, beta, &xi[1]);
      if (st != t) {
        gm = loom_tp_cast(a, st, gm);
        bt = loom_tp_cast(a, st, bt);
      }
      loom_tp_expr *centred = loom_tp_op2(a, LOOM_TP_OP_SUB, x, loom_tp_expr_copy(a, mean));
      loom_tp_expr *v = loom_tp_op2(a, LOOM_TP_OP_ADD,
                                    loom_tp_op2(a, LOOM_TP_OP_MUL, loom_tp_op2(a, LOOM_TP_OP_MUL, centred, loom_tp_expr_copy(a, rstd)), gm), bt);
      loom_tpb_store(&b, Y, xi, st != t ? loom_tp_cast(a, t, v) : v);
    }
    loom_tpb_end_n(&b, rank - 1);
    loom_tp_expr *n = loom_tp_cast(a, st, loom_tpb_idx(&b, cnt));
    if (p == 0) mean = loom_tpb_let(&b, "mean", loom_tp_op2(a, LOOM_TP_OP_DIV, loom_tpb_load(&b, S, &s0), n));
    if (p == 1) {
      loom_tp_expr *var = loom_tp_op2(a, LOOM_TP_OP_DIV, loom_tpb_load(&b, S, &s1), n);
      loom_tp_expr *e = loom_tp_cast(a, st, loom_tp_const_f(a, LOOM_DTYPE_F32, eps));
      rstd = loom_tpb_let(&b, "rstd", loom_tp_op1(a, LOOM_TP_OP_RSQRT, loom_tp_op2(a, LOOM_TP_OP_ADD, var, e)));
    }
  }
  return loom_tpb_finish(&b, result);
}

loom_status loom_tp_gen_attention(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, const char *scale_text,
                                  bool causal, int mask_rank, const loom_tp_bcast *mask_modes, loom_dtype mask_t,
                                  loom_tp_func **result) {
  if (!loom_dtype_is_float(t)) return LOOM_ERROR(INVALID_ARGUMENT, "attention of %s is not supported", loom_dtype_name(t));
  if (mask_rank > 4) return LOOM_ERROR(INVALID_ARGUMENT, "attention mask of rank %d", mask_rank);
  const char *tn = loom_dtype_name(t), *sn = t == LOOM_DTYPE_F64 ? "f64" : "f32";
  /* The (b, h, s, t) axes are d0..d3 and the score loop variable is i3, so the mask's
   * broadcast load (loom_tpg_bcast_input) indexes them directly. */
  char mdims[4][12], mload[512];
  if (mask_rank >= 0) loom_tpg_bcast_input("m", mask_rank, 4, mask_modes, mdims, mload, sizeof mload, "Mk");
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(Q: Buffer[(d0, d1, d2, dq), %s], K: Buffer[(d0, hk, d3, dq), %s], "
                          "V: Buffer[(d0, hk, d3, dv), %s], ", name, tn, tn, tn);
  if (mask_rank >= 0) {
    const char *pm[4];
    for (int k = 0; k < mask_rank; k++) pm[k] = mdims[k];
    loom_strbuf_puts(&sb, "Mk: ");
    loom_tpg_buffer_type(&sb, pm, mask_rank, mask_t);
    loom_strbuf_puts(&sb, ", ");
  }
  loom_strbuf_printf(&sb, "Y: Buffer[(d0, d1, d2, dv), %s]) {\n", tn);
  loom_strbuf_puts(&sb, "for i0 in 0..d0 parallel {\nfor i1 in 0..d1 {\nfor i2 in 0..d2 {\n");
  loom_strbuf_printf(&sb, "alloc P: Local[(d3,), %s]\nalloc R: Local[(2,), %s]\nR[0] = -inf%s\n", sn, sn,
                     t == LOOM_DTYPE_F64 ? "f64" : "");
  const char *kv = "floordiv(i1, floordiv(d1, hk))";
  loom_strbuf_puts(&sb, "for i3 in 0..d3 {\n");
  loom_strbuf_printf(&sb, "alloc S: Local[(1,), %s]\n", sn);
  loom_strbuf_printf(&sb, "for r in 0..dq reduce {\nS[0] = S[0] + %s(Q[i0, i1, i2, r]) * %s(K[i0, %s, i3, r])\n}\n", sn, sn, kv);
  if (scale_text) loom_strbuf_printf(&sb, "let sc: %s = S[0] * %s(%s)\n", sn, sn, scale_text);
  else loom_strbuf_printf(&sb, "let sc: %s = S[0] * rsqrt(%s(dq))\n", sn, sn);
  const char *cur = "sc";
  if (mask_rank >= 0) {
    if (mask_t == LOOM_DTYPE_BOOL) loom_strbuf_printf(&sb, "let sm: %s = select(%s, sc, -inf%s)\n", sn, mload, t == LOOM_DTYPE_F64 ? "f64" : "");
    else loom_strbuf_printf(&sb, "let sm: %s = sc + %s(%s)\n", sn, sn, mload);
    cur = "sm";
  }
  if (causal) {
    loom_strbuf_printf(&sb, "let sk: %s = select(i3 > i2 + (d3 - d2), -inf%s, %s)\n", sn, t == LOOM_DTYPE_F64 ? "f64" : "", cur);
    cur = "sk";
  }
  loom_strbuf_printf(&sb, "P[i3] = %s\nR[0] = max(R[0], %s)\n}\n", cur, cur);
  loom_strbuf_printf(&sb, "for j in 0..d3 {\nP[j] = select(R[0] == -inf%s, 0.0, exp(P[j] - R[0]))\nR[1] = R[1] + P[j]\n}\n",
                     t == LOOM_DTYPE_F64 ? "f64" : "");
  loom_strbuf_puts(&sb, "for e in 0..dv {\n");
  loom_strbuf_printf(&sb, "alloc A: Local[(1,), %s]\n", sn);
  loom_strbuf_printf(&sb, "for j2 in 0..d3 reduce {\nA[0] = A[0] + select(R[1] > 0.0, P[j2] / R[1], 0.0) * %s(V[i0, %s, j2, e])\n}\n",
                     sn, kv);
  loom_strbuf_printf(&sb, "Y[i0, i1, i2, e] = %s(A[0])\n}\n", t == LOOM_DTYPE_F32 || t == LOOM_DTYPE_F64 ? "" : tn);
  loom_strbuf_puts(&sb, "}\n}\n}\n}\n");
  return loom_tpg_finish(a, cx, &sb, result);
}
