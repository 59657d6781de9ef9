/* The SIMD ALiBi kernel, written once against the vector layer and compiled per ISA by
 * alibi_<isa>.c, for scores of every storage type (f32, bf16, f16: loaded exactly, each
 * result rounded once as it is stored, simd/vec_elem.h). The float operations of the scalar
 * reference (alibi_scalar.c) in the same order: the distance |qpos - j| in int32 converted
 * to float, one product with the slope, then scale * S - bias (or -bias), so every variant
 * is bit-identical to it. */
#include <math.h>

#include "alibi.h"
#include "common.h"
#include "simd/vec_elem.h"

/* The biased value of VF_W columns whose distances to the query are d. */
static inline vf VFN(biased_)(vf m, vi d, vf scale, vf old, int write) {
  const vf bias = vf_mul(m, vf_from_vi(vi_abs(d)));
  return write ? vf_neg(bias) : vf_sub(vf_mul(scale, old), bias);
}

/* Columns [0, visible) of one row get their bias, [visible, n_k) get -inf. */
POSENC_INLINE void VFN(row_)(void *row, int32_t qpos, size_t visible, size_t n_k, vf m, vf scale,
                             int write, posenc_elem e) {
  const vi step = vi_set1(VF_W);
  vi d = vi_sub(vi_set1(qpos), vi_iota()); /* qpos - j for the lanes of column j */
  size_t j = 0;
  for (; j + VF_W <= visible; j += VF_W, d = vi_sub(d, step)) {
    const vf old = write ? vf_set1(0.0f) : ve_load(row, j, e);
    ve_store(row, j, VFN(biased_)(m, d, scale, old, write), e);
  }
  if (j < visible) {
    const size_t rest = visible - j;
    const vf old = write ? vf_set1(0.0f) : ve_load_n(row, j, rest, e);
    ve_store_n(row, j, VFN(biased_)(m, d, scale, old, write), rest, e);
  }
  const vf ninf = vf_set1(-INFINITY);
  for (j = visible; j + VF_W <= n_k; j += VF_W) ve_store(row, j, ninf, e);
  if (j < n_k) ve_store_n(row, j, ninf, n_k - j, e);
}

/* write and e are constants at each call, so each loop is compiled for one mode and one
 * storage type. */
POSENC_INLINE void VFN(heads_)(const alibi_args *a, int write, posenc_elem e) {
  const vf scale = vf_set1(a->scale);
  for (size_t h = 0; h < a->n_heads; ++h) {
    const vf m = vf_set1(a->slopes[h]);
    for (size_t i = 0; i < a->n_q; ++i) {
      const int32_t qpos = a->q_offset + (int32_t)i;
      void *row =
          (char *)a->scores + (h * a->head_stride + i * a->row_stride) * posenc_elem_size(e);
      VFN(row_)(row, qpos, alibi_visible(a, qpos), a->n_k, m, scale, write, e);
    }
  }
}

POSENC_INLINE void VFN(alibi_)(const alibi_args *a, posenc_elem e) {
  if (a->flags & POSENC_ALIBI_WRITE_)
    VFN(heads_)(a, 1, e);
  else
    VFN(heads_)(a, 0, e);
}

/* The bodies of the exported variants, posenc_alibi_<type>_<isa> (alibi_<isa>.c). */
POSENC_INLINE void alibi_run_f32(const alibi_args *a) { VFN(alibi_)(a, POSENC_ELEM_F32); }
POSENC_INLINE void alibi_run_bf16(const alibi_args *a) { VFN(alibi_)(a, POSENC_ELEM_BF16); }
POSENC_INLINE void alibi_run_f16(const alibi_args *a) { VFN(alibi_)(a, POSENC_ELEM_F16); }
