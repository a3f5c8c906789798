/* onnx_import_image.c — spatial / image ops: Conv, the pools (Max, Average, Lp, with every
 * padding rule, ceil mode and MaxPool's Indices), Resize and Upsample, GridSample, ConvTranspose,
 * LRN (the ops composed of these: onnx_import_imgcomp.c). Cases the legalized 1-D / 2-D graph
 * ops cover (conv1d/conv2d, max_pool2d, avg_pool2d, global_avg_pool2d) keep using them; the rest
 * go to the N-d ops (conv in graph/op_conv.c, the pools and conv_transpose in graph/op_image.c). */
#include <math.h>
#include <string.h>

#include "frontend/onnx/onnx_import_internal.h"

#define MAXS 6 /* spatial axes at most */

loom_graph_attr oimp_str_attr(imp *im, const char *name, const char *s) {
  loom_graph_attr a = loom_graph_attr_int(im->m, name, 0);
  a.kind = LOOM_GRAPH_ATTR_STR;
  a.s = loom_arena_strdup(loom_graph_module_arena(im->m), s);
  return a;
}

/* String attribute `name` (`dflt` when absent). */
loom_status oimp_ints_or(const nctx *c, const char *name, int64_t *buf, size_t want, int64_t dflt) {
  const int64_t *v;
  size_t n;
  bool pr;
  LOOM_PROPAGATE(oimp_attr_ints(c, name, &v, &n, &pr));
  if (pr && n != want) return BAD(c->n, "attribute '%s' has %zu entries, expected %zu", name, n, want);
  for (size_t k = 0; k < want; k++) buf[k] = pr ? v[k] : dflt;
  return LOOM_OK;
}

/* Constant extent of axis `ax` of input i, or -1. */
int64_t oimp_const_dim(const nctx *c, size_t i, int ax) {
  const loom_sinfo *s = c->args[i] ? c->args[i]->sinfo : NULL;
  int64_t v;
  if (!s || s->kind != LOOM_SINFO_TENSOR || !s->dims || ax >= s->ndim || !loom_sym_is_const(s->dims[ax], &v)) return -1;
  return v;
}

/* Pads from auto_pad (SAME_UPPER / SAME_LOWER need constant spatial extents): output
 * ceil(in / stride), total padding (out - 1) * stride + dilated kernel - in, the odd one after
 * (UPPER) or before (LOWER). NOTSET keeps `pads`; VALID zeroes them. */
loom_status oimp_auto_pads(const nctx *c, size_t ns, const int64_t *kern, const int64_t *strides, const int64_t *dil, int64_t *pads) {
  const char *ap;
  LOOM_PROPAGATE(oimp_attr_str(c, "auto_pad", "NOTSET", &ap));
  if (!strcmp(ap, "NOTSET")) return LOOM_OK;
  if (!strcmp(ap, "VALID")) {
    for (size_t k = 0; k < 2 * ns; k++) pads[k] = 0;
    return LOOM_OK;
  }
  bool upper = !strcmp(ap, "SAME_UPPER");
  if (!upper && strcmp(ap, "SAME_LOWER")) return BAD(c->n, "auto_pad '%s' is not NOTSET, VALID, SAME_UPPER or SAME_LOWER", ap);
  for (size_t k = 0; k < ns; k++) {
    int64_t in = oimp_const_dim(c, 0, (int)k + 2);
    if (in < 0) return UNSUP(c->n, "auto_pad %s needs a constant extent on spatial axis %zu", ap, k);
    int64_t out = (in + strides[k] - 1) / strides[k], tot = (out - 1) * strides[k] + dil[k] * (kern[k] - 1) + 1 - in;
    if (tot < 0) tot = 0;
    pads[k] = upper ? tot / 2 : tot - tot / 2;
    pads[ns + k] = tot - pads[k];
  }
  return LOOM_OK;
}

