/* ideal_loops: posenc's DRAM-sized RoPE calls beside the plainest loops that move the same
 * bytes and do the least work a RoPE of them needs, all in one process, their repetitions
 * interleaved (this host's DRAM bandwidth drifts more than 5% in minutes, so only ratios
 * taken together mean anything). Per case, the median of 21 rounds of:
 *   copy   (rope_out cases): an AVX2 copy of the same bytes, half read and half written with
 *          non-temporal stores (the bench's limit_copy loop avx2/x4_nt);
 *   rmw    (in-place cases): an AVX2 read-modify-write of the same bytes (one add per vector);
 *   ideal: the rotation of 40 heads x 128 of 4096 tokens with cos/sin held in registers (the
 *          same for every token: no per-token cos/sin, no subnormal or NaN handling), the
 *          job's loads, conversions and stores (rope_out: non-temporal, as posenc's streaming
 *          calls store);
 *   posenc: the library call for the same job (positions 1000..5095).
 * Cases: 0 rope_out f32 -> f16, 1 rope_out f32 -> bf16 (avx512bf16), 2 rope_bf16 in place
 * (avx512bf16). Not built by CMake (it needs AVX-512 BF16 and a build of the library): from
 * the repository root, with a build in build/:
 *   gcc -O2 -march=native -Iinclude -Ibuild/include bench/ab/ideal_loops.c -o ideal_loops \
 *       -Lbuild -lposenc -Wl,-rpath,$PWD/build
 *   POSENC_ISA=avx512bf16 taskset -c 1 ./ideal_loops */
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "posenc.h"

enum { T = 4096, H = 40, D = 128, ROUNDS = 21 };
static const size_t N = (size_t)T * H * D;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}
static int cmpd(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* n bytes: n / 2 read from src, n / 2 written to dst, non-temporal. */
static void copy_nt(const float *src, float *dst, size_t n) {
  for (size_t i = 0; i < n / 8; i += 32)
    for (int k = 0; k < 32; k += 8) _mm256_stream_ps(dst + i + k, _mm256_load_ps(src + i + k));
  _mm_sfence();
}
/* n bytes read and written in place. */
static void rmw(float *p, size_t n) {
  for (size_t i = 0; i < n / 4; i += 32)
    for (int k = 0; k < 32; k += 8) {
      const __m256 v = _mm256_load_ps(p + i + k);
      _mm256_store_ps(p + i + k, _mm256_add_ps(v, v));
    }
}

static __m512 cs_c[4], cs_s[4];
static inline void rot(__m512 u, __m512 v, int b, __m512 *a, __m512 *r) {
  *a = _mm512_fnmadd_ps(v, cs_s[b], _mm512_mul_ps(u, cs_c[b]));
  *r = _mm512_fmadd_ps(u, cs_s[b], _mm512_mul_ps(v, cs_c[b]));
}
static inline __m512 widen_bf16(const uint16_t *p) {
  return _mm512_castsi512_ps(
      _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_load_si256((const __m256i *)p)), 16));
}
static inline __m512i pack2(__m512 a, __m512 b, int bf16) {
  if (bf16) return (__m512i)_mm512_cvtne2ps_pbh(b, a);
  return _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtps_ph(a, 8)), _mm512_cvtps_ph(b, 8),
                            1);
}

/* f32 heads into 16-bit heads (bf16 or f16), non-temporal. */
static void ideal_out(const float *x, uint16_t *y, int bf16) {
  for (size_t h = 0; h < (size_t)T * H; ++h) {
    const float *xh = x + h * D;
    uint16_t *yh = y + h * D;
    for (int b = 0; b < 4; b += 2) {
      __m512 a0, r0, a1, r1;
      rot(_mm512_load_ps(xh + 16 * b), _mm512_load_ps(xh + 64 + 16 * b), b, &a0, &r0);
      rot(_mm512_load_ps(xh + 16 * b + 16), _mm512_load_ps(xh + 80 + 16 * b), b + 1, &a1, &r1);
      _mm512_stream_si512((__m512i *)(yh + 16 * b), pack2(a0, a1, bf16));
      _mm512_stream_si512((__m512i *)(yh + 64 + 16 * b), pack2(r0, r1, bf16));
    }
  }
  _mm_sfence();
}
/* bf16 heads in place. */
static void ideal_bf16(uint16_t *x) {
  for (size_t h = 0; h < (size_t)T * H; ++h) {
    uint16_t *xh = x + h * D;
    for (int b = 0; b < 4; b += 2) {
      __m512 a0, r0, a1, r1;
      rot(widen_bf16(xh + 16 * b), widen_bf16(xh + 64 + 16 * b), b, &a0, &r0);
      rot(widen_bf16(xh + 16 * b + 16), widen_bf16(xh + 80 + 16 * b), b + 1, &a1, &r1);
      _mm512_store_si512((__m512i *)(xh + 16 * b), pack2(a0, a1, 1));
      _mm512_store_si512((__m512i *)(xh + 64 + 16 * b), pack2(r0, r1, 1));
    }
  }
}

