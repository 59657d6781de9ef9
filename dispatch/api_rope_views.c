/* Runtime-shaped RoPE entry points: 4-D views, out of place, and rotation factors computed
 * once and applied by every layer. Argument checks, then one call through the dispatch
 * table (the kernels of dispatch/api_rope.c's in-place forms, given src/dst views, or
 * factor rows instead of a plan). */
#include <string.h>

#include "checks.h"

/* The rejection of an n_batch x n_tokens that overflows size_t. */
static posenc_status batch_overflow(const char *fn, size_t n_batch, size_t n_tokens) {
  return posenc_reject(fn, "n_batch", "%zu x n_tokens %zu overflows size_t", n_batch, n_tokens);
}

/* The kernel for a (source, destination) type pair; NULL for an unsupported pair. */
rope_fn posenc_rope_pair_kernel(const posenc_kernel_table *t, posenc_elem x, posenc_elem y) {
  if (x == y) return POSENC_BY_ELEM(x, t->rope_f32, t->rope_bf16, t->rope_f16);
  if (x == POSENC_ELEM_F32 && y == POSENC_ELEM_BF16) return t->rope_f32_bf16;
  if (x == POSENC_ELEM_F32 && y == POSENC_ELEM_F16) return t->rope_f32_f16;
  return NULL;
}

/* The view checks (posenc_rope_check_views) and the kernel of the type pair. On POSENC_OK:
 * *kernel is the active ISA's kernel for the pair and args->views[0] the view, or
 * args->n_views = 0 when there is nothing to do. */
static posenc_status check_views(const char *fn, size_t head_dim, size_t n_batch, size_t n_tokens,
                                 const posenc_rope_view *src, const posenc_rope_view *dst,
                                 rope_args *args, rope_fn *kernel, size_t *dst_bytes) {
  posenc_elem x, y;
  int used;
  size_t src_bytes;
  const posenc_status st =
      posenc_rope_check_views(fn, "src", "dst", head_dim, n_batch, n_tokens, src, dst, &x, &y,
                              &args->views[0], &used, &src_bytes, dst_bytes);
  if (st != POSENC_OK) return st;
  *kernel = posenc_rope_pair_kernel(posenc_active_table(), x, y);
  if (!*kernel)
    return posenc_reject_field(fn, "dst", "dtype",
                               "%d from src->dtype %d is not a supported type pair (f32, bf16 "
                               "and f16 to their own type; f32 to bf16 or f16)",
                               (int)dst->dtype, (int)src->dtype);
  args->n_views = (size_t)used;
  return POSENC_OK;
}

/* posenc_rope_out and posenc_mrope_out once their own arguments are checked and set in
 * `args`: the views' checks, then the kernel. */
static posenc_status run_views(const char *fn, rope_args *args, size_t head_dim,
                               const posenc_rope_view *src, const posenc_rope_view *dst) {
  rope_fn kernel;
  size_t dst_bytes;
  const posenc_status st =
      check_views(fn, head_dim, args->n_batch, args->n_tokens, src, dst, args, &kernel, &dst_bytes);
  if (st != POSENC_OK || args->n_views == 0) return st;
  kernel(args);
  return POSENC_OK;
}

static posenc_status rope_out_int32(const char *fn, const posenc_rope_plan *plan, size_t head_dim,
                                    size_t n_batch, size_t n_tokens, const int32_t *positions,
                                    int32_t start_pos, const posenc_rope_view *src,
                                    const posenc_rope_view *dst, unsigned flags) {
  size_t n_all;
  if (!plan) return posenc_reject(fn, "plan", "is NULL");
  posenc_status st = posenc_check_flags(fn, "flags", flags, POSENC_ROPE_FLAGS);
  if (st == POSENC_OK) st = posenc_check_one_position_plan(fn, "plan", plan);
  if (st == POSENC_OK)
    st = posenc_check_head_dim(fn, head_dim, plan->rotary_dim, "the plan's rotary_dim");
  if (st != POSENC_OK) return st;
  if (__builtin_mul_overflow(n_batch, n_tokens, &n_all))
    return batch_overflow(fn, n_batch, n_tokens);
  st = posenc_check_run(fn, "start_pos", "n_tokens", positions, start_pos, n_tokens);
  if (st != POSENC_OK) return st;
  rope_args args = posenc_rope_args(plan, n_tokens, positions, start_pos, flags);
  args.n_batch = n_batch;
  return run_views(fn, &args, head_dim, src, dst);
}

