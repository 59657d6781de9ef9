/* Sinusoidal public entry points: plan construction, then argument checks, then one call
 * through the dispatch table. */
#include <math.h>
#include <stdlib.h>

#include "checks.h"

#define MAX_SINUSOID_DIM ((size_t)1 << 20)

static posenc_status check_dim(const char *fn, size_t dim) {
  if (dim >= 1 && dim <= MAX_SINUSOID_DIM) return POSENC_OK;
  return posenc_reject(fn, "dim", "%zu is not in [1, %zu]", dim, MAX_SINUSOID_DIM);
}

/* posenc_sinusoid_plan_create_from_freqs on behalf of fn, whose argument freqs_arg gave the
 * frequencies. */
static posenc_status make_plan(const char *fn, const char *freqs_arg, posenc_sinusoid_plan **plan,
                               size_t dim, const double *freqs) {
  if (!plan) return posenc_reject(fn, "plan", "is NULL");
  *plan = NULL;
  if (!freqs) return posenc_reject(fn, freqs_arg, "is NULL");
  const posenc_status dim_ok = check_dim(fn, dim);
  if (dim_ok != POSENC_OK) return dim_ok;
  struct posenc_sinusoid_plan *p = malloc(sizeof *p);
  if (!p) return posenc_out_of_memory(fn, "plan", sizeof *p);
  /* ceil(dim/2) pairs; the frequency checks are the RoPE plan's. */
  const posenc_status st =
      posenc_rope_plan_make(fn, freqs_arg, "dim", &p->freq, 2 * ((dim + 1) / 2), freqs, 1.0);
  if (st != POSENC_OK) {
    free(p);
    return st;
  }
  p->dim = dim;
  *plan = p;
  return POSENC_OK;
}

posenc_status posenc_sinusoid_plan_create_from_freqs(posenc_sinusoid_plan **plan, size_t dim,
                                                     const double *freqs) {
  return make_plan(__func__, "freqs", plan, dim, freqs);
}

posenc_status posenc_sinusoid_plan_create(posenc_sinusoid_plan **plan, size_t dim, double base) {
  const char *fn = __func__;
  if (!plan) return posenc_reject(fn, "plan", "is NULL");
  *plan = NULL;
  posenc_status st = posenc_check_base(fn, "base", base);
  if (st == POSENC_OK) st = check_dim(fn, dim);
  if (st != POSENC_OK) return st;
  double *w = posenc_default_freqs(base, (dim + 1) / 2, dim);
  if (!w) return posenc_out_of_memory(fn, "plan", (dim + 1) / 2 * sizeof *w);
  st = make_plan(fn, "base", plan, dim, w);
  free(w);
  return st;
}

void posenc_sinusoid_plan_destroy(posenc_sinusoid_plan *plan) {
  if (!plan) return;
  posenc_rope_plan_destroy(plan->freq);
  free(plan);
}

size_t posenc_sinusoid_plan_dim(const posenc_sinusoid_plan *plan) { return plan ? plan->dim : 0; }

posenc_status posenc_sinusoid_plan_freqs(const posenc_sinusoid_plan *plan, double *freqs) {
  if (!plan) return posenc_reject(__func__, "plan", "is NULL");
  if (!freqs) return posenc_reject(__func__, "freqs", "is NULL");
  return posenc_rope_plan_freqs(plan->freq, freqs);
}

/* The checks and the call shared by every entry point, for rows whose elements have type e,
 * at the positions (or start_pos + r) or, with use_timesteps, at the float timesteps. */
static posenc_status run(const char *fn, const posenc_sinusoid_plan *plan, size_t n_rows,
                         const int32_t *positions, int32_t start_pos, const float *timesteps,
                         int use_timesteps, void *out, posenc_elem e, size_t row_stride,
                         unsigned flags, unsigned internal) {
  const unsigned known =
      POSENC_SINUSOID_LAYOUT_MASK_ | POSENC_SINUSOID_F32_ANGLES | POSENC_SINUSOID_DETERMINISTIC;
  /* The buffer's argument: out for the fills, x for the add. */
  const char *out_name = internal & POSENC_SINUSOID_ADD_ ? "x" : "out";
  if (!plan) return posenc_reject(fn, "plan", "is NULL");
  const posenc_status st = posenc_check_flags(fn, "flags", flags, known);
  if (st != POSENC_OK) return st;
  if ((flags & POSENC_SINUSOID_LAYOUT_MASK_) == POSENC_SINUSOID_LAYOUT_MASK_)
    return posenc_reject(fn, "flags", "0x%x: SIN_COS | COS_SIN is not a layout", flags);
  const size_t stride = row_stride ? row_stride : plan->dim;
  size_t extent;
  if (n_rows > 0) {
    if (!posenc_elem_aligned(out, posenc_elem_size(e)))
      return posenc_reject_data(fn, out_name, NULL, out, posenc_elem_size(e));
    if (stride < plan->dim)
      return posenc_reject(fn, "row_stride", "%zu is less than the plan's dim %zu", stride,
                           plan->dim);
    if (!posenc_grid_extent_elems(posenc_elem_size(e), n_rows, stride, 1, 0, plan->dim, &extent))
      return posenc_reject(fn, row_stride ? "row_stride" : "n_rows",
                           "n_rows %zu of stride %zu (dim %zu) overflow size_t or pass "
                           "PTRDIFF_MAX bytes",
                           n_rows, stride, plan->dim);
  }
  if (n_rows == 0) return POSENC_OK;
  if (use_timesteps) {
    if (!timesteps) return posenc_reject(fn, "timesteps", "is NULL with n_rows %zu > 0", n_rows);
    for (size_t r = 0; r < n_rows; ++r)
      if (!(fabsf(timesteps[r]) < 0x1p31f)) /* and NaN */
        return posenc_reject_elem(fn, "timesteps", NULL, r, "%g is not finite with |t| < 2^31",
                                  (double)timesteps[r]);
  } else {
    const posenc_status run_ok =
        posenc_check_run(fn, "start_pos", "n_rows", positions, start_pos, n_rows);
    if (run_ok != POSENC_OK) return run_ok;
  }
  const sinusoid_args args = {.freq = plan->freq,
                              .dim = plan->dim,
                              .n_rows = n_rows,
                              .out = out,
                              .row_stride = stride,
                              .flags = flags | internal,
                              .positions = positions,
                              .start_pos = start_pos,
                              .timesteps = timesteps};
  const posenc_kernel_table *t = posenc_active_table();
  sinusoid_fn f32 =
      sinusoid_streams(&args, sizeof(float)) ? t->sinusoid_f32_streamed : t->sinusoid_f32;
  POSENC_BY_ELEM(e, f32, t->sinusoid_bf16, t->sinusoid_f16)(&args);
  return POSENC_OK;
}

