/* Internal: exact scalar conversions between float and the two 16-bit storage types, in
 * portable C (integer operations only, so they do not depend on the floating-point
 * environment). The scalar kernels use them, and the tests check every SIMD conversion
 * against them; tests/rope_half_test.cc checks them exhaustively.
 *  - bf16: the upper half of a float (8-bit exponent, 7-bit mantissa).
 *  - f16:  IEEE 754 binary16 (5-bit exponent, 10-bit mantissa, subnormals below 2^-14).
 * Widening is exact. Narrowing rounds to nearest, ties to even, with IEEE overflow (a
 * finite value at or beyond the halfway point past the largest finite one becomes an
 * infinity of its sign) and gradual underflow. A NaN stays a NaN: quiet, sign kept, and the
 * leading bits of its payload kept (as F16C's VCVTPS2PH does), never an infinity.
 * posenc_elem names a tensor's storage type; posenc_elem_load / _store move one element of
 * any type. Valid C and C++. */
#ifndef POSENC_KERNELS_HALF_H
#define POSENC_KERNELS_HALF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint32_t posenc_float_bits(float f) {
  uint32_t b;
  memcpy(&b, &f, sizeof b);
  return b;
}

static inline float posenc_bits_float(uint32_t b) {
  float f;
  memcpy(&f, &b, sizeof f);
  return f;
}

static inline float posenc_bf16_to_f32(uint16_t h) { return posenc_bits_float((uint32_t)h << 16); }

static inline uint16_t posenc_f32_to_bf16(float f) {
  const uint32_t b = posenc_float_bits(f);
  if ((b & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((b >> 16) | 0x0040u);
  /* The carry out of the mantissa steps the exponent, up to infinity. */
  return (uint16_t)((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
}

static inline float posenc_f16_to_f32(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0x1f) return posenc_bits_float(sign | 0x7f800000u | (mant << 13)); /* inf, NaN */
  if (exp != 0) return posenc_bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
  if (mant == 0) return posenc_bits_float(sign);
  /* Subnormal: mant * 2^-24; normalise so that the leading 1 is bit 10. */
  uint32_t e = 113u; /* float exponent of 2^-14 */
  uint32_t m = mant;
  while (!(m & 0x400u)) {
    m <<= 1;
    --e;
  }
  return posenc_bits_float(sign | (e << 23) | ((m & 0x3ffu) << 13));
}

/* m >> s (1 <= s <= 31) rounded to nearest, ties to even. */
static inline uint32_t posenc_shift_rne(uint32_t m, unsigned s) {
  const uint32_t q = m >> s, rest = m & ((1u << s) - 1u), half = 1u << (s - 1);
  return q + ((rest > half) | ((rest == half) & q & 1u)); /* branch-free: data-dependent */
}

static inline uint16_t posenc_f32_to_f16(float f) {
  const uint32_t b = posenc_float_bits(f);
  const uint16_t sign = (uint16_t)((b >> 16) & 0x8000u);
  const uint32_t a = b & 0x7fffffffu;
  if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu)); /* NaN */
  if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* >= 65520 (halfway past 65504) */
  if (a >= 0x38800000u) /* >= 2^-14: normal; rebias the exponent by 15 - 127, then round */
    return (uint16_t)(sign | posenc_shift_rne(a - (112u << 23), 13));
  if (a < 0x33000000u) return sign; /* < 2^-25: rounds to zero (2^-25 itself: tie, to 0) */
  /* Subnormal result: the value in units of 2^-24 is (1.m * 2^23) >> (126 - exponent);
   * rounding up to 0x400 gives the smallest normal, as it should. */
  const uint32_t exp = a >> 23, m = (a & 0x7fffffu) | 0x800000u;
  return (uint16_t)(sign | posenc_shift_rne(m, 126u - exp));
}

/* The storage type of a tensor's elements (float arithmetic inside, for every type). */
typedef enum { POSENC_ELEM_F32, POSENC_ELEM_BF16, POSENC_ELEM_F16 } posenc_elem;

static inline size_t posenc_elem_size(posenc_elem e) {
  return e == POSENC_ELEM_F32 ? sizeof(float) : sizeof(uint16_t);
}

/* Element i of base as a float (exact), and v rounded to the storage type into it. */
static inline float posenc_elem_load(const void *base, size_t i, posenc_elem e) {
  switch (e) {
    case POSENC_ELEM_BF16:
      return posenc_bf16_to_f32(((const uint16_t *)base)[i]);
    case POSENC_ELEM_F16:
      return posenc_f16_to_f32(((const uint16_t *)base)[i]);
    default:
      return ((const float *)base)[i];
  }
}

static inline void posenc_elem_store(void *base, size_t i, float v, posenc_elem e) {
  switch (e) {
    case POSENC_ELEM_BF16:
      ((uint16_t *)base)[i] = posenc_f32_to_bf16(v);
      break;
    case POSENC_ELEM_F16:
      ((uint16_t *)base)[i] = posenc_f32_to_f16(v);
      break;
    default:
      ((float *)base)[i] = v;
  }
}

#endif /* POSENC_KERNELS_HALF_H */
