/* gen_linalg.c — generators of the small dense linear-algebra and signal programs: det, dft.
 *
 * det runs the reference's algorithm (graph/op_misc.c) per matrix: LU decomposition with partial
 * pivoting in f64 on a Local copy, serial over the columns (the column and pivot-search loops are
 * flagged `reduce`, which keeps the CPU rules from running them in parallel); the batch loops
 * around it are independent. */
#include <stdio.h>
#include <string.h>

#include "base/strbuf.h"
#include "tensorprog/gen_internal.h"

/*   for i<batch> .. parallel {
 *     alloc A: Local[(m, m), f64]  alloc D: Local[(2,), f64]  alloc P: Local[(1,), i64]
 *     for r in 0..m { for k in 0..m { A[r, k] = f64(X[i.., r, k]) } }
 *     D[0] = 1.0f64  D[1] = 0.0f64      (D[0]: the determinant so far; D[1]: 1 once a zero pivot ended it)
 *     for c in 0..m reduce { if D[1] == 0.0f64 {
 *       P[0] = c
 *       for u in 0..m - c - 1 reduce { if abs(A[c + 1 + u, c]) > abs(A[P[0], c]) { P[0] = c + 1 + u } }
 *       if A[P[0], c] == 0.0f64 { D[0] = 0.0f64  D[1] = 1.0f64 } else {
 *         if P[0] != c { for k2 in 0..m { let sw: f64 = A[c, k2]  A[c, k2] = A[P[0], k2]  A[P[0], k2] = sw }
 *                        D[0] = -D[0] }
 *         D[0] = D[0] * A[c, c]
 *         for u2 in 0..m - c - 1 { let fr: f64 = A[c + 1 + u2, c] / A[c, c]
 *           for k3 in 0..m - c { A[c + 1 + u2, c + k3] = A[c + 1 + u2, c + k3] - fr * A[c, c + k3] } } } } }
 *     Y[i..] = t(D[0]) } */
