/* legalize_pool.c — pooling calls: the N-d window program (tensorprog/gen_window.c) for every
 * pooling op, and the row-by-row forms max / average pooling and global_avg_pool2d expand to.
 * The window is read by the functions the reference implementation uses (loom_graph_pool_window,
 * loom_graph_conv_window), as in legalize_window.c, whose keys and padding it shares. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "graph/legalize_internal.h"

static loom_status gen_pool(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const loom_legal_window_params *p = params;
  loom_tp_window w = loom_legal_window_from(p);
  loom_tp_pool pool = {.kind = p->kind, .p = p->p, .col_major = p->col_major};
  return loom_tp_gen_pool(loom_graph_module_arena(m), loom_graph_module_sym(m), name, p->t, &pool, &w, tp);
}

/* The pool kind, window and key of a pooling call; UNIMPLEMENTED for forms without a program. */
static loom_status pool_form(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *x, loom_tp_pool *pool,
                             loom_tp_window *w) {
  loom_graph_icx ic = loom_legal_icx_for(m, call);
  loom_graph_window g;
  loom_graph_op op = call->u.call.op;
  *pool = (loom_tp_pool){.kind = LOOM_TP_POOL_MAX};
  if (op == LOOM_GRAPH_OP_MAX_POOL2D || op == LOOM_GRAPH_OP_AVG_POOL2D) {
    if (x->ndim != 4) return loom_legal_unsupported(call, "for a non-NCHW input");
    LOOM_PROPAGATE(loom_graph_conv_window(&ic, 2, true, &g));
    *w = loom_legal_window_of(&g);
    pool->kind = op == LOOM_GRAPH_OP_MAX_POOL2D ? LOOM_TP_POOL_MAX : LOOM_TP_POOL_AVG;
    return LOOM_OK;
  }
  LOOM_PROPAGATE(loom_graph_pool_window(&ic, x->ndim, &g));
  *w = loom_legal_window_of(&g);
  switch (op) {
    case LOOM_GRAPH_OP_MAX_POOL: break;
    case LOOM_GRAPH_OP_MAX_POOL_INDICES:
      pool->kind = LOOM_TP_POOL_ARGMAX;
      pool->col_major = loom_graph_call_int(call, "storage_order") == 1;
      break;
    case LOOM_GRAPH_OP_AVG_POOL:
      pool->kind = loom_graph_call_int(call, "count_include_pad") ? LOOM_TP_POOL_AVG_PAD : LOOM_TP_POOL_AVG;
      break;
    default:
      pool->kind = LOOM_TP_POOL_LP;
      pool->p = loom_graph_call_int(call, "p");
      break;
  }
  return LOOM_OK;
}

static loom_status legalize_pool(loom_graph_module *m, const loom_graph_expr *call, loom_tp_func **tp) {
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  loom_tp_pool pool;
  loom_tp_window w;
  LOOM_PROPAGATE(pool_form(m, call, x, &pool, &w));
  bool max = pool.kind == LOOM_TP_POOL_MAX || pool.kind == LOOM_TP_POOL_ARGMAX;
  if (!max && !loom_dtype_is_float(x->dtype)) return loom_legal_unsupported(call, "for an integer input");
  static const char *const kinds[] = {"max", "argmax", "avg", "avgpad", "lp"};
  char name[512];
  snprintf(name, sizeof name, "%s_pool%dd_%s%s", kinds[pool.kind], w.n, loom_dtype_name(x->dtype),
           pool.col_major ? "_colmajor" : "");
  if (pool.kind == LOOM_TP_POOL_LP) snprintf(name + strlen(name), sizeof name - strlen(name), "_p%lld", (long long)pool.p);
  loom_legal_key_window(name, sizeof name, &w, true);
  loom_legal_window_params p = loom_legal_window_params_of(&w, x->dtype);
  p.kind = pool.kind;
  p.p = pool.p;
  p.col_major = pool.col_major;
  return LOOM_LEGAL_PROGRAM(m, name, gen_pool, p, tp);
}