posenc_status posenc_sinusoid_fill_f32(const posenc_sinusoid_plan *plan, size_t n_rows,
                                       const int32_t *positions, int32_t start_pos, float *out,
                                       size_t row_stride, unsigned flags) {
  return run(__func__, plan, n_rows, positions, start_pos, NULL, 0, out, POSENC_ELEM_F32,
             row_stride, flags, 0);
}

posenc_status posenc_sinusoid_fill_bf16(const posenc_sinusoid_plan *plan, size_t n_rows,
                                        const int32_t *positions, int32_t start_pos, uint16_t *out,
                                        size_t row_stride, unsigned flags) {
  return run(__func__, plan, n_rows, positions, start_pos, NULL, 0, out, POSENC_ELEM_BF16,
             row_stride, flags, 0);
}

posenc_status posenc_sinusoid_fill_f16(const posenc_sinusoid_plan *plan, size_t n_rows,
                                       const int32_t *positions, int32_t start_pos, uint16_t *out,
                                       size_t row_stride, unsigned flags) {
  return run(__func__, plan, n_rows, positions, start_pos, NULL, 0, out, POSENC_ELEM_F16,
             row_stride, flags, 0);
}

posenc_status posenc_sinusoid_add_f32(const posenc_sinusoid_plan *plan, size_t n_rows,
                                      const int32_t *positions, int32_t start_pos, float *x,
                                      size_t row_stride, unsigned flags) {
  return run(__func__, plan, n_rows, positions, start_pos, NULL, 0, x, POSENC_ELEM_F32, row_stride,
             flags, POSENC_SINUSOID_ADD_);
}

posenc_status posenc_sinusoid_add_bf16(const posenc_sinusoid_plan *plan, size_t n_rows,
                                       const int32_t *positions, int32_t start_pos, uint16_t *x,
                                       size_t row_stride, unsigned flags) {
  return run(__func__, plan, n_rows, positions, start_pos, NULL, 0, x, POSENC_ELEM_BF16, row_stride,
             flags, POSENC_SINUSOID_ADD_);
}

posenc_status posenc_sinusoid_add_f16(const posenc_sinusoid_plan *plan, size_t n_rows,
                                      const int32_t *positions, int32_t start_pos, uint16_t *x,
                                      size_t row_stride, unsigned flags) {
  return run(__func__, plan, n_rows, positions, start_pos, NULL, 0, x, POSENC_ELEM_F16, row_stride,
             flags, POSENC_SINUSOID_ADD_);
}

posenc_status posenc_sinusoid_fill_timesteps_f32(const posenc_sinusoid_plan *plan, size_t n_rows,
                                                 const float *timesteps, float *out,
                                                 size_t row_stride, unsigned flags) {
  return run(__func__, plan, n_rows, NULL, 0, timesteps, 1, out, POSENC_ELEM_F32, row_stride, flags,
             0);
}

posenc_status posenc_sinusoid_fill_timesteps_bf16(const posenc_sinusoid_plan *plan, size_t n_rows,
                                                  const float *timesteps, uint16_t *out,
                                                  size_t row_stride, unsigned flags) {
  return run(__func__, plan, n_rows, NULL, 0, timesteps, 1, out, POSENC_ELEM_BF16, row_stride,
             flags, 0);
}

posenc_status posenc_sinusoid_fill_timesteps_f16(const posenc_sinusoid_plan *plan, size_t n_rows,
                                                 const float *timesteps, uint16_t *out,
                                                 size_t row_stride, unsigned flags) {
  return run(__func__, plan, n_rows, NULL, 0, timesteps, 1, out, POSENC_ELEM_F16, row_stride, flags,
             0);
}
