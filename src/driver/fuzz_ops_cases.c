/* fuzz_ops_cases.c — fuzz-ops case generators, part 1: elementwise (unary, binary with
 * broadcasting, where, clip, cast, bitcast), reductions, normalisations, softmax, attention,
 * matmul / linear, convolution, pooling. Each generator draws every attribute over the op's
 * valid space and every shape from fz_size (0, 1, primes, 6/8/16/32 +- 1); the case runs
 * in fuzz_ops.c. Part 2 (fuzz_ops_cases2.c) holds the rest and the family table. */
#include <math.h>
#include <string.h>

#include "base/lowp.h"
#include "driver/fuzz_ops_cases.h"

/* A float dtype (mostly f32); half types get a tolerance of their precision. */
loom_dtype fz_float_dtype(fz_gen *g, fz_case *c, bool halves) {
  int k = fz_int(g, 0, 9);
  if (k >= 7 && k <= 8) return LOOM_DTYPE_F64;
  if (k == 9 && halves) {
    c->rtol = 1e-2, c->atol = 1e-2;
    return fz_flag(g, 50) ? LOOM_DTYPE_BF16 : LOOM_DTYPE_F16;
  }
  return LOOM_DTYPE_F32;
}

loom_dtype fz_int_dtype(fz_gen *g, bool unsigned_too) {
  static const loom_dtype s[] = {LOOM_DTYPE_I32, LOOM_DTYPE_I64, LOOM_DTYPE_I8, LOOM_DTYPE_I16,
                                 LOOM_DTYPE_U8, LOOM_DTYPE_U32, LOOM_DTYPE_U16, LOOM_DTYPE_U64};
  return s[fz_pick(g, unsigned_too ? 8 : 4)];
}

/* The largest size of one axis of a rank-r tensor (keeps cases small). */
int64_t fz_axis_cap(int rank) {
  static const int64_t cap[] = {1, 300, 70, 33, 17, 9, 6};
  return cap[rank < 7 ? rank : 6];
}

/* Random dims named <prefix>0.. of sizes in [lo, cap(rank)]. */
void fz_shape(fz_gen *g, const char *prefix, int rank, int64_t lo, fz_dim *out) {
  for (int i = 0; i < rank; i++) {
    char n[16];
    snprintf(n, sizeof n, "%s%d", prefix, i);
    out[i] = fz_sym(g, n, fz_size(g, lo, fz_axis_cap(rank)));
  }
}

/* ---- elementwise ---------------------------------------------------------------------------- */

bool fz_gen_unary(fz_gen *g, fz_case *c) {
  static const char *const fops[] = {"neg", "abs", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "gelu", "gelu_tanh",
                                     "silu", "erf", "sin", "cos", "floor", "ceil", "round", "sign", "asin", "acos", "atan"};
  static const char *const iops[] = {"neg", "abs", "sign", "bitwise_not", "relu"};
  int rank = (int)fz_int(g, 0, 4);
  fz_dim d[FZ_MAX_RANK];
  fz_shape(g, "d", rank, 0, d);
  int kind = fz_pick(g, 6); /* 0-3 float, 4 integer, 5 bool */
  if (kind < 4) {
    c->op = fops[fz_pick(g, 22)];
    fz_param *x = fz_param_add(c, "x", fz_float_dtype(g, c, true), rank, d);
    const char *o = c->op;
    if (!strcmp(o, "log") || !strcmp(o, "sqrt") || !strcmp(o, "rsqrt")) x->lo = fz_flag(g, 30) ? -1 : 0, x->hi = 4;
    else if (!strcmp(o, "asin") || !strcmp(o, "acos")) x->lo = -1.25, x->hi = 1.25;
    else x->lo = -fz_real(g, 1, 12), x->hi = -x->lo;
  } else if (kind == 4) {
    c->op = iops[fz_pick(g, 5)];
    fz_param_add(c, "x", fz_int_dtype(g, strcmp(c->op, "neg") && strcmp(c->op, "abs")), rank, d);
  } else {
    c->op = "not";
    fz_param_add(c, "x", LOOM_DTYPE_BOOL, rank, d);
  }
  fz_call(c, "%s(x)", c->op);
  return true;
}

/* Shapes of n operands broadcast together: per output axis, each operand has the axis as the
 * shared symbol, a literal 1, its own symbol (1 or the size: a run-time guard), or (leading
 * axes) not at all. */
void fz_broadcast(fz_gen *g, int n, int rank, fz_dim out[][FZ_MAX_RANK], int *ranks) {
  for (int k = 0; k < n; k++) ranks[k] = rank - (fz_flag(g, 25) ? (int)fz_int(g, 0, rank) : 0);
  for (int a = 0; a < rank; a++) {
    char s[16];
    snprintf(s, sizeof s, "d%d", a);
    int64_t v = fz_size(g, 0, fz_axis_cap(rank));
    for (int k = 0; k < n; k++) {
      int ax = a - (rank - ranks[k]);
      if (ax < 0) continue;
      int mode = fz_pick(g, 4);
      if (mode <= 1) out[k][ax] = fz_sym(g, s, v);
      else if (mode == 2) out[k][ax] = fz_lit(1);
      else {
        char own[16];
        snprintf(own, sizeof own, "%c%d", 'p' + k, a);
        out[k][ax] = fz_sym(g, own, fz_flag(g, 50) ? 1 : v);
      }
    }
  }
}

