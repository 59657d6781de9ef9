/* The scalar reference learned-embedding kernel: one float addition per element. */
#include "learned.h"
#include "variants.h"

void posenc_learned_add_f32_scalar(const learned_f32_args *a) {
  for (size_t t = 0; t < a->n_tokens; ++t) {
    const float *src = learned_row(a, t);
    float *x = a->x + t * a->x_stride;
    for (size_t j = 0; j < a->dim; ++j) x[j] = x[j] + src[j];
  }
}
