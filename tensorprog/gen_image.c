/* gen_image.c — generators of the image-sampling programs: ONNX Resize (N-d; nearest, linear and
 * cubic, every coordinate transformation mode) and resize2d.
 *
 * Resize is separable: for each resized output axis k a source coordinate x_k (from the output
 * index, the scale S[k] and, for tf_crop_and_resize, the roi R) gives a first tap b_k and per-tap
 * weights c_k_j; the output is the product-form sum over the taps of every resized axis of the
 * weights times the input at the clamped tap indices (the reference pads with edge values). The
 * per-axis values are lets inside that axis's loop, so they are computed once per output index.
 * Scales and roi are buffers read at run time: the program depends on the modes, the dtypes, the
 * rank and which axes are resized, never on the shapes or the scale values.
 *
 * Resize with run-time scales or sizes (one value per resized axis) adds three small programs
 * without loops: the output extents (bound by legalization before the resize runs), the
 * full-rank scales and the full-rank roi that the resize program reads. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/strbuf.h"
#include "tensorprog/gen_internal.h"

/* A float literal of dtype f64 that parses back to `v` exactly. */
static void lit(char *out, size_t cap, double v) {
  if (isnan(v)) snprintf(out, cap, "nanf64");
  else if (isinf(v)) snprintf(out, cap, "%sinff64", v < 0 ? "-" : "");
  else {
    snprintf(out, cap, "%.17g", v);
    if (!strpbrk(out, ".eE")) strncat(out, ".0", cap - strlen(out) - 1);
    strncat(out, "f64", cap - strlen(out) - 1);
  }
}

/* The reference's cubic kernel weight of the f64 let `u` (already |distance|), with coefficient A. */
static void cubic_weight(loom_strbuf *sb, const char *u, const char *A) {
  loom_strbuf_printf(sb,
                     "select(%s <= 1.0f64, ((%s + 2.0f64) * %s - (%s + 3.0f64)) * %s * %s + 1.0f64, "
                     "select(%s < 2.0f64, ((%s * %s - 5.0f64 * %s) * %s + 8.0f64 * %s) * %s - 4.0f64 * %s, 0.0f64))",
                     u, A, u, A, u, u, u, A, u, A, u, A, u, A);
}

/* The source coordinate x<k> of output index i<k> (ONNX's coordinate transformation modes). */
static void coordinate(loom_strbuf *sb, const loom_tp_resize *rz, int k, int rank) {
  switch (rz->coord) {
    case LOOM_TP_RESIZE_HALF_PIXEL:
      loom_strbuf_printf(sb, "(f64(i%d) + 0.5f64) / sc%d - 0.5f64", k, k);
      break;
    case LOOM_TP_RESIZE_HALF_PIXEL_SYMMETRIC:
      /* ONNX's a/2 * (1 - d / (s * a)) + (i + 0.5) / s - 0.5 rearranged so only the division
       * and the last sum round (integer coordinates stay exact); the same as graph/op_image.c */
      loom_strbuf_printf(sb, "(ex%d - 1.0f64) / 2.0f64 + (f64(i%d) + 0.5f64 - f64(d%d) / 2.0f64) / sc%d", k, k, k, k);
      break;
    case LOOM_TP_RESIZE_PYTORCH_HALF_PIXEL:
      loom_strbuf_printf(sb, "select(ow%d == 1.0f64, -0.5f64, (f64(i%d) + 0.5f64) / sc%d - 0.5f64)", k, k, k);
      break;
    case LOOM_TP_RESIZE_ALIGN_CORNERS:
      loom_strbuf_printf(sb, "select(ow%d == 1.0f64, 0.0f64, f64(i%d) * (ex%d - 1.0f64) / (ow%d - 1.0f64))", k, k, k, k);
      break;
    case LOOM_TP_RESIZE_ASYMMETRIC:
      loom_strbuf_printf(sb, "f64(i%d) / sc%d", k, k);
      break;
    case LOOM_TP_RESIZE_TF_CROP_AND_RESIZE: {
      char lo[32], hi[32];
      snprintf(lo, sizeof lo, "f64(R[%d])", k);
      snprintf(hi, sizeof hi, "f64(R[%d])", rank + k);
      loom_strbuf_printf(sb,
                         "select(ow%d == 1.0f64, (%s - %s) * (ex%d - 1.0f64) / 2.0f64, "
                         "f64(i%d) * (%s - %s) * (ex%d - 1.0f64) / (ow%d - 1.0f64)) + %s * (ex%d - 1.0f64)",
                         k, hi, lo, k, k, hi, lo, k, k, lo, k);
      break;
    }
  }
}

/* Taps per resized axis. */
static int taps_of(const loom_tp_resize *rz) { return rz->mode == LOOM_TP_RESIZE_CUBIC ? 4 : rz->mode == LOOM_TP_RESIZE_LINEAR ? 2 : 1; }