bool fz_gen_binary(fz_gen *g, fz_case *c) {
  static const char *const arith[] = {"add", "sub", "mul", "div", "pow", "mod", "maximum", "minimum"};
  static const char *const cmp[] = {"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"};
  static const char *const logic[] = {"logical_and", "logical_or", "logical_xor"};
  static const char *const bits[] = {"bitwise_and", "bitwise_or", "bitwise_xor", "shift_left", "shift_right"};
  int rank = (int)fz_int(g, 0, 4), ranks[2];
  fz_dim d[2][FZ_MAX_RANK];
  fz_broadcast(g, 2, rank, d, ranks);
  int kind = fz_pick(g, 4);
  loom_dtype dt;
  if (kind == 0) {
    c->op = arith[fz_pick(g, 8)];
    dt = fz_flag(g, 35) ? fz_int_dtype(g, true) : fz_float_dtype(g, c, true);
  } else if (kind == 1) {
    c->op = cmp[fz_pick(g, 6)];
    dt = fz_flag(g, 40) ? fz_int_dtype(g, true) : fz_float_dtype(g, c, true);
  } else if (kind == 2) {
    c->op = logic[fz_pick(g, 3)];
    dt = LOOM_DTYPE_BOOL;
  } else {
    c->op = bits[fz_pick(g, 5)];
    dt = fz_int_dtype(g, true);
  }
  const char *o = c->op;
  if (!strcmp(o, "pow") && loom_dtype_is_float(dt) && fz_flag(g, 40)) {
    /* a constant exponent: legalization's multiply / square-root forms, at pow's special
     * points (-0, +-inf, NaN, negative bases) half the time */
    static const double ex[] = {1, 2, 3, 4, -1, -2, 0.5, -0.5, 1.5, 2.5};
    static const double special[] = {-INFINITY, INFINITY, -0.0, 0.0, NAN, -1.5, 0.3, 2.25, 7.0, 1e-3, -4.0, 1.0};
    double e = ex[fz_pick(g, (int)(sizeof ex / sizeof *ex))];
    fz_param *a = fz_param_add(c, "a", dt, ranks[0], d[0]);
    if (fz_flag(g, 50)) {
      a->fill = FZ_FILL_VALUES;
      a->nvals = (int)(sizeof special / sizeof *special);
      memcpy(a->vals, special, sizeof special);
    } else {
      a->lo = fz_flag(g, 30) ? -2 : 0, a->hi = 3;
    }
    fz_call(c, "pow(a, const(%g, %s))", e, loom_dtype_name(dt));
    return true;
  }
  fz_param *a = fz_param_add(c, "a", dt, ranks[0], d[0]), *b = fz_param_add(c, "b", dt, ranks[1], d[1]);
  bool isint = loom_dtype_is_int(dt), sig = loom_dtype_is_signed(dt);
  if (!strcmp(o, "pow")) {
    if (isint) a->lo = sig ? -3 : 0, a->hi = 3, b->lo = 0, b->hi = 3;
    else a->lo = fz_flag(g, 30) ? -2 : 0, a->hi = 3, b->lo = -2, b->hi = 2;
  } else if ((!strcmp(o, "div") || !strcmp(o, "mod")) && isint) {
    static const double sv[] = {-3, 1, 2, -1, 5, 7, -2, 3}, uv[] = {1, 2, 3, 5, 7, 4};
    b->fill = FZ_FILL_VALUES;
    b->nvals = sig ? 8 : 6;
    memcpy(b->vals, sig ? sv : uv, sizeof(double) * (size_t)b->nvals);
    a->lo = sig ? -20 : 0, a->hi = 20;
  } else if (!strncmp(o, "shift", 5)) {
    a->lo = sig ? -100 : 0, a->hi = 100;
    b->lo = 0, b->hi = fz_flag(g, 20) ? (double)loom_dtype_bits(dt) + 2 : (double)loom_dtype_bits(dt) - 1;
  } else if (isint && (!strcmp(o, "mul") || !strcmp(o, "add") || !strcmp(o, "sub"))) {
    a->lo = sig ? -60 : 0, a->hi = 60, b->lo = a->lo, b->hi = 60;
  }
  fz_call(c, "%s(a, b)", o);
  return true;
}

bool fz_gen_where(fz_gen *g, fz_case *c) {
  int rank = (int)fz_int(g, 0, 4), ranks[3];
  fz_dim d[3][FZ_MAX_RANK];
  fz_broadcast(g, 3, rank, d, ranks);
  c->op = "where";
  fz_param_add(c, "c", LOOM_DTYPE_BOOL, ranks[0], d[0]);
  loom_dtype dt = fz_flag(g, 30) ? fz_int_dtype(g, true) : fz_float_dtype(g, c, true);
  fz_param_add(c, "a", dt, ranks[1], d[1]);
  fz_param_add(c, "b", dt, ranks[2], d[2]);
  fz_call(c, "where(c, a, b)");
  return true;
}

