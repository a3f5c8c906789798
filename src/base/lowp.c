/* lowp.c — low-precision element values: float8 / float4 / e8m0 codes and 4- / 2-bit
 * integers to and from doubles (semantics in lowp.h). */
#include "base/lowp.h"

#include <math.h>
#include <string.h>

typedef loom_lowp_format fmt;

const loom_lowp_format *loom_lowp_format_of(loom_dtype t) {
  static const fmt e4m3fn = {4, 3, 7, 8, false, false, true, 448.0};
  static const fmt e4m3fnuz = {4, 3, 8, 8, false, true, false, 240.0};
  static const fmt e5m2 = {5, 2, 15, 8, true, false, false, 57344.0};
  static const fmt e5m2fnuz = {5, 2, 16, 8, false, true, false, 57344.0};
  static const fmt e2m1 = {2, 1, 1, 4, false, false, false, 6.0};
  switch (t) {
  case LOOM_DTYPE_F8E4M3FN: return &e4m3fn;
  case LOOM_DTYPE_F8E4M3FNUZ: return &e4m3fnuz;
  case LOOM_DTYPE_F8E5M2: return &e5m2;
  case LOOM_DTYPE_F8E5M2FNUZ: return &e5m2fnuz;
  case LOOM_DTYPE_F4E2M1: return &e2m1;
  default: return NULL;
  }
}

static const fmt *fmt_of(loom_dtype t) { return loom_lowp_format_of(t); }

bool loom_lowp_round_parse(const char *s, loom_lowp_round *out) {
  if (!strcmp(s, "up")) *out = LOOM_LOWP_ROUND_UP;
  else if (!strcmp(s, "down")) *out = LOOM_LOWP_ROUND_DOWN;
  else if (!strcmp(s, "nearest")) *out = LOOM_LOWP_ROUND_NEAREST;
  else return false;
  return true;
}

static double fmt_decode(const fmt *f, uint8_t b) {
  unsigned sbit = 1u << (f->nbits - 1);
  unsigned emask = (1u << f->ebits) - 1, mmask = (1u << f->mbits) - 1;
  bool neg = (b & sbit) != 0;
  unsigned e = (b >> f->mbits) & emask, m = b & mmask;
  if (f->fnuz && b == 0x80) return NAN;
  if (f->nan_ones && e == emask && m == mmask) return neg ? -NAN : NAN;
  if (f->ieee && e == emask) return m ? (neg ? -NAN : NAN) : (neg ? -INFINITY : INFINITY);
  double v = e == 0 ? ldexp((double)m, 1 - f->bias - (int)f->mbits)
                    : ldexp((double)(m | (1u << f->mbits)), (int)e - f->bias - (int)f->mbits);
  return neg ? -v : v;
}

/* The code of the largest finite value with sign `s` (0 or sbit). */
uint8_t loom_lowp_max_code(const fmt *f, unsigned s) {
  unsigned ones = (1u << (f->nbits - 1)) - 1; /* every exponent and mantissa bit */
  if (f->nan_ones) return (uint8_t)(s | (ones - 1));
  if (f->ieee) return (uint8_t)(s | (ones - (1u << f->mbits)));
  return (uint8_t)(s | ones);
}

uint8_t loom_lowp_nan_code(const fmt *f, unsigned s) {
  unsigned sbit = 1u << (f->nbits - 1);
  if (f->fnuz) return 0x80;
  if (f->nan_ones) return (uint8_t)(s | 0x7f);
  if (f->ieee) return (uint8_t)(s | 0x7e);
  return (uint8_t)(s ^ sbit); /* e2m1 has no NaN: ml_dtypes gives a zero of the other sign */
}

static uint8_t fmt_overflow(const fmt *f, unsigned s, bool saturate) {
  if (saturate || (!f->ieee && !f->fnuz && !f->nan_ones)) return loom_lowp_max_code(f, s); /* e2m1 always saturates */
  if (f->fnuz) return 0x80;
  if (f->nan_ones) return (uint8_t)(s | 0x7f);
  return (uint8_t)(s | ((1u << f->ebits) - 1) << f->mbits); /* e5m2: inf */
}

