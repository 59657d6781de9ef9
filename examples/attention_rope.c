/*
 * Causal self-attention with RoPE and grouped-query attention (seed 003's
 * attention_with_rope), on Llama-3-like heads: 8 query heads and 2 key/value heads of 128
 * (each K/V head serves 4 query heads), theta 500000, 64 tokens.
 *
 *   QKV = X @ W_qkv              one fused projection: rows [Q heads | K heads | V heads]
 *   Q, K rotated in place        posenc_rope_f32, both in one call, straight in the QKV rows
 *   out_h = softmax(Q_h K_g^T / sqrt(D) + causal mask) V_g,   g = h / (8 / 2)
 *
 * The same result is computed by a plain double-precision reference and compared.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <posenc.h>

#include "example_util.h"

enum {
  L = 64,
  HQ = 8,                  /* query heads */
  HK = 2,                  /* key/value heads (GQA; 1 would be MQA) */
  D = 128,                 /* head_dim */
  D_MODEL = HQ * D,        /* hidden size */
  QKV = (HQ + 2 * HK) * D, /* width of one fused QKV row */
  Q_OFF = 0,               /* offsets of the Q, K and V heads inside a row */
  K_OFF = HQ * D,
  V_OFF = (HQ + HK) * D
};
static const double kTheta = 500000.0; /* rope_theta: 10000 (Llama 2), 500000 (Llama 3) */

/* Rotate-half (NEOX) RoPE in double: pair i = (x[i], x[i + D/2]) rotated by p * w_i,
 * w_i = theta^(-2i/D) (seeds 000 and 004). */
static void rope_neox_f64(double *x, int p) {
  for (int i = 0; i < D / 2; i++) {
    double a = p * pow(kTheta, -2.0 * i / D), c = cos(a), s = sin(a);
    double u = x[i], v = x[i + D / 2];
    x[i] = u * c - v * s;
    x[i + D / 2] = v * c + u * s;
  }
}

static void reference(const float *x, const float *w_qkv, double *out) {
  double *x64 = EX_ALLOC(double, L *D_MODEL), *qkv = EX_ALLOC(double, L *QKV);
  double *s = EX_ALLOC(double, L *L);
  ex_to_f64(x, x64, L * D_MODEL);
  ex_matmul_f64(x64, w_qkv, qkv, L, D_MODEL, QKV);
  for (int t = 0; t < L; t++) {
    for (int h = 0; h < HQ; h++) rope_neox_f64(qkv + t * QKV + Q_OFF + h * D, t);
    for (int g = 0; g < HK; g++) rope_neox_f64(qkv + t * QKV + K_OFF + g * D, t);
  }
  for (int h = 0; h < HQ; h++) {
    int g = h / (HQ / HK);
    ex_attend_f64(qkv + Q_OFF + h * D, QKV, qkv + K_OFF + g * D, QKV, qkv + V_OFF + g * D, QKV, L,
                  L, D, /*causal=*/1, 0, s, out + h * D, D_MODEL);
  }
  free(x64), free(qkv), free(s);
}

int main(void) {
  uint32_t seed = 1;
  float *x = EX_ALLOC(float, L *D_MODEL), *w_qkv = EX_ALLOC(float, D_MODEL *QKV);
  ex_fill(x, L * D_MODEL, 1.0f, &seed);
  ex_fill_weights(w_qkv, D_MODEL * QKV, D_MODEL, &seed);

  float *qkv = EX_ALLOC(float, L *QKV), *s = EX_ALLOC(float, L *L);
  float *out = EX_ALLOC(float, L *D_MODEL);
  ex_matmul_f32(x, w_qkv, qkv, L, D_MODEL, QKV);

  /* A plan holds the D/2 frequencies theta^(-2i/R); create it once per model (rotary_dim
   * R < D for partial rotary, e.g. GPT-NeoX, Phi), share it between threads. */
  posenc_rope_plan *plan;
  ex_check(posenc_rope_plan_create(&plan, /*rotary_dim=*/D, kTheta, /*attention_factor=*/1.0),
           "posenc_rope_plan_create");

  /* Views into the fused QKV rows: element d of head h of token t is at
   * data[t * token_stride + h * head_stride + d]. Q and K share each token's cos/sin. */
  posenc_rope_tensor q_view = {
      .data = qkv + Q_OFF, .n_heads = HQ, .token_stride = QKV, .head_stride = D};
  posenc_rope_tensor k_view = {
      .data = qkv + K_OFF, .n_heads = HK, .token_stride = QKV, .head_stride = D};
  /* One int32 position per token: here 0..L-1, but packed sequences or continuous batching
   * give each token its own (positions NULL with start_pos rotates consecutive positions;
   * see kv_cache_decode.c). */
  int32_t positions[L];
  for (int t = 0; t < L; t++) positions[t] = t;
  /* The layout must match the order of the checkpoint's Q/K weights, not the model name:
   * NEOX = rotate-half, pairs (x[i], x[i + R/2]): HF transformers checkpoints (Llama,
   * Mistral, Qwen, ...), GPT-NeoX. GPTJ = interleaved pairs (x[2i], x[2i+1]): GPT-J, Meta's
   * original Llama weights, llama.cpp's GGUF Llama (its converter permutes HF weights to
   * this order; llama.cpp's "NORM" rope), MLX traditional=True, seed 003. */
  ex_check(posenc_rope_f32(plan, /*head_dim=*/D, L, positions, /*start_pos=*/0, &q_view, &k_view,
                           POSENC_ROPE_NEOX),
           "posenc_rope_f32");
  posenc_rope_plan_destroy(plan);

  for (int h = 0; h < HQ; h++) {
    int g = h / (HQ / HK); /* the K/V head shared by this group of query heads */
    ex_attend_f32(qkv + Q_OFF + h * D, QKV, qkv + K_OFF + g * D, QKV, qkv + V_OFF + g * D, QKV, L,
                  L, D, /*causal=*/1, 0, s, out + h * D, D_MODEL);
  }

  double *expected = EX_ALLOC(double, L *D_MODEL);
  reference(x, w_qkv, expected);
  /* Outputs are convex combinations of V rows (|V| ~ 1, up to ~4). posenc's cos/sin are
   * within 2^-22 of exact; with the float projections (1024 terms) and dot products (128
   * terms) outputs move by ~1e-5 at most. 1e-4 leaves a wide margin yet catches a wrong
   * layout, frequency or position (those move outputs by 1e-2 and more). */
  char shape[64];
  snprintf(shape, sizeof shape, "L=%d heads=%d/%d head_dim=%d", L, HQ, HK, D);
  int rc = ex_report("attention_rope", shape, ex_max_abs_diff(out, expected, L * D_MODEL), 1e-4);
  free(x), free(w_qkv), free(qkv), free(s), free(out), free(expected);
  return rc;
}
