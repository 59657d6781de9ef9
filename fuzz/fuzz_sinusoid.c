/* libFuzzer target: posenc_sinusoid_fill, _fill_timesteps and _add (byte 0 % 6: 0-2 on f32
 * rows, 3-5 on bf16 or f16 rows, the byte after misc picking the type): dims up to 200 or
 * too wide, bases or given frequencies (NaN, Inf, 0, negative, huge: mostly rejected), row
 * counts and strides, flags with unknown bits, positions near the int32 limits, float
 * timesteps incl. NaN, Inf and +-2^31. Written values within
 * POSENC_SINUSOID_SIMD_TOLERANCE of scalar's (add: plus one rounding of the sum; bf16 /
 * f16: plus one ulp of the storage type, per 16-bit element); with
 * POSENC_SINUSOID_DETERMINISTIC bitwise scalar's on every ISA; besides common.h's checks. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

enum { FILL, TIMESTEPS, ADD }; /* family % 3 */

typedef struct sin_call {
  call base;
  posenc_sinusoid_plan *plan;
  size_t n_rows, row_stride, out_off;
  unsigned flags;
  int32_t *positions;
  int32_t start_pos;
  float *timesteps;
} sin_call;

static int op_of(const call *c) { return c->family % 3; }

static posenc_sinusoid_plan *decode_sin_plan(reader *r, size_t *dim) {
  static const double bases[] = {10000.0, 10000.0, 100.0, 2.0, 1e5, 10000.5};
  size_t d = u8(r) % 201;
  const uint8_t shape = u8(r);
  if (shape % 16 == 1) d = ((size_t)1 << 20) + 1; /* too wide: rejected */
  *dim = d;
  posenc_sinusoid_plan *plan = NULL;
  if (shape % 4 == 3 && d <= 200) {
    double freqs[101];
    for (size_t i = 0; i < (d + 1) / 2; ++i) freqs[i] = freq(r);
    if (posenc_sinusoid_plan_create_from_freqs(&plan, d, freqs) != POSENC_OK) plan = NULL;
  } else {
    const double base = u8(r) % 4 ? 10000.0 : param(r, bases, 6);
    if (posenc_sinusoid_plan_create(&plan, d, base) != POSENC_OK) plan = NULL;
  }
  return plan;
}

/* Timesteps (1/16: NULL): mostly integers or multiples of 0.37 in int16 range, sometimes
 * NaN, Inf, +-2^31, the largest float below 2^31, subnormal, -0. */
static float *timesteps_of(reader *r, size_t n) {
  static const float specials[] = {NAN,           INFINITY,       2147483648.0f, -2147483648.0f,
                                   2147483520.0f, -2147483520.0f, 1e-40f,        -0.0f};
  if (!(u8(r) % 16 && n < 4096)) return NULL;
  float *ts = malloc((n + 1) * sizeof *ts);
  if (!ts) abort();
  for (size_t i = 0; i < n; ++i) {
    const uint8_t k = u8(r);
    ts[i] = k < 32 ? specials[k % 8] : (float)(int16_t)u16(r) * (k % 2 ? 1.0f : 0.37f);
  }
  return ts;
}

static call *decode(reader *r) {
  sin_call *c = calloc(1, sizeof *c);
  if (!c) abort();
  c->base.family = u8(r) % 6;
  decode_header(r, &c->base, c->base.family >= 3);
  size_t d;
  c->plan = decode_sin_plan(r, &d);
  int huge = 0;
  const int timesteps = op_of(&c->base) == TIMESTEPS;
  c->n_rows = count(r, 40, !timesteps);
  c->row_stride = stride(r, d, &huge);
  c->out_off = u8(r) % 4;
  const size_t rows_span = span(c->n_rows, c->row_stride ? c->row_stride : d, 1, 0, d);
  c->base.len = c->out_off + (c->base.halves ? (rows_span + 1) / 2 : rows_span) + 1;
  c->flags = flags_of(r, POSENC_SINUSOID_SIN_COS | POSENC_SINUSOID_COS_SIN |
                             POSENC_SINUSOID_F32_ANGLES | POSENC_SINUSOID_DETERMINISTIC);
  if (timesteps)
    c->timesteps = timesteps_of(r, c->n_rows);
  else
    c->positions = positions_of(r, c->n_rows, &c->start_pos);
  return &c->base;
}

