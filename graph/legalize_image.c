/* legalize_image.c — the image-sampling ops: resize (ONNX Resize), resize2d and grid_sample, to
 * tensorprog/gen_image.c programs. Resize with static output extents (attribute `size`) is one
 * program; with run-time scales or sizes it is expanded (loom_lx, legalize_expand.c) into small
 * programs that compute and bind the extents and the scales, then that same program. */
#include <stdio.h>
#include <string.h>

#include "base/hash.h"
#include "graph/legalize_internal.h"

/* The index of `s` in the NULL-terminated `list`, or -1. */
static int pick(const char *s, const char *const *list) {
  for (int i = 0; list[i]; i++)
    if (!strcmp(s, list[i])) return i;
  return -1;
}

/* Element i of a constant float operand, or false when it is not a constant. */
static bool const_float(const loom_graph_expr *e, size_t i, double *out) {
  const loom_sinfo *si = e->sinfo;
  if (e->kind != LOOM_GRAPH_EXPR_CONST || !e->u.cnst.data || !si || si->kind != LOOM_SINFO_TENSOR) return false;
  size_t es = loom_dtype_size(si->dtype);
  if (!es || (i + 1) * es > e->u.cnst.nbytes) return false;
  if (si->dtype == LOOM_DTYPE_F64) memcpy(out, (const char *)e->u.cnst.data + i * 8, 8);
  else if (si->dtype == LOOM_DTYPE_F32) {
    float f;
    memcpy(&f, (const char *)e->u.cnst.data + i * 4, 4);
    *out = f;
  } else return false;
  return true;
}