static loom_status h_conv(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e;
  int r = oimp_in_rank(c, 0);
  if (r < 3 || r > MAXS + 2) return UNSUP(c->n, "rank %d input is not supported (1 to %d spatial axes)", r, MAXS);
  size_t ns = (size_t)r - 2;
  int64_t pads[2 * MAXS], strides[MAXS], dil[MAXS], kern[MAXS], g;
  LOOM_PROPAGATE(oimp_ints_or(c, "pads", pads, 2 * ns, 0));
  LOOM_PROPAGATE(oimp_ints_or(c, "strides", strides, ns, 1));
  LOOM_PROPAGATE(oimp_ints_or(c, "dilations", dil, ns, 1));
  for (size_t k = 0; k < ns; k++) kern[k] = oimp_const_dim(c, 1, (int)k + 2);
  if (loom_onnx_node_attr(c->n, "kernel_shape")) LOOM_PROPAGATE(oimp_ints_or(c, "kernel_shape", kern, ns, 1));
  LOOM_PROPAGATE(oimp_auto_pads(c, ns, kern, strides, dil, pads));
  LOOM_PROPAGATE(oimp_attr_int(c, "group", 1, &g));
  oimp_add_attr(c, loom_graph_attr_int(c->im->m, "groups", g));
  oimp_add_attr(c, loom_graph_attr_ints(c->im->m, "dilation", ns, dil));
  oimp_add_attr(c, loom_graph_attr_ints(c->im->m, "strides", ns, strides));
  oimp_add_attr(c, loom_graph_attr_ints(c->im->m, "padding", 2 * ns, pads));
  return oimp_emit(c, ns == 1 ? LOOM_GRAPH_OP_CONV1D : ns == 2 ? LOOM_GRAPH_OP_CONV2D : LOOM_GRAPH_OP_CONV, c->nargs, c->args, c->n->outputs[0], out);
}

/* MaxPool / AveragePool / LpPool / GlobalAveragePool. */
static loom_status h_pool(nctx *c, const op_entry *e, loom_graph_expr **out) {
  int r = oimp_in_rank(c, 0);
  bool maxp = !strcmp(e->onnx, "MaxPool"), lp = !strcmp(e->onnx, "LpPool");
  if (!strcmp(e->onnx, "GlobalAveragePool")) {
    if (r == 4) return oimp_emit(c, LOOM_GRAPH_OP_GLOBAL_AVG_POOL2D, 1, c->args, c->n->outputs[0], out);
    if (r < 3) return UNSUP(c->n, "rank %d input (N, C, spatial...)", r);
    int64_t ax[MAXS];
    for (int k = 2; k < r; k++) ax[k - 2] = k;
    oimp_add_attr(c, loom_graph_attr_ints(c->im->m, "axes", (size_t)r - 2, ax));
    oimp_add_attr(c, loom_graph_attr_bool(c->im->m, "keepdims", true));
    return oimp_emit(c, LOOM_GRAPH_OP_MEAN, 1, c->args, c->n->outputs[0], out);
  }
  if (r < 3 || r > MAXS + 2) return UNSUP(c->n, "rank %d input is not supported", r);
  size_t ns = (size_t)r - 2;
  int64_t pads[2 * MAXS], strides[MAXS], dil[MAXS], kern[MAXS], ceil_mode, incl = 0, so = 0, p = 2;
  if (!loom_onnx_node_attr(c->n, "kernel_shape")) return BAD(c->n, "attribute 'kernel_shape' is required");
  LOOM_PROPAGATE(oimp_ints_or(c, "kernel_shape", kern, ns, 1));
  LOOM_PROPAGATE(oimp_ints_or(c, "pads", pads, 2 * ns, 0));
  LOOM_PROPAGATE(oimp_ints_or(c, "strides", strides, ns, 1));
  LOOM_PROPAGATE(oimp_ints_or(c, "dilations", dil, ns, 1));
  for (size_t k = 0; k < ns; k++)
    if (kern[k] < 1 || strides[k] < 1 || dil[k] < 1) return BAD(c->n, "kernel_shape, strides and dilations must be >= 1 (axis %zu)", k);
  for (size_t k = 0; k < 2 * ns; k++)
    if (pads[k] < 0) return BAD(c->n, "pads must be >= 0 (entry %zu is %lld)", k, (long long)pads[k]);
  LOOM_PROPAGATE(oimp_auto_pads(c, ns, kern, strides, dil, pads));
  LOOM_PROPAGATE(oimp_attr_int(c, "ceil_mode", 0, &ceil_mode));
  if (!maxp) LOOM_PROPAGATE(oimp_attr_int(c, "count_include_pad", 0, &incl));
  if (maxp) LOOM_PROPAGATE(oimp_attr_int(c, "storage_order", 0, &so));
  if (lp) LOOM_PROPAGATE(oimp_attr_int(c, "p", 2, &p));
  if (so != 0 && so != 1) return BAD(c->n, "storage_order is %lld; must be 0 or 1", (long long)so);
  if (lp && p < 1) return BAD(c->n, "p is %lld; must be >= 1", (long long)p);
  bool indices = maxp && c->n->n_outputs > 1 && *c->n->outputs[1];
  bool dil1 = true;
  for (size_t k = 0; k < ns; k++) dil1 = dil1 && dil[k] == 1;
  bool legacy = r == 4 && dil1 && !ceil_mode && !incl && !lp && !indices; /* the legalized 2-D ops */
  imp *im = c->im;
  oimp_add_attr(c, loom_graph_attr_ints(im->m, "kernel", ns, kern));
  oimp_add_attr(c, loom_graph_attr_ints(im->m, "strides", ns, strides));
  oimp_add_attr(c, loom_graph_attr_ints(im->m, "padding", 2 * ns, pads));
  if (legacy) return oimp_emit(c, maxp ? LOOM_GRAPH_OP_MAX_POOL2D : LOOM_GRAPH_OP_AVG_POOL2D, 1, c->args, c->n->outputs[0], out);
  oimp_add_attr(c, loom_graph_attr_ints(im->m, "dilation", ns, dil));
  if (ceil_mode) oimp_add_attr(c, loom_graph_attr_bool(im->m, "ceil_mode", true));
  if (incl) oimp_add_attr(c, loom_graph_attr_bool(im->m, "count_include_pad", true));
  if (lp) oimp_add_attr(c, loom_graph_attr_int(im->m, "p", p));
  loom_graph_attr saved[8];
  size_t nsaved = c->nattrs;
  memcpy(saved, c->attrs, nsaved * sizeof *saved);
  LOOM_PROPAGATE(oimp_emit(c, maxp ? LOOM_GRAPH_OP_MAX_POOL : lp ? LOOM_GRAPH_OP_LP_POOL : LOOM_GRAPH_OP_AVG_POOL, 1, c->args, c->n->outputs[0], out));
  if (!indices) return LOOM_OK;
  memcpy(c->attrs, saved, nsaved * sizeof *saved);
  c->nattrs = nsaved;
  if (so) oimp_add_attr(c, loom_graph_attr_int(im->m, "storage_order", so));
  loom_graph_expr *ix;
  LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_MAX_POOL_INDICES, 1, c->args, c->n->outputs[1], &ix));
  return oimp_bind(im, c->n->outputs[1], ix, NULL);
}

