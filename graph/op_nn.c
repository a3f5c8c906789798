/* op_nn.c — neural-network operators: softmax, log_softmax, layer_norm, rms_norm, group_norm,
 * batch_norm and attention: attributes, inference, reference implementations and legalization
 * (tensorprog/gen_reduce.c, gen_nn.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/hash.h"
#include "graph/legalize_internal.h"

static const loom_graph_attr_spec softmax_attrs[] = {{"axis", LOOM_GRAPH_ATTR_INT, .dflt = -1}, {0}};
static const loom_graph_attr_spec norm_attrs[] = {{"eps", LOOM_GRAPH_ATTR_FLOAT, .dflt = 1e-5}, {0}};

static loom_status float_tensor(loom_graph_icx *ic, size_t i, const loom_sinfo **out) {
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, i, true, out));
  if ((*out)->dtype != LOOM_DTYPE_UNKNOWN && !loom_dtype_is_float((*out)->dtype))
    return loom_graph_icx_error(ic, "operand %zu has dtype %s; a float dtype is required", i,
                                loom_dtype_name((*out)->dtype));
  return LOOM_OK;
}

static loom_status infer_softmax(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_sinfo *x;
  LOOM_PROPAGATE(float_tensor(ic, 0, &x));
  int a;
  LOOM_PROPAGATE(loom_graph_icx_axis(ic, loom_graph_call_int(ic->call, "axis"), x->ndim, "axis", &a));
  *out = x;
  return LOOM_OK;
}

/* Splits `shape` around `axis` into outer * len * inner. */
static void split3(const loom_graph_tensor *t, int axis, size_t *outer, size_t *len, size_t *inner) {
  *outer = *inner = 1;
  for (int i = 0; i < axis; i++) *outer *= (size_t)t->shape[i];
  *len = (size_t)t->shape[axis];
  for (int i = axis + 1; i < t->ndim; i++) *inner *= (size_t)t->shape[i];
}

static loom_status eval_softmax(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  const loom_graph_tensor *x = &args[0].t;
  int64_t axis = loom_graph_call_int(ec->call, "axis");
  int a = (int)(axis < 0 ? axis + x->ndim : axis);
  bool logsm = ec->call->u.call.op == LOOM_GRAPH_OP_LOG_SOFTMAX;
  LOOM_PROPAGATE(loom_graph_value_tensor(x->dtype, x->ndim, x->shape, out));
  size_t outer, len, inner;
  split3(x, a, &outer, &len, &inner);
  for (size_t o = 0; o < outer; o++)
    for (size_t in = 0; in < inner; in++) {
      size_t base = o * len * inner + in;
      double mx = -INFINITY, sum = 0;
      for (size_t k = 0; k < len; k++) {
        double v = loom_graph_tensor_get_f64(x, base + k * inner);
        if (v > mx) mx = v;
      }
      for (size_t k = 0; k < len; k++) sum += exp(loom_graph_tensor_get_f64(x, base + k * inner) - mx);
      for (size_t k = 0; k < len; k++) {
        double v = loom_graph_tensor_get_f64(x, base + k * inner) - mx;
        loom_graph_tensor_set_f64(&out->t, base + k * inner, logsm ? v - log(sum) : exp(v) / sum);
      }
    }
  return LOOM_OK;
}

/* layer_norm(x, gamma, beta) / rms_norm(x, gamma): over the last axis; gamma and beta have
 * shape (last,). */
static loom_status infer_norm(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_sinfo *x, *p;
  LOOM_PROPAGATE(float_tensor(ic, 0, &x));
  if (x->ndim < 1) return loom_graph_icx_error(ic, "operand 0 must have rank >= 1");
  for (size_t i = 1; i < ic->call->u.call.nargs; i++) {
    LOOM_PROPAGATE(float_tensor(ic, i, &p));
    if (p->ndim != 1) return loom_graph_icx_error(ic, "operand %zu must have rank 1, got %d", i, p->ndim);
    if (p->dtype != x->dtype)
      return loom_graph_icx_error(ic, "operand %zu has dtype %s, operand 0 has dtype %s", i,
                                  loom_dtype_name(p->dtype), loom_dtype_name(x->dtype));
    LOOM_PROPAGATE(loom_graph_icx_same_dim(ic, i, 0, p->dims[0], 0, x->ndim - 1, x->dims[x->ndim - 1]));
  }
  *out = x;
  return LOOM_OK;
}

