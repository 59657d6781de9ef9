/* Shared parts of the fuzz targets: the input reader, the arena, the ISA differential. */
#include "common.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SENTINEL(i) (0x7FA5C300u ^ (uint32_t)(i)) /* signalling-NaN patterns, index-tagged */

/* ---------------------------------------------------------------------- cursor reader */

uint8_t u8(reader *r) {
  if (!r->n) return 0;
  --r->n;
  return *r->p++;
}
uint16_t u16(reader *r) { return (uint16_t)(u8(r) | (u8(r) << 8)); }
uint32_t u32(reader *r) { return (uint32_t)u16(r) | ((uint32_t)u16(r) << 16); }
uint64_t u64(reader *r) { return (uint64_t)u32(r) | ((uint64_t)u32(r) << 32); }

static uint32_t rng_next(reader *r) {
  r->rng ^= r->rng << 13;
  r->rng ^= r->rng >> 7;
  r->rng ^= r->rng << 17;
  return (uint32_t)(r->rng >> 16);
}

static float bits_float(uint32_t b) {
  float f;
  memcpy(&f, &b, sizeof f);
  return f;
}
static uint32_t float_bits(float f) {
  uint32_t b;
  memcpy(&b, &f, sizeof b);
  return b;
}
double bits_double(uint64_t b) {
  double d;
  memcpy(&d, &b, sizeof d);
  return d;
}

/* A tensor element: two bytes while the input lasts (1/16 of them special values), then
 * the PRNG (values in [-4, 4), 1/64 of them special). */
float special_float(unsigned k, uint32_t raw) {
  static const float specials[8] = {NAN,           INFINITY, -INFINITY, 1e-40f /* subnormal */,
                                    -FLT_TRUE_MIN, -0.0f,    1e30f,     -3e38f};
  switch (k % 12) {
    case 8:
      return bits_float(0x7FC01234u); /* NaN with a payload */
    case 9:
      return bits_float(0xFF800001u); /* signalling NaN */
    case 10:
      return FLT_MIN;
    case 11:
      return bits_float(raw);
    default:
      return specials[k % 12];
  }
}

static float data_float(reader *r) {
  if (r->n >= 2) {
    const uint16_t v = u16(r);
    if ((v >> 12) == 0xF) return special_float(v & 0xF, (uint32_t)v * 2654435761u);
    return (float)(int16_t)(v << 1) / 4096.0f; /* [-16, 16) */
  }
  const uint32_t x = rng_next(r);
  if ((x & 63) == 0) return special_float(x >> 6, x);
  return (float)(int32_t)(x - 0x80000000u) / (float)(1u << 29);
}

/* A count in [0, max]; with `huge`, 1/256 of them at least HUGE_BASE (must be rejected). */
size_t count(reader *r, size_t max, int huge) {
  const uint8_t b = u8(r);
  if (huge && b == 0xFF) return HUGE_BASE + u8(r);
  return b % (max + 1);
}

/* A stride around `natural` (the dense one): mostly natural, sometimes larger, smaller
 * (overlapping), zero, a small arbitrary value, or huge (>= HUGE_BASE: any extent using it
 * with a count >= 2 overflows). *huge is set for the latter. */
size_t stride(reader *r, size_t natural, int *huge) {
  const uint8_t b = u8(r);
  switch (b % 16) {
    case 8:
    case 9:
    case 10:
      return natural + 1 + u8(r) % 8;
    case 11:
      return natural ? natural - 1 - u8(r) % natural : 0;
    case 12:
      return 0;
    case 13:
      *huge = 1;
      return (u8(r) & 1) ? SIZE_MAX - u8(r) : HUGE_BASE + u8(r);
    case 14:
      return u8(r) % 64;
    case 15:
      return 2 * natural + u8(r) % 5;
    default:
      return natural;
  }
}

uint32_t flags_of(reader *r, uint32_t known) {
  const uint8_t b = u8(r);
  if (b >= 0xF0) return u32(r) | (1u << (b & 31)); /* unknown bits (maybe) */
  return b & known;
}

int32_t special_position(reader *r) {
  const uint8_t b = u8(r);
  switch (b % 12) {
    case 0:
      return INT32_MIN;
    case 1:
      return INT32_MAX;
    case 2:
      return INT32_MAX - u8(r);
    case 3:
      return INT32_MIN + u8(r);
    case 4:
      return (int32_t)u32(r);
    case 5:
      return -(int32_t)u16(r);
    case 6:
      return 131072 + u8(r);
    case 7:
      return (1 << 24) + u8(r);
    default:
      return (int32_t)u16(r);
  }
}

/* Positions: NULL (start_pos decoded) or an array of n; runs of consecutive positions
 * (the SIMD variants step those) broken by special values. */