/* The lets of resized axis k, at the top of its loop. */
static void axis_lets(loom_strbuf *sb, const loom_tp_resize *rz, int k, int rank, const char *A) {
  loom_strbuf_printf(sb, "let sc%d: f64 = f64(S[%d])\n", k, k);
  loom_strbuf_printf(sb, "let ex%d: f64 = f64(a%d)\n", k, k);
  loom_strbuf_printf(sb, "let ow%d: f64 = sc%d * ex%d\n", k, k, k);
  loom_strbuf_printf(sb, "let x%d: f64 = ", k);
  coordinate(sb, rz, k, rank);
  loom_strbuf_printf(sb, "\nlet fl%d: f64 = floor(x%d)\n", k, k);
  /* the fractional position, 1 at integer positions (as the reference) */
  loom_strbuf_printf(sb, "let q%d: f64 = select(x%d == fl%d, 1.0f64, x%d - fl%d)\n", k, k, k, k, k);
  int n = rz->mode == LOOM_TP_RESIZE_CUBIC ? 4 : 2;
  /* the first of the n neighbours: floor(x) - n/2, one further right when x is not an integer */
  loom_strbuf_printf(sb, "let b%d: i64 = i64(fl%d) - %d + select(x%d == fl%d, 0, 1)\n", k, k, n / 2, k, k);
  if (rz->coord == LOOM_TP_RESIZE_TF_CROP_AND_RESIZE)
    loom_strbuf_printf(sb, "let e%d: bool = x%d < 0.0f64 || x%d > ex%d - 1.0f64\n", k, k, k, k);
  if (rz->mode == LOOM_TP_RESIZE_NEAREST) {
    /* the weights are one-hot over the two neighbours: the second is taken when ... */
    const char *second = "";
    switch (rz->nearest) {
      case LOOM_TP_RESIZE_ROUND_PREFER_FLOOR: second = "q%d > 0.5f64"; break;
      case LOOM_TP_RESIZE_ROUND_PREFER_CEIL: second = "q%d >= 0.5f64"; break;
      case LOOM_TP_RESIZE_FLOOR: second = "q%d == 1.0f64"; break; /* only at integer positions */
      case LOOM_TP_RESIZE_CEIL: second = "true"; break;
    }
    loom_strbuf_printf(sb, "let t%d_0: i64 = min(max(b%d + select(", k, k);
    loom_strbuf_printf(sb, second, k);
    loom_strbuf_printf(sb, ", 1, 0), 0), a%d - 1)\n", k);
    return;
  }
  for (int j = 0; j < n; j++) {
    loom_strbuf_printf(sb, "let t%d_%d: i64 = min(max(b%d + %d, 0), a%d - 1)\n", k, j, k, j, k);
    if (rz->mode == LOOM_TP_RESIZE_LINEAR) {
      if (j == 0) loom_strbuf_printf(sb, "let w%d_0: f64 = 1.0f64 - q%d\n", k, k);
      else loom_strbuf_printf(sb, "let w%d_1: f64 = q%d\n", k, k);
    } else {
      static const char *const dist[4] = {"q%d + 1.0f64", "q%d", "1.0f64 - q%d", "2.0f64 - q%d"};
      loom_strbuf_printf(sb, "let u%d_%d: f64 = abs(", k, j);
      loom_strbuf_printf(sb, dist[j], k);
      loom_strbuf_printf(sb, ")\nlet w%d_%d: f64 = ", k, j);
      char u[16];
      snprintf(u, sizeof u, "u%d_%d", k, j);
      cubic_weight(sb, u, A);
      loom_strbuf_putc(sb, '\n');
    }
  }
  if (rz->exclude_outside) {
    /* taps outside the input get weight 0; the rest are renormalised (a zero sum counts as 1) */
    for (int j = 0; j < n; j++)
      loom_strbuf_printf(sb, "let v%d_%d: f64 = select(b%d + %d >= 0 && b%d + %d < a%d, w%d_%d, 0.0f64)\n", k, j, k, j, k, j, k,
                         k, j);
    loom_strbuf_printf(sb, "let m%d: f64 = ", k);
    for (int j = 0; j < n; j++) loom_strbuf_printf(sb, "%sv%d_%d", j ? " + " : "", k, j);
    loom_strbuf_printf(sb, "\nlet z%d: f64 = select(m%d == 0.0f64, 1.0f64, m%d)\n", k, k, k);
    for (int j = 0; j < n; j++) loom_strbuf_printf(sb, "let c%d_%d: f64 = v%d_%d / z%d\n", k, j, k, j, k);
  } else {
    for (int j = 0; j < n; j++) loom_strbuf_printf(sb, "let c%d_%d: f64 = w%d_%d\n", k, j, k, j);
  }
}

