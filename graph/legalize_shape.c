/* legalize_shape.c — the legalize hooks of the shape family (op_shape.c): reshape and the
 * other views, permute_dims, concat, broadcast_to, strided_slice, pad, tile and repeat, to
 * the programs of tensorprog/gen_shape.c. Their forms with a run-time operand (axes, shape,
 * starts / ends, pads) become several bindings instead (legalize_expand.c). */
#include <stdio.h>
#include <string.h>

#include "base/hash.h"
#include "graph/legalize_internal.h"

typedef struct reshape_params {
  loom_dtype t;
  int32_t rank_in, rank_out;
} reshape_params;
LOOM_TP_GEN_PARAMS(reshape_params, 3 * 4);

static loom_status gen_reshape(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const reshape_params *p = params;
  return loom_tp_gen_reshape(loom_graph_module_arena(m), loom_graph_module_sym(m), name, p->t, p->rank_in, p->rank_out, tp);
}

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
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  if (out->ndim < 0 || out->ndim > LOOM_TP_GEN_MAX_RANK) return loom_legal_unsupported(call, "for this result rank");
  char name[256];
  snprintf(name, sizeof name, "reshape_%s_%d_%d", loom_dtype_name(x->dtype), x->ndim, out->ndim);
  reshape_params p = {.t = x->dtype, .rank_in = x->ndim, .rank_out = out->ndim};
  return LOOM_LEGAL_PROGRAM(m, name, gen_reshape, p, &r->tp);
}

typedef struct permute_params {
  loom_dtype t;
  int32_t rank;
  int32_t perm[LOOM_TP_GEN_MAX_RANK]; /* 0 past the rank */
} permute_params;
LOOM_TP_GEN_PARAMS(permute_params, (2 + LOOM_TP_GEN_MAX_RANK) * 4);

static loom_status gen_permute(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const permute_params *p = params;
  int perm[LOOM_TP_GEN_MAX_RANK];
  for (int k = 0; k < LOOM_TP_GEN_MAX_RANK; k++) perm[k] = p->perm[k];
  return loom_tp_gen_permute(loom_graph_module_arena(m), loom_graph_module_sym(m), name, p->t, p->rank, perm, tp);
}

loom_status loom_legal_permute(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                               loom_graph_legal *r) {
  (void)out;
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  permute_params p = {.t = x->dtype, .rank = x->ndim};
  const loom_graph_attr *axes = loom_graph_call_attr(call, "axes");
  char key[64] = "";
  for (int k = 0; k < x->ndim; k++) {
    int64_t v = x->ndim - 1 - k;
    int a;
    if (axes && ((size_t)k >= axes->n || !loom_sym_is_const(axes->syms[k], &v))) return loom_legal_unsupported(call, "for these axes");
    if (!loom_legal_norm_axis(v, x->ndim, &a)) return loom_legal_unsupported(call, "for these axes");
    p.perm[k] = a;
    snprintf(key + strlen(key), sizeof key - strlen(key), "%d", a);
  }
  char name[256];
  snprintf(name, sizeof name, "permute_dims_%s_%s", loom_dtype_name(x->dtype), key);
  return LOOM_LEGAL_PROGRAM(m, name, gen_permute, p, &r->tp);
}

typedef struct concat_params {
  loom_dtype t;
  int32_t rank, axis, ninputs;
} concat_params;
LOOM_TP_GEN_PARAMS(concat_params, 4 * 4);

static loom_status gen_concat(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const concat_params *p = params;
  return loom_tp_gen_concat(loom_graph_module_arena(m), loom_graph_module_sym(m), name, p->t, p->rank, p->axis, p->ninputs, tp);
}

loom_status loom_legal_concat(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                              loom_graph_legal *r) {
  (void)out;
  const loom_sinfo *x;
  int axis;
  LOOM_PROPAGATE(loom_legal_axis_arg(call, &x, &axis));
  for (size_t i = 1; i < call->u.call.nargs; i++) {
    const loom_sinfo *y;
    LOOM_PROPAGATE(loom_legal_tensor_arg(call, i, &y));
    if (y->dtype != x->dtype || y->ndim != x->ndim) return loom_legal_unsupported(call, "for mixed dtypes or ranks");
  }
  char name[256];
  snprintf(name, sizeof name, "concat_%s_r%d_a%d_n%zu", loom_dtype_name(x->dtype), x->ndim, axis, call->u.call.nargs);
  concat_params p = {.t = x->dtype, .rank = x->ndim, .axis = axis, .ninputs = (int32_t)call->u.call.nargs};
  return LOOM_LEGAL_PROGRAM(m, name, gen_concat, p, &r->tp);
}

typedef struct broadcast_params {
  loom_dtype t;
  int32_t rank, out_rank;
  loom_tp_bcast modes[LOOM_TP_GEN_MAX_RANK]; /* 0 past the rank */
} broadcast_params;
LOOM_TP_GEN_PARAMS(broadcast_params, (3 + LOOM_TP_GEN_MAX_RANK) * 4);

static loom_status gen_broadcast(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const broadcast_params *p = params;
  return loom_tp_gen_broadcast(loom_graph_module_arena(m), loom_graph_module_sym(m), name, p->t, p->rank, p->modes, p->out_rank, tp);
}

loom_status loom_legal_broadcast_to(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                                    loom_graph_legal *r) {
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  if (out->ndim < 0 || !out->dims || out->ndim > LOOM_TP_GEN_MAX_RANK) return loom_legal_unsupported(call, "for this result");
  if (out->ndim < x->ndim) return loom_legal_unsupported(call, "to a lower rank");
  broadcast_params p = {.t = x->dtype, .rank = x->ndim, .out_rank = out->ndim};
  char key[64] = "";
  loom_legal_bcast_modes(loom_graph_module_sym(m), x, out->dims, out->ndim, p.modes, key, sizeof key);
  char name[256];
  snprintf(name, sizeof name, "broadcast_to_%s_r%d_%s", loom_dtype_name(x->dtype), out->ndim, key);
  return LOOM_LEGAL_PROGRAM(m, name, gen_broadcast, p, &r->tp);
}

