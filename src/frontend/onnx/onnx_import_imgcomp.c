/* onnx_import_imgcomp.c — image ops composed of graph ops (so the compiled path has them too):
 * Pad's reflect / edge / wrap modes, CenterCropPad, MaxUnpool, DeformConv, RoiAlign, Col2Im,
 * AffineGrid and MelWeightMatrix (constant inputs). Each follows the ONNX reference operator (onnx/reference/ops). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx/onnx_import_internal.h"

#define MAXS 6 /* spatial axes at most */

/* ---- Pad modes ------------------------------------------------------------------------------ */

static loom_status dim_scalar(nctx *c, loom_dtype dt, const loom_sym_expr *n, int64_t add, loom_graph_expr **out);

/* The extent of input 0's axis k (constant or symbolic). */
static const loom_sym_expr *in_dim(const nctx *c, int k) {
  const loom_sinfo *s = c->args[0]->sinfo;
  return s && s->kind == LOOM_SINFO_TENSOR && s->dims && k < s->ndim ? s->dims[k] : NULL;
}

/* The indices that a padded axis of extent n (symbolic: its value at run time) gathers: j (i64, the
 * positions -b .. n + a - 1) mapped into [0, n) as oimp_pad_mode's table does -- edge clamps, wrap
 * takes j mod n, reflect folds j mod 2(n - 1), over a modulus of max(2(n - 1), 1) so that an extent
 * of 1 maps every j to 0. */
static loom_status pad_fold(nctx *c, const char *mode, loom_graph_expr *j, const loom_sym_expr *n, loom_graph_expr **idx) {
  loom_sym_ctx *cx = c->im->cx;
  loom_graph_expr *nt, *m, *lt, *per, *fold;
  if (!strcmp(mode, "edge")) {
    LOOM_PROPAGATE(dim_scalar(c, LOOM_DTYPE_I64, n, -1, &nt));
    LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_MAXIMUM, j, 0, &m));
    return oimp_op2(c, LOOM_GRAPH_OP_MINIMUM, m, nt, idx);
  }
  LOOM_PROPAGATE(dim_scalar(c, LOOM_DTYPE_I64, n, 0, &nt));
  if (!strcmp(mode, "wrap")) return oimp_op2(c, LOOM_GRAPH_OP_MOD, j, nt, idx);
  const loom_sym_expr *p = loom_sym_max(cx, loom_sym_mul(cx, loom_sym_const(cx, 2), loom_sym_sub(cx, n, loom_sym_const(cx, 1))),
                                        loom_sym_const(cx, 1));
  if (!p) return LOOM_OOM();
  LOOM_PROPAGATE(dim_scalar(c, LOOM_DTYPE_I64, p, 0, &per));
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MOD, j, per, &m));
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_LESS, m, nt, &lt));
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_SUB, per, m, &fold));
  return oimp_op3(c, LOOM_GRAPH_OP_WHERE, lt, m, fold, idx);
}

/* Pad mode on axis k of symbolic extent n with constant pads b, a: the gather of pad_fold's
 * indices for j = arange(-b, n + a) (a symbolic length: the result keeps n + a + b). */
static loom_status pad_mode_sym(nctx *c, const char *mode, int k, int64_t b, int64_t a, loom_graph_expr *x, bool last,
                                loom_graph_expr **out) {
  loom_sym_ctx *cx = c->im->cx;
  const loom_sym_expr *n = in_dim(c, k), *start = loom_sym_const(cx, -b), *end = loom_sym_add(cx, n, loom_sym_const(cx, a));
  if (!n || !start || !end) return LOOM_OOM();
  loom_graph_expr *j, *idx;
  oimp_add_attr(c, loom_graph_attr_syms(c->im->m, "start", 1, &start));
  oimp_add_attr(c, loom_graph_attr_syms(c->im->m, "end", 1, &end));
  oimp_add_attr(c, loom_graph_attr_dtype(c->im->m, "dtype", LOOM_DTYPE_I64));
  LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_ARANGE, 0, NULL, NULL, &j));
  LOOM_PROPAGATE(pad_fold(c, mode, j, n, &idx));
  oimp_add_attr(c, loom_graph_attr_int(c->im->m, "axis", k));
  return oimp_emit(c, LOOM_GRAPH_OP_TAKE, 2, (loom_graph_expr *[]){x, idx}, last ? c->n->outputs[0] : NULL, out);
}

loom_status oimp_pad_mode(nctx *c, const char *mode, const int64_t *pads, loom_graph_expr **out) {
  int r = oimp_in_rank(c, 0);
  loom_graph_expr *x = c->args[0];
  int last = -1;
  for (int k = 0; k < r; k++)
    if (pads[k] || pads[r + k]) last = k;
  if (last < 0) return *out = x, LOOM_OK;
  for (int k = 0; k <= last; k++) {
    int64_t b = pads[k], a = pads[r + k], n = oimp_const_dim(c, 0, k), len = b + n + a;
    if (!b && !a) continue;
    if (n < 0) {
      LOOM_PROPAGATE(pad_mode_sym(c, mode, k, b, a, x, k == last, &x));
      continue;
    }
    if (n == 0) return BAD(c->n, "mode '%s' cannot pad axis %d of extent 0", mode, k);
    if (len < 0) return BAD(c->n, "pads %lld and %lld remove more than the %lld elements of axis %d", (long long)b, (long long)a, (long long)n, k);
    loom_onnx_tensor *t = oimp_new_tensor(c->im, LOOM_DTYPE_I64, 1, &len);
    if (!t) return LOOM_OOM();
    int64_t *ix = t->data, per = 2 * (n - 1);
    for (int64_t i = 0; i < len; i++) {
      int64_t j = i - b, m;
      if (!strcmp(mode, "edge")) ix[i] = j < 0 ? 0 : j >= n ? n - 1 : j;
      else if (!strcmp(mode, "wrap")) ix[i] = (j % n + n) % n;
      else ix[i] = per ? ((m = (j % per + per) % per) < n ? m : per - m) : 0;
    }
    loom_graph_expr *args[2] = {x, oimp_const_of(c->im, t)};
    if (!args[1]) return LOOM_OOM();
    oimp_add_attr(c, loom_graph_attr_int(c->im->m, "axis", k));
    LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_TAKE, 2, args, k == last ? c->n->outputs[0] : NULL, &x));
  }
  *out = x;
  return LOOM_OK;
}

/* Pad in mode edge / reflect / wrap with pads known only at run time (input 1, a 1-D i64
 * tensor of static length 2 * na; axes absent or constant): per listed axis k of extent n
 * (constant or symbolic), the indices j = -b .. n + a - 1 (a run-time arange; b, a = pads[k],
 * pads[na + k]) are mapped into [0, n) by pad_fold and gathered along k. A negative pad crops. */
loom_status oimp_pad_mode_dyn(nctx *c, const char *mode, loom_graph_expr **out) {
  imp *im = c->im;
  int r = oimp_in_rank(c, 0);
  int64_t ax[16], np;
  size_t na = (size_t)r;
  if (r < 1 || r > 16) return UNSUP(c->n, "rank %d input", r);
  if (oimp_runtime_input(c, 3)) return UNSUP(c->n, "mode '%s' with axes known only at run time", mode);
  if (oimp_has_input(c, 3)) {
    LOOM_PROPAGATE(oimp_const_ints(c, 3, "axes", ax, 16, &na));
    LOOM_PROPAGATE(oimp_norm_axes(c, r, ax, na));
  } else
    for (int k = 0; k < r; k++) ax[k] = k;
  const loom_sinfo *si = c->args[1]->sinfo;
  if (si->kind != LOOM_SINFO_TENSOR || si->dtype != LOOM_DTYPE_I64 || si->ndim != 1 || !si->dims || !loom_sym_is_const(si->dims[0], &np))
    return UNSUP(c->n, "input 1 (pads) must be a constant or a 1-D i64 tensor of static length (it is computed at run time)");
  if (np != 2 * (int64_t)na) return BAD(c->n, "pads has %lld values for %zu axes", (long long)np, na);
  loom_graph_expr *x = c->args[0], *one = loom_graph_const_scalar(im->m, LOOM_DTYPE_I64, 1);
  if (!one) return LOOM_OOM();
  for (size_t k = 0; k < na; k++) {
    int64_t n = oimp_const_dim(c, 0, (int)ax[k]);
    if (n == 0) return BAD(c->n, "mode '%s' cannot pad axis %lld of extent 0", mode, (long long)ax[k]);
    const loom_sym_expr *ns = in_dim(c, (int)ax[k]);
    loom_graph_expr *nt;
    if (!ns) return LOOM_OOM();
    LOOM_PROPAGATE(dim_scalar(c, LOOM_DTYPE_I64, ns, 0, &nt));
    loom_graph_expr *kb = loom_graph_const_scalar(im->m, LOOM_DTYPE_I64, (double)k);
    loom_graph_expr *ka = loom_graph_const_scalar(im->m, LOOM_DTYPE_I64, (double)(na + k));
    if (!kb || !ka) return LOOM_OOM();
    loom_graph_expr *b, *a, *j, *idx;
    oimp_add_attr(c, loom_graph_attr_int(im->m, "axis", 0));
    LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_TAKE, 2, (loom_graph_expr *[]){c->args[1], kb}, NULL, &b));
    oimp_add_attr(c, loom_graph_attr_int(im->m, "axis", 0));
    LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_TAKE, 2, (loom_graph_expr *[]){c->args[1], ka}, NULL, &a));
    LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_NEG, b, &b));
    LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_ADD, a, nt, &a));
    LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_ARANGE, 3, (loom_graph_expr *[]){b, a, one}, NULL, &j));
    LOOM_PROPAGATE(pad_fold(c, mode, j, ns, &idx));
    oimp_add_attr(c, loom_graph_attr_int(im->m, "axis", ax[k]));
    LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_TAKE, 2, (loom_graph_expr *[]){x, idx}, k == na - 1 ? c->n->outputs[0] : NULL, &x));
  }
  *out = x;
  return LOOM_OK;
}

