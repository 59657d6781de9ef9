/* The softmax's operation mixes (limit_mix.h), written once for the x86 layers: the including
 * limit_mix_<layer>.c defines the mv layer (limit_mix_f16.h's mv, mv_set1, mv_add, mv_sub,
 * mv_mul, mv_fmadd, mv_fnmadd, mv_sum, and here mv_max, the compare mask type mm, mv_hidden
 * (the lanes equal to -inf), mv_hide (-inf in those lanes: the layer's vf_select), and
 * mv_exp_scale (vf_scale2_zero_where(t < lo, p, n): +0 where t is below the floor, else
 * p 2^n)), MIX_KEEP and MIX_CHAINS, then includes this file, which defines mix_softmax_plain
 * and mix_softmax_mask.
 *
 * One round is one vector of MIX_W scores of an f32 row through the three passes of
 * kernels/softmax_simd.h, as its plain rows (SM_PLAIN) run them:
 *   pass 1 (sm_t_, sm_pass1_): u = scale * x; with an f32 mask m: the compare of m with -inf,
 *          u + m, -inf in the hidden lanes; the max into the row's max;
 *   pass 2 (sm_exp_sum_, sm_exp_): t - max, the floor compare, n = t log2 e + magic (FMA)
 *          - magic, r = t - n ln 2 (FNMA), the degree-5 polynomial (5 FMA), p 2^n with the
 *          floor's zeros (the layer's vf_scale2_zero_where), the add into the sum;
 *   pass 3 (sm_normalise_): e * (1 / sum).
 * Chain: the round's y is the next round's x (values in (0, 1]: e <= 1), its max and sum
 * carried as the row's; the loads and stores of the passes (to a row in L1) are not counted,
 * nor the per-row reductions. */

static inline __attribute__((always_inline)) float mix_softmax(size_t n_iter, int masked) {
  const mv scale = mv_set1(0.08838835f), ninf = mv_set1(-__builtin_inff());
  const mv log2e = mv_set1(1.44269502f), magic = mv_set1(12582912.0f);
  const mv ln2 = mv_set1(0.693147182f), one = mv_set1(1.0f), inv = mv_set1(0.9f);
  const mv c5 = mv_set1(0x1.105e86p-7f), c4 = mv_set1(0x1.573322p-5f);
  const mv c3 = mv_set1(0x1.5557c8p-3f), c2 = mv_set1(0x1.fffde8p-2f);
  const mv lo = mv_set1(-78.3f), m = mv_set1(0.0f); /* a visible key's mask value */
#define DECL(i) mv x##i = mv_set1(0.01f * (float)(i + 1)), mx##i = ninf, s##i = mv_set1(0.0f);
  MIX_CHAINS(DECL)
#undef DECL
  for (size_t n = 0; n < n_iter; ++n) {
#define ROUND(i)                                                     \
  {                                                                  \
    mv u = mv_mul(scale, x##i);                                      \
    if (masked) u = mv_hide(mv_hidden(m, ninf), mv_add(u, m), ninf); \
    mx##i = mv_max(mx##i, u);                                        \
    const mv t = mv_sub(u, mx##i);                                   \
    const mv k = mv_sub(mv_fmadd(t, log2e, magic), magic);           \
    const mv r = mv_fnmadd(k, ln2, t);                               \
    mv p = mv_fmadd(c5, r, c4);                                      \
    p = mv_fmadd(mv_fmadd(mv_fmadd(p, r, c3), r, c2), r, one);       \
    const mv e = mv_exp_scale(t, lo, mv_fmadd(p, r, one), k);        \
    s##i = mv_add(s##i, e);                                          \
    x##i = mv_mul(e, inv);                                           \
    MIX_KEEP(x##i);                                                  \
    MIX_KEEP(mx##i);                                                 \
    MIX_KEEP(s##i);                                                  \
  }
    MIX_CHAINS(ROUND)
#undef ROUND
  }
  float sum = 0;
#define SUM(i) sum += mv_sum(x##i) + mv_sum(mx##i) + mv_sum(s##i);
  MIX_CHAINS(SUM)
#undef SUM
  return sum;
}

/* No mask (softmax_f32's rows without a mask array, softmax_out_f32). */
static float mix_softmax_plain(size_t n_iter) { return mix_softmax(n_iter, 0); }
/* An f32 mask (the kvcache rows; the f16 mask's conversion is not counted). */
static float mix_softmax_mask(size_t n_iter) { return mix_softmax(n_iter, 1); }