posenc_status posenc_rope_out(const posenc_rope_plan *plan, size_t head_dim, size_t n_batch,
                              size_t n_tokens, const int32_t *positions, int32_t start_pos,
                              const posenc_rope_view *src, const posenc_rope_view *dst,
                              unsigned flags) {
  posenc_positions32 buf;
  posenc_status st = posenc_positions_narrow(__func__, "positions", &positions, 1, n_batch,
                                             n_tokens, &flags, &buf);
  if (st == POSENC_OK)
    st = rope_out_int32(__func__, plan, head_dim, n_batch, n_tokens, positions, start_pos, src, dst,
                        flags);
  posenc_positions_release(&buf);
  return st;
}

static posenc_status mrope_out_int32(const char *fn, const posenc_rope_plan *plan,
                                     const size_t sections[3], size_t head_dim, size_t n_batch,
                                     size_t n_tokens, const int32_t *positions,
                                     const posenc_rope_view *src, const posenc_rope_view *dst,
                                     unsigned flags) {
  size_t n_all;
  if (!plan) return posenc_reject(fn, "plan", "is NULL");
  posenc_status st = posenc_check_flags(fn, "flags", flags, POSENC_MROPE_FLAGS);
  if (st == POSENC_OK)
    st = posenc_check_head_dim(fn, head_dim, plan->rotary_dim, "the plan's rotary_dim");
  if (st == POSENC_OK) st = posenc_mrope_check_sections(fn, sections, plan, flags);
  if (st != POSENC_OK) return st;
  const size_t rows = posenc_mrope_rows(flags);
  if (__builtin_mul_overflow(n_batch, n_tokens, &n_all))
    return batch_overflow(fn, n_batch, n_tokens);
  if (n_all > SIZE_MAX / rows / sizeof(int32_t))
    return posenc_reject(fn, "n_tokens",
                         "n_batch %zu x n_tokens %zu: %zu rows of that many positions are not "
                         "addressable",
                         n_batch, n_tokens, rows);
  if (!positions && n_all > 0)
    return posenc_reject(fn, "positions", "is NULL with %zu tokens", n_all);
  rope_args args = posenc_mrope_args(plan, sections, n_tokens, positions, flags);
  args.n_batch = n_batch;
  return run_views(fn, &args, head_dim, src, dst);
}

posenc_status posenc_mrope_out(const posenc_rope_plan *plan, const size_t sections[3],
                               size_t head_dim, size_t n_batch, size_t n_tokens,
                               const int32_t *positions, const posenc_rope_view *src,
                               const posenc_rope_view *dst, unsigned flags) {
  posenc_positions32 buf;
  posenc_status st = posenc_positions_narrow(
      __func__, "positions", &positions, posenc_mrope_rows(flags), n_batch, n_tokens, &flags, &buf);
  if (st == POSENC_OK)
    st = mrope_out_int32(__func__, plan, sections, head_dim, n_batch, n_tokens, positions, src, dst,
                         flags);
  posenc_positions_release(&buf);
  return st;
}

/* What factors record of the flags that made them, and applying them must repeat: the pair
 * layout, and the deterministic mode (its values, and its rotation without fused
 * multiply-adds). */
#define FACTOR_FLAGS ((unsigned)(POSENC_ROPE_GPTJ | POSENC_ROPE_DETERMINISTIC))

/* The one flag rule of the factor path (posenc.h): it takes the flags of the plan form it
 * stands for, each with its plan-path meaning where it has one and as a no-op elsewhere
 * (INVERSE in a computation, F32_ANGLES, the M-RoPE flags and POSENC_ROPE_POSITIONS_INT64 in
 * posenc_rope_apply and posenc_rope_factors_bytes), and refuses every other bit alike. The
 * forms: FACTORS_PLAIN, posenc_rope_factors_compute: posenc_rope_f32's flags; FACTORS_ANY,
 * posenc_mrope_factors_compute (posenc_mrope_f32's) and the functions that serve both
 * computations, posenc_rope_factors_bytes, posenc_rope_apply and posenc_rope_apply_slots.
 * (The computations take POSENC_ROPE_POSITIONS_INT64 off, with their positions, first.) */
#define FACTORS_PLAIN ((unsigned)POSENC_ROPE_FLAGS)
#define FACTORS_ANY ((unsigned)(POSENC_MROPE_FLAGS | POSENC_ROPE_POSITIONS_INT64))