int main(void) {
  float *x = aligned_alloc(64, N * 4), *cx = aligned_alloc(64, N * 3),
        *cy = aligned_alloc(64, N * 3);
  uint16_t *y = aligned_alloc(64, N * 2), *y2 = aligned_alloc(64, N * 2),
           *h = aligned_alloc(64, N * 2);
  float *r = aligned_alloc(64, N * 2);
  if (!x || !cx || !cy || !y || !y2 || !h || !r) return 1;
  for (size_t i = 0; i < N; ++i) {
    x[i] = (float)(i % 1000) * 1e-3f - 0.5f;
    h[i] = (uint16_t)(0x3f80 + i % 64);
  }
  memset(cx, 1, N * 3), memset(cy, 0, N * 3), memset(y, 0, N * 2), memset(y2, 0, N * 2);
  memset(r, 0, N * 2);
  float cs[128];
  for (int i = 0; i < 128; ++i) cs[i] = 0.6f + 1e-4f * (float)i;
  for (int b = 0; b < 4; ++b)
    cs_c[b] = _mm512_loadu_ps(cs + 16 * b), cs_s[b] = _mm512_loadu_ps(cs + 64 + 16 * b);
  posenc_rope_plan *plan;
  if (posenc_rope_plan_create(&plan, D, 10000.0, 1.0) != POSENC_OK) return 1;
  const char *names[] = {"rope_out f32 -> f16", "rope_out f32 -> bf16", "rope_bf16 in place"};
  printf("posenc ISA %s; medians of %d interleaved rounds, 40 heads x 128 x 4096 tokens\n",
         posenc_isa_name(posenc_active_isa()), ROUNDS);
  for (int c = 0; c < 3; ++c) {
    const posenc_dtype dt = c == 0 ? POSENC_DTYPE_F16 : POSENC_DTYPE_BF16;
    const posenc_rope_view src = {x, POSENC_DTYPE_F32, H, H * D, D, 0},
                           dst = {y2, dt, H, H * D, D, 0};
    const posenc_rope_tensor q = {h, H, H * D, D};
    double t[3][ROUNDS];
    for (int k = 0; k < ROUNDS; ++k)
      for (int m0 = 0; m0 < 3; ++m0) {
        const int m = (m0 + k) % 3;
        const double t0 = now();
        if (m == 0) {
          if (c < 2)
            copy_nt(cx, cy, N * 6); /* f32 read + 16-bit written: 6 bytes per element */
          else
            rmw(r, N * 2);
        } else if (m == 1) {
          if (c < 2)
            ideal_out(x, y, c == 1);
          else
            ideal_bf16(h);
        } else {
          const posenc_status st =
              c < 2 ? posenc_rope_out(plan, D, 1, T, NULL, 1000, &src, &dst, POSENC_ROPE_NEOX)
                    : posenc_rope_bf16(plan, D, T, NULL, 1000, &q, NULL, POSENC_ROPE_NEOX);
          if (st != POSENC_OK) return 2;
        }
        t[m][k] = now() - t0;
      }
    for (int m = 0; m < 3; ++m) qsort(t[m], ROUNDS, sizeof(double), cmpd);
    printf(
        "%-22s %s %.3f ms, ideal %.3f ms (%.2fx the limit loop's time), posenc %.3f ms "
        "(%.2fx; %.2fx the ideal's)\n",
        names[c], c < 2 ? "copy" : "rmw ", 1e3 * t[0][ROUNDS / 2], 1e3 * t[1][ROUNDS / 2],
        t[1][ROUNDS / 2] / t[0][ROUNDS / 2], 1e3 * t[2][ROUNDS / 2],
        t[2][ROUNDS / 2] / t[0][ROUNDS / 2], t[2][ROUNDS / 2] / t[1][ROUNDS / 2]);
  }
  return y[1] == 7 && y2[1] == 7 && cy[1] == 7.0f;
}
