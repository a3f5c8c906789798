/* interp.c — the reference interpreter for tensor programs.
 *
 * Naive on purpose: every index is a symbolic expression evaluated under the
 * current bindings, every access is bounds-checked, every value is held as
 * double (floats) or int64 (integers, bool) and converted to the buffer's dtype
 * on store. Integer results wrap to their dtype's width (two's complement), as
 * compiled code does; integer division by zero is an error. It is the oracle
 * compiled programs are compared against, not a fast path. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/lowp.h"
#include "base/vec.h"
#include "tensorprog/tp_ir.h"

typedef struct value {
  double f;  /* floats */
  int64_t i; /* integers (u64 as its bit pattern) and bool */
} value;

typedef struct buf_binding {
  const loom_tp_buffer *buf;
  void *data;
  int64_t shape[16];
  bool owned; /* allocated by an `alloc` statement */
} buf_binding;

typedef struct let_binding {
  const loom_tp_stmt *let;
  value v;
} let_binding;

typedef struct interp {
  loom_sym_ctx *cx;
  const loom_tp_func *f;
  loom_sym_env *env;
  LOOM_VEC(buf_binding) bufs;
  LOOM_VEC(let_binding) lets;
} interp;

/* ---- element access ------------------------------------------------------- */

static value load_elem(loom_dtype t, const void *base, int64_t off) {
  value v = {0, 0};
  const char *p = (const char *)base + (size_t)off * loom_dtype_size(t);
  switch (t) {
    case LOOM_DTYPE_BOOL: { uint8_t x; memcpy(&x, p, 1); v.i = x != 0; break; }
    case LOOM_DTYPE_I8: case LOOM_DTYPE_I4: case LOOM_DTYPE_I2: { int8_t x; memcpy(&x, p, 1); v.i = x; break; }
    case LOOM_DTYPE_I16: { int16_t x; memcpy(&x, p, 2); v.i = x; break; }
    case LOOM_DTYPE_I32: { int32_t x; memcpy(&x, p, 4); v.i = x; break; }
    case LOOM_DTYPE_I64: { int64_t x; memcpy(&x, p, 8); v.i = x; break; }
    case LOOM_DTYPE_U8: case LOOM_DTYPE_U4: case LOOM_DTYPE_U2: { uint8_t x; memcpy(&x, p, 1); v.i = x; break; }
    case LOOM_DTYPE_U16: { uint16_t x; memcpy(&x, p, 2); v.i = x; break; }
    case LOOM_DTYPE_U32: { uint32_t x; memcpy(&x, p, 4); v.i = x; break; }
    case LOOM_DTYPE_U64: { uint64_t x; memcpy(&x, p, 8); v.i = (int64_t)x; break; }
    case LOOM_DTYPE_F16: { uint16_t x; memcpy(&x, p, 2); v.f = loom_f16_to_f32(x); break; }
    case LOOM_DTYPE_BF16: { uint16_t x; memcpy(&x, p, 2); v.f = loom_bf16_to_f32(x); break; }
    case LOOM_DTYPE_F32: { float x; memcpy(&x, p, 4); v.f = x; break; }
    case LOOM_DTYPE_F64: { double x; memcpy(&x, p, 8); v.f = x; break; }
    default:
      if (loom_dtype_is_lowp_float(t)) v.f = loom_lowp_to_f64(t, *(const uint8_t *)p);
      break;
  }
  return v;
}