static int factor_flags_valid(unsigned flags, unsigned form) { return !(flags & ~form); }

/* factor_flags_valid, or the rejection of fn's argument `flags`. */
static posenc_status check_factor_flags(const char *fn, unsigned flags, unsigned form) {
  if (factor_flags_valid(flags, form)) return POSENC_OK;
  return posenc_reject_flags(fn, "flags", flags, form);
}

size_t posenc_rope_factors_bytes(size_t rotary_dim, size_t n_rows, unsigned flags) {
  size_t bytes;
  if (!posenc_rotary_dim_valid(rotary_dim) || !factor_flags_valid(flags, FACTORS_ANY) ||
      __builtin_mul_overflow(n_rows, 2 * rope_factor_half(rotary_dim / 2, flags) * sizeof(float),
                             &bytes))
    return 0;
  return bytes;
}

/* Fills the factor rows of `args` (a plain or M-RoPE call whose other fields are checked and
 * set) into storage, and describes them in *factors. */
static posenc_status compute_factors(const char *fn, rope_args *args, unsigned flags, void *storage,
                                     size_t storage_bytes, posenc_rope_factors *factors) {
  const struct posenc_rope_plan *plan = args->plan;
  const size_t n_rows = args->n_tokens;
  const unsigned layout = flags & FACTOR_FLAGS;
  const size_t need = posenc_rope_factors_bytes(plan->rotary_dim, n_rows, layout);
  if (n_rows > 0) {
    if (need == 0)
      return posenc_reject(fn, "n_rows", "%zu rows of factors overflow size_t bytes", n_rows);
    if (!posenc_float_aligned(storage))
      return posenc_reject_data(fn, "storage", NULL, storage, sizeof(float));
    if (storage_bytes < need)
      return posenc_reject(fn, "storage_bytes", "%zu is less than the %zu bytes of %zu rows",
                           storage_bytes, need, n_rows);
  }
  args->factors_out = storage;
  args->factor_half = rope_factor_half(plan->n_pairs, layout);
  /* The values are the forward cos/sin: POSENC_ROPE_INVERSE is the apply's. */
  args->flags &= ~(unsigned)POSENC_ROPE_INVERSE;
  if (n_rows > 0) posenc_active_table()->rope_f32(args);
  *factors = (posenc_rope_factors){.data = storage,
                                   .n_rows = n_rows,
                                   .rotary_dim = plan->rotary_dim,
                                   .row_floats = 2 * args->factor_half,
                                   .flags = layout};
  return POSENC_OK;
}

static posenc_status factors_compute_int32(const char *fn, const posenc_rope_plan *plan,
                                           size_t n_rows, const int32_t *positions,
                                           int32_t start_pos, unsigned flags, void *storage,
                                           size_t storage_bytes, posenc_rope_factors *factors) {
  if (!plan) return posenc_reject(fn, "plan", "is NULL");
  if (!factors) return posenc_reject(fn, "factors", "is NULL");
  posenc_status st = check_factor_flags(fn, flags, FACTORS_PLAIN);
  if (st == POSENC_OK) st = posenc_check_one_position_plan(fn, "plan", plan);
  if (st == POSENC_OK)
    st = posenc_check_run(fn, "start_pos", "n_rows", positions, start_pos, n_rows);
  if (st != POSENC_OK) return st;
  rope_args args = posenc_rope_args(plan, n_rows, positions, start_pos, flags);
  return compute_factors(fn, &args, flags, storage, storage_bytes, factors);
}

posenc_status posenc_rope_factors_compute(const posenc_rope_plan *plan, size_t n_rows,
                                          const int32_t *positions, int32_t start_pos,
                                          unsigned flags, void *storage, size_t storage_bytes,
                                          posenc_rope_factors *factors) {
  posenc_positions32 buf;
  posenc_status st =
      posenc_positions_narrow(__func__, "positions", &positions, 1, 1, n_rows, &flags, &buf);
  if (st == POSENC_OK)
    st = factors_compute_int32(__func__, plan, n_rows, positions, start_pos, flags, storage,
                               storage_bytes, factors);
  posenc_positions_release(&buf);
  return st;
}

