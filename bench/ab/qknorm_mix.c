/* qknorm_mix: the least work of posenc_rope_qknorm's AVX-512 NEOX fold on one head of 128 f32
 * (8 vectors), looped over 40 heads in L1, beside the library's call on the same shape
 * (32 Q + 8 K heads x 128, in place) at 1, 16 and 512 tokens, in one process. The mixes, per
 * head (ns per head, best of 9 runs of 10^5 rounds over the 40 heads):
 *   all:       8 loads, the squares (8 mul/FMA in two chains, their sum stored), x * inv (8
 *              mul, inv broadcast from an earlier head's stored sum), the folded rotation
 *              (8 mul + 8 FMA), 8 stores: 32 FMA-pipe operations, the count a head needs;
 *   no_stores: the same, the 8 results added together and one vector stored;
 *   squares:   loads and squares only (the sums' phase without its reduction);
 *   rotation:  loads, x * inv, the rotation and the stores (the second phase).
 * posenc: ns per head of posenc_rope_qknorm (median of 21 rounds). On Zen 5 (two 512-bit FMA
 * pipes) `all` ran at 3.8 ns per head, the same as `no_stores`: the stores do not compete
 * with the FMAs there. Not built by CMake (it needs AVX-512 and a build of the library): from
 * the repository root, with a build in build/:
 *   gcc -O2 -march=native -Iinclude -Ibuild/include bench/ab/qknorm_mix.c -o qknorm_mix \
 *       -Lbuild -lposenc -Wl,-rpath,$PWD/build -lm
 *   taskset -c 1 ./qknorm_mix */
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "posenc.h"

enum { H = 40, QH = 32, KH = 8, D = 128, ROUNDS = 21 };

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

static float buf[H * D] __attribute__((aligned(64)));
static float out[H * D] __attribute__((aligned(64)));
static float sums[H * 16] __attribute__((aligned(64)));

#define LOAD8(x)                                                   \
  __m512 v0 = _mm512_load_ps(x), v1 = _mm512_load_ps(x + 16);      \
  __m512 v2 = _mm512_load_ps(x + 32), v3 = _mm512_load_ps(x + 48); \
  __m512 v4 = _mm512_load_ps(x + 64), v5 = _mm512_load_ps(x + 80); \
  __m512 v6 = _mm512_load_ps(x + 96), v7 = _mm512_load_ps(x + 112);
#define SQUARES(h)                                                 \
  {                                                                \
    __m512 s0 = _mm512_mul_ps(v0, v0), s1 = _mm512_mul_ps(v1, v1); \
    s0 = _mm512_fmadd_ps(v2, v2, s0);                              \
    s1 = _mm512_fmadd_ps(v3, v3, s1);                              \
    s0 = _mm512_fmadd_ps(v4, v4, s0);                              \
    s1 = _mm512_fmadd_ps(v5, v5, s1);                              \
    s0 = _mm512_fmadd_ps(v6, v6, s0);                              \
    s1 = _mm512_fmadd_ps(v7, v7, s1);                              \
    _mm512_store_ps(sums + 16 * (h), _mm512_add_ps(s0, s1));       \
  }
/* (u, v) = (x_u inv, x_v inv); y_u = u pc - v qs, y_v = v rc + u ss */
#define FOLD(u, v, k)                                                     \
  {                                                                       \
    const __m512 a = _mm512_mul_ps(u, inv), b = _mm512_mul_ps(v, inv);    \
    u = _mm512_fnmadd_ps(b, f[4 * k + 1], _mm512_mul_ps(a, f[4 * k]));    \
    v = _mm512_fmadd_ps(a, f[4 * k + 3], _mm512_mul_ps(b, f[4 * k + 2])); \
  }
#define ROTATE(h)                                                      \
  {                                                                    \
    const __m512 inv = _mm512_set1_ps(sums[16 * (((h) + H - 8) % H)]); \
    FOLD(v0, v4, 0) FOLD(v1, v5, 1) FOLD(v2, v6, 2) FOLD(v3, v7, 3)    \
  }
#define STORE8(y)                                           \
  _mm512_store_ps(y, v0), _mm512_store_ps(y + 16, v1);      \
  _mm512_store_ps(y + 32, v2), _mm512_store_ps(y + 48, v3); \
  _mm512_store_ps(y + 64, v4), _mm512_store_ps(y + 80, v5); \
  _mm512_store_ps(y + 96, v6), _mm512_store_ps(y + 112, v7);
#define STORE_SUM(y)                                                                            \
  _mm512_store_ps(y, _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(v0, v1), _mm512_add_ps(v2, v3)), \
                                   _mm512_add_ps(_mm512_add_ps(v4, v5), _mm512_add_ps(v6, v7))));

