/* Runtime-shaped RoPE entry points: 4-D views, out of place, and rotation factors computed
 * once and applied by every layer. Argument checks, then one call through the dispatch
 * table (the kernels of dispatch/api_rope.c's in-place forms, given src/dst views, or
 * factor rows instead of a plan). */
#include <string.h>

#include "checks.h"

/* The kernel for a (source, destination) type pair; NULL for an unsupported pair. */
static rope_fn pair_kernel(const posenc_kernel_table *t, posenc_elem x, posenc_elem y) {
  if (x == y) return POSENC_BY_ELEM(x, t->rope_f32, t->rope_bf16, t->rope_f16);
  if (x == POSENC_ELEM_F32 && y == POSENC_ELEM_BF16) return t->rope_f32_bf16;
  if (x == POSENC_ELEM_F32 && y == POSENC_ELEM_F16) return t->rope_f32_f16;
  return NULL;
}

/* The view checks (posenc_rope_check_views) and the kernel of the type pair. On POSENC_OK:
 * *kernel is the active ISA's kernel for the pair and args->views[0] the view, or
 * args->n_views = 0 when there is nothing to do. */
static posenc_status check_views(size_t head_dim, size_t n_batch, size_t n_tokens,
                                 const posenc_rope_view *src, const posenc_rope_view *dst,
                                 rope_args *args, rope_fn *kernel, size_t *dst_bytes) {
  posenc_elem x, y;
  int used;
  size_t src_bytes;
  const posenc_status st = posenc_rope_check_views(head_dim, n_batch, n_tokens, src, dst, &x, &y,
                                                   &args->views[0], &used, &src_bytes, dst_bytes);
  if (st != POSENC_OK) return st;
  *kernel = pair_kernel(posenc_active_table(), x, y);
  if (!*kernel) return POSENC_ERR_INVALID_ARGUMENT;
  args->n_views = (size_t)used;
  return POSENC_OK;
}

/* posenc_rope_out and posenc_mrope_out once their own arguments are checked and set in
 * `args`: the views' checks, then the kernel. */
static posenc_status run_views(rope_args *args, size_t head_dim, const posenc_rope_view *src,
                               const posenc_rope_view *dst) {
  rope_fn kernel;
  size_t dst_bytes;
  const posenc_status st =
      check_views(head_dim, args->n_batch, args->n_tokens, src, dst, args, &kernel, &dst_bytes);
  if (st != POSENC_OK || args->n_views == 0) return st;
  kernel(args);
  return POSENC_OK;
}

posenc_status posenc_rope_out(const posenc_rope_plan *plan, size_t head_dim, size_t n_batch,
                              size_t n_tokens, const int32_t *positions, int32_t start_pos,
                              const posenc_rope_view *src, const posenc_rope_view *dst,
                              unsigned flags) {
  size_t n_all;
  if (!plan || (flags & ~POSENC_ROPE_FLAGS) || head_dim < plan->rotary_dim ||
      __builtin_mul_overflow(n_batch, n_tokens, &n_all) ||
      !posenc_positions_valid(positions, start_pos, n_tokens))
    return POSENC_ERR_INVALID_ARGUMENT;
  rope_args args = posenc_rope_args(plan, n_tokens, positions, start_pos, flags);
  args.n_batch = n_batch;
  return run_views(&args, head_dim, src, dst);
}

posenc_status posenc_mrope_out(const posenc_rope_plan *plan, const size_t sections[3],
                               size_t head_dim, size_t n_batch, size_t n_tokens,
                               const int32_t *positions, const posenc_rope_view *src,
                               const posenc_rope_view *dst, unsigned flags) {
  const int interleaved = (flags & POSENC_ROPE_MROPE_INTERLEAVED) != 0;
  size_t n_all;
  if (!plan || (flags & ~(POSENC_ROPE_FLAGS | POSENC_ROPE_MROPE_INTERLEAVED)) ||
      head_dim < plan->rotary_dim ||
      !posenc_mrope_sections_valid(sections, plan->n_pairs, interleaved) ||
      __builtin_mul_overflow(n_batch, n_tokens, &n_all) || n_all > SIZE_MAX / 3 / sizeof(int32_t) ||
      (!positions && n_all > 0))
    return POSENC_ERR_INVALID_ARGUMENT;
  rope_args args = posenc_mrope_args(plan, sections, n_tokens, positions, flags);
  args.n_batch = n_batch;
  return run_views(&args, head_dim, src, dst);
}

/* What factors record of the flags that made them, and applying them must repeat: the pair
 * layout, and the deterministic mode (its values, and its rotation without fused
 * multiply-adds). */
#define FACTOR_FLAGS ((unsigned)(POSENC_ROPE_GPTJ | POSENC_ROPE_DETERMINISTIC))

size_t posenc_rope_factors_bytes(size_t rotary_dim, size_t n_rows, unsigned flags) {
  size_t bytes;
  if (!posenc_rotary_dim_valid(rotary_dim) || (flags & ~FACTOR_FLAGS) ||
      __builtin_mul_overflow(n_rows, 2 * rope_factor_half(rotary_dim / 2, flags) * sizeof(float),
                             &bytes))
    return 0;
  return bytes;
}