/* ---- CenterCropPad ------------------------------------------------------------------------- */

/* CenterCropPad with `shape` s known only at run time (a 1-D integer tensor of na values) over
 * axes ax of constant extents n: a run-time slice [max(n - s, 0) / 2, + min(n, s)) then a
 * run-time zero pad of max(s - n, 0), the smaller half before (graph ops strided_slice and pad
 * with tensor operands, legalized by their expand hooks). A negative s gives extent 0. */
static loom_status center_crop_pad_dyn(nctx *c, size_t na, const int64_t *ax, loom_graph_expr **out) {
  imp *im = c->im;
  const loom_sinfo *si = c->args[1]->sinfo;
  int64_t len, nav = (int64_t)na;
  if (si->kind != LOOM_SINFO_TENSOR || (si->dtype != LOOM_DTYPE_I64 && si->dtype != LOOM_DTYPE_I32) || si->ndim != 1 ||
      !si->dims || !loom_sym_is_const(si->dims[0], &len))
    return UNSUP(c->n, "input 1 (shape) must be a constant or a 1-D integer tensor of static length (it is computed at run time)");
  if (len != nav) return BAD(c->n, "shape has %lld values for %zu axes", (long long)len, na);
  loom_onnx_tensor *nt = oimp_new_tensor(im, LOOM_DTYPE_I64, 1, &nav), *at = oimp_new_tensor(im, LOOM_DTYPE_I64, 1, &nav);
  if (!nt || !at) return LOOM_OOM();
  for (size_t k = 0; k < na; k++) {
    int64_t n = oimp_const_dim(c, 0, (int)ax[k]);
    if (n < 0) return UNSUP(c->n, "axis %lld needs a constant extent", (long long)ax[k]);
    ((int64_t *)nt->data)[k] = n, ((int64_t *)at->data)[k] = ax[k];
  }
  loom_graph_expr *n = oimp_const_of(im, nt), *axes = oimp_const_of(im, at), *s = c->args[1];
  if (!n || !axes) return LOOM_OOM();
  if (si->dtype != LOOM_DTYPE_I64) {
    oimp_add_attr(c, loom_graph_attr_dtype(im->m, "dtype", LOOM_DTYPE_I64));
    LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_CAST, s, &s));
  }
  loom_graph_expr *sz, *start, *keep, *end, *p, *before, *after, *pads, *x;
  LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_MAXIMUM, s, 0, &sz));
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_SUB, n, sz, &start));
  LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_MAXIMUM, start, 0, &start));
  LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_DIV, start, 2, &start));
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MINIMUM, n, sz, &keep));
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_ADD, start, keep, &end));
  LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_STRIDED_SLICE, 4, (loom_graph_expr *[]){c->args[0], start, end, axes}, NULL, &x));
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_SUB, sz, n, &p));
  LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_MAXIMUM, p, 0, &p));
  LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_DIV, p, 2, &before));
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_SUB, p, before, &after));
  oimp_add_attr(c, loom_graph_attr_int(im->m, "axis", 0));
  LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_CONCAT, 2, (loom_graph_expr *[]){before, after}, NULL, &pads));
  loom_graph_expr *zero = loom_graph_const_scalar(im->m, c->args[0]->sinfo->dtype, 0);
  if (!zero) return LOOM_OOM();
  return oimp_emit(c, LOOM_GRAPH_OP_PAD, 4, (loom_graph_expr *[]){x, pads, zero, axes}, c->n->outputs[0], out);
}

/* Each listed axis of extent n becomes `shape`'s s: cropped to [(n - s) / 2, + s) when n > s,
 * zero-padded by (s - n) / 2 before and the rest after when n < s. */
static loom_status h_center_crop_pad(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e;
  imp *im = c->im;
  int r = oimp_in_rank(c, 0);
  if (r < 1 || r > 16) return UNSUP(c->n, "rank %d input", r);
  int64_t ax[16], sh[16], pads[32] = {0};
  size_t na, ns, nc = 0;
  bool present;
  const int64_t *av;
  LOOM_PROPAGATE(oimp_attr_ints(c, "axes", &av, &na, &present));
  if (present) {
    if (na > (size_t)r) return BAD(c->n, "axes has %zu entries for rank %d", na, r);
    memcpy(ax, av, na * sizeof *av);
    LOOM_PROPAGATE(oimp_norm_axes(c, r, ax, na));
  } else {
    na = (size_t)r;
    for (int k = 0; k < r; k++) ax[k] = k;
  }
  if (oimp_runtime_input(c, 1)) return center_crop_pad_dyn(c, na, ax, out);
  LOOM_PROPAGATE(oimp_const_ints(c, 1, "shape", sh, 16, &ns));
  if (ns != na) return BAD(c->n, "shape has %zu values for %zu axes", ns, na);
  int64_t cax[16];
  const loom_sym_expr *lo[16], *hi[16];
  bool pad = false;
  for (size_t k = 0; k < na; k++) {
    int64_t n = oimp_const_dim(c, 0, (int)ax[k]);
    if (sh[k] < 0) return BAD(c->n, "shape entry %zu is %lld", k, (long long)sh[k]);
    if (n < 0) return UNSUP(c->n, "axis %lld needs a constant extent", (long long)ax[k]);
    if (n > sh[k]) {
      cax[nc] = ax[k], lo[nc] = loom_sym_const(im->cx, (n - sh[k]) / 2), hi[nc] = loom_sym_const(im->cx, (n - sh[k]) / 2 + sh[k]);
      nc++;
    } else if (n < sh[k]) {
      pads[ax[k]] = (sh[k] - n) / 2, pads[r + ax[k]] = sh[k] - n - pads[ax[k]];
      pad = true;
    }
  }
  loom_graph_expr *x = c->args[0];
  if (nc) {
    oimp_add_attr(c, loom_graph_attr_ints(im->m, "axes", nc, cax));
    oimp_add_attr(c, loom_graph_attr_syms(im->m, "begin", nc, lo));
    oimp_add_attr(c, loom_graph_attr_syms(im->m, "end", nc, hi));
    LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_STRIDED_SLICE, 1, &x, pad ? NULL : c->n->outputs[0], &x));
  }
  if (pad) {
    oimp_add_attr(c, loom_graph_attr_ints(im->m, "pads", 2 * (size_t)r, pads));
    oimp_add_attr(c, loom_graph_attr_float(im->m, "value", 0));
    LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_PAD, 1, &x, c->n->outputs[0], &x));
  }
  *out = x;
  return LOOM_OK;
}

/* ---- MaxUnpool ----------------------------------------------------------------------------- */

/* MaxUnpool's pads [0.., output_shape - unpooled..] (*pads, a run-time i64 tensor of 2r values)
 * for output_shape (input 2) known only at run time: the unpooled extents od must be constant;
 * a smaller output_shape entry is a negative pad, which crops. */
static loom_status unpool_pads_dyn(nctx *c, int r, const loom_sym_expr *const *od, loom_graph_expr **pads) {
  const loom_sinfo *si = c->args[2]->sinfo;
  int64_t len, rr = r;
  if (si->kind != LOOM_SINFO_TENSOR || si->dtype != LOOM_DTYPE_I64 || si->ndim != 1 || !si->dims || !loom_sym_is_const(si->dims[0], &len))
    return UNSUP(c->n, "input 2 (output_shape) must be a constant or a 1-D i64 tensor of static length (it is computed at run time)");
  if (len != r) return BAD(c->n, "output_shape has %lld values for rank %d", (long long)len, r);
  loom_onnx_tensor *z = oimp_new_tensor(c->im, LOOM_DTYPE_I64, 1, &rr), *d = oimp_new_tensor(c->im, LOOM_DTYPE_I64, 1, &rr);
  if (!z || !d) return LOOM_OOM();
  for (int k = 0; k < r; k++) {
    ((int64_t *)z->data)[k] = 0;
    if (!loom_sym_is_const(od[k], &((int64_t *)d->data)[k])) return UNSUP(c->n, "output_shape needs constant input extents (axis %d)", k);
  }
  loom_graph_expr *zv = oimp_const_of(c->im, z), *dv = oimp_const_of(c->im, d), *after;
  if (!zv || !dv) return LOOM_OOM();
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_SUB, c->args[2], dv, &after));
  oimp_add_attr(c, loom_graph_attr_int(c->im->m, "axis", 0));
  return oimp_emit(c, LOOM_GRAPH_OP_CONCAT, 2, (loom_graph_expr *[]){zv, after}, NULL, pads);
}

/* x and I (N, C, in..): a zero tensor of (N, C, (in - 1) * stride + kernel - pads..) with
 * x's values at I's flat indices, then zero-padded after to output_shape when given (constant or known at run time). */
