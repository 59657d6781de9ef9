/*
 * Self-attention with sinusoidal position encoding (Vaswani et al.; seed 003's
 * attention_with_sinusoidal), on the shapes of the original Transformer base model:
 * d_model 512, 8 heads of 64, a sequence of 64 tokens, no causal mask (encoder).
 *
 *   X_pos = X + PE[0:L]          posenc_sinusoid_add_f32, in place, no table
 *   Q, K, V = X_pos @ W_q, W_k, W_v
 *   out_h = softmax(Q_h K_h^T / sqrt(d_k)) V_h   for each head h
 *
 * The same result is computed by a plain double-precision reference and compared.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <posenc.h>

#include "example_util.h"

enum { L = 64, D_MODEL = 512, N_HEADS = 8, D_K = D_MODEL / N_HEADS };

/* PE(p, 2i) = sin(p * w_i), PE(p, 2i+1) = cos(p * w_i), w_i = 10000^(-2i/d): the seeds'
 * formula, in double with libm. */
static void reference(const float *x, const float *w_q, const float *w_k, const float *w_v,
                      double *out) {
  double *x_pos = EX_ALLOC(double, L *D_MODEL), *q = EX_ALLOC(double, L *D_MODEL);
  double *k = EX_ALLOC(double, L *D_MODEL), *v = EX_ALLOC(double, L *D_MODEL);
  double *s = EX_ALLOC(double, L *L);
  for (int p = 0; p < L; p++)
    for (int i = 0; 2 * i < D_MODEL; i++) {
      double w = pow(10000.0, -2.0 * i / D_MODEL);
      x_pos[p * D_MODEL + 2 * i] = x[p * D_MODEL + 2 * i] + sin(p * w);
      x_pos[p * D_MODEL + 2 * i + 1] = x[p * D_MODEL + 2 * i + 1] + cos(p * w);
    }
  ex_matmul_f64(x_pos, w_q, q, L, D_MODEL, D_MODEL);
  ex_matmul_f64(x_pos, w_k, k, L, D_MODEL, D_MODEL);
  ex_matmul_f64(x_pos, w_v, v, L, D_MODEL, D_MODEL);
  for (int h = 0; h < N_HEADS; h++)
    ex_attend_f64(q + h * D_K, D_MODEL, k + h * D_K, D_MODEL, v + h * D_K, D_MODEL, L, L, D_K,
                  /*causal=*/0, 0, s, out + h * D_K, D_MODEL);
  free(x_pos), free(q), free(k), free(v), free(s);
}

int main(void) {
  uint32_t seed = 3;
  float *x = EX_ALLOC(float, L *D_MODEL), *w_q = EX_ALLOC(float, D_MODEL *D_MODEL);
  float *w_k = EX_ALLOC(float, D_MODEL *D_MODEL), *w_v = EX_ALLOC(float, D_MODEL *D_MODEL);
  ex_fill(x, L * D_MODEL, 1.0f, &seed); /* token embeddings */
  ex_fill_weights(w_q, D_MODEL * D_MODEL, D_MODEL, &seed);
  ex_fill_weights(w_k, D_MODEL * D_MODEL, D_MODEL, &seed);
  ex_fill_weights(w_v, D_MODEL * D_MODEL, D_MODEL, &seed);

  /* A plan holds the d/2 frequencies; create it once per model, share it between threads. */
  posenc_sinusoid_plan *plan;
  ex_check(posenc_sinusoid_plan_create(&plan, D_MODEL, /*base=*/10000.0), "plan_create");

  /* The encoding is added in place; x itself is kept for the reference. */
  float *x_pos = EX_ALLOC(float, L *D_MODEL);
  memcpy(x_pos, x, sizeof(float) * L * D_MODEL);
  /* X += PE for positions 0..L-1 (positions NULL, start_pos 0). For a later chunk of the
   * same sequence pass start_pos = tokens already seen; for packed sequences an int32
   * position per row. row_stride 0 = dense [L, d_model]; pass the real stride for rows
   * inside a wider buffer. INTERLEAVED (sin, cos, sin, ...) is the seeds' and Vaswani's
   * layout; tensor2tensor/fairseq use POSENC_SINUSOID_SIN_COS. */
  ex_check(posenc_sinusoid_add_f32(plan, L, /*positions=*/NULL, /*start_pos=*/0, x_pos,
                                   /*row_stride=*/0, POSENC_SINUSOID_INTERLEAVED),
           "posenc_sinusoid_add_f32");
  posenc_sinusoid_plan_destroy(plan);

  float *q = EX_ALLOC(float, L *D_MODEL), *k = EX_ALLOC(float, L *D_MODEL);
  float *v = EX_ALLOC(float, L *D_MODEL), *s = EX_ALLOC(float, L *L);
  float *out = EX_ALLOC(float, L *D_MODEL);
  ex_matmul_f32(x_pos, w_q, q, L, D_MODEL, D_MODEL);
  ex_matmul_f32(x_pos, w_k, k, L, D_MODEL, D_MODEL);
  ex_matmul_f32(x_pos, w_v, v, L, D_MODEL, D_MODEL);
  /* Head h is columns [h * d_k, (h+1) * d_k) of Q, K, V: row stride d_model. */
  for (int h = 0; h < N_HEADS; h++)
    ex_attend_f32(q + h * D_K, D_MODEL, k + h * D_K, D_MODEL, v + h * D_K, D_MODEL, L, L, D_K,
                  /*causal=*/0, 0, s, out + h * D_K, D_MODEL);

  double *expected = EX_ALLOC(double, L *D_MODEL);
  reference(x, w_q, w_k, w_v, expected);

  /* Outputs are convex combinations of V rows (|V| ~ 1, up to ~4). float vs double: the
   * 512-term projections and 64-term dot products round at ~1e-6 relative, which moves an
   * output by ~1e-5 at most; 1e-4 leaves a wide margin yet catches any wrong
   * frequency, layout or position (those move outputs by 1e-2 and more). */
  char shape[64];
  snprintf(shape, sizeof shape, "L=%d d_model=%d heads=%d", L, D_MODEL, N_HEADS);
  int rc =
      ex_report("attention_sinusoidal", shape, ex_max_abs_diff(out, expected, L * D_MODEL), 1e-4);
  free(x), free(x_pos), free(w_q), free(w_k), free(w_v), free(q), free(k), free(v), free(s),
      free(out);
  free(expected);
  return rc;
}
