/* legalize_expand.c — legalizations that turn one binding into several.
 *
 * A program writes one destination buffer whose shape the caller knows before the call, so:
 *   - tuple-valued ops (split, topk) become one program per part and a tuple;
 *   - forms whose result dims depend on data (topk with a run-time k, reductions over
 *     run-time axes) first bind those dims: a program (or the operand itself) yields them as
 *     an i64 vector, `tensor_to_shape` + `match_cast` bind the fresh symbols inference gave
 *     the result, and the computing program then reads its extents from its result buffer.
 * The new bindings go before the rewritten one, which keeps its variable; the guards inference
 * recorded on it move to the first binding that computes (after the symbols are bound). */
#include <stdio.h>
#include <string.h>

#include "graph/legalize_internal.h"

#define MAX_ADDED LOOM_LX_MAX_ADDED

/* Appends `name_suffix = value` (struct info si) before the rewritten binding; its var, or NULL. */
loom_graph_expr *loom_lx_add(loom_lx *x, const char *suffix, loom_graph_binding_kind kind, loom_graph_expr *value,
                            const loom_sinfo *si) {
  if (x->n == MAX_ADDED || !value || !si) return NULL;
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

/* The program `name` (made by gen when the module lacks it) called on args, writing a result of
 * struct info si; its var in *out. */
loom_status loom_lx_add_tp(loom_lx *x, const char *suffix, const char *name, loom_lx_gen gen, const void *ctx, size_t nargs,
                          loom_graph_expr *const *args, const loom_sinfo *si, loom_graph_expr **out) {
  loom_tp_func *tp = loom_graph_module_find_tp(x->m, name);
  if (!tp) {
    LOOM_PROPAGATE(gen(x->m, name, ctx, &tp));
    LOOM_PROPAGATE(loom_graph_module_add_tp(x->m, tp));
  }
  loom_graph_expr *c = loom_graph_call_tp(x->m, loom_tp_func_name(tp), nargs, args, si);
  return (*out = loom_lx_add(x, suffix, LOOM_GRAPH_BIND_VAR, c, si)) ? LOOM_OK : LOOM_OOM();
}

/* `op(args, attrs)` with result struct info si, lowered through loom_graph_legalize_call. */
loom_status loom_lx_add_lowered(loom_lx *x, const char *suffix, loom_graph_op op, size_t nargs, loom_graph_expr *const *args,
                               size_t nattrs, const loom_graph_attr *attrs, const loom_sinfo *si, loom_graph_expr **out) {
  loom_graph_expr *c = loom_graph_call_op(x->m, op, nargs, args, nattrs, attrs), *tp;
  if (!c) return LOOM_OOM();
  c->sinfo = si;
  c->loc = x->b->value->loc;
  LOOM_PROPAGATE(loom_legal_lower_call(x->m, c, &tp));
  return (*out = loom_lx_add(x, suffix, LOOM_GRAPH_BIND_VAR, tp, si)) ? LOOM_OK : LOOM_OOM();
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

/* Puts the added bindings before binding i and the rewritten binding's new value in place. */
static loom_status splice(loom_lx *x, loom_graph_block *blk, size_t i, loom_graph_expr *value) {
  loom_graph_binding **nb = LOOM_ARENA_ARRAY(loom_graph_module_arena(x->m), loom_graph_binding *, blk->n + x->n);
  if (!nb || !value) return LOOM_OOM();
  for (size_t k = 0; k < i; k++) nb[k] = blk->bindings[k];
  for (size_t k = 0; k < x->n; k++) nb[i + k] = x->added[k];
  for (size_t k = i; k < blk->n; k++) nb[k + x->n] = blk->bindings[k];
  loom_graph_binding *b = x->b, *g = x->guard_at < x->n ? x->added[x->guard_at] : b; /* guard_at == n: b itself */
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
static loom_status expand_split(loom_lx *x, loom_graph_expr **value) {
  const loom_graph_expr *call = x->b->value;
  const loom_sinfo *in, *out = x->b->var->sinfo;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &in));
  int axis;
  if (!out || out->kind != LOOM_SINFO_TUPLE || out->nfields > MAX_ADDED ||
      !loom_legal_norm_axis(loom_graph_attr_get_int(call, "axis", 0), in->ndim, &axis))
    return loom_legal_unsupported(call, "for this form");
  loom_sym_ctx *cx = loom_graph_module_sym(x->m);
  loom_graph_expr *parts[MAX_ADDED], *arg = call->u.call.args[0];
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
  return LOOM_OK;
}

/* ---- topk ----------------------------------------------------------------------------------- */

typedef struct topk_key {
  loom_dtype t;
  int rank, axis;
  bool largest, indices;
} topk_key;

static loom_status gen_topk(loom_graph_module *m, const char *name, const void *ctx, loom_tp_func **tp) {
  const topk_key *k = ctx;
  return loom_tp_gen_topk(loom_graph_module_arena(m), loom_graph_module_sym(m), name, k->t, k->rank, k->axis, k->largest,
                          k->indices, tp);
}

/* t = topk(x, k=..) -> t_values, t_indices = two programs (each reads k from its result
 * buffer), t = (values, indices). A run-time k (operand 1, one integer) is bound first to the
 * fresh symbol of the result's axis, with the guard k <= x's extent. */
static loom_status expand_topk(loom_lx *x, loom_graph_expr **value) {
  const loom_graph_expr *call = x->b->value;
  const loom_sinfo *in, *out = x->b->var->sinfo;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &in));
  if (loom_dtype_is_lowp(in->dtype)) return loom_legal_unsupported(call, "for low-precision dtypes");
  if (in->ndim < 1 || in->dtype == LOOM_DTYPE_BOOL || !out || out->kind != LOOM_SINFO_TUPLE || out->nfields != 2 ||
      !out->fields[0]->dims)
    return loom_legal_unsupported(call, "for this operand");
  topk_key key = {in->dtype, in->ndim, 0, loom_graph_attr_get_int(call, "largest", 1) != 0, false};
  if (!loom_legal_norm_axis(loom_graph_attr_get_int(call, "axis", -1), in->ndim, &key.axis))
    return loom_legal_unsupported(call, "for this axis");
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
      loom_graph_attr sh = loom_graph_attr_syms(x->m, "shape", 1, &d1);
      const loom_sinfo *si = loom_sinfo_tensor(x->m, ks->dtype, 1, &d1, ks->device);
      loom_graph_expr *c = loom_graph_call_op(x->m, LOOM_GRAPH_OP_RESHAPE, 1, &kv, 1, &sh);
      if (!c || !si) return LOOM_OOM();
      c->sinfo = si;
      if (!(kv = loom_lx_add(x, "k1", LOOM_GRAPH_BIND_VAR, c, si))) return LOOM_OOM();
    }
    LOOM_PROPAGATE(loom_lx_bind_dims(x, "k", kv, 1, &k));
    char why[256];
    snprintf(why, sizeof why, "topk: k must not exceed operand 0 axis %d", key.axis);
    LOOM_PROPAGATE(loom_lx_add_guard(x, loom_sym_cmp(cx, LOOM_SYM_LE, k, in->dims[key.axis]), why));
  }
  x->guard_at = x->n;
  loom_graph_expr *parts[2], *arg = call->u.call.args[0];
  for (int p = 0; p < 2; p++) {
    char name[128];
    key.indices = p == 1;
    snprintf(name, sizeof name, "topk_%s_r%d_a%d_%s_%s", loom_dtype_name(in->dtype), in->ndim, key.axis,
             key.largest ? "largest" : "smallest", p ? "indices" : "values");
    LOOM_PROPAGATE(loom_lx_add_tp(x, p ? "indices" : "values", name, gen_topk, &key, 1, &arg, out->fields[p], &parts[p]));
  }
  *value = loom_graph_tuple_new(x->m, 2, parts);
  return LOOM_OK;
}

