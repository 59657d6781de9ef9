/* The scalar reference sinusoidal kernel: every value computed afresh (no stepping) with
 * SLEEF's scalar u10 sincosf (deterministic mode: posenc_det_sincos()), for rows of every storage
 * type: each value (or sum, for add) is a float, rounded once to the storage type. Every other
 * variant is tested against this one. */
#include <sleef.h>

#include "sinusoid.h"
#include "variants.h"

static inline void put(void *row, size_t i, float v, int add, posenc_elem e) {
  posenc_elem_store(row, i, add ? posenc_elem_load(row, i, e) + v : v, e);
}

/* e is a constant at each call, so each loop is compiled for one storage type. */
POSENC_INLINE void sinusoid_rows(const sinusoid_args *a, posenc_elem e) {
  const sinusoid_layout l = sinusoid_layout_of(a->dim, a->flags);
  const int add = (a->flags & POSENC_SINUSOID_ADD_) != 0;
  for (size_t r = 0; r < a->n_rows; ++r) {
    const double p = sinusoid_position(a, r);
    void *row = (char *)a->out + r * a->row_stride * posenc_elem_size(e);
    for (size_t i = 0; i < l.n_sin; ++i) {
      float sin_a, cos_a;
      if (a->flags & POSENC_SINUSOID_DETERMINISTIC) {
        double sd, cd;
        posenc_det_sincos(sinusoid_angle_reduced(a->freq, p, i, a->flags), &sd, &cd);
        sin_a = (float)sd;
        cos_a = (float)cd;
      } else {
        const Sleef_float_2 sc = Sleef_sincosf1_u10purec(sinusoid_angle(a->freq, p, i, a->flags));
        sin_a = sc.x;
        cos_a = sc.y;
      }
      put(row, l.sin_at + i * l.step, sin_a, add, e);
      if (i < l.n_cos) put(row, l.cos_at + i * l.step, cos_a, add, e);
    }
  }
}

void posenc_sinusoid_f32_scalar(const sinusoid_args *a) { sinusoid_rows(a, POSENC_ELEM_F32); }
void posenc_sinusoid_bf16_scalar(const sinusoid_args *a) { sinusoid_rows(a, POSENC_ELEM_BF16); }
void posenc_sinusoid_f16_scalar(const sinusoid_args *a) { sinusoid_rows(a, POSENC_ELEM_F16); }