static const char *const modes[] = {"nearest", "linear", "cubic", NULL};
static const char *const coords[] = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                                     "asymmetric", "tf_crop_and_resize", NULL};
static const char *const nearests[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil", NULL};

/* The modes of resize `call` on x into *rz (axes and the scale / roi dtypes are the caller's),
 * or UNIMPLEMENTED for what the program does not do. */
static loom_status resize_modes(const loom_graph_expr *call, const loom_sinfo *x, loom_tp_resize *rz) {
  if (x->ndim < 1) return loom_legal_unsupported(call, "of a rank-0 tensor");
  int mode = pick(loom_graph_call_str(call, "mode"), modes), coord = pick(loom_graph_call_str(call, "coord"), coords);
  int nearest = pick(loom_graph_call_str(call, "nearest_mode"), nearests);
  if (mode < 0 || coord < 0 || nearest < 0) return loom_legal_unsupported(call, "for this mode");
  if (mode == LOOM_TP_RESIZE_NEAREST && loom_graph_call_int(call, "antialias"))
    return loom_legal_unsupported(call, "with antialias and mode nearest");
  bool excl = loom_graph_call_int(call, "exclude_outside") != 0;
  if (mode == LOOM_TP_RESIZE_NEAREST && excl) return loom_legal_unsupported(call, "for exclude_outside with mode nearest");
  if (mode != LOOM_TP_RESIZE_NEAREST && !loom_dtype_is_float(x->dtype))
    return loom_legal_unsupported(call, "for interpolation of integer data yet");
  *rz = (loom_tp_resize){.mode = (loom_tp_resize_mode)mode,
                         .coord = (loom_tp_resize_coord)coord,
                         .nearest = (loom_tp_resize_nearest)nearest,
                         .cubic_a = loom_graph_call_float(call, "cubic_coeff_a"),
                         .exclude_outside = excl,
                         .extrapolation = loom_graph_call_float(call, "extrapolation_value"),
                         .scale_t = LOOM_DTYPE_F64,
                         .roi_t = LOOM_DTYPE_F64};
  return LOOM_OK;
}

/* The parameters of a resize program (loom_tp_resize without its padding). */
typedef struct resize_params {
  double cubic_a, extrapolation;
  loom_tp_resize_mode mode;
  loom_tp_resize_coord coord;
  loom_tp_resize_nearest nearest;
  int32_t exclude_outside;
  uint32_t axes;
  loom_dtype scale_t, roi_t, t;
  int32_t rank;
  loom_dtype tout; /* Y's dtype (t: X's) */
} resize_params;
LOOM_TP_GEN_PARAMS(resize_params, 2 * 8 + 10 * 4);

static loom_tp_resize resize_of(const resize_params *p) {
  return (loom_tp_resize){.mode = p->mode, .coord = p->coord, .nearest = p->nearest, .cubic_a = p->cubic_a,
                          .exclude_outside = p->exclude_outside, .extrapolation = p->extrapolation, .axes = p->axes,
                          .scale_t = p->scale_t, .roi_t = p->roi_t};
}

static loom_status gen_resize(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const resize_params *p = params;
  loom_tp_resize rz = resize_of(p);
  return loom_tp_gen_resize_io(loom_graph_module_arena(m), loom_graph_module_sym(m), name, p->t, p->tout, p->rank, &rz, tp);
}

/* Taps per output element of rz over its resized axes (rank axes). */
static int resize_terms(const loom_tp_resize *rz, int rank) {
  int terms = 1, taps = rz->mode == LOOM_TP_RESIZE_CUBIC ? 4 : rz->mode == LOOM_TP_RESIZE_LINEAR ? 2 : 1;
  for (int k = 0; k < rank; k++)
    if (rz->axes >> k & 1) terms *= taps;
  return terms;
}

/* The resize program of rank `rank` from tin to tout under rz (named by its parameters). */
static loom_status resize_pass(int rank, loom_dtype tin, loom_dtype tout, const loom_tp_resize *rz,
                               char *name, size_t cap, resize_params *p) {
  bool crop = rz->coord == LOOM_TP_RESIZE_TF_CROP_AND_RESIZE;
  double key[2] = {rz->cubic_a, rz->extrapolation};
  char io[40];
  snprintf(io, sizeof io, tin == tout ? "%s" : "%s_%s", loom_dtype_name(tin), loom_dtype_name(tout));
  snprintf(name, cap, "resize_%s_r%d_%s_%s_%s_ax%x_%s%s%s%s_%016llx", io, rank, modes[rz->mode], coords[rz->coord],
           nearests[rz->nearest], rz->axes, loom_dtype_name(rz->scale_t), crop ? "_" : "", crop ? loom_dtype_name(rz->roi_t) : "",
           rz->exclude_outside ? "_excl" : "", (unsigned long long)loom_hash_bytes(key, sizeof key));
  *p = (resize_params){.cubic_a = rz->cubic_a, .extrapolation = rz->extrapolation, .mode = rz->mode, .coord = rz->coord,
                       .nearest = rz->nearest, .exclude_outside = rz->exclude_outside, .axes = rz->axes, .scale_t = rz->scale_t,
                       .roi_t = rz->roi_t, .t = tin, .rank = rank, .tout = tout};
  return LOOM_OK;
}

/* The resize program for x (rank, dtype) under rz; UNIMPLEMENTED past the generator's 256 taps
 * per output element. */
static loom_status resize_program(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *x, const loom_tp_resize *rz,
                                  loom_tp_func **tp) {
  if (resize_terms(rz, x->ndim) > 256)
    return loom_legal_unsupported(call, "for more than 256 taps per output element (resize fewer axes)");
  char name[192];
  resize_params p;
  LOOM_PROPAGATE(resize_pass(x->ndim, x->dtype, x->dtype, rz, name, sizeof name, &p));
  return LOOM_LEGAL_PROGRAM(m, name, gen_resize, p, tp);
}

/* Whether a resize under rz runs as one pass per resized axis (sep_chain): interpolating, not
 * tf_crop_and_resize (its extrapolation is not separable), and more than 16 taps per element
 * together (the run-time form resizes every axis: 4 cubic axes are 256 taps, where the passes
 * read 16 per element of the largest pass). */
static bool separable(const loom_tp_resize *rz, int rank) {
  return rz->mode != LOOM_TP_RESIZE_NEAREST && rz->coord != LOOM_TP_RESIZE_TF_CROP_AND_RESIZE && resize_terms(rz, rank) > 16;
}

/* y = resize(x, sc, ..) under rz (separable) ->
 *   y_s<k> = call_tp(@resize_<t>_f64_.._ax<1 << k>, (cur, sc))   per resized axis k in order, f64
 *                                                                between axes; the last is y
 * The weights of every axis are separable, so the sum over every combination of taps is the
 * same sums axis by axis (in f64 both ways, rounded to y's dtype once at the end). */
static loom_status sep_chain(loom_lx *x, const loom_tp_resize *rz, loom_graph_expr *sc, loom_graph_expr **value) {
  const loom_graph_expr *call = x->b->value;
  const loom_sinfo *in = call->u.call.args[0]->sinfo, *out = x->b->var->sinfo;
  int rank = in->ndim, last = -1;
  for (int k = 0; k < rank; k++)
    if (rz->axes >> k & 1) last = k;
  const loom_sym_expr *dims[LOOM_TP_GEN_MAX_RANK];
  memcpy(dims, in->dims, (size_t)rank * sizeof *dims);
  loom_graph_expr *cur = call->u.call.args[0];
  for (int k = 0; k <= last; k++) {
    if (!(rz->axes >> k & 1)) continue;
    loom_tp_resize one = *rz;
    one.axes = 1u << k;
    loom_dtype tout = k == last ? out->dtype : LOOM_DTYPE_F64;
    dims[k] = out->dims[k];
    const loom_sinfo *si = k == last ? out : loom_sinfo_tensor(x->m, tout, rank, dims, in->device);
    if (!si) return LOOM_OOM();
    char name[192];
    resize_params p;
    LOOM_PROPAGATE(resize_pass(rank, cur->sinfo->dtype, tout, &one, name, sizeof name, &p));
    loom_graph_expr *args[2] = {cur, sc};
    if (k == last) return loom_lx_call(x, name, gen_resize, &p, sizeof p, 2, args, out, value);
    char suffix[16];
    snprintf(suffix, sizeof suffix, "s%d", k);
    LOOM_PROPAGATE(loom_lx_add_tp(x, suffix, name, gen_resize, &p, sizeof p, 2, args, si, &cur));
  }
  return loom_legal_unsupported(call, "with no resized axis in a separable chain");
}

/* The resized axes of the static form: an axis is copied when its extent is kept, its
 * (constant) scale is 1 and its roi the whole axis, as the reference skips it; every other
 * axis is resampled (identity there too). */
static unsigned static_axes(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *x, const loom_graph_attr *size,
                            bool crop) {
  loom_sym_ctx *cx = loom_graph_module_sym(m);
  unsigned axes = 0;
  for (int k = 0; k < x->ndim; k++) {
    double s, lo = 0, hi = 1;
    bool copy = loom_sym_prove_eq(cx, size->syms[k], x->dims[k]) == LOOM_SYM_TRUE && const_float(call->u.call.args[1], (size_t)k, &s) &&
                s == 1 && (!crop || (const_float(call->u.call.args[2], (size_t)k, &lo) &&
                                     const_float(call->u.call.args[2], (size_t)(x->ndim + k), &hi) && lo == 0 && hi == 1));
    if (!copy) axes |= 1u << k;
  }
  return axes;
}

/* The static form: attribute `size` gives the output extents, operand 1 the scales of every
 * axis, operand 2 the roi of every axis (tf_crop_and_resize). */
static loom_status legalize_resize(loom_graph_module *m, const loom_graph_expr *call, loom_tp_func **tp) {
  const loom_sinfo *x, *sc, *roi = NULL;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 1, &sc));
  const loom_graph_attr *size = loom_graph_call_attr(call, "size");
  if (!size || (int)size->n != x->ndim)
    return loom_legal_unsupported(call, "without attribute size here (the run-time form is expanded into several bindings)");
  loom_tp_resize rz;
  LOOM_PROPAGATE(resize_modes(call, x, &rz));
  bool crop = rz.coord == LOOM_TP_RESIZE_TF_CROP_AND_RESIZE;
  if (crop) LOOM_PROPAGATE(loom_legal_tensor_arg(call, 2, &roi));
  else if (call->u.call.nargs > 2) return loom_legal_unsupported(call, "with a roi operand outside tf_crop_and_resize");
  if (sc->ndim != 1 || !loom_dtype_is_float(sc->dtype) || (roi && (roi->ndim != 1 || !loom_dtype_is_float(roi->dtype))))
    return loom_legal_unsupported(call, "for scales or roi that are not 1-D float tensors");
  rz.axes = static_axes(m, call, x, size, crop);
  rz.scale_t = sc->dtype;
  if (roi) rz.roi_t = roi->dtype;
  if (loom_graph_call_int(call, "antialias") && rz.axes)
    return loom_legal_unsupported(call, "with antialias as one program (it is one program per axis: legalize_expand)");
  return resize_program(m, call, x, &rz, tp);
}