bool fz_gen_clip(fz_gen *g, fz_case *c) {
  int rank = (int)fz_int(g, 0, 4);
  fz_dim d[FZ_MAX_RANK];
  fz_shape(g, "d", rank, 0, d);
  c->op = "clip";
  fz_param *x = fz_param_add(c, "x", fz_float_dtype(g, c, true), rank, d);
  x->lo = -3, x->hi = 3;
  char attrs[128] = "";
  if (fz_flag(g, 80)) fz_cat(attrs, sizeof attrs, ", min=%g", fz_real(g, -3, 3));
  if (fz_flag(g, 80)) fz_cat(attrs, sizeof attrs, ", max=%g", fz_real(g, -3, 3));
  fz_call(c, "clip(x%s)", attrs);
  return true;
}

/* cast between every pair of the dtypes below (the low-precision floats as targets only, e8m0
 * also as a source); to a float8 format, saturate=false in half the cases with inputs past its
 * overflow bound; to e8m0 each round_mode, either saturate, and in half the cases inputs of
 * random bits (subnormals, inf, NaN, both ends of the exponent range). */
bool fz_gen_cast(fz_gen *g, fz_case *c) {
  static const loom_dtype all[] = {LOOM_DTYPE_F32, LOOM_DTYPE_I32, LOOM_DTYPE_F64, LOOM_DTYPE_I64, LOOM_DTYPE_F16, LOOM_DTYPE_BF16,
                                   LOOM_DTYPE_I8,  LOOM_DTYPE_U8,  LOOM_DTYPE_I16, LOOM_DTYPE_U16, LOOM_DTYPE_U32, LOOM_DTYPE_U64,
                                   LOOM_DTYPE_BOOL, LOOM_DTYPE_F8E8M0, LOOM_DTYPE_F8E4M3FN, LOOM_DTYPE_F8E5M2, LOOM_DTYPE_I4,
                                   LOOM_DTYPE_U4, LOOM_DTYPE_F8E4M3FNUZ, LOOM_DTYPE_F8E5M2FNUZ};
  static const char *const modes[] = {"up", "down", "nearest"};
  int rank = (int)fz_int(g, 0, 4);
  fz_dim d[FZ_MAX_RANK];
  fz_shape(g, "d", rank, 0, d);
  c->op = "cast";
  loom_dtype from = all[fz_pick(g, 14)], to = all[fz_pick(g, 20)];
  fz_param *x = fz_param_add(c, "x", from, rank, d);
  char attrs[96] = "";
  const loom_lowp_format *f = loom_lowp_format_of(to);
  bool nosat = (f || to == LOOM_DTYPE_F8E8M0) && fz_flag(g, 50);
  if (nosat) fz_cat(attrs, sizeof attrs, ", saturate=false");
  if (to == LOOM_DTYPE_F8E8M0 && fz_flag(g, 70)) fz_cat(attrs, sizeof attrs, ", round_mode=\"%s\"", modes[fz_pick(g, 3)]);
  if (loom_dtype_is_float(from) && from != LOOM_DTYPE_F8E8M0) {
    bool to_unsigned = to == LOOM_DTYPE_BOOL || (loom_dtype_is_int(to) && !loom_dtype_is_signed(to));
    double mag = to == LOOM_DTYPE_I4 || to == LOOM_DTYPE_U4 ? 7 : loom_dtype_bits(to) <= 8 ? 100 : 1000;
    if (f || to == LOOM_DTYPE_F16 || to == LOOM_DTYPE_BF16) mag = 300;
    if (nosat && f) { /* across the overflow bound (f16 holds up to 65504) */
      bool incl;
      mag = 1.25 * loom_lowp_overflow_bound(f, &incl);
      if (from == LOOM_DTYPE_F16 && mag > 65504) mag = 65504;
    }
    x->lo = to_unsigned ? 0 : -mag, x->hi = mag;
    if (to == LOOM_DTYPE_F8E8M0 && from != LOOM_DTYPE_F64 && fz_flag(g, 50)) x->fill = FZ_FILL_BITS;
  } else if (loom_dtype_is_int(from)) {
    x->lo = loom_dtype_is_signed(from) ? -100 : 0, x->hi = 200;
    if (loom_dtype_bits(from) == 8) x->hi = loom_dtype_is_signed(from) ? 127 : 255;
  } else if (from == LOOM_DTYPE_F8E8M0) {
    x->fill = FZ_FILL_BITS; /* every code, NaN (0xff) included */
  }
  if (loom_dtype_is_float(to) && loom_dtype_bits(to) < 32) c->rtol = 1e-2, c->atol = 1e-3;
  fz_call(c, "cast(x, dtype=%s%s)", loom_dtype_name(to), attrs);
  return true;
}

bool fz_gen_bitcast(fz_gen *g, fz_case *c) {
  static const loom_dtype pairs[][2] = {{LOOM_DTYPE_F32, LOOM_DTYPE_I32}, {LOOM_DTYPE_I32, LOOM_DTYPE_F32}, {LOOM_DTYPE_U32, LOOM_DTYPE_I32},
                                        {LOOM_DTYPE_F64, LOOM_DTYPE_I64}, {LOOM_DTYPE_I64, LOOM_DTYPE_F64}, {LOOM_DTYPE_U8, LOOM_DTYPE_I8},
                                        {LOOM_DTYPE_I8, LOOM_DTYPE_U8},   {LOOM_DTYPE_F16, LOOM_DTYPE_I16}, {LOOM_DTYPE_BOOL, LOOM_DTYPE_U8}};
  int rank = (int)fz_int(g, 0, 3);
  fz_dim d[FZ_MAX_RANK];
  fz_shape(g, "d", rank, 0, d);
  int k = fz_pick(g, 9);
  c->op = "bitcast";
  fz_param *x = fz_param_add(c, "x", pairs[k][0], rank, d);
  if (pairs[k][0] != LOOM_DTYPE_BOOL) x->fill = FZ_FILL_BITS;
  c->rtol = 0, c->atol = 0;
  fz_call(c, "bitcast(x, dtype=%s)", loom_dtype_name(pairs[k][1]));
  return true;
}