/* The legalize hook of every pooling op but global_avg_pool2d (conv and image families). */
loom_status loom_legal_pool(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out, loom_graph_legal *r) {
  (void)out;
  return legalize_pool(m, call, &r->tp);
}

/* ---- pooling, one output row at a time (gen_conv.c) ----------------------------------------------------
 *
 * max pooling in f32 (ceil mode: stride - 1 more -inf padding after, for the windows hanging past
 * the input) and average pooling without ceil mode (dilation 1):
 *   y_xp = conv_pad(x) (-inf for max, 0 for average; when padded);  y = call_tp(@pool_rows.., (y_xp))
 * global_avg_pool2d: the mean over the last axis of x viewed (n*c, h*w), viewed back (n, c, 1, 1): one
 * loop over the planes (a batch of one still has work for every thread), the sum vectorised. */
typedef struct pool_key {
  loom_tp_pool pool;
  loom_tp_window w;
} pool_key;

/* params: loom_legal_window_params of the window and `kind` */
static loom_status gen_pool_rows(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const loom_legal_window_params *p = params;
  loom_tp_window w = loom_legal_window_from(p);
  return (p->fused ? loom_tp_gen_pool_fused : loom_tp_gen_pool_rows)(loom_graph_module_arena(m), loom_graph_module_sym(m), name,
                                                                     LOOM_DTYPE_F32, p->kind, &w, tp);
}

static loom_status expand_pool(loom_lx *x, loom_graph_expr **value, bool *applies) {
  const loom_graph_expr *call = x->b->value;
  const loom_sinfo *xs, *out = x->b->var->sinfo;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &xs));
  int n = xs->ndim - 2;
  if (n < 1 || n > LOOM_TP_MAX_SPATIAL || xs->dtype != LOOM_DTYPE_F32 || !xs->dims || !out || out->kind != LOOM_SINFO_TENSOR)
    return LOOM_OK;
  loom_graph_op op = call->u.call.op;
  bool ceil = false;
  if (op != LOOM_GRAPH_OP_MAX_POOL2D && op != LOOM_GRAPH_OP_AVG_POOL2D) {
    loom_graph_icx ic = loom_legal_icx_for(x->m, call);
    loom_graph_window g;
    loom_status st = loom_graph_pool_window(&ic, xs->ndim, &g);
    ceil = !st && g.ceil;
    loom_status_free(st);
  }
  pool_key k;
  loom_status st = pool_form(x->m, call, xs, &k.pool, &k.w);
  if (st) { /* a form without a program: the one-program lowering says so */
    loom_status_free(st);
    return LOOM_OK;
  }
  if (k.pool.kind != LOOM_TP_POOL_MAX && k.pool.kind != LOOM_TP_POOL_AVG && k.pool.kind != LOOM_TP_POOL_AVG_PAD) return LOOM_OK;
  /* ceil mode's last window may hang past the end padding: max pooling pads stride - 1 more
   * (-inf, which the maximum ignores; every window keeps a tap inside the input); average
   * pooling counts only the taps before the end padding, which rows do not know */
  if (ceil && k.pool.kind != LOOM_TP_POOL_MAX) return LOOM_OK;
  loom_legal_pad_key pk = {.n = n, .fill = k.pool.kind == LOOM_TP_POOL_MAX ? -INFINITY : 0.0, .flat_extra = -1};
  bool pad = false;
  for (int i = 0; i < n; i++) {
    if (k.w.shift[i] || k.w.pad_lo[i] < 0 || k.w.pad_hi[i] < 0 || (k.pool.kind == LOOM_TP_POOL_AVG && k.w.dilation[i] != 1))
      return LOOM_OK;
    if (ceil) k.w.pad_hi[i] += k.w.stride[i] - 1; /* the rows program sees a floor-mode window on more padding */
    pk.lo[i] = k.w.pad_lo[i];
    pk.hi[i] = k.w.pad_hi[i];
    pad |= pk.lo[i] || pk.hi[i];
  }
  *applies = true;
  loom_graph_expr *xin = call->u.call.args[0];
  /* max / average counting the padding, 2-D, equal strides, dilation 1: the padding made plane by
   * plane inside the program (loom_tp_gen_pool_fused), as depthwise_fused does */
  bool fused = k.pool.kind != LOOM_TP_POOL_AVG && loom_tp_dw_fused(&k.w);
  if (pad && !fused) LOOM_PROPAGATE(loom_legal_pad_input(x, xs, &pk, &xin));
  static const char *const kinds[] = {"max", "argmax", "avg", "avgpad", "lp"};
  char name[512];
  snprintf(name, sizeof name, "%s_pool_rows_f32_n%d", kinds[k.pool.kind], n);
  loom_legal_key_window(name, sizeof name, &k.w, true);
  if (fused) snprintf(name + strlen(name), sizeof name - strlen(name), "_fused");
  loom_legal_window_params wp = loom_legal_window_params_of(&k.w, LOOM_DTYPE_F32);
  wp.kind = k.pool.kind;
  wp.fused = fused;
  loom_graph_expr *args[2] = {xin, NULL};
  size_t nargs = 1;
  if (!fused && loom_tp_rows_grid(&k.w, k.pool.kind, false)) LOOM_PROPAGATE(loom_legal_plane_view(x, xs, &pk, xin, &args[nargs++]));
  return loom_lx_call(x, name, gen_pool_rows, &wp, sizeof wp, nargs, args, out, value);
}

