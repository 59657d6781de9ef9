/* ALiBi for sse4, f32, bf16 and f16 scores: the shared SIMD source (alibi_simd.h) over the sse4
 * vector layer, which it includes first. */
#include "simd/vec_sse4.h"

/* bf16 scores two vectors at a time for alibi_simd.h (ALIBI_BF16_PAIR): 2 * VF_W elements
 * loaded as their even columns (a: the element shifted to the upper half of its 32-bit
 * lane) and odd ones (b: the upper half kept), and stored back with one word blend, so
 * neither widening nor narrowing moves data between lanes. Rounding to nearest
 * even as the layer's vf_store_bf16, but a NaN lane is set to all ones (0xffff, a quiet NaN:
 * posenc.h leaves the payload unspecified) by one OR with its compare mask. */
#define ALIBI_BF16_PAIR 1
static inline void alibi_bf16_load2(const uint16_t *p, vf *a, vf *b) {
  const __m128i x = _mm_loadu_si128((__m128i *)p);
  *a = _mm_castsi128_ps(_mm_slli_epi32(x, 16));
  *b = _mm_castsi128_ps(_mm_and_si128(x, _mm_set1_epi32((int)0xffff0000u)));
}
/* The bf16 of v, rounded, in the upper half of each lane (the lower half is not cleared). */
static inline __m128i alibi_bf16_upper(vf v) {
  const __m128i b = _mm_castps_si128(v);
  const __m128i lsb = _mm_and_si128(_mm_srli_epi32(b, 16), _mm_set1_epi32(1));
  const __m128i rne = _mm_add_epi32(_mm_add_epi32(b, _mm_set1_epi32(0x7fff)), lsb);
  return _mm_or_si128(rne, _mm_castps_si128(_mm_cmpunord_ps(v, v)));
}
static inline void alibi_bf16_store2(uint16_t *p, vf a, vf b) {
  const __m128i even = _mm_srli_epi32(alibi_bf16_upper(a), 16);
  _mm_storeu_si128((__m128i *)p, _mm_blend_epi16(even, alibi_bf16_upper(b), 0xAA));
}

#include "alibi_simd.h"
#include "variants.h"

void posenc_alibi_f32_sse4(const alibi_args *args) { alibi_run_f32(args); }
void posenc_alibi_bf16_sse4(const alibi_args *args) { alibi_run_bf16(args); }
void posenc_alibi_f16_sse4(const alibi_args *args) { alibi_run_f16(args); }
