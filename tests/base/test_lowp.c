/* test_lowp.c — the low-precision element values (base/lowp.h): every code of every
 * format round-trips, ties round to even at every midpoint, and known conversions agree with
 * ml_dtypes / ONNX's reference (the tables below were printed by ml_dtypes 0.5 and
 * onnx.numpy_helper.to_float8e8m0; saturating = clip to the finite range, then convert). */
#include <math.h>
#include <string.h>

#include "base/lowp.h"
#include "support/loom_test.h"

static const loom_dtype floats[] = {LOOM_DTYPE_F8E4M3FN, LOOM_DTYPE_F8E4M3FNUZ, LOOM_DTYPE_F8E5M2,
                                    LOOM_DTYPE_F8E5M2FNUZ, LOOM_DTYPE_F4E2M1};

static unsigned ncodes(loom_dtype t) { return 1u << loom_dtype_width(t); }

LOOM_TEST(lowp, every_code_round_trips) {
  for (size_t k = 0; k < sizeof floats / sizeof floats[0]; k++) {
    loom_dtype t = floats[k];
    unsigned nan = 0;
    for (unsigned b = 0; b < ncodes(t); b++) {
      double v = loom_lowp_to_f64(t, (uint8_t)b);
      for (int sat = 0; sat < 2; sat++) {
        uint8_t back = loom_lowp_from_f64(t, v, sat);
        if (isnan(v)) cr_assert(isnan(loom_lowp_to_f64(t, back)), "%s 0x%02x", loom_dtype_name(t), b);
        else if (isinf(v) && sat) /* saturating: e5m2's infinities become its largest finite value */
          cr_assert_eq(loom_lowp_to_f64(t, back), copysign(57344.0, v), "%s 0x%02x", loom_dtype_name(t), b);
        else cr_assert_eq(back, b, "%s 0x%02x (%g) came back as 0x%02x", loom_dtype_name(t), b, v, back);
      }
      nan += isnan(v);
    }
    /* e4m3fn: S.1111.111; fnuz: 0x80; e5m2: S.11111.{01,10,11}; e2m1: none */
    unsigned want = t == LOOM_DTYPE_F8E4M3FN ? 2 : t == LOOM_DTYPE_F8E5M2 ? 6 : t == LOOM_DTYPE_F4E2M1 ? 0 : 1;
    cr_assert_eq(nan, want, "%s has %u NaN codes", loom_dtype_name(t), nan);
  }
  for (unsigned b = 0; b < 255; b++) {
    cr_assert_eq(loom_lowp_to_f64(LOOM_DTYPE_F8E8M0, (uint8_t)b), ldexp(1.0, (int)b - 127));
    cr_assert_eq(loom_lowp_from_f64(LOOM_DTYPE_F8E8M0, ldexp(1.0, (int)b - 127), false), b, "e8m0 0x%02x", b);
    /* through float32 as ONNX Cast: 2^-127 is a subnormal there, which "up" takes to 2^-126 */
    for (int m = 0; m < 3; m++)
      cr_assert_eq(loom_lowp_e8m0(ldexp(1.0, (int)b - 127), true, (loom_lowp_round)m),
                   b == 0 && m != LOOM_LOWP_ROUND_DOWN ? (m == LOOM_LOWP_ROUND_UP ? 1 : 0) : b, "e8m0 0x%02x mode %d", b, m);
  }
  cr_assert(isnan(loom_lowp_to_f64(LOOM_DTYPE_F8E8M0, 0xff)));
  const loom_dtype ints[] = {LOOM_DTYPE_I4, LOOM_DTYPE_U4, LOOM_DTYPE_I2, LOOM_DTYPE_U2};
  for (size_t k = 0; k < 4; k++) {
    loom_dtype t = ints[k];
    int64_t lo = loom_dtype_is_signed(t) ? -(int64_t)ncodes(t) / 2 : 0, hi = lo + ncodes(t) - 1;
    for (int64_t v = lo; v <= hi; v++) {
      uint8_t b = loom_lowp_from_i64(t, v);
      cr_assert_eq(loom_lowp_to_f64(t, b), (double)v, "%s %lld", loom_dtype_name(t), (long long)v);
      cr_assert_eq(loom_lowp_from_f64(t, (double)v, true), b);
      /* wrapping: v + 2^width is the same code */
      cr_assert_eq(loom_lowp_from_i64(t, v + (int64_t)ncodes(t)), b);
    }
  }
}

