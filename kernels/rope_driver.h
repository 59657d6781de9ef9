/* Internal: the token / chunk / head loop shared by every RoPE variant.
 *
 * A variant supplies these functions and this driver does the rest:
 *   prepare(plan, pos, flags, att, p0, n, c, s, anchor): cos/sin (times att) of pairs
 *       [p0, p0 + n) at position pos, in the layout that rotate() reads: NEOX c[i], s[i];
 *       GPTJ c[2i] = c[2i+1] = c_i, s[2i] = -s_i, s[2i+1] = s_i (forward direction: rotate()
 *       negates s for POSENC_ROPE_INVERSE). It may write up to POSENC_ROPE_CHUNK pairs' worth
 *       of each buffer. `anchor` (NULL in the scalar reference and where the plan has no
 *       step table or the angles follow the float32 recipe): a SIMD variant forms the values
 *       of pos from those of its anchor a = pos - (pos mod POSENC_ROPE_ANCHOR), computed by
 *       the accurate sincos and kept in *anchor while the next tokens (of this call or, with
 *       the thread's anchor, the next calls) share it, and the
 *       plan's cos/sin(k w_i) for k = pos - a, by angle addition in double. Either way the
 *       values are a function of (plan, pos, flags, att) alone: whatever the call's first
 *       token, split, batch or form (plan, factors, in place, out of place), a position's
 *       cos/sin are the same bits (split invariance).
 *   prepare_delta(from, pos, to, pos', flags, att, p0, n, c, s): as prepare, for the angle
 *       rope_angle_difference(angle of `to` at pos', angle of `from` at pos) (re-rotation
 *       between different frequency sets), always computed afresh.
 *   rotate(view, src_row, dst_row, half, p0, n, c, s, flags): rotates pairs [p0, p0 + n) of
 *       every head vector of one token's row of a view (R/2 = half), reading src and writing
 *       dst (the same row in place), touching no other element; out of place, the chunk that
 *       ends the pairs also copies elements [R, head_dim). It reads c and s only up to their
 *       n pairs' entries (a factor row ends there, unpadded; prepare()'s buffers are padded).
 * Taking all heads at once lets a SIMD variant keep a block of cos/sin in registers across heads.
 * M-RoPE tokens take each pair's cos/sin from the prepare() of its row's position; a token
 * whose inputs equal the previous token's (a context shift's constant p' - p, repeated
 * positions, the same positions in every batch) reuses its cos/sin when the plan is one
 * chunk. With factors given (apply) nothing is prepared: each token's row of the factor
 * buffer is rotate()'s c/s. With factors_out given (compute) nothing is rotated: each
 * token's c/s are written to its row. cos/sin are computed once per token and chunk of
 * pairs, and shared by every head of every view; the driver is inlined into each variant
 * so all calls are direct. */
#ifndef POSENC_KERNELS_ROPE_DRIVER_H
#define POSENC_KERNELS_ROPE_DRIVER_H

#include <string.h>

#include "rope.h"

_Static_assert(POSENC_ROPE_CHUNK % POSENC_PLAN_PAD == 0,
               "a chunk's loops may run to a whole vector (rope.h)");

/* cos/sin (forward, before the attention factor) of one chunk's pairs at an anchor
 * position, widened exactly from the accurate float sincos. */
typedef struct rope_anchor {
  _Alignas(64) double c[POSENC_ROPE_CHUNK];
  _Alignas(64) double s[POSENC_ROPE_CHUNK];
  int32_t pos;
  int valid;
  /* The thread's anchor (posenc_rope_thread_cache) only: what its values were computed for,
   * besides pos: the plan (its serial, never reused; its pair count with it) and the variant
   * (its prepare function). */
  uint64_t plan_serial;
  void (*variant)(void);
} rope_anchor;

/* The cos/sin of the last plain token that prepare() wrote here (the thread's cache, one-chunk
 * plans): what they were computed for besides the plan and variant (the anchor's): its
 * position, the attention factor's bits and the GPT-J layout (what prepare() reads of the
 * flags where the values are anchored). */