/* ---- Resize ------------------------------------------------------------------------------ */

/* Values of constant float input i. */
static loom_status const_floats(const nctx *c, size_t i, const char *what, double *buf, size_t cap, size_t *n) {
  const loom_onnx_tensor *t = c->consts[i];
  if (!t) return UNSUP(c->n, "input %zu (%s) must be a constant (initializer or Constant)", i, what);
  if (t->rank > 1 || (size_t)t->numel > cap) return UNSUP(c->n, "input %zu (%s) must be a small 1-D tensor", i, what);
  for (int64_t k = 0; k < t->numel; k++) {
    if (t->dtype == LOOM_DTYPE_F32) buf[k] = ((const float *)t->data)[k];
    else if (t->dtype == LOOM_DTYPE_F64) buf[k] = ((const double *)t->data)[k];
    else if (t->dtype == LOOM_DTYPE_F16 || t->dtype == LOOM_DTYPE_BF16) return UNSUP(c->n, "input %zu (%s) must be float32 or float64", i, what);
    else return BAD(c->n, "input %zu (%s) must be a float tensor", i, what);
  }
  *n = (size_t)t->numel;
  return LOOM_OK;
}

static loom_status f64_const(nctx *c, size_t n, const double *v, loom_graph_expr **out) {
  int64_t d = (int64_t)n;
  loom_onnx_tensor *t = oimp_new_tensor(c->im, LOOM_DTYPE_F64, 1, &d);
  if (!t) return LOOM_OOM();
  memcpy(t->data, v, n * sizeof *v);
  *out = oimp_const_of(c->im, t);
  return *out ? LOOM_OK : LOOM_OOM();
}

static loom_status emit_resize(nctx *c, const char *mode, const char *coord, const char *nm, double a, int64_t excl, double extrap,
                               int64_t aa, loom_graph_expr **args, size_t nargs, loom_graph_expr **out);

/* Run-time sizes that the importer computed from shapes (an exporter's `interpolate(size=(h // 8,
 * w // 8))`): the resize's fresh output extents are those expressions, which a match_cast states
 * and the VM checks when it runs. The output then reads `floordiv(h, 8)` instead of a fresh
 * symbol named after an internal value. sv NULL: nothing to state. */
