/*
 * A paged f16 KV cache written with slots, as vLLM's reshape_and_cache(slot_mapping) and
 * llama.cpp's cache cells place keys: each token's rotated K goes to the cell its slot names,
 * in one call per step, whatever the order of the cells.
 *
 * A sequence of 40 tokens (a prefill of 24, then 16 decode steps) through a cache of
 * 16 blocks of 8 cells ([blocks, block_size, kv_heads, D], 2 KV heads of 64, theta 10000;
 * vLLM's layout): the sequence's block table takes 5 blocks in a shuffled order, and a
 * padded prefill slot (-1) is skipped, as vLLM pads a batch. The keys come from an f32
 * projection and are rotated by posenc_rope_out_slots straight into the f16 cells.
 *
 * The check: every key the sequence wrote must be the double-precision rotation of its
 * projection, rounded to f16 (within one f16 rounding of float rotation error), read back
 * through the block table; every cell the sequence does not own must be untouched.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <posenc.h>

#include "example_util.h"

enum { PREFILL = 24, STEPS = 16, N = PREFILL + STEPS, BLOCKS = 16, BLOCK = 8, HK = 2, D = 64 };
enum { CELLS = BLOCKS * BLOCK, KV = HK * D };
static const double kTheta = 10000.0;

int main(void) {
  uint32_t seed = 11;
  /* The sequence's block table: 5 blocks of the 16, in a shuffled order. */
  const int64_t table[5] = {9, 2, 14, 5, 11};
  float *k_proj = EX_ALLOC(float, N *KV); /* each step's K projection, row t for token t */
  ex_fill(k_proj, (size_t)N * KV, 1.0f, &seed);
  uint16_t *cache = EX_ALLOC(uint16_t, (size_t)CELLS * KV);
  for (int i = 0; i < CELLS * KV; i++) cache[i] = 0x7e00u; /* NaN: "never written" */

  posenc_rope_plan *plan;
  ex_check(posenc_rope_plan_create(&plan, D, kTheta, 1.0), "posenc_rope_plan_create");
  /* The prefill (with one padded slot: the batch's padding token, skipped), then one token
   * per step. slot = block_table[t / BLOCK] * BLOCK + t % BLOCK (vLLM's slot_mapping). */
  int64_t slots[PREFILL + 1];
  for (int start = 0; start < N;) {
    const int n = start == 0 ? PREFILL : 1;
    for (int i = 0; i < n; i++) {
      const int t = start + i;
      slots[i] = table[t / BLOCK] * BLOCK + t % BLOCK;
    }
    int n_call = n;
    if (start == 0) slots[n_call++] = -1; /* a padding token: no cell */
    float pad_row[KV] = {0};
    const posenc_rope_view src = {
        start == 0 ? k_proj : k_proj + (size_t)start * KV, POSENC_DTYPE_F32, HK, KV, D, 0};
    const posenc_rope_view dst = {cache, POSENC_DTYPE_F16, HK, KV, D, 0};
    const posenc_slots s = {slots, 1, CELLS};
    if (start == 0) {
      /* The padded source: the prefill's rows then a zero row. */
      float *padded = EX_ALLOC(float, (size_t)(PREFILL + 1) * KV);
      memcpy(padded, k_proj, sizeof(float) * PREFILL * KV);
      memcpy(padded + PREFILL * KV, pad_row, sizeof pad_row);
      const posenc_rope_view psrc = {padded, POSENC_DTYPE_F32, HK, KV, D, 0};
      int32_t pos[PREFILL + 1];
      for (int i = 0; i <= PREFILL; i++) pos[i] = i < PREFILL ? i : 0;
      ex_check(
          posenc_rope_out_slots(plan, D, (size_t)n_call, pos, 0, &psrc, &dst, &s, POSENC_ROPE_NEOX),
          "posenc_rope_out_slots (prefill)");
      free(padded);
    } else {
      ex_check(posenc_rope_out_slots(plan, D, 1, NULL, start, &src, &dst, &s, POSENC_ROPE_NEOX),
               "posenc_rope_out_slots (decode step)");
    }
    start += n;
  }
  posenc_rope_plan_destroy(plan);

  /* Read the sequence back through its block table. */
  double worst = 0.0;
  int owned[CELLS] = {0};
  for (int t = 0; t < N; t++) {
    const int cell = (int)(table[t / BLOCK] * BLOCK + t % BLOCK);
    owned[cell] = 1;
    for (int g = 0; g < HK; g++) {
      const float *x = k_proj + (size_t)t * KV + g * D;
      for (int i = 0; i < D / 2; i++) {
        const double a = t * pow(kTheta, -2.0 * i / D), c = cos(a), s = sin(a);
        const double u = x[i], v = x[i + D / 2];
        const double want[2] = {u * c - v * s, v * c + u * s};
        for (int j = 0; j < 2; j++) {
          const double got = ex_f16_to_f32(cache[(size_t)cell * KV + g * D + i + j * D / 2]);
          const double err = fabs(got - want[j]) / (fabs(want[j]) * 0x1p-11 + 0x1p-24);
          if (!(err <= 1.0 + 1e-3)) {
            fprintf(stderr, "token %d head %d element %d: %g, want %g\n", t, g, i, got, want[j]);
            return EXIT_FAILURE;
          }
          if (err > worst) worst = err;
        }
      }
    }
  }
  for (int cell = 0; cell < CELLS; cell++)
    for (int e = 0; e < KV && !owned[cell]; e++)
      if (cache[(size_t)cell * KV + e] != 0x7e00u) {
        fprintf(stderr, "cell %d (not the sequence's) was written\n", cell);
        return EXIT_FAILURE;
      }
  printf(
      "kv_cache_paged: %d keys in %d shuffled blocks of %d cells, padding skipped: every "
      "key within %.3f f16 roundings of the double rotation, other cells untouched\n",
      N, 5, BLOCK, worst);
  free(k_proj);
  free(cache);
  return EXIT_SUCCESS;
}
