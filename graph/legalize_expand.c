/* legalize_expand.c — legalizations that turn one binding into several: the expander loom_lx,
 * the expand hooks the op records point at (loom_legal_expand_*; resize's is in
 * legalize_image.c), and loom_legalize_expand, which runs a binding's hook.
 *
 * A program writes one destination buffer whose shape the caller knows before the call, so:
 *   - tuple-valued ops (split, topk, unique with indices) become one program per part and a
 *     tuple;
 *   - forms whose result dims depend on data (run-time k, axes, targets, bounds, pads, range
 *     bounds; nonzero / unique / non_max_suppression counts; resize in legalize_image.c) first
 *     bind those dims: a program yields them as an i64 vector, `tensor_to_shape` + `match_cast`
 *     bind the fresh symbols inference gave the result, and the computing program then reads
 *     its extents from its result buffer.
 * The new bindings go before the rewritten one, which keeps its variable; the guards inference
 * recorded on it move to the first binding after the last match_cast (see splice). */
#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "base/hash.h"
#include "graph/legalize_internal.h"

/* Appends `name_suffix = value` (struct info si) before the rewritten binding; its var, or NULL. */
loom_graph_expr *loom_lx_add(loom_lx *x, const char *suffix, loom_graph_binding_kind kind, loom_graph_expr *value,
                            const loom_sinfo *si) {
  if (x->n == LOOM_LX_MAX_ADDED || !value || !si) return NULL;
  char name[256];
  snprintf(name, sizeof name, "%s_%s", x->b->var->u.var.name, suffix);
  loom_graph_binding *nb = LOOM_ARENA_NEW(loom_graph_module_arena(x->m), loom_graph_binding);
  if (!nb || !(nb->var = loom_graph_var_new(x->m, name, si))) return NULL;
  nb->kind = kind;
  nb->value = value;
  nb->loc = x->b->loc;
  if (kind == LOOM_GRAPH_BIND_VAR) value->loc = x->b->value->loc;
  x->added[x->n++] = nb;
  return nb->var;
}

loom_status loom_lx_call(loom_lx *x, const char *name, loom_graph_gen_fn gen, const void *params, size_t size, size_t nargs,
                         loom_graph_expr *const *args, const loom_sinfo *si, loom_graph_expr **call) {
  loom_tp_func *tp;
  LOOM_PROPAGATE(loom_legal_program(x->m, name, gen, params, size, &tp));
  *call = loom_graph_call_tp(x->m, loom_tp_func_name(tp), nargs, args, si);
  return *call ? LOOM_OK : LOOM_OOM();
}

loom_status loom_lx_add_tp(loom_lx *x, const char *suffix, const char *name, loom_graph_gen_fn gen, const void *params, size_t size,
                           size_t nargs, loom_graph_expr *const *args, const loom_sinfo *si, loom_graph_expr **out) {
  loom_graph_expr *c;
  LOOM_PROPAGATE(loom_lx_call(x, name, gen, params, size, nargs, args, si, &c));
  return (*out = loom_lx_add(x, suffix, LOOM_GRAPH_BIND_VAR, c, si)) ? LOOM_OK : LOOM_OOM();
}

/* `op(args, attrs)` with result struct info si, lowered through loom_graph_legalize_call. */
loom_status loom_lx_add_lowered(loom_lx *x, const char *suffix, loom_graph_op op, size_t nargs, loom_graph_expr *const *args,
                               size_t nattrs, const loom_graph_attr *attrs, const loom_sinfo *si, loom_graph_expr **out) {
  loom_graph_expr *c = loom_graph_call_op(x->m, op, nargs, args, nattrs, attrs), *tp;
  if (!c) return LOOM_OOM();
  c->sinfo = si;
  c->loc = x->b->value->loc;
  /* bound first, so the lowering's guards (if any) go to the binding that runs it */
  if (!(*out = loom_lx_add(x, suffix, LOOM_GRAPH_BIND_VAR, c, si))) return LOOM_OOM();
  loom_graph_binding *nb = x->added[x->n - 1];
  LOOM_PROPAGATE(loom_legal_lower_call(x->m, c, nb, &tp));
  nb->value = tp;
  return LOOM_OK;
}

/* Binds dims[0 .. n) (symbols not yet bound, or expressions to check) to the values of vec, a
 * 1-D i64 / i32 tensor of length n: `<suffix>_v = tensor_to_shape(vec)`, then
 * `<suffix> = match_cast(<suffix>_v, Shape[(dims)])`. */
loom_status loom_lx_bind_dims(loom_lx *x, const char *suffix, loom_graph_expr *vec, size_t n,
                                 const loom_sym_expr *const *dims) {
  char vs[128];
  snprintf(vs, sizeof vs, "%s_v", suffix);
  loom_graph_expr *c = loom_graph_call_op(x->m, LOOM_GRAPH_OP_TENSOR_TO_SHAPE, 1, &vec, 0, NULL);
  const loom_sinfo *any = loom_sinfo_shape(x->m, (int)n, NULL), *to = loom_sinfo_shape(x->m, (int)n, dims);
  if (!c || !any || !to) return LOOM_OOM();
  c->sinfo = any;
  loom_graph_expr *sv = loom_lx_add(x, vs, LOOM_GRAPH_BIND_VAR, c, any);
  if (!sv || !loom_lx_add(x, suffix, LOOM_GRAPH_BIND_MATCH_CAST, sv, to)) return LOOM_OOM();
  return LOOM_OK;
}

loom_status loom_lx_bind_program(loom_lx *x, const char *what, const char *bind, const char *name, loom_graph_gen_fn gen,
                                 const void *params, size_t size, size_t nargs, loom_graph_expr *const *args, size_t n,
                                 const loom_sym_expr *const *dims) {
  const loom_sym_expr *len = loom_sym_const(loom_graph_module_sym(x->m), (int64_t)n);
  const loom_sinfo *vec = loom_sinfo_tensor(x->m, LOOM_DTYPE_I64, 1, &len, x->b->value->u.call.args[0]->sinfo->device);
  loom_graph_expr *v;
  if (!vec) return LOOM_OOM();
  LOOM_PROPAGATE(loom_lx_add_tp(x, what, name, gen, params, size, nargs, args, vec, &v));
  return loom_lx_bind_dims(x, bind, v, n, dims);
}