static void store_elem(loom_dtype t, void *base, int64_t off, value v) {
  char *p = (char *)base + (size_t)off * loom_dtype_size(t);
  switch (t) {
    case LOOM_DTYPE_BOOL: { uint8_t x = v.i != 0; memcpy(p, &x, 1); break; }
    case LOOM_DTYPE_I8: case LOOM_DTYPE_U8: case LOOM_DTYPE_I4: case LOOM_DTYPE_U4: case LOOM_DTYPE_I2: case LOOM_DTYPE_U2: {
      uint8_t x = (uint8_t)v.i;
      memcpy(p, &x, 1);
      break;
    }
    case LOOM_DTYPE_I16: case LOOM_DTYPE_U16: { uint16_t x = (uint16_t)v.i; memcpy(p, &x, 2); break; }
    case LOOM_DTYPE_I32: case LOOM_DTYPE_U32: { uint32_t x = (uint32_t)v.i; memcpy(p, &x, 4); break; }
    case LOOM_DTYPE_I64: case LOOM_DTYPE_U64: { memcpy(p, &v.i, 8); break; }
    case LOOM_DTYPE_F16: { uint16_t x = loom_f32_to_f16((float)v.f); memcpy(p, &x, 2); break; }
    case LOOM_DTYPE_BF16: { uint16_t x = loom_f32_to_bf16((float)v.f); memcpy(p, &x, 2); break; }
    case LOOM_DTYPE_F32: { float x = (float)v.f; memcpy(p, &x, 4); break; }
    case LOOM_DTYPE_F64: { memcpy(p, &v.f, 8); break; }
    default:
      if (loom_dtype_is_lowp_float(t)) *(uint8_t *)p = loom_lowp_store(t, v.f); /* saturating; e5m2 keeps inf */
      break;
  }
}

/* Wraps an integer result to the width and signedness of `t`. */
static int64_t wrap_int(loom_dtype t, uint64_t x) {
  switch (t) {
    case LOOM_DTYPE_BOOL: return x != 0;
    case LOOM_DTYPE_I8: return (int8_t)(uint8_t)x;
    case LOOM_DTYPE_I16: return (int16_t)(uint16_t)x;
    case LOOM_DTYPE_I32: return (int32_t)(uint32_t)x;
    case LOOM_DTYPE_U8: return (uint8_t)x;
    case LOOM_DTYPE_U16: return (uint16_t)x;
    case LOOM_DTYPE_U32: return (uint32_t)x;
    case LOOM_DTYPE_I4: return (int64_t)(x << 60) >> 60; /* the 4- and 2-bit integers, sign-extended */
    case LOOM_DTYPE_U4: return (int64_t)(x & 0xf);
    case LOOM_DTYPE_I2: return (int64_t)(x << 62) >> 62;
    case LOOM_DTYPE_U2: return (int64_t)(x & 0x3);
    default: return (int64_t)x;
  }
}

/* Rounds a float result to the precision of `t` (values are held as double). */
static double round_float(loom_dtype t, double x) {
  switch (t) {
    case LOOM_DTYPE_F32: return (float)x;
    case LOOM_DTYPE_F16: return loom_f16_to_f32(loom_f32_to_f16((float)x));
    case LOOM_DTYPE_BF16: return loom_bf16_to_f32(loom_f32_to_bf16((float)x));
    default: return loom_dtype_is_lowp_float(t) ? loom_lowp_to_f64(t, loom_lowp_from_f64(t, x, true)) : x;
  }
}

static buf_binding *find_buf(interp *it, const loom_tp_buffer *b) {
  for (size_t i = it->bufs.len; i-- > 0;)
    if (it->bufs.data[i].buf == b) return &it->bufs.data[i];
  return NULL;
}

/* ---- expressions ---------------------------------------------------------- */

static loom_status eval_expr(interp *it, const loom_tp_expr *e, value *out);

static loom_status eval_sym(interp *it, const loom_sym_expr *s, int64_t *out) {
  return loom_sym_eval(it->cx, s, it->env, out);
}

/* Row-major offset of `idx` in `b`, with bounds checks naming buffer and axis. */
static loom_status offset_of(interp *it, buf_binding *b, loom_tp_expr *const *idx, int64_t *out) {
  int64_t off = 0;
  for (int d = 0; d < b->buf->ndim; d++) {
    value v;
    LOOM_PROPAGATE(eval_expr(it, idx[d], &v));
    if (v.i < 0 || v.i >= b->shape[d])
      return LOOM_ERROR(OUT_OF_RANGE, "program @%s: buffer '%s' axis %d: index %lld is outside [0, %lld)",
                        it->f->name, b->buf->name, d, (long long)v.i, (long long)b->shape[d]);
    off = off * b->shape[d] + v.i;
  }
  *out = off;
  return LOOM_OK;
}

