/* legalize_window.c — convolution calls to the N-d window programs of tensorprog/gen_window.c
 * and the GEMM, packed, depthwise and tap-by-tap forms they expand to; the window keys and padding
 * legalize_pool.c shares. The window is read by the same functions the reference
 * implementation uses (loom_graph_conv_window, loom_graph_pool_window), so a program and
 * the interpreter cannot disagree on what an attribute means. */
#include <stdio.h>
#include <string.h>

#include "graph/legalize_internal.h"

/* Appends "_<tag><v0>x<v1>..." for the n entries of v (a negative entry as m<|v|>). */
void loom_legal_key_list(char *name, size_t cap, const char *tag, const int64_t *v, int n) {
  size_t len = strlen(name);
  len += (size_t)snprintf(name + len, len < cap ? cap - len : 0, "_%s", tag);
  for (int i = 0; i < n && len < cap; i++)
    len += (size_t)snprintf(name + len, cap - len, "%s%s%lld", i ? "x" : "", v[i] < 0 ? "m" : "", v[i] < 0 ? -(long long)v[i] : (long long)v[i]);
}

void loom_legal_key_window(char *name, size_t cap, const loom_tp_window *w, bool kernel) {
  if (kernel) loom_legal_key_list(name, cap, "k", w->kernel, w->n);
  loom_legal_key_list(name, cap, "s", w->stride, w->n);
  loom_legal_key_list(name, cap, "d", w->dilation, w->n);
  loom_legal_key_list(name, cap, "p", w->pad_lo, w->n);
  loom_legal_key_list(name, cap, "q", w->pad_hi, w->n);
  loom_legal_key_list(name, cap, "e", w->shift, w->n);
}

loom_tp_window loom_legal_window_of(const loom_graph_window *g) {
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

loom_graph_icx loom_legal_icx_for(loom_graph_module *m, const loom_graph_expr *call) {
  return (loom_graph_icx){.m = m, .cx = loom_graph_module_sym(m), .call = call, .op = loom_graph_op_name(call->u.call.op)};
}

loom_legal_window_params loom_legal_window_params_of(const loom_tp_window *w, loom_dtype t) {
  loom_legal_window_params p = {.groups = w->groups, .t = t, .n = w->n};
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

loom_tp_window loom_legal_window_from(const loom_legal_window_params *p) {
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
  const loom_legal_window_params *p = params;
  loom_tp_window w = loom_legal_window_from(p);
  loom_arena *a = loom_graph_module_arena(m);
  loom_sym_ctx *cx = loom_graph_module_sym(m);
  return p->transpose ? loom_tp_gen_conv_transpose(a, cx, name, p->t, p->acc, &w, p->bias, tp)
                      : loom_tp_gen_conv(a, cx, name, p->t, p->acc, &w, p->bias, tp);
}

/* conv1d, conv2d, conv and conv_transpose (N-d). */
static loom_status legalize_conv(loom_graph_module *m, const loom_graph_expr *call, loom_tp_func **tp) {
  const loom_sinfo *x, *k, *b = NULL;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 1, &k));
  if (call->u.call.nargs > 2) LOOM_PROPAGATE(loom_legal_tensor_arg(call, 2, &b));
  loom_graph_op op = call->u.call.op;
  bool transpose = op == LOOM_GRAPH_OP_CONV_TRANSPOSE;
  if (!transpose && loom_graph_call_int(call, "packed_w"))
    return loom_legal_unsupported(call, "with packed weights outside the form over packed weights");
  int n = transpose ? x->ndim - 2 : loom_graph_conv_rank(op, x->ndim);
  if (n < 1 || n > LOOM_TP_MAX_SPATIAL || x->ndim != n + 2 || k->ndim != n + 2 || x->dtype != k->dtype || (b && b->dtype != x->dtype))
    return loom_legal_unsupported(call, "for these operands");
  loom_graph_icx ic = loom_legal_icx_for(m, call);
  loom_graph_window g;
  LOOM_PROPAGATE(transpose ? loom_graph_convt_window(&ic, x->ndim, &g) : loom_graph_conv_window(&ic, n, false, &g));
  loom_tp_window w = loom_legal_window_of(&g);
  loom_dtype acc = x->dtype == LOOM_DTYPE_F16 || x->dtype == LOOM_DTYPE_BF16 ? LOOM_DTYPE_F32 : x->dtype;
  char name[512];
  snprintf(name, sizeof name, "%s%dd_%s_g%lld%s", transpose ? "conv_transpose" : "conv", n, loom_dtype_name(x->dtype),
           (long long)w.groups, b ? "_bias" : "");
  loom_legal_key_window(name, sizeof name, &w, false);
  loom_legal_window_params p = loom_legal_window_params_of(&w, x->dtype);
  p.acc = acc;
  p.bias = b != NULL;
  p.transpose = transpose;
  return LOOM_LEGAL_PROGRAM(m, name, gen_conv, p, tp);
}

/* ---- convolution as GEMM (gen_conv.c) ---------------------------------------------------------------
 *
 * An f32 convolution whose kernel extents are constants becomes bindings the CPU matmul rule
 * register-tiles (docs/tensorprog.md "Convolution as GEMM"):
 *
 *   stride 1 on every axis but the last of a 1-D convolution (implicit GEMM over flat positions):
 *     y_xp = pad(x, pads)                                   (when padded, or when taps reach past it)
 *     y_xf = reshape(y_xp, [n, c, h0'*h1'..])               a view
 *     y_wm = reshape(w, [o, cg*K])                          a view
 *     y_yf = call_tp(@conv_gemm.., (y_xf, y_wm[, bias], sym(h1').., [n, o, y0*h1'*..]))
 *     y    = strided_slice(reshape(y_yf, [n, o, y0, h1', ..]), end=[y1, ..]) or reshape(y_yf, [n, o, y0, y1, ..])
 *   strided (2-D and up): the patches first, then the same GEMM with K = 1:
 *     y_col = call_tp(@im2col.., (y_xp), [n, c*K, y0*y1..]);  y_yf = call_tp(@conv_gemm.., (y_col, y_wm[, bias]))
 *
 * The flat form computes the output on the padded input's grid: the h_i' - y_i columns past each
 * output row are computed and sliced away (3.6 % more work at 56 x 56 with a 3 x 3 kernel), so no
 * patch matrix is written; the padded input gets one more row at the end when the taps of the
 * later axes reach past its last row. */

typedef struct im2col_key {
  loom_tp_conv_gemm g;
  int64_t stride[LOOM_TP_MAX_SPATIAL];
} im2col_key;

/* The parameters of the GEMM-form programs (conv_gemm, im2col, col2im): a geometry
 * (loom_tp_conv_gemm) and per-axis strides (0 for conv_gemm), padding-free. */
typedef struct gemm_params {
  int64_t groups, stride, tap_stride;
  int64_t kernel[LOOM_TP_MAX_SPATIAL], dilation[LOOM_TP_MAX_SPATIAL], strides[LOOM_TP_MAX_SPATIAL];
  int32_t n, bias;
} gemm_params;
LOOM_TP_GEN_PARAMS(gemm_params, (3 * LOOM_TP_MAX_SPATIAL + 3) * 8 + 2 * 4);

