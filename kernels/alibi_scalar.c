/* The scalar reference ALiBi kernel, for scores of every storage type: each value is the
 * float result, rounded once to the storage type. Every variant performs these float
 * operations in this order, so all of them are bit-identical to it. */
#include <math.h>

#include "alibi.h"
#include "variants.h"

/* e is a constant at each call, so each loop is compiled for one storage type. */
POSENC_INLINE void alibi_heads(const alibi_args *a, posenc_elem e) {
  const int write = (a->flags & POSENC_ALIBI_WRITE_) != 0;
  for (size_t h = 0; h < a->n_heads; ++h) {
    const float m = a->slopes[h];
    for (size_t i = 0; i < a->n_q; ++i) {
      const int32_t qpos = a->q_offset + (int32_t)i;
      const size_t visible = alibi_visible(a, qpos);
      void *row =
          (char *)a->scores + (h * a->head_stride + i * a->row_stride) * posenc_elem_size(e);
      for (size_t j = 0; j < visible; ++j) {
        const int32_t d = qpos - (int32_t)j;
        const float bias = m * (float)(d < 0 ? -d : d);
        posenc_elem_store(row, j, write ? -bias : a->scale * posenc_elem_load(row, j, e) - bias, e);
      }
      for (size_t j = visible; j < a->n_k; ++j) posenc_elem_store(row, j, -INFINITY, e);
    }
  }
}

void posenc_alibi_f32_scalar(const alibi_args *a) { alibi_heads(a, POSENC_ELEM_F32); }
void posenc_alibi_bf16_scalar(const alibi_args *a) { alibi_heads(a, POSENC_ELEM_BF16); }
void posenc_alibi_f16_scalar(const alibi_args *a) { alibi_heads(a, POSENC_ELEM_F16); }