static bool is_unsigned(loom_dtype t) { return loom_dtype_kind_of(t) == LOOM_DTYPE_KIND_UINT; }

static loom_status int_binary(interp *it, loom_tp_op op, loom_dtype t, int64_t a, int64_t b, value *out) {
  uint64_t ua = (uint64_t)a, ub = (uint64_t)b, r = 0;
  bool u = is_unsigned(t);
  switch (op) {
    case LOOM_TP_OP_ADD: r = ua + ub; break;
    case LOOM_TP_OP_SUB: r = ua - ub; break;
    case LOOM_TP_OP_MUL: r = ua * ub; break;
    case LOOM_TP_OP_DOT2: {
      if (t != LOOM_DTYPE_I32) break;
      int64_t al = (int16_t)(uint16_t)(ua & 0xFFFF), ah = (int16_t)(uint16_t)((ua >> 16) & 0xFFFF);
      int64_t bl = (int16_t)(uint16_t)(ub & 0xFFFF), bh = (int16_t)(uint16_t)((ub >> 16) & 0xFFFF);
      r = (uint64_t)(al * bl) + (uint64_t)(ah * bh);
      out->i = wrap_int(t, r);
      return LOOM_OK;
    }
    case LOOM_TP_OP_DOT4:
    case LOOM_TP_OP_DOT4S: { /* dot4s: exact, as dot4 (its operands never reach the i16 bound) */
      if (t != LOOM_DTYPE_I32) break;
      int64_t s = 0;
      for (int i = 0; i < 4; i++) s += (int64_t)((ua >> (8 * i)) & 0xFF) * (int8_t)(uint8_t)((ub >> (8 * i)) & 0xFF);
      out->i = wrap_int(t, (uint64_t)s);
      return LOOM_OK;
    }
    case LOOM_TP_OP_DIV: case LOOM_TP_OP_MOD: case LOOM_TP_OP_FLOORDIV: case LOOM_TP_OP_FLOORMOD:
      if (b == 0)
        return LOOM_ERROR(OUT_OF_RANGE, "program @%s: integer %s by zero", it->f->name,
                          loom_tp_op_spelling(op));
      if (u) {
        r = (op == LOOM_TP_OP_DIV || op == LOOM_TP_OP_FLOORDIV) ? ua / ub : ua % ub;
      } else if (a == INT64_MIN && b == -1) {
        r = (op == LOOM_TP_OP_DIV || op == LOOM_TP_OP_FLOORDIV) ? (uint64_t)INT64_MIN : 0;
      } else {
        int64_t q = a / b, m = a % b;
        if (op == LOOM_TP_OP_FLOORDIV && m != 0 && ((m < 0) != (b < 0))) q--;
        if (op == LOOM_TP_OP_FLOORMOD && m != 0 && ((m < 0) != (b < 0))) m += b;
        r = (uint64_t)((op == LOOM_TP_OP_DIV || op == LOOM_TP_OP_FLOORDIV) ? q : m);
      }
      break;
    case LOOM_TP_OP_MIN: r = u ? (ua < ub ? ua : ub) : (uint64_t)(a < b ? a : b); break;
    case LOOM_TP_OP_MAX: r = u ? (ua > ub ? ua : ub) : (uint64_t)(a > b ? a : b); break;
    case LOOM_TP_OP_AND: r = t == LOOM_DTYPE_BOOL ? (a && b) : (ua & ub); break;
    case LOOM_TP_OP_OR: r = t == LOOM_DTYPE_BOOL ? (a || b) : (ua | ub); break;
    case LOOM_TP_OP_XOR: r = t == LOOM_DTYPE_BOOL ? ((a != 0) != (b != 0)) : (ua ^ ub); break;
    case LOOM_TP_OP_SHL:
    case LOOM_TP_OP_SHR: {
      int64_t w = 8 * (int64_t)loom_dtype_size(t);
      uint64_t ma = u && w < 64 ? ua & (((uint64_t)1 << w) - 1) : ua; /* unsigned: the value's own bits */
      if (b < 0 || b >= w) r = op == LOOM_TP_OP_SHR && !u && a < 0 ? ~(uint64_t)0 : 0;
      else if (op == LOOM_TP_OP_SHL) r = ma << b;
      else r = u || a >= 0 ? ma >> b : ~(~ua >> b);
      break;
    }
    case LOOM_TP_OP_EQ: out->i = a == b; return LOOM_OK;
    case LOOM_TP_OP_NE: out->i = a != b; return LOOM_OK;
    case LOOM_TP_OP_LT: out->i = u ? ua < ub : a < b; return LOOM_OK;
    case LOOM_TP_OP_LE: out->i = u ? ua <= ub : a <= b; return LOOM_OK;
    case LOOM_TP_OP_GT: out->i = u ? ua > ub : a > b; return LOOM_OK;
    case LOOM_TP_OP_GE: out->i = u ? ua >= ub : a >= b; return LOOM_OK;
    default:
      return LOOM_ERROR(TYPE_ERROR, "program @%s: '%s' is not defined on %s", it->f->name,
                        loom_tp_op_spelling(op), loom_dtype_name(t));
  }
  out->i = wrap_int(t, r);
  return LOOM_OK;
}