typedef struct resize2d_params {
  loom_dtype t;
  int32_t linear;
} resize2d_params;
LOOM_TP_GEN_PARAMS(resize2d_params, 2 * 4);

static loom_status gen_resize2d(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const resize2d_params *p = params;
  return loom_tp_gen_resize2d(loom_graph_module_arena(m), loom_graph_module_sym(m), name, p->t, p->linear, tp);
}

static loom_status legalize_resize2d(loom_graph_module *m, const loom_graph_expr *call, loom_tp_func **tp) {
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  if (x->ndim != 4) return loom_legal_unsupported(call, "for a non-NCHW input");
  bool linear = !strcmp(loom_graph_call_str(call, "method"), "linear");
  if (linear && !loom_dtype_is_float(x->dtype)) return loom_legal_unsupported(call, "for interpolation of integer data yet");
  char name[64];
  snprintf(name, sizeof name, "resize2d_%s_%s", loom_dtype_name(x->dtype), linear ? "linear" : "nearest");
  resize2d_params p = {.t = x->dtype, .linear = linear};
  return LOOM_LEGAL_PROGRAM(m, name, gen_resize2d, p, tp);
}

typedef struct grid_params {
  loom_dtype t, grid_t;
  int32_t n;
  loom_tp_resize_mode mode;
  loom_tp_grid_padding padding;
  int32_t align_corners;
} grid_params;
LOOM_TP_GEN_PARAMS(grid_params, 6 * 4);