static void mark_outputs(call *base) {
  const sin_call *c = (const sin_call *)base;
  const size_t d = posenc_sinusoid_plan_dim(c->plan);
  const size_t off = base->halves ? 2 * c->out_off + base->misalign / 2 : c->out_off;
  touch_grid(base, off, c->n_rows, c->row_stride ? c->row_stride : d, 1, 0, d);
}

static posenc_status invoke16(const sin_call *c, void *out) {
  const int f16 = !c->base.bf16;
  switch (op_of(&c->base)) {
    case FILL:
      return (f16 ? posenc_sinusoid_fill_f16 : posenc_sinusoid_fill_bf16)(
          c->plan, c->n_rows, c->positions, c->start_pos, out, c->row_stride, c->flags);
    case TIMESTEPS:
      return (f16 ? posenc_sinusoid_fill_timesteps_f16 : posenc_sinusoid_fill_timesteps_bf16)(
          c->plan, c->n_rows, c->timesteps, out, c->row_stride, c->flags);
    default:
      return (f16 ? posenc_sinusoid_add_f16 : posenc_sinusoid_add_bf16)(
          c->plan, c->n_rows, c->positions, c->start_pos, out, c->row_stride, c->flags);
  }
}

static posenc_status invoke(const call *base, float *arena) {
  const sin_call *c = (const sin_call *)base;
  float *out = base->null_data ? NULL : arena_f32(base, arena, c->out_off);
  if (base->halves) return invoke16(c, out);
  switch (op_of(base)) {
    case FILL:
      return posenc_sinusoid_fill_f32(c->plan, c->n_rows, c->positions, c->start_pos, out,
                                      c->row_stride, c->flags);
    case TIMESTEPS:
      return posenc_sinusoid_fill_timesteps_f32(c->plan, c->n_rows, c->timesteps, out,
                                                c->row_stride, c->flags);
    default:
      return posenc_sinusoid_add_f32(c->plan, c->n_rows, c->positions, c->start_pos, out,
                                     c->row_stride, c->flags);
  }
}

/* Add: plus one rounding of the sum, as in tests/sinusoid_variants_test.cc; 16-bit: plus
 * one ulp of the storage type (two floats within the tolerance may round to neighbouring
 * values). */
static void check_element(const call *c, const char *isa, size_t index, float got, float want) {
  /* The deterministic mode: every ISA's value is the scalar one, bit for bit. */
  if (((const sin_call *)c)->flags & POSENC_SINUSOID_DETERMINISTIC) {
    if (memcmp(&got, &want, sizeof got) != 0 && !(isnan(got) && isnan(want)))
      violation(c, isa, "deterministic sinusoid value differs from scalar's", index, got, want);
    return;
  }
  double bound = POSENC_SINUSOID_SIMD_TOLERANCE;
  if (c->halves) {
    const double m = finite_mag(got, want);
    bound += storage_ulp(c, m) + (op_of(c) == ADD ? FLT_EPSILON * m : 0.0);
  } else if (op_of(c) == ADD) {
    bound += FLT_EPSILON * fmax(fabs((double)got), fabs((double)want));
  }
  if (!within_range(got, want, bound, storage_max(c)))
    violation(c, isa, "sinusoid value out of tolerance", index, got, want);
}

static void check_values(const call *c, const char *isa, const run_result *res,
                         const run_result *scalar) {
  each_written(c, isa, res, scalar, check_element);
}

static void destroy(call *base) {
  sin_call *c = (sin_call *)base;
  posenc_sinusoid_plan_destroy(c->plan);
  free(c->positions);
  free(c->timesteps);
  free(c);
}

static const fuzz_target target = {"fuzz_sinusoid", decode, mark_outputs, invoke,
                                   check_values,    NULL,   destroy};
FUZZ_TARGET(target)
