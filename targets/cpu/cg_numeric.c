/* cg_numeric.c — the numeric pieces of expression lowering (cg_expr.c): storage conversions
 * between register and memory values (bf16 bits, the float8 / float4 formats of base/lowp.h,
 * saturating, by the same rules) and the inline f32 math that vectorises where a libm call does
 * not (exp, sigmoid and SiLU, tanh, erf). */
#include <math.h>
#include <stdio.h>

#include "base/lowp.h"

#include "targets/cpu/cg_internal.h"

/* float -> bf16 bits, round to nearest even, NaN kept quiet (as loom_f32_to_bf16). */
static LLVMValueRef f32_to_bf16(cg *g, LLVMValueRef v) {
  LLVMValueRef u = LLVMBuildBitCast(g->b, v, g->t_i32, "");
  LLVMValueRef c16 = LLVMConstInt(g->t_i32, 16, 0);
  LLVMValueRef hi = LLVMBuildLShr(g->b, u, c16, "");
  LLVMValueRef rounding = LLVMBuildAdd(g->b, LLVMConstInt(g->t_i32, 0x7fff, 0),
                                       LLVMBuildAnd(g->b, hi, LLVMConstInt(g->t_i32, 1, 0), ""), "");
  LLVMValueRef rounded = LLVMBuildLShr(g->b, LLVMBuildAdd(g->b, u, rounding, ""), c16, "");
  LLVMValueRef absu = LLVMBuildAnd(g->b, u, LLVMConstInt(g->t_i32, 0x7fffffff, 0), "");
  LLVMValueRef isnan = LLVMBuildICmp(g->b, LLVMIntUGT, absu, LLVMConstInt(g->t_i32, 0x7f800000, 0), "");
  LLVMValueRef quiet = LLVMBuildOr(g->b, hi, LLVMConstInt(g->t_i32, 0x40, 0), "");
  return LLVMBuildTrunc(g->b, LLVMBuildSelect(g->b, isnan, quiet, rounded, ""), g->t_i16, "");
}

static LLVMValueRef bf16_to_f32(cg *g, LLVMValueRef bits) {
  LLVMValueRef u = LLVMBuildShl(g->b, LLVMBuildZExt(g->b, bits, g->t_i32, ""), LLVMConstInt(g->t_i32, 16, 0), "");
  return LLVMBuildBitCast(g->b, u, g->t_f32, "");
}

/* ---- float8 / float4 (base/lowp.h: the same formats and rules) ---- */

/* The table of the 256 byte values of lowp float t as f32 (every one is exact in f32). */
static LLVMValueRef lowp_table(cg *g, loom_dtype t) {
  char name[48];
  snprintf(name, sizeof name, "loom.lowp.%s", loom_dtype_name(t));
  LLVMValueRef gv = LLVMGetNamedGlobal(g->mod, name);
  if (gv) return gv;
  LLVMValueRef vals[256];
  for (int i = 0; i < 256; i++) vals[i] = LLVMConstReal(g->t_f32, loom_lowp_to_f64(t, (uint8_t)i));
  gv = LLVMAddGlobal(g->mod, LLVMArrayType(g->t_f32, 256), name);
  LLVMSetInitializer(gv, LLVMConstArray(g->t_f32, vals, 256));
  LLVMSetGlobalConstant(gv, 1);
  LLVMSetLinkage(gv, LLVMPrivateLinkage);
  return gv;
}

static LLVMValueRef lowp_decode(cg *g, loom_dtype t, LLVMValueRef byte) {
  LLVMValueRef idx[2] = {LLVMConstInt(g->t_i32, 0, 0), LLVMBuildZExt(g->b, byte, g->t_i32, "")};
  LLVMValueRef p = LLVMBuildInBoundsGEP2(g->b, LLVMArrayType(g->t_f32, 256), lowp_table(g, t), idx, 2, "");
  return LLVMBuildLoad2(g->b, g->t_f32, p, "");
}

/* 2^k as f64 for an i64 k in the normal range. */
static LLVMValueRef pow2(cg *g, LLVMValueRef k) {
  LLVMValueRef b = LLVMBuildShl(g->b, LLVMBuildAdd(g->b, k, LLVMConstInt(g->t_i64, 1023, 0), ""), LLVMConstInt(g->t_i64, 52, 0), "");
  return LLVMBuildBitCast(g->b, b, g->t_f64, "");
}

