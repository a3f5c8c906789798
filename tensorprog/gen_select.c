/* gen_select.c — programs for the ops whose result extent is a count found in the data
 * (nonzero, unique, non_max_suppression). Each comes as a pair run on the same operands: a
 * `count` program whose one-element result legalization binds to the fresh extent
 * (tensor_to_shape + match_cast), and a program that fills the result of that extent. The
 * walks are serial (loops `reduce`): a running count orders the stores. */
#include <stdio.h>
#include <string.h>

#include "tensorprog/gen_internal.h"

/* ---- nonzero ---- */

/* `count`: S = (the number of nonzero elements of X); else Y (rank x nnz, i64) = their indices
 * in row-major order, Y's extent nnz bound by the caller from S. Both walk X serially (the
 * loops are `reduce`: the running count C orders the stores). */
loom_status loom_tp_gen_nonzero(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank, bool count,
                                loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  if (loom_dtype_is_lowp(t)) return LOOM_ERROR(INVALID_ARGUMENT, "nonzero of %s", loom_dtype_name(t));
  const char *const *d = loom_tpg_dims_d();
  char xi[256];
  loom_tpg_loop_indices(xi, sizeof xi, rank);
  const char *zero = t == LOOM_DTYPE_BOOL ? "false" : loom_dtype_is_float(t) ? "0.0" : "0";
  loom_strbuf sb;
  loom_tpg_open_x(&sb, name, rank, t);
  if (count) loom_strbuf_puts(&sb, ", S: Buffer[(1,), i64]) {\nS[0] = 0\n");
  else loom_strbuf_printf(&sb, ", Y: Buffer[(%d, nnz), i64]) {\nalloc C: Local[(1,), i64]\n", rank);
  int axes[LOOM_TP_GEN_MAX_RANK];
  loom_tpg_all_axes(axes, rank);
  loom_tpg_open_loops(&sb, axes, rank, "i", d, false, true);
  loom_strbuf_printf(&sb, "if X[%s] != %s {\n", rank ? xi : "", zero);
  if (count) loom_strbuf_puts(&sb, "S[0] = S[0] + 1\n");
  else {
    for (int k = 0; k < rank; k++) loom_strbuf_printf(&sb, "Y[%d, C[0]] = i%d\n", k, k);
    loom_strbuf_puts(&sb, "C[0] = C[0] + 1\n");
  }
  loom_strbuf_puts(&sb, "}\n");
  loom_tpg_close_program(&sb, rank);
  return loom_tpg_finish(a, cx, &sb, result);
}

/* ---- unique ---- */

/* Index text of X's rank-`rank` buffer: `at` on `axis`, loop vars <var><k> elsewhere. */
static void slice_index(char *out, size_t cap, int rank, int axis, const char *at, const char *var) {
  out[0] = '\0';
  for (int k = 0; k < rank; k++) {
    size_t n = strlen(out);
    if (k == axis) snprintf(out + n, cap - n, "%s%s", k ? ", " : "", at);
    else snprintf(out + n, cap - n, "%s%s%d", k ? ", " : "", var, k);
  }
}

/* Loops (reduce) over every axis but `axis`, named <var><k>. */
static int open_other(loom_strbuf *sb, int rank, int axis, const char *var) {
  const char *const *d = loom_tpg_dims_d();
  int n = 0;
  for (int k = 0; k < rank; k++)
    if (k != axis) loom_strbuf_printf(sb, "for %s%d in 0..%s reduce {\n", var, k, d[k]), n++;
  return n;
}

/* K[0] = the lexicographic comparison (-1, 0, 1) of slices a and b of X along `axis` (a NaN
 * differs from everything, and compares as larger, as the reference's). */
