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

/* Checks shared by the three entry points; on success fills everything but the positions. */
static posenc_status check_rows(const posenc_sinusoid_plan *plan, size_t n_rows, float *out,
                                size_t row_stride, unsigned flags, unsigned internal,
                                sinusoid_f32_args *args) {
  const unsigned known = POSENC_SINUSOID_LAYOUT_MASK_ | POSENC_SINUSOID_F32_ANGLES;
  if (!plan || (flags & ~known) ||
      (flags & POSENC_SINUSOID_LAYOUT_MASK_) == POSENC_SINUSOID_LAYOUT_MASK_)
    return POSENC_ERR_INVALID_ARGUMENT;
  const size_t stride = row_stride ? row_stride : plan->dim;
  size_t extent;
  if (n_rows > 0 && (!posenc_float_aligned(out) || stride < plan->dim ||
                     !posenc_grid_extent(n_rows, stride, 1, 0, plan->dim, &extent)))
    return POSENC_ERR_INVALID_ARGUMENT;
  *args = (sinusoid_f32_args){.freq = plan->freq,
                              .dim = plan->dim,
                              .n_rows = n_rows,
                              .out = out,
                              .row_stride = stride,
                              .flags = flags | internal};
  return POSENC_OK;
}

static posenc_status run_rows(const posenc_sinusoid_plan *plan, size_t n_rows,
                              const int32_t *positions, int32_t start_pos, float *out,
                              size_t row_stride, unsigned flags, unsigned internal) {
  sinusoid_f32_args args;
  const posenc_status st = check_rows(plan, n_rows, out, row_stride, flags, internal, &args);
  if (st != POSENC_OK) return st;
  if (n_rows == 0) return POSENC_OK;
  if (!positions && !posenc_run_fits_int32(start_pos, n_rows)) return POSENC_ERR_INVALID_ARGUMENT;
  args.positions = positions;
  args.start_pos = start_pos;
  posenc_active_table()->sinusoid_f32(&args);
  return POSENC_OK;
}

posenc_status posenc_sinusoid_fill_f32(const posenc_sinusoid_plan *plan, size_t n_rows,
                                       const int32_t *positions, int32_t start_pos, float *out,
                                       size_t row_stride, unsigned flags) {
  return run_rows(plan, n_rows, positions, start_pos, out, row_stride, flags, 0);
}

posenc_status posenc_sinusoid_add_f32(const posenc_sinusoid_plan *plan, size_t n_rows,
                                      const int32_t *positions, int32_t start_pos, float *x,
                                      size_t row_stride, unsigned flags) {
  return run_rows(plan, n_rows, positions, start_pos, x, row_stride, flags, POSENC_SINUSOID_ADD_);
}

posenc_status posenc_sinusoid_fill_timesteps_f32(const posenc_sinusoid_plan *plan, size_t n_rows,
                                                 const float *timesteps, float *out,
                                                 size_t row_stride, unsigned flags) {
  sinusoid_f32_args args;
  const posenc_status st = check_rows(plan, n_rows, out, row_stride, flags, 0, &args);
  if (st != POSENC_OK) return st;
  if (n_rows == 0) return POSENC_OK;
  if (!timesteps) return POSENC_ERR_INVALID_ARGUMENT;
  for (size_t r = 0; r < n_rows; ++r)
    if (!(fabsf(timesteps[r]) < 0x1p31f)) return POSENC_ERR_INVALID_ARGUMENT; /* and NaN */
  args.timesteps = timesteps;
  posenc_active_table()->sinusoid_f32(&args);
  return POSENC_OK;
}
