/* Vector layer for SSE4.1: 4 float lanes, 2 double lanes. No FMA at this tier. */
#ifndef POSENC_VEC_SSE4_H
#define POSENC_VEC_SSE4_H

#include <sleef.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../common.h"
#include "msan.h"
#include <smmintrin.h>

#define VEC_SUFFIX sse4
#define VF_W 4
#define VD_W 2
#define VF_REGS 16
_Static_assert(POSENC_MAX_LANES % VF_W == 0 && VF_W == 2 * VD_W,
               "VF_W must divide POSENC_MAX_LANES (kernels/common.h)");

typedef __m128 vf;
typedef __m128d vd;

static inline vf vf_load(const float *p) { return _mm_loadu_ps(p); }
static inline void vf_store(float *p, vf v) { _mm_storeu_ps(p, v); }
/* A store that a vf_load of the same vector reads back soon (vec_avx512.h). */
static inline void vf_store_reload(float *p, vf v) { vf_store(p, v); }
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
/* |x| (the sign bit cleared). */
static inline vf vf_abs(vf x) { return _mm_andnot_ps(_mm_set1_ps(-0.0f), x); }
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
/* The lanes' bits as int32 (a reinterpretation, exact). */
static inline vi vi_bits(vf x) { return _mm_castps_si128(x); }

/* Two double vectors to one float vector: (lo..., hi...). */
static inline vf vf_from_vd(vd lo, vd hi) {
  return _mm_movelh_ps(_mm_cvtpd_ps(lo), _mm_cvtpd_ps(hi));
}

/* For the softmax: max, lane masks, exp's pieces, the double sum, bf16 storage. */
/* max(a, b); a NaN in b gives NaN (MAXPS returns its second operand if either is NaN). */
static inline vf vf_max(vf a, vf b) { return _mm_max_ps(a, b); }
static inline float vf_hmax(vf v) {
  const vf m = _mm_max_ps(v, _mm_movehl_ps(v, v));
  return _mm_cvtss_f32(_mm_max_ss(m, _mm_shuffle_ps(m, m, 1)));
}
/* Lane masks and selections (the softmax's hidden keys), posenc's exp's scaling by 2^n and
 * soft-capping's min and division. */
typedef __m128 vm;
static inline vm vm_or(vm a, vm b) { return _mm_or_ps(a, b); }
/* Ordered comparisons: a NaN lane gives 0. */
static inline vm vf_eq_m(vf a, vf b) { return _mm_cmpeq_ps(a, b); }
static inline vm vf_lt_m(vf a, vf b) { return _mm_cmplt_ps(a, b); }
static inline vm vi_gt_m(vi a, vi b) { return _mm_castsi128_ps(_mm_cmpgt_epi32(a, b)); }
/* a where m is set, else b. */
static inline vf vf_select(vm m, vf a, vf b) { return _mm_blendv_ps(b, a, m); }
/* +0 where m is set, else v. */
static inline vf vf_zero_where(vm m, vf v) { return _mm_andnot_ps(m, v); }
static inline vi vi_load(const int32_t *p) { return _mm_loadu_si128((const __m128i *)p); }
static inline vi vi_load_n(const int32_t *p, size_t n) {
  int32_t tmp[VF_W] = {0};
  memcpy(tmp, p, n * sizeof(int32_t));
  return vi_load(tmp);
}
/* min(a, b); a NaN in b gives NaN (MINPS returns its second operand if either is NaN). */
static inline vf vf_min(vf a, vf b) { return _mm_min_ps(a, b); }
static inline vf vf_div(vf a, vf b) { return _mm_div_ps(a, b); }
/* The square root, correctly rounded. */
static inline vf vf_sqrt(vf a) { return _mm_sqrt_ps(a); }
/* p * 2^n for integral n in [-126, 127]: 2^n built in the exponent field. A NaN p gives
 * NaN. */
