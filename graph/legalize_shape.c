/* legalize_shape.c — the legalize hooks of the shape family (op_shape.c): reshape and the
 * other views, permute_dims, concat, broadcast_to, strided_slice, pad, tile and repeat, to
 * the programs of tensorprog/gen_shape.c. Their forms with a run-time operand (axes, shape,
 * starts / ends, pads) become several bindings instead (legalize_expand.c). */
#include <stdio.h>
#include <string.h>

#include "base/hash.h"
#include "graph/legalize_internal.h"

/* reshape, expand_dims, squeeze, flatten: the output's dims come from inference; the
 * program only reinterprets the row-major order. */
loom_status loom_legal_reshape(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                               loom_graph_legal *r) {
  if (call->u.call.nargs > 1) {
    if (call->u.call.op != LOOM_GRAPH_OP_RESHAPE) return loom_legal_runtime_operand(call, "axes");
    const loom_sinfo *s = call->u.call.args[1]->sinfo;
    if (s && s->kind == LOOM_SINFO_TENSOR) return loom_legal_runtime_operand(call, "shape");
    /* the target shape as a Shape argument is fine too: the program ignores it */
    return loom_legal_unsupported(call, "with a Shape argument yet");
  }
  loom_tp_func **tp = &r->tp;
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  if (out->ndim < 0 || out->ndim > LOOM_TP_GEN_MAX_RANK) return loom_legal_unsupported(call, "for this result rank");
  char name[256];
  snprintf(name, sizeof name, "reshape_%s_%d_%d", loom_dtype_name(x->dtype), x->ndim, out->ndim);
  if ((*tp = loom_graph_module_find_tp(m, name))) return LOOM_OK;
  LOOM_PROPAGATE(loom_tp_gen_reshape(loom_graph_module_arena(m), loom_graph_module_sym(m), name, x->dtype, x->ndim,
                                     out->ndim, tp));
  return loom_graph_module_add_tp(m, *tp);
}

loom_status loom_legal_permute(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                               loom_graph_legal *r) {
  (void)out;
  loom_tp_func **tp = &r->tp;
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  int perm[LOOM_TP_GEN_MAX_RANK];
  const loom_graph_attr *axes = loom_graph_call_attr(call, "axes");
  char key[64] = "";
  for (int k = 0; k < x->ndim; k++) {
    int64_t v = x->ndim - 1 - k;
    if (axes && ((size_t)k >= axes->n || !loom_sym_is_const(axes->syms[k], &v))) return loom_legal_unsupported(call, "for these axes");
    if (!loom_legal_norm_axis(v, x->ndim, &perm[k])) return loom_legal_unsupported(call, "for these axes");
    snprintf(key + strlen(key), sizeof key - strlen(key), "%d", perm[k]);
  }
  char name[256];
  snprintf(name, sizeof name, "permute_dims_%s_%s", loom_dtype_name(x->dtype), key);
  if ((*tp = loom_graph_module_find_tp(m, name))) return LOOM_OK;
  LOOM_PROPAGATE(loom_tp_gen_permute(loom_graph_module_arena(m), loom_graph_module_sym(m), name, x->dtype, x->ndim,
                                     perm, tp));
  return loom_graph_module_add_tp(m, *tp);
}

loom_status loom_legal_concat(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                              loom_graph_legal *r) {
  (void)out;
  loom_tp_func **tp = &r->tp;
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  for (size_t i = 1; i < call->u.call.nargs; i++) {
    const loom_sinfo *y;
    LOOM_PROPAGATE(loom_legal_tensor_arg(call, i, &y));
    if (y->dtype != x->dtype || y->ndim != x->ndim) return loom_legal_unsupported(call, "for mixed dtypes or ranks");
  }
  int axis;
  if (!loom_legal_norm_axis(loom_graph_call_int(call, "axis"), x->ndim, &axis)) return loom_legal_unsupported(call, "for this axis");
  char name[256];
  snprintf(name, sizeof name, "concat_%s_r%d_a%d_n%zu", loom_dtype_name(x->dtype), x->ndim, axis, call->u.call.nargs);
  if ((*tp = loom_graph_module_find_tp(m, name))) return LOOM_OK;
  LOOM_PROPAGATE(loom_tp_gen_concat(loom_graph_module_arena(m), loom_graph_module_sym(m), name, x->dtype, x->ndim, axis,
                                    (int)call->u.call.nargs, tp));
  return loom_graph_module_add_tp(m, *tp);
}