static gemm_params gemm_params_of(const loom_tp_conv_gemm *g, const int64_t *strides) {
  gemm_params p = {.groups = g->groups, .stride = g->stride, .tap_stride = g->tap_stride, .n = g->n, .bias = g->bias};
  for (int i = 0; i < LOOM_TP_MAX_SPATIAL; i++) {
    p.kernel[i] = g->kernel[i];
    p.dilation[i] = g->dilation[i];
    p.strides[i] = strides ? strides[i] : 0;
  }
  return p;
}

static loom_tp_conv_gemm gemm_from(const gemm_params *p) {
  loom_tp_conv_gemm g = {.n = p->n, .groups = p->groups, .stride = p->stride, .bias = p->bias != 0, .tap_stride = p->tap_stride};
  for (int i = 0; i < LOOM_TP_MAX_SPATIAL; i++) {
    g.kernel[i] = p->kernel[i];
    g.dilation[i] = p->dilation[i];
  }
  return g;
}

static loom_status gen_conv_pad(loom_graph_module *m, const char *name, const void *ctx, loom_tp_func **tp) {
  const loom_legal_pad_key *k = ctx;
  return loom_tp_gen_conv_pad(loom_graph_module_arena(m), loom_graph_module_sym(m), name, LOOM_DTYPE_F32, k->n, k->lo, k->hi,
                              k->fill, k->flat_extra, k->share, tp);
}

/* `<b>_xp` = x (struct info xs) padded by k (conv_pad); *xin becomes it. */
loom_status loom_legal_pad_input(loom_lx *x, const loom_sinfo *xs, const loom_legal_pad_key *k, loom_graph_expr **xin) {
  loom_graph_module *m = x->m;
  loom_sym_ctx *cx = loom_graph_module_sym(m);
  const loom_sym_expr *pd[2 + LOOM_TP_MAX_SPATIAL] = {xs->dims[0], xs->dims[1]};
  for (int i = 0; i < k->n; i++) pd[2 + i] = loom_sym_add(cx, xs->dims[2 + i], loom_sym_const(cx, k->lo[i] + k->hi[i]));
  const loom_sinfo *psi = loom_sinfo_tensor(m, LOOM_DTYPE_F32, k->n + 2, pd, xs->device);
  if (!psi) return LOOM_OOM();
  char name[256];
  snprintf(name, sizeof name, "conv_pad_f32_n%d", k->n);
  loom_legal_key_list(name, sizeof name, "p", k->lo, k->n);
  loom_legal_key_list(name, sizeof name, "q", k->hi, k->n);
  if (k->fill != 0.0) snprintf(name + strlen(name), sizeof name - strlen(name), "_%s", k->fill < 0 ? "neginf" : "fill");
  return loom_lx_add_tp(x, "xp", name, gen_conv_pad, k, sizeof *k, 1, xin, psi, xin);
}

/* `<b>_xg` = xp (x, struct info xs, padded by k's lo / hi: zeros when not padded) viewed (n, c, hp0*hp1):
 * the rows programs' grid operand (loom_tp_rows_grid). */
loom_status loom_legal_plane_view(loom_lx *x, const loom_sinfo *xs, const loom_legal_pad_key *k, loom_graph_expr *xp, loom_graph_expr **out) {
  loom_sym_ctx *cx = loom_graph_module_sym(x->m);
  const loom_sym_expr *f = loom_sym_const(cx, 1);
  for (int i = 0; i < k->n; i++) f = loom_sym_mul(cx, f, loom_sym_add(cx, xs->dims[2 + i], loom_sym_const(cx, k->lo[i] + k->hi[i])));
  const loom_sym_expr *fd[3] = {xs->dims[0], xs->dims[1], f};
  const loom_sinfo *si = loom_sinfo_tensor(x->m, LOOM_DTYPE_F32, 3, fd, xs->device);
  loom_graph_expr *v = si ? loom_lx_view(x, xp, LOOM_DTYPE_F32, 3, fd) : NULL;
  *out = v ? loom_lx_add(x, "xg", LOOM_GRAPH_BIND_VAR, v, si) : NULL;
  return *out ? LOOM_OK : LOOM_OOM();
}

static loom_status gen_conv_gemm(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  loom_tp_conv_gemm g = gemm_from(params);
  return loom_tp_gen_conv_gemm(loom_graph_module_arena(m), loom_graph_module_sym(m), name, LOOM_DTYPE_F32, &g, tp);
}

static loom_status gen_im2col(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const gemm_params *p = params;
  loom_tp_conv_gemm g = gemm_from(p);
  return loom_tp_gen_im2col(loom_graph_module_arena(m), loom_graph_module_sym(m), name, LOOM_DTYPE_F32, &g, p->strides, tp);
}

/* The name of a program of geometry g: <what>_f32_n<N>_g<G>_k.._d.._s<S>[_bias]. */
static void gemm_name(char *name, size_t cap, const char *what, const loom_tp_conv_gemm *g, const int64_t *strides) {
  snprintf(name, cap, "%s_f32_n%d_g%lld", what, g->n, (long long)g->groups);
  loom_legal_key_list(name, cap, "k", g->kernel, g->n);
  loom_legal_key_list(name, cap, "d", g->dilation, g->n);
  if (strides) loom_legal_key_list(name, cap, "s", strides, g->n);
  else snprintf(name + strlen(name), cap - strlen(name), "_s%lld%s", (long long)g->stride, g->bias ? "_bias" : "");
}

/* The final value: op(arg, attrs) with result struct info `out`, lowered (a view stays an op call). */
loom_status loom_legal_final_call(loom_lx *x, loom_graph_op op, loom_graph_expr *arg, size_t nattrs, const loom_graph_attr *attrs,
                              const loom_sinfo *out, loom_graph_expr **value) {
  loom_graph_expr *c = loom_graph_call_op(x->m, op, 1, &arg, nattrs, attrs);
  if (!c) return LOOM_OOM();
  c->sinfo = out;
  c->loc = x->b->value->loc;
  if (loom_graph_op_is_view(op)) {
    *value = c;
    return LOOM_OK;
  }
  return loom_legal_lower_call(x->m, c, x->b, value);
}

static loom_status gen_conv_crop(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  return loom_tp_gen_conv_crop(loom_graph_module_arena(m), loom_graph_module_sym(m), name, LOOM_DTYPE_F32, *(const int32_t *)params, tp);
}

/* ---- convolution over packed weights (gen_conv_packed.c) ------------------------------------------
 *
 * A convolution whose weight the pack pass laid out in blocks (packed_w = B; graph/pass_pack.c):
 *   y_xs = phase planes of x: (n, c, S, F)    stride 1: conv_pad's flat form (or x itself), viewed; else conv_phases
 *   y_wm = reshape(w, [O/B, c*K, B])          a view
 *   y_yf = call_tp(@conv_packed.., (y_xs, y_wm[, bias], sym(E1)..), [n, O, p])   on the grid of the phase planes
 *   y    = call_tp(@conv_crop.., (y_yf, sym(E1)..))   (1-D: the grid is the output, viewed)
 * p = y0 * prod over i >= 1 of E_i (the phase extents; 0 when an output extent is), so the columns u_i >= y_i
 * of each row are computed and cropped; docs/tensorprog.md "Convolution over packed weights". */
