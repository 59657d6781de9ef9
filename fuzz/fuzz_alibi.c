/* libFuzzer target: posenc_alibi_add and _bias (byte 0 % 6: 0-1 on f32 scores, 4-5 on bf16 or
 * f16 scores, the byte after misc picking the type) and posenc_alibi_softmax_f32 (2) and
 * _bf16 (3): head, query and key counts, [H, n_q, n_k], [n_q, H, n_k] or arbitrary strides,
 * q_offset at and past 2^31, scales incl. NaN and Inf, causal and unknown flags, computed,
 * given or special slopes (NULL; softmax: sometimes in the arena, inside the scores' range
 * or just after it). Written values: add and bias bit for bit; softmax within twice the
 * header's bound (POSENC_ALIBI_SOFTMAX_*_TOLERANCE; bf16: plus one bf16 rounding, per 16-bit
 * element); an accepted softmax call never has its slopes inside the scores' address range.
 * Besides common.h's checks. */
#include <math.h>
#include <stdlib.h>

#include "common.h"

enum { ADD, BIAS, SOFTMAX, SOFTMAX_BF16, ADD16, BIAS16 };

typedef struct alibi_call {
  call base;
  float *slopes;
  size_t n_heads, n_q, n_k, q_offset, head_stride, row_stride, out_off;
  float scale;
  unsigned flags;
  int slopes_in_arena; /* softmax: slopes at arena element slopes_off (maybe in the scores) */
  size_t slopes_off;
} alibi_call;

static int softmax(const call *c) { return c->family == SOFTMAX || c->family == SOFTMAX_BF16; }

/* The strides of a layout (0 [H, n_q, n_k], 1 [n_q, H, n_k], 2-3 arbitrary). */
static void decode_layout(reader *r, alibi_call *c) {
  const size_t hq = c->n_q < 64 ? c->n_q : 1, nk = c->n_k < 64 ? c->n_k : 1;
  int huge = 0;
  const uint8_t layout = u8(r) % 4;
  if (layout == 0) {
    c->row_stride = nk;
    c->head_stride = hq * nk;
  } else if (layout == 1) {
    c->head_stride = nk;
    c->row_stride = c->n_heads * nk;
  } else {
    c->row_stride = stride(r, nk, &huge);
    c->head_stride = stride(r, hq * nk, &huge);
  }
}

static size_t q_offset_of(reader *r, size_t n_q, size_t n_k) {
  const size_t hq = n_q < 64 ? n_q : 1;
  const uint8_t qo = u8(r);
  switch (qo % 8) {
    case 0:
      return 0;
    case 1:
      return n_k >= n_q ? n_k - n_q : 0; /* decode-style */
    case 2:
      return ((size_t)1 << 31) - hq; /* last valid */
    case 3:
      return ((size_t)1 << 31) - hq + 1; /* past 2^31 when n_q > 0 */
    case 4:
      return SIZE_MAX - u8(r);
    default:
      return u16(r) % 64;
  }
}

/* Slopes (1/32: NULL): posenc_alibi_slopes' for a max_bias of 8 or another, else given
 * values, 1/16 of them special. */
static float *slopes_of(reader *r, size_t n_heads) {
  if (!(u8(r) % 32)) return NULL;
  float *s = malloc((n_heads + 1) * sizeof *s);
  if (!s) abort();
  const uint8_t kind = u8(r);
  if (kind % 2 == 0 && n_heads &&
      posenc_alibi_slopes(n_heads, kind % 4 ? 8.0 : 1.0 + u8(r) % 16, s) == POSENC_OK)
    return s;
  for (size_t h = 0; h < n_heads; ++h) {
    const uint8_t b = u8(r);
    s[h] = b < 16 ? special_float(b, u32(r)) : (float)b / 256.0f;
  }
  return s;
}

static call *decode(reader *r) {
  static const double scales[] = {1.0, 0.125, 0.5, -1.0, 3.0};
  alibi_call *c = calloc(1, sizeof *c);
  if (!c) abort();
  c->base.family = u8(r) % 6;
  decode_header(r, &c->base, c->base.family >= ADD16);
  if (c->base.family == SOFTMAX_BF16) c->base.halves = c->base.bf16 = 1;
  c->n_heads = count(r, 6, 0);
  c->n_q = count(r, 40, 1);
  c->n_k = count(r, 40, 1);
  decode_layout(r, c);
  c->out_off = u8(r) % 4;
  const size_t scores_span = span(c->n_heads, c->head_stride, c->n_q, c->row_stride, c->n_k);
  const size_t scores_len = c->base.halves ? (scores_span + 1) / 2 : scores_span;
  c->base.len = c->out_off + scores_len + 1;
  c->q_offset = q_offset_of(r, c->n_q, c->n_k);
  c->scale = u8(r) % 4 ? 1.0f : (float)param(r, scales, 5);
  c->flags = flags_of(r, POSENC_ALIBI_CAUSAL);
  c->slopes = slopes_of(r, c->n_heads);
  /* Softmax: sometimes slopes in the arena, from the arena's data, inside the scores'
   * address range (must be rejected) or just after it. */
  if (softmax(&c->base) && c->n_heads && c->n_heads < 64 && u8(r) % 8 == 0) {
    c->slopes_in_arena = 1;
    c->slopes_off = c->out_off + u8(r) % (scores_len + 2);
    c->base.len = max_size(c->base.len, c->slopes_off + c->n_heads + 1);
  }
  return &c->base;
}

