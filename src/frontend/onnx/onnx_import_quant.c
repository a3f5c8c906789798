/* onnx_import_quant.c — ONNX casts and quantization: Cast / CastLike (with saturate and
 * round_mode for the float8 / e8m0 targets), BitCast, QuantizeLinear / DequantizeLinear
 * (per-tensor, per-axis, blocked), DynamicQuantizeLinear, QLinearMatMul, QLinearConv,
 * MatMulInteger and ConvInteger. Each is composed of graph ops and follows ONNX's reference implementation
 * (onnx/reference/ops/op_*.py), including where it computes in int32 or float64. The
 * low-precision element types themselves are in src/base/lowp.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx/onnx_import_internal.h"

#define NOATTR " "

/* x converted to dt (x itself when it already is). */
static loom_status to_dtype(nctx *c, loom_graph_expr *x, loom_dtype dt, loom_graph_expr **y) {
  if (x->sinfo->dtype == dt) return *y = x, LOOM_OK;
  oimp_add_attr(c, loom_graph_attr_dtype(c->im->m, "dtype", dt));
  return oimp_op1(c, LOOM_GRAPH_OP_CAST, x, y);
}

static loom_status clip(nctx *c, loom_graph_expr *x, double lo, double hi, loom_graph_expr **y) {
  oimp_add_attr(c, loom_graph_attr_float(c->im->m, "min", lo));
  oimp_add_attr(c, loom_graph_attr_float(c->im->m, "max", hi));
  return oimp_op1(c, LOOM_GRAPH_OP_CLIP, x, y);
}

/* The reduction of x over every axis to a scalar. */
static loom_status reduce_all(nctx *c, loom_graph_op op, loom_graph_expr *x, loom_graph_expr **y) {
  const loom_sinfo *s = x->sinfo;
  if (s->kind != LOOM_SINFO_TENSOR || s->ndim < 0) return UNSUP(c->n, "the input's rank is unknown");
  int64_t ax[16];
  for (int k = 0; k < s->ndim && k < 16; k++) ax[k] = k;
  oimp_add_attr(c, loom_graph_attr_ints(c->im->m, "axes", (size_t)s->ndim, ax));
  oimp_add_attr(c, loom_graph_attr_bool(c->im->m, "keepdims", false));
  return oimp_op1(c, op, x, y);
}

/* The element type named by an ONNX type code attribute. */
static loom_status attr_dtype(const nctx *c, const char *name, int64_t code, loom_dtype *out) {
  if (!loom_onnx_elem_dtype((int32_t)code, out))
    return UNSUP(c->n, "%s %s is not supported", name, loom_onnx_elem_name((int32_t)code));
  return LOOM_OK;
}

/* The integer range of a quantized integer type. */
static bool int_range(loom_dtype dt, double *lo, double *hi) {
  if (!loom_dtype_is_int(dt) || loom_dtype_width(dt) > 16) return false;
  unsigned w = loom_dtype_width(dt);
  *lo = loom_dtype_is_signed(dt) ? -ldexp(1, (int)w - 1) : 0;
  *hi = loom_dtype_is_signed(dt) ? ldexp(1, (int)w - 1) - 1 : ldexp(1, (int)w) - 1;
  return true;
}

/* ---- Cast, CastLike, BitCast ---------------------------------------------------------- */

/* Cast (`to`) / CastLike (the second input's dtype). saturate (default 1) applies to the float8
 * targets, round_mode ("up" default, "down", "nearest") to e8m0. */
static loom_status h_cast(nctx *c, const op_entry *e, loom_graph_expr **out) {
  loom_dtype dt;
  if (!strcmp(e->onnx, "CastLike")) {
    dt = c->args[1]->sinfo->dtype;
    if (dt == LOOM_DTYPE_UNKNOWN) return UNSUP(c->n, "the target dtype is unknown");
  } else {
    int64_t to;
    LOOM_PROPAGATE(oimp_attr_int(c, "to", -1, &to));
    if (to < 0) return BAD(c->n, "attribute 'to' is required");
    if (!loom_onnx_elem_dtype((int32_t)to, &dt))
      return UNSUP(c->n, "cast to %s is not supported", loom_onnx_elem_name((int32_t)to));
  }
  int64_t sat;
  const char *rm;
  LOOM_PROPAGATE(oimp_attr_int(c, "saturate", 1, &sat));
  LOOM_PROPAGATE(oimp_attr_str(c, "round_mode", "up", &rm));
  if (strcmp(rm, "up") && strcmp(rm, "down") && strcmp(rm, "nearest"))
    return BAD(c->n, "attribute 'round_mode' is '%s' (up | down | nearest)", rm);
  oimp_add_attr(c, loom_graph_attr_dtype(c->im->m, "dtype", dt));
  if (loom_dtype_is_lowp(dt) && loom_dtype_is_float(dt) && !sat)
    oimp_add_attr(c, loom_graph_attr_bool(c->im->m, "saturate", false));
  if (dt == LOOM_DTYPE_F8E8M0 && strcmp(rm, "up")) oimp_add_attr(c, loom_graph_attr_str(c->im->m, "round_mode", rm));
  return oimp_emit(c, LOOM_GRAPH_OP_CAST, 1, c->args, c->n->outputs[0], out);
}

static loom_status h_bitcast(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e;
  int64_t to;
  loom_dtype dt;
  LOOM_PROPAGATE(oimp_attr_int(c, "to", -1, &to));
  if (to < 0) return BAD(c->n, "attribute 'to' is required");
  LOOM_PROPAGATE(attr_dtype(c, "bitcast to", to, &dt));
  oimp_add_attr(c, loom_graph_attr_dtype(c->im->m, "dtype", dt));
  return oimp_emit(c, LOOM_GRAPH_OP_BITCAST, 1, c->args, c->n->outputs[0], out);
}

/* ---- scales and zero points ------------------------------------------------------------ */

