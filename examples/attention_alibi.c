/*
 * Causal self-attention with ALiBi (Press et al.; seed 003's attention_with_alibi), 12 heads
 * of 64 (d_model 768), 64 tokens. 12 is not a power of two, the case where ALiBi slopes
 * are most often got wrong.
 *
 *   Q, K, V = X @ W_q, W_k, W_v
 *   S_h = Q_h K_h^T                            raw scores of every head, [H, L, L]
 *   S_h = S_h / sqrt(D) - m_h |i - j|, and -inf where j > i
 *                                              posenc_alibi_add_f32: one pass, in place
 *   out_h = softmax(S_h) V_h
 *
 * The same result is computed by a plain double-precision reference and compared.
 */
#include <math.h>
#include <stdio.h>

#include <posenc.h>

#include "example_util.h"

enum { L = 64, H = 12, D = 64, D_MODEL = H * D };

/* Press et al.'s slopes (seed 000's _get_slopes, max_bias 8): 2^(-8(h+1)/n) for n a power
 * of two; otherwise those of the largest power of two c < n, then the first n - c
 * odd-indexed slopes of 2c heads. */
static double slope_f64(int h) {
  int c = 1;
  while (2 * c < H) c *= 2;
  if (h < c) return pow(2.0, -8.0 * (h + 1) / c);
  return pow(2.0, -8.0 * (2 * (h - c) + 1) / (2 * c));
}

static void reference(const float *x, const float *w_q, const float *w_k, const float *w_v,
                      double *out) {
  double *x64 = EX_ALLOC(double, L *D_MODEL), *q = EX_ALLOC(double, L *D_MODEL);
  double *k = EX_ALLOC(double, L *D_MODEL), *v = EX_ALLOC(double, L *D_MODEL);
  double *s = EX_ALLOC(double, L *L);
  ex_to_f64(x, x64, L * D_MODEL);
  ex_matmul_f64(x64, w_q, q, L, D_MODEL, D_MODEL);
  ex_matmul_f64(x64, w_k, k, L, D_MODEL, D_MODEL);
  ex_matmul_f64(x64, w_v, v, L, D_MODEL, D_MODEL);
  for (int h = 0; h < H; h++) {
    ex_scores_f64(q + h * D, D_MODEL, k + h * D, D_MODEL, L, L, D, 1.0 / sqrt(D), s);
    for (int i = 0; i < L; i++)
      for (int j = 0; j < L; j++)
        s[i * L + j] = j > i ? -INFINITY : s[i * L + j] - slope_f64(h) * abs(i - j);
    ex_softmax_rows_f64(s, L, L);
    ex_weighted_sum_f64(s, v + h * D, D_MODEL, L, L, D, out + h * D, D_MODEL);
  }
  free(x64), free(q), free(k), free(v), free(s);
}

int main(void) {
  uint32_t seed = 2;
  float *x = EX_ALLOC(float, L *D_MODEL), *w_q = EX_ALLOC(float, D_MODEL *D_MODEL);
  float *w_k = EX_ALLOC(float, D_MODEL *D_MODEL), *w_v = EX_ALLOC(float, D_MODEL *D_MODEL);
  ex_fill(x, L * D_MODEL, 1.0f, &seed);
  ex_fill_weights(w_q, D_MODEL * D_MODEL, D_MODEL, &seed);
  ex_fill_weights(w_k, D_MODEL * D_MODEL, D_MODEL, &seed);
  ex_fill_weights(w_v, D_MODEL * D_MODEL, D_MODEL, &seed);

  float *q = EX_ALLOC(float, L *D_MODEL), *k = EX_ALLOC(float, L *D_MODEL);
  float *v = EX_ALLOC(float, L *D_MODEL), *out = EX_ALLOC(float, L *D_MODEL);
  float *scores = EX_ALLOC(float, H *L *L);
  ex_matmul_f32(x, w_q, q, L, D_MODEL, D_MODEL);
  ex_matmul_f32(x, w_k, k, L, D_MODEL, D_MODEL);
  ex_matmul_f32(x, w_v, v, L, D_MODEL, D_MODEL);
  for (int h = 0; h < H; h++) /* raw, unscaled: posenc applies 1/sqrt(D) in its pass */
    ex_scores_f32(q + h * D, D_MODEL, k + h * D, D_MODEL, L, L, D, 1.0f, scores + h * L * L);

  /* Slopes once per model (max_bias 8 as in the paper, BLOOM and MPT). */
  float slopes[H];
  ex_check(posenc_alibi_slopes(H, /*max_bias=*/8.0, slopes), "posenc_alibi_slopes");
  /* Scores [H, L, L]: head_stride L*L, row_stride L (any strides work, e.g. [L, H, n_k]).
   * Query row i is at position q_offset + i, key column j at position j: a KV-cache decode
   * step is n_q = 1, n_k = cached + 1, q_offset = cached. CAUSAL writes -inf where j > i
   * without reading those scores. */
  ex_check(posenc_alibi_add_f32(slopes, H, /*n_q=*/L, /*n_k=*/L, /*q_offset=*/0, scores,
                                /*head_stride=*/L * L, /*row_stride=*/L,
                                /*scale=*/1.0f / sqrtf((float)D), POSENC_ALIBI_CAUSAL),
           "posenc_alibi_add_f32");

  ex_softmax_rows_f32(scores, H * L, L);
  for (int h = 0; h < H; h++)
    ex_weighted_sum_f32(scores + h * L * L, v + h * D, D_MODEL, L, L, D, out + h * D, D_MODEL);

  double *expected = EX_ALLOC(double, L *D_MODEL);
  reference(x, w_q, w_k, w_v, expected);
  /* Outputs are convex combinations of V rows (|V| ~ 1, up to ~4). The bias is exact up to
   * float rounding (slopes are float, as in the seeds: ~1e-8 relative); with the float
   * projections (768 terms) and dot products (64 terms) outputs move by ~1e-5 at most.
   * 1e-4 leaves a wide margin yet catches a wrong slope, offset or mask. */
  char shape[64];
  snprintf(shape, sizeof shape, "L=%d heads=%d head_dim=%d", L, H, D);
  int rc = ex_report("attention_alibi", shape, ex_max_abs_diff(out, expected, L * D_MODEL), 1e-4);
  free(x), free(w_q), free(w_k), free(w_v), free(q), free(k), free(v), free(out), free(scores);
  free(expected);
  return rc;
}
