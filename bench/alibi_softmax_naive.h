/* The "naive" rows of the fused ALiBi softmax: the loops an integrator would write over
 * dense scores [n_heads, n_q, n_k] (libm expf, a division by the sum), for f32 and bf16
 * scores, and the softmax alone for the two-pass baseline. alibi_softmax_naive.c is
 * compiled with -O3 -march=native (that file only). */
#ifndef POSENC_BENCH_ALIBI_SOFTMAX_NAIVE_H
#define POSENC_BENCH_ALIBI_SOFTMAX_NAIVE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Each row of S[h][i][:]: x_j = scale * S - slopes[h] * |q_offset + i - j| (-INFINITY where
 * causal and j > q_offset + i), then S = softmax(x). */
void naive_alibi_softmax(float *scores, const float *slopes, int n_heads, int n_q, int n_k,
                         int q_offset, float scale, int causal);
/* The same on bf16 scores (the upper halves of floats), rounded to nearest even on store. */
void naive_alibi_softmax_bf16(uint16_t *scores, const float *slopes, int n_heads, int n_q, int n_k,
                              int q_offset, float scale, int causal);
/* softmax over each of n_rows rows of n floats, in place. */
void naive_softmax_rows(float *x, int n_rows, int n);

#ifdef __cplusplus
}
#endif

#endif /* POSENC_BENCH_ALIBI_SOFTMAX_NAIVE_H */
