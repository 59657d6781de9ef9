/* Vector layer for AVX2 + FMA: 8 float lanes, 4 double lanes. */
#ifndef POSENC_VEC_AVX2_H
#define POSENC_VEC_AVX2_H

#include <immintrin.h>
#include <sleef.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../common.h"
#include "msan.h"

#define VEC_SUFFIX avx2
#define VF_W 8
#define VD_W 4
#define VF_REGS 16
_Static_assert(POSENC_MAX_LANES % VF_W == 0 && VF_W == 2 * VD_W,
               "VF_W must divide POSENC_MAX_LANES (kernels/common.h)");

typedef __m256 vf;
typedef __m256d vd;

static inline vf vf_load(const float *p) { return _mm256_loadu_ps(p); }
static inline void vf_store(float *p, vf v) { _mm256_storeu_ps(p, v); }
/* A store that a vf_load of the same vector reads back soon (vec_avx512.h). */
static inline void vf_store_reload(float *p, vf v) { vf_store(p, v); }
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
/* |x| (the sign bit cleared). */
static inline vf vf_abs(vf x) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x); }
/* vf_fmadd and vf_fnmadd round once (fused). */
#define VF_FMA 1
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
/* The lanes' bits as int32 (a reinterpretation, exact). */
static inline vi vi_bits(vf x) { return _mm256_castps_si256(x); }

static inline vf vf_from_vd(vd lo, vd hi) {
  return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm256_cvtpd_ps(lo)), _mm256_cvtpd_ps(hi), 1);
}

/* For the softmax: max, lane masks, exp's pieces, the double sum, bf16 storage. */
/* max(a, b); a NaN in b gives NaN (VMAXPS returns its second operand if either is NaN). */
static inline vf vf_max(vf a, vf b) { return _mm256_max_ps(a, b); }
static inline float vf_hmax(vf v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  return _mm_cvtss_f32(_mm_max_ss(m, _mm_shuffle_ps(m, m, 1)));
}
/* Lane masks and selections (the softmax's hidden keys), posenc's exp's scaling by 2^n and
 * soft-capping's min and division. */
typedef __m256 vm;
static inline vm vm_or(vm a, vm b) { return _mm256_or_ps(a, b); }
/* Ordered comparisons: a NaN lane gives 0. */
static inline vm vf_eq_m(vf a, vf b) { return _mm256_cmp_ps(a, b, _CMP_EQ_OQ); }
static inline vm vf_lt_m(vf a, vf b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
static inline vm vi_gt_m(vi a, vi b) { return _mm256_castsi256_ps(_mm256_cmpgt_epi32(a, b)); }
/* a where m is set, else b. */
static inline vf vf_select(vm m, vf a, vf b) { return _mm256_blendv_ps(b, a, m); }
/* +0 where m is set, else v. */
static inline vf vf_zero_where(vm m, vf v) { return _mm256_andnot_ps(m, v); }
static inline vi vi_load(const int32_t *p) { return _mm256_loadu_si256((const __m256i *)p); }
static inline vi vi_load_n(const int32_t *p, size_t n) {
  int32_t tmp[VF_W] = {0};
  memcpy(tmp, p, n * sizeof(int32_t));
  return vi_load(tmp);
}
/* min(a, b); a NaN in b gives NaN (VMINPS returns its second operand if either is NaN). */
static inline vf vf_min(vf a, vf b) { return _mm256_min_ps(a, b); }
static inline vf vf_div(vf a, vf b) { return _mm256_div_ps(a, b); }
/* The square root, correctly rounded. */
static inline vf vf_sqrt(vf a) { return _mm256_sqrt_ps(a); }
/* p * 2^n for integral n in [-126, 127]: 2^n built in the exponent field. A NaN p gives
 * NaN. */
static inline vf vf_scale2(vf p, vf n) {
  const __m256i e =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}
/* vf_scale2, +0 where m is set. */
static inline vf vf_scale2_zero_where(vm m, vf p, vf n) {
  return vf_zero_where(m, vf_scale2(p, n));
}
/* v in lanes [0, n), fill in the others (n <= VF_W). */
static inline vf vf_first_n(vf v, size_t n, float fill) {
  const __m256i in =
      _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  return _mm256_blendv_ps(_mm256_set1_ps(fill), v, _mm256_castsi256_ps(in));
}
static inline double vd_hsum(vd v) {
  const __m128d s = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
  return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
}
/* bf16 (the upper half of a float) to float, exactly. */
static inline vf vf_load_bf16(const uint16_t *p) {
  const __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(h, 16));
}
/* float to bf16, rounded to nearest even; a NaN stays a (quiet) NaN. */
static inline void vf_store_bf16(uint16_t *p, vf v) {
  const __m256i b = _mm256_castps_si256(v);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(b, 16), _mm256_set1_epi32(1));
  const __m256i rne = _mm256_add_epi32(_mm256_add_epi32(b, _mm256_set1_epi32(0x7fff)), lsb);
  const __m256i quiet = _mm256_or_si256(b, _mm256_set1_epi32(0x400000));
  const __m256 nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
  const __m256i r =
      _mm256_srli_epi32(_mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(rne),
                                                             _mm256_castsi256_ps(quiet), nan)),
                        16);
  _mm_storeu_si128((__m128i *)p,
                   _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1)));
}
#include "vec_partial_bf16.h"
/* IEEE binary16 (f16) to float, exactly, and float to f16 rounded to nearest even (IEEE
 * overflow to infinity, subnormals, a NaN stays a quiet NaN): F16C. */