/* The unbiased exponent of a positive normal f64 (i64). */
static LLVMValueRef exponent_of(cg *g, LLVMValueRef a) {
  LLVMValueRef b = LLVMBuildLShr(g->b, LLVMBuildBitCast(g->b, a, g->t_i64, ""), LLVMConstInt(g->t_i64, 52, 0), "");
  return LLVMBuildSub(g->b, b, LLVMConstInt(g->t_i64, 1023, 0), "");
}

/* The byte of v (f32 / f64) in lowp float t, saturating: base/lowp.c's fmt_encode in IR.
 * keep_inf: an infinity becomes the format's infinity where it has one (e5m2), as a store does
 * (loom_lowp_store); rounding (a cast, an operation's result) saturates it. */
static LLVMValueRef lowp_encode(cg *g, loom_dtype t, LLVMValueRef v, bool keep_inf) {
  const loom_lowp_format *f = loom_lowp_format_of(t);
  LLVMBuilderRef b = g->b;
  LLVMTypeRef i8 = g->t_i8, i64 = g->t_i64, f64 = g->t_f64;
  if (LLVMTypeOf(v) != f64) v = LLVMBuildFPExt(b, v, f64, "");
  unsigned sbit = 1u << (f->nbits - 1);
  LLVMValueRef neg = LLVMBuildICmp(b, LLVMIntSLT, LLVMBuildBitCast(b, v, i64, ""), LLVMConstInt(i64, 0, 0), "");
  LLVMValueRef sb = LLVMBuildSelect(b, neg, LLVMConstInt(i8, sbit, 0), LLVMConstInt(i8, 0, 0), "");
  LLVMValueRef a = cg_call_intrinsic(g, "llvm.fabs", f64, &v, 1);
  LLVMValueRef isnan = LLVMBuildFCmp(b, LLVMRealUNO, v, v, "");
  LLVMValueRef isinf = LLVMBuildFCmp(b, LLVMRealOEQ, a, LLVMConstReal(f64, INFINITY), "");
  int emin = 1 - f->bias;
  LLVMValueRef e = exponent_of(g, a);
  LLVMValueRef lo = LLVMConstInt(i64, (unsigned long long)(long long)emin, 1);
  e = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, e, lo, ""), lo, e, "");
  LLVMValueRef k = LLVMBuildSub(b, LLVMConstInt(i64, f->mbits, 0), e, ""); /* a * 2^k: units of the binade's spacing */
  LLVMValueRef scaled = LLVMBuildFMul(b, a, pow2(g, k), "");
  LLVMValueRef n = cg_call_intrinsic(g, "llvm.roundeven", f64, &scaled, 1);
  LLVMValueRef r = LLVMBuildFMul(b, n, pow2(g, LLVMBuildNeg(b, k, "")), "");
  LLVMValueRef over = LLVMBuildFCmp(b, LLVMRealOGT, r, LLVMConstReal(f64, f->max), "");
  LLVMValueRef zero = LLVMBuildFCmp(b, LLVMRealOEQ, r, LLVMConstReal(f64, 0.0), "");
  LLVMValueRef sub = LLVMBuildFCmp(b, LLVMRealOLT, r, LLVMConstReal(f64, ldexp(1.0, emin)), "");
  LLVMValueRef nsub = cg_call_intrinsic(g, "llvm.fptoui.sat", i64, &n, 1);
  /* normal: the exponent field e2 + bias, the mantissa r * 2^(mbits - e2) - 2^mbits */
  LLVMValueRef e2 = exponent_of(g, r);
  LLVMValueRef mf = LLVMBuildFMul(b, r, pow2(g, LLVMBuildSub(b, LLVMConstInt(i64, f->mbits, 0), e2, "")), "");
  LLVMValueRef m = LLVMBuildSub(b, cg_call_intrinsic(g, "llvm.fptoui.sat", i64, &mf, 1), LLVMConstInt(i64, 1ull << f->mbits, 0), "");
  LLVMValueRef field = LLVMBuildShl(b, LLVMBuildAdd(b, e2, LLVMConstInt(i64, (unsigned long long)(long long)f->bias, 1), ""),
                                    LLVMConstInt(i64, f->mbits, 0), "");
  LLVMValueRef code = LLVMBuildSelect(b, sub, nsub, LLVMBuildOr(b, field, m, ""), "");
  LLVMValueRef res = LLVMBuildOr(b, sb, LLVMBuildTrunc(b, code, i8, ""), "");
  res = LLVMBuildSelect(b, zero, f->fnuz ? LLVMConstInt(i8, 0, 0) : sb, res, "");
  LLVMValueRef maxc = LLVMBuildSelect(b, neg, LLVMConstInt(i8, loom_lowp_max_code(f, sbit), 0), LLVMConstInt(i8, loom_lowp_max_code(f, 0), 0), "");
  res = LLVMBuildSelect(b, LLVMBuildOr(b, over, isinf, ""), maxc, res, "");
  if (keep_inf && f->ieee) {
    LLVMValueRef infc = LLVMBuildOr(b, sb, LLVMConstInt(i8, loom_lowp_overflow_code(f, 0), 0), "");
    res = LLVMBuildSelect(b, isinf, infc, res, "");
  }
  LLVMValueRef nanc = LLVMBuildSelect(b, neg, LLVMConstInt(i8, loom_lowp_nan_code(f, sbit), 0), LLVMConstInt(i8, loom_lowp_nan_code(f, 0), 0), "");
  return LLVMBuildSelect(b, isnan, nanc, res, "");
}

