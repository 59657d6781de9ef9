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
 *       keep a block of cos/sin in registers across heads.
 * cos/sin are computed once per token and chunk of pairs, and shared by every head of
 * every view; the driver is inlined into each variant so both calls are direct. */
#ifndef POSENC_KERNELS_ROPE_DRIVER_H
#define POSENC_KERNELS_ROPE_DRIVER_H

#include "rope.h"

typedef void (*rope_prepare_fn)(const struct posenc_rope_plan *plan, int32_t pos, unsigned flags,
                                size_t p0, size_t n, float *c, float *s);
typedef void (*rope_rotate_fn)(const rope_view *view, float *row, size_t half, size_t p0, size_t n,
                               const float *c, const float *s, unsigned flags);

static inline __attribute__((always_inline)) void rope_drive(const rope_f32_args *a,
                                                             rope_prepare_fn prepare,
                                                             rope_rotate_fn rotate) {
  _Alignas(64) float c[2 * POSENC_ROPE_CHUNK];
  _Alignas(64) float s[2 * POSENC_ROPE_CHUNK];
  const size_t n_pairs = a->plan->n_pairs;
  for (size_t t = 0; t < a->n_tokens; ++t) {
    const int32_t pos = rope_position(a, t);
    for (size_t p0 = 0; p0 < n_pairs; p0 += POSENC_ROPE_CHUNK) {
      const size_t n = n_pairs - p0 < POSENC_ROPE_CHUNK ? n_pairs - p0 : POSENC_ROPE_CHUNK;
      prepare(a->plan, pos, a->flags, p0, n, c, s);
      for (size_t v = 0; v < a->n_views; ++v) {
        const rope_view *view = &a->views[v];
        rotate(view, view->data + t * view->token_stride, n_pairs, p0, n, c, s, a->flags);
      }
    }
  }
}

#endif /* POSENC_KERNELS_ROPE_DRIVER_H */
