/* op_image.c — N-d spatial ops on (N, C, spatial...) tensors: pooling with every ONNX knob
 * (max / average / Lp, dilation, ceil mode, counted padding, argmax indices), N-d resize
 * (nearest / linear / cubic, every coordinate transformation, antialias), grid sampling,
 * transposed convolution and col2im. The reference implementations follow the ONNX
 * reference operators (onnx/reference/ops/op_*.py), whose outputs are the conformance truth. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/legalize_internal.h"

#define MAXS LOOM_GRAPH_MAX_SPATIAL /* spatial axes at most (rank 8 tensors) */

/* ---- shared attribute reading ------------------------------------------------------ */

/* A list attribute of exactly `n` constants (`dflt` for each when absent). */
static loom_status ints_n(loom_graph_icx *ic, const char *name, int n, int64_t dflt, int64_t lo, int64_t *out) {
  int64_t v[2 * MAXS];
  size_t k;
  bool present;
  LOOM_PROPAGATE(loom_graph_icx_ints(ic, name, v, 2 * MAXS, &k, &present));
  if (!present) {
    for (int i = 0; i < n; i++) out[i] = dflt;
    return LOOM_OK;
  }
  if ((int)k != n) return loom_graph_icx_error(ic, "attribute '%s' has %zu entries; expected %d", name, k, n);
  for (int i = 0; i < n; i++) {
    if (v[i] < lo) return loom_graph_icx_error(ic, "attribute '%s' entry %d is %lld; must be >= %lld", name, i, (long long)v[i], (long long)lo);
    out[i] = v[i];
  }
  return LOOM_OK;
}

static loom_graph_icx icx_of(loom_graph_ecx *ec) {
  return (loom_graph_icx){.m = ec->m, .cx = loom_graph_module_sym(ec->m), .call = ec->call, .op = ec->op};
}

/* ---- pooling ---------------------------------------------------------------------------- */

static const loom_graph_attr_spec pool_attrs[] = {{"kernel", LOOM_GRAPH_ATTR_SYMS, .required = true},
                                                  {"strides", LOOM_GRAPH_ATTR_SYMS, .required = false},
                                                  {"padding", LOOM_GRAPH_ATTR_SYMS, .required = false},
                                                  {"dilation", LOOM_GRAPH_ATTR_SYMS, .required = false},
                                                  {"ceil_mode", LOOM_GRAPH_ATTR_BOOL, .dflt = 0},
                                                  {"count_include_pad", LOOM_GRAPH_ATTR_BOOL, .dflt = 0},
                                                  {"p", LOOM_GRAPH_ATTR_INT, .dflt = 2},
                                                  {"storage_order", LOOM_GRAPH_ATTR_INT, .dflt = 0},
                                                  {0}};

loom_status loom_graph_pool_window(loom_graph_icx *ic, int ndim, loom_graph_window *p) {
  memset(p, 0, sizeof *p);
  const loom_graph_attr *ka = loom_graph_call_attr(ic->call, "kernel");
  p->n = (int)ka->n;
  if (p->n < 1 || p->n > MAXS) return loom_graph_icx_error(ic, "attribute 'kernel' has %zu entries; expected 1 to %d", ka->n, MAXS);
  if (ndim != p->n + 2) return loom_graph_icx_error(ic, "operand 0 has rank %d; a %d-entry kernel needs rank %d (N, C, spatial...)", ndim, p->n, p->n + 2);
  int64_t pads[2 * MAXS];
  LOOM_PROPAGATE(ints_n(ic, "kernel", p->n, 1, 1, p->kernel));
  LOOM_PROPAGATE(ints_n(ic, "strides", p->n, 1, 1, p->stride));
  LOOM_PROPAGATE(ints_n(ic, "dilation", p->n, 1, 1, p->dilation));
  LOOM_PROPAGATE(ints_n(ic, "padding", 2 * p->n, 0, 0, pads));
  for (int i = 0; i < p->n; i++) p->pad_lo[i] = pads[i], p->pad_hi[i] = pads[p->n + i];
  p->ceil = loom_graph_call_int(ic->call, "ceil_mode") != 0;
  return LOOM_OK;
}

/* The output extent of axis i is floordiv(in + pool_offset, stride) for an input extent `in`
 * at least the dilated kernel sw less the padding (ONNX Runtime and PyTorch):
 *   floor mode: floordiv(in + lo + hi - sw, s) + 1
 *   ceil mode:  o1 = ceildiv(in + lo + hi - sw, s) + 1, less one when window o1 - 1 would start
 *               at or past in + lo (in the end padding): o1 - 1 windows when floordiv(in + lo + s - 1, s)
 *               (the windows starting before in + lo) is below o1, so min(o1, max(that, o1 - 1)).
 * Every term is floordiv(in + constant, s), and floordiv is monotone in its numerator, so the
 * min and max move onto the constants: one floordiv, which a symbolic extent keeps small. */
static int64_t pool_offset(const loom_graph_window *p, int i) {
  int64_t sw = p->dilation[i] * (p->kernel[i] - 1) + 1, s = p->stride[i], lo = p->pad_lo[i], hi = p->pad_hi[i];
  int64_t o1 = lo + hi - sw + 2 * s - 1, starts = lo + s - 1; /* o1 = floordiv(in + o1, s), ... */
  if (!p->ceil) return lo + hi - sw + s;
  int64_t keep = starts > o1 - s ? starts : o1 - s;
  return o1 < keep ? o1 : keep;
}

/* Output extent of axis i for input extent `in` (pool_offset); -1 for an input smaller than
 * the dilated kernel, except in ceil mode while a window still starts inside the input (ONNX
 * Runtime and PyTorch: kernel 3, stride 2 on 2 gives one window). Sets *extra_lo, the shift of
 * the windows that ceil mode adds, to 0:
 * ONNX Runtime and PyTorch start window o at o*stride - pad_lo in ceil mode too (an earlier
 * shift by half the extra padding, as in ONNX's Python reference, disagreed with ONNX Runtime:
 * tests/fuzz/fuzz_ops_ort.py --family pool --seed 854; no conformance test depends on it). */