typedef struct rope_last_token {
  _Alignas(64) float c[2 * POSENC_ROPE_CHUNK];
  _Alignas(64) float s[2 * POSENC_ROPE_CHUNK];
  int32_t pos;
  uint32_t att_bits;
  unsigned gptj;
  int valid;
} rope_last_token;

/* The calling thread's cache, kept from one call to the next (dispatch/api_rope.c): the
 * anchor's values are a function of (plan, variant, pos) alone, so a decode step's calls
 * (every layer's, at positions that share an anchor for 64 tokens) compute its sincos once
 * instead of once per call, with the same bits; and every layer's call of one decode step,
 * at one position, takes the cos/sin its first call prepared (last), the same bits again. */
typedef struct rope_thread_cache {
  rope_anchor anchor;
  rope_last_token last;
} rope_thread_cache;
rope_thread_cache *posenc_rope_thread_cache(void);

typedef void (*rope_prepare_fn)(const struct posenc_rope_plan *plan, int32_t pos, unsigned flags,
                                float att, size_t p0, size_t n, float *c, float *s,
                                rope_anchor *anchor);
typedef void (*rope_prepare_delta_fn)(const struct posenc_rope_plan *from, int32_t from_pos,
                                      const struct posenc_rope_plan *to, int32_t to_pos,
                                      unsigned flags, float att, size_t p0, size_t n, float *c,
                                      float *s);
typedef void (*rope_rotate_fn)(const rope_view *view, const void *src_row, void *dst_row,
                               size_t half, size_t p0, size_t n, const float *c, const float *s,
                               unsigned flags);
/* QK-norm: heads [h0, h0 + nh) of one token's row of view, each normalised (rope.h, norm_w)
 * into out[(h - h0) * head_dim + d], d in [0, head_dim). */
typedef void (*rope_norm_fn)(const rope_view *view, const void *src_row, size_t h0, size_t nh,
                             float *out);

/* The anchor of pos and pos's offset from it. */
static inline int32_t rope_anchor_of(int32_t pos, size_t *k) {
  /* pos mod 64 in [0, 64) for negative positions too (2^32 is a multiple of 64); the anchor
   * pos - k >= INT32_MIN, itself a multiple of 64. */
  *k = (uint32_t)pos & (POSENC_ROPE_ANCHOR - 1);
  return (int32_t)((int64_t)pos - (int64_t)*k);
}

/* The inputs that fix one token's cos/sin: a position (plain rotation, an M-RoPE token
 * whose three positions are equal, a re-rotation between identical frequency sets by
 * p' - p), an M-RoPE triple, or a re-rotation's (p, p'). */
typedef struct rope_token {
  enum { TOKEN_POSITION, TOKEN_MROPE, TOKEN_DELTA } kind;
  int64_t p[ROPE_MROPE_ROWS];
} rope_token;

/* Token g = b * n_tokens + t of the call, into *k. An M-RoPE token whose rows used by some
 * pair (rows_used) hold one position is a plain one at that position. */
static inline void rope_token_of(const rope_args *a, size_t g, size_t t, rope_token *k) {
  k->kind = TOKEN_POSITION;
  k->p[0] = rope_position(a, g, t);
  _Static_assert(ROPE_MROPE_ROWS == 4, "a token's positions are zeroed one by one");
  k->p[1] = k->p[2] = k->p[3] = 0; /* as a loop: 1.08x the time of 8-head f32 -> f16 calls */
  if (a->kind == ROPE_MROPE) {
    const int32_t *p = a->positions;
    const size_t n = a->n_batch * a->n_tokens;
    const int rows = a->ggml ? 4 : 3;
    int first = -1;
    for (int r = 1; r < rows; ++r) k->p[r] = p[(size_t)r * n + g];
    for (int r = 0; r < rows; ++r) {
      if (!(a->rows_used >> r & 1u)) continue;
      if (first < 0)
        first = r;
      else if (k->p[r] != k->p[first])
        k->kind = TOKEN_MROPE;
    }
    if (k->kind == TOKEN_POSITION) k->p[0] = k->p[first];
  } else if (a->kind == ROPE_REROTATE) {
    const int64_t from = rope_from_position(a, g, t), d = k->p[0] - from;
    /* Same frequencies: the angle of p' - p is the difference, formed exactly. */
    if (a->same_freqs && !(a->flags & POSENC_ROPE_F32_ANGLES) && d >= -INT32_MAX &&
        d <= INT32_MAX) {
      k->p[0] = d;
    } else {
      k->kind = TOKEN_DELTA;
      k->p[1] = from;
    }
  }
}

