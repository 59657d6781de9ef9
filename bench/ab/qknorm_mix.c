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
 * The library's structure without its call path (struct_*, ns per head over T tokens of 32 Q
 * + 8 K heads in place, best of 9): per view of a token, its 16 folded factors (w * cos/sin),
 * the sums of its heads (double reduction, as norm_sum_sq_), their invs in vectors of 16
 * (square roots, divisions), then the rotation of its heads:
 *   two_phase: views in turn, each the two phases (as rope_simd.h);
 *   pipelined: the same work interleaved across views and tokens: the K sums of a token
 *              among its Q rotations, the next token's Q sums among its K rotations, so that
 *              no view's rotation waits for its own sums;
 *   ahead:     each view's sums and invs formed before the rotations of the view before it;
 *   one_pass:  each head loaded once into registers, its inv formed in scalar from their
 *              squares (1 / sqrtf of the mean), then rotated: every head waits for its own
 *              reduction, square root and division;
 *   late:      one pass too, but x rotated first and the 8 results multiplied by inv, so that
 *              only those 8 multiplies wait for it; late_f: the same with the lanes of the
 *              squares added in float; late_rsqrt: late_f's sum added across the vector and
 *              inv by VRSQRT14PS and a Newton step (outside the library's numerics).
 * Tokens 1, 16 and 512 (20 KiB in L1, 320 KiB in L2, 10 MiB in L3: the bench row's size).
 * posenc: ns per head of posenc_rope_qknorm (median of 21 rounds). On Zen 5 (two 512-bit FMA
 * pipes) `all` ran at 3.8 ns per head, the same as `no_stores`: the stores do not compete
 * with the FMAs there. Seven runs: two_phase at 6.6-7.4 / 6.9-7.7 ns per head (1 / 16
 * tokens), pipelined at 10.3-11.5 / 8.7-10.1 (slower), ahead at 6.1-7.0 / 7.2-7.7 (16 tokens,
 * 320 KiB in L2: as two_phase), one_pass at 10.9-12.4 / 11.2-12.9 (slower), posenc 8.7-8.9:
 * the library is 1.2-1.3x its structure's own floor, which is 1.8-1.9x `all`. At 512 tokens
 * (two runs): two_phase 7.9-8.4, ahead 9.0-9.1, late 8.2-8.3, late_f 7.4, late_rsqrt 6.8-7.0,
 * posenc 10.5-12.0; at 1 / 16 tokens late 7.4-7.7, late_f 6.4-6.9, late_rsqrt 5.7-6.3.
 * Not built by CMake
 * (it needs AVX-512 and a build of the library): from the repository root, with a build in build/:
 *   gcc -O2 -march=native -Iinclude -Ibuild/include bench/ab/qknorm_mix.c -o qknorm_mix \
 *       -Lbuild -lposenc -Wl,-rpath,$PWD/build -lm
 *   taskset -c 1 ./qknorm_mix */
#include <immintrin.h>
#include <math.h>
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
/* a: the squares of v0..v7 in two chains, added */
#define SQSUM(a)                                                   \
  __m512 a;                                                        \
  {                                                                \
    __m512 s0 = _mm512_mul_ps(v0, v0), s1 = _mm512_mul_ps(v1, v1); \
    s0 = _mm512_fmadd_ps(v2, v2, s0);                              \
    s1 = _mm512_fmadd_ps(v3, v3, s1);                              \
    s0 = _mm512_fmadd_ps(v4, v4, s0);                              \
    s1 = _mm512_fmadd_ps(v5, v5, s1);                              \
    s0 = _mm512_fmadd_ps(v6, v6, s0);                              \
    s1 = _mm512_fmadd_ps(v7, v7, s1);                              \
    a = _mm512_add_ps(s0, s1);                                     \
  }
#define SQUARES(h)                       \
  {                                      \
    SQSUM(a)                             \
    _mm512_store_ps(sums + 16 * (h), a); \
  }
/* y_u = u pc - v qs, y_v = v rc + u ss (the folded rotation, unnormalised) */
#define FOLD_RAW(u, v, k)                                                 \
  {                                                                       \
    const __m512 a = u, b = v;                                            \
    u = _mm512_fnmadd_ps(b, f[4 * k + 1], _mm512_mul_ps(a, f[4 * k]));    \
    v = _mm512_fmadd_ps(a, f[4 * k + 3], _mm512_mul_ps(b, f[4 * k + 2])); \
  }
/* (u, v) = (x_u inv, x_v inv), then rotated */
#define FOLD(u, v, k)                                     \
  {                                                       \
    u = _mm512_mul_ps(u, inv), v = _mm512_mul_ps(v, inv); \
    FOLD_RAW(u, v, k)                                     \
  }
#define SCALE8(inv)                                                                      \
  v0 = _mm512_mul_ps(v0, inv), v1 = _mm512_mul_ps(v1, inv), v2 = _mm512_mul_ps(v2, inv); \
  v3 = _mm512_mul_ps(v3, inv), v4 = _mm512_mul_ps(v4, inv), v5 = _mm512_mul_ps(v5, inv); \
  v6 = _mm512_mul_ps(v6, inv), v7 = _mm512_mul_ps(v7, inv);
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

/* The structure probes' data: T tokens of [32 Q | 8 K] heads, weights, a cos/sin block. */
enum { T_MAX = 512 };
static float sq[T_MAX * QH * D] __attribute__((aligned(64)));
static float sk[T_MAX * KH * D] __attribute__((aligned(64)));
static float wsq[D] __attribute__((aligned(64))), wsk[D] __attribute__((aligned(64)));
static float cs[D] __attribute__((aligned(64))); /* cos of 64 pairs, then sin */

static inline __attribute__((always_inline)) void s_folds(__m512 *f, const float *w) {
  for (int j = 0; j < 4; ++j) {
    const __m512 c = _mm512_load_ps(cs + 16 * j), s = _mm512_load_ps(cs + 64 + 16 * j);
    const __m512 wu = _mm512_load_ps(w + 16 * j), wv = _mm512_load_ps(w + 64 + 16 * j);
    f[4 * j] = _mm512_mul_ps(wu, c);
    f[4 * j + 1] = _mm512_mul_ps(wv, s);
    f[4 * j + 2] = _mm512_mul_ps(wv, c);
    f[4 * j + 3] = _mm512_mul_ps(wu, s);
  }
}
/* Token t's row of view v (0: Q, 1: K) and its heads. */
static inline float *s_row(int t, int v) { return v ? sk + t * KH * D : sq + t * QH * D; }
static inline int s_heads(int v) { return v ? KH : QH; }
/* The lanes of a float accumulator added in double (norm_sum_sq_'s reduction). */
static inline __attribute__((always_inline)) double s_reduce(__m512 a) {
  return _mm512_reduce_add_pd(_mm512_add_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(a)),
                                            _mm512_cvtps_pd(_mm512_extractf32x8_ps(a, 1))));
}
static inline __attribute__((always_inline)) double s_sum(const float *x) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0;
  for (int j = 0; j < D; j += 32) {
    const __m512 u0 = _mm512_load_ps(x + j), u1 = _mm512_load_ps(x + j + 16);
    a0 = _mm512_fmadd_ps(u0, u0, a0);
    a1 = _mm512_fmadd_ps(u1, u1, a1);
  }
  return s_reduce(_mm512_add_ps(a0, a1));
}
static inline __attribute__((always_inline)) void s_invs(const double *sum, float *inv, int nh) {
  const __m512d rd = _mm512_set1_pd(1.0 / D), e = _mm512_set1_pd(1e-6);
  for (int j = 0; j < nh; j += 16) {
    const __m512d lo = _mm512_add_pd(_mm512_mul_pd(_mm512_load_pd(sum + j), rd), e);
    const __m512d hi = _mm512_add_pd(_mm512_mul_pd(_mm512_load_pd(sum + j + 8), rd), e);
    const __m512 m =
        _mm512_insertf32x8(_mm512_castps256_ps512(_mm512_cvtpd_ps(lo)), _mm512_cvtpd_ps(hi), 1);
    _mm512_store_ps(inv + j, _mm512_div_ps(_mm512_set1_ps(1.0f), _mm512_sqrt_ps(m)));
  }
}
static inline __attribute__((always_inline)) void s_rot(float *x, const __m512 *f, float inv_h) {
  const __m512 inv = _mm512_set1_ps(inv_h);
  LOAD8(x)
  FOLD(v0, v4, 0) FOLD(v1, v5, 1) FOLD(v2, v6, 2) FOLD(v3, v7, 3) STORE8(x)
}