loom_status loom_lx_new_syms(loom_lx *x, const char *tag, int n, const loom_sym_expr **out) {
  loom_sym_ctx *cx = loom_graph_module_sym(x->m);
  for (int k = 0; k < n; k++) {
    char nm[160];
    snprintf(nm, sizeof nm, "%s_%s%d", x->b->var->u.var.name, tag, k);
    if (!(out[k] = loom_sym_var_new(cx, nm, LOOM_SYM_VAR_SHAPE))) return loom_sym_ctx_take_error(cx);
  }
  return LOOM_OK;
}

loom_graph_expr *loom_lx_view(loom_lx *x, loom_graph_expr *v, loom_dtype t, int n, const loom_sym_expr *const *dims) {
  loom_graph_attr sh = loom_graph_attr_syms(x->m, "shape", (size_t)n, dims);
  const loom_sinfo *si = loom_sinfo_tensor(x->m, t, n, dims, v->sinfo ? v->sinfo->device : NULL);
  loom_graph_expr *c = loom_graph_call_op(x->m, LOOM_GRAPH_OP_RESHAPE, 1, &v, 1, &sh);
  if (!c || !si) return NULL;
  c->sinfo = si;
  return c;
}

/* Adds guard `cond` (why: its message) to the rewritten binding's. */
loom_status loom_lx_add_guard(loom_lx *x, const loom_sym_expr *cond, const char *why) {
  loom_arena *ar = loom_graph_module_arena(x->m);
  loom_graph_binding *b = x->b;
  const loom_sym_expr **g = LOOM_ARENA_ARRAY(ar, const loom_sym_expr *, b->nguards + 1);
  const char **w = LOOM_ARENA_ARRAY(ar, const char *, b->nguards + 1);
  const char *msg = loom_arena_strdup(ar, why);
  if (!g || !w || !msg || !cond) return LOOM_OOM();
  for (size_t k = 0; k < b->nguards; k++) g[k] = b->guards[k], w[k] = b->guard_why[k];
  g[b->nguards] = cond;
  w[b->nguards] = msg;
  b->guards = g;
  b->guard_why = w;
  b->nguards++;
  return LOOM_OK;
}

loom_status loom_lx_expand_with(loom_lx *x, loom_lx_expander fn, loom_graph_expr **value) {
  bool applies = false;
  loom_graph_expr *v = NULL;
  LOOM_PROPAGATE(fn(x, &v, &applies));
  *value = applies ? v : NULL;
  return LOOM_OK;
}

/* Puts the added bindings before binding i and the rewritten binding's new value in place. */
static loom_status splice(loom_lx *x, loom_graph_block *blk, size_t i, loom_graph_expr *value) {
  loom_graph_binding **nb = LOOM_ARENA_ARRAY(loom_graph_module_arena(x->m), loom_graph_binding *, blk->n + x->n);
  if (!nb || !value) return LOOM_OOM();
  for (size_t k = 0; k < i; k++) nb[k] = blk->bindings[k];
  for (size_t k = 0; k < x->n; k++) nb[i + k] = x->added[k];
  for (size_t k = i; k < blk->n; k++) nb[k + x->n] = blk->bindings[k];
  /* b's guards go to the first binding after the last match_cast (they may use the symbols it
   * binds), and must be checked before any program reads: with no such binding, b keeps them */
  size_t at = 0;
  for (size_t k = 0; k < x->n; k++)
    if (x->added[k]->kind == LOOM_GRAPH_BIND_MATCH_CAST) at = k + 1;
  loom_graph_binding *b = x->b, *g = at < x->n ? x->added[at] : b;
  if (g != b) {
    g->nguards = b->nguards, g->guards = b->guards, g->guard_why = b->guard_why;
    b->nguards = 0, b->guards = NULL, b->guard_why = NULL;
  }
  value->loc = b->value->loc;
  b->value = value;
  blk->bindings = nb;
  blk->n += x->n;
  return LOOM_OK;
}

/* ---- split ---------------------------------------------------------------------------------- */

/* t = split(x, axis=a, ...) -> one strided_slice per part (part i starts at the sum of the
 * extents before it), t = (parts). normalize already turned the parts of provably exact splits
 * into slices; what reaches here has a guard (the sizes add up to x's extent), checked before
 * the first part is read. */
loom_status loom_legal_expand_split(loom_lx *x, loom_graph_expr **value) {
  const loom_graph_expr *call = x->b->value;
  const loom_sinfo *in, *out = x->b->var->sinfo;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &in));
  int axis;
  if (!out || out->kind != LOOM_SINFO_TUPLE || out->nfields > LOOM_LX_MAX_ADDED ||
      !loom_legal_norm_axis(loom_graph_call_int(call, "axis"), in->ndim, &axis))
    return loom_legal_unsupported(call, "for this form");
  loom_sym_ctx *cx = loom_graph_module_sym(x->m);
  loom_graph_expr *parts[LOOM_LX_MAX_ADDED], *arg = call->u.call.args[0];
  const loom_sym_expr *lo = loom_sym_const(cx, 0);
  int64_t ax = axis;
  for (size_t i = 0; i < out->nfields; i++) {
    const loom_sinfo *f = out->fields[i];
    if (!f || f->kind != LOOM_SINFO_TENSOR || f->ndim != in->ndim || !f->dims) return loom_legal_unsupported(call, "for this result");
    const loom_sym_expr *hi = loom_sym_add(cx, lo, f->dims[axis]);
    if (!hi) return loom_sym_ctx_take_error(cx);
    loom_graph_attr attrs[3] = {loom_graph_attr_ints(x->m, "axes", 1, &ax), loom_graph_attr_syms(x->m, "begin", 1, &lo),
                                loom_graph_attr_syms(x->m, "end", 1, &hi)};
    char suffix[32];
    snprintf(suffix, sizeof suffix, "%zu", i);
    LOOM_PROPAGATE(loom_lx_add_lowered(x, suffix, LOOM_GRAPH_OP_STRIDED_SLICE, 1, &arg, 3, attrs, f, &parts[i]));
    lo = hi;
  }
  *value = loom_graph_tuple_new(x->m, out->nfields, parts);
  return *value ? LOOM_OK : LOOM_OOM();
}