static inline int rope_token_equal(const rope_token *x, const rope_token *y) {
  return x->kind == y->kind && x->p[0] == y->p[0] && x->p[1] == y->p[1] && x->p[2] == y->p[2] &&
         x->p[3] == y->p[3];
}

/* MROPE, a token with distinct positions: cos/sin of chunk [p0, p0 + n) of each row's
 * position in that row's buffer, then each pair's entries (one, or two for GPTJ) taken from
 * its row's buffer into c/s. A row whose position equals an earlier row's shares its
 * buffer; with a one-chunk plan (`keep`) a buffer still holding its row's position from an
 * earlier token is kept (an image's temporal and height positions repeat along a row). */
typedef struct rope_mrope_rows {
  _Alignas(64) float c[ROPE_MROPE_ROWS][2 * POSENC_ROPE_CHUNK];
  _Alignas(64) float s[ROPE_MROPE_ROWS][2 * POSENC_ROPE_CHUNK];
  int64_t pos[ROPE_MROPE_ROWS];
  int valid[ROPE_MROPE_ROWS];
} rope_mrope_rows;

POSENC_INLINE void rope_prepare_mrope(const rope_args *a, const rope_token *k,
                                      rope_prepare_fn prepare, float att, size_t p0, size_t n,
                                      float *c, float *s, rope_mrope_rows *rows, int keep,
                                      rope_anchor *anchors) {
  int src[ROPE_MROPE_ROWS];
  for (int r = 0; r < ROPE_MROPE_ROWS; ++r) {
    if (!(a->rows_used >> r & 1u)) continue; /* no pair takes row r */
    src[r] = r;
    for (int e = 0; e < r; ++e)
      if ((a->rows_used >> e & 1u) && k->p[e] == k->p[r]) src[r] = src[e];
    if (src[r] != r || (keep && rows->valid[r] && rows->pos[r] == k->p[r])) continue;
    prepare(a->plan, (int32_t)k->p[r], a->flags, att, p0, n, rows->c[r], rows->s[r],
            anchors ? &anchors[r] : NULL);
    rows->pos[r] = k->p[r];
    rows->valid[r] = keep;
  }
  /* Copied up to the plan's padding: prepare() fills each buffer to its own vector width
   * past n, lanes that rotate() loads for a partial vector (and does not use); the copy must
   * carry them (MemorySanitizer tracks them), entries beyond are copied but never read. */
  const size_t per = (a->flags & POSENC_ROPE_GPTJ) ? 2 : 1;
  size_t filled = (n + POSENC_PLAN_PAD - 1) / POSENC_PLAN_PAD * POSENC_PLAN_PAD;
  if (filled > POSENC_ROPE_CHUNK) filled = POSENC_ROPE_CHUNK;
  /* One copy per run of pairs from the same buffer (a section: three runs for
   * Qwen2-VL's layout; single pairs for the interleaved one). */
  for (size_t i = 0; i < filled;) {
    /* The padding's entries (beyond the chunk's n pairs) from the last pair's buffer: with
     * ggml's rule pair indices past R/2 may name a row no pair takes. */
    const int b = src[rope_mrope_row(a, p0 + (i < n ? i : n - 1))];
    size_t e = i + 1;
    while (e < filled && src[rope_mrope_row(a, p0 + (e < n ? e : n - 1))] == b) ++e;
    memcpy(c + per * i, rows->c[b] + per * i, per * (e - i) * sizeof *c);
    memcpy(s + per * i, rows->s[b] + per * i, per * (e - i) * sizeof *s);
    i = e;
  }
}

