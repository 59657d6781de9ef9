/* The SIMD ALiBi kernel, written once against the vector layer and compiled per ISA by
 * alibi_<isa>.c. The float operations of the scalar reference (alibi_scalar.c) in the same
 * order: the distance |qpos - j| in int32 converted to float, one product with the slope,
 * then scale * S - bias (or -bias), so every variant is bit-identical to it. */
#include <math.h>

#include "alibi.h"
#include "angle_simd.h" /* VFN */

/* The biased value of VF_W columns whose distances to the query are d. */
static inline vf VFN(biased_)(vf m, vi d, vf scale, vf old, int write) {
  const vf bias = vf_mul(m, vf_from_vi(vi_abs(d)));
  return write ? vf_neg(bias) : vf_sub(vf_mul(scale, old), bias);
}

/* Columns [0, visible) of one row get their bias, [visible, n_k) get -inf. */
static inline __attribute__((always_inline)) void VFN(row_)(float *row, int32_t qpos,
                                                            size_t visible, size_t n_k, vf m,
                                                            vf scale, int write) {
  const vi step = vi_set1(VF_W);
  vi d = vi_sub(vi_set1(qpos), vi_iota()); /* qpos - j for the lanes of column j */
  size_t j = 0;
  for (; j + VF_W <= visible; j += VF_W, d = vi_sub(d, step)) {
    const vf old = write ? vf_set1(0.0f) : vf_load(row + j);
    vf_store(row + j, VFN(biased_)(m, d, scale, old, write));
  }
  if (j < visible) {
    const size_t rest = visible - j;
    const vf old = write ? vf_set1(0.0f) : vf_load_n(row + j, rest);
    vf_store_n(row + j, VFN(biased_)(m, d, scale, old, write), rest);
  }
  const vf ninf = vf_set1(-INFINITY);
  for (j = visible; j + VF_W <= n_k; j += VF_W) vf_store(row + j, ninf);
  if (j < n_k) vf_store_n(row + j, ninf, n_k - j);
}

/* write is a constant at each call, so each loop is compiled for one mode. */
static inline __attribute__((always_inline)) void VFN(heads_)(const alibi_f32_args *a, int write) {
  const vf scale = vf_set1(a->scale);
  for (size_t h = 0; h < a->n_heads; ++h) {
    const vf m = vf_set1(a->slopes[h]);
    for (size_t i = 0; i < a->n_q; ++i) {
      const int32_t qpos = a->q_offset + (int32_t)i;
      float *row = a->scores + h * a->head_stride + i * a->row_stride;
      VFN(row_)(row, qpos, alibi_visible(a, qpos), a->n_k, m, scale, write);
    }
  }
}

void VFN(posenc_alibi_f32_)(const alibi_f32_args *a) {
  if (a->flags & POSENC_ALIBI_WRITE_)
    VFN(heads_)(a, 1);
  else
    VFN(heads_)(a, 0);
}
