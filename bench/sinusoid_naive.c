/* The plain sinusoidal loops an integrator would write (see sinusoid_naive.h): no
 * intrinsics, no restrict, left to the compiler's -O3 -march=native. */
#include "sinusoid_naive.h"

#include <math.h>

#include "naive_half.h"

void naive_sinusoid_inv_freq(size_t dim, double base, float *inv_freq) {
  for (size_t i = 0; i < dim / 2; ++i)
    inv_freq[i] = (float)pow(base, -(double)(2 * i) / (double)dim);
}

/* add is a constant at both calls, so each compiles to its own loop. */
static inline void sinusoid_rows(float *out, size_t n_rows, int32_t start_pos, size_t dim,
                                 const float *inv_freq, int add) {
  for (size_t r = 0; r < n_rows; ++r) {
    const float p = (float)(start_pos + (int32_t)r);
    float *row = out + r * dim;
    for (size_t i = 0; i < dim / 2; ++i) {
      const float angle = p * inv_freq[i];
      const float s = sinf(angle), c = cosf(angle);
      row[2 * i] = add ? row[2 * i] + s : s;
      row[2 * i + 1] = add ? row[2 * i + 1] + c : c;
    }
  }
}

void naive_sinusoid_fill(float *out, size_t n_rows, int32_t start_pos, size_t dim,
                         const float *inv_freq) {
  sinusoid_rows(out, n_rows, start_pos, dim, inv_freq, 0);
}

void naive_sinusoid_add(float *x, size_t n_rows, int32_t start_pos, size_t dim,
                        const float *inv_freq) {
  sinusoid_rows(x, n_rows, start_pos, dim, inv_freq, 1);
}

/* The 16-bit tables: the same values, each rounded as it is stored. */
#define NAIVE_SINUSOID_FILL16(name, store)                                                        \
  void name(uint16_t *out, size_t n_rows, int32_t start_pos, size_t dim, const float *inv_freq) { \
    for (size_t r = 0; r < n_rows; ++r) {                                                         \
      const float p = (float)(start_pos + (int32_t)r);                                            \
      uint16_t *row = out + r * dim;                                                              \
      for (size_t i = 0; i < dim / 2; ++i) {                                                      \
        const float angle = p * inv_freq[i];                                                      \
        row[2 * i] = store(sinf(angle));                                                          \
        row[2 * i + 1] = store(cosf(angle));                                                      \
      }                                                                                           \
    }                                                                                             \
  }

NAIVE_SINUSOID_FILL16(naive_sinusoid_fill_bf16, float_to_bf16)
NAIVE_SINUSOID_FILL16(naive_sinusoid_fill_f16, float_to_f16)