static loom_status sizes_from_shapes(nctx *c, const oimp_symval *sv, const int64_t *ax, size_t na, loom_graph_expr **out) {
  if (!sv || sv->n != na) return LOOM_OK;
  const loom_sinfo *si = (*out)->sinfo;
  if (si->kind != LOOM_SINFO_TENSOR || si->ndim < 0 || !si->dims || si->ndim > 8) return LOOM_OK;
  const loom_sym_expr *dims[8];
  memcpy(dims, si->dims, (size_t)si->ndim * sizeof *dims);
  for (size_t k = 0; k < na; k++) dims[ax[k]] = sv->v[k];
  const loom_sinfo *to = loom_sinfo_tensor(c->im->m, si->dtype, si->ndim, dims, NULL);
  char buf[256];
  snprintf(buf, sizeof buf, "%s_sized", c->n->outputs[0]);
  const char *nm = oimp_ir_name(c->im, buf);
  if (!to || !nm) return LOOM_OOM();
  loom_status s = loom_graph_builder_match_cast(&c->im->b, *out, to, nm, out);
  if (s) {
    loom_status e = oimp_node_err(loom_status_code(s), c->n, "%s", loom_status_message(s));
    loom_status_free(s);
    return e;
  }
  return LOOM_OK;
}

/* Run-time sizes known from shapes, stretched: an axis whose size is provably its input extent
 * keeps its scale at exactly 1, where every coordinate mode but tf_crop_and_resize maps output
 * index i to input i (its taps are i alone; its weights 1 and 0): it is copied, as ONNX Runtime
 * and PyTorch do, and left out of `axes` and of the sizes (torch's `interpolate(size=x.shape[2:])`
 * exports the sizes of every axis, batch and channels too: 16 taps per element instead of 4).
 * Rewrites ax / na / sv and *sizes (a sym_tensor of the kept sizes), with *dropped true, when an
 * axis goes and one stays. */
static loom_status drop_kept_axes(nctx *c, int64_t *ax, size_t *na, oimp_symval *sv, loom_graph_expr **sizes, bool *dropped) {
  *dropped = false;
  const loom_sinfo *si = c->args[0]->sinfo;
  size_t keep = 0;
  for (size_t k = 0; k < *na; k++)
    if (loom_sym_prove_eq(c->im->cx, sv->v[k], si->dims[ax[k]]) != LOOM_SYM_TRUE) ax[keep] = ax[k], sv->v[keep++] = sv->v[k];
  if (keep == *na || keep == 0) return LOOM_OK; /* nothing to drop, or nothing resized (the program copies) */
  *na = keep;
  sv->n = keep;
  char buf[256];
  snprintf(buf, sizeof buf, "%s_sizes", c->n->outputs[0]);
  *dropped = true;
  return oimp_symval_expr(c->im, buf, sv, sizes);
}