/* Round half to even (ONNX Round). */
static double round_even(double x) {
  double r = nearbyint(x); /* the default rounding mode is to nearest, ties to even */
  return r;
}

static loom_status float_op(interp *it, loom_tp_op op, loom_dtype t, const double *a, value *out) {
  double r;
  switch (op) {
    case LOOM_TP_OP_ADD: r = a[0] + a[1]; break;
    case LOOM_TP_OP_SUB: r = a[0] - a[1]; break;
    case LOOM_TP_OP_MUL: r = a[0] * a[1]; break;
    case LOOM_TP_OP_DIV: r = a[0] / a[1]; break;
    case LOOM_TP_OP_MOD: r = fmod(a[0], a[1]); break;
    case LOOM_TP_OP_FLOORDIV: r = floor(a[0] / a[1]); break;
    case LOOM_TP_OP_FLOORMOD: r = a[0] - a[1] * floor(a[0] / a[1]); break;
    case LOOM_TP_OP_MIN: r = isnan(a[0]) || isnan(a[1]) ? NAN : fmin(a[0], a[1]); break;
    case LOOM_TP_OP_MAX: r = isnan(a[0]) || isnan(a[1]) ? NAN : fmax(a[0], a[1]); break;
    case LOOM_TP_OP_NEG: r = -a[0]; break;
    case LOOM_TP_OP_ABS: r = fabs(a[0]); break;
    case LOOM_TP_OP_EQ: out->i = a[0] == a[1]; return LOOM_OK;
    case LOOM_TP_OP_NE: out->i = a[0] != a[1]; return LOOM_OK;
    case LOOM_TP_OP_LT: out->i = a[0] < a[1]; return LOOM_OK;
    case LOOM_TP_OP_LE: out->i = a[0] <= a[1]; return LOOM_OK;
    case LOOM_TP_OP_GT: out->i = a[0] > a[1]; return LOOM_OK;
    case LOOM_TP_OP_GE: out->i = a[0] >= a[1]; return LOOM_OK;
    case LOOM_TP_OP_EXP: r = exp(a[0]); break;
    case LOOM_TP_OP_LOG: r = log(a[0]); break;
    case LOOM_TP_OP_SQRT: r = sqrt(a[0]); break;
    case LOOM_TP_OP_RSQRT: r = 1.0 / sqrt(a[0]); break;
    case LOOM_TP_OP_TANH: r = tanh(a[0]); break;
    case LOOM_TP_OP_SIGMOID: r = 1.0 / (1.0 + exp(-a[0])); break;
    case LOOM_TP_OP_ERF: r = erf(a[0]); break;
    case LOOM_TP_OP_SIN: r = sin(a[0]); break;
    case LOOM_TP_OP_COS: r = cos(a[0]); break;
    case LOOM_TP_OP_ASIN: r = asin(a[0]); break;
    case LOOM_TP_OP_ACOS: r = acos(a[0]); break;
    case LOOM_TP_OP_ATAN: r = atan(a[0]); break;
    case LOOM_TP_OP_FLOOR: r = floor(a[0]); break;
    case LOOM_TP_OP_CEIL: r = ceil(a[0]); break;
    case LOOM_TP_OP_ROUND: r = round_even(a[0]); break;
    case LOOM_TP_OP_POW: r = pow(a[0], a[1]); break;
    case LOOM_TP_OP_FMA: r = fma(a[0], a[1], a[2]); break;
    default:
      return LOOM_ERROR(TYPE_ERROR, "program @%s: '%s' is not defined on %s", it->f->name,
                        loom_tp_op_spelling(op), loom_dtype_name(t));
  }
  out->f = round_float(t, r);
  return LOOM_OK;
}