loom_status loom_legal_broadcast_to(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                                    loom_graph_legal *r) {
  loom_tp_func **tp = &r->tp;
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  if (out->ndim < 0 || !out->dims || out->ndim > LOOM_TP_GEN_MAX_RANK) return loom_legal_unsupported(call, "for this result");
  if (out->ndim < x->ndim) return loom_legal_unsupported(call, "to a lower rank");
  loom_tp_bcast modes[LOOM_TP_GEN_MAX_RANK];
  char key[64] = "";
  loom_legal_bcast_modes(loom_graph_module_sym(m), x, out->dims, out->ndim, modes, key, sizeof key);
  char name[256];
  snprintf(name, sizeof name, "broadcast_to_%s_r%d_%s", loom_dtype_name(x->dtype), out->ndim, key);
  if ((*tp = loom_graph_module_find_tp(m, name))) return LOOM_OK;
  LOOM_PROPAGATE(loom_tp_gen_broadcast(loom_graph_module_arena(m), loom_graph_module_sym(m), name, x->dtype, x->ndim, modes,
                                       out->ndim, tp));
  return loom_graph_module_add_tp(m, *tp);
}

loom_status loom_legal_slice(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                             loom_graph_legal *r) {
  if (call->u.call.nargs > 1) return loom_legal_runtime_operand(call, "starts/ends");
  (void)out;
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  loom_sym_ctx *cx = loom_graph_module_sym(m);
  const loom_graph_attr *axes = loom_graph_call_attr(call, "axes"), *begin = loom_graph_call_attr(call, "begin");
  const loom_graph_attr *strides = loom_graph_call_attr(call, "strides");
  if (!begin) return loom_legal_unsupported(call, "without begin");
  size_t n = axes ? axes->n : begin->n;
  if (begin->n != n || (strides && strides->n != n) || n > 8) return loom_legal_unsupported(call, "for these attributes");
  int64_t st[LOOM_TP_GEN_MAX_RANK];
  const loom_sym_expr *beg[LOOM_TP_GEN_MAX_RANK] = {0};
  unsigned mask = 0;
  for (int k = 0; k < LOOM_TP_GEN_MAX_RANK; k++) st[k] = 1;
  for (size_t i = 0; i < n; i++) {
    int64_t v = (int64_t)i;
    int ax;
    if ((axes && !loom_sym_is_const(axes->syms[i], &v)) || !loom_legal_norm_axis(v, x->ndim, &ax))
      return loom_legal_unsupported(call, "for non-constant axes");
    int64_t sv = 1;
    if (strides && (!loom_sym_is_const(strides->syms[i], &sv) || sv <= 0))
      return loom_legal_unsupported(call, "for non-constant or non-positive strides yet");
    /* The program indexes from its begin parameter: pass the begin the reference uses (a
     * negative constant counts from the end, then clamped to [0, extent]; past the end the
     * result is empty), so no begin needs proving. */
    const loom_sym_expr *b0 = begin->syms[i], *zero = loom_sym_const(cx, 0), *dim = x->dims[ax];
    int64_t c;
    if (loom_sym_is_const(b0, &c) && c < 0) b0 = loom_sym_add(cx, dim, b0);
    if (b0 && loom_sym_prove_le(cx, zero, b0) != LOOM_SYM_TRUE) b0 = loom_sym_max(cx, b0, zero);
    if (b0 && loom_sym_prove_le(cx, b0, dim) != LOOM_SYM_TRUE) b0 = loom_sym_min(cx, b0, dim);
    if (!b0 || !(b0 = loom_sym_simplify(cx, b0))) return loom_sym_ctx_take_error(cx);
    mask |= 1u << ax;
    st[ax] = sv;
    beg[ax] = b0;
  }
  char key[128] = "";
  for (int k = 0; k < x->ndim; k++)
    if (mask >> k & 1) snprintf(key + strlen(key), sizeof key - strlen(key), "_a%ds%lld", k, (long long)st[k]);
  char name[256];
  snprintf(name, sizeof name, "strided_slice_%s_r%d%s", loom_dtype_name(x->dtype), x->ndim, key);
  if (!(r->tp = loom_graph_module_find_tp(m, name))) {
    LOOM_PROPAGATE(loom_tp_gen_slice(loom_graph_module_arena(m), cx, name, x->dtype, x->ndim, mask, st, &r->tp));
    LOOM_PROPAGATE(loom_graph_module_add_tp(m, r->tp));
  }
  for (int k = 0; k < x->ndim; k++)
    if (mask >> k & 1) r->scalars[r->nscalars++] = beg[k];
  return LOOM_OK;
}