int64_t loom_graph_pool_extent(const loom_graph_window *p, int i, int64_t in, int64_t *extra_lo) {
  if (extra_lo) *extra_lo = 0;
  int64_t num = in + pool_offset(p, i), s = p->stride[i], o = num >= 0 ? num / s : -((s - 1 - num) / s); /* floordiv */
  if (in + p->pad_lo[i] + p->pad_hi[i] < p->dilation[i] * (p->kernel[i] - 1) + 1 && (!p->ceil || o < 1)) return -1;
  return o;
}

static loom_status infer_pool(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 0, true, &x));
  loom_graph_window p;
  LOOM_PROPAGATE(loom_graph_pool_window(ic, x->ndim, &p));
  loom_sym_ctx *cx = ic->cx;
  const loom_sym_expr *d[MAXS + 2] = {x->dims[0], x->dims[1]};
  for (int i = 0; i < p.n; i++) {
    int64_t in;
    if (loom_sym_is_const(x->dims[2 + i], &in)) {
      int64_t o = loom_graph_pool_extent(&p, i, in, NULL);
      if (o < 0) return loom_graph_icx_error(ic, "spatial axis %d of size %lld is smaller than the (dilated) kernel", i, (long long)in);
      d[2 + i] = loom_sym_const(cx, o);
    } else {
      d[2 + i] = loom_sym_floordiv(cx, loom_sym_add(cx, x->dims[2 + i], loom_sym_const(cx, pool_offset(&p, i))), loom_sym_const(cx, p.stride[i]));
    }
    if (!d[2 + i]) return loom_sym_ctx_take_error(cx);
  }
  loom_dtype dt = ic->call->u.call.op == LOOM_GRAPH_OP_MAX_POOL_INDICES ? LOOM_DTYPE_I64 : x->dtype;
  *out = loom_sinfo_tensor(ic->m, dt, x->ndim, d, x->device);
  return LOOM_OK;
}

/* One pass over every output position. max / max_pool_indices: taps at o*s - lo + j*d inside
 * the input, first maximum wins. avg / lp (ONNX CommonPool): the input padded by lo (+ the
 * ceil shift) holds taps at o*s + j*d below in + lo + hi; padding counts as 0 when
 * count_include_pad, else it is skipped; lp is (sum |x|^p)^(1/p) (padding adds 0). */
static loom_status eval_pool(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  const loom_graph_tensor *x = &args[0].t;
  loom_graph_icx ic = icx_of(ec);
  loom_graph_window p;
  LOOM_PROPAGATE(loom_graph_pool_window(&ic, x->ndim, &p));
  loom_graph_op op = ec->call->u.call.op;
  bool mx = op == LOOM_GRAPH_OP_MAX_POOL || op == LOOM_GRAPH_OP_MAX_POOL_INDICES, idx = op == LOOM_GRAPH_OP_MAX_POOL_INDICES;
  bool lp = op == LOOM_GRAPH_OP_LP_POOL, incl = loom_graph_call_int(ec->call, "count_include_pad") != 0;
  double pw = (double)loom_graph_call_int(ec->call, "p");
  bool colmajor = loom_graph_call_int(ec->call, "storage_order") == 1;
  int64_t shape[MAXS + 2] = {x->shape[0], x->shape[1]}, extra[MAXS];
  for (int i = 0; i < p.n; i++) {
    shape[2 + i] = loom_graph_pool_extent(&p, i, x->shape[2 + i], &extra[i]);
    if (shape[2 + i] < 0)
      return LOOM_ERROR(INVALID_ARGUMENT, "%s: spatial axis %d of size %lld is smaller than the (dilated) kernel", ec->op, i, (long long)x->shape[2 + i]);
  }
  LOOM_PROPAGATE(loom_graph_value_tensor(idx ? LOOM_DTYPE_I64 : x->dtype, x->ndim, shape, out));
  if (!out->t.numel) return LOOM_OK;
  double *xd = loom_graph_tensor_to_f64(x);
  if (!xd && x->numel) return LOOM_OOM();
  int64_t ist[MAXS + 2], sst[MAXS]; /* input strides; strides of the index the Indices output reports */
  loom_graph_strides(x->ndim, x->shape, ist);
  int64_t acc_st = 1;
  for (int i = colmajor ? 0 : p.n - 1; colmajor ? i < p.n : i >= 0; i += colmajor ? 1 : -1) sst[i] = acc_st, acc_st *= x->shape[2 + i];
  int64_t oi[MAXS + 2] = {0}, kj[MAXS];
  size_t o = 0;
  do {
    int64_t base = oi[0] * ist[0] + oi[1] * ist[1], cbase = (oi[0] * x->shape[1] + oi[1]) * acc_st;
    double acc = mx ? -INFINITY : 0;
    int64_t cnt = 0, arg = -1;
    memset(kj, 0, sizeof kj);
    do {
      int64_t off = base, sidx = 0;
      bool inside = true, counted = true;
      for (int i = 0; i < p.n; i++) {
        int64_t q = oi[2 + i] * p.stride[i] + kj[i] * p.dilation[i], c;
        if (mx) {
          c = q - p.pad_lo[i];
        } else {
          if (q >= x->shape[2 + i] + p.pad_lo[i] + p.pad_hi[i]) counted = false;
          c = q - p.pad_lo[i] - extra[i];
        }
        if (c < 0 || c >= x->shape[2 + i]) inside = false;
        else off += c * ist[2 + i], sidx += c * sst[i];
      }
      if (mx) {
        if (inside && (arg < 0 || xd[off] > acc)) acc = xd[off], arg = cbase + sidx;
      } else if (counted && (inside || incl)) {
        double v = inside ? xd[off] : 0;
        acc += lp ? pow(fabs(v), pw) : v;
        cnt++;
      }
    } while (loom_graph_index_next(p.n, p.kernel, kj));
    double r;
    if (idx) r = (double)arg;
    else if (mx) r = acc;
    else {
      r = lp ? pow(acc, 1.0 / pw) : cnt ? acc / (double)cnt : 0;
    }
    loom_graph_tensor_set_f64(&out->t, o++, r);
  } while (loom_graph_index_next(x->ndim, shape, oi));
  free(xd);
  return LOOM_OK;
}