bool fz_gen_dropout(fz_gen *g, fz_case *c) {
  int rank = (int)fz_int(g, 0, 3);
  fz_dim d[FZ_MAX_RANK];
  fz_shape(g, "d", rank, 0, d);
  c->op = "dropout";
  fz_param_add(c, "x", fz_float_dtype(g, c, true), rank, d);
  fz_call(c, "dropout(x, rate=%g)", fz_real(g, 0, 0.875));
  return true;
}

/* ---- reductions ----------------------------------------------------------------------------- */

bool fz_gen_reduce(fz_gen *g, fz_case *c) {
  static const char *const ops[] = {"sum", "mean", "max", "min", "prod"};
  int rank = (int)fz_int(g, 1, 4);
  fz_dim d[FZ_MAX_RANK];
  fz_shape(g, "d", rank, 0, d);
  c->op = ops[fz_pick(g, 5)];
  loom_dtype dt = fz_flag(g, 30) && strcmp(c->op, "mean") ? fz_int_dtype(g, true) : fz_float_dtype(g, c, false);
  fz_param *x = fz_param_add(c, "x", dt, rank, d);
  if (!strcmp(c->op, "prod")) {
    if (loom_dtype_is_int(dt)) x->lo = loom_dtype_is_signed(dt) ? -1 : 0, x->hi = 1;
    else x->lo = 0.5, x->hi = 1.5;
  }
  char attrs[160] = "";
  int64_t axes[FZ_MAX_RANK], n = 0, count = 1;
  if (fz_flag(g, 80)) {
    for (int a = 0; a < rank; a++)
      if (fz_flag(g, 50)) axes[n++] = fz_flag(g, 30) ? a - rank : a;
    if (!n) axes[n++] = fz_int(g, 0, rank - 1);
    for (int k = 0; k < n; k++) count *= d[axes[k] < 0 ? axes[k] + rank : axes[k]].v;
    fz_attr_list(attrs, sizeof attrs, "axes", (int)n, axes);
  } else {
    for (int a = 0; a < rank; a++) count *= d[a].v;
  }
  if (fz_flag(g, 50)) fz_cat(attrs, sizeof attrs, ", keepdims=%s", fz_flag(g, 50) ? "true" : "false");
  c->atol += 2e-6 * (double)count;
  if (!strcmp(c->op, "prod")) c->rtol = 1e-4;
  fz_call(c, "%s(x%s)", c->op, attrs);
  return true;
}

bool fz_gen_argminmax(fz_gen *g, fz_case *c) {
  int rank = (int)fz_int(g, 1, 4);
  fz_dim d[FZ_MAX_RANK];
  fz_shape(g, "d", rank, 1, d);
  c->op = fz_flag(g, 50) ? "argmin" : "argmax";
  fz_param_add(c, "x", fz_flag(g, 30) ? fz_int_dtype(g, true) : fz_float_dtype(g, c, true), rank, d);
  char attrs[96] = "";
  if (fz_flag(g, 80)) fz_cat(attrs, sizeof attrs, ", axis=%lld", (long long)fz_int(g, -rank, rank - 1));
  if (fz_flag(g, 50)) fz_cat(attrs, sizeof attrs, ", keepdims=%s", fz_flag(g, 50) ? "true" : "false");
  fz_call(c, "%s(x%s)", c->op, attrs);
  return true;
}

bool fz_gen_softmax(fz_gen *g, fz_case *c) {
  int rank = (int)fz_int(g, 1, 4);
  fz_dim d[FZ_MAX_RANK];
  fz_shape(g, "d", rank, 0, d);
  c->op = fz_flag(g, 50) ? "log_softmax" : "softmax";
  c->rtol = 1e-5, c->atol = 1e-5; /* before the dtype: f16 / bf16 widen it */
  fz_param *x = fz_param_add(c, "x", fz_float_dtype(g, c, true), rank, d);
  x->lo = -fz_real(g, 1, 20), x->hi = -x->lo;
  char attrs[64] = "";
  if (fz_flag(g, 70)) fz_cat(attrs, sizeof attrs, ", axis=%lld", (long long)fz_int(g, -rank, rank - 1));
  fz_call(c, "%s(x%s)", c->op, attrs);
  return true;
}