/* The bits of a value of dtype `t` (low loom_dtype_bits(t) bits; f16/bf16 rounded to storage first). */
static uint64_t bits_of(loom_dtype t, value v) {
  switch (t) {
    case LOOM_DTYPE_F64: { uint64_t u; memcpy(&u, &v.f, 8); return u; }
    case LOOM_DTYPE_F32: { float f = (float)v.f; uint32_t u; memcpy(&u, &f, 4); return u; }
    case LOOM_DTYPE_F16: return loom_f32_to_f16((float)v.f);
    case LOOM_DTYPE_BF16: return loom_f32_to_bf16((float)v.f);
    default: {
      unsigned w = loom_dtype_bits(t);
      return w >= 64 ? (uint64_t)v.i : (uint64_t)v.i & (((uint64_t)1 << w) - 1);
    }
  }
}

/* bitcast(x, literal of dtype t): the bits of x read as t (the verifier checks the widths). */
static value from_bits(loom_dtype t, uint64_t u) {
  value r = {0, 0};
  switch (t) {
    case LOOM_DTYPE_F64: memcpy(&r.f, &u, 8); break;
    case LOOM_DTYPE_F32: { uint32_t w = (uint32_t)u; float f; memcpy(&f, &w, 4); r.f = f; break; }
    case LOOM_DTYPE_F16: r.f = loom_f16_to_f32((uint16_t)u); break;
    case LOOM_DTYPE_BF16: r.f = loom_bf16_to_f32((uint16_t)u); break;
    default: r.i = wrap_int(t, u); break;
  }
  return r;
}

static loom_status eval_op(interp *it, const loom_tp_expr *e, value *out) {
  loom_tp_op op = e->u.op.op;
  int n = loom_tp_op_arity(op);
  value a[3];
  /* && and || short-circuit on bool, like C. */
  LOOM_PROPAGATE(eval_expr(it, e->u.op.args[0], &a[0]));
  loom_dtype t = e->u.op.args[0]->dtype;
  if (op == LOOM_TP_OP_BITCAST) {
    *out = from_bits(e->dtype, bits_of(t, a[0]));
    return LOOM_OK;
  }
  if (t == LOOM_DTYPE_BOOL && op == LOOM_TP_OP_AND && !a[0].i) { out->i = 0; return LOOM_OK; }
  if (t == LOOM_DTYPE_BOOL && op == LOOM_TP_OP_OR && a[0].i) { out->i = 1; return LOOM_OK; }
  for (int k = 1; k < n; k++) LOOM_PROPAGATE(eval_expr(it, e->u.op.args[k], &a[k]));
  *out = (value){0, 0};
  if (loom_dtype_is_float(t)) {
    double f[3] = {a[0].f, a[1].f, a[2].f};
    return float_op(it, op, t, f, out);
  }
  if (op == LOOM_TP_OP_NEG) return int_binary(it, LOOM_TP_OP_SUB, t, 0, a[0].i, out);
  if (op == LOOM_TP_OP_ABS) return int_binary(it, LOOM_TP_OP_MAX, t, a[0].i, -(uint64_t)a[0].i, out);
  if (op == LOOM_TP_OP_LIKELY) {
    out->i = a[0].i;
    return LOOM_OK;
  }
  if (op == LOOM_TP_OP_NOT) {
    out->i = t == LOOM_DTYPE_BOOL ? !a[0].i : wrap_int(t, ~(uint64_t)a[0].i);
    return LOOM_OK;
  }
  if (n == 2) return int_binary(it, op, t, a[0].i, a[1].i, out);
  return LOOM_ERROR(TYPE_ERROR, "program @%s: '%s' is not defined on %s", it->f->name,
                    loom_tp_op_spelling(op), loom_dtype_name(t));
}

