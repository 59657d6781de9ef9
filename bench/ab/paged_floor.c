/* paged_floor: the bench row rope_out_paged_f32_f16_neox/avx512/tokens:512 (posenc_rope_out_slots:
 * 512 tokens x 8 heads x 128 f32 rotated NEOX into an f16 cache [blocks, 16, 8, 128] of 4x the
 * tokens' blocks, blocks of 16 consecutive cells taken at random) beside two loops over the same
 * slots and bytes, in one process (best of 300 calls each, three rounds, us per call):
 *   ideal: the rotation with each token's cos/sin given (a table made beforehand: no per-token
 *          trigonometry, no call path, no checks), two loads, a multiply and an FMA per
 *          result vector, VCVTPS2PH and a 256-bit store;
 *   copy:  the same f32 -> f16 conversion through the slots with no arithmetic at all;
 *   posenc: posenc_rope_out_slots on the same data (positions 0..511).
 * Compare with limit_copy/bytes:3145728 of the bench (the 2 MiB read and 1 MiB written). Zen 5:
 * ideal 34-37 us, copy 29-33, posenc 42-48, with limit_copy at 26.4-29.8 us in the same hour;
 * the rest of posenc's time is prepare (14%: 64 cos/sin per token, shared by 8 heads), the
 * driver (7%) and the slots' check (2%) (perf). Not built by CMake (it needs AVX-512 and a
 * build of the library): from the repository root, with a build in build/:
 *   gcc -O2 -march=native -Iinclude -Ibuild/include bench/ab/paged_floor.c -o paged_floor \
 *       -Lbuild -lposenc -Wl,-rpath,$PWD/build -lm
 *   taskset -c 1 ./paged_floor */
#define _ISOC11_SOURCE
#define _POSIX_C_SOURCE 200809L
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "posenc.h"

enum { T = 512, KH = 8, D = 128, BLK = 16 };

static float *src, *tab_c, *tab_s;
static uint16_t *cache;
static int64_t slots[T];

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

static inline uint16_t *cell(int t, int h) { return cache + ((size_t)slots[t] * KH + h) * D; }
static inline const float *head(int t, int h) { return src + ((size_t)t * KH + h) * D; }

__attribute__((noinline)) static void ideal(void) {
  for (int t = 0; t < T; ++t) {
    __m512 cv[4], sv[4];
    for (int b = 0; b < 4; ++b) {
      cv[b] = _mm512_load_ps(tab_c + t * 64 + 16 * b);
      sv[b] = _mm512_load_ps(tab_s + t * 64 + 16 * b);
    }
    for (int h = 0; h < KH; ++h) {
      const float *x = head(t, h);
      uint16_t *y = cell(t, h);
      for (int b = 0; b < 4; ++b) {
        const __m512 lo = _mm512_load_ps(x + 16 * b), hi = _mm512_load_ps(x + 64 + 16 * b);
        const __m512 ylo = _mm512_fmsub_ps(lo, cv[b], _mm512_mul_ps(hi, sv[b]));
        const __m512 yhi = _mm512_fmadd_ps(hi, cv[b], _mm512_mul_ps(lo, sv[b]));
        _mm256_storeu_si256((__m256i *)(y + 16 * b),
                            _mm512_cvtps_ph(ylo, _MM_FROUND_TO_NEAREST_INT));
        _mm256_storeu_si256((__m256i *)(y + 64 + 16 * b),
                            _mm512_cvtps_ph(yhi, _MM_FROUND_TO_NEAREST_INT));
      }
    }
  }
}

__attribute__((noinline)) static void copy(void) {
  for (int t = 0; t < T; ++t)
    for (int h = 0; h < KH; ++h) {
      const float *x = head(t, h);
      uint16_t *y = cell(t, h);
      for (int b = 0; b < 8; ++b)
        _mm256_storeu_si256((__m256i *)(y + 16 * b),
                            _mm512_cvtps_ph(_mm512_load_ps(x + 16 * b), _MM_FROUND_TO_NEAREST_INT));
    }
}

int main(void) {
  const int blocks = 4 * T / BLK;
  const size_t cache_bytes = (size_t)blocks * BLK * KH * D * sizeof(uint16_t);
  src = aligned_alloc(64, (size_t)T * KH * D * sizeof(float));
  tab_c = aligned_alloc(64, (size_t)T * 64 * sizeof(float));
  tab_s = aligned_alloc(64, (size_t)T * 64 * sizeof(float));
  cache = aligned_alloc(64, cache_bytes);
  int *table = malloc(blocks * sizeof *table);
  if (!src || !tab_c || !tab_s || !cache || !table) return 1;
  memset(cache, 0, cache_bytes);
  for (size_t i = 0; i < (size_t)T * KH * D; ++i) src[i] = (float)(i % 97) * 0.01f;
  for (int i = 0; i < T * 64; ++i) {
    tab_c[i] = cosf((float)i * 0.01f);
    tab_s[i] = sinf((float)i * 0.01f);
  }
  /* a sequence's block table: the blocks in a random order */
  for (int i = 0; i < blocks; ++i) table[i] = i;
  srand(5);
  for (int i = blocks - 1; i > 0; --i) {
    const int j = rand() % (i + 1), k = table[i];
    table[i] = table[j];
    table[j] = k;
  }
  for (int t = 0; t < T; ++t) slots[t] = (int64_t)table[t / BLK] * BLK + t % BLK;
  posenc_rope_plan *plan = NULL;
  if (posenc_rope_plan_create(&plan, D, 10000.0, 1.0) != POSENC_OK) return 1;
  int32_t pos[T];
  for (int t = 0; t < T; ++t) pos[t] = t;
  const posenc_rope_view sv = {src, POSENC_DTYPE_F32, KH, KH * D, D, 0};
  const posenc_rope_view dv = {cache, POSENC_DTYPE_F16, KH, KH * D, D, 0};
  const posenc_slots sl = {slots, 1, (size_t)blocks * BLK};
  for (int round = 0; round < 3; ++round) {
    double best[3] = {INFINITY, INFINITY, INFINITY};
    for (int it = 0; it < 300; ++it) {
      double t0 = now_ns();
      ideal();
      double t1 = now_ns();
      copy();
      double t2 = now_ns();
      if (posenc_rope_out_slots(plan, D, T, pos, 0, &sv, &dv, &sl, POSENC_ROPE_NEOX) != POSENC_OK)
        return 1;
      double t3 = now_ns();
      if (t1 - t0 < best[0]) best[0] = t1 - t0;
      if (t2 - t1 < best[1]) best[1] = t2 - t1;
      if (t3 - t2 < best[2]) best[2] = t3 - t2;
    }
    printf("ideal %5.1f us  copy %5.1f us  posenc %5.1f us\n", best[0] / 1e3, best[1] / 1e3,
           best[2] / 1e3);
  }
  posenc_rope_plan_destroy(plan);
  free(table);
  free(cache);
  free(tab_s);
  free(tab_c);
  free(src);
  return 0;
}
