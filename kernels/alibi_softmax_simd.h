/* The fused ALiBi softmax, written once against the vector layer and compiled per ISA by
 * alibi_softmax_<isa>.c, for f32 and bf16 scores. The steps of the scalar reference
 * (alibi_softmax_scalar.c), each row in three passes over a block that stays in cache:
 *   1. x = scale * S - m * |qpos - j| (posenc_alibi_add_f32's operations, bit-identical to
 *      it), kept in the work block (the f32 row itself), and their max M;
 *   2. e = exp(x - M), 0 below ALIBI_SOFTMAX_EXP_MIN (such arguments are replaced by one
 *      whose exp is exactly 0, so exp never makes a subnormal), kept in the block, and
 *      summed in double;
 *   3. p = e * (float)(1 / sum), 0 below FLT_MIN, stored into the row.
 * Masked columns (j > qpos with the causal mask) are only written (0). NaN needs no test:
 * a NaN x makes its e, the sum and then every p NaN, as does a +inf x (inf - inf); only
 * a row whose max is -inf is handled apart (zeros, or NaN if it holds one). */
#include <float.h>
#include <math.h>

#include "alibi_softmax.h"
#include "common.h"

POSENC_INLINE vf VFN(sm_load_)(const void *row, size_t j, int bf16) {
  return bf16 ? vf_load_bf16((const uint16_t *)row + j) : vf_load((const float *)row + j);
}
POSENC_INLINE vf VFN(sm_load_n_)(const void *row, size_t j, size_t n, int bf16) {
  return bf16 ? vf_load_bf16_n((const uint16_t *)row + j, n) : vf_load_n((const float *)row + j, n);
}
POSENC_INLINE void VFN(sm_store_)(void *row, size_t j, vf v, int bf16) {
  if (bf16)
    vf_store_bf16((uint16_t *)row + j, v);
  else
    vf_store((float *)row + j, v);
}
POSENC_INLINE void VFN(sm_store_n_)(void *row, size_t j, vf v, size_t n, int bf16) {
  if (bf16)
    vf_store_bf16_n((uint16_t *)row + j, v, n);
  else
    vf_store_n((float *)row + j, v, n);
}

/* Columns [j0, j1) of the row set to `value`, nothing read. */
POSENC_INLINE void VFN(sm_fill_)(void *row, size_t j0, size_t j1, float value, int bf16) {
  const vf v = vf_set1(value);
  size_t j = j0;
  for (; j + VF_W <= j1; j += VF_W) VFN(sm_store_)(row, j, v, bf16);
  if (j < j1) VFN(sm_store_n_)(row, j, v, j1 - j, bf16);
}

/* Pass 1 over columns [j0, j1): x into work[j - j0]; returns max(mx, every x). */
POSENC_INLINE vf VFN(sm_biased_)(const void *row, size_t j0, size_t j1, int32_t qpos, vf m,
                                 vf scale, int bf16, float *work, vf mx) {
  const vi step = vi_set1(VF_W);
  vi d = vi_sub(vi_set1(qpos - (int32_t)j0), vi_iota()); /* qpos - j for the lanes of column j */
  size_t j = j0;
  for (; j + VF_W <= j1; j += VF_W, d = vi_sub(d, step)) {
    const vf s = VFN(sm_load_)(row, j, bf16);
    const vf x = vf_sub(vf_mul(scale, s), vf_mul(m, vf_from_vi(vi_abs(d))));
    vf_store_reload(work + (j - j0), x);
    mx = vf_max(mx, x);
  }
  if (j < j1) {
    const size_t rest = j1 - j;
    const vf s = VFN(sm_load_n_)(row, j, rest, bf16);
    const vf x = vf_sub(vf_mul(scale, s), vf_mul(m, vf_from_vi(vi_abs(d))));
    vf_store_n(work + (j - j0), x, rest);
    mx = vf_max(mx, vf_first_n(x, rest, -INFINITY));
  }
  return mx;
}

/* exp(t), +0 where t < ALIBI_SOFTMAX_EXP_MIN: such arguments are replaced by -150, for
 * which SLEEF's expf returns exactly +0 (below -104) with no subnormal on the way (its
 * scaling by 2^-108 twice underflows straight to 0); a NaN t stays NaN. So nothing of the
 * exp is needed after the call, across which no vector register survives. A vector whose
 * every lane is below gives 0 without the call: with ALiBi's biases, keys some 87.3 / m_h
 * positions further from the query than the row's maximum are (most of a long row). */
