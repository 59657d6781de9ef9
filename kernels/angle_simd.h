/* The SIMD angle and sin/cos steps shared by the RoPE and sinusoidal kernels, written once
 * against the vector layer (kernels/simd/vec_<isa>.h, included first) and compiled per ISA.
 * The angle reduction performs exactly the operations of rope_reduced_angle(), so it is
 * bit-identical to the scalar reference's. */
#ifndef POSENC_KERNELS_ANGLE_SIMD_H
#define POSENC_KERNELS_ANGLE_SIMD_H

#include "common.h"      /* VFN */
#include "rope_driver.h" /* rope_anchor */

/* A stepping state: forward cos/sin of one chunk, in double (the sinusoid kernel steps its
 * offsets cos/sin(k w_i) with it, sinusoid_simd.h). */
typedef struct rope_state {
  _Alignas(64) double c[POSENC_ROPE_CHUNK];
  _Alignas(64) double s[POSENC_ROPE_CHUNK];
} rope_state;

/* Rows per block of the sinusoid kernel's tabled and afresh paths (sinusoid_simd.h). */
#define POSENC_ROPE_RUN 256

/* Accurate angles of VD_W pairs starting at k: see rope_reduced_angle(). */
static inline vd VFN(angle_)(vd p, const struct posenc_rope_plan *plan, size_t k) {
  const vd a_hi = vd_mul(p, vd_load(plan->turn_hi + k));
  const vd a_mid = vd_mul(p, vd_load(plan->turn_mid + k));
  vd t = vd_add(vd_sub(a_hi, vd_round(a_hi)), vd_sub(a_mid, vd_round(a_mid)));
  t = vd_add(t, vd_mul(p, vd_load(plan->turn_lo + k)));
  t = vd_sub(t, vd_round(t));
  return vd_mul(t, vd_set1(POSENC_TWO_PI));
}

/* The same where |p| < plan->small_limit: see rope_reduced_angle_small(). */
static inline vd VFN(angle_small_)(vd p, const struct posenc_rope_plan *plan, size_t k) {
  vd t = vd_mul(p, vd_load(plan->turn + k));
  t = vd_sub(t, vd_round(t));
  return vd_mul(t, vd_set1(POSENC_TWO_PI));
}

/* How the angles of one position are formed. */
typedef enum { ANGLE_EXACT, ANGLE_SMALL, ANGLE_F32 } angle_mode;

static inline angle_mode angle_mode_of(const struct posenc_rope_plan *plan, double p,
                                       int f32_angles) {
  return f32_angles ? ANGLE_F32 : fabs(p) < plan->small_limit ? ANGLE_SMALL : ANGLE_EXACT;
}

/* The angles of the VF_W pairs starting at k as two double vectors (F32: the float32
 * recipe's float angles, widened exactly): sincos_pairs_() and a re-rotation's difference. */
static inline void VFN(angles_vd_)(const struct posenc_rope_plan *plan, angle_mode mode, vd pd,
                                   vf pf, size_t k, vd *lo, vd *hi) {
  if (mode == ANGLE_F32) {
    const vf angle = vf_mul(pf, vf_load(plan->inv_freq_f32 + k));
    *lo = vd_from_vf_lo(angle);
    *hi = vd_from_vf_hi(angle);
  } else if (mode == ANGLE_SMALL) {
    *lo = VFN(angle_small_)(pd, plan, k);
    *hi = VFN(angle_small_)(pd, plan, k + VD_W);
  } else {
    *lo = VFN(angle_)(pd, plan, k);
    *hi = VFN(angle_)(pd, plan, k + VD_W);
  }
}

/* sin and cos of the VF_W pairs starting at k, at position p (pd = p in every double lane,
 * pf = (float)p in every float lane). Plan arrays are padded to POSENC_PLAN_PAD pairs. */
