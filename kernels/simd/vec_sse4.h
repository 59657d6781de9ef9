/* Vector layer for SSE4.1: 4 float lanes, 2 double lanes. No FMA at this tier. */
#ifndef POSENC_VEC_SSE4_H
#define POSENC_VEC_SSE4_H

#include <sleef.h>
#include <stddef.h>
#include <stdint.h>

#include "msan.h"
#include <smmintrin.h>

#define VEC_SUFFIX sse4
#define VF_W 4
#define VD_W 2

typedef __m128 vf;
typedef __m128d vd;

static inline vf vf_load(const float *p) { return _mm_loadu_ps(p); }
static inline void vf_store(float *p, vf v) { _mm_storeu_ps(p, v); }
/* Non-temporal store (p aligned to the vector), and the fence that orders such stores. */
static inline void vf_stream(float *p, vf v) { _mm_stream_ps(p, v); }
static inline void vf_stream_fence(void) { _mm_sfence(); }
#include "vec_partial.h"
static inline vf vf_set1(float x) { return _mm_set1_ps(x); }
static inline vf vf_mul(vf a, vf b) { return _mm_mul_ps(a, b); }
static inline vf vf_add(vf a, vf b) { return _mm_add_ps(a, b); }
static inline vf vf_sub(vf a, vf b) { return _mm_sub_ps(a, b); }
/* -x exactly (the sign bit flipped, as C's unary minus). */
static inline vf vf_neg(vf x) { return _mm_xor_ps(x, _mm_set1_ps(-0.0f)); }
static inline vf vf_fmadd(vf a, vf b, vf c) { return _mm_add_ps(_mm_mul_ps(a, b), c); }
static inline vf vf_fnmadd(vf a, vf b, vf c) { return _mm_sub_ps(c, _mm_mul_ps(a, b)); }
/* (x0, x1, x2, x3) -> (x1, x0, x3, x2) */
static inline vf vf_swap_pairs(vf x) { return _mm_shuffle_ps(x, x, _MM_SHUFFLE(2, 3, 0, 1)); }
/* Interleave: lo = (a0, b0, a1, b1), hi = (a2, b2, a3, b3). */
static inline vf vf_zip_lo(vf a, vf b) { return _mm_unpacklo_ps(a, b); }
static inline vf vf_zip_hi(vf a, vf b) { return _mm_unpackhi_ps(a, b); }
static inline void vf_sincos(vf x, vf *s, vf *c) {
  Sleef___m128_2 r = Sleef_sincosf4_u10sse4(x);
  POSENC_MSAN_UNPOISON(&r, sizeof r);
  *s = r.x;
  *c = r.y;
}

static inline vd vd_load(const double *p) { return _mm_loadu_pd(p); }
static inline void vd_store(double *p, vd v) { _mm_storeu_pd(p, v); }
/* Lower / upper half of a float vector widened to double. */
static inline vd vd_from_vf_lo(vf v) { return _mm_cvtps_pd(v); }
static inline vd vd_from_vf_hi(vf v) { return _mm_cvtps_pd(_mm_movehl_ps(v, v)); }
static inline vd vd_set1(double x) { return _mm_set1_pd(x); }
static inline vd vd_add(vd a, vd b) { return _mm_add_pd(a, b); }
static inline vd vd_sub(vd a, vd b) { return _mm_sub_pd(a, b); }
static inline vd vd_mul(vd a, vd b) { return _mm_mul_pd(a, b); }
static inline vd vd_round(vd x) {
  return _mm_round_pd(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
/* 32-bit integer lanes, for ALiBi's distances. */
typedef __m128i vi;
static inline vi vi_set1(int32_t x) { return _mm_set1_epi32(x); }
static inline vi vi_iota(void) { return _mm_setr_epi32(0, 1, 2, 3); }
static inline vi vi_add(vi a, vi b) { return _mm_add_epi32(a, b); }
static inline vi vi_sub(vi a, vi b) { return _mm_sub_epi32(a, b); }
static inline vi vi_abs(vi x) { return _mm_abs_epi32(x); }
static inline vf vf_from_vi(vi x) { return _mm_cvtepi32_ps(x); }

/* Two double vectors to one float vector: (lo..., hi...). */
static inline vf vf_from_vd(vd lo, vd hi) {
  return _mm_movelh_ps(_mm_cvtpd_ps(lo), _mm_cvtpd_ps(hi));
}

#endif /* POSENC_VEC_SSE4_H */
