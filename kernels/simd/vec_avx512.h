/* Vector layer for AVX-512 F/BW/DQ/VL: 16 float lanes, 8 double lanes. With
 * POSENC_VEC_AVX512_BF16 defined (the avx512bf16 tier's sources, compiled with
 * -mavx512bf16) its float to bf16 rounding is the CPU's VCVTNEPS2BF16 instead of integer
 * operations, bit for bit the same result (see vf_bf16_pack). */
#ifndef POSENC_VEC_AVX512_H
#define POSENC_VEC_AVX512_H

#include <immintrin.h>
#include <sleef.h>
#include <stddef.h>
#include <stdint.h>

#include "../common.h"
#include "msan.h"

#ifdef POSENC_VEC_AVX512_BF16
#define VEC_SUFFIX avx512bf16
#else
#define VEC_SUFFIX avx512
#endif
#define VF_W 16
#define VD_W 8
#define VF_REGS 32
_Static_assert(POSENC_MAX_LANES % VF_W == 0 && VF_W == 2 * VD_W,
               "VF_W must divide POSENC_MAX_LANES (kernels/common.h)");

typedef __m512 vf;
typedef __m512d vd;

static inline vf vf_load(const float *p) { return _mm512_loadu_ps(p); }
/* Two 256-bit stores, not one 512-bit store: on the Zen 5 we measure on, in-place streams
 * from DRAM ran at 0.82x the machine's fastest stream with 512-bit stores and 0.96-1.0x
 * with 256-bit ones (the fastest limit_rmw loop there is 256-bit too), at a cost of ~8% for
 * cache-resident rows (bench: rope_f32_neox/avx512, tokens 16 vs 4096). Rows found in cache
 * (RoPE's rotations that do not prefetch, ALiBi's f32 add under 16 MiB) store by
 * vf_store_reload instead (vec_elem.h's ve_store_whole). */
static inline void vf_store(float *p, vf v) {
  _mm256_storeu_ps(p, _mm512_castps512_ps256(v));
  _mm256_storeu_ps(p + 8, _mm512_extractf32x8_ps(v, 1));
}
/* A store that a vf_load of the same vector reads back soon (the ALiBi softmax's passes
 * over a row in cache): one 512-bit store, since a 512-bit load that spans two 256-bit
 * stores cannot take its data from them (store-to-load forwarding) and waits for them. Also
 * f32 rows in cache (vec_elem.h's ve_store_whole). */
static inline void vf_store_reload(float *p, vf v) { _mm512_storeu_ps(p, v); }
/* Non-temporal store (p aligned to the vector), and the fence that orders such stores. */
static inline void vf_stream(float *p, vf v) { _mm512_stream_ps(p, v); }
static inline void vf_stream_fence(void) { _mm_sfence(); }
/* A load of a row streamed from DRAM (the out-of-place RoPE's rows that stream their
 * destination: kernels/rope_simd.h, ROPE_STREAM_LOADS; ALiBi's f32 scores of 16 MiB or more):
 * two 256-bit loads, as vf_store's two stores. On Zen 5, f32 -> f16 RoPE out of place at 4096
 * tokens (120 MiB moved) took 0.80x the time with them, but 1.07-1.19x in cache (1 to 16 tokens):
 * the plain vf_load stays everywhere else. */
#define VF_HAVE_LOAD_STREAM 1
static inline vf vf_load_stream(const float *p) {
  return _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps(p)), _mm256_loadu_ps(p + 8), 1);
}
/* A load of a row streamed from DRAM and written back (RoPE calls that prefetch their f32
 * sources: 16 MiB or more, kernels/rope_simd.h's ROPE_RMW_LOADS): four 128-bit loads. On
 * Zen 5 (posenc_ab, new/old time against vf_load_stream): rope_f32_neox 40 heads in place
 * 0.92-0.95x at 4096 tokens (five runs), 0.88x at 2048, the factor-apply form 0.95-0.99x,
 * the f32 re-rotation 0.94x; in paired rounds at 4096 tokens avx512's rate over sse4's went
 * from 0.90-0.98 to 0.95-1.04 (sse4's 128-bit loads had run ahead). The streamed out-of-place
 * rows keep vf_load_stream (1.04-1.06x with these), and so does ALiBi's large f32 add (0.89x
 * in one build, 1.05-1.12x in the next: not distinguishable from code placement). */