/* ---- topk ----------------------------------------------------------------------------------- */

typedef struct topk_params {
  loom_dtype t;
  int32_t rank, axis, largest, indices;
} topk_params;
LOOM_TP_GEN_PARAMS(topk_params, 5 * 4);

static loom_status gen_topk(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const topk_params *p = params;
  return loom_tp_gen_topk(loom_graph_module_arena(m), loom_graph_module_sym(m), name, p->t, p->rank, p->axis, p->largest, p->indices,
                          tp);
}

typedef struct topk_gather_params {
  loom_dtype t;
  int32_t rank, axis;
} topk_gather_params;
LOOM_TP_GEN_PARAMS(topk_gather_params, 3 * 4);

static loom_status gen_topk_gather(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const topk_gather_params *p = params;
  return loom_tp_gen_gather_elements(loom_graph_module_arena(m), loom_graph_module_sym(m), name, p->t, p->rank, p->axis,
                                     LOOM_DTYPE_I64, tp);
}

/* t = topk(x, k=..) -> t_indices = the heap program (it reads k from its result buffer, the
 * heap's step count bitlen(k) from a sym argument), t_values = gather_elements(x, t_indices)
 * along the axis (k elements per slice: one pass over x in all, whichever part is used),
 * t = (values, indices). A run-time k (operand 1, one integer) is bound first to the fresh
 * symbol of the result's axis, with the guard k <= x's extent. */
loom_status loom_legal_expand_topk(loom_lx *x, loom_graph_expr **value) {
  const loom_graph_expr *call = x->b->value;
  const loom_sinfo *in, *out = x->b->var->sinfo;
  int axis;
  LOOM_PROPAGATE(loom_legal_axis_arg(call, &in, &axis));
  if (loom_dtype_is_lowp(in->dtype)) return loom_legal_unsupported(call, "for low-precision dtypes");
  if (in->ndim < 1 || in->dtype == LOOM_DTYPE_BOOL || !out || out->kind != LOOM_SINFO_TUPLE || out->nfields != 2 ||
      !out->fields[0]->dims)
    return loom_legal_unsupported(call, "for this operand");
  topk_params key = {.t = in->dtype, .rank = in->ndim, .axis = axis, .largest = loom_graph_call_int(call, "largest") != 0};
  loom_sym_ctx *cx = loom_graph_module_sym(x->m);
  const loom_sym_expr *k = out->fields[0]->dims[key.axis];
  if (call->u.call.nargs > 1) {
    loom_graph_expr *kv = call->u.call.args[1];
    const loom_sinfo *ks = kv->sinfo;
    int64_t one;
    if (!ks || ks->kind != LOOM_SINFO_TENSOR || (ks->dtype != LOOM_DTYPE_I64 && ks->dtype != LOOM_DTYPE_I32) || !ks->dims ||
        ks->ndim > 1 || (ks->ndim == 1 && (!loom_sym_is_const(ks->dims[0], &one) || one != 1)))
      return loom_legal_unsupported(call, "for a k operand that is not one i64 / i32 value");
    if (ks->ndim == 0) { /* a (1,) view of the scalar */
      const loom_sym_expr *d1 = loom_sym_const(cx, 1);
      loom_graph_expr *c = loom_lx_view(x, kv, ks->dtype, 1, &d1);
      if (!c || !(kv = loom_lx_add(x, "k1", LOOM_GRAPH_BIND_VAR, c, c->sinfo))) return LOOM_OOM();
    }
    LOOM_PROPAGATE(loom_lx_bind_dims(x, "k", kv, 1, &k));
    char why[256];
    snprintf(why, sizeof why, "topk: k must not exceed operand 0 axis %d", key.axis);
    LOOM_PROPAGATE(loom_lx_add_guard(x, loom_sym_cmp(cx, LOOM_SYM_LE, k, in->dims[key.axis]), why));
  }
  loom_graph_expr *parts[2], *arg = call->u.call.args[0];
  char name[128];
  key.indices = 1;
  snprintf(name, sizeof name, "topk_%s_r%d_a%d_%s_indices", loom_dtype_name(in->dtype), in->ndim, key.axis,
           key.largest ? "largest" : "smallest");
  loom_graph_expr *targs[2] = {arg, loom_graph_sym_new(x->m, loom_tp_bitlen(cx, k))}; /* dk: the heap's sift steps */
  if (!targs[1]) return LOOM_OOM();
  LOOM_PROPAGATE(loom_lx_add_tp(x, "indices", name, gen_topk, &key, sizeof key, 2, targs, out->fields[1], &parts[1]));
  topk_gather_params gk = {.t = in->dtype, .rank = in->ndim, .axis = key.axis};
  snprintf(name, sizeof name, "topk_gather_%s_r%d_a%d", loom_dtype_name(in->dtype), in->ndim, key.axis);
  loom_graph_expr *gargs[2] = {arg, parts[1]};
  LOOM_PROPAGATE(loom_lx_add_tp(x, "values", name, gen_topk_gather, &gk, sizeof gk, 2, gargs, out->fields[0], &parts[0]));
  *value = loom_graph_tuple_new(x->m, 2, parts);
  return *value ? LOOM_OK : LOOM_OOM();
}

/* ---- run-time axes and shapes ------------------------------------------------------------------ */

/* The dims program of run-time axes (n of them, dtype ta, in a rank-arank operand) or of a
 * reshape target (n values). */
typedef struct dims_params {
  loom_dtype tx, ta;
  int32_t rank, n;
  int32_t arank;            /* axes */
  loom_tp_axes_form form;   /* axes */
  int32_t reshape;          /* a reshape target instead of axes */
  int32_t allowzero;        /* reshape */
} dims_params;
LOOM_TP_GEN_PARAMS(dims_params, 8 * 4);