/* One mix: sq (squares), rot (rotation), st (8 stores, else the results' sum stored). The
 * 16 factor vectors stay in registers (an empty asm keeps them from being folded). */
#define MIX(name, sq, rot, st)                                            \
  __attribute__((noinline)) static void name(long rounds) {               \
    __m512 f[16];                                                         \
    for (int i = 0; i < 16; ++i) f[i] = _mm512_set1_ps(0.9f + 0.01f * i); \
    for (int i = 0; i < 16; ++i) __asm__ volatile("" : "+v"(f[i]));       \
    for (long r = 0; r < rounds; ++r) {                                   \
      for (int h = 0; h < H; ++h) {                                       \
        const float *x = buf + h * D;                                     \
        float *y = out + h * D;                                           \
        LOAD8(x)                                                          \
        if (sq) SQUARES(h)                                                \
        if (rot) ROTATE(h)                                                \
        if (st) {                                                         \
          STORE8(y)                                                       \
        } else if (rot) {                                                 \
          STORE_SUM(y)                                                    \
        }                                                                 \
      }                                                                   \
      __asm__ volatile("" ::: "memory");                                  \
    }                                                                     \
  }
MIX(mix_all, 1, 1, 1)
MIX(mix_no_stores, 1, 1, 0)
MIX(mix_squares, 1, 0, 0)
MIX(mix_rotation, 0, 1, 1)

static void time_mix(const char *name, void (*fn)(long)) {
  const long rounds = 100000;
  double best = 1e9;
  for (int rep = 0; rep < 9; ++rep) {
    const double t0 = now();
    fn(rounds);
    const double ns = (now() - t0) * 1e9 / ((double)rounds * H);
    if (ns < best) best = ns;
  }
  printf("mix %-10s %6.2f ns/head\n", name, best);
}

static int cmp(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void time_posenc(size_t tokens) {
  posenc_rope_plan *plan = NULL;
  if (posenc_rope_plan_create(&plan, D, 10000.0, 1.0) != POSENC_OK) exit(1);
  float *q = aligned_alloc(64, tokens * QH * D * sizeof(float));
  float *k = aligned_alloc(64, tokens * KH * D * sizeof(float));
  float wq[D], wk[D];
  int32_t *pos = malloc(tokens * sizeof *pos);
  if (!q || !k || !pos) exit(1);
  for (size_t i = 0; i < tokens * QH * D; ++i) q[i] = 0.5f + (float)(i % 97) * 0.01f;
  for (size_t i = 0; i < tokens * KH * D; ++i) k[i] = 0.5f + (float)(i % 89) * 0.01f;
  for (int d = 0; d < D; ++d) wq[d] = wk[d] = 0.9f + 0.001f * (float)d;
  for (size_t t = 0; t < tokens; ++t) pos[t] = 1000 + (int32_t)t;
  const posenc_rope_view qv = {q, POSENC_DTYPE_F32, QH, QH * D, D, 0};
  const posenc_rope_view kv = {k, POSENC_DTYPE_F32, KH, KH * D, D, 0};
  const posenc_qk_norm qn = {wq, 1e-6f, 0}, kn = {wk, 1e-6f, 0};
  const long calls = tokens >= 512 ? 20 : tokens >= 16 ? 500 : 5000;
  double ns[ROUNDS];
  for (int r = 0; r < ROUNDS; ++r) {
    const double t0 = now();
    for (long c = 0; c < calls; ++c)
      if (posenc_rope_qknorm(plan, D, 1, tokens, pos, 0, &qv, &qv, &qn, &kv, &kv, &kn,
                             POSENC_ROPE_NEOX) != POSENC_OK)
        exit(1);
    ns[r] = (now() - t0) * 1e9 / ((double)calls * tokens * H);
  }
  qsort(ns, ROUNDS, sizeof *ns, cmp);
  printf("posenc tokens:%-4zu  %6.2f ns/head (%s)\n", tokens, ns[ROUNDS / 2],
         posenc_isa_name(posenc_active_isa()));
  free(q);
  free(k);
  free(pos);
  posenc_rope_plan_destroy(plan);
}

int main(void) {
  for (int i = 0; i < H * D; ++i) buf[i] = (float)(i % 97) * 0.01f;
  for (int i = 0; i < H * 16; ++i) sums[i] = 0.5f;
  time_mix("all", mix_all);
  time_mix("no_stores", mix_no_stores);
  time_mix("squares", mix_squares);
  time_mix("rotation", mix_rotation);
  time_posenc(1);
  time_posenc(16);
  time_posenc(512);
  return 0;
}