#define VF_HAVE_LOAD_RMW_STREAM 1
static inline vf vf_load_rmw_stream(const float *p) {
  __m512 v = _mm512_castps128_ps512(_mm_loadu_ps(p));
  v = _mm512_insertf32x4(v, _mm_loadu_ps(p + 4), 1);
  v = _mm512_insertf32x4(v, _mm_loadu_ps(p + 8), 2);
  return _mm512_insertf32x4(v, _mm_loadu_ps(p + 12), 3);
}
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
/* |x| (the sign bit cleared). */
static inline vf vf_abs(vf x) { return _mm512_andnot_ps(_mm512_set1_ps(-0.0f), x); }
/* vf_fmadd and vf_fnmadd round once (fused). */
#define VF_FMA 1
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
/* The lanes' bits as int32 (a reinterpretation, exact). */
static inline vi vi_bits(vf x) { return _mm512_castps_si512(x); }

static inline vf vf_from_vd(vd lo, vd hi) {
  return _mm512_insertf32x8(_mm512_castps256_ps512(_mm512_cvtpd_ps(lo)), _mm512_cvtpd_ps(hi), 1);
}

/* For the softmax: max, lane masks, exp's pieces, the double sum, bf16 storage. */
/* max(a, b); a NaN in b gives NaN (VMAXPS returns its second operand if either is NaN). */
static inline vf vf_max(vf a, vf b) { return _mm512_max_ps(a, b); }
static inline float vf_hmax(vf v) {
  __m256 m = _mm256_max_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
  __m128 q = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
  q = _mm_max_ps(q, _mm_movehl_ps(q, q));
  return _mm_cvtss_f32(_mm_max_ss(q, _mm_shuffle_ps(q, q, 1)));
}
/* Lane masks and selections (the softmax's hidden keys), posenc's exp's scaling by 2^n and
 * soft-capping's min and division. */