/* How a scale / zero point applies to x. */
typedef struct qlayout {
  int rank;      /* x's rank */
  int64_t axis;  /* normalised quantization axis */
  int64_t block; /* block_size, 0: per-tensor or per-axis */
} qlayout;

static loom_status get_layout(nctx *c, qlayout *q) {
  LOOM_PROPAGATE(oimp_attr_int(c, "axis", 1, &q->axis));
  LOOM_PROPAGATE(oimp_attr_int(c, "block_size", 0, &q->block));
  if (q->block < 0) return BAD(c->n, "block_size is %lld (must be >= 0)", (long long)q->block);
  q->rank = oimp_in_rank(c, 0);
  if (q->rank < 0) return UNSUP(c->n, "the rank of input 0 is unknown");
  return LOOM_OK;
}

static bool is_one(const loom_sym_expr *d) {
  int64_t v;
  return loom_sym_is_const(d, &v) && v == 1;
}

/* p (input `pi`, a scale or zero point) shaped to broadcast against x: one element as is;
 * per-axis (1-D, x's extent on the axis) reshaped to (1.., C, ..1); blocked (x's rank, the
 * axis extent ceil(d / block_size)) repeated block_size times along the axis and cut to d. */
static loom_status shape_param(nctx *c, const qlayout *q, size_t pi, loom_graph_expr **out) {
  loom_graph_expr *p = c->args[pi], *x = c->args[0];
  const loom_sinfo *ps = p->sinfo, *xs = x->sinfo;
  if (ps->kind != LOOM_SINFO_TENSOR || ps->ndim < 0 || !ps->dims) return UNSUP(c->n, "the shape of input %zu is unknown", pi);
  bool single = true;
  for (int k = 0; k < ps->ndim; k++) single = single && is_one(ps->dims[k]);
  if (single && ps->ndim <= q->rank) return *out = p, LOOM_OK;
  if (single) {
    oimp_add_attr(c, loom_graph_attr_syms(c->im->m, "shape", 0, NULL));
    return oimp_op1(c, LOOM_GRAPH_OP_RESHAPE, p, out);
  }
  if (q->axis < -q->rank || q->axis >= q->rank)
    return BAD(c->n, "axis %lld is out of range for input 0 of rank %d", (long long)q->axis, q->rank);
  int64_t axis = q->axis < 0 ? q->axis + q->rank : q->axis;
  if (!xs->dims) return UNSUP(c->n, "the dims of input 0 are unknown");
  if (!q->block) {
    if (ps->ndim != 1)
      return BAD(c->n, "input %zu has rank %d; per-axis quantization needs a 1-D tensor (or block_size)", pi, ps->ndim);
    int64_t a, b;
    if (loom_sym_is_const(ps->dims[0], &a) && loom_sym_is_const(xs->dims[axis], &b) && a != b)
      return BAD(c->n, "input %zu has %lld elements, input 0 has %lld on axis %lld", pi, (long long)a, (long long)b,
                 (long long)axis);
    const loom_sym_expr *d[16];
    for (int k = 0; k < q->rank && k < 16; k++) d[k] = k == axis ? ps->dims[0] : loom_sym_const(c->im->cx, 1);
    oimp_add_attr(c, loom_graph_attr_syms(c->im->m, "shape", (size_t)q->rank, d));
    return oimp_op1(c, LOOM_GRAPH_OP_RESHAPE, p, out);
  }
  if (ps->ndim != q->rank)
    return BAD(c->n, "input %zu has rank %d, input 0 has rank %d (blocked quantization)", pi, ps->ndim, q->rank);
  oimp_add_attr(c, loom_graph_attr_int(c->im->m, "repeats", q->block));
  oimp_add_attr(c, loom_graph_attr_int(c->im->m, "axis", axis));
  LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_REPEAT, p, &p));
  int64_t a, b;
  if (loom_sym_is_const(p->sinfo->dims[axis], &a) && loom_sym_is_const(xs->dims[axis], &b)) {
    if (a < b || a - b >= q->block)
      return BAD(c->n, "input %zu has %lld blocks of %lld on axis %lld, input 0 has %lld", pi,
                 (long long)(a / q->block), (long long)q->block, (long long)axis, (long long)b);
    if (a == b) return *out = p, LOOM_OK;
  }
  const loom_sym_expr *zero = loom_sym_const(c->im->cx, 0), *end = xs->dims[axis], *ax = loom_sym_const(c->im->cx, axis);
  oimp_add_attr(c, loom_graph_attr_syms(c->im->m, "axes", 1, &ax));
  oimp_add_attr(c, loom_graph_attr_syms(c->im->m, "begin", 1, &zero));
  oimp_add_attr(c, loom_graph_attr_syms(c->im->m, "end", 1, &end));
  return oimp_op1(c, LOOM_GRAPH_OP_STRIDED_SLICE, p, out);
}

/* ---- QuantizeLinear / DequantizeLinear ------------------------------------------------- */

static bool is_quant_type(loom_dtype dt) {
  double lo, hi;
  return int_range(dt, &lo, &hi) || dt == LOOM_DTYPE_F8E4M3FN || dt == LOOM_DTYPE_F8E4M3FNUZ ||
         dt == LOOM_DTYPE_F8E5M2 || dt == LOOM_DTYPE_F8E5M2FNUZ || dt == LOOM_DTYPE_F4E2M1;
}

/* The float dtype NumPy computes a / b in for the reference's operand dtypes. */
static loom_dtype common_float(loom_dtype a, loom_dtype b) {
  if (a == b && loom_dtype_is_float(a)) return a;
  if (a == LOOM_DTYPE_F64 || b == LOOM_DTYPE_F64 || !loom_dtype_is_float(a) || !loom_dtype_is_float(b))
    return LOOM_DTYPE_F64;
  return LOOM_DTYPE_F32;
}

/* y = saturate(round(x / y_scale) + y_zero_point): integers round half to even in int32 and
 * clamp to the type's range; float8 converts x / y_scale with `saturate` (the reference ignores
 * their zero point, which must be 0); float4 adds the zero point first and always saturates. */
