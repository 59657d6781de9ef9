/* Vector layer for AArch64 Advanced SIMD (NEON): 4 float lanes, 2 double lanes. */
#ifndef POSENC_VEC_NEON_H
#define POSENC_VEC_NEON_H

#include <arm_neon.h>
#include <sleef.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../common.h"
#include "msan.h"

#define VEC_SUFFIX neon
#define VF_W 4
#define VD_W 2
#define VF_REGS 32
_Static_assert(POSENC_MAX_LANES % VF_W == 0 && VF_W == 2 * VD_W,
               "VF_W must divide POSENC_MAX_LANES (kernels/common.h)");

typedef float32x4_t vf;
typedef float64x2_t vd;

static inline vf vf_load(const float *p) { return vld1q_f32(p); }
static inline void vf_store(float *p, vf v) { vst1q_f32(p, v); }
/* A store that a vf_load of the same vector reads back soon (vec_avx512.h). */
static inline void vf_store_reload(float *p, vf v) { vf_store(p, v); }
/* No non-temporal vector store here: ordinary stores (the fence is then a no-op). */
static inline void vf_stream(float *p, vf v) { vst1q_f32(p, v); }
static inline void vf_stream_fence(void) {}
#include "vec_partial.h"
static inline vf vf_set1(float x) { return vdupq_n_f32(x); }
static inline vf vf_mul(vf a, vf b) { return vmulq_f32(a, b); }
static inline vf vf_add(vf a, vf b) { return vaddq_f32(a, b); }
static inline vf vf_sub(vf a, vf b) { return vsubq_f32(a, b); }
/* -x exactly (the sign bit flipped, as C's unary minus). */
static inline vf vf_neg(vf x) { return vnegq_f32(x); }
/* |x| (the sign bit cleared). */
static inline vf vf_abs(vf x) { return vabsq_f32(x); }
/* a*b + c and c - a*b, fused (one rounding), as on AVX2 / AVX-512. */
/* vf_fmadd and vf_fnmadd round once (fused). */
#define VF_FMA 1
static inline vf vf_fmadd(vf a, vf b, vf c) { return vfmaq_f32(c, a, b); }
static inline vf vf_fnmadd(vf a, vf b, vf c) { return vfmsq_f32(c, a, b); }
/* (x0, x1, x2, x3) -> (x1, x0, x3, x2) */
static inline vf vf_swap_pairs(vf x) { return vrev64q_f32(x); }
/* Interleave: lo = (a0, b0, a1, b1), hi = (a2, b2, a3, b3). */
static inline vf vf_zip_lo(vf a, vf b) { return vzip1q_f32(a, b); }
static inline vf vf_zip_hi(vf a, vf b) { return vzip2q_f32(a, b); }
static inline void vf_sincos(vf x, vf *s, vf *c) {
  Sleef_float32x4_t_2 r = Sleef_sincosf4_u10advsimd(x);
  POSENC_MSAN_UNPOISON(&r, sizeof r);
  *s = r.x;
  *c = r.y;
}

/* 32-bit integer lanes, for ALiBi's distances. */
typedef int32x4_t vi;
static inline vi vi_set1(int32_t x) { return vdupq_n_s32(x); }
static inline vi vi_iota(void) {
  static const int32_t iota[4] = {0, 1, 2, 3};
  return vld1q_s32(iota);
}
static inline vi vi_add(vi a, vi b) { return vaddq_s32(a, b); }
static inline vi vi_sub(vi a, vi b) { return vsubq_s32(a, b); }
static inline vi vi_abs(vi x) { return vabsq_s32(x); }
static inline vf vf_from_vi(vi x) { return vcvtq_f32_s32(x); }
/* The lanes' bits as int32 (a reinterpretation, exact). */
static inline vi vi_bits(vf x) { return vreinterpretq_s32_f32(x); }

static inline vd vd_load(const double *p) { return vld1q_f64(p); }
static inline void vd_store(double *p, vd v) { vst1q_f64(p, v); }
/* Lower / upper half of a float vector widened to double. */
static inline vd vd_from_vf_lo(vf v) { return vcvt_f64_f32(vget_low_f32(v)); }
static inline vd vd_from_vf_hi(vf v) { return vcvt_high_f64_f32(v); }
static inline vd vd_set1(double x) { return vdupq_n_f64(x); }
static inline vd vd_add(vd a, vd b) { return vaddq_f64(a, b); }
static inline vd vd_sub(vd a, vd b) { return vsubq_f64(a, b); }
static inline vd vd_mul(vd a, vd b) { return vmulq_f64(a, b); }
/* Round to nearest, ties to even (FRINTN), as _MM_FROUND_TO_NEAREST_INT. */
static inline vd vd_round(vd x) { return vrndnq_f64(x); }
/* Two double vectors to one float vector: (lo..., hi...). */
static inline vf vf_from_vd(vd lo, vd hi) { return vcvt_high_f32_f64(vcvt_f32_f64(lo), hi); }

/* For the softmax: max, lane masks, exp's pieces, the double sum, bf16 storage. */
/* max(a, b); a NaN in either gives NaN (FMAX). */
static inline vf vf_max(vf a, vf b) { return vmaxq_f32(a, b); }
static inline float vf_hmax(vf v) { return vmaxvq_f32(v); }
/* Lane masks and selections (the softmax's hidden keys), posenc's exp's scaling by 2^n and
 * soft-capping's min and division. */
