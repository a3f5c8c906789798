/* legalize_window.c — convolution and pooling calls to the N-d window programs of
 * tensorprog/gen_window.c. The window is read by the same functions the reference
 * implementation uses (loom_graph_conv_window, loom_graph_pool_window), so a program and
 * the interpreter cannot disagree on what an attribute means. */
#include <stdio.h>
#include <string.h>

#include "graph/legalize_internal.h"

/* Appends "_<tag><v0>x<v1>..." for the n entries of v (a negative entry as m<|v|>). */
static void key_list(char *name, size_t cap, const char *tag, const int64_t *v, int n) {
  size_t len = strlen(name);
  len += (size_t)snprintf(name + len, len < cap ? cap - len : 0, "_%s", tag);
  for (int i = 0; i < n && len < cap; i++)
    len += (size_t)snprintf(name + len, cap - len, "%s%s%lld", i ? "x" : "", v[i] < 0 ? "m" : "", v[i] < 0 ? -(long long)v[i] : (long long)v[i]);
}

static void key_window(char *name, size_t cap, const loom_tp_window *w, bool kernel) {
  if (kernel) key_list(name, cap, "k", w->kernel, w->n);
  key_list(name, cap, "s", w->stride, w->n);
  key_list(name, cap, "d", w->dilation, w->n);
  key_list(name, cap, "p", w->pad_lo, w->n);
  key_list(name, cap, "q", w->pad_hi, w->n);
  key_list(name, cap, "e", w->shift, w->n);
}

static loom_tp_window window_of(const loom_graph_window *g) {
  loom_tp_window w = {.n = g->n, .groups = g->groups};
  for (int i = 0; i < g->n; i++) {
    w.kernel[i] = g->kernel[i];
    w.stride[i] = g->stride[i];
    w.dilation[i] = g->dilation[i];
    w.pad_lo[i] = g->pad_lo[i];
    w.pad_hi[i] = g->pad_hi[i];
  }
  return w;
}

static loom_graph_icx icx_for(loom_graph_module *m, const loom_graph_expr *call) {
  return (loom_graph_icx){.m = m, .cx = loom_graph_module_sym(m), .call = call, .op = loom_graph_op_name(call->u.call.op)};
}

/* What a window program is made of: the window (padding-free, 0 past its n axes), the dtypes and
 * the form. conv and pool share it; their generators differ. */
typedef struct window_params {
  int64_t kernel[LOOM_TP_MAX_SPATIAL], stride[LOOM_TP_MAX_SPATIAL], dilation[LOOM_TP_MAX_SPATIAL];
  int64_t pad_lo[LOOM_TP_MAX_SPATIAL], pad_hi[LOOM_TP_MAX_SPATIAL], shift[LOOM_TP_MAX_SPATIAL];
  int64_t groups, p;     /* conv groups; lp's p */
  loom_dtype t, acc;
  int32_t n, bias, transpose;
  loom_tp_pool_kind kind;
  int32_t col_major, unused; /* 0 */
} window_params;
LOOM_TP_GEN_PARAMS(window_params, (6 * LOOM_TP_MAX_SPATIAL + 2) * 8 + 8 * 4);

static window_params params_of(const loom_tp_window *w, loom_dtype t) {
  window_params p = {.groups = w->groups, .t = t, .n = w->n};
  for (int i = 0; i < LOOM_TP_MAX_SPATIAL; i++) {
    p.kernel[i] = w->kernel[i];
    p.stride[i] = w->stride[i];
    p.dilation[i] = w->dilation[i];
    p.pad_lo[i] = w->pad_lo[i];
    p.pad_hi[i] = w->pad_hi[i];
    p.shift[i] = w->shift[i];
  }
  return p;
}

static loom_tp_window window_from(const window_params *p) {
  loom_tp_window w = {.n = p->n, .groups = p->groups};
  for (int i = 0; i < LOOM_TP_MAX_SPATIAL; i++) {
    w.kernel[i] = p->kernel[i];
    w.stride[i] = p->stride[i];
    w.dilation[i] = p->dilation[i];
    w.pad_lo[i] = p->pad_lo[i];
    w.pad_hi[i] = p->pad_hi[i];
    w.shift[i] = p->shift[i];
  }
  return w;
}

static loom_status gen_conv(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const window_params *p = params;
  loom_tp_window w = window_from(p);
  loom_arena *a = loom_graph_module_arena(m);
  loom_sym_ctx *cx = loom_graph_module_sym(m);
  return p->transpose ? loom_tp_gen_conv_transpose(a, cx, name, p->t, p->acc, &w, p->bias, tp)
                      : loom_tp_gen_conv(a, cx, name, p->t, p->acc, &w, p->bias, tp);
}