static void compare_slices(loom_strbuf *sb, int rank, int axis, const char *a, const char *b, const char *var) {
  char ia[256], ib[256];
  slice_index(ia, sizeof ia, rank, axis, a, var);
  slice_index(ib, sizeof ib, rank, axis, b, var);
  loom_strbuf_puts(sb, "K[0] = 0\n");
  int n = open_other(sb, rank, axis, var);
  loom_strbuf_printf(sb, "if K[0] == 0 && X[%s] != X[%s] {\nK[0] = select(X[%s] < X[%s], -1, 1)\n}\n", ia, ib, ia, ib);
  loom_tpg_close_loops(sb, n);
}

loom_status loom_tp_gen_unique(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank, int axis, bool sorted,
                               loom_tp_unique_part part, loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  if (axis < 0 || axis >= rank) return LOOM_ERROR(INVALID_ARGUMENT, "unique axis %d of rank %d", axis, rank);
  if (t == LOOM_DTYPE_BOOL || loom_dtype_is_lowp(t)) return LOOM_ERROR(INVALID_ARGUMENT, "unique of %s", loom_dtype_name(t));
  const char *const *d = loom_tpg_dims_d();
  const char *N = d[axis];
  loom_strbuf sb;
  loom_tpg_open_x(&sb, name, rank, t);
  switch (part) {
    case LOOM_TP_UNIQUE_COUNT: loom_strbuf_puts(&sb, ", S: Buffer[(1,), i64]"); break;
    case LOOM_TP_UNIQUE_VALUES: {
      const char *yd[LOOM_TP_GEN_MAX_RANK];
      for (int k = 0; k < rank; k++) yd[k] = k == axis ? "u" : d[k];
      loom_strbuf_puts(&sb, ", Y: ");
      loom_tpg_buffer_type(&sb, yd, rank, t);
      break;
    }
    case LOOM_TP_UNIQUE_INVERSE: loom_strbuf_printf(&sb, ", Y: Buffer[(%s,), i64]", N); break;
    default: loom_strbuf_puts(&sb, ", Y: Buffer[(u,), i64]"); break;
  }
  /* G[i]: the first slice equal to slice i */
  loom_strbuf_printf(&sb, ") {\nalloc G: Local[(%s,), i64]\nalloc K: Local[(1,), i64]\nalloc R: Local[(%s,), i64]\n", N, N);
  loom_strbuf_printf(&sb, "for i in 0..%s reduce {\nG[i] = i\nfor j in 0..%s reduce {\nif j < i && G[i] == i {\n", N, N);
  compare_slices(&sb, rank, axis, "j", "i", "e");
  loom_strbuf_puts(&sb, "if K[0] == 0 {\nG[i] = j\n}\n}\n}\n}\n");
  if (part == LOOM_TP_UNIQUE_COUNT) {
    loom_strbuf_printf(&sb, "S[0] = 0\nfor i2 in 0..%s reduce {\nif G[i2] == i2 {\nS[0] = S[0] + 1\n}\n}\n}\n", N);
    return loom_tpg_finish(a, cx, &sb, result);
  }
  /* R[p] for a first slice p: its position among the distinct slices */
  loom_strbuf_printf(&sb, "for p in 0..%s reduce {\nif G[p] == p {\nR[p] = 0\nfor q in 0..%s reduce {\nif G[q] == q && q != p {\n", N, N);
  if (sorted) {
    compare_slices(&sb, rank, axis, "q", "p", "f");
    loom_strbuf_puts(&sb, "if K[0] < 0 {\nR[p] = R[p] + 1\n}\n");
  } else {
    loom_strbuf_puts(&sb, "if q < p {\nR[p] = R[p] + 1\n}\n");
  }
  loom_strbuf_puts(&sb, "}\n}\n}\n}\n");
  switch (part) {
    case LOOM_TP_UNIQUE_VALUES: {
      char iy[256], ix[256];
      slice_index(iy, sizeof iy, rank, axis, "R[v]", "w");
      slice_index(ix, sizeof ix, rank, axis, "v", "w");
      loom_strbuf_printf(&sb, "for v in 0..%s reduce {\nif G[v] == v {\n", N);
      int n = open_other(&sb, rank, axis, "w");
      loom_strbuf_printf(&sb, "Y[%s] = X[%s]\n", iy, ix);
      loom_tpg_close_loops(&sb, n);
      loom_strbuf_puts(&sb, "}\n}\n");
      break;
    }
    case LOOM_TP_UNIQUE_FIRST: loom_strbuf_printf(&sb, "for v in 0..%s reduce {\nif G[v] == v {\nY[R[v]] = v\n}\n}\n", N); break;
    case LOOM_TP_UNIQUE_INVERSE: loom_strbuf_printf(&sb, "for v in 0..%s reduce {\nY[v] = R[G[v]]\n}\n", N); break;
    default:
      loom_strbuf_printf(&sb, "for v in 0..%s reduce {\nif G[v] == v {\nY[R[v]] = 0\n}\n}\n", N);
      loom_strbuf_printf(&sb, "for v2 in 0..%s reduce {\nY[R[G[v2]]] = Y[R[G[v2]]] + 1\n}\n", N);
      break;
  }
  loom_strbuf_puts(&sb, "}\n");
  return loom_tpg_finish(a, cx, &sb, result);
}

