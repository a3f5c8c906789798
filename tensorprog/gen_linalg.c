/* gen_linalg.c — generators of the small dense linear-algebra and signal programs: det, dft,
 * topk. Built directly as IR (tp_build.h); each generator's comment shows the program's text.
 *
 * det runs the reference's algorithm (graph/op_misc.c) per matrix: LU decomposition with partial
 * pivoting in f64 on a Local copy, serial over the columns (the column and pivot-search loops are
 * flagged `reduce`, which keeps the CPU rules from running them in parallel); the batch loops
 * around it are independent. */
#include <stdio.h>

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
 * (or smallest) elements of each slice of X, ties to the lower index (the reference's sort), as
 * their i64 positions (indices) or their values. Per slice a binary heap of the best kk so far
 * (values V, positions I), its root the one that comes last in the output: "p after q" is
 * <V[q] before V[p]> || (!<V[p] before V[q]> && I[p] > I[q]). The first kk elements are pushed
 * (sifted up); each later one enters only if it goes before the root, tested 8 at a time (one
 * vector compare for the 8, almost always false once the heap holds good values), replacing the
 * root and sifting down; at the end the root is taken kk times, filling Y from its end. Sifts run
 * D = bitlen(kk) steps (the heap's depth bounds them; a cursor C[0] of -1 or 0 ends one early):
 * O(a log kk) per slice at worst, O(a + kk log kk log(a / kk)) for data in random order.
 *   for i<k> (k != axis) .. {
 *     alloc V: Local[(kk,), t]  alloc I: Local[(kk,), i64]  alloc C: Local[(1,), i64]  alloc W: Local[(1,), i64]
 *     for r in 0..kk reduce { let x: t = X[.., r, ..]  V[r] = x  I[r] = r  C[0] = r
 *       for s in 0..D reduce { if C[0] > 0 { let pa: i64 = (C[0] - 1) / 2i64
 *         if !<x before V[pa]> { <swap pa, C[0]>  C[0] = pa } else { C[0] = 0 } } } }
 *     if kk >= 1 {
 *       for c in 0..floordiv(a - kk, 8) reduce { let th: t = V[0]
 *         if <X[.., kk + 8*c, ..] before th> || .. || <X[.., kk + 8*c + 7, ..] before th> {
 *           for l in 0..8 reduce { <offer kk + 8*c + l> } } }
 *       for u in 0..floormod(a - kk, 8) reduce { <offer a - floormod(a - kk, 8) + u> } }
 *     for j in 0..kk reduce { Y[.., kk - j - 1, ..] = I[0] (values: V[0])
 *       V[0] = V[kk - j - 1]  I[0] = I[kk - j - 1]  <sift down in kk - j - 1> } }
 * with <offer p> = let x: t = X[.., p, ..]  if <x before V[0]> { V[0] = x  I[0] = p  <sift down in kk> },
 * <sift down in n> = C[0] = 0  for s in 0..D reduce { if C[0] >= 0 { let lc: i64 = 2i64 * C[0] + 1i64
 *   if lc < n { W[0] = lc  if lc + 1i64 < n { if <lc + 1 after lc> { W[0] = lc + 1i64 } }
 *     if <W[0] after C[0]> { <swap W[0], C[0]>  C[0] = W[0] } else { C[0] = -1i64 } } else { C[0] = -1i64 } } },
 * <x before v> x > v (< for the smallest), and for floats NaN last, NaNs in index order:
 * x > v || (v != v && x == x); D the scalar parameter dk, which the caller sets to bitlen(kk)
 * (loom_tp_bitlen: a sum of 63 terms, evaluated once per call by the VM, as a loop extent in the
 * program it made LLVM take 7 s over the kernel). The lets and loops of each sift are named
 * apart (suffixes). */
typedef struct topk_gen {
  loom_tpb *b;
  loom_dtype t;
  bool largest;
  const loom_tp_buffer *X, *V, *I, *C, *W;
  const loom_sym_expr *depth;
  loom_tp_expr **xi; /* X's index (the axis entry is set per use) */
  int axis;
} topk_gen;

static loom_tp_expr *topk_before(topk_gen *g, const loom_tp_expr *x, loom_tp_expr *v) {
  loom_tpb *b = g->b;
  loom_tp_expr *ord = loom_tp_op2(b->a, g->largest ? LOOM_TP_OP_GT : LOOM_TP_OP_LT, loom_tpb_dup(b, x), v);
  if (!loom_dtype_is_float(g->t)) return ord;
  loom_tp_expr *vnan = loom_tp_op2(b->a, LOOM_TP_OP_NE, loom_tpb_dup(b, v), loom_tpb_dup(b, v));
  loom_tp_expr *xnum = loom_tp_op2(b->a, LOOM_TP_OP_EQ, loom_tpb_dup(b, x), loom_tpb_dup(b, x));
  return loom_tp_op2(b->a, LOOM_TP_OP_OR, ord, loom_tp_op2(b->a, LOOM_TP_OP_AND, vnan, xnum));
}

static loom_tp_expr *topk_at(topk_gen *g, const loom_tp_buffer *buf, const loom_tp_expr *i) {
  loom_tp_expr *c = loom_tpb_dup(g->b, i);
  return loom_tpb_load(g->b, buf, &c);
}

static loom_tp_expr *topk_i64(topk_gen *g, int64_t v) { return loom_tp_const_i(g->b->a, LOOM_DTYPE_I64, v); }

/* <p after q> on heap entries (index expressions). */
static loom_tp_expr *topk_after(topk_gen *g, const loom_tp_expr *p, const loom_tp_expr *q) {
  loom_arena *a = g->b->a;
  loom_tp_expr *vp = topk_at(g, g->V, p), *vq = topk_at(g, g->V, q);
  loom_tp_expr *worse = topk_before(g, vq, topk_at(g, g->V, p));
  loom_tp_expr *tie = loom_tp_op2(a, LOOM_TP_OP_AND, loom_tp_op1(a, LOOM_TP_OP_NOT, topk_before(g, vp, topk_at(g, g->V, q))),
                                  loom_tp_op2(a, LOOM_TP_OP_GT, topk_at(g, g->I, p), topk_at(g, g->I, q)));
  return loom_tp_op2(a, LOOM_TP_OP_OR, worse, tie);
}

/* <swap p, q> (tag names its lets). */
static void topk_swap(topk_gen *g, const loom_tp_expr *p, const loom_tp_expr *q, const char *tag) {
  loom_tpb *b = g->b;
  char vn[12], in[12];
  snprintf(vn, sizeof vn, "sv%s", tag);
  snprintf(in, sizeof in, "si%s", tag);
  loom_tp_expr *sv = loom_tpb_let(b, vn, topk_at(g, g->V, p)), *si = loom_tpb_let(b, in, topk_at(g, g->I, p));
  loom_tp_expr *pc = loom_tpb_dup(b, p), *qc = loom_tpb_dup(b, q);
  loom_tpb_store(b, g->V, &pc, topk_at(g, g->V, q));
  loom_tpb_store(b, g->I, &pc, topk_at(g, g->I, q));
  loom_tpb_store(b, g->V, &qc, sv);
  loom_tpb_store(b, g->I, &qc, si);
}

/* <sift down in n> (tag names its lets and loop). */
static void topk_sift_down(topk_gen *g, const loom_sym_expr *n, const char *tag) {
  loom_tpb *b = g->b;
  loom_arena *a = b->a;
  char sn[12], ln[12];
  snprintf(sn, sizeof sn, "s%s", tag);
  snprintf(ln, sizeof ln, "lc%s", tag);
  loom_tpb_store_at(b, g->C, 0, topk_i64(g, 0));
  loom_tpb_for(b, sn, g->depth, LOOM_TP_LOOP_SERIAL, true);
  loom_tpb_if(b, loom_tp_op2(a, LOOM_TP_OP_GE, loom_tpb_at(b, g->C, 0), topk_i64(g, 0)));
  loom_tp_expr *lc = loom_tpb_let(b, ln, loom_tp_op2(a, LOOM_TP_OP_ADD, loom_tp_op2(a, LOOM_TP_OP_MUL, topk_i64(g, 2), loom_tpb_at(b, g->C, 0)),
                                                    topk_i64(g, 1)));
  loom_tpb_if(b, loom_tp_op2(a, LOOM_TP_OP_LT, loom_tpb_dup(b, lc), loom_tpb_idx(b, n)));
  loom_tpb_store_at(b, g->W, 0, loom_tpb_dup(b, lc));
  loom_tp_expr *rc = loom_tp_op2(a, LOOM_TP_OP_ADD, loom_tpb_dup(b, lc), topk_i64(g, 1));
  loom_tpb_if(b, loom_tp_op2(a, LOOM_TP_OP_LT, loom_tpb_dup(b, rc), loom_tpb_idx(b, n)));
  loom_tpb_if(b, topk_after(g, rc, lc));
  loom_tpb_store_at(b, g->W, 0, loom_tpb_dup(b, rc));
  loom_tpb_end_n(b, 2);
  loom_tp_expr *w = loom_tpb_at(b, g->W, 0), *cur = loom_tpb_at(b, g->C, 0);
  loom_tpb_if(b, topk_after(g, w, cur));
  topk_swap(g, w, cur, tag);
  loom_tpb_store_at(b, g->C, 0, loom_tpb_at(b, g->W, 0));
  loom_tpb_else(b);
  loom_tpb_store_at(b, g->C, 0, topk_i64(g, -1));
  loom_tpb_end(b);
  loom_tpb_else(b);
  loom_tpb_store_at(b, g->C, 0, topk_i64(g, -1));
  loom_tpb_end_n(b, 3); /* the if lc < n, the if C[0] >= 0, s */
}

/* <offer pos> (tag names its lets and loops). */
static void topk_offer(topk_gen *g, const loom_sym_expr *pos, const char *tag) {
  loom_tpb *b = g->b;
  char xn[12];
  snprintf(xn, sizeof xn, "x%s", tag);
  g->xi[g->axis] = loom_tpb_idx(b, pos);
  loom_tp_expr *x = loom_tpb_let(b, xn, loom_tpb_load(b, g->X, g->xi));
  loom_tpb_if(b, topk_before(g, x, loom_tpb_at(b, g->V, 0)));
  loom_tpb_store_at(b, g->V, 0, loom_tpb_dup(b, x));
  loom_tpb_store_at(b, g->I, 0, loom_tpb_idx(b, pos));
  topk_sift_down(g, loom_tpb_sym(b, "kk"), tag);
  loom_tpb_end(b);
}

const loom_sym_expr *loom_tp_bitlen(loom_sym_ctx *cx, const loom_sym_expr *n) {
  const loom_sym_expr *one = loom_sym_const(cx, 1), *sum = NULL;
  for (int k = 0; k < 63 && n; k++) {
    const loom_sym_expr *bit = loom_sym_min(cx, loom_sym_floordiv(cx, n, loom_sym_const(cx, (int64_t)1 << k)), one);
    sum = sum ? loom_sym_add(cx, sum, bit) : bit;
  }
  return sum;
}

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
  const loom_sym_expr *depth = loom_tpb_scalar(&b, "dk");
  const loom_sym_expr *kk = d[axis] = loom_tpb_shape_sym(&b, "kk");
  const loom_tp_buffer *Y = loom_tpb_buffer(&b, "Y", indices ? LOOM_DTYPE_I64 : t, rank, d);
  const loom_sym_expr *one = loom_sym_const(cx, 1), *eight = loom_sym_const(cx, 8);
  loom_tp_expr *xi[LOOM_TP_GEN_MAX_RANK], *yj[LOOM_TP_GEN_MAX_RANK];
  int nl = 0;
  for (int k = 0; k < rank; k++)
    if (k != axis)
      xi[k] = yj[k] =
          loom_tpb_idx(&b, loom_tpb_for(&b, loom_tpg_var('i', k), d[k], nl++ == 0 ? LOOM_TP_LOOP_PARALLEL : LOOM_TP_LOOP_SERIAL, false));
  topk_gen g = {.b = &b, .t = t, .largest = largest, .X = X, .xi = xi, .axis = axis, .depth = depth};
  g.V = loom_tpb_alloc(&b, "V", t, 1, &kk, LOOM_TP_SCOPE_LOCAL);
  g.I = loom_tpb_alloc(&b, "I", LOOM_DTYPE_I64, 1, &kk, LOOM_TP_SCOPE_LOCAL);
  g.C = loom_tpb_local(&b, "C", LOOM_DTYPE_I64, 1);
  g.W = loom_tpb_local(&b, "W", LOOM_DTYPE_I64, 1);
  /* the first kk elements, pushed: each goes after its parent unless it goes before it */
  const loom_sym_expr *r = loom_tpb_for(&b, "r", kk, LOOM_TP_LOOP_SERIAL, true);
  xi[axis] = loom_tpb_idx(&b, r);
  loom_tp_expr *x = loom_tpb_let(&b, "x", loom_tpb_load(&b, X, xi));
  loom_tp_expr *ir = loom_tpb_idx(&b, r);
  loom_tpb_store(&b, g.V, &ir, loom_tpb_dup(&b, x));
  loom_tpb_store(&b, g.I, &ir, loom_tpb_idx(&b, r));
  loom_tpb_store_at(&b, g.C, 0, loom_tpb_idx(&b, r));
  loom_tpb_for(&b, "s", depth, LOOM_TP_LOOP_SERIAL, true);
  loom_tpb_if(&b, loom_tp_op2(a, LOOM_TP_OP_GT, loom_tpb_at(&b, g.C, 0), topk_i64(&g, 0)));
  loom_tp_expr *pa = loom_tpb_let(&b, "pa", loom_tp_op2(a, LOOM_TP_OP_DIV, loom_tp_op2(a, LOOM_TP_OP_SUB, loom_tpb_at(&b, g.C, 0), topk_i64(&g, 1)),
                                                       topk_i64(&g, 2)));
  loom_tpb_if(&b, loom_tp_op1(a, LOOM_TP_OP_NOT, topk_before(&g, x, topk_at(&g, g.V, pa))));
  loom_tp_expr *cur = loom_tpb_at(&b, g.C, 0);
  topk_swap(&g, pa, cur, "");
  loom_tpb_store_at(&b, g.C, 0, loom_tpb_dup(&b, pa));
  loom_tpb_else(&b);
  loom_tpb_store_at(&b, g.C, 0, topk_i64(&g, 0));
  loom_tpb_end_n(&b, 4); /* the ifs, s, r */
  /* the rest: 8 at a time against the root, then the tail */
  loom_tpb_if(&b, loom_tpb_cmp(&b, LOOM_TP_OP_GE, kk, one));
  const loom_sym_expr *rest = loom_sym_sub(cx, ax, kk), *tail = loom_sym_floormod(cx, rest, eight);
  const loom_sym_expr *c = loom_tpb_for(&b, "c", loom_sym_floordiv(cx, rest, eight), LOOM_TP_LOOP_SERIAL, true);
  if (c) {
    const loom_sym_expr *base = loom_sym_add(cx, kk, loom_sym_mul(cx, eight, c)); /* kk + 8*c */
    loom_tp_expr *th = loom_tpb_let(&b, "th", loom_tpb_at(&b, g.V, 0));
    loom_tp_expr *any = NULL;
    for (int l = 0; l < 8; l++) {
      xi[axis] = loom_tpb_idx(&b, loom_sym_add(cx, base, loom_sym_const(cx, l)));
      loom_tp_expr *e = topk_before(&g, loom_tpb_load(&b, X, xi), loom_tpb_dup(&b, th));
      any = any ? loom_tp_op2(a, LOOM_TP_OP_OR, any, e) : e;
    }
    loom_tpb_if(&b, any);
    const loom_sym_expr *l = loom_tpb_for(&b, "l", eight, LOOM_TP_LOOP_SERIAL, true);
    if (l) topk_offer(&g, loom_sym_add(cx, base, l), "c");
    loom_tpb_end_n(&b, 2); /* l, the if */
  }
  loom_tpb_end(&b); /* c */
  const loom_sym_expr *u = loom_tpb_for(&b, "u", tail, LOOM_TP_LOOP_SERIAL, true);
  if (u) topk_offer(&g, loom_sym_add(cx, loom_sym_sub(cx, ax, tail), u), "t");
  loom_tpb_end_n(&b, 2); /* u, the if kk >= 1 */
  /* the root kk times, from Y's end */
  const loom_sym_expr *j = loom_tpb_for(&b, "j", kk, LOOM_TP_LOOP_SERIAL, true);
  const loom_sym_expr *back = j ? loom_sym_sub(cx, loom_sym_sub(cx, kk, j), one) : NULL; /* kk - j - 1 */
  yj[axis] = loom_tpb_idx(&b, back);
  loom_tpb_store(&b, Y, yj, loom_tpb_at(&b, indices ? g.I : g.V, 0));
  loom_tp_expr *ib = loom_tpb_idx(&b, back);
  loom_tpb_store_at(&b, g.V, 0, loom_tpb_load(&b, g.V, &ib));
  loom_tpb_store_at(&b, g.I, 0, loom_tpb_load(&b, g.I, &ib));
  if (back) topk_sift_down(&g, back, "e");
  return loom_tpb_finish(&b, result);
}