/* A quantized view's (view->quant) n_heads head vectors of dim = view->head_dim floats, head
 * h at x + h * dim, into their bytes, head h at out + h * view->dst_head_stride: q8_0 (dim a
 * multiple of 32) into dim / 32 ggml q8_0 blocks, bit for bit rope_q8_0_block_ref's; FP8
 * into dim bytes, bit for bit rope_fp8_e4m3_ref(x[i] / view->fp8_scale). */
typedef void (*rope_quant_fn)(const rope_view *view, const float *x, size_t n_heads,
                              unsigned char *out);

/* The functions a variant may supply beyond rotate: for QK-norm views (the scalar
 * reference) norm for the source type and rotate from f32 to the destination type (without
 * them, NULL: the SIMD variants, rotate() itself normalises the views with norm_w); for
 * quantized views (the f32 kernels: q8_0, FP8) quant, after rotate into a float buffer; for
 * plain, QK-norm and quantized views (not deterministic, not streamed; a quantized view's
 * rotation into the buffer) of a call that prefetches (rope_prefetches) rotate_pf, rotate()
 * with the prefetches (NULL otherwise). */
typedef struct rope_extra_ops {
  rope_norm_fn norm;
  rope_rotate_fn rotate;
  rope_quant_fn quant;
  rope_rotate_fn rotate_pf;
} rope_extra_ops;

/* A quantized view's token row (q8_0, FP8): its heads rotated (f32 to f32, out of place, so
 * elements [R, head_dim) are copied) into a float buffer as many at a time as it holds, then
 * those heads quantized into their bytes by one call (dst strides in bytes). Not inlined, as
 * rope_emit_normed. */
static __attribute__((noinline, unused)) void rope_emit_quant(
    const rope_args *a, const rope_view *view, const char *src_row, char *dst_row, size_t p0,
    size_t n, const float *c, const float *s, rope_rotate_fn rotate, rope_quant_fn quant) {
  _Alignas(64) float buf[POSENC_ROPE_NORM_FLOATS];
  const size_t dim = view->head_dim, per = POSENC_ROPE_NORM_FLOATS / dim;
  for (size_t h0 = 0; h0 < view->n_heads; h0 += per) {
    const size_t nh = view->n_heads - h0 < per ? view->n_heads - h0 : per;
    rope_view group = *view;
    group.dst = buf;
    group.n_heads = nh;
    group.dst_head_stride = dim;
    group.quant = ROPE_QUANT_NONE;
    const char *src = src_row + h0 * view->src_head_stride * sizeof(float);
    rotate(&group, src, buf, a->n_pairs, p0, n, c, s, a->flags);
    quant(view, buf, nh, (unsigned char *)dst_row + h0 * view->dst_head_stride);
  }
}

/* A QK-norm view's token row: its heads normalised into a float buffer as many at a time as
 * it holds, each group rotated from there into dst (the buffer is never dst: out of place
 * for rotate, which so also writes the normalised elements [R, head_dim)). Not inlined: the
 * buffer's stack is only taken by the calls that normalise. */
static __attribute__((noinline, unused)) void rope_emit_normed(
    const rope_args *a, const rope_view *view, const char *src_row, char *dst_row, size_t p0,
    size_t n, const float *c, const float *s, size_t dst_size, const rope_extra_ops *ops) {
  _Alignas(64) float buf[POSENC_ROPE_NORM_FLOATS];
  const size_t per = POSENC_ROPE_NORM_FLOATS / view->head_dim;
  for (size_t h0 = 0; h0 < view->n_heads; h0 += per) {
    const size_t nh = view->n_heads - h0 < per ? view->n_heads - h0 : per;
    ops->norm(view, src_row, h0, nh, buf);
    rope_view group = *view;
    group.src = buf;
    group.n_heads = nh;
    group.src_head_stride = view->head_dim;
    char *dst = dst_row + h0 * view->dst_head_stride * dst_size;
    ops->rotate(&group, buf, dst, a->n_pairs, p0, n, c, s, a->flags);
  }
}

