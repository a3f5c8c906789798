/* gen_linalg.c — generators of the small dense linear-algebra and signal programs: det, dft,
 * topk. Built directly as IR (tp_build.h); each generator's comment shows the program's text.
 *
 * det runs the reference's algorithm (graph/op_misc.c) per matrix: LU decomposition with partial
 * pivoting in f64 on a Local copy, serial over the columns (the column and pivot-search loops are
 * flagged `reduce`, which keeps the CPU rules from running them in parallel); the batch loops
 * around it are independent. */
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
  loom_tpg_dims_d(&b, nb, d);
  const loom_sym_expr *m = loom_tpb_shape_sym(&b, "m");
  d[nb] = d[nb + 1] = m;
  const loom_tp_buffer *X = loom_tpb_buffer(&b, "X", t, rank, d), *Y = loom_tpb_buffer(&b, "Y", t, nb, d);
  loom_tp_expr *bi[LOOM_TP_GEN_MAX_RANK];
  loom_tpg_nest(&b, nb, d, bi);
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
 * parameter `nl` when has_length, else a (2*(a - 1) for the onesided inverse):
 *   for i<k> / kb (the axis: 0..m, m = floordiv(n, 2) + 1 onesided, else n) .. {
 *     alloc S: Local[(2,), f64]  S[0] = 0.0f64  S[1] = 0.0f64
 *     for j in 0..<samples> reduce {
 *       let sj: i64 = j (half: select(j >= a, n - j, j))   let cj: f64 = 1.0f64 (half: select(j >= a, -1.0f64, 1.0f64))
 *       if sj >= 0 && sj < a {
 *         let an: f64 = [-]2.0f64 * 3.14159265358979311600f64 * f64((j * kb) % (n)) / f64(n)
 *         let cr: f64 = cos(an)  let ci: f64 = sin(an)
 *         let xr: f64 = f64(X[.., sj, .., 0])  let xm: f64 = cj * f64(X[.., sj, .., 1]) (c = 1: 0.0f64 * cj)
 *         S[0] = S[0] + (xr * cr - xm * ci)  S[1] = S[1] + (xr * ci + xm * cr) } }
 *     Y[.., kb, .., 0] = t(S[0] [/ f64(n)])  [Y[.., kb, .., 1] = t(S[1] [/ f64(n)])] }
 * with the samples min(a, nl) (a without a length; n for the onesided inverse). */