/* ---- resize ----------------------------------------------------------------------------- */

static const loom_graph_attr_spec resize_attrs[] = {{"size", LOOM_GRAPH_ATTR_SYMS, .required = false},
                                                    {"axes", LOOM_GRAPH_ATTR_SYMS, .required = false},
                                                    {"by", LOOM_GRAPH_ATTR_STR, .dflt_str = "scales"},
                                                    {"policy", LOOM_GRAPH_ATTR_STR, .dflt_str = "stretch"},
                                                    {"mode", LOOM_GRAPH_ATTR_STR, .dflt_str = "nearest"},
                                                    {"coord", LOOM_GRAPH_ATTR_STR, .dflt_str = "half_pixel"},
                                                    {"nearest_mode", LOOM_GRAPH_ATTR_STR, .dflt_str = "round_prefer_floor"},
                                                    {"cubic_coeff_a", LOOM_GRAPH_ATTR_FLOAT, .dflt = -0.75},
                                                    {"exclude_outside", LOOM_GRAPH_ATTR_BOOL, .dflt = 0},
                                                    {"extrapolation_value", LOOM_GRAPH_ATTR_FLOAT, .dflt = 0},
                                                    {"antialias", LOOM_GRAPH_ATTR_BOOL, .dflt = 0},
                                                    {0}};

static const char *const resize_modes[] = {"nearest", "linear", "cubic", NULL};
static const char *const resize_coords[] = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                                            "asymmetric", "tf_crop_and_resize", NULL};
static const char *const nearest_modes[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil", NULL};

static int pick(const char *s, const char *const *list) {
  for (int i = 0; list[i]; i++)
    if (!strcmp(s, list[i])) return i;
  return -1;
}

/* The resized axes (attr `axes`, default all), normalised. */
static loom_status resize_axes(loom_graph_icx *ic, int r, int64_t *ax, size_t *na) {
  bool present;
  LOOM_PROPAGATE(loom_graph_icx_ints(ic, "axes", ax, 8, na, &present));
  if (!present) {
    *na = (size_t)r;
    for (int k = 0; k < r; k++) ax[k] = k;
  }
  for (size_t k = 0; k < *na; k++) {
    int a;
    LOOM_PROPAGATE(loom_graph_icx_axis(ic, ax[k], r, "axes", &a));
    ax[k] = a;
    for (size_t j = 0; j < k; j++)
      if (ax[j] == a) return loom_graph_icx_error(ic, "axis %d appears twice in 'axes'", a);
  }
  return LOOM_OK;
}

static loom_status infer_resize(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_sinfo *x, *sc, *roi = NULL;
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 0, true, &x));
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 1, true, &sc));
  const loom_graph_attr *sz = loom_graph_call_attr(ic->call, "size");
  int64_t ax[8], v;
  size_t na = (size_t)x->ndim;
  const char *by = loom_graph_call_str(ic->call, "by"), *policy = loom_graph_call_str(ic->call, "policy");
  if (sz) {
    if ((int)sz->n != x->ndim) return loom_graph_icx_error(ic, "attribute 'size' has %zu entries; operand 0 has rank %d", sz->n, x->ndim);
    if (strcmp(by, "scales")) return loom_graph_icx_error(ic, "attribute 'size' goes with by \"scales\"");
  } else {
    LOOM_PROPAGATE(resize_axes(ic, x->ndim, ax, &na));
    if (strcmp(by, "scales") && strcmp(by, "sizes")) return loom_graph_icx_error(ic, "by \"%s\" is not \"scales\" or \"sizes\"", by);
  }
  if (strcmp(policy, "stretch") && strcmp(policy, "not_larger") && strcmp(policy, "not_smaller"))
    return loom_graph_icx_error(ic, "policy \"%s\" is not stretch, not_larger or not_smaller", policy);
  bool sizes = !strcmp(by, "sizes");
  if (sc->ndim != 1 || (sizes ? sc->dtype != LOOM_DTYPE_I64 : !loom_dtype_is_float(sc->dtype)))
    return loom_graph_icx_error(ic, "operand 1 (%s) must be a 1-D %s tensor", by, sizes ? "i64" : "float");
  if (loom_sym_is_const(sc->dims[0], &v) && v != (int64_t)na)
    return loom_graph_icx_error(ic, "operand 1 (%s) has %lld values for %zu resized axes", by, (long long)v, na);
  if (ic->call->u.call.nargs > 2) {
    LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 2, true, &roi));
    if (roi->ndim != 1 || !loom_dtype_is_float(roi->dtype)) return loom_graph_icx_error(ic, "operand 2 (roi) must be a 1-D float tensor");
    if (loom_sym_is_const(roi->dims[0], &v) && v != 2 * (int64_t)na)
      return loom_graph_icx_error(ic, "operand 2 (roi) has %lld values for %zu resized axes", (long long)v, na);
  }
  const char *mode = loom_graph_call_str(ic->call, "mode"), *coord = loom_graph_call_str(ic->call, "coord");
  const char *nm = loom_graph_call_str(ic->call, "nearest_mode");
  if (pick(mode, resize_modes) < 0) return loom_graph_icx_error(ic, "mode \"%s\" is not nearest, linear or cubic", mode);
  if (pick(coord, resize_coords) < 0) return loom_graph_icx_error(ic, "coord \"%s\" is not a coordinate transformation mode", coord);
  if (pick(nm, nearest_modes) < 0) return loom_graph_icx_error(ic, "nearest_mode \"%s\" is not a nearest mode", nm);
  if (!strcmp(coord, "tf_crop_and_resize") && !roi) return loom_graph_icx_error(ic, "coord \"tf_crop_and_resize\" needs operand 2 (roi)");
  if (!strcmp(mode, "nearest") && loom_graph_call_int(ic->call, "antialias"))
    return loom_graph_icx_error(ic, "antialias is not defined for mode \"nearest\"");
  if (sz) {
    *out = loom_sinfo_tensor(ic->m, x->dtype, x->ndim, sz->syms, x->device);
    return LOOM_OK;
  }
  const loom_sym_expr *d[8];
  for (int k = 0; k < x->ndim; k++) d[k] = x->dims[k];
  for (size_t k = 0; k < na; k++)
    if (!(d[ax[k]] = loom_graph_icx_fresh(ic, "rs"))) return LOOM_OOM();
  *out = loom_sinfo_tensor(ic->m, x->dtype, x->ndim, d, x->device);
  return LOOM_OK;
}