static loom_status gen_grid_sample(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const grid_params *p = params;
  loom_tp_grid_sample gs = {.n = p->n, .mode = p->mode, .padding = p->padding, .align_corners = p->align_corners};
  return loom_tp_gen_grid_sample(loom_graph_module_arena(m), loom_graph_module_sym(m), name, p->t, p->grid_t, &gs, tp);
}

static loom_status legalize_grid_sample(loom_graph_module *m, const loom_graph_expr *call, loom_tp_func **tp) {
  static const char *const pads[] = {"zeros", "border", "reflection", NULL};
  const loom_sinfo *x, *g;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 1, &g));
  int ns = x->ndim - 2, mode = pick(loom_graph_call_str(call, "mode"), modes), pad = pick(loom_graph_call_str(call, "padding_mode"), pads);
  if (ns < 1 || ns > 3 || g->ndim != ns + 2) return loom_legal_unsupported(call, "for these ranks (1 to 3 spatial axes)");
  if (!loom_dtype_is_float(x->dtype) || !loom_dtype_is_float(g->dtype)) return loom_legal_unsupported(call, "for non-float operands");
  if (mode < 0 || pad < 0) return loom_legal_unsupported(call, "for this mode");
  grid_params p = {.t = x->dtype, .grid_t = g->dtype, .n = ns, .mode = (loom_tp_resize_mode)mode, .padding = (loom_tp_grid_padding)pad,
                   .align_corners = loom_graph_call_int(call, "align_corners") != 0};
  char name[128];
  snprintf(name, sizeof name, "grid_sample_%s_%s_s%d_%s_%s%s", loom_dtype_name(x->dtype), loom_dtype_name(g->dtype), ns, modes[mode],
           pads[pad], p.align_corners ? "_ac" : "");
  return LOOM_LEGAL_PROGRAM(m, name, gen_grid_sample, p, tp);
}

/* The legalize hooks of the image family's resize and grid_sample and the conv family's resize2d. */
loom_status loom_legal_resize(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out, loom_graph_legal *r) {
  (void)out;
  return legalize_resize(m, call, &r->tp);
}

loom_status loom_legal_resize2d(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out, loom_graph_legal *r) {
  (void)out;
  return legalize_resize2d(m, call, &r->tp);
}

loom_status loom_legal_grid_sample(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                                   loom_graph_legal *r) {
  (void)out;
  return legalize_grid_sample(m, call, &r->tp);
}

/* ---- the run-time form ---------------------------------------------------------------------- */

/* The parameters of the small programs of one run-time resize: x's dtype (dims, scales) or the
 * roi's (roi), and loom_tp_resize_rt without its padding; what a program does not read is 0. */
typedef struct rt_params {
  loom_dtype t;
  int32_t rank, na;
  int32_t axes[LOOM_TP_GEN_MAX_RANK]; /* 0 past na */
  int32_t sizes;
  loom_tp_resize_policy policy;       /* sizes only */
  loom_dtype p_t;
} rt_params;
LOOM_TP_GEN_PARAMS(rt_params, (6 + LOOM_TP_GEN_MAX_RANK) * 4);

static loom_tp_resize_rt rt_of(const rt_params *p) {
  loom_tp_resize_rt rt = {.na = p->na, .sizes = p->sizes, .policy = p->policy, .p_t = p->p_t};
  for (int j = 0; j < LOOM_TP_GEN_MAX_RANK; j++) rt.axes[j] = p->axes[j];
  return rt;
}