static loom_status eval_norm(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  const loom_graph_tensor *x = &args[0].t, *g = &args[1].t;
  bool ln = ec->call->u.call.op == LOOM_GRAPH_OP_LAYER_NORM;
  const loom_graph_tensor *beta = ln ? &args[2].t : NULL;
  double eps = loom_graph_call_float(ec->call, "eps");
  size_t len = (size_t)x->shape[x->ndim - 1];
  for (size_t i = 1; i < ec->call->u.call.nargs; i++)
    if ((size_t)args[i].t.shape[0] != len)
      return LOOM_ERROR(INVALID_ARGUMENT, "%s: operand %zu axis 0 is %lld, operand 0 axis %d is %zu", ec->op, i,
                        (long long)args[i].t.shape[0], x->ndim - 1, len);
  LOOM_PROPAGATE(loom_graph_value_tensor(x->dtype, x->ndim, x->shape, out));
  size_t rows = len ? x->numel / len : 0;
  for (size_t r = 0; r < rows; r++) {
    double mean = 0, var = 0;
    for (size_t k = 0; k < len; k++) mean += loom_graph_tensor_get_f64(x, r * len + k);
    mean /= (double)len;
    for (size_t k = 0; k < len; k++) {
      double v = loom_graph_tensor_get_f64(x, r * len + k);
      var += ln ? (v - mean) * (v - mean) : v * v;
    }
    var /= (double)len;
    double inv = 1.0 / sqrt(var + eps);
    for (size_t k = 0; k < len; k++) {
      double v = loom_graph_tensor_get_f64(x, r * len + k);
      double y = ln ? (v - mean) * inv * loom_graph_tensor_get_f64(g, k) + loom_graph_tensor_get_f64(beta, k)
                    : v * inv * loom_graph_tensor_get_f64(g, k);
      loom_graph_tensor_set_f64(&out->t, r * len + k, y);
    }
  }
  return LOOM_OK;
}

/* ---- group_norm / batch_norm ------------------------------------------------------------ */

static const loom_graph_attr_spec group_attrs[] = {
    {"num_groups", LOOM_GRAPH_ATTR_INT, .required = true}, {"eps", LOOM_GRAPH_ATTR_FLOAT, .dflt = 1e-5}, {0}};

/* x: (N, C, ...); per-channel params of shape (C). */
static loom_status infer_channel_norm(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_sinfo *x, *p;
  LOOM_PROPAGATE(float_tensor(ic, 0, &x));
  if (x->ndim < 2) return loom_graph_icx_error(ic, "operand 0 must have rank >= 2 (N, C, ...)");
  for (size_t i = 1; i < ic->call->u.call.nargs; i++) {
    LOOM_PROPAGATE(float_tensor(ic, i, &p));
    if (p->ndim != 1) return loom_graph_icx_error(ic, "operand %zu must have rank 1, got %d", i, p->ndim);
    LOOM_PROPAGATE(loom_graph_icx_same_dim(ic, i, 0, p->dims[0], 0, 1, x->dims[1]));
  }
  if (ic->call->u.call.op == LOOM_GRAPH_OP_GROUP_NORM) {
    int64_t g = loom_graph_call_int(ic->call, "num_groups");
    if (g < 1) return loom_graph_icx_error(ic, "num_groups must be >= 1");
    loom_sym_truth t = loom_sym_prove_divisible(ic->cx, x->dims[1], g);
    if (t == LOOM_SYM_FALSE)
      return loom_graph_icx_error(ic, "operand 0 axis 1 is %s, not a multiple of num_groups %lld", loom_graph_sym_str(ic->m, x->dims[1]), (long long)g);
    if (t == LOOM_SYM_UNKNOWN) {
      char why[256];
      snprintf(why, sizeof why, "group_norm: operand 0 axis 1 is %s: must be a multiple of %lld", loom_graph_sym_str(ic->m, x->dims[1]), (long long)g);
      LOOM_PROPAGATE(loom_graph_icx_guard(ic, loom_sym_cmp(ic->cx, LOOM_SYM_EQ, loom_sym_floormod(ic->cx, x->dims[1], loom_sym_const(ic->cx, g)), loom_sym_const(ic->cx, 0)), why));
    }
  }
  *out = x;
  return LOOM_OK;
}