/* Resize parameters shared by every output position of one axis. */
typedef struct rz {
  int mode;         /* index in resize_modes */
  int coord;        /* index in resize_coords */
  int nearest;      /* index in nearest_modes */
  double a;         /* cubic coefficient */
  bool excl, aa;    /* exclude_outside, antialias */
  double extrap;    /* extrapolation_value */
} rz;

static double cubic_w(double x, double A) {
  x = fabs(x);
  if (x <= 1) return ((A + 2) * x - (A + 3)) * x * x + 1;
  if (x < 2) return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
  return 0;
}

/* The reference's coefficients for fractional position `ratio` (1 at integer positions);
 * returns their count. */
static int coeffs(const rz *z, double ratio, double scale, double *c) {
  if (z->mode == 0) {
    bool integer = ratio == floor(ratio);
    if (integer) c[0] = 0, c[1] = 1;
    else if (z->nearest == 0) c[0] = ratio <= 0.5, c[1] = ratio > 0.5;
    else if (z->nearest == 1) c[0] = ratio < 0.5, c[1] = ratio >= 0.5;
    else if (z->nearest == 2) c[0] = 1, c[1] = 0;
    else c[0] = 0, c[1] = 1;
    return 2;
  }
  if (!z->aa) {
    if (z->mode == 1) {
      c[0] = 1 - ratio, c[1] = ratio;
      return 2;
    }
    c[0] = cubic_w(ratio + 1, z->a), c[1] = cubic_w(ratio, z->a), c[2] = cubic_w(1 - ratio, z->a), c[3] = cubic_w(2 - ratio, z->a);
    return 4;
  }
  double s = scale < 1 ? scale : 1, sum = 0;
  int start = (int)floor((z->mode == 1 ? -1 : -2) / s) + 1, n = 2 - 2 * start;
  for (int j = 0; j < n; j++) {
    double t = (double)(start + j - ratio) * s;
    c[j] = z->mode == 1 ? fmax(0, fmin(1, 1 - fabs(t))) : cubic_w(t, z->a);
    sum += c[j];
  }
  for (int j = 0; j < n; j++) c[j] /= sum;
  return n;
}

/* Resizes `src` (shape `sh`) along `axis` to `on` positions into `dst`; scale and roi pair of
 * that axis. */
static loom_status resize_axis(const rz *z, const double *src, int ndim, const int64_t *sh, int axis, int64_t on, double scale,
                               const double *roi, double *dst) {
  int64_t in = sh[axis], outer = 1, inner = 1;
  for (int i = 0; i < axis; i++) outer *= sh[i];
  for (int i = axis + 1; i < ndim; i++) inner *= sh[i];
  double ow = scale * (double)in;
  int cap = 8 + (int)ceil(8 / (scale < 1 ? scale : 1));
  double *c = malloc((size_t)cap * sizeof *c);
  if (!c) return LOOM_OOM();
  for (int64_t y = 0; y < on; y++) {
    double yy = (double)y, xo;
    bool extrap = false;
    switch (z->coord) {
      case 0: xo = (yy + 0.5) / scale - 0.5; break;
      case 1:
        /* ONNX's in/2 * (1 - on / (scale * in)) + (y + 0.5) / scale - 0.5, rearranged so that
         * all but the division and the last sum are exact: where the true coordinate is an
         * integer (scale 0.5, 9 -> 4: 1, 3, 5, 7) it is that integer, not 1 + 2^-52; the same
         * expression as gen_image.c's coordinate() */
        xo = (double)(in - 1) / 2 + (yy + 0.5 - (double)on / 2) / scale;
        break;
      case 2: xo = ow == 1 ? -0.5 : (yy + 0.5) / scale - 0.5; break;
      case 3: xo = ow == 1 ? 0 : yy * (double)(in - 1) / (ow - 1); break;
      case 4: xo = yy / scale; break;
      default:
        xo = ow == 1 ? (roi[1] - roi[0]) * (double)(in - 1) / 2 : yy * (roi[1] - roi[0]) * (double)(in - 1) / (ow - 1);
        xo += roi[0] * (double)(in - 1);
        extrap = xo < 0 || xo > (double)(in - 1);
        break;
    }
    /* the weights and the taps both come from this one floor: the n (even) neighbours start
     * at floor(x) - n/2, one further right when x is not an integer, and are clamped to the
     * input (edge padding). The Python reference finds the taps from floor(x + ceil(n/2)),
     * which rounds to the next integer when x is just above one (x = 1 + 2^-52 gives 2.0):
     * the taps then sit one position left of the weights. gen_image.c's lets b<k> / q<k>
     * are this same formula; ONNX Runtime agrees with it. */
    double fl = floor(xo), ratio = xo == fl ? 1 : xo - fl;
    int n = coeffs(z, ratio, scale, c);
    int64_t first = (int64_t)fl - n / 2 + (xo == fl ? 0 : 1);
    if (z->excl) {
      double sum = 0;
      for (int j = 0; j < n; j++) {
        if (first + j < 0 || first + j >= in) c[j] = 0;
        sum += c[j];
      }
      if (sum == 0) sum = 1;
      for (int j = 0; j < n; j++) c[j] /= sum;
    }
    for (int64_t a = 0; a < outer; a++)
      for (int64_t b = 0; b < inner; b++) {
        double v = 0;
        if (extrap) {
          v = z->extrap;
        } else {
          for (int j = 0; j < n; j++) {
            int64_t s = first + j;
            s = s < 0 ? 0 : s >= in ? in - 1 : s;
            v += c[j] * src[(a * in + s) * inner + b];
          }
        }
        dst[(a * on + y) * inner + b] = v;
      }
  }
  free(c);
  return LOOM_OK;
}

