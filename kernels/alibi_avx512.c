/* ALiBi for avx512, f32, bf16 and f16 scores: the shared SIMD source (alibi_simd.h) over the avx512
 * vector layer, which it includes first. */
#include "simd/vec_avx512.h"

/* bf16 scores two vectors at a time for alibi_simd.h (ALIBI_BF16_PAIR): 2 * VF_W elements
 * loaded as their even columns (a: the element shifted to the upper half of its 32-bit
 * lane) and odd ones (b: the upper half kept), and stored back with one word blend, so
 * neither widening nor narrowing moves data between lanes. The rounding is the layer's
 * (vf_bf16_upper). */
#define ALIBI_BF16_PAIR 1
static inline void alibi_bf16_load2(const uint16_t *p, vf *a, vf *b) {
  const __m512i x = _mm512_loadu_si512(p);
  *a = _mm512_castsi512_ps(_mm512_slli_epi32(x, 16));
  *b = _mm512_castsi512_ps(_mm512_and_si512(x, _mm512_set1_epi32((int)0xffff0000u)));
}
static inline void alibi_bf16_store2(uint16_t *p, vf a, vf b) {
  const __m512i even = _mm512_srli_epi32(vf_bf16_upper(a), 16);
  _mm512_storeu_si512(p, _mm512_mask_blend_epi16(0xAAAAAAAAu, even, vf_bf16_upper(b)));
}

#include "alibi_simd.h"
#include "variants.h"

void posenc_alibi_f32_avx512(const alibi_args *args) { alibi_run_f32(args); }
void posenc_alibi_bf16_avx512(const alibi_args *args) { alibi_run_bf16(args); }
void posenc_alibi_f16_avx512(const alibi_args *args) { alibi_run_f16(args); }
