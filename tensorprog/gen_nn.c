/* gen_nn.c — generators of the contraction-heavy programs: batched matmul, linear, batch norm
 * and attention (convolution and pooling: gen_window.c). */
#include <stdio.h>
#include <string.h>

#include "base/strbuf.h"
#include "tensorprog/gen_internal.h"

loom_status loom_tp_gen_matmul(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, loom_dtype acc, int ra,
                               const loom_tp_bcast *ma, int rb, const loom_tp_bcast *mb, loom_tp_func **result) {
  if (ra < 1 || rb < 1) return LOOM_ERROR(INVALID_ARGUMENT, "matmul generator needs ranks >= 1 (given %d and %d)", ra, rb);
  /* A 1-D operand has no batch axes and no m (A) or n (B) axis: NumPy's vector forms. */
  bool has_m = ra >= 2, has_n = rb >= 2;
  int nba = has_m ? ra - 2 : 0, nbb = has_n ? rb - 2 : 0, NB = nba > nbb ? nba : nbb, R = NB + has_m + has_n;
  LOOM_PROPAGATE(loom_tpg_check_rank(NB + 2));
  /* Batch dims via the broadcast helper, then the matrix dims m, k / k, n. */
  char da[LOOM_TP_GEN_MAX_RANK][12], db[LOOM_TP_GEN_MAX_RANK][12], la[512], lb[512];
  loom_tpg_bcast_input("a", nba, NB, ma, da, la, sizeof la, "A");
  loom_tpg_bcast_input("b", nbb, NB, mb, db, lb, sizeof lb, "B");
  const char *pa[LOOM_TP_GEN_MAX_RANK], *pb[LOOM_TP_GEN_MAX_RANK], *pc[LOOM_TP_GEN_MAX_RANK];
  for (int j = 0; j < nba; j++) pa[j] = da[j];
  for (int j = 0; j < nbb; j++) pb[j] = db[j];
  const char *const *d = loom_tpg_dims_d();
  for (int j = 0; j < NB; j++) pc[j] = d[j];
  int ka = nba, kb = nbb, kc = NB;
  if (has_m) pa[ka++] = "m";
  pa[ka++] = "k";
  pb[kb++] = "k";
  if (has_n) pb[kb++] = "n";
  if (has_m) pc[kc++] = "m";
  if (has_n) pc[kc++] = "n";
  /* Loads: strip the closing ']' of the batch part and append the matrix indices. */
  la[strlen(la) - 1] = '\0';
  lb[strlen(lb) - 1] = '\0';
  char ia[64], ib[64];
  snprintf(ia, sizeof ia, "%s%s", nba ? ", " : "", has_m ? "im, rk]" : "rk]");
  snprintf(ib, sizeof ib, "%s%s", nbb ? ", " : "", has_n ? "rk, jn]" : "rk]");
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(A: ", name);
  loom_tpg_buffer_type(&sb, pa, ra, t);
  loom_strbuf_puts(&sb, ", B: ");
  loom_tpg_buffer_type(&sb, pb, rb, t);
  loom_strbuf_puts(&sb, ", C: ");
  loom_tpg_buffer_type(&sb, pc, R, t);
  loom_strbuf_puts(&sb, ") {\n");
  int axes[LOOM_TP_GEN_MAX_RANK];
  loom_tpg_all_axes(axes, NB);
  loom_tpg_open_loops(&sb, axes, NB, "i", d, true, false);
  if (has_m) loom_strbuf_printf(&sb, "for im in 0..m%s {\n", NB ? "" : " parallel");
  if (has_n) loom_strbuf_printf(&sb, "for jn in 0..n%s {\n", NB || has_m ? "" : " parallel");
  char cidx[512] = "";
  for (int j = 0; j < NB; j++) snprintf(cidx + strlen(cidx), sizeof cidx - strlen(cidx), "%si%d", j ? ", " : "", j);
  if (has_m) snprintf(cidx + strlen(cidx), sizeof cidx - strlen(cidx), "%sim", NB ? ", " : "");
  if (has_n) snprintf(cidx + strlen(cidx), sizeof cidx - strlen(cidx), "%sjn", NB || has_m ? ", " : "");
  bool widen = acc != t;
  const char *accn = loom_dtype_name(acc);
  if (widen) {
    loom_strbuf_printf(&sb, "alloc S: Local[(1,), %s]\nS[0] = %s(0.0)\n", accn, accn);
    loom_strbuf_printf(&sb, "for rk in 0..k reduce {\nS[0] = S[0] + %s(%s%s) * %s(%s%s)\n}\n", accn, la, ia, accn, lb, ib);
    loom_strbuf_printf(&sb, "C[%s] = %s(S[0])\n", cidx, loom_dtype_name(t));
  } else {
    loom_strbuf_printf(&sb, "C[%s] = ", cidx);
    loom_tpg_reduce_init(&sb, LOOM_TP_REDUCE_SUM, t);
    loom_strbuf_printf(&sb, "\nfor rk in 0..k reduce {\nC[%s] = C[%s] + %s%s * %s%s\n}\n", cidx, cidx, la, ia, lb, ib);
  }
  loom_tpg_close_loops(&sb, has_m + has_n);
  loom_tpg_close_program(&sb, NB);
  return loom_tpg_finish(a, cx, &sb, result);
}

loom_status loom_tp_gen_linear(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, loom_dtype acc, int rank,
                               bool bias, loom_tp_func **result) {
  if (rank < 1) return LOOM_ERROR(INVALID_ARGUMENT, "linear needs an input of rank >= 1");
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  const char *const *d = loom_tpg_dims_d();
  const char *px[LOOM_TP_GEN_MAX_RANK], *py[LOOM_TP_GEN_MAX_RANK], *pw[2] = {"n", "k"}, *pb[1] = {"n"};
  for (int j = 0; j < rank - 1; j++) px[j] = py[j] = d[j];
  px[rank - 1] = "k";
  py[rank - 1] = "n";
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(X: ", name);
  loom_tpg_buffer_type(&sb, px, rank, t);
  loom_strbuf_puts(&sb, ", W: ");
  loom_tpg_buffer_type(&sb, pw, 2, t);
  if (bias) {
    loom_strbuf_puts(&sb, ", Bias: ");
    loom_tpg_buffer_type(&sb, pb, 1, t);
  }
  loom_strbuf_puts(&sb, ", Y: ");
  loom_tpg_buffer_type(&sb, py, rank, t);
  loom_strbuf_puts(&sb, ") {\n");
  int axes[LOOM_TP_GEN_MAX_RANK];
  loom_tpg_all_axes(axes, rank - 1);
  loom_tpg_open_loops(&sb, axes, rank - 1, "i", d, true, false);
  loom_strbuf_printf(&sb, "for jn in 0..n%s {\n", rank == 1 ? " parallel" : "");
  char lead[256] = "";
  for (int j = 0; j < rank - 1; j++) snprintf(lead + strlen(lead), sizeof lead - strlen(lead), "i%d, ", j);
  const char *accn = loom_dtype_name(acc), *tn = loom_dtype_name(t);
  if (acc != t) {
    loom_strbuf_printf(&sb, "alloc S: Local[(1,), %s]\n", accn);
    if (bias) loom_strbuf_printf(&sb, "S[0] = %s(Bias[jn])\n", accn);
    else loom_strbuf_printf(&sb, "S[0] = %s(0.0)\n", accn);
    loom_strbuf_printf(&sb, "for rk in 0..k reduce {\nS[0] = S[0] + %s(X[%srk]) * %s(W[jn, rk])\n}\n", accn, lead, accn);
    loom_strbuf_printf(&sb, "Y[%sjn] = %s(S[0])\n", lead, tn);
  } else {
    loom_strbuf_printf(&sb, "Y[%sjn] = ", lead);
    if (bias) loom_strbuf_puts(&sb, "Bias[jn]");
    else loom_tpg_reduce_init(&sb, LOOM_TP_REDUCE_SUM, t);
    loom_strbuf_printf(&sb, "\nfor rk in 0..k reduce {\nY[%sjn] = Y[%sjn] + X[%srk] * W[jn, rk]\n}\n", lead, lead, lead);
  }
  loom_strbuf_puts(&sb, "}\n");
  loom_tpg_close_loops(&sb, rank - 1);
  loom_strbuf_puts(&sb, "}\n");
  return loom_tpg_finish(a, cx, &sb, result);
}

loom_status loom_tp_gen_batch_norm(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank,
                                   double eps, loom_tp_func **result) {
  if (rank < 2) return LOOM_ERROR(INVALID_ARGUMENT, "batch_norm needs rank >= 2");
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  const char *tn = loom_dtype_name(t), *one[1] = {"d1"};
  loom_strbuf sb;
  loom_tpg_open_x(&sb, name, rank, t);
  static const char *const names[4] = {"gamma", "beta", "mean", "var"};
  for (int i = 0; i < 4; i++) {
    loom_strbuf_printf(&sb, ", %s: ", names[i]);
    loom_tpg_buffer_type(&sb, one, 1, t);
  }
  char yi[256], epsbuf[64];
  loom_strbuf_puts(&sb, ", ");
  loom_tpg_open_output_nest(&sb, rank, t, yi, sizeof yi);
  snprintf(epsbuf, sizeof epsbuf, "%.17g", eps);
  if (!strpbrk(epsbuf, ".eEn")) strcat(epsbuf, ".0");
  loom_strbuf_printf(&sb, "Y[%s] = (X[%s] - mean[i1]) * rsqrt(var[i1] + %s(%s)) * gamma[i1] + beta[i1]\n", yi, yi, tn, epsbuf);
  loom_tpg_close_program(&sb, rank);
  return loom_tpg_finish(a, cx, &sb, result);
}

loom_status loom_tp_gen_group_norm(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank,
                                   int64_t groups, double eps, loom_tp_func **result) {
  if (rank < 2) return LOOM_ERROR(INVALID_ARGUMENT, "group_norm needs rank >= 2");
  if (groups < 1) return LOOM_ERROR(INVALID_ARGUMENT, "group_norm needs num_groups >= 1");
  if (!loom_dtype_is_float(t)) return LOOM_ERROR(INVALID_ARGUMENT, "group_norm of %s is not supported", loom_dtype_name(t));
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  const char *const *d = loom_tpg_dims_d();
  const char *tn = loom_dtype_name(t), *one[1] = {"d1"};
  loom_dtype st = loom_tpg_stat_type(t);
  const char *sn = loom_dtype_name(st);
  char cg[48], cnt[256], eps_text[64], ch[96], sp[256] = "";
  snprintf(cg, sizeof cg, "floordiv(d1, %lld)", (long long)groups);
  snprintf(cnt, sizeof cnt, "%s(%s", sn, cg);
  for (int k = 2; k < rank; k++) snprintf(cnt + strlen(cnt), sizeof cnt - strlen(cnt), "*d%d", k);
  strcat(cnt, ")");
  snprintf(ch, sizeof ch, "g*%s + rc", cg);
  for (int k = 2; k < rank; k++) snprintf(sp + strlen(sp), sizeof sp - strlen(sp), ", r%d", k);
  snprintf(eps_text, sizeof eps_text, "%.17g", eps);
  if (!strpbrk(eps_text, ".eEn")) strcat(eps_text, ".0");
  loom_strbuf sb;
  loom_tpg_open_x(&sb, name, rank, t);
  loom_strbuf_puts(&sb, ", gamma: ");
  loom_tpg_buffer_type(&sb, one, 1, t);
  loom_strbuf_puts(&sb, ", beta: ");
  loom_tpg_buffer_type(&sb, one, 1, t);
  loom_strbuf_puts(&sb, ", Y: ");
  loom_tpg_buffer_type(&sb, d, rank, t);
  loom_strbuf_printf(&sb, ") {\nfor i0 in 0..d0 parallel {\nfor g in 0..%lld {\nalloc S: Local[(2,), %s]\n", (long long)groups, sn);
  /* the group's elements: its channels, then every spatial position */
  const char *passes[3] = {"sum", "var", "out"};
  for (int p = 0; p < 3; p++) {
    bool red = p < 2;
    loom_strbuf_printf(&sb, "for rc in 0..%s%s {\n", cg, red ? " reduce" : "");
    for (int k = 2; k < rank; k++) loom_strbuf_printf(&sb, "for r%d in 0..d%d%s {\n", k, k, red ? " reduce" : "");
    char x[512];
    snprintf(x, sizeof x, "%s%sX[i0, %s%s]%s", st != t ? sn : "", st != t ? "(" : "", ch, sp, st != t ? ")" : "");
    if (!strcmp(passes[p], "sum")) loom_strbuf_printf(&sb, "S[0] = S[0] + %s\n", x);
    else if (!strcmp(passes[p], "var")) loom_strbuf_printf(&sb, "let dv: %s = %s - mean\nS[1] = S[1] + dv*dv\n", sn, x);
    else
      loom_strbuf_printf(&sb, "Y[i0, %s%s] = %s%s(%s - mean) * rstd * %s%sgamma[%s]%s + %s%sbeta[%s]%s%s\n", ch, sp,
                         st != t ? tn : "", st != t ? "(" : "", x, st != t ? sn : "", st != t ? "(" : "", ch,
                         st != t ? ")" : "", st != t ? sn : "", st != t ? "(" : "", ch, st != t ? ")" : "",
                         st != t ? ")" : "");
    loom_tpg_close_loops(&sb, rank - 1);
    if (p == 0) loom_strbuf_printf(&sb, "let mean: %s = S[0] / %s\n", sn, cnt);
    if (p == 1) loom_strbuf_printf(&sb, "let rstd: %s = rsqrt(S[1] / %s + %s(%s))\n", sn, cnt, sn, eps_text);
  }
  loom_strbuf_puts(&sb, "}\n}\n}\n");
  return loom_tpg_finish(a, cx, &sb, result);
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