static loom_status eval_resize(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  const loom_graph_tensor *x = &args[0].t, *sc = &args[1].t, *rt = ec->call->u.call.nargs > 2 ? &args[2].t : NULL;
  const loom_graph_attr *sz = loom_graph_call_attr(ec->call, "size");
  int r = x->ndim;
  int64_t oshape[8];
  double scales[8], roiv[16];
  bool has_roi = rt != NULL;
  if (sz) {
    if ((int64_t)sc->numel != r || (rt && (int64_t)rt->numel != 2 * r))
      return LOOM_ERROR(INVALID_ARGUMENT, "%s: scales has %zu values, roi %zu; rank is %d", ec->op, sc->numel, rt ? rt->numel : 0, r);
    for (int i = 0; i < r; i++) {
      LOOM_PROPAGATE(loom_graph_ecx_sym(ec, sz->syms[i], &oshape[i]));
      if (oshape[i] < 0) return LOOM_ERROR(OUT_OF_RANGE, "%s: size entry %d evaluates to %lld", ec->op, i, (long long)oshape[i]);
      scales[i] = loom_graph_tensor_get_f64(sc, (size_t)i);
      roiv[i] = rt ? loom_graph_tensor_get_f64(rt, (size_t)i) : 0, roiv[r + i] = rt ? loom_graph_tensor_get_f64(rt, (size_t)(r + i)) : 1;
    }
  } else {
    /* the reference's _interpolate_nd: scales -> floor(scale * in); sizes -> scale = size / in,
     * or one scale (min / max over the axes) and round-half-up sizes under a keep-aspect policy */
    loom_graph_icx ic = icx_of(ec);
    int64_t ax[8];
    size_t na;
    LOOM_PROPAGATE(resize_axes(&ic, r, ax, &na));
    if (sc->numel != na || (rt && rt->numel != 2 * na))
      return LOOM_ERROR(INVALID_ARGUMENT, "%s: operand 1 has %zu values, roi %zu; %zu axes are resized", ec->op, sc->numel, rt ? rt->numel : 0, na);
    bool sizes = !strcmp(loom_graph_call_str(ec->call, "by"), "sizes");
    const char *policy = loom_graph_call_str(ec->call, "policy");
    for (int i = 0; i < r; i++) oshape[i] = x->shape[i], scales[i] = 1, roiv[i] = 0, roiv[r + i] = 1;
    double sel = !strcmp(policy, "not_larger") ? INFINITY : -INFINITY;
    for (size_t k = 0; k < na; k++) {
      double v = loom_graph_tensor_get_f64(sc, k);
      int64_t in = x->shape[ax[k]];
      if (rt) roiv[ax[k]] = loom_graph_tensor_get_f64(rt, k), roiv[r + ax[k]] = loom_graph_tensor_get_f64(rt, na + k);
      if (!sizes) {
        if (!(v > 0)) return LOOM_ERROR(INVALID_ARGUMENT, "%s: scale %zu is %g; must be > 0", ec->op, k, v);
        scales[ax[k]] = v, oshape[ax[k]] = (int64_t)(v * (double)in);
        continue;
      }
      if (v < 0) return LOOM_ERROR(INVALID_ARGUMENT, "%s: size %zu is %lld; must be >= 0", ec->op, k, (long long)v);
      if (!in) return LOOM_ERROR(INVALID_ARGUMENT, "%s: cannot resize empty axis %lld to %lld", ec->op, (long long)ax[k], (long long)v);
      scales[ax[k]] = v / (double)in, oshape[ax[k]] = (int64_t)v;
      if (!strcmp(policy, "not_larger") ? scales[ax[k]] < sel : scales[ax[k]] > sel) sel = scales[ax[k]];
    }
    if (sizes && strcmp(policy, "stretch"))
      for (size_t k = 0; k < na; k++) scales[ax[k]] = sel, oshape[ax[k]] = (int64_t)(sel * (double)x->shape[ax[k]] + 0.5);
  }
  rz z = {.mode = pick(loom_graph_call_str(ec->call, "mode"), resize_modes),
          .coord = pick(loom_graph_call_str(ec->call, "coord"), resize_coords),
          .nearest = pick(loom_graph_call_str(ec->call, "nearest_mode"), nearest_modes),
          .a = loom_graph_call_float(ec->call, "cubic_coeff_a"),
          .excl = loom_graph_call_int(ec->call, "exclude_outside") != 0,
          .aa = loom_graph_call_int(ec->call, "antialias") != 0,
          .extrap = loom_graph_call_float(ec->call, "extrapolation_value")};
  LOOM_PROPAGATE(loom_graph_value_tensor(x->dtype, r, oshape, out));
  if (!out->t.numel) return LOOM_OK;
  for (int i = 0; i < r; i++)
    if (!x->shape[i]) return LOOM_ERROR(INVALID_ARGUMENT, "%s: cannot resize empty axis %d to %lld", ec->op, i, (long long)oshape[i]);
  double *cur = loom_graph_tensor_to_f64(x);
  if (!cur) return LOOM_OOM();
  int64_t sh[8];
  memcpy(sh, x->shape, sizeof sh);
  loom_status st = LOOM_OK;
  for (int ax = 0; ax < r && !st; ax++) {
    double scale = scales[ax], roi[2] = {roiv[ax], roiv[r + ax]};
    if (fabs(scale - 1) <= 1e-9 && oshape[ax] == sh[ax] && (!has_roi || (fabs(roi[0]) <= 1e-9 && fabs(roi[1] - 1) <= 1e-9))) continue;
    if (!(scale > 0)) {
      st = LOOM_ERROR(INVALID_ARGUMENT, "%s: scale of axis %d is %g; must be > 0", ec->op, ax, scale);
      break;
    }
    size_t n = 1;
    for (int i = 0; i < r; i++) n *= (size_t)(i == ax ? oshape[i] : sh[i]);
    double *next = malloc(n * sizeof *next);
    if (!next) {
      st = LOOM_OOM();
      break;
    }
    st = resize_axis(&z, cur, r, sh, ax, oshape[ax], scale, roi, next);
    free(cur);
    cur = next;
    sh[ax] = oshape[ax];
  }
  if (!st)
    for (size_t i = 0; i < out->t.numel; i++) loom_graph_tensor_set_f64(&out->t, i, cur[i]);
  free(cur);
  return st;
}