loom_status loom_tp_gen_dft(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank, int axis, int c,
                            bool inverse, bool onesided, bool has_length, loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  if (rank < 2 || axis < 0 || axis >= rank - 1 || (c != 1 && c != 2) || !loom_dtype_is_float(t))
    return LOOM_ERROR(INVALID_ARGUMENT, "dft: rank %d, axis %d, %d components, dtype %s", rank, axis, c, loom_dtype_name(t));
  bool half = inverse && onesided; /* a onesided spectrum in, a real signal out */
  int nb = rank - 1;
  loom_tpb b;
  loom_tpb_init(&b, a, cx, name);
  const loom_sym_expr *d[LOOM_TP_GEN_MAX_RANK], *ax = NULL;
  for (int k = 0; k < nb; k++) d[k] = loom_tpb_shape_sym(&b, k == axis ? "a" : loom_tpg_var('d', k));
  ax = d[axis];
  d[nb] = loom_sym_const(cx, c);
  const loom_tp_buffer *X = loom_tpb_buffer(&b, "X", t, rank, d);
  const loom_sym_expr *nl = has_length ? loom_tpb_scalar(&b, "nl") : NULL;
  const loom_sym_expr *two = loom_sym_const(cx, 2);
  const loom_sym_expr *n = has_length ? nl : half ? loom_sym_sub(cx, loom_sym_mul(cx, two, ax), two) : ax;
  const loom_sym_expr *m = onesided && !inverse ? loom_sym_add(cx, loom_sym_floordiv(cx, n, two), loom_sym_const(cx, 1)) : n;
  /* the signal's samples: the first min(a, n) (zero padding adds nothing); all n when half */
  const loom_sym_expr *jext = half ? n : has_length ? loom_sym_min(cx, ax, nl) : ax;
  d[axis] = m;
  d[nb] = loom_sym_const(cx, half ? 1 : 2);
  const loom_tp_buffer *Y = loom_tpb_buffer(&b, "Y", t, rank, d);
  const loom_sym_expr *kb = NULL;
  loom_tp_expr *xi[LOOM_TP_GEN_MAX_RANK], *yi[LOOM_TP_GEN_MAX_RANK];
  for (int k = 0; k < nb; k++) {
    loom_tp_loop_kind kind = k == 0 ? LOOM_TP_LOOP_PARALLEL : LOOM_TP_LOOP_SERIAL;
    const loom_sym_expr *v = loom_tpb_for(&b, k == axis ? "kb" : loom_tpg_var('i', k), k == axis ? m : d[k], kind, false);
    if (k == axis) kb = v;
    yi[k] = xi[k] = loom_tpb_idx(&b, v);
  }
  const loom_tp_buffer *S = loom_tpb_local(&b, "S", LOOM_DTYPE_F64, 2);
  loom_tpb_store_at(&b, S, 0, loom_tp_const_f(a, LOOM_DTYPE_F64, 0.0));
  loom_tpb_store_at(&b, S, 1, loom_tp_const_f(a, LOOM_DTYPE_F64, 0.0));
  const loom_sym_expr *j = loom_tpb_for(&b, "j", jext, LOOM_TP_LOOP_SERIAL, true);
  loom_tp_expr *sj, *cj;
  if (half) {
    /* bins past the spectrum come from Hermitian symmetry: X[n - j] = conj(X[j]) */
    sj = loom_tpb_let(&b, "sj", loom_tp_select(a, loom_tpb_cmp(&b, LOOM_TP_OP_GE, j, ax), loom_tpb_idx(&b, loom_sym_sub(cx, n, j)),
                                               loom_tpb_idx(&b, j)));
    cj = loom_tpb_let(&b, "cj", loom_tp_select(a, loom_tpb_cmp(&b, LOOM_TP_OP_GE, j, ax), loom_tp_const_f(a, LOOM_DTYPE_F64, -1.0),
                                               loom_tp_const_f(a, LOOM_DTYPE_F64, 1.0)));
  } else {
    sj = loom_tpb_let(&b, "sj", loom_tpb_idx(&b, j));
    cj = loom_tpb_let(&b, "cj", loom_tp_const_f(a, LOOM_DTYPE_F64, 1.0));
  }
  loom_tpb_if(&b, loom_tp_op2(a, LOOM_TP_OP_AND, loom_tp_op2(a, LOOM_TP_OP_GE, sj, loom_tpb_cidx(&b, 0)),
                              loom_tp_op2(a, LOOM_TP_OP_LT, loom_tpb_dup(&b, sj), loom_tpb_idx(&b, ax))));
  loom_tp_expr *turn = loom_tp_op2(a, LOOM_TP_OP_MUL, loom_tp_const_f(a, LOOM_DTYPE_F64, inverse ? 2.0 : -2.0),
                                   loom_tp_const_f(a, LOOM_DTYPE_F64, 3.14159265358979311600));
  loom_tp_expr *frac = loom_tp_cast(a, LOOM_DTYPE_F64, loom_tpb_idx(&b, kb ? loom_sym_floormod(cx, loom_sym_mul(cx, j, kb), n) : NULL));
  loom_tp_expr *an = loom_tpb_let(&b, "an", loom_tp_op2(a, LOOM_TP_OP_DIV, loom_tp_op2(a, LOOM_TP_OP_MUL, turn, frac),
                                                       loom_tp_cast(a, LOOM_DTYPE_F64, loom_tpb_idx(&b, n))));
  loom_tp_expr *cr = loom_tpb_let(&b, "cr", loom_tp_op1(a, LOOM_TP_OP_COS, an));
  loom_tp_expr *ci = loom_tpb_let(&b, "ci", loom_tp_op1(a, LOOM_TP_OP_SIN, loom_tpb_dup(&b, an)));
  xi[axis] = loom_tpb_dup(&b, sj);
  xi[nb] = loom_tpb_cidx(&b, 0);
  loom_tp_expr *xr = loom_tpb_let(&b, "xr", loom_tp_cast(a, LOOM_DTYPE_F64, loom_tpb_load(&b, X, xi)));
  loom_tp_expr *xm;
  if (c == 2) {
    xi[nb] = loom_tpb_cidx(&b, 1);
    xm = loom_tpb_let(&b, "xm", loom_tp_op2(a, LOOM_TP_OP_MUL, cj, loom_tp_cast(a, LOOM_DTYPE_F64, loom_tpb_load(&b, X, xi))));
  } else {
    xm = loom_tpb_let(&b, "xm", loom_tp_op2(a, LOOM_TP_OP_MUL, loom_tp_const_f(a, LOOM_DTYPE_F64, 0.0), cj));
  }
#define MUL(x, y) loom_tp_op2(a, LOOM_TP_OP_MUL, loom_tpb_dup(&b, x), loom_tpb_dup(&b, y))
  loom_tpb_store_at(&b, S, 0, loom_tp_op2(a, LOOM_TP_OP_ADD, loom_tpb_at(&b, S, 0), loom_tp_op2(a, LOOM_TP_OP_SUB, MUL(xr, cr), MUL(xm, ci))));
  loom_tpb_store_at(&b, S, 1, loom_tp_op2(a, LOOM_TP_OP_ADD, loom_tpb_at(&b, S, 1), loom_tp_op2(a, LOOM_TP_OP_ADD, MUL(xr, ci), MUL(xm, cr))));
#undef MUL
  loom_tpb_end_n(&b, 2); /* the if, j */
  yi[axis] = loom_tpb_idx(&b, kb);
  for (int p = 0; p < (half ? 1 : 2); p++) {
    loom_tp_expr *v = loom_tpb_at(&b, S, p);
    if (inverse) v = loom_tp_op2(a, LOOM_TP_OP_DIV, v, loom_tp_cast(a, LOOM_DTYPE_F64, loom_tpb_idx(&b, n)));
    yi[nb] = loom_tpb_cidx(&b, p);
    loom_tpb_store(&b, Y, yi, loom_tp_cast(a, t, v));
  }
  return loom_tpb_finish(&b, result);
}