static inline void VFN(sincos_pairs_)(const struct posenc_rope_plan *plan, angle_mode mode, vd pd,
                                      vf pf, size_t k, vf *sv, vf *cv) {
  vf angle;
  if (mode == ANGLE_F32) {
    angle = vf_mul(pf, vf_load(plan->inv_freq_f32 + k)); /* no round trip through double */
  } else {
    vd lo, hi;
    VFN(angles_vd_)(plan, mode, pd, pf, k, &lo, &hi);
    angle = vf_from_vd(lo, hi);
  }
  vf_sincos(angle, sv, cv);
}

/* rope_reduce_angle() and rope_angle_difference(), lane by lane. */
static inline vd VFN(reduce_angle_)(vd x) {
  const vd k = vd_round(vd_mul(x, vd_set1(POSENC_INV_TWO_PI)));
  vd r = vd_sub(x, vd_mul(k, vd_set1(POSENC_TWO_PI_1)));
  r = vd_sub(r, vd_mul(k, vd_set1(POSENC_TWO_PI_2)));
  r = vd_sub(r, vd_mul(k, vd_set1(POSENC_TWO_PI_3)));
  return vd_sub(r, vd_mul(k, vd_set1(POSENC_TWO_PI_4)));
}

static inline vd VFN(angle_difference_)(vd b, vd a) {
  return VFN(reduce_angle_)(vd_sub(VFN(reduce_angle_)(b), VFN(reduce_angle_)(a)));
}

/* Saves float cos/sin of VF_W pairs as doubles at index i of c and s. */
static inline void VFN(save_state_)(double *c, double *s, size_t i, vf cv, vf sv) {
  vd_store(c + i, vd_from_vf_lo(cv));
  vd_store(c + i + VD_W, vd_from_vf_hi(cv));
  vd_store(s + i, vd_from_vf_lo(sv));
  vd_store(s + i + VD_W, vd_from_vf_hi(sv));
}

/* cos/sin of VD_W pairs at index i of an anchor's (ac, as) rotated by a step table row's
 * (tc, ts): (ac*tc - as*ts, as*tc + ac*ts) in double, each product rounded (no
 * contraction), the same operations for every position. */
static inline void VFN(rotate_anchor_vd_)(const double *ac, const double *as, size_t i,
                                          const double *tc, const double *ts, vd *cn, vd *sn) {
  vd c = vd_load(ac + i), s = vd_load(as + i);
  vd wc = vd_load(tc + i), ws = vd_load(ts + i);
  POSENC_IN_REGISTER(c);
  POSENC_IN_REGISTER(s);
  POSENC_IN_REGISTER(wc);
  POSENC_IN_REGISTER(ws);
  *cn = vd_sub(vd_mul(c, wc), vd_mul(s, ws));
  *sn = vd_add(vd_mul(s, wc), vd_mul(c, ws));
}

/* The same for VF_W pairs, rounded to float vectors. */
static inline void VFN(rotate_anchor_)(const double *ac, const double *as, size_t i,
                                       const double *tc, const double *ts, vf *cv, vf *sv) {
  vd c_lo, s_lo, c_hi, s_hi;
  VFN(rotate_anchor_vd_)(ac, as, i, tc, ts, &c_lo, &s_lo);
  VFN(rotate_anchor_vd_)(ac, as, i + VD_W, tc, ts, &c_hi, &s_hi);
  *cv = vf_from_vd(c_lo, c_hi);
  *sv = vf_from_vd(s_lo, s_hi);
}

/* One position on for VD_W pairs at state index i, whose one-position rotation is cw, sw:
 * (c, s) <- (c*cos w - s*sin w, s*cos w + c*sin w), in double. */
static inline void VFN(step_vd_)(rope_state *state, size_t i, const double *cw, const double *sw,
                                 vd *cn, vd *sn) {
  vd c = vd_load(state->c + i), s = vd_load(state->s + i);
  vd wc = vd_load(cw + i), ws = vd_load(sw + i);
  POSENC_IN_REGISTER(c);
  POSENC_IN_REGISTER(s);
  POSENC_IN_REGISTER(wc);
  POSENC_IN_REGISTER(ws);
  *cn = vd_sub(vd_mul(c, wc), vd_mul(s, ws));
  *sn = vd_add(vd_mul(s, wc), vd_mul(c, ws));
  vd_store(state->c + i, *cn);
  vd_store(state->s + i, *sn);
}

