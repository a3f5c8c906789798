/* op_conv.c — convolution (conv1d, conv2d, and conv: N-d with 1 to LOOM_GRAPH_MAX_SPATIAL
 * spatial axes; groups, dilation, padding, strides), max / average / global-average pooling and
 * 2-D resize (nearest, linear). Output extents are symbolic:
 * floordiv(in + pad_lo + pad_hi - dilation * (k - 1) - 1, stride) + 1. Legalized by
 * legalize_window.c and legalize_image.c (resize2d), global_avg_pool2d here. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "graph/legalize_internal.h"

static const loom_graph_attr_spec conv_attrs[] = {{"strides", LOOM_GRAPH_ATTR_SYMS, .required = false},
                                                  {"padding", LOOM_GRAPH_ATTR_SYMS, .required = false},
                                                  {"dilation", LOOM_GRAPH_ATTR_SYMS, .required = false},
                                                  {"groups", LOOM_GRAPH_ATTR_INT, .dflt = 1},
                                                  {"packed_w", LOOM_GRAPH_ATTR_INT, .dflt = 0},
                                                  {0}};
static const loom_graph_attr_spec pool_attrs[] = {{"kernel", LOOM_GRAPH_ATTR_SYMS, .required = true},
                                                  {"strides", LOOM_GRAPH_ATTR_SYMS, .required = false},
                                                  {"padding", LOOM_GRAPH_ATTR_SYMS, .required = false},
                                                  {0}};
static const loom_graph_attr_spec resize_attrs[] = {
    {"size", LOOM_GRAPH_ATTR_SYMS, .required = true}, {"method", LOOM_GRAPH_ATTR_STR, .dflt_str = "nearest"}, {0}};
static const loom_graph_attr_spec no_attrs[] = {{0}};


/* Reads a list attribute of n (or 1, broadcast; or 2n for padding) constants. */
static loom_status list_attr(loom_graph_icx *ic, const char *name, int n, int64_t dflt, int64_t *out, int64_t *out_hi) {
  int64_t v[8];
  size_t k;
  bool present;
  LOOM_PROPAGATE(loom_graph_icx_ints(ic, name, v, 8, &k, &present));
  for (int i = 0; i < n; i++) {
    out[i] = dflt;
    if (out_hi) out_hi[i] = dflt;
  }
  if (!present) return LOOM_OK;
  if (k == 1) {
    for (int i = 0; i < n; i++) {
      out[i] = v[0];
      if (out_hi) out_hi[i] = v[0];
    }
  } else if ((int)k == n) {
    for (int i = 0; i < n; i++) {
      out[i] = v[i];
      if (out_hi) out_hi[i] = v[i];
    }
  } else if (out_hi && (int)k == 2 * n) {
    for (int i = 0; i < n; i++) {
      out[i] = v[i];
      out_hi[i] = v[n + i];
    }
  } else {
    return loom_graph_icx_error(ic, "attribute '%s' has %zu entries; expected 1 or %d%s", name, k, n, out_hi ? " (or 2x for before/after)" : "");
  }
  for (int i = 0; i < n; i++)
    if (out[i] < 0 || (out_hi && out_hi[i] < 0)) return loom_graph_icx_error(ic, "attribute '%s' has a negative entry", name);
  return LOOM_OK;
}

bool loom_graph_conv_grid_wasteful(const loom_graph_window *w, const int64_t *kernel, int n) {
  if (n < 2) return false; /* one axis: the grid is the output */
  int l = n - 1;
  return w->stride[l] >= 1 && (kernel[l] - 1) * w->dilation[l] / w->stride[l] >= LOOM_GRAPH_CONV_GRID_WASTE;
}

