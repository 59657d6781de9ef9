/* Operation-mix limits of the avx512 and avx512bf16 variants (limit_mix.h); this file is
 * compiled with the avx512 tier's flags, and with avx512bf16's where the build has that tier
 * (its mixes are left out otherwise). Each mix's round is the operations its kernel's inner
 * loop performs for `elements` elements, nothing else: the lists in `ops` name them, and the
 * comments say where in the kernel each comes from. */
#include <immintrin.h>

#include "limit_mix.h"

/* The chains of a mix: MIX_CHAINS names the list the next mix uses (limit_mix.h: chains). */
#define MIX_CHAINS_8(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define MIX_CHAINS_16(X) MIX_CHAINS_8(X) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)
/* Keeps a chain's value in a register and every operation on it executed. */
#define MIX_KEEP(v) __asm__ volatile("" : "+v"(v))

/* Rotation constants with c^2 + s^2 = 1, so the chains' values neither grow nor vanish
 * (no subnormals, no overflow). */
#define MIX_C 0.8f
#define MIX_S 0.6f

/* bf16 words 0-15 (lo) or 16-31 (hi) of a 512-bit vector into the upper halves of 16 float
 * lanes: one VPERMW, as vf_from_bf16_bits (vec_avx512.h) widens 16 loaded words. */
static inline __m512i mix_bf16_index(int hi) {
  const int o = hi ? 16 : 0;
  return _mm512_setr_epi32((o + 0) << 16, (o + 1) << 16, (o + 2) << 16, (o + 3) << 16,
                           (o + 4) << 16, (o + 5) << 16, (o + 6) << 16, (o + 7) << 16,
                           (o + 8) << 16, (o + 9) << 16, (o + 10) << 16, (o + 11) << 16,
                           (o + 12) << 16, (o + 13) << 16, (o + 14) << 16, (o + 15) << 16);
}
static inline __m512 mix_widen_bf16(__m512i idx, __m512i h) {
  return _mm512_castsi512_ps(_mm512_maskz_permutexvar_epi16(0xAAAAAAAAu, idx, h));
}

/* vf_bf16_upper (vec_avx512.h): VFIXUPIMMPS, VPTESTMD, a masked VMOVDQA32, VPADDD. */
static inline __m512i mix_bf16_upper(__m512 v) {
  const __m512i b = _mm512_castps_si512(_mm512_fixupimm_ps(v, v, _mm512_set1_epi32(0x11111133), 0));
  const __mmask16 odd = _mm512_test_epi32_mask(b, _mm512_set1_epi32(0x10000));
  const __m512i bias =
      _mm512_mask_mov_epi32(_mm512_set1_epi32(0x7fff), odd, _mm512_set1_epi32(0x8000));
  return _mm512_add_epi32(b, bias);
}

/* The sum of a chain's float lanes, so that nothing is dropped as unused. */
static float mix_sum(__m512 v) { return _mm512_reduce_add_ps(v); }

/* NEOX rotation of one vector of pairs (u, v), as rope_simd.h's neox_rot2_ (msub_, madd_):
 * 2 VMULPS + 2 FMAs. */
#define MIX_ROTATE(u, v, a, b)                                  \
  const __m512 a = _mm512_fnmadd_ps(v, s, _mm512_mul_ps(u, c)); \
  const __m512 b = _mm512_fmadd_ps(u, s, _mm512_mul_ps(v, c))

#define MIX_CHAINS MIX_CHAINS_8

/* rope_bf16, avx512 variant, 32 elements (16 pairs): 2 VPERMW widenings (ve_load), the
 * rotation, and for each of the 2 result vectors vf_bf16_pack: vf_bf16_upper (4) + 1 VPERMW
 * (ve_store2 = two ve_store on this layer). Chain: the two packed halves are the next
 * round's u and v words. */