static loom_status h_max_unpool(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e;
  imp *im = c->im;
  loom_sym_ctx *cx = im->cx;
  int r = oimp_in_rank(c, 0);
  if (r < 3 || r > MAXS + 2) return UNSUP(c->n, "rank %d input (N, C, spatial...)", r);
  if (oimp_in_rank(c, 1) != r) return BAD(c->n, "indices have rank %d; X has rank %d", oimp_in_rank(c, 1), r);
  size_t ns = (size_t)r - 2;
  int64_t kern[MAXS], strides[MAXS], pads[2 * MAXS], oshape[MAXS + 2], full[2 * (MAXS + 2)] = {0};
  if (!loom_onnx_node_attr(c->n, "kernel_shape")) return BAD(c->n, "attribute 'kernel_shape' is required");
  LOOM_PROPAGATE(oimp_ints_or(c, "kernel_shape", kern, ns, 1));
  LOOM_PROPAGATE(oimp_ints_or(c, "strides", strides, ns, 1));
  LOOM_PROPAGATE(oimp_ints_or(c, "pads", pads, 2 * ns, 0));
  const loom_sym_expr *const *xd = c->args[0]->sinfo->dims, *od[MAXS + 2], *one = loom_sym_const(cx, 1);
  const loom_sym_expr *tot = one, *m = one;
  loom_graph_expr *padv = NULL;
  for (int k = 0; k < r; k++) {
    if (k < 2) od[k] = xd[k];
    else {
      size_t j = (size_t)k - 2;
      if (kern[j] < 1 || strides[j] < 1) return BAD(c->n, "kernel_shape and strides must be >= 1 (axis %zu)", j);
      od[k] = loom_sym_add(cx, loom_sym_mul(cx, xd[k], loom_sym_const(cx, strides[j])), loom_sym_const(cx, kern[j] - strides[j] - pads[j] - pads[ns + j]));
    }
    tot = loom_sym_mul(cx, tot, od[k]), m = loom_sym_mul(cx, m, xd[k]);
  }
  bool has_os = oimp_has_input(c, 2), dyn_os = oimp_runtime_input(c, 2);
  if (dyn_os) LOOM_PROPAGATE(unpool_pads_dyn(c, r, od, &padv));
  else if (has_os) {
    size_t n;
    LOOM_PROPAGATE(oimp_const_ints(c, 2, "output_shape", oshape, MAXS + 2, &n));
    if (n != (size_t)r) return BAD(c->n, "output_shape has %zu values for rank %d", n, r);
    for (int k = 0; k < r; k++) {
      int64_t d;
      if (!loom_sym_is_const(od[k], &d)) return UNSUP(c->n, "output_shape needs constant input extents (axis %d)", k);
      if (oshape[k] < d) return BAD(c->n, "output_shape axis %d is %lld, less than the unpooled %lld", k, (long long)oshape[k], (long long)d);
      full[r + k] = oshape[k] - d;
    }
  }
  loom_graph_expr *a[3];
  oimp_add_attr(c, loom_graph_attr_syms(im->m, "shape", 1, &tot));
  oimp_add_attr(c, loom_graph_attr_dtype(im->m, "dtype", c->args[0]->sinfo->dtype));
  LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_ZEROS, 0, NULL, NULL, &a[0]));
  for (int i = 0; i < 2; i++) {
    oimp_add_attr(c, loom_graph_attr_syms(im->m, "shape", 1, &m));
    LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_RESHAPE, 1, &c->args[1 - i], NULL, &a[1 + i]));
  }
  loom_graph_expr *y;
  LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_SCATTER_ELEMENTS, 3, a, NULL, &y));
  oimp_add_attr(c, loom_graph_attr_syms(im->m, "shape", (size_t)r, od));
  LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_RESHAPE, 1, &y, has_os ? NULL : c->n->outputs[0], &y));
  if (dyn_os) {
    loom_graph_expr *zero = loom_graph_const_scalar(im->m, c->args[0]->sinfo->dtype, 0);
    if (!zero) return LOOM_OOM();
    LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_PAD, 3, (loom_graph_expr *[]){y, padv, zero}, c->n->outputs[0], &y));
  } else if (has_os) {
    oimp_add_attr(c, loom_graph_attr_ints(im->m, "pads", 2 * (size_t)r, full));
    oimp_add_attr(c, loom_graph_attr_float(im->m, "value", 0));
    LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_PAD, 1, &y, c->n->outputs[0], &y));
  }
  *out = y;
  return LOOM_OK;
}

/* ---- DeformConv ---------------------------------------------------------------------------- */

static loom_status op1a(nctx *c, loom_graph_op op, loom_graph_expr *x, loom_graph_expr **y) { return oimp_emit(c, op, 1, &x, NULL, y); }

static loom_status op2(nctx *c, loom_graph_op op, loom_graph_expr *x, loom_graph_expr *z, loom_graph_expr **y) {
  loom_graph_expr *a[2] = {x, z};
  return oimp_emit(c, op, 2, a, NULL, y);
}

static loom_status reshape_c(nctx *c, loom_graph_expr *x, size_t n, const int64_t *dims, loom_graph_expr **y) {
  const loom_sym_expr *d[8];
  for (size_t k = 0; k < n; k++) d[k] = dims[k] < 0 ? x->sinfo->dims[-dims[k] - 1] : loom_sym_const(c->im->cx, dims[k]);
  oimp_add_attr(c, loom_graph_attr_syms(c->im->m, "shape", n, d));
  return op1a(c, LOOM_GRAPH_OP_RESHAPE, x, y);
}

static loom_status permute_c(nctx *c, loom_graph_expr *x, size_t n, const int64_t *perm, loom_graph_expr **y) {
  oimp_add_attr(c, loom_graph_attr_ints(c->im->m, "axes", n, perm));
  return op1a(c, LOOM_GRAPH_OP_PERMUTE_DIMS, x, y);
}

/* A constant of dtype dt (f32 or f64) from doubles. */
static loom_status float_const(nctx *c, loom_dtype dt, size_t rank, const int64_t *dims, const double *v, loom_graph_expr **out) {
  loom_onnx_tensor *t = oimp_new_tensor(c->im, dt, rank, dims);
  if (!t) return LOOM_OOM();
  for (int64_t i = 0; i < t->numel; i++) {
    if (dt == LOOM_DTYPE_F32) ((float *)t->data)[i] = (float)v[i];
    else ((double *)t->data)[i] = v[i];
  }
  *out = oimp_const_of(c->im, t);
  return *out ? LOOM_OK : LOOM_OOM();
}

/* As the reference: each output position's kernel taps sample X bilinearly (GridSample,
 * align_corners, zeros outside) at their offset positions, times the mask; the samples laid out
 * as (N, C, oh * kh, ow * kw) are then convolved with W at stride (kh, kw). */