static loom_status eval_channel_norm(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  const loom_graph_tensor *x = &args[0].t, *g = &args[1].t, *b = &args[2].t;
  double eps = loom_graph_call_float(ec->call, "eps");
  size_t N = (size_t)x->shape[0], C = (size_t)x->shape[1], inner = 1;
  for (int i = 2; i < x->ndim; i++) inner *= (size_t)x->shape[i];
  for (size_t i = 1; i < ec->call->u.call.nargs; i++)
    if ((size_t)args[i].t.shape[0] != C)
      return LOOM_ERROR(INVALID_ARGUMENT, "%s: operand %zu axis 0 is %lld, operand 0 axis 1 is %zu", ec->op, i, (long long)args[i].t.shape[0], C);
  LOOM_PROPAGATE(loom_graph_value_tensor(x->dtype, x->ndim, x->shape, out));
  if (ec->call->u.call.op == LOOM_GRAPH_OP_BATCH_NORM) {
    const loom_graph_tensor *mean = &args[3].t, *var = &args[4].t;
    for (size_t n = 0; n < N; n++)
      for (size_t c = 0; c < C; c++)
        for (size_t i = 0; i < inner; i++) {
          size_t k = (n * C + c) * inner + i;
          double v = (loom_graph_tensor_get_f64(x, k) - loom_graph_tensor_get_f64(mean, c)) /
                     sqrt(loom_graph_tensor_get_f64(var, c) + eps);
          loom_graph_tensor_set_f64(&out->t, k, v * loom_graph_tensor_get_f64(g, c) + loom_graph_tensor_get_f64(b, c));
        }
    return LOOM_OK;
  }
  size_t G = (size_t)loom_graph_call_int(ec->call, "num_groups");
  if (C % G) return LOOM_ERROR(INVALID_ARGUMENT, "group_norm: %zu channels are not a multiple of %zu groups", C, G);
  size_t cg = C / G, len = cg * inner;
  for (size_t n = 0; n < N; n++)
    for (size_t gi = 0; gi < G; gi++) {
      size_t base = (n * C + gi * cg) * inner;
      double mean = 0, var = 0;
      for (size_t i = 0; i < len; i++) mean += loom_graph_tensor_get_f64(x, base + i);
      mean /= (double)(len ? len : 1);
      for (size_t i = 0; i < len; i++) {
        double d = loom_graph_tensor_get_f64(x, base + i) - mean;
        var += d * d;
      }
      var /= (double)(len ? len : 1);
      for (size_t i = 0; i < len; i++) {
        size_t c = gi * cg + i / inner;
        double v = (loom_graph_tensor_get_f64(x, base + i) - mean) / sqrt(var + eps);
        loom_graph_tensor_set_f64(&out->t, base + i, v * loom_graph_tensor_get_f64(g, c) + loom_graph_tensor_get_f64(b, c));
      }
    }
  return LOOM_OK;
}

/* ---- attention -------------------------------------------------------------------------- */

/* empty_nan: a row whose softmax sum is not positive (every key masked, or a NaN score) gives
 * NaN, as softmax followed by matmul does (the `attention` pass writes it); default 0. */
static const loom_graph_attr_spec attn_attrs[] = {{"scale", LOOM_GRAPH_ATTR_FLOAT, .required = false},
                                                  {"causal", LOOM_GRAPH_ATTR_BOOL, .dflt = 0},
                                                  {"empty_nan", LOOM_GRAPH_ATTR_BOOL, .dflt = 0},
                                                  {"layout", LOOM_GRAPH_ATTR_STR, .dflt_str = "bhsd"},
                                                  {0}};

/* The axes of heads and sequence in q, k, v and the result: layout "bhsd" (batch, heads, seq,
 * dim), or "bshd" (batch, seq, heads, dim: the projections' rows split into heads, read and
 * written without a transposition). -1: another layout. */