static loom_status eval_expr(interp *it, const loom_tp_expr *e, value *out) {
  switch (e->kind) {
    case LOOM_TP_EXPR_CONST:
      out->f = e->u.c.f;
      out->i = e->u.c.i;
      return LOOM_OK;
    case LOOM_TP_EXPR_SYM:
      return eval_sym(it, e->u.sym, &out->i);
    case LOOM_TP_EXPR_LOAD: {
      buf_binding *b = find_buf(it, e->u.load.buf);
      if (!b) return LOOM_ERROR(INTERNAL, "program @%s: buffer '%s' is not bound", it->f->name, e->u.load.buf->name);
      int64_t off;
      LOOM_PROPAGATE(offset_of(it, b, e->u.load.idx, &off));
      *out = load_elem(b->buf->dtype, b->data, off);
      return LOOM_OK;
    }
    case LOOM_TP_EXPR_LETREF:
      for (size_t i = it->lets.len; i-- > 0;) {
        if (it->lets.data[i].let == e->u.let) {
          *out = it->lets.data[i].v;
          return LOOM_OK;
        }
      }
      return LOOM_ERROR(INTERNAL, "program @%s: let '%s' used before it is set", it->f->name,
                        e->u.let->u.let.name);
    case LOOM_TP_EXPR_CAST: {
      value v;
      LOOM_PROPAGATE(eval_expr(it, e->u.cast_arg, &v));
      loom_dtype from = e->u.cast_arg->dtype, to = e->dtype;
      *out = (value){0, 0};
      if (loom_dtype_is_float(from) && loom_dtype_is_float(to)) {
        out->f = round_float(to, v.f);
      } else if (loom_dtype_is_float(from)) {
        /* float -> integer truncates toward zero; out-of-range values saturate at the target's
         * range (NaN -> 0), as the graph reference and the code generator do */
        double x = trunc(v.f);
        int bits = (int)loom_dtype_bits(to);
        if (to == LOOM_DTYPE_BOOL) out->i = v.f != 0;
        else if (isnan(x)) out->i = 0;
        else if (loom_dtype_is_lowp(to)) /* 4- and 2-bit: truncate, keep the low bits */
          out->i = wrap_int(to, loom_lowp_from_f64(to, v.f, true));
        else if (is_unsigned(to)) {
          uint64_t hi = bits >= 64 ? UINT64_MAX : (1ull << bits) - 1;
          out->i = wrap_int(to, x <= 0 ? 0 : x >= (double)hi ? hi : (uint64_t)x);
        } else {
          int64_t lo = bits >= 64 ? INT64_MIN : -(int64_t)(1ull << (bits - 1)), hi = bits >= 64 ? INT64_MAX : (int64_t)(1ull << (bits - 1)) - 1;
          out->i = x <= (double)lo ? lo : x >= (double)hi ? hi : (int64_t)x;
        }
      } else if (loom_dtype_is_float(to)) {
        out->f = round_float(to, is_unsigned(from) ? (double)(uint64_t)v.i : (double)v.i);
      } else {
        out->i = wrap_int(to, (uint64_t)v.i);
      }
      return LOOM_OK;
    }
    case LOOM_TP_EXPR_SELECT: {
      value c;
      LOOM_PROPAGATE(eval_expr(it, e->u.select.cond, &c));
      return eval_expr(it, c.i ? e->u.select.then_e : e->u.select.else_e, out);
    }
    case LOOM_TP_EXPR_OP:
      return eval_op(it, e, out);
  }
  return LOOM_ERROR(INTERNAL, "bad expression kind");
}

