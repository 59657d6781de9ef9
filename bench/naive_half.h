/* bf16 and f16 conversions as an integrator writes them, for the "naive" rows of 16-bit
 * kernels (rope_naive.c, sinusoid_naive.c, alibi_naive.c; each compiled with -O3
 * -march=native). bf16: the upper half of a float, rounded to nearest even (the usual bit
 * trick; NaN handling left out, as in most such code). f16: through the compiler's _Float16
 * where it has one (GCC 12+, Clang 15+ on x86-64 and aarch64: F16C / FCVT with
 * -march=native), else the portable bit conversion (ryg's float_to_half_fast3_rtne /
 * half_to_float). */
#ifndef POSENC_BENCH_NAIVE_HALF_H
#define POSENC_BENCH_NAIVE_HALF_H

#include <stdint.h>
#include <string.h>

static inline float bf16_to_float(uint16_t h) {
  const uint32_t bits = (uint32_t)h << 16;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

static inline uint16_t float_to_bf16(float f) {
  uint32_t bits;
  memcpy(&bits, &f, sizeof bits);
  return (uint16_t)((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

#ifdef __FLT16_MAX__
static inline float f16_to_float(uint16_t h) {
  _Float16 x;
  memcpy(&x, &h, sizeof x);
  return (float)x;
}

static inline uint16_t float_to_f16(float f) {
  const _Float16 x = (_Float16)f;
  uint16_t h;
  memcpy(&h, &x, sizeof h);
  return h;
}
#else
static inline float f16_to_float(uint16_t h) {
  const uint32_t magic = 113u << 23, shifted_exp = 0x7c00u << 13;
  uint32_t o = (uint32_t)(h & 0x7fffu) << 13;
  const uint32_t exp = shifted_exp & o;
  float f;
  o += (127u - 15u) << 23;
  if (exp == shifted_exp) {
    o += (128u - 16u) << 23;
  } else if (exp == 0) {
    float m;
    o += 1u << 23;
    memcpy(&f, &o, sizeof f);
    memcpy(&m, &magic, sizeof m);
    f -= m;
    memcpy(&o, &f, sizeof o);
  }
  o |= (uint32_t)(h & 0x8000u) << 16;
  memcpy(&f, &o, sizeof f);
  return f;
}

static inline uint16_t float_to_f16(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  const uint32_t sign = u & 0x80000000u;
  u ^= sign;
  uint16_t o;
  if (u >= (143u << 23)) {
    o = u > (255u << 23) ? 0x7e00 : 0x7c00;
  } else if (u < (113u << 23)) {
    float g, magic;
    const uint32_t magic_bits = 126u << 23;
    memcpy(&g, &u, sizeof g);
    memcpy(&magic, &magic_bits, sizeof magic);
    g += magic;
    memcpy(&u, &g, sizeof u);
    o = (uint16_t)(u - magic_bits);
  } else {
    const uint32_t odd = (u >> 13) & 1u;
    u += ((uint32_t)(15 - 127) << 23) + 0xfffu + odd;
    o = (uint16_t)(u >> 13);
  }
  return (uint16_t)(o | (sign >> 16));
}
#endif

#endif /* POSENC_BENCH_NAIVE_HALF_H */