static loom_status h_resize(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e;
  imp *im = c->im;
  int r = oimp_in_rank(c, 0);
  if (r < 1 || r > 8) return UNSUP(c->n, "rank %d input", r);
  const char *mode, *coord, *nm, *policy;
  double a, extrap;
  int64_t excl, aa, ax[8];
  size_t na = (size_t)r;
  bool v10 = im->opset < 11;
  LOOM_PROPAGATE(oimp_attr_str(c, "mode", "nearest", &mode));
  LOOM_PROPAGATE(oimp_attr_str(c, "coordinate_transformation_mode", v10 ? "asymmetric" : "half_pixel", &coord));
  LOOM_PROPAGATE(oimp_attr_str(c, "nearest_mode", v10 ? "floor" : "round_prefer_floor", &nm));
  LOOM_PROPAGATE(oimp_attr_str(c, "keep_aspect_ratio_policy", "stretch", &policy));
  LOOM_PROPAGATE(oimp_attr_float(c, "cubic_coeff_a", -0.75, &a));
  LOOM_PROPAGATE(oimp_attr_float(c, "extrapolation_value", 0, &extrap));
  LOOM_PROPAGATE(oimp_attr_int(c, "exclude_outside", 0, &excl));
  LOOM_PROPAGATE(oimp_attr_int(c, "antialias", 0, &aa));
  if (!strcmp(mode, "bilinear") || !strcmp(mode, "trilinear")) mode = "linear"; /* Upsample-era spellings */
  if (strcmp(mode, "nearest") && strcmp(mode, "linear") && strcmp(mode, "cubic")) return BAD(c->n, "mode '%s' is not nearest, linear or cubic", mode);
  bool stretch = !strcmp(policy, "stretch"), not_larger = !strcmp(policy, "not_larger");
  if (!stretch && !not_larger && strcmp(policy, "not_smaller")) return BAD(c->n, "keep_aspect_ratio_policy '%s' is not stretch, not_larger or not_smaller", policy);
  bool present;
  const int64_t *av;
  LOOM_PROPAGATE(oimp_attr_ints(c, "axes", &av, &na, &present));
  if (!present) {
    na = (size_t)r;
    for (int k = 0; k < r; k++) ax[k] = k;
  } else {
    if (na > (size_t)r) return BAD(c->n, "axes has %zu entries for rank %d", na, r);
    memcpy(ax, av, na * sizeof *av);
    LOOM_PROPAGATE(oimp_norm_axes(c, r, ax, na));
  }
  size_t i_roi = v10 ? 99 : 1, i_scales = v10 ? 1 : 2, i_sizes = v10 ? 99 : 3;
  double scales[8], roi[16], tmp[16];
  const loom_sym_expr *size[8];
  const loom_sinfo *si = c->args[0]->sinfo;
  for (int k = 0; k < r; k++) scales[k] = 1, roi[k] = 0, roi[r + k] = 1, size[k] = si->dims[k];
  size_t n;
  bool use_sizes = oimp_has_input(c, i_sizes), crop = !strcmp(coord, "tf_crop_and_resize");
  if (use_sizes && oimp_has_input(c, i_scales) && (!c->consts[i_scales] || c->consts[i_scales]->numel))
    return BAD(c->n, "scales and sizes are both given");
  if (!use_sizes && !oimp_has_input(c, i_scales)) return BAD(c->n, "one of scales and sizes is required");
  if (crop && !oimp_has_input(c, i_roi)) return BAD(c->n, "coordinate_transformation_mode tf_crop_and_resize needs roi");
  size_t i_p = use_sizes ? i_sizes : i_scales;
  bool sym_in = false; /* constant sizes of an axis whose extent is symbolic: its scale is known at run time only */
  for (size_t k = 0; use_sizes && k < na; k++) sym_in |= oimp_const_dim(c, 0, (int)ax[k]) < 0;
  if (!c->consts[i_p] || (crop && !c->consts[i_roi]) || sym_in) {
    /* run-time scales / sizes / roi: the output extents of the resized axes are fresh symbols
     * (or the sizes, when they are known) */
    loom_graph_expr *args[3] = {c->args[0], c->args[i_p], crop ? c->args[i_roi] : NULL};
    oimp_symval sv, *known = use_sizes && stretch && oimp_symval_of(c, i_sizes, &sv) && sv.n == na ? &sv : NULL;
    if (known && !crop) {
      bool dropped;
      LOOM_PROPAGATE(drop_kept_axes(c, ax, &na, known, &args[1], &dropped));
      present = present || dropped;
    }
    if (present) oimp_add_attr(c, loom_graph_attr_ints(im->m, "axes", na, ax));
    oimp_add_attr(c, oimp_str_attr(im, "by", use_sizes ? "sizes" : "scales"));
    if (!stretch) oimp_add_attr(c, oimp_str_attr(im, "policy", policy));
    LOOM_PROPAGATE(emit_resize(c, mode, coord, nm, a, excl, extrap, aa, args, crop ? 3 : 2, out));
    return sizes_from_shapes(c, known, ax, na, out);
  }
  if (use_sizes) {
    int64_t sz[8];
    LOOM_PROPAGATE(oimp_const_ints(c, i_sizes, "sizes", sz, 8, &n));
    if (n != na) return BAD(c->n, "sizes has %zu values for %zu axes", n, na);
    double sel = not_larger ? INFINITY : -INFINITY;
    for (size_t k = 0; k < na; k++) {
      int64_t in = oimp_const_dim(c, 0, (int)ax[k]);
      if (in == 0) return UNSUP(c->n, "sizes needs a non-zero extent on axis %lld", (long long)ax[k]);
      if (sz[k] < 0) return BAD(c->n, "sizes entry %zu is %lld", k, (long long)sz[k]);
      scales[ax[k]] = (double)sz[k] / (double)in;
      if (not_larger ? scales[ax[k]] < sel : scales[ax[k]] > sel) sel = scales[ax[k]];
    }
    for (size_t k = 0; k < na; k++) {
      int64_t in = oimp_const_dim(c, 0, (int)ax[k]);
      if (!stretch) scales[ax[k]] = sel, sz[k] = (int64_t)(sel * (double)in + 0.5);
      size[ax[k]] = loom_sym_const(im->cx, sz[k]);
    }
  } else {
    LOOM_PROPAGATE(const_floats(c, i_scales, "scales", tmp, 8, &n));
    if (n != na) return BAD(c->n, "scales has %zu values for %zu axes", n, na);
    for (size_t k = 0; k < na; k++) {
      if (!(tmp[k] > 0)) return BAD(c->n, "scales entry %zu is %g; must be > 0", k, tmp[k]);
      scales[ax[k]] = tmp[k];
      int64_t in = oimp_const_dim(c, 0, (int)ax[k]);
      if (in >= 0) size[ax[k]] = loom_sym_const(im->cx, (int64_t)floor(tmp[k] * (double)in));
      else if (tmp[k] == floor(tmp[k])) size[ax[k]] = loom_sym_mul(im->cx, si->dims[ax[k]], loom_sym_const(im->cx, (int64_t)tmp[k]));
      else return UNSUP(c->n, "a fractional scale on axis %lld needs a constant extent", (long long)ax[k]);
    }
  }
  if (crop) {
    LOOM_PROPAGATE(const_floats(c, i_roi, "roi", tmp, 16, &n));
    if (n != 2 * na) return BAD(c->n, "roi has %zu values for %zu axes", n, na);
    for (size_t k = 0; k < na; k++) roi[ax[k]] = tmp[k], roi[r + ax[k]] = tmp[na + k];
  }
  loom_graph_expr *args[3] = {c->args[0]};
  LOOM_PROPAGATE(f64_const(c, (size_t)r, scales, &args[1]));
  if (crop) LOOM_PROPAGATE(f64_const(c, 2 * (size_t)r, roi, &args[2]));
  oimp_add_attr(c, loom_graph_attr_syms(im->m, "size", (size_t)r, size));
  return emit_resize(c, mode, coord, nm, a, excl, extrap, aa, args, crop ? 3 : 2, out);
}

