/* The plain gather-add loop an integrator would write (see learned_naive.h): no intrinsics,
 * no restrict, left to the compiler's -O3 -march=native. */
#include "learned_naive.h"

void naive_learned_add(float *x, const float *table, const int32_t *positions, size_t n_tokens,
                       size_t dim) {
  for (size_t t = 0; t < n_tokens; ++t) {
    const float *row = table + (size_t)positions[t] * dim;
    float *xt = x + t * dim;
    for (size_t j = 0; j < dim; ++j) xt[j] += row[j];
  }
}