/* ---- statements ----------------------------------------------------------- */

static loom_status exec(interp *it, const loom_tp_stmt *s);

static loom_status bind_alloc(interp *it, loom_tp_buffer *b) {
  buf_binding bb = {.buf = b, .owned = true};
  size_t count = 1;
  for (int d = 0; d < b->ndim; d++) {
    LOOM_PROPAGATE(eval_sym(it, b->dims[d], &bb.shape[d]));
    if (bb.shape[d] < 0)
      return LOOM_ERROR(OUT_OF_RANGE, "program @%s: alloc '%s' axis %d has negative extent %lld", it->f->name,
                        b->name, d, (long long)bb.shape[d]);
    if (!loom_size_mul(count, (size_t)bb.shape[d], &count))
      return LOOM_ERROR(OUT_OF_RANGE, "program @%s: alloc '%s' is too large", it->f->name, b->name);
  }
  bb.data = calloc(count ? count : 1, loom_dtype_size(b->dtype));
  if (!bb.data) return LOOM_OOM();
  if (!LOOM_VEC_PUSH(NULL, &it->bufs, bb)) {
    free(bb.data);
    return LOOM_OOM();
  }
  return LOOM_OK;
}

static loom_status exec_seq(interp *it, const loom_tp_stmt *s) {
  size_t buf_mark = it->bufs.len, let_mark = it->lets.len;
  loom_status st = LOOM_OK;
  for (size_t i = 0; i < s->u.seq.n && !st; i++) {
    const loom_tp_stmt *c = s->u.seq.items[i];
    if (c->kind == LOOM_TP_STMT_ALLOC) {
      st = bind_alloc(it, c->u.alloc);
    } else if (c->kind == LOOM_TP_STMT_LET) {
      let_binding lb = {.let = c};
      st = eval_expr(it, c->u.let.value, &lb.v);
      if (!st && !LOOM_VEC_PUSH(NULL, &it->lets, lb)) st = LOOM_OOM();
    } else {
      st = exec(it, c);
    }
  }
  while (it->bufs.len > buf_mark) {
    buf_binding *b = &LOOM_VEC_POP(&it->bufs);
    if (b->owned) free(b->data);
  }
  it->lets.len = let_mark;
  return st;
}

/* A gpu_thread loop whose body sequence holds barriers, run as the block would: phase by
 * phase, each phase (the items between two barriers) run by every thread in order before
 * the next begins. The verifier keeps lets and allocs out of such a sequence, so no
 * per-thread value has to outlive a phase. */
static loom_status exec_phased(interp *it, const loom_tp_stmt *s, int64_t n) {
  const loom_tp_stmt *body = s->u.loop.body;
  size_t start = 0;
  while (start <= body->u.seq.n) {
    size_t end = start;
    while (end < body->u.seq.n && body->u.seq.items[end]->kind != LOOM_TP_STMT_BARRIER) end++;
    for (int64_t i = 0; i < n; i++) {
      LOOM_PROPAGATE(loom_sym_env_set(it->env, s->u.loop.var, i));
      for (size_t k = start; k < end; k++) LOOM_PROPAGATE(exec(it, body->u.seq.items[k]));
    }
    start = end + 1;
  }
  return LOOM_OK;
}

static bool has_barrier(const loom_tp_stmt *body) {
  if (body->kind != LOOM_TP_STMT_SEQ) return false;
  for (size_t i = 0; i < body->u.seq.n; i++)
    if (body->u.seq.items[i]->kind == LOOM_TP_STMT_BARRIER) return true;
  return false;
}

