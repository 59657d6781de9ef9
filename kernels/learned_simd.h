/* The SIMD learned-embedding kernel, written once against the vector layer and compiled
 * per ISA by learned_<isa>.c. One float addition per element, as the scalar reference. */
#include "common.h"
#include "learned.h"

/* x[0, dim) += src[0, dim); with `next` (not NULL) the lines of next[0, dim) prefetched as
 * the row goes. */
POSENC_INLINE void VFN(add_row_)(float *x, const float *src, size_t dim, const float *next) {
  size_t j = 0;
  for (; j + 4 * VF_W <= dim; j += 4 * VF_W) {
    if (next) posenc_prefetch_lines((uintptr_t)(next + j), 4 * VF_W * sizeof(float));
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

/* Calls that move POSENC_PREFETCH_MIN_BYTES or more (x's rows and the table rows read) add
 * each token's row while prefetching the next token's table row, which the hardware
 * prefetchers cannot foresee (a position anywhere in the table). Zen 5, bench
 * learned_add_f32 tokens:4096/dim:4096 (x 64 MiB, a 64 MiB table, random positions),
 * interleaved medians: avx512 7.18 -> 3.54 ms, avx2 6.26 -> 3.75 ms (without it avx2 ran
 * ahead of avx512 and failed the report's dispatcher check); the rows read by two 256-bit
 * loads as well were slower (4.8 ms). */
POSENC_INLINE void learned_run_add_f32(const learned_f32_args *a) {
  if (2 * a->n_tokens * a->dim * sizeof(float) >= POSENC_PREFETCH_MIN_BYTES) {
    for (size_t t = 0; t < a->n_tokens; ++t) {
      const float *next = learned_row(a, t + 1 < a->n_tokens ? t + 1 : t); /* last: its own */
      VFN(add_row_)(a->x + t * a->x_stride, learned_row(a, t), a->dim, next);
    }
    return;
  }
  for (size_t t = 0; t < a->n_tokens; ++t)
    VFN(add_row_)(a->x + t * a->x_stride, learned_row(a, t), a->dim, NULL);
}