loom_status loom_graph_conv_window(loom_graph_icx *ic, int n, bool pool, loom_graph_window *sp) {
  memset(sp, 0, sizeof *sp);
  sp->n = n;
  LOOM_PROPAGATE(list_attr(ic, "padding", n, 0, sp->pad_lo, sp->pad_hi));
  if (pool) {
    LOOM_PROPAGATE(list_attr(ic, "kernel", n, 1, sp->kernel, NULL));
    LOOM_PROPAGATE(list_attr(ic, "strides", n, 0, sp->stride, NULL));
    for (int i = 0; i < n; i++) {
      if (!sp->stride[i]) sp->stride[i] = sp->kernel[i];
      sp->dilation[i] = 1;
      if (sp->kernel[i] < 1) return loom_graph_icx_error(ic, "kernel entries must be >= 1");
    }
    sp->groups = 1;
  } else {
    LOOM_PROPAGATE(list_attr(ic, "strides", n, 1, sp->stride, NULL));
    LOOM_PROPAGATE(list_attr(ic, "dilation", n, 1, sp->dilation, NULL));
    sp->groups = loom_graph_call_int(ic->call, "groups");
    if (sp->groups < 1) return loom_graph_icx_error(ic, "groups must be >= 1");
  }
  for (int i = 0; i < n; i++)
    if (sp->stride[i] < 1 || sp->dilation[i] < 1) return loom_graph_icx_error(ic, "strides and dilation must be >= 1");
  return LOOM_OK;
}

/* floordiv(in + lo + hi - dil * (k - 1) - 1, stride) + 1 */
static const loom_sym_expr *out_extent(loom_sym_ctx *cx, const loom_sym_expr *in, const loom_sym_expr *k, const loom_graph_window *sp, int i) {
  const loom_sym_expr *span = loom_sym_add(cx, loom_sym_mul(cx, loom_sym_const(cx, sp->dilation[i]), loom_sym_sub(cx, k, loom_sym_const(cx, 1))),
                                           loom_sym_const(cx, 1));
  const loom_sym_expr *num = loom_sym_sub(cx, loom_sym_add(cx, in, loom_sym_const(cx, sp->pad_lo[i] + sp->pad_hi[i])), span);
  return loom_sym_add(cx, loom_sym_floordiv(cx, num, loom_sym_const(cx, sp->stride[i])), loom_sym_const(cx, 1));
}

/* Floor division (the symbolic extent uses floordiv; the interpreter must agree). */
static int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

/* The spatial rank of a convolution: 1 (conv1d), 2 (conv2d), or the input's rank - 2 (conv). */
int loom_graph_conv_rank(loom_graph_op op, int ndim) {
  return op == LOOM_GRAPH_OP_CONV1D ? 1 : op == LOOM_GRAPH_OP_CONV2D ? 2 : ndim - 2;
}

/* packed_w = B > 0: the weight is laid out in blocks of B output channels, (O/B, C/groups, k.., B)
 * with W'[q, c, t.., b] = W[q*B + b, c, t..] (the pack pass's layout for the CPU convolution kernel,
 * graph/pass_pack.c; with groups, O/B a multiple of them: no block spans two groups). The result has
 * B times its axis 0 channels. */
