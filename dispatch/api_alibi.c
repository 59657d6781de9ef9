/* ALiBi public entry points: slopes, then argument checks and one call through the
 * dispatch table for the add and the bias, on f32, bf16 or f16 scores. */
#include <math.h>

#include "dispatch.h"

#define MAX_POSITIONS ((size_t)1 << 31)

posenc_status posenc_alibi_slopes(size_t n_heads, double max_bias, float *slopes) {
  if (!slopes || n_heads == 0 || !isfinite(max_bias) || !(max_bias > 0))
    return POSENC_ERR_INVALID_ARGUMENT;
  size_t c = 1; /* the largest power of two <= n_heads */
  while (c <= n_heads / 2) c *= 2;
  for (size_t h = 0; h < c; ++h) slopes[h] = (float)exp2(-max_bias * (double)(h + 1) / (double)c);
  for (size_t k = 0; k < n_heads - c; ++k)
    slopes[c + k] = (float)exp2(-max_bias * (double)(2 * k + 1) / (double)(2 * c));
  return POSENC_OK;
}

/* The checks and the call shared by every entry point, for scores whose elements have type
 * e. */
static posenc_status run(const float *slopes, size_t n_heads, size_t n_q, size_t n_k,
                         size_t q_offset, void *scores, posenc_elem e, size_t head_stride,
                         size_t row_stride, float scale, unsigned flags, unsigned internal) {
  /* Every query and key position, and so every distance, fits in int32. */
  if ((flags & ~(unsigned)POSENC_ALIBI_CAUSAL) || !isfinite(scale) || q_offset > MAX_POSITIONS ||
      n_q > MAX_POSITIONS - q_offset || n_k > MAX_POSITIONS)
    return POSENC_ERR_INVALID_ARGUMENT;
  if (n_heads == 0 || n_q == 0 || n_k == 0) return POSENC_OK;
  size_t extent;
  if (!slopes || !posenc_elem_aligned(scores, posenc_elem_size(e)) ||
      !posenc_grid_extent_elems(posenc_elem_size(e), n_heads, head_stride, n_q, row_stride, n_k,
                                &extent))
    return POSENC_ERR_INVALID_ARGUMENT;
  for (size_t h = 0; h < n_heads; ++h)
    if (!isfinite(slopes[h])) return POSENC_ERR_INVALID_ARGUMENT;
  const alibi_args args = {.slopes = slopes,
                           .n_heads = n_heads,
                           .n_q = n_q,
                           .n_k = n_k,
                           .q_offset = (int32_t)q_offset,
                           .scores = scores,
                           .head_stride = head_stride,
                           .row_stride = row_stride,
                           .scale = scale,
                           .flags = flags | internal};
  const posenc_kernel_table *table = posenc_active_table();
  (e == POSENC_ELEM_BF16  ? table->alibi_bf16
   : e == POSENC_ELEM_F16 ? table->alibi_f16
                          : table->alibi_f32)(&args);
  return POSENC_OK;
}

posenc_status posenc_alibi_add_f32(const float *slopes, size_t n_heads, size_t n_q, size_t n_k,
                                   size_t q_offset, float *scores, size_t head_stride,
                                   size_t row_stride, float scale, unsigned flags) {
  return run(slopes, n_heads, n_q, n_k, q_offset, scores, POSENC_ELEM_F32, head_stride, row_stride,
             scale, flags, 0);
}

posenc_status posenc_alibi_add_bf16(const float *slopes, size_t n_heads, size_t n_q, size_t n_k,
                                    size_t q_offset, uint16_t *scores, size_t head_stride,
                                    size_t row_stride, float scale, unsigned flags) {
  return run(slopes, n_heads, n_q, n_k, q_offset, scores, POSENC_ELEM_BF16, head_stride, row_stride,
             scale, flags, 0);
}

posenc_status posenc_alibi_add_f16(const float *slopes, size_t n_heads, size_t n_q, size_t n_k,
                                   size_t q_offset, uint16_t *scores, size_t head_stride,
                                   size_t row_stride, float scale, unsigned flags) {
  return run(slopes, n_heads, n_q, n_k, q_offset, scores, POSENC_ELEM_F16, head_stride, row_stride,
             scale, flags, 0);
}

posenc_status posenc_alibi_bias_f32(const float *slopes, size_t n_heads, size_t n_q, size_t n_k,
                                    size_t q_offset, float *out, size_t head_stride,
                                    size_t row_stride, unsigned flags) {
  return run(slopes, n_heads, n_q, n_k, q_offset, out, POSENC_ELEM_F32, head_stride, row_stride,
             1.0f, flags, POSENC_ALIBI_WRITE_);
}

posenc_status posenc_alibi_bias_bf16(const float *slopes, size_t n_heads, size_t n_q, size_t n_k,
                                     size_t q_offset, uint16_t *out, size_t head_stride,
                                     size_t row_stride, unsigned flags) {
  return run(slopes, n_heads, n_q, n_k, q_offset, out, POSENC_ELEM_BF16, head_stride, row_stride,
             1.0f, flags, POSENC_ALIBI_WRITE_);
}

posenc_status posenc_alibi_bias_f16(const float *slopes, size_t n_heads, size_t n_q, size_t n_k,
                                    size_t q_offset, uint16_t *out, size_t head_stride,
                                    size_t row_stride, unsigned flags) {
  return run(slopes, n_heads, n_q, n_k, q_offset, out, POSENC_ELEM_F16, head_stride, row_stride,
             1.0f, flags, POSENC_ALIBI_WRITE_);
}
