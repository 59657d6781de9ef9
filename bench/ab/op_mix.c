/* op_mix: the measured rates of single AVX-512 operations, one line each: 12 independent
 * chains of the operation (each chain's value kept in a register by an empty asm, so every
 * operation is executed and none is hoisted). Prints operations per ns (best of 5 runs of
 * 2 x 10^7 rounds). The whole operation mixes of the 16-bit kernels are bench rows
 * (limit_mix/<kernel>/<isa>, bench/limit_mix.h), which the report uses. Not built by CMake
 * (it needs -march=native on an AVX-512 + BF16 CPU):
 *   gcc -O2 -march=native bench/ab/op_mix.c -o op_mix && taskset -c 1 ./op_mix */
#include <immintrin.h>
#include <stdio.h>
#include <time.h>

#if !defined(__AVX512F__) || !defined(__AVX512BW__) || !defined(__AVX512BF16__)
#error "op_mix needs -march=native on a CPU with AVX-512 BW and BF16"
#endif

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

#define N 20000000L
#define REP12(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define DECL(i) __m512i a##i = _mm512_set1_epi32(i * 7 + 1);
#define KEEP(i) __asm__ volatile("" : "+v"(a##i));
/* Best of 5 runs of N rounds of body (chains operations per round). */
#define TIME(chains, body, keep, result)          \
  do {                                            \
    double best_ = 1e9;                           \
    for (int rep_ = 0; rep_ < 5; ++rep_) {        \
      const double t0_ = now();                   \
      for (long n_ = 0; n_ < N; ++n_) {           \
        body keep                                 \
      }                                           \
      const double t_ = now() - t0_;              \
      if (t_ < best_) best_ = t_;                 \
    }                                             \
    result = (double)N * (chains) / best_ * 1e-9; \
  } while (0)
#define RATE(name, OP)                        \
  do {                                        \
    double r_;                                \
    TIME(12, REP12(OP), REP12(KEEP), r_);     \
    printf("%-30s %5.2f per ns\n", name, r_); \
  } while (0)

int main(void) {
  const __m512i idx = _mm512_setr_epi32(0 << 16, 1 << 16, 2 << 16, 3 << 16, 4 << 16, 5 << 16,
                                        6 << 16, 7 << 16, 8 << 16, 9 << 16, 10 << 16, 11 << 16,
                                        12 << 16, 13 << 16, 14 << 16, 15 << 16);
  const __m512 c = _mm512_set1_ps(0.75f), s = _mm512_set1_ps(0.5f);
  REP12(DECL)
#define F(i) _mm512_castsi512_ps(a##i)
#define OP_FMA(i) a##i = _mm512_castps_si512(_mm512_fmadd_ps(F(i), c, s));
  RATE("vfmadd231ps zmm", OP_FMA);
#define OP_MUL(i) a##i = _mm512_castps_si512(_mm512_mul_ps(F(i), c));
  RATE("vmulps zmm", OP_MUL);
#define OP_PERMW(i) a##i = _mm512_maskz_permutexvar_epi16(0xAAAAAAAAu, idx, a##i);
  RATE("vpermw zmm (bf16 widening)", OP_PERMW);
#define OP_ZX(i) a##i = _mm512_cvtepu16_epi32(_mm512_castsi512_si256(a##i));
  RATE("vpmovzxwd zmm", OP_ZX);
#define OP_SHIFT(i) a##i = _mm512_slli_epi32(a##i, 1);
  RATE("vpslld zmm", OP_SHIFT);
#define OP_AND(i) a##i = _mm512_and_si512(a##i, idx);
  RATE("vpandd zmm", OP_AND);
#define OP_CVT2BF(i) a##i = (__m512i)_mm512_cvtne2ps_pbh(F(i), s);
  RATE("vcvtne2ps2bf16 zmm", OP_CVT2BF);
#define OP_PH2PS(i) a##i = _mm512_castps_si512(_mm512_cvtph_ps(_mm512_castsi512_si256(a##i)));
  RATE("vcvtph2ps zmm", OP_PH2PS);
#define OP_PS2PH(i) a##i = _mm512_castsi256_si512(_mm512_cvtps_ph(F(i), 0));
  RATE("vcvtps2ph ymm <- zmm", OP_PS2PH);
#define OP_FIXUP(i) a##i = _mm512_castps_si512(_mm512_fixupimm_ps(F(i), F(i), idx, 0));
  RATE("vfixupimmps zmm", OP_FIXUP);
  return 0;
}
