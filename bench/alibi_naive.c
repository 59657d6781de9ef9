/* The plain ALiBi loop an integrator would write (see alibi_naive.h): no intrinsics, no
 * restrict, left to the compiler's -O3 -march=native. */
#include "alibi_naive.h"

#include <math.h>
#include <stddef.h>

#include "naive_half.h"

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

/* The same loop on 16-bit scores: widened, biased in float, rounded as stored. */
#define NAIVE_ALIBI_ADD16(name, load, store)                                                    \
  void name(uint16_t *scores, const float *slopes, int n_heads, int n_q, int n_k, int q_offset, \
            float scale, int causal) {                                                          \
    for (int h = 0; h < n_heads; ++h) {                                                         \
      for (int i = 0; i < n_q; ++i) {                                                           \
        uint16_t *row = scores + ((size_t)h * n_q + i) * n_k;                                   \
        const int qpos = q_offset + i;                                                          \
        for (int j = 0; j < n_k; ++j) {                                                         \
          if (causal && j > qpos)                                                               \
            row[j] = store(-INFINITY);                                                          \
          else                                                                                  \
            row[j] = store(scale * load(row[j]) - slopes[h] * fabsf((float)(qpos - j)));        \
        }                                                                                       \
      }                                                                                         \
    }                                                                                           \
  }

NAIVE_ALIBI_ADD16(naive_alibi_add_bf16, bf16_to_float, float_to_bf16)
NAIVE_ALIBI_ADD16(naive_alibi_add_f16, f16_to_float, float_to_f16)