/* ---- grid sampling ------------------------------------------------------------------------ */

static const loom_graph_attr_spec grid_attrs[] = {{"mode", LOOM_GRAPH_ATTR_STR, .dflt_str = "linear"},
                                                  {"padding_mode", LOOM_GRAPH_ATTR_STR, .dflt_str = "zeros"},
                                                  {"align_corners", LOOM_GRAPH_ATTR_BOOL, .dflt = 0},
                                                  {0}};
static const char *const grid_modes[] = {"nearest", "linear", "cubic", NULL};
static const char *const grid_pads[] = {"zeros", "border", "reflection", NULL};

/* grid_sample(x (N, C, D_1..D_n), grid (N, O_1..O_n, n)) -> (N, C, O_1..O_n); grid holds
 * normalised coordinates in [-1, 1], the last entry for the first spatial axis. */
static loom_status infer_grid(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_sinfo *x, *g;
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 0, true, &x));
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 1, true, &g));
  int n = x->ndim - 2;
  if (n < 1 || n > MAXS) return loom_graph_icx_error(ic, "operand 0 has rank %d; expected (N, C, spatial...) of rank 3 to %d", x->ndim, MAXS + 2);
  if (g->ndim != n + 2) return loom_graph_icx_error(ic, "operand 1 (grid) has rank %d; expected %d (N, out spatial..., %d)", g->ndim, n + 2, n);
  if (!loom_dtype_is_float(x->dtype) || !loom_dtype_is_float(g->dtype)) return loom_graph_icx_error(ic, "operands must be float tensors");
  LOOM_PROPAGATE(loom_graph_icx_same_dim(ic, 1, 0, g->dims[0], 0, 0, x->dims[0]));
  int64_t last;
  if (loom_sym_is_const(g->dims[n + 1], &last) && last != n)
    return loom_graph_icx_error(ic, "operand 1 (grid) axis %d is %lld; expected %d coordinates", n + 1, (long long)last, n);
  if (pick(loom_graph_call_str(ic->call, "mode"), grid_modes) < 0) return loom_graph_icx_error(ic, "mode \"%s\" is not nearest, linear or cubic", loom_graph_call_str(ic->call, "mode"));
  if (pick(loom_graph_call_str(ic->call, "padding_mode"), grid_pads) < 0)
    return loom_graph_icx_error(ic, "padding_mode \"%s\" is not zeros, border or reflection", loom_graph_call_str(ic->call, "padding_mode"));
  const loom_sym_expr *d[MAXS + 2] = {x->dims[0], x->dims[1]};
  for (int i = 0; i < n; i++) d[2 + i] = g->dims[1 + i];
  *out = loom_sinfo_tensor(ic->m, x->dtype, x->ndim, d, x->device);
  return LOOM_OK;
}

/* Reflects x into [lo, hi] by the nearer border until it lies inside (the reference's
 * _gs_reflect). */
static double gs_reflect(double x, double lo, double hi) {
  double rng = hi - lo;
  if (x < lo) {
    double dx = lo - x;
    int64_t k = (int64_t)(dx / rng);
    double r = dx - (double)k * rng;
    return k % 2 == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    double dx = x - hi;
    int64_t k = (int64_t)(dx / rng);
    double r = dx - (double)k * rng;
    return k % 2 == 0 ? hi - r : lo + r;
  }
  return x;
}

/* Index i of an axis of extent d under the padding mode; -1 for a zero. */
static int64_t gs_index(int64_t i, int64_t d, int pad, double lo, double hi) {
  if (pad == 0) return i >= 0 && i < d ? i : -1;
  if (pad == 1) return i < 0 ? 0 : i > d - 1 ? d - 1 : i;
  return (int64_t)gs_reflect((double)i, lo, hi);
}