static loom_status infer_conv(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_sinfo *x, *w;
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 0, true, &x));
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 1, true, &w));
  int n = loom_graph_conv_rank(ic->call->u.call.op, x->ndim);
  if (n < 1 || n > LOOM_GRAPH_MAX_SPATIAL)
    return loom_graph_icx_error(ic, "operand 0 must have rank 3 to %d (N, C, 1 to %d spatial axes), got %d", LOOM_GRAPH_MAX_SPATIAL + 2,
                                LOOM_GRAPH_MAX_SPATIAL, x->ndim);
  if (x->ndim != n + 2) return loom_graph_icx_error(ic, "operand 0 must have rank %d (N, C, spatial), got %d", n + 2, x->ndim);
  int64_t B = loom_graph_call_int(ic->call, "packed_w");
  if (B < 0) return loom_graph_icx_error(ic, "attribute 'packed_w' is %lld, must be >= 0", (long long)B);
  if (!B && w->ndim != n + 2) return loom_graph_icx_error(ic, "operand 1 must have rank %d (O, C/groups, kernel), got %d", n + 2, w->ndim);
  if (B && w->ndim != n + 3)
    return loom_graph_icx_error(ic, "operand 1 must have rank %d (O/%lld, C, kernel, %lld: packed_w), got %d", n + 3, (long long)B,
                                (long long)B, w->ndim);
  if (x->dtype != w->dtype) return loom_graph_icx_error(ic, "operand 0 has dtype %s, operand 1 has dtype %s", loom_dtype_name(x->dtype), loom_dtype_name(w->dtype));
  loom_graph_window sp;
  LOOM_PROPAGATE(loom_graph_conv_window(ic, n, false, &sp));
  loom_sym_ctx *cx = ic->cx;
  const loom_sym_expr *O = B ? loom_sym_mul(cx, w->dims[0], loom_sym_const(cx, B)) : w->dims[0];
  if (B) {
    int64_t last;
    if (!loom_sym_is_const(w->dims[n + 2], &last) || last != B)
      return loom_graph_icx_error(ic, "operand 1 axis %d is %s, must be packed_w (%lld)", n + 2, loom_graph_sym_str(ic->m, w->dims[n + 2]),
                                  (long long)B);
  }
  LOOM_PROPAGATE(loom_graph_icx_same_dim(ic, 1, 1, loom_sym_mul(cx, w->dims[1], loom_sym_const(cx, sp.groups)), 0, 1, x->dims[1]));
  if (sp.groups > 1) { /* packed: proven, for the program finds a block's group as ob // (q // groups) */
    loom_sym_truth d = loom_sym_prove_divisible(cx, w->dims[0], sp.groups);
    if (d == LOOM_SYM_FALSE || (B && d != LOOM_SYM_TRUE))
      return loom_graph_icx_error(ic, "operand 1 axis 0 is %s, not %s multiple of groups %lld", loom_graph_sym_str(ic->m, w->dims[0]),
                                  d == LOOM_SYM_FALSE ? "a" : "a provable", (long long)sp.groups);
  }
  if (ic->call->u.call.nargs == 3) {
    const loom_sinfo *b;
    LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 2, true, &b));
    if (b->ndim != 1) return loom_graph_icx_error(ic, "operand 2 (bias) must have rank 1");
    if (B) {
      if (loom_sym_prove_eq(cx, b->dims[0], O) == LOOM_SYM_FALSE)
        return loom_graph_icx_error(ic, "operand 2 (bias) has %s channels, the packed weight %s", loom_graph_sym_str(ic->m, b->dims[0]),
                                    loom_graph_sym_str(ic->m, O));
    } else {
      LOOM_PROPAGATE(loom_graph_icx_same_dim(ic, 2, 0, b->dims[0], 1, 0, w->dims[0]));
    }
  }
  const loom_sym_expr *d[LOOM_GRAPH_MAX_SPATIAL + 2] = {x->dims[0], O};
  for (int i = 0; i < n; i++) {
    d[2 + i] = out_extent(cx, x->dims[2 + i], w->dims[2 + i], &sp, i);
    if (!d[2 + i]) return loom_sym_ctx_take_error(cx);
  }
  *out = loom_sinfo_tensor(ic->m, x->dtype, n + 2, d, x->device);
  return LOOM_OK;
}

/* The reference: for each output element, the sum over the group's channels and the window
 * (in double), skipping taps in the padding. Any spatial rank n (index vectors, row-major). */
