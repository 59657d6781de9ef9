/* softmax_rows: ns per row of posenc_softmax in place on heads x Q x K f32 scores, at sizes
 * from L2 to DRAM, to split the bench's 32 x 512 x 512 KV-cache row (softmax_cases.cc) into
 * what its rows cost with the scores in cache and what the memory adds. Masks: kvcache (the
 * bench's: [Q, K] f32 shared by the heads, queries of each half see the keys of their half,
 * 20% of the cells hidden at random), twoseq (the same without the random holes), dense (a
 * mask of zeros: every key visible through the masked path), none (no mask). Each is the best
 * of 200 calls (thread CPU time), three rounds. Arguments: heads (32), K (512), Q (512).
 * Zen 5, avx512, 32 heads x 512 keys: kvcache 57-59 ns per row at Q = 8-16 (512 KiB-1 MiB,
 * in L2) and 76 ns at Q = 512 (32 MiB); none 68-70 / 76. The KV-cache row's visible half at
 * its operation mix (limit_mix/softmax_f32/avx512/mask:kvcache, 8.3 G/s) is 31 ns. Not built
 * by CMake: from the repository root, with a build in build/:
 *   gcc -O2 -Iinclude -Ibuild/include bench/ab/softmax_rows.c -o softmax_rows \
 *       -Lbuild -lposenc -Wl,-rpath,$PWD/build -lm
 *   taskset -c 1 ./softmax_rows 32 512 8 */
#define _ISOC11_SOURCE
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "posenc.h"

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(int argc, char **argv) {
  const size_t heads = argc > 1 ? (size_t)atoi(argv[1]) : 32;
  const size_t nk = argc > 2 ? (size_t)atoi(argv[2]) : 512;
  const size_t nq = argc > 3 ? (size_t)atoi(argv[3]) : 512;
  if (!heads || !nk || !nq) return 2;
  /* 64-byte aligned, as the bench's buffers (sizes rounded up to whole lines) */
  float *x = aligned_alloc(64, (heads * nq * nk * sizeof(float) + 63) / 64 * 64);
  float *masks[3];
  for (int m = 0; m < 3; ++m)
    masks[m] = aligned_alloc(64, (nq * nk * sizeof(float) + 63) / 64 * 64);
  if (!x || !masks[0] || !masks[1] || !masks[2]) return 1;
  srand(17);
  for (size_t i = 0; i < nq; ++i)
    for (size_t j = 0; j < nk; ++j) {
      const int same = (2 * i >= nq) == (2 * j >= nk);
      masks[0][i * nk + j] = same && rand() % 100 >= 20 ? 0.0f : -INFINITY;
      masks[1][i * nk + j] = same ? 0.0f : -INFINITY;
      masks[2][i * nk + j] = 0.0f;
    }
  for (size_t i = 0; i < heads * nq * nk; ++i) x[i] = (float)(rand() % 1000) * 0.01f;
  static const char *const names[] = {"kvcache", "twoseq", "dense", "none"};
  for (int round = 0; round < 3; ++round)
    for (int m = 0; m < 4; ++m) {
      posenc_softmax_params p = POSENC_SOFTMAX_PARAMS_INIT;
      p.scale = 0.0883883f;
      if (m < 3) {
        p.mask = masks[m];
        p.mask_dtype = POSENC_DTYPE_F32;
      }
      const posenc_scores_view v = {x, POSENC_DTYPE_F32, nq * nk, nk, 0};
      double best = INFINITY;
      for (int it = 0; it < 200; ++it) {
        const double t0 = now_ns();
        if (posenc_softmax(&p, heads, nq, nk, &v, &v) != POSENC_OK) return 1;
        const double t = now_ns() - t0;
        if (t < best) best = t;
      }
      printf("%-8s heads:%zu q:%zu k:%zu  %6.1f ns/row\n", names[m], heads, nq, nk,
             best / (double)(heads * nq));
    }
  for (int m = 0; m < 3; ++m) free(masks[m]);
  free(x);
  return 0;
}