static loom_status gen_dims(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const dims_params *p = params;
  loom_arena *ar = loom_graph_module_arena(m);
  loom_sym_ctx *cx = loom_graph_module_sym(m);
  if (p->reshape) return loom_tp_gen_reshape_dims(ar, cx, name, p->tx, p->rank, p->n, p->ta, p->allowzero, tp);
  return loom_tp_gen_axes_dims(ar, cx, name, p->tx, p->rank, p->n, p->ta, p->arank, p->form, tp);
}

/* The run-time operand `what` (call operand 1): an integer tensor of rank 0 (when one value
 * may be) or a 1-D one of static length; its length in *n. */
static loom_status int_operand(const loom_graph_expr *call, bool scalar_ok, const loom_sinfo **si, int *n) {
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 1, si));
  int64_t len = 1;
  if (!loom_dtype_is_int((*si)->dtype) || (*si)->ndim > 1 || ((*si)->ndim == 0 && !scalar_ok) ||
      ((*si)->ndim == 1 && (!loom_sym_is_const((*si)->dims[0], &len) || len < 1 || len > LOOM_TP_GEN_MAX_RANK)))
    return loom_legal_unsupported(call, "for this run-time operand (an integer tensor of 1 to 8 values)");
  *n = (int)len;
  return LOOM_OK;
}

/* `<b>_dims = call_tp(@dims program, (x, operand 1))`, bound to pat[0 .. len). */
static loom_status bind_dims(loom_lx *x, const dims_params *key, size_t len, const loom_sym_expr *const *pat) {
  const loom_graph_expr *call = x->b->value;
  static const char *const forms[] = {"keep", "reduce", "squeeze", "expand", "one"};
  char name[128];
  if (key->reshape)
    snprintf(name, sizeof name, "reshape_dims_%s_r%d_n%d_%s%s", loom_dtype_name(key->tx), key->rank, key->n,
             loom_dtype_name(key->ta), key->allowzero ? "_z" : "");
  else
    snprintf(name, sizeof name, "axes_dims_%s_%s_r%d_n%d_%s%s", forms[key->form], loom_dtype_name(key->tx), key->rank,
             key->n, loom_dtype_name(key->ta), key->arank ? "" : "_s");
  loom_graph_expr *args[2] = {call->u.call.args[0], call->u.call.args[1]};
  return loom_lx_bind_program(x, "dims", "shape", name, gen_dims, key, sizeof *key, 2, args, len, pat);
}

/* The view `reshape(v, shape=[y's dims])` as the rewritten binding's value. */
static loom_status view_as_result(loom_lx *x, loom_graph_expr *v, loom_graph_expr **value) {
  const loom_sinfo *out = x->b->var->sinfo;
  if (!(*value = loom_lx_view(x, v, out->dtype, out->ndim, out->dims))) return LOOM_OOM();
  (*value)->sinfo = out;
  return LOOM_OK;
}

static loom_status result_tensor(const loom_lx *x, const loom_sinfo **out) {
  *out = x->b->var->sinfo;
  if (!*out || (*out)->kind != LOOM_SINFO_TENSOR || !(*out)->dims || (*out)->ndim > LOOM_TP_GEN_MAX_RANK)
    return loom_legal_unsupported(x->b->value, "for this result");
  return LOOM_OK;
}

typedef struct reduce_any_params {
  loom_tp_reduce_op op;
  loom_dtype t;
  int32_t rank;
} reduce_any_params;
LOOM_TP_GEN_PARAMS(reduce_any_params, 3 * 4);

static loom_status gen_reduce_any(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const reduce_any_params *p = params;
  return loom_tp_gen_reduce_any(loom_graph_module_arena(m), loom_graph_module_sym(m), name, p->op, p->t, p->rank, tp);
}

/* y = sum(x, axes) with run-time axes (n of them) ->
 *   y_dims = call_tp(@axes_dims_..., (x, axes))       the keepdims dims [, the kept dims]
 *   bind y_dims to (s_0, .., s_r-1 [, y's dims])
 *   y_keep = call_tp(@sum_any_..., (x,)) -> Tensor[(s_0, ..)]   (with keepdims: y itself)
 *   y = reshape(y_keep, shape=[y's dims])                          (without: a view) */
loom_status loom_legal_expand_reduce(loom_lx *x, loom_graph_expr **value) {
  const loom_graph_expr *call = x->b->value;
  loom_tp_reduce_op op;
  if (call->u.call.nargs != 2 || !loom_legal_reduce_kind(call->u.call.op, &op)) return LOOM_OK; /* constant axes */
  const loom_sinfo *in, *axes, *out;
  int n;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &in));
  LOOM_PROPAGATE(int_operand(call, false, &axes, &n));
  LOOM_PROPAGATE(result_tensor(x, &out));
  if (n > in->ndim) return loom_legal_unsupported(call, "for more axes than the rank");
  bool keep = loom_graph_call_int(call, "keepdims") != 0;
  dims_params key = {.tx = in->dtype, .ta = axes->dtype, .rank = in->ndim, .n = n, .arank = 1,
                     .form = keep ? LOOM_TP_AXES_REDUCE_KEEPDIMS : LOOM_TP_AXES_REDUCE};
  const loom_sym_expr *pat[2 * LOOM_TP_GEN_MAX_RANK];
  if (keep) memcpy(pat, out->dims, (size_t)in->ndim * sizeof *pat);
  else {
    LOOM_PROPAGATE(loom_lx_new_syms(x, "k", in->ndim, pat));
    memcpy(pat + in->ndim, out->dims, (size_t)out->ndim * sizeof *pat);
  }
  LOOM_PROPAGATE(bind_dims(x, &key, (size_t)in->ndim + (keep ? 0 : (size_t)out->ndim), pat));
  char name[128];
  snprintf(name, sizeof name, "%s_any_%s_r%d", loom_graph_op_name(call->u.call.op), loom_dtype_name(in->dtype), in->ndim);
  reduce_any_params rk = {.op = op, .t = in->dtype, .rank = in->ndim};
  loom_graph_expr *arg = call->u.call.args[0], *kept;
  if (keep) {
    return loom_lx_call(x, name, gen_reduce_any, &rk, sizeof rk, 1, &arg, out, value);
  }
  const loom_sinfo *ksi = loom_sinfo_tensor(x->m, in->dtype, in->ndim, pat, in->device);
  if (!ksi) return LOOM_OOM();
  LOOM_PROPAGATE(loom_lx_add_tp(x, "keep", name, gen_reduce_any, &rk, sizeof rk, 1, &arg, ksi, &kept));
  return view_as_result(x, kept, value);
}

