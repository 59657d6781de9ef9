/* libFuzzer target: posenc_learned_add_f32 (the input starts at misc: one entry point, no
 * family byte): table rows, width, strides, token counts, the embeddings after the table or
 * inside it (aliasing: must be rejected where an element is both read and written),
 * positions in or past the table and near the int32 limits. Written values bit for bit, and
 * common.h's checks. */
#include <stdlib.h>

#include "common.h"

typedef struct learned_call {
  call base;
  size_t max_pos, table_off, table_stride, dim, n_tokens, x_off, x_stride;
  int32_t *positions;
  int32_t start_pos;
} learned_call;

static size_t dense(size_t stride, size_t dim) { return stride ? stride : dim; }

/* Positions: a start (mostly in the table) or an array of n, mostly rows of the table. */
static void decode_positions(reader *r, learned_call *c) {
  const uint8_t pm = u8(r);
  if (pm % 4 == 0) {
    c->start_pos = pm % 8 == 0 ? (int32_t)(u8(r) % 48) : special_position(r);
    return;
  }
  if (!c->n_tokens) return;
  c->positions = malloc(c->n_tokens * sizeof *c->positions);
  if (!c->positions) abort();
  for (size_t t = 0; t < c->n_tokens; ++t) {
    const uint8_t b = u8(r);
    c->positions[t] =
        b >= 0xF8 ? special_position(r) : (int32_t)(c->max_pos ? b % c->max_pos : b % 4);
  }
}

static call *decode(reader *r) {
  learned_call *c = calloc(1, sizeof *c);
  if (!c) abort();
  decode_header(r, &c->base, 0);
  c->max_pos = count(r, 40, 0);
  c->dim = count(r, 200, 0);
  int huge = 0;
  c->table_stride = stride(r, c->dim, &huge);
  c->x_stride = stride(r, c->dim, &huge);
  c->n_tokens = count(r, 40, 0);
  c->table_off = u8(r) % 4;
  const size_t table_span = span(c->max_pos, dense(c->table_stride, c->dim), 1, 0, c->dim);
  const uint8_t place = u8(r);
  c->x_off = place % 8 == 0 ? c->table_off + u8(r) % (table_span + 1) /* aliasing */
                            : c->table_off + table_span + place % 3;
  c->base.len = max_size(c->table_off + table_span,
                         c->x_off + span(c->n_tokens, dense(c->x_stride, c->dim), 1, 0, c->dim)) +
                1;
  decode_positions(r, c);
  return &c->base;
}

/* The embeddings are written; the table is read: an element in both is an accepted
 * aliasing (counted twice: fuzz_one's overlap check). */
static void mark_outputs(call *base) {
  const learned_call *c = (const learned_call *)base;
  touch_grid(base, c->x_off, c->n_tokens, dense(c->x_stride, c->dim), 1, 0, c->dim);
  if (c->max_pos >= HUGE_BASE) return;
  for (size_t p = 0; p < c->max_pos; ++p)
    for (size_t j = 0; j < c->dim; ++j) {
      const size_t i = c->table_off + p * dense(c->table_stride, c->dim) + j;
      if (i < base->len && base->touched[i]) touch(base, i);
    }
}

static posenc_status invoke(const call *base, float *arena) {
  const learned_call *c = (const learned_call *)base;
  return posenc_learned_add_f32(base->null_data ? NULL : arena_f32(base, arena, c->table_off),
                                c->max_pos, c->table_stride, c->dim, c->n_tokens, c->positions,
                                c->start_pos, arena_f32(base, arena, c->x_off), c->x_stride);
}

static void check_element(const call *c, const char *isa, size_t index, float got, float want) {
  if (!same_value(got, want)) violation(c, isa, "not bit-identical to scalar", index, got, want);
}

static void check_values(const call *c, const char *isa, const run_result *res,
                         const run_result *scalar) {
  each_written(c, isa, res, scalar, check_element);
}

static void destroy(call *base) {
  free(((learned_call *)base)->positions);
  free(base);
}

static const fuzz_target target = {"fuzz_learned", decode, mark_outputs, invoke,
                                   check_values,   NULL,   destroy};
FUZZ_TARGET(target)
