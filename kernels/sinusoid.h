/* Internal: the sinusoidal plan and the argument block every sinusoidal kernel takes.
 * Arguments reaching a kernel have been checked by dispatch/api_sinusoid.c. */
#ifndef POSENC_KERNELS_SINUSOID_H
#define POSENC_KERNELS_SINUSOID_H

#include "half.h"
#include "rope.h"

/* The frequencies live in a RoPE plan of ceil(dim/2) pairs (attention factor 1): the same
 * exact-angle parts, float32 frequencies and one-position rotations. */
struct posenc_sinusoid_plan {
  size_t dim;
  struct posenc_rope_plan *freq;
};

/* Internal flag: add into the rows instead of writing them. */
#define POSENC_SINUSOID_ADD_ 0x100u
#define POSENC_SINUSOID_LAYOUT_MASK_ 3u

/* The same block for every storage type of the rows (float arithmetic inside); the kernel
 * entry point (posenc_sinusoid_<type>_<isa>) knows which type out points to. */
typedef struct sinusoid_args {
  const struct posenc_rope_plan *freq;
  size_t dim;
  size_t n_rows;
  const int32_t *positions; /* NULL: timesteps, or start_pos + r */
  const float *timesteps;
  int32_t start_pos;
  void *out;         /* float *, or uint16_t * holding bf16 / f16 bits */
  size_t row_stride; /* in elements */
  unsigned flags;    /* layout | F32_ANGLES | DETERMINISTIC | ADD_ */
} sinusoid_args;

typedef void (*sinusoid_fn)(const sinusoid_args *args);

/* 1 if a call writes its rows with non-temporal stores (kernels that have them): a fill (not
 * an add) of POSENC_STREAM_MIN_BYTES or more, elem_size bytes an element. The API picks the
 * f32 variant of such calls from the sinusoid_f32_streamed slot of the dispatch table. */
static inline int sinusoid_streams(const sinusoid_args *a, size_t elem_size) {
  return !(a->flags & POSENC_SINUSOID_ADD_) &&
         a->n_rows * a->dim >= POSENC_STREAM_MIN_BYTES / elem_size;
}

/* Row r's position, and whether it is the integer one after row r - 1's. */
static inline double sinusoid_position(const sinusoid_args *a, size_t r) {
  if (a->timesteps) return (double)a->timesteps[r];
  return a->positions ? (double)a->positions[r] : (double)a->start_pos + (double)r;
}

static inline int sinusoid_follows(const sinusoid_args *a, size_t r) {
  if (a->timesteps || r == 0) return 0;
  return !a->positions || (int64_t)a->positions[r] == (int64_t)a->positions[r - 1] + 1;
}

/* Where the sin and cos of pair i go in a row: column sin_at + i * step, cos_at + i * step,
 * with n_sin = ceil(d/2) sin terms and n_cos = floor(d/2) cos terms. */
typedef struct sinusoid_layout {
  size_t sin_at, cos_at, step, n_sin, n_cos;
} sinusoid_layout;

static inline sinusoid_layout sinusoid_layout_of(size_t dim, unsigned flags) {
  const size_t n_sin = (dim + 1) / 2, n_cos = dim / 2;
  switch (flags & POSENC_SINUSOID_LAYOUT_MASK_) {
    case POSENC_SINUSOID_SIN_COS:
      return (sinusoid_layout){0, n_sin, 1, n_sin, n_cos};
    case POSENC_SINUSOID_COS_SIN:
      return (sinusoid_layout){n_cos, 0, 1, n_sin, n_cos};
    default:
      return (sinusoid_layout){0, 1, 2, n_sin, n_cos};
  }
}

/* The angle of pair k at position p (any double with |p| < 2^31 whose products with the
 * plan's 21-bit parts are exact: integers and floats), reduced to [-pi, pi], rounded to
 * float; or the float32 recipe. Shared by the scalar reference and the SIMD tails. */
static inline float sinusoid_angle(const struct posenc_rope_plan *plan, double p, size_t k,
                                   unsigned flags) {
  if (flags & POSENC_SINUSOID_F32_ANGLES) return (float)p * plan->inv_freq_f32[k];
  if (fabs(p) < plan->small_limit) return (float)rope_reduced_angle_small(p, plan->turn[k]);
  return (float)rope_reduced_angle(p, plan->turn_hi[k], plan->turn_mid[k], plan->turn_lo[k]);
}

/* The same angle in double, reduced (the float32 recipe's float angle reduced by
 * rope_reduce_angle()): the input of the deterministic mode's posenc_det_sincos(). */
static inline double sinusoid_angle_reduced(const struct posenc_rope_plan *plan, double p, size_t k,
                                            unsigned flags) {
  if (flags & POSENC_SINUSOID_F32_ANGLES)
    return rope_reduce_angle((double)((float)p * plan->inv_freq_f32[k]));
  if (fabs(p) < plan->small_limit) return rope_reduced_angle_small(p, plan->turn[k]);
  return rope_reduced_angle(p, plan->turn_hi[k], plan->turn_mid[k], plan->turn_lo[k]);
}

#endif /* POSENC_KERNELS_SINUSOID_H */