/* y = reshape(x, shape) / expand_dims(x, axes) / squeeze(x, axes) with a run-time operand ->
 * its dims program, bound to y's (fresh) dims, then y = reshape(x, shape=[y's dims]), a view. */
loom_status loom_legal_expand_view(loom_lx *x, loom_graph_expr **value) {
  const loom_graph_expr *call = x->b->value;
  if (call->u.call.nargs != 2 || !call->u.call.args[1]->sinfo || call->u.call.args[1]->sinfo->kind != LOOM_SINFO_TENSOR)
    return LOOM_OK; /* constant axes or shape, or a Shape operand */
  const loom_sinfo *in, *opd, *out;
  int n;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &in));
  LOOM_PROPAGATE(int_operand(call, false, &opd, &n));
  LOOM_PROPAGATE(result_tensor(x, &out));
  dims_params key = {.tx = in->dtype, .ta = opd->dtype, .rank = in->ndim, .n = n, .arank = 1, .form = LOOM_TP_AXES_SQUEEZE};
  switch (call->u.call.op) {
    case LOOM_GRAPH_OP_RESHAPE: /* reshape_dims reads no axes form */
      key = (dims_params){.tx = in->dtype, .ta = opd->dtype, .rank = in->ndim, .n = n, .reshape = 1,
                          .allowzero = loom_graph_call_int(call, "allowzero") != 0};
      break;
    case LOOM_GRAPH_OP_EXPAND_DIMS: key.form = LOOM_TP_AXES_EXPAND; break;
    default:
      if (n > in->ndim) return loom_legal_unsupported(call, "for more axes than the rank");
      break;
  }
  LOOM_PROPAGATE(bind_dims(x, &key, (size_t)out->ndim, out->dims));
  return view_as_result(x, call->u.call.args[0], value);
}

typedef struct scan_any_params {
  loom_dtype t;
  int32_t rank, exclusive, reverse, prod;
} scan_any_params;
LOOM_TP_GEN_PARAMS(scan_any_params, 5 * 4);

/* The cumsum / cumprod program over the run-time axis (scalar parameter a). */
static loom_status gen_scan(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const scan_any_params *p = params;
  return (p->prod ? loom_tp_gen_cumprod : loom_tp_gen_cumsum)(loom_graph_module_arena(m), loom_graph_module_sym(m), name, p->t, p->rank,
                                                              -1, p->exclusive, p->reverse, tp);
}

/* y = cumsum(x, axis) with a run-time axis -> `<y>_dims` = the axis normalized, bound to a new
 * symbol a (an axis out of range is refused there), then the program with one scan nest per
 * axis, taking a as its scalar parameter. */
loom_status loom_legal_expand_cumulative(loom_lx *x, loom_graph_expr **value) {
  const loom_graph_expr *call = x->b->value;
  if (call->u.call.nargs != 2) return LOOM_OK; /* a constant axis */
  const loom_sinfo *in, *opd, *out;
  int n;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &in));
  LOOM_PROPAGATE(int_operand(call, true, &opd, &n));
  LOOM_PROPAGATE(result_tensor(x, &out));
  if (n != 1 || in->ndim < 1) return loom_legal_unsupported(call, "for this axis operand");
  dims_params key = {.tx = in->dtype, .ta = opd->dtype, .rank = in->ndim, .n = 1, .arank = opd->ndim, .form = LOOM_TP_AXES_ONE};
  const loom_sym_expr *ax;
  LOOM_PROPAGATE(loom_lx_new_syms(x, "axis", 1, &ax));
  LOOM_PROPAGATE(bind_dims(x, &key, 1, &ax));
  bool prod = call->u.call.op == LOOM_GRAPH_OP_CUMPROD, excl = loom_graph_call_int(call, "exclusive") != 0;
  bool rev = loom_graph_call_int(call, "reverse") != 0;
  char name[128];
  snprintf(name, sizeof name, "%s_%s_r%d_any%s%s", prod ? "cumprod" : "cumsum", loom_dtype_name(in->dtype), in->ndim,
           excl ? "_x" : "", rev ? "_rev" : "");
  loom_graph_expr *args[2] = {call->u.call.args[0], loom_graph_sym_new(x->m, ax)};
  if (!args[1]) return LOOM_OOM();
  scan_any_params sk = {.t = in->dtype, .rank = in->ndim, .exclusive = excl, .reverse = rev, .prod = prod};
  return loom_lx_call(x, name, gen_scan, &sk, sizeof sk, 2, args, out, value);
}

/* ---- slice and pad with run-time bounds ------------------------------------------------------------ */

/* The bounds programs of a slice (starts, ends[, axes[, steps]] of dtypes types[]) or a pad
 * (pads of dtype types[0][, axes of types[1]]) with run-time operands: `extents` gives the
 * result's extents, else what the computing program reads (starts and steps; the pads before). */
typedef struct bounds_params {
  loom_dtype tx;
  loom_dtype types[4];   /* 0 past the operands */
  int32_t rank, n;       /* n: the listed axes */
  int32_t pad, has_axes, has_steps, extents;
  int32_t unused;        /* 0 */
} bounds_params;
LOOM_TP_GEN_PARAMS(bounds_params, 12 * 4);

static loom_status gen_bounds(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const bounds_params *p = params;
  loom_arena *ar = loom_graph_module_arena(m);
  loom_sym_ctx *cx = loom_graph_module_sym(m);
  if (p->pad)
    return loom_tp_gen_pad_params(ar, cx, name, p->tx, p->rank, p->n, p->types[0], p->has_axes, p->types[1], p->extents, tp);
  return loom_tp_gen_slice_params(ar, cx, name, p->tx, p->rank, p->n, p->types, p->has_axes, p->has_steps, p->extents, tp);
}

typedef struct slice_any_params {
  loom_dtype t;
  int32_t rank;
} slice_any_params;
LOOM_TP_GEN_PARAMS(slice_any_params, 2 * 4);