static loom_status h_quantize(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e;
  qlayout q;
  int64_t sat, odt_code, prec;
  LOOM_PROPAGATE(get_layout(c, &q));
  LOOM_PROPAGATE(oimp_attr_int(c, "saturate", 1, &sat));
  LOOM_PROPAGATE(oimp_attr_int(c, "output_dtype", 0, &odt_code));
  LOOM_PROPAGATE(oimp_attr_int(c, "precision", 0, &prec));
  bool has_zp = oimp_has_input(c, 2);
  loom_dtype odt = LOOM_DTYPE_U8;
  if (odt_code) LOOM_PROPAGATE(attr_dtype(c, "output_dtype", odt_code, &odt));
  if (has_zp) {
    loom_dtype z = c->args[2]->sinfo->dtype;
    if (odt_code && z != odt)
      return BAD(c->n, "output_dtype is %s but the zero point is %s", loom_dtype_name(odt), loom_dtype_name(z));
    odt = z;
  }
  if (!is_quant_type(odt)) return BAD(c->n, "output type %s is not a quantized type", loom_dtype_name(odt));
  loom_graph_expr *x = c->args[0], *s, *zp = NULL, *y;
  LOOM_PROPAGATE(shape_param(c, &q, 1, &s));
  if (has_zp) LOOM_PROPAGATE(shape_param(c, &q, 2, &zp));
  loom_dtype cdt = common_float(x->sinfo->dtype, s->sinfo->dtype);
  if (prec) LOOM_PROPAGATE(attr_dtype(c, "precision", prec, &cdt));
  LOOM_PROPAGATE(to_dtype(c, x, cdt, &x));
  LOOM_PROPAGATE(to_dtype(c, s, cdt, &s));
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_DIV, x, s, &y));
  double lo, hi;
  if (int_range(odt, &lo, &hi)) {
    LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_ROUND, y, &y));
    LOOM_PROPAGATE(to_dtype(c, y, LOOM_DTYPE_I32, &y));
    if (zp) {
      LOOM_PROPAGATE(to_dtype(c, zp, LOOM_DTYPE_I32, &zp));
      LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_ADD, y, zp, &y));
    }
    LOOM_PROPAGATE(clip(c, y, lo, hi, &y));
  } else if (odt == LOOM_DTYPE_F4E2M1 && zp) {
    LOOM_PROPAGATE(to_dtype(c, zp, cdt, &zp));
    LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_ADD, y, zp, &y));
  }
  oimp_add_attr(c, loom_graph_attr_dtype(c->im->m, "dtype", odt));
  if (!sat && odt != LOOM_DTYPE_F4E2M1 && loom_dtype_is_float(odt))
    oimp_add_attr(c, loom_graph_attr_bool(c->im->m, "saturate", false));
  return oimp_emit(c, LOOM_GRAPH_OP_CAST, 1, &y, c->n->outputs[0], out);
}

/* y = (x - x_zero_point) * x_scale in float32 (float64 for 32-bit integer x, as NumPy), then
 * the scale's dtype or output_dtype. float8 / float4 inputs have no zero point to subtract. */
static loom_status h_dequantize(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e;
  qlayout q;
  int64_t odt_code;
  LOOM_PROPAGATE(get_layout(c, &q));
  LOOM_PROPAGATE(oimp_attr_int(c, "output_dtype", 0, &odt_code));
  loom_graph_expr *x = c->args[0], *s, *zp, *y;
  loom_dtype xdt = x->sinfo->dtype, odt = c->args[1]->sinfo->dtype;
  if (odt_code) LOOM_PROPAGATE(attr_dtype(c, "output_dtype", odt_code, &odt));
  if (!loom_dtype_is_float(odt) || loom_dtype_is_lowp(odt))
    return BAD(c->n, "output type %s is not float32, float16, bfloat16 or float64", loom_dtype_name(odt));
  loom_dtype cdt = loom_dtype_is_int(xdt) && loom_dtype_width(xdt) >= 32 ? LOOM_DTYPE_F64 : LOOM_DTYPE_F32;
  LOOM_PROPAGATE(to_dtype(c, x, cdt, &y));
  if (oimp_has_input(c, 2) && !loom_dtype_is_float(xdt)) {
    if (c->args[2]->sinfo->dtype != xdt)
      return BAD(c->n, "the zero point is %s but x is %s", loom_dtype_name(c->args[2]->sinfo->dtype), loom_dtype_name(xdt));
    LOOM_PROPAGATE(shape_param(c, &q, 2, &zp));
    LOOM_PROPAGATE(to_dtype(c, zp, cdt, &zp));
    LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_SUB, y, zp, &y));
  }
  LOOM_PROPAGATE(shape_param(c, &q, 1, &s));
  LOOM_PROPAGATE(to_dtype(c, s, cdt, &s));
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MUL, y, s, &y));
  oimp_add_attr(c, loom_graph_attr_dtype(c->im->m, "dtype", odt));
  return oimp_emit(c, LOOM_GRAPH_OP_CAST, 1, &y, c->n->outputs[0], out);
}

/* The reference: scale = (max(0, max x) - min(0, min x)) / 255 (1 / 255 when they are equal),
 * zero point = round(clip(-min / scale, 0, 255)), y = clip(round(x / scale) + zp, 0, 255) as
 * uint8; all in float32. */