/* Fills the factor rows of `args` (a plain or M-RoPE call whose other fields are checked and
 * set) into storage, and describes them in *factors. */
static posenc_status compute_factors(rope_args *args, unsigned flags, void *storage,
                                     size_t storage_bytes, posenc_rope_factors *factors) {
  const struct posenc_rope_plan *plan = args->plan;
  const size_t n_rows = args->n_tokens;
  const unsigned layout = flags & FACTOR_FLAGS;
  const size_t need = posenc_rope_factors_bytes(plan->rotary_dim, n_rows, layout);
  if (n_rows > 0 && (need == 0 || !posenc_float_aligned(storage) || storage_bytes < need))
    return POSENC_ERR_INVALID_ARGUMENT;
  args->factors_out = storage;
  args->factor_half = rope_factor_half(plan->n_pairs, layout);
  if (n_rows > 0) posenc_active_table()->rope_f32(args);
  *factors = (posenc_rope_factors){.data = storage,
                                   .n_rows = n_rows,
                                   .rotary_dim = plan->rotary_dim,
                                   .row_floats = 2 * args->factor_half,
                                   .flags = layout};
  return POSENC_OK;
}

posenc_status posenc_rope_factors_compute(const posenc_rope_plan *plan, size_t n_rows,
                                          const int32_t *positions, int32_t start_pos,
                                          unsigned flags, void *storage, size_t storage_bytes,
                                          posenc_rope_factors *factors) {
  if (!plan || !factors || (flags & ~(FACTOR_FLAGS | POSENC_ROPE_F32_ANGLES)) ||
      !posenc_positions_valid(positions, start_pos, n_rows))
    return POSENC_ERR_INVALID_ARGUMENT;
  rope_args args = posenc_rope_args(plan, n_rows, positions, start_pos, flags);
  return compute_factors(&args, flags, storage, storage_bytes, factors);
}

posenc_status posenc_mrope_factors_compute(const posenc_rope_plan *plan, const size_t sections[3],
                                           size_t n_rows, const int32_t *positions, unsigned flags,
                                           void *storage, size_t storage_bytes,
                                           posenc_rope_factors *factors) {
  const int interleaved = (flags & POSENC_ROPE_MROPE_INTERLEAVED) != 0;
  if (!plan || !factors ||
      (flags & ~(FACTOR_FLAGS | POSENC_ROPE_F32_ANGLES | POSENC_ROPE_MROPE_INTERLEAVED)) ||
      !posenc_mrope_sections_valid(sections, plan->n_pairs, interleaved) ||
      n_rows > SIZE_MAX / 3 / sizeof(int32_t) || (!positions && n_rows > 0))
    return POSENC_ERR_INVALID_ARGUMENT;
  rope_args args = posenc_mrope_args(plan, sections, n_rows, positions, flags);
  return compute_factors(&args, flags, storage, storage_bytes, factors);
}

posenc_status posenc_rope_apply(const posenc_rope_factors *factors, size_t first_row,
                                size_t row_batch_stride, size_t head_dim, size_t n_batch,
                                size_t n_tokens, const posenc_rope_view *src,
                                const posenc_rope_view *dst, unsigned flags) {
  if (!factors || (flags & ~(FACTOR_FLAGS | POSENC_ROPE_INVERSE)) ||
      (factors->flags & ~FACTOR_FLAGS) || (flags & FACTOR_FLAGS) != factors->flags ||
      !posenc_rotary_dim_valid(factors->rotary_dim) || head_dim < factors->rotary_dim)
    return POSENC_ERR_INVALID_ARGUMENT;
  const size_t n_pairs = factors->rotary_dim / 2, half = rope_factor_half(n_pairs, flags);
  size_t n_all;
  if (factors->row_floats != 2 * half || __builtin_mul_overflow(n_batch, n_tokens, &n_all))
    return POSENC_ERR_INVALID_ARGUMENT;
  rope_args args = {.n_pairs = n_pairs,
                    .n_batch = n_batch,
                    .n_tokens = n_tokens,
                    .flags = flags,
                    .kind = ROPE_PLAIN,
                    .factors = factors->data,
                    .factor_half = half,
                    .factor_first_row = first_row,
                    .factor_batch_stride = row_batch_stride};
  rope_fn kernel;
  size_t dst_bytes;
  const posenc_status st =
      check_views(head_dim, n_batch, n_tokens, src, dst, &args, &kernel, &dst_bytes);
  if (st != POSENC_OK || args.n_views == 0) return st;
  /* The last row read, within the factors; the rows must not be written by this call. */
  size_t last, span;
  if (__builtin_mul_overflow(n_batch - 1, row_batch_stride, &last) ||
      __builtin_add_overflow(last, first_row, &last) ||
      __builtin_add_overflow(last, n_tokens - 1, &last) || last >= factors->n_rows ||
      !posenc_float_aligned(factors->data) ||
      __builtin_mul_overflow(last + 1, factors->row_floats * sizeof(float), &span))
    return POSENC_ERR_INVALID_ARGUMENT;
  if (!posenc_bytes_disjoint(factors->data, span, dst->data, dst_bytes))
    return POSENC_ERR_INVALID_ARGUMENT;
  kernel(&args);
  return POSENC_OK;
}
