/* The SIMD learned-embedding kernel, written once against the vector layer and compiled
 * per ISA by learned_<isa>.c. One float addition per element, as the scalar reference. */
#include "common.h"
#include "learned.h"

static inline void VFN(add_row_)(float *x, const float *src, size_t dim) {
  size_t j = 0;
  for (; j + 4 * VF_W <= dim; j += 4 * VF_W) {
    const vf a = vf_add(vf_load(x + j), vf_load(src + j));
    const vf b = vf_add(vf_load(x + j + VF_W), vf_load(src + j + VF_W));
    const vf c = vf_add(vf_load(x + j + 2 * VF_W), vf_load(src + j + 2 * VF_W));
    const vf d = vf_add(vf_load(x + j + 3 * VF_W), vf_load(src + j + 3 * VF_W));
    vf_store(x + j, a);
    vf_store(x + j + VF_W, b);
    vf_store(x + j + 2 * VF_W, c);
    vf_store(x + j + 3 * VF_W, d);
  }
  for (; j + VF_W <= dim; j += VF_W) vf_store(x + j, vf_add(vf_load(x + j), vf_load(src + j)));
  if (j < dim)
    vf_store_n(x + j, vf_add(vf_load_n(x + j, dim - j), vf_load_n(src + j, dim - j)), dim - j);
}

/* The body of the exported variants, posenc_learned_add_f32_<isa> (learned_<isa>.c). */
POSENC_INLINE void learned_run_add_f32(const learned_f32_args *a) {
  for (size_t t = 0; t < a->n_tokens; ++t)
    VFN(add_row_)(a->x + t * a->x_stride, learned_row(a, t), a->dim);
}