static loom_status h_dynamic_quantize(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e;
  loom_graph_expr *x = c->args[0], *mx, *mn, *rng, *eq, *one, *scale, *zp, *y;
  if (x->sinfo->dtype != LOOM_DTYPE_F32) return UNSUP(c->n, "input of dtype %s (float32 only)", loom_dtype_name(x->sinfo->dtype));
  LOOM_PROPAGATE(reduce_all(c, LOOM_GRAPH_OP_MAX, x, &mx));
  LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_MAXIMUM, mx, 0, &mx));
  LOOM_PROPAGATE(reduce_all(c, LOOM_GRAPH_OP_MIN, x, &mn));
  LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_MINIMUM, mn, 0, &mn));
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_SUB, mx, mn, &rng));
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_EQUAL, mx, mn, &eq));
  if (!(one = loom_graph_const_scalar(c->im->m, LOOM_DTYPE_F32, 1))) return LOOM_OOM();
  loom_graph_expr *w[3] = {eq, one, rng};
  LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_WHERE, 3, w, NULL, &rng));
  LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_DIV, rng, 255, &scale));
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_DIV, mn, scale, &zp));
  LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_NEG, zp, &zp));
  LOOM_PROPAGATE(clip(c, zp, 0, 255, &zp));
  LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_ROUND, zp, &zp));
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_DIV, x, scale, &y));
  LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_ROUND, y, &y));
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_ADD, y, zp, &y));
  LOOM_PROPAGATE(clip(c, y, 0, 255, &y));
  oimp_add_attr(c, loom_graph_attr_dtype(c->im->m, "dtype", LOOM_DTYPE_U8));
  LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_CAST, 1, &y, c->n->outputs[0], out));
  if (c->n->n_outputs > 1 && *c->n->outputs[1]) LOOM_PROPAGATE(oimp_bind(c->im, c->n->outputs[1], scale, NULL));
  if (c->n->n_outputs > 2 && *c->n->outputs[2]) {
    LOOM_PROPAGATE(to_dtype(c, zp, LOOM_DTYPE_U8, &zp));
    LOOM_PROPAGATE(oimp_bind(c->im, c->n->outputs[2], zp, NULL));
  }
  return LOOM_OK;
}

/* ---- integer matmul and convolution ---------------------------------------------------- */

/* cast(input i, int32) - cast(input zi, int32) (the zero point omitted: 0); a 1-D zero point
 * of more than one element is reshaped by `zshape` first (rank `zr`) so it broadcasts. */
static loom_status centered(nctx *c, size_t i, size_t zi, int zr, const loom_sym_expr *const *zshape,
                            loom_graph_expr **out) {
  loom_graph_expr *v, *z;
  LOOM_PROPAGATE(to_dtype(c, c->args[i], LOOM_DTYPE_I32, &v));
  if (!oimp_has_input(c, zi)) return *out = v, LOOM_OK;
  z = c->args[zi];
  const loom_sinfo *zs = z->sinfo;
  if (zs->kind != LOOM_SINFO_TENSOR || zs->ndim < 0 || !zs->dims) return UNSUP(c->n, "the shape of input %zu is unknown", zi);
  bool single = true;
  for (int k = 0; k < zs->ndim; k++) single = single && is_one(zs->dims[k]);
  if (!single) {
    if (zs->ndim != 1 || !zshape) return UNSUP(c->n, "input %zu: only a scalar or 1-D zero point is supported", zi);
    const loom_sym_expr *d[8];
    for (int k = 0; k < zr; k++) d[k] = zshape[k] ? zshape[k] : zs->dims[0];
    oimp_add_attr(c, loom_graph_attr_syms(c->im->m, "shape", (size_t)zr, d));
    LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_RESHAPE, z, &z));
  }
  LOOM_PROPAGATE(to_dtype(c, z, LOOM_DTYPE_I32, &z));
  return oimp_op2(c, LOOM_GRAPH_OP_SUB, v, z, out);
}

/* (A - a_zero_point) @ (B - b_zero_point) in int32; a 1-D a_zero_point is per row of A. */
static loom_status h_matmul_integer(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e;
  const loom_sym_expr *one = loom_sym_const(c->im->cx, 1), *row[2] = {NULL, one}, *col[1] = {NULL};
  loom_graph_expr *a, *b;
  LOOM_PROPAGATE(centered(c, 0, 2, 2, row, &a));
  LOOM_PROPAGATE(centered(c, 1, 3, 1, col, &b));
  loom_graph_expr *ab[2] = {a, b};
  return oimp_emit(c, LOOM_GRAPH_OP_MATMUL, 2, ab, c->n->outputs[0], out);
}

/* Whether input i is absent (optional) or has one element. */
static bool single_or_absent(const nctx *c, size_t i) {
  if (!oimp_has_input(c, i)) return true;
  const loom_sinfo *s = c->args[i]->sinfo;
  bool single = s->kind == LOOM_SINFO_TENSOR && s->ndim >= 0 && s->dims;
  for (int d = 0; single && d < s->ndim; d++) single = is_one(s->dims[d]);
  return single;
}

/* The reference's requantization of an int32 accumulator: acc * scale (scale = x_scale *
 * w_scale / y_scale in the scales' dtype; acc and the rest in float64, as NumPy promotes int32
 * times float32), + y_zero_point (input `yz`), rounded half to even, clamped to `odt`. */
static loom_status requantize_as(nctx *c, loom_graph_expr *acc, loom_graph_expr *scale, size_t yz, loom_dtype odt,
                                 const char *name, loom_graph_expr **out) {
  double lo, hi;
  if (!int_range(odt, &lo, &hi)) return BAD(c->n, "output type %s is not an integer type", loom_dtype_name(odt));
  loom_graph_expr *y;
  LOOM_PROPAGATE(to_dtype(c, scale, LOOM_DTYPE_F64, &scale));
  LOOM_PROPAGATE(to_dtype(c, acc, LOOM_DTYPE_F64, &acc));
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MUL, acc, scale, &y));
  if (oimp_has_input(c, yz)) {
    loom_graph_expr *z;
    LOOM_PROPAGATE(to_dtype(c, c->args[yz], LOOM_DTYPE_F64, &z));
    LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_ADD, y, z, &y));
  }
  LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_ROUND, y, &y));
  LOOM_PROPAGATE(clip(c, y, lo, hi, &y));
  oimp_add_attr(c, loom_graph_attr_dtype(c->im->m, "dtype", odt));
  return oimp_emit(c, LOOM_GRAPH_OP_CAST, 1, &y, name, out);
}