bool fz_gen_norm(fz_gen *g, fz_case *c) {
  int kind = fz_pick(g, 4);
  static const char *const eps[] = {"", ", eps=0.00001", ", eps=0.001", ", eps=0.5"};
  const char *e = eps[fz_pick(g, 4)];
  loom_dtype dt = fz_float_dtype(g, c, false);
  c->rtol = 1e-4, c->atol = 1e-4;
  fz_dim d[FZ_MAX_RANK];
  if (kind <= 1) { /* layer_norm, rms_norm over the last axis */
    int rank = (int)fz_int(g, 1, 4);
    fz_shape(g, "d", rank, 0, d);
    fz_param_add(c, "x", dt, rank, d);
    fz_param *gm = fz_param_add(c, "g", dt, 1, &d[rank - 1]);
    gm->lo = -2, gm->hi = 2;
    if (kind == 0) {
      c->op = "layer_norm";
      fz_param_add(c, "b", dt, 1, &d[rank - 1]);
      fz_call(c, "layer_norm(x, g, b%s)", e);
    } else {
      c->op = "rms_norm";
      fz_call(c, "rms_norm(x, g%s)", e);
    }
    return true;
  }
  int rank = (int)fz_int(g, 2, 4);
  fz_shape(g, "d", rank, 0, d);
  if (kind == 2) {
    c->op = "group_norm";
    int64_t groups = fz_int(g, 1, 4), per = fz_size(g, 1, 6);
    d[1] = fz_expr(g, groups * per, "%lld*cg", (long long)groups);
    fz_param_add(c, "x", dt, rank, d);
    fz_param_add(c, "g", dt, 1, &d[1]);
    fz_param_add(c, "b", dt, 1, &d[1]);
    fz_call(c, "group_norm(x, g, b, num_groups=%lld%s)", (long long)groups, e);
    return true;
  }
  c->op = "batch_norm";
  fz_param_add(c, "x", dt, rank, d);
  fz_param_add(c, "g", dt, 1, &d[1]);
  fz_param_add(c, "b", dt, 1, &d[1]);
  fz_param_add(c, "m", dt, 1, &d[1]);
  fz_param *v = fz_param_add(c, "v", dt, 1, &d[1]);
  v->lo = 0.1, v->hi = 2;
  fz_call(c, "batch_norm(x, g, b, m, v%s)", e);
  return true;
}

/* attention: grouped-query heads (1-3 K/V heads, 1-3 queries each), queries and keys from 0 to
 * 70 (the row kernel below 8 queries, flash tiles of 32 with tails), head dims static or
 * symbolic, a mask along queries and keys (packed by the flash kernel) or along the keys only
 * (read in its lanes), bool or additive, causal, a scale, empty_nan (rows with no key NaN), the
 * bshd layout. */
bool fz_gen_attention(fz_gen *g, fz_case *c) {
  c->op = "attention";
  int64_t b = fz_size(g, 1, 3), hk = fz_int(g, 1, 3), rep = fz_int(g, 1, 3), s = fz_size(g, 0, 70), t = fz_size(g, 0, 70),
          dd = fz_size(g, 1, 33), dv = fz_flag(g, 30) ? fz_size(g, 1, 17) : dd;
  loom_dtype dt = fz_float_dtype(g, c, false);
  bool bshd = fz_flag(g, 30); /* (batch, seq, heads, dim) */
  int ha = bshd ? 2 : 1, sa = 3 - ha;
  fz_dim q[4] = {fz_sym(g, "b", b), {0}, {0}, fz_sym(g, "d", dd)}, k[4] = {fz_sym(g, "b", b), {0}, {0}, fz_sym(g, "d", dd)},
         v[4] = {fz_sym(g, "b", b), {0}, {0}, fz_sym(g, "dv", dv)};
  q[ha] = fz_expr(g, hk * rep, "%lld*hk", (long long)rep), q[sa] = fz_sym(g, "s", s);
  k[ha] = fz_sym(g, "hk", hk), k[sa] = fz_sym(g, "t", t);
  v[ha] = fz_sym(g, "hk", hk), v[sa] = fz_sym(g, "t", t);
  fz_param_add(c, "q", dt, 4, q);
  fz_param_add(c, "k", dt, 4, k);
  fz_param_add(c, "v", dt, 4, v);
  char attrs[128] = "", mask[8] = "";
  if (fz_flag(g, 40)) {
    bool keys_only = fz_flag(g, 40), bmask = fz_flag(g, 50);
    fz_dim m2[2] = {fz_sym(g, "s", s), fz_sym(g, "t", t)};
    fz_dim m4[4] = {fz_sym(g, "b", b), fz_lit(1), fz_lit(1), fz_sym(g, "t", t)};
    fz_param *mp = fz_param_add(c, "m", bmask ? LOOM_DTYPE_BOOL : dt, keys_only ? 4 : 2, keys_only ? m4 : m2);
    if (!bmask) mp->lo = -4, mp->hi = 0;
    snprintf(mask, sizeof mask, ", m");
  }
  if (fz_flag(g, 40)) fz_cat(attrs, sizeof attrs, ", causal=true");
  if (fz_flag(g, 30)) fz_cat(attrs, sizeof attrs, ", scale=%g", fz_real(g, 0.125, 2));
  if (fz_flag(g, 30)) fz_cat(attrs, sizeof attrs, ", empty_nan=true");
  if (bshd) fz_cat(attrs, sizeof attrs, ", layout=\"bshd\"");
  c->rtol = 1e-4, c->atol = 1e-5 * (double)(dd + t);
  fz_call(c, "attention(q, k, v%s%s)", mask, attrs);
  return true;
}

/* ---- matmul, linear ------------------------------------------------------------------------- */