static loom_status eval_conv(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  const loom_graph_tensor *x = &args[0].t, *w = &args[1].t;
  int n = loom_graph_conv_rank(ec->call->u.call.op, x->ndim);
  const loom_graph_tensor *bias = ec->call->u.call.nargs == 3 ? &args[2].t : NULL;
  loom_graph_icx ic = {.m = ec->m, .cx = loom_graph_module_sym(ec->m), .call = ec->call, .op = ec->op};
  loom_graph_window sp;
  LOOM_PROPAGATE(loom_graph_conv_window(&ic, n, false, &sp));
  int64_t B = loom_graph_call_int(ec->call, "packed_w");
  int64_t N = x->shape[0], C = x->shape[1], O = w->shape[0] * (B ? B : 1), CG = w->shape[1], G = sp.groups;
  if (CG * G != C) return LOOM_ERROR(INVALID_ARGUMENT, "%s: operand 1 axis 1 is %lld, operand 0 axis 1 is %lld, groups %lld", ec->op, (long long)CG, (long long)C, (long long)G);
  const int64_t *in = x->shape + 2, *k = w->shape + 2;
  int64_t shape[LOOM_GRAPH_MAX_SPATIAL + 2] = {N, O}, *os = shape + 2;
  for (int i = 0; i < n; i++) {
    os[i] = floor_div(in[i] + sp.pad_lo[i] + sp.pad_hi[i] - sp.dilation[i] * (k[i] - 1) - 1, sp.stride[i]) + 1;
    if (os[i] < 0)
      return LOOM_ERROR(INVALID_ARGUMENT, "%s: spatial axis %d of size %lld is smaller than the (dilated) kernel", ec->op, i,
                        (long long)in[i]);
  }
  LOOM_PROPAGATE(loom_graph_value_tensor(x->dtype, n + 2, shape, out));
  if (!out->t.numel) return LOOM_OK;
  int64_t xst[LOOM_GRAPH_MAX_SPATIAL + 2], wst[LOOM_GRAPH_MAX_SPATIAL + 3];
  loom_graph_strides(n + 2, x->shape, xst);
  loom_graph_strides(n + 2 + (B > 0), w->shape, wst);
  int64_t OG = O / G, y[LOOM_GRAPH_MAX_SPATIAL + 2] = {0}, t[LOOM_GRAPH_MAX_SPATIAL];
  size_t oi = 0;
  do { /* y: (b, o, output position) */
    int64_t b = y[0], o = y[1], g = o / OG;
    double acc = bias ? loom_graph_tensor_get_f64(bias, (size_t)o) : 0;
    bool taps = true;
    for (int i = 0; i < n; i++) taps = taps && k[i] > 0;
    for (int64_t c = 0; c < CG && taps; c++) {
      for (int i = 0; i < n; i++) t[i] = 0;
      do { /* t: the kernel tap */
        size_t xi = (size_t)(b * xst[0] + (g * CG + c) * xst[1]);
        size_t wi = (size_t)(B ? (o / B) * wst[0] + (o % B) * wst[n + 2] + c * wst[1] : o * wst[0] + c * wst[1]);
        bool inside = true;
        for (int i = 0; i < n && inside; i++) {
          int64_t p = y[2 + i] * sp.stride[i] - sp.pad_lo[i] + t[i] * sp.dilation[i];
          inside = p >= 0 && p < in[i];
          xi += (size_t)(p * xst[2 + i]);
          wi += (size_t)(t[i] * wst[2 + i]);
        }
        if (inside) acc += loom_graph_tensor_get_f64(x, xi) * loom_graph_tensor_get_f64(w, wi);
      } while (loom_graph_index_next(n, k, t));
    }
    loom_graph_tensor_set_f64(&out->t, oi++, acc);
  } while (loom_graph_index_next(n + 2, shape, y));
  return LOOM_OK;
}

/* ---- pooling ------------------------------------------------------------------------- */

static loom_status infer_pool(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 0, true, &x));
  if (x->ndim != 4) return loom_graph_icx_error(ic, "operand 0 must have rank 4 (N, C, H, W), got %d", x->ndim);
  const loom_sym_expr *d[4] = {x->dims[0], x->dims[1]};
  if (ic->call->u.call.op == LOOM_GRAPH_OP_GLOBAL_AVG_POOL2D) {
    d[2] = d[3] = loom_sym_const(ic->cx, 1);
  } else {
    loom_graph_window sp;
    LOOM_PROPAGATE(loom_graph_conv_window(ic, 2, true, &sp));
    for (int i = 0; i < 2; i++) {
      d[2 + i] = out_extent(ic->cx, x->dims[2 + i], loom_sym_const(ic->cx, sp.kernel[i]), &sp, i);
      if (!d[2 + i]) return loom_sym_ctx_take_error(ic->cx);
    }
  }
  *out = loom_sinfo_tensor(ic->m, x->dtype, 4, d, x->device);
  return LOOM_OK;
}