int32_t *positions_of(reader *r, size_t n, int32_t *start_pos) {
  const uint8_t mode = u8(r);
  *start_pos = special_position(r);
  if (mode % 3 == 0 || n == 0 || n > 4096) return NULL;
  int32_t *p = malloc(n * sizeof *p);
  if (!p) abort();
  int32_t next = *start_pos;
  for (size_t t = 0; t < n; ++t) {
    const uint8_t b = u8(r);
    p[t] = (b % 8 == 7) ? special_position(r) : next;
    next = p[t] == INT32_MAX ? INT32_MIN : p[t] + 1;
  }
  return p;
}

double param(reader *r, const double *common, size_t n_common) {
  static const double specials[7] = {NAN, INFINITY, -INFINITY, 0.0, 1.0, 1e300, 1e-300};
  const uint8_t b = u8(r);
  switch (b % 16) {
    case 7:
      return -common[0];
    case 8:
      return bits_double(u64(r));
    case 9:
      return 1.0 + (double)u8(r) * 1e-9;
    default:
      return b % 16 < 7 ? specials[b % 16] : common[b % n_common];
  }
}

double freq(reader *r) {
  const uint8_t b = u8(r);
  switch (b % 16) {
    case 0:
      return NAN;
    case 1:
      return INFINITY;
    case 2:
      return 0.0;
    case 3:
      return -(double)u16(r) / 1024.0;
    case 4:
      return 1e10;
    case 5:
      return 4.9e-324;
    case 6:
      return bits_double(u64(r));
    default:
      return pow(10000.0, -(double)u8(r) / 128.0);
  }
}

/* ---------------------------------------------------------------------- one decoded call */

uint8_t decode_header(reader *r, call *c, int typed16) {
  const uint8_t misc = u8(r);
  c->null_data = misc % 32 == 0;
  c->misalign = misc % 32 == 1 ? 1 + u8(r) % 3 : 0;
  if (typed16) {
    c->halves = 1;
    c->bf16 = u8(r) % 2 == 0;
  }
  return misc;
}

float *arena_f32(const call *c, float *arena, size_t off) {
  return (float *)((char *)(arena + off) + c->misalign);
}

/* Element off of a 16-bit tensor in the arena. */
void *arena_16(const call *c, float *arena, size_t off) {
  return (char *)arena + 2 * off + c->misalign;
}

/* Elements spanned by count_a x count_b rows of `width` (0 if none); huge strides and
 * counts are left out: a call using them must be rejected, and if it is not, ASan sees the
 * access. */
size_t span(size_t count_a, size_t stride_a, size_t count_b, size_t stride_b, size_t width) {
  if (count_a == 0 || count_b == 0 || width == 0 || count_a >= HUGE_BASE || count_b >= HUGE_BASE)
    return 0;
  size_t s = width;
  if (count_a > 1 && stride_a < HUGE_BASE) s += (count_a - 1) * stride_a;
  if (count_b > 1 && stride_b < HUGE_BASE) s += (count_b - 1) * stride_b;
  return s;
}

size_t max_size(size_t a, size_t b) { return a > b ? a : b; }

/* int32 arithmetic that wraps (positions arrays may hold any int32). */
int32_t wrap32(int64_t x) { return (int32_t)(uint32_t)(uint64_t)x; }

/* Counts one more output element at unit i (a float, or a 16-bit half with halves). */
void touch(call *c, size_t i) {
  if (i < (c->halves ? 2 : 1) * c->len && c->touched[i] < 255) ++c->touched[i];
}

/* Marks the rows [a * sa + b * sb, + width) (a < na, b < nb) of an output at unit `off`. */
void touch_grid(call *c, size_t off, size_t na, size_t sa, size_t nb, size_t sb, size_t width) {
  if (na >= HUGE_BASE || nb >= HUGE_BASE) return;
  for (size_t i = 0; i < na; ++i)
    for (size_t j = 0; j < nb; ++j) {
      if ((i && sa >= HUGE_BASE) || (j && sb >= HUGE_BASE)) return;
      for (size_t e = 0; e < width; ++e) touch(c, off + i * sa + j * sb + e);
    }
}

/* ---------------------------------------------------------------------- comparison */

void violation(const call *c, const char *isa, const char *what, size_t index, float got,
               float want) {
  fprintf(stderr,
          "%s: family %d, ISA %s: %s (arena element %zu of %zu: got %a [%08x], scalar "
          "%a [%08x])\n",
          c->target, c->family, isa, what, index, c->len, (double)got, float_bits(got),
          (double)want, float_bits(want));
  abort();
}

