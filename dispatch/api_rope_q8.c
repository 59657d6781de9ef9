/* RoPE into ggml q8_0 blocks (posenc_rope_out_q8_0): argument checks, then one call of the
 * active ISA's f32 RoPE kernel, whose view marks the destination as q8_0 blocks
 * (kernels/rope_driver.h rotates each token's heads into a float buffer and quantizes them
 * there, as ggml's quantize_row_q8_0_ref would on the rotated row). */
#include "checks.h"

posenc_status posenc_rope_out_q8_0(const posenc_rope_plan *plan, size_t head_dim, size_t n_tokens,
                                   const int32_t *positions, int32_t start_pos,
                                   const posenc_rope_view *src, const posenc_q8_0_view *dst,
                                   const posenc_slots *slots, unsigned flags) {
  const char *fn = __func__;
  posenc_status st =
      posenc_check_rows_entry(fn, plan, src, dst, head_dim, positions, start_pos, n_tokens, flags);
  if (st != POSENC_OK) return st;

  if (src->dtype != POSENC_DTYPE_F32)
    return posenc_reject_field(fn, "src", "dtype", "%d: the q8_0 form takes an f32 source",
                               (int)src->dtype);
  if (head_dim % ROPE_Q8_0_BLOCK != 0)
    return posenc_reject(fn, "head_dim", "%zu is not a multiple of the q8_0 block (32)", head_dim);
  if (plan->n_pairs > POSENC_ROPE_CHUNK || head_dim > POSENC_ROPE_NORM_FLOATS)
    return posenc_reject(fn, "plan",
                         "rotary_dim %zu / head_dim %zu: the q8_0 form takes rotary_dim up to "
                         "%d and head_dim up to %d",
                         plan->rotary_dim, head_dim, 2 * POSENC_ROPE_CHUNK,
                         POSENC_ROPE_NORM_FLOATS);
  if (src->n_heads != dst->n_heads)
    return posenc_reject_field(fn, "dst", "n_heads", "%zu differs from src->n_heads %zu",
                               dst->n_heads, src->n_heads);
  size_t n_rows = n_tokens, written = n_tokens;
  if (slots) {
    st = posenc_check_slots(fn, slots, n_tokens, &written);
    if (st != POSENC_OK) return st;
    n_rows = slots->n_cells;
  }
  if (n_tokens == 0 || src->n_heads == 0 || n_rows == 0 || written == 0) return POSENC_OK;
  /* Blocks begin with their f16 scale: 2-byte aligned data and strides (counted in bytes). */
  if (dst->token_stride % 2 || dst->head_stride % 2)
    return posenc_reject(fn, "dst", "token_stride %zu and head_stride %zu must be even (bytes)",
                         dst->token_stride, dst->head_stride);
  const posenc_dst_rows rows = {dst->data,
                                2,
                                dst->n_heads,
                                n_rows,
                                dst->token_stride / 2,
                                dst->head_stride / 2,
                                head_dim / ROPE_Q8_0_BLOCK * ROPE_Q8_0_BYTES / 2};
  st = posenc_check_src_and_rows(fn, src, sizeof(float), n_tokens, head_dim, &rows);
  if (st != POSENC_OK) return st;
  rope_args args = posenc_rope_args(plan, n_tokens, positions, start_pos, flags);
  args.views[0] =
      posenc_rows_view(src, dst->data, dst->token_stride, dst->head_stride, head_dim, slots);
  args.views[0].q8 = 1;
  args.n_views = 1;
  posenc_active_table()->rope_f32(&args);
  return POSENC_OK;
}