static loom_status gen_rt_dims(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const rt_params *p = params;
  loom_tp_resize_rt rt = rt_of(p);
  return loom_tp_gen_resize_dims(loom_graph_module_arena(m), loom_graph_module_sym(m), name, p->t, p->rank, &rt, tp);
}

static loom_status gen_rt_scales(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const rt_params *p = params;
  loom_tp_resize_rt rt = rt_of(p);
  return loom_tp_gen_resize_scales(loom_graph_module_arena(m), loom_graph_module_sym(m), name, p->t, p->rank, &rt, tp);
}

/* (its params: sizes 0 and p_t f64, which the roi does not read) */
static loom_status gen_rt_roi(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const rt_params *p = params;
  loom_tp_resize_rt rt = rt_of(p);
  return loom_tp_gen_resize_roi(loom_graph_module_arena(m), loom_graph_module_sym(m), name, p->t, p->rank, &rt, tp);
}

/* ---- antialias -------------------------------------------------------------------------------- */

typedef struct aa_taps_params {
  loom_dtype scale_t;
  int32_t rank;
  loom_tp_resize_mode mode;
} aa_taps_params;
LOOM_TP_GEN_PARAMS(aa_taps_params, 3 * 4);

static loom_status gen_aa_taps(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const aa_taps_params *p = params;
  return loom_tp_gen_resize_aa_taps(loom_graph_module_arena(m), loom_graph_module_sym(m), name, p->scale_t, p->rank, p->mode, tp);
}

/* One axis of an antialiased resize: a resize's parameters but the nearest mode and the axes
 * (0), with the dtypes in (t) and out and the axis. */
typedef struct aa_axis_params {
  resize_params rz;
  loom_dtype tout;
  int32_t axis;
} aa_axis_params;
LOOM_TP_GEN_PARAMS(aa_axis_params, sizeof(resize_params) + 2 * 4);

static loom_status gen_aa_axis(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const aa_axis_params *p = params;
  loom_tp_resize rz = resize_of(&p->rz);
  return loom_tp_gen_resize_aa_axis(loom_graph_module_arena(m), loom_graph_module_sym(m), name, p->rz.t, p->tout, p->rz.rank, p->axis,
                                    &rz, tp);
}

/* y = resize(x, ..., antialias=true) with the full-rank scales sc (and roi) at hand ->
 *   y_taps = call_tp(@resize_aa_taps_.., (sc,))        each axis's tap count, bound to y_n<k>
 *   y_a<k> = call_tp(@resize_aa_.._k<k>, (cur, sc [, roi], y_n<k>))   per resized axis k in
 *                                                      order, f64 between axes; the last is y */
static loom_status aa_chain(loom_lx *x, const loom_tp_resize *rz, loom_graph_expr *sc, loom_graph_expr *roi, loom_graph_expr **value) {
  const loom_graph_expr *call = x->b->value;
  const loom_sinfo *in = call->u.call.args[0]->sinfo, *out = x->b->var->sinfo;
  int rank = in->ndim, last = -1;
  for (int k = 0; k < rank; k++)
    if (rz->axes >> k & 1) last = k;
  aa_taps_params tk = {.scale_t = sc->sinfo->dtype, .rank = rank, .mode = rz->mode};
  const loom_sym_expr *n[LOOM_TP_GEN_MAX_RANK];
  LOOM_PROPAGATE(loom_lx_new_syms(x, "n", rank, n));
  char name[192];
  snprintf(name, sizeof name, "resize_aa_taps_%s_r%d_%s", loom_dtype_name(tk.scale_t), rank, modes[rz->mode]);
  loom_graph_expr *cur = call->u.call.args[0];
  LOOM_PROPAGATE(loom_lx_bind_program(x, "taps", "taps_shape", name, gen_aa_taps, &tk, sizeof tk, 1, &sc, (size_t)rank, n));
  aa_axis_params key = {.rz = {.cubic_a = rz->cubic_a, .extrapolation = rz->extrapolation, .mode = rz->mode, .coord = rz->coord,
                               .exclude_outside = rz->exclude_outside, .scale_t = rz->scale_t, .roi_t = rz->roi_t, .rank = rank}};
  const loom_sym_expr *dims[LOOM_TP_GEN_MAX_RANK];
  memcpy(dims, in->dims, (size_t)rank * sizeof *dims);
  bool crop = rz->coord == LOOM_TP_RESIZE_TF_CROP_AND_RESIZE;
  double hk[2] = {rz->cubic_a, rz->extrapolation};
  for (int k = 0; k <= last; k++) {
    if (!(rz->axes >> k & 1)) continue;
    key.axis = k;
    key.rz.t = cur->sinfo->dtype;
    key.tout = k == last ? out->dtype : LOOM_DTYPE_F64;
    dims[k] = out->dims[k];
    const loom_sinfo *si = k == last ? out : loom_sinfo_tensor(x->m, key.tout, rank, dims, in->device);
    snprintf(name, sizeof name, "resize_aa_%s_%s_r%d_k%d_%s_%s_%s%s%s%s_%016llx", loom_dtype_name(key.rz.t), loom_dtype_name(key.tout), rank,
             k, modes[rz->mode], coords[rz->coord], loom_dtype_name(rz->scale_t), crop ? "_" : "", crop ? loom_dtype_name(rz->roi_t) : "",
             rz->exclude_outside ? "_excl" : "", (unsigned long long)loom_hash_bytes(hk, sizeof hk));
    loom_graph_expr *args[4] = {cur, sc, crop ? roi : NULL, NULL};
    args[crop ? 3 : 2] = loom_graph_sym_new(x->m, n[k]);
    if (!si || !args[crop ? 3 : 2]) return LOOM_OOM();
    size_t na = crop ? 4 : 3;
    if (k == last) return loom_lx_call(x, name, gen_aa_axis, &key, sizeof key, na, args, out, value);
    char suffix[16];
    snprintf(suffix, sizeof suffix, "a%d", k);
    LOOM_PROPAGATE(loom_lx_add_tp(x, suffix, name, gen_aa_axis, &key, sizeof key, na, args, si, &cur));
  }
  return loom_legal_unsupported(call, "with antialias and no resized axis");
}

