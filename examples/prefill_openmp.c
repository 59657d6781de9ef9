/*
 * A prefill split over threads by the caller, with OpenMP. posenc's kernels are
 * single-threaded, reentrant and keep no state; a plan is immutable and shared. So a runtime
 * splits one call into slices of tokens, one per thread, that touch disjoint rows.
 *
 * RoPE: Llama-3-8B-like prefill, 4096 tokens, 32 query heads and 8 key heads of 128,
 * theta 500000, [L, H, D] buffers. Thread j rotates tokens [t0, t1): q + t0 * token_stride
 * (same for k) and start_pos + t0 (or positions + t0). Splitting over tokens, not heads,
 * keeps each token's cos/sin computed once, shared by its 40 heads.
 * ALiBi: the causal bias added into [32, 512, 512] scores, split over query rows:
 * scores + i0 * row_stride and q_offset + i0.
 *
 * The check: each threaded result against one single-threaded call on the same data, bit
 * for bit. ALiBi is the same float operations whatever the split; RoPE is split-invariant on
 * every variant (posenc.h): a token's cos/sin depend only on its position, never on where
 * its slice starts. The slices here are uneven (cut 37 tokens past each even boundary, so
 * that no slice starts at a multiple of 64) and start at position 1000.
 */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>

#include <posenc.h>

#include "example_util.h"

enum { L = 4096, HQ = 32, HK = 8, D = 128, Q_DIM = HQ * D, K_DIM = HK * D };
enum { AH = 32, AN = 512 }; /* ALiBi: heads, query rows = keys */
static const double kTheta = 500000.0;

/* Rotates tokens [t0, t1) of q [L, HQ, D] and k [L, HK, D] at positions start_pos + t. */
static posenc_status rope_slice(const posenc_rope_plan *plan, float *q, float *k, size_t t0,
                                size_t t1, int32_t start_pos) {
  posenc_rope_tensor qv = {
      .data = q + t0 * Q_DIM, .n_heads = HQ, .token_stride = Q_DIM, .head_stride = D};
  posenc_rope_tensor kv = {
      .data = k + t0 * K_DIM, .n_heads = HK, .token_stride = K_DIM, .head_stride = D};
  return posenc_rope_f32(plan, D, t1 - t0, /*positions=*/NULL, start_pos + (int32_t)t0, &qv, &kv,
                         POSENC_ROPE_NEOX);
}

/* One contiguous slice of tokens per thread; the worst status of the slices. */
static posenc_status rope_threaded(const posenc_rope_plan *plan, float *q, float *k,
                                   int32_t start_pos, int n_slices) {
  int worst = POSENC_OK;
#pragma omp parallel for schedule(static) reduction(max : worst)
  for (int j = 0; j < n_slices; j++) {
    const size_t t0 = j == 0 ? 0 : (size_t)L * j / n_slices + 37;
    const size_t t1 = j + 1 == n_slices ? (size_t)L : (size_t)L * (j + 1) / n_slices + 37;
    const int st = (int)rope_slice(plan, q, k, t0, t1, start_pos);
    worst = st > worst ? st : worst;
  }
  return (posenc_status)worst;
}

/* Adds the causal ALiBi bias into query rows [i0, i1) of every head of s [AH, AN, AN]. */
static posenc_status alibi_slice(const float *slopes, float *s, size_t i0, size_t i1) {
  return posenc_alibi_add_f32(slopes, AH, i1 - i0, AN, /*q_offset=*/i0, s + i0 * AN,
                              /*head_stride=*/AN * AN, /*row_stride=*/AN,
                              /*scale=*/1.0f / sqrtf((float)D), POSENC_ALIBI_CAUSAL);
}

static posenc_status alibi_threaded(const float *slopes, float *s, int n_slices) {
  int worst = POSENC_OK;
#pragma omp parallel for schedule(static) reduction(max : worst)
  for (int j = 0; j < n_slices; j++) {
    const size_t i0 = (size_t)AN * j / n_slices, i1 = (size_t)AN * (j + 1) / n_slices;
    const int st = (int)alibi_slice(slopes, s, i0, i1);
    worst = st > worst ? st : worst;
  }
  return (posenc_status)worst;
}

/* max over NEOX pairs (u, v) of |a - b| / (|u| + |v|), (u, v) the input pair x; counts the
 * elements that differ. */