typedef struct packed_params {
  int64_t kernel[LOOM_TP_MAX_SPATIAL], dilation[LOOM_TP_MAX_SPATIAL], stride[LOOM_TP_MAX_SPATIAL];
  int64_t pad_lo[LOOM_TP_MAX_SPATIAL], pad_hi[LOOM_TP_MAX_SPATIAL];
  int64_t groups; /* conv_packed's; 0 for conv_phases */
  int32_t n, bias;
} packed_params;
LOOM_TP_GEN_PARAMS(packed_params, (5 * LOOM_TP_MAX_SPATIAL + 1) * 8 + 2 * 4);

static loom_tp_conv_packed packed_from(const packed_params *p) {
  loom_tp_conv_packed g = {.n = p->n, .bias = p->bias != 0, .groups = p->groups};
  for (int i = 0; i < LOOM_TP_MAX_SPATIAL; i++) {
    g.kernel[i] = p->kernel[i];
    g.dilation[i] = p->dilation[i];
    g.stride[i] = p->stride[i];
    g.pad_lo[i] = p->pad_lo[i];
    g.pad_hi[i] = p->pad_hi[i];
  }
  return g;
}

static loom_status gen_conv_packed(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  loom_tp_conv_packed g = packed_from(params);
  return loom_tp_gen_conv_packed(loom_graph_module_arena(m), loom_graph_module_sym(m), name, LOOM_DTYPE_F32, &g, tp);
}

static loom_status gen_conv_phases(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  loom_tp_conv_packed g = packed_from(params);
  return loom_tp_gen_conv_phases(loom_graph_module_arena(m), loom_graph_module_sym(m), name, LOOM_DTYPE_F32, &g, tp);
}

/* `<b>_xs` = the phase planes of x (struct info xs) for the padding, kernel and stride of pp (conv_phases),
 * (n, c, S, F) of struct info psi; *xin becomes it. */
static loom_status add_phases(loom_lx *x, const packed_params *pp, const loom_sinfo *psi, loom_graph_expr **xin) {
  packed_params kp = *pp;
  kp.bias = 0;
  kp.groups = 0;
  char name[512];
  int n = pp->n;
  snprintf(name, sizeof name, "conv_phases_f32_n%d", n);
  loom_legal_key_list(name, sizeof name, "k", kp.kernel, n);
  loom_legal_key_list(name, sizeof name, "d", kp.dilation, n);
  loom_legal_key_list(name, sizeof name, "s", kp.stride, n);
  loom_legal_key_list(name, sizeof name, "p", kp.pad_lo, n);
  loom_legal_key_list(name, sizeof name, "q", kp.pad_hi, n);
  return loom_lx_add_tp(x, "xs", name, gen_conv_phases, &kp, sizeof kp, 1, xin, psi, xin);
}

/* The phase planes of x (struct info xs) for a depthwise convolution (loom_tp_dw_phases) of pp's
 * geometry: *xin becomes them, *e1 their row pitch E1. */
static loom_status phases_input(loom_lx *x, const loom_sinfo *xs, const packed_params *pp, loom_graph_expr **xin,
                                const loom_sym_expr **e1) {
  loom_sym_ctx *cx = loom_graph_module_sym(x->m);
  loom_tp_conv_packed g = packed_from(pp);
  const loom_sym_expr *e0 = loom_tp_conv_phase_extent(cx, &g, 0, xs->dims[2]);
  *e1 = loom_tp_conv_phase_extent(cx, &g, 1, xs->dims[3]);
  if (loom_tp_conv_phase_extra_row(&g)) e0 = loom_sym_add(cx, e0, loom_sym_const(cx, 1));
  const loom_sym_expr *pd[4] = {xs->dims[0], xs->dims[1], loom_sym_const(cx, loom_tp_conv_phase_planes(&g)), loom_sym_mul(cx, e0, *e1)};
  const loom_sinfo *psi = loom_sinfo_tensor(x->m, LOOM_DTYPE_F32, 4, pd, xs->device);
  return psi ? add_phases(x, pp, psi, xin) : LOOM_OOM();
}

typedef struct dw_key {
  loom_tp_window w;
  bool bias;
} dw_key;

/* params: loom_legal_window_params of the window, `bias` and (col_major) the phase-plane form */
static loom_status gen_depthwise(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const loom_legal_window_params *p = params;
  loom_tp_window w = loom_legal_window_from(p);
  return (p->fused ? loom_tp_gen_depthwise_fused : p->col_major ? loom_tp_gen_depthwise_phases : loom_tp_gen_depthwise_rows)(
      loom_graph_module_arena(m), loom_graph_module_sym(m), name, LOOM_DTYPE_F32, &w, p->bias != 0, tp);
}

/* Depthwise (one input and one output channel per group): the padded input, then depthwise_rows
 * (pooling's row-by-row form with the taps weighted), at any stride and dilation; strided 2-D
 * (loom_tp_dw_phases): the phase planes of the padded input (conv_phases), then depthwise_phases,
 * whose taps read their planes with unit stride:
 *   y_xs = call_tp(@conv_phases.., (x,), [n, c, s*s, F]);  y = call_tp(@depthwise_rows.._phases, (y_xs, w[, b], sym(E1))) */
static loom_status expand_depthwise(loom_lx *x, const loom_sinfo *xs, const loom_graph_window *gw, const loom_tp_conv_gemm *g,
                                    loom_graph_expr **value) {
  const loom_graph_expr *call = x->b->value;
  dw_key k = {.w = {.n = g->n, .groups = gw->groups}, .bias = call->u.call.nargs > 2};
  loom_legal_pad_key pk = {.n = g->n, .fill = 0.0, .flat_extra = -1};
  packed_params pp = {.n = g->n};
  bool pad = false;
  for (int i = 0; i < g->n; i++) {
    k.w.kernel[i] = pp.kernel[i] = g->kernel[i];
    k.w.stride[i] = pp.stride[i] = gw->stride[i];
    k.w.dilation[i] = pp.dilation[i] = gw->dilation[i];
    pk.lo[i] = pp.pad_lo[i] = gw->pad_lo[i];
    pk.hi[i] = pp.pad_hi[i] = gw->pad_hi[i];
    pad |= pk.lo[i] || pk.hi[i];
  }
  loom_graph_expr *all[4] = {call->u.call.args[0], call->u.call.args[1], call->u.call.nargs > 2 ? call->u.call.args[2] : NULL};
  size_t nargs = k.bias ? 3 : 2;
  loom_tp_window fw = k.w; /* the window with its padding: depthwise_fused pads each plane itself */
  for (int i = 0; i < g->n; i++) {
    fw.pad_lo[i] = pk.lo[i];
    fw.pad_hi[i] = pk.hi[i];
  }
  bool fused = loom_tp_dw_fused(&fw), phases = !fused && loom_tp_dw_phases(&k.w);
  if (fused) {
    k.w = fw;
  } else if (phases) {
    const loom_sym_expr *e1;
    LOOM_PROPAGATE(phases_input(x, xs, &pp, &all[0], &e1));
    if (!(all[nargs++] = loom_graph_sym_new(x->m, e1))) return LOOM_OOM();
  } else {
    if (pad) LOOM_PROPAGATE(loom_legal_pad_input(x, xs, &pk, &all[0]));
    if (loom_tp_rows_grid(&k.w, LOOM_TP_POOL_AVG_PAD, true)) LOOM_PROPAGATE(loom_legal_plane_view(x, xs, &pk, all[0], &all[nargs++]));
  }
  char name[512];
  snprintf(name, sizeof name, "depthwise_rows_f32_n%d%s", g->n, k.bias ? "_bias" : "");
  loom_legal_key_list(name, sizeof name, "k", k.w.kernel, g->n);
  loom_legal_key_list(name, sizeof name, "s", k.w.stride, g->n);
  loom_legal_key_list(name, sizeof name, "d", k.w.dilation, g->n);
  if (fused) {
    loom_legal_key_list(name, sizeof name, "p", fw.pad_lo, g->n);
    loom_legal_key_list(name, sizeof name, "q", fw.pad_hi, g->n);
    snprintf(name + strlen(name), sizeof name - strlen(name), "_fused");
  }
  if (phases) snprintf(name + strlen(name), sizeof name - strlen(name), "_phases");
  loom_legal_window_params wp = loom_legal_window_params_of(&k.w, LOOM_DTYPE_F32);
  wp.bias = k.bias;
  wp.col_major = phases;
  wp.fused = fused;
  return loom_lx_call(x, name, gen_depthwise, &wp, sizeof wp, nargs, all, x->b->var->sinfo, value);
}

