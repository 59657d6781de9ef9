/* Internal: the token / chunk / head loop shared by every RoPE variant.
 *
 * A variant supplies these functions and this driver does the rest:
 *   prepare(plan, pos, flags, att, p0, n, c, s): cos/sin (times att, sign set for the
 *       direction) of pairs [p0, p0 + n) at position pos, in the layout that
 *       rotate() reads: NEOX c[i], s[i]; GPTJ c[2i] = c[2i+1] = c_i, s[2i] = -s_i,
 *       s[2i+1] = s_i. It may write up to POSENC_ROPE_CHUNK pairs' worth of each buffer.
 *   rotate(view, row, p0, n, c, s, flags): rotates pairs [p0, p0 + n) of every head vector
 *       of one token's row of a view (the row's first head at `row`, R/2 = the plan's
 *       n_pairs), touching no other element. Taking all heads at once lets a SIMD variant
 *       keep a block of cos/sin in registers across heads. Each storage type (f32, bf16,
 *       f16) has its own rotate; cos/sin are floats for all of them.
 *   advance (optional; NULL in the scalar reference): for a single-chunk plan and a token
 *       whose position is the previous token's plus one, steps the double-precision
 *       cos/sin that prepare() saved in `state` by one position (angle addition with the
 *       cos(w_i), sin(w_i) it is given: the plan's, or a re-rotation's rope_delta_step) and
 *       writes c/s as prepare() would. The rotation is an
 *       isometry, so the error of the saved values carries over unchanged while each step
 *       adds ~2^-52; re-anchoring every POSENC_ROPE_RUN tokens keeps the sum far below the
 *       2^-22 budget. It replaces the sincos, the largest cost of a prefill token.
 *   prepare_delta(from, pos, to, pos', flags, att, p0, n, c, s, state): as prepare, for the
 *       angle rope_angle_difference(angle of `to` at pos', angle of `from` at pos)
 *       (re-rotation); the next token with both positions one on is stepped by w'_i - w_i.
 * M-RoPE tokens take each pair's cos/sin from the prepare() of its row's position; a token
 * whose inputs equal the previous token's (a context shift's constant p' - p, repeated
 * positions) reuses its cos/sin when the plan is one chunk.
 * cos/sin are computed once per token and chunk of pairs, and shared by every head of
 * every view; the driver is inlined into each variant so all calls are direct. */
#ifndef POSENC_KERNELS_ROPE_DRIVER_H
#define POSENC_KERNELS_ROPE_DRIVER_H

#include "rope.h"

_Static_assert(POSENC_ROPE_CHUNK % POSENC_PLAN_PAD == 0,
               "a chunk's loops may run to a whole vector (rope.h)");

/* Forward cos/sin (before the attention factor and direction) of one chunk, in double. */
typedef struct rope_state {
  _Alignas(64) double c[POSENC_ROPE_CHUNK];
  _Alignas(64) double s[POSENC_ROPE_CHUNK];
} rope_state;

/* Tokens stepped from one prepared token before cos/sin are computed afresh. */
#define POSENC_ROPE_RUN 256

typedef void (*rope_prepare_fn)(const struct posenc_rope_plan *plan, int32_t pos, unsigned flags,
                                float att, size_t p0, size_t n, float *c, float *s,
                                rope_state *state);
typedef void (*rope_advance_fn)(const double *cos_w, const double *sin_w, unsigned flags, float att,
                                size_t n, rope_state *state, float *c, float *s);
typedef void (*rope_prepare_delta_fn)(const struct posenc_rope_plan *from, int32_t from_pos,
                                      const struct posenc_rope_plan *to, int32_t to_pos,
                                      unsigned flags, float att, size_t p0, size_t n, float *c,
                                      float *s, rope_state *state);
typedef void (*rope_rotate_fn)(const rope_view *view, void *row, size_t half, size_t p0, size_t n,
                               const float *c, const float *s, unsigned flags);

/* The inputs that fix one token's cos/sin: a position (plain rotation, an M-RoPE token
 * whose three positions are equal, a re-rotation between identical frequency sets by
 * p' - p), an M-RoPE triple, or a re-rotation's (p, p'). */
typedef struct rope_token {
  enum { TOKEN_POSITION, TOKEN_MROPE, TOKEN_DELTA } kind;
  int64_t p[3];
} rope_token;