static double max_pair_diff(const float *a, const float *b, const float *x, size_t n_vectors,
                            size_t *n_differ) {
  double max = 0.0;
  for (size_t h = 0; h < n_vectors * D; h += D)
    for (size_t i = h; i < h + D / 2; i++) {
      double scale = fabs((double)x[i]) + fabs((double)x[i + D / 2]) + 0x1p-126;
      double du = fabs((double)a[i] - b[i]), dv = fabs((double)a[i + D / 2] - b[i + D / 2]);
      *n_differ += (du != 0) + (dv != 0);
      if (!(fmax(du, dv) / scale <= max)) max = fmax(du, dv) / scale; /* NaN sticks */
    }
  return max;
}

int main(void) {
  const int threads = omp_get_max_threads(); /* OMP_NUM_THREADS, else the cores */
  uint32_t seed = 7;
  float *q0 = EX_ALLOC(float, (size_t)L *Q_DIM), *k0 = EX_ALLOC(float, (size_t)L *K_DIM);
  ex_fill(q0, (size_t)L * Q_DIM, 1.0f, &seed);
  ex_fill(k0, (size_t)L * K_DIM, 1.0f, &seed);
  float *q1 = EX_ALLOC(float, (size_t)L *Q_DIM), *k1 = EX_ALLOC(float, (size_t)L *K_DIM);
  float *q2 = EX_ALLOC(float, (size_t)L *Q_DIM), *k2 = EX_ALLOC(float, (size_t)L *K_DIM);
  memcpy(q1, q0, sizeof(float) * L * Q_DIM), memcpy(k1, k0, sizeof(float) * L * K_DIM);
  memcpy(q2, q0, sizeof(float) * L * Q_DIM), memcpy(k2, k0, sizeof(float) * L * K_DIM);

  posenc_rope_plan *plan; /* one plan, shared read-only by every thread */
  ex_check(posenc_rope_plan_create(&plan, /*rotary_dim=*/D, kTheta, 1.0), "plan_create");
  ex_check(rope_slice(plan, q1, k1, 0, L, /*start_pos=*/1000), "posenc_rope_f32 (1 thread)");
  ex_check(rope_threaded(plan, q2, k2, /*start_pos=*/1000, threads), "posenc_rope_f32 (threaded)");
  posenc_rope_plan_destroy(plan);

  /* Split invariance: bit-identical on every variant. */
  size_t n_differ = 0;
  double diff = fmax(max_pair_diff(q2, q1, q0, (size_t)L * HQ, &n_differ),
                     max_pair_diff(k2, k1, k0, (size_t)L * HK, &n_differ));
  const char *isa = posenc_isa_name(posenc_active_isa());
  int rope_ok = n_differ == 0;
  printf(
      "prefill_openmp: rope L=%d heads=%d/%d head_dim=%d, %d threads vs one call (isa %s): "
      "max |diff|/(|u|+|v|) = %.1e, %zu of %zu elements differ (bound 0): %s\n",
      L, HQ, HK, D, threads, isa, diff, n_differ, (size_t)L * (Q_DIM + K_DIM),
      rope_ok ? "ok" : "MISMATCH");

  /* ALiBi: every element is the same float operations whatever the split: bit-identical. */
  float slopes[AH];
  ex_check(posenc_alibi_slopes(AH, /*max_bias=*/8.0, slopes), "posenc_alibi_slopes");
  float *s1 = EX_ALLOC(float, (size_t)AH *AN *AN), *s2 = EX_ALLOC(float, (size_t)AH *AN *AN);
  ex_fill(s1, (size_t)AH * AN * AN, 4.0f, &seed);
  memcpy(s2, s1, sizeof(float) * AH * AN * AN);
  ex_check(alibi_slice(slopes, s1, 0, AN), "posenc_alibi_add_f32 (1 thread)");
  ex_check(alibi_threaded(slopes, s2, threads), "posenc_alibi_add_f32 (threaded)");
  n_differ = 0;
  for (size_t i = 0; i < (size_t)AH * AN * AN; i++)
    n_differ += memcmp(&s1[i], &s2[i], sizeof(float)) != 0;
  printf(
      "prefill_openmp: alibi heads=%d q=k=%d causal, %d threads vs one call (isa %s): "
      "%zu of %zu elements differ (bound 0): %s\n",
      AH, AN, threads, isa, n_differ, (size_t)AH * AN * AN, n_differ == 0 ? "ok" : "MISMATCH");

  free(q0), free(k0), free(q1), free(k1), free(q2), free(k2), free(s1), free(s2);
  return rope_ok && n_differ == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
