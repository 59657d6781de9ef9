/* The "naive" sinusoidal rows: the plain C loop an integrator would write, with float32
 * angles ((float)p * inv_freq, inv_freq precomputed once as floats) and libm sinf/cosf,
 * interleaved layout (sin at column 2i, cos at 2i + 1), even dim. sinusoid_naive.c is
 * compiled with -O3 -march=native (that file only). */
#ifndef POSENC_BENCH_SINUSOID_NAIVE_H
#define POSENC_BENCH_SINUSOID_NAIVE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* inv_freq[i] = (float)base^(-2i/dim), i in [0, dim/2): computed once, outside the loop. */
void naive_sinusoid_inv_freq(size_t dim, double base, float *inv_freq);

/* Row r (dense [n_rows, dim]) is the encoding of position start_pos + r. */
void naive_sinusoid_fill(float *out, size_t n_rows, int32_t start_pos, size_t dim,
                         const float *inv_freq);
/* x[r] += the encoding of position start_pos + r, in place. */
void naive_sinusoid_add(float *x, size_t n_rows, int32_t start_pos, size_t dim,
                        const float *inv_freq);
/* naive_sinusoid_fill into bf16 / f16 tables (uint16_t bits), each value rounded to nearest
 * even as it is stored (naive_half.h). */
void naive_sinusoid_fill_bf16(uint16_t *out, size_t n_rows, int32_t start_pos, size_t dim,
                              const float *inv_freq);
void naive_sinusoid_fill_f16(uint16_t *out, size_t n_rows, int32_t start_pos, size_t dim,
                             const float *inv_freq);

#ifdef __cplusplus
}
#endif

#endif /* POSENC_BENCH_SINUSOID_NAIVE_H */