/* NaN exactly where scalar has NaN; finite values within the bound; an infinity where the
 * value it stands for (beyond max_finite, with its sign) can lie within the bound of the
 * other result: a finite one at most `bound` from the overflow threshold of that sign, or
 * the opposite infinity when the bound spans the whole finite range (a rotated element
 * whose exact value is small next to the bound may overflow either way in a 16-bit
 * storage type). */
int within_range(float got, float want, double bound, double max_finite) {
  if (isnan(want) || isnan(got)) return isnan(want) && isnan(got);
  if (got == want) return 1;
  if (isinf(bound)) return 1;
  if (isinf(got) && isinf(want)) return bound >= 2.0 * max_finite;
  if (isinf(got) || isinf(want)) {
    const double fin = isinf(got) ? want : got;
    const double gap = (isinf(got) ? got : want) > 0 ? max_finite - fin : fin + max_finite;
    return gap <= bound;
  }
  return fabs((double)got - (double)want) <= bound;
}

int within(float got, float want, double bound) { return within_range(got, want, bound, FLT_MAX); }

/* Bit-identical, any NaN payload accepted for a NaN (posenc.h: with two NaN operands the
 * payload that propagates is the compiler's and the hardware's choice). */
int same_value(float got, float want) {
  return float_bits(got) == float_bits(want) || (isnan(got) && isnan(want));
}

/* The 16-bit half h (in memory order) of a buffer of floats. */
uint16_t half_of(const float *buf, size_t h) {
  uint16_t v;
  memcpy(&v, (const char *)buf + 2 * h, sizeof v);
  return v;
}

/* A bf16 or f16 (c->bf16) as a float (exact). */
float widen16(const call *c, uint16_t h) {
  if (c->bf16) return bits_float((uint32_t)h << 16);
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0x1f) return bits_float(sign | 0x7f800000u | mant << 13);
  if (exp == 0) return (sign ? -1.0f : 1.0f) * ldexpf((float)mant, -24);
  return bits_float(sign | (exp + 112u) << 23 | mant << 13);
}

/* The larger magnitude of the finite ones of a and b (0 if none). */
double finite_mag(double a, double b) {
  return fmax(isfinite(a) ? fabs(a) : 0.0, isfinite(b) ? fabs(b) : 0.0);
}

/* One ulp of the call's storage type at magnitude mag (0 for f32): two floats within a
 * bound may round to neighbouring 16-bit values. */
double storage_ulp(const call *c, double mag) {
  if (!c->halves) return 0.0;
  const int min_exp = c->bf16 ? -126 : -14;
  const int e = mag > 0 && ilogb(mag) > min_exp ? ilogb(mag) : min_exp;
  return ldexp(1.0, e - (c->bf16 ? 7 : 10));
}

/* The largest finite value of the call's storage type. */
double storage_max(const call *c) { return !c->halves ? FLT_MAX : c->bf16 ? 0x1.fep127 : 65504.0; }

void each_written(const call *c, const char *isa, const run_result *res, const run_result *scalar,
                  element_fn fn) {
  if (c->halves) {
    for (size_t a = 0; a < 2 * c->len; ++a)
      if (c->touched[a])
        fn(c, isa, a / 2, widen16(c, half_of(res->buf, 2 * GUARD + a)),
           widen16(c, half_of(scalar->buf, 2 * GUARD + a)));
    return;
  }
  for (size_t a = 0; a < c->len; ++a)
    if (c->touched[a]) fn(c, isa, a, res->buf[GUARD + a], scalar->buf[GUARD + a]);
}

/* ---------------------------------------------------------------------- the differential */

void fill_buffer(const call *c, float *buf) {
  for (size_t i = 0; i < GUARD; ++i) {
    buf[i] = bits_float(SENTINEL(i));
    buf[GUARD + c->len + i] = bits_float(SENTINEL(GUARD + i));
  }
  memcpy(buf + GUARD, c->input, c->len * sizeof *buf);
}

static void run_isa(const fuzz_target *t, const call *c, posenc_isa isa, run_result *out) {
  float *buf = out->buf;
  fill_buffer(c, buf);
  if (posenc_set_isa(isa) != POSENC_OK) abort();
  POISON(buf, GUARD * sizeof *buf);
  POISON(buf + GUARD + c->len, GUARD * sizeof *buf);
  out->status = t->invoke(c, buf + GUARD);
  UNPOISON(buf, (2 * GUARD + c->len) * sizeof *buf);
}

/* Unit i (a float, or a 16-bit half) of a GUARD-framed buffer: its bits, and as a float. */
static uint32_t unit_bits(const call *c, const float *buf, size_t i) {
  return c->halves ? half_of(buf, i) : float_bits(buf[i]);
}
static float unit_value(const call *c, const float *buf, size_t i) {
  return c->halves ? widen16(c, half_of(buf, i)) : buf[i];
}