bool fz_gen_matmul(fz_gen *g, fz_case *c) {
  c->op = "matmul";
  int ra = (int)fz_int(g, 1, 4), rb = (int)fz_int(g, 1, 4);
  int64_t m = fz_size(g, 0, 70), k = fz_size(g, 0, 70), n = fz_size(g, 0, 70);
  int nb = (ra > rb ? ra : rb) - 2, ranks[2] = {0, 0};
  fz_dim bd[2][FZ_MAX_RANK];
  if (nb > 0) fz_broadcast(g, 2, nb, bd, ranks);
  fz_dim a[FZ_MAX_RANK], b[FZ_MAX_RANK];
  int na = 0, nbb = 0;
  for (int i = 0; ra > 2 && i < ranks[0] && na < ra - 2; i++) a[na++] = bd[0][i + (ranks[0] - (ra - 2) > 0 ? ranks[0] - (ra - 2) : 0)];
  for (int i = 0; rb > 2 && i < ranks[1] && nbb < rb - 2; i++) b[nbb++] = bd[1][i + (ranks[1] - (rb - 2) > 0 ? ranks[1] - (rb - 2) : 0)];
  loom_dtype dt = fz_flag(g, 15) ? (fz_flag(g, 50) ? LOOM_DTYPE_I32 : LOOM_DTYPE_I64) : fz_float_dtype(g, c, false);
  /* half the f32 cases with a 2-D b take it as a module constant: what `pack` lays out in
   * panels, n not a multiple of the panel too (the last panel padded; graph/pass_pack.c) */
  bool cnst = dt == LOOM_DTYPE_F32 && rb == 2 && fz_flag(g, 50);
  if (ra >= 2) a[na++] = fz_sym(g, "m", m);
  a[na++] = cnst ? fz_lit(k) : fz_sym(g, "k", k);
  bool tb = rb >= 2 && fz_flag(g, 30); /* B read transposed: (.., n, k) */
  if (tb) b[nbb++] = cnst ? fz_lit(n) : fz_sym(g, "n", n);
  b[nbb++] = cnst ? fz_lit(k) : fz_sym(g, "k", k);
  if (rb >= 2 && !tb) b[nbb++] = cnst ? fz_lit(n) : fz_sym(g, "n", n);
  fz_param_add(c, "a", dt, na, a);
  fz_param_add(c, "b", dt, nbb, b)->constant = cnst;
  c->atol = 1e-6 * (double)(k + 4);
  fz_call(c, cnst ? (tb ? "matmul(a, @b, transpose_b=true)" : "matmul(a, @b)") : tb ? "matmul(a, b, transpose_b=true)" : "matmul(a, b)");
  return true;
}

bool fz_gen_linear(fz_gen *g, fz_case *c) {
  c->op = "linear";
  int rank = (int)fz_int(g, 1, 4);
  fz_dim x[FZ_MAX_RANK];
  fz_shape(g, "d", rank - 1, 0, x);
  int64_t in = fz_size(g, 0, 70), out = fz_size(g, 0, 70);
  x[rank - 1] = fz_sym(g, "k", in);
  fz_dim w[2] = {fz_sym(g, "o", out), fz_sym(g, "k", in)};
  loom_dtype dt = fz_float_dtype(g, c, false);
  fz_param_add(c, "x", dt, rank, x);
  fz_param_add(c, "w", dt, 2, w);
  bool bias = fz_flag(g, 50);
  if (bias) fz_param_add(c, "b", dt, 1, &w[0]);
  c->atol = 1e-6 * (double)(in + 4);
  fz_call(c, "linear(x, w%s)", bias ? ", b" : "");
  return true;
}

/* ---- convolution and pooling ------------------------------------------------------------------ */

/* Window attributes of one spatial axis. */
typedef struct fz_win {
  int64_t k, s, dil, lo, hi, in;
} fz_win;

/* Draws a window: kernel in [1, kmax], stride, dilation, pads in [0, pmax_k(k)] and an input
 * length that leaves at least one output. */
static fz_win draw_win_in(fz_gen *g, int64_t kmax, int64_t smax, int64_t dmax, bool pad_below_kernel, int64_t extra) {
  fz_win w;
  w.k = fz_int(g, 1, kmax);
  w.s = fz_flag(g, 60) ? 1 : fz_int(g, 1, smax);
  w.dil = fz_flag(g, 70) ? 1 : fz_int(g, 1, dmax);
  int64_t eff = w.dil * (w.k - 1) + 1, pmax = pad_below_kernel ? w.k - 1 : eff - 1;
  w.lo = fz_flag(g, 40) ? 0 : fz_int(g, 0, pmax);
  w.hi = fz_flag(g, 50) ? w.lo : fz_int(g, 0, pmax);
  int64_t need = eff - w.lo - w.hi;
  w.in = fz_size(g, need > 0 ? need : 0, (need > 0 ? need : 0) + extra);
  return w;
}

static fz_win draw_win(fz_gen *g, int64_t kmax, int64_t smax, int64_t dmax, bool pad_below_kernel) {
  return draw_win_in(g, kmax, smax, dmax, pad_below_kernel, 70);
}