static posenc_status mrope_factors_compute_int32(const char *fn, const posenc_rope_plan *plan,
                                                 const size_t sections[3], size_t n_rows,
                                                 const int32_t *positions, unsigned flags,
                                                 void *storage, size_t storage_bytes,
                                                 posenc_rope_factors *factors) {
  if (!plan) return posenc_reject(fn, "plan", "is NULL");
  if (!factors) return posenc_reject(fn, "factors", "is NULL");
  posenc_status st = check_factor_flags(fn, flags, FACTORS_ANY);
  if (st == POSENC_OK) st = posenc_mrope_check_sections(fn, sections, plan, flags);
  if (st != POSENC_OK) return st;
  const size_t rows = posenc_mrope_rows(flags);
  if (n_rows > SIZE_MAX / rows / sizeof(int32_t))
    return posenc_reject(fn, "n_rows", "%zu: %zu rows of that many positions are not addressable",
                         n_rows, rows);
  if (!positions && n_rows > 0)
    return posenc_reject(fn, "positions", "is NULL with n_rows %zu > 0", n_rows);
  rope_args args = posenc_mrope_args(plan, sections, n_rows, positions, flags);
  return compute_factors(fn, &args, flags, storage, storage_bytes, factors);
}

posenc_status posenc_mrope_factors_compute(const posenc_rope_plan *plan, const size_t sections[3],
                                           size_t n_rows, const int32_t *positions, unsigned flags,
                                           void *storage, size_t storage_bytes,
                                           posenc_rope_factors *factors) {
  posenc_positions32 buf;
  posenc_status st = posenc_positions_narrow(__func__, "positions", &positions,
                                             posenc_mrope_rows(flags), 1, n_rows, &flags, &buf);
  if (st == POSENC_OK)
    st = mrope_factors_compute_int32(__func__, plan, sections, n_rows, positions, flags, storage,
                                     storage_bytes, factors);
  posenc_positions_release(&buf);
  return st;
}

/* The checks of posenc_rope_apply and posenc_rope_apply_slots of factors (not NULL), flags
 * and head_dim: *half is the factor rows' half width (row_floats / 2). */
static posenc_status check_apply_factors(const char *fn, const posenc_rope_factors *factors,
                                         size_t head_dim, unsigned flags, size_t *half) {
  posenc_status st = check_factor_flags(fn, flags, FACTORS_ANY);
  if (st != POSENC_OK) return st;
  if (factors->flags & ~FACTOR_FLAGS)
    return posenc_reject_field(fn, "factors", "flags",
                               "0x%x has bits other than POSENC_ROPE_GPTJ and "
                               "POSENC_ROPE_DETERMINISTIC",
                               factors->flags);
  if ((flags & FACTOR_FLAGS) != factors->flags)
    return posenc_reject(fn, "flags",
                         "0x%x: its GPTJ and DETERMINISTIC bits must be factors->flags 0x%x, as "
                         "the factors were made",
                         flags, factors->flags);
  st = posenc_check_rotary_dim(fn, "factors->rotary_dim", factors->rotary_dim);
  if (st == POSENC_OK)
    st = posenc_check_head_dim(fn, head_dim, factors->rotary_dim, "factors->rotary_dim");
  if (st != POSENC_OK) return st;
  *half = rope_factor_half(factors->rotary_dim / 2, flags);
  if (factors->row_floats != 2 * *half)
    return posenc_reject_field(fn, "factors", "row_floats",
                               "%zu is not the %zu floats of posenc_rope_factors_compute's rows",
                               factors->row_floats, 2 * *half);
  return POSENC_OK;
}

/* The argument block of an apply whose factors, flags and counts are checked. */
static rope_args apply_args(const posenc_rope_factors *factors, size_t half, size_t first_row,
                            size_t row_batch_stride, size_t n_batch, size_t n_tokens,
                            unsigned flags) {
  return (rope_args){.n_pairs = factors->rotary_dim / 2,
                     .n_batch = n_batch,
                     .n_tokens = n_tokens,
                     /* the rotation's: F32_ANGLES and the M-RoPE flags are in the rows */
                     .flags = flags & (FACTOR_FLAGS | POSENC_ROPE_INVERSE),
                     .kind = ROPE_PLAIN,
                     .factors = factors->data,
                     .factor_half = half,
                     .factor_first_row = first_row,
                     .factor_batch_stride = row_batch_stride};
}

/* The factor rows an apply with work to do reads (n_batch, n_tokens >= 1): within
 * factors->n_rows, float-aligned, apart from the dst_bytes bytes written at dst. */