/* The e8m0 byte of an f32 register value, from its bits as loom_lowp_from_f64(e8m0, v, true):
 * the exponent field, plus one when a mantissa bit is set (round "up") short of 0xfe
 * (saturate); 0xff (inf, NaN) stays; 2^-127 (f32 subnormal 0x00400000) is code 0 exactly. */
static LLVMValueRef e8m0_encode(cg *g, LLVMValueRef v) {
  LLVMBuilderRef b = g->b;
  LLVMTypeRef i32 = g->t_i32;
  if (LLVMTypeOf(v) != g->t_f32) v = LLVMBuildFPTrunc(b, v, g->t_f32, "");
  LLVMValueRef u = LLVMBuildAnd(b, LLVMBuildBitCast(b, v, i32, ""), LLVMConstInt(i32, 0x7fffffff, 0), "");
  LLVMValueRef e = LLVMBuildLShr(b, u, LLVMConstInt(i32, 23, 0), "");
  LLVMValueRef m = LLVMBuildAnd(b, u, LLVMConstInt(i32, 0x7fffff, 0), "");
  LLVMValueRef up = LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntNE, m, LLVMConstInt(i32, 0, 0), ""),
                                 LLVMBuildICmp(b, LLVMIntULT, e, LLVMConstInt(i32, 0xfe, 0), ""), "");
  LLVMValueRef code = LLVMBuildAdd(b, e, LLVMBuildZExt(b, up, i32, ""), "");
  code = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntEQ, u, LLVMConstInt(i32, 0x00400000, 0), ""), LLVMConstInt(i32, 0, 0), code, "");
  return LLVMBuildTrunc(b, code, g->t_i8, "");
}

/* A register value's byte in lowp float t (keep_inf as lowp_encode). */
static LLVMValueRef lowp_to_mem(cg *g, loom_dtype t, LLVMValueRef v, bool keep_inf) {
  return t == LOOM_DTYPE_F8E8M0 ? e8m0_encode(g, v) : lowp_encode(g, t, v, keep_inf);
}

LLVMValueRef cg_to_mem(cg *g, loom_dtype t, LLVMValueRef v) {
  switch (t) {
    case LOOM_DTYPE_BOOL: return LLVMBuildZExt(g->b, v, g->t_i8, "");
    case LOOM_DTYPE_F16: return LLVMBuildFPTrunc(g->b, v, g->t_f16, "");
    case LOOM_DTYPE_BF16: return f32_to_bf16(g, v);
    default: return loom_dtype_is_lowp_float(t) ? lowp_to_mem(g, t, v, true) : v;
  }
}

LLVMValueRef cg_round_lowp(cg *g, loom_dtype t, LLVMValueRef v) {
  return lowp_decode(g, t, lowp_to_mem(g, t, v, false));
}