static loom_status h_deform_conv(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e;
  imp *im = c->im;
  if (oimp_in_rank(c, 0) != 4) return UNSUP(c->n, "rank %d input (2-D deformable convolution only)", oimp_in_rank(c, 0));
  if (oimp_in_rank(c, 1) != 4 || oimp_in_rank(c, 2) != 4) return BAD(c->n, "W and offset must be rank 4");
  loom_dtype dt = c->args[0]->sinfo->dtype;
  if (dt != LOOM_DTYPE_F32 && dt != LOOM_DTYPE_F64) return UNSUP(c->n, "dtype %s (f32 or f64 only)", loom_dtype_name(dt));
  int64_t kern[2], strides[2], dil[2], pads[4], g, og;
  kern[0] = oimp_const_dim(c, 1, 2), kern[1] = oimp_const_dim(c, 1, 3);
  LOOM_PROPAGATE(oimp_ints_or(c, "kernel_shape", kern, 2, kern[0]));
  LOOM_PROPAGATE(oimp_ints_or(c, "strides", strides, 2, 1));
  LOOM_PROPAGATE(oimp_ints_or(c, "dilations", dil, 2, 1));
  LOOM_PROPAGATE(oimp_ints_or(c, "pads", pads, 4, 0));
  LOOM_PROPAGATE(oimp_attr_int(c, "group", 1, &g));
  LOOM_PROPAGATE(oimp_attr_int(c, "offset_group", 1, &og));
  int64_t n = oimp_const_dim(c, 0, 0), ch = oimp_const_dim(c, 0, 1), h = oimp_const_dim(c, 0, 2), w = oimp_const_dim(c, 0, 3);
  int64_t oh = oimp_const_dim(c, 2, 2), ow = oimp_const_dim(c, 2, 3), kh = kern[0], kw = kern[1];
  if (n < 0 || ch < 0 || h < 0 || w < 0 || oh < 0 || ow < 0 || kh < 1 || kw < 1)
    return UNSUP(c->n, "needs constant shapes of X, offset and the kernel");
  if (h < 2 || w < 2) return UNSUP(c->n, "an input extent of %lld x %lld (the sampling grid needs 2 or more)", (long long)h, (long long)w);
  if (og < 1 || g < 1 || ch % og) return BAD(c->n, "offset_group %lld and group %lld must be >= 1 and divide the %lld channels", (long long)og, (long long)g, (long long)ch);
  if (oimp_const_dim(c, 2, 1) != og * kh * kw * 2) return BAD(c->n, "offset has %lld channels; expected offset_group * kh * kw * 2 = %lld", (long long)oimp_const_dim(c, 2, 1), (long long)(og * kh * kw * 2));
  for (int k = 0; k < 2; k++) {
    int64_t in = k ? w : h, o = k ? ow : oh, want = (in + pads[k] + pads[2 + k] - dil[k] * (kern[k] - 1) - 1) / strides[k] + 1;
    if (strides[k] < 1 || dil[k] < 1) return BAD(c->n, "strides and dilations must be >= 1 (axis %d)", k);
    if (o != want) return BAD(c->n, "offset's spatial axis %d is %lld; the convolution gives %lld", k, (long long)o, (long long)want);
  }
  /* sampling positions (N * og, oh * kh, ow * kw, (x, y)) normalised to [-1, 1] */
  loom_graph_expr *off, *t, *k1, *grid, *xs, *y;
  int64_t d7[7] = {n, og, kh, kw, 2, oh, ow}, p7[7] = {0, 1, 5, 2, 6, 3, 4}, d4[4] = {n * og, oh * kh, ow * kw, 2};
  LOOM_PROPAGATE(reshape_c(c, c->args[2], 7, d7, &off));
  LOOM_PROPAGATE(permute_c(c, off, 7, p7, &off));
  LOOM_PROPAGATE(reshape_c(c, off, 4, d4, &off));
  int64_t two = 2, swap[2] = {1, 0};
  loom_onnx_tensor *st = oimp_new_tensor(im, LOOM_DTYPE_I64, 1, &two);
  if (!st) return LOOM_OOM();
  memcpy(st->data, swap, sizeof swap);
  oimp_add_attr(c, loom_graph_attr_int(im->m, "axis", 3));
  LOOM_PROPAGATE(op2(c, LOOM_GRAPH_OP_TAKE, off, oimp_const_of(im, st), &off));
  size_t nb = (size_t)(oh * kh * ow * kw * 2);
  double *base = malloc(nb * sizeof *base), sc[2] = {2.0 / (double)(w - 1), 2.0 / (double)(h - 1)};
  if (!base) return LOOM_OOM();
  for (int64_t i = 0; i < oh; i++)
    for (int64_t a = 0; a < kh; a++)
      for (int64_t j = 0; j < ow; j++)
        for (int64_t b = 0; b < kw; b++) {
          double *q = base + (((i * kh + a) * ow + j) * kw + b) * 2;
          q[0] = (double)(-pads[1] + strides[1] * j + b * dil[1]), q[1] = (double)(-pads[0] + strides[0] * i + a * dil[0]);
        }
  int64_t bd[4] = {1, oh * kh, ow * kw, 2};
  loom_status s = float_const(c, dt, 4, bd, base, &k1);
  free(base);
  LOOM_PROPAGATE(s);
  LOOM_PROPAGATE(op2(c, LOOM_GRAPH_OP_ADD, off, k1, &t));
  LOOM_PROPAGATE(float_const(c, dt, 1, &two, sc, &k1));
  LOOM_PROPAGATE(op2(c, LOOM_GRAPH_OP_MUL, t, k1, &t));
  LOOM_PROPAGATE(oimp_scalar(c, dt, -1, &k1));
  LOOM_PROPAGATE(op2(c, LOOM_GRAPH_OP_ADD, t, k1, &grid));
  int64_t dx[4] = {n * og, ch / og, h, w};
  LOOM_PROPAGATE(reshape_c(c, c->args[0], 4, dx, &xs));
  loom_graph_expr *ga[2] = {xs, grid};
  oimp_add_attr(c, oimp_str_attr(im, "mode", "linear"));
  oimp_add_attr(c, oimp_str_attr(im, "padding_mode", "zeros"));
  oimp_add_attr(c, loom_graph_attr_bool(im->m, "align_corners", true));
  LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_GRID_SAMPLE, 2, ga, NULL, &xs));
  if (oimp_has_input(c, 4)) {
    if (oimp_in_rank(c, 4) != 4) return BAD(c->n, "mask must be rank 4");
    loom_graph_expr *mk;
    int64_t m6[6] = {n, og, kh, kw, oh, ow}, p6[6] = {0, 1, 4, 2, 5, 3}, m5[5] = {n, og, 1, oh * kh, ow * kw}, x5[5] = {n, og, ch / og, oh * kh, ow * kw};
    LOOM_PROPAGATE(reshape_c(c, c->args[4], 6, m6, &mk));
    LOOM_PROPAGATE(permute_c(c, mk, 6, p6, &mk));
    LOOM_PROPAGATE(reshape_c(c, mk, 5, m5, &mk));
    LOOM_PROPAGATE(reshape_c(c, xs, 5, x5, &xs));
    LOOM_PROPAGATE(op2(c, LOOM_GRAPH_OP_MUL, xs, mk, &xs));
  }
  int64_t dc[4] = {n, ch, oh * kh, ow * kw}, one2[2] = {1, 1}, zero4[4] = {0, 0, 0, 0};
  LOOM_PROPAGATE(reshape_c(c, xs, 4, dc, &xs));
  loom_graph_expr *ca[3] = {xs, c->args[1], oimp_has_input(c, 3) ? c->args[3] : NULL};
  oimp_add_attr(c, loom_graph_attr_int(im->m, "groups", g));
  oimp_add_attr(c, loom_graph_attr_ints(im->m, "dilation", 2, one2));
  oimp_add_attr(c, loom_graph_attr_ints(im->m, "strides", 2, kern));
  oimp_add_attr(c, loom_graph_attr_ints(im->m, "padding", 4, zero4));
  LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_CONV2D, ca[2] ? 3 : 2, ca, c->n->outputs[0], &y));
  *out = y;
  return LOOM_OK;
}

/* ---- RoiAlign ------------------------------------------------------------------------------ */

/* The scalar n + add of dtype dt: a constant, or (n symbolic: an image's extent) the value of
 * the shape expression at run time. */
static loom_status dim_scalar(nctx *c, loom_dtype dt, const loom_sym_expr *n, int64_t add, loom_graph_expr **out) {
  imp *im = c->im;
  const loom_sym_expr *e = loom_sym_add(im->cx, n, loom_sym_const(im->cx, add));
  int64_t v;
  if (loom_sym_is_const(e, &v)) return oimp_scalar(c, dt, (double)v, out);
  loom_graph_expr *t;
  oimp_add_attr(c, loom_graph_attr_syms(im->m, "values", 1, &e));
  oimp_add_attr(c, loom_graph_attr_int(im->m, "scalar", 1));
  LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_SYM_TENSOR, 0, NULL, NULL, &t));
  oimp_add_attr(c, loom_graph_attr_dtype(im->m, "dtype", dt));
  return op1a(c, LOOM_GRAPH_OP_CAST, t, out);
}

/* Sample coordinates along one axis for every roi, (R, o * sr): start + bin * (p + (i + 0.5) / sr)
 * for bin p and sample i, with start = lo * scale - offset, bin = max?(hi - lo) * scale / o;
 * whether each lies in [-1, n] (else the sample counts 0), and the coordinate clamped to
 * [0, n - 1] as the reference clamps it (n: the axis' extent, symbolic or not). */
static loom_status roi_axis(nctx *c, loom_dtype dt, int64_t lo, int64_t o, int64_t sr, const loom_sym_expr *n, double scale, bool half,
                            loom_graph_expr **coord, loom_graph_expr **valid) {
  imp *im = c->im;
  loom_graph_expr *rois = c->args[1], *a, *b, *k, *start, *len;
  int64_t one = 1, m = o * sr;
  for (int i = 0; i < 2; i++) {
    loom_onnx_tensor *t = oimp_new_tensor(im, LOOM_DTYPE_I64, 1, &one);
    if (!t) return LOOM_OOM();
    *(int64_t *)t->data = lo + 2 * i;
    oimp_add_attr(c, loom_graph_attr_int(im->m, "axis", 1));
    LOOM_PROPAGATE(op2(c, LOOM_GRAPH_OP_TAKE, rois, oimp_const_of(im, t), i ? &b : &a));
  }
  LOOM_PROPAGATE(oimp_scalar(c, dt, scale, &k));
  LOOM_PROPAGATE(op2(c, LOOM_GRAPH_OP_MUL, a, k, &a));
  LOOM_PROPAGATE(op2(c, LOOM_GRAPH_OP_MUL, b, k, &b));
  LOOM_PROPAGATE(op2(c, LOOM_GRAPH_OP_SUB, b, a, &len));
  if (!half) {
    LOOM_PROPAGATE(oimp_scalar(c, dt, 1, &k));
    LOOM_PROPAGATE(op2(c, LOOM_GRAPH_OP_MAXIMUM, len, k, &len));
  }
  start = a;
  if (half) {
    LOOM_PROPAGATE(oimp_scalar(c, dt, -0.5, &k));
    LOOM_PROPAGATE(op2(c, LOOM_GRAPH_OP_ADD, a, k, &start));
  }
  double *u = malloc((size_t)m * sizeof *u);
  if (!u) return LOOM_OOM();
  for (int64_t j = 0; j < m; j++) u[j] = ((double)(j / sr) + ((double)(j % sr) + 0.5) / (double)sr) / (double)o;
  int64_t d2[2] = {1, m};
  loom_status s = float_const(c, dt, 2, d2, u, &k);
  free(u);
  LOOM_PROPAGATE(s);
  LOOM_PROPAGATE(op2(c, LOOM_GRAPH_OP_MUL, len, k, &len));
  LOOM_PROPAGATE(op2(c, LOOM_GRAPH_OP_ADD, start, len, &a)); /* (R, m) */
  LOOM_PROPAGATE(oimp_scalar(c, dt, -1, &k));
  LOOM_PROPAGATE(op2(c, LOOM_GRAPH_OP_GREATER_EQUAL, a, k, &b));
  LOOM_PROPAGATE(dim_scalar(c, dt, n, 0, &k));
  LOOM_PROPAGATE(op2(c, LOOM_GRAPH_OP_LESS_EQUAL, a, k, &len));
  LOOM_PROPAGATE(op2(c, LOOM_GRAPH_OP_LOGICAL_AND, b, len, valid));
  LOOM_PROPAGATE(oimp_scalar(c, dt, 0, &k));
  LOOM_PROPAGATE(op2(c, LOOM_GRAPH_OP_MAXIMUM, a, k, &a));
  LOOM_PROPAGATE(dim_scalar(c, dt, n, -1, &k));
  return op2(c, LOOM_GRAPH_OP_MINIMUM, a, k, coord);
}

/* The bilinear corners of clamped coordinates c: lo = min(floor(c), n - 1), hi = min(lo + 1,
 * n - 1), and the weights 1 - (c - lo) of lo and c - lo of hi. */