static int attn_head_axis(const loom_graph_expr *call) {
  const char *l = loom_graph_call_str(call, "layout");
  return !strcmp(l, "bhsd") ? 1 : !strcmp(l, "bshd") ? 2 : -1;
}

/* q (b, h, s, d), k (b, hk, t, d), v (b, hk, t, dv) (layout bshd: q (b, s, h, d), k (b, t, hk,
 * d), v (b, t, hk, dv), the result (b, s, h, dv)), mask broadcastable to (b, h, s, t) in either
 * (bool: keep; float: added). h must be a multiple of hk (grouped-query attention). */
static loom_status infer_attention(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_sinfo *q, *k, *v;
  LOOM_PROPAGATE(float_tensor(ic, 0, &q));
  LOOM_PROPAGATE(float_tensor(ic, 1, &k));
  LOOM_PROPAGATE(float_tensor(ic, 2, &v));
  int ha = attn_head_axis(ic->call), sa = 3 - ha;
  if (ha < 0) return loom_graph_icx_error(ic, "layout '%s' is not bhsd or bshd", loom_graph_call_str(ic->call, "layout"));
  for (size_t i = 0; i < 3; i++) {
    const loom_sinfo *t = loom_graph_icx_arg(ic, i);
    if (t->ndim != 4)
      return loom_graph_icx_error(ic, "operand %zu must have rank 4 (%s), got %d", i,
                                  ha == 1 ? "batch, heads, seq, dim" : "batch, seq, heads, dim", t->ndim);
    if (t->dtype != q->dtype) return loom_graph_icx_error(ic, "operand %zu has dtype %s, operand 0 has %s", i, loom_dtype_name(t->dtype), loom_dtype_name(q->dtype));
  }
  LOOM_PROPAGATE(loom_graph_icx_same_dim(ic, 1, 0, k->dims[0], 0, 0, q->dims[0]));
  LOOM_PROPAGATE(loom_graph_icx_same_dim(ic, 2, 0, v->dims[0], 0, 0, q->dims[0]));
  LOOM_PROPAGATE(loom_graph_icx_same_dim(ic, 1, 3, k->dims[3], 0, 3, q->dims[3]));
  LOOM_PROPAGATE(loom_graph_icx_same_dim(ic, 2, ha, v->dims[ha], 1, ha, k->dims[ha]));
  LOOM_PROPAGATE(loom_graph_icx_same_dim(ic, 2, sa, v->dims[sa], 1, sa, k->dims[sa]));
  loom_sym_ctx *cx = ic->cx;
  if (q->dims[ha] != k->dims[ha]) {
    const loom_sym_expr *r = loom_sym_floormod(cx, q->dims[ha], k->dims[ha]);
    loom_sym_truth t = loom_sym_prove_eq(cx, r, loom_sym_const(cx, 0));
    if (t == LOOM_SYM_FALSE)
      return loom_graph_icx_error(ic, "operand 0 axis %d is %s heads, not a multiple of operand 1 axis %d (%s)", ha,
                                  loom_graph_sym_str(ic->m, q->dims[ha]), ha, loom_graph_sym_str(ic->m, k->dims[ha]));
    if (t == LOOM_SYM_UNKNOWN) {
      char why[256];
      snprintf(why, sizeof why, "attention: %s query heads must be a multiple of %s key/value heads", loom_graph_sym_str(ic->m, q->dims[ha]), loom_graph_sym_str(ic->m, k->dims[ha]));
      LOOM_PROPAGATE(loom_graph_icx_guard(ic, loom_sym_cmp(cx, LOOM_SYM_EQ, r, loom_sym_const(cx, 0)), why));
    }
  }
  if (ic->call->u.call.nargs == 4) {
    const loom_sinfo *mk;
    LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 3, true, &mk));
    if (mk->ndim > 4) return loom_graph_icx_error(ic, "operand 3 (mask) has rank %d, above 4", mk->ndim);
    if (mk->dtype != LOOM_DTYPE_BOOL && mk->dtype != q->dtype)
      return loom_graph_icx_error(ic, "operand 3 (mask) must be bool or %s", loom_dtype_name(q->dtype));
    const loom_sym_expr *full[4] = {q->dims[0], q->dims[ha], q->dims[sa], k->dims[sa]}, *tmp[4];
    LOOM_PROPAGATE(loom_graph_icx_broadcast(ic, 0, 4, full, 3, mk->ndim, mk->dims, tmp));
    for (int i = 0; i < 4; i++)
      if (tmp[i] != full[i]) LOOM_PROPAGATE(loom_graph_icx_same_dim(ic, 3, i - (4 - mk->ndim), tmp[i], 0, i, full[i]));
  }
  const loom_sym_expr *d[4] = {q->dims[0], q->dims[1], q->dims[2], v->dims[3]};
  *out = loom_sinfo_tensor(ic->m, q->dtype, 4, d, q->device);
  return LOOM_OK;
}

