/* test_dtype.c — dtype table and half-precision conversions. */
#include <math.h>
#include <string.h>

#include "base/dtype.h"
#include "support/loom_test.h"

LOOM_TEST(dtype, names_parse_back_and_sizes) {
  for (int i = 0; i < LOOM_DTYPE_COUNT; i++) {
    const char *n = loom_dtype_name((loom_dtype)i);
    loom_dtype t;
    cr_assert(loom_dtype_parse(n, strlen(n), &t), "%s", n);
    cr_assert_eq(t, (loom_dtype)i);
  }
  loom_dtype t;
  cr_assert_not(loom_dtype_parse("f33", 3, &t));
  cr_assert_not(loom_dtype_parse("f3", 2, &t));
  cr_assert_eq(loom_dtype_size(LOOM_DTYPE_F32), 4);
  cr_assert_eq(loom_dtype_size(LOOM_DTYPE_BF16), 2);
  cr_assert_eq(loom_dtype_size(LOOM_DTYPE_BOOL), 1);
  cr_assert(loom_dtype_is_float(LOOM_DTYPE_F16));
  cr_assert(loom_dtype_is_int(LOOM_DTYPE_U8));
  cr_assert_not(loom_dtype_is_int(LOOM_DTYPE_BOOL));
  cr_assert_not(loom_dtype_is_signed(LOOM_DTYPE_U64));
  /* string: a 16-byte loom_str handle, neither a number nor a low-precision type */
  cr_assert_eq(loom_dtype_size(LOOM_DTYPE_STRING), sizeof(loom_str));
  cr_assert(loom_dtype_is_string(LOOM_DTYPE_STRING));
  cr_assert_not(loom_dtype_is_string(LOOM_DTYPE_U2));
  cr_assert_not(loom_dtype_is_lowp(LOOM_DTYPE_STRING));
  cr_assert_not(loom_dtype_is_float(LOOM_DTYPE_STRING) || loom_dtype_is_int(LOOM_DTYPE_STRING));
  cr_assert_eq(loom_dtype_kind_of(LOOM_DTYPE_STRING), LOOM_DTYPE_KIND_STRING);
}

LOOM_TEST(dtype, f16_round_trips_every_non_nan_value) {
  for (uint32_t h = 0; h < 0x10000; h++) {
    float f = loom_f16_to_f32((uint16_t)h);
    if (isnan(f)) {
      cr_assert(isnan(loom_f16_to_f32(loom_f32_to_f16(f))));
      continue;
    }
    cr_assert_eq(loom_f32_to_f16(f), h, "0x%04x", h);
  }
}

LOOM_TEST(dtype, f16_rounding_and_limits) {
  cr_assert_eq(loom_f16_to_f32(0x3c00), 1.0f);
  cr_assert_eq(loom_f16_to_f32(0x7bff), 65504.0f);
  cr_assert_eq(loom_f32_to_f16(65520.0f), 0x7c00, "rounds to infinity");
  cr_assert_eq(loom_f32_to_f16(1e-9f), 0x0000, "underflows to zero");
  cr_assert_eq(loom_f32_to_f16(-0.0f), 0x8000);
  /* 1 + 2^-11 is halfway between 1 and the next f16: ties to even (1.0). */
  cr_assert_eq(loom_f32_to_f16(1.0f + 0x1p-11f), 0x3c00);
  cr_assert_eq(loom_f32_to_f16(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01);
  cr_assert_eq(loom_f16_to_f32(0x0001), 0x1p-24f, "smallest subnormal");
}

LOOM_TEST(dtype, bf16_conversions) {
  cr_assert_eq(loom_bf16_to_f32(loom_f32_to_bf16(1.0f)), 1.0f);
  cr_assert_eq(loom_f32_to_bf16(1.0f + 0x1p-8f), 0x3f80, "ties to even");
  cr_assert_eq(loom_f32_to_bf16(1.0f + 0x1p-8f + 0x1p-12f), 0x3f81);
  cr_assert(isnan(loom_bf16_to_f32(loom_f32_to_bf16(NAN))));
  cr_assert(isinf(loom_bf16_to_f32(loom_f32_to_bf16(INFINITY))));
}