typedef __mmask16 vm;
static inline vm vm_or(vm a, vm b) { return (vm)(a | b); }
/* Ordered comparisons: a NaN lane gives 0. */
static inline vm vf_eq_m(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ); }
static inline vm vf_lt_m(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
static inline vm vi_gt_m(vi a, vi b) { return _mm512_cmpgt_epi32_mask(a, b); }
/* a where m is set, else b. */
static inline vf vf_select(vm m, vf a, vf b) { return _mm512_mask_blend_ps(m, b, a); }
/* +0 where m is set, else v. */
static inline vf vf_zero_where(vm m, vf v) { return _mm512_maskz_mov_ps((vm)~m, v); }
static inline vi vi_load(const int32_t *p) { return _mm512_loadu_si512(p); }
static inline vi vi_load_n(const int32_t *p, size_t n) {
  return _mm512_maskz_loadu_epi32((__mmask16)((1u << n) - 1u), p);
}
/* min(a, b); a NaN in b gives NaN (VMINPS returns its second operand if either is NaN). */
static inline vf vf_min(vf a, vf b) { return _mm512_min_ps(a, b); }
static inline vf vf_div(vf a, vf b) { return _mm512_div_ps(a, b); }
/* The square root, correctly rounded. */
static inline vf vf_sqrt(vf a) { return _mm512_sqrt_ps(a); }
/* p * 2^n for integral n in [-126, 127] (VSCALEFPS: p * 2^floor(n) for any n); a NaN p or n
 * gives NaN. */
static inline vf vf_scale2(vf p, vf n) { return _mm512_scalef_ps(p, n); }
/* vf_scale2, +0 where m is set (one masked VSCALEFPS). */
static inline vf vf_scale2_zero_where(vm m, vf p, vf n) {
  return _mm512_maskz_scalef_ps((vm)~m, p, n);
}
/* v in lanes [0, n), fill in the others (n <= VF_W). */
static inline vf vf_first_n(vf v, size_t n, float fill) {
  return _mm512_mask_mov_ps(_mm512_set1_ps(fill), (__mmask16)((1u << n) - 1u), v);
}
static inline double vd_hsum(vd v) {
  const __m256d h = _mm256_add_pd(_mm512_castpd512_pd256(v), _mm512_extractf64x4_pd(v, 1));
  const __m128d s = _mm_add_pd(_mm256_castpd256_pd128(h), _mm256_extractf128_pd(h, 1));
  return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
}
/* bf16 (the upper half of a float) to float, exactly; the _n forms neither read nor write
 * past the n-th element (masked). */
static inline vf vf_from_bf16_bits(__m256i h) {
  /* One VPERMW: word i to the upper half of lane i, the lower halves zeroed by the mask. */
  const __m512i idx = _mm512_setr_epi32(0 << 16, 1 << 16, 2 << 16, 3 << 16, 4 << 16, 5 << 16,
                                        6 << 16, 7 << 16, 8 << 16, 9 << 16, 10 << 16, 11 << 16,
                                        12 << 16, 13 << 16, 14 << 16, 15 << 16);
  return _mm512_castsi512_ps(
      _mm512_maskz_permutexvar_epi16(0xAAAAAAAAu, idx, _mm512_zextsi256_si512(h)));
}
static inline vf vf_load_bf16(const uint16_t *p) {
  return vf_from_bf16_bits(_mm256_loadu_si256((const __m256i *)p));
}
static inline vf vf_load_bf16_n(const uint16_t *p, size_t n) {
  return vf_from_bf16_bits(_mm256_maskz_loadu_epi16((__mmask16)((1u << n) - 1u), p));
}
/* float to bf16 in the upper halves of the 32-bit lanes, rounded to nearest even; a NaN
 * becomes the default quiet NaN (0xffc0: payload not kept, posenc.h leaves it unspecified).
 * Four operations, as bf16 RoPE rows streamed from DRAM are bound by them (4096 tokens on
 * Zen 5: 0.71x of limit_rmw with compare, blend, shifts and VPMOVDW; 0.85x with these and
 * VPERMW): VFIXUPIMMPS turns a NaN into 0xffc00000 (whose rounding cannot carry into the
 * exponent) and keeps the rest; the bias, 0x7fff or 0x8000 where the bf16's lowest bit is
 * 1, is one masked move. */
static inline __m512i vf_bf16_upper(vf v) {
  const __m512i b = _mm512_castps_si512(_mm512_fixupimm_ps(v, v, _mm512_set1_epi32(0x11111133), 0));
  const __mmask16 odd = _mm512_test_epi32_mask(b, _mm512_set1_epi32(0x10000));
  const __m512i bias =
      _mm512_mask_mov_epi32(_mm512_set1_epi32(0x7fff), odd, _mm512_set1_epi32(0x8000));
  return _mm512_add_epi32(b, bias);
}
/* The same in the lower halves. */
static inline __m512i vf_bf16_bits(vf v) { return _mm512_srli_epi32(vf_bf16_upper(v), 16); }
#ifdef POSENC_VEC_AVX512_BF16
/* VCVTNEPS2BF16 rounds to nearest even and quiets a NaN as vf_bf16_upper does, but treats a
 * subnormal float as zero (it ignores MXCSR: DAZ and FTZ always on), where the reference
 * (kernels/half.h) rounds it to a bf16 subnormal. A vector with a subnormal lane (rare in
 * real data) takes the integer path, so every result is the reference's. */
static inline __m256i vf_bf16_pack(vf v) {
  if (__builtin_expect(_mm512_fpclass_ps_mask(v, 0x20) != 0, 0)) /* 0x20: subnormal */
    return _mm512_cvtepi32_epi16(vf_bf16_bits(v));
  return (__m256i)_mm512_cvtneps_pbh(v);
}
static inline void vf_store_bf16(uint16_t *p, vf v) {
  _mm256_storeu_si256((__m256i *)p, vf_bf16_pack(v));
}
static inline void vf_store_bf16_n(uint16_t *p, vf v, size_t n) {
  _mm256_mask_storeu_epi16(p, (__mmask16)((1u << n) - 1u), vf_bf16_pack(v));
}
static inline void vf_stream_bf16(uint16_t *p, vf v) {
  _mm256_stream_si256((__m256i *)p, vf_bf16_pack(v));
}
/* Two vectors, a then b, into 32 consecutive bf16 (vec_elem.h's ve_store2): one
 * VCVTNE2PS2BF16 and one 64-byte store. A subnormal float becomes a signed zero there, so
 * only a result with a zero (one test of 32 words, not two FPCLASS of the inputs) needs the
 * inputs looked at; a subnormal one sends both vectors to the integer path. */
#define VF_HAVE_STORE2_BF16 1
/* (nt, a constant: the non-temporal stores of vf_stream2_bf16 below) */
static inline void vf_put2_bf16_(uint16_t *p, vf a, vf b, int nt) {
  const __m512i r = (__m512i)_mm512_cvtne2ps_pbh(b, a);
  if (__builtin_expect(_mm512_testn_epi16_mask(r, _mm512_set1_epi16(0x7fff)) != 0, 0) &&
      (_mm512_fpclass_ps_mask(a, 0x20) | _mm512_fpclass_ps_mask(b, 0x20)) != 0) {
    if (nt) {
      vf_stream_bf16(p, a);
      vf_stream_bf16(p + 16, b);
    } else {
      vf_store_bf16(p, a);
      vf_store_bf16(p + 16, b);
    }
    return;
  }
  if (nt)
    _mm512_stream_si512((void *)p, r);
  else
    _mm512_storeu_si512(p, r);
}
static inline void vf_store2_bf16(uint16_t *p, vf a, vf b) { vf_put2_bf16_(p, a, b, 0); }
/* Two such pairs, a then b at p and c then d at q (ve_store2x2): both results' zero tests in
 * one branch (a test and branch per 64-byte store took 14% of bf16 RoPE's time in cache). */
static inline void vf_store2x2_bf16(uint16_t *p, vf a, vf b, uint16_t *q, vf c, vf d) {
  const __m512i r = (__m512i)_mm512_cvtne2ps_pbh(b, a), t = (__m512i)_mm512_cvtne2ps_pbh(d, c);
  const __m512i low = _mm512_set1_epi16(0x7fff);
  if (__builtin_expect((_mm512_testn_epi16_mask(r, low) | _mm512_testn_epi16_mask(t, low)) != 0,
                       0)) {
    vf_store2_bf16(p, a, b);
    vf_store2_bf16(q, c, d);
    return;
  }
  _mm512_storeu_si512(p, r);
  _mm512_storeu_si512(q, t);
}
#else
/* One VPERMW: the upper words of the 16 lanes to the lower 256 bits. */
static inline __m256i vf_bf16_pack(vf v) {
  const __m512i idx =
      _mm512_setr_epi32(1 | 3 << 16, 5 | 7 << 16, 9 | 11 << 16, 13 | 15 << 16, 17 | 19 << 16,
                        21 | 23 << 16, 25 | 27 << 16, 29 | 31 << 16, 0, 0, 0, 0, 0, 0, 0, 0);
  return _mm512_castsi512_si256(_mm512_permutexvar_epi16(idx, vf_bf16_upper(v)));
}
static inline void vf_store_bf16(uint16_t *p, vf v) {
  _mm256_storeu_si256((__m256i *)p, vf_bf16_pack(v));
}
/* MemorySanitizer does not mark the words VPMOVDW's masked store writes as initialised (a
 * false report where the destination was not): they are marked here (kernels/simd/msan.h). */
static inline void vf_store_bf16_n(uint16_t *p, vf v, size_t n) {
  _mm512_mask_cvtepi32_storeu_epi16(p, (__mmask16)((1u << n) - 1u), vf_bf16_bits(v));
  POSENC_MSAN_UNPOISON(p, n * sizeof *p);
}
static inline void vf_stream_bf16(uint16_t *p, vf v) {
  _mm256_stream_si256((__m256i *)p, vf_bf16_pack(v));
}
#endif
/* IEEE binary16 (f16) to float, exactly, and float to f16 rounded to nearest even (IEEE
 * overflow to infinity, subnormals, a NaN stays a quiet NaN); the _n forms are masked. */
static inline vf vf_load_f16(const uint16_t *p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
}
static inline vf vf_load_f16_n(const uint16_t *p, size_t n) {
  return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16((__mmask16)((1u << n) - 1u), p));
}
static inline __m256i vf_f16_bits(vf v) {
  return _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
static inline void vf_store_f16(uint16_t *p, vf v) {
  _mm256_storeu_si256((__m256i *)p, vf_f16_bits(v));
}
static inline void vf_store_f16_n(uint16_t *p, vf v, size_t n) {
  _mm256_mask_storeu_epi16(p, (__mmask16)((1u << n) - 1u), vf_f16_bits(v));
}
/* Bytes (the quantized K caches, rope_simd.h): each lane truncated toward zero to int32 (the
 * lanes hold values in [-128, 256): q8_0's rounded quotients, FP8 codes), its low byte stored
 * at p[0, VF_W); the _n form stores exactly n of them. */
static inline void vf_store_i8(unsigned char *p, vf v) {
  _mm_storeu_si128((__m128i *)p, _mm512_cvtepi32_epi8(_mm512_cvttps_epi32(v)));
}
static inline void vf_store_i8_n(unsigned char *p, vf v, size_t n) {
  _mm512_mask_cvtepi32_storeu_epi8(p, (__mmask16)((1u << n) - 1u), _mm512_cvttps_epi32(v));
}
/* Two vectors interleaved, a0 b0 a1 b1 ..., as 2 VF_W 16-bit elements in one vector (vz16),
 * for the sinusoid's rows of finite values: bf16 rounded to nearest even in three integer
 * operations each (+ 0x7fff, + 1 where the bf16's lowest bit is 1; no NaN handling), then
 * one word blend; f16 by VCVTPS2PH. */
#define VF_HAVE_VZ16 1
typedef __m512i vz16;
static inline __m512i vf_bf16_upper_finite(vf v) {
  const __m512i b = _mm512_castps_si512(v);
  const __m512i r = _mm512_add_epi32(b, _mm512_set1_epi32(0x7fff));
  return _mm512_mask_add_epi32(r, _mm512_test_epi32_mask(b, _mm512_set1_epi32(0x10000)), r,
                               _mm512_set1_epi32(1));
}
static inline vz16 vz16_bf16_finite(vf a, vf b) {
  return _mm512_mask_blend_epi16(0xAAAAAAAAu, _mm512_srli_epi32(vf_bf16_upper_finite(a), 16),
                                 vf_bf16_upper_finite(b));
}
static inline vz16 vz16_f16(vf a, vf b) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(vf_f16_bits(vf_zip_lo(a, b))),
                            vf_f16_bits(vf_zip_hi(a, b)), 1);
}
static inline void vz16_store(void *p, vz16 v) { _mm512_storeu_si512(p, v); }
static inline void vz16_stream(void *p, vz16 v) { _mm512_stream_si512(p, v); }
/* vf_store_f16 as a non-temporal store (p aligned to 32 bytes); vf_stream_bf16 above. */
static inline void vf_stream_f16(uint16_t *p, vf v) {
  _mm256_stream_si256((__m256i *)p, vf_f16_bits(v));
}

/* Two vectors, a then b, as 2 VF_W 16-bit elements in one 64-byte non-temporal store (p
 * aligned to 64 bytes): each store fills a whole cache line. */
#define VF_HAVE_STREAM2_16 1
static inline void vf_stream2_f16(uint16_t *p, vf a, vf b) {
  _mm512_stream_si512(
      (void *)p, _mm512_inserti64x4(_mm512_castsi256_si512(vf_f16_bits(a)), vf_f16_bits(b), 1));
}
#ifdef POSENC_VEC_AVX512_BF16
/* (vf_store2_bf16's conversion and test) */
static inline void vf_stream2_bf16(uint16_t *p, vf a, vf b) { vf_put2_bf16_(p, a, b, 1); }
#else
static inline void vf_stream2_bf16(uint16_t *p, vf a, vf b) {
  _mm512_stream_si512(
      (void *)p, _mm512_inserti64x4(_mm512_castsi256_si512(vf_bf16_pack(a)), vf_bf16_pack(b), 1));
}
#endif

#endif /* POSENC_VEC_AVX512_H */