/* The flat offset of (batch b, head h, row i, column e) in a tensor of `nh` heads, `n` rows and
 * `w` columns per head, in layout bhsd (bshd: rows before heads). */
static size_t attn_at(bool bshd, int64_t b, int64_t h, int64_t i, int64_t e, int64_t nh, int64_t n, int64_t w) {
  return (size_t)(bshd ? ((b * n + i) * nh + h) * w + e : ((b * nh + h) * n + i) * w + e);
}

static loom_status eval_attention(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  const loom_graph_tensor *q = &args[0].t, *k = &args[1].t, *v = &args[2].t;
  const loom_graph_tensor *mk = ec->call->u.call.nargs == 4 ? &args[3].t : NULL;
  int ha = attn_head_axis(ec->call), sa = 3 - ha;
  bool bshd = ha == 2;
  int64_t B = q->shape[0], H = q->shape[ha], S = q->shape[sa], D = q->shape[3];
  int64_t HK = k->shape[ha], T = k->shape[sa], DV = v->shape[3];
  if (k->shape[0] != B || v->shape[0] != B || k->shape[3] != D || v->shape[ha] != HK || v->shape[sa] != T || !HK || H % HK)
    return LOOM_ERROR(INVALID_ARGUMENT, "attention: incompatible q (%lld, %lld, %lld, %lld), k (%lld, %lld, %lld, %lld), v (.., %lld)",
                      (long long)q->shape[0], (long long)q->shape[1], (long long)q->shape[2], (long long)D, (long long)k->shape[0],
                      (long long)k->shape[1], (long long)k->shape[2], (long long)k->shape[3], (long long)DV);
  /* absent scale: 1 / sqrt(d), from the operands */
  double scale = loom_graph_call_attr(ec->call, "scale") ? loom_graph_call_float(ec->call, "scale") : 1.0 / sqrt((double)(D ? D : 1));
  bool causal = loom_graph_call_int(ec->call, "causal") != 0;
  double empty = loom_graph_call_int(ec->call, "empty_nan") ? NAN : 0.0;
  int64_t shape[4] = {B, bshd ? S : H, bshd ? H : S, DV};
  LOOM_PROPAGATE(loom_graph_value_tensor(q->dtype, 4, shape, out));
  double *p = calloc((size_t)(T ? T : 1), sizeof *p);
  double *qd = loom_graph_tensor_to_f64(q), *kd = loom_graph_tensor_to_f64(k), *vd = loom_graph_tensor_to_f64(v);
  if (!p || !qd || !kd || !vd) {
    free(p);
    free(qd);
    free(kd);
    free(vd);
    return LOOM_OOM();
  }
  for (int64_t b = 0; b < B; b++)
    for (int64_t h = 0; h < H; h++) {
      int64_t hk = h / (H / HK);
      for (int64_t i = 0; i < S; i++) {
        double mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < T; j++) {
          double sc = 0;
          for (int64_t d = 0; d < D; d++)
            sc += qd[attn_at(bshd, b, h, i, d, H, S, D)] * kd[attn_at(bshd, b, hk, j, d, HK, T, D)];
          sc *= scale;
          if (mk) {
            int64_t idx[4] = {b, h, i, j};
            double m = loom_graph_tensor_get_f64(mk, loom_graph_bcast_index(mk, 4, idx));
            if (mk->dtype == LOOM_DTYPE_BOOL) sc = m != 0 ? sc : -INFINITY;
            else sc += m;
          }
          if (causal && j > i + (T - S)) sc = -INFINITY;
          p[j] = sc;
          if (sc > mx) mx = sc;
        }
        for (int64_t j = 0; j < T; j++) sum += (p[j] = mx == -INFINITY ? 0 : exp(p[j] - mx));
        for (int64_t e = 0; e < DV; e++) {
          double acc = 0;
          for (int64_t j = 0; j < T; j++) acc += (sum > 0 ? p[j] / sum : 0) * vd[attn_at(bshd, b, hk, j, e, HK, T, DV)];
          loom_graph_tensor_set_f64(&out->t, attn_at(bshd, b, h, i, e, H, S, DV), sum > 0 ? acc : empty);
        }
      }
    }
  free(p);
  free(qd);
  free(kd);
  free(vd);
  return LOOM_OK;
}