static loom_status roi_corners(nctx *c, loom_dtype dt, loom_graph_expr *x, const loom_sym_expr *n, loom_graph_expr *ix[2],
                               loom_graph_expr *wt[2]) {
  loom_graph_expr *k, *k1;
  LOOM_PROPAGATE(op1a(c, LOOM_GRAPH_OP_FLOOR, x, &ix[0]));
  LOOM_PROPAGATE(dim_scalar(c, dt, n, -1, &k));
  LOOM_PROPAGATE(op2(c, LOOM_GRAPH_OP_MINIMUM, ix[0], k, &ix[0]));
  LOOM_PROPAGATE(oimp_scalar(c, dt, 1, &k1));
  LOOM_PROPAGATE(op2(c, LOOM_GRAPH_OP_ADD, ix[0], k1, &ix[1]));
  LOOM_PROPAGATE(op2(c, LOOM_GRAPH_OP_MINIMUM, ix[1], k, &ix[1]));
  LOOM_PROPAGATE(op2(c, LOOM_GRAPH_OP_SUB, x, ix[0], &wt[1]));
  return op2(c, LOOM_GRAPH_OP_SUB, k1, wt[1], &wt[0]);
}

/* RoiAlign with a fixed sampling_ratio, as the reference computes it: per roi and sample point
 * (clamped; points outside [-1, extent] count 0) the four bilinear corners are gathered from the
 * roi's image and weighted; avg sums them and averages each bin (avg_pool2d), max takes the
 * largest weighted corner and the largest per bin (max_pool2d). */
static loom_status h_roi_align(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e;
  imp *im = c->im;
  const char *mode, *ctm;
  int64_t oh, ow, sr;
  double scale;
  LOOM_PROPAGATE(oimp_attr_str(c, "mode", "avg", &mode));
  LOOM_PROPAGATE(oimp_attr_str(c, "coordinate_transformation_mode", "half_pixel", &ctm));
  LOOM_PROPAGATE(oimp_attr_int(c, "output_height", 1, &oh));
  LOOM_PROPAGATE(oimp_attr_int(c, "output_width", 1, &ow));
  LOOM_PROPAGATE(oimp_attr_int(c, "sampling_ratio", 0, &sr));
  LOOM_PROPAGATE(oimp_attr_float(c, "spatial_scale", 1, &scale));
  bool half = !strcmp(ctm, "half_pixel"), maxm = !strcmp(mode, "max");
  if (!half && strcmp(ctm, "output_half_pixel")) return BAD(c->n, "coordinate_transformation_mode '%s' is not half_pixel or output_half_pixel", ctm);
  if (strcmp(mode, "avg") && !maxm) return BAD(c->n, "mode '%s' is not avg or max", mode);
  if (oh < 1 || ow < 1 || sr < 0) return BAD(c->n, "output_height %lld, output_width %lld must be >= 1 and sampling_ratio %lld >= 0", (long long)oh, (long long)ow, (long long)sr);
  if (sr == 0) return UNSUP(c->n, "sampling_ratio 0 (adaptive, data-dependent) is not supported");
  if (oimp_in_rank(c, 0) != 4 || oimp_in_rank(c, 1) != 2 || oimp_in_rank(c, 2) != 1)
    return BAD(c->n, "X must be rank 4 (N, C, H, W), rois rank 2 (R, 4) and batch_indices rank 1 (R)");
  loom_dtype dt = c->args[0]->sinfo->dtype;
  if ((dt != LOOM_DTYPE_F32 && dt != LOOM_DTYPE_F64) || c->args[1]->sinfo->dtype != dt) return UNSUP(c->n, "X and rois must both be f32 or both f64");
  const loom_sym_expr *h = c->args[0]->sinfo->dims[2], *w = c->args[0]->sinfo->dims[3]; /* symbolic or not */
  int64_t p = oh * sr * ow * sr;
  if (oimp_const_dim(c, 0, 2) == 0 || oimp_const_dim(c, 0, 3) == 0) return UNSUP(c->n, "needs non-zero spatial extents");
  if (oimp_const_dim(c, 1, 1) != 4) return BAD(c->n, "rois must be (R, 4)");
  loom_graph_expr *gx, *gy, *vx, *vy, *k, *xr, *y = NULL, *yi[2], *yw[2], *xi[2], *xw[2];
  LOOM_PROPAGATE(roi_axis(c, dt, 0, ow, sr, w, scale, half, &gx, &vx));
  LOOM_PROPAGATE(roi_axis(c, dt, 1, oh, sr, h, scale, half, &gy, &vy));
  int64_t dx[3] = {-1, 1, ow * sr}, dy[3] = {-1, oh * sr, 1}, dp[3] = {-1, 1, p};
  LOOM_PROPAGATE(reshape_c(c, gx, 3, dx, &gx));
  LOOM_PROPAGATE(reshape_c(c, vx, 3, dx, &vx));
  LOOM_PROPAGATE(reshape_c(c, gy, 3, dy, &gy));
  LOOM_PROPAGATE(reshape_c(c, vy, 3, dy, &vy));
  LOOM_PROPAGATE(roi_corners(c, dt, gx, w, xi, xw));
  LOOM_PROPAGATE(roi_corners(c, dt, gy, h, yi, yw));
  LOOM_PROPAGATE(dim_scalar(c, dt, w, 0, &k));
  LOOM_PROPAGATE(op2(c, LOOM_GRAPH_OP_MUL, yi[0], k, &yi[0]));
  LOOM_PROPAGATE(op2(c, LOOM_GRAPH_OP_MUL, yi[1], k, &yi[1]));
  oimp_add_attr(c, loom_graph_attr_int(im->m, "axis", 0));
  LOOM_PROPAGATE(op2(c, LOOM_GRAPH_OP_TAKE, c->args[0], c->args[2], &xr));
  const loom_sym_expr *dxr[3] = {xr->sinfo->dims[0], xr->sinfo->dims[1], loom_sym_mul(im->cx, h, w)};
  oimp_add_attr(c, loom_graph_attr_syms(im->m, "shape", 3, dxr));
  LOOM_PROPAGATE(op1a(c, LOOM_GRAPH_OP_RESHAPE, xr, &xr)); /* (R, C, H * W) */
  const loom_sym_expr *rcp[3] = {xr->sinfo->dims[0], xr->sinfo->dims[1], loom_sym_const(im->cx, p)};
  for (int a = 0; a < 2; a++)
    for (int b = 0; b < 2; b++) {
      loom_graph_expr *pos, *wt, *v;
      LOOM_PROPAGATE(op2(c, LOOM_GRAPH_OP_ADD, yi[a], xi[b], &pos));
      oimp_add_attr(c, loom_graph_attr_dtype(im->m, "dtype", LOOM_DTYPE_I64));
      LOOM_PROPAGATE(op1a(c, LOOM_GRAPH_OP_CAST, pos, &pos));
      LOOM_PROPAGATE(reshape_c(c, pos, 3, dp, &pos));
      oimp_add_attr(c, loom_graph_attr_syms(im->m, "shape", 3, rcp));
      LOOM_PROPAGATE(op1a(c, LOOM_GRAPH_OP_BROADCAST_TO, pos, &pos));
      oimp_add_attr(c, loom_graph_attr_int(im->m, "axis", 2));
      LOOM_PROPAGATE(op2(c, LOOM_GRAPH_OP_GATHER_ELEMENTS, xr, pos, &v));
      LOOM_PROPAGATE(op2(c, LOOM_GRAPH_OP_MUL, yw[a], xw[b], &wt));
      LOOM_PROPAGATE(reshape_c(c, wt, 3, dp, &wt));
      LOOM_PROPAGATE(op2(c, LOOM_GRAPH_OP_MUL, v, wt, &v));
      if (y) LOOM_PROPAGATE(op2(c, maxm ? LOOM_GRAPH_OP_MAXIMUM : LOOM_GRAPH_OP_ADD, y, v, &y));
      else y = v;
    }
  LOOM_PROPAGATE(op2(c, LOOM_GRAPH_OP_LOGICAL_AND, vy, vx, &k));
  oimp_add_attr(c, loom_graph_attr_dtype(im->m, "dtype", dt));
  LOOM_PROPAGATE(op1a(c, LOOM_GRAPH_OP_CAST, k, &k));
  LOOM_PROPAGATE(reshape_c(c, k, 3, dp, &k));
  LOOM_PROPAGATE(op2(c, LOOM_GRAPH_OP_MUL, y, k, &y));
  int64_t d4[4] = {-1, -2, oh * sr, ow * sr}, kern[2] = {sr, sr}, zero4[4] = {0};
  LOOM_PROPAGATE(reshape_c(c, y, 4, d4, &y));
  oimp_add_attr(c, loom_graph_attr_ints(im->m, "kernel", 2, kern));
  oimp_add_attr(c, loom_graph_attr_ints(im->m, "strides", 2, kern));
  oimp_add_attr(c, loom_graph_attr_ints(im->m, "padding", 4, zero4));
  return oimp_emit(c, maxm ? LOOM_GRAPH_OP_MAX_POOL2D : LOOM_GRAPH_OP_AVG_POOL2D, 1, &y, c->n->outputs[0], out);
}

/* ---- Col2Im ------------------------------------------------------------------------------- */

/* An i64 constant of the given dims from v. */
static loom_graph_expr *i64_const(nctx *c, size_t rank, const int64_t *dims, const int64_t *v) {
  loom_onnx_tensor *t = oimp_new_tensor(c->im, LOOM_DTYPE_I64, rank, dims);
  if (!t) return NULL;
  memcpy(t->data, v, (size_t)t->numel * sizeof *v);
  return oimp_const_of(c->im, t);
}