/* resize(x, scales [, roi], size=[..], antialias=true): the static form, one program per axis. */
static loom_status expand_static_aa(loom_lx *x, loom_graph_expr **value) {
  const loom_graph_expr *call = x->b->value;
  const loom_sinfo *in, *sc, *roi = NULL, *out = x->b->var->sinfo;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &in));
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 1, &sc));
  const loom_graph_attr *size = loom_graph_call_attr(call, "size");
  if (!size || (int)size->n != in->ndim || !out || out->kind != LOOM_SINFO_TENSOR || out->ndim != in->ndim || !out->dims)
    return loom_legal_unsupported(call, "for this form");
  if (loom_dtype_is_lowp(in->dtype)) return loom_legal_unsupported(call, "for low-precision dtypes");
  loom_tp_resize rz;
  LOOM_PROPAGATE(resize_modes(call, in, &rz));
  bool crop = rz.coord == LOOM_TP_RESIZE_TF_CROP_AND_RESIZE;
  if (crop) LOOM_PROPAGATE(loom_legal_tensor_arg(call, 2, &roi));
  else if (call->u.call.nargs > 2) return loom_legal_unsupported(call, "with a roi operand outside tf_crop_and_resize");
  int64_t len;
  if (sc->ndim != 1 || !loom_dtype_is_float(sc->dtype) || loom_dtype_is_lowp(sc->dtype) || !loom_sym_is_const(sc->dims[0], &len) ||
      len != in->ndim || (roi && (roi->ndim != 1 || !loom_dtype_is_float(roi->dtype) || loom_dtype_is_lowp(roi->dtype))))
    return loom_legal_unsupported(call, "for scales or roi that are not 1-D float tensors of every axis");
  rz.axes = static_axes(x->m, call, in, size, crop);
  rz.scale_t = sc->dtype;
  if (roi) rz.roi_t = roi->dtype;
  if (!rz.axes) { /* nothing resampled: the copy program */
    loom_tp_func *tp;
    LOOM_PROPAGATE(resize_program(x->m, call, in, &rz, &tp));
    *value = loom_graph_call_tp(x->m, loom_tp_func_name(tp), call->u.call.nargs, call->u.call.args, out);
    return *value ? LOOM_OK : LOOM_OOM();
  }
  return aa_chain(x, &rz, call->u.call.args[1], crop ? call->u.call.args[2] : NULL, value);
}

/* resize(x, scales, size=[..]) without antialias: one program (legalize_resize), unless it is
 * separable with more than 16 taps per element: then one pass per resized axis (sep_chain). */