static void mark_outputs(call *base) {
  const alibi_call *c = (const alibi_call *)base;
  const size_t off = base->halves ? 2 * c->out_off + base->misalign / 2 : c->out_off;
  touch_grid(base, off, c->n_heads, c->head_stride, c->n_q, c->row_stride, c->n_k);
}

static posenc_status invoke(const call *base, float *arena) {
  const alibi_call *c = (const alibi_call *)base;
  float *out = base->null_data ? NULL : arena_f32(base, arena, c->out_off);
  void *out16 = out; /* bf16 or f16 scores */
  const float *slopes = c->slopes_in_arena ? arena + c->slopes_off : c->slopes;
  const int f16 = !base->bf16;
  switch (base->family) {
    case ADD:
      return posenc_alibi_add_f32(slopes, c->n_heads, c->n_q, c->n_k, c->q_offset, out,
                                  c->head_stride, c->row_stride, c->scale, c->flags);
    case BIAS:
      return posenc_alibi_bias_f32(slopes, c->n_heads, c->n_q, c->n_k, c->q_offset, out,
                                   c->head_stride, c->row_stride, c->flags);
    case SOFTMAX:
      return posenc_alibi_softmax_f32(slopes, c->n_heads, c->n_q, c->n_k, c->q_offset, out,
                                      c->head_stride, c->row_stride, c->scale, c->flags);
    case SOFTMAX_BF16:
      return posenc_alibi_softmax_bf16(slopes, c->n_heads, c->n_q, c->n_k, c->q_offset, out16,
                                       c->head_stride, c->row_stride, c->scale, c->flags);
    case ADD16:
      return (f16 ? posenc_alibi_add_f16 : posenc_alibi_add_bf16)(
          slopes, c->n_heads, c->n_q, c->n_k, c->q_offset, out16, c->head_stride, c->row_stride,
          c->scale, c->flags);
    default:
      return (f16 ? posenc_alibi_bias_f16 : posenc_alibi_bias_bf16)(
          slopes, c->n_heads, c->n_q, c->n_k, c->q_offset, out16, c->head_stride, c->row_stride,
          c->flags);
  }
}

/* Softmax: both results within the header's bound of the exact value, so within twice it
 * of each other (the bound taken at the larger one, a hair generously); bf16: plus one bf16
 * rounding (2^-7 relative), as two floats within the bound may round to neighbouring bf16
 * values. Add and bias: bit for bit. */
static void check_element(const call *c, const char *isa, size_t index, float got, float want) {
  if (!softmax(c)) {
    if (!same_value(got, want))
      violation(c, isa, "score not bit-identical to scalar", index, got, want);
    return;
  }
  const double p = fmax(fabs((double)got), fabs((double)want));
  double bound = 2.0 * (POSENC_ALIBI_SOFTMAX_REL_TOLERANCE * (p * 1.0001) +
                        POSENC_ALIBI_SOFTMAX_ABS_TOLERANCE);
  if (c->halves) bound += 0x1p-7 * p;
  if (!within(got, want, bound)) violation(c, isa, "softmax out of tolerance", index, got, want);
}

static void check_values(const call *c, const char *isa, const run_result *res,
                         const run_result *scalar) {
  each_written(c, isa, res, scalar, check_element);
}

/* Softmax with slopes in the arena: an accepted call's slopes share no byte with the
 * scores' range (no scores, a no-op: nothing to alias). */
static void check_slopes_apart(const call *base, const run_result *scalar) {
  const alibi_call *c = (const alibi_call *)base;
  (void)scalar;
  if (!c->slopes_in_arena || c->n_heads >= HUGE_BASE) return;
  const size_t elem = base->halves ? 2 : 4;
  const size_t n = span(c->n_heads, c->head_stride, c->n_q, c->row_stride, c->n_k);
  const size_t first = 4 * c->out_off + base->misalign, end = first + elem * n;
  const size_t s0 = 4 * c->slopes_off, s1 = s0 + 4 * c->n_heads;
  if (n != 0 && s0 < end && first < s1)
    violation(base, "scalar", "slopes inside the scores accepted", c->slopes_off, 0.0f, 0.0f);
}

static void destroy(call *base) {
  free(((alibi_call *)base)->slopes);
  free(base);
}

static const fuzz_target target = {"fuzz_alibi",       decode, mark_outputs, invoke, check_values,
                                   check_slopes_apart, destroy};
FUZZ_TARGET(target)
