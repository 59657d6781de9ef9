/* RoPE into quantized caches: ggml q8_0 blocks (posenc_rope_out_q8_0) and FP8 E4M3 bytes
 * (posenc_rope_out_fp8). Argument checks, then one call of the active ISA's f32 RoPE kernel,
 * whose view marks the destination as quantized (kernels/rope_driver.h rotates each token's
 * heads into a float buffer and quantizes them there: as ggml's quantize_row_q8_0_ref would
 * on the rotated row, or rope_fp8_e4m3_ref(v / scale) per element, as vLLM's fp8 cache
 * writes x / k_scale). */
#include <math.h>

#include "checks.h"

/* A quantized destination: its bytes, head count and strides (bytes), and the kind. */
typedef struct quant_dst {
  void *data;
  size_t n_heads, token_stride, head_stride;
  int quant;        /* ROPE_QUANT_Q8_0 or ROPE_QUANT_FP8 */
  const char *name; /* "q8_0" or "fp8", for the messages */
  float scale;      /* FP8 */
} quant_dst;

/* The checks and the call both forms share, after each form's own (dst given). */
static posenc_status rope_out_quant(const char *fn, const posenc_rope_plan *plan, size_t head_dim,
                                    size_t n_tokens, const int32_t *positions, int32_t start_pos,
                                    const posenc_rope_view *src, const quant_dst *d,
                                    const posenc_slots *slots, unsigned flags) {
  if (src->dtype != POSENC_DTYPE_F32)
    return posenc_reject_field(fn, "src", "dtype", "%d: the %s form takes an f32 source",
                               (int)src->dtype, d->name);
  if (d->quant == ROPE_QUANT_Q8_0 && head_dim % ROPE_Q8_0_BLOCK != 0)
    return posenc_reject(fn, "head_dim", "%zu is not a multiple of the q8_0 block (32)", head_dim);
  if (d->quant == ROPE_QUANT_FP8 && !(isfinite(d->scale) && d->scale > 0.0f))
    return posenc_reject(fn, "scale", "%g: must be finite and > 0", (double)d->scale);
  if (plan->n_pairs > POSENC_ROPE_CHUNK || head_dim > POSENC_ROPE_NORM_FLOATS)
    return posenc_reject(fn, "plan",
                         "rotary_dim %zu / head_dim %zu: the %s form takes rotary_dim up to "
                         "%d and head_dim up to %d",
                         plan->rotary_dim, head_dim, d->name, 2 * POSENC_ROPE_CHUNK,
                         POSENC_ROPE_NORM_FLOATS);
  if (src->n_heads != d->n_heads)
    return posenc_reject_field(fn, "dst", "n_heads", "%zu differs from src->n_heads %zu",
                               d->n_heads, src->n_heads);
  size_t n_rows = n_tokens, written = n_tokens;
  if (slots) {
    const posenc_status st = posenc_check_slots(fn, slots, n_tokens, &written);
    if (st != POSENC_OK) return st;
    n_rows = slots->n_cells;
  }
  if (n_tokens == 0 || src->n_heads == 0 || n_rows == 0 || written == 0) return POSENC_OK;
  posenc_dst_rows rows = {d->data,        1,       d->n_heads, n_rows, d->token_stride,
                          d->head_stride, head_dim}; /* FP8: one byte per element */
  if (d->quant == ROPE_QUANT_Q8_0) {
    /* Blocks begin with their f16 scale: 2-byte aligned data and strides (in bytes). */
    if (d->token_stride % 2 || d->head_stride % 2)
      return posenc_reject(fn, "dst", "token_stride %zu and head_stride %zu must be even (bytes)",
                           d->token_stride, d->head_stride);
    rows.unit = 2;
    rows.token_stride /= 2;
    rows.head_stride /= 2;
    rows.width = head_dim / ROPE_Q8_0_BLOCK * ROPE_Q8_0_BYTES / 2;
  }
  const posenc_status st =
      posenc_check_src_and_rows(fn, src, sizeof(float), n_tokens, head_dim, &rows, NULL);
  if (st != POSENC_OK) return st;
  rope_args args = posenc_rope_args(plan, n_tokens, positions, start_pos, flags);
  posenc_rows_view(&args.views[0], src, d->data, d->token_stride, d->head_stride, head_dim, slots);
  args.views[0].quant = d->quant;
  args.views[0].fp8_scale = d->scale;
  args.n_views = 1;
  posenc_active_table()->rope_f32(&args);
  return POSENC_OK;
}

/* Both public forms: int64 positions narrowed, the common checks (dst_view: the caller's
 * view, for its NULL check; d: its description, read once dst_view is known not NULL), then
 * rope_out_quant. */
static posenc_status rope_out_quant_entry(const char *fn, const posenc_rope_plan *plan,
                                          size_t head_dim, size_t n_tokens,
                                          const int32_t *positions, int32_t start_pos,
                                          const posenc_rope_view *src, const void *dst_view,
                                          const quant_dst *d, const posenc_slots *slots,
                                          unsigned flags) {
  posenc_positions32 buf;
  posenc_status st =
      posenc_positions_narrow(fn, "positions", &positions, 1, 1, n_tokens, &flags, &buf);
  if (st == POSENC_OK)
    st = posenc_check_rows_entry(fn, plan, src, dst_view, head_dim, positions, start_pos, n_tokens,
                                 flags);
  if (st == POSENC_OK)
    st = rope_out_quant(fn, plan, head_dim, n_tokens, positions, start_pos, src, d, slots, flags);
  posenc_positions_release(&buf);
  return st;
}

posenc_status posenc_rope_out_q8_0(const posenc_rope_plan *plan, size_t head_dim, size_t n_tokens,
                                   const int32_t *positions, int32_t start_pos,
                                   const posenc_rope_view *src, const posenc_q8_0_view *dst,
                                   const posenc_slots *slots, unsigned flags) {
  const quant_dst d = dst ? (quant_dst){dst->data,
                                        dst->n_heads,
                                        dst->token_stride,
                                        dst->head_stride,
                                        ROPE_QUANT_Q8_0,
                                        "q8_0",
                                        0.0f}
                          : (quant_dst){0};
  return rope_out_quant_entry(__func__, plan, head_dim, n_tokens, positions, start_pos, src, dst,
                              &d, slots, flags);
}

posenc_status posenc_rope_out_fp8(const posenc_rope_plan *plan, size_t head_dim, size_t n_tokens,
                                  const int32_t *positions, int32_t start_pos,
                                  const posenc_rope_view *src, const posenc_fp8_view *dst,
                                  float scale, const posenc_slots *slots, unsigned flags) {
  const quant_dst d = dst ? (quant_dst){dst->data,
                                        dst->n_heads,
                                        dst->token_stride,
                                        dst->head_stride,
                                        ROPE_QUANT_FP8,
                                        "fp8",
                                        scale}
                          : (quant_dst){0};
  return rope_out_quant_entry(__func__, plan, head_dim, n_tokens, positions, start_pos, src, dst,
                              &d, slots, flags);
}