static loom_status expand_static_sep(loom_lx *x, loom_graph_expr **value) {
  const loom_graph_expr *call = x->b->value;
  const loom_sinfo *in, *sc, *out = x->b->var->sinfo;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &in));
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 1, &sc));
  const loom_graph_attr *size = loom_graph_call_attr(call, "size");
  if ((int)size->n != in->ndim || !out || out->kind != LOOM_SINFO_TENSOR || out->ndim != in->ndim || !out->dims ||
      loom_dtype_is_lowp(in->dtype) || sc->ndim != 1 || !loom_dtype_is_float(sc->dtype) || loom_dtype_is_lowp(sc->dtype))
    return LOOM_OK; /* legalize_resize decides */
  loom_tp_resize rz;
  loom_status st = resize_modes(call, in, &rz);
  if (st) {
    loom_status_free(st);
    return LOOM_OK;
  }
  if (rz.coord == LOOM_TP_RESIZE_TF_CROP_AND_RESIZE) return LOOM_OK;
  rz.axes = static_axes(x->m, call, in, size, false);
  rz.scale_t = sc->dtype;
  return separable(&rz, in->ndim) ? sep_chain(x, &rz, call->u.call.args[1], value) : LOOM_OK;
}

/* y = resize(x, p [, roi], by=.., axes=.., policy=..) with p (and roi) read at run time ->
 *   y_dims = call_tp(@resize_dims_.., (x, p))         the extents of y, i64 (rank,)
 *   bind y_dims to y's dims                            the resized axes' fresh symbols; x's dims
 *                                                      on the others (checked)
 *   y_scales = call_tp(@resize_scales_.., (x, p))     the f64 scale of every axis (p itself when
 *                                                      it holds the scales of every axis in order)
 *   y_roi = call_tp(@resize_roi_.., (roi,))           the roi of every axis (tf_crop_and_resize,
 *                                                      when `axes` is not every axis in order)
 *   y = call_tp(@resize_.., (x, y_scales [, y_roi]))  the static form's program; the axes not
 *                                                      resized are copied (separable with more
 *                                                      than 16 taps: one pass per axis, sep_chain)
 * Everything refused is refused before a binding is added. */
