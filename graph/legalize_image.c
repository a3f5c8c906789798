/* legalize_image.c — the image-sampling ops: resize (ONNX Resize with static output extents),
 * resize2d and grid_sample, to tensorprog/gen_image.c programs. */
#include <stdio.h>
#include <string.h>

#include "base/hash.h"
#include "graph/legalize_internal.h"

static const char *str_of(const loom_graph_expr *call, const char *name, const char *dflt) {
  const loom_graph_attr *a = loom_graph_call_attr(call, name);
  return a && a->kind == LOOM_GRAPH_ATTR_STR ? a->s : dflt;
}

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

static loom_status legalize_resize(loom_graph_module *m, const loom_graph_expr *call, loom_tp_func **tp) {
  static const char *const modes[] = {"nearest", "linear", "cubic", NULL};
  static const char *const coords[] = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                                       "asymmetric", "tf_crop_and_resize", NULL};
  static const char *const nearests[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil", NULL};
  const loom_sinfo *x, *sc, *roi = NULL;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 1, &sc));
  const loom_graph_attr *size = loom_graph_call_attr(call, "size");
  if (!size || (int)size->n != x->ndim)
    return loom_legal_unsupported(call, "for run-time scales or sizes (the output extents depend on tensor data)");
  if (x->ndim < 1) return loom_legal_unsupported(call, "of a rank-0 tensor");
  int mode = pick(str_of(call, "mode", "nearest"), modes), coord = pick(str_of(call, "coord", "half_pixel"), coords);
  int nearest = pick(str_of(call, "nearest_mode", "round_prefer_floor"), nearests);
  if (mode < 0 || coord < 0 || nearest < 0) return loom_legal_unsupported(call, "for this mode");
  if (loom_graph_attr_get_int(call, "antialias", 0))
    return loom_legal_unsupported(call, "with antialias yet (its tap count depends on the scale)");
  bool excl = loom_graph_attr_get_int(call, "exclude_outside", 0) != 0;
  if (mode == LOOM_TP_RESIZE_NEAREST && excl) return loom_legal_unsupported(call, "for exclude_outside with mode nearest");
  if (mode != LOOM_TP_RESIZE_NEAREST && !loom_dtype_is_float(x->dtype))
    return loom_legal_unsupported(call, "for interpolation of integer data yet");
  bool crop = coord == LOOM_TP_RESIZE_TF_CROP_AND_RESIZE;
  if (crop) LOOM_PROPAGATE(loom_legal_tensor_arg(call, 2, &roi));
  else if (call->u.call.nargs > 2) return loom_legal_unsupported(call, "with a roi operand outside tf_crop_and_resize");
  if (sc->ndim != 1 || !loom_dtype_is_float(sc->dtype) || (roi && (roi->ndim != 1 || !loom_dtype_is_float(roi->dtype))))
    return loom_legal_unsupported(call, "for scales or roi that are not 1-D float tensors");
  loom_sym_ctx *cx = loom_graph_module_sym(m);
  /* An axis is copied when its extent is kept, its (constant) scale is 1 and its roi the whole
   * axis, as the reference skips it; every other axis is resampled (identity there too). */
  unsigned axes = 0;
  for (int k = 0; k < x->ndim; k++) {
    double s, lo = 0, hi = 1;
    bool copy = loom_sym_prove_eq(cx, size->syms[k], x->dims[k]) == LOOM_SYM_TRUE && const_float(call->u.call.args[1], (size_t)k, &s) &&
                s == 1 && (!crop || (const_float(call->u.call.args[2], (size_t)k, &lo) &&
                                     const_float(call->u.call.args[2], (size_t)(x->ndim + k), &hi) && lo == 0 && hi == 1));
    if (!copy) axes |= 1u << k;
  }
  loom_tp_resize rz = {.mode = (loom_tp_resize_mode)mode,
                       .coord = (loom_tp_resize_coord)coord,
                       .nearest = (loom_tp_resize_nearest)nearest,
                       .cubic_a = loom_graph_attr_get_float(call, "cubic_coeff_a", -0.75),
                       .exclude_outside = excl,
                       .extrapolation = loom_graph_attr_get_float(call, "extrapolation_value", 0),
                       .axes = axes,
                       .scale_t = sc->dtype,
                       .roi_t = roi ? roi->dtype : LOOM_DTYPE_F64};
  double key[2] = {rz.cubic_a, rz.extrapolation};
  char name[160];
  snprintf(name, sizeof name, "resize_%s_r%d_%s_%s_%s_ax%x_%s%s%s%s_%016llx", loom_dtype_name(x->dtype), x->ndim, modes[mode],
           coords[coord], nearests[nearest], axes, loom_dtype_name(sc->dtype), roi ? "_" : "", roi ? loom_dtype_name(roi->dtype) : "",
           excl ? "_excl" : "", (unsigned long long)loom_hash_bytes(key, sizeof key));
  if ((*tp = loom_graph_module_find_tp(m, name))) return LOOM_OK;
  LOOM_PROPAGATE(loom_tp_gen_resize(loom_graph_module_arena(m), cx, name, x->dtype, x->ndim, &rz, tp));
  return loom_graph_module_add_tp(m, *tp);
}