static loom_status expand_conv_packed(loom_lx *x, const loom_sinfo *xs, const loom_sinfo *ws, const loom_sinfo *bs, const loom_sinfo *out,
                                      int n, int64_t B, loom_graph_expr **value, bool *applies) {
  const loom_graph_expr *call = x->b->value;
  if (ws->ndim != n + 3 || !ws->dims) return LOOM_OK;
  loom_graph_icx ic = loom_legal_icx_for(x->m, call);
  loom_graph_window gw;
  LOOM_PROPAGATE(loom_graph_conv_window(&ic, n, false, &gw));
  packed_params pp = {.n = n, .bias = bs != NULL, .groups = gw.groups > 1 ? gw.groups : 0};
  int64_t K = 1;
  bool strided = false, pad = false;
  for (int i = 0; i < n; i++) {
    if (!loom_sym_is_const(ws->dims[2 + i], &pp.kernel[i]) || pp.kernel[i] < 1) return LOOM_OK;
    pp.dilation[i] = gw.dilation[i];
    pp.stride[i] = gw.stride[i];
    pp.pad_lo[i] = gw.pad_lo[i];
    pp.pad_hi[i] = gw.pad_hi[i];
    K *= pp.kernel[i];
    strided |= gw.stride[i] > 1;
    pad |= gw.pad_lo[i] > 0 || gw.pad_hi[i] > 0;
  }
  *applies = true;
  loom_graph_module *m = x->m;
  loom_sym_ctx *cx = loom_graph_module_sym(m);
  loom_tp_conv_packed g = packed_from(&pp);
  const loom_sym_expr *N = xs->dims[0], *Cc = xs->dims[1], *E[LOOM_TP_MAX_SPATIAL], *F = loom_sym_const(cx, 1);
  bool extra = loom_tp_conv_phase_extra_row(&g);
  /* stride 1, rows: a row's right padding shares up to min(lo, hi) zeros with the next row's left
   * padding as long as the taps still reach them ((k - 1)*d of them past the row's data) */
  int l = n - 1;
  int64_t share = 0;
  if (!strided && n > 1) {
    share = pp.pad_lo[l] < pp.pad_hi[l] ? pp.pad_lo[l] : pp.pad_hi[l];
    if ((pp.kernel[l] - 1) * pp.dilation[l] < share) share = (pp.kernel[l] - 1) * pp.dilation[l];
  }
  for (int i = n - 1; i >= 0; i--) {
    E[i] = loom_tp_conv_phase_extent(cx, &g, i, xs->dims[2 + i]);
    if (i == l) E[i] = loom_sym_sub(cx, E[i], loom_sym_const(cx, share));
    F = loom_sym_mul(cx, F, i == 0 && extra ? loom_sym_add(cx, E[i], loom_sym_const(cx, 1)) : E[i]);
  }
  const loom_sym_expr *pd[4] = {N, Cc, loom_sym_const(cx, loom_tp_conv_phase_planes(&g)), F};
  const loom_sinfo *psi = loom_sinfo_tensor(m, LOOM_DTYPE_F32, 4, pd, xs->device);
  if (!psi) return LOOM_OOM();
  char name[512];
  loom_graph_expr *xp = call->u.call.args[0];
  if (strided) { /* the phase planes */
    LOOM_PROPAGATE(add_phases(x, &pp, psi, &xp));
  } else { /* one plane: the padded input flat (conv_pad's flat form), or x itself, viewed */
    if (pad || extra) {
      loom_legal_pad_key pk = {.n = n, .fill = 0.0, .flat_extra = 0, .share = (int32_t)share};
      for (int i = 0; i < n; i++) {
        pk.lo[i] = gw.pad_lo[i];
        pk.hi[i] = gw.pad_hi[i] + (i == 0 && extra);
      }
      const loom_sym_expr *fd[3] = {N, Cc, F};
      const loom_sinfo *fsi = loom_sinfo_tensor(m, LOOM_DTYPE_F32, 3, fd, xs->device);
      if (!fsi) return LOOM_OOM();
      snprintf(name, sizeof name, "conv_pad_f32_n%d", n);
      loom_legal_key_list(name, sizeof name, "p", pk.lo, n);
      loom_legal_key_list(name, sizeof name, "q", pk.hi, n);
      snprintf(name + strlen(name), sizeof name - strlen(name), "_flat0%s", share ? "_shared" : "");
      LOOM_PROPAGATE(loom_lx_add_tp(x, "xf", name, gen_conv_pad, &pk, sizeof pk, 1, &xp, fsi, &xp));
    }
    xp = loom_lx_add(x, "xs", LOOM_GRAPH_BIND_VAR, loom_lx_view(x, xp, LOOM_DTYPE_F32, 4, pd), psi);
    if (!xp) return LOOM_OOM();
  }
  const loom_sym_expr *wd[3] = {ws->dims[0], loom_sym_mul(cx, ws->dims[1], loom_sym_const(cx, K)), loom_sym_const(cx, B)};
  loom_graph_expr *wm = loom_lx_add(x, "wm", LOOM_GRAPH_BIND_VAR, loom_lx_view(x, call->u.call.args[1], LOOM_DTYPE_F32, 3, wd),
                                    loom_sinfo_tensor(m, LOOM_DTYPE_F32, 3, wd, ws->device));
  if (!wm) return LOOM_OOM();
  loom_graph_expr *args[3 + LOOM_TP_MAX_SPATIAL];
  size_t nargs = 0;
  args[nargs++] = xp;
  args[nargs++] = wm;
  if (bs) args[nargs++] = call->u.call.args[2];
  /* the grid: y0 rows of the phase planes' pitch (0 when an output extent is 0) */
  const loom_sym_expr *P = out->dims[2];
  bool exact = true; /* the grid is the output: no columns to crop */
  for (int i = 1; i < n; i++) {
    if (!(args[nargs++] = loom_graph_sym_new(m, E[i]))) return LOOM_OOM();
    P = loom_sym_mul(cx, P, loom_sym_mul(cx, loom_sym_min(cx, out->dims[2 + i], loom_sym_const(cx, 1)), E[i]));
    exact = exact && loom_sym_prove_eq(cx, E[i], out->dims[2 + i]) == LOOM_SYM_TRUE;
  }
  const loom_sym_expr *yd[3] = {N, out->dims[1], P};
  const loom_sinfo *ysi = loom_sinfo_tensor(m, LOOM_DTYPE_F32, 3, yd, xs->device);
  if (!ysi || !P) return LOOM_OOM();
  snprintf(name, sizeof name, "conv_packed_f32_n%d", n);
  if (pp.groups) snprintf(name + strlen(name), sizeof name - strlen(name), "_g%lld", (long long)pp.groups);
  loom_legal_key_list(name, sizeof name, "k", pp.kernel, n);
  loom_legal_key_list(name, sizeof name, "d", pp.dilation, n);
  loom_legal_key_list(name, sizeof name, "s", pp.stride, n);
  if (bs) snprintf(name + strlen(name), sizeof name - strlen(name), "_bias");
  packed_params kp = pp; /* the padding is the phase planes' business */
  memset(kp.pad_lo, 0, sizeof kp.pad_lo);
  memset(kp.pad_hi, 0, sizeof kp.pad_hi);
  loom_graph_expr *yf;
  LOOM_PROPAGATE(loom_lx_add_tp(x, "yf", name, gen_conv_packed, &kp, sizeof kp, nargs, args, ysi, &yf));
  if (exact)
    return loom_legal_final_call(x, LOOM_GRAPH_OP_RESHAPE, yf, 1, (loom_graph_attr[]){loom_graph_attr_syms(m, "shape", (size_t)(n + 2), out->dims)},
                      out, value);
  args[0] = yf;
  for (int i = 1; i < n; i++)
    if (!(args[i] = loom_graph_sym_new(m, E[i]))) return LOOM_OOM();
  snprintf(name, sizeof name, "conv_crop_f32_n%d", n);
  int32_t rank = n;
  return loom_lx_call(x, name, gen_conv_crop, &rank, sizeof rank, (size_t)n, args, out, value);
}