static posenc_status check_factor_rows(const char *fn, const posenc_rope_factors *factors,
                                       size_t first_row, size_t row_batch_stride, size_t n_batch,
                                       size_t n_tokens, const void *dst, size_t dst_bytes) {
  /* The last row read, within the factors; the rows must not be written by this call. */
  size_t last, span;
  if (__builtin_mul_overflow(n_batch - 1, row_batch_stride, &last) ||
      __builtin_add_overflow(last, first_row, &last) ||
      __builtin_add_overflow(last, n_tokens - 1, &last))
    return posenc_reject(fn, "first_row",
                         "%zu + (n_batch %zu - 1) x row_batch_stride %zu + n_tokens %zu - 1, the "
                         "last row read, overflows size_t",
                         first_row, n_batch, row_batch_stride, n_tokens);
  if (last >= factors->n_rows)
    return posenc_reject_field(fn, "factors", "n_rows",
                               "%zu: row %zu is read (first_row %zu + (n_batch %zu - 1) x "
                               "row_batch_stride %zu + n_tokens %zu - 1)",
                               factors->n_rows, last, first_row, n_batch, row_batch_stride,
                               n_tokens);
  if (!posenc_float_aligned(factors->data))
    return posenc_reject_data(fn, "factors", "data", factors->data, sizeof(float));
  if (__builtin_mul_overflow(last + 1, factors->row_floats * sizeof(float), &span))
    return posenc_reject_field(fn, "factors", "n_rows",
                               "%zu rows of %zu floats overflow size_t bytes", last + 1,
                               factors->row_floats);
  if (!posenc_bytes_disjoint(factors->data, span, dst, dst_bytes))
    return posenc_reject(fn, "dst", "overlaps the factor rows it reads (factors->data)");
  return POSENC_OK;
}

posenc_status posenc_rope_apply(const posenc_rope_factors *factors, size_t first_row,
                                size_t row_batch_stride, size_t head_dim, size_t n_batch,
                                size_t n_tokens, const posenc_rope_view *src,
                                const posenc_rope_view *dst, unsigned flags) {
  const char *fn = __func__;
  if (!factors) return posenc_reject(fn, "factors", "is NULL");
  size_t half = 0, n_all;
  posenc_status st = check_apply_factors(fn, factors, head_dim, flags, &half);
  if (st != POSENC_OK) return st;
  if (__builtin_mul_overflow(n_batch, n_tokens, &n_all))
    return batch_overflow(fn, n_batch, n_tokens);
  rope_args args = apply_args(factors, half, first_row, row_batch_stride, n_batch, n_tokens, flags);
  rope_fn kernel;
  size_t dst_bytes;
  st = check_views(fn, head_dim, n_batch, n_tokens, src, dst, &args, &kernel, &dst_bytes);
  if (st != POSENC_OK || args.n_views == 0) return st;
  st = check_factor_rows(fn, factors, first_row, row_batch_stride, n_batch, n_tokens, dst->data,
                         dst_bytes);
  if (st != POSENC_OK) return st;
  kernel(&args);
  return POSENC_OK;
}

posenc_status posenc_rope_apply_slots(const posenc_rope_factors *factors, size_t first_row,
                                      size_t head_dim, size_t n_tokens, const posenc_rope_view *src,
                                      const posenc_rope_view *dst, const posenc_slots *slots,
                                      unsigned flags) {
  const char *fn = __func__;
  if (!factors) return posenc_reject(fn, "factors", "is NULL");
  size_t half = 0;
  posenc_status st = check_apply_factors(fn, factors, head_dim, flags, &half);
  if (st != POSENC_OK) return st;
  if (!src) return posenc_reject(fn, "src", "is NULL");
  if (!dst) return posenc_reject(fn, "dst", "is NULL");
  rope_fn kernel;
  size_t written, dst_bytes;
  st =
      posenc_check_slot_dst(fn, head_dim, n_tokens, src, dst, slots, &kernel, &written, &dst_bytes);
  if (st != POSENC_OK || written == 0) return st;
  st = check_factor_rows(fn, factors, first_row, 0, 1, n_tokens, dst->data, dst_bytes);
  if (st != POSENC_OK) return st;
  rope_args args = apply_args(factors, half, first_row, 0, 1, n_tokens, flags);
  posenc_rows_view(&args.views[0], src, dst->data, dst->token_stride, dst->head_stride, head_dim,
                   slots);
  args.n_views = 1;
  kernel(&args);
  return POSENC_OK;
}