static inline vf vf_scale2(vf p, vf n) {
  const __m128i e = _mm_slli_epi32(_mm_add_epi32(_mm_cvtps_epi32(n), _mm_set1_epi32(127)), 23);
  return _mm_mul_ps(p, _mm_castsi128_ps(e));
}
/* vf_scale2, +0 where m is set. */
static inline vf vf_scale2_zero_where(vm m, vf p, vf n) {
  return vf_zero_where(m, vf_scale2(p, n));
}
static inline int vf_all_lt(vf a, vf b) { return _mm_movemask_ps(_mm_cmplt_ps(a, b)) == 0xf; }
/* v in lanes [0, n), fill in the others (n <= VF_W). */
static inline vf vf_first_n(vf v, size_t n, float fill) {
  const __m128i in = _mm_cmplt_epi32(_mm_setr_epi32(0, 1, 2, 3), _mm_set1_epi32((int)n));
  return _mm_blendv_ps(_mm_set1_ps(fill), v, _mm_castsi128_ps(in));
}
static inline double vd_hsum(vd v) { return _mm_cvtsd_f64(_mm_add_sd(v, _mm_unpackhi_pd(v, v))); }
/* bf16 (the upper half of a float) to float, exactly. */
static inline vf vf_load_bf16(const uint16_t *p) {
  const __m128i h = _mm_cvtepu16_epi32(_mm_loadl_epi64((const __m128i *)p));
  return _mm_castsi128_ps(_mm_slli_epi32(h, 16));
}
/* float to bf16, rounded to nearest even; a NaN stays a (quiet) NaN. */
static inline void vf_store_bf16(uint16_t *p, vf v) {
  const __m128i b = _mm_castps_si128(v);
  const __m128i lsb = _mm_and_si128(_mm_srli_epi32(b, 16), _mm_set1_epi32(1));
  const __m128i rne = _mm_add_epi32(_mm_add_epi32(b, _mm_set1_epi32(0x7fff)), lsb);
  const __m128i quiet = _mm_or_si128(b, _mm_set1_epi32(0x400000));
  const __m128 nan = _mm_cmpunord_ps(v, v);
  const __m128i r = _mm_srli_epi32(
      _mm_castps_si128(_mm_blendv_ps(_mm_castsi128_ps(rne), _mm_castsi128_ps(quiet), nan)), 16);
  _mm_storel_epi64((__m128i *)p, _mm_packus_epi32(r, r));
}
#include "vec_partial_bf16.h"
/* IEEE binary16 (f16) to float, exactly, and float to f16 rounded to nearest even (IEEE
 * overflow to infinity, subnormals, a NaN stays a quiet NaN with its leading payload bits,
 * as F16C does): the sse4 tier does not require F16C, so integer operations do it, as
 * kernels/half.h does for one element. The lanes hold f16 bits in their low 16 bits. */