/* Views in turn, each in the way of mode (a constant): S_TWO_PHASE the two phases; the others
 * load each head once, its inv formed in scalar from their squares: S_ONE_PASS rotates x * inv,
 * S_LATE rotates x and multiplies the results by inv (the rotation does not wait for the inv),
 * S_LATE_F as S_LATE with the lanes of the squares added in float, S_LATE_RSQRT as S_LATE_F
 * with the lanes added across the vector (no scalar) and inv by VRSQRT14PS and one Newton
 * step (about 2^-22 relative: outside the library's numerics, a measure of the chain alone). */
enum { S_TWO_PHASE, S_ONE_PASS, S_LATE, S_LATE_F, S_LATE_RSQRT };
/* every lane the sum of a's lanes */
static inline __attribute__((always_inline)) __m512 s_all_lanes(__m512 a) {
  a = _mm512_add_ps(a, _mm512_shuffle_f32x4(a, a, 0x4e));
  a = _mm512_add_ps(a, _mm512_shuffle_f32x4(a, a, 0xb1));
  a = _mm512_add_ps(a, _mm512_permute_ps(a, 0x4e));
  return _mm512_add_ps(a, _mm512_permute_ps(a, 0xb1));
}
/* 1 / sqrt(m) by VRSQRT14PS and one Newton step */
static inline __attribute__((always_inline)) __m512 s_rsqrt(__m512 m) {
  const __m512 y = _mm512_rsqrt14_ps(m), hm = _mm512_mul_ps(m, _mm512_set1_ps(0.5f));
  return _mm512_mul_ps(y, _mm512_fnmadd_ps(_mm512_mul_ps(hm, y), y, _mm512_set1_ps(1.5f)));
}
static inline __attribute__((always_inline)) void struct_by_view(long rounds, int tokens,
                                                                 int mode) {
  double sum[32] __attribute__((aligned(64))) = {0};
  float invs[32] __attribute__((aligned(64)));
  for (long r = 0; r < rounds; ++r) {
    for (int t = 0; t < tokens; ++t) {
      for (int v = 0; v < 2; ++v) {
        const int nh = s_heads(v);
        float *x = s_row(t, v);
        __m512 f[16];
        s_folds(f, v ? wsk : wsq);
        if (mode != S_TWO_PHASE) {
          for (int h = 0; h < nh; ++h) {
            float *xh = x + h * D;
            LOAD8(xh)
            SQSUM(sq_acc)
            if (mode != S_ONE_PASS) {
              FOLD_RAW(v0, v4, 0) FOLD_RAW(v1, v5, 1) FOLD_RAW(v2, v6, 2) FOLD_RAW(v3, v7, 3)
            }
            __m512 inv;
            if (mode == S_LATE_RSQRT) {
              inv = s_rsqrt(_mm512_fmadd_ps(s_all_lanes(sq_acc), _mm512_set1_ps(1.0f / D),
                                            _mm512_set1_ps(1e-6f)));
            } else {
              const float mean = mode == S_LATE_F
                                     ? _mm512_reduce_add_ps(sq_acc) * (1.0f / D) + 1e-6f
                                     : (float)(s_reduce(sq_acc) * (1.0 / D) + 1e-6);
              inv = _mm512_set1_ps(1.0f / sqrtf(mean));
            }
            if (mode == S_ONE_PASS) {
              FOLD(v0, v4, 0) FOLD(v1, v5, 1) FOLD(v2, v6, 2) FOLD(v3, v7, 3)
            } else {
              SCALE8(inv)
            }
            STORE8(xh)
          }
          continue;
        }
        for (int h = 0; h < nh; ++h) sum[h] = s_sum(x + h * D);
        s_invs(sum, invs, nh);
        for (int h = 0; h < nh; ++h) s_rot(x + h * D, f, invs[h]);
      }
    }
    __asm__ volatile("" ::: "memory");
  }
}
__attribute__((noinline)) static void struct_two_phase(long rounds, int tokens) {
  struct_by_view(rounds, tokens, S_TWO_PHASE);
}
__attribute__((noinline)) static void struct_one_pass(long rounds, int tokens) {
  struct_by_view(rounds, tokens, S_ONE_PASS);
}
__attribute__((noinline)) static void struct_late(long rounds, int tokens) {
  struct_by_view(rounds, tokens, S_LATE);
}
__attribute__((noinline)) static void struct_late_f(long rounds, int tokens) {
  struct_by_view(rounds, tokens, S_LATE_F);
}
__attribute__((noinline)) static void struct_late_rsqrt(long rounds, int tokens) {
  struct_by_view(rounds, tokens, S_LATE_RSQRT);
}