/* The tap programs' parameters (padding-free): the spatial rank, whether a bias comes first
 * (tap_init) and the strides (tap_cols); the rest is the same for every convolution. */
typedef struct tap_params {
  int64_t stride[LOOM_TP_MAX_SPATIAL];
  int32_t n, bias;
} tap_params;
LOOM_TP_GEN_PARAMS(tap_params, LOOM_TP_MAX_SPATIAL * 8 + 2 * 4);

static loom_status gen_conv_tap_cols(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const tap_params *p = params;
  return loom_tp_gen_conv_tap_cols(loom_graph_module_arena(m), loom_graph_module_sym(m), name, LOOM_DTYPE_F32, p->n, p->stride, tp);
}

static loom_status gen_conv_tap_add(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const tap_params *p = params;
  return loom_tp_gen_conv_tap_add(loom_graph_module_arena(m), loom_graph_module_sym(m), name, LOOM_DTYPE_F32, p->n, tp);
}

static loom_status gen_conv_tap_init(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const tap_params *p = params;
  return loom_tp_gen_conv_tap_init(loom_graph_module_arena(m), loom_graph_module_sym(m), name, LOOM_DTYPE_F32, p->n, p->bias != 0, tp);
}

/* A dilated convolution whose taps reach far past the grid (loom_graph_conv_grid_wasteful), tap
 * by tap (tensorprog/gen_conv_taps.c): per tap t its box of output positions that read data
 * (loom_tp_conv_tap_rect: jlo_i, r_i from the symbolic extents; empty where the tap reads only
 * padding), the patches over it, a GEMM with the tap's weights read in place, the product added:
 *   y_0 = tap_init([b])
 *   per tap t: col_t = tap_cols(x, x0.., r..)   yt_t = conv_gemm(col_t, w viewed (o, cg*K), sym(t))
 *              y_{t+1} = tap_add(y_t, yt_t, jlo.., r..)
 * DeepLab's ASPP on a 14 x 14 map multiplies 324, 196 and 196 of the 1,764 (tap, position) pairs
 * of each of its 3 x 3 convolutions (dilations 12, 24, 36). */