static inline rope_token rope_token_of(const rope_args *a, size_t t) {
  rope_token k = {TOKEN_POSITION, {rope_position(a, t), 0, 0}};
  if (a->kind == ROPE_MROPE) {
    const int32_t *p = a->positions;
    k.p[1] = p[a->n_tokens + t];
    k.p[2] = p[2 * a->n_tokens + t];
    if (k.p[1] != k.p[0] || k.p[2] != k.p[0]) k.kind = TOKEN_MROPE;
  } else if (a->kind == ROPE_REROTATE) {
    const int64_t from = rope_from_position(a, t), d = k.p[0] - from;
    /* Same frequencies: the angle of p' - p is the difference, formed exactly. */
    if (a->same_freqs && !(a->flags & POSENC_ROPE_F32_ANGLES) && d >= -INT32_MAX &&
        d <= INT32_MAX) {
      k.p[0] = d;
    } else {
      k.kind = TOKEN_DELTA;
      k.p[1] = from;
    }
  }
  return k;
}

static inline int rope_token_equal(const rope_token *x, const rope_token *y) {
  return x->kind == y->kind && x->p[0] == y->p[0] && x->p[1] == y->p[1] && x->p[2] == y->p[2];
}

/* 1 if token y is token x one position on: a position plus one, or a re-rotation whose
 * positions both moved on by one (its angle then grows by w'_i - w_i). */
static inline int rope_token_next(const rope_token *x, const rope_token *y) {
  if (x->kind != y->kind || y->p[0] != x->p[0] + 1) return 0;
  return x->kind == TOKEN_POSITION || (x->kind == TOKEN_DELTA && y->p[1] == x->p[1] + 1);
}

/* One position's rotation of a re-rotation's angle, cos and sin of w'_i - w_i, from the
 * plans' cos(w), sin(w) by angle subtraction in double (error ~2^-52 per step). Filled to
 * the padded length, whose plan entries are zero. */
typedef struct rope_delta_step {
  _Alignas(64) double c[POSENC_ROPE_CHUNK];
  _Alignas(64) double s[POSENC_ROPE_CHUNK];
} rope_delta_step;

static inline void rope_delta_step_init(rope_delta_step *d, const struct posenc_rope_plan *from,
                                        const struct posenc_rope_plan *to) {
  const size_t n = (to->n_pairs + POSENC_PLAN_PAD - 1) / POSENC_PLAN_PAD * POSENC_PLAN_PAD;
  for (size_t i = 0; i < n; ++i) {
    d->c[i] = to->cos_w[i] * from->cos_w[i] + to->sin_w[i] * from->sin_w[i];
    d->s[i] = to->sin_w[i] * from->cos_w[i] - to->cos_w[i] * from->sin_w[i];
  }
}

/* MROPE, a token with distinct positions: cos/sin of chunk [p0, p0 + n) of each row's
 * position in that row's buffer, then each pair's entries (one, or two for GPTJ) taken from
 * its row's buffer into c/s. A row whose position equals an earlier row's shares its
 * buffer; with a one-chunk plan (`keep`) a buffer still holding its row's position from an
 * earlier token is kept (an image's temporal and height positions repeat along a row). */
typedef struct rope_mrope_rows {
  _Alignas(64) float c[3][2 * POSENC_ROPE_CHUNK];
  _Alignas(64) float s[3][2 * POSENC_ROPE_CHUNK];
  int64_t pos[3];
  int valid[3];
} rope_mrope_rows;

POSENC_INLINE void rope_prepare_mrope(const rope_args *a, const rope_token *k,
                                      rope_prepare_fn prepare, float att, size_t p0, size_t n,
                                      float *c, float *s, rope_mrope_rows *rows, int keep) {
  int src[3];
  for (int r = 0; r < 3; ++r) {
    src[r] = r;
    for (int e = 0; e < r; ++e)
      if (k->p[e] == k->p[r]) src[r] = src[e];
    if (src[r] != r || (keep && rows->valid[r] && rows->pos[r] == k->p[r])) continue;
    prepare(a->plan, (int32_t)k->p[r], a->flags, att, p0, n, rows->c[r], rows->s[r], NULL);
    rows->pos[r] = k->p[r];
    rows->valid[r] = keep;
  }
  /* Copied up to the plan's padding: prepare() fills each buffer to its own vector width
   * past n, lanes that rotate() loads for a partial vector (and does not use); the copy must
   * carry them (MemorySanitizer tracks them), entries beyond are copied but never read. */
  const size_t per = (a->flags & POSENC_ROPE_GPTJ) ? 2 : 1;
  const size_t filled = (n + POSENC_PLAN_PAD - 1) / POSENC_PLAN_PAD * POSENC_PLAN_PAD;
  for (size_t i = 0; i < filled && i < POSENC_ROPE_CHUNK; ++i) {
    const int b = src[rope_mrope_row(a, p0 + i)];
    for (size_t j = per * i; j < per * (i + 1); ++j) {
      c[j] = rows->c[b][j];
      s[j] = rows->s[b][j];
    }
  }
}

