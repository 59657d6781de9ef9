/* ALiBi public entry points: slopes, then argument checks and one call through the
 * dispatch table for the add and the bias, on f32, bf16 or f16 scores. */
#include <math.h>
#include <stdint.h>

#include "checks.h"

#define MAX_POSITIONS ((size_t)1 << 31)

posenc_status posenc_alibi_slopes(size_t n_heads, double max_bias, float *slopes) {
  const char *fn = __func__;
  if (!slopes) return posenc_reject(fn, "slopes", "is NULL");
  if (n_heads == 0) return posenc_reject(fn, "n_heads", "is 0");
  if (!isfinite(max_bias) || !(max_bias > 0))
    return posenc_reject(fn, "max_bias", "%g is not finite and > 0", max_bias);
  size_t c = 1; /* the largest power of two <= n_heads */
  while (c <= n_heads / 2) c *= 2;
  for (size_t h = 0; h < c; ++h) slopes[h] = (float)exp2(-max_bias * (double)(h + 1) / (double)c);
  for (size_t k = 0; k < n_heads - c; ++k)
    slopes[c + k] = (float)exp2(-max_bias * (double)(2 * k + 1) / (double)(2 * c));
  return POSENC_OK;
}

posenc_status posenc_alibi_slopes_ggml(size_t n_heads, float max_bias, float *slopes) {
  const char *fn = __func__;
  if (!slopes) return posenc_reject(fn, "slopes", "is NULL");
  if (n_heads == 0 || n_heads > UINT32_MAX)
    return posenc_reject(fn, "n_heads", "%zu is not in [1, 2^32 - 1] (ggml's uint32_t heads)",
                         n_heads);
  if (!isfinite(max_bias) || max_bias < 0)
    return posenc_reject(fn, "max_bias", "%g is not finite and >= 0", (double)max_bias);
  /* ggml's expressions and types (ggml-cpu's soft_max): uint32_t heads, float arithmetic. */
  const uint32_t n_head = (uint32_t)n_heads;
  const uint32_t n_head_log2 = 1u << (uint32_t)floor(log2(n_head));
  const float m0 = powf(2.0f, -(max_bias) / n_head_log2);
  const float m1 = powf(2.0f, -(max_bias / 2.0f) / n_head_log2);
  for (uint32_t h = 0; h < n_head; ++h)
    slopes[h] = max_bias > 0.0f
                    ? h < n_head_log2 ? powf(m0, h + 1) : powf(m1, 2 * (h - n_head_log2) + 1)
                    : 1.0f;
  return POSENC_OK;
}

/* The rejection of the scores' grid that posenc_grid_extent_elems refused. */
static posenc_status grid_refused(const char *fn, const char *scores_name, size_t elem_size,
                                  size_t n_heads, size_t head_stride, size_t n_q, size_t row_stride,
                                  size_t n_k) {
  size_t need = 0;
  const int d = posenc_grid_refusal(elem_size, n_heads, head_stride, n_q, row_stride, n_k, &need);
  if (d < 0)
    return posenc_reject(fn, scores_name,
                         "the extent of n_heads %zu x head_stride %zu, n_q %zu x row_stride %zu, "
                         "n_k %zu overflows size_t or passes PTRDIFF_MAX bytes",
                         n_heads, head_stride, n_q, row_stride, n_k);
  return posenc_reject(fn, d == 0 ? "head_stride" : "row_stride",
                       "%zu is below %zu, the extent of what it steps over (n_k %zu): %s overlap",
                       d == 0 ? head_stride : row_stride, need, n_k, d == 0 ? "heads" : "rows");
}

posenc_status posenc_alibi_check(const char *fn, const char *scores_name, const float *slopes,
                                 size_t n_heads, size_t n_q, size_t n_k, size_t q_offset,
                                 void *scores, posenc_elem e, size_t head_stride, size_t row_stride,
                                 float scale, unsigned flags, posenc_alibi_rules rules,
                                 alibi_args *args) {
  *args = (alibi_args){0};
  const posenc_status st = posenc_check_flags(fn, "flags", flags, POSENC_ALIBI_CAUSAL);
  if (st != POSENC_OK) return st;
  if (!isfinite(scale)) return posenc_reject(fn, "scale", "%g is not finite", (double)scale);
  /* Every query and key position, and so every distance, fits in int32. */
  if (q_offset > MAX_POSITIONS)
    return posenc_reject(fn, "q_offset", "%zu is beyond 2^31", q_offset);
  if (n_q > MAX_POSITIONS - q_offset)
    return posenc_reject(fn, "q_offset", "%zu + n_q %zu passes 2^31 positions", q_offset, n_q);
  if (n_k > MAX_POSITIONS) return posenc_reject(fn, "n_k", "%zu is beyond 2^31 keys", n_k);
  if (n_heads == 0 || n_q == 0 || n_k == 0) return POSENC_OK;
  const size_t size = posenc_elem_size(e);
  size_t extent;
  if (!slopes) return posenc_reject(fn, "slopes", "is NULL with work to do");
  if (!posenc_elem_aligned(scores, size))
    return posenc_reject_data(fn, scores_name, NULL, scores, size);
  if (!posenc_grid_extent_elems(rules.extent_elem_size, n_heads, head_stride, n_q, row_stride, n_k,
                                &extent))
    return grid_refused(fn, scores_name, rules.extent_elem_size, n_heads, head_stride, n_q,
                        row_stride, n_k);
  if (rules.slopes_apart &&
      !posenc_bytes_disjoint(slopes, n_heads * sizeof(float), scores, extent * size))
    return posenc_reject(fn, "slopes", "lie within the address range of %s", scores_name);
  for (size_t h = 0; h < n_heads; ++h)
    if (!isfinite(slopes[h]))
      return posenc_reject_elem(fn, "slopes", NULL, h, "%g is not finite", (double)slopes[h]);
  *args = (alibi_args){.slopes = slopes,
                       .n_heads = n_heads,
                       .n_q = n_q,
                       .n_k = n_k,
                       .q_offset = (int32_t)q_offset,
                       .scores = scores,
                       .head_stride = head_stride,
                       .row_stride = row_stride,
                       .scale = scale,
                       .flags = flags};
  return POSENC_OK;
}