/* ---- legalization (the records' legalize hooks; graph/legalize.h) ------------------------------ */

/* The largest constant head dim attention's program is specialised to (its (d, 32) f32 tiles
 * stay on the stack, under codegen's 64 KiB); a larger one stays a symbol. */
#define LOOM_ATTN_MAX_CONST_DIM 512

typedef struct softmax_params {
  loom_dtype t;
  int32_t rank, axis, log;
} softmax_params;
LOOM_TP_GEN_PARAMS(softmax_params, 4 * 4);

static loom_status gen_softmax(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const softmax_params *p = params;
  return loom_tp_gen_softmax(loom_graph_module_arena(m), loom_graph_module_sym(m), name, p->t, p->rank, p->axis, p->log, tp);
}

static loom_status legal_softmax(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                                 loom_graph_legal *r) {
  (void)out;
  bool log = call->u.call.op == LOOM_GRAPH_OP_LOG_SOFTMAX;
  const loom_sinfo *x;
  int axis;
  LOOM_PROPAGATE(loom_legal_axis_arg(call, &x, &axis));
  char name[256];
  snprintf(name, sizeof name, "%s_%s_r%d_a%d", log ? "log_softmax" : "softmax", loom_dtype_name(x->dtype), x->ndim, axis);
  softmax_params p = {.t = x->dtype, .rank = x->ndim, .axis = axis, .log = log};
  return LOOM_LEGAL_PROGRAM(m, name, gen_softmax, p, &r->tp);
}

typedef struct norm_params {
  double eps;
  loom_dtype t;
  int32_t rank, naxes, rms;
} norm_params;
LOOM_TP_GEN_PARAMS(norm_params, 8 + 4 * 4);

static loom_status gen_norm(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const norm_params *p = params;
  return loom_tp_gen_layer_norm(loom_graph_module_arena(m), loom_graph_module_sym(m), name, p->t, p->rank, p->naxes, p->eps,
                                p->rms, tp);
}

/* layer_norm, rms_norm */
static loom_status legal_norm(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                              loom_graph_legal *r) {
  (void)out;
  bool rms = call->u.call.op == LOOM_GRAPH_OP_RMS_NORM;
  const loom_sinfo *x, *gamma;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 1, &gamma));
  if (gamma->ndim != 1 || x->ndim < 1) return loom_legal_unsupported(call, "for a gamma that is not 1-d");
  double eps = loom_graph_call_float(call, "eps");
  char name[256];
  snprintf(name, sizeof name, "%s_%s_r%d_%016llx", rms ? "rms_norm" : "layer_norm", loom_dtype_name(x->dtype), x->ndim,
           (unsigned long long)loom_hash_bytes(&eps, sizeof eps));
  norm_params p = {.eps = eps, .t = x->dtype, .rank = x->ndim, .naxes = 1, .rms = rms};
  return LOOM_LEGAL_PROGRAM(m, name, gen_norm, p, &r->tp);
}

/* Operands 1 .. n-1 of a batch / group norm: 1-D parameters of x's dtype. */
static loom_status norm_params_of(const loom_graph_expr *call, size_t n, const loom_sinfo *x) {
  for (size_t i = 1; i < n; i++) {
    const loom_sinfo *p;
    LOOM_PROPAGATE(loom_legal_tensor_arg(call, i, &p));
    if (p->ndim != 1 || p->dtype != x->dtype) return loom_legal_unsupported(call, "for these parameters");
  }
  return LOOM_OK;
}

