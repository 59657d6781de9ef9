/* The f16 operation mixes (limit_mix.h), written once for every layer that has F16C: the
 * including limit_mix_<layer>.c defines the mv layer (below), MIX_KEEP and MIX_CHAINS (the chain
 * list), then includes this file, which defines mix_rope_f16 and mix_alibi_f16 for it. mv, mh: a
 * float vector of MIX_W lanes and the MIX_W f16 words it converts from and to; mv_from_f16
 * (VCVTPH2PS), mh_from_mv (VCVTPS2PH, nearest even), mv_set1, mh_set1, mv_add, mv_sub, mv_mul,
 * mv_fmadd, mv_fnmadd, mv_sum (the sum of the lanes). */

/* rope_f16, 2 MIX_W elements (MIX_W pairs): 2 VCVTPH2PS (ve_load), 2 VMULPS + 2 FMA
 * (rope_simd.h's msub_, madd_), 2 VCVTPS2PH (ve_store; no two-vector f16 store on these
 * layers). Chain: the results are the next u, v; c^2 + s^2 = 1 keeps the values normal. */
static float mix_rope_f16(size_t n_iter) {
  const mv c = mv_set1(0.8f), s = mv_set1(0.6f);
#define DECL(i)                            \
  mh hu##i = mh_set1((short)(0x3c00 + i)); \
  mh hv##i = mh_set1((short)(0x3a00 + i));
  MIX_CHAINS(DECL)
#undef DECL
  for (size_t n = 0; n < n_iter; ++n) {
#define ROUND(i)                                             \
  {                                                          \
    const mv u = mv_from_f16(hu##i), v = mv_from_f16(hv##i); \
    hu##i = mh_from_mv(mv_fnmadd(v, s, mv_mul(u, c)));       \
    hv##i = mh_from_mv(mv_fmadd(u, s, mv_mul(v, c)));        \
    MIX_KEEP(hu##i);                                         \
    MIX_KEEP(hv##i);                                         \
  }
    MIX_CHAINS(ROUND)
#undef ROUND
  }
  float sum = 0;
#define SUM(i) sum += mv_sum(mv_from_f16(hu##i)) + mv_sum(mv_from_f16(hv##i));
  MIX_CHAINS(SUM)
#undef SUM
  return sum;
}

/* ALiBi add into f16 scores, MIX_W elements (alibi_simd.h's put2_, one of its two
 * vectors): VCVTPH2PS (ve_load), the distance step (one VADDPS per vector), VMULPS of the
 * slope, VMULPS of the scale, VSUBPS, VCVTPS2PH (ve_store). */
static float mix_alibi_f16(size_t n_iter) {
  const mv m = mv_set1(1.0f / 64), scale = mv_set1(0.5f), w = mv_set1((float)MIX_W);
#define DECL(i)                           \
  mh h##i = mh_set1((short)(0x3c00 + i)); \
  mv fa##i = mv_set1((float)(i + 1));
  MIX_CHAINS(DECL)
#undef DECL
  for (size_t n = 0; n < n_iter; ++n) {
#define ROUND(i)                                                                   \
  {                                                                                \
    fa##i = mv_add(fa##i, w);                                                      \
    h##i = mh_from_mv(mv_sub(mv_mul(scale, mv_from_f16(h##i)), mv_mul(m, fa##i))); \
    MIX_KEEP(h##i);                                                                \
    MIX_KEEP(fa##i);                                                               \
  }
    MIX_CHAINS(ROUND)
#undef ROUND
  }
  float sum = 0;
#define SUM(i) sum += mv_sum(mv_from_f16(h##i)) + mv_sum(fa##i);
  MIX_CHAINS(SUM)
#undef SUM
  return sum;
}
