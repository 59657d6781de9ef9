/* Sinusoidal public entry points: plan construction, then argument checks, then one call
 * through the dispatch table. */
#include <math.h>
#include <stdlib.h>

#include "dispatch.h"

#define MAX_SINUSOID_DIM ((size_t)1 << 20)

posenc_status posenc_sinusoid_plan_create_from_freqs(posenc_sinusoid_plan **plan, size_t dim,
                                                     const double *freqs) {
  if (!plan) return POSENC_ERR_INVALID_ARGUMENT;
  *plan = NULL;
  if (!freqs || dim < 1 || dim > MAX_SINUSOID_DIM) return POSENC_ERR_INVALID_ARGUMENT;
  struct posenc_sinusoid_plan *p = malloc(sizeof *p);
  if (!p) return POSENC_ERR_OUT_OF_MEMORY;
  /* ceil(dim/2) pairs; the frequency checks are the RoPE plan's. */
  const posenc_status st =
      posenc_rope_plan_create_from_freqs(&p->freq, 2 * ((dim + 1) / 2), freqs, 1.0);
  if (st != POSENC_OK) {
    free(p);
    return st;
  }
  p->dim = dim;
  *plan = p;
  return POSENC_OK;
}

posenc_status posenc_sinusoid_plan_create(posenc_sinusoid_plan **plan, size_t dim, double base) {
  if (!plan) return POSENC_ERR_INVALID_ARGUMENT;
  *plan = NULL;
  if (!isfinite(base) || !(base > 0) || base == 1 || dim < 1 || dim > MAX_SINUSOID_DIM)
    return POSENC_ERR_INVALID_ARGUMENT;
  const size_t n = (dim + 1) / 2;
  double *w = malloc(n * sizeof *w);
  if (!w) return POSENC_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < n; ++i) w[i] = 1.0 / pow(base, (double)(2 * i) / (double)dim);
  const posenc_status st = posenc_sinusoid_plan_create_from_freqs(plan, dim, w);
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
  if (!plan) return POSENC_ERR_INVALID_ARGUMENT;
  return posenc_rope_plan_freqs(plan->freq, freqs);
}

/* Checks shared by every entry point, for rows whose elements have type e; on success fills
 * everything but the positions. */
static posenc_status check_rows(const posenc_sinusoid_plan *plan, size_t n_rows, void *out,
                                posenc_elem e, size_t row_stride, unsigned flags, unsigned internal,
                                sinusoid_args *args) {
  const unsigned known = POSENC_SINUSOID_LAYOUT_MASK_ | POSENC_SINUSOID_F32_ANGLES;
  if (!plan || (flags & ~known) ||
      (flags & POSENC_SINUSOID_LAYOUT_MASK_) == POSENC_SINUSOID_LAYOUT_MASK_)
    return POSENC_ERR_INVALID_ARGUMENT;
  const size_t stride = row_stride ? row_stride : plan->dim;
  size_t extent;
  if (n_rows > 0 &&
      (!posenc_elem_aligned(out, posenc_elem_size(e)) || stride < plan->dim ||
       !posenc_grid_extent_elems(posenc_elem_size(e), n_rows, stride, 1, 0, plan->dim, &extent)))
    return POSENC_ERR_INVALID_ARGUMENT;
  *args = (sinusoid_args){.freq = plan->freq,
                          .dim = plan->dim,
                          .n_rows = n_rows,
                          .out = out,
                          .row_stride = stride,
                          .flags = flags | internal};
  return POSENC_OK;
}

/* The active ISA's kernel for rows of type e. */
static sinusoid_fn kernel_for(posenc_elem e) {
  const posenc_kernel_table *table = posenc_active_table();
  return e == POSENC_ELEM_BF16  ? table->sinusoid_bf16
         : e == POSENC_ELEM_F16 ? table->sinusoid_f16
                                : table->sinusoid_f32;
}

static posenc_status run_rows(const posenc_sinusoid_plan *plan, size_t n_rows,
                              const int32_t *positions, int32_t start_pos, void *out, posenc_elem e,
                              size_t row_stride, unsigned flags, unsigned internal) {
  sinusoid_args args;
  const posenc_status st = check_rows(plan, n_rows, out, e, row_stride, flags, internal, &args);
  if (st != POSENC_OK) return st;
  if (n_rows == 0) return POSENC_OK;
  if (!positions && !posenc_run_fits_int32(start_pos, n_rows)) return POSENC_ERR_INVALID_ARGUMENT;
  args.positions = positions;
  args.start_pos = start_pos;
  kernel_for(e)(&args);
  return POSENC_OK;
}