static loom_status emit_resize(nctx *c, const char *mode, const char *coord, const char *nm, double a, int64_t excl, double extrap,
                               int64_t aa, loom_graph_expr **args, size_t nargs, loom_graph_expr **out) {
  imp *im = c->im;
  bool crop = !strcmp(coord, "tf_crop_and_resize");
  oimp_add_attr(c, oimp_str_attr(im, "mode", mode));
  oimp_add_attr(c, oimp_str_attr(im, "coord", coord));
  if (!strcmp(mode, "nearest")) oimp_add_attr(c, oimp_str_attr(im, "nearest_mode", nm));
  if (!strcmp(mode, "cubic")) oimp_add_attr(c, loom_graph_attr_float(im->m, "cubic_coeff_a", a));
  if (excl) oimp_add_attr(c, loom_graph_attr_bool(im->m, "exclude_outside", true));
  if (crop) oimp_add_attr(c, loom_graph_attr_float(im->m, "extrapolation_value", extrap));
  if (aa) oimp_add_attr(c, loom_graph_attr_bool(im->m, "antialias", true));
  return oimp_emit(c, LOOM_GRAPH_OP_RESIZE, nargs, args, c->n->outputs[0], out);
}

/* ---- GridSample, ConvTranspose ----------------------------------------------------------- */

static loom_status h_grid_sample(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e;
  const char *mode, *pad;
  int64_t ac;
  LOOM_PROPAGATE(oimp_attr_str(c, "mode", "linear", &mode));
  LOOM_PROPAGATE(oimp_attr_str(c, "padding_mode", "zeros", &pad));
  LOOM_PROPAGATE(oimp_attr_int(c, "align_corners", 0, &ac));
  if (!strcmp(mode, "bilinear")) mode = "linear"; /* opset 16 spellings */
  if (!strcmp(mode, "bicubic")) mode = "cubic";
  if (strcmp(mode, "nearest") && strcmp(mode, "linear") && strcmp(mode, "cubic")) return BAD(c->n, "mode '%s' is not nearest, linear or cubic", mode);
  if (strcmp(pad, "zeros") && strcmp(pad, "border") && strcmp(pad, "reflection")) return BAD(c->n, "padding_mode '%s' is not zeros, border or reflection", pad);
  oimp_add_attr(c, oimp_str_attr(c->im, "mode", mode));
  oimp_add_attr(c, oimp_str_attr(c->im, "padding_mode", pad));
  if (ac) oimp_add_attr(c, loom_graph_attr_bool(c->im->m, "align_corners", true));
  return oimp_emit(c, LOOM_GRAPH_OP_GRID_SAMPLE, 2, c->args, c->n->outputs[0], out);
}