POSENC_INLINE vf VFN(sm_exp_)(vf t, vf lo) {
  if (vf_all_lt(t, lo)) return vf_set1(0.0f);
  return vf_exp(vf_replace_lt(t, lo, vf_set1(-150.0f)));
}

/* Vectors per chunk of pass 2: SLEEF's exp is a call, across which no vector register
 * survives (all are caller-saved), so the sum is added up after each chunk of calls: a
 * sum accumulated between calls would go through memory at every vector. */
#define SM_CHUNK 8

/* Pass 2 over work[0, n): e = exp(x - max) in place, added into the sum (double, per lane:
 * the lower half of each float vector into sum_lo, the upper half into sum_hi). */
POSENC_INLINE void VFN(sm_exp_sum_)(float *work, size_t n, vf max, vd *sum_lo, vd *sum_hi) {
  const vf lo = vf_set1(ALIBI_SOFTMAX_EXP_MIN);
  size_t j = 0;
  for (; j + SM_CHUNK * VF_W <= n; j += SM_CHUNK * VF_W) {
    for (size_t k = j; k < j + SM_CHUNK * VF_W; k += VF_W)
      vf_store_reload(work + k, VFN(sm_exp_)(vf_sub(vf_load(work + k), max), lo));
    vd s0 = *sum_lo, s1 = *sum_hi;
    for (size_t k = j; k < j + SM_CHUNK * VF_W; k += VF_W) {
      const vf e = vf_load(work + k);
      s0 = vd_add(s0, vd_from_vf_lo(e));
      s1 = vd_add(s1, vd_from_vf_hi(e));
    }
    *sum_lo = s0;
    *sum_hi = s1;
  }
  for (; j + VF_W <= n; j += VF_W) {
    const vf e = VFN(sm_exp_)(vf_sub(vf_load(work + j), max), lo);
    vf_store_reload(work + j, e);
    *sum_lo = vd_add(*sum_lo, vd_from_vf_lo(e));
    *sum_hi = vd_add(*sum_hi, vd_from_vf_hi(e));
  }
  if (j < n) {
    const size_t rest = n - j;
    const vf e = vf_first_n(VFN(sm_exp_)(vf_sub(vf_load_n(work + j, rest), max), lo), rest, 0.0f);
    vf_store_n(work + j, e, rest);
    *sum_lo = vd_add(*sum_lo, vd_from_vf_lo(e));
    *sum_hi = vd_add(*sum_hi, vd_from_vf_hi(e));
  }
}

/* Pass 3: p = e * inv for work[0, n), 0 below FLT_MIN, into columns [j0, j0 + n). */
POSENC_INLINE void VFN(sm_normalise_)(const float *work, size_t n, vf inv, void *row, size_t j0,
                                      int bf16) {
  const vf tiny = vf_set1(FLT_MIN), zero = vf_set1(0.0f);
  size_t j = 0;
  for (; j + VF_W <= n; j += VF_W) {
    const vf p = vf_mul(vf_load(work + j), inv);
    VFN(sm_store_)(row, j0 + j, vf_replace_lt(p, tiny, zero), bf16);
  }
  if (j < n) {
    const vf p = vf_mul(vf_load_n(work + j, n - j), inv);
    VFN(sm_store_n_)(row, j0 + j, vf_replace_lt(p, tiny, zero), n - j, bf16);
  }
}

static int VFN(sm_has_nan_)(const float *x, size_t n) {
  for (size_t j = 0; j < n; ++j)
    if (isnan(x[j])) return 1;
  return 0;
}

/* A row of `visible` columns that fits its work block: the f32 row itself, or the bf16
 * block. */
POSENC_INLINE void VFN(sm_row_)(void *row, size_t visible, int32_t qpos, vf m, vf scale, int bf16,
                                float *work) {
  const float max =
      vf_hmax(VFN(sm_biased_)(row, 0, visible, qpos, m, scale, bf16, work, vf_set1(-INFINITY)));
  if (max == -INFINITY) {
    VFN(sm_fill_)(row, 0, visible, VFN(sm_has_nan_)(work, visible) ? NAN : 0.0f, bf16);
    return;
  }
  vd sum_lo = vd_set1(0.0), sum_hi = vd_set1(0.0);
  VFN(sm_exp_sum_)(work, visible, vf_set1(max), &sum_lo, &sum_hi);
  const float inv = (float)(1.0 / vd_hsum(vd_add(sum_lo, sum_hi)));
  VFN(sm_normalise_)(work, visible, vf_set1(inv), row, 0, bf16);
}