loom_status loom_tp_gen_det(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank,
                            loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  if (rank < 2) return LOOM_ERROR(INVALID_ARGUMENT, "det: rank %d (matrices need rank >= 2)", rank);
  if (!loom_dtype_is_float(t)) return LOOM_ERROR(INVALID_ARGUMENT, "det: dtype %s is not a float", loom_dtype_name(t));
  int nb = rank - 2;
  loom_tpb b;
  loom_tpb_init(&b, a, cx, name);
  const loom_sym_expr *d[LOOM_TP_GEN_MAX_RANK];
  loom_tpg_b_dims_d(&b, nb, d);
  const loom_sym_expr *m = loom_tpb_shape_sym(&b, "m");
  d[nb] = d[nb + 1] = m;
  const loom_tp_buffer *X = loom_tpb_buffer(&b, "X", t, rank, d), *Y = loom_tpb_buffer(&b, "Y", t, nb, d);
  loom_tp_expr *bi[LOOM_TP_GEN_MAX_RANK];
  loom_tpg_b_nest(&b, nb, d, bi);
  const loom_sym_expr *one = loom_sym_const(cx, 1), *two = loom_sym_const(cx, 2), *mm[2] = {m, m};
  const loom_tp_buffer *A = loom_tpb_alloc(&b, "A", LOOM_DTYPE_F64, 2, mm, LOOM_TP_SCOPE_LOCAL);
  const loom_tp_buffer *D = loom_tpb_alloc(&b, "D", LOOM_DTYPE_F64, 1, &two, LOOM_TP_SCOPE_LOCAL);
  const loom_tp_buffer *P = loom_tpb_alloc(&b, "P", LOOM_DTYPE_I64, 1, &one, LOOM_TP_SCOPE_LOCAL);
  loom_tp_expr *z0 = loom_tpb_idx(&b, loom_sym_const(cx, 0)), *z1 = loom_tpb_idx(&b, one);
#define IX(s) loom_tpb_idx(&b, (s))
#define F64(v) loom_tp_const_f(a, LOOM_DTYPE_F64, (v))
#define AT(i, j) loom_tpb_load(&b, A, (loom_tp_expr *[]){(i), (j)})
#define PV() loom_tpb_load(&b, P, &z0)
  const loom_sym_expr *r = loom_tpb_for(&b, "r", m, LOOM_TP_LOOP_SERIAL, false);
  const loom_sym_expr *k = loom_tpb_for(&b, "k", m, LOOM_TP_LOOP_SERIAL, false);
  bi[nb] = IX(r);
  bi[nb + 1] = IX(k);
  loom_tpb_store(&b, A, (loom_tp_expr *[]){IX(r), IX(k)}, loom_tp_cast(a, LOOM_DTYPE_F64, loom_tpb_load(&b, X, bi)));
  loom_tpb_end_n(&b, 2);
  loom_tpb_store(&b, D, &z0, F64(1.0));
  loom_tpb_store(&b, D, &z1, F64(0.0));
  const loom_sym_expr *c = loom_tpb_for(&b, "c", m, LOOM_TP_LOOP_SERIAL, true);
  const loom_sym_expr *rest = c ? loom_sym_sub(cx, loom_sym_sub(cx, m, c), one) : NULL; /* m - c - 1 */
  loom_tpb_if(&b, loom_tp_op2(a, LOOM_TP_OP_EQ, loom_tpb_load(&b, D, &z1), F64(0.0)));
  loom_tpb_store(&b, P, &z0, IX(c));
  const loom_sym_expr *u = loom_tpb_for(&b, "u", rest, LOOM_TP_LOOP_SERIAL, true);
  const loom_sym_expr *cu = c && u ? loom_sym_add(cx, loom_sym_add(cx, c, one), u) : NULL; /* c + 1 + u */
  loom_tpb_if(&b, loom_tp_op2(a, LOOM_TP_OP_GT, loom_tp_op1(a, LOOM_TP_OP_ABS, AT(IX(cu), IX(c))),
                              loom_tp_op1(a, LOOM_TP_OP_ABS, AT(PV(), IX(c)))));
  loom_tpb_store(&b, P, &z0, IX(cu));
  loom_tpb_end_n(&b, 2);
  loom_tpb_if(&b, loom_tp_op2(a, LOOM_TP_OP_EQ, AT(PV(), IX(c)), F64(0.0)));
  loom_tpb_store(&b, D, &z0, F64(0.0));
  loom_tpb_store(&b, D, &z1, F64(1.0));
  loom_tpb_else(&b);
  loom_tpb_if(&b, loom_tp_op2(a, LOOM_TP_OP_NE, PV(), IX(c)));
  const loom_sym_expr *k2 = loom_tpb_for(&b, "k2", m, LOOM_TP_LOOP_SERIAL, false);
  loom_tp_expr *sw = loom_tpb_let(&b, "sw", AT(IX(c), IX(k2)));
  loom_tpb_store(&b, A, (loom_tp_expr *[]){IX(c), IX(k2)}, AT(PV(), IX(k2)));
  loom_tpb_store(&b, A, (loom_tp_expr *[]){PV(), IX(k2)}, sw);
  loom_tpb_end(&b);
  loom_tpb_store(&b, D, &z0, loom_tp_op1(a, LOOM_TP_OP_NEG, loom_tpb_load(&b, D, &z0)));
  loom_tpb_end(&b);
  loom_tpb_store(&b, D, &z0, loom_tp_op2(a, LOOM_TP_OP_MUL, loom_tpb_load(&b, D, &z0), AT(IX(c), IX(c))));
  const loom_sym_expr *u2 = loom_tpb_for(&b, "u2", rest, LOOM_TP_LOOP_SERIAL, false);
  const loom_sym_expr *cu2 = c && u2 ? loom_sym_add(cx, loom_sym_add(cx, c, one), u2) : NULL; /* c + 1 + u2 */
  loom_tp_expr *fr = loom_tpb_let(&b, "fr", loom_tp_op2(a, LOOM_TP_OP_DIV, AT(IX(cu2), IX(c)), AT(IX(c), IX(c))));
  const loom_sym_expr *k3 = loom_tpb_for(&b, "k3", c ? loom_sym_sub(cx, m, c) : NULL, LOOM_TP_LOOP_SERIAL, false);
  const loom_sym_expr *ck3 = c && k3 ? loom_sym_add(cx, c, k3) : NULL; /* c + k3 */
  loom_tp_expr *upd = loom_tp_op2(a, LOOM_TP_OP_SUB, AT(IX(cu2), IX(ck3)), loom_tp_op2(a, LOOM_TP_OP_MUL, fr, AT(IX(c), IX(ck3))));
  loom_tpb_store(&b, A, (loom_tp_expr *[]){IX(cu2), IX(ck3)}, upd);
  loom_tpb_end_n(&b, 5); /* k3, u2, the else, the if D[1], c */
#undef IX
#undef F64
#undef AT
#undef PV
  loom_tp_expr *yi[LOOM_TP_GEN_MAX_RANK];
  for (int q = 0; q < nb; q++) yi[q] = bi[q];
  loom_tpb_store(&b, Y, yi, loom_tp_cast(a, t, loom_tpb_load(&b, D, &z0)));
  return loom_tpb_finish(&b, result);
}

