/*
 * Autoregressive decoding with RoPE and a KV cache: a prefill of 48 prompt tokens at
 * positions 0..47, then 16 decode steps, each rotating the new token's Q and K at
 * start_pos = current length, appending its K and V to the cache and attending over it.
 * Llama-2-like heads with GQA: 8 query heads, 2 key/value heads of 64, theta 10000.
 *
 * Keys are cached already rotated, so each step rotates one token: 8 + 2 head vectors.
 * The check: the outputs of prefill + decode must equal full causal attention over all 64
 * tokens at once, computed by a plain double-precision reference.
 */
#include <math.h>
#include <stdio.h>

#include <posenc.h>

#include "example_util.h"

enum {
  PREFILL = 48,
  STEPS = 16,
  T = PREFILL + STEPS, /* cache capacity */
  HQ = 8,
  HK = 2,
  D = 64,
  Q_DIM = HQ * D,
  KV_DIM = HK * D,
  D_MODEL = HQ * D
};
static const double kTheta = 10000.0;

static void rope_neox_f64(double *x, int p) { /* pairs (x[i], x[i + D/2]) */
  for (int i = 0; i < D / 2; i++) {
    double a = p * pow(kTheta, -2.0 * i / D), c = cos(a), s = sin(a);
    double u = x[i], v = x[i + D / 2];
    x[i] = u * c - v * s;
    x[i + D / 2] = v * c + u * s;
  }
}

/* Full causal attention over all T tokens at once, no cache. */
static void reference(const float *x, const float *w_q, const float *w_k, const float *w_v,
                      double *out) {
  double *x64 = EX_ALLOC(double, T *D_MODEL), *q = EX_ALLOC(double, T *Q_DIM);
  double *k = EX_ALLOC(double, T *KV_DIM), *v = EX_ALLOC(double, T *KV_DIM);
  double *s = EX_ALLOC(double, T *T);
  ex_to_f64(x, x64, T * D_MODEL);
  ex_matmul_f64(x64, w_q, q, T, D_MODEL, Q_DIM);
  ex_matmul_f64(x64, w_k, k, T, D_MODEL, KV_DIM);
  ex_matmul_f64(x64, w_v, v, T, D_MODEL, KV_DIM);
  for (int t = 0; t < T; t++) {
    for (int h = 0; h < HQ; h++) rope_neox_f64(q + t * Q_DIM + h * D, t);
    for (int g = 0; g < HK; g++) rope_neox_f64(k + t * KV_DIM + g * D, t);
  }
  for (int h = 0; h < HQ; h++) {
    int g = h / (HQ / HK);
    ex_attend_f64(q + h * D, Q_DIM, k + g * D, KV_DIM, v + g * D, KV_DIM, T, T, D,
                  /*causal=*/1, 0, s, out + h * D, Q_DIM);
  }
  free(x64), free(q), free(k), free(v), free(s);
}