static loom_status gen_slice_any(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const slice_any_params *p = params;
  return loom_tp_gen_slice_any(loom_graph_module_arena(m), loom_graph_module_sym(m), name, p->t, p->rank, tp);
}

/* The bounds programs on (x, operands...): `<b>_dims` (the extents, bound to y's dims) and
 * `<b>_params` (what the computing program reads: starts and steps, or the pads before). */
static loom_status add_bounds(loom_lx *x, bounds_params *key, size_t nargs, loom_graph_expr *const *args, loom_graph_expr **params) {
  const loom_sinfo *out = x->b->var->sinfo;
  char name[160], types[64] = "";
  for (size_t i = 1; i < nargs; i++)
    snprintf(types + strlen(types), sizeof types - strlen(types), "_%s", loom_dtype_name(args[i]->sinfo->dtype));
  for (int ext = 1; ext >= 0; ext--) {
    key->extents = ext;
    snprintf(name, sizeof name, "%s_%s_%s_r%d_n%d%s%s%s", key->pad ? "pad" : "slice", ext ? "dims" : "params",
             loom_dtype_name(key->tx), key->rank, key->n, types, key->has_axes ? "_a" : "", key->has_steps ? "_s" : "");
    if (ext) {
      LOOM_PROPAGATE(loom_lx_bind_program(x, "dims", "shape", name, gen_bounds, key, sizeof *key, nargs, args, (size_t)key->rank,
                                          out->dims));
      continue;
    }
    const loom_sym_expr *dl = loom_sym_const(loom_graph_module_sym(x->m), key->pad ? key->rank : 2 * key->rank);
    const loom_sinfo *vec = loom_sinfo_tensor(x->m, LOOM_DTYPE_I64, 1, &dl, out->device);
    if (!vec) return LOOM_OOM();
    LOOM_PROPAGATE(loom_lx_add_tp(x, "params", name, gen_bounds, key, sizeof *key, nargs, args, vec, params));
  }
  return LOOM_OK;
}

/* The 1-D integer operand i of static length, its length in *n. */
static loom_status vec_operand(const loom_graph_expr *call, size_t i, int *n) {
  const loom_sinfo *si;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, i, &si));
  int64_t len;
  if (!loom_dtype_is_int(si->dtype) || si->ndim != 1 || !loom_sym_is_const(si->dims[0], &len) || len < 1 || len > 16)
    return loom_legal_unsupported(call, "for this run-time operand (a 1-D integer tensor of static length)");
  *n = (int)len;
  return LOOM_OK;
}

/* y = strided_slice(x, starts, ends[, axes[, steps]]) ->
 *   y_dims = the extents, bound to y's dims; y_params = the starts and steps;
 *   y = call_tp(@slice_any_..., (x, y_params)) */
loom_status loom_legal_expand_slice(loom_lx *x, loom_graph_expr **value) {
  const loom_graph_expr *call = x->b->value;
  if (call->u.call.nargs < 2) return LOOM_OK; /* constant bounds */
  const loom_sinfo *in, *out;
  size_t na = call->u.call.nargs;
  int n, m;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &in));
  LOOM_PROPAGATE(result_tensor(x, &out));
  LOOM_PROPAGATE(vec_operand(call, 1, &n));
  for (size_t i = 2; i < na; i++) {
    LOOM_PROPAGATE(vec_operand(call, i, &m));
    if (m != n) return loom_legal_unsupported(call, "for operands of different lengths");
  }
  if (na < 3 || na > 5 || n > in->ndim || in->ndim < 1) return loom_legal_unsupported(call, "for this form");
  bounds_params key = {.tx = in->dtype, .rank = in->ndim, .n = n, .has_axes = na > 3, .has_steps = na > 4};
  for (size_t i = 1; i < na; i++) key.types[i - 1] = call->u.call.args[i]->sinfo->dtype;
  loom_graph_expr *params;
  LOOM_PROPAGATE(add_bounds(x, &key, na, call->u.call.args, &params));
  char name[128];
  snprintf(name, sizeof name, "slice_any_%s_r%d", loom_dtype_name(in->dtype), in->ndim);
  loom_graph_expr *args[2] = {call->u.call.args[0], params};
  slice_any_params sp = {.t = in->dtype, .rank = in->ndim};
  return loom_lx_call(x, name, gen_slice_any, &sp, sizeof sp, 2, args, out, value);
}

/* y = pad(x, pads[, value[, axes]]) ->
 *   y_dims = the padded extents, bound to y's dims; y_params = the pads before each axis;
 *   y = call_tp(@pad_..._rt, (x, y_params[, value])) */
loom_status loom_legal_expand_pad(loom_lx *x, loom_graph_expr **value) {
  const loom_graph_expr *call = x->b->value;
  if (call->u.call.nargs < 2) return LOOM_OK; /* constant pads */
  const loom_sinfo *in, *out, *vs = NULL;
  size_t na = call->u.call.nargs;
  int np, nax;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &in));
  LOOM_PROPAGATE(result_tensor(x, &out));
  LOOM_PROPAGATE(vec_operand(call, 1, &np));
  nax = in->ndim;
  if (na > 3) LOOM_PROPAGATE(vec_operand(call, 3, &nax));
  if (na > 2) LOOM_PROPAGATE(loom_legal_tensor_arg(call, 2, &vs));
  if (na > 4 || np != 2 * nax || nax > in->ndim || in->ndim < 1 || (vs && vs->ndim > 1))
    return loom_legal_unsupported(call, "for this form");
  bounds_params key = {.tx = in->dtype,
                       .types = {call->u.call.args[1]->sinfo->dtype, na > 3 ? call->u.call.args[3]->sinfo->dtype : LOOM_DTYPE_I64},
                       .rank = in->ndim, .n = nax, .pad = 1, .has_axes = na > 3};
  loom_graph_expr *bargs[3] = {call->u.call.args[0], call->u.call.args[1], na > 3 ? call->u.call.args[3] : NULL}, *params;
  LOOM_PROPAGATE(add_bounds(x, &key, na > 3 ? 3 : 2, bargs, &params));
  double v = loom_graph_call_float(call, "value");
  char name[160];
  if (vs) snprintf(name, sizeof name, "pad_%s_r%d_rt_v%d", loom_dtype_name(in->dtype), in->ndim, vs->ndim);
  else
    snprintf(name, sizeof name, "pad_%s_r%d_rt_%016llx", loom_dtype_name(in->dtype), in->ndim,
             (unsigned long long)loom_hash_bytes(&v, sizeof v));
  loom_graph_expr *args[3] = {call->u.call.args[0], params, vs ? call->u.call.args[2] : NULL};
  /* with a value operand the program reads it: the attribute's value is no parameter */
  loom_legal_pad_params pp = {.value = vs ? 0 : v, .t = in->dtype, .rank = in->ndim, .pads_buffer = 1, .value_rank = vs ? vs->ndim : -1};
  return loom_lx_call(x, name, loom_legal_gen_pad, &pp, sizeof pp, vs ? 3 : 2, args, out, value);
}

