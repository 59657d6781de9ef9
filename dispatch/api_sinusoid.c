/* Sinusoidal public entry points: plan construction, then argument checks, then one call
 * through the dispatch table. */
#include <math.h>
#include <stdlib.h>

#include "checks.h"

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
  if (!posenc_base_valid(base) || dim < 1 || dim > MAX_SINUSOID_DIM)
    return POSENC_ERR_INVALID_ARGUMENT;
  double *w = posenc_default_freqs(base, (dim + 1) / 2, dim);
  if (!w) return POSENC_ERR_OUT_OF_MEMORY;
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

/* The checks and the call shared by every entry point, for rows whose elements have type e,
 * at the positions (or start_pos + r) or, with use_timesteps, at the float timesteps. */
static posenc_status run(const posenc_sinusoid_plan *plan, size_t n_rows, const int32_t *positions,
                         int32_t start_pos, const float *timesteps, int use_timesteps, void *out,
                         posenc_elem e, size_t row_stride, unsigned flags, unsigned internal) {
  const unsigned known =
      POSENC_SINUSOID_LAYOUT_MASK_ | POSENC_SINUSOID_F32_ANGLES | POSENC_SINUSOID_DETERMINISTIC;
  if (!plan || (flags & ~known) ||
      (flags & POSENC_SINUSOID_LAYOUT_MASK_) == POSENC_SINUSOID_LAYOUT_MASK_)
    return POSENC_ERR_INVALID_ARGUMENT;
  const size_t stride = row_stride ? row_stride : plan->dim;
  size_t extent;
  if (n_rows > 0 &&
      (!posenc_elem_aligned(out, posenc_elem_size(e)) || stride < plan->dim ||
       !posenc_grid_extent_elems(posenc_elem_size(e), n_rows, stride, 1, 0, plan->dim, &extent)))
    return POSENC_ERR_INVALID_ARGUMENT;
  if (n_rows == 0) return POSENC_OK;
  if (use_timesteps) {
    if (!timesteps) return POSENC_ERR_INVALID_ARGUMENT;
    for (size_t r = 0; r < n_rows; ++r)
      if (!(fabsf(timesteps[r]) < 0x1p31f)) return POSENC_ERR_INVALID_ARGUMENT; /* and NaN */
  } else if (!posenc_positions_valid(positions, start_pos, n_rows)) {
    return POSENC_ERR_INVALID_ARGUMENT;
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
  POSENC_BY_ELEM(e, t->sinusoid_f32, t->sinusoid_bf16, t->sinusoid_f16)(&args);
  return POSENC_OK;
}

posenc_status posenc_sinusoid_fill_f32(const posenc_sinusoid_plan *plan, size_t n_rows,
                                       const int32_t *positions, int32_t start_pos, float *out,
                                       size_t row_stride, unsigned flags) {
  return run(plan, n_rows, positions, start_pos, NULL, 0, out, POSENC_ELEM_F32, row_stride, flags,
             0);
}

posenc_status posenc_sinusoid_fill_bf16(const posenc_sinusoid_plan *plan, size_t n_rows,
                                        const int32_t *positions, int32_t start_pos, uint16_t *out,
                                        size_t row_stride, unsigned flags) {
  return run(plan, n_rows, positions, start_pos, NULL, 0, out, POSENC_ELEM_BF16, row_stride, flags,
             0);
}

posenc_status posenc_sinusoid_fill_f16(const posenc_sinusoid_plan *plan, size_t n_rows,
                                       const int32_t *positions, int32_t start_pos, uint16_t *out,
                                       size_t row_stride, unsigned flags) {
  return run(plan, n_rows, positions, start_pos, NULL, 0, out, POSENC_ELEM_F16, row_stride, flags,
             0);
}

posenc_status posenc_sinusoid_add_f32(const posenc_sinusoid_plan *plan, size_t n_rows,
                                      const int32_t *positions, int32_t start_pos, float *x,
                                      size_t row_stride, unsigned flags) {
  return run(plan, n_rows, positions, start_pos, NULL, 0, x, POSENC_ELEM_F32, row_stride, flags,
             POSENC_SINUSOID_ADD_);
}

posenc_status posenc_sinusoid_add_bf16(const posenc_sinusoid_plan *plan, size_t n_rows,
                                       const int32_t *positions, int32_t start_pos, uint16_t *x,
                                       size_t row_stride, unsigned flags) {
  return run(plan, n_rows, positions, start_pos, NULL, 0, x, POSENC_ELEM_BF16, row_stride, flags,
             POSENC_SINUSOID_ADD_);
}

posenc_status posenc_sinusoid_add_f16(const posenc_sinusoid_plan *plan, size_t n_rows,
                                      const int32_t *positions, int32_t start_pos, uint16_t *x,
                                      size_t row_stride, unsigned flags) {
  return run(plan, n_rows, positions, start_pos, NULL, 0, x, POSENC_ELEM_F16, row_stride, flags,
             POSENC_SINUSOID_ADD_);
}

posenc_status posenc_sinusoid_fill_timesteps_f32(const posenc_sinusoid_plan *plan, size_t n_rows,
                                                 const float *timesteps, float *out,
                                                 size_t row_stride, unsigned flags) {
  return run(plan, n_rows, NULL, 0, timesteps, 1, out, POSENC_ELEM_F32, row_stride, flags, 0);
}

posenc_status posenc_sinusoid_fill_timesteps_bf16(const posenc_sinusoid_plan *plan, size_t n_rows,
                                                  const float *timesteps, uint16_t *out,
                                                  size_t row_stride, unsigned flags) {
  return run(plan, n_rows, NULL, 0, timesteps, 1, out, POSENC_ELEM_BF16, row_stride, flags, 0);
}

posenc_status posenc_sinusoid_fill_timesteps_f16(const posenc_sinusoid_plan *plan, size_t n_rows,
                                                 const float *timesteps, uint16_t *out,
                                                 size_t row_stride, unsigned flags) {
  return run(plan, n_rows, NULL, 0, timesteps, 1, out, POSENC_ELEM_F16, row_stride, flags, 0);
}