static loom_status legalize_resize2d(loom_graph_module *m, const loom_graph_expr *call, loom_tp_func **tp) {
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  if (x->ndim != 4) return loom_legal_unsupported(call, "for a non-NCHW input");
  bool linear = !strcmp(str_of(call, "method", "nearest"), "linear");
  if (linear && !loom_dtype_is_float(x->dtype)) return loom_legal_unsupported(call, "for interpolation of integer data yet");
  char name[64];
  snprintf(name, sizeof name, "resize2d_%s_%s", loom_dtype_name(x->dtype), linear ? "linear" : "nearest");
  if ((*tp = loom_graph_module_find_tp(m, name))) return LOOM_OK;
  LOOM_PROPAGATE(loom_tp_gen_resize2d(loom_graph_module_arena(m), loom_graph_module_sym(m), name, x->dtype, linear, tp));
  return loom_graph_module_add_tp(m, *tp);
}

static loom_status legalize_grid_sample(loom_graph_module *m, const loom_graph_expr *call, loom_tp_func **tp) {
  static const char *const modes[] = {"nearest", "linear", "cubic", NULL};
  static const char *const pads[] = {"zeros", "border", "reflection", NULL};
  const loom_sinfo *x, *g;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 1, &g));
  int ns = x->ndim - 2, mode = pick(str_of(call, "mode", "linear"), modes), pad = pick(str_of(call, "padding_mode", "zeros"), pads);
  if (ns < 1 || ns > 3 || g->ndim != ns + 2) return loom_legal_unsupported(call, "for these ranks (1 to 3 spatial axes)");
  if (!loom_dtype_is_float(x->dtype) || !loom_dtype_is_float(g->dtype)) return loom_legal_unsupported(call, "for non-float operands");
  if (mode < 0 || pad < 0) return loom_legal_unsupported(call, "for this mode");
  loom_tp_grid_sample gs = {.n = ns,
                            .mode = (loom_tp_resize_mode)mode,
                            .padding = (loom_tp_grid_padding)pad,
                            .align_corners = loom_graph_attr_get_int(call, "align_corners", 0) != 0};
  char name[128];
  snprintf(name, sizeof name, "grid_sample_%s_%s_s%d_%s_%s%s", loom_dtype_name(x->dtype), loom_dtype_name(g->dtype), ns, modes[mode],
           pads[pad], gs.align_corners ? "_ac" : "");
  if ((*tp = loom_graph_module_find_tp(m, name))) return LOOM_OK;
  LOOM_PROPAGATE(loom_tp_gen_grid_sample(loom_graph_module_arena(m), loom_graph_module_sym(m), name, x->dtype, g->dtype, &gs, tp));
  return loom_graph_module_add_tp(m, *tp);
}

loom_status loom_legalize_image(loom_graph_module *m, const loom_graph_expr *call, loom_tp_func **tp) {
  switch (call->u.call.op) {
    case LOOM_GRAPH_OP_RESIZE: return legalize_resize(m, call, tp);
    case LOOM_GRAPH_OP_RESIZE2D: return legalize_resize2d(m, call, tp);
    case LOOM_GRAPH_OP_GRID_SAMPLE: return legalize_grid_sample(m, call, tp);
    default: return loom_legal_unsupported(call, "yet");
  }
}

loom_status loom_legalize_expand_resize(loom_lx *x, loom_graph_expr **value) {
  (void)value;
  return loom_legal_unsupported(x->b->value, "for run-time scales or sizes (the output extents depend on tensor data)");
}