/* Between two neighbouring finite positive codes, the midpoint goes to the even code and
 * anything off the midpoint to the nearer one; the same for the negatives. */
LOOM_TEST(lowp, midpoints_round_to_even) {
  for (size_t k = 0; k < sizeof floats / sizeof floats[0]; k++) {
    loom_dtype t = floats[k];
    unsigned half = ncodes(t) / 2;
    for (unsigned b = 0; b + 1 < half; b++) {
      double lo = loom_lowp_to_f64(t, (uint8_t)b), hi = loom_lowp_to_f64(t, (uint8_t)(b + 1));
      if (isnan(hi) || isinf(hi)) continue;
      cr_assert_lt(lo, hi, "%s codes are monotonic at 0x%02x", loom_dtype_name(t), b);
      double mid = (lo + hi) / 2, eps = (hi - lo) / 64;
      unsigned even = (b & 1) ? b + 1 : b;
      for (int neg = 0; neg < 2; neg++) {
        double s = neg ? -1 : 1;
        unsigned sign = neg && !(t == LOOM_DTYPE_F8E4M3FNUZ || t == LOOM_DTYPE_F8E5M2FNUZ) ? half : 0;
        unsigned e = even, l = b, h = b + 1;
        if (neg) { /* fnuz: -0 is NaN, so a negative result of zero is +0 */
          e = e ? e | half : sign, l = l ? l | half : sign, h |= half;
        }
        cr_assert_eq(loom_lowp_from_f64(t, s * mid, true), e, "%s mid %g", loom_dtype_name(t), s * mid);
        cr_assert_eq(loom_lowp_from_f64(t, s * (mid - eps), true), l, "%s %g", loom_dtype_name(t), s * (mid - eps));
        cr_assert_eq(loom_lowp_from_f64(t, s * (mid + eps), true), h, "%s %g", loom_dtype_name(t), s * (mid + eps));
      }
    }
  }
}