static void win_attrs(char *a, size_t cap, const fz_win *w, int n, bool stride, bool dil, bool pad, bool pad_2n) {
  int64_t v[16];
  bool any = false;
  for (int i = 0; i < n; i++) any |= w[i].s != 1;
  if (stride && any) {
    for (int i = 0; i < n; i++) v[i] = w[i].s;
    fz_attr_list(a, cap, "strides", n, v);
  }
  any = false;
  for (int i = 0; i < n; i++) any |= w[i].dil != 1;
  if (dil && any) {
    for (int i = 0; i < n; i++) v[i] = w[i].dil;
    fz_attr_list(a, cap, "dilation", n, v);
  }
  bool sym = true, zero = true;
  for (int i = 0; i < n; i++) sym &= w[i].lo == w[i].hi && w[i].lo == w[0].lo, zero &= !w[i].lo && !w[i].hi;
  if (!pad || zero) return;
  if (sym && !pad_2n) {
    fz_attr_list(a, cap, "padding", 1, &w[0].lo);
    return;
  }
  for (int i = 0; i < n; i++) v[i] = w[i].lo, v[n + i] = w[i].hi;
  fz_attr_list(a, cap, "padding", 2 * n, v);
}

/* conv1d, conv2d, or the N-d `conv` with 3 spatial axes (smaller kernels and extents). Half the f32
 * cases take the weight (and bias) as module constants, the output channels mostly a multiple of 8:
 * what `pack` lays out for the convolution over packed weights (graph/pass_pack.c). */
static bool gen_conv(fz_gen *g, fz_case *c, int n) {
  static const char *const in_names[3] = {"h", "w", "t"}, *const k_names[3] = {"kh", "kw", "kt"};
  c->op = n == 1 ? "conv1d" : n == 2 ? "conv2d" : "conv";
  loom_dtype dt = fz_float_dtype(g, c, false);
  bool cnst = dt == LOOM_DTYPE_F32 && fz_flag(g, 50);
  int64_t groups = fz_flag(g, cnst ? 80 : 60) ? 1 : fz_int(g, 1, 4), cg = fz_size(g, 1, 9), batch = fz_size(g, 0, 3);
  int64_t og = cnst && fz_flag(g, 80) ? 8 * fz_int(g, 1, 3) : fz_size(g, 1, 9);
  fz_win w[3];
  for (int i = 0; i < n; i++) w[i] = n < 3 ? draw_win(g, cnst ? 9 : 13, 4, 3, false) : draw_win_in(g, cnst ? 5 : 9, 3, 2, false, 9);
  fz_dim x[5] = {fz_sym(g, "b", batch), cnst ? fz_lit(groups * cg) : fz_expr(g, groups * cg, "%lld*c", (long long)groups)};
  fz_dim k[5] = {cnst ? fz_lit(groups * og) : fz_expr(g, groups * og, "%lld*o", (long long)groups), cnst ? fz_lit(cg) : fz_sym(g, "c", cg)};
  for (int i = 0; i < n; i++) {
    x[2 + i] = fz_sym(g, in_names[i], w[i].in);
    k[2 + i] = cnst || fz_flag(g, 70) ? fz_lit(w[i].k) : fz_sym(g, k_names[i], w[i].k);
  }
  fz_param_add(c, "x", dt, 2 + n, x);
  fz_param_add(c, "w", dt, 2 + n, k)->constant = cnst;
  bool bias = fz_flag(g, 40);
  if (bias) fz_param_add(c, "bias", dt, 1, &k[0])->constant = cnst;
  char a[256] = "";
  win_attrs(a, sizeof a, w, n, true, true, true, false);
  if (groups > 1) fz_cat(a, sizeof a, ", groups=%lld", (long long)groups);
  int64_t kk = cg;
  for (int i = 0; i < n; i++) kk *= w[i].k;
  c->atol = 1e-6 * (double)(kk + 4);
  const char *at = cnst ? "@" : "";
  fz_call(c, "%s(x, %sw%s%s%s)", c->op, at, bias ? ", " : "", bias ? (cnst ? "@bias" : "bias") : "", a);
  return true;
}

bool fz_gen_conv1d(fz_gen *g, fz_case *c) { return gen_conv(g, c, 1); }
bool fz_gen_conv2d(fz_gen *g, fz_case *c) { return gen_conv(g, c, 2); }
bool fz_gen_conv3d(fz_gen *g, fz_case *c) { return gen_conv(g, c, 3); }