static inline vf vf_load_f16(const uint16_t *p) {
  return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}
static inline void vf_store_f16(uint16_t *p, vf v) {
  _mm_storeu_si128((__m128i *)p, _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
#include "vec_partial_f16.h"
/* Bytes (the quantized K caches, rope_simd.h): each lane truncated toward zero to int32 (the
 * lanes hold values in [-128, 256): q8_0's rounded quotients, FP8 codes), its low byte stored
 * at p[0, VF_W); the _n form stores exactly n of them. */
static inline void vf_store_i8(unsigned char *p, vf v) {
  const __m256i low = _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                       0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m256i b = _mm256_shuffle_epi8(_mm256_cvttps_epi32(v), low);
  const __m256i d = _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 0, 0, 0, 0, 0, 0));
  _mm_storel_epi64((__m128i *)p, _mm256_castsi256_si128(d));
}
#include "vec_partial_i8.h"
/* vf_store_bf16 / vf_store_f16 as non-temporal stores (p aligned to 16 bytes). */
static inline void vf_stream_bf16(uint16_t *p, vf v) {
  __m128i bits;
  vf_store_bf16((uint16_t *)&bits, v);
  _mm_stream_si128((__m128i *)p, bits);
}
static inline void vf_stream_f16(uint16_t *p, vf v) {
  _mm_stream_si128((__m128i *)p, _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

/* Two vectors interleaved, a0 b0 a1 b1 ..., as 2 VF_W 16-bit elements in one vector (vz16),
 * for the sinusoid's rows of finite values: bf16 rounded to nearest even by integer
 * operations (no NaN handling), then one word blend; f16 by VCVTPS2PH and an unpack. */
#define VF_HAVE_VZ16 1
typedef __m256i vz16;
static inline __m256i vf_bf16_upper_finite(vf v) {
  const __m256i b = _mm256_castps_si256(v);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(b, 16), _mm256_set1_epi32(1));
  return _mm256_add_epi32(_mm256_add_epi32(b, _mm256_set1_epi32(0x7fff)), lsb);
}
static inline vz16 vz16_bf16_finite(vf a, vf b) {
  return _mm256_blend_epi16(_mm256_srli_epi32(vf_bf16_upper_finite(a), 16), vf_bf16_upper_finite(b),
                            0xAA);
}
static inline vz16 vz16_f16(vf a, vf b) {
  const __m128i x = _mm256_cvtps_ph(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m128i y = _mm256_cvtps_ph(b, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  return _mm256_set_m128i(_mm_unpackhi_epi16(x, y), _mm_unpacklo_epi16(x, y));
}
static inline void vz16_store(void *p, vz16 v) { _mm256_storeu_si256((__m256i *)p, v); }
static inline void vz16_stream(void *p, vz16 v) { _mm256_stream_si256((__m256i *)p, v); }

#endif /* POSENC_VEC_AVX2_H */