typedef struct batch_norm_params {
  double eps;
  loom_dtype t;
  int32_t rank;
} batch_norm_params;
LOOM_TP_GEN_PARAMS(batch_norm_params, 8 + 2 * 4);

static loom_status gen_batch_norm(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const batch_norm_params *p = params;
  return loom_tp_gen_batch_norm(loom_graph_module_arena(m), loom_graph_module_sym(m), name, p->t, p->rank, p->eps, tp);
}

static loom_status legal_batch_norm(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                                    loom_graph_legal *r) {
  (void)out;
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  LOOM_PROPAGATE(norm_params_of(call, 5, x));
  double eps = loom_graph_call_float(call, "eps");
  char name[128];
  snprintf(name, sizeof name, "batch_norm_%s_r%d_%016llx", loom_dtype_name(x->dtype), x->ndim,
           (unsigned long long)loom_hash_bytes(&eps, sizeof eps));
  batch_norm_params p = {.eps = eps, .t = x->dtype, .rank = x->ndim};
  return LOOM_LEGAL_PROGRAM(m, name, gen_batch_norm, p, &r->tp);
}

typedef struct group_norm_params {
  double eps;
  int64_t groups;
  loom_dtype t;
  int32_t rank;
} group_norm_params;
LOOM_TP_GEN_PARAMS(group_norm_params, 2 * 8 + 2 * 4);

static loom_status gen_group_norm(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const group_norm_params *p = params;
  return loom_tp_gen_group_norm(loom_graph_module_arena(m), loom_graph_module_sym(m), name, p->t, p->rank, p->groups, p->eps, tp);
}

static loom_status legal_group_norm(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                                    loom_graph_legal *r) {
  (void)out;
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  LOOM_PROPAGATE(norm_params_of(call, 3, x));
  double eps = loom_graph_call_float(call, "eps");
  int64_t groups = loom_graph_call_int(call, "num_groups");
  char name[128];
  snprintf(name, sizeof name, "group_norm_%s_r%d_g%lld_%016llx", loom_dtype_name(x->dtype), x->ndim, (long long)groups,
           (unsigned long long)loom_hash_bytes(&eps, sizeof eps));
  group_norm_params p = {.eps = eps, .groups = groups, .t = x->dtype, .rank = x->ndim};
  return LOOM_LEGAL_PROGRAM(m, name, gen_group_norm, p, &r->tp);
}

typedef struct attention_params {
  char scale_text[64];    /* the scale as a literal ("" without one: 1/sqrt(d)) */
  int32_t head_dim;       /* q's and k's last axis when a constant, else 0 (the program is sized to it) */
  int32_t value_dim;      /* v's last axis when a constant, else 0 */
  loom_dtype t, mask_t;
  int32_t causal, mask_rank;
  int32_t empty_nan;      /* rows without a positive softmax sum give NaN (else 0) */
  int32_t bshd;           /* q, k, v and the result in (batch, seq, heads, dim) */
  int32_t self_rows;      /* the keys' rows are the queries' (t == s as symbols): short row kernel */
  loom_tp_bcast modes[4]; /* the mask's axes against (b, h, s, t) */
  int32_t lanes;          /* f32 lanes of the target's vectors: the flash tile (loom_graph_module_vector_bytes) */
} attention_params;
LOOM_TP_GEN_PARAMS(attention_params, 64 + 14 * 4);

static loom_status gen_attention(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const attention_params *p = params;
  return loom_tp_gen_attention(loom_graph_module_arena(m), loom_graph_module_sym(m), name, p->t,
                               p->scale_text[0] ? p->scale_text : NULL, p->causal, p->mask_rank, p->modes, p->mask_t,
                               p->empty_nan, p->bshd, p->self_rows, p->head_dim, p->value_dim, p->lanes, tp);
}