/* x[k] of a 1-D i64 tensor as a scalar, at least 1 when `pos` (a divisor never 0). */
static loom_status elem_at(nctx *c, loom_graph_expr *x, int64_t k, bool pos, loom_graph_expr **y) {
  loom_graph_expr *ki = loom_graph_const_scalar(c->im->m, LOOM_DTYPE_I64, (double)k);
  if (!ki) return LOOM_OOM();
  oimp_add_attr(c, loom_graph_attr_int(c->im->m, "axis", 0));
  LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_TAKE, 2, (loom_graph_expr *[]){x, ki}, NULL, y));
  return pos ? oimp_op_k(c, LOOM_GRAPH_OP_MAXIMUM, *y, 1, y) : LOOM_OK;
}

/* Col2Im with image_shape or block_shape known only at run time: a scatter-add. Input element
 * (ch, l) of (N, CK, L) (CK and L constant) belongs to channel ch / K (K = prod(block)), block
 * offset ch % K and block position l, both split row-major over the axes; on axis k it lands at
 * l_k * stride + kidx_k * dilation - pad_before, and where every axis lands inside the image it
 * adds into image element (ch / K) * P + flat position (P = prod(image)); the rest go to a
 * dump element P * CK / K, sliced off before the reshape to (N, CK / K, image..). Run-time
 * values are clamped so that no division is by 0 and no index leaves the buffer. */
static loom_status col2im_dyn(nctx *c, size_t ns, const int64_t *strides, const int64_t *dil, const int64_t *pads, loom_graph_expr **out) {
  imp *im = c->im;
  int64_t ck = oimp_const_dim(c, 0, 1), l = oimp_const_dim(c, 0, 2), nsv = (int64_t)ns;
  if (ck < 1 || l < 1) return UNSUP(c->n, "run-time image_shape / block_shape need constant channel and block extents");
  if (ck * l > OIMP_FOLD_MAX) return UNSUP(c->n, "%lld channels of %lld blocks", (long long)ck, (long long)l);
  for (int i = 1; i < 3; i++) {
    const loom_sinfo *si = c->args[i]->sinfo;
    int64_t len;
    if (si->kind != LOOM_SINFO_TENSOR || si->dtype != LOOM_DTYPE_I64 || si->ndim != 1 || !si->dims || !loom_sym_is_const(si->dims[0], &len))
      return UNSUP(c->n, "input %d (%s) must be a constant or a 1-D i64 tensor of static length", i, i == 1 ? "image_shape" : "block_shape");
    if (len != nsv) return BAD(c->n, "image_shape and block_shape must have %zu values (the pads / strides / dilations)", ns);
  }
  int64_t *iv = malloc((size_t)(ck > l ? ck : l) * sizeof *iv);
  if (!iv) return LOOM_OOM();
  for (int64_t i = 0; i < (ck > l ? ck : l); i++) iv[i] = i;
  loom_graph_expr *ch = i64_const(c, 2, (int64_t[]){ck, 1}, iv), *li = i64_const(c, 2, (int64_t[]){1, l}, iv);
  free(iv);
  if (!ch || !li) return LOOM_OOM();
  loom_graph_expr *img = c->args[1], *blk = c->args[2], *kk, *kidx, *cc, *bafter = NULL, *oafter = NULL, *iafter = NULL, *flat = NULL, *valid = NULL;
  oimp_add_attr(c, loom_graph_attr_ints(im->m, "axes", 1, (int64_t[]){0}));
  oimp_add_attr(c, loom_graph_attr_bool(im->m, "keepdims", false));
  LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_PROD, blk, &kk));
  LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_MAXIMUM, kk, 1, &kk));
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MOD, ch, kk, &kidx));
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_DIV, ch, kk, &cc));
  for (size_t k = ns; k-- > 0;) {
    loom_graph_expr *bk, *ik, *ok, *kq, *lq, *pos, *t;
    LOOM_PROPAGATE(elem_at(c, blk, (int64_t)k, true, &bk));
    LOOM_PROPAGATE(elem_at(c, img, (int64_t)k, false, &ik));
    /* o_k = (image + pads - dilation * (block - 1) - 1) / stride + 1, at least 1 */
    LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_SUB, bk, 1, &t));
    LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_MUL, t, (double)dil[k], &t));
    LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_SUB, ik, t, &ok));
    LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_ADD, ok, (double)(pads[k] + pads[ns + k] - 1), &ok));
    LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_DIV, ok, (double)strides[k], &ok));
    LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_ADD, ok, 1, &ok));
    LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_MAXIMUM, ok, 1, &ok));
    /* the axis's block offset and block position, row-major (the later axes' products after) */
    kq = kidx, lq = li;
    if (bafter) LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_DIV, kq, bafter, &kq));
    if (oafter) LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_DIV, lq, oafter, &lq));
    LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MOD, kq, bk, &kq));
    LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MOD, lq, ok, &lq));
    LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_MUL, kq, (double)dil[k], &kq));
    LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_MUL, lq, (double)strides[k], &lq));
    LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_ADD, kq, lq, &pos));
    LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_SUB, pos, (double)pads[k], &pos));
    loom_graph_expr *ge, *lt, *ok2;
    LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_GREATER_EQUAL, pos, 0, &ge));
    LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_LESS, pos, ik, &lt));
    LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_LOGICAL_AND, ge, lt, &ok2));
    if (valid) LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_LOGICAL_AND, valid, ok2, &ok2));
    valid = ok2;
    if (iafter) LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MUL, pos, iafter, &pos));
    if (flat) LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_ADD, flat, pos, &pos));
    flat = pos;
    LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_MAXIMUM, ik, 0, &ik));
    if (bafter) LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MUL, bafter, bk, &bk));
    if (oafter) LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MUL, oafter, ok, &ok));
    if (iafter) LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MUL, iafter, ik, &ik));
    bafter = bk, oafter = ok, iafter = ik;
  }
  /* iafter = P; dump = P * (CK / K); target = cc * P + flat where valid and below the dump */
  loom_graph_expr *dump, *tgt, *below, *idx, *tot, *zeros, *upd, *y, *dims, *shape;
  LOOM_PROPAGATE(oimp_k_op(c, LOOM_GRAPH_OP_DIV, (double)ck, kk, &dump));
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MUL, dump, iafter, &dump));
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MUL, cc, iafter, &tgt));
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_ADD, tgt, flat, &tgt));
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_LESS, tgt, dump, &below));
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_LOGICAL_AND, valid, below, &valid));
  LOOM_PROPAGATE(oimp_op3(c, LOOM_GRAPH_OP_WHERE, valid, tgt, dump, &idx));
  /* zeros (N, dump + 1): the extent bound from data */
  LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_ADD, dump, 1, &tot));
  oimp_add_attr(c, loom_graph_attr_ints(im->m, "axes", 1, (int64_t[]){0}));
  LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_EXPAND_DIMS, tot, &tot));
  const loom_sym_expr *zd[2] = {c->args[0]->sinfo->dims[0]}, *m = loom_sym_const(im->cx, ck * l);
  LOOM_PROPAGATE(oimp_runtime_syms(c, tot, c->n->outputs[0], "extent", &zd[1], 1));
  oimp_add_attr(c, loom_graph_attr_syms(im->m, "shape", 2, zd));
  oimp_add_attr(c, loom_graph_attr_dtype(im->m, "dtype", c->args[0]->sinfo->dtype));
  LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_ZEROS, 0, NULL, NULL, &zeros));
  const loom_sym_expr *ud[2] = {zd[0], m}, *one = loom_sym_const(im->cx, 1);
  oimp_add_attr(c, loom_graph_attr_syms(im->m, "shape", 2, (const loom_sym_expr *[]){one, m}));
  LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_RESHAPE, idx, &idx));
  oimp_add_attr(c, loom_graph_attr_syms(im->m, "shape", 2, ud));
  LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_BROADCAST_TO, idx, &idx));
  oimp_add_attr(c, loom_graph_attr_syms(im->m, "shape", 2, ud));
  LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_RESHAPE, c->args[0], &upd));
  oimp_add_attr(c, loom_graph_attr_int(im->m, "axis", 1));
  oimp_add_attr(c, oimp_str_attr(im, "reduction", "add"));
  LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_SCATTER_ELEMENTS, 3, (loom_graph_expr *[]){zeros, idx, upd}, NULL, &y));
  /* y[:, :dump] reshaped to (N, CK / K, image..) (0 copies N, -1 infers the channels) */
  loom_graph_expr *st = i64_const(c, 1, (int64_t[]){1}, (int64_t[]){0}), *ax = i64_const(c, 1, (int64_t[]){1}, (int64_t[]){1});
  loom_graph_expr *head = i64_const(c, 1, (int64_t[]){2}, (int64_t[]){0, -1});
  if (!st || !ax || !head) return LOOM_OOM();
  oimp_add_attr(c, loom_graph_attr_ints(im->m, "axes", 1, (int64_t[]){0}));
  LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_EXPAND_DIMS, dump, &dims));
  LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_STRIDED_SLICE, 4, (loom_graph_expr *[]){y, st, dims, ax}, NULL, &y));
  oimp_add_attr(c, loom_graph_attr_int(im->m, "axis", 0));
  LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_CONCAT, 2, (loom_graph_expr *[]){head, img}, NULL, &shape));
  return oimp_emit(c, LOOM_GRAPH_OP_RESHAPE, 2, (loom_graph_expr *[]){y, shape}, c->n->outputs[0], out);
}

/* Col2Im: input (N, C * prod(block), L) with L the positions of a block sliding over the padded
 * image; overlapping values add. That is a grouped transposed convolution (C groups of
 * prod(block) input channels, one output channel each) whose kernel is one-hot per channel. */