static posenc_status run_timesteps(const posenc_sinusoid_plan *plan, size_t n_rows,
                                   const float *timesteps, void *out, posenc_elem e,
                                   size_t row_stride, unsigned flags) {
  sinusoid_args args;
  const posenc_status st = check_rows(plan, n_rows, out, e, row_stride, flags, 0, &args);
  if (st != POSENC_OK) return st;
  if (n_rows == 0) return POSENC_OK;
  if (!timesteps) return POSENC_ERR_INVALID_ARGUMENT;
  for (size_t r = 0; r < n_rows; ++r)
    if (!(fabsf(timesteps[r]) < 0x1p31f)) return POSENC_ERR_INVALID_ARGUMENT; /* and NaN */
  args.timesteps = timesteps;
  kernel_for(e)(&args);
  return POSENC_OK;
}

posenc_status posenc_sinusoid_fill_f32(const posenc_sinusoid_plan *plan, size_t n_rows,
                                       const int32_t *positions, int32_t start_pos, float *out,
                                       size_t row_stride, unsigned flags) {
  return run_rows(plan, n_rows, positions, start_pos, out, POSENC_ELEM_F32, row_stride, flags, 0);
}

posenc_status posenc_sinusoid_fill_bf16(const posenc_sinusoid_plan *plan, size_t n_rows,
                                        const int32_t *positions, int32_t start_pos, uint16_t *out,
                                        size_t row_stride, unsigned flags) {
  return run_rows(plan, n_rows, positions, start_pos, out, POSENC_ELEM_BF16, row_stride, flags, 0);
}

posenc_status posenc_sinusoid_fill_f16(const posenc_sinusoid_plan *plan, size_t n_rows,
                                       const int32_t *positions, int32_t start_pos, uint16_t *out,
                                       size_t row_stride, unsigned flags) {
  return run_rows(plan, n_rows, positions, start_pos, out, POSENC_ELEM_F16, row_stride, flags, 0);
}

posenc_status posenc_sinusoid_add_f32(const posenc_sinusoid_plan *plan, size_t n_rows,
                                      const int32_t *positions, int32_t start_pos, float *x,
                                      size_t row_stride, unsigned flags) {
  return run_rows(plan, n_rows, positions, start_pos, x, POSENC_ELEM_F32, row_stride, flags,
                  POSENC_SINUSOID_ADD_);
}

posenc_status posenc_sinusoid_add_bf16(const posenc_sinusoid_plan *plan, size_t n_rows,
                                       const int32_t *positions, int32_t start_pos, uint16_t *x,
                                       size_t row_stride, unsigned flags) {
  return run_rows(plan, n_rows, positions, start_pos, x, POSENC_ELEM_BF16, row_stride, flags,
                  POSENC_SINUSOID_ADD_);
}

posenc_status posenc_sinusoid_add_f16(const posenc_sinusoid_plan *plan, size_t n_rows,
                                      const int32_t *positions, int32_t start_pos, uint16_t *x,
                                      size_t row_stride, unsigned flags) {
  return run_rows(plan, n_rows, positions, start_pos, x, POSENC_ELEM_F16, row_stride, flags,
                  POSENC_SINUSOID_ADD_);
}

posenc_status posenc_sinusoid_fill_timesteps_f32(const posenc_sinusoid_plan *plan, size_t n_rows,
                                                 const float *timesteps, float *out,
                                                 size_t row_stride, unsigned flags) {
  return run_timesteps(plan, n_rows, timesteps, out, POSENC_ELEM_F32, row_stride, flags);
}

posenc_status posenc_sinusoid_fill_timesteps_bf16(const posenc_sinusoid_plan *plan, size_t n_rows,
                                                  const float *timesteps, uint16_t *out,
                                                  size_t row_stride, unsigned flags) {
  return run_timesteps(plan, n_rows, timesteps, out, POSENC_ELEM_BF16, row_stride, flags);
}

posenc_status posenc_sinusoid_fill_timesteps_f16(const posenc_sinusoid_plan *plan, size_t n_rows,
                                                 const float *timesteps, uint16_t *out,
                                                 size_t row_stride, unsigned flags) {
  return run_timesteps(plan, n_rows, timesteps, out, POSENC_ELEM_F16, row_stride, flags);
}