static loom_status requantize(nctx *c, loom_graph_expr *acc, loom_graph_expr *scale, size_t yz, loom_dtype odt,
                              loom_graph_expr **out) {
  return requantize_as(c, acc, scale, yz, odt, c->n->outputs[0], out);
}

/* The reference: C = (a - a_zp) @ (b - b_zp) in int32, requantized with a_scale * b_scale /
 * y_scale into y_zp's type (a's without one). Per-tensor scales and zero points only. */
static loom_status h_qlinear_matmul(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e;
  for (size_t i = 1; i < 8; i++) {
    if (i == 3) continue;
    if ((i == 1 || i == 4 || i == 6) && !oimp_has_input(c, i)) return BAD(c->n, "input %zu (a scale) is required", i);
    if (!single_or_absent(c, i))
      return UNSUP(c->n, "input %zu: only per-tensor (one-element) scales and zero points are supported", i);
  }
  loom_dtype odt = oimp_has_input(c, 7) ? c->args[7]->sinfo->dtype : c->args[0]->sinfo->dtype;
  loom_graph_expr *a, *b, *m, *s;
  LOOM_PROPAGATE(centered(c, 0, 2, 0, NULL, &a));
  LOOM_PROPAGATE(centered(c, 3, 5, 0, NULL, &b));
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MATMUL, a, b, &m));
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MUL, c->args[1], c->args[4], &s));
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_DIV, s, c->args[6], &s));
  return requantize(c, m, s, 7, odt, out);
}

/* Conv of (input x - input xz) and (input w - input wz) in int32 (a 1-D w zero point is per
 * output channel) by the importer's Conv handler; *r is the weights' rank. */
static loom_status conv_centered(nctx *c, size_t x, size_t xz, size_t w, size_t wz, int *r, loom_graph_expr **out) {
  const op_entry *conv = oimp_find_entry(NULL, "Conv");
  if (!conv) return UNSUP(c->n, "Conv is not supported");
  *r = oimp_in_rank(c, w);
  if (*r < 3 || *r > 8) return UNSUP(c->n, "weights of rank %d", *r);
  if (!single_or_absent(c, xz)) return UNSUP(c->n, "input %zu: only a per-tensor x zero point is supported", xz);
  const loom_sym_expr *one = loom_sym_const(c->im->cx, 1), *wzs[8];
  for (int k = 0; k < *r; k++) wzs[k] = k == 0 ? NULL : one;
  loom_graph_expr *xi, *wi;
  LOOM_PROPAGATE(centered(c, x, xz, 0, NULL, &xi));
  LOOM_PROPAGATE(centered(c, w, wz, *r, wzs, &wi));
  c->args[0] = xi, c->args[1] = wi, c->nargs = 2;
  c->consts[0] = c->consts[1] = NULL;
  return conv->h(c, conv, out);
}

/* ---- QLinearConv / ConvInteger as an int8 GEMM --------------------------------------------
 *
 * With constant weights w (O, C/G, k..) of u8 / i8, a one-element x zero point (a constant when
 * the input is padded) and a one-element weight zero point (or a per-channel one whose entries
 * are equal), the convolution is an int8 matmul over the input's patches:
 *   xt  = permute_dims(x, [0, 2.., 1])                       (N, h.., C) channels last
 *   xp  = pad(xt, value = x_zero_point)                      padded taps centre to 0
 *   col = concat(strided_slice(xp, tap t, group g) for t, axis=-1)   (N, y.., K * C/G)
 *   acc = matmul(i32(reshape(col, [N*P, K*C/G])) - xz, i32(Wt_g) - wz)   (N*P, O/G) per group
 * Wt_g ((t, c), o) = w[g*O/G + o, c, t] is laid out here, once; simplify makes the matmul a
 * matmul_integer and pack lays Wt_g out in the kernel's pair-word panels with wz subtracted, so
 * no per-call work touches the weights. The caller requantizes acc (N*P, O) (per-channel
 * scales broadcast along its last axis; the matmul's epilogue) and transposes it back to
 * (N, O, y..). One matrix of N*P rows, not N of P: the row loop is parallel at batch 1. Other forms
 * (run-time weights, per-channel distinct zero points, many small groups, depthwise) keep the
 * composed conv of the centred operands. */
#define QC_MAXS 6

typedef struct qconv_form {
  size_t ns;
  int64_t kern[QC_MAXS], strides[QC_MAXS], dil[QC_MAXS], pads[2 * QC_MAXS], groups;
  int64_t O, Cg, K;
} qconv_form;

/* The one value of weight zero point input wz (0 when absent; every entry of a per-channel one
 * equal) when it is a constant of the weights' (input wi) dtype, or false. */
static bool weight_zero(const nctx *c, size_t wi, size_t wz, int64_t *v) {
  *v = 0;
  if (!oimp_has_input(c, wz)) return true;
  const loom_onnx_tensor *t = c->consts[wz];
  if (!t || t->dtype != c->args[wi]->sinfo->dtype) return false;
  loom_graph_tensor g = {.dtype = t->dtype, .data = t->data};
  for (int64_t i = 0; i < t->numel; i++) {
    int64_t z = loom_graph_tensor_get_i64(&g, (size_t)i);
    if (i && z != *v) return false;
    *v = z;
  }
  return t->numel >= 1;
}

/* Whether QLinearConv / ConvInteger (x input xi, zero point xz, weights wi, zero point wz) has
 * the form above; *f filled when it has. */
