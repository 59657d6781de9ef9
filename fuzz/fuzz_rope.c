/* libFuzzer target: posenc_rope_f32 (byte 0 % 3 == 0), posenc_rope_bf16 (1) and
 * posenc_rope_f16 (2): rotary_dim odd, too large or any, frequencies from a base or given
 * (NaN, Inf, 0, negative, huge: mostly rejected), attention factors incl. extremes; views
 * in every layout (rope_common.c), flags with unknown bits (never POSENC_ROPE_POSITIONS_INT64:
 * the positions are int32), positions near the int32
 * limits. Checked as rope_common.h and common.h say. */
#include <stdlib.h>

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
  c->flags = flags_of(r, POSENC_ROPE_GPTJ | POSENC_ROPE_INVERSE | POSENC_ROPE_F32_ANGLES) &
             ~ROPE_FLAG_INT64; /* int32 positions */
  c->positions = positions_of(r, c->n_tokens, &c->start_pos);
  return &c->base;
}

static posenc_status invoke(const call *base, float *arena) {
  const rope_call *c = (const rope_call *)base;
  return invoke_plain_rope(c, arena, c->positions, c->start_pos, c->flags);
}

static void destroy(call *c) {
  free_rope_call((rope_call *)c);
  free(c);
}

static const fuzz_target target = {
    "fuzz_rope", decode, mark_rope_outputs, invoke, check_rope_values, NULL, destroy};
FUZZ_TARGET(target)
