/* posenc-sweep: accuracy of every variant against MPFR (correctly rounded sin/cos of the
 * exact angle). Not part of CI: the exhaustive sweep takes about 30 CPU-minutes (--jobs N
 * splits it over N processes).
 *
 *   posenc-sweep [--exhaustive] [--stride N] [--positions N] [--seed S] [--jobs N]
 *                [--deterministic]
 *
 * 1. The sin/cos path: every float x in [-pi, pi] (--exhaustive), or every N-th one
 *    (--stride, default 1021), through each variant's own sincos: a sinusoidal plan of one
 *    pair with w = 1 in the F32_ANGLES mode makes the angle (float)t * 1 = x exactly.
 *    Worst |sin - sin(x)|, |cos - cos(x)| per variant.
 * 2. Random positions |p| < 2^31 (--positions, default 100000) for RoPE's and the
 *    sinusoid's accurate angles: sinusoidal tables of the default plans (d = 128, bases
 *    1e4 and 5e5), compared with sin/cos of the exact product p * w_i. RoPE forms its cos/sin
 *    with the same code (kernels/angle_simd.h), checked by posenc-report.
 * --deterministic: both with POSENC_SINUSOID_DETERMINISTIC (posenc_det_sincos()), and every
 * variant's outputs must also be bitwise those of the first (scalar).
 * Prints one line per variant; exits 1 if a figure exceeds the header's 2^-22 (or, with
 * --deterministic, if two variants differ in any bit). */
#include <math.h>
#include <mpfr.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "posenc.h"

#define BATCH 4096
#define PI 3.14159265358979323846
#define BOUND 0x1p-22

/* The variants this machine runs; worst errors per variant. */
static posenc_isa isas[POSENC_ISA_COUNT];
static size_t n_isas;
static double worst_sincos[POSENC_ISA_COUNT], worst_position[POSENC_ISA_COUNT];
static float worst_angle[POSENC_ISA_COUNT]; /* the sin/cos path's worst float angle */
static float outputs[POSENC_ISA_COUNT][BATCH * 128];
static unsigned extra_flags;     /* 0, or POSENC_SINUSOID_DETERMINISTIC */
static unsigned long long diffs; /* --deterministic: outputs that differ from the scalar's */

/* --deterministic: counts the first n outputs of each variant that differ from variant 0's. */
static void count_differences(size_t n) {
  if (!extra_flags) return;
  for (size_t v = 1; v < n_isas; ++v)
    for (size_t i = 0; i < n; ++i)
      if (memcmp(&outputs[v][i], &outputs[0][i], sizeof(float)) != 0) ++diffs;
}

/* Folds the errors of every variant's sin (at out[2k]) and cos (out[2k+1]) of one exact
 * angle into worst[] (and the angle into where[], if given, when it is a variant's worst);
 * the reference is computed once, correctly rounded to double (s and c have 53 bits). */
static void compare(mpfr_t angle, size_t k, double *worst, float *where, mpfr_t s, mpfr_t c) {
  mpfr_sin_cos(s, c, angle, MPFR_RNDN);
  const double sd = mpfr_get_d(s, MPFR_RNDN), cd = mpfr_get_d(c, MPFR_RNDN);
  for (size_t v = 0; v < n_isas; ++v) {
    const double err =
        fmax(fabs((double)outputs[v][2 * k] - sd), fabs((double)outputs[v][2 * k + 1] - cd));
    if (err > worst[v]) {
      worst[v] = err;
      if (where) where[v] = mpfr_get_flt(angle, MPFR_RNDN);
    }
  }
}

/* The sin/cos path: float bit patterns first, first + step, ... up to the last float below
 * pi, each angle taken with both signs (+0 once). */
static void sweep_sincos(uint64_t first, uint64_t step, mpfr_t a, mpfr_t s, mpfr_t c) {
  const double one = 1.0;
  posenc_sinusoid_plan *plan;
  if (posenc_sinusoid_plan_create_from_freqs(&plan, 2, &one) != POSENC_OK) exit(2);
  static float t[BATCH];
  const float below_pi = nextafterf((float)PI, 0.0f); /* (float)pi rounds above pi */
  uint32_t last;
  memcpy(&last, &below_pi, sizeof last);
  uint64_t bits = first;
  while (bits <= last) {
    size_t n = 0;
    for (; n + 2 <= BATCH && bits <= last; bits += step) {
      const uint32_t u = (uint32_t)bits;
      float x;
      memcpy(&x, &u, sizeof x);
      t[n++] = x;
      if (u != 0) t[n++] = -x;
    }
    for (size_t v = 0; v < n_isas; ++v)
      if (posenc_set_isa(isas[v]) ||
          posenc_sinusoid_fill_timesteps_f32(plan, n, t, outputs[v], 0,
                                             POSENC_SINUSOID_F32_ANGLES | extra_flags))
        exit(2);
    count_differences(2 * n);
    for (size_t r = 0; r < n; ++r) {
      mpfr_set_flt(a, t[r], MPFR_RNDN);
      compare(a, r, worst_sincos, worst_angle, s, c);
    }
  }
  posenc_sinusoid_plan_destroy(plan);
}