/* The same for VF_W pairs, as float vectors. */
static inline void VFN(step_)(rope_state *state, size_t i, const double *cw, const double *sw,
                              vf *cv, vf *sv) {
  vd c_lo, s_lo, c_hi, s_hi;
  VFN(step_vd_)(state, i, cw, sw, &c_lo, &s_lo);
  VFN(step_vd_)(state, i + VD_W, cw, sw, &c_hi, &s_hi);
  *cv = vf_from_vd(c_lo, c_hi);
  *sv = vf_from_vd(s_lo, s_hi);
}

/* posenc_det_sincos() (rope.h) lane by lane: the same operations in the same order. */
static inline void VFN(det_sincos_vd_)(vd a, vd *sin_a, vd *cos_a) {
  const vd q = vd_round(vd_mul(a, vd_set1(POSENC_DET_INV_PI)));
  const vd x =
      vd_sub(vd_sub(a, vd_mul(q, vd_set1(POSENC_DET_PI_1))), vd_mul(q, vd_set1(POSENC_DET_PI_2)));
  const vd x2 = vd_mul(x, x);
  const vd sign = vd_sub(vd_set1(1.0), vd_mul(vd_set1(2.0), vd_mul(q, q)));
  vd ps = vd_add(vd_set1(POSENC_DET_S11), vd_mul(x2, vd_set1(POSENC_DET_S13)));
  ps = vd_add(vd_set1(POSENC_DET_S9), vd_mul(x2, ps));
  ps = vd_add(vd_set1(POSENC_DET_S7), vd_mul(x2, ps));
  ps = vd_add(vd_set1(POSENC_DET_S5), vd_mul(x2, ps));
  ps = vd_add(vd_set1(POSENC_DET_S3), vd_mul(x2, ps));
  vd pc = vd_add(vd_set1(POSENC_DET_C12), vd_mul(x2, vd_set1(POSENC_DET_C14)));
  pc = vd_add(vd_set1(POSENC_DET_C10), vd_mul(x2, pc));
  pc = vd_add(vd_set1(POSENC_DET_C8), vd_mul(x2, pc));
  pc = vd_add(vd_set1(POSENC_DET_C6), vd_mul(x2, pc));
  pc = vd_add(vd_set1(POSENC_DET_C4), vd_mul(x2, pc));
  pc = vd_add(vd_set1(POSENC_DET_C2), vd_mul(x2, pc));
  *sin_a = vd_mul(sign, vd_add(x, vd_mul(x, vd_mul(x2, ps))));
  *cos_a = vd_mul(sign, vd_add(vd_set1(1.0), vd_mul(x2, pc)));
}

/* Deterministic sin and cos of the VF_W pairs starting at k, at position p: the reduced
 * angles in double (the float32 recipe's float angle reduced by rope_reduce_angle()), then
 * det_sincos_vd_, rounded to float. */
static inline void VFN(det_sincos_pairs_)(const struct posenc_rope_plan *plan, angle_mode mode,
                                          vd pd, vf pf, size_t k, vf *sv, vf *cv) {
  vd lo, hi, s_lo, c_lo, s_hi, c_hi;
  VFN(angles_vd_)(plan, mode, pd, pf, k, &lo, &hi);
  if (mode == ANGLE_F32) {
    lo = VFN(reduce_angle_)(lo);
    hi = VFN(reduce_angle_)(hi);
  }
  VFN(det_sincos_vd_)(lo, &s_lo, &c_lo);
  VFN(det_sincos_vd_)(hi, &s_hi, &c_hi);
  *sv = vf_from_vd(s_lo, s_hi);
  *cv = vf_from_vd(c_lo, c_hi);
}

#endif /* POSENC_KERNELS_ANGLE_SIMD_H */
