/* Fused ALiBi softmax entry points: argument checks, then one call through the dispatch
 * table. The checks are those of posenc_alibi_add_f32 (posenc_alibi_check, in
 * dispatch/api_alibi.c) with two differences: the slopes must not lie in the scores' address
 * range (the kernel writes scores while it reads slopes), and the scores' extent must span at
 * most PTRDIFF_MAX bytes of floats for bf16 scores too. */
#include "checks.h"

static posenc_status run(const float *slopes, size_t n_heads, size_t n_q, size_t n_k,
                         size_t q_offset, void *scores, posenc_elem e, size_t head_stride,
                         size_t row_stride, float scale, unsigned flags) {
  const posenc_alibi_rules rules = {.extent_elem_size = sizeof(float), .slopes_apart = 1};
  alibi_softmax_args args;
  const posenc_status st = posenc_alibi_check(slopes, n_heads, n_q, n_k, q_offset, scores, e,
                                              head_stride, row_stride, scale, flags, rules, &args);
  if (st != POSENC_OK || args.n_heads == 0) return st;
  const posenc_kernel_table *t = posenc_active_table();
  /* No f16 softmax kernel: no entry point passes POSENC_ELEM_F16. */
  POSENC_BY_ELEM(e, t->alibi_softmax_f32, t->alibi_softmax_bf16, NULL)(&args);
  return POSENC_OK;
}

posenc_status posenc_alibi_softmax_f32(const float *slopes, size_t n_heads, size_t n_q, size_t n_k,
                                       size_t q_offset, float *scores, size_t head_stride,
                                       size_t row_stride, float scale, unsigned flags) {
  return run(slopes, n_heads, n_q, n_k, q_offset, scores, POSENC_ELEM_F32, head_stride, row_stride,
             scale, flags);
}

posenc_status posenc_alibi_softmax_bf16(const float *slopes, size_t n_heads, size_t n_q, size_t n_k,
                                        size_t q_offset, uint16_t *scores, size_t head_stride,
                                        size_t row_stride, float scale, unsigned flags) {
  return run(slopes, n_heads, n_q, n_k, q_offset, scores, POSENC_ELEM_BF16, head_stride, row_stride,
             scale, flags);
}