/* ---- non_max_suppression ---- */

/* The one value of scalar operand `buf` (form: -1 absent, 0 rank 0, 1 shape (1,)) as f64 / i64 text. */
static void scalar_text(char *out, size_t cap, const char *buf, int form, const char *type, const char *dflt) {
  if (form < 0) snprintf(out, cap, "%s", dflt);
  else snprintf(out, cap, "%s(%s%s)", type, buf, form ? "[0]" : "[]");
}

static void scalar_param(loom_strbuf *sb, const char *buf, int form, loom_dtype t) {
  if (form == 0) loom_strbuf_printf(sb, ", %s: Buffer[(), %s]", buf, loom_dtype_name(t));
  else if (form == 1) loom_strbuf_printf(sb, ", %s: Buffer[(1,), %s]", buf, loom_dtype_name(t));
  else loom_strbuf_printf(sb, ", %s: Buffer[(0,), %s]", buf, loom_dtype_name(t));
}

/* Corners of box `at` of batch b as lets <p>y1, <p>x1, <p>y2, <p>x2 (f64). */
static void box_corners(loom_strbuf *sb, const char *p, const char *at, bool center) {
  char c[4][64];
  for (int k = 0; k < 4; k++) snprintf(c[k], sizeof c[k], "f64(BX[b, %s, %d])", at, k);
  if (center) {
    loom_strbuf_printf(sb, "let %sx1: f64 = %s - %s / 2.0\nlet %sx2: f64 = %s + %s / 2.0\n", p, c[0], c[2], p, c[0], c[2]);
    loom_strbuf_printf(sb, "let %sy1: f64 = %s - %s / 2.0\nlet %sy2: f64 = %s + %s / 2.0\n", p, c[1], c[3], p, c[1], c[3]);
  } else {
    loom_strbuf_printf(sb, "let %sy1: f64 = min(%s, %s)\nlet %sy2: f64 = max(%s, %s)\n", p, c[0], c[2], p, c[0], c[2]);
    loom_strbuf_printf(sb, "let %sx1: f64 = min(%s, %s)\nlet %sx2: f64 = max(%s, %s)\n", p, c[1], c[3], p, c[1], c[3]);
  }
}