/* Whether a call writes its out-of-place destinations with non-temporal stores
 * (ROPE_STREAM_): plain rotations (no QK-norm, no quantized view, not deterministic) whose
 * destination views, other than their sources, hold POSENC_STREAM_MIN_BYTES or more. */
static inline int rope_streams(const rope_args *a, size_t dst_size) {
  if (a->factors_out || (a->flags & POSENC_ROPE_DETERMINISTIC)) return 0;
  size_t bytes = 0;
  for (size_t v = 0; v < a->n_views; ++v) {
    const rope_view *view = &a->views[v];
    if (view->src == view->dst || view->quant || view->norm_w) continue;
    bytes += a->n_batch * a->n_tokens * view->n_heads * view->head_dim * dst_size;
  }
  return bytes >= POSENC_STREAM_MIN_BYTES;
}

/* Whether a call prefetches the sources of its views, plain, QK-norm or quantized
 * (rope_extra_ops.rotate_pf, which the SIMD variants supply for 16-bit and f32 -> f32 rows;
 * a quantized view's f32 rows are rotated by it into the buffer rope_emit_quant quantizes):
 * not deterministic, not streamed, and the sources hold POSENC_PREFETCH_MIN_BYTES or more.
 * Quantized views (Zen 5, bench interleaved rounds, 8 heads x 128 of 16384 tokens, 64 MiB of
 * f32, new/old): q8_0 avx512 0.67-0.70x the time, avx2 0.81x, sse4 0.87x; FP8 avx512
 * 0.82-0.84x, avx2 0.92x, sse4 0.94x (without, avx2 had run q8_0 ahead of avx512: the
 * report's dispatcher check, 0.89 and again 0.94). */
static inline int rope_prefetches(const rope_args *a, size_t src_size, int stream) {
  if (a->factors_out || stream || (a->flags & POSENC_ROPE_DETERMINISTIC)) return 0;
  size_t bytes = 0;
  for (size_t v = 0; v < a->n_views; ++v) {
    const rope_view *view = &a->views[v];
    bytes += a->n_batch * a->n_tokens * view->n_heads * view->head_dim * src_size;
  }
  return bytes >= POSENC_PREFETCH_MIN_BYTES;
}

/* Token (b, t)'s use of the cos/sin c, s of pairs [p0, p0 + n): written to its factor row
 * (compute), or applied to every view. rflags: the flags rotate() takes (a->flags, with
 * ROPE_STREAM_ where the call streams). */
POSENC_INLINE void rope_emit(const rope_args *a, size_t g, size_t b, size_t t, size_t p0, size_t n,
                             const float *c, const float *s, size_t src_size, size_t dst_size,
                             rope_rotate_fn rotate, const rope_extra_ops *extra, unsigned rflags) {
  if (a->factors_out) {
    const size_t per = (a->flags & POSENC_ROPE_GPTJ) ? 2 : 1, half = a->factor_half;
    float *row = a->factors_out + g * 2 * half;
    memcpy(row + per * p0, c, per * n * sizeof *c);
    memcpy(row + half + per * p0, s, per * n * sizeof *s);
    return;
  }
  for (size_t v = 0; v < a->n_views; ++v) {
    const rope_view *view = &a->views[v];
    size_t cell = t; /* the destination's token */
    if (view->slots) {
      const int64_t slot =
          view->slots64 ? ((const int64_t *)view->slots)[g] : ((const int32_t *)view->slots)[g];
      if (slot < 0) continue;
      cell = (size_t)slot;
    }
    const char *src_row = (const char *)view->src +
                          (b * view->src_batch_stride + t * view->src_token_stride) * src_size;
    const size_t ds = view->quant ? 1 : dst_size; /* q8_0, FP8: strides in bytes */
    char *dst_row =
        (char *)view->dst + (b * view->dst_batch_stride + cell * view->dst_token_stride) * ds;
    if (view->quant) {
      rope_emit_quant(a, view, src_row, dst_row, p0, n, c, s,
                      extra->rotate_pf ? extra->rotate_pf : rotate, extra->quant);
      continue;
    }
    if (view->norm_w && extra->norm)
      rope_emit_normed(a, view, src_row, dst_row, p0, n, c, s, dst_size, extra);
    else if (extra->rotate_pf)
      extra->rotate_pf(view, src_row, dst_row, a->n_pairs, p0, n, c, s, rflags);
    else
      rotate(view, src_row, dst_row, a->n_pairs, p0, n, c, s, rflags);
  }
}