/* The add and the bias: the checks (the extent in bytes of e, slopes may alias scores), then
 * the call with the internal flags. */
static posenc_status run(const char *fn, const float *slopes, size_t n_heads, size_t n_q,
                         size_t n_k, size_t q_offset, void *scores, posenc_elem e,
                         size_t head_stride, size_t row_stride, float scale, unsigned flags,
                         unsigned internal) {
  const posenc_alibi_rules rules = {.extent_elem_size = posenc_elem_size(e), .slopes_apart = 0};
  const char *scores_name = internal & POSENC_ALIBI_WRITE_ ? "out" : "scores";
  alibi_args args;
  const posenc_status st =
      posenc_alibi_check(fn, scores_name, slopes, n_heads, n_q, n_k, q_offset, scores, e,
                         head_stride, row_stride, scale, flags, rules, &args);
  if (st != POSENC_OK || args.n_heads == 0) return st;
  args.flags |= internal;
  const posenc_kernel_table *t = posenc_active_table();
  POSENC_BY_ELEM(e, t->alibi_f32, t->alibi_bf16, t->alibi_f16)(&args);
  return POSENC_OK;
}

posenc_status posenc_alibi_add_f32(const float *slopes, size_t n_heads, size_t n_q, size_t n_k,
                                   size_t q_offset, float *scores, size_t head_stride,
                                   size_t row_stride, float scale, unsigned flags) {
  return run(__func__, slopes, n_heads, n_q, n_k, q_offset, scores, POSENC_ELEM_F32, head_stride,
             row_stride, scale, flags, 0);
}

posenc_status posenc_alibi_add_bf16(const float *slopes, size_t n_heads, size_t n_q, size_t n_k,
                                    size_t q_offset, uint16_t *scores, size_t head_stride,
                                    size_t row_stride, float scale, unsigned flags) {
  return run(__func__, slopes, n_heads, n_q, n_k, q_offset, scores, POSENC_ELEM_BF16, head_stride,
             row_stride, scale, flags, 0);
}

posenc_status posenc_alibi_add_f16(const float *slopes, size_t n_heads, size_t n_q, size_t n_k,
                                   size_t q_offset, uint16_t *scores, size_t head_stride,
                                   size_t row_stride, float scale, unsigned flags) {
  return run(__func__, slopes, n_heads, n_q, n_k, q_offset, scores, POSENC_ELEM_F16, head_stride,
             row_stride, scale, flags, 0);
}

posenc_status posenc_alibi_bias_f32(const float *slopes, size_t n_heads, size_t n_q, size_t n_k,
                                    size_t q_offset, float *out, size_t head_stride,
                                    size_t row_stride, unsigned flags) {
  return run(__func__, slopes, n_heads, n_q, n_k, q_offset, out, POSENC_ELEM_F32, head_stride,
             row_stride, 1.0f, flags, POSENC_ALIBI_WRITE_);
}

posenc_status posenc_alibi_bias_bf16(const float *slopes, size_t n_heads, size_t n_q, size_t n_k,
                                     size_t q_offset, uint16_t *out, size_t head_stride,
                                     size_t row_stride, unsigned flags) {
  return run(__func__, slopes, n_heads, n_q, n_k, q_offset, out, POSENC_ELEM_BF16, head_stride,
             row_stride, 1.0f, flags, POSENC_ALIBI_WRITE_);
}

posenc_status posenc_alibi_bias_f16(const float *slopes, size_t n_heads, size_t n_q, size_t n_k,
                                    size_t q_offset, uint16_t *out, size_t head_stride,
                                    size_t row_stride, unsigned flags) {
  return run(__func__, slopes, n_heads, n_q, n_k, q_offset, out, POSENC_ELEM_F16, head_stride,
             row_stride, 1.0f, flags, POSENC_ALIBI_WRITE_);
}
