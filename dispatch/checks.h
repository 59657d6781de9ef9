/* Internal: checks and helpers shared by the public entry points (dispatch/api_*.c), beyond
 * those declared in dispatch.h. */
#ifndef POSENC_CHECKS_H
#define POSENC_CHECKS_H

#include "dispatch.h"

/* The one choice of a kernel by storage type: the f32, bf16 or f16 expression for elements
 * of type e, for example POSENC_BY_ELEM(e, t->rope_f32, t->rope_bf16, t->rope_f16). Only
 * the chosen expression is evaluated. */
#define POSENC_BY_ELEM(e, f32, bf16, f16) \
  ((e) == POSENC_ELEM_BF16 ? (bf16) : (e) == POSENC_ELEM_F16 ? (f16) : (f32))

/* 1 if d is a known storage type, with *e its element type. */
int posenc_dtype_elem(posenc_dtype d, posenc_elem *e);

/* 1 if the byte ranges [a, a + n_a) and [b, b + n_b) share no byte. */
int posenc_bytes_disjoint(const void *a, size_t n_a, const void *b, size_t n_b);

/* 1 if the positions a call reads are valid for n rows: given as an array, or start_pos +
 * [0, n) within int32 (or n == 0). */
int posenc_positions_valid(const int32_t *positions, int32_t start_pos, size_t n);

/* 1 if base is a valid frequency base: finite, positive, not 1. */
int posenc_base_valid(double base);

/* The largest rotary_dim of a RoPE plan. */
#define POSENC_MAX_ROTARY_DIM ((size_t)1 << 20)

/* 1 if rotary_dim is a valid RoPE plan rotary_dim: even, 2 to POSENC_MAX_ROTARY_DIM. */
int posenc_rotary_dim_valid(size_t rotary_dim);

/* Pair i's default frequency base^(-2i/d) of a d-dimensional encoding (d = rotary_dim for
 * RoPE, dim for sinusoids): the one formula of every default and scaled plan. */
double posenc_default_freq(double base, size_t i, size_t d);

/* The n default frequencies posenc_default_freq(base, i, d), i < n, in a malloc'd array;
 * NULL if out of memory. */
double *posenc_default_freqs(double base, size_t n, size_t d);

/* Where the checks of the ALiBi add / bias and of the fused ALiBi softmax differ. */
typedef struct posenc_alibi_rules {
  /* The extent of the scores must span at most PTRDIFF_MAX bytes of elements of this size:
   * the element size for the add and the bias; sizeof(float) for the softmax, bf16 too. */
  size_t extent_elem_size;
  /* 1: the slopes must not lie in the bytes of the scores' extent (the softmax). */
  int slopes_apart;
} posenc_alibi_rules;

/* The argument checks of every ALiBi entry point (dispatch/api_alibi.c) for scores of type
 * e. On POSENC_OK, *args holds the call for the kernel (flags as given), or is all zero
 * (args->n_heads == 0) when a count is 0 and there is nothing to do. */
posenc_status posenc_alibi_check(const float *slopes, size_t n_heads, size_t n_q, size_t n_k,
                                 size_t q_offset, void *scores, posenc_elem e, size_t head_stride,
                                 size_t row_stride, float scale, unsigned flags,
                                 posenc_alibi_rules rules, alibi_args *args);

/* The flags of posenc_rope_f32 (and the other plain RoPE forms). */
#define POSENC_ROPE_FLAGS \
  (POSENC_ROPE_GPTJ | POSENC_ROPE_INVERSE | POSENC_ROPE_F32_ANGLES | POSENC_ROPE_DETERMINISTIC)

/* The argument block of a plain rotation (posenc_rope_*, posenc_rope_out,
 * posenc_rope_factors_compute) from checked arguments: the plan's pairs and attention
 * factor, one batch, no views yet. */
rope_args posenc_rope_args(const posenc_rope_plan *plan, size_t n_tokens, const int32_t *positions,
                           int32_t start_pos, unsigned flags);

/* The one view check of every RoPE entry point: a (src, dst) pair of views of n_batch x
 * n_tokens tokens of head_dim elements (in place: the same data, type and strides; the
 * in-place tensors of posenc_rope_f32 and the rest are such pairs of one batch). Storage
 * types known and the same head counts; element-aligned; every head vector's extent without
 * overflow within PTRDIFF_MAX bytes, dst's head vectors pairwise disjoint; out of place, src
 * and dst disjoint. On POSENC_OK: *x, *y the storage types, *used = 0 when a count is 0 (no
 * geometry checked, nothing to do), else *view filled and *src_bytes, *dst_bytes the
 * views' extents in bytes from their data pointers. */
posenc_status posenc_rope_check_views(size_t head_dim, size_t n_batch, size_t n_tokens,
                                      const posenc_rope_view *src, const posenc_rope_view *dst,
                                      posenc_elem *x, posenc_elem *y, rope_view *view, int *used,
                                      size_t *src_bytes, size_t *dst_bytes);

/* The argument block of an M-RoPE call over n_tokens tokens (one batch) whose arguments
 * are checked: flags without POSENC_ROPE_MROPE_INTERLEAVED, which `interleaved` carries. */
rope_args posenc_mrope_args(const posenc_rope_plan *plan, const size_t sections[3], size_t n_tokens,
                            const int32_t *positions, unsigned flags);

/* 1 if sections[3] assign a plan's n pairs as posenc_mrope_f32 requires. */
int posenc_mrope_sections_valid(const size_t *sections, size_t n, int interleaved);

/* 1 if a grid of rows of `width` elements at sum_d i_d * stride[d] (i_d < count[d], every
 * count >= 1) spans at most PTRDIFF_MAX bytes of elements of elem_size bytes (*extent: the
 * elements from the first to one past the last) and, if `disjoint`, its rows are pairwise
 * disjoint by nesting: the dimensions with a count above 1, sorted by stride, each have a
 * stride of at least the extent of those inside it (the first at least `width`). */
int posenc_grid3_extent_elems(size_t elem_size, const size_t count[3], const size_t stride[3],
                              size_t width, int disjoint, size_t *extent);

#endif /* POSENC_CHECKS_H */