/* src, dst: the storage types of the views (read, written), which `rotate` is written for.
 * norm_fn, rotate_normed: the variant's QK-norm functions for these types (used only for
 * views with norm_w), or NULL when rotate() normalises such views itself; quant: the
 * quantizer of the f32 kernels (used only for q8_0 and FP8 views), else NULL; rotate_pf:
 * rotate() with prefetches, for the plain views of calls that prefetch, or NULL
 * (rope_extra_ops). can_stream: rotate() takes ROPE_STREAM_ (a SIMD variant). Returns
 * whether rotate() was given it: the caller then fences the non-temporal stores. */
POSENC_INLINE int rope_drive(const rope_args *a, posenc_elem src, posenc_elem dst,
                             rope_prepare_fn prepare, int anchored,
                             rope_prepare_delta_fn prepare_delta, rope_rotate_fn rotate,
                             rope_norm_fn norm_fn, rope_rotate_fn rotate_normed,
                             rope_quant_fn quant, rope_rotate_fn rotate_pf, int can_stream) {
  _Alignas(64) float c[2 * POSENC_ROPE_CHUNK];
  _Alignas(64) float s[2 * POSENC_ROPE_CHUNK];
  const size_t src_size = posenc_elem_size(src), dst_size = posenc_elem_size(dst);
  const size_t n_pairs = a->n_pairs, n_all = a->n_batch * a->n_tokens;
  const int stream = can_stream && rope_streams(a, dst_size);
  const unsigned rflags = a->flags | (stream ? ROPE_STREAM_ : 0u);
  const rope_extra_ops extra_ops = {
      norm_fn, rotate_normed, quant,
      rotate_pf && rope_prefetches(a, src_size, stream) ? rotate_pf : NULL};
  const rope_extra_ops *const extra = &extra_ops;
  if (a->factors) { /* apply: every token's cos/sin are its factor row */
    const size_t per = (a->flags & POSENC_ROPE_GPTJ) ? 2 : 1, half = a->factor_half;
    for (size_t g = 0; g < n_all; ++g) {
      const size_t b = g / a->n_tokens, t = g - b * a->n_tokens;
      const float *row =
          a->factors + (a->factor_first_row + b * a->factor_batch_stride + t) * 2 * half;
      for (size_t p0 = 0; p0 < n_pairs; p0 += POSENC_ROPE_CHUNK) {
        const size_t n = n_pairs - p0 < POSENC_ROPE_CHUNK ? n_pairs - p0 : POSENC_ROPE_CHUNK;
        rope_emit(a, g, b, t, p0, n, row + per * p0, row + half + per * p0, src_size, dst_size,
                  rotate, extra, rflags);
      }
    }
    return stream;
  }
  rope_mrope_rows mrope_rows;
  for (int r = 0; r < ROPE_MROPE_ROWS; ++r) mrope_rows.valid[r] = 0;
  const float att = (float)a->att;
  /* One chunk: a token whose inputs equal the previous token's reuses its cos/sin. */
  const int single = n_pairs <= POSENC_ROPE_CHUNK;
  /* Anchored values need the plan's step table; the float32 recipe and the deterministic mode
   * (whose values must not depend on the step table's libm cos/sin) are computed directly. */
  const int use_anchor = anchored && a->plan->step_c &&
                         !(a->flags & (POSENC_ROPE_F32_ANGLES | POSENC_ROPE_DETERMINISTIC));
  rope_anchor anchors[ROPE_MROPE_ROWS]; /* M-RoPE rows' anchors, for this call */
  for (int r = 0; r < ROPE_MROPE_ROWS; ++r) anchors[r].valid = 0;
  rope_anchor *anchor = NULL;   /* plain tokens': the thread's, kept across calls */
  rope_last_token *last = NULL; /* one-chunk plain tokens' cos/sin: the thread's, the same */
  if (use_anchor) {
    rope_thread_cache *const cache = posenc_rope_thread_cache();
    anchor = &cache->anchor;
    void (*const variant)(void) = (void (*)(void))prepare;
    if (anchor->plan_serial != a->plan->serial || anchor->variant != variant) {
      anchor->valid = 0;
      cache->last.valid = 0;
      anchor->plan_serial = a->plan->serial;
      anchor->variant = variant;
    }
    if (single) last = &cache->last;
  }
  uint32_t att_bits;
  memcpy(&att_bits, &att, sizeof att_bits);
  const unsigned gptj = (a->flags & POSENC_ROPE_GPTJ) != 0;
  const float *cp = c, *sp = s; /* the cos/sin the previous token took */
  /* This token's inputs and the previous token's, in turn: never copied (copying a token just
   * written field by field took one wide load that the narrow stores could not forward: a
   * store-forwarding stall per token, 5% of an 8-head f32 -> f16 call's time). */
  rope_token tokens[2];
  for (size_t g = 0; g < n_all; ++g) {
    const size_t b = g / a->n_tokens, t = g - b * a->n_tokens;
    rope_token *const kp = &tokens[g & 1];
    rope_token_of(a, g, t, kp);
    if (single && g > 0 && rope_token_equal(kp, &tokens[(g & 1) ^ 1])) {
      rope_emit(a, g, b, t, 0, n_pairs, cp, sp, src_size, dst_size, rotate, extra, rflags);
      continue;
    }
    if (last && g == 0 && kp->kind == TOKEN_POSITION) {
      /* the call's first token: prepared into the thread's buffer, unless it holds this
       * token's values already (the later tokens of a call: into the stack's, 0.96x the
       * time of 8 heads x 16 tokens f32 -> f16 out of place) */
      const int32_t pos = (int32_t)kp->p[0];
      if (!last->valid || last->pos != pos || last->att_bits != att_bits || last->gptj != gptj) {
        prepare(a->plan, pos, a->flags, att, 0, n_pairs, last->c, last->s, anchor);
        last->pos = pos;
        last->att_bits = att_bits;
        last->gptj = gptj;
        last->valid = 1;
      }
      cp = last->c;
      sp = last->s;
      rope_emit(a, g, b, t, 0, n_pairs, cp, sp, src_size, dst_size, rotate, extra, rflags);
      continue;
    }
    cp = c;
    sp = s;
    for (size_t p0 = 0; p0 < n_pairs; p0 += POSENC_ROPE_CHUNK) {
      const size_t n = n_pairs - p0 < POSENC_ROPE_CHUNK ? n_pairs - p0 : POSENC_ROPE_CHUNK;
      if (kp->kind == TOKEN_MROPE)
        rope_prepare_mrope(a, kp, prepare, att, p0, n, c, s, &mrope_rows, single,
                           use_anchor ? anchors : NULL);
      else if (kp->kind == TOKEN_DELTA)
        prepare_delta(a->from_plan, (int32_t)kp->p[1], a->plan, (int32_t)kp->p[0], a->flags, att,
                      p0, n, c, s);
      else
        prepare(a->plan, (int32_t)kp->p[0], a->flags, att, p0, n, c, s, anchor);
      rope_emit(a, g, b, t, p0, n, c, s, src_size, dst_size, rotate, extra, rflags);
    }
  }
  return stream;
}

#endif /* POSENC_KERNELS_ROPE_DRIVER_H */