LLVMValueRef cg_from_mem(cg *g, loom_dtype t, LLVMValueRef v) {
  switch (t) {
    case LOOM_DTYPE_BOOL: return LLVMBuildICmp(g->b, LLVMIntNE, v, LLVMConstInt(g->t_i8, 0, 0), "");
    case LOOM_DTYPE_F16: return LLVMBuildFPExt(g->b, v, g->t_f32, "");
    case LOOM_DTYPE_BF16: return bf16_to_f32(g, v);
    default: return loom_dtype_is_lowp_float(t) ? lowp_decode(g, t, v) : v;
  }
}

/* The core of exp for f32 (Cephes' expf) on xc in [-176, 88.7228]: exp(xc) = (y * s1) * s2,
 *   n = roundeven(xc * log2(e)),  r = xc - n*ln2 (two-part constant, each product fused),
 *   y = exp(r) ~ 1 + r + r^2 * P(r) with a degree-5 minimax P on [-ln2/2, ln2/2],
 *   s1 = 2^n1, s2 = 2^n2 built from exponent bits, n1 = n >> 1, n2 = n - n1. For n >= -252
 *   both halves are normal, so a subnormal result is rounded once, by the last multiply; at
 *   n = -253 or -254 (xc near -176) s1 (and s2) are the bits of +0. */
static void exp_parts(cg *g, LLVMValueRef xc, LLVMValueRef *y_out, LLVMValueRef *s1, LLVMValueRef *s2) {
  LLVMTypeRef t = LLVMTypeOf(xc), it = cg_like_ty(t, g->t_i32);
  LLVMValueRef fx = LLVMBuildFMul(g->b, xc, cg_kf(t, 1.44269504088896341), "");
  fx = cg_call_intrinsic(g, "llvm.roundeven", t, &fx, 1);
  LLVMValueRef c1[3] = {fx, cg_kf(t, -0.693359375), xc};
  LLVMValueRef r = cg_call_intrinsic(g, "llvm.fma", t, c1, 3);
  LLVMValueRef c2[3] = {fx, cg_kf(t, 2.12194440e-4), r};
  r = cg_call_intrinsic(g, "llvm.fma", t, c2, 3);
  static const double P[6] = {1.9875691500E-4, 1.3981999507E-3, 8.3334519073E-3,
                              4.1665795894E-2, 1.6666665459E-1, 5.0000001201E-1};
  LLVMValueRef p = cg_kf(t, P[0]);
  for (int i = 1; i < 6; i++) {
    LLVMValueRef args[3] = {p, r, cg_kf(t, P[i])};
    p = cg_call_intrinsic(g, "llvm.fma", t, args, 3);
  }
  LLVMValueRef r2 = LLVMBuildFMul(g->b, r, r, "");
  LLVMValueRef a3[3] = {p, r2, LLVMBuildFAdd(g->b, r, cg_kf(t, 1.0), "")};
  *y_out = cg_call_intrinsic(g, "llvm.fma", t, a3, 3);
  LLVMValueRef n = LLVMBuildFPToSI(g->b, fx, it, "");
  LLVMValueRef n1 = LLVMBuildAShr(g->b, n, cg_ki(it, 1), "");
  LLVMValueRef half[2] = {n1, LLVMBuildSub(g->b, n, n1, "")}, *out[2] = {s1, s2};
  for (int i = 0; i < 2; i++) {
    LLVMValueRef bits = LLVMBuildShl(g->b, LLVMBuildAdd(g->b, half[i], cg_ki(it, 127), ""), cg_ki(it, 23), "");
    *out[i] = LLVMBuildBitCast(g->b, bits, t, "");
  }
}

/* exp for f32, inline so loops vectorise (a libm call does not): exp_parts on x clamped to
 * [-104, 88.7228]. Error <= 2 ulp for results in the normal range (checked against the
 * interpreter's double exp in tests/cpu, including subnormal results); x > 88.7228 gives +inf,
 * x < -104 gives 0, NaN stays NaN. */
