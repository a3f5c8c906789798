/* op_elemwise.c — elementwise unary and binary operators (NumPy broadcasting), clip, cast,
 * dropout, where and the bitwise / shift operators on integers: attributes, inference,
 * reference implementations and legalization (expression tables for tensorprog/gen_elemwise.c). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/hash.h"
#include "base/lowp.h"
#include "graph/legalize_internal.h"

static const loom_graph_attr_spec no_attrs[] = {{0}};
static const loom_graph_attr_spec clip_attrs[] = {
    {"min", LOOM_GRAPH_ATTR_FLOAT, .dflt = -INFINITY}, {"max", LOOM_GRAPH_ATTR_FLOAT, .dflt = INFINITY}, {0}};
/* saturate (default true) and round_mode ("up" default, "down", "nearest") matter only for a
 * float8 / e8m0 result: base/lowp.h has their meaning. */
static const loom_graph_attr_spec cast_attrs[] = {{"dtype", LOOM_GRAPH_ATTR_DTYPE, .required = true},
                                                  {"saturate", LOOM_GRAPH_ATTR_BOOL, .dflt = 1},
                                                  {"round_mode", LOOM_GRAPH_ATTR_STR, .required = false},
                                                  {0}};
static const loom_graph_attr_spec bitcast_attrs[] = {{"dtype", LOOM_GRAPH_ATTR_DTYPE, .required = true}, {0}};
static const loom_graph_attr_spec dropout_attrs[] = {{"rate", LOOM_GRAPH_ATTR_FLOAT, .required = false}, {0}};

static loom_graph_op op_of(const loom_graph_expr *call) { return call->u.call.op; }

static bool is_logic(loom_graph_op op) {
  return op == LOOM_GRAPH_OP_NOT || (op >= LOOM_GRAPH_OP_EQUAL && op <= LOOM_GRAPH_OP_LOGICAL_XOR);
}

/* Ops defined on integer dtypes only (bool excluded). */
static bool is_bitwise(loom_graph_op op) {
  return op == LOOM_GRAPH_OP_BITWISE_NOT || (op >= LOOM_GRAPH_OP_BITWISE_AND && op <= LOOM_GRAPH_OP_SHIFT_RIGHT);
}

static bool is_unsigned(loom_dtype dt) {
  return dt == LOOM_DTYPE_U8 || dt == LOOM_DTYPE_U16 || dt == LOOM_DTYPE_U32 || dt == LOOM_DTYPE_U64;
}

/* v wrapped (two's complement) to the width of integer dtype dt. */
static int64_t wrap_int(loom_dtype dt, uint64_t v) {
  unsigned w = 8 * (unsigned)loom_dtype_size(dt);
  if (w >= 64) return (int64_t)v;
  v &= ((uint64_t)1 << w) - 1;
  if (!is_unsigned(dt) && (v >> (w - 1))) v |= ~(((uint64_t)1 << w) - 1);
  return (int64_t)v;
}

/* a << b, a >> b in a's dtype (logical shift for unsigned dtypes); shifts past the width give
 * 0 (or -1 for a negative signed a shifted right). */
static int64_t shift_i(loom_graph_op op, loom_dtype dt, int64_t a, int64_t b) {
  unsigned w = 8 * (unsigned)loom_dtype_size(dt);
  uint64_t ua = is_unsigned(dt) && w < 64 ? (uint64_t)a & (((uint64_t)1 << w) - 1) : (uint64_t)a;
  if (op == LOOM_GRAPH_OP_SHIFT_LEFT) return b < 0 || b >= (int64_t)w ? 0 : wrap_int(dt, ua << b);
  if (is_unsigned(dt)) return b < 0 || b >= (int64_t)w ? 0 : (int64_t)(ua >> b);
  if (b < 0 || b >= (int64_t)w) return a < 0 ? -1 : 0;
  return a < 0 ? (int64_t)~(~(uint64_t)a >> b) : (int64_t)((uint64_t)a >> b);
}

/* ---- unary ----------------------------------------------------------------------- */

/* Result: same shape; dtype kept, except not (bool) and cast (attr). Float-only ops reject
 * integer inputs so no silent truncation happens. */
static loom_status infer_unary(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 0, false, &x));
  loom_graph_op op = op_of(ic->call);
  loom_dtype dt = x->dtype;
  const loom_graph_attr *rm = loom_graph_call_attr(ic->call, "round_mode");
  loom_lowp_round mode;
  if (rm && !loom_lowp_round_parse(rm->s, &mode))
    return loom_graph_icx_error(ic, "round_mode \"%s\" is not one of \"up\", \"down\", \"nearest\"", rm->s);
  if (op == LOOM_GRAPH_OP_CAST) {
    dt = loom_graph_call_attr(ic->call, "dtype")->dtype;
    /* strings cast to and from numbers (op_string.c), but not to bool or a low-precision type */
    if (loom_dtype_is_string(x->dtype) && !loom_dtype_is_string(dt) && (dt == LOOM_DTYPE_BOOL || loom_dtype_is_lowp(dt)))
      return loom_graph_icx_error(ic, "a cast from string to %s is not supported", loom_dtype_name(dt));
    if (loom_dtype_is_string(dt) && loom_dtype_is_lowp(x->dtype))
      return loom_graph_icx_error(ic, "a cast from %s to string is not supported", loom_dtype_name(x->dtype));
  } else if (op == LOOM_GRAPH_OP_NOT) dt = LOOM_DTYPE_BOOL;
  else if (op == LOOM_GRAPH_OP_BITWISE_NOT) {
    if (dt != LOOM_DTYPE_UNKNOWN && !loom_dtype_is_int(dt))
      return loom_graph_icx_error(ic, "operand 0 has dtype %s; an integer dtype is required", loom_dtype_name(dt));
  } else if (dt != LOOM_DTYPE_UNKNOWN && !loom_dtype_is_float(dt) && op != LOOM_GRAPH_OP_NEG &&
           op != LOOM_GRAPH_OP_ABS && op != LOOM_GRAPH_OP_RELU && op != LOOM_GRAPH_OP_SIGN &&
           op != LOOM_GRAPH_OP_CLIP && op != LOOM_GRAPH_OP_DROPOUT)
    return loom_graph_icx_error(ic, "operand 0 has dtype %s; a float dtype is required", loom_dtype_name(dt));
  *out = loom_sinfo_tensor(ic->m, dt, x->ndim, x->dims, x->device);
  return LOOM_OK;
}

