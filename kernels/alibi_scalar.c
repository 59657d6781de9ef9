/* The scalar reference ALiBi kernel. Every variant performs these float operations in this
 * order, so all of them are bit-identical to it. */
#include <math.h>

#include "alibi.h"

void posenc_alibi_f32_scalar(const alibi_f32_args *a) {
  const int write = (a->flags & POSENC_ALIBI_WRITE_) != 0;
  for (size_t h = 0; h < a->n_heads; ++h) {
    const float m = a->slopes[h];
    for (size_t i = 0; i < a->n_q; ++i) {
      const int32_t qpos = a->q_offset + (int32_t)i;
      const size_t visible = alibi_visible(a, qpos);
      float *row = a->scores + h * a->head_stride + i * a->row_stride;
      for (size_t j = 0; j < visible; ++j) {
        const int32_t d = qpos - (int32_t)j;
        const float bias = m * (float)(d < 0 ? -d : d);
        row[j] = write ? -bias : a->scale * row[j] - bias;
      }
      for (size_t j = visible; j < a->n_k; ++j) row[j] = -INFINITY;
    }
  }
}