static loom_status h_col2im(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e;
  imp *im = c->im;
  if (oimp_in_rank(c, 0) != 3) return BAD(c->n, "input must be rank 3 (N, C * prod(block_shape), L)");
  int64_t img[MAXS], blk[MAXS], strides[MAXS], dil[MAXS], pads[2 * MAXS], o[MAXS], opad[MAXS], kk = 1, nl = 1;
  size_t ns, nb;
  if (oimp_runtime_input(c, 1) || oimp_runtime_input(c, 2)) {
    int64_t len;
    const loom_sinfo *si = c->args[1]->sinfo;
    if (si->kind != LOOM_SINFO_TENSOR || si->ndim != 1 || !si->dims || !loom_sym_is_const(si->dims[0], &len) || len < 1 || len > MAXS)
      return UNSUP(c->n, "input 1 (image_shape) must be a constant or a 1-D i64 tensor of 1 to %d values", MAXS);
    ns = (size_t)len;
    LOOM_PROPAGATE(oimp_ints_or(c, "strides", strides, ns, 1));
    LOOM_PROPAGATE(oimp_ints_or(c, "dilations", dil, ns, 1));
    LOOM_PROPAGATE(oimp_ints_or(c, "pads", pads, 2 * ns, 0));
    for (size_t k = 0; k < ns; k++)
      if (strides[k] < 1 || dil[k] < 1 || pads[k] < 0 || pads[ns + k] < 0)
        return BAD(c->n, "axis %zu: stride %lld and dilation %lld must be >= 1, pads >= 0", k, (long long)strides[k], (long long)dil[k]);
    return col2im_dyn(c, ns, strides, dil, pads, out);
  }
  LOOM_PROPAGATE(oimp_const_ints(c, 1, "image_shape", img, MAXS, &ns));
  LOOM_PROPAGATE(oimp_const_ints(c, 2, "block_shape", blk, MAXS, &nb));
  if (ns != nb || ns < 1) return BAD(c->n, "image_shape has %zu values and block_shape %zu; they must match", ns, nb);
  LOOM_PROPAGATE(oimp_ints_or(c, "strides", strides, ns, 1));
  LOOM_PROPAGATE(oimp_ints_or(c, "dilations", dil, ns, 1));
  LOOM_PROPAGATE(oimp_ints_or(c, "pads", pads, 2 * ns, 0));
  for (size_t k = 0; k < ns; k++) {
    if (blk[k] < 1 || strides[k] < 1 || dil[k] < 1 || img[k] < 0 || pads[k] < 0 || pads[ns + k] < 0)
      return BAD(c->n, "axis %zu: block %lld, stride %lld, dilation %lld must be >= 1, image %lld and pads >= 0", k, (long long)blk[k],
                 (long long)strides[k], (long long)dil[k], (long long)img[k]);
    int64_t span = img[k] + pads[k] + pads[ns + k] - dil[k] * (blk[k] - 1) - 1;
    if (span < 0) return BAD(c->n, "axis %zu: the block (%lld, dilation %lld) is larger than the padded image", k, (long long)blk[k], (long long)dil[k]);
    o[k] = span / strides[k] + 1;
    opad[k] = span % strides[k];
    kk *= blk[k], nl *= o[k];
  }
  int64_t ck = oimp_const_dim(c, 0, 1), l = oimp_const_dim(c, 0, 2);
  if (ck < 0) return UNSUP(c->n, "needs a constant channel extent");
  if (ck % kk) return BAD(c->n, "input has %lld channels, not a multiple of prod(block_shape) %lld", (long long)ck, (long long)kk);
  if (l >= 0 && l != nl) return BAD(c->n, "input has %lld blocks; image_shape, block_shape, pads, strides and dilations give %lld", (long long)l, (long long)nl);
  int64_t xd[MAXS + 2] = {-1, ck}, wd[MAXS + 2] = {ck, 1};
  for (size_t k = 0; k < ns; k++) xd[2 + k] = o[k], wd[2 + k] = blk[k];
  loom_graph_expr *x, *wk;
  LOOM_PROPAGATE(reshape_c(c, c->args[0], ns + 2, xd, &x));
  loom_onnx_tensor *t = oimp_new_tensor(im, c->args[0]->sinfo->dtype, ns + 2, wd);
  if (!t) return LOOM_OOM();
  if (t->dtype != LOOM_DTYPE_F32 && t->dtype != LOOM_DTYPE_F64) return UNSUP(c->n, "dtype %s (f32 or f64 only)", loom_dtype_name(t->dtype));
  memset(t->data, 0, t->nbytes);
  for (int64_t ch = 0; ch < ck; ch++) {
    int64_t at = ch * kk + ch % kk;
    if (t->dtype == LOOM_DTYPE_F32) ((float *)t->data)[at] = 1;
    else ((double *)t->data)[at] = 1;
  }
  if (!(wk = oimp_const_of(im, t))) return LOOM_OOM();
  loom_graph_expr *a[2] = {x, wk};
  oimp_add_attr(c, loom_graph_attr_ints(im->m, "strides", ns, strides));
  oimp_add_attr(c, loom_graph_attr_ints(im->m, "padding", 2 * ns, pads));
  oimp_add_attr(c, loom_graph_attr_ints(im->m, "dilation", ns, dil));
  oimp_add_attr(c, loom_graph_attr_ints(im->m, "output_padding", ns, opad));
  oimp_add_attr(c, loom_graph_attr_int(im->m, "groups", ck / kk));
  return oimp_emit(c, LOOM_GRAPH_OP_CONV_TRANSPOSE, 2, a, c->n->outputs[0], out);
}

/* ---- AffineGrid ---------------------------------------------------------------------------- */

/* AffineGrid with `size` known only at run time (a 1-D i64 tensor of 4 or 5 values): per
 * spatial axis k of run-time extent d = size[2 + k], the coordinates j = 0..d-1 (a run-time
 * arange) as (2j + 1) / d - 1, or with align_corners 2j / max(d - 1, 1) - 1, are broadcast along
 * the other axes; grid[.., i] = sum_k coord_k * theta[:, i, n - 1 - k] + theta[:, i, n]
 * (coordinate 0 is x, the last axis). Theta's N is the grid's; an extent below 1 gives an
 * empty grid. */
static loom_status affine_grid_dyn(nctx *c, bool ac, loom_dtype dt, loom_graph_expr **out) {
  imp *im = c->im;
  const loom_sinfo *si = c->args[1]->sinfo;
  int64_t n;
  if (si->kind != LOOM_SINFO_TENSOR || si->dtype != LOOM_DTYPE_I64 || si->ndim != 1 || !si->dims || !loom_sym_is_const(si->dims[0], &n))
    return UNSUP(c->n, "input 1 (size) must be a constant or a 1-D i64 tensor of static length (it is computed at run time)");
  if (n != 4 && n != 5) return BAD(c->n, "size has %lld values; expected 4 (N, C, H, W) or 5 (N, C, D, H, W)", (long long)n);
  int64_t ns = n - 2, r = ns + 2;
  if (oimp_in_rank(c, 0) != 3 || oimp_const_dim(c, 0, 1) != ns || oimp_const_dim(c, 0, 2) != ns + 1)
    return BAD(c->n, "theta must be (N, %lld, %lld) for a size of %lld values", (long long)ns, (long long)ns + 1, (long long)n);
  loom_graph_expr *zero = loom_graph_const_scalar(im->m, LOOM_DTYPE_I64, 0), *one = loom_graph_const_scalar(im->m, LOOM_DTYPE_I64, 1);
  if (!zero || !one) return LOOM_OOM();
  int64_t tax[MAXS], axes[MAXS + 2];
  for (int64_t k = 0; k < ns; k++) tax[k] = 1 + k;
  loom_graph_expr *acc, *col;
  /* theta[:, :, ns] as (N, 1.., ns): the translation */
  loom_graph_expr *ti = loom_graph_const_scalar(im->m, LOOM_DTYPE_I64, (double)ns);
  if (!ti) return LOOM_OOM();
  oimp_add_attr(c, loom_graph_attr_int(im->m, "axis", 2));
  LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_TAKE, 2, (loom_graph_expr *[]){c->args[0], ti}, NULL, &col));
  oimp_add_attr(c, loom_graph_attr_ints(im->m, "axes", (size_t)ns, tax));
  LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_EXPAND_DIMS, col, &acc));
  for (int64_t k = 0; k < ns; k++) {
    loom_graph_expr *d, *j, *df, *crd, *th, *term, *ki = loom_graph_const_scalar(im->m, LOOM_DTYPE_I64, (double)(2 + k));
    if (!ki) return LOOM_OOM();
    oimp_add_attr(c, loom_graph_attr_int(im->m, "axis", 0));
    LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_TAKE, 2, (loom_graph_expr *[]){c->args[1], ki}, NULL, &d));
    LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_ARANGE, 3, (loom_graph_expr *[]){zero, d, one}, NULL, &j));
    oimp_add_attr(c, loom_graph_attr_dtype(im->m, "dtype", dt));
    LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_CAST, j, &j));
    oimp_add_attr(c, loom_graph_attr_dtype(im->m, "dtype", dt));
    LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_CAST, d, &df));
    if (ac) {
      LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_SUB, df, 1, &df));
      LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_MAXIMUM, df, 1, &df));
      LOOM_PROPAGATE(oimp_k_op(c, LOOM_GRAPH_OP_MUL, 2, j, &crd));
    } else {
      LOOM_PROPAGATE(oimp_k_op(c, LOOM_GRAPH_OP_MUL, 2, j, &crd));
      LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_ADD, crd, 1, &crd));
    }
    LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_DIV, crd, df, &crd));
    LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_SUB, crd, 1, &crd));
    size_t na = 0;
    for (int64_t a = 0; a < r; a++)
      if (a != 1 + k) axes[na++] = a;
    oimp_add_attr(c, loom_graph_attr_ints(im->m, "axes", na, axes));
    LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_EXPAND_DIMS, crd, &crd));
    loom_graph_expr *ci = loom_graph_const_scalar(im->m, LOOM_DTYPE_I64, (double)(ns - 1 - k));
    if (!ci) return LOOM_OOM();
    oimp_add_attr(c, loom_graph_attr_int(im->m, "axis", 2));
    LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_TAKE, 2, (loom_graph_expr *[]){c->args[0], ci}, NULL, &th));
    oimp_add_attr(c, loom_graph_attr_ints(im->m, "axes", (size_t)ns, tax));
    LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_EXPAND_DIMS, th, &th));
    LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MUL, crd, th, &term));
    LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_ADD, 2, (loom_graph_expr *[]){acc, term}, k == ns - 1 ? c->n->outputs[0] : NULL, &acc));
  }
  *out = acc;
  return LOOM_OK;
}

