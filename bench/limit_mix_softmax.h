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
 * Chains: a round's scores x are made opaque (MIX_KEEP) instead of computed from the round
 * before, so that only the max and the sum (two accumulators each, as the kernel's rows)
 * carry from one vector to the next: with the round's y fed back as
 * the next round's x, every chain waited for its exp's whole latency and the decode rows ran
 * faster than their "roofline" (Zen 5: 1.08x the plain mix, 1.9x the masked one). Pass 2
 * subtracts a row max known beforehand (the kernel's pass 2 takes pass 1's); the loads and
 * stores of the passes (to a row in L1) are not counted, nor the per-row reductions. */

static inline __attribute__((always_inline)) float mix_softmax(size_t n_iter, int masked) {
  const mv scale = mv_set1(0.08838835f), ninf = mv_set1(-__builtin_inff());
  const mv log2e = mv_set1(1.44269502f), magic = mv_set1(12582912.0f);
  const mv ln2 = mv_set1(0.693147182f), one = mv_set1(1.0f), inv = mv_set1(0.9f);
  const mv c5 = mv_set1(0x1.105e86p-7f), c4 = mv_set1(0x1.573322p-5f);
  const mv c3 = mv_set1(0x1.5557c8p-3f), c2 = mv_set1(0x1.fffde8p-2f);
  const mv lo = mv_set1(-78.3f), m = mv_set1(0.0f); /* a visible key's mask value */
  const mv row_max = mv_set1(1.0f); /* pass 2's max: the row's, known (u <= 0.09 here) */
  /* The row's two max and two sum accumulators, taken by the chains in turn (the kernel's
   * two per row, alternate vectors). */
  mv mx0 = ninf, mx1 = ninf, s0 = mv_set1(0.0f), s1 = mv_set1(0.0f);
#define DECL(i) mv x##i = mv_set1(0.01f * (float)(i + 1));
  MIX_CHAINS(DECL)
#undef DECL
  for (size_t n = 0; n < n_iter; ++n) {
#define ROUND(i)                                                       \
  {                                                                    \
    mv *mx = (i) % 2 ? &mx1 : &mx0, *s = (i) % 2 ? &s1 : &s0;          \
    mv u = mv_mul(scale, x##i), mi = m;                                \
    MIX_KEEP(mi); /* a mask value per vector, as the kernel loads */   \
    if (masked) u = mv_hide(mv_hidden(mi, ninf), mv_add(u, mi), ninf); \
    *mx = mv_max(*mx, u);                                              \
    const mv t = mv_sub(u, row_max);                                   \
    const mv k = mv_sub(mv_fmadd(t, log2e, magic), magic);             \
    const mv r = mv_fnmadd(k, ln2, t);                                 \
    mv p = mv_fmadd(c5, r, c4);                                        \
    p = mv_fmadd(mv_fmadd(mv_fmadd(p, r, c3), r, c2), r, one);         \
    const mv e = mv_exp_scale(t, lo, mv_fmadd(p, r, one), k);          \
    *s = mv_add(*s, e);                                                \
    mv y = mv_mul(e, inv);                                             \
    MIX_KEEP(y);                                                       \
    MIX_KEEP(x##i);                                                    \
  }
    MIX_CHAINS(ROUND)
#undef ROUND
    MIX_KEEP(mx0);
    MIX_KEEP(mx1);
    MIX_KEEP(s0);
    MIX_KEEP(s1);
  }
  float sum = mv_sum(mx0) + mv_sum(mx1) + mv_sum(s0) + mv_sum(s1);
#define SUM(i) sum += mv_sum(x##i);
  MIX_CHAINS(SUM)
#undef SUM
  return sum;
}

/* The three limit_mix_loop entries of a layer's softmax mixes: no mask (softmax_f32 and
 * softmax_out_f32) and an f32 mask (softmax_f32's mask:kvcache groups). mask_ops: the
 * layer's -inf compare, add and select; scale_ops: its vf_scale2_zero_where after the
 * floor's compare. */
#define MIX_SOFTMAX_OPS(mask_ops, scale_ops)                             \
  "pass 1: VMULPS, " mask_ops                                            \
  "VMAXPS; pass 2: VSUBPS, VCMPPS, FMA, VSUBPS, FNMA, 5 FMA, " scale_ops \
  ", VADDPS; pass 3: VMULPS"
#define MIX_SOFTMAX_ENTRIES(variant, isa, chains, mask_ops, scale_ops)                            \
  {"softmax_f32",     variant, isa, MIX_W, chains, MIX_SOFTMAX_OPS("", scale_ops),                \
   mix_softmax_plain, NULL},                                                                      \
      {"softmax_f32",    variant,       isa, MIX_W, chains, MIX_SOFTMAX_OPS(mask_ops, scale_ops), \
       mix_softmax_mask, "mask:kvcache"},                                                         \
  {                                                                                               \
    "softmax_out_f32", variant, isa, MIX_W, chains, MIX_SOFTMAX_OPS("", scale_ops),               \
        mix_softmax_plain, NULL                                                                   \
  }

/* No mask (softmax_f32's rows without a mask array, softmax_out_f32). */
static float mix_softmax_plain(size_t n_iter) { return mix_softmax(n_iter, 0); }
/* An f32 mask (the mask:kvcache rows; the kvcache16 rows, with an f16 mask, take the plain
 * mix: a lower bound of theirs). */
static float mix_softmax_mask(size_t n_iter) { return mix_softmax(n_iter, 1); }