__attribute__((noinline)) static void struct_pipelined(long rounds, int tokens) {
  double qsum[32] __attribute__((aligned(64))) = {0}, ksum[32] __attribute__((aligned(64))) = {0};
  float qinv[32] __attribute__((aligned(64))), kinv[32] __attribute__((aligned(64)));
  enum { PER = QH / KH };
  for (long r = 0; r < rounds; ++r) {
    for (int h = 0; h < QH; ++h) qsum[h] = s_sum(sq + h * D);
    s_invs(qsum, qinv, QH);
    for (int t = 0; t < tokens; ++t) {
      float *q = s_row(t, 0), *k = s_row(t, 1);
      const float *qn = s_row(t + 1 < tokens ? t + 1 : t, 0);
      __m512 f[16];
      s_folds(f, wsq);
      for (int h = 0; h < QH; ++h) {
        s_rot(q + h * D, f, qinv[h]);
        if (h % PER == 0) ksum[h / PER] = s_sum(k + h / PER * D);
      }
      s_invs(ksum, kinv, KH);
      s_folds(f, wsk);
      for (int h = 0; h < KH; ++h) {
        s_rot(k + h * D, f, kinv[h]);
        for (int j = 0; j < PER; ++j) qsum[h * PER + j] = s_sum(qn + (h * PER + j) * D);
      }
      s_invs(qsum, qinv, QH);
    }
    __asm__ volatile("" ::: "memory");
  }
}