static const double known_x[] = {0.0, -0.0, 1e-09, -1e-09, 0.3, -0.3, 1.0, 1.0625, 1.125, 1.1875, -2.75, 0.001953125, 0.0009765625, 0.0029296875, 0.013671875, 3.0, 5.0, 6.5, 7.0, 100.0, 240.0, 248.0, 250.0, 448.0, 464.0, 465.0, 480.0, 1000.0, 57344.0, 61439.0, 61440.0, 1000000.0, INFINITY, -INFINITY, NAN};
static const uint8_t known_codes[10][sizeof known_x / sizeof known_x[0]] = {
    /* F8E4M3FN */ {0x00, 0x80, 0x00, 0x80, 0x2a, 0xaa, 0x38, 0x38, 0x39, 0x3a, 0xc3, 0x01, 0x00, 0x02, 0x07, 0x44, 0x4a, 0x4d, 0x4e, 0x6c, 0x77, 0x78, 0x78, 0x7e, 0x7e, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0xff, 0x7f},
    /* F8E4M3FN sat */ {0x00, 0x80, 0x00, 0x80, 0x2a, 0xaa, 0x38, 0x38, 0x39, 0x3a, 0xc3, 0x01, 0x00, 0x02, 0x07, 0x44, 0x4a, 0x4d, 0x4e, 0x6c, 0x77, 0x78, 0x78, 0x7e, 0x7e, 0x7e, 0x7e, 0x7e, 0x7e, 0x7e, 0x7e, 0x7e, 0x7e, 0xfe, 0x7f},
    /* F8E4M3FNUZ */ {0x00, 0x00, 0x00, 0x00, 0x32, 0xb2, 0x40, 0x40, 0x41, 0x42, 0xcb, 0x02, 0x01, 0x03, 0x0e, 0x4c, 0x52, 0x55, 0x56, 0x74, 0x7f, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80},
    /* F8E4M3FNUZ sat */ {0x00, 0x00, 0x00, 0x00, 0x32, 0xb2, 0x40, 0x40, 0x41, 0x42, 0xcb, 0x02, 0x01, 0x03, 0x0e, 0x4c, 0x52, 0x55, 0x56, 0x74, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0xff, 0x80},
    /* F8E5M2 */ {0x00, 0x80, 0x00, 0x80, 0x35, 0xb5, 0x3c, 0x3c, 0x3c, 0x3d, 0xc2, 0x18, 0x14, 0x1a, 0x23, 0x42, 0x45, 0x46, 0x47, 0x56, 0x5c, 0x5c, 0x5c, 0x5f, 0x5f, 0x5f, 0x60, 0x64, 0x7b, 0x7b, 0x7c, 0x7c, 0x7c, 0xfc, 0x7e},
    /* F8E5M2 sat */ {0x00, 0x80, 0x00, 0x80, 0x35, 0xb5, 0x3c, 0x3c, 0x3c, 0x3d, 0xc2, 0x18, 0x14, 0x1a, 0x23, 0x42, 0x45, 0x46, 0x47, 0x56, 0x5c, 0x5c, 0x5c, 0x5f, 0x5f, 0x5f, 0x60, 0x64, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0xfb, 0x7e},
    /* F8E5M2FNUZ */ {0x00, 0x00, 0x00, 0x00, 0x39, 0xb9, 0x40, 0x40, 0x40, 0x41, 0xc6, 0x1c, 0x18, 0x1e, 0x27, 0x46, 0x49, 0x4a, 0x4b, 0x5a, 0x60, 0x60, 0x60, 0x63, 0x63, 0x63, 0x64, 0x68, 0x7f, 0x7f, 0x80, 0x80, 0x80, 0x80, 0x80},
    /* F8E5M2FNUZ sat */ {0x00, 0x00, 0x00, 0x00, 0x39, 0xb9, 0x40, 0x40, 0x40, 0x41, 0xc6, 0x1c, 0x18, 0x1e, 0x27, 0x46, 0x49, 0x4a, 0x4b, 0x5a, 0x60, 0x60, 0x60, 0x63, 0x63, 0x63, 0x64, 0x68, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0xff, 0x80},
    /* F4E2M1 */ {0x00, 0x08, 0x00, 0x08, 0x01, 0x09, 0x02, 0x02, 0x02, 0x02, 0x0d, 0x00, 0x00, 0x00, 0x00, 0x05, 0x06, 0x07, 0x07, 0x07, 0x07, 0x07, 0x07, 0x07, 0x07, 0x07, 0x07, 0x07, 0x07, 0x07, 0x07, 0x07, 0x07, 0x0f, 0x08},
    /* F4E2M1 sat */ {0x00, 0x08, 0x00, 0x08, 0x01, 0x09, 0x02, 0x02, 0x02, 0x02, 0x0d, 0x00, 0x00, 0x00, 0x00, 0x05, 0x06, 0x07, 0x07, 0x07, 0x07, 0x07, 0x07, 0x07, 0x07, 0x07, 0x07, 0x07, 0x07, 0x07, 0x07, 0x07, 0x07, 0x0f, 0x08},
};