/* elem: the storage type of the views, which `rotate` is written for. */
POSENC_INLINE void rope_drive(const rope_args *a, posenc_elem elem, rope_prepare_fn prepare,
                              rope_advance_fn advance, rope_prepare_delta_fn prepare_delta,
                              rope_rotate_fn rotate) {
  _Alignas(64) float c[2 * POSENC_ROPE_CHUNK];
  _Alignas(64) float s[2 * POSENC_ROPE_CHUNK];
  rope_mrope_rows mrope_rows;
  for (int r = 0; r < 3; ++r) mrope_rows.valid[r] = 0;
  rope_state state;
  const size_t n_pairs = a->plan->n_pairs;
  const float att = (float)a->att;
  /* One chunk: a token whose inputs equal the previous token's reuses its cos/sin. */
  const int single = n_pairs <= POSENC_ROPE_CHUNK;
  /* Stepping would not reproduce the float32 recipe's angles bit for bit. */
  const int step = advance && single && !(a->flags & POSENC_ROPE_F32_ANGLES);
  rope_delta_step delta_step;
  if (step && a->kind == ROPE_REROTATE) rope_delta_step_init(&delta_step, a->from_plan, a->plan);
  rope_token state_token = {TOKEN_POSITION, {0, 0, 0}}; /* whose cos/sin `state` holds */
  int state_valid = 0;
  size_t run = 0;
  rope_token prev = {TOKEN_POSITION, {0, 0, 0}};
  for (size_t t = 0; t < a->n_tokens; ++t) {
    const rope_token k = rope_token_of(a, t);
    const int reuse = single && t > 0 && rope_token_equal(&k, &prev);
    for (size_t p0 = 0; p0 < n_pairs && !reuse; p0 += POSENC_ROPE_CHUNK) {
      const size_t n = n_pairs - p0 < POSENC_ROPE_CHUNK ? n_pairs - p0 : POSENC_ROPE_CHUNK;
      if (k.kind == TOKEN_MROPE) {
        rope_prepare_mrope(a, &k, prepare, att, p0, n, c, s, &mrope_rows, single);
      } else if (step && state_valid && run < POSENC_ROPE_RUN &&
                 rope_token_next(&state_token, &k)) {
        if (k.kind == TOKEN_DELTA)
          advance(delta_step.c, delta_step.s, a->flags, att, n, &state, c, s);
        else
          advance(a->plan->cos_w, a->plan->sin_w, a->flags, att, n, &state, c, s);
        state_token = k;
        ++run;
      } else {
        rope_state *save = step ? &state : NULL;
        if (k.kind == TOKEN_DELTA)
          prepare_delta(a->from_plan, (int32_t)k.p[1], a->plan, (int32_t)k.p[0], a->flags, att, p0,
                        n, c, s, save);
        else
          prepare(a->plan, (int32_t)k.p[0], a->flags, att, p0, n, c, s, save);
        state_token = k;
        state_valid = step;
        run = 0;
      }
      for (size_t v = 0; v < a->n_views; ++v) {
        const rope_view *view = &a->views[v];
        char *row = (char *)view->data + t * view->token_stride * posenc_elem_size(elem);
        rotate(view, row, n_pairs, p0, n, c, s, a->flags);
      }
    }
    if (reuse)
      for (size_t v = 0; v < a->n_views; ++v) {
        const rope_view *view = &a->views[v];
        char *row = (char *)view->data + t * view->token_stride * posenc_elem_size(elem);
        rotate(view, row, n_pairs, 0, n_pairs, c, s, a->flags);
      }
    prev = k;
  }
}

#endif /* POSENC_KERNELS_ROPE_DRIVER_H */