static double unary_f(loom_graph_op op, double x, double lo, double hi) {
  switch (op) {
  case LOOM_GRAPH_OP_NEG: return -x;
  case LOOM_GRAPH_OP_ABS: return fabs(x);
  case LOOM_GRAPH_OP_EXP: return exp(x);
  case LOOM_GRAPH_OP_LOG: return log(x);
  case LOOM_GRAPH_OP_SQRT: return sqrt(x);
  case LOOM_GRAPH_OP_RSQRT: return 1.0 / sqrt(x);
  case LOOM_GRAPH_OP_TANH: return tanh(x);
  case LOOM_GRAPH_OP_SIGMOID: return 1.0 / (1.0 + exp(-x));
  case LOOM_GRAPH_OP_RELU: return x > 0 ? x : 0;
  case LOOM_GRAPH_OP_GELU: return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
  case LOOM_GRAPH_OP_GELU_TANH:
    return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
  case LOOM_GRAPH_OP_SILU: return x / (1.0 + exp(-x));
  case LOOM_GRAPH_OP_ERF: return erf(x);
  case LOOM_GRAPH_OP_SIN: return sin(x);
  case LOOM_GRAPH_OP_COS: return cos(x);
  case LOOM_GRAPH_OP_ASIN: return asin(x);
  case LOOM_GRAPH_OP_ACOS: return acos(x);
  case LOOM_GRAPH_OP_ATAN: return atan(x);
  case LOOM_GRAPH_OP_FLOOR: return floor(x);
  case LOOM_GRAPH_OP_CEIL: return ceil(x);
  case LOOM_GRAPH_OP_ROUND: return nearbyint(x);
  case LOOM_GRAPH_OP_SIGN: return x > 0 ? 1 : x < 0 ? -1 : 0;
  case LOOM_GRAPH_OP_NOT: return x == 0;
  case LOOM_GRAPH_OP_CLIP: { /* min(max(x, lo), hi): hi when lo > hi, as ONNX Runtime and NumPy; NaN stays */
    double v = x < lo ? lo : x;
    return v > hi ? hi : v;
  }
  default: return x; /* cast, dropout */
  }
}

/* Cast to a float8 / float4 / e8m0 type, honouring saturate and round_mode. */
static loom_status cast_lowp(loom_graph_ecx *ec, const loom_graph_tensor *x, loom_graph_tensor *y) {
  bool sat = loom_graph_call_int(ec->call, "saturate") != 0;
  const loom_graph_attr *rm = loom_graph_call_attr(ec->call, "round_mode");
  loom_lowp_round mode = LOOM_LOWP_ROUND_UP;
  if (rm && !loom_lowp_round_parse(rm->s, &mode))
    return LOOM_ERROR(INVALID_ARGUMENT, "%s: unknown round_mode \"%s\"", ec->op, rm->s);
  uint8_t *d = y->data;
  for (size_t i = 0; i < x->numel; i++) {
    double v = loom_graph_tensor_get_f64(x, i);
    d[i] = y->dtype == LOOM_DTYPE_F8E8M0 ? loom_lowp_e8m0(v, sat, mode) : loom_lowp_from_f64(y->dtype, v, sat);
  }
  return LOOM_OK;
}

static loom_status eval_unary(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  const loom_graph_tensor *x = &args[0].t;
  loom_graph_op op = op_of(ec->call);
  loom_dtype dt = x->dtype;
  if (op == LOOM_GRAPH_OP_CAST) dt = loom_graph_call_attr(ec->call, "dtype")->dtype;
  if (op == LOOM_GRAPH_OP_NOT) dt = LOOM_DTYPE_BOOL;
  LOOM_PROPAGATE(loom_graph_value_tensor(dt, x->ndim, x->shape, out));
  double lo = 0, hi = 0; /* clip's bounds */
  if (op == LOOM_GRAPH_OP_CLIP) lo = loom_graph_call_float(ec->call, "min"), hi = loom_graph_call_float(ec->call, "max");
  if (op == LOOM_GRAPH_OP_CAST && loom_dtype_is_lowp(dt) && loom_dtype_is_float(dt)) return cast_lowp(ec, x, &out->t);
  if (op == LOOM_GRAPH_OP_CAST && (loom_dtype_is_string(dt) || loom_dtype_is_string(x->dtype)))
    return loom_graph_cast_string(ec, x, &out->t);
  bool int_path = (loom_dtype_is_int(x->dtype) && loom_dtype_is_int(dt)) &&
                  (op == LOOM_GRAPH_OP_NEG || op == LOOM_GRAPH_OP_ABS || op == LOOM_GRAPH_OP_CAST ||
                   op == LOOM_GRAPH_OP_DROPOUT || op == LOOM_GRAPH_OP_BITWISE_NOT);
  for (size_t i = 0; i < x->numel; i++) {
    if (int_path) {
      int64_t v = loom_graph_tensor_get_i64(x, i);
      if (op == LOOM_GRAPH_OP_NEG) v = (int64_t)(0 - (uint64_t)v);
      if (op == LOOM_GRAPH_OP_ABS && v < 0) v = (int64_t)(0 - (uint64_t)v);
      if (op == LOOM_GRAPH_OP_BITWISE_NOT) v = wrap_int(dt, ~(uint64_t)v);
      loom_graph_tensor_set_i64(&out->t, i, v);
    } else {
      loom_graph_tensor_set_f64(&out->t, i, unary_f(op, loom_graph_tensor_get_f64(x, i), lo, hi));
    }
  }
  return LOOM_OK;
}

/* ---- bitcast ----------------------------------------------------------------------- */

/* The element's bits reinterpreted: widths must agree (i4 <-> u4 <-> f4e2m1, f32 <-> i32, ...). */
static loom_status infer_bitcast(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 0, false, &x));
  loom_dtype dt = loom_graph_call_attr(ic->call, "dtype")->dtype;
  if (x->dtype != LOOM_DTYPE_UNKNOWN && loom_dtype_width(x->dtype) != loom_dtype_width(dt))
    return loom_graph_icx_error(ic, "operand 0 has dtype %s (%u bits), dtype %s has %u bits", loom_dtype_name(x->dtype),
                                loom_dtype_width(x->dtype), loom_dtype_name(dt), loom_dtype_width(dt));
  *out = loom_sinfo_tensor(ic->m, dt, x->ndim, x->dims, x->device);
  return LOOM_OK;
}