/* ---- arange with run-time bounds ------------------------------------------------------------------ */

typedef struct range_params {
  loom_dtype t;
  int32_t ranks[3], extents;
} range_params;
LOOM_TP_GEN_PARAMS(range_params, 5 * 4);

static loom_status gen_range(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const range_params *p = params;
  const int ranks[3] = {p->ranks[0], p->ranks[1], p->ranks[2]};
  return loom_tp_gen_range(loom_graph_module_arena(m), loom_graph_module_sym(m), name, p->t, ranks, p->extents, tp);
}

/* y = arange(start, limit, delta) (run-time scalars) -> y_dims = (the length), bound to y's
 * extent, then y = call_tp(@range_..., (start, limit, delta)). */
loom_status loom_legal_expand_arange(loom_lx *x, loom_graph_expr **value) {
  const loom_graph_expr *call = x->b->value;
  if (call->u.call.nargs != 3) return LOOM_OK; /* constant bounds */
  const loom_sinfo *out;
  LOOM_PROPAGATE(result_tensor(x, &out));
  range_params key = {.t = out->dtype, .extents = 1};
  for (size_t i = 0; i < 3; i++) {
    const loom_sinfo *si;
    LOOM_PROPAGATE(loom_legal_tensor_arg(call, i, &si));
    if (si->ndim > 1 || si->dtype != out->dtype || out->ndim != 1) return loom_legal_unsupported(call, "for these operands");
    key.ranks[i] = si->ndim;
  }
  char name[96];
  snprintf(name, sizeof name, "range_dims_%s_%d%d%d", loom_dtype_name(key.t), key.ranks[0], key.ranks[1], key.ranks[2]);
  LOOM_PROPAGATE(loom_lx_bind_program(x, "dims", "shape", name, gen_range, &key, sizeof key, 3, call->u.call.args, 1, out->dims));
  key.extents = 0;
  snprintf(name, sizeof name, "range_%s_%d%d%d", loom_dtype_name(key.t), key.ranks[0], key.ranks[1], key.ranks[2]);
  return loom_lx_call(x, name, gen_range, &key, sizeof key, 3, call->u.call.args, out, value);
}

/* ---- nonzero ------------------------------------------------------------------------------------ */

typedef struct nonzero_params {
  loom_dtype t;
  int32_t rank, count;
} nonzero_params;
LOOM_TP_GEN_PARAMS(nonzero_params, 3 * 4);

static loom_status gen_nonzero(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const nonzero_params *p = params;
  return loom_tp_gen_nonzero(loom_graph_module_arena(m), loom_graph_module_sym(m), name, p->t, p->rank, p->count, tp);
}

/* y = nonzero(x) -> y_dims = (the count), bound to y's extent nnz, then the indices program. */
loom_status loom_legal_expand_nonzero(loom_lx *x, loom_graph_expr **value) {
  const loom_graph_expr *call = x->b->value;
  const loom_sinfo *in, *out;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &in));
  LOOM_PROPAGATE(result_tensor(x, &out));
  if (out->ndim != 2) return loom_legal_unsupported(call, "for this result");
  nonzero_params key = {.t = in->dtype, .rank = in->ndim, .count = 1};
  char name[96];
  snprintf(name, sizeof name, "nonzero_count_%s_r%d", loom_dtype_name(in->dtype), in->ndim);
  loom_graph_expr *arg = call->u.call.args[0];
  LOOM_PROPAGATE(loom_lx_bind_program(x, "dims", "shape", name, gen_nonzero, &key, sizeof key, 1, &arg, 1, &out->dims[1]));
  key.count = 0;
  snprintf(name, sizeof name, "nonzero_%s_r%d", loom_dtype_name(in->dtype), in->ndim);
  return loom_lx_call(x, name, gen_nonzero, &key, sizeof key, 1, &arg, out, value);
}

/* ---- unique and non_max_suppression --------------------------------------------------------------- */

typedef struct unique_params {
  loom_dtype t;
  int32_t rank, axis, sorted;
  loom_tp_unique_part part;
} unique_params;
LOOM_TP_GEN_PARAMS(unique_params, 5 * 4);

static loom_status gen_unique(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const unique_params *p = params;
  return loom_tp_gen_unique(loom_graph_module_arena(m), loom_graph_module_sym(m), name, p->t, p->rank, p->axis, p->sorted, p->part, tp);
}

/* t = unique(x, ...) -> (without an axis: x_flat = a 1-D view of x) t_dims = (u), bound to the
 * result's fresh extent, then one program per result part: the distinct values or slices (and
 * with indices=true the first positions, the inverse and the counts, as a tuple). */