typedef uint32x4_t vm;
static inline vm vm_or(vm a, vm b) { return vorrq_u32(a, b); }
/* Ordered comparisons: a NaN lane gives 0. */
static inline vm vf_eq_m(vf a, vf b) { return vceqq_f32(a, b); }
static inline vm vf_lt_m(vf a, vf b) { return vcltq_f32(a, b); }
static inline vm vi_gt_m(vi a, vi b) { return vcgtq_s32(a, b); }
/* a where m is set, else b. */
static inline vf vf_select(vm m, vf a, vf b) { return vbslq_f32(m, a, b); }
/* +0 where m is set, else v. */
static inline vf vf_zero_where(vm m, vf v) {
  return vreinterpretq_f32_u32(vbicq_u32(vreinterpretq_u32_f32(v), m));
}
static inline vi vi_load(const int32_t *p) { return vld1q_s32(p); }
static inline vi vi_load_n(const int32_t *p, size_t n) {
  int32_t tmp[VF_W] = {0};
  memcpy(tmp, p, n * sizeof(int32_t));
  return vi_load(tmp);
}
/* min(a, b); a NaN in either gives NaN (FMIN). */
static inline vf vf_min(vf a, vf b) { return vminq_f32(a, b); }
static inline vf vf_div(vf a, vf b) { return vdivq_f32(a, b); }
/* The square root, correctly rounded. */
static inline vf vf_sqrt(vf a) { return vsqrtq_f32(a); }
/* p * 2^n for integral n in [-126, 127]: 2^n built in the exponent field. A NaN p gives
 * NaN. */
static inline vf vf_scale2(vf p, vf n) {
  const int32x4_t e = vshlq_n_s32(vaddq_s32(vcvtnq_s32_f32(n), vdupq_n_s32(127)), 23);
  return vmulq_f32(p, vreinterpretq_f32_s32(e));
}
/* vf_scale2, +0 where m is set. */
static inline vf vf_scale2_zero_where(vm m, vf p, vf n) {
  return vf_zero_where(m, vf_scale2(p, n));
}
static inline int vf_all_lt(vf a, vf b) { return vminvq_u32(vcltq_f32(a, b)) != 0; }
/* v in lanes [0, n), fill in the others (n <= VF_W). */
static inline vf vf_first_n(vf v, size_t n, float fill) {
  static const uint32_t iota[4] = {0, 1, 2, 3};
  return vbslq_f32(vcltq_u32(vld1q_u32(iota), vdupq_n_u32((uint32_t)n)), v, vdupq_n_f32(fill));
}
static inline double vd_hsum(vd v) { return vaddvq_f64(v); }
/* bf16 (the upper half of a float) to float, exactly. */
static inline vf vf_load_bf16(const uint16_t *p) {
  return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(p), 16));
}
/* float to bf16, rounded to nearest even; a NaN stays a (quiet) NaN. */
static inline void vf_store_bf16(uint16_t *p, vf v) {
  const uint32x4_t b = vreinterpretq_u32_f32(v);
  const uint32x4_t lsb = vandq_u32(vshrq_n_u32(b, 16), vdupq_n_u32(1));
  const uint32x4_t rne = vaddq_u32(vaddq_u32(b, vdupq_n_u32(0x7fff)), lsb);
  const uint32x4_t quiet = vorrq_u32(b, vdupq_n_u32(0x400000));
  const uint32x4_t nan = vmvnq_u32(vceqq_f32(v, v));
  vst1_u16(p, vshrn_n_u32(vbslq_u32(nan, quiet, rne), 16));
}
#include "vec_partial_bf16.h"
/* IEEE binary16 (f16) to float, exactly, and float to f16 rounded to nearest even (FPCR's
 * default mode; IEEE overflow to infinity, subnormals, a NaN stays a NaN): FCVTL / FCVTN,
 * baseline ARMv8. */
static inline vf vf_load_f16(const uint16_t *p) {
  return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p)));
}
static inline void vf_store_f16(uint16_t *p, vf v) {
  vst1_u16(p, vreinterpret_u16_f16(vcvt_f16_f32(v)));
}
#include "vec_partial_f16.h"
/* Bytes (the quantized K caches, rope_simd.h): each lane truncated toward zero to int32 (the
 * lanes hold values in [-128, 256): q8_0's rounded quotients, FP8 codes), its low byte stored
 * at p[0, VF_W); the _n form stores exactly n of them. */
static inline void vf_store_i8(unsigned char *p, vf v) {
  const int16x4_t h = vmovn_s32(vcvtq_s32_f32(v));
  const uint32_t bytes = vget_lane_u32(vreinterpret_u32_s8(vmovn_s16(vcombine_s16(h, h))), 0);
  memcpy(p, &bytes, sizeof bytes);
}
#include "vec_partial_i8.h"
/* No non-temporal vector store here (vf_stream): the 16-bit forms are stored normally. */
static inline void vf_stream_bf16(uint16_t *p, vf v) { vf_store_bf16(p, v); }
static inline void vf_stream_f16(uint16_t *p, vf v) { vf_store_f16(p, v); }

#endif /* POSENC_VEC_NEON_H */
