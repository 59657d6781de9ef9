/* libFuzzer target: posenc_rope_f32 (byte 0 % 3 == 0), posenc_rope_bf16 (1) and
 * posenc_rope_f16 (2): rotary_dim odd, too large or any, frequencies from a base or given
 * (NaN, Inf, 0, negative, huge: mostly rejected), attention factors incl. extremes; views
 * in every layout (rope_common.c), flags with unknown bits (then never
 * POSENC_ROPE_POSITIONS_INT64), positions near the int32 limits. The flags byte's bit 6 is
 * POSENC_ROPE_POSITIONS_INT64: the positions array passed as int64 (a byte after the
 * positions puts a value outside int32 there 1/4 of the time). Checked as rope_common.h and
 * common.h say, and with int64 positions: an accepted call's buffer bitwise that of the same
 * call with the int32 positions (same ISA); a value outside int32 refused with
 * POSENC_ERR_INVALID_ARGUMENT, nothing written (common.c). */
#include <math.h>
#include <stdlib.h>

#include "../kernels/half.h"
#include "rope_common.h"

static posenc_rope_plan *decode_rope_plan(reader *r, size_t *rotary) {
  static const double bases[] = {10000.0, 500000.0, 1e6, 2.0, 10.0, 1e4 + 0.5};
  static const double atts[] = {1.0, 1.0, 0.7, 1.3, 1e30, 1e-30};
  size_t rd = 2 * (size_t)(u8(r) % 101);
  const uint8_t shape = u8(r);
  if (shape % 16 == 0) rd += 1;                    /* odd: rejected */
  if (shape % 16 == 1) rd = ((size_t)1 << 20) + 2; /* too large: rejected */
  *rotary = rd;
  const double att = u8(r) % 4 ? 1.0 : param(r, atts, 6);
  posenc_rope_plan *plan = NULL;
  if (shape % 4 == 3 && rd <= 400) {
    double freqs[200];
    for (size_t i = 0; i < rd / 2; ++i) freqs[i] = freq(r);
    if (posenc_rope_plan_create_from_freqs(&plan, rd, freqs, att) != POSENC_OK) plan = NULL;
  } else {
    const double base = u8(r) % 4 ? 10000.0 : param(r, bases, 6);
    if (posenc_rope_plan_create(&plan, rd, base, att) != POSENC_OK) plan = NULL;
  }
  return plan;
}

static call *decode(reader *r) {
  rope_call *c = calloc(1, sizeof *c);
  if (!c) abort();
  c->base.family = u8(r) % 3;
  decode_header(r, &c->base, 0);
  c->base.halves = c->base.family != 0;
  c->base.bf16 = c->base.family == 1;
  size_t rd;
  c->plan = decode_rope_plan(r, &rd);
  c->att = posenc_rope_plan_attention_factor(c->plan);
  decode_rope_views(r, c, rd);
  const unsigned known = POSENC_ROPE_GPTJ | POSENC_ROPE_INVERSE | POSENC_ROPE_F32_ANGLES;
  c->flags = flags_of(r, known | ROPE_FLAG_INT64);
  if (c->flags & ~(known | ROPE_FLAG_INT64)) /* unknown bits: int32 positions */
    c->flags &= ~ROPE_FLAG_INT64;
  c->positions = positions_of(r, c->n_tokens, &c->start_pos);
  if ((c->flags & ROPE_FLAG_INT64) && c->positions) { /* NULL: start_pos, the flag a no-op */
    c->pos64 = positions64_of(r, c->positions, c->n_tokens, &c->bad64);
    c->base.must_fail = c->bad64;
  }
  return &c->base;
}

static posenc_status invoke(const call *base, float *arena) {
  const rope_call *c = (const rope_call *)base;
  const posenc_status st =
      invoke_plain_rope(c, arena, c->pos64 ? (const int32_t *)(const void *)c->pos64 : c->positions,
                        c->start_pos, c->flags);
  if (c->bad64 && st != POSENC_ERR_INVALID_ARGUMENT)
    violation(base, posenc_isa_name(posenc_active_isa()),
              "int64 position outside int32 not refused with POSENC_ERR_INVALID_ARGUMENT",
              (size_t)st, 0, 0);
  return st;
}

/* POSENC_ROPE_POSITIONS_INT64: an accepted call's elements bitwise those of the same call
 * with the int32 positions and without the flag, on the same ISA (a fresh copy). */
static void check_values(const call *base, const char *isa, const run_result *res,
                         const run_result *scalar) {
  const rope_call *c = (const rope_call *)base;
  check_rope_values(base, isa, res, scalar);
  if (!(c->flags & ROPE_FLAG_INT64)) return;
  const size_t total = 2 * GUARD + base->len, units = (base->halves ? 2 : 1) * total;
  float *buf = malloc(total * sizeof *buf);
  if (!buf) abort();
  fill_buffer(base, buf);
  if (invoke_plain_rope(c, buf + GUARD, c->positions, c->start_pos, c->flags & ~ROPE_FLAG_INT64) !=
      POSENC_OK)
    violation(base, isa, "int32 positions refused where int64 ones were accepted", 0, 0, 0);
  for (size_t u = 0; u < units; ++u) {
    const uint32_t a = base->halves ? half_of(res->buf, u) : posenc_float_bits(res->buf[u]);
    const uint32_t b = base->halves ? half_of(buf, u) : posenc_float_bits(buf[u]);
    const float fa = base->halves ? widen16(base, (uint16_t)a) : res->buf[u];
    const float fb = base->halves ? widen16(base, (uint16_t)b) : buf[u];
    if (a != b && !(isnan(fa) && isnan(fb)))
      violation(base, isa, "int64 positions differ from the int32 result",
                u / (base->halves ? 2 : 1), fa, fb);
  }
  free(buf);
}

static void destroy(call *c) {
  free_rope_call((rope_call *)c);
  free(c);
}

static const fuzz_target target = {"fuzz_rope", decode, mark_rope_outputs, invoke, check_values,
                                   NULL,        destroy};
FUZZ_TARGET(target)