LOOM_TEST(lowp, known_values_match_the_reference) {
  for (size_t k = 0; k < sizeof floats / sizeof floats[0]; k++)
    for (int sat = 0; sat < 2; sat++)
      for (size_t i = 0; i < sizeof known_x / sizeof known_x[0]; i++) {
        uint8_t got = loom_lowp_from_f64(floats[k], known_x[i], sat);
        cr_assert_eq(got, known_codes[2 * k + sat][i], "%s saturate=%d: %g gave 0x%02x, expected 0x%02x",
                     loom_dtype_name(floats[k]), sat, known_x[i], got, known_codes[2 * k + sat][i]);
      }
  /* e8m0, rows: up, down, nearest; saturate then not */
  static const double ex[] = {0.0, 1e-40, 0.124, 0.25, 0.75, 1.1, 1.5, 1.4999, 3.0, -3.0, 1e38, 3.4e38, INFINITY, NAN};
  static const uint8_t ec[6][14] = {
      {0x00, 0x01, 0x7c, 0x7d, 0x7f, 0x80, 0x80, 0x80, 0x81, 0x81, 0xfe, 0xfe, 0xff, 0xff},
      {0x00, 0x01, 0x7c, 0x7d, 0x7f, 0x80, 0x80, 0x80, 0x81, 0x81, 0xfe, 0xff, 0xff, 0xff},
      {0x00, 0x00, 0x7b, 0x7d, 0x7e, 0x7f, 0x7f, 0x7f, 0x80, 0x80, 0xfd, 0xfe, 0xff, 0xff},
      {0x00, 0x00, 0x7b, 0x7d, 0x7e, 0x7f, 0x7f, 0x7f, 0x80, 0x80, 0xfd, 0xfe, 0xff, 0xff},
      {0x00, 0x00, 0x7c, 0x7d, 0x7f, 0x7f, 0x80, 0x7f, 0x81, 0x81, 0xfd, 0xfe, 0xff, 0xff},
      {0x00, 0x00, 0x7c, 0x7d, 0x7f, 0x7f, 0x80, 0x7f, 0x81, 0x81, 0xfd, 0xff, 0xff, 0xff},
  };
  static const loom_lowp_round modes[] = {LOOM_LOWP_ROUND_UP, LOOM_LOWP_ROUND_DOWN, LOOM_LOWP_ROUND_NEAREST};
  for (int m = 0; m < 3; m++)
    for (int s = 0; s < 2; s++)
      for (size_t i = 0; i < 14; i++)
        cr_assert_eq(loom_lowp_e8m0(ex[i], s == 0, modes[m]), ec[2 * m + s][i], "e8m0 mode %d saturate=%d: %g", m,
                     s == 0, ex[i]);
  cr_assert_eq(loom_lowp_from_f64(LOOM_DTYPE_F8E8M0, 1.1, true), 0x80); /* the default mode is up */
  loom_lowp_round r;
  cr_assert(loom_lowp_round_parse("nearest", &r) && r == LOOM_LOWP_ROUND_NEAREST);
  cr_assert_not(loom_lowp_round_parse("even", &r));
  /* integers truncate toward zero, then wrap; NaN is 0 (ml_dtypes) */
  static const double ix[] = {2.7, -2.7, 2.5, 3.5, -9.0, 7.5, -8.5, NAN, 1e10};
  static const int8_t i4[] = {2, -2, 2, 3, 7, 7, -8, 0, 0}, i2[] = {-2, -2, -2, -1, -1, -1, 0, 0, 0};
  static const uint8_t u4[] = {2, 14, 2, 3, 7, 7, 8, 0, 0}, u2[] = {2, 2, 2, 3, 3, 3, 0, 0, 0};
  for (size_t i = 0; i < 9; i++) {
    cr_assert_eq((int8_t)loom_lowp_from_f64(LOOM_DTYPE_I4, ix[i], true), i4[i], "i4 %g", ix[i]);
    cr_assert_eq((int8_t)loom_lowp_from_f64(LOOM_DTYPE_I2, ix[i], true), i2[i], "i2 %g", ix[i]);
    cr_assert_eq(loom_lowp_from_f64(LOOM_DTYPE_U4, ix[i], true), u4[i], "u4 %g", ix[i]);
    cr_assert_eq(loom_lowp_from_f64(LOOM_DTYPE_U2, ix[i], true), u2[i], "u2 %g", ix[i]);
  }
}

LOOM_TEST(lowp, table_properties) {
  cr_assert(loom_dtype_is_lowp(LOOM_DTYPE_F8E4M3FN));
  cr_assert(loom_dtype_is_lowp(LOOM_DTYPE_U2));
  cr_assert_not(loom_dtype_is_lowp(LOOM_DTYPE_F64));
  cr_assert_not(loom_dtype_is_lowp(LOOM_DTYPE_U8));
  cr_assert_eq(loom_dtype_size(LOOM_DTYPE_I4), 1);
  cr_assert_eq(loom_dtype_width(LOOM_DTYPE_I4), 4);
  cr_assert_eq(loom_dtype_width(LOOM_DTYPE_F32), 32);
  cr_assert(loom_dtype_is_float(LOOM_DTYPE_F8E5M2));
  cr_assert(loom_dtype_is_int(LOOM_DTYPE_U4));
}
