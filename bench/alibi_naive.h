/* The "naive" ALiBi rows: the obvious triple loop an integrator would write over dense
 * scores [n_heads, n_q, n_k], with int positions as most C code has them. alibi_naive.c is
 * compiled with -O3 -march=native (that file only). */
#ifndef POSENC_BENCH_ALIBI_NAIVE_H
#define POSENC_BENCH_ALIBI_NAIVE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* S[h][i][j] = scale * S - slopes[h] * |q_offset + i - j|, or -INFINITY where causal and
 * j > q_offset + i. */
void naive_alibi_add(float *scores, const float *slopes, int n_heads, int n_q, int n_k,
                     int q_offset, float scale, int causal);
/* The same on bf16 / f16 scores (uint16_t bits): widened, biased in float, rounded to
 * nearest even as stored (naive_half.h). */
void naive_alibi_add_bf16(uint16_t *scores, const float *slopes, int n_heads, int n_q, int n_k,
                          int q_offset, float scale, int causal);
void naive_alibi_add_f16(uint16_t *scores, const float *slopes, int n_heads, int n_q, int n_k,
                         int q_offset, float scale, int causal);

#ifdef __cplusplus
}
#endif

#endif /* POSENC_BENCH_ALIBI_NAIVE_H */