/* grid (N, spatial.., n) = theta (N, n, n + 1) applied to the homogeneous coordinates
 * (x, y[, z], 1) of every output point, the coordinates spanning [-1, 1] per axis (pixel
 * centres, or the corners with align_corners): a constant (P, n + 1) @ theta^T. */
static loom_status h_affine_grid(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e;
  imp *im = c->im;
  int64_t sz[5], ac;
  size_t n;
  LOOM_PROPAGATE(oimp_attr_int(c, "align_corners", 0, &ac));
  loom_dtype dt = c->args[0]->sinfo->dtype;
  if (dt != LOOM_DTYPE_F32 && dt != LOOM_DTYPE_F64) return UNSUP(c->n, "dtype %s (f32 or f64 only)", loom_dtype_name(dt));
  if (oimp_runtime_input(c, 1)) return affine_grid_dyn(c, ac != 0, dt, out);
  LOOM_PROPAGATE(oimp_const_ints(c, 1, "size", sz, 5, &n));
  if (n != 4 && n != 5) return BAD(c->n, "size has %zu values; expected 4 (N, C, H, W) or 5 (N, C, D, H, W)", n);
  size_t ns = n - 2;
  if (oimp_in_rank(c, 0) != 3 || oimp_const_dim(c, 0, 1) != (int64_t)ns || oimp_const_dim(c, 0, 2) != (int64_t)ns + 1)
    return BAD(c->n, "theta must be (N, %zu, %zu) for a size of %zu values", ns, ns + 1, n);
  int64_t p = 1;
  for (size_t k = 0; k < ns; k++) {
    if (sz[2 + k] < 1) return BAD(c->n, "size entry %zu is %lld; must be >= 1", 2 + k, (long long)sz[2 + k]);
    p *= sz[2 + k];
  }
  if (p > OIMP_FOLD_MAX / 4) return UNSUP(c->n, "a grid of %lld points", (long long)p);
  double *b = malloc((size_t)p * (ns + 1) * sizeof *b);
  if (!b) return LOOM_OOM();
  for (int64_t i = 0; i < p; i++) {
    int64_t rest = i;
    for (size_t k = ns; k-- > 0;) { /* axis 2 + k (last = x) gives coordinate ns - 1 - k */
      int64_t d = sz[2 + k], j = rest % d;
      rest /= d;
      b[i * (int64_t)(ns + 1) + (int64_t)(ns - 1 - k)] = ac ? (d > 1 ? -1 + 2.0 * (double)j / (double)(d - 1) : -1) : (2.0 * (double)j + 1) / (double)d - 1;
    }
    b[i * (int64_t)(ns + 1) + (int64_t)ns] = 1;
  }
  int64_t bd[2] = {p, (int64_t)ns + 1}, perm[3] = {0, 2, 1};
  loom_graph_expr *base, *th, *y;
  loom_status s = float_const(c, dt, 2, bd, b, &base);
  free(b);
  LOOM_PROPAGATE(s);
  LOOM_PROPAGATE(permute_c(c, c->args[0], 3, perm, &th));
  LOOM_PROPAGATE(op2(c, LOOM_GRAPH_OP_MATMUL, base, th, &y));
  const loom_sym_expr *d[6] = {c->args[0]->sinfo->dims[0]};
  for (size_t k = 0; k < ns; k++) d[1 + k] = loom_sym_const(im->cx, sz[2 + k]);
  d[1 + ns] = loom_sym_const(im->cx, (int64_t)ns);
  oimp_add_attr(c, loom_graph_attr_syms(im->m, "shape", ns + 2, d));
  return oimp_emit(c, LOOM_GRAPH_OP_RESHAPE, 1, &y, c->n->outputs[0], out);
}

/* ---- MelWeightMatrix ------------------------------------------------------------------------ */

/* The (dft_length / 2 + 1, num_mel_bins) triangular filter bank, computed here (all inputs are
 * constants) as the reference does, its quirks included: num_mel_bins + 2 band edges spaced by
 * (high - low) mel / (num_mel_bins + 2), each rounded down to a spectrogram bin. */
static loom_status h_mel_weight_matrix(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e;
  static const char *const what[5] = {"num_mel_bins", "dft_length", "sample_rate", "lower_edge_hertz", "upper_edge_hertz"};
  double v[5];
  for (size_t i = 0; i < 5; i++) {
    const loom_onnx_tensor *t = c->consts[i];
    if (!t) return UNSUP(c->n, "input %zu (%s) must be a constant (initializer or Constant)", i, what[i]);
    if (t->numel != 1) return BAD(c->n, "input %zu (%s) must be a scalar", i, what[i]);
    v[i] = oimp_scalar_f64(t);
  }
  int64_t nm = (int64_t)v[0], dl = (int64_t)v[1], sr = (int64_t)v[2], odt;
  LOOM_PROPAGATE(oimp_attr_int(c, "output_datatype", 1, &odt));
  loom_dtype dt;
  if (!loom_onnx_elem_dtype((int32_t)odt, &dt) || (dt != LOOM_DTYPE_F32 && dt != LOOM_DTYPE_F64))
    return UNSUP(c->n, "output_datatype %lld (float or double only)", (long long)odt);
  if (nm < 1 || dl < 1 || sr < 1) return BAD(c->n, "num_mel_bins %lld, dft_length %lld and sample_rate %lld must be >= 1", (long long)nm, (long long)dl, (long long)sr);
  if (nm > 4096 || dl > (1 << 20)) return UNSUP(c->n, "a %lld x %lld matrix", (long long)(dl / 2 + 1), (long long)nm);
  int64_t nb = dl / 2 + 1, dims[2] = {nb, nm};
  int64_t *f = malloc((size_t)(nm + 2) * sizeof *f);
  if (!f) return LOOM_OOM();
  float lo = (float)(2595 * log10(1 + v[3] / 700)), hi = (float)(2595 * log10(1 + v[4] / 700));
  double step = (double)(float)((hi - lo) / (float)(nm + 2));
  for (int64_t i = 0; i < nm + 2; i++) {
    double hz = 700 * (pow(10, ((double)i * step + lo) / 2595) - 1);
    f[i] = (int64_t)floor((double)(dl + 1) * hz / (double)sr);
  }
  loom_onnx_tensor *t = oimp_new_tensor(c->im, dt, 2, dims);
  bool ok = t != NULL;
  double *w = ok ? calloc((size_t)(nb * nm), sizeof *w) : NULL;
  for (int64_t i = 0; w && i < nm && ok; i++) {
    int64_t l = f[i], m = f[i + 1], h = f[i + 2];
    if (l < 0 || h >= nb || l > m || m > h) {
      free(f), free(w);
      return BAD(c->n, "band %lld spans spectrogram bins %lld..%lld outside 0..%lld", (long long)i, (long long)l, (long long)h, (long long)(nb - 1));
    }
    if (m == l) w[m * nm + i] = 1;
    else
      for (int64_t j = l; j <= m; j++) w[j * nm + i] = (double)(j - l) / (double)(m - l);
    for (int64_t j = m; j < h; j++) w[j * nm + i] = (double)(h - j) / (double)(h - m);
  }
  free(f);
  if (!w) return LOOM_OOM();
  for (int64_t i = 0; i < nb * nm; i++) {
    if (dt == LOOM_DTYPE_F32) ((float *)t->data)[i] = (float)w[i];
    else ((double *)t->data)[i] = w[i];
  }
  free(w);
  return oimp_fold_const(c, t, out);
}

const op_entry oimp_imgcomp_table[] = {
    {"CenterCropPad", OIMP_OP_NONE, h_center_crop_pad, 2, 2, " axes ", false},
    {"MaxUnpool", OIMP_OP_NONE, h_max_unpool, 2, 3, " kernel_shape pads strides ", false},
    {"DeformConv", OIMP_OP_NONE, h_deform_conv, 3, 5, " dilations group kernel_shape offset_group pads strides ", false},
    {"RoiAlign", OIMP_OP_NONE, h_roi_align, 3, 3, " coordinate_transformation_mode mode output_height output_width sampling_ratio spatial_scale ", false},
    {"Col2Im", OIMP_OP_NONE, h_col2im, 3, 3, " dilations pads strides ", false},
    {"AffineGrid", OIMP_OP_NONE, h_affine_grid, 2, 2, " align_corners ", false},
    {"MelWeightMatrix", OIMP_OP_NONE, h_mel_weight_matrix, 5, 5, " output_datatype ", false},
};
const size_t oimp_imgcomp_table_len = sizeof oimp_imgcomp_table / sizeof oimp_imgcomp_table[0];