static void sweep_positions(size_t count, uint64_t seed, mpfr_t a, mpfr_t s, mpfr_t c) {
  enum { D = 128, ROWS = BATCH * 128 / D };
  const double bases[] = {1e4, 5e5};
  static int32_t pos[ROWS];
  double w[D / 2];
  for (size_t b = 0; b < 2; ++b) {
    posenc_sinusoid_plan *plan;
    if (posenc_sinusoid_plan_create(&plan, D, bases[b]) != POSENC_OK) exit(2);
    posenc_sinusoid_plan_freqs(plan, w);
    for (size_t done = 0; done < count; done += ROWS) {
      const size_t n = count - done < ROWS ? count - done : ROWS;
      for (size_t r = 0; r < n; ++r) {
        seed = seed * 6364136223846793005u + 1442695040888963407u;
        pos[r] = (int32_t)(seed >> 32) | 1; /* odd: never INT32_MIN */
      }
      for (size_t v = 0; v < n_isas; ++v)
        if (posenc_set_isa(isas[v]) ||
            posenc_sinusoid_fill_f32(plan, n, pos, 0, outputs[v], 0, extra_flags))
          exit(2);
      count_differences(n * D);
      for (size_t r = 0; r < n; ++r)
        for (size_t i = 0; i < D / 2; ++i) {
          mpfr_set_d(a, w[i], MPFR_RNDN);
          mpfr_mul_si(a, a, pos[r], MPFR_RNDN); /* exact: 53 + 32 bits < 128 */
          compare(a, r * (D / 2) + i, worst_position, NULL, s, c);
        }
    }
    posenc_sinusoid_plan_destroy(plan);
  }
}

/* The sin/cos sweep split over `jobs` processes (interleaved slices of the bit patterns);
 * each child sends its worst errors and angles back through a pipe. */
static void sweep_sincos_parallel(uint32_t stride, unsigned jobs, mpfr_t a, mpfr_t s, mpfr_t c) {
  if (jobs <= 1) {
    sweep_sincos(0, stride, a, s, c);
    return;
  }
  int fds[2];
  if (pipe(fds)) exit(2);
  for (unsigned j = 0; j < jobs; ++j) {
    const pid_t pid = fork();
    if (pid < 0) exit(2);
    if (pid == 0) {
      close(fds[0]);
      sweep_sincos((uint64_t)j * stride, (uint64_t)jobs * stride, a, s, c);
      if (write(fds[1], worst_sincos, sizeof worst_sincos) != sizeof worst_sincos ||
          write(fds[1], worst_angle, sizeof worst_angle) != sizeof worst_angle ||
          write(fds[1], &diffs, sizeof diffs) != sizeof diffs)
        _exit(2);
      _exit(0);
    }
  }
  close(fds[1]);
  for (unsigned j = 0; j < jobs; ++j) {
    double worst[POSENC_ISA_COUNT];
    float where[POSENC_ISA_COUNT];
    unsigned long long child_diffs;
    if (read(fds[0], worst, sizeof worst) != sizeof worst ||
        read(fds[0], where, sizeof where) != sizeof where ||
        read(fds[0], &child_diffs, sizeof child_diffs) != sizeof child_diffs)
      exit(2);
    diffs += child_diffs;
    for (size_t v = 0; v < n_isas; ++v)
      if (worst[v] > worst_sincos[v]) {
        worst_sincos[v] = worst[v];
        worst_angle[v] = where[v];
      }
  }
  close(fds[0]);
  int status;
  while (wait(&status) > 0)
    if (!WIFEXITED(status) || WEXITSTATUS(status)) exit(2);
}

int main(int argc, char **argv) {
  uint32_t stride = 1021;
  size_t positions = 100000;
  uint64_t seed = 1;
  unsigned jobs = 1;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--exhaustive"))
      stride = 1;
    else if (!strcmp(argv[i], "--stride") && i + 1 < argc)
      stride = (uint32_t)strtoul(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--positions") && i + 1 < argc)
      positions = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
      seed = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--jobs") && i + 1 < argc)
      jobs = (unsigned)strtoul(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--deterministic"))
      extra_flags = POSENC_SINUSOID_DETERMINISTIC;
    else {
      fprintf(stderr,
              "usage: %s [--exhaustive] [--stride N] [--positions N] [--seed S] [--jobs N] "
              "[--deterministic]\n",
              argv[0]);
      return 2;
    }
  }
  if (stride == 0) stride = 1;
  /* a holds exact angles (a float, or a double times an int32: 85 bits); s and c get sin
   * and cos correctly rounded to double, which is all the comparison uses (and MPFR is
   * many times faster at 53 bits than at 128). */
  mpfr_t a, s, c;
  mpfr_init2(a, 128);
  mpfr_inits2(53, s, c, (mpfr_ptr)0);
  for (int i = 0; i < POSENC_ISA_COUNT; ++i)
    if (posenc_isa_available((posenc_isa)i)) isas[n_isas++] = (posenc_isa)i;
  printf(
      "sin/cos path: every %u-th float in [-pi, pi]; positions: %zu random |p| < 2^31 x 2 "
      "bases x 64 pairs\n",
      stride, positions);
  fflush(stdout); /* not once per child */
  sweep_sincos_parallel(stride, jobs ? jobs : 1, a, s, c);
  sweep_positions(positions, seed, a, s, c);
  mpfr_clears(a, s, c, (mpfr_ptr)0);
  printf("%-8s %14s %16s %14s %10s\n", "isa", "sincos err", "at angle", "position err", "bound");
  int fail = 0;
  for (size_t v = 0; v < n_isas; ++v) {
    const int ok = worst_sincos[v] <= BOUND && worst_position[v] <= BOUND;
    fail |= !ok;
    printf("%-8s %14.3g %16.9g %14.3g %10.3g %s\n", posenc_isa_name(isas[v]), worst_sincos[v],
           (double)worst_angle[v], worst_position[v], BOUND, ok ? "PASS" : "FAIL");
  }
  if (extra_flags) {
    printf("deterministic mode: %llu outputs differ from %s's %s\n", diffs,
           posenc_isa_name(isas[0]), diffs ? "FAIL" : "PASS");
    fail |= diffs != 0;
  }
  return fail;
}