typedef struct slice_params {
  int64_t strides[LOOM_TP_GEN_MAX_RANK]; /* 1 on the axes not sliced */
  loom_dtype t;
  int32_t rank;
  uint32_t axes; /* mask of the sliced axes */
  int32_t unused; /* 0 */
} slice_params;
LOOM_TP_GEN_PARAMS(slice_params, LOOM_TP_GEN_MAX_RANK * 8 + 4 * 4);

static loom_status gen_slice(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const slice_params *p = params;
  return loom_tp_gen_slice(loom_graph_module_arena(m), loom_graph_module_sym(m), name, p->t, p->rank, p->axes, p->strides, tp);
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
    if (strides && (!loom_sym_is_const(strides->syms[i], &sv) || sv == 0))
      return loom_legal_unsupported(call, "for non-constant or zero strides");
    /* The program indexes from its begin parameter: pass the begin the reference uses (an
     * empty result reads nothing), so no begin needs proving. */
    const loom_sym_expr *b0 = loom_graph_slice_bound(cx, begin->syms[i], x->dims[ax], sv < 0);
    if (!b0) return loom_sym_ctx_take_error(cx);
    mask |= 1u << ax;
    st[ax] = sv;
    beg[ax] = b0;
  }
  char key[128] = "";
  for (int k = 0; k < x->ndim; k++)
    if (mask >> k & 1) snprintf(key + strlen(key), sizeof key - strlen(key), "_a%ds%s%lld", k, st[k] < 0 ? "m" : "", st[k] < 0 ? -(long long)st[k] : (long long)st[k]);
  char name[256];
  snprintf(name, sizeof name, "strided_slice_%s_r%d%s", loom_dtype_name(x->dtype), x->ndim, key);
  slice_params p = {.t = x->dtype, .rank = x->ndim, .axes = mask};
  for (int k = 0; k < LOOM_TP_GEN_MAX_RANK; k++) p.strides[k] = st[k];
  LOOM_PROPAGATE(LOOM_LEGAL_PROGRAM(m, name, gen_slice, p, &r->tp));
  for (int k = 0; k < x->ndim; k++)
    if (mask >> k & 1) r->scalars[r->nscalars++] = beg[k];
  return LOOM_OK;
}

loom_status loom_legal_gen_pad(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const loom_legal_pad_params *p = params;
  char text[64];
  loom_legal_literal(p->t, p->value, text, sizeof text);
  return loom_tp_gen_pad(loom_graph_module_arena(m), loom_graph_module_sym(m), name, p->t, p->rank, text, p->pads_buffer, p->value_rank,
                         tp);
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
  char name[256];
  snprintf(name, sizeof name, "pad_%s_r%d_%016llx", loom_dtype_name(x->dtype), x->ndim,
           (unsigned long long)loom_hash_bytes(&value, sizeof value));
  loom_legal_pad_params p = {.value = value, .t = x->dtype, .rank = x->ndim, .value_rank = -1};
  LOOM_PROPAGATE(LOOM_LEGAL_PROGRAM(m, name, loom_legal_gen_pad, p, &r->tp));
  for (int k = 0; k < x->ndim; k++) r->scalars[r->nscalars++] = pads->syms[k];
  return LOOM_OK;
}

typedef struct tile_params {
  loom_dtype t;
  int32_t rank;
} tile_params;
LOOM_TP_GEN_PARAMS(tile_params, 2 * 4);

static loom_status gen_tile(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const tile_params *p = params;
  return loom_tp_gen_tile(loom_graph_module_arena(m), loom_graph_module_sym(m), name, p->t, p->rank, tp);
}

loom_status loom_legal_tile(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                            loom_graph_legal *r) {
  (void)out;
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  char name[64];
  snprintf(name, sizeof name, "tile_%s_r%d", loom_dtype_name(x->dtype), x->ndim);
  tile_params p = {.t = x->dtype, .rank = x->ndim};
  return LOOM_LEGAL_PROGRAM(m, name, gen_tile, p, &r->tp);
}

typedef struct repeat_params {
  int64_t repeats;
  loom_dtype t;
  int32_t rank, axis, unused; /* 0 */
} repeat_params;
LOOM_TP_GEN_PARAMS(repeat_params, 8 + 4 * 4);

static loom_status gen_repeat(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const repeat_params *p = params;
  return loom_tp_gen_repeat(loom_graph_module_arena(m), loom_graph_module_sym(m), name, p->t, p->rank, p->axis, p->repeats, tp);
}

loom_status loom_legal_repeat(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                              loom_graph_legal *r) {
  (void)out;
  const loom_sinfo *x;
  int axis;
  LOOM_PROPAGATE(loom_legal_axis_arg(call, &x, &axis));
  int64_t reps = loom_graph_call_int(call, "repeats");
  if (reps < 1) return loom_legal_unsupported(call, "for repeats < 1");
  char name[128];
  snprintf(name, sizeof name, "repeat_%s_r%d_a%d_x%lld", loom_dtype_name(x->dtype), x->ndim, axis, (long long)reps);
  repeat_params p = {.repeats = reps, .t = x->dtype, .rank = x->ndim, .axis = axis};
  return LOOM_LEGAL_PROGRAM(m, name, gen_repeat, p, &r->tp);
}