/* Storage bytes are copied; a sub-byte value keeps its low `width` bits (sign-extended for
 * i4 / i2) and a bool result is normalised to 0 / 1 (Loom's bool invariant). */
static loom_status eval_bitcast(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  const loom_graph_tensor *x = &args[0].t;
  loom_dtype dt = loom_graph_call_attr(ec->call, "dtype")->dtype;
  if (loom_dtype_width(x->dtype) != loom_dtype_width(dt))
    return LOOM_ERROR(INVALID_ARGUMENT, "%s: %s and %s differ in width", ec->op, loom_dtype_name(x->dtype),
                      loom_dtype_name(dt));
  LOOM_PROPAGATE(loom_graph_value_tensor(dt, x->ndim, x->shape, out));
  size_t es = loom_dtype_size(dt);
  unsigned w = loom_dtype_width(dt);
  memcpy(out->t.data, x->data, x->numel * es);
  uint8_t *b = out->t.data;
  if (w < 8)
    for (size_t i = 0; i < x->numel; i++) {
      b[i] &= (uint8_t)((1u << w) - 1);
      if (loom_dtype_is_int(dt) && loom_dtype_is_signed(dt)) b[i] = loom_lowp_from_i64(dt, b[i]);
    }
  if (dt == LOOM_DTYPE_BOOL)
    for (size_t i = 0; i < x->numel; i++) b[i] = b[i] != 0;
  return LOOM_OK;
}


/* ---- binary and where --------------------------------------------------------------- */

/* Broadcasts every operand's shape; operands (other than where's condition) share a dtype. */
static loom_status infer_bcast(loom_graph_icx *ic, const loom_sinfo **out) {
  size_t n = ic->call->u.call.nargs;
  loom_graph_op op = op_of(ic->call);
  const loom_sinfo *s[3];
  for (size_t i = 0; i < n; i++) LOOM_PROPAGATE(loom_graph_icx_tensor(ic, i, false, &s[i]));
  size_t first = op == LOOM_GRAPH_OP_WHERE ? 1 : 0;
  if (op == LOOM_GRAPH_OP_WHERE && s[0]->dtype != LOOM_DTYPE_BOOL && s[0]->dtype != LOOM_DTYPE_UNKNOWN)
    return loom_graph_icx_error(ic, "operand 0 (the condition) has dtype %s, expected bool",
                                loom_dtype_name(s[0]->dtype));
  loom_dtype dt = s[first]->dtype;
  for (size_t i = first + 1; i < n; i++) {
    if (dt == LOOM_DTYPE_UNKNOWN) dt = s[i]->dtype;
    else if (s[i]->dtype != LOOM_DTYPE_UNKNOWN && s[i]->dtype != dt)
      return loom_graph_icx_error(ic, "operand %zu has dtype %s, operand %zu has dtype %s", first,
                                  loom_dtype_name(s[first]->dtype), i, loom_dtype_name(s[i]->dtype));
  }
  if (is_logic(op)) dt = LOOM_DTYPE_BOOL;
  if (is_bitwise(op) && dt != LOOM_DTYPE_UNKNOWN && !loom_dtype_is_int(dt))
    return loom_graph_icx_error(ic, "operands have dtype %s; an integer dtype is required", loom_dtype_name(dt));
  bool known = true;
  int nd = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i]->ndim < 0 || !s[i]->dims) known = false;
    else if (s[i]->ndim > nd) nd = s[i]->ndim;
  }
  if (!known) {
    /* Rank is still the max when all ranks are known. */
    int r = 0;
    for (size_t i = 0; i < n; i++) {
      if (s[i]->ndim < 0) {
        r = LOOM_SINFO_NDIM_UNKNOWN;
        break;
      }
      if (s[i]->ndim > r) r = s[i]->ndim;
    }
    *out = loom_sinfo_tensor(ic->m, dt, r, NULL, s[0]->device);
    return LOOM_OK;
  }
  const loom_sym_expr **d = loom_graph_dims_new(ic->m, (size_t)nd);
  const loom_sym_expr **tmp = loom_graph_dims_new(ic->m, (size_t)nd);
  if (!d || !tmp) return LOOM_OOM();
  int cur = s[0]->ndim;
  for (int k = 0; k < cur; k++) d[k] = s[0]->dims[k];
  for (size_t i = 1; i < n; i++) {
    /* Operand index for messages: the accumulated shape is reported as operand 0 (or i-1). */
    LOOM_PROPAGATE(loom_graph_icx_broadcast(ic, i - 1, cur, d, i, s[i]->ndim, s[i]->dims, tmp));
    cur = cur > s[i]->ndim ? cur : s[i]->ndim;
    for (int k = 0; k < cur; k++) d[k] = tmp[k];
  }
  *out = loom_sinfo_tensor(ic->m, dt, nd, d, s[0]->device);
  return LOOM_OK;
}

static int64_t floordiv_i(int64_t a, int64_t b) {
  if (b == -1 && a == INT64_MIN) return INT64_MIN;
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
  return q;
}