static uint8_t fmt_encode(const fmt *f, double v, bool saturate) {
  unsigned sbit = 1u << (f->nbits - 1);
  unsigned s = signbit(v) ? sbit : 0;
  if (isnan(v)) return loom_lowp_nan_code(f, s);
  double a = fabs(v);
  if (isinf(a)) return fmt_overflow(f, s, saturate);
  int emin = 1 - f->bias; /* exponent of the smallest normal */
  int e;
  frexp(a, &e);
  e -= 1;          /* a in [2^e, 2^(e+1)) */
  if (e < emin) e = emin;
  /* Round to a multiple of the spacing of the binade (exact scaling by powers of two). */
  double n = nearbyint(ldexp(a, (int)f->mbits - e));
  double r = ldexp(n, e - (int)f->mbits);
  if (r > f->max) return fmt_overflow(f, s, saturate);
  if (r == 0) return f->fnuz ? 0 : (uint8_t)s;
  unsigned code;
  if (r < ldexp(1.0, emin)) {
    code = (unsigned)n; /* subnormal: exponent field 0 */
  } else {
    frexp(r, &e);
    e -= 1;
    unsigned m = (unsigned)ldexp(r, (int)f->mbits - e) - (1u << f->mbits);
    code = ((unsigned)(e + f->bias) << f->mbits) | m;
  }
  return (uint8_t)(s | code);
}

static uint8_t int_wrap(loom_dtype t, int64_t v) {
  unsigned w = loom_dtype_width(t);
  uint64_t low = (uint64_t)v & ((1u << w) - 1);
  if (loom_dtype_is_signed(t) && (low >> (w - 1))) low |= ~(uint64_t)0 << w; /* sign-extend */
  return (uint8_t)low;
}

double loom_lowp_to_f64(loom_dtype t, uint8_t b) {
  const fmt *f = fmt_of(t);
  if (f) return fmt_decode(f, b);
  switch (t) {
  case LOOM_DTYPE_F8E8M0: return b == 0xff ? NAN : ldexp(1.0, (int)b - 127);
  case LOOM_DTYPE_I4: case LOOM_DTYPE_I2: return (int8_t)b;
  default: return b; /* u4, u2 */
  }
}

uint8_t loom_lowp_from_i64(loom_dtype t, int64_t v) { return int_wrap(t, v); }

uint8_t loom_lowp_from_f64(loom_dtype t, double v, bool saturate) {
  const fmt *f = fmt_of(t);
  if (f) return fmt_encode(f, v, saturate);
  if (t == LOOM_DTYPE_F8E8M0) {
    /* powers of two are exact (2^-127 too, which float32 holds only as a subnormal) */
    int e;
    if (frexp(v, &e) == 0.5 && e - 1 >= -127 && e - 1 <= 127) return (uint8_t)(e - 1 + 127);
    return loom_lowp_e8m0(v, saturate, LOOM_LOWP_ROUND_UP);
  }
  /* integers: truncate, then keep the low bits (out of int64's range: as x86, INT64_MIN) */
  int64_t i = isnan(v) ? 0 : (v >= -9223372036854775808.0 && v < 9223372036854775808.0) ? (int64_t)v : INT64_MIN;
  return int_wrap(t, i);
}

uint8_t loom_lowp_store(loom_dtype t, double v) {
  const fmt *f = fmt_of(t);
  return loom_lowp_from_f64(t, v, !(f && f->ieee && isinf(v)));
}

double loom_lowp_overflow_bound(const fmt *f, bool *inclusive) {
  int e;
  frexp(f->max, &e); /* max in [2^(e-1), 2^e) */
  double ulp = ldexp(1.0, e - 1 - (int)f->mbits);
  *inclusive = ((uint64_t)ldexp(f->max, (int)f->mbits - (e - 1)) & 1) != 0;
  return f->max + ulp / 2;
}

uint8_t loom_lowp_overflow_code(const fmt *f, unsigned s) { return fmt_overflow(f, s, false); }

uint8_t loom_lowp_e8m0(double v, bool saturate, loom_lowp_round mode) {
  float x = (float)v;
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  unsigned e = (u >> 23) & 0xff;
  if (e == 0xff) return 0xff; /* NaN, inf */
  bool up = false;
  switch (mode) {
  case LOOM_LOWP_ROUND_UP: up = (u & 0x7fffff) != 0; break;
  case LOOM_LOWP_ROUND_DOWN: break;
  case LOOM_LOWP_ROUND_NEAREST: {
    bool g = u & 0x400000, r = u & 0x200000, st = u & 0x1fffff;
    up = g && (r || st || e > 0);
    break;
  }
  }
  if (up && e == 0xfe && saturate) up = false;
  return (uint8_t)(e + up);
}