static loom_status gen_pool(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const window_params *p = params;
  loom_tp_window w = window_from(p);
  loom_tp_pool pool = {.kind = p->kind, .p = p->p, .col_major = p->col_major};
  return loom_tp_gen_pool(loom_graph_module_arena(m), loom_graph_module_sym(m), name, p->t, &pool, &w, tp);
}

/* conv1d, conv2d, conv and conv_transpose (N-d). */
static loom_status legalize_conv(loom_graph_module *m, const loom_graph_expr *call, loom_tp_func **tp) {
  const loom_sinfo *x, *k, *b = NULL;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 1, &k));
  if (call->u.call.nargs > 2) LOOM_PROPAGATE(loom_legal_tensor_arg(call, 2, &b));
  loom_graph_op op = call->u.call.op;
  bool transpose = op == LOOM_GRAPH_OP_CONV_TRANSPOSE;
  int n = transpose ? x->ndim - 2 : loom_graph_conv_rank(op, x->ndim);
  if (n < 1 || n > LOOM_TP_MAX_SPATIAL || x->ndim != n + 2 || k->ndim != n + 2 || x->dtype != k->dtype || (b && b->dtype != x->dtype))
    return loom_legal_unsupported(call, "for these operands");
  loom_graph_icx ic = icx_for(m, call);
  loom_graph_window g;
  LOOM_PROPAGATE(transpose ? loom_graph_convt_window(&ic, x->ndim, &g) : loom_graph_conv_window(&ic, n, false, &g));
  loom_tp_window w = window_of(&g);
  loom_dtype acc = x->dtype == LOOM_DTYPE_F16 || x->dtype == LOOM_DTYPE_BF16 ? LOOM_DTYPE_F32 : x->dtype;
  char name[512];
  snprintf(name, sizeof name, "%s%dd_%s_g%lld%s", transpose ? "conv_transpose" : "conv", n, loom_dtype_name(x->dtype),
           (long long)w.groups, b ? "_bias" : "");
  key_window(name, sizeof name, &w, false);
  window_params p = params_of(&w, x->dtype);
  p.acc = acc;
  p.bias = b != NULL;
  p.transpose = transpose;
  return LOOM_LEGAL_PROGRAM(m, name, gen_conv, p, tp);
}

/* The pool kind, window and key of a pooling call; UNIMPLEMENTED for forms without a program. */
static loom_status pool_form(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *x, loom_tp_pool *pool,
                             loom_tp_window *w) {
  loom_graph_icx ic = icx_for(m, call);
  loom_graph_window g;
  loom_graph_op op = call->u.call.op;
  *pool = (loom_tp_pool){.kind = LOOM_TP_POOL_MAX};
  if (op == LOOM_GRAPH_OP_MAX_POOL2D || op == LOOM_GRAPH_OP_AVG_POOL2D) {
    if (x->ndim != 4) return loom_legal_unsupported(call, "for a non-NCHW input");
    LOOM_PROPAGATE(loom_graph_conv_window(&ic, 2, true, &g));
    *w = window_of(&g);
    pool->kind = op == LOOM_GRAPH_OP_MAX_POOL2D ? LOOM_TP_POOL_MAX : LOOM_TP_POOL_AVG;
    return LOOM_OK;
  }
  LOOM_PROPAGATE(loom_graph_pool_window(&ic, x->ndim, &g));
  *w = window_of(&g);
  if (g.ceil) {
    /* ceil mode shifts the average / Lp windows by an amount that depends on the extent;
     * inference only accepts ceil mode on constant extents, so the shift is a constant */
    for (int i = 0; i < g.n; i++) {
      int64_t in;
      if (!loom_sym_is_const(x->dims[2 + i], &in)) return loom_legal_unsupported(call, "in ceil mode on a symbolic extent");
      if (loom_graph_pool_extent(&g, i, in, &w->shift[i]) < 0) return loom_legal_unsupported(call, "for an input smaller than the kernel");
    }
  }
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
  key_window(name, sizeof name, &w, true);
  window_params p = params_of(&w, x->dtype);
  p.kind = pool.kind;
  p.p = pool.p;
  p.col_major = pool.col_major;
  return LOOM_LEGAL_PROGRAM(m, name, gen_pool, p, tp);
}

/* The legalize hooks of conv1d / conv2d / conv / conv_transpose and of every pooling op but
 * global_avg_pool2d (conv and image families). */
loom_status loom_legal_conv(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out, loom_graph_legal *r) {
  (void)out;
  return legalize_conv(m, call, &r->tp);
}

loom_status loom_legal_pool(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out, loom_graph_legal *r) {
  (void)out;
  return legalize_pool(m, call, &r->tp);
}