loom_status loom_legal_expand_unique(loom_lx *x, loom_graph_expr **value) {
  const loom_graph_expr *call = x->b->value;
  const loom_sinfo *in, *out = x->b->var->sinfo;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &in));
  bool full = loom_graph_call_int(call, "indices") != 0, has_axis = loom_graph_call_attr(call, "axis") != NULL;
  const loom_sinfo *vals = full ? (out && out->kind == LOOM_SINFO_TUPLE && out->nfields == 4 ? out->fields[0] : NULL) : out;
  if (!vals || vals->kind != LOOM_SINFO_TENSOR || !vals->dims) return loom_legal_unsupported(call, "for this result");
  unique_params key = {.t = in->dtype, .rank = in->ndim, .sorted = loom_graph_call_int(call, "sorted") != 0, .part = LOOM_TP_UNIQUE_COUNT};
  loom_graph_expr *arg = call->u.call.args[0];
  if (has_axis) {
    int axis;
    if (!loom_legal_norm_axis(loom_graph_call_int(call, "axis"), in->ndim, &axis)) return loom_legal_unsupported(call, "for this axis");
    key.axis = axis;
  } else if (in->ndim != 1) { /* the elements: a 1-D view */
    loom_sym_ctx *cx = loom_graph_module_sym(x->m);
    const loom_sym_expr *n = loom_graph_dims_prod(cx, in->ndim, in->dims);
    if (!n) return loom_sym_ctx_take_error(cx);
    loom_graph_expr *c = loom_lx_view(x, arg, in->dtype, 1, &n);
    if (!c || !(arg = loom_lx_add(x, "flat", LOOM_GRAPH_BIND_VAR, c, c->sinfo))) return LOOM_OOM();
    key.rank = 1;
  }
  static const char *const parts[] = {"count", "values", "first", "inverse", "counts"};
  char name[128];
  loom_graph_expr *items[4];
  for (int p = 0; p < (full ? 5 : 2); p++) {
    key.part = (loom_tp_unique_part)p;
    snprintf(name, sizeof name, "unique_%s_%s_r%d_a%d%s", parts[p], loom_dtype_name(in->dtype), key.rank, key.axis,
             key.sorted ? "" : "_first_order");
    if (p == 0) {
      LOOM_PROPAGATE(loom_lx_bind_program(x, "dims", "shape", name, gen_unique, &key, sizeof key, 1, &arg, 1, &vals->dims[key.axis]));
      continue;
    }
    const loom_sinfo *si = full ? out->fields[p - 1] : out;
    if (!full) {
      return loom_lx_call(x, name, gen_unique, &key, sizeof key, 1, &arg, out, value);
    }
    LOOM_PROPAGATE(loom_lx_add_tp(x, parts[p], name, gen_unique, &key, sizeof key, 1, &arg, si, &items[p - 1]));
  }
  *value = loom_graph_tuple_new(x->m, 4, items);
  return *value ? LOOM_OK : LOOM_OOM();
}

typedef struct nms_params {
  loom_dtype types[5];
  int32_t forms[3], center, count;
} nms_params;
LOOM_TP_GEN_PARAMS(nms_params, 10 * 4);

static loom_status gen_nms(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const nms_params *p = params;
  const int forms[3] = {p->forms[0], p->forms[1], p->forms[2]};
  return loom_tp_gen_nms(loom_graph_module_arena(m), loom_graph_module_sym(m), name, p->types, forms, p->center, p->count, tp);
}

/* y = non_max_suppression(boxes, scores, max, iou, score_threshold) -> y_dims = (the number
 * selected), bound to y's extent, then the program that writes the rows. */
loom_status loom_legal_expand_nms(loom_lx *x, loom_graph_expr **value) {
  const loom_graph_expr *call = x->b->value;
  const loom_sinfo *out;
  LOOM_PROPAGATE(result_tensor(x, &out));
  if (call->u.call.nargs != 5 || out->ndim != 2) return loom_legal_unsupported(call, "for this form");
  nms_params key = {.center = loom_graph_call_int(call, "center_point_box") != 0, .count = 1};
  char name[160] = "nms";
  for (size_t i = 0; i < 5; i++) {
    const loom_sinfo *si;
    LOOM_PROPAGATE(loom_legal_tensor_arg(call, i, &si));
    key.types[i] = si->dtype;
    snprintf(name + strlen(name), sizeof name - strlen(name), "_%s", loom_dtype_name(si->dtype));
    if (i < 2) continue;
    int64_t len = 1;
    if (si->ndim > 1 || (si->ndim == 1 && (!loom_sym_is_const(si->dims[0], &len) || len > 1)))
      return loom_legal_unsupported(call, "for a threshold operand that is not one value");
    key.forms[i - 2] = si->ndim == 0 ? 0 : len == 1 ? 1 : -1;
    snprintf(name + strlen(name), sizeof name - strlen(name), "%d", key.forms[i - 2] + 1);
  }
  if (key.center) strncat(name, "_center", sizeof name - strlen(name) - 1);
  char cname[192];
  snprintf(cname, sizeof cname, "%s_count", name);
  const loom_sinfo *boxes;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &boxes));
  if (boxes->ndim != 3) return loom_legal_unsupported(call, "for boxes that are not (batch, boxes, 4)");
  loom_graph_expr *args[6]; /* the operands, then dn: the heap's sift steps */
  for (size_t i = 0; i < 5; i++) args[i] = call->u.call.args[i];
  if (!(args[5] = loom_graph_sym_new(x->m, loom_tp_bitlen(loom_graph_module_sym(x->m), boxes->dims[1])))) return LOOM_OOM();
  LOOM_PROPAGATE(loom_lx_bind_program(x, "dims", "shape", cname, gen_nms, &key, sizeof key, 6, args, 1, &out->dims[0]));
  key.count = 0;
  return loom_lx_call(x, name, gen_nms, &key, sizeof key, 6, args, out, value);
}

/* ---- entry ------------------------------------------------------------------------------------ */

/* Convolutions and pools: legalize_window.c picks the forms it expands. */
loom_status loom_legalize_expand(loom_graph_module *m, loom_graph_block *blk, size_t i, bool *expanded) {
  *expanded = false;
  loom_lx x = {.m = m, .b = blk->bindings[i]};
  loom_graph_expand_fn expand = loom_graph_op_impl_of(x.b->value->u.call.op)->expand;
  loom_graph_expr *value = NULL;
  if (!expand) return LOOM_OK;
  LOOM_PROPAGATE(expand(&x, &value));
  if (!value) {
    assert(x.n == 0 && "an expand hook added bindings for a form it did not expand");
    return LOOM_OK;
  }
  LOOM_PROPAGATE(splice(&x, blk, i, value));
  *expanded = true;
  return LOOM_OK;
}
