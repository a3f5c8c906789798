/* dtype.c — the dtype property table and half-precision conversions. */
#include "base/dtype.h"

#include <string.h>

typedef struct dtype_info {
  const char *name;
  unsigned bits, width;
  loom_dtype_kind kind;
} dtype_info;

static const dtype_info infos[] = {
#define LOOM_DTYPE(e, name, bits, width, kind) {#name, bits, width, LOOM_DTYPE_KIND_##kind},
#include "base/dtypes.def"
#undef LOOM_DTYPE
};
_Static_assert(sizeof(infos) / sizeof(infos[0]) == LOOM_DTYPE_COUNT,
               "dtypes.def and the dtype table disagree");
_Static_assert(sizeof(loom_str) * 8 == 128, "dtypes.def gives string 128 bits: a loom_str");

const char *loom_dtype_name(loom_dtype t) {
  return (unsigned)t < LOOM_DTYPE_COUNT ? infos[t].name : "?";
}

bool loom_dtype_parse(const char *s, size_t len, loom_dtype *out) {
  for (int i = 0; i < LOOM_DTYPE_COUNT; i++) {
    if (strlen(infos[i].name) == len && memcmp(infos[i].name, s, len) == 0) {
      *out = (loom_dtype)i;
      return true;
    }
  }
  return false;
}

unsigned loom_dtype_bits(loom_dtype t) { return infos[t].bits; }
unsigned loom_dtype_width(loom_dtype t) { return infos[t].width; }
bool loom_dtype_is_lowp(loom_dtype t) { return t > LOOM_DTYPE_F64 && t <= LOOM_DTYPE_U2; }
bool loom_dtype_is_string(loom_dtype t) { return t == LOOM_DTYPE_STRING; }
bool loom_dtype_is_lowp_float(loom_dtype t) { return loom_dtype_is_lowp(t) && infos[t].kind == LOOM_DTYPE_KIND_FLOAT; }
size_t loom_dtype_size(loom_dtype t) { return infos[t].bits / 8; }
loom_dtype_kind loom_dtype_kind_of(loom_dtype t) { return infos[t].kind; }
bool loom_dtype_is_float(loom_dtype t) { return infos[t].kind == LOOM_DTYPE_KIND_FLOAT; }
bool loom_dtype_is_int(loom_dtype t) {
  return infos[t].kind == LOOM_DTYPE_KIND_SINT || infos[t].kind == LOOM_DTYPE_KIND_UINT;
}
bool loom_dtype_is_signed(loom_dtype t) {
  return infos[t].kind == LOOM_DTYPE_KIND_SINT || infos[t].kind == LOOM_DTYPE_KIND_FLOAT;
}

static uint32_t bits_of(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static float float_of(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

float loom_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t man = h & 0x3ff;
  if (exp == 0x1f) return float_of(sign | 0x7f800000u | (man << 13)); /* inf / nan */
  if (exp == 0) {
    if (man == 0) return float_of(sign);
    /* subnormal: value = man * 2^-24 */
    float v = (float)man * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  return float_of(sign | ((exp + 112) << 23) | (man << 13));
}

uint16_t loom_f32_to_f16(float f) {
  uint32_t u = bits_of(f);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
  uint32_t exp = (u >> 23) & 0xff;
  uint32_t man = u & 0x7fffff;
  if (exp == 0xff) return (uint16_t)(sign | 0x7c00 | (man ? 0x200 | (man >> 13) : 0));
  int32_t e = (int32_t)exp - 127 + 15;
  if (e >= 0x1f) return (uint16_t)(sign | 0x7c00); /* overflow to infinity */
  if (e <= 0) {
    if (e < -10) return sign; /* underflow to zero */
    man |= 0x800000;
    uint32_t shift = (uint32_t)(14 - e);
    uint32_t half = man >> shift;
    uint32_t rem = man & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) half++;
    return (uint16_t)(sign | half);
  }
  uint32_t half = ((uint32_t)e << 10) | (man >> 13);
  uint32_t rem = man & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) half++; /* may carry into exp: correct */
  return (uint16_t)(sign | half);
}

float loom_bf16_to_f32(uint16_t h) { return float_of((uint32_t)h << 16); }

uint16_t loom_f32_to_bf16(float f) {
  uint32_t u = bits_of(f);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x7fffff)) return (uint16_t)((u >> 16) | 0x40);
  uint32_t rounding = 0x7fff + ((u >> 16) & 1);
  return (uint16_t)((u + rounding) >> 16);
}