static loom_status eval_pool(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  const loom_graph_tensor *x = &args[0].t;
  loom_graph_op op = ec->call->u.call.op;
  int64_t N = x->shape[0], C = x->shape[1], H = x->shape[2], W = x->shape[3];
  loom_graph_window sp = {.n = 2, .kernel = {H, W}, .stride = {1, 1}, .dilation = {1, 1}};
  if (op != LOOM_GRAPH_OP_GLOBAL_AVG_POOL2D) {
    loom_graph_icx ic = {.m = ec->m, .cx = loom_graph_module_sym(ec->m), .call = ec->call, .op = ec->op};
    LOOM_PROPAGATE(loom_graph_conv_window(&ic, 2, true, &sp));
  }
  int64_t os[2];
  int64_t in[2] = {H, W};
  for (int i = 0; i < 2; i++) {
    os[i] = floor_div(in[i] + sp.pad_lo[i] + sp.pad_hi[i] - (sp.kernel[i] - 1) - 1, sp.stride[i]) + 1;
    if (os[i] < 0)
      return LOOM_ERROR(INVALID_ARGUMENT, "%s: spatial axis %d of size %lld is smaller than the kernel", ec->op, i,
                        (long long)in[i]);
  }
  int64_t shape[4] = {N, C, os[0], os[1]};
  LOOM_PROPAGATE(loom_graph_value_tensor(x->dtype, 4, shape, out));
  bool mx = op == LOOM_GRAPH_OP_MAX_POOL2D;
  for (int64_t bc = 0; bc < N * C; bc++)
    for (int64_t y0 = 0; y0 < os[0]; y0++)
      for (int64_t y1 = 0; y1 < os[1]; y1++) {
        double acc = mx ? -INFINITY : 0;
        int64_t cnt = 0;
        for (int64_t k0 = 0; k0 < sp.kernel[0]; k0++)
          for (int64_t k1 = 0; k1 < sp.kernel[1]; k1++) {
            int64_t i0 = y0 * sp.stride[0] - sp.pad_lo[0] + k0, i1 = y1 * sp.stride[1] - sp.pad_lo[1] + k1;
            if (i0 < 0 || i0 >= H || i1 < 0 || i1 >= W) continue;
            double v = loom_graph_tensor_get_f64(x, (size_t)((bc * H + i0) * W + i1));
            if (mx) acc = v > acc || v != v ? v : acc;
            else acc += v;
            cnt++;
          }
        /* an empty global window is the mean of nothing: NaN, as the mean reduction */
        if (!mx) acc = cnt ? acc / (double)cnt : op == LOOM_GRAPH_OP_GLOBAL_AVG_POOL2D ? NAN : 0;
        loom_graph_tensor_set_f64(&out->t, (size_t)((bc * os[0] + y0) * os[1] + y1), acc);
      }
  return LOOM_OK;
}

/* ---- resize ---------------------------------------------------------------------------- */

static bool linear_method(const loom_graph_expr *call) {
  const loom_graph_attr *a = loom_graph_call_attr(call, "method");
  return a && !strcmp(a->s, "linear");
}

static loom_status infer_resize(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 0, true, &x));
  if (x->ndim != 4) return loom_graph_icx_error(ic, "operand 0 must have rank 4 (N, C, H, W), got %d", x->ndim);
  const loom_graph_attr *sz = loom_graph_call_attr(ic->call, "size"), *me = loom_graph_call_attr(ic->call, "method");
  if (sz->n != 2) return loom_graph_icx_error(ic, "attribute 'size' needs 2 entries (H, W), got %zu", sz->n);
  if (me && strcmp(me->s, "nearest") && strcmp(me->s, "linear"))
    return loom_graph_icx_error(ic, "method \"%s\" is not \"nearest\" or \"linear\"", me->s);
  const loom_sym_expr *d[4] = {x->dims[0], x->dims[1], sz->syms[0], sz->syms[1]};
  *out = loom_sinfo_tensor(ic->m, x->dtype, 4, d, x->device);
  return LOOM_OK;
}

/* Source coordinate (half-pixel) of output index o when scaling in -> out. */
static double src_coord(int64_t o, int64_t in, int64_t outn) { return ((double)o + 0.5) * (double)in / (double)outn - 0.5; }