static loom_status qconv_form_of(nctx *c, size_t xi, size_t xz, size_t wi, size_t wz, qconv_form *f, bool *ok) {
  *ok = false;
  const loom_onnx_tensor *w = c->consts[wi];
  const loom_sinfo *xs = c->args[xi]->sinfo;
  int r = oimp_in_rank(c, xi);
  if (!w || r < 3 || r > QC_MAXS + 2 || (int)w->rank != r || !xs->dims || (xs->dtype != LOOM_DTYPE_U8 && xs->dtype != LOOM_DTYPE_I8) ||
      (w->dtype != LOOM_DTYPE_U8 && w->dtype != LOOM_DTYPE_I8) || !single_or_absent(c, xz))
    return LOOM_OK;
  f->ns = (size_t)r - 2;
  LOOM_PROPAGATE(oimp_ints_or(c, "pads", f->pads, 2 * f->ns, 0));
  LOOM_PROPAGATE(oimp_ints_or(c, "strides", f->strides, f->ns, 1));
  LOOM_PROPAGATE(oimp_ints_or(c, "dilations", f->dil, f->ns, 1));
  LOOM_PROPAGATE(oimp_attr_int(c, "group", 1, &f->groups));
  f->K = 1;
  for (size_t k = 0; k < f->ns; k++) f->kern[k] = w->dims[k + 2], f->K *= w->dims[k + 2];
  if (loom_onnx_node_attr(c->n, "kernel_shape")) {
    int64_t ks[QC_MAXS];
    LOOM_PROPAGATE(oimp_ints_or(c, "kernel_shape", ks, f->ns, 1));
    for (size_t k = 0; k < f->ns; k++)
      if (ks[k] != f->kern[k]) return LOOM_OK; /* the composed form reports it */
  }
  for (size_t k = 0; k < f->ns; k++)
    if (f->strides[k] < 1 || f->dil[k] < 1 || f->kern[k] < 1 || f->pads[k] < 0 || f->pads[f->ns + k] < 0) return LOOM_OK;
  loom_status st = oimp_auto_pads(c, f->ns, f->kern, f->strides, f->dil, f->pads);
  if (st) { /* SAME_* on a symbolic extent: the composed form says so */
    loom_status_free(st);
    return LOOM_OK;
  }
  int64_t C;
  f->O = w->dims[0], f->Cg = w->dims[1];
  if (!loom_sym_is_const(xs->dims[1], &C) || f->groups < 1 || C != f->Cg * f->groups || f->O % f->groups || f->O < 1 || f->Cg < 1)
    return LOOM_OK;
  int64_t Og = f->O / f->groups, z;
  if (f->groups > 1 && (f->groups > 16 || Og < 8)) return LOOM_OK; /* depthwise / many small groups */
  if (!weight_zero(c, wi, wz, &z)) return LOOM_OK;
  bool pad = false;
  for (size_t k = 0; k < 2 * f->ns; k++) pad |= f->pads[k] > 0;
  if (pad && oimp_has_input(c, xz) && !c->consts[xz]) return LOOM_OK; /* the pad value must be known */
  *ok = true;
  return LOOM_OK;
}

static loom_status syms_attr(nctx *c, const char *name, size_t n, const int64_t *v) {
  const loom_sym_expr *d[16];
  for (size_t k = 0; k < n; k++) d[k] = loom_sym_const(c->im->cx, v[k]);
  oimp_add_attr(c, loom_graph_attr_syms(c->im->m, name, n, d));
  return LOOM_OK;
}

/* Wt of group g: a constant (K * Cg, Og) of w's dtype, row t * Cg + c, column o = w[g*Og + o, c, t]. */
static loom_status group_weights(nctx *c, const loom_onnx_tensor *w, const qconv_form *f, int64_t g, loom_graph_expr **out) {
  int64_t Og = f->O / f->groups, rows = f->K * f->Cg;
  uint8_t *buf = malloc((size_t)(rows * Og));
  if (!buf) return LOOM_OOM();
  const uint8_t *src = w->data; /* one byte per element */
  for (int64_t o = 0; o < Og; o++)
    for (int64_t ch = 0; ch < f->Cg; ch++)
      for (int64_t t = 0; t < f->K; t++)
        buf[(t * f->Cg + ch) * Og + o] = src[((g * Og + o) * f->Cg + ch) * f->K + t];
  const loom_sym_expr *d[2] = {loom_sym_const(c->im->cx, rows), loom_sym_const(c->im->cx, Og)};
  const loom_sinfo *si = loom_sinfo_tensor(c->im->m, w->dtype, 2, d, NULL);
  *out = si ? loom_graph_const_new(c->im->m, si, buf, (size_t)(rows * Og)) : NULL;
  free(buf);
  return *out ? LOOM_OK : LOOM_OOM();
}