LLVMValueRef cg_exp_f32(cg *g, LLVMValueRef x) {
  LLVMTypeRef t = LLVMTypeOf(x);
  LLVMValueRef hi = cg_kf(t, 88.72283935546875), lo = cg_kf(t, -104.0);
  LLVMValueRef xc = LLVMBuildSelect(g->b, LLVMBuildFCmp(g->b, LLVMRealOGT, x, hi, ""), hi, x, "");
  xc = LLVMBuildSelect(g->b, LLVMBuildFCmp(g->b, LLVMRealOLT, xc, lo, ""), lo, xc, "");
  LLVMValueRef y, s1, s2;
  exp_parts(g, xc, &y, &s1, &s2);
  y = LLVMBuildFMul(g->b, LLVMBuildFMul(g->b, y, s1, ""), s2, "");
  y = LLVMBuildSelect(g->b, LLVMBuildFCmp(g->b, LLVMRealOGT, x, hi, ""), cg_kf(t, __builtin_inf()), y, "");
  return LLVMBuildSelect(g->b, LLVMBuildFCmp(g->b, LLVMRealUNO, x, x, ""), x, y, "");
}

/* sigmoid(x) for f32, or m * sigmoid(x) when m is given (SiLU: m = x; GELU's tanh form,
 * x * sigmoid(2u)), inline so loops vectorise. With e = exp(-|x|) (in [0, 1]: no overflow, no
 * infinity to catch),
 *   sigmoid(x) = (x >= 0 ? 1 : e) / (1 + e),   m * sigmoid(x) = (x >= 0 ? m : m * e) / (1 + e):
 * one division and one exp of a non-positive argument, with no +inf clamp, no inf select (the
 * SiLU family is bound by its vector instructions at one thread: on Zen 4 with AVX-512, 1.32 ->
 * 1.12 ms for 3.1 M elements in L1, from x * (1 / (1 + exp(-x)))). m * e is formed as
 * (m * (y * s1)) * s2 (exp_parts), rounded once even where e is subnormal and the product is not
 * (x near -90). -|x| below -176 (or NaN) is clamped to -176, where s1 = s2 = +0 (exp_parts): e = 0
 * and m * e = m * 0, so -0 for a large negative x and NaN for -inf and NaN in SiLU, as the
 * interpreter's x * (1 / (1 + exp(-x))) gives; a NaN x gives NaN (selected where m is not x itself,
 * whose NaN is in the numerator). Below x = -176 the result is m * 0 (f32's m * sigmoid(x): NaN
 * for an infinite m, where the interpreter's double formula gives inf, and 0 for |m| above 2^105,
 * where it gives a tiny number). tests/cpu checks both against the double formula, subnormal
 * results included. */
LLVMValueRef cg_sigmoid_f32(cg *g, LLVMValueRef x, LLVMValueRef m) {
  LLVMTypeRef t = LLVMTypeOf(x);
  LLVMValueRef a = LLVMBuildFNeg(g->b, cg_call_intrinsic(g, "llvm.fabs", t, &x, 1), "");
  LLVMValueRef lo = cg_kf(t, -176.0), zero = cg_kf(t, 0.0), one = cg_kf(t, 1.0);
  LLVMValueRef under = LLVMBuildFCmp(g->b, LLVMRealULT, a, lo, ""); /* or NaN */
  LLVMValueRef y, s1, s2;
  exp_parts(g, LLVMBuildSelect(g->b, under, lo, a, ""), &y, &s1, &s2);
  LLVMValueRef u = LLVMBuildFMul(g->b, y, s1, "");
  LLVMValueRef e = LLVMBuildFMul(g->b, u, s2, "");
  LLVMValueRef pos = LLVMBuildFCmp(g->b, LLVMRealOGE, x, zero, "");
  LLVMValueRef num = m ? LLVMBuildSelect(g->b, pos, m, LLVMBuildFMul(g->b, LLVMBuildFMul(g->b, m, u, ""), s2, ""), "")
                       : LLVMBuildSelect(g->b, pos, one, e, "");
  LLVMValueRef r = LLVMBuildFDiv(g->b, num, LLVMBuildFAdd(g->b, one, e, ""), "");
  if (m == x) return r; /* a NaN x is in num */
  return LLVMBuildSelect(g->b, LLVMBuildFCmp(g->b, LLVMRealUNO, x, x, ""), x, r, "");
}

/* tanh for f32, inline so loops vectorise: Cephes' tanhf.
 *   |x| <  0.625: x + x^3 * P(x^2), a degree-4 minimax P;
 *   |x| >= 0.625: sign(x) * (1 - 2 / (exp(2|x|) + 1)) with exp_f32 (saturates to +-1).
 * Both are computed and one is selected (no branch). Relative error about 2e-7 (checked
 * against the interpreter's double tanh in tests/cpu); NaN stays NaN. */
