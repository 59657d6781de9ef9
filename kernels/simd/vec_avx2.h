/* Vector layer for AVX2 + FMA: 8 float lanes, 4 double lanes. */
#ifndef POSENC_VEC_AVX2_H
#define POSENC_VEC_AVX2_H

#include <immintrin.h>
#include <sleef.h>
#include <stddef.h>
#include <stdint.h>

#include "msan.h"

#define VEC_SUFFIX avx2
#define VF_W 8
#define VD_W 4

typedef __m256 vf;
typedef __m256d vd;

static inline vf vf_load(const float *p) { return _mm256_loadu_ps(p); }
static inline void vf_store(float *p, vf v) { _mm256_storeu_ps(p, v); }
/* Non-temporal store (p aligned to the vector), and the fence that orders such stores. */
static inline void vf_stream(float *p, vf v) { _mm256_stream_ps(p, v); }
static inline void vf_stream_fence(void) { _mm_sfence(); }
#include "vec_partial.h"
static inline vf vf_set1(float x) { return _mm256_set1_ps(x); }
static inline vf vf_mul(vf a, vf b) { return _mm256_mul_ps(a, b); }
static inline vf vf_add(vf a, vf b) { return _mm256_add_ps(a, b); }
static inline vf vf_sub(vf a, vf b) { return _mm256_sub_ps(a, b); }
/* -x exactly (the sign bit flipped, as C's unary minus). */
static inline vf vf_neg(vf x) { return _mm256_xor_ps(x, _mm256_set1_ps(-0.0f)); }
static inline vf vf_fmadd(vf a, vf b, vf c) { return _mm256_fmadd_ps(a, b, c); }
static inline vf vf_fnmadd(vf a, vf b, vf c) { return _mm256_fnmadd_ps(a, b, c); }
static inline vf vf_swap_pairs(vf x) { return _mm256_permute_ps(x, 0xB1); }
static inline vf vf_zip_lo(vf a, vf b) {
  return _mm256_permute2f128_ps(_mm256_unpacklo_ps(a, b), _mm256_unpackhi_ps(a, b), 0x20);
}
static inline vf vf_zip_hi(vf a, vf b) {
  return _mm256_permute2f128_ps(_mm256_unpacklo_ps(a, b), _mm256_unpackhi_ps(a, b), 0x31);
}
static inline void vf_sincos(vf x, vf *s, vf *c) {
  Sleef___m256_2 r = Sleef_sincosf8_u10avx2(x);
  POSENC_MSAN_UNPOISON(&r, sizeof r);
  *s = r.x;
  *c = r.y;
}

static inline vd vd_load(const double *p) { return _mm256_loadu_pd(p); }
static inline void vd_store(double *p, vd v) { _mm256_storeu_pd(p, v); }
/* Lower / upper half of a float vector widened to double. */
static inline vd vd_from_vf_lo(vf v) { return _mm256_cvtps_pd(_mm256_castps256_ps128(v)); }
static inline vd vd_from_vf_hi(vf v) { return _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)); }
static inline vd vd_set1(double x) { return _mm256_set1_pd(x); }
static inline vd vd_add(vd a, vd b) { return _mm256_add_pd(a, b); }
static inline vd vd_sub(vd a, vd b) { return _mm256_sub_pd(a, b); }
static inline vd vd_mul(vd a, vd b) { return _mm256_mul_pd(a, b); }
static inline vd vd_round(vd x) {
  return _mm256_round_pd(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
/* 32-bit integer lanes, for ALiBi's distances. */
typedef __m256i vi;
static inline vi vi_set1(int32_t x) { return _mm256_set1_epi32(x); }
static inline vi vi_iota(void) { return _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7); }
static inline vi vi_add(vi a, vi b) { return _mm256_add_epi32(a, b); }
static inline vi vi_sub(vi a, vi b) { return _mm256_sub_epi32(a, b); }
static inline vi vi_abs(vi x) { return _mm256_abs_epi32(x); }
static inline vf vf_from_vi(vi x) { return _mm256_cvtepi32_ps(x); }

static inline vf vf_from_vd(vd lo, vd hi) {
  return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm256_cvtpd_ps(lo)), _mm256_cvtpd_ps(hi), 1);
}

#endif /* POSENC_VEC_AVX2_H */