static loom_status eval_grid(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  const loom_graph_tensor *x = &args[0].t, *g = &args[1].t;
  int n = x->ndim - 2, mode = pick(loom_graph_call_str(ec->call, "mode"), grid_modes);
  int pad = pick(loom_graph_call_str(ec->call, "padding_mode"), grid_pads);
  bool ac = loom_graph_call_int(ec->call, "align_corners") != 0;
  if (g->shape[0] != x->shape[0] || g->shape[n + 1] != n)
    return LOOM_ERROR(INVALID_ARGUMENT, "%s: grid shape does not fit the input (batch %lld vs %lld, last axis %lld vs %d)", ec->op,
                      (long long)g->shape[0], (long long)x->shape[0], (long long)g->shape[n + 1], n);
  int64_t shape[MAXS + 2] = {x->shape[0], x->shape[1]}, ist[MAXS + 2];
  for (int i = 0; i < n; i++) shape[2 + i] = g->shape[1 + i];
  LOOM_PROPAGATE(loom_graph_value_tensor(x->dtype, x->ndim, shape, out));
  if (!out->t.numel) return LOOM_OK;
  double *xd = loom_graph_tensor_to_f64(x), *gd = loom_graph_tensor_to_f64(g);
  if (!xd || !gd) {
    free(xd), free(gd);
    return LOOM_OOM();
  }
  loom_graph_strides(x->ndim, x->shape, ist);
  int64_t oi[MAXS + 2] = {0}, npos = 1;
  for (int i = 0; i < n; i++) npos *= shape[2 + i];
  size_t o = 0;
  do {
    int64_t pos = 0; /* flat output spatial position */
    for (int i = 0; i < n; i++) pos = pos * shape[2 + i] + oi[2 + i];
    const double *gp = gd + (size_t)((oi[0] * npos + pos) * n);
    double xc[MAXS], lo[MAXS], hi[MAXS];
    int ntap = mode == 2 ? 4 : mode == 1 ? 2 : 1;
    int64_t base[MAXS];
    double w[MAXS][4];
    for (int i = 0; i < n; i++) {
      double dim = (double)x->shape[2 + i], v = gp[n - 1 - i];
      lo[i] = ac ? 0 : -0.5, hi[i] = ac ? dim - 1 : dim - 0.5;
      double c = (float)(ac ? (v + 1) / 2 * (dim - 1) : ((v + 1) * dim - 1) / 2);
      if (mode == 0) c = nearbyint(c);
      if (c < lo[i] || c > hi[i]) {
        if (pad == 1) c = c < 0 ? 0 : c > dim - 1 ? dim - 1 : c;
        else if (pad == 2) c = gs_reflect(c, lo[i], hi[i]);
      }
      xc[i] = c;
      if (mode == 0) {
        base[i] = (int64_t)c, w[i][0] = 1;
      } else {
        double f0 = floor(c), t = c - f0;
        base[i] = (int64_t)f0 - (mode == 2);
        if (mode == 1) w[i][0] = 1 - t, w[i][1] = t;
        else w[i][0] = cubic_w(t + 1, -0.75), w[i][1] = cubic_w(t, -0.75), w[i][2] = cubic_w(1 - t, -0.75), w[i][3] = cubic_w(2 - t, -0.75);
      }
    }
    (void)xc;
    int64_t tap[MAXS] = {0}, tshape[MAXS];
    for (int i = 0; i < n; i++) tshape[i] = ntap;
    double acc = 0;
    do {
      double wt = 1;
      int64_t off = oi[0] * ist[0] + oi[1] * ist[1];
      bool zero = false;
      for (int i = 0; i < n; i++) {
        int64_t j = gs_index(base[i] + tap[i], x->shape[2 + i], pad, lo[i], hi[i]);
        if (j < 0 || j >= x->shape[2 + i]) zero = true;
        else off += j * ist[2 + i];
        wt *= w[i][tap[i]];
      }
      if (!zero) acc += wt * xd[off];
    } while (loom_graph_index_next(n, tshape, tap));
    loom_graph_tensor_set_f64(&out->t, o++, acc);
  } while (loom_graph_index_next(x->ndim, shape, oi));
  free(xd), free(gd);
  return LOOM_OK;
}

/* ---- transposed convolution ------------------------------------------------------------- */

static const loom_graph_attr_spec convt_attrs[] = {{"strides", LOOM_GRAPH_ATTR_SYMS, .required = false},
                                                   {"padding", LOOM_GRAPH_ATTR_SYMS, .required = false},
                                                   {"dilation", LOOM_GRAPH_ATTR_SYMS, .required = false},
                                                   {"output_padding", LOOM_GRAPH_ATTR_SYMS, .required = false},
                                                   {"groups", LOOM_GRAPH_ATTR_INT, .dflt = 1},
                                                   {0}};

loom_status loom_graph_convt_window(loom_graph_icx *ic, int ndim, loom_graph_window *p) {
  memset(p, 0, sizeof *p);
  p->n = ndim - 2;
  if (p->n < 1 || p->n > MAXS) return loom_graph_icx_error(ic, "operand 0 has rank %d; expected (N, C, spatial...) of rank 3 to %d", ndim, MAXS + 2);
  int64_t pads[2 * MAXS];
  LOOM_PROPAGATE(ints_n(ic, "strides", p->n, 1, 1, p->stride));
  LOOM_PROPAGATE(ints_n(ic, "dilation", p->n, 1, 1, p->dilation));
  LOOM_PROPAGATE(ints_n(ic, "output_padding", p->n, 0, 0, p->out_pad));
  LOOM_PROPAGATE(ints_n(ic, "padding", 2 * p->n, 0, INT64_MIN, pads)); /* a negative end pad: output_shape beyond the full extent */
  for (int i = 0; i < p->n; i++) p->pad_lo[i] = pads[i], p->pad_hi[i] = pads[p->n + i];
  p->groups = loom_graph_call_int(ic->call, "groups");
  if (p->groups < 1) return loom_graph_icx_error(ic, "groups must be >= 1");
  return LOOM_OK;
}

/* conv_transpose(x (N, C, in...), w (C, O/groups, k...), b (O)?): out = s * (in - 1) +
 * output_padding + d * (k - 1) + 1 - lo - hi per spatial axis. */
static loom_status infer_convt(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_sinfo *x, *w;
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 0, true, &x));
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 1, true, &w));
  loom_graph_window p;
  LOOM_PROPAGATE(loom_graph_convt_window(ic, x->ndim, &p));
  if (w->ndim != x->ndim) return loom_graph_icx_error(ic, "operand 1 has rank %d; operand 0 has rank %d", w->ndim, x->ndim);
  if (x->dtype != w->dtype) return loom_graph_icx_error(ic, "operand 0 has dtype %s, operand 1 has dtype %s", loom_dtype_name(x->dtype), loom_dtype_name(w->dtype));
  loom_sym_ctx *cx = ic->cx;
  LOOM_PROPAGATE(loom_graph_icx_same_dim(ic, 1, 0, w->dims[0], 0, 1, x->dims[1]));
  if (p.groups > 1 && loom_sym_prove_divisible(cx, x->dims[1], p.groups) == LOOM_SYM_FALSE)
    return loom_graph_icx_error(ic, "operand 0 axis 1 is %s, not a multiple of groups %lld", loom_graph_sym_str(ic->m, x->dims[1]), (long long)p.groups);
  const loom_sym_expr *d[MAXS + 2] = {x->dims[0], loom_sym_mul(cx, w->dims[1], loom_sym_const(cx, p.groups))};
  if (ic->call->u.call.nargs == 3) {
    const loom_sinfo *b;
    LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 2, true, &b));
    if (b->ndim != 1) return loom_graph_icx_error(ic, "operand 2 (bias) must have rank 1");
    if (loom_sym_prove_eq(cx, b->dims[0], d[1]) == LOOM_SYM_FALSE)
      return loom_graph_icx_error(ic, "operand 2 (bias) has %s values for %s output channels", loom_graph_sym_str(ic->m, b->dims[0]), loom_graph_sym_str(ic->m, d[1]));
  }
  for (int i = 0; i < p.n; i++) {
    /* s * in + d * k + (op - lo - hi - s - d + 1) */
    const loom_sym_expr *e = loom_sym_add(cx, loom_sym_mul(cx, loom_sym_const(cx, p.stride[i]), x->dims[2 + i]),
                                          loom_sym_mul(cx, loom_sym_const(cx, p.dilation[i]), w->dims[2 + i]));
    d[2 + i] = loom_sym_add(cx, e, loom_sym_const(cx, p.out_pad[i] - p.pad_lo[i] - p.pad_hi[i] - p.stride[i] - p.dilation[i] + 1));
    if (!d[2 + i]) return loom_sym_ctx_take_error(cx);
  }
  *out = loom_sinfo_tensor(ic->m, x->dtype, x->ndim, d, x->device);
  return LOOM_OK;
}