/* The same status as scalar; nothing changed but the outputs of an accepted call, whose
 * values the target checks. */
static void check_run(const fuzz_target *t, const call *c, const char *isa, const run_result *res,
                      const run_result *scalar, const float *pristine) {
  if (res->status != scalar->status) {
    fprintf(stderr, "%s: family %d: ISA %s returned %d, scalar %d\n", c->target, c->family, isa,
            (int)res->status, (int)scalar->status);
    abort();
  }
  const size_t per = c->halves ? 2 : 1, guard = per * GUARD, n = per * c->len;
  for (size_t i = 0; i < 2 * guard + n; ++i) {
    const int in_arena = i >= guard && i < guard + n;
    const size_t a = i - guard;
    if (res->status == POSENC_OK && in_arena && c->touched[a]) continue;
    if (unit_bits(c, res->buf, i) != unit_bits(c, pristine, i))
      violation(c, isa,
                !in_arena                  ? "guard region changed"
                : res->status != POSENC_OK ? "buffer changed by a failing call"
                                           : "element outside the outputs changed",
                (in_arena ? a : i) / per, unit_value(c, res->buf, i), unit_value(c, pristine, i));
  }
  if (res->status == POSENC_OK) t->check_values(c, isa, res, scalar);
}

/* A new call decoded from the input with its arena: the data, and the outputs marked. */
static call *decode_call(const fuzz_target *t, const uint8_t *data, size_t size) {
  reader r = {data, size, 0x9E3779B97F4A7C15ull};
  call *c = t->decode(&r);
  c->target = t->name;
  if (c->len > MAX_ARENA) { /* too large for the harness: the input is skipped */
    t->destroy(c);
    return NULL;
  }
  c->len += 1; /* room for a misaligned pointer's last element */
  r.rng ^= (uint64_t)u32(&r) << 1 | 1u;
  c->input = malloc(c->len * sizeof *c->input);
  c->touched = calloc((c->halves ? 2 : 1) * c->len, 1);
  if (!c->input || !c->touched) abort();
  for (size_t i = 0; i < c->len; ++i) c->input[i] = data_float(&r);
  t->mark_outputs(c);
  return c;
}

/* The checks of the scalar call alone: its status against the arguments, and an accepted
 * call never writes an element twice (overlapping outputs; learned: nor where it reads its
 * table). */
static void check_scalar_status(const call *c, const run_result *scalar) {
  static int verbose = -1;
  if (verbose < 0) verbose = getenv("POSENC_FUZZ_VERBOSE") != NULL;
  if (verbose)
    fprintf(stderr, "%s: family %d status %d arena %zu%s\n", c->target, c->family,
            (int)scalar->status, c->len, c->must_fail ? " (must fail)" : "");
  if (c->must_fail && scalar->status == POSENC_OK)
    violation(c, "scalar", "call with an argument posenc.h lists as an error accepted", 0, 0.0f,
              0.0f);
  if (scalar->status != POSENC_OK) return;
  const size_t per = c->halves ? 2 : 1;
  for (size_t i = 0; i < per * c->len; ++i)
    if (c->touched[i] > 1)
      violation(c, "scalar", "call with overlapping outputs accepted", i / per, 0.0f, 0.0f);
}

int fuzz_one(const fuzz_target *t, const uint8_t *data, size_t size) {
  call *c = decode_call(t, data, size);
  if (!c) return 0;
  const size_t total = 2 * GUARD + c->len;
  float *pristine = malloc(total * sizeof *pristine);
  run_result scalar = {POSENC_OK, malloc(total * sizeof(float))};
  run_result other = {POSENC_OK, malloc(total * sizeof(float))};
  if (!pristine || !scalar.buf || !other.buf) abort();
  fill_buffer(c, pristine);

  run_isa(t, c, POSENC_ISA_SCALAR, &scalar);
  check_scalar_status(c, &scalar);
  check_run(t, c, "scalar", &scalar, &scalar, pristine);
  if (scalar.status == POSENC_OK && t->check_accepted) t->check_accepted(c, &scalar);
  for (int isa = 1; isa < POSENC_ISA_COUNT; ++isa) {
    if (!posenc_isa_available((posenc_isa)isa)) continue;
    run_isa(t, c, (posenc_isa)isa, &other);
    check_run(t, c, posenc_isa_name((posenc_isa)isa), &other, &scalar, pristine);
  }
  free(pristine);
  free(scalar.buf);
  free(other.buf);
  free(c->input);
  free(c->touched);
  t->destroy(c);
  return 0;
}