loom_status loom_tp_gen_resize(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank,
                               const loom_tp_resize *rz, loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  if (rank < 1) return LOOM_ERROR(INVALID_ARGUMENT, "resize: rank 0");
  if (rz->mode != LOOM_TP_RESIZE_NEAREST && !loom_dtype_is_float(t))
    return LOOM_ERROR(INVALID_ARGUMENT, "resize: interpolation of %s data is not supported", loom_dtype_name(t));
  if (rz->mode == LOOM_TP_RESIZE_NEAREST && rz->exclude_outside)
    return LOOM_ERROR(INVALID_ARGUMENT, "resize: exclude_outside with mode nearest is not supported");
  if (!loom_dtype_is_float(rz->scale_t) || (rz->coord == LOOM_TP_RESIZE_TF_CROP_AND_RESIZE && !loom_dtype_is_float(rz->roi_t)))
    return LOOM_ERROR(INVALID_ARGUMENT, "resize: scales and roi must be float tensors");
  int n = taps_of(rz), terms = 1;
  for (int k = 0; k < rank; k++)
    if (rz->axes >> k & 1) terms *= n;
  if (terms > 256) return LOOM_ERROR(INVALID_ARGUMENT, "resize: %d taps per output element (at most 256)", terms);
  bool crop = rz->coord == LOOM_TP_RESIZE_TF_CROP_AND_RESIZE;
  const char *tn = loom_dtype_name(t);
  char A[40], extrap[40];
  lit(A, sizeof A, rz->cubic_a);
  lit(extrap, sizeof extrap, rz->extrapolation);
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  /* X's resized axes are a<k>; the others share Y's extent d<k> */
  loom_strbuf_printf(&sb, "prim @%s(X: Buffer[(", name);
  for (int k = 0; k < rank; k++) loom_strbuf_printf(&sb, "%s%c%d", k ? ", " : "", rz->axes >> k & 1 ? 'a' : 'd', k);
  loom_strbuf_printf(&sb, "), %s], S: Buffer[(%d,), %s], ", tn, rank, loom_dtype_name(rz->scale_t));
  if (crop) loom_strbuf_printf(&sb, "R: Buffer[(%d,), %s], ", 2 * rank, loom_dtype_name(rz->roi_t));
  loom_strbuf_puts(&sb, "Y: Buffer[(");
  for (int k = 0; k < rank; k++) loom_strbuf_printf(&sb, "%sd%d", k ? ", " : "", k);
  loom_strbuf_printf(&sb, "), %s]) {\n", tn);
  for (int k = 0; k < rank; k++) {
    loom_strbuf_printf(&sb, "for i%d in 0..d%d%s {\n", k, k, k == 0 ? " parallel" : "");
    if (rz->axes >> k & 1) axis_lets(&sb, rz, k, rank, A);
  }
  char yi[256];
  loom_tpg_loop_indices(yi, sizeof yi, rank);
  loom_strbuf_printf(&sb, "Y[%s] = ", yi);
  if (crop) {
    loom_strbuf_puts(&sb, "select(");
    bool first = true;
    for (int k = 0; k < rank; k++)
      if (rz->axes >> k & 1) {
        loom_strbuf_printf(&sb, "%se%d", first ? "" : " || ", k);
        first = false;
      }
    if (first) loom_strbuf_puts(&sb, "false");
    loom_strbuf_printf(&sb, ", %s(%s), ", tn, extrap);
  }
  if (rz->mode != LOOM_TP_RESIZE_NEAREST) loom_strbuf_printf(&sb, "%s(", tn);
  /* one term per combination of taps (odometer over the resized axes) */
  int tap[LOOM_TP_GEN_MAX_RANK] = {0};
  for (int term = 0; term < terms; term++) {
    if (term) loom_strbuf_puts(&sb, " + ");
    if (rz->mode != LOOM_TP_RESIZE_NEAREST) {
      for (int k = 0; k < rank; k++)
        if (rz->axes >> k & 1) loom_strbuf_printf(&sb, "c%d_%d * ", k, tap[k]);
      loom_strbuf_puts(&sb, "f64(");
    }
    loom_strbuf_puts(&sb, "X[");
    for (int k = 0; k < rank; k++) {
      if (k) loom_strbuf_puts(&sb, ", ");
      if (rz->axes >> k & 1) loom_strbuf_printf(&sb, "t%d_%d", k, tap[k]);
      else loom_strbuf_printf(&sb, "i%d", k);
    }
    loom_strbuf_puts(&sb, "]");
    if (rz->mode != LOOM_TP_RESIZE_NEAREST) loom_strbuf_puts(&sb, ")");
    for (int k = rank - 1; k >= 0; k--) {
      if (!(rz->axes >> k & 1)) continue;
      if (++tap[k] < n) break;
      tap[k] = 0;
    }
  }
  if (rz->mode != LOOM_TP_RESIZE_NEAREST) loom_strbuf_puts(&sb, ")");
  if (crop) loom_strbuf_puts(&sb, ")");
  loom_strbuf_putc(&sb, '\n');
  loom_tpg_close_program(&sb, rank);
  return loom_tpg_finish(a, cx, &sb, result);
}

/* ---- resize with antialias ---------------------------------------------------------------------- */

/* Antialiased linear / cubic resize (downscaling widens the filter by 1 / scale, so the tap
 * count depends on the scale): the reference resizes one axis at a time, and so do these
 * programs. T = the taps per axis from the scales: 2 - 2 * (floor(-support / min(s, 1)) + 1),
 * support 1 (linear) or 2 (cubic); -1 for a scale not > 0 or below 2^-20. */
