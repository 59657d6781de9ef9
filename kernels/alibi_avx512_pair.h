/* ALiBi's bf16 pair hooks (alibi_simd.h, ALIBI_BF16_PAIR) for the avx512 vector layer,
 * included by alibi_avx512.c and alibi_avx512bf16.c after the layer.
 *
 * bf16 scores two vectors at a time: 2 * VF_W elements loaded as their even columns (a: the
 * element shifted to the upper half of its 32-bit lane) and odd ones (b: the upper half
 * kept), so widening moves no data between lanes. Stored back: with integer rounding
 * (vf_bf16_upper), one word blend; with AVX512_BF16 (POSENC_VEC_AVX512_BF16), one
 * VCVTNE2PS2BF16 and one VPERMW that interleaves the two halves, a result with a zero (a
 * subnormal input flushed, or a true zero) checked and, for a subnormal, the integer path. */
#ifndef POSENC_KERNELS_ALIBI_AVX512_PAIR_H
#define POSENC_KERNELS_ALIBI_AVX512_PAIR_H

#define ALIBI_BF16_PAIR 1
static inline vf alibi_bf16_cols_a(void) {
  return _mm512_setr_ps(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
}
static inline vf alibi_bf16_cols_b(void) {
  return _mm512_setr_ps(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
}
static inline void alibi_bf16_load2(const uint16_t *p, vf *a, vf *b) {
  const __m512i x = _mm512_loadu_si512(p);
  *a = _mm512_castsi512_ps(_mm512_slli_epi32(x, 16));
  *b = _mm512_castsi512_ps(_mm512_and_si512(x, _mm512_set1_epi32((int)0xffff0000u)));
}
static inline void alibi_bf16_store2_int_(uint16_t *p, vf a, vf b) {
  const __m512i even = _mm512_srli_epi32(vf_bf16_upper(a), 16);
  _mm512_storeu_si512(p, _mm512_mask_blend_epi16(0xAAAAAAAAu, even, vf_bf16_upper(b)));
}
#ifdef POSENC_VEC_AVX512_BF16
static inline void alibi_bf16_store2(uint16_t *p, vf a, vf b) {
  /* Word 2i from a's lane i (the lower half of the conversion), 2i + 1 from b's. */
  const __m512i idx = _mm512_setr_epi32(0 | 16 << 16, 1 | 17 << 16, 2 | 18 << 16, 3 | 19 << 16,
                                        4 | 20 << 16, 5 | 21 << 16, 6 | 22 << 16, 7 | 23 << 16,
                                        8 | 24 << 16, 9 | 25 << 16, 10 | 26 << 16, 11 | 27 << 16,
                                        12 | 28 << 16, 13 | 29 << 16, 14 | 30 << 16, 15 | 31 << 16);
  const __m512i r = _mm512_permutexvar_epi16(idx, (__m512i)_mm512_cvtne2ps_pbh(b, a));
  if (__builtin_expect(_mm512_testn_epi16_mask(r, _mm512_set1_epi16(0x7fff)) != 0, 0) &&
      (_mm512_fpclass_ps_mask(a, 0x20) | _mm512_fpclass_ps_mask(b, 0x20)) != 0) {
    alibi_bf16_store2_int_(p, a, b);
    return;
  }
  _mm512_storeu_si512(p, r);
}
#else
static inline void alibi_bf16_store2(uint16_t *p, vf a, vf b) { alibi_bf16_store2_int_(p, a, b); }
#endif

#endif /* POSENC_KERNELS_ALIBI_AVX512_PAIR_H */