static int64_t floormod_i(int64_t a, int64_t b) {
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

static double binary_f(loom_graph_op op, double a, double b) {
  switch (op) {
  case LOOM_GRAPH_OP_ADD: return a + b;
  case LOOM_GRAPH_OP_SUB: return a - b;
  case LOOM_GRAPH_OP_MUL: return a * b;
  case LOOM_GRAPH_OP_DIV: return a / b;
  case LOOM_GRAPH_OP_POW: return pow(a, b);
  case LOOM_GRAPH_OP_MOD: {
    double r = fmod(a, b);
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
  }
  case LOOM_GRAPH_OP_MAXIMUM: return a > b || a != a ? a : b;
  case LOOM_GRAPH_OP_MINIMUM: return a < b || a != a ? a : b;
  case LOOM_GRAPH_OP_EQUAL: return a == b;
  case LOOM_GRAPH_OP_NOT_EQUAL: return a != b;
  case LOOM_GRAPH_OP_LESS: return a < b;
  case LOOM_GRAPH_OP_LESS_EQUAL: return a <= b;
  case LOOM_GRAPH_OP_GREATER: return a > b;
  case LOOM_GRAPH_OP_GREATER_EQUAL: return a >= b;
  case LOOM_GRAPH_OP_LOGICAL_AND: return (a != 0) && (b != 0);
  case LOOM_GRAPH_OP_LOGICAL_OR: return (a != 0) || (b != 0);
  case LOOM_GRAPH_OP_LOGICAL_XOR: return (a != 0) != (b != 0);
  default: return 0;
  }
}

/* Integer arithmetic in int64 with wrapping (two's complement) and floor division;
 * division by zero is a clear error. */
static loom_status binary_i(loom_graph_ecx *ec, loom_graph_op op, int64_t a, int64_t b, int64_t *r) {
  uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
  switch (op) {
  case LOOM_GRAPH_OP_ADD: *r = (int64_t)(ua + ub); return LOOM_OK;
  case LOOM_GRAPH_OP_SUB: *r = (int64_t)(ua - ub); return LOOM_OK;
  case LOOM_GRAPH_OP_MUL: *r = (int64_t)(ua * ub); return LOOM_OK;
  case LOOM_GRAPH_OP_DIV:
  case LOOM_GRAPH_OP_MOD:
    if (b == 0) return LOOM_ERROR(OUT_OF_RANGE, "%s: integer division by zero", ec->op);
    *r = op == LOOM_GRAPH_OP_DIV ? floordiv_i(a, b) : floormod_i(a, b);
    return LOOM_OK;
  case LOOM_GRAPH_OP_MAXIMUM: *r = a > b ? a : b; return LOOM_OK;
  case LOOM_GRAPH_OP_MINIMUM: *r = a < b ? a : b; return LOOM_OK;
  case LOOM_GRAPH_OP_BITWISE_AND: *r = (int64_t)(ua & ub); return LOOM_OK;
  case LOOM_GRAPH_OP_BITWISE_OR: *r = (int64_t)(ua | ub); return LOOM_OK;
  case LOOM_GRAPH_OP_BITWISE_XOR: *r = (int64_t)(ua ^ ub); return LOOM_OK;
  default: *r = (int64_t)binary_f(op, (double)a, (double)b); return LOOM_OK;
  }
}

static loom_status eval_bcast(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  size_t n = ec->call->u.call.nargs;
  loom_graph_op op = op_of(ec->call);
  int nd = 0;
  int64_t shape[8];
  for (size_t i = 0; i < n; i++)
    if (args[i].t.ndim > nd) nd = args[i].t.ndim;
  for (int k = 0; k < nd; k++) {
    shape[k] = 1;
    for (size_t i = 0; i < n; i++) {
      const loom_graph_tensor *t = &args[i].t;
      int a = k - (nd - t->ndim);
      if (a < 0 || t->shape[a] == 1) continue;
      if (shape[k] != 1 && shape[k] != t->shape[a])
        return LOOM_ERROR(INVALID_ARGUMENT, "%s: operand %zu axis %d is %lld, the other operands give %lld", ec->op, i,
                          a, (long long)t->shape[a], (long long)shape[k]);
      shape[k] = t->shape[a];
    }
  }
  size_t first = op == LOOM_GRAPH_OP_WHERE ? 1 : 0;
  loom_dtype in_dt = args[first].t.dtype;
  loom_dtype dt = is_logic(op) ? LOOM_DTYPE_BOOL : in_dt;
  LOOM_PROPAGATE(loom_graph_value_tensor(dt, nd, shape, out));
  int64_t idx[8] = {0};
  if (in_dt == LOOM_DTYPE_STRING) { /* equal is the one op here that takes strings (flag STR) */
    for (size_t o = 0; o < out->t.numel; o++, loom_graph_index_next(nd, shape, idx))
      loom_graph_tensor_set_i64(&out->t, o, loom_graph_str_equal(loom_graph_tensor_get_str(&args[0].t, loom_graph_bcast_index(&args[0].t, nd, idx)),
                                                                  loom_graph_tensor_get_str(&args[1].t, loom_graph_bcast_index(&args[1].t, nd, idx))));
    return LOOM_OK;
  }
  bool ints = loom_dtype_is_int(in_dt);
  if (out->t.numel == 0) return LOOM_OK;
  size_t o = 0;
  do {
    size_t ia = loom_graph_bcast_index(&args[0].t, nd, idx);
    size_t ib = n > 1 ? loom_graph_bcast_index(&args[1].t, nd, idx) : 0;
    if (op == LOOM_GRAPH_OP_WHERE) {
      size_t ic = loom_graph_bcast_index(&args[2].t, nd, idx);
      bool c = loom_graph_tensor_get_f64(&args[0].t, ia) != 0;
      if (ints) loom_graph_tensor_set_i64(&out->t, o, loom_graph_tensor_get_i64(c ? &args[1].t : &args[2].t, c ? ib : ic));
      else loom_graph_tensor_set_f64(&out->t, o, loom_graph_tensor_get_f64(c ? &args[1].t : &args[2].t, c ? ib : ic));
    } else if (ints && !is_logic(op) && op != LOOM_GRAPH_OP_POW) {
      int64_t r;
      int64_t a = loom_graph_tensor_get_i64(&args[0].t, ia), b = loom_graph_tensor_get_i64(&args[1].t, ib);
      if (op == LOOM_GRAPH_OP_SHIFT_LEFT || op == LOOM_GRAPH_OP_SHIFT_RIGHT) r = shift_i(op, in_dt, a, b);
      else LOOM_PROPAGATE(binary_i(ec, op, a, b, &r));
      loom_graph_tensor_set_i64(&out->t, o, r);
    } else if (ints && is_logic(op) && op <= LOOM_GRAPH_OP_GREATER_EQUAL) {
      int64_t a = loom_graph_tensor_get_i64(&args[0].t, ia), b = loom_graph_tensor_get_i64(&args[1].t, ib);
      bool r = op == LOOM_GRAPH_OP_EQUAL ? a == b : op == LOOM_GRAPH_OP_NOT_EQUAL ? a != b
             : op == LOOM_GRAPH_OP_LESS ? a < b : op == LOOM_GRAPH_OP_LESS_EQUAL ? a <= b
             : op == LOOM_GRAPH_OP_GREATER ? a > b : a >= b;
      loom_graph_tensor_set_i64(&out->t, o, r);
    } else {
      loom_graph_tensor_set_f64(&out->t, o, binary_f(op, loom_graph_tensor_get_f64(&args[0].t, ia),
                                                     loom_graph_tensor_get_f64(&args[1].t, ib)));
    }
    o++;
  } while (loom_graph_index_next(nd, shape, idx));
  return LOOM_OK;
}

/* ---- legalization (the records' legalize hooks; graph/legalize.h) ------------------------------ */

typedef struct unary_entry {
  loom_graph_op op;
  const char *expr; /* over x; literals take x's dtype */
} unary_entry;

static const unary_entry unary_table[] = {
    {LOOM_GRAPH_OP_NEG, "-x"},
    {LOOM_GRAPH_OP_ABS, "abs(x)"},
    {LOOM_GRAPH_OP_EXP, "exp(x)"},
    {LOOM_GRAPH_OP_LOG, "log(x)"},
    {LOOM_GRAPH_OP_SQRT, "sqrt(x)"},
    {LOOM_GRAPH_OP_RSQRT, "rsqrt(x)"},
    {LOOM_GRAPH_OP_TANH, "tanh(x)"},
    {LOOM_GRAPH_OP_SIGMOID, "sigmoid(x)"},
    {LOOM_GRAPH_OP_RELU, "max(x, 0.0)"},
    {LOOM_GRAPH_OP_GELU, "0.5 * x * (1.0 + erf(x * 0.70710678118654752440))"},
    /* 0.5 * (1 + tanh(u)) = sigmoid(2u): one exp and one division (cg_sigmoid_f32), no 1 + tanh's
     * cancellation for large negative x */
    {LOOM_GRAPH_OP_GELU_TANH, "x * sigmoid(1.5957691216057308 * (x + 0.044715 * x * x * x))"},
    {LOOM_GRAPH_OP_SILU, "x * sigmoid(x)"},
    {LOOM_GRAPH_OP_ERF, "erf(x)"},
    {LOOM_GRAPH_OP_SIN, "sin(x)"},
    {LOOM_GRAPH_OP_COS, "cos(x)"},
    {LOOM_GRAPH_OP_ASIN, "asin(x)"},
    {LOOM_GRAPH_OP_ACOS, "acos(x)"},
    {LOOM_GRAPH_OP_ATAN, "atan(x)"},
    {LOOM_GRAPH_OP_FLOOR, "floor(x)"},
    {LOOM_GRAPH_OP_CEIL, "ceil(x)"},
    {LOOM_GRAPH_OP_ROUND, "round(x)"},
    {LOOM_GRAPH_OP_SIGN, "select(x > 0.0, 1.0, select(x < 0.0, -1.0, 0.0))"}, /* f32; others: unary_program */
    {LOOM_GRAPH_OP_NOT, "!x"},
    {LOOM_GRAPH_OP_DROPOUT, "x"},
    {LOOM_GRAPH_OP_BITWISE_NOT, "!x"}, /* on integers `!` is bitwise (tp_ops.def) */
};

typedef struct binary_entry {
  loom_graph_op op;
  const char *expr;     /* over a, b for float operands */
  const char *int_expr; /* for integer operands (NULL: same as expr) */
} binary_entry;

static const binary_entry binary_table[] = {
    {LOOM_GRAPH_OP_ADD, "a + b", NULL},
    {LOOM_GRAPH_OP_SUB, "a - b", NULL},
    {LOOM_GRAPH_OP_MUL, "a * b", NULL},
    {LOOM_GRAPH_OP_DIV, "a / b", "floordiv(a, b)"},
    {LOOM_GRAPH_OP_POW, "pow(a, b)", NULL},
    {LOOM_GRAPH_OP_MOD, "floormod(a, b)", NULL},
    {LOOM_GRAPH_OP_MAXIMUM, "max(a, b)", NULL},
    {LOOM_GRAPH_OP_MINIMUM, "min(a, b)", NULL},
    {LOOM_GRAPH_OP_EQUAL, "a == b", NULL},
    {LOOM_GRAPH_OP_NOT_EQUAL, "a != b", NULL},
    {LOOM_GRAPH_OP_LESS, "a < b", NULL},
    {LOOM_GRAPH_OP_LESS_EQUAL, "a <= b", NULL},
    {LOOM_GRAPH_OP_GREATER, "a > b", NULL},
    {LOOM_GRAPH_OP_GREATER_EQUAL, "a >= b", NULL},
    {LOOM_GRAPH_OP_LOGICAL_AND, "a && b", NULL},
    {LOOM_GRAPH_OP_LOGICAL_OR, "a || b", NULL},
    {LOOM_GRAPH_OP_LOGICAL_XOR, "xor(a, b)", NULL},
    {LOOM_GRAPH_OP_BITWISE_AND, "a && b", NULL}, /* bitwise on integers */
    {LOOM_GRAPH_OP_BITWISE_OR, "a || b", NULL},
    {LOOM_GRAPH_OP_BITWISE_XOR, "xor(a, b)", NULL},
    {LOOM_GRAPH_OP_SHIFT_LEFT, "shl(a, b)", NULL},
    {LOOM_GRAPH_OP_SHIFT_RIGHT, "shr(a, b)", NULL},
};

/* The expression template (over x, or a and b) of a program, in its parameter struct: a
 * template too long for it is a bug in the op table (INTERNAL). */
static loom_status copy_expr(char *dst, size_t cap, const char *expr) {
  size_t n = strlen(expr);
  if (n >= cap) return LOOM_ERROR(INTERNAL, "expression template '%s' is longer than %zu", expr, cap - 1);
  memcpy(dst, expr, n);
  return LOOM_OK;
}

typedef struct unary_params {
  char expr[256]; /* over x */
  loom_dtype in, out;
  int32_t rank, unused; /* 0 */
} unary_params;
LOOM_TP_GEN_PARAMS(unary_params, 256 + 4 * 4);

static loom_status gen_unary(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const unary_params *p = params;
  return loom_tp_gen_unary(loom_graph_module_arena(m), loom_graph_module_sym(m), name, p->expr, p->in, p->out, p->rank, tp);
}

static loom_status unary_program(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                                 const char *expr, loom_tp_func **tp) {
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  char typed_sign[256];
  if (call->u.call.op == LOOM_GRAPH_OP_SIGN && x->dtype != LOOM_DTYPE_F32) { /* literals of x's dtype */
    const char *t = loom_dtype_name(x->dtype), *f = loom_dtype_is_float(x->dtype) ? ".0" : "";
    if (loom_dtype_is_float(x->dtype) || loom_dtype_is_signed(x->dtype))
      snprintf(typed_sign, sizeof typed_sign, "select(x > 0%s%s, 1%s%s, select(x < 0%s%s, -1%s%s, 0%s%s))", f, t, f, t, f, t,
               f, t, f, t);
    else snprintf(typed_sign, sizeof typed_sign, "select(x > 0%s, 1%s, 0%s)", t, t, t);
    expr = typed_sign;
  }
  char name[256];
  snprintf(name, sizeof name, "%s_%s_%s_r%d", loom_graph_op_name(call->u.call.op), loom_dtype_name(x->dtype),
           loom_dtype_name(out->dtype), x->ndim);
  unary_params p = {.in = x->dtype, .out = out->dtype, .rank = x->ndim};
  LOOM_PROPAGATE(copy_expr(p.expr, sizeof p.expr, expr));
  return LOOM_LEGAL_PROGRAM(m, name, gen_unary, p, tp);
}

/* the ops of unary_table */
static loom_status legal_unary(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                               loom_graph_legal *r) {
  for (size_t i = 0; i < sizeof unary_table / sizeof unary_table[0]; i++)
    if (unary_table[i].op == call->u.call.op) return unary_program(m, call, out, unary_table[i].expr, &r->tp);
  return loom_legal_unsupported(call, "yet");
}

static loom_status legal_clip(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                              loom_graph_legal *r) {
  const loom_graph_attr *lo = loom_graph_call_attr(call, "min"), *hi = loom_graph_call_attr(call, "max");
  char expr[160] = "x", tmp[160];
  if (lo) {
    snprintf(tmp, sizeof tmp, "max(%s, %.17g)", expr, lo->kind == LOOM_GRAPH_ATTR_INT ? (double)lo->i : lo->f);
    strcpy(expr, tmp);
  }
  if (hi) {
    snprintf(tmp, sizeof tmp, "min(%s, %.17g)", expr, hi->kind == LOOM_GRAPH_ATTR_INT ? (double)hi->i : hi->f);
    strcpy(expr, tmp);
  }
  /* Bounds are part of the program: name them by their bits. */
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  char name[256];
  snprintf(name, sizeof name, "clip_%s_r%d_%016llx", loom_dtype_name(x->dtype), x->ndim,
           (unsigned long long)loom_hash_bytes(expr, strlen(expr)));
  unary_params p = {.in = x->dtype, .out = out->dtype, .rank = x->ndim};
  LOOM_PROPAGATE(copy_expr(p.expr, sizeof p.expr, expr));
  return LOOM_LEGAL_PROGRAM(m, name, gen_unary, p, &r->tp);
}

/* The expression of a cast to e8m0 under round_mode `mode` and `sat` over `u`, x's float32 bits
 * (ONNX casts through float32): base/lowp.c's loom_lowp_e8m0 in integer operations on them. A
 * program's e8m0 rounding (a store) is "up" saturating already; "down" clears the mantissa;
 * "nearest" adds half a binade (just under half for a subnormal: its tie rounds down) and
 * clears the mantissa, a carry into the exponent being the step up. With saturate the exponent
 * stops at 2^127 (0x7f000000); without, 2^127's step up is NaN. Inf and NaN give NaN. */
static void e8m0_expr(char *expr, size_t cap, const char *u, loom_lowp_round mode, bool sat) {
  char a[64];
  snprintf(a, sizeof a, "(%s && 2147483647)", u); /* |x|'s bits */
  if (mode == LOOM_LOWP_ROUND_DOWN)
    snprintf(expr, cap, "f8e8m0(bitcast(%s && 2139095040, 0.0f32))", u);
  else if (mode == LOOM_LOWP_ROUND_UP)
    snprintf(expr, cap, sat ? "f8e8m0(bitcast(%s, 0.0f32))" : "select(%s > 2130706432, nanf8e8m0, f8e8m0(bitcast(%s, 0.0f32)))",
             sat ? u : a, u);
  else
    snprintf(expr, cap, "f8e8m0(select(%s >= 2139095040, nanf32, bitcast(%s(%s + select(%s < 8388608, 4194303i32, 4194304i32)) && "
             "2139095040%s, 0.0f32)))", a, sat ? "min(" : "", a, a, sat ? ", 2130706432)" : "");
}

/* Casts: a value cast, the tensor-program `T(x)`, rounds to nearest and saturates float8 /
 * float4 (a store keeps e5m2's inf). saturate=false to a float8 format: where |x| rounds past
 * the largest value (loom_lowp_overflow_bound, decided in f64, exactly) the result is the
 * format's inf or NaN with x's sign. e8m0 honours round_mode and saturate (e8m0_expr). */
static loom_status legal_cast(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                              loom_graph_legal *r) {
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  const char *to = loom_dtype_name(out->dtype);
  bool sat = loom_graph_call_int(call, "saturate") != 0;
  const loom_lowp_format *f = loom_lowp_format_of(out->dtype);
  char expr[256], what[16] = "";
  snprintf(expr, sizeof expr, "%s(x)", to);
  if (out->dtype == LOOM_DTYPE_F8E8M0 && x->dtype != LOOM_DTYPE_F8E8M0) {
    const loom_graph_attr *rm = loom_graph_call_attr(call, "round_mode");
    loom_lowp_round mode = LOOM_LOWP_ROUND_UP;
    if (rm && !loom_lowp_round_parse(rm->s, &mode)) return loom_legal_unsupported(call, "with an unknown round_mode");
    char u[32];
    snprintf(u, sizeof u, x->dtype == LOOM_DTYPE_F32 ? "bitcast(x, 0i32)" : "bitcast(f32(x), 0i32)");
    e8m0_expr(expr, sizeof expr, u, mode, sat);
    snprintf(what, sizeof what, "_%s%s", rm ? rm->s : "up", sat ? "" : "_nosat");
  } else if (f && !sat && x->dtype != LOOM_DTYPE_BOOL && loom_lowp_overflow_code(f, 0) != loom_lowp_max_code(f, 0)) {
    bool incl;
    double bound = loom_lowp_overflow_bound(f, &incl);
    const char *v = x->dtype == LOOM_DTYPE_F64 ? "x" : "f64(x)", *ovf = f->ieee ? "inf" : "nan";
    snprintf(expr, sizeof expr, "select(abs(%s) %s %.17g, select(%s < 0.0, -%s%s, %s%s), %s(x))", v, incl ? ">=" : ">", bound,
             v, ovf, to, ovf, to, to);
    snprintf(what, sizeof what, "_nosat");
  }
  if (!what[0]) return unary_program(m, call, out, expr, &r->tp);
  char name[128];
  snprintf(name, sizeof name, "cast%s_%s_%s_r%d", what, loom_dtype_name(x->dtype), to, x->ndim);
  unary_params p = {.in = x->dtype, .out = out->dtype, .rank = x->ndim};
  LOOM_PROPAGATE(copy_expr(p.expr, sizeof p.expr, expr));
  return LOOM_LEGAL_PROGRAM(m, name, gen_unary, p, &r->tp);
}

/* bitcast: between integers of one width and to / from bool the bits are the value (wrapped;
 * a bool is 0 or 1 and a byte read as bool is `!= 0`, as the reference normalises), so a value
 * cast does it; a float side needs the tensor-program `bitcast` operator. */
static loom_status legal_bitcast(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                                 loom_graph_legal *r) {
  loom_tp_func **tp = &r->tp;
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  if (loom_dtype_bits(x->dtype) != loom_dtype_bits(out->dtype))
    return LOOM_ERROR(INVALID_ARGUMENT, "bitcast: %s and %s differ in width", loom_dtype_name(x->dtype),
                      loom_dtype_name(out->dtype));
  char expr[48];
  const char *to = loom_dtype_name(out->dtype);
  if (!loom_dtype_is_float(x->dtype) && !loom_dtype_is_float(out->dtype)) snprintf(expr, sizeof expr, "%s(x)", to);
  else if (loom_dtype_is_float(out->dtype)) snprintf(expr, sizeof expr, "bitcast(x, 0.0%s)", to);
  else snprintf(expr, sizeof expr, "bitcast(x, 0%s)", to);
  return unary_program(m, call, out, expr, tp);
}

typedef struct binary_params {
  char expr[96]; /* over a, b */
  loom_dtype in, out;
  int32_t ra, rb;
  loom_tp_bcast ma[LOOM_TP_GEN_MAX_RANK], mb[LOOM_TP_GEN_MAX_RANK]; /* 0 past the operands' ranks */
} binary_params;
LOOM_TP_GEN_PARAMS(binary_params, 96 + (4 + 2 * LOOM_TP_GEN_MAX_RANK) * 4);

static loom_status gen_binary(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const binary_params *p = params;
  return loom_tp_gen_binary(loom_graph_module_arena(m), loom_graph_module_sym(m), name, p->expr, p->in, p->out, p->ra, p->ma, p->rb,
                            p->mb, tp);
}

/* pow(a, c) for a constant c of one value (every element equal) among these exponents:
 * multiplies and square roots instead of a libm call per element, which does not vectorise
 * (a constant exponent is a 0-d buffer, not a literal the code generator could see). Each
 * form has pow's value at the special points (ONNX Pow is C's pow): -0 and -inf bases, NaN,
 * negative bases of half-integer exponents (NaN: sqrt of a negative); abs(sqrt(-0)) is
 * pow's +0. Integer exponents above 2 and -2 round twice where pow rounds once (within 1 ulp,
 * as ONNX Runtime, which multiplies too), so they are used for f32 / f64 only. */
typedef struct pow_form {
  double c;          /* the exponent */
  const char *tag;   /* in the program's name */
  const char *expr;  /* over a (b, the exponent buffer, is not read) */
  bool exact;        /* one rounding, as pow: every float dtype */
} pow_form;

static const pow_form pow_forms[] = {
    {1, "1", "a", true},
    {2, "2", "a * a", true},
    {-1, "m1", "1.0 / a", true},
    {0.5, "h", "select(a == -inf, inf, abs(sqrt(a)))", true},
    {3, "3", "a * a * a", false},
    {4, "4", "(a * a) * (a * a)", false},
    {-2, "m2", "(1.0 / a) * (1.0 / a)", false}, /* 1 / (a * a) overflows where pow does not */
    {-0.5, "mh", "select(a == -inf, 0.0, 1.0 / abs(sqrt(a)))", false},
    {1.5, "3h", "select(a == -inf, inf, select(a == 0.0, 0.0, a * sqrt(a)))", false},
};

/* The form for pow(a, c) when operand 1 is a constant with one value among pow_forms. */
static const pow_form *pow_constant_form(const loom_graph_expr *c, loom_dtype t) {
  if (c->kind != LOOM_GRAPH_EXPR_CONST || c->sinfo->kind != LOOM_SINFO_TENSOR || !loom_dtype_is_float(t)) return NULL;
  size_t es = loom_dtype_size(c->sinfo->dtype), n = es ? c->u.cnst.nbytes / es : 0;
  if (!n) return NULL;
  loom_graph_tensor v = {.dtype = c->sinfo->dtype, .data = c->u.cnst.data};
  double e = loom_graph_tensor_get_f64(&v, 0);
  for (size_t i = 1; i < n; i++)
    if (loom_graph_tensor_get_f64(&v, i) != e) return NULL;
  bool wide = t == LOOM_DTYPE_F32 || t == LOOM_DTYPE_F64;
  for (size_t i = 0; i < sizeof pow_forms / sizeof *pow_forms; i++)
    if (pow_forms[i].c == e && (pow_forms[i].exact || wide)) return &pow_forms[i];
  return NULL;
}

/* the ops of binary_table; pow of integers (ONNX Pow on int32 / int64) computes in double and
 * converts back, truncating, as the reference does; pow of floats by a constant of pow_forms
 * multiplies (pow_constant_form) */
static loom_status legal_binary(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                                loom_graph_legal *r) {
  const binary_entry *e = NULL;
  for (size_t i = 0; i < sizeof binary_table / sizeof binary_table[0] && !e; i++)
    if (binary_table[i].op == call->u.call.op) e = &binary_table[i];
  if (!e) return loom_legal_unsupported(call, "yet");
  const loom_sinfo *a, *b;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &a));
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 1, &b));
  if (out->ndim < 0 || !out->dims) return loom_legal_unsupported(call, "for a result of unknown shape");
  loom_sym_ctx *cx = loom_graph_module_sym(m);
  binary_params p = {.in = a->dtype, .out = out->dtype, .ra = a->ndim, .rb = b->ndim};
  char key[64] = "";
  loom_legal_bcast_modes(cx, a, out->dims, out->ndim, p.ma, key, sizeof key);
  strcat(key, "_");
  loom_legal_bcast_modes(cx, b, out->dims, out->ndim, p.mb, key, sizeof key);
  if (a->dtype != b->dtype) return loom_legal_unsupported(call, "for operands of different dtypes");
  char name[256], pow_expr[96];
  const char *expr = loom_dtype_is_float(a->dtype) || !e->int_expr ? e->expr : e->int_expr;
  const pow_form *pf = e->op == LOOM_GRAPH_OP_POW ? pow_constant_form(call->u.call.args[1], a->dtype) : NULL;
  if (pf) expr = pf->expr;
  if (e->op == LOOM_GRAPH_OP_POW && !loom_dtype_is_float(a->dtype)) {
    if (!loom_dtype_is_int(a->dtype) || out->dtype != a->dtype) return loom_legal_unsupported(call, "for these operand dtypes");
    snprintf(pow_expr, sizeof pow_expr, "%s(pow(f64(a), f64(b)))", loom_dtype_name(a->dtype));
    expr = pow_expr;
  }
  snprintf(name, sizeof name, "%s%s%s_%s_%s", loom_graph_op_name(call->u.call.op), pf ? "_c" : "", pf ? pf->tag : "",
           loom_dtype_name(a->dtype), key);
  LOOM_PROPAGATE(copy_expr(p.expr, sizeof p.expr, expr));
  return LOOM_LEGAL_PROGRAM(m, name, gen_binary, p, &r->tp);
}