/* ConvTranspose: output_shape and auto_pad SAME_* become explicit padding (before, after) of
 * the full transposed convolution s * (in - 1) + output_padding + d * (k - 1) + 1. */
static loom_status h_conv_transpose(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e;
  int r = oimp_in_rank(c, 0);
  if (r < 3 || r > MAXS + 2) return UNSUP(c->n, "rank %d input (N, C, spatial...)", r);
  size_t ns = (size_t)r - 2;
  int64_t pads[2 * MAXS], strides[MAXS], dil[MAXS], kern[MAXS], opad[MAXS], oshape[MAXS], g;
  const char *ap;
  LOOM_PROPAGATE(oimp_ints_or(c, "pads", pads, 2 * ns, 0));
  LOOM_PROPAGATE(oimp_ints_or(c, "strides", strides, ns, 1));
  LOOM_PROPAGATE(oimp_ints_or(c, "dilations", dil, ns, 1));
  LOOM_PROPAGATE(oimp_ints_or(c, "output_padding", opad, ns, 0));
  LOOM_PROPAGATE(oimp_attr_int(c, "group", 1, &g));
  LOOM_PROPAGATE(oimp_attr_str(c, "auto_pad", "NOTSET", &ap));
  for (size_t k = 0; k < ns; k++) kern[k] = oimp_const_dim(c, 1, (int)k + 2);
  bool same = !strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER"), has_os = loom_onnx_node_attr(c->n, "output_shape") != NULL;
  if (!same && strcmp(ap, "NOTSET") && strcmp(ap, "VALID")) return BAD(c->n, "auto_pad '%s' is not NOTSET, VALID, SAME_UPPER or SAME_LOWER", ap);
  if (!strcmp(ap, "VALID"))
    for (size_t k = 0; k < 2 * ns; k++) pads[k] = 0;
  if (has_os) {
    const int64_t *v;
    size_t n;
    bool pr;
    LOOM_PROPAGATE(oimp_attr_ints(c, "output_shape", &v, &n, &pr));
    if (n != ns && n != ns + 2) return BAD(c->n, "output_shape has %zu entries for %zu spatial axes", n, ns);
    for (size_t k = 0; k < ns; k++) oshape[k] = v[n - ns + k];
  }
  if (same || has_os) {
    for (size_t k = 0; k < ns; k++) {
      int64_t in = oimp_const_dim(c, 0, (int)k + 2);
      if (in < 0 || kern[k] < 0) return UNSUP(c->n, "output_shape / auto_pad need constant input and kernel extents (axis %zu)", k);
      int64_t full = strides[k] * (in - 1) + opad[k] + dil[k] * (kern[k] - 1) + 1, want = has_os ? oshape[k] : in * strides[k];
      if (same) {
        int64_t tot = full - want;
        pads[k] = !strcmp(ap, "SAME_UPPER") ? tot / 2 : tot - tot / 2;
        pads[ns + k] = tot - pads[k];
      } else {
        pads[ns + k] = full - pads[k] - want; /* the reference keeps the given pads before */
      }
    }
  }
  oimp_add_attr(c, loom_graph_attr_ints(c->im->m, "strides", ns, strides));
  oimp_add_attr(c, loom_graph_attr_ints(c->im->m, "padding", 2 * ns, pads));
  oimp_add_attr(c, loom_graph_attr_ints(c->im->m, "dilation", ns, dil));
  oimp_add_attr(c, loom_graph_attr_ints(c->im->m, "output_padding", ns, opad));
  oimp_add_attr(c, loom_graph_attr_int(c->im->m, "groups", g));
  return oimp_emit(c, LOOM_GRAPH_OP_CONV_TRANSPOSE, c->nargs, c->args, c->n->outputs[0], out);
}

/* ---- LRN ------------------------------------------------------------------------------------ */


/* LRN: x / (bias + alpha * mean of x^2 over `size` channels around c)^beta; the channel window
 * is an avg_pool (padding counted) over (N, 1, C, rest). */
