/* The SIMD RoPE kernel, written once against the vector layer (kernels/simd/vec_<isa>.h)
 * and compiled once per ISA by rope_<isa>.c, which includes that layer first. Defines
 * posenc_rope_f32_<isa>. Same operations as the scalar reference (rope_scalar.c): the
 * angle reduction is bit-identical; sincos and the rotation may differ by a few ulp. */
#include "rope_driver.h"

#define ROPE_CAT2(a, b) a##b
#define ROPE_CAT(a, b) ROPE_CAT2(a, b)
#define ROPE_FN(name) ROPE_CAT(name, VEC_SUFFIX)

/* Accurate angles of VD_W pairs starting at k: see rope_reduced_angle(). */
static inline vd ROPE_FN(angle_)(vd p, const struct posenc_rope_plan *plan, size_t k) {
  const vd a_hi = vd_mul(p, vd_load(plan->turn_hi + k));
  const vd a_mid = vd_mul(p, vd_load(plan->turn_mid + k));
  vd t = vd_add(vd_sub(a_hi, vd_round(a_hi)), vd_sub(a_mid, vd_round(a_mid)));
  t = vd_add(t, vd_mul(p, vd_load(plan->turn_lo + k)));
  t = vd_sub(t, vd_round(t));
  return vd_mul(t, vd_set1(POSENC_TWO_PI));
}

/* Plan arrays are padded to POSENC_PLAN_PAD pairs and the buffers hold a whole chunk, so
 * the loop may run to the next multiple of VF_W without a tail. */
static void ROPE_FN(prepare_)(const struct posenc_rope_plan *plan, int32_t pos, unsigned flags,
                              size_t p0, size_t n, float *c, float *s) {
  const vf att = vf_set1((float)plan->attention_factor);
  const float sign = (flags & POSENC_ROPE_INVERSE) ? -1.0f : 1.0f;
  const int gptj = (flags & POSENC_ROPE_GPTJ) != 0;
  const int f32_angles = (flags & POSENC_ROPE_F32_ANGLES) != 0;
  /* GPTJ stores s as (-s_i, +s_i) per pair; NEOX as +s_i. Both times the direction. */
  float pattern[VF_W];
  for (int j = 0; j < VF_W; ++j) pattern[j] = (gptj && j % 2 == 0) ? -sign : sign;
  const vf s_sign = vf_mul(att, vf_load(pattern));
  const vd pd = vd_set1((double)pos);
  const vf pf = vf_set1((float)pos);
  for (size_t i = 0; i < n; i += VF_W) {
    const size_t k = p0 + i;
    const vf angle =
        f32_angles ? vf_mul(pf, vf_load(plan->inv_freq_f32 + k))
                   : vf_from_vd(ROPE_FN(angle_)(pd, plan, k), ROPE_FN(angle_)(pd, plan, k + VD_W));
    vf sv, cv;
    vf_sincos(angle, &sv, &cv);
    cv = vf_mul(cv, att);
    if (gptj) {
      vf_store(c + 2 * i, vf_zip_lo(cv, cv));
      vf_store(c + 2 * i + VF_W, vf_zip_hi(cv, cv));
      vf_store(s + 2 * i, vf_mul(vf_zip_lo(sv, sv), s_sign));
      vf_store(s + 2 * i + VF_W, vf_mul(vf_zip_hi(sv, sv), s_sign));
    } else {
      vf_store(c + i, cv);
      vf_store(s + i, vf_mul(sv, s_sign));
    }
  }
}

static inline void ROPE_FN(rotate_neox_)(float *xu, float *xv, const float *c, const float *s,
                                         size_t n) {
  size_t i = 0;
  for (; i + VF_W <= n; i += VF_W) {
    const vf u = vf_load(xu + i), v = vf_load(xv + i);
    const vf cv = vf_load(c + i), sv = vf_load(s + i);
    vf_store(xu + i, vf_fnmadd(v, sv, vf_mul(u, cv)));
    vf_store(xv + i, vf_fmadd(u, sv, vf_mul(v, cv)));
  }
  if (i < n) {
    const size_t r = n - i;
    const vf u = vf_load_n(xu + i, r), v = vf_load_n(xv + i, r);
    const vf cv = vf_load(c + i), sv = vf_load(s + i);
    vf_store_n(xu + i, vf_fnmadd(v, sv, vf_mul(u, cv)), r);
    vf_store_n(xv + i, vf_fmadd(u, sv, vf_mul(v, cv)), r);
  }
}

/* Interleaved pairs: x' = x * (c, c) + swap(x) * (-s, s). */
static inline void ROPE_FN(rotate_gptj_)(float *x, const float *c, const float *s, size_t m) {
  size_t i = 0;
  for (; i + VF_W <= m; i += VF_W) {
    const vf v = vf_load(x + i);
    vf_store(x + i, vf_fmadd(vf_swap_pairs(v), vf_load(s + i), vf_mul(v, vf_load(c + i))));
  }
  if (i < m) {
    const size_t r = m - i; /* even: whole pairs only */
    const vf v = vf_load_n(x + i, r);
    vf_store_n(x + i, vf_fmadd(vf_swap_pairs(v), vf_load(s + i), vf_mul(v, vf_load(c + i))), r);
  }
}

static void ROPE_FN(rotate_)(float *x, size_t half, size_t p0, size_t n, const float *c,
                             const float *s, unsigned flags) {
  if (flags & POSENC_ROPE_GPTJ)
    ROPE_FN(rotate_gptj_)(x + 2 * p0, c, s, 2 * n);
  else
    ROPE_FN(rotate_neox_)(x + p0, x + half + p0, c, s, n);
}

void ROPE_FN(posenc_rope_f32_)(const rope_f32_args *args) {
  rope_drive(args, ROPE_FN(prepare_), ROPE_FN(rotate_));
}
