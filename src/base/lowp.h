/* lowp.h — values of the low-precision element types (loom_dtype_is_lowp): the float8
 * formats (e4m3fn, e4m3fnuz, e5m2, e5m2fnuz), e8m0, float4 e2m1, and 4- / 2-bit integers.
 *
 * Every such element is one byte in memory (sub-byte types unpacked; i4 / i2 sign-extended,
 * so the byte read as int8 is the value). These are the ONE place that turns those bytes into
 * numbers and back, with the semantics of ONNX (and of ml_dtypes, which its reference uses):
 *   - float -> float8 / float4 rounds to nearest, ties to even, from the double directly
 *     (one rounding). `saturate` clamps finite overflow and infinities to the largest finite
 *     value of the right sign; without it overflow becomes inf (e5m2) or NaN (e4m3fn: S.1111.111,
 *     fnuz: 0x80). The fnuz formats have no -0: a result rounding to zero is +0. e2m1 has no
 *     inf or NaN, so it always saturates, and (as ml_dtypes) NaN becomes a zero whose sign is
 *     the opposite of the NaN's.
 *   - e8m0 is 2^(code-127), code 0xff NaN; it keeps only the exponent of the float32 value
 *     (the sign is dropped), rounding by `loom_lowp_round` as ONNX Cast's round_mode.
 *   - float -> i4 / u4 / i2 / u2 truncates toward zero and wraps (keeps the low bits), NaN 0. */
#ifndef LOOM_BASE_LOWP_H
#define LOOM_BASE_LOWP_H

#include <stdbool.h>
#include <stdint.h>

#include "base/dtype.h"

/* One small float format (float8 / float4): sign, `ebits` exponent bits with `bias`, `mbits`
 * mantissa bits. The code generator encodes with the same parameters (targets/cpu). */
typedef struct loom_lowp_format {
  unsigned ebits, mbits;
  int bias;
  unsigned nbits; /* 8, or 4 for e2m1: the sign is bit nbits-1 */
  bool ieee;      /* all-ones exponent is inf (mantissa 0) / NaN (e5m2) */
  bool fnuz;      /* 0x80 is the only NaN; no -0, no inf */
  bool nan_ones;  /* S.1111.111 is NaN, the rest of the top binade is finite (e4m3fn) */
  double max;     /* largest finite value */
} loom_lowp_format;

/* The format of float8 / float4 dtype t, or NULL (e8m0, the integers, the others). */
const loom_lowp_format *loom_lowp_format_of(loom_dtype t);
/* The code of the largest finite value (saturating overflow) and of NaN, with sign bit s. */
uint8_t loom_lowp_max_code(const loom_lowp_format *f, unsigned s);
uint8_t loom_lowp_nan_code(const loom_lowp_format *f, unsigned s);

/* How a value becomes e8m0 (ONNX Cast round_mode). */
typedef enum loom_lowp_round {
  LOOM_LOWP_ROUND_UP,      /* "up": any mantissa bit rounds the exponent up (the ONNX default) */
  LOOM_LOWP_ROUND_DOWN,    /* "down": the mantissa is dropped */
  LOOM_LOWP_ROUND_NEAREST, /* "nearest": round half up on the mantissa, as ONNX's reference */
} loom_lowp_round;

/* Parses "up" / "down" / "nearest"; false if unknown. */
bool loom_lowp_round_parse(const char *s, loom_lowp_round *out);

/* The value of a lowp element stored as byte `b` (t must be lowp). */
double loom_lowp_to_f64(loom_dtype t, uint8_t b);
/* The byte for `v` in lowp type t; e8m0: a power of two exactly, else as loom_lowp_e8m0(v,
 * saturate, UP). */
uint8_t loom_lowp_from_f64(loom_dtype t, double v, bool saturate);
/* The e8m0 code of (float)v, as ONNX Cast: from float32's exponent field and mantissa (so
 * 2^-127, a float32 subnormal, rounds "up" to 2^-126 as in the reference). */
uint8_t loom_lowp_e8m0(double v, bool saturate, loom_lowp_round mode);
/* The byte a tensor program stores for the register value v of lowp float type t (registers
 * hold values already rounded to t, so this only encodes): as loom_lowp_from_f64 saturating,
 * except that an infinity stays an infinity where the format has one (e5m2): an unsaturated
 * cast's inf must reach memory (a saturating cast has made it the largest value already). */
uint8_t loom_lowp_store(loom_dtype t, double v);
/* Where rounding to float8 / float4 format f overflows: |v| > bound, or |v| >= bound when
 * *inclusive (the largest finite value plus half its spacing; the tie rounds away from the
 * largest value when that value's mantissa is odd). A cast with saturate=false gives inf or
 * NaN there (loom_lowp_overflow_code); formats without either (e2m1) always saturate. */
double loom_lowp_overflow_bound(const loom_lowp_format *f, bool *inclusive);
/* The code an unsaturated overflow with sign bit s gives in format f (inf, NaN, or for e2m1
 * the largest value). */
uint8_t loom_lowp_overflow_code(const loom_lowp_format *f, unsigned s);
/* The byte for the low bits of integer v in i4 / u4 / i2 / u2 (wrapping). */
uint8_t loom_lowp_from_i64(loom_dtype t, int64_t v);

#endif
