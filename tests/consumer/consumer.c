/* A program that uses an installed (or embedded) posenc the way an integrator would: the
 * version, one RoPE call (and the same rotation through factors and posenc_inline.h's apply
 * step) and one sinusoidal table, each checked against a plain double
 * computation. Exits non-zero on a mismatch or an error. Built by scripts/test-consumers.sh
 * through find_package, pkg-config and add_subdirectory, shared and static. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <posenc.h>
#include <posenc_inline.h>

enum { kDim = 8, kPairs = kDim / 2 };
static const double kBase = 10000.0;
static const double kTolerance = 1e-5;

static int check(const char *what, double got, double want) {
  if (fabs(got - want) <= kTolerance) return 0;
  fprintf(stderr, "consumer: %s: got %.9g, want %.9g\n", what, got, want);
  return 1;
}

static int check_status(const char *what, posenc_status status) {
  if (status == POSENC_OK) return 0;
  fprintf(stderr, "consumer: %s: %s\n", what, posenc_status_string(status));
  return 1;
}

/* One head of one token at position 3, NEOX pairs (x[i], x[i + R/2]). */
static int check_rope(void) {
  posenc_rope_plan *plan = NULL;
  if (check_status("posenc_rope_plan_create", posenc_rope_plan_create(&plan, kDim, kBase, 1.0)))
    return 1;
  float x[kDim];
  for (int i = 0; i < kDim; ++i) x[i] = 0.25f * (float)(i + 1);
  float want[kDim];
  const int32_t position = 3;
  for (int i = 0; i < kPairs; ++i) {
    double w = pow(kBase, -2.0 * i / kDim), c = cos(position * w), s = sin(position * w);
    want[i] = (float)(x[i] * c - x[i + kPairs] * s);
    want[i + kPairs] = (float)(x[i + kPairs] * c + x[i] * s);
  }
  float y[kDim], factor_rows[kDim];
  memcpy(y, x, sizeof y);
  posenc_rope_tensor q = {x, 1, kDim, kDim};
  int failed = check_status(
      "posenc_rope_f32", posenc_rope_f32(plan, kDim, 1, &position, 0, &q, NULL, POSENC_ROPE_NEOX));
  posenc_rope_factors f;
  failed |= check_status("posenc_rope_factors_compute",
                         posenc_rope_factors_compute(plan, 1, &position, 0, POSENC_ROPE_NEOX,
                                                     factor_rows, sizeof factor_rows, &f));
  posenc_rope_plan_destroy(plan);
  if (!failed)
    failed |= check_status("posenc_rope_apply_token_f32",
                           posenc_rope_apply_token_f32(&f, 0, y, 1, kDim, kDim, POSENC_ROPE_NEOX));
  for (int i = 0; i < kDim && !failed; ++i) {
    failed |= check("rope", x[i], want[i]);
    failed |= check("inline apply", y[i], want[i]);
  }
  return failed;
}

/* One interleaved row for position 5: column 2i = sin(p w_i), 2i + 1 = cos(p w_i). */
static int check_sinusoid(void) {
  posenc_sinusoid_plan *plan = NULL;
  if (check_status("posenc_sinusoid_plan_create", posenc_sinusoid_plan_create(&plan, kDim, kBase)))
    return 1;
  float row[kDim];
  int failed =
      check_status("posenc_sinusoid_fill_f32",
                   posenc_sinusoid_fill_f32(plan, 1, NULL, 5, row, 0, POSENC_SINUSOID_INTERLEAVED));
  posenc_sinusoid_plan_destroy(plan);
  for (int i = 0; i < kPairs && !failed; ++i) {
    double w = pow(kBase, -2.0 * i / kDim);
    failed |= check("sinusoid sin", row[2 * i], sin(5 * w));
    failed |= check("sinusoid cos", row[2 * i + 1], cos(5 * w));
  }
  return failed;
}

int main(void) {
  if (strcmp(posenc_version(), POSENC_VERSION_STRING) != 0) {
    fprintf(stderr, "consumer: library %s, header %s\n", posenc_version(), POSENC_VERSION_STRING);
    return 1;
  }
  int failed = check_rope() | check_sinusoid();
  printf("posenc %s (%s): %s\n", posenc_version(), posenc_isa_name(posenc_active_isa()),
         failed ? "MISMATCH" : "ok");
  return failed;
}