loom_status loom_tp_gen_nms(loom_arena *a, loom_sym_ctx *cx, const char *name, const loom_dtype *types, const int *forms,
                            bool center, bool count, loom_tp_func **result) {
  for (int i = 0; i < 2; i++)
    if (!loom_dtype_is_float(types[i]) || loom_dtype_is_lowp(types[i]))
      return LOOM_ERROR(INVALID_ARGUMENT, "non_max_suppression operand %d of %s", i, loom_dtype_name(types[i]));
  char maxk[64], thr[64], sthr[64];
  scalar_text(maxk, sizeof maxk, "M", forms[0], "i64", "0");
  scalar_text(thr, sizeof thr, "I", forms[1], "f64", "0.0");
  scalar_text(sthr, sizeof sthr, "T", forms[2], "f64", "-inf");
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(BX: Buffer[(nb, n, 4), %s], SC: Buffer[(nb, nc, n), %s]", name, loom_dtype_name(types[0]),
                     loom_dtype_name(types[1]));
  scalar_param(&sb, "M", forms[0], types[2]);
  scalar_param(&sb, "I", forms[1], types[3]);
  scalar_param(&sb, "T", forms[2], types[4]);
  loom_strbuf_puts(&sb, count ? ", S: Buffer[(1,), i64]) {\nS[0] = 0\n" : ", Y: Buffer[(sel, 3), i64]) {\nalloc CNT: Local[(1,), i64]\n");
  loom_strbuf_puts(&sb, "alloc U: Local[(n,), bool]\nalloc KP: Local[(n,), i64]\nalloc NK: Local[(1,), i64]\n"
                        "alloc BS: Local[(1,), i64]\nalloc KEEP: Local[(1,), bool]\n");
  loom_strbuf_printf(&sb, "let maxk: i64 = %s\nlet thr: f64 = %s\nlet sthr: f64 = %s\n", maxk, thr, sthr);
  loom_strbuf_puts(&sb, "for b in 0..nb reduce {\nfor c in 0..nc reduce {\nNK[0] = 0\nfor i0 in 0..n reduce {\nU[i0] = false\n}\n");
  /* each step takes the best unused box above the threshold (ties: the lower index) */
  loom_strbuf_puts(&sb, "for st in 0..n reduce {\nBS[0] = -1\nfor i in 0..n reduce {\nif !U[i] && f64(SC[b, c, i]) > sthr {\n"
                        "if BS[0] < 0 {\nBS[0] = i\n} else {\nif f64(SC[b, c, i]) > f64(SC[b, c, BS[0]]) {\nBS[0] = i\n}\n}\n}\n}\n");
  loom_strbuf_puts(&sb, "if BS[0] >= 0 && NK[0] < maxk {\nU[BS[0]] = true\nKEEP[0] = true\nfor q in 0..n reduce {\n"
                        "if q < NK[0] && KEEP[0] {\n");
  box_corners(&sb, "a", "BS[0]", center);
  box_corners(&sb, "k", "KP[q]", center);
  loom_strbuf_puts(&sb, "let iw: f64 = min(ax2, kx2) - max(ax1, kx1)\nlet ih: f64 = min(ay2, ky2) - max(ay1, ky1)\n"
                        "let inter: f64 = iw * ih\n"
                        "let uni: f64 = (ax2 - ax1) * (ay2 - ay1) + (kx2 - kx1) * (ky2 - ky1) - inter\n"
                        "let iou: f64 = select(iw <= 0.0 || ih <= 0.0, 0.0, select(uni > 0.0, inter / uni, 0.0))\n"
                        "if iou > thr {\nKEEP[0] = false\n}\n}\n}\n");
  loom_strbuf_puts(&sb, "if KEEP[0] {\nKP[NK[0]] = BS[0]\nNK[0] = NK[0] + 1\n");
  if (count) loom_strbuf_puts(&sb, "S[0] = S[0] + 1\n");
  else loom_strbuf_puts(&sb, "Y[CNT[0], 0] = b\nY[CNT[0], 1] = c\nY[CNT[0], 2] = BS[0]\nCNT[0] = CNT[0] + 1\n");
  loom_strbuf_puts(&sb, "}\n}\n}\n}\n}\n}\n");
  return loom_tpg_finish(a, cx, &sb, result);
}