static loom_status expand_conv_taps(loom_lx *x, const loom_sinfo *xs, const loom_sinfo *out, const loom_graph_window *gw,
                                    const loom_tp_conv_gemm *geo, bool bias, loom_graph_expr **value) {
  const loom_graph_expr *call = x->b->value;
  loom_graph_module *m = x->m;
  loom_sym_ctx *cx = loom_graph_module_sym(m);
  int n = geo->n;
  loom_tp_conv_taps tg = {.n = n};
  tap_params init = {.n = n, .bias = bias}, cols = {.n = n}, add = {.n = n};
  int64_t K = 1;
  for (int i = 0; i < n; i++) {
    tg.dilation[i] = geo->dilation[i];
    tg.stride[i] = cols.stride[i] = gw->stride[i];
    tg.pad_lo[i] = gw->pad_lo[i];
    K *= geo->kernel[i];
  }
  char name[512], strides[128] = "";
  loom_legal_key_list(strides, sizeof strides, "s", cols.stride, n);
  const loom_sinfo *ws;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 1, &ws));
  const loom_sym_expr *fd[2] = {ws->dims[0], loom_sym_mul(cx, ws->dims[1], loom_sym_const(cx, K))};
  loom_graph_expr *wf = loom_lx_add(x, "wf", LOOM_GRAPH_BIND_VAR, loom_lx_view(x, call->u.call.args[1], LOOM_DTYPE_F32, 2, fd),
                                    loom_sinfo_tensor(m, LOOM_DTYPE_F32, 2, fd, ws->device));
  if (!wf) return LOOM_OOM();
  /* the output, the bias to start */
  snprintf(name, sizeof name, "conv_tap_init_f32_n%d%s", n, bias ? "_bias" : "");
  loom_graph_expr *y;
  LOOM_PROPAGATE(loom_lx_add_tp(x, "y0", name, gen_conv_tap_init, &init, sizeof init, bias ? 1 : 0,
                                bias ? &call->u.call.args[2] : NULL, out, &y));
  loom_tp_conv_gemm g = {.n = 1, .groups = geo->groups, .kernel = {1}, .dilation = {1}, .stride = 1, .tap_stride = K};
  gemm_params gp = gemm_params_of(&g, NULL);
  int64_t tap[LOOM_TP_MAX_SPATIAL] = {0};
  for (int64_t t = 0; t < K; t++) {
    const loom_sym_expr *jlo[LOOM_TP_MAX_SPATIAL], *r[LOOM_TP_MAX_SPATIAL], *R = loom_sym_const(cx, 1);
    loom_graph_expr *cargs[1 + 2 * LOOM_TP_MAX_SPATIAL], *aargs[2 + 2 * LOOM_TP_MAX_SPATIAL];
    for (int i = 0, rest = (int)t; i < n; i++) { /* tap t's position, the last axis fastest */
      int64_t inner = 1;
      for (int k = i + 1; k < n; k++) inner *= geo->kernel[k];
      tap[i] = rest / inner;
      rest %= (int)inner;
      loom_tp_conv_tap_rect(cx, &tg, i, tap[i], xs->dims[2 + i], out->dims[2 + i], &jlo[i], &r[i]);
      const loom_sym_expr *x0 = loom_sym_add(cx, loom_sym_mul(cx, jlo[i], loom_sym_const(cx, tg.stride[i])),
                                             loom_sym_const(cx, tap[i] * tg.dilation[i] - tg.pad_lo[i]));
      if (!(cargs[1 + i] = loom_graph_sym_new(m, x0)) || !(cargs[1 + n + i] = aargs[2 + n + i] = loom_graph_sym_new(m, r[i])) ||
          !(aargs[2 + i] = loom_graph_sym_new(m, jlo[i])))
        return LOOM_OOM();
      R = loom_sym_mul(cx, R, r[i]);
    }
    const loom_sym_expr *cd[3] = {xs->dims[0], xs->dims[1], loom_tp_conv_cols(cx, R)};
    const loom_sinfo *csi = loom_sinfo_tensor(m, LOOM_DTYPE_F32, 3, cd, xs->device);
    const loom_sym_expr *td[3] = {xs->dims[0], ws->dims[0], cd[2]};
    const loom_sinfo *tsi = loom_sinfo_tensor(m, LOOM_DTYPE_F32, 3, td, xs->device);
    if (!csi || !tsi) return LOOM_OOM();
    loom_graph_expr *col, *yt, *gargs[3];
    cargs[0] = call->u.call.args[0];
    snprintf(name, sizeof name, "conv_tap_cols_f32_n%d%s", n, strides);
    LOOM_PROPAGATE(loom_lx_add_tp(x, "col", name, gen_conv_tap_cols, &cols, sizeof cols, (size_t)(1 + 2 * n), cargs, csi, &col));
    gargs[0] = col;
    gargs[1] = wf;
    if (!(gargs[2] = loom_graph_sym_new(m, loom_sym_const(cx, t)))) return LOOM_OOM();
    gemm_name(name, sizeof name, "conv_gemm", &g, NULL);
    snprintf(name + strlen(name), sizeof name - strlen(name), "_tap%lld", (long long)K);
    LOOM_PROPAGATE(loom_lx_add_tp(x, "yt", name, gen_conv_gemm, &gp, sizeof gp, 3, gargs, tsi, &yt));
    aargs[0] = y;
    aargs[1] = yt;
    snprintf(name, sizeof name, "conv_tap_add_f32_n%d", n);
    if (t + 1 == K) return loom_lx_call(x, name, gen_conv_tap_add, &add, sizeof add, (size_t)(2 + 2 * n), aargs, out, value);
    LOOM_PROPAGATE(loom_lx_add_tp(x, "y", name, gen_conv_tap_add, &add, sizeof add, (size_t)(2 + 2 * n), aargs, out, &y));
  }
  return LOOM_ERROR(INTERNAL, "conv taps: a kernel without taps");
}