/* A bf16 row longer than the block, block by block: x is computed again in each pass and e
 * in passes 2 and 3, by the same operations in the same order (and the sum accumulated in
 * the same lanes), so the result equals that of a block holding the whole row. */
static void VFN(sm_long_bf16_row_)(uint16_t *row, size_t visible, int32_t qpos, vf m, vf scale,
                                   float *block) {
  const size_t B = ALIBI_SOFTMAX_BF16_BLOCK;
  vf mx = vf_set1(-INFINITY);
  for (size_t j0 = 0; j0 < visible; j0 += B)
    mx =
        VFN(sm_biased_)(row, j0, j0 + B < visible ? j0 + B : visible, qpos, m, scale, 1, block, mx);
  const float max = vf_hmax(mx);
  if (max == -INFINITY) {
    int nan = 0;
    for (size_t j0 = 0; j0 < visible && !nan; j0 += B) {
      const size_t j1 = j0 + B < visible ? j0 + B : visible;
      VFN(sm_biased_)(row, j0, j1, qpos, m, scale, 1, block, mx);
      nan = VFN(sm_has_nan_)(block, j1 - j0);
    }
    VFN(sm_fill_)(row, 0, visible, nan ? NAN : 0.0f, 1);
    return;
  }
  const vf vmax = vf_set1(max);
  vd sum_lo = vd_set1(0.0), sum_hi = vd_set1(0.0);
  for (size_t j0 = 0; j0 < visible; j0 += B) {
    const size_t j1 = j0 + B < visible ? j0 + B : visible;
    VFN(sm_biased_)(row, j0, j1, qpos, m, scale, 1, block, mx);
    VFN(sm_exp_sum_)(block, j1 - j0, vmax, &sum_lo, &sum_hi);
  }
  const vf inv = vf_set1((float)(1.0 / vd_hsum(vd_add(sum_lo, sum_hi))));
  for (size_t j0 = 0; j0 < visible; j0 += B) {
    const size_t j1 = j0 + B < visible ? j0 + B : visible;
    vd unused_lo = vd_set1(0.0), unused_hi = vd_set1(0.0);
    VFN(sm_biased_)(row, j0, j1, qpos, m, scale, 1, block, mx);
    VFN(sm_exp_sum_)(block, j1 - j0, vmax, &unused_lo, &unused_hi);
    VFN(sm_normalise_)(block, j1 - j0, inv, row, j0, 1);
  }
}

/* bf16 is a constant at each call, so each loop is compiled for one element type. block:
 * ALIBI_SOFTMAX_BF16_BLOCK floats for bf16, unused for f32. */
POSENC_INLINE void VFN(sm_heads_)(const alibi_softmax_args *a, int bf16, float *block) {
  const vf scale = vf_set1(a->scale);
  const size_t elem = bf16 ? sizeof(uint16_t) : sizeof(float);
  for (size_t h = 0; h < a->n_heads; ++h) {
    const vf m = vf_set1(a->slopes[h]);
    for (size_t i = 0; i < a->n_q; ++i) {
      const int32_t qpos = a->q_offset + (int32_t)i;
      const size_t visible = alibi_softmax_visible(a, qpos);
      void *row = (char *)a->scores + (h * a->head_stride + i * a->row_stride) * elem;
      if (!bf16)
        VFN(sm_row_)(row, visible, qpos, m, scale, 0, (float *)row);
      else if (visible <= ALIBI_SOFTMAX_BF16_BLOCK)
        VFN(sm_row_)(row, visible, qpos, m, scale, 1, block);
      else
        VFN(sm_long_bf16_row_)(row, visible, qpos, m, scale, block);
      VFN(sm_fill_)(row, visible, a->n_k, 0.0f, bf16);
    }
  }
}

/* The bodies of the exported variants, posenc_alibi_softmax_<type>_<isa>
 * (alibi_softmax_<isa>.c). */
POSENC_INLINE void alibi_softmax_run_f32(const alibi_softmax_args *a) {
  VFN(sm_heads_)(a, 0, NULL);
}

POSENC_INLINE void alibi_softmax_run_bf16(const alibi_softmax_args *a) {
  _Alignas(64) float block[ALIBI_SOFTMAX_BF16_BLOCK];
  VFN(sm_heads_)(a, 1, block);
}