loom_status loom_legal_pad(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                           loom_graph_legal *r) {
  if (call->u.call.nargs > 1) return loom_legal_runtime_operand(call, "pads");
  (void)out;
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  const loom_graph_attr *pads = loom_graph_call_attr(call, "pads");
  if (!pads || pads->n != (size_t)(2 * x->ndim)) return loom_legal_unsupported(call, "without one before/after pad per axis");
  double value = loom_graph_call_float(call, "value");
  char text[64];
  loom_legal_literal(x->dtype, value, text, sizeof text);
  char name[256];
  snprintf(name, sizeof name, "pad_%s_r%d_%016llx", loom_dtype_name(x->dtype), x->ndim,
           (unsigned long long)loom_hash_bytes(&value, sizeof value));
  if (!(r->tp = loom_graph_module_find_tp(m, name))) {
    LOOM_PROPAGATE(loom_tp_gen_pad(loom_graph_module_arena(m), loom_graph_module_sym(m), name, x->dtype, x->ndim, text, false, -1,
                                   &r->tp));
    LOOM_PROPAGATE(loom_graph_module_add_tp(m, r->tp));
  }
  for (int k = 0; k < x->ndim; k++) r->scalars[r->nscalars++] = pads->syms[k];
  return LOOM_OK;
}

loom_status loom_legal_tile(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                            loom_graph_legal *r) {
  (void)out;
  loom_tp_func **tp = &r->tp;
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  char name[64];
  snprintf(name, sizeof name, "tile_%s_r%d", loom_dtype_name(x->dtype), x->ndim);
  if ((*tp = loom_graph_module_find_tp(m, name))) return LOOM_OK;
  LOOM_PROPAGATE(loom_tp_gen_tile(loom_graph_module_arena(m), loom_graph_module_sym(m), name, x->dtype, x->ndim, tp));
  return loom_graph_module_add_tp(m, *tp);
}

loom_status loom_legal_repeat(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                              loom_graph_legal *r) {
  (void)out;
  loom_tp_func **tp = &r->tp;
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  int axis;
  if (!loom_legal_norm_axis(loom_graph_call_int(call, "axis"), x->ndim, &axis)) return loom_legal_unsupported(call, "for this axis");
  int64_t reps = loom_graph_call_int(call, "repeats");
  if (reps < 1) return loom_legal_unsupported(call, "for repeats < 1");
  char name[128];
  snprintf(name, sizeof name, "repeat_%s_r%d_a%d_x%lld", loom_dtype_name(x->dtype), x->ndim, axis, (long long)reps);
  if ((*tp = loom_graph_module_find_tp(m, name))) return LOOM_OK;
  LOOM_PROPAGATE(loom_tp_gen_repeat(loom_graph_module_arena(m), loom_graph_module_sym(m), name, x->dtype, x->ndim, axis,
                                    reps, tp));
  return loom_graph_module_add_tp(m, *tp);
}