static loom_status legal_attention(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                                   loom_graph_legal *r) {
  (void)out;
  const loom_sinfo *q, *k, *v, *mk = NULL;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &q));
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 1, &k));
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 2, &v));
  if (call->u.call.nargs > 3) LOOM_PROPAGATE(loom_legal_tensor_arg(call, 3, &mk));
  if (q->ndim != 4 || k->ndim != 4 || v->ndim != 4 || k->dtype != q->dtype || v->dtype != q->dtype)
    return loom_legal_unsupported(call, "for these operands");
  loom_sym_ctx *cx = loom_graph_module_sym(m);
  const loom_graph_attr *sc = loom_graph_call_attr(call, "scale");
  attention_params p = {.t = q->dtype, .mask_t = mk ? mk->dtype : LOOM_DTYPE_BOOL, .causal = loom_graph_call_int(call, "causal") != 0,
                        .mask_rank = mk ? mk->ndim : -1, .empty_nan = loom_graph_call_int(call, "empty_nan") != 0,
                        .bshd = attn_head_axis(call) == 2, .lanes = loom_graph_module_vector_bytes(m) / 4};
  int ha = p.bshd ? 2 : 1, sa = 3 - ha;
  /* self-attention without a cache (the same symbol for the rows of q and k): the row kernel
   * (s < 8) then sees fewer than 8 keys */
  p.self_rows = q->dims && k->dims && q->dims[sa] == k->dims[sa];
  /* constant head dims (every transformer's) size the flash kernel's tiles: stack buffers, loops
   * of known trip count; a program per head size */
  int64_t dq, dv;
  if (loom_sym_is_const(q->dims[3], &dq) && dq > 0 && dq <= LOOM_ATTN_MAX_CONST_DIM) p.head_dim = (int32_t)dq;
  if (loom_sym_is_const(v->dims[3], &dv) && dv > 0 && dv <= LOOM_ATTN_MAX_CONST_DIM) p.value_dim = (int32_t)dv;
  char key[64] = "";
  if (sc) loom_legal_literal(LOOM_DTYPE_F64, sc->kind == LOOM_GRAPH_ATTR_INT ? (double)sc->i : sc->f, p.scale_text, sizeof p.scale_text);
  if (mk) {
    const loom_sym_expr *full[4] = {q->dims[0], q->dims[ha], q->dims[sa], k->dims[sa]};
    loom_legal_bcast_modes(cx, mk, full, 4, p.modes, key, sizeof key);
  }
  char name[256];
  char dims[48] = "";
  if (p.head_dim || p.value_dim) snprintf(dims, sizeof dims, "_d%d_%d", (int)p.head_dim, (int)p.value_dim);
  char lanes[16] = ""; /* the AVX-512 tile unnamed */
  if (p.lanes != 16) snprintf(lanes, sizeof lanes, "_l%d", (int)p.lanes);
  snprintf(name, sizeof name, "attention_%s%s%s%s%s%s%s%s%s_%016llx", loom_dtype_name(q->dtype), p.causal ? "_causal" : "",
           p.empty_nan ? (p.bshd ? "_nan_bshd" : "_nan") : p.bshd ? "_bshd" : "", p.self_rows ? "_self" : "",
           mk ? "_mask_" : "", mk ? loom_dtype_name(mk->dtype) : "", key, dims, lanes,
           (unsigned long long)loom_hash_bytes(p.scale_text, strlen(p.scale_text)));
  return LOOM_LEGAL_PROGRAM(m, name, gen_attention, p, &r->tp);
}

/* ---- the records ------------------------------------------------------------------------------- */

const loom_graph_op_impl loom_graph_op_impl_softmax = {softmax_attrs, infer_softmax, eval_softmax, legal_softmax, NULL};
const loom_graph_op_impl loom_graph_op_impl_log_softmax = {softmax_attrs, infer_softmax, eval_softmax, legal_softmax, NULL};
const loom_graph_op_impl loom_graph_op_impl_layer_norm = {norm_attrs, infer_norm, eval_norm, legal_norm, NULL};
const loom_graph_op_impl loom_graph_op_impl_rms_norm = {norm_attrs, infer_norm, eval_norm, legal_norm, NULL};
const loom_graph_op_impl loom_graph_op_impl_group_norm = {group_attrs, infer_channel_norm, eval_channel_norm, legal_group_norm, NULL};
const loom_graph_op_impl loom_graph_op_impl_batch_norm = {norm_attrs, infer_channel_norm, eval_channel_norm, legal_batch_norm, NULL};
const loom_graph_op_impl loom_graph_op_impl_attention = {attn_attrs, infer_attention, eval_attention, legal_attention, NULL};