static loom_status expand_conv(loom_lx *x, loom_graph_expr **value, bool *applies) {
  const loom_graph_expr *call = x->b->value;
  loom_graph_op op = call->u.call.op;
  const loom_sinfo *xs, *ws, *bs = NULL, *out = x->b->var->sinfo;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &xs));
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 1, &ws));
  if (call->u.call.nargs > 2) LOOM_PROPAGATE(loom_legal_tensor_arg(call, 2, &bs));
  int n = loom_graph_conv_rank(op, xs->ndim);
  int64_t B = loom_graph_call_int(call, "packed_w");
  if (B > 0) {
    if (n < 1 || n > LOOM_TP_MAX_SPATIAL || xs->ndim != n + 2 || !xs->dims || !out || out->kind != LOOM_SINFO_TENSOR || !out->dims ||
        out->ndim != n + 2 || xs->dtype != LOOM_DTYPE_F32 || ws->dtype != LOOM_DTYPE_F32 || B != LOOM_TP_CONV_BLOCK ||
        (bs && (bs->dtype != LOOM_DTYPE_F32 || !bs->dims)))
      return LOOM_OK;
    return expand_conv_packed(x, xs, ws, bs, out, n, B, value, applies);
  }
  if (n < 1 || n > LOOM_TP_MAX_SPATIAL || xs->ndim != n + 2 || ws->ndim != n + 2 || !xs->dims || !ws->dims ||
      !out || out->kind != LOOM_SINFO_TENSOR || !out->dims || out->ndim != n + 2 || xs->dtype != LOOM_DTYPE_F32 ||
      ws->dtype != LOOM_DTYPE_F32 || (bs && (bs->dtype != LOOM_DTYPE_F32 || !bs->dims)))
    return LOOM_OK;
  loom_graph_icx ic = loom_legal_icx_for(x->m, call);
  loom_graph_window gw;
  LOOM_PROPAGATE(loom_graph_conv_window(&ic, n, false, &gw));
  loom_tp_conv_gemm g = {.n = n, .groups = gw.groups, .stride = 1, .bias = bs != NULL};
  bool strided = false, pad = false;
  int64_t K = 1;
  for (int i = 0; i < n; i++) {
    if (!loom_sym_is_const(ws->dims[2 + i], &g.kernel[i]) || g.kernel[i] < 1 || gw.pad_lo[i] < 0 || gw.pad_hi[i] < 0)
      return LOOM_OK; /* a run-time kernel extent: the generic program */
    g.dilation[i] = gw.dilation[i];
    K *= g.kernel[i];
    strided |= n > 1 && gw.stride[i] > 1;
    pad |= gw.pad_lo[i] > 0 || gw.pad_hi[i] > 0;
  }
  *applies = true;
  int64_t cg, o;
  if (loom_sym_is_const(ws->dims[1], &cg) && cg == 1 && loom_sym_is_const(ws->dims[0], &o) && o == gw.groups)
    return expand_depthwise(x, xs, &gw, &g, value);
  bool strided_grid = loom_graph_conv_grid_wasteful(&gw, g.kernel, n); /* dilated: not the grid */
  if (strided_grid && x->n + 3 * K + 3 <= LOOM_LX_MAX_ADDED) /* tap by tap, 3 bindings each */
    return expand_conv_taps(x, xs, out, &gw, &g, bs != NULL, value);
  strided |= strided_grid; /* a kernel of more taps: the patches of every tap */
  loom_graph_module *m = x->m;
  loom_sym_ctx *cx = loom_graph_module_sym(m);
  const loom_sym_expr *N = xs->dims[0], *Cc = xs->dims[1], *O = ws->dims[0], *hp[LOOM_TP_MAX_SPATIAL];
  /* one more padded row when the taps of the later axes reach past the last row (flat form) */
  bool extra = false;
  for (int i = 1; i < n && !strided; i++) extra |= g.kernel[i] > 1;
  bool copy = pad || extra; /* the input is copied (padded): the GEMM's columns are rounded up to whole panels */
  loom_legal_pad_key pk = {.n = n, .fill = 0.0, .flat_extra = -1};
  for (int i = 0; i < n; i++) {
    pk.lo[i] = gw.pad_lo[i];
    pk.hi[i] = gw.pad_hi[i] + (i == 0 && extra);
    hp[i] = loom_sym_add(cx, xs->dims[2 + i], loom_sym_const(cx, pk.lo[i] + pk.hi[i]));
  }
  loom_graph_expr *xin = call->u.call.args[0];
  char name[512];
  const loom_sym_expr *wd[2] = {O, loom_sym_mul(cx, ws->dims[1], loom_sym_const(cx, K))};
  loom_graph_expr *wm = loom_lx_add(x, "wm", LOOM_GRAPH_BIND_VAR, loom_lx_view(x, call->u.call.args[1], LOOM_DTYPE_F32, 2, wd),
                                    loom_sinfo_tensor(m, LOOM_DTYPE_F32, 2, wd, ws->device));
  if (!wm) return LOOM_OOM();
  loom_graph_expr *args[3 + LOOM_TP_MAX_SPATIAL];
  size_t nargs = 0;
  const loom_sym_expr *P = out->dims[2], *yd[3], *grid[LOOM_TP_MAX_SPATIAL]; /* grid: the extents the crop's pitches use */
  if (strided) { /* the patches (whole panels of columns, zero past the last), then a GEMM over them */
    if (pad) LOOM_PROPAGATE(loom_legal_pad_input(x, xs, &pk, &xin));
    im2col_key k = {.g = g};
    for (int i = 0; i < n; i++) k.stride[i] = gw.stride[i], grid[i] = out->dims[2 + i];
    k.g.bias = false;
    for (int i = 1; i < n; i++) P = loom_sym_mul(cx, P, out->dims[2 + i]);
    P = loom_tp_conv_cols(cx, P);
    const loom_sym_expr *cd[3] = {N, loom_sym_mul(cx, Cc, loom_sym_const(cx, K)), P};
    const loom_sinfo *csi = loom_sinfo_tensor(m, LOOM_DTYPE_F32, 3, cd, xs->device);
    if (!csi) return LOOM_OOM();
    gemm_name(name, sizeof name, "im2col", &k.g, k.stride);
    gemm_params gp = gemm_params_of(&k.g, k.stride);
    LOOM_PROPAGATE(loom_lx_add_tp(x, "col", name, gen_im2col, &gp, sizeof gp, 1, &xin, csi, &args[nargs++]));
    g = (loom_tp_conv_gemm){.n = 1, .groups = gw.groups, .kernel = {1}, .dilation = {1}, .stride = 1, .bias = bs != NULL};
  } else {
    const loom_sym_expr *L = hp[0];
    for (int i = 1; i < n; i++) L = loom_sym_mul(cx, L, hp[i]);
    for (int i = 1; i < n; i++) P = loom_sym_mul(cx, P, hp[i]);
    for (int i = 0; i < n; i++) grid[i] = hp[i];
    if (n == 1) g.stride = gw.stride[0];
    loom_graph_expr *xf;
    if (copy) { /* padded and flat in one program, with zeros after each plane for the rounded columns */
      int64_t tail = LOOM_TP_CONV_COLS * g.stride;
      const loom_sym_expr *fd[3] = {N, Cc, loom_sym_add(cx, L, loom_sym_const(cx, tail))};
      const loom_sinfo *fsi = loom_sinfo_tensor(m, LOOM_DTYPE_F32, 3, fd, xs->device);
      if (!fsi) return LOOM_OOM();
      snprintf(name, sizeof name, "conv_pad_f32_n%d", n);
      loom_legal_key_list(name, sizeof name, "p", pk.lo, n);
      loom_legal_key_list(name, sizeof name, "q", pk.hi, n);
      snprintf(name + strlen(name), sizeof name - strlen(name), "_flat%lld", (long long)tail);
      pk.flat_extra = tail;
      LOOM_PROPAGATE(loom_lx_add_tp(x, "xf", name, gen_conv_pad, &pk, sizeof pk, 1, &xin, fsi, &xf));
      P = loom_tp_conv_cols(cx, P);
    } else { /* 1 x 1 (or 1-D) without padding: x itself, viewed flat */
      const loom_sym_expr *fd[3] = {N, Cc, L};
      xf = loom_lx_add(x, "xf", LOOM_GRAPH_BIND_VAR, loom_lx_view(x, xin, LOOM_DTYPE_F32, 3, fd),
                       loom_sinfo_tensor(m, LOOM_DTYPE_F32, 3, fd, xs->device));
      if (!xf) return LOOM_OOM();
    }
    args[nargs++] = xf;
  }
  args[nargs++] = wm;
  if (bs) args[nargs++] = call->u.call.args[2];
  for (int i = 1; i < n && !strided; i++)
    if (!(args[nargs++] = loom_graph_sym_new(m, hp[i]))) return LOOM_OOM();
  yd[0] = N;
  yd[1] = O;
  yd[2] = P;
  const loom_sinfo *ysi = loom_sinfo_tensor(m, LOOM_DTYPE_F32, 3, yd, xs->device);
  if (!ysi) return LOOM_OOM();
  gemm_name(name, sizeof name, "conv_gemm", &g, NULL);
  loom_graph_expr *yf;
  gemm_params gp = gemm_params_of(&g, NULL);
  LOOM_PROPAGATE(loom_lx_add_tp(x, "yf", name, gen_conv_gemm, &gp, sizeof gp, nargs, args, ysi, &yf));
  if (!copy && !strided) /* exact: the GEMM's result is the output, viewed */
    return loom_legal_final_call(x, LOOM_GRAPH_OP_RESHAPE, yf, 1, (loom_graph_attr[]){loom_graph_attr_syms(m, "shape", (size_t)(n + 2), out->dims)},
                      out, value);
  /* the output positions out of the grid's rows (and the rounded columns) */
  args[0] = yf;
  for (int i = 1; i < n; i++)
    if (!(args[i] = loom_graph_sym_new(m, grid[i]))) return LOOM_OOM();
  snprintf(name, sizeof name, "conv_crop_f32_n%d", n);
  int32_t rank = n;
  return loom_lx_call(x, name, gen_conv_crop, &rank, sizeof rank, (size_t)n, args, out, value);
}

/* conv_transpose in f32 with constant kernel extents and padding >= 0 (docs/tensorprog.md):
 *   y_xf  = reshape(x, [n, c, h0*h1..])                         a view
 *   y_wm  = reshape(w, [c, O/G*K])                              a view
 *   y_col = call_tp(@convt_gemm.., (y_xf, y_wm), [n, O*K, h0*h1..])   the GEMM, W transposed
 *   y_full = call_tp(@col2im.., (y_col[, bias], sym(h0)..), [n, O, f0, ..])   every tap's column added where it lands
 *   y     = strided_slice(y_full, begin=[lo..], end=[lo + y..])  (y_full itself without padding) */