loom_status loom_tp_gen_resize_aa_taps(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype scale_t, int rank,
                                       loom_tp_resize_mode mode, loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  if (mode == LOOM_TP_RESIZE_NEAREST || !loom_dtype_is_float(scale_t))
    return LOOM_ERROR(INVALID_ARGUMENT, "resize antialias: mode nearest or scales of %s", loom_dtype_name(scale_t));
  const char *sup = mode == LOOM_TP_RESIZE_CUBIC ? "2.0f64" : "1.0f64";
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(S: Buffer[(%d,), %s], T: Buffer[(%d,), i64]) {\n", name, rank, loom_dtype_name(scale_t), rank);
  for (int k = 0; k < rank; k++) {
    loom_strbuf_printf(&sb, "let s%d: f64 = f64(S[%d])\n", k, k);
    loom_strbuf_printf(&sb, "T[%d] = select(!(s%d >= 0.00000095367431640625f64), -1, 2 - 2 * (i64(floor(-%s / min(s%d, 1.0f64))) + 1))\n",
                       k, k, sup, k);
  }
  loom_strbuf_puts(&sb, "}\n");
  return loom_tpg_finish(a, cx, &sb, result);
}

/* One axis of an antialiased resize: Y = X resized along `axis` (X's extent a<axis>, Y's
 * d<axis>; the other axes equal), with the i64 scalar n the axis's tap count (from the taps
 * program); the weights of the n taps are the widened filter at the tap distances times the
 * scale, normalised by their sum (with exclude_outside, of those inside X). tin / tout: X's and
 * Y's dtypes (the chain keeps f64 between axes, as the reference). */
loom_status loom_tp_gen_resize_aa_axis(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype tin, loom_dtype tout, int rank,
                                       int axis, const loom_tp_resize *rz, loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  if (axis < 0 || axis >= rank || rz->mode == LOOM_TP_RESIZE_NEAREST || !loom_dtype_is_float(tin) || !loom_dtype_is_float(tout))
    return LOOM_ERROR(INVALID_ARGUMENT, "resize antialias: axis %d of rank %d, %s to %s", axis, rank, loom_dtype_name(tin),
                      loom_dtype_name(tout));
  bool crop = rz->coord == LOOM_TP_RESIZE_TF_CROP_AND_RESIZE;
  const char *const *d = loom_tpg_dims_d();
  char A[40], extrap[40], xi[256] = "", yi[256];
  lit(A, sizeof A, rz->cubic_a);
  lit(extrap, sizeof extrap, rz->extrapolation);
  int k = axis;
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(X: Buffer[(", name);
  for (int i = 0; i < rank; i++) loom_strbuf_printf(&sb, "%s%c%d", i ? ", " : "", i == k ? 'a' : 'd', i);
  loom_strbuf_printf(&sb, "), %s], S: Buffer[(%d,), %s], ", loom_dtype_name(tin), rank, loom_dtype_name(rz->scale_t));
  if (crop) loom_strbuf_printf(&sb, "R: Buffer[(%d,), %s], ", 2 * rank, loom_dtype_name(rz->roi_t));
  loom_strbuf_puts(&sb, "n: i64, Y: ");
  loom_tpg_buffer_type(&sb, d, rank, tout);
  loom_strbuf_puts(&sb, ") {\n");
  int axes[LOOM_TP_GEN_MAX_RANK];
  loom_tpg_all_axes(axes, rank);
  loom_tpg_open_loops(&sb, axes, rank, "i", d, true, false);
  loom_strbuf_printf(&sb, "let sc%d: f64 = f64(S[%d])\nlet ex%d: f64 = f64(a%d)\nlet ow%d: f64 = sc%d * ex%d\nlet x%d: f64 = ", k, k, k, k,
                     k, k, k, k);
  coordinate(&sb, rz, k, rank);
  loom_strbuf_printf(&sb, "\nlet fl%d: f64 = floor(x%d)\nlet q%d: f64 = select(x%d == fl%d, 1.0f64, x%d - fl%d)\n", k, k, k, k, k, k, k);
  loom_strbuf_printf(&sb, "let b%d: i64 = i64(fl%d) - n // 2 + select(x%d == fl%d, 0, 1)\n", k, k, k, k);
  loom_strbuf_printf(&sb, "let s%d: f64 = min(sc%d, 1.0f64)\nlet st%d: f64 = floor(-%s / s%d) + 1.0f64\n", k, k, k,
                     rz->mode == LOOM_TP_RESIZE_CUBIC ? "2.0f64" : "1.0f64", k);
  loom_strbuf_puts(&sb, "alloc acc: Local[(2,), f64]\nacc[0] = 0.0f64\nacc[1] = 0.0f64\nfor j in 0..n reduce {\n");
  loom_strbuf_printf(&sb, "let tj: f64 = (st%d + f64(j) - q%d) * s%d\n", k, k, k);
  if (rz->mode == LOOM_TP_RESIZE_LINEAR) loom_strbuf_puts(&sb, "let wj: f64 = max(0.0f64, min(1.0f64, 1.0f64 - abs(tj)))\n");
  else {
    loom_strbuf_puts(&sb, "let uj: f64 = abs(tj)\nlet wj: f64 = ");
    cubic_weight(&sb, "uj", A);
    loom_strbuf_putc(&sb, '\n');
  }
  if (rz->exclude_outside) loom_strbuf_printf(&sb, "let wk: f64 = select(b%d + j >= 0 && b%d + j < a%d, wj, 0.0f64)\n", k, k, k);
  else loom_strbuf_puts(&sb, "let wk: f64 = wj\n");
  for (int i = 0; i < rank; i++) {
    size_t len = strlen(xi);
    if (i == k) snprintf(xi + len, sizeof xi - len, "%smin(max(b%d + j, 0), a%d - 1)", i ? ", " : "", k, k);
    else snprintf(xi + len, sizeof xi - len, "%si%d", i ? ", " : "", i);
  }
  loom_strbuf_printf(&sb, "acc[0] = acc[0] + wk\nacc[1] = acc[1] + wk * f64(X[%s])\n}\n", xi);
  loom_tpg_loop_indices(yi, sizeof yi, rank);
  loom_strbuf_printf(&sb, "Y[%s] = %s(", yi, loom_dtype_name(tout));
  if (crop) loom_strbuf_printf(&sb, "select(x%d < 0.0f64 || x%d > ex%d - 1.0f64, %s, ", k, k, k, extrap);
  loom_strbuf_puts(&sb, "acc[1] / select(acc[0] == 0.0f64, 1.0f64, acc[0])");
  if (crop) loom_strbuf_puts(&sb, ")");
  loom_strbuf_puts(&sb, ")\n");
  loom_tpg_close_program(&sb, rank);
  return loom_tpg_finish(a, cx, &sb, result);
}

/* ---- resize with run-time scales or sizes ---------------------------------------------------- */

/* The resized axes must be distinct axes of the rank; P float scales or i64 sizes. */
static loom_status rt_check(int rank, const loom_tp_resize_rt *rt) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  if (rank < 1 || rt->na < 0 || rt->na > rank) return LOOM_ERROR(INVALID_ARGUMENT, "resize: %d resized axes for rank %d", rt->na, rank);
  unsigned seen = 0;
  for (int j = 0; j < rt->na; j++) {
    int ax = rt->axes[j];
    if (ax < 0 || ax >= rank || (seen >> ax & 1)) return LOOM_ERROR(INVALID_ARGUMENT, "resize: axis %d is out of range or repeated", ax);
    seen |= 1u << ax;
  }
  if (rt->sizes ? rt->p_t != LOOM_DTYPE_I64 : !loom_dtype_is_float(rt->p_t))
    return LOOM_ERROR(INVALID_ARGUMENT, "resize: %s of dtype %s", rt->sizes ? "sizes" : "scales", loom_dtype_name(rt->p_t));
  return LOOM_OK;
}

/* The position of axis k in P, or -1 when it is not resized. */
static int rt_index(const loom_tp_resize_rt *rt, int k) {
  for (int j = 0; j < rt->na; j++)
    if (rt->axes[j] == k) return j;
  return -1;
}

/* The head `prim @name(X: Buffer[(d0, ..), t], P: Buffer[(na,), p_t], <out>) {` and the lets s<j>,
 * the scale of resized axis j (sizes: P[j] / extent), and under a keep-aspect policy sel, the
 * one scale of every resized axis (the reference's min / max of the s<j>). */
static void rt_head(loom_strbuf *sb, const char *name, loom_dtype t, int rank, const loom_tp_resize_rt *rt, const char *out) {
  const char *const *d = loom_tpg_dims_d();
  loom_strbuf_printf(sb, "prim @%s(X: ", name);
  loom_tpg_buffer_type(sb, d, rank, t);
  loom_strbuf_printf(sb, ", P: Buffer[(%d,), %s], %s) {\n", rt->na, loom_dtype_name(rt->p_t), out);
  for (int j = 0; j < rt->na; j++) {
    /* an empty axis divides by 1: its size is refused (dims), the scale never used */
    if (rt->sizes) loom_strbuf_printf(sb, "let s%d: f64 = f64(P[%d]) / f64(max(%s, 1))\n", j, j, d[rt->axes[j]]);
    else loom_strbuf_printf(sb, "let s%d: f64 = f64(P[%d])\n", j, j);
  }
  if (!rt->sizes || rt->policy == LOOM_TP_RESIZE_STRETCH || !rt->na) return;
  const char *f = rt->policy == LOOM_TP_RESIZE_NOT_LARGER ? "min" : "max";
  loom_strbuf_puts(sb, "let sel: f64 = ");
  for (int j = 0; j + 1 < rt->na; j++) loom_strbuf_printf(sb, "%s(s%d, ", f, j);
  loom_strbuf_printf(sb, "s%d", rt->na - 1);
  for (int j = 0; j + 1 < rt->na; j++) loom_strbuf_putc(sb, ')');
  loom_strbuf_putc(sb, '\n');
}

loom_status loom_tp_gen_resize_dims(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank,
                                    const loom_tp_resize_rt *rt, loom_tp_func **result) {
  LOOM_PROPAGATE(rt_check(rank, rt));
  const char *const *d = loom_tpg_dims_d();
  char out[64];
  snprintf(out, sizeof out, "D: Buffer[(%d,), i64]", rank);
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  rt_head(&sb, name, t, rank, rt, out);
  /* what the reference refuses: a scale not > 0 (NaN too), a negative size, a size for an empty axis */
  loom_strbuf_puts(&sb, "let bad: bool = ");
  if (!rt->na) loom_strbuf_puts(&sb, "false");
  for (int j = 0; j < rt->na; j++) {
    if (j) loom_strbuf_puts(&sb, " || ");
    if (rt->sizes) loom_strbuf_printf(&sb, "P[%d] < 0 || %s == 0", j, d[rt->axes[j]]);
    else loom_strbuf_printf(&sb, "!(s%d > 0.0f64)", j);
  }
  loom_strbuf_putc(&sb, '\n');
  for (int k = 0; k < rank; k++) {
    int j = rt_index(rt, k);
    if (j < 0) loom_strbuf_printf(&sb, "D[%d] = %s\n", k, d[k]);
    else if (!rt->sizes) loom_strbuf_printf(&sb, "D[%d] = select(bad, -1, i64(s%d * f64(%s)))\n", k, j, d[k]);
    else if (rt->policy == LOOM_TP_RESIZE_STRETCH) loom_strbuf_printf(&sb, "D[%d] = select(bad, -1, P[%d])\n", k, j);
    else loom_strbuf_printf(&sb, "D[%d] = select(bad, -1, i64(sel * f64(%s) + 0.5f64))\n", k, d[k]);
  }
  loom_strbuf_puts(&sb, "}\n");
  return loom_tpg_finish(a, cx, &sb, result);
}

loom_status loom_tp_gen_resize_scales(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank,
                                      const loom_tp_resize_rt *rt, loom_tp_func **result) {
  LOOM_PROPAGATE(rt_check(rank, rt));
  char out[64];
  snprintf(out, sizeof out, "S: Buffer[(%d,), f64]", rank);
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  rt_head(&sb, name, t, rank, rt, out);
  bool one = rt->sizes && rt->policy != LOOM_TP_RESIZE_STRETCH;
  for (int k = 0; k < rank; k++) {
    int j = rt_index(rt, k);
    if (j < 0) loom_strbuf_printf(&sb, "S[%d] = 1.0f64\n", k);
    else if (one) loom_strbuf_printf(&sb, "S[%d] = sel\n", k);
    else loom_strbuf_printf(&sb, "S[%d] = s%d\n", k, j);
  }
  loom_strbuf_puts(&sb, "}\n");
  return loom_tpg_finish(a, cx, &sb, result);
}

loom_status loom_tp_gen_resize_roi(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype roi_t, int rank,
                                   const loom_tp_resize_rt *rt, loom_tp_func **result) {
  LOOM_PROPAGATE(rt_check(rank, rt));
  if (!loom_dtype_is_float(roi_t)) return LOOM_ERROR(INVALID_ARGUMENT, "resize: roi of dtype %s", loom_dtype_name(roi_t));
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(R: Buffer[(%d,), %s], Q: Buffer[(%d,), f64]) {\n", name, 2 * rt->na, loom_dtype_name(roi_t), 2 * rank);
  for (int k = 0; k < rank; k++) {
    int j = rt_index(rt, k);
    if (j < 0) loom_strbuf_printf(&sb, "Q[%d] = 0.0f64\nQ[%d] = 1.0f64\n", k, rank + k);
    else loom_strbuf_printf(&sb, "Q[%d] = f64(R[%d])\nQ[%d] = f64(R[%d])\n", k, j, rank + k, rt->na + j);
  }
  loom_strbuf_puts(&sb, "}\n");
  return loom_tpg_finish(a, cx, &sb, result);
}

/* resize2d (N, C, H, W) -> (N, C, y0, y1), as graph/op_conv.c's reference: nearest takes
 * floor(i * H / y0) (clamped), linear the half-pixel bilinear blend of the clamped corners. An
 * empty input plane gives zeros. */
loom_status loom_tp_gen_resize2d(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, bool linear,
                                 loom_tp_func **result) {
  if (linear && !loom_dtype_is_float(t))
    return LOOM_ERROR(INVALID_ARGUMENT, "resize2d: linear interpolation of %s data is not supported", loom_dtype_name(t));
  const char *tn = loom_dtype_name(t);
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb,
                     "prim @%s(X: Buffer[(n, c, h, w), %s], Y: Buffer[(n, c, y0, y1), %s]) {\n"
                     "for i0 in 0..n parallel {\nfor i1 in 0..c {\nfor j0 in 0..y0 {\nfor j1 in 0..y1 {\n"
                     "if h > 0 && w > 0 {\n",
                     name, tn, tn);
  if (!linear) {
    loom_strbuf_puts(&sb,
                     "let s0: i64 = min(i64(floor(f64(j0) * f64(h) / f64(y0))), h - 1)\n"
                     "let s1: i64 = min(i64(floor(f64(j1) * f64(w) / f64(y1))), w - 1)\n"
                     "Y[i0, i1, j0, j1] = X[i0, i1, s0, s1]\n");
  } else {
    for (int k = 0; k < 2; k++) {
      const char *in = k ? "w" : "h";
      loom_strbuf_printf(&sb,
                         "let f%d: f64 = max((f64(j%d) + 0.5f64) * f64(%s) / f64(y%d) - 0.5f64, 0.0f64)\n"
                         "let p%d: i64 = min(i64(f%d), %s - 1)\n"
                         "let q%d: i64 = min(p%d + 1, %s - 1)\n"
                         "let l%d: f64 = min(f%d - f64(p%d), 1.0f64)\n",
                         k, k, in, k, k, k, in, k, k, in, k, k, k);
    }
    loom_strbuf_printf(&sb,
                       "Y[i0, i1, j0, j1] = %s((1.0f64 - l0) * ((1.0f64 - l1) * f64(X[i0, i1, p0, p1]) + l1 * f64(X[i0, i1, p0, q1])) + "
                       "l0 * ((1.0f64 - l1) * f64(X[i0, i1, q0, p1]) + l1 * f64(X[i0, i1, q0, q1])))\n",
                       tn);
  }
  loom_strbuf_printf(&sb, "} else {\nY[i0, i1, j0, j1] = %s(0)\n}\n", tn);
  loom_tpg_close_program(&sb, 4);
  return loom_tpg_finish(a, cx, &sb, result);
}

/* Lets reflecting the f64 value `x` into [lo, hi] by the nearer border until it lies inside (the
 * reference's gs_reflect); the result is the let `rf<tag>`. */
static void reflect_lets(loom_strbuf *sb, const char *x, const char *lo, const char *hi, const char *tag) {
  loom_strbuf_printf(sb, "let rn%s: f64 = %s - %s\n", tag, hi, lo);
  loom_strbuf_printf(sb, "let dl%s: f64 = %s - %s\nlet kl%s: i64 = i64(dl%s / rn%s)\nlet rl%s: f64 = dl%s - f64(kl%s) * rn%s\n", tag, lo, x,
                     tag, tag, tag, tag, tag, tag, tag);
  loom_strbuf_printf(sb, "let dh%s: f64 = %s - %s\nlet kh%s: i64 = i64(dh%s / rn%s)\nlet rh%s: f64 = dh%s - f64(kh%s) * rn%s\n", tag, x, hi,
                     tag, tag, tag, tag, tag, tag, tag);
  loom_strbuf_printf(sb,
                     "let rf%s: f64 = select(%s < %s, select(kl%s %% 2 == 0, %s + rl%s, %s - rl%s), "
                     "select(%s > %s, select(kh%s %% 2 == 0, %s - rh%s, %s + rh%s), %s))\n",
                     tag, x, lo, tag, lo, tag, hi, tag, x, hi, tag, hi, tag, lo, tag, x);
}

loom_status loom_tp_gen_grid_sample(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, loom_dtype grid_t,
                                    const loom_tp_grid_sample *gs, loom_tp_func **result) {
  int ns = gs->n;
  if (ns < 1 || ns > 3) return LOOM_ERROR(INVALID_ARGUMENT, "grid_sample: %d spatial axes (1 to 3 supported)", ns);
  if (!loom_dtype_is_float(t) || !loom_dtype_is_float(grid_t))
    return LOOM_ERROR(INVALID_ARGUMENT, "grid_sample: operands of %s and %s (floats needed)", loom_dtype_name(t), loom_dtype_name(grid_t));
  int n = gs->mode == LOOM_TP_RESIZE_CUBIC ? 4 : gs->mode == LOOM_TP_RESIZE_LINEAR ? 2 : 1, terms = 1;
  for (int i = 0; i < ns; i++) terms *= n;
  const char *tn = loom_dtype_name(t);
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(X: Buffer[(n, c", name);
  for (int i = 0; i < ns; i++) loom_strbuf_printf(&sb, ", h%d", i);
  loom_strbuf_printf(&sb, "), %s], G: Buffer[(n", tn);
  for (int i = 0; i < ns; i++) loom_strbuf_printf(&sb, ", o%d", i);
  loom_strbuf_printf(&sb, ", %d), %s], Y: Buffer[(n, c", ns, loom_dtype_name(grid_t));
  for (int i = 0; i < ns; i++) loom_strbuf_printf(&sb, ", o%d", i);
  loom_strbuf_printf(&sb, "), %s]) {\nfor i0 in 0..n parallel {\n", tn);
  for (int i = 0; i < ns; i++) loom_strbuf_printf(&sb, "for j%d in 0..o%d {\n", i, i);
  char yi[128] = "i0, i1", gi[128] = "i0";
  for (int i = 0; i < ns; i++) {
    snprintf(yi + strlen(yi), sizeof yi - strlen(yi), ", j%d", i);
    snprintf(gi + strlen(gi), sizeof gi - strlen(gi), ", j%d", i);
  }
  /* an empty input plane: every tap is outside, the result 0 */
  loom_strbuf_puts(&sb, "if ");
  for (int i = 0; i < ns; i++) loom_strbuf_printf(&sb, "%sh%d > 0", i ? " && " : "", i);
  loom_strbuf_puts(&sb, " {\n");
  bool ac = gs->align_corners;
  for (int i = 0; i < ns; i++) {
    /* spatial axis i reads grid component ns - 1 - i (the grid lists x first) */
    loom_strbuf_printf(&sb, "let v%d: f64 = f64(G[%s, %d])\nlet dm%d: f64 = f64(h%d)\n", i, gi, ns - 1 - i, i, i);
    char lo[32], hi[32], c1[16];
    snprintf(lo, sizeof lo, "%s", ac ? "0.0f64" : "-0.5f64");
    snprintf(hi, sizeof hi, "hi%d", i);
    loom_strbuf_printf(&sb, "let hi%d: f64 = dm%d - %s\n", i, i, ac ? "1.0f64" : "0.5f64");
    /* the reference rounds the unnormalised coordinate to f32 */
    if (ac) loom_strbuf_printf(&sb, "let ca%d: f64 = f64(f32((v%d + 1.0f64) / 2.0f64 * (dm%d - 1.0f64)))\n", i, i, i);
    else loom_strbuf_printf(&sb, "let ca%d: f64 = f64(f32(((v%d + 1.0f64) * dm%d - 1.0f64) / 2.0f64))\n", i, i, i);
    if (gs->mode == LOOM_TP_RESIZE_NEAREST) loom_strbuf_printf(&sb, "let cb%d: f64 = round(ca%d)\n", i, i);
    else loom_strbuf_printf(&sb, "let cb%d: f64 = ca%d\n", i, i);
    snprintf(c1, sizeof c1, "cb%d", i);
    switch (gs->padding) {
      case LOOM_TP_GRID_ZEROS: loom_strbuf_printf(&sb, "let cc%d: f64 = cb%d\n", i, i); break;
      case LOOM_TP_GRID_BORDER:
        loom_strbuf_printf(&sb, "let cc%d: f64 = select(cb%d < %s || cb%d > %s, min(max(cb%d, 0.0f64), dm%d - 1.0f64), cb%d)\n", i, i, lo, i,
                           hi, i, i, i);
        break;
      case LOOM_TP_GRID_REFLECTION: {
        char tag[8];
        snprintf(tag, sizeof tag, "%d", i);
        reflect_lets(&sb, c1, lo, hi, tag);
        loom_strbuf_printf(&sb, "let cc%d: f64 = rf%d\n", i, i);
        break;
      }
    }
    if (gs->mode == LOOM_TP_RESIZE_NEAREST) {
      loom_strbuf_printf(&sb, "let b%d: i64 = i64(cc%d)\n", i, i);
    } else {
      loom_strbuf_printf(&sb, "let fl%d: f64 = floor(cc%d)\nlet q%d: f64 = cc%d - fl%d\nlet b%d: i64 = i64(fl%d)%s\n", i, i, i, i, i, i, i,
                         gs->mode == LOOM_TP_RESIZE_CUBIC ? " - 1" : "");
      if (gs->mode == LOOM_TP_RESIZE_LINEAR) {
        loom_strbuf_printf(&sb, "let w%d_0: f64 = 1.0f64 - q%d\nlet w%d_1: f64 = q%d\n", i, i, i, i);
      } else {
        static const char *const dist[4] = {"q%d + 1.0f64", "q%d", "1.0f64 - q%d", "2.0f64 - q%d"};
        for (int j = 0; j < 4; j++) {
          loom_strbuf_printf(&sb, "let u%d_%d: f64 = abs(", i, j);
          loom_strbuf_printf(&sb, dist[j], i);
          loom_strbuf_printf(&sb, ")\nlet w%d_%d: f64 = ", i, j);
          char u[16];
          snprintf(u, sizeof u, "u%d_%d", i, j);
          cubic_weight(&sb, u, "-0.75f64");
          loom_strbuf_putc(&sb, '\n');
        }
      }
    }
    for (int j = 0; j < n; j++) {
      /* the tap's index under the padding mode; ok: inside the input (else the tap adds nothing) */
      switch (gs->padding) {
        case LOOM_TP_GRID_ZEROS: loom_strbuf_printf(&sb, "let k%d_%d: i64 = b%d + %d\n", i, j, i, j); break;
        case LOOM_TP_GRID_BORDER: loom_strbuf_printf(&sb, "let k%d_%d: i64 = min(max(b%d + %d, 0), h%d - 1)\n", i, j, i, j, i); break;
        case LOOM_TP_GRID_REFLECTION: {
          char tag[16], x[32];
          snprintf(tag, sizeof tag, "%d_%d", i, j);
          snprintf(x, sizeof x, "f64(b%d + %d)", i, j);
          loom_strbuf_printf(&sb, "let p%d_%d: f64 = %s\n", i, j, x);
          snprintf(x, sizeof x, "p%d_%d", i, j);
          reflect_lets(&sb, x, lo, hi, tag);
          loom_strbuf_printf(&sb, "let k%d_%d: i64 = i64(rf%d_%d)\n", i, j, i, j);
          break;
        }
      }
      loom_strbuf_printf(&sb, "let ok%d_%d: bool = k%d_%d >= 0 && k%d_%d < h%d\nlet x%d_%d: i64 = min(max(k%d_%d, 0), h%d - 1)\n", i, j, i, j,
                         i, j, i, i, j, i, j, i);
    }
  }
  loom_strbuf_printf(&sb, "for i1 in 0..c {\nY[%s] = %s(", yi, tn);
  int tap[3] = {0, 0, 0};
  for (int term = 0; term < terms; term++) {
    if (term) loom_strbuf_puts(&sb, " + ");
    loom_strbuf_puts(&sb, "select(");
    for (int i = 0; i < ns; i++) loom_strbuf_printf(&sb, "%sok%d_%d", i ? " && " : "", i, tap[i]);
    loom_strbuf_puts(&sb, ", ");
    if (gs->mode != LOOM_TP_RESIZE_NEAREST)
      for (int i = 0; i < ns; i++) loom_strbuf_printf(&sb, "w%d_%d * ", i, tap[i]);
    loom_strbuf_puts(&sb, "f64(X[i0, i1");
    for (int i = 0; i < ns; i++) loom_strbuf_printf(&sb, ", x%d_%d", i, tap[i]);
    loom_strbuf_puts(&sb, "]), 0.0f64)");
    for (int i = ns - 1; i >= 0; i--) {
      if (++tap[i] < n) break;
      tap[i] = 0;
    }
  }
  loom_strbuf_printf(&sb, ")\n}\n} else {\nfor i1z in 0..c {\nY[i0, i1z");
  for (int i = 0; i < ns; i++) loom_strbuf_printf(&sb, ", j%d", i);
  loom_strbuf_printf(&sb, "] = %s(0)\n}\n}\n", tn);
  loom_tpg_close_program(&sb, ns + 1);
  return loom_tpg_finish(a, cx, &sb, result);
}