static inline vf vf_from_f16_bits(__m128i h) {
  const __m128i sign = _mm_slli_epi32(_mm_and_si128(h, _mm_set1_epi32(0x8000)), 16);
  const __m128i o = _mm_slli_epi32(_mm_and_si128(h, _mm_set1_epi32(0x7fff)), 13);
  const __m128i exp = _mm_and_si128(o, _mm_set1_epi32(0x0f800000));
  /* Rebias the exponent by 127 - 15; infinity and NaN by twice that, to 255. */
  const __m128i inf_nan = _mm_cmpeq_epi32(exp, _mm_set1_epi32(0x0f800000));
  __m128i r = _mm_add_epi32(o, _mm_set1_epi32(112 << 23));
  r = _mm_add_epi32(r, _mm_and_si128(inf_nan, _mm_set1_epi32(112 << 23)));
  /* Zero and subnormals (mant * 2^-24): 2^-14 * (1 + mant/1024) - 2^-14, exact in float. */
  const __m128 sub = _mm_sub_ps(_mm_castsi128_ps(_mm_add_epi32(r, _mm_set1_epi32(1 << 23))),
                                _mm_castsi128_ps(_mm_set1_epi32(113 << 23)));
  const __m128 zero_sub = _mm_castsi128_ps(_mm_cmpeq_epi32(exp, _mm_setzero_si128()));
  return _mm_or_ps(_mm_blendv_ps(_mm_castsi128_ps(r), sub, zero_sub), _mm_castsi128_ps(sign));
}
static inline __m128i vf_f16_bits(vf v) {
  const __m128i b = _mm_castps_si128(v);
  const __m128i sign = _mm_and_si128(_mm_srli_epi32(b, 16), _mm_set1_epi32(0x8000));
  const __m128i a = _mm_and_si128(b, _mm_set1_epi32(0x7fffffff));
  /* Normal (a >= 2^-14): rebias by 15 - 127, then drop 13 bits to nearest even. */
  const __m128i odd = _mm_and_si128(_mm_srli_epi32(a, 13), _mm_set1_epi32(1));
  const __m128i normal =
      _mm_srli_epi32(_mm_add_epi32(_mm_add_epi32(a, _mm_set1_epi32(0xfff - (112 << 23))), odd), 13);
  /* Below 2^-14: adding 0.5 rounds the value to a multiple of 2^-24 (the ulp of 0.5), the
   * f16 subnormal step; the bits above 0.5's are the result (0x400: the smallest normal). */
  const __m128i sub =
      _mm_sub_epi32(_mm_castps_si128(_mm_add_ps(_mm_castsi128_ps(a), _mm_set1_ps(0.5f))),
                    _mm_set1_epi32(126 << 23));
  const __m128i nan = _mm_or_si128(_mm_set1_epi32(0x7e00),
                                   _mm_and_si128(_mm_srli_epi32(a, 13), _mm_set1_epi32(0x3ff)));
  __m128i r = _mm_blendv_epi8(normal, sub, _mm_cmplt_epi32(a, _mm_set1_epi32(0x38800000)));
  /* >= 65520 (halfway past the largest finite 65504) and infinity: infinity. */
  r = _mm_blendv_epi8(r, _mm_set1_epi32(0x7c00), _mm_cmpgt_epi32(a, _mm_set1_epi32(0x477fefff)));
  r = _mm_blendv_epi8(r, nan, _mm_cmpgt_epi32(a, _mm_set1_epi32(0x7f800000)));
  return _mm_or_si128(r, sign);
}
static inline vf vf_load_f16(const uint16_t *p) {
  return vf_from_f16_bits(_mm_cvtepu16_epi32(_mm_loadl_epi64((const __m128i *)p)));
}
static inline void vf_store_f16(uint16_t *p, vf v) {
  const __m128i r = vf_f16_bits(v);
  _mm_storel_epi64((__m128i *)p, _mm_packus_epi32(r, r));
}
#include "vec_partial_f16.h"
/* Bytes (the quantized K caches, rope_simd.h): each lane truncated toward zero to int32 (the
 * lanes hold values in [-128, 256): q8_0's rounded quotients, FP8 codes), its low byte stored
 * at p[0, VF_W); the _n form stores exactly n of them. */
static inline void vf_store_i8(unsigned char *p, vf v) {
  const __m128i low = _mm_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const int32_t bytes = _mm_cvtsi128_si32(_mm_shuffle_epi8(_mm_cvttps_epi32(v), low));
  memcpy(p, &bytes, sizeof bytes);
}
#include "vec_partial_i8.h"
/* No 8-byte non-temporal vector store: the 16-bit forms are stored normally. */
static inline void vf_stream_bf16(uint16_t *p, vf v) { vf_store_bf16(p, v); }
static inline void vf_stream_f16(uint16_t *p, vf v) { vf_store_f16(p, v); }

#endif /* POSENC_VEC_SSE4_H */