static loom_status eval_convt(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  const loom_graph_tensor *x = &args[0].t, *w = &args[1].t, *b = ec->call->u.call.nargs == 3 ? &args[2].t : NULL;
  loom_graph_icx ic = icx_of(ec);
  loom_graph_window p;
  LOOM_PROPAGATE(loom_graph_convt_window(&ic, x->ndim, &p));
  int64_t C = x->shape[1], G = p.groups, CG = C / G, OG = w->shape[1], O = OG * G;
  if (C % G || w->shape[0] != C)
    return LOOM_ERROR(INVALID_ARGUMENT, "%s: operand 0 has %lld channels, operand 1 axis 0 is %lld, groups %lld", ec->op, (long long)C,
                      (long long)w->shape[0], (long long)G);
  int64_t shape[MAXS + 2] = {x->shape[0], O}, xst[MAXS + 2], wst[MAXS + 2], yst[MAXS + 2];
  for (int i = 0; i < p.n; i++) {
    shape[2 + i] = p.stride[i] * (x->shape[2 + i] - 1) + p.out_pad[i] + p.dilation[i] * (w->shape[2 + i] - 1) + 1 - p.pad_lo[i] - p.pad_hi[i];
    if (shape[2 + i] < 0) return LOOM_ERROR(INVALID_ARGUMENT, "%s: spatial axis %d has a negative output extent", ec->op, i);
  }
  LOOM_PROPAGATE(loom_graph_value_tensor(x->dtype, x->ndim, shape, out));
  if (!out->t.numel) return LOOM_OK;
  size_t ny = out->t.numel;
  double *y = calloc(ny, sizeof *y), *xd = loom_graph_tensor_to_f64(x), *wd = loom_graph_tensor_to_f64(w);
  if (!y || (!xd && x->numel) || (!wd && w->numel)) {
    free(y), free(xd), free(wd);
    return LOOM_OOM();
  }
  loom_graph_strides(x->ndim, x->shape, xst);
  loom_graph_strides(w->ndim, w->shape, wst);
  loom_graph_strides(x->ndim, shape, yst);
  int64_t sp_in[MAXS], sp_k[MAXS];
  for (int i = 0; i < p.n; i++) sp_in[i] = x->shape[2 + i], sp_k[i] = w->shape[2 + i];
  for (int64_t nb = 0; nb < x->shape[0]; nb++)
    for (int64_t c = 0; c < C; c++) {
      int64_t g = c / CG;
      int64_t ii[MAXS] = {0};
      if (!x->numel) break;
      do {
        int64_t xo = nb * xst[0] + c * xst[1];
        for (int i = 0; i < p.n; i++) xo += ii[i] * xst[2 + i];
        double xv = xd[xo];
        int64_t kk[MAXS] = {0};
        do {
          int64_t yo = 0;
          bool in = true;
          for (int i = 0; i < p.n && in; i++) {
            int64_t q = ii[i] * p.stride[i] - p.pad_lo[i] + kk[i] * p.dilation[i];
            if (q < 0 || q >= shape[2 + i]) in = false;
            yo += q * yst[2 + i];
          }
          if (!in) continue;
          int64_t wo = c * wst[0];
          for (int i = 0; i < p.n; i++) wo += kk[i] * wst[2 + i];
          for (int64_t oc = 0; oc < OG; oc++) y[nb * yst[0] + (g * OG + oc) * yst[1] + yo] += xv * wd[wo + oc * wst[1]];
        } while (loom_graph_index_next(p.n, sp_k, kk));
      } while (loom_graph_index_next(p.n, sp_in, ii));
    }
  int64_t sp = ny / (size_t)(shape[0] * O);
  for (size_t i = 0; i < ny; i++) {
    double v = y[i];
    if (b) v += loom_graph_tensor_get_f64(b, (size_t)((int64_t)i / sp % O));
    loom_graph_tensor_set_f64(&out->t, i, v);
  }
  free(y), free(xd), free(wd);
  return LOOM_OK;
}

const loom_graph_op_impl loom_graph_op_impl_max_pool = {pool_attrs, infer_pool, eval_pool, loom_legal_pool, loom_legal_expand_pool};
const loom_graph_op_impl loom_graph_op_impl_max_pool_indices = {pool_attrs, infer_pool, eval_pool, loom_legal_pool, NULL};
const loom_graph_op_impl loom_graph_op_impl_avg_pool = {pool_attrs, infer_pool, eval_pool, loom_legal_pool, loom_legal_expand_pool};
const loom_graph_op_impl loom_graph_op_impl_lp_pool = {pool_attrs, infer_pool, eval_pool, loom_legal_pool, NULL};
const loom_graph_op_impl loom_graph_op_impl_resize = {resize_attrs, infer_resize, eval_resize, loom_legal_resize, loom_legal_expand_resize};
const loom_graph_op_impl loom_graph_op_impl_grid_sample = {grid_attrs, infer_grid, eval_grid, loom_legal_grid_sample, NULL};
const loom_graph_op_impl loom_graph_op_impl_conv_transpose = {convt_attrs, infer_convt, eval_convt, loom_legal_conv, loom_legal_expand_window};
