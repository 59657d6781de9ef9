/* Operation-mix limits of the avx2 variants (limit_mix.h); this file is compiled with the
 * avx2 tier's flags: the f16 kernels (bench/limit_mix_f16.h), on 8-lane vectors. */
#include <immintrin.h>

#include "limit_mix.h"

/* The chains of a mix: MIX_CHAINS names the list the next mix uses (limit_mix.h: chains). */
#define MIX_CHAINS_8(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define MIX_CHAINS_16(X) MIX_CHAINS_8(X) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)
#define MIX_CHAINS_12(X) MIX_CHAINS_8(X) X(8) X(9) X(10) X(11)
#define MIX_KEEP(v) __asm__ volatile("" : "+x"(v))

#define MIX_W 8
typedef __m256 mv;
typedef __m128i mh;
static inline mv mv_from_f16(mh h) { return _mm256_cvtph_ps(h); }
static inline mh mh_from_mv(mv v) {
  return _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
static inline mv mv_set1(float x) { return _mm256_set1_ps(x); }
static inline mh mh_set1(short x) { return _mm_set1_epi16(x); }
static inline mv mv_add(mv a, mv b) { return _mm256_add_ps(a, b); }
static inline mv mv_sub(mv a, mv b) { return _mm256_sub_ps(a, b); }
static inline mv mv_mul(mv a, mv b) { return _mm256_mul_ps(a, b); }
static inline mv mv_fmadd(mv a, mv b, mv c) { return _mm256_fmadd_ps(a, b, c); }
static inline mv mv_fnmadd(mv a, mv b, mv c) { return _mm256_fnmadd_ps(a, b, c); }
static float mv_sum(mv v) {
  _Alignas(32) float lanes[MIX_W];
  _mm256_store_ps(lanes, v);
  float sum = 0;
  for (int l = 0; l < MIX_W; ++l) sum += lanes[l];
  return sum;
}

#define MIX_CHAINS MIX_CHAINS_16
#include "limit_mix_f16.h"
#undef MIX_CHAINS

/* The softmax mixes (limit_mix_softmax.h) on this layer: vf_select as VBLENDVPS,
 * vf_scale2_zero_where as the exponent built in integers (VCVTPS2DQ, VPADDD, VPSLLD), VMULPS
 * and VANDNPS with the floor's compare (VCMPPS). 12 chains (8: 0.95x the rate, 16: 0.98x; 4:
 * latency-bound). */
#define MIX_CHAINS MIX_CHAINS_12
typedef __m256 mm;
static inline mv mv_max(mv a, mv b) { return _mm256_max_ps(a, b); }
static inline mm mv_hidden(mv m, mv ninf) { return _mm256_cmp_ps(m, ninf, _CMP_EQ_OQ); }
static inline mv mv_hide(mm h, mv u, mv ninf) { return _mm256_blendv_ps(u, ninf, h); }
static inline mv mv_exp_scale(mv t, mv lo, mv p, mv n) {
  const __m256i e =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_andnot_ps(_mm256_cmp_ps(t, lo, _CMP_LT_OQ),
                          _mm256_mul_ps(p, _mm256_castsi256_ps(e)));
}
#include "limit_mix_softmax.h"
#undef MIX_CHAINS

static const limit_mix_loop mixes[] = {
    {"rope_f16_neox", "avx2", POSENC_ISA_AVX2, 2 * MIX_W, 16,
     "2 VCVTPH2PS, 2 VMULPS, 2 FMA, 2 VCVTPS2PH", mix_rope_f16, NULL},
    {"alibi_add_f16", "avx2", POSENC_ISA_AVX2, MIX_W, 16,
     "VCVTPH2PS, VADDPS, 2 VMULPS, VSUBPS, VCVTPS2PH", mix_alibi_f16, NULL},
    MIX_SOFTMAX_ENTRIES("avx2", POSENC_ISA_AVX2, 12, "VCMPPS, VADDPS, VBLENDVPS, ",
                        "VCVTPS2DQ, VPADDD, VPSLLD, VMULPS, VANDNPS"),
};

const limit_mix_loop *limit_mix_avx2(size_t *count) {
  *count = sizeof mixes / sizeof mixes[0];
  return mixes;
}