static loom_status eval_resize(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  const loom_graph_tensor *x = &args[0].t;
  const loom_graph_attr *sz = loom_graph_call_attr(ec->call, "size");
  int64_t oh, ow;
  LOOM_PROPAGATE(loom_graph_ecx_sym(ec, sz->syms[0], &oh));
  LOOM_PROPAGATE(loom_graph_ecx_sym(ec, sz->syms[1], &ow));
  if (oh < 0 || ow < 0) return LOOM_ERROR(OUT_OF_RANGE, "resize2d: size evaluates to (%lld, %lld)", (long long)oh, (long long)ow);
  int64_t N = x->shape[0], C = x->shape[1], H = x->shape[2], W = x->shape[3];
  int64_t shape[4] = {N, C, oh, ow};
  LOOM_PROPAGATE(loom_graph_value_tensor(x->dtype, 4, shape, out));
  if (!H || !W) return LOOM_OK;
  bool lin = linear_method(ec->call);
  for (int64_t bc = 0; bc < N * C; bc++)
    for (int64_t i = 0; i < oh; i++)
      for (int64_t j = 0; j < ow; j++) {
        double v;
        if (!lin) {
          int64_t si = (int64_t)floor((double)i * (double)H / (double)oh), sj = (int64_t)floor((double)j * (double)W / (double)ow);
          if (si >= H) si = H - 1;
          if (sj >= W) sj = W - 1;
          v = loom_graph_tensor_get_f64(x, (size_t)((bc * H + si) * W + sj));
        } else {
          double fy = src_coord(i, H, oh), fx = src_coord(j, W, ow);
          if (fy < 0) fy = 0;
          if (fx < 0) fx = 0;
          int64_t y0 = (int64_t)fy, x0 = (int64_t)fx;
          if (y0 > H - 1) y0 = H - 1;
          if (x0 > W - 1) x0 = W - 1;
          int64_t y1 = y0 + 1 < H ? y0 + 1 : H - 1, x1 = x0 + 1 < W ? x0 + 1 : W - 1;
          double ly = fy - (double)y0, lx = fx - (double)x0;
          if (ly > 1) ly = 1;
          if (lx > 1) lx = 1;
#define PX(yy, xx) loom_graph_tensor_get_f64(x, (size_t)((bc * H + (yy)) * W + (xx)))
          v = (1 - ly) * ((1 - lx) * PX(y0, x0) + lx * PX(y0, x1)) + ly * ((1 - lx) * PX(y1, x0) + lx * PX(y1, x1));
#undef PX
        }
        loom_graph_tensor_set_f64(&out->t, (size_t)((bc * oh + i) * ow + j), v);
      }
  return LOOM_OK;
}

/* ---- legalization (the records' legalize hooks; graph/legalize.h) ------------------------------ */

/* conv1d / conv2d / conv, max_pool2d / avg_pool2d (legalize_window.c) and resize2d
 * (legalize_image.c) have theirs beside the image family's. */

typedef struct global_avg_pool_params {
  loom_dtype t;
} global_avg_pool_params;
LOOM_TP_GEN_PARAMS(global_avg_pool_params, 4);

/* the mean over axes 2 and 3, kept */
static loom_status gen_global_avg_pool(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  return loom_tp_gen_reduce(loom_graph_module_arena(m), loom_graph_module_sym(m), name, LOOM_TP_REDUCE_MEAN,
                            ((const global_avg_pool_params *)params)->t, 4, (1u << 2) | (1u << 3), true, tp);
}

static loom_status legal_global_avg_pool2d(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                                           loom_graph_legal *r) {
  (void)out;
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  if (x->ndim != 4) return loom_legal_unsupported(call, "for a non-NCHW input");
  char name[64];
  snprintf(name, sizeof name, "global_avg_pool2d_%s", loom_dtype_name(x->dtype));
  global_avg_pool_params p = {.t = x->dtype};
  return LOOM_LEGAL_PROGRAM(m, name, gen_global_avg_pool, p, &r->tp);
}

/* ---- the records ------------------------------------------------------------------------------- */

const loom_graph_op_impl loom_graph_op_impl_conv1d = {conv_attrs, infer_conv, eval_conv, loom_legal_conv, loom_legal_expand_window};
const loom_graph_op_impl loom_graph_op_impl_conv2d = {conv_attrs, infer_conv, eval_conv, loom_legal_conv, loom_legal_expand_window};
const loom_graph_op_impl loom_graph_op_impl_conv = {conv_attrs, infer_conv, eval_conv, loom_legal_conv, loom_legal_expand_window};
const loom_graph_op_impl loom_graph_op_impl_max_pool2d = {pool_attrs, infer_pool, eval_pool, loom_legal_pool, loom_legal_expand_pool};
const loom_graph_op_impl loom_graph_op_impl_avg_pool2d = {pool_attrs, infer_pool, eval_pool, loom_legal_pool, loom_legal_expand_pool};
const loom_graph_op_impl loom_graph_op_impl_global_avg_pool2d = {no_attrs, infer_pool, eval_pool, legal_global_avg_pool2d, loom_legal_expand_pool};
const loom_graph_op_impl loom_graph_op_impl_resize2d = {resize_attrs, infer_resize, eval_resize, loom_legal_resize2d, NULL};