/* acc (N * P, O) i32 of the form above; *ydims the output's (N, O, y..). */
static loom_status qconv_acc(nctx *c, size_t xi, size_t xz, size_t wi, size_t wz, const qconv_form *f, loom_graph_expr **acc,
                             const loom_sym_expr **ydims) {
  imp *im = c->im;
  loom_sym_ctx *cx = im->cx;
  size_t ns = f->ns, r = ns + 2;
  loom_graph_expr *x = c->args[xi], *xp;
  int64_t perm[QC_MAXS + 2];
  perm[0] = 0, perm[r - 1] = 1;
  for (size_t k = 0; k < ns; k++) perm[k + 1] = (int64_t)k + 2;
  oimp_add_attr(c, loom_graph_attr_ints(im->m, "axes", r, perm));
  LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_PERMUTE_DIMS, x, &xp));
  bool pad = false;
  for (size_t k = 0; k < 2 * ns; k++) pad |= f->pads[k] > 0;
  if (pad) {
    int64_t pv[2 * (QC_MAXS + 2)] = {0};
    for (size_t k = 0; k < ns; k++) pv[1 + k] = f->pads[k], pv[r + 1 + k] = f->pads[ns + k];
    LOOM_PROPAGATE(syms_attr(c, "pads", 2 * r, pv));
    double zv = oimp_has_input(c, xz) ? oimp_scalar_f64(c->consts[xz]) : 0;
    oimp_add_attr(c, loom_graph_attr_float(im->m, "value", zv));
    LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_PAD, xp, &xp));
  }
  const loom_sinfo *ps = xp->sinfo;
  /* the output extents: floordiv(hp - d (k - 1) - 1, s) + 1 */
  const loom_sym_expr *yd[QC_MAXS];
  for (size_t k = 0; k < ns; k++) {
    const loom_sym_expr *span = loom_sym_sub(cx, ps->dims[1 + k], loom_sym_const(cx, f->dil[k] * (f->kern[k] - 1) + 1));
    yd[k] = loom_sym_add(cx, loom_sym_floordiv(cx, span, loom_sym_const(cx, f->strides[k])), loom_sym_const(cx, 1));
  }
  int64_t Og = f->O / f->groups;
  loom_graph_expr *parts[16], *zx = oimp_has_input(c, xz) ? c->args[xz] : NULL, *zw;
  int64_t zwv;
  weight_zero(c, wi, wz, &zwv);
  LOOM_PROPAGATE(oimp_scalar(c, c->consts[wi]->dtype, (double)zwv, &zw));
  loom_graph_expr **taps = malloc(sizeof *taps * (size_t)f->K);
  if (!taps) return LOOM_OOM();
  loom_status st = LOOM_OK;
  const loom_sym_expr *P = NULL, *N = x->sinfo->dims[0];
  for (int64_t g = 0; g < f->groups && !st; g++) {
    /* the taps of group g, channels last */
    for (int64_t t = 0; t < f->K && !st; t++) {
      const loom_sym_expr *ax[QC_MAXS + 1], *b[QC_MAXS + 1], *e[QC_MAXS + 1], *s[QC_MAXS + 1];
      int64_t rem = t;
      bool whole = f->groups == 1;
      for (size_t k = ns; k-- > 0;) {
        int64_t tk = rem % f->kern[k];
        rem /= f->kern[k];
        ax[k] = loom_sym_const(cx, (int64_t)k + 1);
        b[k] = loom_sym_const(cx, tk * f->dil[k]);
        e[k] = loom_sym_add(cx, b[k], loom_sym_add(cx, loom_sym_mul(cx, loom_sym_sub(cx, yd[k], loom_sym_const(cx, 1)),
                                                                     loom_sym_const(cx, f->strides[k])),
                                                  loom_sym_const(cx, 1)));
        s[k] = loom_sym_const(cx, f->strides[k]);
        whole = whole && f->kern[k] == 1 && f->strides[k] == 1;
      }
      ax[ns] = loom_sym_const(cx, (int64_t)r - 1), b[ns] = loom_sym_const(cx, g * f->Cg);
      e[ns] = loom_sym_const(cx, (g + 1) * f->Cg), s[ns] = loom_sym_const(cx, 1);
      if (whole) {
        taps[t] = xp;
        continue;
      }
      oimp_add_attr(c, loom_graph_attr_syms(im->m, "axes", ns + 1, ax));
      oimp_add_attr(c, loom_graph_attr_syms(im->m, "begin", ns + 1, b));
      oimp_add_attr(c, loom_graph_attr_syms(im->m, "end", ns + 1, e));
      oimp_add_attr(c, loom_graph_attr_syms(im->m, "strides", ns + 1, s));
      st = oimp_op1(c, LOOM_GRAPH_OP_STRIDED_SLICE, xp, &taps[t]);
    }
    loom_graph_expr *col = taps[0], *wt, *m;
    if (!st && f->K > 1) { /* one concat of every tap */
      oimp_add_attr(c, loom_graph_attr_int(im->m, "axis", (int64_t)r - 1));
      st = oimp_emit(c, LOOM_GRAPH_OP_CONCAT, (size_t)f->K, taps, NULL, &col);
    }
    if (st) break;
    const loom_sinfo *cs = col->sinfo;
    P = cs->dims[1];
    for (size_t k = 1; k < ns; k++) P = loom_sym_mul(cx, P, cs->dims[1 + k]);
    for (size_t k = 0; k < ns; k++) ydims[2 + k] = cs->dims[1 + k];
    /* one matrix of N * P rows: the matmul's row loop is the parallel one at batch 1 */
    const loom_sym_expr *fd[2] = {loom_sym_mul(cx, N, P), cs->dims[r - 1]};
    oimp_add_attr(c, loom_graph_attr_syms(im->m, "shape", 2, fd));
    if ((st = oimp_op1(c, LOOM_GRAPH_OP_RESHAPE, col, &col))) break;
    if ((st = to_dtype(c, col, LOOM_DTYPE_I32, &col))) break;
    if (zx) {
      loom_graph_expr *z;
      if ((st = to_dtype(c, zx, LOOM_DTYPE_I32, &z)) || (st = oimp_op2(c, LOOM_GRAPH_OP_SUB, col, z, &col))) break;
    }
    loom_graph_expr *z;
    if ((st = group_weights(c, c->consts[wi], f, g, &wt)) || (st = to_dtype(c, wt, LOOM_DTYPE_I32, &wt)) ||
        (st = to_dtype(c, zw, LOOM_DTYPE_I32, &z)) || (st = oimp_op2(c, LOOM_GRAPH_OP_SUB, wt, z, &wt)) ||
        (st = oimp_op2(c, LOOM_GRAPH_OP_MATMUL, col, wt, &m)))
      break;
    parts[g] = m;
  }
  free(taps);
  LOOM_PROPAGATE(st);
  (void)Og;
  ydims[0] = N, ydims[1] = loom_sym_const(cx, f->O);
  if (f->groups == 1) return *acc = parts[0], LOOM_OK;
  oimp_add_attr(c, loom_graph_attr_int(im->m, "axis", 1));
  return oimp_emit(c, LOOM_GRAPH_OP_CONCAT, (size_t)f->groups, parts, NULL, acc);
}

