/* Operation-mix limits of the avx2 variants (limit_mix.h); this file is compiled with the
 * avx2 tier's flags. As limit_mix_avx512.c, with 8-lane vectors: the f16 kernels (rope_f16
 * is served by avx2 on Zen 4, posenc.h's rules). */
#include <immintrin.h>

#include "limit_mix.h"

#define MIX_CHAINS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
_Static_assert(LIMIT_MIX_CHAINS == 8, "MIX_CHAINS lists the chains");
#define MIX_KEEP(v) __asm__ volatile("" : "+x"(v))
#define MIX_ROUNDING (_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)

static float mix_sum(__m256 v) {
  _Alignas(32) float lanes[8];
  _mm256_store_ps(lanes, v);
  float sum = 0;
  for (int l = 0; l < 8; ++l) sum += lanes[l];
  return sum;
}

/* rope_f16, avx2 variant, 16 elements (8 pairs): 2 VCVTPH2PS (ve_load), 2 VMULPS + 2 FMA
 * (rope_simd.h's msub_, madd_), 2 VCVTPS2PH (ve_store). Chain: the results are the next u,
 * v; c^2 + s^2 = 1 keeps the values normal. */
static float mix_rope_f16_avx2(size_t n_iter) {
  const __m256 c = _mm256_set1_ps(0.8f), s = _mm256_set1_ps(0.6f);
#define DECL(i)                                        \
  __m128i hu##i = _mm_set1_epi16((short)(0x3c00 + i)); \
  __m128i hv##i = _mm_set1_epi16((short)(0x3a00 + i));
  MIX_CHAINS(DECL)
#undef DECL
  for (size_t n = 0; n < n_iter; ++n) {
#define ROUND(i)                                                         \
  {                                                                      \
    const __m256 u = _mm256_cvtph_ps(hu##i), v = _mm256_cvtph_ps(hv##i); \
    const __m256 a = _mm256_fnmadd_ps(v, s, _mm256_mul_ps(u, c));        \
    const __m256 b = _mm256_fmadd_ps(u, s, _mm256_mul_ps(v, c));         \
    hu##i = _mm256_cvtps_ph(a, MIX_ROUNDING);                            \
    hv##i = _mm256_cvtps_ph(b, MIX_ROUNDING);                            \
    MIX_KEEP(hu##i);                                                     \
    MIX_KEEP(hv##i);                                                     \
  }
    MIX_CHAINS(ROUND)
#undef ROUND
  }
  float sum = 0;
#define SUM(i) sum += mix_sum(_mm256_cvtph_ps(hu##i)) + mix_sum(_mm256_cvtph_ps(hv##i));
  MIX_CHAINS(SUM)
#undef SUM
  return sum;
}

/* ALiBi add into f16 scores, avx2 variant, 8 elements: VCVTPH2PS, the distance step
 * (VADDPS), VMULPS of the slope, VMULPS of the scale, VSUBPS, VCVTPS2PH (alibi_simd.h). */
static float mix_alibi_f16_avx2(size_t n_iter) {
  const __m256 m = _mm256_set1_ps(1.0f / 64), scale = _mm256_set1_ps(0.5f);
  const __m256 w = _mm256_set1_ps(8.0f);
#define DECL(i)                                       \
  __m128i h##i = _mm_set1_epi16((short)(0x3c00 + i)); \
  __m256 fa##i = _mm256_set1_ps((float)(i + 1));
  MIX_CHAINS(DECL)
#undef DECL
  for (size_t n = 0; n < n_iter; ++n) {
#define ROUND(i)                                                                         \
  {                                                                                      \
    const __m256 d = _mm256_add_ps(fa##i, w);                                            \
    const __m256 r =                                                                     \
        _mm256_sub_ps(_mm256_mul_ps(scale, _mm256_cvtph_ps(h##i)), _mm256_mul_ps(m, d)); \
    h##i = _mm256_cvtps_ph(r, MIX_ROUNDING);                                             \
    MIX_KEEP(h##i);                                                                      \
  }
    MIX_CHAINS(ROUND)
#undef ROUND
  }
  float sum = 0;
#define SUM(i) sum += mix_sum(_mm256_cvtph_ps(h##i));
  MIX_CHAINS(SUM)
#undef SUM
  return sum;
}

static const limit_mix_loop mixes[] = {
    {"rope_f16_neox", "avx2", POSENC_ISA_AVX2, 16, "2 VCVTPH2PS, 2 VMULPS, 2 FMA, 2 VCVTPS2PH",
     mix_rope_f16_avx2},
    {"alibi_add_f16", "avx2", POSENC_ISA_AVX2, 8, "VCVTPH2PS, VADDPS, 2 VMULPS, VSUBPS, VCVTPS2PH",
     mix_alibi_f16_avx2},
};

const limit_mix_loop *limit_mix_avx2(size_t *count) {
  *count = sizeof mixes / sizeof mixes[0];
  return mixes;
}