/* ---- reductions over run-time axes ------------------------------------------------------------- */

typedef struct reduce_key {
  loom_tp_reduce_op op;
  loom_dtype tx, ta;
  int rank, n;
  bool keep;
} reduce_key;

static loom_status gen_reduce_dims(loom_graph_module *m, const char *name, const void *ctx, loom_tp_func **tp) {
  const reduce_key *k = ctx;
  return loom_tp_gen_reduce_dims(loom_graph_module_arena(m), loom_graph_module_sym(m), name, k->tx, k->rank, k->n, k->ta,
                                 k->keep, tp);
}

static loom_status gen_reduce_any(loom_graph_module *m, const char *name, const void *ctx, loom_tp_func **tp) {
  const reduce_key *k = ctx;
  return loom_tp_gen_reduce_any(loom_graph_module_arena(m), loom_graph_module_sym(m), name, k->op, k->tx, k->rank, tp);
}

static bool reduce_kind(loom_graph_op op, loom_tp_reduce_op *k) {
  switch (op) {
    case LOOM_GRAPH_OP_SUM: *k = LOOM_TP_REDUCE_SUM; return true;
    case LOOM_GRAPH_OP_MEAN: *k = LOOM_TP_REDUCE_MEAN; return true;
    case LOOM_GRAPH_OP_MAX: *k = LOOM_TP_REDUCE_MAX; return true;
    case LOOM_GRAPH_OP_MIN: *k = LOOM_TP_REDUCE_MIN; return true;
    case LOOM_GRAPH_OP_PROD: *k = LOOM_TP_REDUCE_PROD; return true;
    default: return false;
  }
}

/* y = sum(x, axes) with run-time axes (n of them) ->
 *   y_dims = call_tp(@reduce_dims_..., (x, axes))      the keepdims dims [, the kept dims]
 *   bind y_dims to (s_0, .., s_r-1 [, y's dims])
 *   y_keep = call_tp(@sum_any_..., (x,)) -> Tensor[(s_0, ..)]   (with keepdims: y itself)
 *   y = reshape(y_keep, shape=[y's dims])                          (without: a view) */
