/* The "naive" rows of posenc_softmax (softmax_cases.cc): the row loop a runtime writes over
 * dense in-place scores [n_heads, n_q, n_k] (llama2.c's softmax, ggml's reference
 * soft_max_f32 loop): t = x * scale + mask (an f32 or f16 [n_q, n_k] mask shared by the
 * heads; its -inf cells give t = -inf and so expf = 0, no test), -inf for the keys the
 * causal flag or the window hide, the max (and the sink), libm expf of t - max summed in
 * float (plus expf(sink - max)), then a division by the sum. softmax_naive.c is compiled with
 * -O3 -march=native (that file only). */
#ifndef POSENC_BENCH_SOFTMAX_NAIVE_H
#define POSENC_BENCH_SOFTMAX_NAIVE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct naive_softmax_opts {
  float scale;
  const float *mask;      /* NULL, or [n_q, n_k] f32 values shared by the heads */
  const uint16_t *mask16; /* NULL, or [n_q, n_k] f16 values (used when mask is NULL) */
  const float *sinks;     /* NULL, or one logit per head */
  int q_offset;           /* query i at position q_offset + i, key j at j */
  int causal;             /* hide j > q_offset + i */
  int window;             /* > 0: also hide q_offset + i - j >= window */
} naive_softmax_opts;

/* Every row of S[h][i][:] turned into its softmax, in place. */
void naive_softmax_f32(float *scores, int n_heads, int n_q, int n_k, const naive_softmax_opts *o);
/* The same on bf16 scores (widened into a float row, rounded to nearest even on store). */
void naive_softmax_bf16(uint16_t *scores, int n_heads, int n_q, int n_k,
                        const naive_softmax_opts *o);

#ifdef __cplusplus
}
#endif

#endif /* POSENC_BENCH_SOFTMAX_NAIVE_H */