static loom_status h_lrn(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e;
  imp *im = c->im;
  const loom_sinfo *si = c->args[0]->sinfo;
  int r = oimp_in_rank(c, 0);
  if (r < 3 || !si->dims) return UNSUP(c->n, "rank %d input (N, C, spatial...)", r);
  if (si->dtype != LOOM_DTYPE_F32 && si->dtype != LOOM_DTYPE_F64) return UNSUP(c->n, "dtype %s (f32 or f64 only)", loom_dtype_name(si->dtype));
  double alpha, beta, bias;
  int64_t size;
  LOOM_PROPAGATE(oimp_attr_float(c, "alpha", 1e-4, &alpha));
  LOOM_PROPAGATE(oimp_attr_float(c, "beta", 0.75, &beta));
  LOOM_PROPAGATE(oimp_attr_float(c, "bias", 1, &bias));
  if (!loom_onnx_node_attr(c->n, "size")) return BAD(c->n, "attribute 'size' is required");
  LOOM_PROPAGATE(oimp_attr_int(c, "size", 1, &size));
  if (size < 1) return BAD(c->n, "size is %lld; must be >= 1", (long long)size);
  loom_graph_expr *x = c->args[0], *sq, *pooled, *k, *t;
  loom_graph_expr *xx[2] = {x, x};
  LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_MUL, 2, xx, NULL, &sq));
  const loom_sym_expr *rest = loom_sym_const(im->cx, 1);
  for (int k2 = 2; k2 < r; k2++) rest = loom_sym_mul(im->cx, rest, si->dims[k2]);
  const loom_sym_expr *d4[4] = {si->dims[0], loom_sym_const(im->cx, 1), si->dims[1], rest};
  oimp_add_attr(c, loom_graph_attr_syms(im->m, "shape", 4, d4));
  LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_RESHAPE, 1, &sq, NULL, &sq));
  int64_t kern[2] = {size, 1}, pads[4] = {(size - 1) / 2, 0, size - 1 - (size - 1) / 2, 0};
  oimp_add_attr(c, loom_graph_attr_ints(im->m, "kernel", 2, kern));
  oimp_add_attr(c, loom_graph_attr_ints(im->m, "padding", 4, pads));
  oimp_add_attr(c, loom_graph_attr_bool(im->m, "count_include_pad", true));
  LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_AVG_POOL, 1, &sq, NULL, &pooled));
  oimp_add_attr(c, loom_graph_attr_syms(im->m, "shape", (size_t)r, si->dims));
  LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_RESHAPE, 1, &pooled, NULL, &pooled));
  LOOM_PROPAGATE(oimp_scalar(c, si->dtype, alpha, &k));
  loom_graph_expr *a[2] = {pooled, k};
  LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_MUL, 2, a, NULL, &t));
  LOOM_PROPAGATE(oimp_scalar(c, si->dtype, bias, &k));
  a[0] = t, a[1] = k;
  LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_ADD, 2, a, NULL, &t));
  LOOM_PROPAGATE(oimp_scalar(c, si->dtype, beta, &k));
  a[0] = t, a[1] = k;
  LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_POW, 2, a, NULL, &t));
  a[0] = x, a[1] = t;
  return oimp_emit(c, LOOM_GRAPH_OP_DIV, 2, a, c->n->outputs[0], out);
}

#define NOATTR " "
#define POOL " auto_pad ceil_mode dilations kernel_shape pads strides "
const op_entry oimp_image_table[] = {
    {"Conv", OIMP_OP_NONE, h_conv, 2, 3, " auto_pad dilations group kernel_shape pads strides ", false},
    {"MaxPool", OIMP_OP_NONE, h_pool, 1, 1, POOL "storage_order ", true},
    {"AveragePool", OIMP_OP_NONE, h_pool, 1, 1, POOL "count_include_pad ", false},
    {"LpPool", OIMP_OP_NONE, h_pool, 1, 1, POOL "p ", false},
    {"GlobalAveragePool", OIMP_OP_NONE, h_pool, 1, 1, NOATTR, false},
    {"GridSample", OIMP_OP_NONE, h_grid_sample, 2, 2, " align_corners mode padding_mode ", false},
    {"ConvTranspose", OIMP_OP_NONE, h_conv_transpose, 2, 3, " auto_pad dilations group kernel_shape output_padding output_shape pads strides ", false},
    {"Upsample", OIMP_OP_NONE, h_resize, 2, 2, " mode ", false},
    {"LRN", OIMP_OP_NONE, h_lrn, 1, 1, " alpha beta bias size ", false},
    {"Resize", OIMP_OP_NONE, h_resize, 1, 4,
     " antialias axes coordinate_transformation_mode cubic_coeff_a exclude_outside extrapolation_value keep_aspect_ratio_policy mode nearest_mode ",
     false},
};
const size_t oimp_image_table_len = sizeof oimp_image_table / sizeof oimp_image_table[0];