bool fz_gen_conv_transpose(fz_gen *g, fz_case *c) {
  c->op = "conv_transpose";
  int n = (int)fz_int(g, 1, 3);
  int64_t groups = fz_flag(g, 60) ? 1 : fz_int(g, 1, 3), cg = fz_size(g, 1, 6), og = fz_size(g, 1, 6), batch = fz_size(g, 0, 2);
  fz_dim x[5] = {fz_sym(g, "b", batch), fz_expr(g, groups * cg, "%lld*c", (long long)groups)};
  fz_dim k[5] = {fz_expr(g, groups * cg, "%lld*c", (long long)groups), fz_sym(g, "o", og)};
  int64_t s[3], dil[3], kk[3], lo[3], hi[3], op[3], v[6];
  bool any_op = false;
  for (int i = 0; i < n; i++) {
    kk[i] = fz_int(g, 1, n == 3 ? 4 : 9);
    s[i] = fz_int(g, 1, 4);
    dil[i] = fz_flag(g, 70) ? 1 : fz_int(g, 1, 3);
    int64_t in = fz_size(g, 1, n == 3 ? 6 : 33), full = (in - 1) * s[i] + dil[i] * (kk[i] - 1) + 1;
    op[i] = fz_flag(g, 70) ? 0 : fz_int(g, 0, (s[i] > dil[i] ? s[i] : dil[i]) - 1);
    any_op |= op[i] != 0;
    lo[i] = fz_flag(g, 40) ? 0 : fz_int(g, 0, full / 2);
    hi[i] = fz_flag(g, 50) ? lo[i] : fz_int(g, 0, full - lo[i] > 0 ? (full - lo[i]) / 2 : 0);
    char nm[8];
    snprintf(nm, sizeof nm, "l%d", i);
    x[2 + i] = fz_sym(g, nm, in);
    k[2 + i] = fz_lit(kk[i]);
  }
  loom_dtype dt = fz_float_dtype(g, c, false);
  fz_param_add(c, "x", dt, 2 + n, x);
  fz_param_add(c, "w", dt, 2 + n, k);
  bool bias = fz_flag(g, 40);
  if (bias) {
    fz_dim bd = fz_expr(g, groups * og, "%lld*o", (long long)groups);
    fz_param_add(c, "bias", dt, 1, &bd);
  }
  char a[320] = "";
  fz_attr_list(a, sizeof a, "strides", n, s);
  fz_attr_list(a, sizeof a, "dilation", n, dil);
  for (int i = 0; i < n; i++) v[i] = lo[i], v[n + i] = hi[i];
  fz_attr_list(a, sizeof a, "padding", 2 * n, v);
  if (any_op) fz_attr_list(a, sizeof a, "output_padding", n, op);
  if (groups > 1) fz_cat(a, sizeof a, ", groups=%lld", (long long)groups);
  int64_t red = cg;
  for (int i = 0; i < n; i++) red *= kk[i];
  c->atol = 1e-6 * (double)(red + 4);
  fz_call(c, "conv_transpose(x, w%s%s)", bias ? ", bias" : "", a);
  return true;
}

bool fz_gen_pool(fz_gen *g, fz_case *c) {
  static const char *const ops[] = {"max_pool", "avg_pool", "lp_pool", "max_pool_indices"};
  int kind = fz_pick(g, 4), n = (int)fz_int(g, 1, 3);
  c->op = ops[kind];
  fz_win w[3];
  for (int i = 0; i < n; i++) w[i] = draw_win(g, n == 3 ? 4 : 7, 3, 2, true);
  bool ceil = fz_flag(g, 40); /* ceil mode needs constant spatial extents */
  fz_dim x[5] = {fz_sym(g, "b", fz_size(g, 0, 3)), fz_sym(g, "c", fz_size(g, 1, 5))};
  for (int i = 0; i < n; i++) {
    char nm[8];
    snprintf(nm, sizeof nm, "l%d", i);
    int64_t in = w[i].in > (n == 3 ? 12 : 40) ? (n == 3 ? 12 : 40) : w[i].in;
    x[2 + i] = ceil ? fz_lit(in) : fz_sym(g, nm, in);
    if (x[2 + i].v < w[i].dil * (w[i].k - 1) + 1 - w[i].lo - w[i].hi) return false;
  }
  loom_dtype dt = kind == 0 && fz_flag(g, 20) ? fz_int_dtype(g, false) : fz_float_dtype(g, c, false);
  fz_param_add(c, "x", dt, 2 + n, x);
  char a[320] = "";
  int64_t kv[3];
  for (int i = 0; i < n; i++) kv[i] = w[i].k;
  fz_attr_list(a, sizeof a, "kernel", n, kv);
  win_attrs(a, sizeof a, w, n, true, true, true, true);
  if (ceil) fz_cat(a, sizeof a, ", ceil_mode=true");
  if (kind == 1 && fz_flag(g, 50)) fz_cat(a, sizeof a, ", count_include_pad=true");
  if (kind == 2) fz_cat(a, sizeof a, ", p=%lld", (long long)fz_int(g, 1, 3));
  if (kind == 3 && fz_flag(g, 30)) fz_cat(a, sizeof a, ", storage_order=1");
  c->atol = 1e-5, c->rtol = 1e-5;
  fz_call(c, "%s(x%s)", c->op, a);
  return true;
}

bool fz_gen_pool2d(fz_gen *g, fz_case *c) {
  int kind = fz_pick(g, 3);
  fz_win w[2];
  for (int i = 0; i < 2; i++) w[i] = draw_win(g, 7, 3, 1, true);
  fz_dim x[4] = {fz_sym(g, "b", fz_size(g, 0, 3)), fz_sym(g, "c", fz_size(g, 1, 5)), fz_sym(g, "h", w[0].in), fz_sym(g, "w", w[1].in)};
  fz_param_add(c, "x", fz_float_dtype(g, c, false), 4, x);
  if (kind == 2) {
    c->op = "global_avg_pool2d";
    c->atol = 1e-5;
    fz_call(c, "global_avg_pool2d(x)");
    return true;
  }
  c->op = kind ? "avg_pool2d" : "max_pool2d";
  char a[256] = "";
  int64_t kv[2] = {w[0].k, w[1].k};
  fz_attr_list(a, sizeof a, "kernel", 2, kv);
  win_attrs(a, sizeof a, w, 2, true, false, true, false);
  c->atol = 1e-5;
  fz_call(c, "%s(x%s)", c->op, a);
  return true;
}