static loom_status gen_plane_mean(loom_graph_module *m, const char *name, const void *ctx, loom_tp_func **tp) {
  return loom_tp_gen_reduce(loom_graph_module_arena(m), loom_graph_module_sym(m), name, LOOM_TP_REDUCE_MEAN,
                            *(const loom_dtype *)ctx, 2, 1u << 1, true, tp);
}

static loom_status expand_global_avg_pool(loom_lx *x, loom_graph_expr **value, bool *applies) {
  const loom_graph_expr *call = x->b->value;
  const loom_sinfo *xs, *out = x->b->var->sinfo;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &xs));
  if (xs->ndim != 4 || !xs->dims || !loom_dtype_is_float(xs->dtype) || !out || out->kind != LOOM_SINFO_TENSOR) return LOOM_OK;
  *applies = true;
  loom_graph_module *m = x->m;
  loom_sym_ctx *cx = loom_graph_module_sym(m);
  const loom_sym_expr *pd[2] = {loom_sym_mul(cx, xs->dims[0], xs->dims[1]), loom_sym_mul(cx, xs->dims[2], xs->dims[3])};
  const loom_sym_expr *rd[2] = {pd[0], loom_sym_const(cx, 1)};
  loom_graph_expr *planes = loom_lx_add(x, "planes", LOOM_GRAPH_BIND_VAR, loom_lx_view(x, call->u.call.args[0], xs->dtype, 2, pd),
                                        loom_sinfo_tensor(m, xs->dtype, 2, pd, xs->device));
  const loom_sinfo *rsi = loom_sinfo_tensor(m, xs->dtype, 2, rd, xs->device);
  if (!planes || !rsi) return LOOM_OOM();
  char name[64];
  snprintf(name, sizeof name, "mean_planes_%s", loom_dtype_name(xs->dtype));
  loom_graph_expr *mean;
  loom_dtype t = xs->dtype;
  LOOM_PROPAGATE(loom_lx_add_tp(x, "mean", name, gen_plane_mean, &t, sizeof t, 1, &planes, rsi, &mean));
  return loom_legal_final_call(x, LOOM_GRAPH_OP_RESHAPE, mean, 1, (loom_graph_attr[]){loom_graph_attr_syms(m, "shape", 4, out->dims)}, out, value);
}

loom_status loom_legal_expand_pool(loom_lx *x, loom_graph_expr **value) { /* the hook of the pooling ops with a rows form */
  bool global = x->b->value->u.call.op == LOOM_GRAPH_OP_GLOBAL_AVG_POOL2D;
  return loom_lx_expand_with(x, global ? expand_global_avg_pool : expand_pool, value);
}