typedef struct where_params {
  loom_dtype t, out;
  int32_t ranks[3];
  loom_tp_bcast modes[3][LOOM_TP_GEN_MAX_RANK]; /* 0 past the operands' ranks */
} where_params;
LOOM_TP_GEN_PARAMS(where_params, (5 + 3 * LOOM_TP_GEN_MAX_RANK) * 4);

static loom_status gen_where(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const where_params *p = params;
  const loom_dtype dts[3] = {LOOM_DTYPE_BOOL, p->t, p->t};
  const loom_tp_bcast *mp[3] = {p->modes[0], p->modes[1], p->modes[2]};
  return loom_tp_gen_nary(loom_graph_module_arena(m), loom_graph_module_sym(m), name, "select(a, b, c)", 3, dts, p->out, p->ranks, mp,
                          tp);
}

static loom_status legal_where(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                               loom_graph_legal *r) {
  const loom_sinfo *in[3];
  for (size_t i = 0; i < 3; i++) LOOM_PROPAGATE(loom_legal_tensor_arg(call, i, &in[i]));
  if (in[0]->dtype != LOOM_DTYPE_BOOL || in[1]->dtype != in[2]->dtype) return loom_legal_unsupported(call, "for these dtypes");
  if (out->ndim < 0 || !out->dims) return loom_legal_unsupported(call, "for a result of unknown shape");
  loom_sym_ctx *cx = loom_graph_module_sym(m);
  where_params p = {.t = in[1]->dtype, .out = out->dtype, .ranks = {in[0]->ndim, in[1]->ndim, in[2]->ndim}};
  char key[64] = "";
  for (int i = 0; i < 3; i++) {
    if (i) strcat(key, "_");
    loom_legal_bcast_modes(cx, in[i], out->dims, out->ndim, p.modes[i], key, sizeof key);
  }
  char name[256];
  snprintf(name, sizeof name, "where_%s_%s", loom_dtype_name(in[1]->dtype), key);
  return LOOM_LEGAL_PROGRAM(m, name, gen_where, p, &r->tp);
}