/* y (N * P, O) to the output (N, O, y..), bound to the node's output. */
static loom_status qconv_out(nctx *c, loom_graph_expr *y, size_t ns, const loom_sym_expr *const *ydims, loom_graph_expr **out) {
  static const int64_t tr[3] = {0, 2, 1};
  loom_sym_ctx *cx = c->im->cx;
  const loom_sym_expr *P = ydims[2], *npo[3];
  for (size_t k = 1; k < ns; k++) P = loom_sym_mul(cx, P, ydims[2 + k]);
  npo[0] = ydims[0], npo[1] = P, npo[2] = ydims[1];
  oimp_add_attr(c, loom_graph_attr_syms(c->im->m, "shape", 3, npo));
  LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_RESHAPE, y, &y));
  oimp_add_attr(c, loom_graph_attr_ints(c->im->m, "axes", 3, tr));
  LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_PERMUTE_DIMS, y, &y));
  oimp_add_attr(c, loom_graph_attr_syms(c->im->m, "shape", ns + 2, ydims));
  return oimp_emit(c, LOOM_GRAPH_OP_RESHAPE, 1, &y, c->n->outputs[0], out);
}

static loom_status h_conv_integer(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e;
  qconv_form f;
  bool gemm;
  LOOM_PROPAGATE(qconv_form_of(c, 0, 2, 1, 3, &f, &gemm));
  if (gemm) {
    loom_graph_expr *acc;
    const loom_sym_expr *yd[QC_MAXS + 2];
    LOOM_PROPAGATE(qconv_acc(c, 0, 2, 1, 3, &f, &acc, yd));
    return qconv_out(c, acc, f.ns, yd, out);
  }
  int r;
  return conv_centered(c, 0, 2, 1, 3, &r, out);
}

/* The reference: conv of the centered inputs in int32 (the bias input B is not supported: the
 * importer takes at most 8 inputs), requantized with x_scale *
 * w_scale / y_scale (w_scale per output channel when 1-D) into y_zp's type (x's without one). */
static loom_status h_qlinear_conv(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e;
  for (size_t i = 1; i < 8; i++)
    if ((i == 1 || i == 4 || i == 6) && !oimp_has_input(c, i)) return BAD(c->n, "input %zu (a scale) is required", i);
  if (!single_or_absent(c, 1) || !single_or_absent(c, 6) || !single_or_absent(c, 7))
    return UNSUP(c->n, "only per-tensor x and y scales and zero points are supported");
  loom_dtype odt = oimp_has_input(c, 7) ? c->args[7]->sinfo->dtype : c->args[0]->sinfo->dtype;
  loom_graph_expr *xs = c->args[1], *ws = c->args[4], *ys = c->args[6], *acc, *s;
  if (ws->sinfo->kind != LOOM_SINFO_TENSOR || ws->sinfo->ndim < 0 || !ws->sinfo->dims)
    return UNSUP(c->n, "the shape of w_scale is unknown");
  bool single = true;
  for (int d = 0; d < ws->sinfo->ndim; d++) single = single && is_one(ws->sinfo->dims[d]);
  if (!single && ws->sinfo->ndim != 1) return BAD(c->n, "w_scale has rank %d (a scalar or 1-D)", ws->sinfo->ndim);
  qconv_form f;
  bool gemm;
  LOOM_PROPAGATE(qconv_form_of(c, 0, 2, 3, 5, &f, &gemm));
  if (gemm) { /* acc (N * P, O): a 1-D w_scale broadcasts along its last axis */
    const loom_sym_expr *yd[QC_MAXS + 2];
    loom_graph_expr *y;
    LOOM_PROPAGATE(qconv_acc(c, 0, 2, 3, 5, &f, &acc, yd));
    LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MUL, xs, ws, &s));
    LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_DIV, s, ys, &s));
    LOOM_PROPAGATE(requantize_as(c, acc, s, 7, odt, NULL, &y));
    return qconv_out(c, y, f.ns, yd, out);
  }
  int r;
  LOOM_PROPAGATE(conv_centered(c, 0, 2, 3, 5, &r, &acc));
  if (!single) { /* per output channel: (1, O, 1, ...) */
    const loom_sym_expr *one = loom_sym_const(c->im->cx, 1), *d[8];
    for (int k = 0; k < r; k++) d[k] = k == 1 ? ws->sinfo->dims[0] : one;
    oimp_add_attr(c, loom_graph_attr_syms(c->im->m, "shape", (size_t)r, d));
    LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_RESHAPE, ws, &ws));
  }
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MUL, xs, ws, &s));
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_DIV, s, ys, &s));
  return requantize(c, acc, s, 7, odt, out);
}

const op_entry oimp_quant_table[] = {
    {"Cast", OIMP_OP_NONE, h_cast, 1, 1, " to saturate round_mode ", false},
    {"CastLike", OIMP_OP_NONE, h_cast, 2, 2, " saturate round_mode ", false},
    {"BitCast", OIMP_OP_NONE, h_bitcast, 1, 1, " to ", false},
    {"QuantizeLinear", OIMP_OP_NONE, h_quantize, 2, 3, " axis saturate block_size output_dtype precision ", false},
    {"DequantizeLinear", OIMP_OP_NONE, h_dequantize, 2, 3, " axis block_size output_dtype ", false},
    {"DynamicQuantizeLinear", OIMP_OP_NONE, h_dynamic_quantize, 1, 1, NOATTR, true},
    {"QLinearMatMul", OIMP_OP_NONE, h_qlinear_matmul, 6, 8, NOATTR, false},
    {"MatMulInteger", OIMP_OP_NONE, h_matmul_integer, 2, 4, NOATTR, false},
    {"ConvInteger", OIMP_OP_NONE, h_conv_integer, 2, 4, " auto_pad dilations group kernel_shape pads strides ", false},
    {"QLinearConv", OIMP_OP_NONE, h_qlinear_conv, 8, 8, " auto_pad dilations group kernel_shape pads strides ", false},
};
const size_t oimp_quant_table_len = sizeof oimp_quant_table / sizeof oimp_quant_table[0];