/* each view's sums and invs formed before the rotation of the view before it */
__attribute__((noinline)) static void struct_ahead(long rounds, int tokens) {
  double sum[32] __attribute__((aligned(64))) = {0};
  float inv[2][32] __attribute__((aligned(64)));
  for (long r = 0; r < rounds; ++r) {
    for (int h = 0; h < QH; ++h) sum[h] = s_sum(sq + h * D);
    s_invs(sum, inv[0], QH);
    for (int u = 0; u < 2 * tokens; ++u) {
      const int t = u / 2, v = u % 2, nh = s_heads(v);
      float *x = s_row(t, v);
      if (u + 1 < 2 * tokens) { /* the next unit: token t's K, or token t + 1's Q */
        const int nv = !v, nn = s_heads(nv);
        const float *xn = s_row(nv ? t : t + 1, nv);
        for (int h = 0; h < nn; ++h) sum[h] = s_sum(xn + h * D);
        s_invs(sum, inv[(u + 1) & 1], nn);
      }
      __m512 f[16];
      s_folds(f, v ? wsk : wsq);
      for (int h = 0; h < nh; ++h) s_rot(x + h * D, f, inv[u & 1][h]);
    }
    __asm__ volatile("" ::: "memory");
  }
}

static void time_struct(const char *name, void (*fn)(long, int), int tokens) {
  const long rounds = 400000 / tokens;
  double best = 1e9;
  for (int rep = 0; rep < 9; ++rep) {
    const double t0 = now();
    fn(rounds, tokens);
    const double ns = (now() - t0) * 1e9 / ((double)rounds * tokens * H);
    if (ns < best) best = ns;
  }
  printf("struct %-9s tokens:%-3d %6.2f ns/head\n", name, tokens, best);
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
  for (int i = 0; i < T_MAX * QH * D; ++i) sq[i] = 0.5f + (float)(i % 97) * 0.01f;
  for (int i = 0; i < T_MAX * KH * D; ++i) sk[i] = 0.5f + (float)(i % 89) * 0.01f;
  for (int d = 0; d < D; ++d) {
    wsq[d] = wsk[d] = 0.9f + 0.001f * (float)d;
    cs[d] = d < D / 2 ? 0.8f : 0.6f; /* cos^2 + sin^2 = 1: the norms stay put */
  }
  for (int tokens = 1; tokens <= T_MAX; tokens *= tokens == 1 ? 16 : 32) {
    time_struct("two_phase", struct_two_phase, tokens);
    time_struct("pipelined", struct_pipelined, tokens);
    time_struct("ahead", struct_ahead, tokens);
    time_struct("one_pass", struct_one_pass, tokens);
    time_struct("late", struct_late, tokens);
    time_struct("late_f", struct_late_f, tokens);
    time_struct("late_rsqrt", struct_late_rsqrt, tokens);
  }
  time_posenc(1);
  time_posenc(16);
  time_posenc(512);
  return 0;
}
