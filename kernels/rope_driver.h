/* Internal: the token / chunk / head loop shared by every RoPE variant.
 *
 * A variant supplies two functions and this driver does the rest:
 *   prepare(plan, pos, flags, p0, n, c, s): cos/sin (times the attention factor, sign set
 *       for the direction) of pairs [p0, p0 + n) at position pos, in the layout that
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
 *       plan's cos(w_i), sin(w_i)) and writes c/s as prepare() would. The rotation is an
 *       isometry, so the error of the saved values carries over unchanged while each step
 *       adds ~2^-52; re-anchoring every POSENC_ROPE_RUN tokens keeps the sum far below the
 *       2^-22 budget. It replaces the sincos, the largest cost of a prefill token.
 * cos/sin are computed once per token and chunk of pairs, and shared by every head of
 * every view; the driver is inlined into each variant so all calls are direct. */
#ifndef POSENC_KERNELS_ROPE_DRIVER_H
#define POSENC_KERNELS_ROPE_DRIVER_H

#include "rope.h"

/* Forward cos/sin (before the attention factor and direction) of one chunk, in double. */
typedef struct rope_state {
  _Alignas(64) double c[POSENC_ROPE_CHUNK];
  _Alignas(64) double s[POSENC_ROPE_CHUNK];
} rope_state;

/* Tokens stepped from one prepared token before cos/sin are computed afresh. */
#define POSENC_ROPE_RUN 256

typedef void (*rope_prepare_fn)(const struct posenc_rope_plan *plan, int32_t pos, unsigned flags,
                                size_t p0, size_t n, float *c, float *s, rope_state *state);
typedef void (*rope_advance_fn)(const struct posenc_rope_plan *plan, unsigned flags, size_t n,
                                rope_state *state, float *c, float *s);
typedef void (*rope_rotate_fn)(const rope_view *view, void *row, size_t half, size_t p0, size_t n,
                               const float *c, const float *s, unsigned flags);

/* elem: the storage type of the views, which `rotate` is written for. */
static inline __attribute__((always_inline)) void rope_drive(const rope_args *a, posenc_elem elem,
                                                             rope_prepare_fn prepare,
                                                             rope_advance_fn advance,
                                                             rope_rotate_fn rotate) {
  _Alignas(64) float c[2 * POSENC_ROPE_CHUNK];
  _Alignas(64) float s[2 * POSENC_ROPE_CHUNK];
  rope_state state;
  const size_t n_pairs = a->plan->n_pairs;
  /* Stepping would not reproduce the float32 recipe's angles bit for bit. */
  const int step = advance && n_pairs <= POSENC_ROPE_CHUNK && !(a->flags & POSENC_ROPE_F32_ANGLES);
  int64_t prev = 0;
  size_t run = 0;
  for (size_t t = 0; t < a->n_tokens; ++t) {
    const int32_t pos = rope_position(a, t);
    for (size_t p0 = 0; p0 < n_pairs; p0 += POSENC_ROPE_CHUNK) {
      const size_t n = n_pairs - p0 < POSENC_ROPE_CHUNK ? n_pairs - p0 : POSENC_ROPE_CHUNK;
      if (step && t > 0 && run < POSENC_ROPE_RUN && (int64_t)pos == prev + 1) {
        advance(a->plan, a->flags, n, &state, c, s);
        ++run;
      } else {
        prepare(a->plan, pos, a->flags, p0, n, c, s, step ? &state : NULL);
        run = 0;
      }
      for (size_t v = 0; v < a->n_views; ++v) {
        const rope_view *view = &a->views[v];
        char *row = (char *)view->data + t * view->token_stride * posenc_elem_size(elem);
        rotate(view, row, n_pairs, p0, n, c, s, a->flags);
      }
    }
    prev = pos;
  }
}

#endif /* POSENC_KERNELS_ROPE_DRIVER_H */
