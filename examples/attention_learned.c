/*
 * Causal self-attention with learned absolute position embeddings (seed 003's
 * apply_learned, as in GPT-2 and BERT), on GPT-2 small shapes: a [1024, 768] position
 * table (wpe), 12 heads of 64, 64 tokens.
 *
 *   X_pos = X + wpe[positions]    posenc_learned_add_f32: rows gathered by position, in place
 *   Q, K, V = X_pos @ W_q, W_k, W_v
 *   out_h = softmax(Q_h K_h^T / sqrt(D) + causal mask) V_h
 *
 * The same result is computed by a plain double-precision reference and compared.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <posenc.h>

#include "example_util.h"

enum { L = 64, H = 12, D = 64, D_MODEL = H * D, MAX_POS = 1024 };

static void reference(const float *x, const float *wpe, const float *w_q, const float *w_k,
                      const float *w_v, double *out) {
  double *x_pos = EX_ALLOC(double, L *D_MODEL), *q = EX_ALLOC(double, L *D_MODEL);
  double *k = EX_ALLOC(double, L *D_MODEL), *v = EX_ALLOC(double, L *D_MODEL);
  double *s = EX_ALLOC(double, L *L);
  for (int t = 0; t < L; t++) /* token t is at position t */
    for (int j = 0; j < D_MODEL; j++)
      x_pos[t * D_MODEL + j] = (double)x[t * D_MODEL + j] + wpe[t * D_MODEL + j];
  ex_matmul_f64(x_pos, w_q, q, L, D_MODEL, D_MODEL);
  ex_matmul_f64(x_pos, w_k, k, L, D_MODEL, D_MODEL);
  ex_matmul_f64(x_pos, w_v, v, L, D_MODEL, D_MODEL);
  for (int h = 0; h < H; h++)
    ex_attend_f64(q + h * D, D_MODEL, k + h * D, D_MODEL, v + h * D, D_MODEL, L, L, D,
                  /*causal=*/1, 0, s, out + h * D, D_MODEL);
  free(x_pos), free(q), free(k), free(v), free(s);
}

int main(void) {
  uint32_t seed = 4;
  float *wpe = EX_ALLOC(float, MAX_POS *D_MODEL); /* the model's learned table */
  float *x = EX_ALLOC(float, L *D_MODEL);         /* token embeddings (wte[token ids]) */
  float *w_q = EX_ALLOC(float, D_MODEL *D_MODEL), *w_k = EX_ALLOC(float, D_MODEL *D_MODEL);
  float *w_v = EX_ALLOC(float, D_MODEL *D_MODEL);
  ex_fill(wpe, MAX_POS * D_MODEL, 0.5f, &seed);
  ex_fill(x, L * D_MODEL, 1.0f, &seed);
  ex_fill_weights(w_q, D_MODEL * D_MODEL, D_MODEL, &seed);
  ex_fill_weights(w_k, D_MODEL * D_MODEL, D_MODEL, &seed);
  ex_fill_weights(w_v, D_MODEL * D_MODEL, D_MODEL, &seed);

  /* The table is added in place; x itself is kept for the reference. */
  float *x_pos = EX_ALLOC(float, L *D_MODEL);
  memcpy(x_pos, x, sizeof(float) * L * D_MODEL);
  /* x_pos[t] += wpe[start_pos + t] (positions NULL; seed 003 is start_pos 0). A later chunk
   * passes start_pos = tokens already cached; padded or packed batches pass an int32
   * position per token. Every position is checked against [0, max_pos) before anything is
   * written: a sequence longer than the table is an error, not a read past its end.
   * Strides 0 = dense rows of dim; pass real strides for rows inside wider buffers. */
  ex_check(posenc_learned_add_f32(wpe, MAX_POS, /*table_stride=*/0, /*dim=*/D_MODEL, L,
                                  /*positions=*/NULL, /*start_pos=*/0, x_pos, /*x_stride=*/0),
           "posenc_learned_add_f32");

  float *q = EX_ALLOC(float, L *D_MODEL), *k = EX_ALLOC(float, L *D_MODEL);
  float *v = EX_ALLOC(float, L *D_MODEL), *s = EX_ALLOC(float, L *L);
  float *out = EX_ALLOC(float, L *D_MODEL);
  ex_matmul_f32(x_pos, w_q, q, L, D_MODEL, D_MODEL);
  ex_matmul_f32(x_pos, w_k, k, L, D_MODEL, D_MODEL);
  ex_matmul_f32(x_pos, w_v, v, L, D_MODEL, D_MODEL);
  for (int h = 0; h < H; h++) /* head h: columns [h * D, (h+1) * D), row stride d_model */
    ex_attend_f32(q + h * D, D_MODEL, k + h * D, D_MODEL, v + h * D, D_MODEL, L, L, D,
                  /*causal=*/1, 0, s, out + h * D, D_MODEL);

  double *expected = EX_ALLOC(double, L *D_MODEL);
  reference(x, wpe, w_q, w_k, w_v, expected);
  /* Outputs are convex combinations of V rows (|V| ~ 1, up to ~4). The addition is one
   * float rounding per element; with the float projections (768 terms) and dot products (64
   * terms) outputs move by ~1e-5 at most. 1e-4 leaves a wide margin yet catches a
   * wrong row or stride. */
  char shape[64];
  snprintf(shape, sizeof shape, "L=%d d_model=%d heads=%d max_pos=%d", L, D_MODEL, H, MAX_POS);
  int rc = ex_report("attention_learned", shape, ex_max_abs_diff(out, expected, L * D_MODEL), 1e-4);
  free(wpe), free(x), free(x_pos), free(w_q), free(w_k), free(w_v), free(q), free(k), free(v);
  free(s), free(out), free(expected);
  return rc;
}