typedef struct col2im_key {
  loom_tp_conv_gemm g;
  int64_t stride[LOOM_TP_MAX_SPATIAL];
} col2im_key;

static loom_status gen_convt_gemm(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  return loom_tp_gen_convt_gemm(loom_graph_module_arena(m), loom_graph_module_sym(m), name, LOOM_DTYPE_F32,
                                *(const int64_t *)params, tp);
}

static loom_status gen_col2im(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const gemm_params *p = params;
  loom_tp_conv_gemm g = gemm_from(p);
  return loom_tp_gen_col2im(loom_graph_module_arena(m), loom_graph_module_sym(m), name, LOOM_DTYPE_F32, &g, p->strides, tp);
}

static loom_status expand_conv_transpose(loom_lx *x, loom_graph_expr **value, bool *applies) {
  const loom_graph_expr *call = x->b->value;
  const loom_sinfo *xs, *ws, *bs = NULL, *out = x->b->var->sinfo;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &xs));
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 1, &ws));
  if (call->u.call.nargs > 2) LOOM_PROPAGATE(loom_legal_tensor_arg(call, 2, &bs));
  int n = xs->ndim - 2;
  if (n < 1 || n > LOOM_TP_MAX_SPATIAL || ws->ndim != n + 2 || !xs->dims || !ws->dims || !out || out->kind != LOOM_SINFO_TENSOR ||
      !out->dims || out->ndim != n + 2 || xs->dtype != LOOM_DTYPE_F32 || ws->dtype != LOOM_DTYPE_F32 ||
      (bs && bs->dtype != LOOM_DTYPE_F32))
    return LOOM_OK;
  loom_graph_icx ic = loom_legal_icx_for(x->m, call);
  loom_graph_window gw;
  LOOM_PROPAGATE(loom_graph_convt_window(&ic, xs->ndim, &gw));
  col2im_key k = {.g = {.n = n, .groups = 1, .stride = 1, .bias = bs != NULL}};
  int64_t K = 1;
  bool crop = false;
  for (int i = 0; i < n; i++) {
    if (!loom_sym_is_const(ws->dims[2 + i], &k.g.kernel[i]) || k.g.kernel[i] < 1 || gw.pad_lo[i] < 0 || gw.pad_hi[i] < 0)
      return LOOM_OK;
    k.g.dilation[i] = gw.dilation[i];
    k.stride[i] = gw.stride[i];
    K *= k.g.kernel[i];
    crop |= gw.pad_lo[i] > 0 || gw.pad_hi[i] > 0;
  }
  *applies = true;
  loom_graph_module *m = x->m;
  loom_sym_ctx *cx = loom_graph_module_sym(m);
  const loom_sym_expr *N = xs->dims[0], *Cc = xs->dims[1], *O = out->dims[1], *L = xs->dims[2];
  for (int i = 1; i < n; i++) L = loom_sym_mul(cx, L, xs->dims[2 + i]);
  const loom_sym_expr *fd[3] = {N, Cc, L}, *wd[2] = {Cc, loom_sym_mul(cx, ws->dims[1], loom_sym_const(cx, K))};
  loom_graph_expr *args[2 + LOOM_TP_MAX_SPATIAL];
  args[0] = loom_lx_add(x, "xf", LOOM_GRAPH_BIND_VAR, loom_lx_view(x, call->u.call.args[0], LOOM_DTYPE_F32, 3, fd),
                        loom_sinfo_tensor(m, LOOM_DTYPE_F32, 3, fd, xs->device));
  args[1] = loom_lx_add(x, "wm", LOOM_GRAPH_BIND_VAR, loom_lx_view(x, call->u.call.args[1], LOOM_DTYPE_F32, 2, wd),
                        loom_sinfo_tensor(m, LOOM_DTYPE_F32, 2, wd, ws->device));
  const loom_sym_expr *cd[3] = {N, loom_sym_mul(cx, O, loom_sym_const(cx, K)), L};
  const loom_sinfo *csi = loom_sinfo_tensor(m, LOOM_DTYPE_F32, 3, cd, xs->device);
  if (!args[0] || !args[1] || !csi) return LOOM_OOM();
  char name[512];
  snprintf(name, sizeof name, "convt_gemm_f32_g%lld", (long long)gw.groups);
  loom_graph_expr *col;
  int64_t groups = gw.groups;
  LOOM_PROPAGATE(loom_lx_add_tp(x, "col", name, gen_convt_gemm, &groups, sizeof groups, 2, args, csi, &col));
  size_t nargs = 0;
  args[nargs++] = col;
  if (bs) args[nargs++] = call->u.call.args[2];
  const loom_sym_expr *full[2 + LOOM_TP_MAX_SPATIAL] = {N, O}, *lo[LOOM_TP_MAX_SPATIAL], *hi[LOOM_TP_MAX_SPATIAL];
  int64_t axes[LOOM_TP_MAX_SPATIAL];
  for (int i = 0; i < n; i++) {
    if (!(args[nargs++] = loom_graph_sym_new(m, xs->dims[2 + i]))) return LOOM_OOM();
    full[2 + i] = loom_sym_add(cx, out->dims[2 + i], loom_sym_const(cx, gw.pad_lo[i] + gw.pad_hi[i]));
    lo[i] = loom_sym_const(cx, gw.pad_lo[i]);
    hi[i] = loom_sym_add(cx, out->dims[2 + i], lo[i]);
    axes[i] = 2 + i;
  }
  gemm_name(name, sizeof name, "col2im", &k.g, k.stride);
  if (bs) snprintf(name + strlen(name), sizeof name - strlen(name), "_bias");
  gemm_params gp = gemm_params_of(&k.g, k.stride);
  if (!crop) return loom_lx_call(x, name, gen_col2im, &gp, sizeof gp, nargs, args, out, value);
  const loom_sinfo *fsi = loom_sinfo_tensor(m, LOOM_DTYPE_F32, n + 2, full, xs->device);
  loom_graph_expr *yfull;
  if (!fsi) return LOOM_OOM();
  LOOM_PROPAGATE(loom_lx_add_tp(x, "full", name, gen_col2im, &gp, sizeof gp, nargs, args, fsi, &yfull));
  loom_graph_attr sa[3] = {loom_graph_attr_ints(m, "axes", (size_t)n, axes), loom_graph_attr_syms(m, "begin", (size_t)n, lo),
                           loom_graph_attr_syms(m, "end", (size_t)n, hi)};
  return loom_legal_final_call(x, LOOM_GRAPH_OP_STRIDED_SLICE, yfull, 3, sa, out, value);
}

/* The legalize hook of conv1d / conv2d / conv / conv_transpose (conv and image families). */
loom_status loom_legal_conv(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out, loom_graph_legal *r) {
  (void)out;
  return legalize_conv(m, call, &r->tp);
}

loom_status loom_legal_expand_window(loom_lx *x, loom_graph_expr **value) { /* the hook of conv1d / conv2d / conv / conv_transpose */
  bool transpose = x->b->value->u.call.op == LOOM_GRAPH_OP_CONV_TRANSPOSE;
  return loom_lx_expand_with(x, transpose ? expand_conv_transpose : expand_conv, value);
}