/* dft along `axis` of X (..., a, ..., c) with c = 1 (real) or 2 (complex), as the reference
 * (graph/op_misc.c): per output bin k a serial sum over the (cut or zero-padded) signal of
 * x[j] e^(-+2 pi i ((j k) mod n) / n), in f64. The transform length n is the i64 scalar
 * parameter `nl` when has_length, else a (2*(a - 1) for the onesided inverse). */
loom_status loom_tp_gen_dft(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank, int axis, int c,
                            bool inverse, bool onesided, bool has_length, loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  if (rank < 2 || axis < 0 || axis >= rank - 1 || (c != 1 && c != 2) || !loom_dtype_is_float(t))
    return LOOM_ERROR(INVALID_ARGUMENT, "dft: rank %d, axis %d, %d components, dtype %s", rank, axis, c, loom_dtype_name(t));
  bool half = inverse && onesided; /* a onesided spectrum in, a real signal out */
  const char *tn = loom_dtype_name(t);
  const char *const *d = loom_tpg_dims_d();
  char nn[32], m[64], jext[48];
  snprintf(nn, sizeof nn, "%s", has_length ? "nl" : half ? "2*a - 2" : "a");
  if (onesided && !inverse) snprintf(m, sizeof m, "floordiv(%s, 2) + 1", nn);
  else snprintf(m, sizeof m, "%s", nn);
  /* the signal's samples: the first min(a, n) (zero padding adds nothing); all n when half */
  if (half) snprintf(jext, sizeof jext, "%s", nn);
  else if (has_length) snprintf(jext, sizeof jext, "min(a, nl)");
  else snprintf(jext, sizeof jext, "a");
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(X: Buffer[(", name);
  for (int k = 0; k < rank - 1; k++) loom_strbuf_printf(&sb, "%s, ", k == axis ? "a" : d[k]);
  loom_strbuf_printf(&sb, "%d), %s], %sY: Buffer[(", c, tn, has_length ? "nl: i64, " : "");
  for (int k = 0; k < rank - 1; k++) loom_strbuf_printf(&sb, "%s, ", k == axis ? m : d[k]);
  loom_strbuf_printf(&sb, "%d), %s]) {\n", half ? 1 : 2, tn);
  char xi[128] = "", yi[128] = ""; /* "i0, sj, i2, " and "i0, kb, i2, " */
  for (int k = 0; k < rank - 1; k++) {
    if (k == axis) loom_strbuf_printf(&sb, "for kb in 0..%s%s {\n", m, k == 0 ? " parallel" : "");
    else loom_strbuf_printf(&sb, "for i%d in 0..%s%s {\n", k, d[k], k == 0 ? " parallel" : "");
    char v[8];
    snprintf(v, sizeof v, "i%d", k);
    snprintf(xi + strlen(xi), sizeof xi - strlen(xi), "%s, ", k == axis ? "sj" : v);
    snprintf(yi + strlen(yi), sizeof yi - strlen(yi), "%s, ", k == axis ? "kb" : v);
  }
  loom_strbuf_printf(&sb, "alloc S: Local[(2,), f64]\nS[0] = 0.0f64\nS[1] = 0.0f64\nfor j in 0..%s reduce {\n", jext);
  if (half) {
    /* bins past the spectrum come from Hermitian symmetry: X[n - j] = conj(X[j]) */
    loom_strbuf_printf(&sb, "let sj: i64 = select(j >= a, %s - j, j)\nlet cj: f64 = select(j >= a, -1.0f64, 1.0f64)\n", nn);
  } else {
    loom_strbuf_puts(&sb, "let sj: i64 = j\nlet cj: f64 = 1.0f64\n");
  }
  loom_strbuf_puts(&sb, "if sj >= 0 && sj < a {\n");
  loom_strbuf_printf(&sb, "let an: f64 = %s2.0f64 * 3.14159265358979311600f64 * f64((j * kb) %% (%s)) / f64(%s)\n", inverse ? "" : "-",
                     nn, nn);
  loom_strbuf_puts(&sb, "let cr: f64 = cos(an)\nlet ci: f64 = sin(an)\n");
  loom_strbuf_printf(&sb, "let xr: f64 = f64(X[%s0])\n", xi);
  if (c == 2) loom_strbuf_printf(&sb, "let xm: f64 = cj * f64(X[%s1])\n", xi);
  else loom_strbuf_puts(&sb, "let xm: f64 = 0.0f64 * cj\n");
  loom_strbuf_puts(&sb, "S[0] = S[0] + (xr * cr - xm * ci)\nS[1] = S[1] + (xr * ci + xm * cr)\n}\n}\n");
  const char *scale = inverse ? " / f64(" : "";
  char sc[48] = "";
  if (inverse) snprintf(sc, sizeof sc, "%s%s)", scale, nn);
  loom_strbuf_printf(&sb, "Y[%s0] = %s(S[0]%s)\n", yi, tn, sc);
  if (!half) loom_strbuf_printf(&sb, "Y[%s1] = %s(S[1]%s)\n", yi, tn, sc);
  loom_tpg_close_program(&sb, rank - 1);
  return loom_tpg_finish(a, cx, &sb, result);
}

/* topk along `axis`: Y (the axis of extent kk, from Y's shape) takes, in order, the kk largest
 * (or smallest) elements of each slice of X, ties to the lower index (the reference's sort),
 * their values or (indices) their i64 positions. A selection per output position: the best
 * element not taken yet, serial over the positions (a Local of taken flags per slice). */
loom_status loom_tp_gen_topk(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank, int axis,
                             bool largest, bool indices, loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  if (rank < 1 || axis < 0 || axis >= rank || t == LOOM_DTYPE_BOOL)
    return LOOM_ERROR(INVALID_ARGUMENT, "topk: rank %d, axis %d, dtype %s", rank, axis, loom_dtype_name(t));
  const char *tn = loom_dtype_name(t);
  const char *const *d = loom_tpg_dims_d();
  char xr[128] = "", xb[128] = "", yj[128] = "";
  for (int k = 0; k < rank; k++) {
    char v[8];
    snprintf(v, sizeof v, "i%d", k);
    snprintf(xr + strlen(xr), sizeof xr - strlen(xr), "%s%s", k ? ", " : "", k == axis ? "r" : v);
    snprintf(xb + strlen(xb), sizeof xb - strlen(xb), "%s%s", k ? ", " : "", k == axis ? "B[0]" : v);
    snprintf(yj + strlen(yj), sizeof yj - strlen(yj), "%s%s", k ? ", " : "", k == axis ? "j" : v);
  }
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(X: Buffer[(", name);
  for (int k = 0; k < rank; k++) loom_strbuf_printf(&sb, "%s%s", k ? ", " : "", k == axis ? "a" : d[k]);
  loom_strbuf_printf(&sb, "%s), %s], Y: Buffer[(", rank == 1 ? "," : "", tn);
  for (int k = 0; k < rank; k++) loom_strbuf_printf(&sb, "%s%s", k ? ", " : "", k == axis ? "kk" : d[k]);
  loom_strbuf_printf(&sb, "%s), %s]) {\n", rank == 1 ? "," : "", indices ? "i64" : tn);
  int nl = 0;
  for (int k = 0; k < rank; k++)
    if (k != axis) loom_strbuf_printf(&sb, "for i%d in 0..%s%s {\n", k, d[k], nl++ == 0 ? " parallel" : "");
  /* the candidate X[r] goes before the best so far X[B[0]] (NaN last, as the reference) */
  char before[256];
  if (loom_dtype_is_float(t))
    snprintf(before, sizeof before, "X[%s] != X[%s] && (X[%s] %s X[%s] || X[%s] != X[%s])", xr, xb, xr, largest ? ">" : "<", xb, xb, xb);
  else snprintf(before, sizeof before, "X[%s] %s X[%s]", xr, largest ? ">" : "<", xb);
  char val[160];
  snprintf(val, sizeof val, "%s", indices ? "B[0]" : "");
  if (!indices) snprintf(val, sizeof val, "X[%s]", xb);
  loom_strbuf_printf(&sb,
                     "alloc U: Local[(a,), bool]\nalloc B: Local[(1,), i64]\n"
                     "for r0 in 0..a {\nU[r0] = false\n}\n"
                     "for j in 0..kk reduce {\nB[0] = -1\n"
                     "for r in 0..a reduce {\nif !U[r] {\nif B[0] < 0 {\nB[0] = r\n} else {\nif %s {\nB[0] = r\n}\n}\n}\n}\n"
                     "U[B[0]] = true\nY[%s] = %s\n}\n",
                     before, yj, val);
  loom_tpg_close_program(&sb, nl);
  return loom_tpg_finish(a, cx, &sb, result);
}
