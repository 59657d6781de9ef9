/* softmax_floor: the bench's 32 x 512 x 512 softmax with the KV-cache mask (softmax_cases.cc:
 * f32 scores in place, an f32 [Q, K] mask shared by the heads, queries of each half seeing
 * the keys of their half, 20% of the cells hidden at random) beside the plainest loops that
 * do its least work on the same bytes, all in one process, their repetitions interleaved
 * (this host's bandwidth drifts more than 5% in minutes: only ratios taken together mean
 * anything). Per case, the median of ROUNDS rounds of:
 *   rmw:    the bench's limit_rmw loops on the same bytes (256-bit loads, an add of 0, 256-bit
 *           stores, 4 vectors a step; none / 2 KiB / 16 KiB software prefetch ahead): the
 *           fastest of the three in each round;
 *   ideal:  the softmax with nothing but its arithmetic: each query row's visible extent
 *           known beforehand (no lookup), float sums (no double), no NaN or subnormal care,
 *           three passes per row in place (t = scale x + mask and its max; e = exp(t - max)
 *           by posenc's polynomial and its sum; e / sum), the hidden columns written 0;
 *   ideal_pf: the same with the next rows' scores and mask prefetched 3 rows ahead (as
 *           posenc does), a line per 64 bytes during pass 2;
 *   posenc: posenc_softmax on the same scores and mask.
 * Printed: ns per row, and each loop's time over rmw's (limit_rmw's fraction is the inverse).
 * The 0.5x limit_rmw asks posenc for at most 2x rmw's time. Arguments: heads (32).
 * Not built by CMake (it needs AVX-512 and a build of the library): from the repository
 * root, with a build in build/:
 *   gcc -O2 -mavx512f -mavx512dq -mavx512bw -mavx512vl -mfma -Iinclude -Ibuild/include \
 *       bench/ab/softmax_floor.c -o softmax_floor -Lbuild -lposenc -Wl,-rpath,$PWD/build -lm
 *   taskset -c 1 ./softmax_floor 32 */
#define _ISOC11_SOURCE
#define _POSIX_C_SOURCE 200809L
#include <immintrin.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "posenc.h"

enum { Q = 512, K = 512, ROUNDS = 15 };
static const float kScale = 0.08838834764831845f;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}
static int cmpd(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* n floats read and written in place, prefetching pf bytes ahead (0: none). */
static void rmw(float *p, size_t n, size_t pf) {
  const __m256 zero = _mm256_setzero_ps(); /* x + 0: the values stay (-0 becomes +0) */
  for (size_t i = 0; i < n; i += 32) {
    if (pf)
      for (size_t k = 0; k < 32; k += 16) __builtin_prefetch(p + i + k + pf / 4, 1, 3);
    for (int k = 0; k < 32; k += 8) {
      const __m256 v = _mm256_load_ps(p + i + k);
      _mm256_store_ps(p + i + k, _mm256_add_ps(v, zero));
    }
  }
}

/* posenc's exp polynomial (kernels/softmax.h), t >= -87.3 or 0. */
static inline __m512 exp_ps(__m512 t) {
  const __m512 magic = _mm512_set1_ps(0x1.8p23f), l2e = _mm512_set1_ps(0x1.715476p+0f);
  const __m512 n = _mm512_sub_ps(_mm512_fmadd_ps(t, l2e, magic), magic);
  const __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0x1.62e43p-1f), t);
  __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(0x1.105e86p-7f), r, _mm512_set1_ps(0x1.573322p-5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0x1.5557c8p-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0x1.fffde8p-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  const __mmask16 under = _mm512_cmp_ps_mask(t, _mm512_set1_ps(-87.33654f), _CMP_LT_OQ);
  return _mm512_maskz_scalef_ps(~under, p, n);
}

/* One row of the kvcache softmax, visible columns [lo, lo + 256) of K, in place. pf: the
 * row 3 ahead and its mask row (NULL: no prefetch). */