int main(void) {
  uint32_t seed = 5;
  /* x: the input of this layer for all 64 tokens (in a real model, row t of a decode step
   * comes out of the previous step; here they are given up front). */
  float *x = EX_ALLOC(float, T *D_MODEL), *w_q = EX_ALLOC(float, D_MODEL *Q_DIM);
  float *w_k = EX_ALLOC(float, D_MODEL *KV_DIM), *w_v = EX_ALLOC(float, D_MODEL *KV_DIM);
  ex_fill(x, T * D_MODEL, 1.0f, &seed);
  ex_fill_weights(w_q, D_MODEL * Q_DIM, D_MODEL, &seed);
  ex_fill_weights(w_k, D_MODEL * KV_DIM, D_MODEL, &seed);
  ex_fill_weights(w_v, D_MODEL * KV_DIM, D_MODEL, &seed);

  posenc_rope_plan *plan;
  ex_check(posenc_rope_plan_create(&plan, /*rotary_dim=*/D, kTheta, /*attention_factor=*/1.0),
           "posenc_rope_plan_create");

  /* The cache: [T, HK, D] for K and for V; token t's keys are row t. */
  float *k_cache = EX_ALLOC(float, T *KV_DIM), *v_cache = EX_ALLOC(float, T *KV_DIM);
  float *q = EX_ALLOC(float, PREFILL *Q_DIM), *s = EX_ALLOC(float, PREFILL *T);
  float *out = EX_ALLOC(float, T *Q_DIM);

  /* Prefill: project the prompt straight into the cache, then rotate Q and the new cache
   * rows in one call at positions 0..PREFILL-1 (positions NULL, start_pos 0). */
  ex_matmul_f32(x, w_q, q, PREFILL, D_MODEL, Q_DIM);
  ex_matmul_f32(x, w_k, k_cache, PREFILL, D_MODEL, KV_DIM);
  ex_matmul_f32(x, w_v, v_cache, PREFILL, D_MODEL, KV_DIM);
  posenc_rope_tensor q_view = {.data = q, .n_heads = HQ, .token_stride = Q_DIM, .head_stride = D};
  posenc_rope_tensor k_view = {
      .data = k_cache, .n_heads = HK, .token_stride = KV_DIM, .head_stride = D};
  ex_check(posenc_rope_f32(plan, D, PREFILL, /*positions=*/NULL, /*start_pos=*/0, &q_view, &k_view,
                           POSENC_ROPE_NEOX),
           "posenc_rope_f32 (prefill)");
  for (int h = 0; h < HQ; h++) {
    int g = h / (HQ / HK);
    ex_attend_f32(q + h * D, Q_DIM, k_cache + g * D, KV_DIM, v_cache + g * D, KV_DIM, PREFILL,
                  PREFILL, D, /*causal=*/1, 0, s, out + h * D, Q_DIM);
  }

  /* Decode: one token per step at position len = tokens cached so far. */
  for (int len = PREFILL; len < T; len++) {
    ex_matmul_f32(x + len * D_MODEL, w_q, q, 1, D_MODEL, Q_DIM);
    ex_matmul_f32(x + len * D_MODEL, w_k, k_cache + len * KV_DIM, 1, D_MODEL, KV_DIM);
    ex_matmul_f32(x + len * D_MODEL, w_v, v_cache + len * KV_DIM, 1, D_MODEL, KV_DIM);
    /* Rotate the new Q and the new cache row at start_pos = len. (ALiBi's decode step is
     * n_q = 1, n_k = len + 1, q_offset = len. A context shift that drops the n oldest
     * tokens rotates the kept keys by a positions array of all -n: negative
     * positions are valid.) */
    k_view.data = k_cache + len * KV_DIM;
    ex_check(posenc_rope_f32(plan, D, /*n_tokens=*/1, /*positions=*/NULL, /*start_pos=*/len,
                             &q_view, &k_view, POSENC_ROPE_NEOX),
             "posenc_rope_f32 (decode)");
    /* The new query is the latest token: it sees every cached key, no mask needed. */
    for (int h = 0; h < HQ; h++) {
      int g = h / (HQ / HK);
      ex_attend_f32(q + h * D, Q_DIM, k_cache + g * D, KV_DIM, v_cache + g * D, KV_DIM, 1, len + 1,
                    D, /*causal=*/0, 0, s, out + len * Q_DIM + h * D, Q_DIM);
    }
  }
  posenc_rope_plan_destroy(plan);

  double *expected = EX_ALLOC(double, T *Q_DIM);
  reference(x, w_q, w_k, w_v, expected);
  /* Outputs are convex combinations of V rows (|V| ~ 1, up to ~4). posenc's cos/sin are
   * within 2^-22 of exact; with the float projections (512 terms) and dot products (64
   * terms) outputs move by ~1e-5 at most. 1e-4 leaves a wide margin yet catches an
   * off-by-one position or a cache row in the wrong place (those move outputs by 1e-2). */
  char shape[80];
  snprintf(shape, sizeof shape, "prefill=%d steps=%d heads=%d/%d head_dim=%d", PREFILL, STEPS, HQ,
           HK, D);
  int rc = ex_report("kv_cache_decode", shape, ex_max_abs_diff(out, expected, T * Q_DIM), 1e-4);
  free(x), free(w_q), free(w_k), free(w_v), free(k_cache), free(v_cache), free(q), free(s);
  free(out), free(expected);
  return rc;
}
