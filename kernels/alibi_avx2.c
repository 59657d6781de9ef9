/* ALiBi for avx2, f32, bf16 and f16 scores: the shared SIMD source (alibi_simd.h) over the avx2
 * vector layer, which it includes first. */
#include "simd/vec_avx2.h"

/* bf16 scores two vectors at a time for alibi_simd.h (ALIBI_BF16_PAIR): 2 * VF_W elements
 * loaded as their even columns (a: the element shifted to the upper half of its 32-bit
 * lane) and odd ones (b: the upper half kept), and stored back with one word blend, so
 * neither widening nor narrowing moves data between lanes. Rounding to nearest
 * even as the layer's vf_store_bf16, but a NaN lane is set to all ones (0xffff, a quiet NaN:
 * posenc.h leaves the payload unspecified) by one OR with its compare mask. */
#define ALIBI_BF16_PAIR 1
static inline void alibi_bf16_load2(const uint16_t *p, vf *a, vf *b) {
  const __m256i x = _mm256_loadu_si256((__m256i *)p);
  *a = _mm256_castsi256_ps(_mm256_slli_epi32(x, 16));
  *b = _mm256_castsi256_ps(_mm256_and_si256(x, _mm256_set1_epi32((int)0xffff0000u)));
}
/* The bf16 of v, rounded, in the upper half of each lane (the lower half is not cleared). */
static inline __m256i alibi_bf16_upper(vf v) {
  const __m256i b = _mm256_castps_si256(v);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(b, 16), _mm256_set1_epi32(1));
  const __m256i rne = _mm256_add_epi32(_mm256_add_epi32(b, _mm256_set1_epi32(0x7fff)), lsb);
  return _mm256_or_si256(rne, _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)));
}
static inline void alibi_bf16_store2(uint16_t *p, vf a, vf b) {
  const __m256i even = _mm256_srli_epi32(alibi_bf16_upper(a), 16);
  _mm256_storeu_si256((__m256i *)p, _mm256_blend_epi16(even, alibi_bf16_upper(b), 0xAA));
}

#include "alibi_simd.h"
#include "variants.h"

void posenc_alibi_f32_avx2(const alibi_args *args) { alibi_run_f32(args); }
void posenc_alibi_bf16_avx2(const alibi_args *args) { alibi_run_bf16(args); }
void posenc_alibi_f16_avx2(const alibi_args *args) { alibi_run_f16(args); }