static float mix_rope_bf16_avx512(size_t n_iter) {
  const __m512i lo = mix_bf16_index(0);
  const __m512i pack =
      _mm512_setr_epi32(1 | 3 << 16, 5 | 7 << 16, 9 | 11 << 16, 13 | 15 << 16, 17 | 19 << 16,
                        21 | 23 << 16, 25 | 27 << 16, 29 | 31 << 16, 0, 0, 0, 0, 0, 0, 0, 0);
  const __m512 c = _mm512_set1_ps(MIX_C), s = _mm512_set1_ps(MIX_S);
#define DECL(i)                                                         \
  __m512i hu##i = _mm512_set1_epi32(0x3f80 + i + ((0x3f40 + i) << 16)); \
  __m512i hv##i = _mm512_set1_epi32(0x3f40 + i + ((0x3f80 + i) << 16));
  MIX_CHAINS(DECL)
#undef DECL
  for (size_t n = 0; n < n_iter; ++n) {
#define ROUND(i)                                               \
  {                                                            \
    const __m512 u = mix_widen_bf16(lo, hu##i);                \
    const __m512 v = mix_widen_bf16(lo, hv##i);                \
    MIX_ROTATE(u, v, a, b);                                    \
    hu##i = _mm512_permutexvar_epi16(pack, mix_bf16_upper(a)); \
    hv##i = _mm512_permutexvar_epi16(pack, mix_bf16_upper(b)); \
    MIX_KEEP(hu##i);                                           \
    MIX_KEEP(hv##i);                                           \
  }
    MIX_CHAINS(ROUND)
#undef ROUND
  }
  float sum = 0;
#define SUM(i) sum += mix_sum(mix_widen_bf16(lo, hu##i)) + mix_sum(mix_widen_bf16(lo, hv##i));
  MIX_CHAINS(SUM)
#undef SUM
  return sum;
}

/* ALiBi add into bf16 scores, avx512 variant, 32 elements (alibi_simd.h's put2_ with
 * ALIBI_BF16_PAIR, alibi_avx512.c): the pair's unpacking VPSLLD + VPANDD, the two distance
 * vectors' steps (2 VADDPS), 2 VMULPS of the slope, 2 VMULPS of the scale, 2 VSUBPS, then
 * vf_bf16_upper of each (4 + 4), VPSRLD and the word blend VPBLENDMW. */
static float mix_alibi_bf16_avx512(size_t n_iter) {
  const __m512 m = _mm512_set1_ps(1.0f / 64), scale = _mm512_set1_ps(0.5f);
  const __m512 w2 = _mm512_set1_ps(32.0f);
  const __m512i high = _mm512_set1_epi32((int)0xffff0000u);
#define DECL(i)                                               \
  __m512i h##i = _mm512_set1_epi32(0x3f803f80 + 0x10001 * i); \
  __m512 fa##i = _mm512_set1_ps((float)(i + 1)), fb##i = _mm512_set1_ps((float)(i + 2));
  MIX_CHAINS(DECL)
#undef DECL
  for (size_t n = 0; n < n_iter; ++n) {
#define ROUND(i)                                                                           \
  {                                                                                        \
    const __m512 a = _mm512_castsi512_ps(_mm512_slli_epi32(h##i, 16));                     \
    const __m512 b = _mm512_castsi512_ps(_mm512_and_si512(h##i, high));                    \
    fa##i = _mm512_add_ps(fa##i, w2);                                                      \
    fb##i = _mm512_add_ps(fb##i, w2);                                                      \
    const __m512 ra = _mm512_sub_ps(_mm512_mul_ps(scale, a), _mm512_mul_ps(m, fa##i));     \
    const __m512 rb = _mm512_sub_ps(_mm512_mul_ps(scale, b), _mm512_mul_ps(m, fb##i));     \
    h##i = _mm512_mask_blend_epi16(0xAAAAAAAAu, _mm512_srli_epi32(mix_bf16_upper(ra), 16), \
                                   mix_bf16_upper(rb));                                    \
    MIX_KEEP(h##i);                                                                        \
    MIX_KEEP(fa##i);                                                                       \
    MIX_KEEP(fb##i);                                                                       \
  }
    MIX_CHAINS(ROUND)
#undef ROUND
  }
  float sum = 0;
#define SUM(i)                                                                         \
  sum += mix_sum(_mm512_castsi512_ps(_mm512_and_si512(h##i, high))) + mix_sum(fa##i) + \
         mix_sum(fb##i);
  MIX_CHAINS(SUM)
#undef SUM
  return sum;
}

/* The f16 mixes (rope_f16, ALiBi into f16 scores) on 16-lane vectors. */
#define MIX_W 16
typedef __m512 mv;
typedef __m256i mh;
static inline mv mv_from_f16(mh h) { return _mm512_cvtph_ps(h); }
static inline mh mh_from_mv(mv v) {
  return _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
static inline mv mv_set1(float x) { return _mm512_set1_ps(x); }
static inline mh mh_set1(short x) { return _mm256_set1_epi16(x); }
static inline mv mv_add(mv a, mv b) { return _mm512_add_ps(a, b); }
static inline mv mv_sub(mv a, mv b) { return _mm512_sub_ps(a, b); }
static inline mv mv_mul(mv a, mv b) { return _mm512_mul_ps(a, b); }
static inline mv mv_fmadd(mv a, mv b, mv c) { return _mm512_fmadd_ps(a, b, c); }
static inline mv mv_fnmadd(mv a, mv b, mv c) { return _mm512_fnmadd_ps(a, b, c); }
static float mv_sum(mv v) { return mix_sum(v); }

#undef MIX_CHAINS
#define MIX_CHAINS MIX_CHAINS_16
#include "limit_mix_f16.h"
#undef MIX_CHAINS
#define MIX_CHAINS MIX_CHAINS_8

/* The softmax mixes (limit_mix_softmax.h) on this layer: vf_select as a masked VMOVAPS,
 * vf_scale2_zero_where as VCMPPS + VSCALEFPS with zeroing. 8 chains (12: 0.98-0.99x the
 * rate, 16: 0.79-0.95x). */
typedef __mmask16 mm;
static inline mv mv_max(mv a, mv b) { return _mm512_max_ps(a, b); }
static inline mm mv_hidden(mv m, mv ninf) { return _mm512_cmp_ps_mask(m, ninf, _CMP_EQ_OQ); }
static inline mv mv_hide(mm h, mv u, mv ninf) { return _mm512_mask_mov_ps(u, h, ninf); }
static inline mv mv_exp_scale(mv t, mv lo, mv p, mv n) {
  return _mm512_maskz_scalef_ps(_mm512_cmp_ps_mask(t, lo, _CMP_NLT_UQ), p, n);
}
#include "limit_mix_softmax.h"

#ifdef __AVX512BF16__
/* rope_bf16, avx512bf16 variant, 32 elements: 2 VPERMW widenings, the rotation, one
 * VCVTNE2PS2BF16 and its zero test (VPTESTNMW), with one branch on two chains' tests, as
 * the kernel stores a block's two halves (vf_store2x2_bf16). Chain: the 32 words are the next
 * round's u (words 0-15) and v (16-31). */
static float mix_rope_bf16_avx512bf16(size_t n_iter) {
  const __m512i lo = mix_bf16_index(0), hi = mix_bf16_index(1);
  const __m512i low_bits = _mm512_set1_epi16(0x7fff);
  const __m512 c = _mm512_set1_ps(MIX_C), s = _mm512_set1_ps(MIX_S);
#define DECL(i) __m512i h##i = _mm512_set1_epi32(0x3f803f40 + 0x10001 * i);
  MIX_CHAINS(DECL)
#undef DECL
  unsigned zeros = 0;
  for (size_t n = 0; n < n_iter; ++n) {
#define ROUND(i)                                                                 \
  const __m512 u##i = mix_widen_bf16(lo, h##i), v##i = mix_widen_bf16(hi, h##i); \
  MIX_ROTATE(u##i, v##i, a##i, b##i);                                            \
  h##i = (__m512i)_mm512_cvtne2ps_pbh(b##i, a##i);                               \
  MIX_KEEP(h##i);
#define ROUND2(i, j)                                                     \
  {                                                                      \
    ROUND(i)                                                             \
    ROUND(j)                                                             \
    if (__builtin_expect((_mm512_testn_epi16_mask(h##i, low_bits) |      \
                          _mm512_testn_epi16_mask(h##j, low_bits)) != 0, \
                         0))                                             \
      ++zeros;                                                           \
  }
    ROUND2(0, 1) ROUND2(2, 3) ROUND2(4, 5) ROUND2(6, 7)
#undef ROUND2
#undef ROUND
  }
  float sum = (float)zeros;
#define SUM(i) sum += mix_sum(mix_widen_bf16(lo, h##i));
  MIX_CHAINS(SUM)
#undef SUM
  return sum;
}
#endif

static const limit_mix_loop mixes[] = {
    {"rope_bf16_neox", "avx512", POSENC_ISA_AVX512, 32, 8,
     "2 VPERMW, 2 VMULPS, 2 FMA, 2 x (VFIXUPIMMPS, VPTESTMD, VMOVDQA32, VPADDD, VPERMW)",
     mix_rope_bf16_avx512, NULL},
#ifdef __AVX512BF16__
    {"rope_bf16_neox", "avx512bf16", POSENC_ISA_AVX512BF16, 32, 8,
     "2 VPERMW, 2 VMULPS, 2 FMA, VCVTNE2PS2BF16, VPTESTNMW", mix_rope_bf16_avx512bf16, NULL},
#endif
    {"rope_f16_neox", "avx512", POSENC_ISA_AVX512, 2 * MIX_W, 16,
     "2 VCVTPH2PS, 2 VMULPS, 2 FMA, 2 VCVTPS2PH", mix_rope_f16, NULL},
    {"alibi_add_bf16", "avx512", POSENC_ISA_AVX512, 32, 8,
     "VPSLLD, VPANDD, 2 VADDPS, 4 VMULPS, 2 VSUBPS, 2 x (VFIXUPIMMPS, VPTESTMD, VMOVDQA32, "
     "VPADDD), VPSRLD, VPBLENDMW",
     mix_alibi_bf16_avx512, NULL},
    {"alibi_add_f16", "avx512", POSENC_ISA_AVX512, MIX_W, 16,
     "VCVTPH2PS, VADDPS, 2 VMULPS, VSUBPS, VCVTPS2PH", mix_alibi_f16, NULL},
    MIX_SOFTMAX_ENTRIES("avx512", POSENC_ISA_AVX512, 8, "VCMPPS, VADDPS, VMOVAPS (masked), ",
                        "VSCALEFPS"),
};

const limit_mix_loop *limit_mix_avx512(size_t *count) {
  *count = sizeof mixes / sizeof mixes[0];
  return mixes;
}