/* ---- the records ------------------------------------------------------------------------------- */

#define UNARY(nm, attrs, legal) \
  const loom_graph_op_impl loom_graph_op_impl_##nm = {attrs, infer_unary, eval_unary, legal, NULL};
#define BINARY(nm) const loom_graph_op_impl loom_graph_op_impl_##nm = {no_attrs, infer_bcast, eval_bcast, legal_binary, NULL};

UNARY(neg, no_attrs, legal_unary)
UNARY(abs, no_attrs, legal_unary)
UNARY(exp, no_attrs, legal_unary)
UNARY(log, no_attrs, legal_unary)
UNARY(sqrt, no_attrs, legal_unary)
UNARY(rsqrt, no_attrs, legal_unary)
UNARY(tanh, no_attrs, legal_unary)
UNARY(sigmoid, no_attrs, legal_unary)
UNARY(relu, no_attrs, legal_unary)
UNARY(gelu, no_attrs, legal_unary)
UNARY(gelu_tanh, no_attrs, legal_unary)
UNARY(silu, no_attrs, legal_unary)
UNARY(erf, no_attrs, legal_unary)
UNARY(sin, no_attrs, legal_unary)
UNARY(cos, no_attrs, legal_unary)
UNARY(floor, no_attrs, legal_unary)
UNARY(ceil, no_attrs, legal_unary)
UNARY(round, no_attrs, legal_unary)
UNARY(sign, no_attrs, legal_unary)
UNARY(not, no_attrs, legal_unary)
UNARY(clip, clip_attrs, legal_clip)
UNARY(cast, cast_attrs, legal_cast)
UNARY(dropout, dropout_attrs, legal_unary)
UNARY(asin, no_attrs, legal_unary)
UNARY(acos, no_attrs, legal_unary)
UNARY(atan, no_attrs, legal_unary)
UNARY(bitwise_not, no_attrs, legal_unary)
BINARY(add)
BINARY(sub)
BINARY(mul)
BINARY(div)
BINARY(pow)
BINARY(mod)
BINARY(maximum)
BINARY(minimum)
BINARY(equal)
BINARY(not_equal)
BINARY(less)
BINARY(less_equal)
BINARY(greater)
BINARY(greater_equal)
BINARY(logical_and)
BINARY(logical_or)
BINARY(logical_xor)
BINARY(bitwise_and)
BINARY(bitwise_or)
BINARY(bitwise_xor)
BINARY(shift_left)
BINARY(shift_right)
const loom_graph_op_impl loom_graph_op_impl_where = {no_attrs, infer_bcast, eval_bcast, legal_where, NULL};
const loom_graph_op_impl loom_graph_op_impl_bitcast = {bitcast_attrs, infer_bitcast, eval_bitcast, legal_bitcast, NULL};