static inline void ideal_row(float *x, const float *m, size_t lo, const float *pfx,
                             const float *pfm) {
  __m512 mx0 = _mm512_set1_ps(-INFINITY), mx1 = mx0;
  for (size_t j = lo; j < lo + K / 2; j += 32) {
    const __m512 t0 =
        _mm512_fmadd_ps(_mm512_load_ps(x + j), _mm512_set1_ps(kScale), _mm512_load_ps(m + j));
    const __m512 t1 = _mm512_fmadd_ps(_mm512_load_ps(x + j + 16), _mm512_set1_ps(kScale),
                                      _mm512_load_ps(m + j + 16));
    _mm512_store_ps(x + j, t0);
    _mm512_store_ps(x + j + 16, t1);
    mx0 = _mm512_max_ps(mx0, t0);
    mx1 = _mm512_max_ps(mx1, t1);
  }
  const __m512 mx = _mm512_set1_ps(_mm512_reduce_max_ps(_mm512_max_ps(mx0, mx1)));
  __m512 s0 = _mm512_setzero_ps(), s1 = s0;
  for (size_t j = lo, q = 0; j < lo + K / 2; j += 32, q += 2) {
    if (pfx) {
      __builtin_prefetch(pfx + 2 * q * 16, 1, 3);
      __builtin_prefetch(pfx + (2 * q + 1) * 16, 1, 3);
      __builtin_prefetch(pfx + (2 * q + 2) * 16, 1, 3);
      __builtin_prefetch(pfx + (2 * q + 3) * 16, 1, 3);
      __builtin_prefetch(pfm + lo + q * 16, 0, 3);
      __builtin_prefetch(pfm + lo + (q + 1) * 16, 0, 3);
    }
    const __m512 e0 = exp_ps(_mm512_sub_ps(_mm512_load_ps(x + j), mx));
    const __m512 e1 = exp_ps(_mm512_sub_ps(_mm512_load_ps(x + j + 16), mx));
    _mm512_store_ps(x + j, e0);
    _mm512_store_ps(x + j + 16, e1);
    s0 = _mm512_add_ps(s0, e0);
    s1 = _mm512_add_ps(s1, e1);
  }
  const __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(_mm512_add_ps(s0, s1)));
  for (size_t j = lo; j < lo + K / 2; j += 16)
    _mm512_store_ps(x + j, _mm512_mul_ps(_mm512_load_ps(x + j), inv));
  const size_t z = lo ? 0 : K / 2; /* the hidden half */
  for (size_t j = z; j < z + K / 2; j += 8) _mm256_store_ps(x + j, _mm256_setzero_ps());
}

static void ideal(float *x, const float *mask, size_t heads, int pf) {
  const size_t rows = heads * Q;
  for (size_t r = 0; r < rows; ++r) {
    const size_t q = r % Q, lo = 2 * q >= Q ? K / 2 : 0;
    const size_t r3 = r + 3 < rows ? r + 3 : r;
    ideal_row(x + r * K, mask + q * K, lo, pf ? x + r3 * K : NULL, pf ? mask + (r3 % Q) * K : NULL);
  }
}

int main(int argc, char **argv) {
  const size_t heads = argc > 1 ? (size_t)atoi(argv[1]) : 32;
  if (!heads) return 2;
  const size_t n = heads * Q * K;
  float *x = aligned_alloc(64, n * sizeof(float));
  float *mask = aligned_alloc(64, (size_t)Q * K * sizeof(float));
  if (!x || !mask) return 1;
  srand(17);
  for (size_t i = 0; i < Q; ++i)
    for (size_t j = 0; j < K; ++j) {
      const int same = (2 * i >= Q) == (2 * j >= K);
      mask[i * K + j] = same && rand() % 100 >= 20 ? 0.0f : -INFINITY;
    }
  for (size_t i = 0; i < n; ++i) x[i] = (float)(rand() % 1000) * 0.01f;
  posenc_softmax_params p = POSENC_SOFTMAX_PARAMS_INIT;
  p.scale = kScale;
  p.mask = mask;
  p.mask_dtype = POSENC_DTYPE_F32;
  const posenc_scores_view v = {x, POSENC_DTYPE_F32, (size_t)Q * K, K, 0};
  enum { C = 4 };
  static const char *const names[C] = {"rmw", "ideal", "ideal_pf", "posenc"};
  double t[C][ROUNDS];
  for (int round = 0; round < ROUNDS; ++round)
    for (int c = 0; c < C; ++c) {
      double best = INFINITY;
      for (int it = 0; it < 3; ++it) { /* the rmw loops: best of three; others 3 calls */
        const double t0 = now();
        if (c == 0)
          rmw(x, n, it == 0 ? 0 : it == 1 ? 2048 : 16384);
        else if (c == 1 || c == 2)
          ideal(x, mask, heads, c == 2);
        else if (posenc_softmax(&p, heads, Q, K, &v, &v) != POSENC_OK)
          return 1;
        const double dt = now() - t0;
        if (dt < best) best = dt;
      }
      t[c][round] = best;
    }
  double med[C];
  for (int c = 0; c < C; ++c) {
    qsort(t[c], ROUNDS, sizeof(double), cmpd);
    med[c] = t[c][ROUNDS / 2];
  }
  printf("heads:%zu q:%d k:%d (%.1f MiB)\n", heads, Q, K, n * 4.0 / (1 << 20));
  for (int c = 0; c < C; ++c)
    printf("  %-9s %8.1f us  %6.1f ns/row  %.3fx rmw's time (%.3f of limit_rmw)\n", names[c],
           med[c] * 1e6, med[c] * 1e9 / (heads * Q), med[c] / med[0], med[0] / med[c]);
  free(mask);
  free(x);
  return 0;
}
