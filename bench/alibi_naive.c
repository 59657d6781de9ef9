/* The plain ALiBi loop an integrator would write (see alibi_naive.h): no intrinsics, no
 * restrict, left to the compiler's -O3 -march=native. */
#include "alibi_naive.h"

#include <math.h>
#include <stddef.h>

void naive_alibi_add(float *scores, const float *slopes, int n_heads, int n_q, int n_k,
                     int q_offset, float scale, int causal) {
  for (int h = 0; h < n_heads; ++h) {
    for (int i = 0; i < n_q; ++i) {
      float *row = scores + ((size_t)h * n_q + i) * n_k;
      const int qpos = q_offset + i;
      for (int j = 0; j < n_k; ++j) {
        if (causal && j > qpos)
          row[j] = -INFINITY;
        else
          row[j] = scale * row[j] - slopes[h] * fabsf((float)(qpos - j));
      }
    }
  }
}