loom_status loom_legal_expand_resize(loom_lx *x, loom_graph_expr **value) {
  static const char *const policies[] = {"stretch", "not_larger", "not_smaller", NULL};
  const loom_graph_expr *call = x->b->value;
  bool antialias = loom_graph_call_int(call, "antialias") != 0;
  if (loom_graph_call_attr(call, "size")) return antialias ? expand_static_aa(x, value) : expand_static_sep(x, value);
  const loom_sinfo *in, *p, *roi = NULL, *out = x->b->var->sinfo;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &in));
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 1, &p));
  if (!out || out->kind != LOOM_SINFO_TENSOR || out->ndim != in->ndim || !out->dims || out->dtype != in->dtype)
    return loom_legal_unsupported(call, "for this result");
  if (loom_dtype_is_lowp(in->dtype)) return loom_legal_unsupported(call, "for low-precision dtypes");
  loom_tp_resize rz;
  LOOM_PROPAGATE(resize_modes(call, in, &rz));
  int rank = in->ndim, pol = pick(loom_graph_call_str(call, "policy"), policies);
  const char *by = loom_graph_call_str(call, "by");
  loom_tp_resize_rt rt = {.sizes = !strcmp(by, "sizes"), .p_t = p->dtype};
  if (pol < 0 || (!rt.sizes && strcmp(by, "scales"))) return loom_legal_unsupported(call, "for this by / policy");
  rt.policy = rt.sizes ? (loom_tp_resize_policy)pol : LOOM_TP_RESIZE_STRETCH; /* scales have no policy */
  const loom_graph_attr *aa = loom_graph_call_attr(call, "axes");
  if (!aa) {
    rt.na = rank;
    for (int k = 0; k < rank; k++) rt.axes[k] = k;
    rz.axes = (1u << rank) - 1;
  } else {
    if (aa->kind != LOOM_GRAPH_ATTR_SYMS || aa->n > (size_t)rank) return loom_legal_unsupported(call, "for these axes");
    rt.na = (int)aa->n;
    for (int j = 0; j < rt.na; j++) {
      int64_t v;
      if (!loom_sym_is_const(aa->syms[j], &v) || !loom_legal_norm_axis(v, rank, &rt.axes[j]) || (rz.axes >> rt.axes[j] & 1))
        return loom_legal_unsupported(call, "for these axes");
      rz.axes |= 1u << rt.axes[j];
    }
  }
  int64_t n;
  if (p->ndim != 1 || !loom_sym_is_const(p->dims[0], &n) || n != rt.na ||
      (rt.sizes ? p->dtype != LOOM_DTYPE_I64 : !loom_dtype_is_float(p->dtype) || loom_dtype_is_lowp(p->dtype)))
    return loom_legal_unsupported(call, "for a scales / sizes operand that is not one float / i64 value per resized axis");
  bool crop = rz.coord == LOOM_TP_RESIZE_TF_CROP_AND_RESIZE, in_order = rt.na == rank;
  for (int k = 0; k < rt.na; k++) in_order = in_order && rt.axes[k] == k;
  if (crop) {
    LOOM_PROPAGATE(loom_legal_tensor_arg(call, 2, &roi));
    if (roi->ndim != 1 || !loom_sym_is_const(roi->dims[0], &n) || n != 2 * rt.na || !loom_dtype_is_float(roi->dtype) ||
        loom_dtype_is_lowp(roi->dtype))
      return loom_legal_unsupported(call, "for a roi operand that is not two float values per resized axis");
  } else if (call->u.call.nargs > 2) {
    return loom_legal_unsupported(call, "with a roi operand outside tf_crop_and_resize");
  }
  bool own_scales = !in_order || rt.sizes, own_roi = crop && !in_order;
  rz.scale_t = own_scales ? LOOM_DTYPE_F64 : p->dtype;
  rz.roi_t = crop && !own_roi ? roi->dtype : LOOM_DTYPE_F64;
  loom_tp_func *tp = NULL; /* made first: what it refuses adds no binding */
  bool sep = !antialias && separable(&rz, rank);
  if (!antialias && !sep) LOOM_PROPAGATE(resize_program(x->m, call, in, &rz, &tp));

  char axes[LOOM_TP_GEN_MAX_RANK + 1], name[160];
  for (int j = 0; j < rt.na; j++) axes[j] = (char)('0' + rt.axes[j]);
  axes[rt.na] = 0;
  const char *tag = rt.sizes ? policies[pol] : "scales";
  loom_sym_ctx *cx = loom_graph_module_sym(x->m);
  const loom_sym_expr *dr = loom_sym_const(cx, rank), *d2r = loom_sym_const(cx, 2 * (int64_t)rank);
  const loom_sinfo *fvec = loom_sinfo_tensor(x->m, LOOM_DTYPE_F64, 1, &dr, in->device);
  const loom_sinfo *rvec = loom_sinfo_tensor(x->m, LOOM_DTYPE_F64, 1, &d2r, in->device);
  if (!fvec || !rvec) return LOOM_OOM();
  loom_graph_expr *args[3] = {call->u.call.args[0], call->u.call.args[1], crop ? call->u.call.args[2] : NULL};
  rt_params key = {.t = in->dtype, .rank = rank, .na = rt.na, .sizes = rt.sizes, .policy = rt.policy, .p_t = rt.p_t};
  for (int j = 0; j < rt.na; j++) key.axes[j] = rt.axes[j];
  snprintf(name, sizeof name, "resize_dims_%s_r%d_ax%s_%s_%s", loom_dtype_name(in->dtype), rank, axes, tag, loom_dtype_name(p->dtype));
  LOOM_PROPAGATE(loom_lx_bind_program(x, "dims", "shape", name, gen_rt_dims, &key, sizeof key, 2, args, (size_t)rank, out->dims));
  if (own_scales) {
    snprintf(name, sizeof name, "resize_scales_%s_r%d_ax%s_%s_%s", loom_dtype_name(in->dtype), rank, axes, tag, loom_dtype_name(p->dtype));
    LOOM_PROPAGATE(loom_lx_add_tp(x, "scales", name, gen_rt_scales, &key, sizeof key, 2, args, fvec, &args[1]));
  }
  if (own_roi) {
    rt_params rk = {.t = roi->dtype, .rank = rank, .na = rt.na, .p_t = LOOM_DTYPE_F64};
    for (int j = 0; j < rt.na; j++) rk.axes[j] = rt.axes[j];
    snprintf(name, sizeof name, "resize_roi_%s_r%d_ax%s", loom_dtype_name(roi->dtype), rank, axes);
    LOOM_PROPAGATE(loom_lx_add_tp(x, "roi", name, gen_rt_roi, &rk, sizeof rk, 1, &args[2], rvec, &args[2]));
  }
  if (antialias) return aa_chain(x, &rz, args[1], crop ? args[2] : NULL, value);
  if (sep) return sep_chain(x, &rz, args[1], value);
  *value = loom_graph_call_tp(x->m, loom_tp_func_name(tp), crop ? 3 : 2, args, out);
  return *value ? LOOM_OK : LOOM_OOM();
}
