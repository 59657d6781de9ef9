/* Vector layer for AVX-512 F/BW/DQ/VL: 16 float lanes, 8 double lanes. */
#ifndef POSENC_VEC_AVX512_H
#define POSENC_VEC_AVX512_H

#include <immintrin.h>
#include <sleef.h>
#include <stddef.h>
#include <stdint.h>

#include "msan.h"

#define VEC_SUFFIX avx512
#define VF_W 16
#define VD_W 8

typedef __m512 vf;
typedef __m512d vd;

static inline vf vf_load(const float *p) { return _mm512_loadu_ps(p); }
/* Two 256-bit stores, not one 512-bit store: on the Zen 5 we measure on, in-place streams
 * from DRAM ran at 0.82x the machine's fastest stream with 512-bit stores and 0.96-1.0x
 * with 256-bit ones (the fastest limit_rmw loop there is 256-bit too), at a cost of ~8% for
 * cache-resident rows (bench: rope_f32_neox/avx512, tokens 16 vs 4096). */
static inline void vf_store(float *p, vf v) {
  _mm256_storeu_ps(p, _mm512_castps512_ps256(v));
  _mm256_storeu_ps(p + 8, _mm512_extractf32x8_ps(v, 1));
}
/* Non-temporal store (p aligned to the vector), and the fence that orders such stores. */
static inline void vf_stream(float *p, vf v) { _mm512_stream_ps(p, v); }
static inline void vf_stream_fence(void) { _mm_sfence(); }
/* Masked lanes are neither read nor written (no fault past the n-th element). */
static inline vf vf_load_n(const float *p, size_t n) {
  return _mm512_maskz_loadu_ps((__mmask16)((1u << n) - 1u), p);
}
static inline void vf_store_n(float *p, vf v, size_t n) {
  _mm512_mask_storeu_ps(p, (__mmask16)((1u << n) - 1u), v);
}
static inline vf vf_set1(float x) { return _mm512_set1_ps(x); }
static inline vf vf_mul(vf a, vf b) { return _mm512_mul_ps(a, b); }
static inline vf vf_add(vf a, vf b) { return _mm512_add_ps(a, b); }
static inline vf vf_sub(vf a, vf b) { return _mm512_sub_ps(a, b); }
/* -x exactly (the sign bit flipped, as C's unary minus). */
static inline vf vf_neg(vf x) { return _mm512_xor_ps(x, _mm512_set1_ps(-0.0f)); }
static inline vf vf_fmadd(vf a, vf b, vf c) { return _mm512_fmadd_ps(a, b, c); }
static inline vf vf_fnmadd(vf a, vf b, vf c) { return _mm512_fnmadd_ps(a, b, c); }
static inline vf vf_swap_pairs(vf x) { return _mm512_permute_ps(x, 0xB1); }
static inline vf vf_zip_lo(vf a, vf b) {
  const __m512i idx = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  return _mm512_permutex2var_ps(a, idx, b);
}
static inline vf vf_zip_hi(vf a, vf b) {
  const __m512i idx =
      _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
  return _mm512_permutex2var_ps(a, idx, b);
}
static inline void vf_sincos(vf x, vf *s, vf *c) {
  Sleef___m512_2 r = Sleef_sincosf16_u10avx512f(x);
  POSENC_MSAN_UNPOISON(&r, sizeof r);
  *s = r.x;
  *c = r.y;
}

static inline vd vd_load(const double *p) { return _mm512_loadu_pd(p); }
static inline void vd_store(double *p, vd v) { _mm512_storeu_pd(p, v); }
/* Lower / upper half of a float vector widened to double. */
static inline vd vd_from_vf_lo(vf v) { return _mm512_cvtps_pd(_mm512_castps512_ps256(v)); }
static inline vd vd_from_vf_hi(vf v) { return _mm512_cvtps_pd(_mm512_extractf32x8_ps(v, 1)); }
static inline vd vd_set1(double x) { return _mm512_set1_pd(x); }
static inline vd vd_add(vd a, vd b) { return _mm512_add_pd(a, b); }
static inline vd vd_sub(vd a, vd b) { return _mm512_sub_pd(a, b); }
static inline vd vd_mul(vd a, vd b) { return _mm512_mul_pd(a, b); }
static inline vd vd_round(vd x) {
  return _mm512_roundscale_pd(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
/* 32-bit integer lanes, for ALiBi's distances. */
typedef __m512i vi;
static inline vi vi_set1(int32_t x) { return _mm512_set1_epi32(x); }
static inline vi vi_iota(void) {
  return _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
}
static inline vi vi_add(vi a, vi b) { return _mm512_add_epi32(a, b); }
static inline vi vi_sub(vi a, vi b) { return _mm512_sub_epi32(a, b); }
static inline vi vi_abs(vi x) { return _mm512_abs_epi32(x); }
static inline vf vf_from_vi(vi x) { return _mm512_cvtepi32_ps(x); }

static inline vf vf_from_vd(vd lo, vd hi) {
  return _mm512_insertf32x8(_mm512_castps256_ps512(_mm512_cvtpd_ps(lo)), _mm512_cvtpd_ps(hi), 1);
}

#endif /* POSENC_VEC_AVX512_H */
