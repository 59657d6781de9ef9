/* Fused ALiBi softmax entry points: argument checks, then one call through the dispatch
 * table. The checks are those of posenc_alibi_add_f32 (dispatch/api_alibi.c), plus: the
 * slopes must not lie in the scores' address range (the kernel writes scores while it
 * reads slopes). */
#include <math.h>

#include "dispatch.h"

#define MAX_POSITIONS ((size_t)1 << 31)

/* 1 if the byte ranges [a, a + n_a) and [b, b + n_b) share no byte. */
static int bytes_disjoint(const void *a, size_t n_a, const void *b, size_t n_b) {
  const uintptr_t pa = (uintptr_t)a, pb = (uintptr_t)b;
  return pb >= pa + n_a || pa >= pb + n_b;
}

static posenc_status run(const float *slopes, size_t n_heads, size_t n_q, size_t n_k,
                         size_t q_offset, void *scores, size_t elem, size_t head_stride,
                         size_t row_stride, float scale, unsigned flags) {
  /* Every query and key position, and so every distance, fits in int32. */
  if ((flags & ~(unsigned)POSENC_ALIBI_CAUSAL) || !isfinite(scale) || q_offset > MAX_POSITIONS ||
      n_q > MAX_POSITIONS - q_offset || n_k > MAX_POSITIONS)
    return POSENC_ERR_INVALID_ARGUMENT;
  if (n_heads == 0 || n_q == 0 || n_k == 0) return POSENC_OK;
  size_t extent;
  if (!slopes || !scores || (uintptr_t)scores % elem != 0 ||
      !posenc_grid_extent(n_heads, head_stride, n_q, row_stride, n_k, &extent) ||
      !bytes_disjoint(slopes, n_heads * sizeof(float), scores, extent * elem))
    return POSENC_ERR_INVALID_ARGUMENT;
  for (size_t h = 0; h < n_heads; ++h)
    if (!isfinite(slopes[h])) return POSENC_ERR_INVALID_ARGUMENT;
  const alibi_softmax_args args = {.slopes = slopes,
                                   .n_heads = n_heads,
                                   .n_q = n_q,
                                   .n_k = n_k,
                                   .q_offset = (int32_t)q_offset,
                                   .scores = scores,
                                   .head_stride = head_stride,
                                   .row_stride = row_stride,
                                   .scale = scale,
                                   .flags = flags};
  const posenc_kernel_table *table = posenc_active_table();
  (elem == sizeof(float) ? table->alibi_softmax_f32 : table->alibi_softmax_bf16)(&args);
  return POSENC_OK;
}

posenc_status posenc_alibi_softmax_f32(const float *slopes, size_t n_heads, size_t n_q, size_t n_k,
                                       size_t q_offset, float *scores, size_t head_stride,
                                       size_t row_stride, float scale, unsigned flags) {
  return run(slopes, n_heads, n_q, n_k, q_offset, scores, sizeof(float), head_stride, row_stride,
             scale, flags);
}

posenc_status posenc_alibi_softmax_bf16(const float *slopes, size_t n_heads, size_t n_q, size_t n_k,
                                        size_t q_offset, uint16_t *scores, size_t head_stride,
                                        size_t row_stride, float scale, unsigned flags) {
  return run(slopes, n_heads, n_q, n_k, q_offset, scores, sizeof(uint16_t), head_stride, row_stride,
             scale, flags);
}