static loom_status exec(interp *it, const loom_tp_stmt *s) {
  switch (s->kind) {
    case LOOM_TP_STMT_SEQ:
      return exec_seq(it, s);
    case LOOM_TP_STMT_FOR: {
      int64_t n;
      LOOM_PROPAGATE(eval_sym(it, s->u.loop.extent, &n));
      /* Block and thread loops run in order, one iteration after another; a thread loop
       * with barriers runs phase by phase. Every other loop kind is a serial loop here. */
      if (s->u.loop.kind == LOOM_TP_LOOP_GPU_THREAD && has_barrier(s->u.loop.body)) return exec_phased(it, s, n);
      for (int64_t i = 0; i < n; i++) {
        LOOM_PROPAGATE(loom_sym_env_set(it->env, s->u.loop.var, i));
        LOOM_PROPAGATE(exec(it, s->u.loop.body));
      }
      return LOOM_OK;
    }
    case LOOM_TP_STMT_STORE: {
      buf_binding *b = find_buf(it, s->u.store.buf);
      if (!b) return LOOM_ERROR(INTERNAL, "program @%s: buffer '%s' is not bound", it->f->name, s->u.store.buf->name);
      value v;
      int64_t off;
      LOOM_PROPAGATE(eval_expr(it, s->u.store.value, &v));
      LOOM_PROPAGATE(offset_of(it, b, s->u.store.idx, &off));
      store_elem(b->buf->dtype, b->data, off, v);
      return LOOM_OK;
    }
    case LOOM_TP_STMT_IF: {
      value c;
      LOOM_PROPAGATE(eval_expr(it, s->u.if_.cond, &c));
      if (c.i) return exec(it, s->u.if_.then_s);
      return s->u.if_.else_s ? exec(it, s->u.if_.else_s) : LOOM_OK;
    }
    case LOOM_TP_STMT_LET:
    case LOOM_TP_STMT_ALLOC:
      /* Handled by the enclosing sequence, which owns their scope. */
      return LOOM_ERROR(INTERNAL, "program @%s: let/alloc outside a sequence", it->f->name);
    case LOOM_TP_STMT_BARRIER:
      return LOOM_OK; /* a phase boundary: exec_phased splits the thread loop at it */
    case LOOM_TP_STMT_PREFETCH: {
      /* no effect on memory; its element must exist (the compiled hint never reads outside a
       * buffer), so the index is computed and bounds-checked like a load's */
      buf_binding *b = find_buf(it, s->u.prefetch.buf);
      if (!b) return LOOM_ERROR(INTERNAL, "program @%s: buffer '%s' is not bound", it->f->name, s->u.prefetch.buf->name);
      int64_t off;
      return offset_of(it, b, s->u.prefetch.idx, &off);
    }
  }
  return LOOM_ERROR(INTERNAL, "bad statement kind");
}

loom_status loom_tp_interpret(loom_sym_ctx *cx, const loom_tp_func *f, const loom_tp_arg *args, size_t nargs) {
  if (nargs != f->nparams)
    return LOOM_ERROR(INVALID_ARGUMENT, "program @%s takes %zu arguments, given %zu", f->name, f->nparams, nargs);
  interp it = {.cx = cx, .f = f};
  LOOM_PROPAGATE(loom_sym_env_create(NULL, &it.env));
  loom_status st = LOOM_OK;
  /* Scalars first, then buffer shapes: each buffer binds its unbound symbols. */
  for (size_t i = 0; i < nargs && !st; i++)
    if (!f->params[i].is_buffer) st = loom_sym_env_set(it.env, f->params[i].scalar.var, args[i].scalar);
  for (size_t i = 0; i < nargs && !st; i++) {
    const loom_tp_param *p = &f->params[i];
    if (!p->is_buffer) continue;
    const loom_tp_buffer *b = p->buf;
    char what[160];
    snprintf(what, sizeof what, "program @%s buffer '%s'", f->name, b->name);
    st = loom_sym_bind(cx, b->dims, args[i].shape, (size_t)b->ndim, it.env, what);
    if (st) break;
    buf_binding bb = {.buf = b, .data = args[i].data};
    memcpy(bb.shape, args[i].shape, (size_t)b->ndim * sizeof(int64_t));
    if (!LOOM_VEC_PUSH(NULL, &it.bufs, bb)) st = LOOM_OOM();
  }
  if (!st) st = exec(&it, f->body);
  LOOM_VEC_FREE(NULL, &it.bufs);
  LOOM_VEC_FREE(NULL, &it.lets);
  loom_sym_env_destroy(it.env);
  return st;
}