/* topk along `axis`: Y (the axis of extent kk, from Y's shape) takes, in order, the kk largest
 * (or smallest) elements of each slice of X, ties to the lower index (the reference's sort),
 * their values or (indices) their i64 positions. A selection per output position: the best
 * element not taken yet, serial over the positions (a Local of taken flags per slice):
 *   for i<k> (k != axis) .. {
 *     alloc U: Local[(a,), bool]  alloc B: Local[(1,), i64]  for r0 in 0..a { U[r0] = false }
 *     for j in 0..kk reduce { B[0] = -1
 *       for r in 0..a reduce { if !U[r] { if B[0] < 0 { B[0] = r } else { if <before> { B[0] = r } } } }
 *       U[B[0]] = true  Y[.., j, ..] = X[.., B[0], ..] (indices: B[0]) } }
 * with <before> X[.., r, ..] > X[.., B[0], ..] (< for the smallest), and for floats NaN last:
 * X[r] != X[B] && (X[r] > X[B] || X[B] != X[B]). */
loom_status loom_tp_gen_topk(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank, int axis,
                             bool largest, bool indices, loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  if (rank < 1 || axis < 0 || axis >= rank || t == LOOM_DTYPE_BOOL)
    return LOOM_ERROR(INVALID_ARGUMENT, "topk: rank %d, axis %d, dtype %s", rank, axis, loom_dtype_name(t));
  loom_tpb b;
  loom_tpb_init(&b, a, cx, name);
  const loom_sym_expr *d[LOOM_TP_GEN_MAX_RANK];
  for (int k = 0; k < rank; k++) d[k] = loom_tpb_shape_sym(&b, k == axis ? "a" : loom_tpg_var('d', k));
  const loom_sym_expr *ax = d[axis];
  const loom_tp_buffer *X = loom_tpb_buffer(&b, "X", t, rank, d);
  d[axis] = loom_tpb_shape_sym(&b, "kk");
  const loom_tp_buffer *Y = loom_tpb_buffer(&b, "Y", indices ? LOOM_DTYPE_I64 : t, rank, d);
  loom_tp_expr *xr[LOOM_TP_GEN_MAX_RANK], *xb[LOOM_TP_GEN_MAX_RANK], *yj[LOOM_TP_GEN_MAX_RANK];
  int nl = 0;
  for (int k = 0; k < rank; k++)
    if (k != axis)
      xr[k] = xb[k] = yj[k] =
          loom_tpb_idx(&b, loom_tpb_for(&b, loom_tpg_var('i', k), d[k], nl++ == 0 ? LOOM_TP_LOOP_PARALLEL : LOOM_TP_LOOP_SERIAL, false));
  const loom_tp_buffer *U = loom_tpb_alloc(&b, "U", LOOM_DTYPE_BOOL, 1, &ax, LOOM_TP_SCOPE_LOCAL);
  const loom_tp_buffer *B = loom_tpb_local(&b, "B", LOOM_DTYPE_I64, 1);
  loom_tp_expr *r0 = loom_tpb_idx(&b, loom_tpb_for(&b, "r0", ax, LOOM_TP_LOOP_SERIAL, false));
  loom_tpb_store(&b, U, &r0, loom_tp_const_i(a, LOOM_DTYPE_BOOL, 0));
  loom_tpb_end(&b);
  yj[axis] = loom_tpb_idx(&b, loom_tpb_for(&b, "j", d[axis], LOOM_TP_LOOP_SERIAL, true));
  loom_tpb_store_at(&b, B, 0, loom_tpb_cidx(&b, -1));
  loom_tp_expr *r = loom_tpb_idx(&b, loom_tpb_for(&b, "r", ax, LOOM_TP_LOOP_SERIAL, true));
  loom_tpb_if(&b, loom_tp_op1(a, LOOM_TP_OP_NOT, loom_tpb_load(&b, U, &r)));
  loom_tpb_if(&b, loom_tp_op2(a, LOOM_TP_OP_LT, loom_tpb_at(&b, B, 0), loom_tpb_cidx(&b, 0)));
  loom_tpb_store_at(&b, B, 0, loom_tpb_dup(&b, r));
  loom_tpb_else(&b);
  /* the candidate X[r] goes before the best so far X[B[0]] (NaN last, as the reference) */
  xr[axis] = r;
  xb[axis] = loom_tpb_at(&b, B, 0); /* loads copy their indices */
#define XR() loom_tpb_load(&b, X, xr)
#define XB() loom_tpb_load(&b, X, xb)
  loom_tp_op order = largest ? LOOM_TP_OP_GT : LOOM_TP_OP_LT;
  loom_tp_expr *before;
  if (loom_dtype_is_float(t)) {
    loom_tp_expr *ne = loom_tp_op2(a, LOOM_TP_OP_NE, XR(), XB());
    loom_tp_expr *ord = loom_tp_op2(a, order, XR(), XB());
    loom_tp_expr *nan = loom_tp_op2(a, LOOM_TP_OP_NE, XB(), XB());
    before = loom_tp_op2(a, LOOM_TP_OP_AND, ne, loom_tp_op2(a, LOOM_TP_OP_OR, ord, nan));
  } else {
    before = loom_tp_op2(a, order, XR(), XB());
  }
  loom_tpb_if(&b, before);
  loom_tpb_store_at(&b, B, 0, loom_tpb_dup(&b, r));
  loom_tpb_end_n(&b, 4); /* the ifs, r */
  loom_tp_expr *bi = loom_tpb_at(&b, B, 0);
  loom_tpb_store(&b, U, &bi, loom_tp_const_i(a, LOOM_DTYPE_BOOL, 1));
  loom_tpb_store(&b, Y, yj, indices ? loom_tpb_at(&b, B, 0) : XB());
#undef XR
#undef XB
  return loom_tpb_finish(&b, result);
}