LLVMValueRef cg_tanh_f32(cg *g, LLVMValueRef x) {
  LLVMTypeRef t = LLVMTypeOf(x);
  LLVMValueRef ax = cg_call_intrinsic(g, "llvm.fabs", t, &x, 1);
  LLVMValueRef e = cg_exp_f32(g, LLVMBuildFMul(g->b, ax, cg_kf(t, 2.0), ""));
  LLVMValueRef big = LLVMBuildFSub(g->b, cg_kf(t, 1.0),
                                   LLVMBuildFDiv(g->b, cg_kf(t, 2.0), LLVMBuildFAdd(g->b, e, cg_kf(t, 1.0), ""), ""), "");
  LLVMValueRef sg[2] = {big, x};
  big = cg_call_intrinsic(g, "llvm.copysign", t, sg, 2);
  static const double P[5] = {-5.70498872745E-3, 2.06390887954E-2, -5.37397155531E-2, 1.33314422036E-1,
                              -3.33332819422E-1};
  LLVMValueRef z = LLVMBuildFMul(g->b, x, x, ""), p = cg_kf(t, P[0]);
  for (int i = 1; i < 5; i++) {
    LLVMValueRef args[3] = {p, z, cg_kf(t, P[i])};
    p = cg_call_intrinsic(g, "llvm.fma", t, args, 3);
  }
  LLVMValueRef a3[3] = {LLVMBuildFMul(g->b, p, z, ""), x, x};
  LLVMValueRef small = cg_call_intrinsic(g, "llvm.fma", t, a3, 3);
  LLVMValueRef sg2[2] = {small, x}; /* tanh is odd: -0 stays -0 (the fma gives +0 there) */
  small = cg_call_intrinsic(g, "llvm.copysign", t, sg2, 2);
  LLVMValueRef y = LLVMBuildSelect(g->b, LLVMBuildFCmp(g->b, LLVMRealOLT, ax, cg_kf(t, 0.625), ""), small, big, "");
  return LLVMBuildSelect(g->b, LLVMBuildFCmp(g->b, LLVMRealUNO, x, x, ""), x, y, "");
}

/* erf for f32, inline so loops vectorise (libm's erff does not): the rational minimax
 * approximation of Eigen / XLA, x clamped to [-4, 4] (erf is +-1 in f32 beyond),
 *   erf(x) ~ x * P(x^2) / Q(x^2), P of degree 6, Q of degree 4, both by Horner with fma.
 * Absolute error below 1.5e-7 over the line, relative error below 3e-7 (about 2-4 ulp; checked
 * against the interpreter's double erf in tests/e2e/test_e2e_math.c); NaN stays NaN (the
 * clamps are ordered compares). */
LLVMValueRef cg_erf_f32(cg *g, LLVMValueRef x) {
  LLVMTypeRef t = LLVMTypeOf(x);
  LLVMValueRef xc = LLVMBuildSelect(g->b, LLVMBuildFCmp(g->b, LLVMRealOGT, x, cg_kf(t, 4.0), ""), cg_kf(t, 4.0), x, "");
  xc = LLVMBuildSelect(g->b, LLVMBuildFCmp(g->b, LLVMRealOLT, xc, cg_kf(t, -4.0), ""), cg_kf(t, -4.0), xc, "");
  LLVMValueRef z = LLVMBuildFMul(g->b, xc, xc, "");
  static const double P[7] = {-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06,
                              -5.69250639462346e-05, -7.34990630326855e-04, -2.95459980854025e-03,
                              -1.60960333262415e-02};
  static const double Q[5] = {-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03,
                              -7.37332916720468e-03, -1.42647390514189e-02};
  LLVMValueRef p = cg_kf(t, P[0]), q = cg_kf(t, Q[0]);
  for (int i = 1; i < 7; i++) {
    LLVMValueRef args[3] = {p, z, cg_kf(t, P[i])};
    p = cg_call_intrinsic(g, "llvm.fma", t, args, 3);
  }
  for (int i = 1; i < 5; i++) {
    LLVMValueRef args[3] = {q, z, cg_kf(t, Q[i])};
    q = cg_call_intrinsic(g, "llvm.fma", t, args, 3);
  }
  return LLVMBuildFDiv(g->b, LLVMBuildFMul(g->b, xc, p, ""), q, "");
}