static loom_status expand_reduce(loom_lx *x, loom_tp_reduce_op op, loom_graph_expr **value) {
  const loom_graph_expr *call = x->b->value;
  const loom_sinfo *in, *axes, *out = x->b->var->sinfo;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &in));
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 1, &axes));
  int64_t n;
  if (axes->ndim != 1 || !loom_sym_is_const(axes->dims[0], &n) || n < 1 || n > in->ndim ||
      (axes->dtype != LOOM_DTYPE_I64 && axes->dtype != LOOM_DTYPE_I32) || !out || out->kind != LOOM_SINFO_TENSOR || !out->dims)
    return loom_legal_unsupported(call, "for these run-time axes");
  reduce_key key = {op, in->dtype, axes->dtype, in->ndim, (int)n, loom_graph_attr_get_int(call, "keepdims", 0) != 0};
  loom_sym_ctx *cx = loom_graph_module_sym(x->m);
  const loom_sym_expr *pat[2 * LOOM_TP_GEN_MAX_RANK], *s[LOOM_TP_GEN_MAX_RANK];
  size_t len = (size_t)in->ndim + (key.keep ? 0 : (size_t)out->ndim);
  for (int k = 0; k < in->ndim; k++) {
    char nm[160];
    snprintf(nm, sizeof nm, "%s_k%d", x->b->var->u.var.name, k);
    s[k] = key.keep ? out->dims[k] : loom_sym_var_new(cx, nm, LOOM_SYM_VAR_SHAPE);
    if (!s[k]) return loom_sym_ctx_take_error(cx);
    pat[k] = s[k];
  }
  for (int j = 0; !key.keep && j < out->ndim; j++) pat[in->ndim + j] = out->dims[j];
  char name[128];
  snprintf(name, sizeof name, "reduce_dims_%s_r%d_n%d_%s%s", loom_dtype_name(in->dtype), in->ndim, key.n,
           loom_dtype_name(axes->dtype), key.keep ? "_k" : "");
  const loom_sym_expr *dl = loom_sym_const(cx, (int64_t)len);
  const loom_sinfo *vec = loom_sinfo_tensor(x->m, LOOM_DTYPE_I64, 1, &dl, in->device);
  loom_graph_expr *dims, *keep, *args[2] = {call->u.call.args[0], call->u.call.args[1]};
  LOOM_PROPAGATE(loom_lx_add_tp(x, "dims", name, gen_reduce_dims, &key, 2, args, vec, &dims));
  LOOM_PROPAGATE(loom_lx_bind_dims(x, "shape", dims, len, pat));
  snprintf(name, sizeof name, "%s_any_%s_r%d", loom_graph_op_name(call->u.call.op), loom_dtype_name(in->dtype), in->ndim);
  const loom_sinfo *ksi = key.keep ? out : loom_sinfo_tensor(x->m, in->dtype, in->ndim, s, in->device);
  if (!ksi) return LOOM_OOM();
  if (key.keep) {
    loom_tp_func *tp = loom_graph_module_find_tp(x->m, name);
    if (!tp) {
      LOOM_PROPAGATE(gen_reduce_any(x->m, name, &key, &tp));
      LOOM_PROPAGATE(loom_graph_module_add_tp(x->m, tp));
    }
    *value = loom_graph_call_tp(x->m, loom_tp_func_name(tp), 1, args, out);
    return LOOM_OK;
  }
  LOOM_PROPAGATE(loom_lx_add_tp(x, "keep", name, gen_reduce_any, &key, 1, args, ksi, &keep));
  loom_graph_attr sh = loom_graph_attr_syms(x->m, "shape", (size_t)out->ndim, out->dims);
  *value = loom_graph_call_op(x->m, LOOM_GRAPH_OP_RESHAPE, 1, &keep, 1, &sh);
  if (*value) (*value)->sinfo = out;
  return LOOM_OK;
}

/* ---- entry ------------------------------------------------------------------------------------ */

loom_status loom_legalize_expand(loom_graph_module *m, loom_graph_block *blk, size_t i, bool *expanded) {
  *expanded = false;
  loom_lx x = {.m = m, .b = blk->bindings[i]};
  const loom_graph_expr *call = x.b->value;
  loom_graph_expr *value = NULL;
  loom_tp_reduce_op rk;
  loom_status s;
  if (call->u.call.op == LOOM_GRAPH_OP_SPLIT) s = expand_split(&x, &value);
  else if (call->u.call.op == LOOM_GRAPH_OP_TOPK) s = expand_topk(&x, &value);
  else if (call->u.call.nargs == 2 && reduce_kind(call->u.call.op, &rk)) s = expand_reduce(&x, rk, &value);
  else if (call->u.call.op == LOOM_GRAPH_OP_RESIZE && !loom_graph_call_attr(call, "size")) s = loom_legalize_expand_resize(&x, &value);
  else return LOOM_OK;
  LOOM_PROPAGATE(s);
  LOOM_PROPAGATE(splice(&x, blk, i, value));
  *expanded = true;
  return LOOM_OK;
}
